"""The html review page in a real browser: headless Chromium (Debian's `chromium`; CI installs
it with scripts/install-browser.sh) renders the bundled example. The page's `?selftest=1`
hook records what it sees into the DOM (findings listed, masked rows' style and hover text,
where n/p/j/k move, what the toggles hide), read back with --dump-dom. Without a browser the
tests are skipped, and the reason is in pytest's summary (-ra)."""
from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess

import pytest
from conftest import FIXTURES

EX = FIXTURES / "example"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="module")
def chromium():
    exe = os.environ.get("SCRIPTDIFF_CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)
    if not exe:
        pytest.skip("browser tests not run: no headless Chromium (chromium, chromium-browser, google-chrome or "
                    "$SCRIPTDIFF_CHROMIUM); scripts/install-browser.sh installs Debian's chromium")
    return exe


def headless(exe: str, tmp_path, *args: str) -> str:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1300,1000", *args]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail(f"headless Chromium did not finish within 90 s: {' '.join(cmd)}")
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from conftest import run_cli

    out = tmp_path_factory.mktemp("page") / "review.html"
    code, _text, _err = run_cli("diff", str(EX / "gpu"), str(EX / "npu"), "--output", f"html={out}")
    assert code == 1
    return out


def test_findings_masks_and_navigation_in_the_browser(chromium, page, tmp_path):
    dom = headless(chromium, tmp_path, "--dump-dom", f"{page.as_uri()}?selftest=1")
    m = re.search(r'<pre id="selftest">(.*?)</pre>', dom)
    assert m, "the page's self-test did not run:\n" + dom[-1500:]
    seen = json.loads(m.group(1).replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&"))
    assert seen["findings"] == 4
    # masked substitutions are dimmed, say their rule on hover, and the toggle hides them
    assert (seen["masked"], seen["masked_opacity"], seen["masked_hidden"]) == (11, "0.55", True)
    assert seen["masked_title"].startswith("masked by SD010 env-var-renamed: ")
    # n / p / j / k move between findings, each brought on screen in its file's panel
    assert [(s["key"], s["finding"], s["rule"], s["in"], s["on_screen"]) for s in seen["nav"][:5]] == [
        ("n", 0, "SD201", "p1", True), ("n", 1, "SD207", "p2", True), ("p", 0, "SD201", "p1", True),
        ("j", 1, "SD207", "p2", True), ("k", 0, "SD201", "p1", True)]
    assert seen["info_hidden_items"] == 1  # the severity filter hides the one info finding
    # the check filter leaves the environment finding, and navigation goes there alone
    assert seen["check_filter_visible"] == 1 and seen["nav"][-1]["rule"] == "SD302"
    # the rendered DOM: the findings' lines highlighted in the gutter of their panels
    anns = re.findall(r'<tr class="ann f sev-(\w+) ck-[\w-]+(?: cur)?" data-f="(\d+)">', dom)
    assert sorted(anns) == [("error", "0"), ("error", "0"), ("error", "1"), ("error", "2"),
                            ("info", "3")]  # SD201 in both files


def test_screenshot(chromium, page, tmp_path):
    png = tmp_path / "review.png"
    headless(chromium, tmp_path, f"--screenshot={png}", page.as_uri())
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1300, 1000)
    assert len(data) > 20_000  # a blank page compresses to a few kB

"""The html pages in a real browser: headless Chromium (Debian's `chromium`; CI installs it
with scripts/install-browser.sh) renders the review page of the bundled example, a page of
hostile inputs and the curves page of a fixture pair. Each page's `?selftest=1` hook records
what it sees into the DOM (the looks of the lines, the highlighted words, where n/p/c move
and whether the line is on screen, the change map, the toggles, the charts and what hovering
them shows), read back with --dump-dom. Without a browser the tests are skipped, and the
reason is in pytest's summary (-ra)."""
from __future__ import annotations

import html
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


def headless(exe: str, tmp_path, *args: str, size: str = "1300,1000") -> str:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={size}", *args]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail(f"headless Chromium did not finish within 90 s: {' '.join(cmd)}")
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


def selftest(exe, tmp_path, page) -> tuple[dict, str]:
    dom = headless(exe, tmp_path, "--dump-dom", f"{page.as_uri()}?selftest=1")
    m = re.search(r'<pre id="selftest">(.*?)</pre>', dom)
    assert m, "the page's self-test did not run:\n" + dom[-1500:]
    return json.loads(html.unescape(m.group(1))), dom


def block(dom: str, name: str):
    m = re.search(rf'<script type="application/json" id="?{name}"?>(.*?)</script>', dom, re.S)
    return json.loads(html.unescape(m.group(1)).replace("<\\/", "</"))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from conftest import run_cli

    out = tmp_path_factory.mktemp("page") / "review.html"
    code, _text, _err = run_cli("diff", str(EX / "gpu"), str(EX / "npu"), "--output", f"html={out}",
                               "--ignore", "SD023,SD027")  # what each port edit keeps: tests/test_fidelity.py
    assert code == 1
    return out


@pytest.fixture(scope="module")
def seen(chromium, page, tmp_path_factory):
    return selftest(chromium, tmp_path_factory.mktemp("b"), page)


def test_navigation_in_page_order_wraps_around(seen):
    """Issue 28: n/p jumped in report order (527 -> 1437 -> 331 px) and stopped at the ends.
    They now go down the page, one stop per row with a finding (SD201 is on both its lines),
    and wrap; `c` makes them go over every change instead."""
    out, dom = seen
    stops = block(dom, "sd-data")["sf"]
    nav = [(s["key"], s["stop"], s["on_screen"]) for s in out["nav"]]
    assert len(stops) == 5
    assert nav[:8] == [("n", stops[0], True), ("n", stops[1], True), ("n", stops[2], True), ("n", stops[3], True),
                       ("n", stops[4], True), ("n", stops[0], True), ("p", stops[4], True), ("p", stops[3], True)]
    assert [s["pos"] for s in out["nav"][:7]] == [
        "finding 1 of 5: I SD302 env:source set_env.sh", "finding 2 of 5: E SD201 use_flash_attn",
        "finding 3 of 5: E SD207 seed", "finding 4 of 5: E SD201 use_flash_attn", "finding 5 of 5: E SD206 adam_beta2",
        "finding 1 of 5: I SD302 env:source set_env.sh \u00b7 wrapped to the first",
        "finding 5 of 5: E SD206 adam_beta2 \u00b7 wrapped to the last"]
    tops = [s[:2] for s in stops]
    assert tops == sorted(tops)  # page order: panel by panel, row by row
    changes = block(dom, "sd-data")["sc"]
    assert [s["stop"] for s in out["every"]] == [c[:3] for c in changes] + [changes[0][:3]]
    assert all(s["on_screen"] for s in out["every"])
    assert out["every"][-1]["pos"].endswith("\u00b7 wrapped to the first")
    # with only the environment check shown, n goes to its one finding
    assert out["check_filter_visible"] == 1 and out["nav"][-1]["pos"].startswith("finding 1 of 1: I SD302")


def test_the_four_looks_and_the_words_they_are_about(seen):
    """The example has all four looks: findings, masked port edits, edits equal after
    normalising (1e-4 / 1.0e-4, the reordered ds_config.json) and changes without a finding
    (the comment, the GPU program's attn_implementation); in each line the changed words are marked, by what they are."""
    out, _dom = seen
    assert out["looks"] == {"lf": 7, "lm": 20, "lq": 10, "lc": 3}
    # what SD207 and SD206 are about (the latter in the line of the optimizer swap)
    assert out["marks"]["hf"] == ["42", "1234", "0.95", "0.999"]
    assert {"AdamW", "NpuFusedAdamW", "cuda", "npu", "nccl", "hccl"} <= set(out["marks"]["hm"])  # the masks' parts
    assert {"1e-4", "1.0e-4", "1e-6", "1e-06"} <= set(out["marks"]["hq"])
    # the GPU program's attn_implementation: changed, its finding (SD201) is the GPU launch flag's
    assert {"flash_attention_2", "eager"} <= set(out["marks"]["hc"])
    assert out["q_title"].startswith("equal after normalising: ")
    # masked substitutions are dimmed, say their rule on hover, and the toggle hides them
    assert (out["masked"], out["masked_opacity"], out["masked_hidden"]) == (11, "0.75", True)
    assert out["masked_title"].startswith("masked by SD010 env-var-renamed: ")
    assert out["info_hidden_items"] == 1  # the severity filter hides the one info finding
    assert out["findings"] == 4


def test_sticky_headers_change_map_and_origin_links(seen):
    out, dom = seen
    assert out["sticky"] == "sticky"
    changes = block(dom, "sd-data")["sc"]
    assert out["map"]["ticks"] == len(changes) == 16
    want: dict = {}
    for c in changes:
        want["k" + c[2]] = want.get("k" + c[2], 0) + 1
    assert out["map"]["kinds"] == want
    assert out["map"]["click"] == {"scrolled": True, "on_screen": True}  # a click on the map goes to the change
    # an hparams origin goes to its line, on screen
    assert out["origin"]["went"] == out["origin"]["go"] and out["origin"]["on_screen"]


def test_one_count_of_each_look_everywhere(seen):
    """Issue 41: the legend, each panel's header and the file list count alike: the masked
    substitutions of each file (the page header's 12 in all), and the rows of each other look."""
    out, dom = seen
    heads = [dict(zip(("masked", "q", "c"), map(int, re.findall(r"(\d+) (?:masked|equal|changed)", p["head"]))))
             for p in out["panels"]]
    assert out["legend"]["lm"] == sum(h["masked"] for h in heads) == sum(out["file_masked"]) == 12
    assert (out["legend"]["lq"], out["legend"]["lc"]) == (sum(h["q"] for h in heads), sum(h["c"] for h in heads))
    assert "12 expected substitution(s) masked" in dom


def _page(tmp_path, files: dict, *argv) -> tuple[dict, str]:
    from conftest import run_cli, write_files

    write_files(tmp_path, files)
    page = tmp_path / "page.html"
    run_cli("diff", *(str(tmp_path / a) for a in argv), "--output", f"html={page}", "--no-cache")
    return page


def test_rows_are_paired_by_meaning(chromium, tmp_path):
    """Issue 41: `source set_env.sh` added above the masked CUDA_VISIBLE_DEVICES export used to
    push every row of the block one line off (the export beside `source`); the mask pairs the
    two exports, and `source` gets a row of its own."""
    run = "torchrun --nproc_per_node 4 train.py --lr 1e-4\n"
    page = _page(tmp_path, {
        "gpu/run.sh": "#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0,1,2,3\nexport NCCL_DEBUG=INFO\n" + run,
        "npu/run.sh": "#!/bin/bash\nsource /usr/local/Ascend/ascend-toolkit/set_env.sh\n"
                      "export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3\nexport HCCL_DEBUG=INFO\n" + run}, "gpu/run.sh", "npu/run.sh")
    out, _dom = selftest(chromium, tmp_path, page)
    rows = [r[:4] for r in out["panels"][0]["rows"]]
    assert rows[:5] == [["1", "#!/bin/bash", "1", "#!/bin/bash"],
                        ["", "", "2", "source /usr/local/Ascend/ascend-toolkit/set_env.sh"],
                        ["2", "export CUDA_VISIBLE_DEVICES=0,1,2,3", "3", "export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3"],
                        ["3", "export NCCL_DEBUG=INFO", "4", "export HCCL_DEBUG=INFO"],
                        ["4", run.strip(), "5", run.strip()]]


def test_a_finding_is_badged_only_on_a_line_that_differs(chromium, tmp_path):
    """Issue 41: the GPU seed is `SEED = 42` in train.py, a line identical on both sides; the
    NPU's comes from its launch script. The train.py row carries no badge: the finding is said
    in that panel's header, and badged on the launch script's line that differs."""
    train = ("import argparse\nimport torch\n\nSEED = 42\n\n\ndef main():\n    p = argparse.ArgumentParser()\n"
             "    p.add_argument(\"--seed\", type=int, default=SEED)\n    args = p.parse_args()\n"
             "    torch.manual_seed(args.seed)\n    torch.nn.Linear(4, 4).cuda()\n\n\nmain()\n")
    page = _page(tmp_path, {
        "gpu/train.py": train, "npu/train.py": train.replace(".cuda()", ".npu()"),
        "gpu/run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py\n",
        "npu/run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --seed 1234\n"}, "gpu", "npu")
    out, _dom = selftest(chromium, tmp_path, page)
    launch, program = out["panels"]
    assert [r[4][:7] for r in launch["rows"] if r[4]] == ["E SD207"] and launch["ff"] == []
    assert program["ff"] == ["SD207"]
    seed = [r for r in program["rows"] if r[1] == "SEED = 42"]
    assert seed == [["4", "SEED = 42", "4", "SEED = 42", ""]] or seed == []  # shown as context, or folded: no badge
    assert not [r for r in program["rows"] if "SD207" in r[4]]


def test_screenshot(chromium, page, tmp_path):
    png = tmp_path / "review.png"
    headless(chromium, tmp_path, f"--screenshot={png}", page.as_uri())
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1300, 1000)
    assert len(data) > 20_000  # a blank page compresses to a few kB


HOSTILE = ("<img src=x onerror=\"window.__pwned='img';document.title='PWNED'\">",
           "</script><script>window.__pwned='script';document.title='PWNED'</script>",
           "<svg onload=\"window.__pwned='svg'\"></svg>")


def test_nothing_from_a_scanned_file_runs(chromium, tmp_path):
    """Text, file names, values and curve names from the inputs reach the page as text: in a
    changed line with a finding on it (its words marked), in the hover texts, in the charts."""
    from conftest import run_cli
    from test_curves import gen

    name = "<svg onload=window.__pwned=1>.py"
    for side, lr in (("g", 1), ("n", 2)):
        (tmp_path / side).mkdir()
        (tmp_path / side / name).write_text("".join(f'x{i} = "{h}"  # {side}\n' for i, h in enumerate(HOSTILE))
                                            + f"lr = {lr}  # {HOSTILE[0]}\n")
    page = tmp_path / "hostile.html"
    code, _t, _e = run_cli("diff", str(tmp_path / "g"), str(tmp_path / "n"), "--output", f"html={page}")
    assert code == 1
    out, dom = selftest(chromium, tmp_path, page)
    assert out["pwned"] is None and "PWNED" not in out["title"] and out["looks"]["lc"] >= 6
    shown = re.sub(r"<script.*?</script>", "", dom, flags=re.S)  # the DOM as laid out, without the inert data
    assert not re.search(r"<(img|svg)\b", shown) and "&lt;img src=x onerror=" in shown  # text, not elements
    # a metric named like markup, in a training log
    g, n = gen.write(str(tmp_path / "c"), "megatron", "long")
    for log in (g, n):
        with open(log) as fh:
            text = fh.read()
        with open(log, "w") as fh:
            fh.write(text.replace("| grad norm:", f"| {HOSTILE[0]}: 1.0 | grad norm:"))
    page = tmp_path / "curves.html"
    code, _t, _e = run_cli("curves", g, n, "--output", f"html={page}")
    out, dom = selftest(chromium, tmp_path, page)
    assert out["pwned"] is None and "PWNED" not in out["title"]
    assert HOSTILE[0] in [s["name"] for s in out["curves"]["series"]]  # shown as its text, in a chart title
    assert not re.search(r"<img\b", re.sub(r"<script.*?</script>", "", dom, flags=re.S))


@pytest.fixture(scope="module")
def curves_page(tmp_path_factory):
    from conftest import run_cli
    from test_curves import gen

    d = tmp_path_factory.mktemp("cv")
    g, n = gen.write(str(d), "megatron", "anomaly")
    out = d / "curves.html"
    code, _t, _e = run_cli("curves", g, n, "--output", f"html={out}")
    assert code == 1
    return out


def test_curves_page_draws_its_charts(chromium, curves_page, tmp_path):
    """Issue 28: the curves view in the page itself: an SVG chart per series (GPU, NPU, the
    relative error), the events marked, hover with the step and both values, zoom on a range
    and on the first steps, smoothing, a log axis."""
    from test_curves import gen

    out, dom = selftest(chromium, tmp_path, curves_page)
    cv = out["curves"]
    data = block(dom, "cv-data")
    assert cv["charts"] == cv["svgs"] == len(data["series"]) == 6
    assert all(s["gpu"] and s["npu"] and s["err"] for s in cv["series"])
    loss = cv["series"][0]
    assert loss["title"] == "verdict: overflow, NaN or spikes | loss: mean relative error 0.43% (first 10: 0.22%)"
    n_events = 1 + 2 * len(gen.OVERFLOWS) + len(gen.SPIKES)  # NaN, skipped and overflow, spikes: the NPU's
    assert loss["events"] == n_events
    assert [s["div"] for s in cv["series"]] == [s["div"] is not None for s in data["series"]]
    # hover: the step under the pointer and both sides' values, as logged
    m = re.fullmatch(r"step (\d+) \u00b7 GPU ([\d.e+-]+) \u00b7 NPU ([\d.e+-]+) \u00b7 rel\. err ([\d.]+)%", cv["hover"])
    assert m, cv["hover"]
    s = data["series"][0]
    i = s["x"].index(int(m.group(1)))
    assert (float(m.group(2)), float(m.group(3))) == (pytest.approx(s["g"][i], rel=1e-5), pytest.approx(s["n"][i],
                                                                                                        rel=1e-5))
    assert cv["hover_first"].startswith("step ") and int(cv["hover_first"].split()[1]) <= 10  # the first steps
    assert cv["zoomed"] == {"x_ticks": ["10", "20", "30", "40", "50"], "changed": True}  # "first steps"
    lo, hi = cv["dragged"]
    assert 1400 < lo < 1600 and 2150 < hi < 2350  # dragged from the middle to three quarters
    assert cv["smoothed"] == {"changed": True, "raw": 2} and cv["log_toggled"]


def test_curves_error_panel_is_scaled_past_a_spike(chromium, tmp_path):
    """Issue 41: a 3% drift from step 500 and one 60% spike at 650: the relative-error panel is
    scaled to the drift (its top a few percent), and the spike is drawn at the top, marked and
    counted, instead of a 65% scale that flattens the drift to nothing."""
    from conftest import run_cli
    from test_curves_verdicts import spike_and_drift

    g, n = spike_and_drift(tmp_path)
    page = tmp_path / "curves.html"
    assert run_cli("curves", str(g), str(n), "--output", f"html={page}")[0] == 1
    out, dom = selftest(chromium, tmp_path, page)
    loss = out["curves"]["series"][0]
    data = block(dom, "cv-data")["series"][0]
    assert loss["title"].startswith("verdict: overflow, NaN or spikes (also long-term difference) | loss:")
    assert 0.03 < data["rtop"] < 0.06 and loss["clipped"] == data["clipped"] >= 1
    assert re.fullmatch(r"\d+ points? above [345]\.\d% \(clipped, \u25b2\)", loss["errnote"]), loss["errnote"]


def test_curves_screenshot(chromium, curves_page, tmp_path):
    png = tmp_path / "curves.png"
    headless(chromium, tmp_path, f"--screenshot={png}", "--virtual-time-budget=3000", curves_page.as_uri(),
             size="1300,1400")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == (1300, 1400)
    assert len(data) > 60_000  # charts, not an empty frame

"""--format html: the review page's content, read back from the page itself (no browser
here; tests/test_html_browser.py renders it in headless Chromium)."""
from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser

import pytest
from conftest import FIXTURES

from scriptdiff import api
from scriptdiff.commands.common import wants_html
from scriptdiff.model import Options

EX = FIXTURES / "example"


class _Page(HTMLParser):
    """The page's JSON blocks (id -> data), its findings list and its file list."""

    def __init__(self, text: str):
        super().__init__()
        self.blocks: dict[str, object] = {}
        self.findings: list[tuple[str, str]] = []
        self.files: list[list[str]] = []
        self.verdicts: list[tuple[str, str, str]] = []
        self.hparams: dict[str, tuple[str, list[str]]] = {}
        self._in: list = []
        self._script = None
        self._row: list | None = None
        self._table = None
        self._rowcls = ""
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script" and a.get("type") == "application/json":
            self._script = [a["id"], ""]
        elif tag == "table":
            self._table = a.get("id")
        elif tag == "tr" and self._table in ("files", "verdicts", "hparams"):
            self._row, self._rowcls = [], a.get("class") or ""
        elif tag in ("td", "th") and self._row is not None:
            self._row.append("")
        elif tag == "li" and "f" in (a.get("class") or "").split():
            self.findings.append(["", ""])
            self._in = ["li"]
        elif tag == "b" and self._in == ["li"] and self.findings[-1][0] == "" and "sv" not in (a.get("class") or ""):
            self._in = ["li", "rule"]
        elif tag == "code" and self._in == ["li"] and self.findings[-1][1] == "":
            self._in = ["li", "key"]

    def handle_endtag(self, tag):
        if tag == "script" and self._script:
            self.blocks[self._script[0]] = json.loads(self._script[1])
            self._script = None
        elif tag in ("b", "code") and len(self._in) == 2:
            self._in = ["li"]
        elif tag == "li":
            self._in = []
        elif tag == "tr" and self._row is not None:
            cells = [c.strip() for c in self._row]
            if self._table == "files" and cells and cells[0] != "file (GPU ⇄ NPU)":
                self.files.append(cells)
            elif self._table == "verdicts" and cells[0] != "check":
                self.verdicts.append((cells[0], cells[1], self._rowcls))
            elif self._table == "hparams" and cells[1] != "key":
                self.hparams[cells[1]] = (self._rowcls, cells)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._script is not None:
            self._script[1] += data
        elif self._row is not None and self._row:
            self._row[-1] += data
        elif len(self._in) == 2:
            self.findings[-1][0 if self._in[1] == "rule" else 1] += data

    def pair(self, name: str) -> dict:
        """The data of the file pair whose GPU path ends with `name`."""
        i = next(i for i, row in enumerate(self.files) if row[0].split(" ⇄ ")[0].endswith(name))
        return self.blocks[f"d{i}"]


def example_page(cli) -> tuple[int, str]:
    code, out, _err = cli("diff", str(EX / "gpu"), str(EX / "npu"), "--format", "html")
    return code, out


def test_example_page_has_findings_files_masks_and_aligned_lines(cli):
    code, page = example_page(cli)
    assert code == 1
    p = _Page(page)
    assert [tuple(f) for f in p.findings] == [("SD201", "use_flash_attn"), ("SD207", "seed"), ("SD206", "adam_beta2"),
                                              ("SD302", "env:source set_env.sh")]
    g, n = f"{EX}/gpu/", f"{EX}/npu/"
    assert p.files == [[f"{g}ds_config.json ⇄ {n}ds_config.json", "changed", "0", "0"],
                       [f"{g}pretrain.sh ⇄ {n}pretrain.sh", "changed", "2", "1"],
                       [f"{g}train.py ⇄ {n}train.py", "changed", "3", "11"]]
    train, launch = p.pair("train.py"), p.pair("pretrain.sh")
    # findings in the gutter: SD207 and SD206 on both sides of train.py, SD201 across files (GPU flag, NPU code)
    assert (train["fa"], train["fb"], launch["fa"], launch["fb"]) == ({"19": [1], "94": [2]},
                                                                      {"80": [0], "21": [1], "96": [2]},
                                                                      {"12": [0]}, {"3": [3]})
    masks = p.blocks["sd-data"]["m"]
    assert masks[train["ma"]["63"]] == masks[train["mb"]["65"]]
    assert masks[train["ma"]["63"]].startswith("masked by SD002 ")
    assert sorted(train["mb"]) == ["123", "124", "136", "139", "14", "16", "65", "69", "71", "72", "96"]
    # aligned like a diff tool: GPU line 94 faces NPU line 96
    op = next(o for o in train["o"] if o[1] <= 93 < o[2])
    assert op[0] == "r" and op[3] + (93 - op[1]) == 95
    # the finding as the gutter shows it: severity, check, rule, key, both values
    assert p.blocks["sd-data"]["f"][2][:6] == ["error", "hyperparameters", "SD206", "adam_beta2", "0.95", "0.999"]


def test_page_is_self_contained(cli):
    _code, page = example_page(cli)
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:|//)""", page, re.I)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert page.count("<script") == page.count("</script>") == 5  # page data, 3 file pairs, the code


def test_output_html_file_beside_text(cli, tmp_path):
    out = tmp_path / "review.html"
    code, text, _err = cli("diff", str(EX / "gpu"), str(EX / "npu"), "--output", f"html={out}")
    assert code == 1 and "SD206" in text
    assert [tuple(f) for f in _Page(out.read_text()).findings][:3] == [("SD201", "use_flash_attn"), ("SD207", "seed"),
                                                                      ("SD206", "adam_beta2")]


def test_texts_kept_only_for_html():
    class A:
        format, output = "text", []

    assert not wants_html(A)
    A.output = ["json=x.json", "html=r.html"]
    assert wants_html(A)
    A.output = ["r.HTML"]  # an --output that names its format by the suffix (issue 16)
    assert wants_html(A)
    report = api.diff(str(EX / "gpu"), str(EX / "npu"))
    assert report.texts == {} and report.pairs == []


def test_hparams_page_has_the_table(cli):
    code, page, _err = cli("hparams", str(EX / "gpu/pretrain.sh"), str(EX / "npu/pretrain.sh"), "--format", "html")
    assert code == 1
    p = _Page(page)
    cls, cells = p.hparams["use_flash_attn"]
    assert (cls, cells[0], cells[2], cells[4]) == ("sev-error", "error SD201", "on", "off")
    assert p.hparams["lr"][0] == "" and p.hparams["lr"][1][2] == "0.0001"


def test_check_page_shows_every_verdict_not_checked_too(cli, tmp_path, monkeypatch):
    for side, lr in (("gpu", 1), ("npu", 2)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "a.txt").write_text(f"lr={lr}\n")
    (tmp_path / "scriptdiff.toml").write_text('[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n')
    monkeypatch.chdir(tmp_path)
    code, page, _err = cli("check", "--format", "html")
    assert code == 1
    p = _Page(page)
    assert p.verdicts == [("hyperparameters", "pass", "v-pass"), ("script", "differences", "v-differences"),
                          ("environment", "not checked", "v-not-checked"), ("libraries", "not checked", "v-not-checked"),
                          ("dataset", "not checked", "v-not-checked"), ("weights", "not checked", "v-not-checked")]
    assert p.files == [["gpu/a.txt ⇄ npu/a.txt", "changed", "1", "0"]]
    assert p.pair("a.txt")["fa"] == {"1": [0]}


def test_review_patch_page_shows_both_texts_from_the_patch(tmp_path):
    old = (EX / "gpu/train.py").read_text().splitlines(keepends=True)
    new = (EX / "npu/train.py").read_text().splitlines(keepends=True)
    import difflib

    patch = "".join(difflib.unified_diff(old, new, "a/train.py", "b/train.py")).encode()
    (tmp_path / "train.py").write_text("".join(new))  # the whole file, as a checkout has it
    report = api.review(patch, "port.patch", Options(keep_texts=True), root=str(tmp_path))
    p = _Page(api.render(report, "html"))
    assert p.files == [["train.py", "changed", "3", "11"]]
    d = p.blocks["d0"]
    assert len(d["a"]) == len(old) and "".join(d["a"][93][1::2]) == old[93].rstrip("\n")
    assert [r for r, _k in p.findings] == ["SD207", "SD201", "SD206"]  # seed, attention kernel, adam_beta2
    assert (d["fa"], d["fb"]) == ({"19": [0], "78": [1], "94": [2]}, {"21": [0], "80": [1], "96": [2]})


def test_git_revisions_page_reads_blobs(tmp_path, cli):
    r = tmp_path / "repo"
    r.mkdir()

    def git(*args):
        subprocess.run(["git", "-C", str(r), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "gpu")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (r / "notes.txt").write_text("batch=8\nlr=1e-4\n")
    (r / "same.txt").write_text("same\n")
    git("add", "-A")
    git("commit", "-qm", "gpu")
    git("checkout", "-qb", "npu")
    (r / "notes.txt").write_text("batch=8\nlr=2e-4\n")
    (r / "extra.sh").write_text("echo npu\n")
    git("add", "-A")
    git("commit", "-qm", "npu")
    (r / "notes.txt").write_text("changed in the work tree\n")  # never read: the blobs are
    code, page, _err = cli("diff", "--git", "gpu", "npu", "--repo", str(r), "--format", "html")
    assert code == 1
    p = _Page(page)
    assert p.files == [["gpu:notes.txt ⇄ npu:notes.txt", "changed", "1", "0"],
                       ["gpu:same.txt ⇄ npu:same.txt", "identical", "0", "0"], ["npu:extra.sh", "NPU only", "1", "0"]]
    d = p.blocks["d0"]
    assert (d["a"], d["b"], d["o"]) == (["batch=8", "lr=1e-4"], ["lr=2e-4"],
                                        [["e", 0, 1, 0, 1], ["r", 1, 2, 1, 2]])


def test_hostile_text_stays_text(tmp_path, cli):
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    evil = 'x = "</script><script>alert(1)</script><!--<script>"  # \x1b[2J\n'
    (tmp_path / "g" / "a.py").write_text(evil + "lr = 1\n")
    (tmp_path / "n" / "a.py").write_text(evil + "lr = 2\n")
    _code, page, _err = cli("diff", str(tmp_path / "g"), str(tmp_path / "n"), "--format", "html")
    assert page.count("</script") == 3 and "<!--" not in page  # only the page's own closing tags
    line = "".join(_Page(page).blocks["d0"]["a"][0][1::2])
    assert line == 'x = "</script><script>alert(1)</script><!--<script>"  # \\x1b[2J'


HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWx12"


def _page_lines(page: str, block: str, side: str) -> list[str]:
    return [line if isinstance(line, str) else "".join(line[1::2]) for line in _Page(page).blocks[block][side]]


def test_page_withholds_secrets_on_every_line_it_shows(tmp_path, cli):
    """Issue 32: the page embeds both files; every line passes through the same secret rules
    as the other writers' excerpts (scriptdiff.secrets.shown_text), marker with fingerprint."""
    g, n = tmp_path / "g.sh", tmp_path / "n.sh"
    g.write_text(f"export HF_TOKEN={HF}\nexport WANDB_API_KEY=0123abcd\ntorchrun t.py --lr 1\n")
    n.write_text(f"export HF_TOKEN={HF}\nexport WANDB_API_KEY=0123abce\ntorchrun t.py --lr 2\n")
    code, page, _err = cli("diff", str(g), str(n), "--format", "html")
    assert code == 1 and HF not in page and "0123abcd" not in page and "0123abce" not in page
    a, b = _page_lines(page, "d0", "a"), _page_lines(page, "d0", "b")  # b: the lines not equal to a's
    marker = "<withheld: secret-looking value "
    assert _Page(page).blocks["d0"]["o"] == [["e", 0, 1, 0, 1], ["r", 1, 3, 1, 3]]  # the same token: equal
    assert a[0].startswith(f"export HF_TOKEN={marker}")
    assert a[1].startswith(f"export WANDB_API_KEY={marker}") and b[0].startswith(f"export WANDB_API_KEY={marker}")
    assert a[1] != b[0]  # a changed token: a changed line
    assert a[2] == "torchrun t.py --lr 1" and b[1] == "torchrun t.py --lr 2"  # the rest as written


def test_page_withholds_secrets_of_configs_and_code_and_files_read_from_disk(tmp_path):
    """Key: value lines of YAML, a one-line JSON object, a quoted value in code; the page of a
    Report built without kept texts reads the files from disk through the same function."""
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    for side, lr in (("g", 1), ("n", 2)):
        (tmp_path / side / "c.yaml").write_text(f"hub_token: s3cr3tvalue\nlr: {lr}\n")
        (tmp_path / side / "d.json").write_text(f'{{"hub_token": "js0nsecret", "lr": {lr}}}\n')
        (tmp_path / side / "t.py").write_text(f'login(token="pyth0nsecret")\nhf_api_key = "{HF}"\nlr = {lr}\n')
    report = api.diff(str(tmp_path / "g"), str(tmp_path / "n"))  # no keep_texts: the page reads the disk
    page = api.render(report, "html")
    for secret in ("s3cr3tvalue", "js0nsecret", "pyth0nsecret", HF):
        assert secret not in page
    kept = api.diff(str(tmp_path / "g"), str(tmp_path / "n"), options=Options(keep_texts=True))
    assert all(s not in t for t in kept.texts.values() for s in ("s3cr3tvalue", "js0nsecret", HF))
    assert "lr: 1" in kept.texts[("gpu", str(tmp_path / "g" / "c.yaml"))]


def test_syntax_colours_come_from_the_files_kind(tmp_path, cli, monkeypatch):
    """The lexer is the kind's (rules/kinds.yaml `lexer`): a TOML pair is coloured by pygments'
    TOML lexer, and the same pair is plain once its kind names no lexer."""
    import dataclasses

    pytest.importorskip("pygments")
    from scriptdiff import registry

    g, n = tmp_path / "g.toml", tmp_path / "n.toml"
    g.write_text("[optimizer]\nlr = 8e-4\n")
    n.write_text("[optimizer]\nlr = 3e-4\n")

    def first_line():
        code, page, _err = cli("diff", str(g), str(n), "--format", "html", "--no-cache")
        assert code == 1
        return _Page(page).blocks["d0"]["a"][0]

    line = first_line()
    assert isinstance(line, list) and "".join(line[1::2]) == "[optimizer]" and any(line[0::2])  # token classes
    kinds = registry.registry().kinds
    monkeypatch.setitem(kinds, "toml", dataclasses.replace(kinds["toml"], lexer=None))
    assert first_line() == "[optimizer]"  # plain: nothing else colours it

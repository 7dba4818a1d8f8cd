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


# what each masked port edit keeps (issue 43: SD023, SD027) is tests/test_fidelity.py's; not these tests
PORT_NOTES = "SD023,SD027"


def example_page(cli) -> tuple[int, str]:
    code, out, _err = cli("diff", str(EX / "gpu"), str(EX / "npu"), "--format", "html", "--ignore", PORT_NOTES)
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
    # findings in the gutter: SD207 and SD206 on both sides of train.py, SD201 across files (GPU
    # flag, NPU code)
    assert (train["fa"], train["fb"], launch["fa"], launch["fb"]) == ({"19": [1], "100": [2]},
                                                                      {"86": [0], "21": [1], "102": [2]},
                                                                      {"11": [0]}, {"3": [3]})
    masks = p.blocks["sd-data"]["m"]
    assert masks[train["ma"]["69"]] == masks[train["mb"]["71"]]
    assert masks[train["ma"]["69"]].startswith("masked by SD002 ")
    assert sorted(train["mb"]) == ["102", "129", "130", "14", "142", "145", "16", "71", "75", "77", "78"]
    # aligned like a diff tool: GPU line 100 faces NPU line 102
    op = next(o for o in train["o"] if o[1] <= 99 < o[2])
    assert op[0] == "r" and op[3] + (99 - op[1]) == 101
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
    assert (cls, cells[0], cells[2], cells[4]) == ("sev-error t-f", "error SD201", "on", "off")
    # lr is written 1e-4 and 1.0e-4: equal, written differently
    assert p.hparams["lr"][0] == "t-q" and p.hparams["lr"][1][:3] == ["equal, written differently", "lr", "0.0001"]


def test_the_table_says_what_differ_counts_and_links_each_origin_to_its_line(cli):
    """Issue 28: "28 key(s), 4 differ" did not say what it counted. The summary splits the
    keys into those that differ (with a finding, a masked port edit, without a finding) and
    those that are equal (written differently or not); each origin the page shows links to
    its line in the file's panel."""
    _code, page = example_page(cli)
    p = _Page(page)
    summary = re.search(r"<span id=hpsum>(.*?)</span>", page).group(1)
    assert re.sub("<.*?>", "", summary) == ("29 key(s): 5 differ (4 with a finding, 1 masked port edit(s), 0 without "
                                            "a finding), 24 equal (4 written differently on the two sides)")
    looks = {k: v[0] for k, v in p.hparams.items()}
    assert sorted(k for k, c in looks.items() if "t-f" in c) == ["adam_beta2", "env:source set_env.sh", "seed",
                                                                    "use_flash_attn"]
    assert looks["env:NCCL_DETERMINISTIC"] == "t-m"  # NCCL_ -> HCCL_DETERMINISTIC, 1 -> true: the port
    # 1e-4 / 1.0e-4, 1e-6 / 1e-06, and the reordered zero_optimization object of ds_config.json
    assert sorted(k for k, c in looks.items() if c == "t-q") == ["lr", "min_lr", "zero_optimization.overlap_comm",
                                                                 "zero_stage"]
    train = p.files.index(next(r for r in p.files if r[0].endswith("train.py")))
    assert f'<a href="#p{train}" data-go="{train} a 100">at train.py:100</a>' in page  # adam_beta2's GPU origin
    assert f'data-go="{train} b 102">at train.py:102</a>' in page


def _looks(block: dict) -> dict:
    """{(column, line): look} of a panel, from its rows."""
    rows = {}
    r = 0
    for tag, i1, i2, j1, j2 in block["o"]:
        n = (i2 - i1) if tag == "e" else max(i2 - i1, j2 - j1)
        for k in range(n):
            rows[r + k] = (i1 + k + 1 if i1 + k < i2 else None, j1 + k + 1 if j1 + k < j2 else None)
        r += n
    out = {}
    for row, la, lb in block["r"]:
        a, b = rows[row]
        if la:
            out[("a", a)] = la
        if lb:
            out[("b", b)] = lb
    return out


def test_every_changed_line_has_one_of_four_looks(cli):
    """Issue 28: a finding (its severity), a masked port edit, equal after normalising (with
    the value on hover) and changed with no finding, per side of each row; and the words each
    finding is about on its line."""
    _code, page = example_page(cli)
    p = _Page(page)
    launch, train, ds = _looks(p.pair("pretrain.sh")), _looks(p.pair("train.py")), _looks(p.pair("ds_config.json"))
    assert launch == {("a", 2): "C", ("b", 2): "C",  # the comment: changed, no finding
                      ("b", 3): "I",  # SD302: set_env.sh sourced on the NPU only
                      ("a", 4): "M", ("b", 5): "M",  # NCCL_DETERMINISTIC=1 -> HCCL_DETERMINISTIC=true
                      ("a", 9): "Q", ("b", 10): "Q", ("a", 10): "Q", ("b", 11): "Q",  # 1e-4 / 1.0e-4, 1e-6 / 1e-06
                      ("a", 11): "E"}  # --use-flash-attn, SD201
    assert (train[("a", 19)], train[("b", 21)]) == ("E", "E")  # SEED = 42 -> 1234: SD207, the program's seed
    assert (train[("a", 100)], train[("b", 102)], train[("b", 86)]) == ("E", "E", "E")  # betas (SD206), eager (SD201)
    assert (train[("a", 69)], train[("b", 71)], train[("b", 14)]) == ("M", "M", "M")
    assert set(ds.values()) == {"Q"}  # the JSON object reordered, 1.0 -> 1: every moved line equal
    blocks = p.blocks
    q = blocks["sd-data"]["q"]
    d = p.pair("pretrain.sh")
    [[qa, a0, a1]], [[qb, b0, b1]] = d["qa"]["9"], d["qb"]["10"]
    assert qa == qb and q[qa] == ("equal after normalising: lr = 0.0001 (GPU line 9, NPU line 10; GPU writes 1e-4, "
                                  "NPU 1.0e-4)")
    a_text = (EX / "gpu/pretrain.sh").read_text().splitlines()[8]
    b_text = (EX / "npu/pretrain.sh").read_text().splitlines()[9]
    assert (a_text[a0:a1], b_text[b0:b1]) == ("1e-4", "1.0e-4")
    # the words a finding is about: betas' second value on each side (the optimizer swap is the mask's)
    t = p.pair("train.py")
    [[s0, s1, k]] = t["sa"]["100"]
    line = (EX / "gpu/train.py").read_text().splitlines()[99]
    assert (line[s0:s1], blocks["sd-data"]["f"][k][2]) == ("0.95", "SD206")
    [[s0, s1, k]] = t["sb"]["102"]
    assert (EX / "npu/train.py").read_text().splitlines()[101][s0:s1] == "0.999"


def test_navigation_stops_are_in_page_order(cli):
    """Issue 28: n/p followed the findings' report order. The stops are in page order: each
    finding stop a row of a panel (SD201 twice: the GPU flag in the launch script, the NPU
    setting in the program), and each change stop a run of rows with a look."""
    _code, page = example_page(cli)
    p = _Page(page)
    data = p.blocks["sd-data"]
    rules = [[data["f"][k][2] for k in ks] for _i, _r, ks in data["sf"]]
    launch, train = (p.files.index(next(r for r in p.files if r[0].endswith(n))) for n in ("pretrain.sh", "train.py"))
    assert [s[0] for s in data["sf"]] == [launch, launch, train, train, train]
    assert rules == [["SD302"], ["SD201"], ["SD207"], ["SD201"], ["SD206"]]
    assert data["sf"] == sorted(data["sf"], key=lambda s: (s[0], s[1]))
    assert data["sc"] == sorted(data["sc"], key=lambda s: (s[0], s[1]))
    # rows 2-3 (a comment changed, set_env.sh added: one run, its strongest look), 4, 9-11 (lr and
    # min_lr equal after normalising, then --use-flash-attn: one run, its strongest look)
    assert [(s[1], s[2]) for s in data["sc"] if s[0] == launch] == [(1, "I"), (4, "M"), (9, "E")]
    assert all(0 <= s[3] < s[4] <= 1 for s in data["sc"])  # where each change is in its panel, for the map


def _dual(tmp_path):
    f = tmp_path / "dual.py"
    f.write_text("""import torch
import torch.distributed as dist
try:
    import torch_npu
    _NPU = True
except ImportError:
    _NPU = False


def init_dist(rank):
    if _NPU:
        dist.init_process_group(backend="hccl")
        torch.npu.set_device(rank)
        lr = 2e-4
    else:
        dist.init_process_group(backend="nccl")
        torch.cuda.set_device(rank)
        lr = 1e-4
    return lr
""")
    return f


def test_one_file_view_dims_the_other_devices_branch_on_each_side(tmp_path, cli):
    """Issue 28 with issue 26's one-file mode: the GPU column dims the NPU branch and the NPU
    column the GPU branch (SD019), cell by cell; the finding is on each side's own line."""
    code, page, _err = cli("diff", str(_dual(tmp_path)), "--format", "html")
    assert code == 1
    d = _Page(page).blocks["d0"]
    looks = _looks(d)
    masks = _Page(page).blocks["sd-data"]["m"]
    rule = {(col, int(ln)): masks[i].split()[2] for col in ("a", "b") for ln, i in d["m" + col].items()}
    # the GPU column: the NPU branch set aside; the NPU column: the GPU branch set aside
    assert {ln for (col, ln), r in rule.items() if col == "a" and r == "SD019"} == {4, 5, 7, 11, 12, 13, 14}
    assert {ln for (col, ln), r in rule.items() if col == "b" and r == "SD019"} == {5, 6, 7, 15, 16, 17, 18}
    # what the NPU runs in its branch is the port of the GPU's: nccl -> hccl, torch.cuda -> torch.npu
    assert (rule[("a", 16)], rule[("b", 12)], rule[("a", 17)], rule[("b", 13)]) == ("SD005", "SD005", "SD002", "SD002")
    assert all(looks[k] == "M" for k in rule if k not in (("a", 14), ("b", 18)))
    assert (looks[("a", 18)], looks[("b", 14)]) == ("E", "E")  # lr: 1e-4 on the GPU, 2e-4 on the NPU


def test_device_branch_in_a_pair_is_dimmed_on_the_npu_side(tmp_path, cli):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    (tmp_path / "gpu" / "train.py").write_text("import torch\n\n\ndef setup(rank):\n    torch.cuda.set_device(rank)\n"
                                               "    lr = 1e-4\n    return lr\n")
    (tmp_path / "npu" / "train.py").write_text("import torch\ntry:\n    import torch_npu\n    _NPU = True\n"
                                               "except ImportError:\n    _NPU = False\n\n\ndef setup(rank):\n"
                                               "    if _NPU:\n        torch.npu.set_device(rank)\n    else:\n"
                                               "        torch.cuda.set_device(rank)\n    lr = 1e-4\n    return lr\n")
    code, page, _err = cli("diff", str(tmp_path / "gpu"), str(tmp_path / "npu"), "--format", "html")
    assert code == 0
    p = _Page(page)
    d = p.blocks["d0"]
    looks = _looks(d)
    assert (looks[("b", 12)], looks[("b", 13)]) == ("M", "M")  # else: torch.cuda...: the GPU's branch
    assert p.blocks["sd-data"]["m"][d["mb"]["13"]].startswith("masked by SD019 ")
    assert looks[("a", 5)] == "M" and looks[("b", 10)] == "C"  # cuda -> npu masked; the device test itself changed


def test_equal_after_normalising_never_shows_a_secret(tmp_path, cli):
    g, n = tmp_path / "g.sh", tmp_path / "n.sh"
    g.write_text(f"export HF_TOKEN={HF}  # gpu\ntorchrun t.py --lr 1\n")
    n.write_text(f"export HF_TOKEN={HF}  # npu\ntorchrun t.py --lr 2\n")
    code, page, _err = cli("diff", str(g), str(n), "--format", "html")
    assert code == 1 and HF not in page
    q = _Page(page).blocks["sd-data"]["q"]
    assert q == ["equal after normalising: env:HF_TOKEN (value withheld)"]


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
    report = api.review(patch, "port.patch", Options(keep_texts=True, ignore=PORT_NOTES.split(",")), root=str(tmp_path))
    p = _Page(api.render(report, "html"))
    assert p.files == [["train.py", "changed", "3", "11"]]
    d = p.blocks["d0"]
    assert len(d["a"]) == len(old) and "".join(d["a"][99][1::2]) == old[99].rstrip("\n")
    assert [r for r, _k in p.findings] == ["SD207", "SD201", "SD206"]  # seed, attention kernel, adam_beta2
    assert (d["fa"], d["fb"]) == ({"19": [0], "84": [1], "100": [2]}, {"21": [0], "86": [1], "102": [2]})


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
    as the other writers' excerpts (scriptdiff.ruleset.secrets.shown_text), marker with fingerprint."""
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
    from scriptdiff.ruleset import registry

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


# --- the curves view ------------------------------------------------------------------------------

def test_curves_page_is_the_curves_view(tmp_path, cli):
    """Issue 28: `curves -f html` draws its charts from a JSON block (the page's own SVG, no
    plotting library): every point of a 3000-step run from step 1 (no warm-up cut), the log
    axis, the first points judged, and each side's NaN, skipped, overflow and spike steps."""
    from test_curves import gen

    g, n = gen.write(str(tmp_path), "megatron", "anomaly")
    code, page, _err = cli("curves", g, n, "-f", "html")
    assert code == 1
    cv = _Page(page).blocks["cv-data"]
    assert (cv["verdict"], cv["unit"], cv["rtol"], cv["first"]) == ("overflow, NaN or spikes", "step", 0.01, 10)
    names = [s["name"] for s in cv["series"]]
    # the plot's choice first (the loss, lr, grad norm, what is beyond the tolerance), then every other series
    assert names == ["loss", "lr", "grad_norm", "loss_scale", "eval_loss", "eval_ppl"]
    loss = cv["series"][0]
    assert (loss["primary"], loss["log"], loss["points"], loss["shown"], loss["x"][0], loss["x"][-1]) == (
        True, True, 3000, 3000, 1, 3000)
    assert loss["g"][0] > 10 and (loss["first"], loss["warm"]) == (10, 50)  # the warm-up's 10.9 is there
    assert loss["events"] == {"gpu": {}, "npu": {"nan/inf": [gen.NAN_AT], "skipped": list(gen.OVERFLOWS),
                                                 "overflow": list(gen.OVERFLOWS), "spikes": list(gen.SPIKES)}}
    assert 'verdict: <b>overflow, NaN or spikes</b>' in page and "<svg" not in page  # drawn by the page's script
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:|//)""", page, re.I)


def test_the_page_thins_a_long_series_but_keeps_every_extreme():
    import numpy as np

    from scriptdiff.budget import CHART_POINTS as MAX_POINTS
    from scriptdiff.report.curves import thinned

    x = np.arange(1.0, 100_001.0)
    g = 2 + np.sin(x / 500)
    n = g.copy()
    n[54_321] = 9.0  # one spike in 100,000 points
    n[77_000] = np.nan
    rel = np.abs(n - g) / g
    idx = thinned(x, g, n, rel)
    assert len(idx) <= MAX_POINTS and 54_321 in idx and 77_000 in idx and idx[0] == 0
    assert int(np.argmax(g)) in idx and int(np.argmin(g)) in idx


def test_check_page_embeds_the_curves_view(tmp_path):
    from test_curves import gen

    from scriptdiff.project.checkrun import load_config, run_checks

    g, n = gen.write(str(tmp_path), "megatron", "long")
    cfg = tmp_path / "scriptdiff.toml"
    cfg.write_text(f'[gpu]\nlogs = ["{g}"]\n[npu]\nlogs = ["{n}"]\n')
    report = run_checks(load_config(str(cfg)), Options(use_cache=False, keep_texts=True))
    p = _Page(api.render(report, "html"))
    assert ("process", "differences", "v-differences") in p.verdicts
    cv = p.blocks["cv-data"]
    assert cv["verdict"] == "long-term difference" and cv["series"][0]["div"] == 1392
    assert "#### process data: training curves" in api.render(report, "markdown")


def test_check_page_lists_errors_before_info(cli, fixtures, tmp_path):
    """Issue 41: `check -f html` listed the environment's info findings above the libraries'
    error (report order, by check); the page lists them most severe first, each severity in
    report order, and the other writers keep the report's order."""
    import re

    page = tmp_path / "check.html"
    code, text, _ = cli("check", "--config", str(fixtures / "example" / "scriptdiff.toml"), "-o", f"html={page}",
                        "--no-cache")
    sevs = re.findall(r'<li class="f sev-(\w+)', page.read_text())
    assert sevs == sorted(sevs, key=["error", "warning", "info"].index) and sevs.count("error") == 4
    rules = re.findall(r'<li class="f [^"]*" data-f=\d+><a [^>]*><b class=sv>\w+</b> <b>(SD\d+)</b>', page.read_text())
    assert rules[:4] == ["SD201", "SD207", "SD206", "SD401"]
    assert text.index("SD316") < text.index("SD401")  # the text report: by check, as before

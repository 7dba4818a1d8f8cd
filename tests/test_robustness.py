"""No input breaks scriptdiff: property-based tests over every parser, through the engine.

For any bytes given any file kind, a diff returns a Report (never raises), its JSON is
valid, every error is one line naming the file, and the same inputs give byte-identical
JSON. The fuzz script (fuzz/fuzz_cli.py) runs the same property for tens of thousands of
inputs outside the test suite.
"""
from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.report import render

NAMES = ["train.py", "pretrain.sh", "config.yaml", "ds_config.json", "train.log", "requirements.txt",
         "notes.txt", "environment.yml"]

SNIPPETS = [
    b"import torch\nmodel.cuda()\n", b"torchrun pretrain_gpt.py --lr 1e-4 \\\n  --bf16\n",
    b"lr: 1e-4\nflash_attn: fa2\n", b'{"train_micro_batch_size_per_gpu": 2}', b"torch==2.1.0+cu121\n",
    "# 中文注释\n".encode("gbk"), b"\xef\xbb\xbfx = 1\r\n", b"\x00\x00", b"${", b"$((1/0))", b"def f(:\n",
    b"[" * 300, b"(" * 300, b"'unterminated", b"export A=$B\n", b"- - - :\n", b"\t\n",
]

fragments = st.lists(st.one_of(st.sampled_from(SNIPPETS), st.binary(max_size=64)), max_size=6).map(b"".join)


def _diff(tmp_path, name, gbytes, nbytes):
    g = tmp_path / "gpu" / name
    n = tmp_path / "npu" / name
    g.parent.mkdir(exist_ok=True)
    n.parent.mkdir(exist_ok=True)
    g.write_bytes(gbytes)
    n.write_bytes(nbytes)
    return diff_files([str(g)], [str(n)], Options(use_cache=False))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(NAMES), gbytes=fragments, nbytes=fragments)
def test_any_bytes_any_kind_never_raise(tmp_path, name, gbytes, nbytes):
    report = _diff(tmp_path, name, gbytes, nbytes)
    doc = json.loads(render(report, "json"))
    assert doc["schema"] == 1
    for e in report.errors:
        assert "\n" not in e.message and e.path
    render(report, "text")  # the text writer copes too
    again = _diff(tmp_path, name, gbytes, nbytes)
    assert render(again, "json") == render(report, "json")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("payload", [
    b"", b"\n" * 3, b"x" * 1_000_000 + b"\n", "# λ ✓ 注释\n".encode("utf-8"), "# café\n".encode("latin-1"),
    b"\xef\xbb\xbf" + b"a = 1\r\nb = 2\r\n",
], ids=["empty", "blank", "1MB-line", "utf8", "latin1", "bom-crlf"])
def test_edge_payloads(tmp_path, name, payload):
    report = _diff(tmp_path, name, payload, payload + b"\n")
    json.loads(render(report, "json"))


def test_hundred_thousand_line_file(tmp_path):
    text = "".join(f"x{i} = {i}\n" for i in range(100_000)).encode()
    report = _diff(tmp_path, "big.py", text, text.replace(b"x5 = 5\n", b"x5 = 6\n"))
    assert report.findings  # compared (structurally or as text), not dropped
    json.loads(render(report, "json"))


def test_deep_nesting(tmp_path):
    deep = b"x = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n"
    report = _diff(tmp_path, "deep.py", deep, deep + b"y = 2\n")
    json.loads(render(report, "json"))
    assert all("\n" not in e.message for e in report.errors)


def test_unreadable_file_is_one_line(tmp_path, monkeypatch, cli):
    g = tmp_path / "a.sh"
    n = tmp_path / "b.sh"
    g.write_text("echo hi\n")
    n.write_text("echo hi\n")
    real_open = os.open

    def deny(path, *a, **kw):  # the tests may run as root, which chmod cannot stop
        if os.path.basename(path) == "b.sh":
            raise PermissionError(13, "Permission denied")
        return real_open(path, *a, **kw)

    monkeypatch.setattr(os, "open", deny)
    code, out, err = cli("diff", str(g), str(n))
    assert code == 2
    assert err.strip() == f"scriptdiff: {n}: permission denied"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_broken_symlink_is_one_line(tmp_path, cli):
    g = tmp_path / "a.py"
    g.write_text("x = 1\n")
    link = tmp_path / "loop.py"
    link.symlink_to(tmp_path / "loop.py")
    code, _, err = cli("diff", str(g), str(link))
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and str(link) in err and "Traceback" not in err


def test_folder_of_ten_thousand_files(tmp_path):
    """A wide tree: every file is walked and paired, identical ones skipped before parsing,
    and the one real difference is still found."""
    from scriptdiff.run.folders import diff_trees

    for side in ("gpu", "npu"):
        for i in range(10_000):
            d = tmp_path / side / f"d{i % 100}"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"f{i}.txt").write_text(f"value {i}\n")
    (tmp_path / "npu" / "d7" / "f7.txt").write_text("value 8\n")
    report = diff_trees(str(tmp_path / "gpu"), str(tmp_path / "npu"), Options(use_cache=False))
    assert [(f.rule, f.gpu.path.rsplit("/", 2)[-2:], f.gpu.value, f.npu.value) for f in report.findings] == [
        ("SD108", ["d7", "f7.txt"], "value 7", "value 8")]
    assert report.errors == [] and report.compared == 10_000


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_symlink_loop_in_a_tree_ends(tmp_path):
    from scriptdiff.run.folders import diff_trees

    for side in ("gpu", "npu"):
        (tmp_path / side / "a").mkdir(parents=True)
        (tmp_path / side / "a" / "x.sh").write_text("torchrun train.py --lr 1e-4\n")
        (tmp_path / side / "a" / "loop").symlink_to(tmp_path / side / "a")
    report = diff_trees(str(tmp_path / "gpu"), str(tmp_path / "npu"), Options(use_cache=False))
    assert report.findings == [] and report.exit_code() == 0

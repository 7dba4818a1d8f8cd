"""Directory mode: pairing by path and rename rules, identical files skipped, unpaired listed."""
from __future__ import annotations

import os

import pytest

from scriptdiff.model import Options
from scriptdiff.run.pairing import candidates, pair_paths
from scriptdiff.run.folders import diff_trees
from scriptdiff.ruleset.rules import load


def write(root, rel, text):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def rows(report):
    return [(f.rule, f.severity, f.key, f.gpu and f.gpu.value, f.npu and f.npu.value,
             f.gpu and f.gpu.line, f.npu and f.npu.line) for f in report.findings]


RULES = load().section("pairing")


@pytest.mark.parametrize("gpu,npu", [
    ("train.py", "train_npu.py"),
    ("model_gpu.py", "model_npu.py"),
    ("ops/gpu/kernels.py", "ops/npu/kernels.py"),
    ("gpu/run_gpu.sh", "npu/run_npu.sh"),
    ("cfg/ds.json", "cfg/ds_ascend.json"),
])
def test_rename_rules_pair(gpu, npu):
    pairs, gonly, nonly = pair_paths([gpu, "README.md"], [npu, "README.md"], RULES)
    assert pairs == sorted([(gpu, npu), ("README.md", "README.md")])
    assert gonly == [] and nonly == []


def test_same_path_wins_over_rename_and_each_file_pairs_once():
    pairs, gonly, nonly = pair_paths(["train.py", "eval.py"], ["train.py", "train_npu.py"], RULES)
    assert pairs == [("train.py", "train.py")]
    assert gonly == ["eval.py"] and nonly == ["train_npu.py"]


def test_candidates_keep_extension_and_do_not_match_whole_stem():
    c = candidates("a/gpu/x.py", RULES)
    assert "a/npu/x.py" in c and "a/gpu/x_npu.py" in c and "a/npu/x_npu.py" in c
    assert all(x.endswith(".py") for x in c)
    assert candidates("_gpu.py", RULES)[0] == "_gpu.py"  # an empty {base} is no match
    assert "_npu.py" not in candidates("_gpu.py", RULES)


def test_folder_diff_exact_findings(tmp_path):
    g, n = tmp_path / "gpu", tmp_path / "npu"
    write(g, "notes.txt", "a\nlr=1\n")
    write(n, "notes.txt", "a\nlr=2\n")
    write(g, "run_gpu.txt", "same\n")
    write(n, "run_npu.txt", "same\n")
    write(g, "docs/README.md", "hello\n")
    write(n, "prepare.sh", "echo prep\n")
    report = diff_trees(str(g), str(n), Options(use_cache=False))
    assert rows(report) == [
        ("SD151", "info", "file:docs/README.md", "docs/README.md", None, None, None),
        ("SD108", "warning", "code:notes.txt:lines", "lr=1", "lr=2", 2, 2),
        ("SD150", "warning", "file:prepare.sh", None, "prepare.sh", None, None),
    ]
    sd108 = report.findings[1]
    assert sd108.gpu.path == f"{g}/notes.txt" and sd108.npu.path == f"{n}/notes.txt"
    assert report.exit_code() == 1


def test_faithful_tree_has_no_findings(tmp_path):
    g, n = tmp_path / "gpu", tmp_path / "npu"
    for root in (g, n):
        write(root, "conf/notes.txt", "lr=1\n")
        write(root, ".git/HEAD", "ref: x\n" if root == g else "other\n")  # skipped
        write(root, "__pycache__/x.pyc", b"\x00\x01" if root == g else b"\x00\x02")  # skipped
    write(g, "train.txt", "x\n")
    write(n, "train_npu.txt", "x\n")
    report = diff_trees(str(g), str(n), Options(use_cache=False))
    assert report.findings == [] and report.errors == []
    assert report.exit_code() == 0


def test_identical_files_are_not_parsed(tmp_path, monkeypatch):
    g, n = tmp_path / "gpu", tmp_path / "npu"
    write(g, "broken.py", "def f(:\n")  # would be an error entry if parsed
    write(n, "broken.py", "def f(:\n")
    write(g, "a.txt", "1\n")
    write(n, "a.txt", "2\n")
    import scriptdiff.run.pipeline as pipeline

    seen = []
    real = pipeline.extract
    monkeypatch.setattr(pipeline, "extract", lambda src, ctx, *partner: seen.append(src.name) or real(src, ctx, *partner))
    report = diff_trees(str(g), str(n), Options(use_cache=False))
    assert sorted(os.path.basename(s) for s in seen) == ["a.txt", "a.txt"]
    assert report.errors == []
    assert [f.rule for f in report.findings] == ["SD108"]


def test_symlink_loop_and_outside_link_and_binary(tmp_path):
    g, n = tmp_path / "gpu", tmp_path / "npu"
    write(g, "sub/a.txt", "x\n")
    write(n, "sub/a.txt", "x\n")
    os.symlink("..", g / "sub" / "loop")  # back into the tree: walked once, no hang
    outside = tmp_path / "data"
    outside.mkdir()
    write(outside, "big.bin", b"\x00" * 10)
    os.symlink(str(outside), n / "data")  # outside the tree: refused, an input that failed (issue 32)
    write(g, "img.png", b"\x89PNG\x00\x01")
    write(n, "img.png", b"\x89PNG\x00\x02")
    report = diff_trees(str(g), str(n), Options(use_cache=False))
    assert report.findings == []
    assert sorted((os.path.basename(e.path), e.message, e.fatal) for e in report.errors) == [
        ("data", f"symbolic link to a folder outside the tree (to {outside}); not followed", True),
        ("img.png", "binary files differ; not compared", False),
    ]
    assert report.exit_code() == 1


def test_missing_folder_is_exit_2(tmp_path, cli):
    (tmp_path / "gpu").mkdir()
    code, out, err = cli("diff", str(tmp_path / "gpu"), str(tmp_path / "nope"))
    assert code == 2
    assert err.strip().splitlines() == [f"scriptdiff: {tmp_path / 'nope'}: no such file or directory"]


def test_cli_folder_diff_json(tmp_path, cli):
    import json

    g, n = tmp_path / "gpu", tmp_path / "npu"
    write(g, "x.txt", "1\n")
    write(n, "x.txt", "2\n")
    code, out, _ = cli("diff", str(g), str(n), "--format", "json")
    doc = json.loads(out)
    assert code == 1
    assert [(f["rule"], f["gpu"]["value"], f["npu"]["value"]) for f in doc["findings"]] == [("SD108", "1", "2")]


def test_python_tree_masks_port(tmp_path):
    pytest.importorskip("scriptdiff.lang.python.reader")
    g, n = tmp_path / "gpu", tmp_path / "npu"
    write(g, "train.py", "import torch\nx = torch.zeros(2).cuda()\nlr = 1e-4\n")
    write(n, "train_npu.py", "import torch\nimport torch_npu\nx = torch.zeros(2).npu()\nlr = 1e-4\n")
    report = diff_trees(str(g), str(n), Options(use_cache=False))
    assert [f for f in report.findings if f.severity in ("error", "warning")] == []
    assert report.masked

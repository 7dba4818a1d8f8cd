"""scriptdiff review PATCH: only hunks that change semantics are reported, with their lines."""
from __future__ import annotations

import difflib
import json

import pytest

from scriptdiff.review import review
from scriptdiff.model import Options

OLD = "batch=8\nlr=1e-4\nsteps=10\n" + "".join(f"pad{i}\n" for i in range(10)) + "warmup=100\nseed=1\n"
NEW = "batch=8\nlr=2e-4\nsteps=10\n" + "".join(f"pad{i}\n" for i in range(10)) + "warmup=100   \nseed=1\n"


def patch(old=OLD, new=NEW, name="conf/notes.txt"):
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}"))


def rows(report):
    return [(f.rule, f.severity, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line, f.extra["hunk"])
            for f in report.findings]


def test_fragments_semantic_hunk_only():
    report = review(patch().encode(), "p.diff", Options(use_cache=False), root=None)
    # two hunks: the lr change is semantic; trailing blanks after warmup=100 are not
    assert rows(report) == [("SD153", "warning", "hunk:conf/notes.txt", "lr=1e-4", "lr=2e-4", 2, 2,
                             "@@ -1,5 +1,5 @@")]
    assert "SD108" in report.findings[0].message
    assert [e.message for e in report.errors] == [
        "file not found under the review root; hunks compared as fragments"]
    assert report.exit_code() == 1


def test_full_file_from_root(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "notes.txt").write_text(NEW)
    report = review(patch().encode(), "p.diff", Options(use_cache=False), root=str(tmp_path))
    assert rows(report) == [("SD153", "warning", "hunk:conf/notes.txt", "lr=1e-4", "lr=2e-4", 2, 2,
                             "@@ -1,5 +1,5 @@")]
    assert report.errors == []


def test_root_file_that_does_not_match_falls_back_to_fragments(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "notes.txt").write_text("something else\n")
    report = review(patch().encode(), "p.diff", Options(use_cache=False), root=str(tmp_path))
    assert [f.npu.line for f in report.findings] == [2]
    assert len(report.errors) == 1


def test_faithful_patch_reports_nothing(cli, tmp_path):
    p = tmp_path / "p.diff"
    p.write_text(patch(OLD, OLD.replace("seed=1", "seed=1  ")))
    code, out, _ = cli("review", str(p), "-f", "json", "--root", str(tmp_path))
    assert code == 0 and json.loads(out)["findings"] == []


def test_line_numbers_are_target_lines_after_insertions():
    old = "".join(f"l{i}\n" for i in range(30))
    new = old.replace("l2\n", "l2\nadded\nadded2\n").replace("l25\n", "l25 changed\n")
    report = review(patch(old, new, "x.txt").encode(), "p.diff", Options(use_cache=False), root=None)
    assert [(f.gpu.line, f.npu.line, f.npu.value) for f in report.findings] == [
        (3, 4, "added\nadded2"), (26, 28, "l25 changed")]


def test_inline_suppression_in_patch():
    new = NEW.replace("lr=2e-4", "lr=2e-4  # scriptdiff: ignore[SD108]")
    report = review(patch(OLD, new).encode(), "p.diff", Options(use_cache=False), root=None)
    assert report.findings == []


@pytest.mark.parametrize("text,message", [
    ("@@ -1 +1 @@\n-a\n+b\n", "not a unified diff: "),
    ("just some text\n", "not a unified diff: no file headers (---/+++) found"),
    ("--- a/x\n+++ b/x\n@@ -1,5 +1,1 @@\n-a\n+b\n", "not a unified diff: "),
])
def test_bad_patch_is_exit_2(tmp_path, cli, text, message):
    p = tmp_path / "bad.diff"
    p.write_text(text)
    code, _, err = cli("review", str(p))
    assert code == 2
    assert err.startswith(f"scriptdiff: {p}: {message}") and len(err.strip().splitlines()) == 1


def test_missing_patch_file(cli, tmp_path):
    code, _, err = cli("review", str(tmp_path / "nope.diff"))
    assert code == 2 and err.strip() == f"scriptdiff: {tmp_path / 'nope.diff'}: no such file or directory"


def test_python_port_patch_masks_substitutions():
    pytest.importorskip("scriptdiff.lang.python.reader")
    old = "import torch\n\n\ndef main():\n    x = torch.ones(2).cuda()\n    torch.cuda.synchronize()\n    lr = 1e-4\n    return x, lr\n"
    new = ("import torch\nimport torch_npu\n\n\ndef main():\n    x = torch.ones(2).npu()\n"
           "    torch.npu.synchronize()\n    lr = 2e-4\n    return x, lr\n")
    report = review(patch(old, new, "train.py").encode(), "p.diff", Options(use_cache=False), root=None)
    # one hunk holds the masked port (import torch_npu, .npu(), torch.npu) and the lr change:
    # it is reported at the semantic line, not at the first changed line
    assert [(f.rule, f.npu.line, f.npu.source, f.gpu.line) for f in report.findings] == [
        ("SD156", 8, "    lr = 2e-4", 7)]
    assert report.masked


def test_review_with_baseline_over_several_files(tmp_path):
    from scriptdiff.suppress import baseline_document, load_baseline

    two = patch() + patch(name="other/notes.txt").replace("lr=2e-4", "lr=3e-4")
    first = review(two.encode(), "p.diff", Options(use_cache=False), root=None)
    assert [(f.key, f.npu.value) for f in first.findings] == [
        ("hunk:conf/notes.txt", "lr=2e-4"), ("hunk:other/notes.txt", "lr=3e-4")]
    base = tmp_path / "b.json"
    base.write_text(json.dumps(baseline_document(first.findings[:1])))
    opts = Options(use_cache=False, baseline=load_baseline(str(base)))
    again = review(two.encode(), "p.diff", opts, root=None)
    # the accepted hunk is gone, the other stays, and the entry is not "unused" for the other file
    assert [(f.rule, f.key) for f in again.findings] == [("SD153", "hunk:other/notes.txt")]


def test_hunk_changing_only_a_hyperparameter_argument_is_reported(tmp_path):
    """The structural diff leaves hyperparameter arguments to the fact comparison; review
    must still see them (momentum=args.momentum -> 0.8 in a fused-optimizer swap)."""
    from pathlib import Path

    ROOT = Path(__file__).resolve().parent.parent
    old = (ROOT / "fixtures/python/ddp_amp/gpu/train.py").read_text()
    new = (ROOT / "fixtures/python/ddp_amp/npu/train.py").read_text()
    drifted = new.replace("momentum=args.momentum,", "momentum=0.8,")
    assert drifted != new
    (tmp_path / "train.py").write_text(drifted)
    report = review(patch(old, drifted, "train.py").encode(), "p.diff", Options(use_cache=False), root=str(tmp_path))
    assert [(f.rule, f.severity, f.npu.line) for f in report.findings] == [("SD156", "error", 88)]
    assert "SD206" in report.findings[0].message and "sgd_momentum" in report.findings[0].message
    (tmp_path / "train.py").write_text(new)
    faithful = review(patch(old, new, "train.py").encode(), "p.diff", Options(use_cache=False), root=str(tmp_path))
    assert faithful.findings == [] and faithful.masked

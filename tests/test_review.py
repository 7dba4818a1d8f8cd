"""scriptdiff review PATCH: what lies in the hunks that change semantics, under its own rule;
with by_hunk, one finding per such hunk (SD156/SD153/SD157)."""
from __future__ import annotations

import difflib
import json
import shutil

import pytest

from scriptdiff.run.review import review
from scriptdiff.model import Options

# what each masked port edit keeps (issue 43: SD023, SD027) is tests/test_fidelity.py's; not these tests
PORT_NOTES = ["SD023", "SD027"]

OLD = "batch=8\nlr=1e-4\nsteps=10\n" + "".join(f"pad{i}\n" for i in range(10)) + "warmup=100\nseed=1\n"
NEW = "batch=8\nlr=2e-4\nsteps=10\n" + "".join(f"pad{i}\n" for i in range(10)) + "warmup=100   \nseed=1\n"


def patch(old=OLD, new=NEW, name="conf/notes.txt"):
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}"))


def rows(report):
    return [(f.rule, f.severity, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line, f.extra["hunk"])
            for f in report.findings]


def test_fragments_semantic_hunk_only():
    report = review(patch().encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=None)
    # two hunks: the lr change is semantic; trailing blanks after warmup=100 are not. The
    # finding is the one `diff` makes (SD108), placed in its hunk; the summary names the hunk
    assert rows(report) == [("SD108", "warning", "code:notes.txt:lines", "lr=1e-4", "lr=2e-4", 2, 2,
                             "@@ -1,5 +1,5 @@")]
    assert report.overview == ["1 of 2 hunk(s) change semantics:", "  SD153 conf/notes.txt @@ -1,5 +1,5 @@: SD108"]
    assert report.to_json()["hunks"] == [{"file": "conf/notes.txt", "hunk": "@@ -1,5 +1,5 @@", "rule": "SD153",
                                          "findings": ["SD108"]}]
    assert [e.message for e in report.errors] == [
        "file not found under the review root; hunks compared as fragments"]
    assert report.exit_code() == 1
    hunks = review(patch().encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=None, by_hunk=True)
    assert rows(hunks) == [("SD153", "warning", "hunk:conf/notes.txt", "lr=1e-4", "lr=2e-4", 2, 2,
                            "@@ -1,5 +1,5 @@")]
    assert "SD108" in hunks.findings[0].message


def test_full_file_from_root(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "notes.txt").write_text(NEW)
    report = review(patch().encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=str(tmp_path))
    assert rows(report) == [("SD108", "warning", "code:notes.txt:lines", "lr=1e-4", "lr=2e-4", 2, 2,
                             "@@ -1,5 +1,5 @@")]
    assert [(f.gpu.path, f.npu.path) for f in report.findings] == [("conf/notes.txt", "conf/notes.txt")]
    assert report.errors == []


def test_root_file_that_does_not_match_falls_back_to_fragments(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "notes.txt").write_text("something else\n")
    report = review(patch().encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=str(tmp_path))
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
    report = review(patch(old, new, "x.txt").encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=None, by_hunk=True)
    assert [(f.gpu.line, f.npu.line, f.npu.value) for f in report.findings] == [
        (3, 4, "added\nadded2"), (26, 28, "l25 changed")]
    report = review(patch(old, new, "x.txt").encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=None)
    assert [(f.rule, f.gpu and f.gpu.line, f.npu.line, f.npu.value) for f in report.findings] == [
        ("SD108", None, 4, "added\nadded2"), ("SD108", 26, 28, "l25 changed")]


def test_inline_suppression_in_patch():
    new = NEW.replace("lr=2e-4", "lr=2e-4  # scriptdiff: ignore[SD108]")
    report = review(patch(OLD, new).encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=None)
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
    report = review(patch(old, new, "train.py").encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=None, by_hunk=True)
    # one hunk holds the masked port (import torch_npu, .npu(), torch.npu) and the lr change:
    # it is reported at the semantic line, not at the first changed line
    assert [(f.rule, f.npu.line, f.npu.source, f.gpu.line) for f in report.findings] == [
        ("SD156", 8, "    lr = 2e-4", 7)]
    assert report.masked
    # the fragment is laid out so that it parses: the lr change is read as the setting it is
    report = review(patch(old, new, "train.py").encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=None)
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in report.findings] == [
        ("SD202", "lr", 0.0001, 0.0002, 7, 8)]
    assert {m.rule for m in report.masked} >= {"SD001"}


def test_review_with_baseline_over_several_files(tmp_path):
    from scriptdiff.run.suppress import baseline_document, load_baseline

    two = patch() + patch(name="other/notes.txt").replace("lr=2e-4", "lr=3e-4")
    first = review(two.encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=None)
    assert [(f.npu.path, f.npu.value) for f in first.findings] == [
        ("conf/notes.txt", "lr=2e-4"), ("other/notes.txt", "lr=3e-4")]
    base = tmp_path / "b.json"
    base.write_text(json.dumps(baseline_document(first.findings[:1])))
    opts = Options(use_cache=False, baseline=load_baseline(str(base)))
    again = review(two.encode(), "p.diff", opts, root=None)
    # the accepted finding is gone, the other stays, and the entry is not "unused" for the other file
    assert [(f.rule, f.npu.path) for f in again.findings] == [("SD108", "other/notes.txt")]


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
    report = review(patch(old, drifted, "train.py").encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=str(tmp_path))
    assert [(f.rule, f.severity, f.key, f.npu.value, f.npu.line) for f in report.findings] == [
        ("SD206", "error", "sgd_momentum", 0.8, 88)]
    hunks = review(patch(old, drifted, "train.py").encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=str(tmp_path),
                   by_hunk=True)
    assert [(f.rule, f.severity, f.npu.line) for f in hunks.findings] == [("SD156", "error", 88)]
    assert "SD206" in hunks.findings[0].message and "sgd_momentum" in hunks.findings[0].message
    (tmp_path / "train.py").write_text(new)
    faithful = review(patch(old, new, "train.py").encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=str(tmp_path))
    assert faithful.findings == [] and faithful.masked


# --- a patch of a whole setup: its paths found under the root, its files read whole ---------------

def _setup_patch(tmp_path):
    """`diff -ru gpu npu` made beside the bundled example's two folders (paths gpu/..., npu/...)."""
    import subprocess
    from pathlib import Path

    ex = Path(__file__).resolve().parent.parent / "fixtures" / "example"
    made = subprocess.run(["diff", "-ru", "gpu", "npu"], cwd=ex, capture_output=True, text=True)
    p = tmp_path / "port.diff"
    p.write_text(made.stdout)
    return p, ex


def _found(report):
    return sorted((f.rule, f.key, f.gpu.path if f.gpu else None, f.gpu.line if f.gpu else None,
                   f.npu.path if f.npu else None, f.npu.line if f.npu else None) for f in report.findings)


@pytest.mark.skipif(shutil.which("diff") is None, reason="needs diff")
def test_a_diff_ru_patch_made_in_a_subfolder_is_read_whole_from_the_repository_root(tmp_path, cli, monkeypatch):
    from scriptdiff import api

    p, ex = _setup_patch(tmp_path)
    root = ex.parent.parent
    monkeypatch.chdir(root)
    report = review(p.read_bytes(), "port.diff", Options(use_cache=False, ignore=PORT_NOTES), root=".")
    assert report.errors == []  # found below the root: fixtures/example/{gpu,npu}/..., nothing as fragments
    folder = api.diff("fixtures/example/gpu", "fixtures/example/npu", Options(use_cache=False, ignore=PORT_NOTES))
    assert _found(report) == _found(folder) == [
        ("SD201", "use_flash_attn", "fixtures/example/gpu/pretrain.sh", 11, "fixtures/example/npu/train.py", 86),
        ("SD206", "adam_beta2", "fixtures/example/gpu/train.py", 100, "fixtures/example/npu/train.py", 102),
        ("SD207", "seed", "fixtures/example/gpu/train.py", 19, "fixtures/example/npu/train.py", 21),
        ("SD302", "env:source set_env.sh", None, None, "fixtures/example/npu/pretrain.sh", 3)]
    assert report.overview == [
        "4 of 8 hunk(s) change semantics:",
        "  SD156 fixtures/example/npu/pretrain.sh @@ -1,13 +1,13 @@: SD201, SD302",
        "  SD156 fixtures/example/npu/train.py @@ -11,12 +11,14 @@: SD207",
        "  SD156 fixtures/example/npu/train.py @@ -81,7 +83,7 @@: SD201",
        "  SD156 fixtures/example/npu/train.py @@ -97,7 +99,7 @@: SD206"]
    assert len(report.masked) == len(folder.masked) == 12
    # --select and --ignore mean what they mean for diff: the underlying rule is kept
    code, out, _ = cli("review", str(p), "--select", "SD2", "-f", "json", "--no-cache")
    assert code == 1 and [f["rule"] for f in json.loads(out)["findings"]] == ["SD201", "SD207", "SD206"]
    code, out, _ = cli("review", str(p), "--ignore", "SD2,SD023,SD027", "-f", "json", "--no-cache")
    assert code == 0 and [f["rule"] for f in json.loads(out)["findings"]] == ["SD302"]
    # by hunk: one finding per hunk, and a hunk rule selects hunks
    code, out, _ = cli("review", str(p), "--by-hunk", "--select", "SD156", "-f", "json", "--no-cache")
    assert code == 1 and [(f["rule"], f["key"]) for f in json.loads(out)["findings"]] == [
        ("SD156", "hunk:fixtures/example/npu/pretrain.sh"), ("SD156", "hunk:fixtures/example/npu/train.py"),
        ("SD156", "hunk:fixtures/example/npu/train.py"), ("SD156", "hunk:fixtures/example/npu/train.py")]
    code, out, _ = cli("review", str(p), "--by-hunk", "--ignore", "SD201,SD023,SD027", "-f", "json", "--no-cache")
    assert [(f["rule"], f["key"], f["extra"]["hunk"]) for f in json.loads(out)["findings"]] == [
        ("SD157", "hunk:fixtures/example/npu/pretrain.sh", "@@ -1,13 +1,13 @@"),
        ("SD156", "hunk:fixtures/example/npu/train.py", "@@ -11,12 +11,14 @@"),
        ("SD156", "hunk:fixtures/example/npu/train.py", "@@ -97,7 +99,7 @@")]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("state", ["npu", "gpu"])
def test_a_git_patch_is_read_whole_applied_or_not(tmp_path, state):
    """`git diff gpu npu` (a/ b/ paths, -p1) reviewed in a checkout of either commit: applied
    (the old side is the new file with the hunks undone) or not yet (the new side is the old
    file with the hunks applied); a launch script's program is read as each side has it."""
    import subprocess
    from pathlib import Path

    ex = Path(__file__).resolve().parent.parent / "fixtures" / "example"
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*a):
        return subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True, text=True).stdout

    git("init", "-q", "-b", "gpu")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    for side in ("gpu", "npu"):
        for name in ("pretrain.sh", "train.py", "ds_config.json"):
            shutil.copy(ex / side / name, repo / name)
        git("add", "-A")
        git("commit", "-qm", side)
        git("tag", side)
    patch_text = git("diff", "gpu", "npu")
    git("checkout", "-q", state)
    report = review(patch_text.encode(), "p.diff", Options(use_cache=False, ignore=PORT_NOTES), root=str(repo))
    assert report.errors == []
    assert _found(report) == [("SD201", "use_flash_attn", "pretrain.sh", 11, "train.py", 86),
                              ("SD206", "adam_beta2", "train.py", 100, "train.py", 102),
                              ("SD207", "seed", "train.py", 19, "train.py", 21),
                              ("SD302", "env:source set_env.sh", None, None, "pretrain.sh", 3)]


@pytest.mark.skipif(shutil.which("diff") is None, reason="needs diff")
def test_python_fragments_are_laid_out_to_parse(tmp_path):
    """No file under the root: the hunks are fragments. Indented hunks (a function's body, a
    list closed below its opening line) still parse, so masked port edits stay masked and the
    settings are read; nothing is "not valid Python"."""
    p, _ex = _setup_patch(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    report = review(p.read_bytes(), "port.diff", Options(use_cache=False, ignore=PORT_NOTES), root=str(empty))
    assert [e.message for e in report.errors] == ["file not found under the review root; hunks compared as fragments"] * 3
    assert not any("not valid Python" in f.message for f in report.findings)
    assert _found(report) == [
        ("SD201", "use_flash_attn", "gpu/pretrain.sh", 11, None, None),
        ("SD201", "use_flash_attn", "gpu/train.py", 84, "npu/train.py", 86),
        ("SD206", "adam_beta2", "gpu/train.py", 100, "npu/train.py", 102),
        ("SD207", "seed", "gpu/train.py", 19, "npu/train.py", 21),  # SEED = 42/1234 is the seed setting (issue 27)
        ("SD302", "env:source set_env.sh", None, None, "npu/pretrain.sh", 3)]
    assert len(report.masked) == 12

"""One setup, one verdict: every entry point reads the same scopes (scriptdiff/run/scopes.py).

The bundled example (fixtures/example/{gpu,npu}) is fed through every entry point: the folder
diff, `check --config`, the launch scripts as two paths, `--git` on two commits, `REV:gpu
REV:npu` at one commit, `review` of a `diff -ru gpu npu` patch run from the repository root,
the pre-commit `check --files` on the staged files, and git's external diff and difftool.
Each must give the same findings (rule, key, both values, both lines, both file names): a
side's launch script reads its program and configs from that side, wherever the side is read.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scriptdiff import api
from scriptdiff.model import Options

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "fixtures" / "example"
SETUP = ("pretrain.sh", "train.py", "ds_config.json")  # the files of fixtures/example/{gpu,npu}
HAS_GIT = shutil.which("git") is not None
HAS_PROC = os.path.exists("/proc/self/cmdline")  # where the calling `git diff` names its revisions

# findings every entry point shares, written out (lines of fixtures/example/{gpu,npu})
ADAM = ("SD206", "adam_beta2", "0.95", "0.999", "train.py", 100, "train.py", 102)
SET_ENV = ("SD302", "env:source set_env.sh", "None", "'/usr/local/Ascend/ascend-toolkit/set_env.sh'",
           None, None, "pretrain.sh", 3)
SEED = ("SD207", "seed", "42", "1234", "train.py", 19, "train.py", 21)
FLASH = ("SD201", "use_flash_attn", "True", "False", "pretrain.sh", 11, "train.py", 86)


def opts() -> Options:
    return Options(use_cache=False, ignore=list(PORT_NOTES))


PORT_NOTES = ("SD023", "SD027")


def rows(doc: dict) -> set[tuple]:
    """(rule, key, GPU value, NPU value, GPU file, GPU line, NPU file, NPU line) of each finding
    of a JSON report: values as repr() writes them, file names without the side's prefix
    (gpu/, a/, gpu:, REV:gpu/)."""
    out = set()
    for f in doc["findings"]:
        if f["rule"] in PORT_NOTES:  # what each masked port edit keeps: tests/test_fidelity.py's (issue 43)
            continue
        g, n = f["gpu"], f["npu"]
        out.add((f["rule"], f["key"], repr(g["value"]) if g else "None", repr(n["value"]) if n else "None",
                 _base(g), g["line"] if g else None, _base(n), n["line"] if n else None))
    return out


def _base(side) -> str | None:
    return side["path"].replace(":", "/").rsplit("/", 1)[-1] if side and side.get("path") else None


def of(report) -> set[tuple]:
    return rows(report.to_json())


def setup_only(found: set[tuple]) -> set[tuple]:
    """The findings about the setup's files (`check` also reads snapshots, packages, data)."""
    return {r for r in found if {r[4], r[6]} - {None} and {r[4], r[6]} - {None} <= set(SETUP)}


def git(repo: Path, *args: str, env=None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


def two_commits(tmp_path: Path, setup: Path = EX) -> Path:
    """A repository whose commit `gpu` holds gpu/'s files at its top and `npu` npu/'s (of
    `setup`, the bundled example by default)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "gpu")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    for side in ("gpu", "npu"):
        for name in SETUP:
            shutil.copy(setup / side / name, repo / name)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", side)
        git(repo, "tag", side)
    return repo


def two_folders(tmp_path: Path, setup: Path = EX) -> Path:
    """A repository holding gpu/ and npu/ (of `setup`) at one commit."""
    repo = tmp_path / "folders"
    shutil.copytree(setup / "gpu", repo / "gpu")
    shutil.copytree(setup / "npu", repo / "npu")
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "both")
    return repo


def tool(tmp_path: Path, args: str) -> dict:
    """An environment whose PATH has `scriptdiff` running this checkout (with `args` first)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "scriptdiff-json"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} -m scriptdiff {args} \"$@\"\n")
    exe.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", GIT_CONFIG_NOSYSTEM="1",
                PYTHONPATH=str(ROOT), HOME=str(tmp_path), CI="", GIT_PAGER="cat")


def documents(text: str) -> list[dict]:
    """The JSON reports git printed one after another (one per file)."""
    dec, docs, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        doc, i = dec.raw_decode(text, i)
        docs.append(doc)
    return docs


def entry_points(tmp_path: Path, cli, monkeypatch, setup: Path = EX) -> dict[str, set[tuple]]:
    """The bundled example (or another `setup` of gpu/ and npu/ holding SETUP's files) through
    every entry point: name -> its findings about the setup."""
    config = setup / "scriptdiff.toml"
    checked = api.check(str(config), options=opts()) if config.exists() else \
        api.check(None, [f"scripts={setup / 'gpu'}"], [f"scripts={setup / 'npu'}"], options=opts())
    out = {"folders": of(api.diff(str(setup / "gpu"), str(setup / "npu"), opts())),
           "check": setup_only(of(checked)),
           "launch scripts": of(api.diff(str(setup / "gpu/pretrain.sh"), str(setup / "npu/pretrain.sh"), opts()))}
    repo = two_commits(tmp_path, setup)
    out["--git"] = of(api.diff_revisions("gpu", "npu", [], opts(), repo=str(repo)))
    folders = two_folders(tmp_path, setup)
    out["REV:gpu REV:npu"] = of(api.diff("HEAD:gpu", "HEAD:npu", opts(), repo=str(folders)))
    # review of `diff -ru gpu npu` made beside the two folders, run from the repository's top
    made = subprocess.run(["diff", "-ru", "gpu", "npu"], cwd=setup, capture_output=True, text=True)
    patch = tmp_path / "port.diff"
    patch.write_text(made.stdout)
    monkeypatch.chdir(ROOT if setup == EX else setup.parent)
    code, text, err = cli("review", str(patch), "-f", "json", "--no-cache")
    assert (code, err) == (1, "")  # every file read whole: no fragments
    out["review"] = rows(json.loads(text))
    # the pre-commit hook: `check --files` on the staged files, in the inputs the configuration names
    monkeypatch.chdir(folders)
    hook = tmp_path / "hook.toml"
    hook.write_text(f'[gpu]\nscripts = ["{folders / "gpu"}"]\n[npu]\nscripts = ["{folders / "npu"}"]\n')
    (folders / "npu" / "train.py").write_text((setup / "npu/train.py").read_text() + "\n")
    git(folders, "add", "-A")
    staged = git(folders, "diff", "--cached", "--name-only").split()
    assert staged == ["npu/train.py"]
    code, text, err = cli("check", "--files", *staged, "npu/pretrain.sh", "npu/ds_config.json", "-f", "json",
                          "--no-cache", "--config", str(hook))
    assert code == 1, err
    out["check --files"] = rows(json.loads(text))
    # git's external diff and difftool, one file at a time
    env = tool(tmp_path, "diff --git-external --format json")
    docs = documents(git(repo, "-c", "diff.external=scriptdiff-json", "diff", "--ext-diff", "gpu", "npu", env=env))
    by_file = {d["gpu"].split("/", 1)[1]: rows(d) for d in docs}
    assert sorted(by_file) == sorted(SETUP)
    out["external diff"] = by_file["pretrain.sh"]
    out["external diff: train.py"] = by_file["train.py"]
    env = tool(tmp_path, "diff --format json")
    text = git(repo, "difftool", "-y", "-x", "scriptdiff-json", "gpu", "npu", "--", "pretrain.sh", env=env)
    out["difftool"] = rows(json.loads(text))
    out["two programs"] = of(api.diff(str(setup / "gpu/train.py"), str(setup / "npu/train.py"), opts()))
    return out


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    from _pytest.monkeypatch import MonkeyPatch

    from conftest import run_cli

    mp = MonkeyPatch()
    try:
        yield entry_points(tmp_path_factory.mktemp("scopes"), run_cli, mp)
    finally:
        mp.undo()


needs_git = pytest.mark.skipif(not (HAS_GIT and HAS_PROC and shutil.which("diff")),
                               reason="needs git, diff and /proc (the calling git's revisions)")


@needs_git
def test_every_entry_point_gives_the_same_findings(example):
    run = example["folders"]
    # the shared findings, written out: the optimizer (train.py), the NPU-only set_env.sh
    # (pretrain.sh) and the dropped flash attention, whose GPU side is the launch flag
    assert {ADAM, SET_ENV} <= run
    flash = [r for r in run if r[:2] == ("SD201", "use_flash_attn")]
    assert flash == [FLASH]
    for name in ("check", "launch scripts", "--git", "REV:gpu REV:npu", "review", "check --files",
                 "external diff", "difftool"):
        assert example[name] == run, name
    # the training script alone is another scope (no launch script): the same as git's external
    # diff of that one file, and it shares the optimizer finding
    assert example["external diff: train.py"] == example["two programs"]
    assert ADAM in example["two programs"]


@needs_git
def test_the_seed_drift_is_found_through_every_entry_point(example):
    """Reproduction 1: SEED = 42 / 1234 in train.py, which seeds from its constant; the launch
    scripts pass only options train.py defines, so nothing outranks the constant."""
    for name, found in example.items():
        assert SEED in found, name
    # the whole verdict of the run, written out: three errors and the NPU-only set_env.sh
    assert example["folders"] == {SEED, ADAM, SET_ENV, FLASH}


@needs_git
def test_the_same_trees_from_disk_and_through_git_give_the_same_errors(example):
    """Reproduction 2: 2 errors from disk, 4 through --git (SD201 twice): the launch script
    read from a revision did not find its program there, so the program was compared again
    on its own."""
    for name in ("folders", "--git", "REV:gpu REV:npu"):
        errors = sorted(r[0] for r in example[name] if r[0] in ("SD201", "SD206", "SD207"))
        assert errors.count("SD201") == 1, name
    assert example["--git"] == example["folders"]


def test_launch_in_a_check_configuration_hides_nothing():
    """Reproduction 3: the same scripts folders with and without `launch=` (and the bundled
    configuration) give the same findings: a launch script in a scripts folder is a run, as
    in a folder diff, not a file compared alone."""
    g, n = EX / "gpu", EX / "npu"
    scripts = [f"scripts={g}"], [f"scripts={n}"]
    launch = [f"scripts={g}", f"launch={g / 'pretrain.sh'}"], [f"scripts={n}", f"launch={n / 'pretrain.sh'}"]
    alone = setup_only(of(api.check(None, *scripts, options=opts())))
    with_launch = setup_only(of(api.check(None, *launch, options=opts())))
    configured = setup_only(of(api.check(str(EX / "scriptdiff.toml"), options=opts())))
    assert alone == with_launch == configured == of(api.diff(str(g), str(n), opts()))
    assert sorted(r[0] for r in alone if r[0].startswith("SD2")) == ["SD201", "SD206", "SD207"]


# --- reproduction 10: two launch scripts a side ------------------------------------------------

def launch_pairs(tmp_path: Path) -> tuple[Path, Path]:
    g, n = tmp_path / "g", tmp_path / "n"
    g.mkdir()
    n.mkdir()
    seven = "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --lr 3e-4 --micro-batch-size 4 --use-flash-attn\n"
    (g / "pretrain_7b.sh").write_text(seven)
    (n / "pretrain_7b.sh").write_text(seven)
    (g / "pretrain_13b.sh").write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 40 --lr 2e-4 "
                                       "--micro-batch-size 2 --use-flash-attn\n")
    (n / "pretrain_13b.sh").write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 40 --lr 1e-4 "
                                       "--micro-batch-size 1\n")
    return g, n


THIRTEEN = {("SD202", "lr", "0.0002", "0.0001", "pretrain_13b.sh", 1, "pretrain_13b.sh", 1),
            ("SD203", "micro_batch_size", "2", "1", "pretrain_13b.sh", 1, "pretrain_13b.sh", 1),
            ("SD201", "use_flash_attn", "True", "False", "pretrain_13b.sh", 1, None, None)}


def test_two_launch_scripts_a_side_are_two_runs(tmp_path, cli, monkeypatch):
    g, n = launch_pairs(tmp_path)
    # the command, word for word, from the folder that holds g/ and n/
    monkeypatch.chdir(tmp_path)
    code, out, _err = cli("check", "--gpu", "launch=g/pretrain_7b.sh", "--gpu", "launch=g/pretrain_13b.sh",
                          "--npu", "launch=n/pretrain_7b.sh", "--npu", "launch=n/pretrain_13b.sh", "--no-cache")
    assert code == 1
    assert out.splitlines()[2:4] == ["== hyperparameters [differences] ==========================", "   3 error(s)"]
    code, out, _err = cli("check", "--gpu", "launch=g/pretrain_7b.sh", "--gpu", "launch=g/pretrain_13b.sh",
                          "--npu", "launch=n/pretrain_7b.sh", "--npu", "launch=n/pretrain_13b.sh", "--no-cache",
                          "-f", "json", "--ignore", "SD155")
    assert (code, rows(json.loads(out))) == (1, THIRTEEN)
    both = ["--gpu", f"launch={g / 'pretrain_7b.sh'}", "--gpu", f"launch={g / 'pretrain_13b.sh'}",
            "--npu", f"launch={n / 'pretrain_7b.sh'}", "--npu", f"launch={n / 'pretrain_13b.sh'}"]
    code, out, _err = cli("check", *both, "-f", "json", "--no-cache", "--ignore", "SD155")
    doc = json.loads(out)
    assert code == 1
    assert rows(doc) == THIRTEEN
    assert doc["verdicts"]["hyperparameters"] == {"verdict": "differences", "reason": "3 error(s)"}
    code, out, _err = cli("check", "--gpu", f"launch={g / 'pretrain_13b.sh'}", "--npu",
                          f"launch={n / 'pretrain_13b.sh'}", "-f", "json", "--no-cache", "--ignore", "SD155")
    assert (code, rows(json.loads(out))) == (1, THIRTEEN)
    # the 7b pair alone is faithful
    code, out, _err = cli("check", "--gpu", f"launch={g / 'pretrain_7b.sh'}", "--npu",
                          f"launch={n / 'pretrain_7b.sh'}", "-f", "json", "--no-cache", "--ignore", "SD155")
    assert (code, rows(json.loads(out))) == (0, set())


def test_a_launch_script_without_a_counterpart_is_said(tmp_path):
    g, n = launch_pairs(tmp_path)
    (n / "pretrain_13b.sh").unlink()
    report = api.check(None, [f"launch={g / 'pretrain_7b.sh'}", f"launch={g / 'pretrain_13b.sh'}"],
                       [f"launch={n / 'pretrain_7b.sh'}"], options=Options(use_cache=False, ignore=["SD155", *PORT_NOTES]))
    assert of(report) == {("SD150", "file:pretrain_13b.sh", "'pretrain_13b.sh'", "None", "pretrain_13b.sh", None,
                           None, None)}
    # one launch script a side pair whatever their names, as before
    (n / "pretrain_7b.sh").rename(n / "start.sh")
    report = api.check(None, [f"launch={g / 'pretrain_13b.sh'}"], [f"launch={n / 'start.sh'}"],
                       options=Options(use_cache=False, ignore=["SD155", *PORT_NOTES]))
    assert of(report) == {("SD202", "lr", "0.0002", "0.0003", "pretrain_13b.sh", 1, "start.sh", 1),
                          ("SD203", "micro_batch_size", "2", "4", "pretrain_13b.sh", 1, "start.sh", 1),
                          ("SD204", "num_layers", "40", "32", "pretrain_13b.sh", 1, "start.sh", 1)}


# --- reproduction 9: another program ----------------------------------------------------------

# how each launcher starts a program (PROG: a script path or, after -m, a module of the side)
LAUNCHERS = {
    "accelerate launch": "accelerate launch --num_processes 8 PROG.py --learning_rate 1e-4",
    "accelerate launch -m": "accelerate launch --num_processes 8 -m pkg.PROG --learning_rate 1e-4",
    "torchrun": "torchrun --nproc_per_node 8 PROG.py --learning_rate 1e-4",
    "torchrun -m": "torchrun --nproc_per_node 8 -m pkg.PROG --learning_rate 1e-4",
    "deepspeed": "deepspeed --num_gpus 8 PROG.py --learning_rate 1e-4",
    "deepspeed --module": "deepspeed --num_gpus 8 --module pkg.PROG --learning_rate 1e-4",
    "python": "python PROG.py --learning_rate 1e-4",
    "python -m": "python -m pkg.PROG --learning_rate 1e-4",
    "python -m torch.distributed.run": "python -m torch.distributed.run --nproc_per_node 8 PROG.py --learning_rate 1e-4",
}
PROGRAM_A = "import torch\nopt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01)\nloss_fn = torch.nn.CrossEntropyLoss()\n"
PROGRAM_B = ("import torch\nopt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.1)\n"
             "loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)\n")


def two_programs(tmp_path: Path, launcher: str = "accelerate launch", b: str = "train_b") -> tuple[Path, Path]:
    """run.sh on each side starting train_a (GPU) or `b` (NPU) with `launcher`: as a script
    beside it, or as the module pkg.<name> (pkg/<name>.py)."""
    g, n = tmp_path / "g", tmp_path / "n"
    for side, name, text in ((g, "train_a", PROGRAM_A), (n, b, PROGRAM_B)):
        cmd = LAUNCHERS[launcher]
        folder = side / "pkg" if "pkg.PROG" in cmd else side
        folder.mkdir(parents=True)
        (side / "run.sh").write_text(cmd.replace("PROG", name) + "\n")
        (folder / f"{name}.py").write_text(text)
    return g, n


def _written(launcher: str, name: str) -> str:
    return f"pkg/{name}.py" if "pkg.PROG" in LAUNCHERS[launcher] else f"{name}.py"


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_another_program_is_said_and_the_two_programs_are_compared(tmp_path, launcher):
    g, n = two_programs(tmp_path, launcher)
    files = api.diff(str(g / "run.sh"), str(n / "run.sh"), opts())
    folders = api.diff(str(g), str(n), opts())
    a, b = _written(launcher, "train_a"), _written(launcher, "train_b")
    for report in (files, folders):
        # what changed (the launched program, one finding), then the two programs compared as
        # the run's program: their settings, and as code (the loss); never "on one side only"
        assert of(report) == {("SD160", "program", repr(a), repr(b), "run.sh", 1, "run.sh", 1),
                              ("SD206", "weight_decay", "0.01", "0.1", "train_a.py", 2, "train_b.py", 2),
                              ("SD101", "code:train_a.py:<module>", "None", "0.1", "train_a.py", 3, "train_b.py", 3)}
        assert report.exit_code() == 1
    sd160 = next(f for f in files.findings if f.rule == "SD160")
    assert sd160.severity == "warning" and sd160.message == (
        f"the GPU run starts {a} and the NPU run {b}; the two programs were compared with each other")


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_the_same_program_on_both_sides_is_no_finding(tmp_path, launcher):
    g, n = two_programs(tmp_path, launcher, b="train_a")
    (n / _written(launcher, "train_a")).write_text(PROGRAM_A)
    for report in (api.diff(str(g / "run.sh"), str(n / "run.sh"), opts()), api.diff(str(g), str(n), opts())):
        assert (of(report), report.exit_code()) == (set(), 0)


def test_the_same_program_under_its_npu_name_is_no_finding(tmp_path):
    g, n = two_programs(tmp_path, b="train_a_npu")
    assert of(api.diff(str(g / "run.sh"), str(n / "run.sh"), opts())) == {
        ("SD206", "weight_decay", "0.01", "0.1", "train_a.py", 2, "train_a_npu.py", 2),
        ("SD101", "code:train_a.py:<module>", "None", "0.1", "train_a.py", 3, "train_a_npu.py", 3)}


def test_a_program_not_in_view_is_said_and_its_code_is_unknown(tmp_path):
    g, n = two_programs(tmp_path)
    (n / "train_b.py").unlink()
    report = api.diff(str(g / "run.sh"), str(n / "run.sh"), opts())
    sd160 = next(f for f in report.findings if f.rule == "SD160")
    assert sd160.message == ("the GPU run starts train_a.py and the NPU run train_b.py; the NPU program is not "
                             "in view, so the programs were not compared")
    # what the GPU program's code sets is not "set on GPU only": the NPU side's is unknown
    npu = next(a for a in report.inputs if a.side == "npu")
    unread = ["line 1: program train_b.py is not in view while the other side's is: what its code sets was not "
              "compared", "4 setting(s) of the other side could not be compared: adam_beta1, adam_beta2, adam_eps, "
              "weight_decay"]
    assert (npu.status, npu.unread) == ("not understood", unread)
    assert of(report) == {("SD160", "program", "'train_a.py'", "'train_b.py'", "run.sh", 1, "run.sh", 1),
                          ("SD154", f"input:{n / 'run.sh'}", "None", repr("; ".join(unread)), None, None, "run.sh",
                           None)}
    assert report.exit_code() == 1


# --- external diff: a side whose revision cannot be told ---------------------------------------

@pytest.mark.skipif(not HAS_GIT, reason="needs git")
def test_external_diff_that_cannot_tell_a_revision_says_so_in_the_text(tmp_path, cli, monkeypatch):
    repo = two_commits(tmp_path)
    git(repo, "checkout", "-q", "npu")
    old = tmp_path / "old-pretrain.sh"
    old.write_text(git(repo, "show", "gpu:pretrain.sh"))
    blob = git(repo, "rev-parse", "gpu:pretrain.sh").strip()
    monkeypatch.chdir(repo)
    # called directly (no `git diff` above it): the old blob is neither in the index nor in HEAD
    code, out, err = cli("pretrain.sh", str(old), blob, "100644", "pretrain.sh", "0" * 40, "100644")
    assert code == 0
    assert err == ("scriptdiff: note: a/pretrain.sh: could not tell which revision git compares on the OLD side "
                   "(the index, HEAD hold other versions of pretrain.sh): the configs and programs the files "
                   "reference were not read on either side; compare the trees with `scriptdiff diff --git REV1 "
                   "REV2` to include them\n")
    assert "1 note(s)" in out
    # the new side is the work tree, the old one the index: both found, nothing to say
    (repo / "pretrain.sh").write_text((repo / "pretrain.sh").read_text() + "# edited\n")
    staged = git(repo, "rev-parse", ":pretrain.sh").strip()
    old.write_text(git(repo, "show", ":pretrain.sh"))
    code, out, err = cli("pretrain.sh", str(old), staged, "100644", "pretrain.sh", "0" * 40, "100644")
    assert (code, err) == (0, "") and "note" not in out

"""Writes where nothing may be written (issue 40): what `rules --test`, `fix` and `init` write,
and where they refuse. Each case asserts the promise: a refusal in one line naming the file and
the reason, the exit status, and nothing written outside the folder it belongs to (the file
refused is as it was, byte for byte)."""
from __future__ import annotations

import os
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from scriptdiff import api
from scriptdiff.model import Options, UsageError


@pytest.fixture(autouse=True)
def shipped_only_after():
    """The user's packs of one test never reach the next (the rule set is the process's)."""
    api.use_rules([])
    yield
    api.use_rules([])


# --- rules --test: an example's files stay in its folder ----------------------------------------

PACK = """\
example_modes:
  SDX102: dumps
rules:
  - code: SDX102
    name: dumps-example
    check: dumps
    severity: error
    summary: a rule whose examples are dump folders
    doc: its examples name the files each side's dump folder holds
    examples:
      - {{lang: json, gpu_name: bundle.json, npu_name: bundle.json, gpu: '{gpu}', npu: '{{}}', fires: true}}
      - {{lang: json, gpu_name: {name}, npu_name: bundle.json, gpu: '{{}}', npu: '{{}}', fires: false}}
"""


def team(tmp: Path, gpu: str = "{}", name: str = "bundle.json") -> str:
    folder = tmp / "team"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pack.yaml").write_text(PACK.format(gpu=gpu, name=name), encoding="utf-8")
    return str(folder)


def test_a_dumps_example_naming_a_file_out_of_its_folder_is_a_broken_pack(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("as it was\n")
    up = "../" * 12 + str(victim).lstrip("/")
    pack = team(tmp_path, gpu='{"' + up + '": "OVERWRITTEN"}')
    code, out, err = run_cli("rules", "--test", pack)
    assert (code, out) == (2, "")
    assert err == (f"scriptdiff: invalid rule pack: {pack}/pack.yaml:11: SDX102: a dumps example's gpu text names "
                   f"'{up}', which is not a path inside the example's folder (a relative one, without '..'); "
                   f"nothing of it is written\n")
    assert victim.read_text() == "as it was\n"
    for name in ("/" + str(victim).lstrip("/"), "dump/../../x.json", "dump\\\\x.json"):  # absolute, up, a backslash
        pack = team(tmp_path, gpu='{"' + name + '": "X"}')
        code, _, err = run_cli("rules", "--test", pack)
        assert code == 2 and "which is not a path inside the example's folder" in err
    assert victim.read_text() == "as it was\n"


@pytest.mark.parametrize("name", ["../../x.sh", "/tmp/x.sh", "sub/x.sh", "..", "''"])
def test_an_example_file_name_that_is_a_path_is_a_broken_pack(tmp_path, name):
    pack = team(tmp_path, name=name)
    code, out, err = run_cli("rules", "--test", pack)
    shown = {"''": "''"}.get(name, repr(name))
    assert (code, out) == (2, "")
    assert err == (f"scriptdiff: invalid rule pack: {pack}/pack.yaml:12: SDX102: an example's 'gpu_name' is a plain "
                   f"file name, not a path (got {shown})\n")
    assert not (tmp_path / "x.sh").exists() and not Path("/tmp/x.sh").exists()


def test_the_run_refuses_a_name_out_of_the_folder_even_past_the_packs_checks(tmp_path):
    """The second lock: an Example built by hand (no pack, no validator) still writes nothing out
    of its folder; the example fails with the reason."""
    from scriptdiff.project import rule_examples
    from scriptdiff.ruleset.rulepack import Example, Rule

    victim = tmp_path / "victim.txt"
    victim.write_text("as it was\n")
    rel = os.path.relpath(victim, "/tmp")
    bad = [Example(lang="json", gpu='{"../../' + "../" * 8 + str(victim).lstrip("/") + '": "X"}', npu="{}",
                   fires=True, gpu_name="bundle.json", npu_name="bundle.json"),
           Example(lang="shell", gpu="x\n", npu="x\n", fires=False, gpu_name="../../" + rel)]
    rule = Rule(code="SD801", name="n", check="dumps", kind="finding", severity="error", summary="", doc="",
                examples=bad[:1])
    other = Rule(code="SD150", name="n", check="script", kind="finding", severity="warning", summary="", doc="",
                 examples=bad[1:])
    results = rule_examples.run_examples([rule, other])
    assert [r.error for r in results] == [
        f"the example names '{'../' * 10 + str(victim).lstrip('/')}', a path out of its folder: refused, nothing "
        f"written",
        f"the example names '../../{rel}', a path out of its folder: refused, nothing written"]
    assert victim.read_text() == "as it was\n"


def test_the_shipped_dumps_examples_still_pass(tmp_path):
    from scriptdiff.project import rule_examples
    from scriptdiff.ruleset.rules import load

    rs = load()
    rules = [rs.rules[c] for c in ("SD801", "SD021")]
    assert all(r.passed for r in rule_examples.run_examples(rules))


# --- fix: git must vouch for the file written ----------------------------------------------------

GPU = "torchrun train.py --lr 1e-4\n"
NPU = "torchrun train.py --lr 2e-4\n"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def repo(tmp: Path, npu: str = NPU, commit: bool = True) -> tuple[str, str]:
    """tmp/gpu/run.sh and tmp/npu/run.sh in a git repository, committed (NPU as `npu`)."""
    for side, text in (("gpu", GPU), ("npu", npu)):
        (tmp / side).mkdir(parents=True, exist_ok=True)
        (tmp / side / "run.sh").write_text(text)
    _git(tmp, "init", "-q")
    if commit:
        _git(tmp, "add", ".")
        _git(tmp, "commit", "-q", "-m", "port")
    return str(tmp / "gpu"), str(tmp / "npu")


def refused_lr(g: str, n: str, **kw) -> str:
    """The reason `fix` gives for not fixing lr (kind `file`); nothing of the NPU side changed."""
    before = {p: p.read_bytes() for p in Path(n).rglob("*") if p.is_file() and not p.is_symlink()}
    result = api.fix(g, n, Options(), **kw)
    [d] = [d for d in result.decisions if d.finding.key == "lr"]
    assert (d.fixed, d.why, d.edits, result.written) == (False, "file", [], False)
    assert {p: p.read_bytes() for p in Path(n).rglob("*") if p.is_file() and not p.is_symlink()} == before
    return d.reason


def test_a_repository_git_refuses_to_read_is_no_clean_file(tmp_path, monkeypatch, cli):
    g, n = repo(tmp_path, npu=GPU)
    (tmp_path / "npu" / "run.sh").write_text(NPU)  # an uncommitted edit
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")  # git's own switch: "dubious ownership"
    reason = (f"{n}/run.sh is in a repository git does not read (detected dubious ownership in repository at "
              f"'{tmp_path}'): git cannot tell whether it has uncommitted changes; let git read it first, or give "
              f"--force")
    assert refused_lr(g, n) == reason
    code, out, err = cli("fix", g, n)
    assert (code, err) == (1, "")
    assert f"not fixed  SD202 lr  {reason}" in out.splitlines()
    assert api.fix(g, n, Options(), force=True).written  # --force: the user vouches
    assert (tmp_path / "npu" / "run.sh").read_text() == GPU


def test_a_damaged_index_is_no_clean_file(tmp_path):
    g, n = repo(tmp_path)
    (tmp_path / ".git" / "index").write_bytes(b"DIRC garbage")
    assert refused_lr(g, n) == (f"{n}/run.sh is in a repository git does not read (.git/index: index file smaller "
                                f"than expected): git cannot tell whether it has uncommitted changes; let git read "
                                f"it first, or give --force")


def test_a_git_ignored_npu_folder_holds_a_value_in_no_commit(tmp_path):
    g, n = repo(tmp_path, commit=False)
    (tmp_path / ".gitignore").write_text("npu/\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "gpu only")
    assert refused_lr(g, n) == (f"{n}/run.sh is ignored by git (.gitignore): what it holds now is in no commit; "
                                f"commit it first, or give --force")


def test_git_is_asked_about_the_file_a_tracked_link_names(tmp_path):
    (tmp_path / "npu" / "launch").mkdir(parents=True)
    (tmp_path / "npu" / "launch" / "real.sh").write_text(GPU)
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "run.sh").write_text(GPU)
    os.symlink("launch/real.sh", tmp_path / "npu" / "run.sh")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "port")
    (tmp_path / "npu" / "launch" / "real.sh").write_text(NPU)  # the link is as committed, its target is not
    g, n = str(tmp_path / "gpu" / "run.sh"), str(tmp_path / "npu" / "run.sh")
    result = api.fix(g, n, Options())
    [d] = [d for d in result.decisions if d.finding.key == "lr"]
    assert (d.fixed, d.why, d.reason) == (False, "file", f"{n} (a link to {tmp_path}/npu/launch/real.sh) has "
                                                         f"uncommitted changes (git status): commit or stash them "
                                                         f"first, or give --force")
    assert (tmp_path / "npu" / "launch" / "real.sh").read_text() == NPU
    _git(tmp_path, "commit", "-q", "-am", "npu lr")  # committed: fixed, through the link, which stays a link
    assert api.fix(g, n, Options()).written
    assert os.readlink(tmp_path / "npu" / "run.sh") == "launch/real.sh"
    assert (tmp_path / "npu" / "launch" / "real.sh").read_text() == GPU


@pytest.mark.parametrize("mark", ["skip-worktree", "assume-unchanged"])
def test_a_file_git_status_is_told_not_to_look_at_is_refused(tmp_path, mark):
    g, n = repo(tmp_path, npu=GPU)
    _git(tmp_path, "update-index", f"--{mark}", "npu/run.sh")
    (tmp_path / "npu" / "run.sh").write_text(NPU)  # git status says nothing of it
    assert subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True).stdout == b""
    assert refused_lr(g, n) == (f"{n}/run.sh is marked {mark} in git, so git status does not look at it: clear the "
                                f"mark (git update-index --no-{mark}) and commit it first, or give --force")


def test_a_committed_file_and_a_file_in_no_repository_are_fixed(tmp_path):
    g, n = repo(tmp_path / "in")
    assert api.fix(g, n, Options()).written
    assert (tmp_path / "in" / "npu" / "run.sh").read_text() == GPU
    (tmp_path / "out" / "gpu").mkdir(parents=True)
    (tmp_path / "out" / "npu").mkdir(parents=True)
    (tmp_path / "out" / "gpu" / "run.sh").write_text(GPU)
    (tmp_path / "out" / "npu" / "run.sh").write_text(NPU)
    assert api.fix(str(tmp_path / "out" / "gpu"), str(tmp_path / "out" / "npu"), Options()).written


def test_what_git_says_of_each_state(tmp_path, monkeypatch):
    from scriptdiff.inputs import gitsrc

    g, n = repo(tmp_path, npu=GPU)
    f = str(tmp_path / "npu" / "run.sh")
    assert gitsrc.work_tree_state(f) == ("committed", "")
    (tmp_path / "npu" / "run.sh").write_text(NPU)
    assert gitsrc.work_tree_state(f) == ("changed", " M")
    (tmp_path / "npu" / "new.sh").write_text(NPU)
    assert gitsrc.work_tree_state(str(tmp_path / "npu" / "new.sh")) == ("untracked", "??")
    (tmp_path / "npu" / "a[b].sh").write_text(NPU)  # a literal pathspec: not a pattern matching run.sh
    assert gitsrc.work_tree_state(str(tmp_path / "npu" / "a[b].sh")) == ("untracked", "??")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.sh").write_text(NPU)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # git looks no higher than tmp_path
    assert gitsrc.work_tree_state(str(tmp_path / "other" / "x.sh"))[0] == "unknown"  # a .git above it
    monkeypatch.delenv("GIT_CEILING_DIRECTORIES")
    lone = tmp_path.parent / (tmp_path.name + "-lone")
    lone.mkdir()
    (lone / "x.sh").write_text(NPU)
    assert gitsrc.work_tree_state(str(lone / "x.sh")) == ("none", "")


# --- fix: how a file is written -------------------------------------------------------------------

def pair(tmp: Path, gpu: str = GPU, npu: str = NPU, name: str = "run.sh") -> tuple[str, str]:
    for side, text in (("gpu", gpu), ("npu", npu)):
        (tmp / side).mkdir(parents=True, exist_ok=True)
        (tmp / side / name).write_text(text)
    return str(tmp / "gpu"), str(tmp / "npu")


def test_a_hard_linked_npu_file_is_not_split_from_its_other_name(tmp_path, cli):
    g, n = pair(tmp_path)
    os.link(tmp_path / "npu" / "run.sh", tmp_path / "kept.sh")
    assert refused_lr(g, n) == (f"{n}/run.sh has 1 other name (hard link), which replacing it would split from it; "
                                f"edit it by hand")
    assert os.path.samefile(tmp_path / "npu" / "run.sh", tmp_path / "kept.sh")
    code, out, err = cli("fix", "--diff", g, n)  # nothing to show: nothing would change
    assert (code, out) == (0, "")


def test_a_read_only_npu_file_is_refused(tmp_path):
    g, n = pair(tmp_path)
    os.chmod(tmp_path / "npu" / "run.sh", 0o444)
    assert refused_lr(g, n) == f"{n}/run.sh is read-only; edit it by hand"
    assert stat.S_IMODE(os.stat(tmp_path / "npu" / "run.sh").st_mode) == 0o444


def test_a_file_that_changes_between_the_plan_and_the_write_is_refused_there(tmp_path):
    """The same promises are kept at the write itself (writeback.replace), whatever the plan saw."""
    from scriptdiff.inputs import writeback

    f = tmp_path / "run.sh"
    f.write_text(NPU)
    os.link(f, tmp_path / "other.sh")
    with pytest.raises(writeback.WriteRefused, match="^has 1 other name"):
        writeback.replace(str(f), NPU.encode(), GPU.encode())
    os.unlink(tmp_path / "other.sh")
    os.chmod(f, 0o444)
    with pytest.raises(writeback.WriteRefused, match="^is read-only$"):
        writeback.replace(str(f), NPU.encode(), GPU.encode())
    os.chmod(f, 0o640)
    with pytest.raises(writeback.WriteRefused, match="^changed on disk since it was read$"):
        writeback.replace(str(f), b"something else", GPU.encode())
    with pytest.raises(writeback.WriteRefused, match="^appeared on disk meanwhile$"):
        writeback.replace(str(f), None, GPU.encode())
    os.symlink("run.sh", tmp_path / "link.sh")
    with pytest.raises(writeback.WriteRefused, match=r"^is a link \(to run.sh\); a link is never written through$"):
        writeback.replace(str(tmp_path / "link.sh"), NPU.encode(), GPU.encode())
    assert f.read_text() == NPU and sorted(os.listdir(tmp_path)) == ["link.sh", "run.sh"]  # no temporary left
    writeback.replace(str(f), NPU.encode(), GPU.encode())
    assert f.read_text() == GPU and stat.S_IMODE(os.stat(f).st_mode) == 0o640


def test_the_file_and_its_folder_are_flushed_to_the_disk(tmp_path, monkeypatch):
    g, n = pair(tmp_path)
    synced = []
    real = os.fsync

    def fsync(fd):
        st = os.fstat(fd)
        synced.append(("folder" if stat.S_ISDIR(st.st_mode) else "file", st.st_ino))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    assert api.fix(g, n, Options()).written
    written = tmp_path / "npu" / "run.sh"
    assert written.read_text() == GPU
    assert synced == [("file", os.stat(written).st_ino), ("folder", os.stat(tmp_path / "npu").st_ino)]


PY = """\
import torch


def opt(m):
    return torch.optim.AdamW(
        m.parameters(),
{args}    )
"""


@pytest.mark.parametrize("npu,fixed", [
    # the reported case: the comment of lr stays on lr's line
    ("        lr=1e-4,  # lr\n",
     "        lr=1e-4,  # lr\n        weight_decay=0.1,\n"),
    # no trailing comma: lr gets one, the new last keyword none
    ("        lr=1e-4  # lr\n",
     "        lr=1e-4,  # lr\n        weight_decay=0.1\n"),
    # a comment line above the next keyword stays above it
    ("        lr=1e-4,  # lr\n        # numerics\n        eps=1e-8,\n",
     "        lr=1e-4,  # lr\n        weight_decay=0.1,\n        # numerics\n        eps=1e-8,\n"),
])
def test_a_comment_stays_with_the_keyword_it_was_written_for(tmp_path, npu, fixed):
    gpu = "        lr=1e-4,  # lr\n        weight_decay=0.1,\n" + ("        eps=1e-8,\n" if "eps" in npu else "")
    g, n = pair(tmp_path, PY.format(args=gpu), PY.format(args=npu), "train.py")
    result = api.fix(g, n, Options())
    assert [d.finding.key for d in result.fixed] == ["weight_decay"] and result.written
    assert (tmp_path / "npu" / "train.py").read_text() == PY.format(args=fixed)


def test_a_comment_between_other_keywords_is_not_copied_as_the_separator(tmp_path):
    py = PY.replace("        m.parameters(),\n", "        m.parameters(),  # all of them\n")
    gpu = "        lr=1e-4,  # lr\n        eps=1e-8,\n        weight_decay=0.1,\n"
    npu = "        lr=1e-4,  # lr\n        eps=1e-8,\n"
    g, n = pair(tmp_path, py.format(args=gpu), py.format(args=npu), "train.py")
    assert api.fix(g, n, Options()).written
    assert (tmp_path / "npu" / "train.py").read_text() == py.format(args=gpu)


# --- init: the configuration goes where it is valid, into a file of the project ---------------------

def project(tmp: Path) -> Path:
    root = tmp / "proj"
    for side, lr in (("gpu", "1e-4"), ("npu", "2e-4")):
        (root / side).mkdir(parents=True)
        (root / side / "run.sh").write_text(f"torchrun train.py --lr {lr}\n")
    return root


def init(root: Path, *argv: str) -> tuple[int, str, str]:
    cwd = os.getcwd()
    os.chdir(root)
    try:
        return run_cli("init", *argv)
    finally:
        os.chdir(cwd)


def toml(text: str) -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)


@pytest.mark.parametrize("config", [
    'tool = {scriptdiff = {gpu = {scripts = ["gpu"]}, npu = {scripts = ["npu"]}}}\n',
    'tool.scriptdiff.gpu.scripts = ["gpu"]\ntool.scriptdiff.npu.scripts = ["npu"]\n',
    '[ tool . scriptdiff . gpu ]\nscripts = ["gpu"]\n[ tool . scriptdiff . npu ]\nscripts = ["npu"]\n',
    '[tool."scriptdiff".gpu]\nscripts = ["gpu"]\n[tool."scriptdiff".npu]\nscripts = ["npu"]\n',
])
def test_a_configuration_in_any_toml_form_is_found_and_kept(tmp_path, config):
    root = project(tmp_path)
    text = config + '\n[project]\nname = "port"\n' if config.startswith("tool") else \
        '[project]\nname = "port"\n\n' + config  # top-level keys come before the first table
    (root / "pyproject.toml").write_text(text)
    assert init(root) == (2, "", "scriptdiff: init: pyproject.toml already configures scriptdiff check: edit its "
                                 "[tool.scriptdiff] tables, or remove them to run init again\n")
    assert (root / "pyproject.toml").read_text() == text
    code, out, err = init(root, "--force")  # --force replaces a scriptdiff.toml, never a pyproject.toml's tables
    assert code == 2 and (root / "pyproject.toml").read_text() == text
    cwd = os.getcwd()
    os.chdir(root)
    try:  # and check finds it
        code, out, err = run_cli("check", "-q", "--no-cache")
    finally:
        os.chdir(cwd)
    assert code == 1 and "hyperparameters: differences (1 error(s))" in out.splitlines(), err


def test_an_inline_tool_table_cannot_take_the_tables_and_is_refused(tmp_path):
    root = project(tmp_path)
    text = 'tool = {black = {line-length = 88}}\n[project]\nname = "port"\n'
    (root / "pyproject.toml").write_text(text)
    assert init(root) == (2, "", "scriptdiff: init: pyproject.toml: its tool table is written inline (tool = {...}), "
                                 "which cannot take [tool.scriptdiff] tables; add the [tool.scriptdiff] tables by "
                                 "hand (init --dry-run prints them), or write scriptdiff.toml\n")
    assert (root / "pyproject.toml").read_text() == text and not (root / "scriptdiff.toml").exists()
    code, out, err = init(root, "--dry-run")  # prints them, and says why they would not be written
    assert code == 0 and out.startswith("# pyproject.toml (not written: --dry-run)\n\n# scriptdiff check")
    assert err.startswith("scriptdiff: note: init: pyproject.toml: its tool table is written inline")


def test_dotted_tool_keys_take_the_tables_at_the_end(tmp_path):
    root = project(tmp_path)
    text = 'tool.black.line-length = 88\n\n[project]\nname = "port"\n'
    (root / "pyproject.toml").write_text(text)
    assert init(root)[0] == 0
    new = (root / "pyproject.toml").read_text()
    assert new.startswith(text + "\n# scriptdiff check configuration")
    data = toml(new)
    assert data["tool"]["black"] == {"line-length": 88} and data["project"] == {"name": "port"}
    assert data["tool"]["scriptdiff"]["gpu"]["scripts"] == ["gpu"]


def test_an_invalid_pyproject_is_not_appended_to(tmp_path):
    root = project(tmp_path)
    text = '[project\nname = "port"\n'
    (root / "pyproject.toml").write_text(text)
    assert init(root) == (2, "", "scriptdiff: init: pyproject.toml: not valid TOML (Unexpected character: '\\n' at "
                                 "line 1 col 8): fix it first\n")
    assert (root / "pyproject.toml").read_text() == text


def test_a_crlf_pyproject_gets_crlf_lines(tmp_path):
    root = project(tmp_path)
    (root / "pyproject.toml").write_bytes(b'[project]\r\nname = "port"\r\n')
    assert init(root)[0] == 0
    data = (root / "pyproject.toml").read_bytes()
    assert data.startswith(b'[project]\r\nname = "port"\r\n\r\n# scriptdiff check configuration')
    assert data.count(b"\n") == data.count(b"\r\n") > 10
    assert toml(data.decode())["tool"]["scriptdiff"]["npu"]["scripts"] == ["npu"]


def test_a_latin1_pyproject_is_refused(tmp_path):
    root = project(tmp_path)
    data = '[project]\nname = "café"\n'.encode("latin-1")
    (root / "pyproject.toml").write_bytes(data)
    assert init(root) == (2, "", "scriptdiff: init: pyproject.toml is not UTF-8 (byte 21), which a TOML file is: "
                                 "save it as UTF-8 first\n")
    assert (root / "pyproject.toml").read_bytes() == data


@pytest.mark.parametrize("name", ["scriptdiff.toml", "pyproject.toml"])
@pytest.mark.parametrize("dangling", [True, False])
def test_a_link_in_the_configurations_place_is_never_written_through(tmp_path, name, dangling):
    root = project(tmp_path)
    outside = tmp_path / "outside.toml"
    if not dangling:
        outside.write_text('[project]\nname = "elsewhere"\n')
    os.symlink(outside, root / name)
    code, out, err = init(root, "--force")  # a scriptdiff.toml there configures check: --force would replace it
    assert (code, out) == (2, "")
    assert err == (f"scriptdiff: init: {name} is a link (to {outside}): init writes only a file of the project, "
                   f"never through a link; remove the link, or write the configuration there by hand (init "
                   f"--dry-run prints it)\n")
    assert outside.exists() == (not dangling)
    if not dangling:
        assert outside.read_text() == '[project]\nname = "elsewhere"\n'
    assert os.path.islink(root / name) and sorted(os.listdir(root)) == sorted(["gpu", "npu", name])


def test_a_hard_linked_or_read_only_pyproject_is_refused(tmp_path):
    root = project(tmp_path)
    text = '[project]\nname = "port"\n'
    (root / "pyproject.toml").write_text(text)
    os.link(root / "pyproject.toml", tmp_path / "other-name.toml")
    assert init(root) == (2, "", "scriptdiff: init: pyproject.toml has 1 other name (hard link), which replacing it "
                                 "would split from it; not written\n")
    os.unlink(tmp_path / "other-name.toml")
    os.chmod(root / "pyproject.toml", 0o444)
    assert init(root) == (2, "", "scriptdiff: init: pyproject.toml is read-only; not written\n")
    assert (root / "pyproject.toml").read_text() == text


def test_init_writes_a_new_scriptdiff_toml_and_replaces_it_only_with_force(tmp_path):
    root = project(tmp_path)
    assert init(root)[0] == 0
    first = (root / "scriptdiff.toml").read_text()
    assert toml(first)["gpu"]["scripts"] == ["gpu"]
    assert init(root)[0] == 2
    (root / "scriptdiff.toml").write_text(first + "# mine\n")
    assert init(root, "--force")[0] == 0
    assert (root / "scriptdiff.toml").read_text() == first
    with pytest.raises(UsageError, match="is a link"):
        os.rename(root / "scriptdiff.toml", root / "real.toml")
        os.symlink("real.toml", root / "scriptdiff.toml")
        api.init(str(root), force=True)

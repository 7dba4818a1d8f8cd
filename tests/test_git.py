"""Git sides: REV:path, --git REV1 REV2 [paths], GIT_EXTERNAL_DIFF, on a temporary repository
with a GPU branch and an NPU branch. The work tree is never touched."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def git(repo, *args, env=None):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "gpu")
    git(r, "config", "user.email", "t@example.com")
    git(r, "config", "user.name", "t")
    (r / "conf").mkdir()
    (r / "conf" / "notes.txt").write_text("batch=8\nlr=1e-4\n")
    (r / "same.txt").write_text("same\n")
    (r / "train.txt").write_text("steps=10\n")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "gpu")
    git(r, "checkout", "-qb", "npu")
    (r / "conf" / "notes.txt").write_text("batch=8\nlr=2e-4\n")
    (r / "train.txt").unlink()
    (r / "train_npu.txt").write_text("steps=10\n")
    (r / "extra.sh").write_text("echo npu\n")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "npu")
    git(r, "checkout", "-q", "gpu")
    return r


def state(repo):
    files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*") if p.is_file()
             and ".git" not in p.parts}
    return git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), files


def test_revpath_pair(repo, cli):
    before = state(repo)
    code, out, err = cli("diff", "--repo", str(repo), "gpu:conf/notes.txt", "npu:conf/notes.txt", "-f", "json")
    doc = json.loads(out)
    assert code == 1, err
    assert [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"], f["gpu"]["path"], f["npu"]["path"],
             f["gpu"]["line"], f["npu"]["line"]) for f in doc["findings"]] == [
        ("SD108", "code:notes.txt:lines", "lr=1e-4", "lr=2e-4", "gpu:conf/notes.txt", "npu:conf/notes.txt", 2, 2)]
    assert doc["gpu"] == "gpu:conf/notes.txt"
    assert state(repo) == before  # nothing checked out, nothing written


def test_revpath_same_blob_is_clean(repo, cli):
    code, out, _ = cli("diff", "--repo", str(repo), "gpu:same.txt", "npu:same.txt", "-f", "json")
    assert code == 0 and json.loads(out)["findings"] == []


def test_git_trees_pair_renames_and_list_unpaired(repo, cli):
    before = state(repo)
    code, out, err = cli("diff", "--repo", str(repo), "--git", "gpu", "npu", "-f", "json")
    doc = json.loads(out)
    assert code == 1, err
    assert [(f["rule"], f["key"], (f["npu"] or {}).get("path")) for f in doc["findings"]] == [
        ("SD108", "code:notes.txt:lines", "npu:conf/notes.txt"),
        ("SD150", "file:extra.sh", "npu:extra.sh"),
    ]
    assert state(repo) == before


def test_git_trees_restricted_to_paths(repo, cli):
    code, out, _ = cli("diff", "--repo", str(repo), "--git", "gpu", "npu", "same.txt", "-f", "json")
    assert code == 0 and json.loads(out)["findings"] == []
    code, out, _ = cli("diff", "--repo", str(repo), "--git", "gpu", "npu", "conf", "-f", "json")
    assert [f["rule"] for f in json.loads(out)["findings"]] == ["SD108"]


def test_revpath_folders(repo, cli):
    code, out, _ = cli("diff", "--repo", str(repo), "gpu:conf", "npu:conf", "-f", "json")
    assert code == 1
    assert [(f["rule"], f["npu"]["path"]) for f in json.loads(out)["findings"]] == [("SD108", "npu:conf/notes.txt")]


@pytest.mark.parametrize("args,message", [
    (["nobranch:same.txt", "npu:same.txt"], "scriptdiff: nobranch: unknown revision"),
    (["gpu:missing.txt", "npu:same.txt"], "scriptdiff: gpu:missing.txt: no such path in revision gpu"),
    (["--git", "gpu", "nobranch"], "scriptdiff: nobranch: unknown revision"),
    (["gpu:conf", "npu:same.txt"], "scriptdiff: cannot compare a folder (gpu:conf) with a file (npu:same.txt)"),
])
def test_git_errors_are_one_line_exit_2(repo, cli, args, message):
    code, out, err = cli("diff", "--repo", str(repo), *args)
    assert code == 2
    assert err.strip().splitlines() == [message]


def test_not_a_repository(tmp_path, cli):
    code, _, err = cli("diff", "--repo", str(tmp_path), "a:x.py", "b:x.py")
    assert code == 2
    assert err.strip() == f"scriptdiff: {tmp_path}: not inside a git repository"


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return env


def test_git_external_diff(repo):
    env = _env()
    env["GIT_EXTERNAL_DIFF"] = f"{sys.executable} -m scriptdiff"
    out = subprocess.run(["git", "-C", str(repo), "diff", "--ext-diff", "gpu", "npu", "--", "conf"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "SD108 code:notes.txt:lines" in out.stdout
    assert "GPU: lr=1e-4  at a/conf/notes.txt:2" in out.stdout
    assert "NPU: lr=2e-4  at b/conf/notes.txt:2" in out.stdout


def test_git_diff_external_config_keeps_going(repo):
    """diff.external over several files (one added, one renamed: git's 9-argument call):
    every call exits 0, so git shows them all."""
    env = _env()
    out = subprocess.run(["git", "-C", str(repo), "-c", f"diff.external={sys.executable} -m scriptdiff",
                          "diff", "gpu", "npu"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("scriptdiff: GPU a/") == 3
    assert "scriptdiff: GPU a/extra.sh  vs  NPU b/extra.sh" in out.stdout  # added: old side is /dev/null
    assert "scriptdiff: GPU a/train.txt  vs  NPU b/train_npu.txt" in out.stdout  # the rename form
    assert "SD108 code:notes.txt:lines" in out.stdout


def test_external_diff_seven_arguments_in_process(tmp_path, cli):
    old = tmp_path / "old.txt"
    new = tmp_path / "new.txt"
    old.write_text("x=1\n")
    new.write_text("x=2\n")
    code, out, _ = cli("conf/x.txt", str(old), "a" * 40, "100644", str(new), "b" * 40, "100644")
    assert code == 0
    assert "GPU: x=1  at a/conf/x.txt:1" in out and "NPU: x=2  at b/conf/x.txt:1" in out


def test_python_branches_end_to_end(repo, cli):
    pytest.importorskip("scriptdiff.lang.python.reader")
    git(repo, "checkout", "-q", "gpu")
    (repo / "model.py").write_text("import torch\nx = torch.ones(2).cuda()\nlr = 1e-4\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "gpu model")
    git(repo, "checkout", "-q", "npu")
    (repo / "model.py").write_text("import torch\nimport torch_npu\nx = torch.ones(2).npu()\nlr = 1e-4\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "npu model")
    code, out, _ = cli("diff", "--repo", str(repo), "gpu:model.py", "npu:model.py", "-f", "json")
    doc = json.loads(out)
    assert [f for f in doc["findings"] if f["severity"] != "info"] == []
    assert doc["masked"]


def test_difftool(repo):
    env = _env()
    out = subprocess.run(["git", "-C", str(repo), "difftool", "-y", "-x", f"{sys.executable} -m scriptdiff diff",
                          "gpu", "npu", "--", "conf/notes.txt"], capture_output=True, text=True, env=env)
    assert "SD108 code:notes.txt:lines" in out.stdout, out.stderr
    assert "GPU: lr=1e-4" in out.stdout and "NPU: lr=2e-4" in out.stdout


def test_revision_against_a_file_on_disk(repo, cli, tmp_path):
    local = tmp_path / "notes.txt"
    local.write_text("batch=8\nlr=1e-4\n")
    code, out, _ = cli("diff", "--repo", str(repo), "npu:conf/notes.txt", str(local), "-f", "json")
    assert code == 1
    assert [(f["gpu"]["path"], f["gpu"]["value"], f["npu"]["value"]) for f in json.loads(out)["findings"]] == [
        ("npu:conf/notes.txt", "lr=2e-4", "lr=1e-4")]

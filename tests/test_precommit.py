"""The published pre-commit hooks, run by pre-commit itself on a temporary repository.

The hooks in .pre-commit-hooks.yaml are `language: python` (pre-commit installs scriptdiff
from the hook repository). Installing needs the network, so this test copies each hook's
definition (entry, file types, pass_filenames, ...) into a `repo: local` hook with
`language: system` that runs this checkout's scriptdiff, installs it with
`pre-commit install`, and makes real commits: a commit that keeps the NPU port faithful
goes through; one that makes it drift is refused with the finding.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]


def run(cmd, cwd, env, check=True):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def local_config(hook_ids):
    hooks = []
    for h in HOOKS:
        if h["id"] not in hook_ids:
            continue
        assert h["entry"].startswith("scriptdiff ") and h["language"] == "python"
        local = {k: v for k, v in h.items() if k not in ("language", "description")}
        local["entry"] = f"{sys.executable} -m scriptdiff" + h["entry"][len("scriptdiff"):]
        local["language"] = "system"
        hooks.append(local)
    return yaml.safe_dump({"repos": [{"repo": "local", "hooks": hooks}]}, sort_keys=False)


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    env = dict(os.environ)
    env.update(PYTHONPATH=str(ROOT), PRE_COMMIT_HOME=str(tmp_path / "pc-home"), GIT_CONFIG_NOSYSTEM="1",
               HOME=str(tmp_path), PRE_COMMIT_COLOR="never")
    return make_repo(r, env), env


def make_repo(r: Path, env: dict) -> Path:
    """A git repository at `r` holding gpu/train.ini and npu/train.ini, the same."""
    run(["git", "init", "-q", "-b", "main"], r, env)
    run(["git", "config", "user.email", "t@example.com"], r, env)
    run(["git", "config", "user.name", "t"], r, env)
    for side in ("gpu", "npu"):
        (r / side).mkdir()
        (r / side / "train.ini").write_text("lr = 1e-4\nbatch = 8\n")
    return r


def commit(r, env, message):
    run(["git", "add", "-A"], r, env)
    return run(["git", "commit", "-m", message], r, env, check=False)


def test_hook_file_is_valid_for_pre_commit():
    ids = [h["id"] for h in HOOKS]
    assert ids == ["scriptdiff-staged", "scriptdiff-check"]
    for h in HOOKS:
        assert {"id", "name", "entry", "language"} <= set(h) and h["language"] == "python"


CONFIG = '[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n'


def test_staged_hook_refuses_a_drifting_commit(repo):
    r, env = repo
    (r / "scriptdiff.toml").write_text(CONFIG)
    (r / ".pre-commit-config.yaml").write_text(local_config({"scriptdiff-staged"}))
    run(PRE_COMMIT + ["install"], r, env)
    assert commit(r, env, "faithful start").returncode == 0
    (r / "npu" / "train.ini").write_text("lr = 1e-4\nbatch = 8\n# a comment\n")
    (r / "gpu" / "train.ini").write_text("lr = 1e-4\nbatch = 8\n# a comment\n")
    assert commit(r, env, "same edit on both sides").returncode == 0
    (r / "npu" / "train.ini").write_text("lr = 2e-4\nbatch = 8\n# a comment\n")
    p = commit(r, env, "drift")
    assert p.returncode != 0
    out = p.stdout + p.stderr
    assert "scriptdiff (staged files vs their GPU/NPU counterparts)" in out and "Failed" in out
    assert "SD108 code:train.ini:lines" in out and "NPU: lr = 2e-4  at npu/train.ini:1" in out
    # an inline suppression accepts the drift on purpose
    (r / "npu" / "train.ini").write_text("lr = 2e-4  # scriptdiff: ignore[SD108]\nbatch = 8\n# a comment\n")
    assert commit(r, env, "accepted drift").returncode == 0
    # a new file outside the configured trees is not the hook's business: the commit passes, as with ruff
    (r / "tools").mkdir()
    (r / "tools" / "plot.py").write_text("print('hi')\n")
    p = commit(r, env, "a tool of the project")
    assert p.returncode == 0, p.stdout + p.stderr
    # a new file inside a side's tree with no counterpart is the pairing finding a folder diff makes
    (r / "npu" / "npu_only.yaml").write_text("hccl_buffer: 200\n")
    p = commit(r, env, "an NPU-only config")
    assert p.returncode == 1
    assert "warning SD150 file:npu_only.yaml  yaml file on NPU only: no counterpart on GPU" in p.stdout + p.stderr
    (r / "gpu" / "npu_only.yaml").write_text("hccl_buffer: 200\n")
    assert commit(r, env, "its counterpart").returncode == 0


def test_staged_hook_fails_without_a_configuration_or_its_inputs(repo):
    r, env = repo
    (r / ".pre-commit-config.yaml").write_text(local_config({"scriptdiff-staged"}))
    run(PRE_COMMIT + ["install"], r, env)
    p = commit(r, env, "no configuration")
    assert p.returncode != 0
    assert ("scriptdiff: check --files: no configuration: the staged files are compared with their counterparts in "
            "the GPU and NPU inputs it names; run `scriptdiff init`") in p.stdout + p.stderr
    (r / "scriptdiff.toml").write_text('[gpu]\nscripts = ["cuda"]\n[npu]\nscripts = ["ascend"]\n')
    p = commit(r, env, "a configuration of folders that are not there")
    assert p.returncode != 0
    assert ("scriptdiff: check --files: none of the inputs scriptdiff.toml names exists (ascend, cuda): fix the "
            "configuration (`scriptdiff init` writes one)") in p.stdout + p.stderr
    run([sys.executable, "-m", "scriptdiff", "init", "--force"], r, env)
    assert commit(r, env, "configured by init").returncode == 0
    assert "scripts = [\"gpu\"]" in (r / "scriptdiff.toml").read_text()


def test_check_hook_runs_the_configured_trees(repo):
    r, env = repo
    # the hook runs `check --strict`: a configuration that leaves a check without inputs fails
    (r / "scriptdiff.toml").write_text('[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n')
    (r / ".pre-commit-config.yaml").write_text(local_config({"scriptdiff-check"}))
    p = run(PRE_COMMIT + ["run", "--all-files"], r, env, check=False)
    assert p.returncode == 1 and "SD155 check:weights" in p.stdout, p.stdout + p.stderr
    # every check configured (each side's inputs the same here): the hook passes
    ex = Path(__file__).resolve().parent.parent / "fixtures" / "example"
    for name in ("env-gpu.json", "requirements-gpu.txt", "init-gpu.safetensors"):
        shutil.copy(ex / name, r / name)
    shutil.copytree(ex / "data-gpu", r / "data")
    both = 'environment = "env-gpu.json"\npackages = "requirements-gpu.txt"\ndataset = "data"\n' \
           'weights = "init-gpu.safetensors"\n'
    (r / "scriptdiff.toml").write_text(f'[gpu]\nscripts = ["gpu"]\n{both}[npu]\nscripts = ["npu"]\n{both}')
    p = run(PRE_COMMIT + ["run", "--all-files"], r, env, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    (r / "npu" / "extra.ini").write_text("x = 1\n")  # a file on one side only: listed
    (r / "npu" / "train.ini").write_text("lr = 3e-4\nbatch = 8\n")
    p = run(PRE_COMMIT + ["run", "--all-files"], r, env, check=False)
    assert p.returncode == 1
    assert "== script [differences] " in p.stdout and "SD108 code:train.ini:lines" in p.stdout
    assert "SD151 file:extra.ini" in p.stdout

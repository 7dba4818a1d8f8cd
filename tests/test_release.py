"""The package is releasable as it is (issue 30): the version is written once, the CHANGELOG
agrees with it, the pre-commit snippets of the README and docs/ are the published hooks run
locally and no document names a release tag (issue 41: only main lands; tests/test_install.py
runs the snippet and each install line on a fresh clone), `python -m build` gives an sdist and
a wheel that `twine check` accepts, and the wheel installs into a fresh virtual environment and
runs `scriptdiff diff` on the example.

Offline and quick: the build runs without isolation on the test extra's setuptools, and the
fresh environment is made without pip; the wheel goes into it with this environment's pip
(`pip --python`, `--no-deps --no-index`), and its dependencies are this environment's
site-packages, named in a .pth file of the new environment (a plain path: the .pth files of this
environment, this checkout's editable install among them, are not run there).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml

from scriptdiff import __version__

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HOOKS = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}


def test_the_version_is_written_once():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "scriptdiff.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_the_changelog_opens_with_this_version():
    heads = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert heads and heads[0] == __version__, f"CHANGELOG.md's first entry is {heads[:1]}, the version {__version__}"


def snippets() -> list[tuple[str, dict]]:
    """Every .pre-commit-config.yaml snippet of the README and docs/ that runs a scriptdiff hook."""
    out = []
    for path in DOCS:
        for block in re.findall(r"```yaml\n(.*?)```", path.read_text(encoding="utf-8"), re.S):
            doc = yaml.safe_load(block)
            for repo in (doc or {}).get("repos", []) if isinstance(doc, dict) else []:
                if any(str(h.get("id", "")).startswith("scriptdiff") for h in repo.get("hooks", [])):
                    out.append((path.name, repo))
    return out


def test_the_pre_commit_snippets_are_the_published_hooks_run_locally():
    found = snippets()
    assert {name for name, _ in found} >= {"README.md", "check.md"}
    for name, repo in found:
        assert repo["repo"] == "local" and "rev" not in repo, f"{name}: {repo.get('repo')} needs a release tag"
        for hook in repo["hooks"]:
            assert hook["id"] in HOOKS, f"{name}: no hook {hook['id']} in .pre-commit-hooks.yaml"
            published = {k: v for k, v in HOOKS[hook["id"]].items() if k not in ("language", "description")}
            assert {k: v for k, v in hook.items() if k != "language"} == published, name
            assert hook["language"] == "system", name
    assert "--strict" in HOOKS["scriptdiff-check"]["entry"].split()


def test_no_document_names_a_release_tag():
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        assert not re.findall(r"@v(\d+\.\d+\.\d+)|scriptdiff-(\d+\.\d+\.\d+)-py3|rev: v\d", text), path.name
    assert "git+https://github.com/scriptdiff/scriptdiff@main'" in (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """`python -m build` of a copy of what the sdist is made from: the sdist, then the wheel
    built from the sdist (so the sdist is known to hold everything)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "CHANGELOG.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("scriptdiff", "rules"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = src / "dist"
    p = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
                       capture_output=True, text=True, cwd=src)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return out


def test_build_gives_an_sdist_and_a_wheel_that_twine_accepts(dist):
    names = sorted(p.name for p in dist.iterdir())
    assert names == [f"scriptdiff-{__version__}-py3-none-any.whl", f"scriptdiff-{__version__}.tar.gz"]
    p = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, sorted(dist.iterdir()))],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.count("PASSED") == 2, p.stdout + p.stderr
    with zipfile.ZipFile(dist / names[0]) as wheel:
        inside = set(wheel.namelist())
        meta = wheel.read(f"scriptdiff-{__version__}.dist-info/METADATA").decode()
    packs = {f"scriptdiff/rulepacks/{p.name}" for p in (ROOT / "rules").glob("*.yaml")}
    assert packs and packs <= inside
    assert f"Version: {__version__}\n" in meta and "License-Expression: Apache-2.0" in meta


def test_the_wheel_installs_into_a_fresh_venv_and_runs(dist, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    deps = [p for p in {*site.getsitepackages(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
            if os.path.isdir(p)]
    Path(purelib, "_scriptdiff_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    wheel = next(dist.glob("*.whl"))
    p = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                        "--quiet", str(wheel)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["SCRIPTDIFF_CACHE_DIR"] = str(tmp_path / "cache")
    where = subprocess.run([str(python), "-c", "import scriptdiff, scriptdiff.rulepacks as r; "
                                              "print(scriptdiff.__file__); print(r.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout.split()
    assert all(w.startswith(purelib) for w in where), where  # the wheel's files, not this checkout's
    example = tmp_path / "example"
    shutil.copytree(ROOT / "fixtures" / "example", example)
    exe = venv / ("Scripts/scriptdiff.exe" if os.name == "nt" else "bin/scriptdiff")
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, env=env, cwd=example)
    assert version.stdout == f"scriptdiff {__version__}\n"
    run = subprocess.run([str(exe), "diff", "gpu", "npu", "-f", "json", "--ignore", "SD023,SD027"],  # issue 43's notes
                         capture_output=True, text=True, env=env,
                         cwd=example)
    assert run.returncode == 1, run.stderr
    got = [(f["rule"], f["key"], f["gpu"]["value"] if f["gpu"] else None, f["npu"]["value"])
           for f in json.loads(run.stdout)["findings"]]
    assert got == [("SD201", "use_flash_attn", True, False), ("SD207", "seed", 42, 1234),
                   ("SD206", "adam_beta2", 0.95, 0.999),
                   ("SD302", "env:source set_env.sh", None, "/usr/local/Ascend/ascend-toolkit/set_env.sh")]

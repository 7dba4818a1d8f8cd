"""Every way the README and docs/ give to install scriptdiff works on a clone of main as it is
(issue 41): there are no release tags, so nothing may name one.

A fresh `git clone` of this checkout is made once. Each documented `pip install` command that
installs scriptdiff (found in the documents' code, never copied here) runs for real, with this
environment's pip, into a fresh virtual environment, from the clone, offline: `--no-index` and
`--no-build-isolation` are added (the build uses the test extra's setuptools), and the
dependencies are this environment's site-packages, named in a .pth file of the new environment
(as tests/test_release.py does), so pip finds them installed; an extra's package this
environment lacks (torch, pyarrow) is a metadata-only stub there. A `git+https://...` URL of this
repository is read from the clone instead (`git+file://localhost/...`), at the revision the command names.
After each, the new environment's `scriptdiff --version` answers from the installed files.

The README's pre-commit configuration (the yaml block after its `<!-- pre-commit config` marker)
is written verbatim into a temporary git repository configured by `scriptdiff init`, installed
with `pre-commit install`, and real commits are made with the environment's scriptdiff on PATH:
a faithful commit goes through, a drifting one is refused with the finding. Its hooks are
`repo: local`, `language: system`: pre-commit needs no network.
"""
from __future__ import annotations

import os
import re
import shlex
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from scriptdiff import __version__
from test_precommit import make_repo, run

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
URL = "https://github.com/scriptdiff/scriptdiff"
PRE_COMMIT_MARKER = "<!-- pre-commit config"
BIN = "Scripts" if os.name == "nt" else "bin"


def _extras() -> dict[str, list[str]]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return {name: [r.split(";")[0].strip() for r in reqs] for name, reqs in extras.items()}


EXTRAS = _extras()


def _commands_in(text: str) -> list[str]:
    """Every command in the text's inline code and in its sh blocks, one per `&&` part."""
    found = []
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)
    for block in blocks:
        for line in block.splitlines():
            found += line.split("&&")
    rest = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for span in re.findall(r"`([^`]+)`", rest):
        found += span.replace("\n", " ").split("&&")
    return [c.strip() for c in found if c.strip()]


def _installs_scriptdiff(words: list[str]) -> bool:
    targets = [w for w in words[2:] if not w.startswith("-")]
    if not targets or any(w in ("-r", "-c", "--requirement", "--constraint") for w in words):
        return False
    return all(t == "." or t.startswith(".[") or t.startswith("scriptdiff") for t in targets)


def documented_installs() -> list[tuple[str, list[str]]]:
    """(where, argv after `pip`) of each distinct documented command that installs scriptdiff."""
    out: dict[tuple[str, ...], str] = {}
    for path in [*DOCS, ROOT / "DEVELOPERS.md"]:
        for cmd in _commands_in(path.read_text(encoding="utf-8")):
            if "pip install" not in cmd:
                continue
            words = shlex.split(cmd, comments=True)
            if len(words) < 3 or os.path.basename(words[0]) != "pip" or words[1] != "install":
                continue
            if _installs_scriptdiff(words):  # `-q` changes what pip prints, not what it does
                out.setdefault(tuple(w for w in words[1:] if w != "-q"), path.name)
    return [(where, list(argv)) for argv, where in out.items()]


def test_the_documents_install_from_a_clone_and_name_no_tag():
    found = documented_installs()
    shapes = {" ".join(argv) for _where, argv in found}
    assert {"install .", "install -e .[test]", "install .[plot,html]",
            f"install scriptdiff[plot] @ git+{URL}@main", "install scriptdiff[cloud]"} <= shapes
    for path in [*DOCS, ROOT / "DEVELOPERS.md"]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"@v\d+\.\d+|rev: v\d|scriptdiff-\d+\.\d+\.\d+-py3", text), path.name


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A fresh clone of this checkout, on a branch `main` as a clone of the repository has."""
    where = tmp_path_factory.mktemp("clone") / "scriptdiff"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(where)], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(where), "checkout", "-q", "-B", "main"], check=True, capture_output=True)
    return where


def _stubs(where: Path) -> Path:
    """A folder of metadata-only distributions for the extras' packages this environment lacks
    (torch, pyarrow: the test extra leaves them out), so that pip finds every requirement of a
    documented extra installed, offline, as it finds the others."""
    from importlib import metadata

    from packaging.requirements import Requirement

    where.mkdir()
    for reqs in EXTRAS.values():
        for text in reqs:
            req = Requirement(text)
            try:
                metadata.distribution(req.name)
                continue
            except metadata.PackageNotFoundError:
                pass
            version = next((s.version for s in req.specifier if s.operator in (">=", "==")), "1.0")
            info = where / f"{req.name.replace('-', '_')}-{version}.dist-info"
            info.mkdir(exist_ok=True)
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {req.name}\nVersion: {version}\n")
    return where


def fresh_venv(where: Path) -> Path:
    """A virtual environment without pip whose dependencies are this environment's packages
    (and the stubs of _stubs)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / BIN / ("python.exe" if os.name == "nt" else "python")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    deps = [p for p in {*site.getsitepackages(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
            if os.path.isdir(p)] + [str(_stubs(where.parent / "stubs"))]
    Path(purelib, "_scriptdiff_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    return python


def pip(python: Path, argv: list[str], clone: Path) -> subprocess.CompletedProcess:
    """A documented `pip ARGV`, run offline with this environment's pip into `python`'s environment."""
    argv = [a.replace(f"git+{URL}", f"git+file://localhost{clone}") for a in argv]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), argv[0], "--no-index",
                           "--no-build-isolation", *argv[1:]], capture_output=True, text=True, cwd=clone, env=env)


def installed_version(python: Path, tmp: Path) -> tuple[str, str]:
    """The new environment's `scriptdiff --version`, and where its package was imported from."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["SCRIPTDIFF_CACHE_DIR"] = str(tmp / "cache")
    exe = python.parent / ("scriptdiff.exe" if os.name == "nt" else "scriptdiff")
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, env=env, cwd=tmp).stdout
    where = subprocess.run([str(python), "-c", "import scriptdiff; print(scriptdiff.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp).stdout.strip()
    return version, where


def test_each_documented_install_command_works_from_a_clone(clone, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    commands = sorted(documented_installs(), key=lambda c: c[1][-1].startswith("scriptdiff[") and "@" not in c[1][-1])
    ran = []
    for where, argv in commands:
        p = pip(python, argv, clone)
        said = p.stdout + p.stderr
        assert p.returncode == 0, f"{where}: pip {' '.join(argv)}:\n{said[-3000:]}"
        assert "does not provide the extra" not in said, f"{where}: pip {' '.join(argv)}: {said}"
        version, imported = installed_version(python, tmp_path)
        assert version == f"scriptdiff {__version__}\n", f"{where}: pip {' '.join(argv)}: {version!r}"
        # the installed package: the clone's files (editable) or the environment's own copy
        assert imported.startswith((str(purelib), str(clone))), (argv, imported)
        ran.append(" ".join(argv))
    assert len(ran) == len(commands) >= 6


def pre_commit_config(path: Path) -> str:
    """The yaml block after the document's pre-commit marker, verbatim."""
    text = path.read_text(encoding="utf-8")
    after = text.split(PRE_COMMIT_MARKER, 1)[1].split("\n", 1)[1]
    assert after.startswith("```yaml\n"), f"{path.name}: the pre-commit marker is not followed by a yaml block"
    return after[len("```yaml\n"):].split("```", 1)[0]


def test_the_docs_give_the_readmes_pre_commit_config():
    readme = pre_commit_config(ROOT / "README.md")
    given = [p for p in DOCS if PRE_COMMIT_MARKER in p.read_text(encoding="utf-8")]
    assert {p.name for p in given} >= {"README.md", "check.md"}
    assert all(pre_commit_config(p) == readme for p in given)
    hooks = yaml.safe_load(readme)["repos"]
    assert [r["repo"] for r in hooks] == ["local"] and {h["language"] for h in hooks[0]["hooks"]} == {"system"}


def test_the_readmes_pre_commit_config_runs_on_a_fresh_clone(clone, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    p = pip(python, ["install", "."], clone)
    assert p.returncode == 0, p.stdout + p.stderr
    r = tmp_path / "project"
    r.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PATH=f"{python.parent}{os.pathsep}{env.get('PATH', '')}", PRE_COMMIT_HOME=str(tmp_path / "pc-home"),
               GIT_CONFIG_NOSYSTEM="1", HOME=str(tmp_path), PRE_COMMIT_COLOR="never", NO_COLOR="1",
               SCRIPTDIFF_CACHE_DIR=str(tmp_path / "cache"))
    make_repo(r, env)
    run(["scriptdiff", "init"], r, env)  # the README's way to a configuration, by the installed scriptdiff
    (r / ".pre-commit-config.yaml").write_text(pre_commit_config(ROOT / "README.md"))
    run([sys.executable, "-m", "pre_commit", "install"], r, env)

    def commit(message):
        run(["git", "add", "-A"], r, env)
        return run(["git", "commit", "-m", message], r, env, check=False)

    p = commit("faithful start")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "scriptdiff (staged files vs their GPU/NPU counterparts)" in p.stdout + p.stderr
    assert "scriptdiff check (six pre-checks on the configured trees)" in p.stdout + p.stderr
    (r / "npu" / "train.ini").write_text("lr = 2e-4\nbatch = 8\n")
    p = commit("drift")
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert "SD108 code:train.ini:lines" in out and "NPU: lr = 2e-4  at npu/train.ini:1" in out

import os
import tempfile
from pathlib import Path

import pytest

# the parse cache of test runs lives in a fresh folder, never in the user's ~/.cache
os.environ["SCRIPTDIFF_CACHE_DIR"] = tempfile.mkdtemp(prefix="scriptdiff-test-cache-")
# ...and its entries are keyed by this secret, so no test writes a key file into ~/.config
os.environ["SCRIPTDIFF_CACHE_SECRET"] = "scriptdiff test runs"
# ...and no run is replayed from an earlier test, which would hide a monkeypatch (test_runmemo turns it on)
os.environ["SCRIPTDIFF_NO_RUN_MEMO"] = "1"

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


def run_cli(*args: str):
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    import contextlib
    import io

    from scriptdiff.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def cli():
    return run_cli


def write_files(root, files: dict) -> None:
    """Write {relative path: text} under `root`, making the folders."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def rows_by_file(report) -> list[tuple]:
    """(rule, key, GPU value, NPU value, GPU file, GPU line, NPU file, NPU line) of every finding,
    sorted; files by their base name."""
    def base(s):
        return s.path.replace("\\", "/").rsplit("/", 1)[-1] if s is not None and s.path else None

    return sorted((f.rule, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None, base(f.gpu),
                   f.gpu.line if f.gpu else None, base(f.npu), f.npu.line if f.npu else None)
                  for f in report.findings)


def script_pair(tmp_path, gpu: str, npu: str, name: str = "run.sh", extra: dict | None = None):
    """`gpu/NAME` and `npu/NAME` (and the `extra` files) written under tmp_path and diffed."""
    from scriptdiff.model import Options
    from scriptdiff.run.pipeline import diff_files

    write_files(tmp_path, {f"gpu/{name}": gpu, f"npu/{name}": npu, **(extra or {})})
    return diff_files([str(tmp_path / "gpu" / name)], [str(tmp_path / "npu" / name)], Options(use_cache=False))


def script_facts(text: str):
    """One launch script read for the GPU: its Extract, and {key: (value, line)} of its facts."""
    from scriptdiff.inputs.sources import Source
    from scriptdiff.lang import shell
    from scriptdiff.model import SideContext

    ex = shell.extract(Source(name="run.sh", data=text.encode()), SideContext("gpu"))
    return ex, {f.key: (f.value, f.line) for f in ex.facts}

from pathlib import Path

import pytest

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

"""Every sample output in README.md and docs/*.md is the real output of its command.

A sample is a fenced block right after a marker line naming the command, run from the
repository's top:

    <!-- sample: scriptdiff diff fixtures/example/gpu fixtures/example/npu -->
    ```
    == hyperparameters ==...
    ...
    2 error(s), 0 warning(s), 1 info; ...
    ```

A block is the output, whole, or abridged: a line `...` stands for any number of lines left
out. Each other line must be a line of the real output, in order, and lines with no `...`
between them must follow each other there; without a `...` first, the sample starts where
the output starts, and without one last, it ends where the output ends. A line may end in `…` (U+2026) to say it is cut:
the real line then starts with the rest. Text output is taken at 100 columns, without
colour. After changing an output on purpose, rewrite the whole (not abridged) samples:

    .venv/bin/python tests/test_doc_samples.py --write

(an abridged sample is checked, never rewritten: shorten it again by hand).
"""
from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- sample: (?P<cmd>.+?) -->$")
WIDTH = 100


def samples(path: Path) -> list[tuple[int, str, list[str], int, int]]:
    """(marker line, command, block lines, first and last line index of the block body)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out = []
    for i, line in enumerate(lines):
        m = MARKER.match(line.strip())
        if not m:
            continue
        assert i + 1 < len(lines) and lines[i + 1].startswith("```"), f"{path.name}:{i + 1}: a sample marker " \
                                                                       f"must be followed by a fence"
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        out.append((i + 1, m.group("cmd"), lines[i + 2:end], i + 2, end))
    return out


def run(cmd: str) -> list[str]:
    """The command's standard output, as lines (scriptdiff in process, from the repository top)."""
    import contextlib
    import io
    import os

    argv = shlex.split(cmd)
    assert argv[0] == "scriptdiff", f"a sample runs scriptdiff, not {argv[0]}"
    sys.path.insert(0, str(ROOT))
    from scriptdiff.cli import main

    here = os.getcwd()
    env = {k: os.environ.get(k) for k in ("COLUMNS", "NO_COLOR", "SCRIPTDIFF_NO_RUN_MEMO")}
    os.environ.update(COLUMNS=str(WIDTH), NO_COLOR="1", SCRIPTDIFF_NO_RUN_MEMO="1")
    buf, err = io.StringIO(), io.StringIO()
    try:
        os.chdir(ROOT)
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            main(argv[1:] + ["--no-cache"] if _takes_no_cache(argv) else argv[1:])
    finally:
        os.chdir(here)
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    text = buf.getvalue().rstrip("\n")
    return text.split("\n") if text else []


def _takes_no_cache(argv: list[str]) -> bool:
    return len(argv) > 1 and argv[1] in ("diff", "check", "hparams", "review", "baseline")


def mismatch(sample: list[str], real: list[str]) -> str | None:
    """None when `sample` is `real` or an abridgement of it, else what differs."""
    k = 0  # next real line that may match
    free = False  # the sample line may match anywhere from k on (after a `...`), else it must be line k
    for n, line in enumerate(sample):
        if line.strip() == "...":
            free = True
            continue
        cut = line.endswith("…")
        want = line[:-1] if cut else line

        def hits(j):
            return real[j].startswith(want) if cut else real[j] == want

        if free:
            j = next((j for j in range(k, len(real)) if hits(j)), None)
        else:
            j = k if k < len(real) and hits(k) else None
        if j is None:
            near = real[k] if k < len(real) else "(end of output)"
            return f"sample line {n + 1} {line!r} is not in the output (next real line: {near!r})"
        k, free = j + 1, False
    if not free and k != len(real) and sample and sample[-1].strip() != "...":
        return f"the output goes on after the sample's last line: {real[k]!r}"
    return None


CASES = [(p, s) for p in DOCS for s in samples(p)]


def test_every_doc_with_sample_output_has_its_marker():
    """The README's first sample is checked (the quick start's output), whole: every line of the
    bundled example's verdict is the real output's, the seed drift among them; and so is the
    README's `check` sample."""
    readme = [s for p, s in CASES if p.name == "README.md"]
    quick = next(s for s in readme if s[1] == "scriptdiff diff fixtures/example/gpu fixtures/example/npu")
    assert not any(x.strip() == "..." or x.endswith("…") for x in quick[2])
    assert any(x.startswith("error   SD207 seed ") for x in quick[2])
    assert any(s[1] == "scriptdiff check --config fixtures/example/scriptdiff.toml" for s in readme)


@pytest.mark.parametrize("path,sample", CASES, ids=[f"{p.name}:{s[0]}" for p, s in CASES])
def test_sample_is_the_real_output(path, sample):
    line, cmd, block, _a, _b = sample
    why = mismatch(block, run(cmd))
    assert why is None, f"{path.name}:{line}: `{cmd}`: {why} (tests/test_doc_samples.py --write rewrites whole samples)"


def test_mismatch_reads_abridged_samples():
    real = ["a", "b", "c", "d"]
    assert mismatch(["a", "...", "d"], real) is None
    assert mismatch(["a", "b", "c", "d"], real) is None
    assert mismatch(["b…", "c"], ["x", "bee", "c"]) is not None  # no `...` at the start: must be first
    assert mismatch(["...", "b…", "c", "..."], ["x", "bee", "c", "d"]) is None
    assert mismatch(["a", "c"], real) is not None  # no `...` between: must be consecutive
    assert mismatch(["a", "b"], real) is not None  # the output goes on
    assert mismatch(["a", "...", "e"], real) is not None


def write() -> None:
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").split("\n")
        for _line, cmd, block, a, b in reversed(samples(path)):
            if any(x.strip() == "..." or x.endswith("…") for x in block):
                continue  # abridged: checked, never rewritten
            lines[a:b] = run(cmd)
        path.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__" and "--write" in sys.argv:
    write()

"""Every sample output in README.md and docs/*.md is the real output of its command.

A sample is a fenced block right after a marker line naming the command, run from the
repository's top:

    <!-- sample: scriptdiff diff fixtures/example/gpu fixtures/example/npu -->
    ```
    == hyperparameters ==...
    ...
    2 error(s), 0 warning(s), 1 info; ...
    ```

A marker may say how the command runs, in parentheses before the colon, clauses separated by
commas:

    in DIR              run from DIR (relative to the repository's top), or from $TMP, a fresh
                        folder
    after python ARGS   first run `python ARGS` there (a setup step: write logs, make a link)
    file PATH           first write the document's previous fenced block to PATH there (only
                        in $TMP): the sample runs on the very text the reader sees
    stderr              standard error too, interleaved as it was printed
    terminal N          on a terminal N columns wide: standard output and error are one
                        terminal (both, interleaved; what a report does on a terminal), its
                        colours dropped

and the command may be `transcript`: the block is then a terminal session, each `$ COMMAND`
line followed by that command's output (standard error included; `; echo "exit $?"` after a
command adds the line `exit N`); or `python`: the output of the document's previous
```python block, run as a script from the repository's top. `$TMP` in a command or a setup
step is the fresh folder, and is written `$TMP` again in the output.

A block is the output, whole, or abridged: a line `...` stands for any number of lines left
out. Each other line must be a line of the real output, in order, and lines with no `...`
between them must follow each other there; without a `...` first, the sample starts where
the output starts, and without one last, it ends where the output ends. A line may end in `…` (U+2026) to say it is cut:
the real line then starts with the rest; blanks at the end of a line do not count. Text
output is taken at 100 columns, without
colour, off a terminal (unless `terminal N`). After changing an output on purpose, rewrite the
whole (not abridged) samples:

    .venv/bin/python tests/test_doc_samples.py --write

(an abridged sample is checked, never rewritten: shorten it again by hand).

Which blocks are outputs: `OUTPUTS` below lists, per document, how many fenced blocks without
a language are output samples; every one of them must carry a marker (a block that is a format
or a command list has a language: `sh`, `yaml`, `toml`, `text`).
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- sample(?: \((?P<how>.*?)\))?: (?P<cmd>.+?) -->$")
WIDTH = 100
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class Sample:
    line: int  # the marker's line (1-based)
    cmd: str
    block: list[str]
    start: int  # first and last line index of the block's body
    end: int
    how: dict = field(default_factory=dict)  # in, after, file, stderr, terminal
    previous: dict = field(default_factory=dict)  # the document's last fenced block of each language before it
    last: str = ""  # the fenced block right before the marker (`file PATH`)


def fences(lines: list[str]) -> list[tuple[int, int, str]]:
    """(opening line index, closing line index, language) of every fenced block."""
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
            assert end is not None, f"a fence opened at line {i + 1} is never closed"
            out.append((i, end, lines[i][3:].strip()))
            i = end + 1
        else:
            i += 1
    return out


def parse_how(text: str | None) -> dict:
    how: dict = {}
    for clause in (c.strip() for c in (text or "").split(", ") if c.strip()):
        word, _, rest = clause.partition(" ")
        if word in ("in", "after", "file", "terminal"):
            how.setdefault(word, []).append(rest)
        elif word == "stderr":
            how["stderr"] = True
        else:
            raise AssertionError(f"unknown sample clause {clause!r}")
    return how


def samples(path: Path) -> list[Sample]:
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks = fences(lines)
    out = []
    for i, line in enumerate(lines):
        m = MARKER.match(line.strip())
        if not m:
            continue
        assert i + 1 < len(lines) and lines[i + 1].startswith("```"), f"{path.name}:{i + 1}: a sample marker " \
                                                                       f"must be followed by a fence"
        end = next(e for s, e, _ in blocks if s == i + 1)
        previous = {lang: "\n".join(lines[s + 1:e]) + "\n" for s, e, lang in blocks if e < i}
        last = next(("\n".join(lines[s + 1:e]) + "\n" for s, e, _ in reversed(blocks) if e < i), "")
        out.append(Sample(i + 1, m.group("cmd"), lines[i + 2:end], i + 2, end, parse_how(m.group("how")), previous,
                          last))
    return out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _scriptdiff(argv: list[str], width: int, terminal: bool, stderr: bool) -> tuple[list[str], int]:
    """Run scriptdiff in process; (output lines, exit status)."""
    sys.path.insert(0, str(ROOT))
    from scriptdiff.cli import main

    env = {k: os.environ.get(k) for k in ("COLUMNS", "NO_COLOR", "SCRIPTDIFF_NO_RUN_MEMO", "CI")}
    os.environ.update(COLUMNS=str(width), NO_COLOR="1", SCRIPTDIFF_NO_RUN_MEMO="1")
    if terminal:
        os.environ["CI"] = "1"  # no progress bar: a transient frame is no output
    out = _Terminal() if terminal else io.StringIO()
    err = out if (terminal or stderr) else io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv + ["--no-cache"] if _takes_no_cache(argv) else argv)
    finally:
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    text = ANSI.sub("", out.getvalue()).rstrip("\n")
    return [x.rstrip() if terminal else x for x in text.split("\n")] if text else [], code


def _takes_no_cache(argv: list[str]) -> bool:
    return bool(argv) and argv[0] in ("diff", "check", "hparams", "review", "baseline") \
        and "--no-cache" not in argv


def run_sample(s: Sample) -> list[str]:
    """The sample's command's output, as lines, run as its marker says."""
    with tempfile.TemporaryDirectory(prefix="scriptdiff-doc-") as tmp:
        def sub(x: str) -> str:
            return x.replace("$TMP", tmp)

        where = sub((s.how.get("in") or ["."])[0])
        cwd = Path(where) if os.path.isabs(where) else ROOT / where
        for rel in s.how.get("file", []):
            assert where == tmp, "file PATH writes into $TMP only"
            target = cwd / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(s.last, encoding="utf-8")
        for step in s.how.get("after", []):
            words = [sub(w) for w in shlex.split(step)]
            assert words[0] == "python", f"a setup step runs python, not {words[0]}"
            subprocess.run([sys.executable, *words[1:]], cwd=cwd, check=True, capture_output=True,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
        width = int(s.how["terminal"][0]) if "terminal" in s.how else WIDTH
        here = os.getcwd()
        try:
            os.chdir(cwd)
            if s.cmd == "python":
                code = s.previous["python"]
                p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                                   env=dict(os.environ, PYTHONPATH=str(ROOT), SCRIPTDIFF_NO_RUN_MEMO="1"))
                assert p.returncode == 0, p.stderr
                lines = p.stdout.rstrip("\n").split("\n")
            elif s.cmd == "transcript":
                lines = []
                for line in s.block:
                    if line.startswith("$ "):
                        lines += [line] + _transcribed(line[2:], width, "terminal" in s.how, sub)
            else:
                argv = [sub(w) for w in shlex.split(s.cmd)]
                assert argv[0] == "scriptdiff", f"a sample runs scriptdiff, not {argv[0]}"
                lines = _scriptdiff(argv[1:], width, "terminal" in s.how, bool(s.how.get("stderr")))[0]
        finally:
            os.chdir(here)
        return [x.replace(tmp, "$TMP") for x in lines]


def _transcribed(command: str, width: int, terminal: bool, sub) -> list[str]:
    echo = '; echo "exit $?"'
    argv = [sub(w) for w in shlex.split(command.removesuffix(echo))]
    assert argv[0] == "scriptdiff", f"a transcript runs scriptdiff, not {argv[0]}"
    lines, code = _scriptdiff(argv[1:], width, terminal, True)
    return lines + ([f"exit {code}"] if command.endswith(echo) else [])


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

        def hits(j):  # trailing blanks are invisible in a document: they do not count
            return real[j].startswith(want) if cut else real[j].rstrip() == want.rstrip()

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


def test_every_output_block_has_its_marker():
    """A fenced block without a language is an output sample: each one carries a marker, so
    none can drift from the command it shows. (A command list, a configuration or a format is
    fenced with its language: sh, yaml, toml, ini, text.)"""
    bare = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").split("\n")
        for start, _end, lang in fences(lines):
            if lang == "" and not (start > 0 and MARKER.match(lines[start - 1].strip())) \
                    and "command section" not in "\n".join(lines[max(0, start - 2):start]):
                bare.append(f"{path.name}:{start + 1}")
    assert bare == [], f"output blocks without a sample marker: {bare}"


def test_the_readme_samples_are_there():
    """The README's first sample is checked (the quick start's output), whole: every line of the
    bundled example's verdict is the real output's, the seed drift among them; and so are the
    README's `check`, `env`, `curves` and library samples."""
    readme = [s for p, s in CASES if p.name == "README.md"]
    quick = next(s for s in readme if s.cmd == "scriptdiff diff fixtures/example/gpu fixtures/example/npu")
    assert not any(x.strip() == "..." or x.endswith("…") for x in quick.block)
    assert any(x.startswith("error   SD207 seed ") for x in quick.block)
    # the README's other samples moved with their sections to docs/ (issue 41)
    readme += [s for p, s in CASES if p.name in README_MOVED_TO]
    cmds = {s.cmd.split()[1] if s.cmd.startswith("scriptdiff ") else s.cmd for s in readme}
    assert {"diff", "check", "env", "curves", "python"} <= cmds
    terminal = [s for p, s in CASES if p.name == "terminal.md"]
    assert terminal and all("terminal" in s.how for s in terminal)


# the pages the README's sections moved to (issue 41): its samples with them
README_MOVED_TO = ("commands.md", "checks.md", "setups.md", "fix.md", "json.md", "review-page.md", "security.md",
                   "library.md", "rules.md", "speed.md", "install.md")


def test_the_readme_is_short_and_points_to_every_page():
    """The README is what a newcomer needs, at most 200 lines (issue 41); everything else is in
    docs/, and every page of docs/ is linked from it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert set(README_MOVED_TO) <= set(pages)
    assert [p for p in pages if f"](docs/{p})" not in text and f"](docs/{p}#" not in text] == []
    for line in ("python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/scriptdiff diff fixtures/example/gpu "
                 "fixtures/example/npu", "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && "
                 ".venv/bin/python -m pytest"):
        assert f"```sh\n{line}\n```" in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest\n" in ci


@pytest.mark.parametrize("path,sample", CASES, ids=[f"{p.name}:{s.line}" for p, s in CASES])
def test_sample_is_the_real_output(path, sample):
    why = mismatch(sample.block, run_sample(sample))
    assert why is None, (f"{path.name}:{sample.line}: `{sample.cmd}`: {why} (tests/test_doc_samples.py --write "
                         f"rewrites whole samples)")


def test_mismatch_reads_abridged_samples():
    real = ["a", "b", "c", "d"]
    assert mismatch(["a", "...", "d"], real) is None
    assert mismatch(["a", "b", "c", "d"], real) is None
    assert mismatch(["b…", "c"], ["x", "bee", "c"]) is not None  # no `...` at the start: must be first
    assert mismatch(["...", "b…", "c", "..."], ["x", "bee", "c", "d"]) is None
    assert mismatch(["a", "c"], real) is not None  # no `...` between: must be consecutive
    assert mismatch(["a", "b"], real) is not None  # the output goes on
    assert mismatch(["a", "...", "e"], real) is not None


def test_a_marker_reads_its_clauses():
    assert parse_how("in $TMP, after python gen.py $TMP x, stderr, terminal 120") == {
        "in": ["$TMP"], "after": ["python gen.py $TMP x"], "stderr": True, "terminal": ["120"]}
    with pytest.raises(AssertionError):
        parse_how("quietly")


def write() -> None:
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").split("\n")
        for s in reversed(samples(path)):
            if any(x.strip() == "..." or x.endswith("…") for x in s.block):
                continue  # abridged: checked, never rewritten
            lines[s.start:s.end] = run_sample(s)
        path.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__" and "--write" in sys.argv:
    write()

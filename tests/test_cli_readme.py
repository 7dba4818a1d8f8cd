"""The command section (docs/commands.md, once the README's) is generated from the real parsers,
so the two cannot drift.

The block between the two markers in docs/commands.md is what `readme_block()` builds from
`scriptdiff.cli.build_parser()`: one synopsis line per command (its positionals and its
--help line) and, for every option shared by several commands, which commands take it and
which refuse it with a reason. After changing a command's arguments, regenerate it:

    .venv/bin/python tests/test_cli_readme.py --write
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "docs" / "commands.md"  # the command section moved here from README.md (issue 41)
BEGIN = "<!-- command section: generated from the parsers by tests/test_cli_readme.py --write -->"
END = "<!-- end of the generated command section -->"

# options that several commands share, in the order the README lists them
SHARED = ("--rules", "--output", "--format", "--select", "--ignore", "--severity", "--quiet", "--baseline", "--no-cache",
          "--jobs", "--max-bytes", "--progress", "--show-masked", "--full-values", "--color")


def _subparsers():
    sys.path.insert(0, str(ROOT))
    from scriptdiff.cli import COMMANDS, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return COMMANDS, sub.choices


def _positionals(p: argparse.ArgumentParser) -> str:
    words = []
    for a in p._actions:
        if a.option_strings or a.help == argparse.SUPPRESS:
            continue
        m = a.metavar or a.dest.upper()
        words.append({"+": f"{m} [{m} ...]", "?": f"[{m}]", "*": f"[{m} ...]"}.get(a.nargs, m))
    return " ".join(words)


def _names(p: argparse.ArgumentParser, option: str) -> str | None:
    """How `p` spells `option` (with its short form), or None when it does not take it or
    only parses it to refuse it (hidden from --help)."""
    a = p._option_string_actions.get(option)
    if a is None or a.help == argparse.SUPPRESS:
        return None
    return ", ".join(sorted(a.option_strings, key=lambda s: (s.startswith("--"), s)))


def readme_block() -> str:
    from scriptdiff.commands.common import NOT_FOR

    commands, parsers = _subparsers()
    import importlib

    def sides(name: str, module: str) -> str:  # a command's own synopsis of its sides, else its positionals
        return getattr(importlib.import_module(f"scriptdiff.commands.{module}"), "SYNOPSIS", None) \
            or _positionals(parsers[name])

    synopsis = [(f"scriptdiff {name} {sides(name, module)}".rstrip(), help_)
                for name, (module, help_) in commands.items() if name in parsers]
    width = max(len(s) for s, _ in synopsis) + 2
    lines = [BEGIN, "", "```"]
    lines += [f"{s.ljust(width)}{h}" for s, h in synopsis]
    lines += ["```", "",
              "Options shared by several commands (`scriptdiff COMMAND --help` lists each command's own). "
              "A shared option that cannot apply to a command is refused with the reason, never ignored:", "",
              "| option | taken by | refused (with the reason) by |", "|---|---|---|"]
    for option in SHARED:
        spelled = sorted({n for n in (_names(parsers[c], option) for c in parsers) if n})
        takers = [c for c in parsers if _names(parsers[c], option)]
        refusers = [c for c in parsers if option in NOT_FOR.get(c, {})]
        if not takers:
            continue
        lines.append(f"| `{'`, `'.join(max(spelled, key=len).split(', '))}` | {', '.join(takers)} | "
                     f"{', '.join(refusers) or '-'} |")
    lines += ["", END]
    return "\n".join(lines)


def current_block(text: str) -> str | None:
    if BEGIN not in text or END not in text:
        return None
    return text[text.index(BEGIN):text.index(END) + len(END)]


def test_readme_command_section_is_the_parsers():
    text = README.read_text(encoding="utf-8")
    block = current_block(text)
    assert block is not None, f"docs/commands.md lacks the generated command section ({BEGIN})"
    assert block == readme_block(), "README's command section drifted from the parsers: run " \
                                    "`.venv/bin/python tests/test_cli_readme.py --write`"


def test_every_command_in_help_is_in_the_readme():
    """Belt and braces: each command `scriptdiff --help` lists has its synopsis line."""
    import contextlib
    import io

    from scriptdiff.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--help"]) == 0
    listed = [ln.split()[0] for ln in out.getvalue().split("COMMAND\n", 1)[1].split("\n\n")[0].splitlines()
              if ln.startswith("    ") and not ln.startswith("     ")]
    block = current_block(README.read_text(encoding="utf-8")) or ""
    assert listed and all(f"scriptdiff {name} " in block or f"scriptdiff {name}\n" in block for name in listed)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        print(readme_block())
        sys.exit(0)
    text = README.read_text(encoding="utf-8")
    old = current_block(text)
    if old is None:
        sys.exit(f"docs/commands.md has no {BEGIN} ... {END} section to replace")
    README.write_text(text.replace(old, readme_block()), encoding="utf-8")
    print("docs/commands.md: command section regenerated")

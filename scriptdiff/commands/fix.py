"""scriptdiff fix GPU NPU"""
from __future__ import annotations

import json
import sys

from ..report.values import safe
from .common import add_engine_arguments, options_from, split_sides

DESCRIPTION = """Bring the NPU side back to the GPU side, keeping each file as it was written.

The inputs are diff's (two files, two folders, or one file or folder whose GPU run and NPU
run differ). Each chosen finding's NPU value becomes the GPU value, edited where it is
written (the literal in a Python call, a module constant, an argparse default, a launch
flag or the variable it came through, a YAML/JSON/TOML key), in the NPU spelling where the
NPU spells it its own way (rules/fix.yaml); a flag or key the GPU side has and the NPU side
not is added next to its neighbours, one the NPU side has alone is removed. Python is edited
through libcst, launch scripts by tree-sitter byte spans, configs by span edits: comments,
order and quoting stay. What is not safe is refused with the reason: computed or derived
values, values read from the environment or written at two places, files outside the NPU
side, datasets, weights, environments and libraries (what to do is said). The edits are
checked by running diff again before anything is written: each fixed finding is gone, every
edited file parses and the masked substitutions are unchanged. A file with merge-conflict
markers is never edited, nor one with uncommitted changes in a git work tree unless --force.

By default the warning and error findings are fixed; --select names the rules to fix (info
ones too), --ignore leaves some out. --diff prints the unified diff and writes nothing (exit
status 1 when it would change something, 0 when nothing is fixable, as `ruff check --diff`).
Without --diff the exit status is 0 when every chosen finding was fixed, 1 when some were
not. -f json lists every finding with whether it was fixed and, if not, why (docs/fix.md)."""


SWITCHES = {  # fix's own on/off options
    "--diff": "print the unified diff of the fixes and write nothing (exit 1 when it would change something)",
    "--force": "also edit files with uncommitted changes in a git work tree",
    "--git": "refused: a git revision cannot be written (check it out first)",
}


SYNOPSIS = "GPU [NPU]"


def add_arguments(p) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="GPU then NPU (file or folder; the NPU side is edited in place); one path: its NPU run is "
                        "edited")
    for name, help_ in SWITCHES.items():
        p.add_argument(name, action="store_true", help=help_)
    p.add_argument("--repo", default=".", help="the git repository that REV:path would name (refused too)")
    p.add_argument("--format", "-f", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument("--select", metavar="CODES",
                   help="fix only these rule codes or prefixes, comma-separated (default: every warning and error)")
    p.add_argument("--ignore", metavar="CODES", help="do not fix these rule codes or prefixes, comma-separated")
    p.add_argument("--profile", metavar="NAME",
                   help="also check against a profile (alignment: docs/fidelity.md) and add what the NPU launch "
                        "script misses (an export line)")
    add_engine_arguments(p)


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast

    gpu, npu = split_sides(args.paths, "fix", one=True, several=False)
    opts = options_from(args)
    result = api.fix(gpu[0], npu[0] if npu else None, opts, write=not args.diff, force=args.force, git=args.git, repo=args.repo)
    for e in result.errors:
        label = "note: " if e.is_note else ""
        print(f"scriptdiff: {label}{safe(e.path)}: {safe(e.message)}", file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n")
    elif args.diff:
        sys.stdout.write(safe_diff(result.unified(safe)))
        print(f"scriptdiff: {summary(result, would=True)}", file=sys.stderr)
    else:
        sys.stdout.write(text(result))
    sys.stdout.flush()
    return result.exit_code(args.diff)


def safe_diff(text: str) -> str:
    return "".join(safe(line.rstrip("\n")) + "\n" for line in text.splitlines(keepends=True))


def text(result) -> str:
    out = [f"scriptdiff fix: GPU {safe(result.gpu)}  vs  NPU {safe(result.npu)}"]
    for d in result.decisions:
        f = d.finding
        if d.fixed:
            out.append(f"fixed      {f.rule} {safe(f.key)}  ({d.action})")
            for e in d.edits:
                line, old, new = result.edit_shown(e)
                out.append(f"    {safe(e.path)}:{line}  {_shown(old)} -> {_shown(new)}")
        elif d.chosen:
            out.append(f"not fixed  {f.rule} {safe(f.key)}  {safe(d.reason or '')}")
    out.append(summary(result))
    return "\n".join(out) + "\n"


def _shown(s: str) -> str:
    s = s.strip("\n")
    if not s:
        return "(nothing)"
    one = " ".join(s.split())
    return safe(one if len(one) <= 80 else one[:77] + "...")


def summary(result, would: bool = False) -> str:
    n_fixed = len(result.fixed)
    chosen = [d for d in result.decisions if d.chosen]
    left = len(chosen) - n_fixed
    skipped = len(result.decisions) - len(chosen)
    files = sorted(result.files)
    verb = "would fix" if would else "fixed"
    line = f"{verb} {n_fixed} of {len(chosen)} chosen finding(s)"
    if left:
        line += f", {left} not fixed (the reasons are above)" if not would else f", {left} not (fix -f json says why)"
    if skipped:
        line += f"; {skipped} not chosen"
    if files:
        line += f"; {len(files)} file(s) {'would change' if would else 'changed'}: {', '.join(safe(f) for f in files[:4])}"
        line += " ..." if len(files) > 4 else ""
    masked = result.masked
    line += f"; {masked[1]} expected substitution(s) masked, as before" if masked[0] == masked[1] else \
        f"; masked substitutions {masked[0]} -> {masked[1]}"
    return line


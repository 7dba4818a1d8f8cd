"""scriptdiff review PATCH: the Beyond Compare review of a GPU->NPU port, done by the tool."""
from __future__ import annotations

from .common import add_engine_arguments, add_output_arguments, emit, prepare

DESCRIPTION = """Review a unified diff (a pull request) that ports GPU files to NPU.

The patched files are found under --root (default: the current folder) as `git apply -p`
finds them (leading components stripped, or below the root when the patch was made in a
subfolder, e.g. `cd setup && diff -ru gpu npu`), read whole, and compared as `scriptdiff diff`
compares the two sides: masks, structural diff, settings, and a launch script's program and
configs, each side with the patched texts it has. What lies in a changed hunk is reported,
under its own rule (so --select/--ignore mean what they mean for diff), after a summary of
the hunks that change semantics, each under the rule of its most severe difference (SD156
error, SD153 warning, SD157 info); --by-hunk reports those hunks as the findings instead.
Files not under the root are compared on the hunks' own lines (Python dedented).

PATCH may be `-` for standard input, e.g. `git diff main...npu-port | scriptdiff review -`."""


def add_arguments(p) -> None:
    p.add_argument("patch", metavar="PATCH", help="unified diff file, or - for standard input")
    p.add_argument("--root", default=".", help="folder the patch's paths are relative to (default: .)")
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    p.add_argument("--by-hunk", action="store_true",
                   help="one finding per changed hunk (SD156/SD153/SD157), listing the differences in it")
    add_engine_arguments(p)
    add_output_arguments(p)


def run(args) -> int:
    api, opts = prepare(args)
    data, name = api.read_patch(args.patch, opts)  # a regular file or standard input, under --max-bytes
    return emit(api.review(data, name, opts, root=args.root, by_hunk=args.by_hunk), args)

"""scriptdiff hparams GPU... -- NPU...: the effective hyperparameter table, side by side."""
from __future__ import annotations

import sys

from .common import add_output_arguments, fail, options_from, render_options, safe, use_color

DESCRIPTION = """The effective hyperparameter table of both sides, side by side.

Each side may be several files of any kind: launch scripts (.sh), configs (.yaml/.yml/
.json), Megatron training logs (.log) and Python scripts. Give the GPU files, then `vs`
(or `--npu`) and the NPU files; with exactly two paths, the first is GPU and the second
NPU. Every key on the pre-check list is shown (lr, global and micro batch size, DP/TP/PP/
CP/EP, sequence parallel, warm-up, num_layers, hidden_size, seq_length, use_flash_attn,
params_dtype, seed) plus every other key found, equal or not, each with its origin:
explicit at file:line, via a variable, a framework default, or derived. A training log
outranks scripts, which outrank configs. --format json gives the findings contract plus a
"table" list of all rows."""

def add_arguments(p) -> None:
    p.add_argument("paths", nargs="+", metavar="FILE", help="GPU files, then `vs` (or --npu) and NPU files")
    p.add_argument("--npu", nargs="+", metavar="FILE", default=None, help="the NPU-side files")
    p.add_argument("--all-checks", action="store_true", help="also list environment variables found in scripts")
    add_output_arguments(p)


def split_sides(paths: list[str], npu: list[str] | None) -> tuple[list[str], list[str]] | None:
    if npu:
        return list(paths), list(npu)
    if "vs" in paths:
        i = paths.index("vs")
        return paths[:i], paths[i + 1:]
    if len(paths) == 2:
        return [paths[0]], [paths[1]]
    return None


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast

    sides = split_sides(args.paths, args.npu)
    if sides is None or not sides[0] or not sides[1]:
        return fail("hparams expects GPU files and NPU files: `hparams gpu.sh npu.sh` or "
                    "`hparams a.sh ds.json vs b.sh ds.json`")
    report = api.hparams(sides[0], sides[1], options_from(args), include_env=args.all_checks)
    for e in report.errors:
        print(f"scriptdiff: {safe(e.path)}: {safe(e.message)}", file=sys.stderr)
    for spec in args.output or []:
        fmt, _, path = spec.partition("=")
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(api.render_table(report, fmt, **render_options(args, False)))
        except (OSError, ValueError) as e:
            return fail(f"cannot write {path}: {e}")
    sys.stdout.write(api.render_table(report, args.format, **render_options(args, use_color(args))))
    return report.exit_code()

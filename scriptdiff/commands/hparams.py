"""scriptdiff hparams GPU... -- NPU...: the effective hyperparameter table, side by side."""
from __future__ import annotations

import sys

from .common import (OutputError, add_engine_arguments, add_output_arguments, errors_on_stderr, fail, options_from,
                     output_targets, print_errors, render_options, use_color, write_text)

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
    add_engine_arguments(p)
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
    try:
        targets = output_targets(args)
    except OutputError as e:
        return fail(str(e))
    report = api.hparams(sides[0], sides[1], options_from(args), include_env=args.all_checks)
    on_stderr = errors_on_stderr(args)
    if on_stderr:  # else the text table lists them: each is printed once
        print_errors(report)
    for fmt, path in targets:
        failed = write_text(path, api.render_table(report, fmt, **render_options(args, False)))
        if failed is not None:
            return failed
    shown = render_options(args, use_color(args)) | ({"list_errors": False} if on_stderr else {})
    sys.stdout.write(api.render_table(report, args.format, **shown))
    return report.exit_code()

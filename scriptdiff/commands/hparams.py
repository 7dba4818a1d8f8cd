"""scriptdiff hparams GPU... vs NPU...: the effective hyperparameter table, side by side."""
from __future__ import annotations

import sys

from .common import (OutputError, add_engine_arguments, add_output_arguments, deprecated, errors_on_stderr, exit_status, fail,
                     options_from, output_targets, print_errors, render_options, split_sides, use_color, write_text)

DESCRIPTION = """The effective hyperparameter table of both sides, side by side.

  scriptdiff hparams GPU NPU
  scriptdiff hparams GPU... vs NPU...

Each side may be several files of any kind: launch scripts (.sh), configs (.yaml/.yml/
.json), Megatron training logs (.log) and Python scripts, read together as one run; a
folder is read through its launch script (with the program it starts and the configs it
references, as `diff` reads a folder's run). Every key on the pre-check list is shown (lr,
global and micro batch size, DP/TP/PP/CP/EP, sequence parallel, warm-up, num_layers,
hidden_size, seq_length, use_flash_attn, params_dtype, seed) plus every other key found,
equal or not, each with its origin: explicit at file:line, via a variable, a framework
default, or derived. A training log outranks scripts, which outrank configs. --format json
gives the findings contract plus a "table" list of all rows."""

SYNOPSIS = "GPU NPU | GPU... vs NPU..."


def add_arguments(p) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="GPU then NPU; several files a side: GPU... vs NPU...")
    p.add_argument("--npu", nargs="+", metavar="FILE", default=None,
                   help="deprecated: the NPU-side files (write GPU... vs NPU...)")
    p.add_argument("--all-checks", action="store_true", help="also list environment variables found in scripts")
    add_engine_arguments(p)
    add_output_arguments(p)


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast

    if args.npu:  # the old spelling: GPU files, then --npu and the NPU files
        deprecated("`hparams GPU... --npu NPU...`", "`hparams GPU... vs NPU...`")
        sides = (list(args.paths), list(args.npu))
    else:
        sides = split_sides(args.paths, "hparams")
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
    shown = render_options(args, use_color(args), sys.stdout.isatty()) | ({"list_errors": False} if on_stderr else {})
    if args.quiet:
        sys.stdout.write(api.render(report, "text", quiet=True, **shown))
    else:
        sys.stdout.write(api.render_table(report, args.format, **shown))
    return exit_status(report.exit_code(), args)

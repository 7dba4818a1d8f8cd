"""scriptdiff weights fingerprint PATH | scriptdiff weights GPU NPU"""
from __future__ import annotations

import sys

from .common import (OutputError, add_output_arguments, add_progress_argument, check_outputs, emit, fail,
                     options_from, output_targets, split_sides, write_text)
from .data import add_fanout_arguments, allow_intermixed, fanout_of, progress_of

DESCRIPTION = """Fingerprint or compare initial weights (check 6: same starting point).

  scriptdiff weights fingerprint CHECKPOINT [-o weights.json]
      Hash every tensor (blake3 of its raw bytes) and write a small fingerprint: name,
      dtype, shape, hash. Run it where the checkpoint lives. Here -o is the fingerprint file
      (default: standard output).

  scriptdiff weights GPU NPU
      Compare two checkpoints or fingerprints tensor by tensor: missing and extra tensors,
      shape, dtype, exact equality. When both checkpoints are at hand, differing tensors
      are also measured: max |diff|, relative L2 ||a-b||/||a||, cosine (GPU is the
      reference). Text output prints a summary and the worst tensors after the report
      header; --format json lists every finding. The comparison is reported like `scriptdiff
      diff`: --baseline, --select/--ignore, every --format and --output FORMAT=FILE, exit
      status 0/1/2.

Checkpoints: a .safetensors file; a folder of shards with model.safetensors.index.json;
PyTorch .bin/.pt and Megatron mp_rank_*/model_optim_rng.pt only through
torch.load(weights_only=True) when torch is installed (pip install 'scriptdiff[torch]').
Nothing is ever unpickled any other way."""


SYNOPSIS = "GPU NPU | fingerprint CHECKPOINT"


def add_arguments(p) -> None:
    allow_intermixed(p)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="`fingerprint CHECKPOINT`, or the GPU and NPU sides (checkpoint file/folder or fingerprint)")
    p.add_argument("--map", action="append", default=[], metavar="PATTERN=REPLACEMENT",
                   help="rename NPU tensors before pairing (regular expression; repeatable), e.g. '^module\\.='")
    p.add_argument("--map-file", metavar="FILE", help="JSON object of NPU tensor name -> GPU tensor name")
    p.add_argument("--top", type=int, default=10, metavar="N", help="text output: worst tensors shown (default 10)")
    p.add_argument("--all", action="store_true", help="text output: list every finding, not only the worst")
    add_progress_argument(p)
    add_fanout_arguments(p)
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    add_output_arguments(p)


def run(args) -> int:
    bar = progress_of(args, "hashing tensors")
    fanout = fanout_of(args)
    if args.paths[0] in ("fingerprint", "merge"):
        if args.quiet or args.severity:
            return fail(f"weights {args.paths[0]} writes a fingerprint, no findings: --quiet and --severity apply "
                        "to a comparison")
        try:
            targets = output_targets(args, ("json",), "weights fingerprint",
                                     "a fingerprint is the JSON file `scriptdiff weights` and `check` read")
        except OutputError as e:
            return fail(str(e))
        if len(targets) > 1:
            return fail(f"weights {args.paths[0]} writes one file: give -o once")
        out = targets[0][1] if targets and targets[0][1] != "-" else None
        # what api.weights_fingerprint / api.weights_merge call, without importing the library's
        # face: a fingerprint costs its hashing (issue 42)
        from ..checks import entry  # lazy: keeps a fingerprint light
        if args.paths[0] == "merge":
            if args.shard or fanout is not None:
                return fail("weights merge joins part files: --shard and --executor belong to the "
                            "`weights fingerprint` runs that made them")
            return _write_fingerprint(entry.weights_merge(args.paths[1:]), out)
        if len(args.paths) != 2:
            return fail("weights fingerprint takes one checkpoint file or folder")
        return _write_fingerprint(entry.weights_fingerprint(args.paths[1], progress=bar, shard=args.shard,
                                                            fanout=fanout), out)
    if args.shard:
        return fail("--shard fingerprints one part of a checkpoint: use it with `weights fingerprint`")
    from .. import api  # lazy: keeps --help fast
    gpu, npu = split_sides(args.paths, "weights", several=False)
    rename = api.renamer(args.map, args.map_file)
    failed = check_outputs(args)
    if failed is not None:
        return failed
    opts = options_from(args)
    if args.baseline:
        opts.baseline = api.load_baseline(args.baseline)
    report = api.weights(gpu[0], npu[0], opts, rename=rename, progress=bar, fanout=fanout)
    if args.format != "text" or args.all or report.errors or "weights" not in report.details:
        return emit(report, args)
    return emit(api.weights_overview(report, max(0, args.top)), args, full=report)


def _write_fingerprint(fp: dict, out: str | None) -> int:
    from ..checks import entry  # lazy: keeps --help fast

    text = entry.fingerprint_text(fp)
    if out:
        failed = write_text(out, text)
        if failed is not None:
            return failed
        part = f"part {fp['part']} of {fp['parts']}: " if "scriptdiff_part" in fp else ""
        print(f"scriptdiff: {part}{len(fp['tensors']):,} tensor(s) -> {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0

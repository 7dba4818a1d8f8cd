"""scriptdiff weights fingerprint PATH | scriptdiff weights GPU NPU"""
from __future__ import annotations

import sys

from .common import add_output_arguments, emit, fail, options_from
from .data import ProgressBar, allow_intermixed, progress_wanted

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


def add_arguments(p) -> None:
    allow_intermixed(p)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="`fingerprint CHECKPOINT`, or the GPU and NPU sides (checkpoint file/folder or fingerprint)")
    p.add_argument("--map", action="append", default=[], metavar="PATTERN=REPLACEMENT",
                   help="rename NPU tensors before pairing (regular expression; repeatable), e.g. '^module\\.='")
    p.add_argument("--map-file", metavar="FILE", help="JSON object of NPU tensor name -> GPU tensor name")
    p.add_argument("--top", type=int, default=10, metavar="N", help="text output: worst tensors shown (default 10)")
    p.add_argument("--all", action="store_true", help="text output: list every finding, not only the worst")
    p.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    add_output_arguments(p)


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast
    from ..checks import weights  # lazy: keeps --help fast

    bar = ProgressBar(progress_wanted(args.progress), "hashing tensors")
    if args.paths[0] == "fingerprint":
        if len(args.paths) != 2:
            return fail("weights fingerprint takes one checkpoint file or folder")
        if len(args.output) > 1:
            return fail("weights fingerprint writes one file: give -o once")
        return _write_fingerprint(args, api.weights_fingerprint(args.paths[1], progress=bar))
    if len(args.paths) != 2:
        return fail("weights takes `fingerprint CHECKPOINT` or two sides: GPU NPU")
    try:
        rename = (weights.Renamer.from_file(args.map_file, args.map) if args.map_file
                  else (weights.Renamer(args.map) if args.map else None))
    except ValueError as e:
        return fail(str(e))
    opts = options_from(args)
    if args.baseline:
        opts.baseline = api.load_baseline(args.baseline)
    report = api.weights(args.paths[0], args.paths[1], opts, rename=rename, progress=bar)
    summary = report.details.get("weights")
    if args.format != "text" or args.all or report.errors or summary is None:
        return emit(report, args)
    return emit(summarized(report, summary, max(0, args.top)), args, full=report)


def _write_fingerprint(args, fp: dict) -> int:
    from ..checks import weights  # lazy: keeps --help fast

    text = weights.dumps(fp)
    if args.output:
        try:
            with open(args.output[0], "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            return fail(f"cannot write {args.output[0]}: {e.strerror or e}")
        print(f"scriptdiff: {len(fp['tensors'])} tensor(s) -> {args.output[0]}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def summarized(report, summary, top: int):
    """The text view for big checkpoints: the overview (counts, the worst tensors) under the
    header, then at most `top` findings per rule; the exit status is the full report's."""
    from ..checks.weights import stats_rules  # lazy: keeps --help fast
    from ..model import Report  # lazy: keeps --help fast

    measured = stats_rules()
    kept, left = [], 0
    per_rule: dict[str, int] = {}
    worst_keys = {f.key for f in summary.worst[:top]}
    for f in report.findings:
        if f.rule in measured:
            if f.key in worst_keys:
                kept.append(f)
            else:
                left += 1
            continue
        per_rule[f.rule] = per_rule.get(f.rule, 0) + 1
        if per_rule[f.rule] <= top:
            kept.append(f)
        else:
            left += 1
    overview = summary_text(summary, top).splitlines()
    if left:
        overview.append(f"({left} more finding(s) not shown; --all or --format json lists them)")
    return Report(gpu=report.gpu, npu=report.npu, findings=kept, masked=report.masked, errors=report.errors,
                  compared=report.compared, check_order=report.check_order, overview=overview)


# rule name -> how the overview counts its findings
NAMES = {"tensor-missing-on-npu": "missing on NPU", "tensor-extra-on-npu": "extra on NPU",
         "tensor-shape-differs": "shape differs", "tensor-dtype-differs": "dtype differs",
         "tensor-values-differ": "values differ"}


def summary_text(summary, top: int) -> str:
    from ..rules import code  # lazy: keeps --help fast

    words = {code(name): w for name, w in NAMES.items()}
    lines = [f"weights: GPU {summary.gpu_tensors} tensor(s), NPU {summary.npu_tensors}; "
             f"{summary.identical} identical"
             + "".join(f", {n} {words.get(rule, rule)}" for rule, n in sorted(summary.by_rule.items()))]
    shown = [f for f in summary.worst[:top] if "rel_l2" in f.extra]
    if shown:
        lines.append(f"worst tensors (by relative L2, GPU as reference; {len(shown)} of {len(summary.worst)}):")
        for f in shown:
            x = f.extra
            rel = "n/a" if x.get("rel_l2") is None else f"{x['rel_l2']:.3g}"
            cos = "n/a" if x.get("cosine") is None else f"{x['cosine']:.6f}"
            mx = "n/a" if x.get("max_abs_diff") is None else f"{x['max_abs_diff']:.3g}"
            lines.append(f"  {f.key[len('weights:'):]}  rel L2 {rel}  max |diff| {mx}  cosine {cos}")
    return "\n".join(lines) + "\n"

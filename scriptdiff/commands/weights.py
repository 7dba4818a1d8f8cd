"""scriptdiff weights fingerprint PATH | scriptdiff weights GPU NPU"""
from __future__ import annotations

import sys

from ..checks.safetensors_io import WeightsError
from ..model import Report
from .baseline import load_baseline_into
from .common import add_output_arguments, emit, fail, options_from, use_color, write_outputs
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
    if args.paths[0] == "fingerprint":
        return _fingerprint(args, args.paths[1:])
    if len(args.paths) != 2:
        return fail("weights takes `fingerprint CHECKPOINT` or two sides: GPU NPU")
    return _compare(args, *args.paths)


def _fingerprint(args, paths: list[str]) -> int:
    from ..checks import weights  # lazy: keeps --help fast

    if len(paths) != 1:
        return fail("weights fingerprint takes one checkpoint file or folder")
    if len(args.output) > 1:
        return fail("weights fingerprint writes one file: give -o once")
    try:
        ck = weights.open_checkpoint(paths[0])
        if not ck.has_data:
            return fail(f"{paths[0]}: is already a weights fingerprint")
        bar = ProgressBar(progress_wanted(args.progress), "hashing tensors")
        bar.start(sum(r.nbytes for r in ck.tensors))
        try:
            fp = weights.fingerprint(ck, bar.advance)
        finally:
            bar.close()
    except WeightsError as e:
        return fail(str(e))
    except OSError as e:
        return fail(f"{paths[0]}: cannot read: {e.strerror or e}")
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


def _compare(args, gpu: str, npu: str) -> int:
    report, summary, status = build_report(args, gpu, npu)
    if report is None:
        return status
    if args.format != "text" or args.all or report.errors:
        return emit(report, args)
    return _emit_summarized(report, summary, args)


def build_report(args, gpu: str, npu: str):
    """(Report, Summary, 0) for `weights GPU NPU`, through the pipeline `diff` uses
    (suppressions, the baseline, --select/--ignore), then the differing tensors measured;
    (None, None, exit status) after a one-line message. The Summary is None when a side
    could not be read."""
    from ..checks import weights  # lazy: keeps --help fast
    from ..engine import compare_sides  # lazy: keeps --help fast

    try:
        rename = (weights.Renamer.from_file(args.map_file, args.map) if args.map_file
                  else (weights.Renamer(args.map) if args.map else None))
    except ValueError as e:
        return None, None, fail(str(e))
    opts = options_from(args)
    err = load_baseline_into(opts, args)
    if err:
        return None, None, err
    report = Report(gpu=gpu, npu=npu)
    # both sides opened (headers only) before anything is hashed: a missing side fails fast
    gck, gerr = weights.open_side(gpu)
    nck, nerr = weights.open_side(npu)
    report.errors.extend(gerr + nerr)
    if gck is None or nck is None:
        return report.sorted(), None, 0
    bar = ProgressBar(progress_wanted(args.progress), "hashing tensors")
    bar.start(sum(r.nbytes for ck in (gck, nck) for r in ck.tensors))
    try:
        gex = weights.checkpoint_extract(gck, None, bar.advance)
        nex = weights.checkpoint_extract(nck, rename, bar.advance)
    finally:
        bar.close()
    if any(e.fatal for e in gex.errors + nex.errors):  # a side that could not be hashed: exit 2
        report.errors.extend(gex.errors + nex.errors)
        return report.sorted(), None, 0
    compare_sides([], [], [], report, opts, extracts=([gex], [nex]))
    weights.add_stats(report.findings, gck, nck, rename)
    return report.sorted(), weights.summarize(report, gck, nck), 0


def _emit_summarized(report, summary, args) -> int:
    """Text output for big checkpoints: the report header, the overview (counts, the worst
    tensors), then at most --top findings per rule; files written with --output always get
    the full report."""
    from ..checks.weights import stats_rules  # lazy: keeps --help fast
    from ..report import render  # lazy: keeps --help fast

    color = use_color(args)
    failed = write_outputs(report, args)
    if failed is not None:
        return failed
    top = max(0, args.top)
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
    overview = summary_text(summary, top)
    if left:
        overview += f"({left} more finding(s) not shown; --all or --format json lists them)\n"
    trimmed = Report(gpu=report.gpu, npu=report.npu, findings=kept, masked=report.masked, errors=report.errors,
                     compared=report.compared)
    text = render(trimmed, "text", show_masked=args.show_masked, color=color)
    sys.stdout.write(after_header(text, overview))
    sys.stdout.flush()
    return report.exit_code()


def after_header(text: str, overview: str) -> str:
    """The text report with `overview` placed right after its header. The text writer prints
    the header, then (errors aside; a summarized report has none) every section and the
    totals after a blank line, so the header ends at the first blank line (it may wrap)."""
    cut = text.find("\n\n")
    if cut < 0:
        return text + overview
    return text[:cut + 1] + overview + text[cut + 1:]


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

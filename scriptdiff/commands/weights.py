"""scriptdiff weights fingerprint PATH | scriptdiff weights GPU NPU"""
from __future__ import annotations

import sys

from .common import add_output_arguments, codes, emit, fail, use_color, write_outputs

DESCRIPTION = """Fingerprint or compare initial weights (check 6: same starting point).

  scriptdiff weights fingerprint CHECKPOINT [-o weights.json]
      Hash every tensor (blake3 of its raw bytes) and write a small fingerprint: name,
      dtype, shape, hash. Run it where the checkpoint lives. Here -o is the fingerprint file
      (default: standard output).

  scriptdiff weights GPU NPU
      Compare two checkpoints or fingerprints tensor by tensor: missing and extra tensors,
      shape, dtype, exact equality. When both checkpoints are at hand, differing tensors
      are also measured: max |diff|, relative L2 ||a-b||/||a||, cosine (GPU is the
      reference). Text output prints a summary and the worst tensors; --format json lists
      every finding.

Checkpoints: a .safetensors file; a folder of shards with model.safetensors.index.json;
PyTorch .bin/.pt and Megatron mp_rank_*/model_optim_rng.pt only through
torch.load(weights_only=True) when torch is installed (pip install 'scriptdiff[torch]').
Nothing is ever unpickled any other way."""


def add_arguments(p) -> None:
    from .data import allow_intermixed

    allow_intermixed(p)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="`fingerprint CHECKPOINT`, or the GPU and NPU sides (checkpoint file/folder or fingerprint)")
    p.add_argument("--map", action="append", default=[], metavar="PATTERN=REPLACEMENT",
                   help="rename NPU tensors before pairing (regular expression; repeatable), e.g. '^module\\.='")
    p.add_argument("--map-file", metavar="FILE", help="JSON object of NPU tensor name -> GPU tensor name")
    p.add_argument("--top", type=int, default=10, metavar="N", help="text output: worst tensors shown (default 10)")
    p.add_argument("--all", action="store_true", help="text output: list every finding, not only the worst")
    p.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")
    add_output_arguments(p)


def run(args) -> int:
    if args.paths[0] == "fingerprint":
        return _fingerprint(args, args.paths[1:])
    if len(args.paths) != 2:
        return fail("weights takes `fingerprint CHECKPOINT` or two sides: GPU NPU")
    return _compare(args, *args.paths)


def _fingerprint(args, paths: list[str]) -> int:
    from ..checks import weights
    from ..checks.dataset import _Progress, progress_wanted
    from ..checks.safetensors_io import WeightsError

    if len(paths) != 1:
        return fail("weights fingerprint takes one checkpoint file or folder")
    if len(args.output) > 1:
        return fail("weights fingerprint writes one file: give -o once")
    try:
        ck = weights.open_checkpoint(paths[0])
        if not ck.has_data:
            return fail(f"{paths[0]}: is already a weights fingerprint")
        bar = _Progress(sum(r.nbytes for r in ck.tensors), progress_wanted(args.progress), "hashing tensors")
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
    from ..checks import weights
    from ..checks.dataset import progress_wanted

    try:
        rename = (weights.Renamer.from_file(args.map_file, args.map) if args.map_file
                  else (weights.Renamer(args.map) if args.map else None))
    except ValueError as e:
        return fail(str(e))
    report, summary = weights.compare(gpu, npu, rename=rename, progress=progress_wanted(args.progress),
                                      select=codes(args.select), ignore=codes(args.ignore))
    if args.format != "text" or args.all or report.errors:
        return emit(report, args)
    return _emit_summarized(report, summary, args)


def _emit_summarized(report, summary, args) -> int:
    """Text output for big checkpoints: counts, the worst tensors, and at most --top findings
    per rule; files written with --output always get the full report."""
    from ..model import Report
    from ..report import render

    color = use_color(args)
    failed = write_outputs(report, args)
    if failed is not None:
        return failed
    top = max(0, args.top)
    kept, left = [], 0
    per_rule: dict[str, int] = {}
    worst_keys = {f.key for f in summary.worst[:top]}
    for f in report.findings:
        if f.rule in ("SD604", "SD605"):
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
    out = sys.stdout
    out.write(summary_text(summary, top))
    if left:
        out.write(f"({left} more finding(s) not shown; --all or --format json lists them)\n")
    trimmed = Report(gpu=report.gpu, npu=report.npu, findings=kept, masked=report.masked, errors=report.errors,
                     compared=report.compared)
    out.write(render(trimmed, "text", show_masked=args.show_masked, color=color))
    out.flush()
    return report.exit_code()


NAMES = {"SD601": "missing on NPU", "SD602": "extra on NPU", "SD603": "shape differs", "SD604": "dtype differs",
         "SD605": "values differ"}


def summary_text(summary, top: int) -> str:
    lines = [f"weights: GPU {summary.gpu_tensors} tensor(s), NPU {summary.npu_tensors}; "
             f"{summary.identical} identical"
             + "".join(f", {n} {NAMES.get(code, code)}" for code, n in sorted(summary.by_rule.items()))]
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

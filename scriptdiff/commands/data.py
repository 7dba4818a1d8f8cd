"""scriptdiff data fingerprint PATH... | scriptdiff data GPU NPU"""
from __future__ import annotations

import sys

from ..checks.manifest import percent, written
from .common import (OutputError, ProgressBar, add_output_arguments, add_progress_argument,  # noqa: F401
                     check_outputs, emit, fail, jobs_count, options_from, output_targets, progress_wanted, error_line,
                     size_text, split_sides, write_text)

DESCRIPTION = """Fingerprint or compare training data (check 5: same dataset).

  scriptdiff data fingerprint PATH... [-o manifest.json] [--sample]
      Hash every file under PATH (blake3, files in parallel) and write a manifest: relative
      path, size, hash, and cheap structure (Megatron .idx sequence/document counts and
      dtype, JSONL line counts, Parquet/Arrow row counts when pyarrow is installed). Run it
      where the data lives; copy the small manifest to the other side. Here -o is the
      manifest file (default: standard output). PATH may be s3://BUCKET/PREFIX (an
      S3-compatible store: S3, OBS, MinIO; pip install 'scriptdiff[cloud]'), read by range
      with the endpoint and credentials of the AWS variables and profiles.

  scriptdiff data fingerprint PATH... --shard I/N -o part-I.json
  scriptdiff data merge part-*.json -o manifest.json
      Fan out with any scheduler: each job hashes part I of N (the same split everywhere);
      merge joins a complete set into the manifest a serial run writes, byte for byte, and
      refuses parts that do not belong together. --executor ray runs the parts on a Ray
      cluster (--ray-address or RAY_ADDRESS, else a local one; pip install 'scriptdiff[ray]').

  scriptdiff data GPU NPU
      Compare two datasets. Each side is a folder or file (fingerprinted now) or a manifest.
      Files are paired by relative path; missing, extra and different files are reported
      (key data:<path>). --tokenizer / --script add the tokenizer files to the check
      (given twice: GPU first, then NPU).

--sample hashes only the head, tail and strided blocks of large files: quick, and the
manifest and every comparison built on it say that only those bytes were checked.

The comparison is reported like `scriptdiff diff`: --baseline, --select/--ignore, every
--format and --output FORMAT=FILE, exit status 0/1/2."""


def allow_intermixed(p) -> None:
    """Let options come between positionals (`data fingerprint --sample PATH`).

    Plain argparse binds all positionals at the first chunk it meets, so `fingerprint
    --sample PATH` would leave PATH unrecognised; this subparser alone parses intermixed.
    """
    import argparse

    class _Intermixed(type(p)):
        def parse_known_args(self, args=None, namespace=None):
            if getattr(self, "_mixing", False):
                return super().parse_known_args(args, namespace)
            self._mixing = True
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self._mixing = False

    if isinstance(p, argparse.ArgumentParser):
        p.__class__ = _Intermixed


SYNOPSIS = "GPU NPU | fingerprint PATH..."


def add_arguments(p) -> None:
    allow_intermixed(p)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="`fingerprint PATH...`, or the GPU and NPU sides (folder, file or manifest)")
    p.add_argument("--sample", action="store_true",
                   help="hash only head, tail and strided blocks of large files (marked as sampled)")
    p.add_argument("--jobs", "-j", "--workers", dest="jobs", type=jobs_count, default=None, metavar="N",
                   help="files hashed in parallel, 1 or more (default: cores, 2..8; --workers is the old name)")
    add_progress_argument(p)
    p.add_argument("--tokenizer", action="append", default=[], metavar="PATH",
                   help="tokenizer file or folder, part of the data check; when comparing give it twice: GPU, then NPU")
    p.add_argument("--script", action="append", default=[], metavar="PATH",
                   help="launch script or config whose tokenizer settings name tokenizer files; "
                        "when comparing give it twice: GPU, then NPU")
    add_fanout_arguments(p)
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    add_output_arguments(p)


def add_fanout_arguments(p) -> None:
    """--shard, --executor, --ray-address, --parts: how a fingerprint's work is spread (data, weights)."""
    p.add_argument("--shard", metavar="I/N", help="fingerprint only part I of N (a part file for `merge`)")
    p.add_argument("--executor", choices=("serial", "ray"), default="serial",
                   help="serial (this machine, the default) or ray (the parts as tasks on a Ray cluster)")
    p.add_argument("--ray-address", metavar="ADDRESS",
                   help="the Ray cluster of --executor ray (default: RAY_ADDRESS, else a local cluster)")
    p.add_argument("--parts", type=jobs_count, metavar="N",
                   help="--executor ray: parts sent to the cluster (default: 4 per CPU of the cluster)")


def fanout_of(args):
    """The executor the arguments ask for (api.executor), or None for a plain serial run."""
    if args.executor == "serial" and not args.ray_address and not args.parts:
        return None
    from ..checks import entry  # lazy: keeps --help fast (api.executor is this)
    return entry.executor(args.executor, args.ray_address, args.parts)


def progress_of(args, label: str = "hashing") -> ProgressBar:
    """Bytes hashed, or with --executor ray the parts done."""
    if getattr(args, "executor", "serial") == "ray":
        return ProgressBar(progress_wanted(args.progress), "parts on the Ray cluster", unit="parts")
    return ProgressBar(progress_wanted(args.progress), label)


def run(args) -> int:
    sample = bool(args.sample)
    bar = progress_of(args)
    fanout = fanout_of(args)
    if args.paths[0] in ("fingerprint", "merge"):
        if args.quiet or args.severity:
            return fail(f"data {args.paths[0]} writes a manifest, no findings: --quiet and --severity apply to a "
                        "comparison")
        try:
            targets = output_targets(args, ("json",), "data fingerprint",
                                     "a manifest is the JSON file `scriptdiff data` and `check` read")
        except OutputError as e:
            return fail(str(e))
        if len(targets) > 1:
            return fail(f"data {args.paths[0]} writes one manifest: give -o once")
        out = targets[0][1] if targets and targets[0][1] != "-" else None
        # what api.data_fingerprint / api.data_merge call, without importing the library's face:
        # a fingerprint costs its hashing, not the import of every check (issue 42)
        from ..checks import entry  # lazy: keeps a fingerprint light
        if args.paths[0] == "merge":
            if args.sample or args.shard or fanout is not None:
                return fail("data merge joins part files: --sample, --shard and --executor belong to the "
                            "`data fingerprint` runs that made them")
            manifest, errors = entry.data_merge(args.paths[1:], args.tokenizer, args.script)
        else:
            manifest, errors = entry.data_fingerprint(args.paths[1:], entry.hashing(sample, args.jobs, bar, fanout),
                                                      args.tokenizer, args.script, exclude={out} if out else set(),
                                                      shard=args.shard)
        return _write_manifest(manifest, errors, out)
    if args.shard:
        return fail("--shard fingerprints one part of a dataset: use it with `data fingerprint`")
    from .. import api  # lazy: keeps --help fast
    gpu, npu = split_sides(args.paths, "data", several=False)
    failed = check_outputs(args)
    if failed is not None:
        return failed
    opts = options_from(args)
    if args.baseline:
        opts.baseline = api.load_baseline(args.baseline)
    report = api.data(gpu[0], npu[0], opts, sample, args.jobs,
                      tokenizers=tuple(args.tokenizer) or None, scripts=tuple(args.script) or None, progress=bar,
                      fanout=fanout)
    line = overview_line(report)  # what was compared, said even when nothing differs
    if line:
        report.overview.append(line)
    return emit(report, args)


def _write_manifest(manifest: dict, errors: list, out: str | None) -> int:
    from ..checks import entry  # lazy: keeps --help fast

    for e in errors:
        print(error_line(e.path, e.message), file=sys.stderr)
    if any(e.fatal for e in errors) and not manifest["files"]:
        return 2
    if any(e.fatal and NOT_HASHED in e.message for e in errors):
        print("scriptdiff: no manifest written: a part failed (see above)", file=sys.stderr)
        return 2
    text = entry.manifest_text(manifest)
    if out:
        failed = write_text(out, text)
        if failed is not None:
            return failed
        print(f"scriptdiff: {written(manifest)} -> {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 2 if any(e.fatal for e in errors) else 0


# the words of a failed part's error (checks.dataset.NOT_HASHED)
NOT_HASHED = "file(s) were not hashed"


def overview_line(report) -> str | None:
    """What a data comparison compared, said even when nothing differs: files and bytes per
    side and how many files are identical ("dataset: GPU 12 file(s), 3.4 GB; NPU 12 file(s),
    3.4 GB; 12 identical"). None when the sides' facts are not at hand."""
    if not report.tables:
        return None
    sides = []
    for table in report.tables:
        summary = table.get("data:*")  # the manifest's totals (checks.dataset.SUMMARY_KEY)
        files = {k: table.get(k).value for k in table.keys("dataset") if k.startswith("data:") and k != "data:*"}
        sides.append((summary.value if summary is not None and isinstance(summary.value, dict) else {}, files))
    (gs, g), (ns, n) = sides
    same = sum(1 for k in g.keys() & n.keys() if g[k] == n[k])

    def part(summary: dict, files: dict) -> str:
        total = summary.get("bytes")
        if not isinstance(total, int):
            total = sum(v.get("size") or 0 for v in files.values() if isinstance(v, dict))
        return f"{summary.get('files', len(files)):,} file(s), {size_text(total)}"

    sides_line = f"dataset: GPU {part(gs, g)}; NPU {part(ns, n)}; "
    sampled = [any(m != "full" for m in (summary.get("file_modes") or ["full"])) for summary in (gs, ns)]
    if not any(sampled):
        return sides_line + f"{same:,} identical (compared in full)"
    if gs.get("mode") != ns.get("mode"):
        return sides_line + "content not compared (one side sampled, the other not: sizes and counts only)"
    read = sum(s.get("bytes_hashed") or 0 for s in (gs, ns))
    total = sum(s.get("bytes") or 0 for s in (gs, ns))
    return sides_line + f"{same:,} probably identical (sampled: {percent(read, total)} of the bytes read)"

"""scriptdiff data fingerprint PATH... | scriptdiff data GPU NPU"""
from __future__ import annotations

import sys

from .common import (OutputError, ProgressBar, add_output_arguments, add_progress_argument,  # noqa: F401
                     check_outputs, emit, fail, jobs_count, options_from, output_targets, progress_wanted, error_line,
                     size_text, split_sides, write_text)

DESCRIPTION = """Fingerprint or compare training data (check 5: same dataset).

  scriptdiff data fingerprint PATH... [-o manifest.json] [--sample]
      Hash every file under PATH (blake3, files in parallel) and write a manifest: relative
      path, size, hash, and cheap structure (Megatron .idx sequence/document counts and
      dtype, JSONL line counts, Parquet/Arrow row counts when pyarrow is installed). Run it
      where the data lives; copy the small manifest to the other side. Here -o is the
      manifest file (default: standard output).

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
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    add_output_arguments(p)


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast

    sample = bool(args.sample)
    bar = ProgressBar(progress_wanted(args.progress))
    if args.paths[0] == "fingerprint":
        if args.quiet or args.severity:
            return fail("data fingerprint writes a manifest, no findings: --quiet and --severity apply to a "
                        "comparison")
        try:
            targets = output_targets(args, ("json",), "data fingerprint",
                                     "a manifest is the JSON file `scriptdiff data` and `check` read")
        except OutputError as e:
            return fail(str(e))
        if len(targets) > 1:
            return fail("data fingerprint writes one manifest: give -o once")
        out = targets[0][1] if targets and targets[0][1] != "-" else None
        manifest, errors = api.data_fingerprint(args.paths[1:], sample, args.jobs, args.tokenizer, args.script,
                                                progress=bar, exclude={out} if out else set())
        return _write_manifest(manifest, errors, out)
    gpu, npu = split_sides(args.paths, "data", several=False)
    failed = check_outputs(args)
    if failed is not None:
        return failed
    opts = options_from(args)
    if args.baseline:
        opts.baseline = api.load_baseline(args.baseline)
    report = api.data(gpu[0], npu[0], opts, sample, args.jobs,
                      tokenizers=tuple(args.tokenizer) or None, scripts=tuple(args.script) or None, progress=bar)
    line = overview_line(report)  # what was compared, said even when nothing differs
    if line:
        report.overview.append(line)
    return emit(report, args)


def _write_manifest(manifest: dict, errors: list, out: str | None) -> int:
    from .. import api  # lazy: keeps --help fast

    for e in errors:
        print(error_line(e.path, e.message), file=sys.stderr)
    if any(e.fatal for e in errors) and not manifest["files"]:
        return 2
    text = api.manifest_text(manifest)
    if out:
        failed = write_text(out, text)
        if failed is not None:
            return failed
        t = manifest["totals"]
        print(f"scriptdiff: {t['files']:,} file(s), {t['bytes']:,} bytes"
              f"{' (sampled)' if manifest['sampled'] else ''} -> {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 2 if any(e.fatal for e in errors) else 0


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

    return f"dataset: GPU {part(gs, g)}; NPU {part(ns, n)}; {same:,} identical"

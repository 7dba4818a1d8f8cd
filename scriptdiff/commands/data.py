"""scriptdiff data fingerprint PATH... | scriptdiff data GPU NPU"""
from __future__ import annotations

import sys
import threading

from .common import add_output_arguments, emit, fail, options_from, safe

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


def add_arguments(p) -> None:
    allow_intermixed(p)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="`fingerprint PATH...`, or the GPU and NPU sides (folder, file or manifest)")
    p.add_argument("--sample", action="store_true",
                   help="hash only head, tail and strided blocks of large files (marked as sampled)")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="files hashed in parallel (default: cores, 2..8)")
    p.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")
    p.add_argument("--tokenizer", action="append", default=[], metavar="PATH",
                   help="tokenizer file or folder, part of the data check; when comparing give it twice: GPU, then NPU")
    p.add_argument("--script", action="append", default=[], metavar="PATH",
                   help="launch script or config whose tokenizer settings name tokenizer files; "
                        "when comparing give it twice: GPU, then NPU")
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    add_output_arguments(p)


class ProgressBar:
    """A rich progress bar over bytes on stderr, or nothing when not enabled.

    The progress object the library takes: start(total_bytes), advance(nbytes) (from any
    thread), close(); it may be started again after close()."""

    def __init__(self, enabled: bool, label: str = "hashing"):
        self.enabled = enabled
        self.label = label
        self._p = None
        self._lock = threading.Lock()

    def start(self, total: int) -> None:
        self.close()
        if not self.enabled or total <= 0:
            return
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, Progress, TimeRemainingColumn,
                                   TransferSpeedColumn)

        self._p = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                           TransferSpeedColumn(), TimeRemainingColumn(), console=Console(stderr=True),
                           transient=True)
        self._p.start()
        self._task = self._p.add_task(self.label, total=total)

    def advance(self, n: int) -> None:
        if self._p is not None:
            with self._lock:
                self._p.update(self._task, advance=n)

    def close(self) -> None:
        if self._p is not None:
            self._p.stop()
            self._p = None


def progress_wanted(flag: bool) -> bool:
    """--progress, or stderr is a terminal."""
    return flag or sys.stderr.isatty()


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast

    sample = bool(args.sample)
    bar = ProgressBar(progress_wanted(args.progress))
    if args.paths[0] == "fingerprint":
        if len(args.output) > 1:
            return fail("data fingerprint writes one manifest: give -o once")
        manifest, errors = api.data_fingerprint(args.paths[1:], sample, args.workers, args.tokenizer, args.script,
                                                progress=bar, exclude=set(args.output[:1]))
        return _write_manifest(args, manifest, errors)
    if len(args.paths) != 2:
        return fail("data takes `fingerprint PATH...` or two sides: GPU NPU")
    opts = options_from(args)
    if args.baseline:
        opts.baseline = api.load_baseline(args.baseline)
    report = api.data(args.paths[0], args.paths[1], opts, sample, args.workers,
                      tokenizers=tuple(args.tokenizer) or None, scripts=tuple(args.script) or None, progress=bar)
    return emit(report, args)


def _write_manifest(args, manifest: dict, errors: list) -> int:
    from .. import api  # lazy: keeps --help fast

    for e in errors:
        print(f"scriptdiff: {safe(e.path)}: {safe(e.message)}", file=sys.stderr)
    if any(e.fatal for e in errors) and not manifest["files"]:
        return 2
    text = api.manifest_text(manifest)
    if args.output:
        out = args.output[0]
        try:
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            return fail(f"cannot write {out}: {e.strerror or e}")
        t = manifest["totals"]
        print(f"scriptdiff: {t['files']} file(s), {t['bytes']} bytes"
              f"{' (sampled)' if manifest['sampled'] else ''} -> {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 2 if any(e.fatal for e in errors) else 0

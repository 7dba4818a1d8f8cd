"""scriptdiff baseline GPU NPU -o FILE: accept today's findings, report only new ones later."""
from __future__ import annotations

import json
import sys

from .common import fail, options_from

DESCRIPTION = """Write the current findings of `scriptdiff diff GPU NPU` (or of `scriptdiff check`
with --check) to a baseline file. Later runs given `--baseline FILE` report only findings
that are not in it. Entries are fingerprints of rule, key and both values, not line
numbers, so edits elsewhere in a file keep them valid; an entry that no longer matches
anything is reported as SD152 (info) so the file can be rewritten."""

DEFAULT = ".scriptdiff-baseline.json"


def add_arguments(p) -> None:
    p.add_argument("gpu", nargs="?", metavar="GPU", help="GPU-side file, folder or REV:path")
    p.add_argument("npu", nargs="?", metavar="NPU", help="NPU-side file, folder or REV:path")
    p.add_argument("--check", action="store_true",
                   help="take the findings of `scriptdiff check` (the [tool.scriptdiff] configuration)")
    p.add_argument("--config", metavar="FILE", help="with --check: the configuration file")
    p.add_argument("--output", "-o", default=DEFAULT, metavar="FILE", help=f"baseline file (default: {DEFAULT})")
    p.add_argument("--select", metavar="CODES", help="only these rule codes or prefixes")
    p.add_argument("--ignore", metavar="CODES", help="drop these rule codes or prefixes")


def load_baseline_into(opts, args) -> int:
    """Load --baseline FILE into opts; 0 when fine, else the exit status after a one-line message."""
    path = getattr(args, "baseline", None)
    if not path:
        return 0
    from ..suppress import SuppressError, load_baseline

    try:
        opts.baseline = load_baseline(path)
    except SuppressError as e:
        return fail(str(e))
    return 0


def run(args) -> int:
    from ..suppress import baseline_document

    opts = options_from(args)
    if args.check:
        from ..checkrun import CheckConfigError, load_config, run_checks

        try:
            cfg = load_config(args.config)
        except CheckConfigError as e:
            return fail(str(e))
        opts.baseline = None
        report = run_checks(cfg, opts)
    else:
        if not args.gpu or not args.npu:
            return fail("baseline needs GPU and NPU (or --check)")
        from .diff import build_report

        report, code = build_report([args.gpu], args.npu, opts, git_rev=None)
        if report is None:
            return code
    if report.exit_code() == 2:
        for e in report.errors:
            print(f"scriptdiff: {e.path}: {e.message}", file=sys.stderr)
        return 2
    doc = baseline_document(report.findings)
    try:
        with open(args.output, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
    except OSError as e:
        return fail(f"cannot write {args.output}: {e.strerror or e}")
    print(f"scriptdiff: wrote {len(doc['findings'])} accepted finding(s) to {args.output}")
    return 0

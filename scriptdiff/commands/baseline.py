"""scriptdiff baseline GPU NPU -o FILE: accept today's findings, report only new ones later."""
from __future__ import annotations

import json

from .common import OutputError, fail, options_from, output_spec, print_errors, split_sides

DESCRIPTION = """Write the current findings of `scriptdiff diff GPU NPU` (or of `scriptdiff check`
with --check) to a baseline file. Later runs given `--baseline FILE` report only findings
that are not in it. Entries are fingerprints of rule, key and both values, not line
numbers, so edits elsewhere in a file keep them valid; an entry that no longer matches
anything is reported as SD152 (info) so the file can be rewritten."""

DEFAULT = ".scriptdiff-baseline.json"


SYNOPSIS = "[GPU NPU | GPU... vs NPU...]"


def add_arguments(p) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="GPU then NPU (file, folder or REV:path), as `scriptdiff diff` takes them: GPU NPU, or "
                        "GPU... vs NPU...")
    p.add_argument("--check", action="store_true",
                   help="take the findings of `scriptdiff check` (the [tool.scriptdiff] configuration)")
    p.add_argument("--config", metavar="FILE", help="with --check: the configuration file")
    p.add_argument("--output", "-o", default=DEFAULT, metavar="[json=]FILE",
                   help=f"the baseline file (JSON), as -o does for every command (default: {DEFAULT})")
    p.add_argument("--select", metavar="CODES", help="only these rule codes or prefixes")
    p.add_argument("--ignore", metavar="CODES", help="drop these rule codes or prefixes")


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast

    try:
        out = output_spec(args.output, ("json",), "baseline", "a baseline is the JSON file --baseline reads")[1]
    except OutputError as e:
        return fail(str(e))
    opts = options_from(args)
    if args.check:
        report = api.check(args.config, options=opts)
    else:
        if not args.paths:
            return fail("baseline needs GPU and NPU (or --check)")
        gpu, npu = split_sides(args.paths, "baseline")
        report = api.diff(gpu, npu[0] if len(npu) == 1 else npu, opts)
    if report.exit_code() == 2:
        print_errors(report)
        return 2
    doc = api.baseline(report)
    try:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
    except OSError as e:
        return fail(f"cannot write {out}: {e.strerror or e}")
    print(f"scriptdiff: wrote {len(doc['findings'])} accepted finding(s) to {out}")
    return 0

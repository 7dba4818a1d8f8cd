"""Options and output shared by the commands that produce a Report."""
from __future__ import annotations

import sys

from ..report import FORMATS, render
from ..report.values import safe


def add_output_arguments(p) -> None:
    p.add_argument("--format", "-f", choices=FORMATS, default="text", help="output format (default: text)")
    p.add_argument("--output", "-o", action="append", default=[], metavar="FORMAT=FILE",
                   help="also write FORMAT to FILE (repeatable), e.g. --output sarif=out.sarif")
    p.add_argument("--select", metavar="CODES", help="only these rule codes or prefixes, comma-separated (SD2,SD101)")
    p.add_argument("--ignore", metavar="CODES", help="drop these rule codes or prefixes, comma-separated")
    p.add_argument("--show-masked", action="store_true", help="list the expected substitutions that were masked")
    p.add_argument("--full-values", action="store_true", help="show long values whole (default: their head and a count)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour in text output")


def add_engine_arguments(p) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="do not read or write the parse cache (~/.cache/scriptdiff, or $SCRIPTDIFF_CACHE_DIR)")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="worker processes for parsing (default: one per core)")
    p.add_argument("--max-bytes", type=int, metavar="N",
                   help="larger Python files are compared as text; larger configs, launch scripts, logs, "
                        "package lists, snapshots and patches are not read (default: 500000)")


def codes(s: str | None) -> list[str] | None:
    if not s:
        return None
    return [c.strip().upper() for c in s.split(",") if c.strip()]


def options_from(args):
    from ..model import Options  # lazy: keeps --help fast (the model's dataclasses cost 20 ms)
    from .. import api  # lazy: keeps --help fast

    select, ignore = codes(getattr(args, "select", None)), codes(getattr(args, "ignore", None))
    api.check_selectors(select, "--select")
    api.check_selectors(ignore, "--ignore")
    return Options(select=select, ignore=ignore,
                   use_cache=not getattr(args, "no_cache", False), jobs=getattr(args, "jobs", None),
                   max_bytes=getattr(args, "max_bytes", None) or Options.max_bytes, keep_texts=wants_html(args))


def wants_html(args) -> bool:
    """The html page is among the outputs: the run keeps the files' text for it."""
    outs = [o.split("=", 1)[0] if "=" in o else o.rsplit(".", 1)[-1] for o in getattr(args, "output", None) or []]
    return "html" in (getattr(args, "format", None), *(o.lower() for o in outs))


def fail(message: str) -> int:
    print(f"scriptdiff: {safe(message)}", file=sys.stderr)
    return 2


def use_color(args) -> bool:
    color = {"always": True, "never": False}.get(getattr(args, "color", "auto"), None)
    return sys.stdout.isatty() if color is None else color


def render_options(args, color: bool) -> dict:
    """The writers' options from the command line (report.render, api.render_table)."""
    return {"show_masked": getattr(args, "show_masked", False), "full_values": getattr(args, "full_values", False),
            "color": color}


def write_outputs(report, args) -> int | None:
    """The --output FORMAT=FILE extras, always complete and uncoloured; 2 on failure."""
    for spec in getattr(args, "output", []) or []:
        if "=" not in spec:
            return fail(f"--output expects FORMAT=FILE, got {spec!r}")
        fmt, path = spec.split("=", 1)
        if fmt not in FORMATS:
            return fail(f"--output: unknown format {fmt!r} (one of {', '.join(FORMATS)})")
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(render(report, fmt, **render_options(args, False)))
        except OSError as e:
            return fail(f"cannot write {path}: {e.strerror or e}")
    return None


def emit(report, args, full=None) -> int:
    """Write the report in the chosen format (and any --output extras); return the exit code.

    `full`: when `report` is a shortened view of a larger report (weights' summary), the
    --output files and the exit status come from the full one."""
    if args.format != "text" or not sys.stdout.isatty():
        # machine formats keep stdout clean: input errors go to stderr, one line each
        # (the text report lists them itself, so a terminal does not see them twice)
        for e in report.errors:
            print(f"scriptdiff: {safe(e.path)}: {safe(e.message)}", file=sys.stderr)
    opts = render_options(args, use_color(args))
    failed = write_outputs(full or report, args)
    if failed is not None:
        return failed
    out = render(report, args.format, **opts)
    sys.stdout.write(out)
    sys.stdout.flush()
    return (full or report).exit_code()

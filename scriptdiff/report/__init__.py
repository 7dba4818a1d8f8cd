"""Report writers: one module per output format, all reading the same Report.

`render(report, fmt, **options) -> str`. WRITERS is the one list of formats (the CLI's
--format choices come from it). A writer module is imported when its format is used
(importlib, by the name below), so `scriptdiff --help` loads neither rich nor the writers.
Every writer is reached through `render`, which first runs scriptdiff.ruleset.secrets.withhold_report
(findings are withheld when made; errors, masked lines, verdict reasons and tables here).
"""
from __future__ import annotations

import importlib

# format -> writer module under scriptdiff/report/, in the order --help lists them
WRITERS = {"text": "text", "json": "json_writer", "sarif": "sarif", "markdown": "markdown", "github": "github",
           "html": "html"}
FORMATS = tuple(WRITERS)


def render(report, fmt: str, **options) -> str:
    if fmt not in WRITERS:
        raise ValueError(f"unknown format {fmt!r}")
    if not report.check_order:  # a Report built by hand: the registry's order
        from ..ruleset.registry import check_names  # lazy: keeps --help fast (loads the rule packs)

        report.check_order = check_names()
    from ..ruleset.secrets import withhold_report  # lazy: keeps --help fast (loads the rule packs)

    withhold_report(report)  # what no writer may show, withheld before any sees the report
    return importlib.import_module(f"{__name__}.{WRITERS[fmt]}").render(report, **options)

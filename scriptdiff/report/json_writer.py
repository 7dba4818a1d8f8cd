"""The JSON contract (schema 1): deterministic, sorted, byte-identical for the same inputs.

Long values, source lines and messages are cut as report.values says, with a marker field
next to each (`value_truncated`, ...); `full_values=True` (`--full-values`) keeps them whole."""
from __future__ import annotations

from .values import json_report, json_text


def render(report, full_values: bool = False, **_options) -> str:
    doc = json_report(report.to_json(), full_values)
    if "baseline_suppressed" in report.details:  # additive: a run given --baseline says what it hid
        doc["suppressed"] = {"baseline": report.details["baseline_suppressed"]}
    return json_text(doc)

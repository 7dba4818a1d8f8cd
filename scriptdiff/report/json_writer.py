"""The JSON contract (schema 1): deterministic, sorted, byte-identical for the same inputs."""
from __future__ import annotations

import json


def render(report, **_options) -> str:
    return json.dumps(report.to_json(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"

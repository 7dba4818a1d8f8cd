"""HF Trainer's trainer_state.json as a file kind (rules/curves.yaml `kinds:`): training
output, not a config. Its log_history is read as curves (one `process:curves` fact, compared
by the `process` check's classifier), never key by key as hyperparameters; so two folders
holding two runs' trainer_state.json get a curves verdict from `scriptdiff diff` too."""
from __future__ import annotations

from ..model import Extract
from .check import curves_fact
from .readers import read_bytes


def extract(src, ctx) -> Extract:
    run = read_bytes(src.name, src.data, ctx.side)
    ex = Extract(errors=list(run.errors), understood=True)
    if not run.empty:
        ex.facts.append(curves_fact(run, src.name))
    return ex

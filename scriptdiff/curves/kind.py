"""HF Trainer's trainer_state.json as a file kind (rules/curves.yaml `kinds:`): in a
compared folder or in a `check` side's logs it is training output, not a config. It is read
here as understood and settings-free (its log_history would otherwise be compared key by key
as hyperparameters); its curves are compared by `scriptdiff curves` and the `process` check."""
from __future__ import annotations

from ..model import Extract


def extract(src, ctx) -> Extract:
    return Extract(understood=True)

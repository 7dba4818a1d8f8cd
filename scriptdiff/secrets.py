"""Secret-looking names, from the one list in rules/secrets.yaml.

`is_secret_name(name)` says whether a variable or key name looks like it holds a credential
(HF_TOKEN, hub_token, WANDB_API_KEY, DB_PASSWD, AUTH_HEADER, GITHUB_PAT), so that its value
is never written out: `collect` withholds such environment variables, the config reader
drops such keys and the launch-script reader redacts such exports. Names that carry
hyperparameters (pad_token_id, num_key_value_heads, max_new_tokens, TOKENIZERS_PARALLELISM)
are not secret-looking. The matching rules are described in rules/secrets.yaml.
"""
from __future__ import annotations

import re
from functools import lru_cache

from .rules import load

_SEPARATOR = re.compile(r"[^A-Za-z0-9]+")  # a name's words (a name, never code)


def words_of(name: str) -> tuple[str, ...]:
    """The upper-case words of a name: split at every character that is not a letter or digit."""
    return tuple(w for w in _SEPARATOR.split(name.upper()) if w)


@lru_cache(maxsize=1)
def _lists() -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...], tuple[tuple[str, ...], ...]]:
    sec = load().section("secrets", {}) or {}
    words = tuple(tuple(e.upper().split("_")) for e in sec.get("words", []) or [])
    suffixes = tuple(e.upper() for e in sec.get("suffixes", []) or [])
    not_secret = tuple(tuple(e.upper().split("_")) for e in sec.get("not_secret", []) or [])
    return words, suffixes, not_secret


def _contains(seq: tuple[str, ...], part: tuple[str, ...]) -> bool:
    n = len(part)
    return any(seq[i:i + n] == part for i in range(len(seq) - n + 1))


def is_secret_name(name: str) -> bool:
    """True when `name` looks like it names a credential (see rules/secrets.yaml)."""
    ws = words_of(name)
    if not ws:
        return False
    words, suffixes, not_secret = _lists()
    if any(_contains(ws, w) for w in words):
        return True
    if not ws[-1].endswith(suffixes):
        return False
    return not any(len(e) <= len(ws) and ws[-len(e):] == e for e in not_secret)

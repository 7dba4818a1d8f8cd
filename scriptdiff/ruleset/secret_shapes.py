"""The token shapes of rules/secrets.yaml as regular expressions.

`secret_values.token_prefixes` (a prefix, a least length, a character class) and
`secret_values.patterns` (a regular expression, optionally with a group named `secret`) are
data; this module turns them into compiled expressions and says which part of a text each
one finds. It sits below the rules layer (it imports only packregex) because both sides
need it: rule_validators checks every example when the packs load, and
scriptdiff.ruleset.secrets scans with the same expressions. A `patterns` entry is run by
RE2 (packregex: linear in the text); the token expression is built here from the escaped
prefixes and stays on `re`.
"""
from __future__ import annotations

import re
from typing import Iterator

from . import packregex

# a token's characters after its prefix: letters and digits, or also _ and -
CHARS = {"alnum": "A-Za-z0-9", "word": "A-Za-z0-9_-"}
# what may not follow a token of each class (an alnum token followed by _ is part of a name:
# hf_cache_dir_for_models is no Hugging Face token)
AFTER = {"alnum": "A-Za-z0-9_", "word": "A-Za-z0-9_-"}


# where a token may start: not after a letter or digit, unless that letter ends an escape
# sequence (`"a\\nghp_..."` in a source line is a newline and a token)
START = r"(?:(?<![A-Za-z0-9])|(?<=\\[a-z]))"


def _token(prefix: str, least: int, chars: str) -> str:
    return f"{re.escape(prefix)}[{CHARS[chars]}]{{{least},}}(?![{AFTER[chars]}])"


def prefix_regex(prefix: str, least: int, chars: str = "word") -> str:
    """A provider token: `prefix`, not preceded by a letter or digit (but for an escape
    sequence's), then at least `least` characters of `chars`, and none of them after."""
    return START + _token(prefix, least, chars)


def tokens_regex(entries: list[dict]) -> re.Pattern | None:
    """Every token prefix of the rules in one expression (None when there are none): where a
    token may start is tested once per position, then each prefix."""
    parts = [_token(e["prefix"], int(e["min"]), e.get("chars", "word")) for e in entries]
    return re.compile(START + "(?:" + "|".join(parts) + ")") if parts else None


def compile_pattern(regex: str):
    """A `patterns` entry's expression, run by RE2 (packregex.PatternError when it is not
    one, or needs what RE2 has not)."""
    return packregex.compile(regex)


def spans(rx, text: str) -> Iterator[tuple[int, int]]:
    """The (start, end) of every part of `text` that `rx` withholds: its group `secret` when it
    has one, else the whole match."""
    named = rx.groupindex.get("secret")
    for m in rx.finditer(text):
        if named is not None and m.group(named) is not None:
            yield m.span(named)
        elif m.end() > m.start():
            yield m.span()


def finds(rx, text: str) -> bool:
    """`rx` withholds some part of `text`."""
    return next(spans(rx, text), None) is not None

"""Regular expressions written in rule packs, run by RE2: matching takes time linear in the text.

A pack may hold expressions (`secret_values.patterns[].regex`, a vocabulary key's
`from_name.pattern`), and a user's pack is input like any other: Python's `re` backtracks,
so `(x+x+)+y` against 40 x's runs for minutes. Every expression that comes from a pack,
shipped or the user's, is compiled here by RE2 (the `google-re2` package), whose matching
is linear in the text and in the expression, whatever the expression. RE2 has no
look-around (`(?=`, `(?!`, `(?<=`, `(?<!`) and no back-references (`\\1`): an expression that
uses them is refused when the packs load, one line at the expression's own line, saying so
(docs/rule-packs.md, "Regular expressions"). RE2's `\\d`, `\\w`, `\\s` and `\\b` are ASCII.

The expressions scriptdiff builds itself from a pack's literal words (token prefixes, secret
names, schemes: each escaped) stay on `re`: none of them nests a repetition.
"""
from __future__ import annotations

import re

import re2

# RE2's own options; its default memory for one compiled expression (8 MiB) bounds what a
# huge expression may build: beyond it the expression is refused ("pattern too large")
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused expression is our one line, not RE2's log on stderr


class PatternError(ValueError):
    """An expression that cannot be run: the message is one line, the reason."""


def compile(regex: str):
    """`regex` compiled by RE2 (re.Pattern-like: search, match, finditer, groups, groupindex);
    PatternError with the reason when it is not an expression, or uses what RE2 has not."""
    try:
        return re2.compile(regex, _OPTIONS)
    except re2.error as e:
        arg = e.args[0] if e.args else ""
        why = (arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)).splitlines()
        why = why[0] if why else "not accepted"
    try:
        re.compile(regex)
    except (re.error, RecursionError, OverflowError) as e:
        raise PatternError(f"not a regular expression: {e}") from None
    raise PatternError(f"not an expression RE2 runs ({why}): pack expressions run in time linear in the text, "
                       f"so look-around ((?=, (?!, (?<=, (?<!) and back-references (\\1) are not available; "
                       f"write the context as a group of its own instead (docs/rule-packs.md)")


def span(m, group: str | int = 0) -> tuple[int, int]:
    """The span of `group` (a name or a number) of a match of either engine."""
    if isinstance(group, str):
        group = m.re.groupindex[group]
    return m.span(group)

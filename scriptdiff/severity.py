"""How much a finding matters: `Severity`, the one place severities are ordered and spelled.

Kept apart from model.py (which re-exports it) so that the command line can spell and order
severities (`--severity LEVEL`) without building the model's dataclasses: `--help` stays fast.
It imports nothing of the package."""
from __future__ import annotations

from enum import Enum
from collections.abc import Iterable


class Severity(str, Enum):
    """How much a finding matters, most severe first: the one place severities are ordered
    and spelled. A member is its JSON string (`Severity.ERROR == "error"`, serialised, formatted
    and hashed as that string), so a rule pack's severity, a key of rules/python.yaml `classes`
    and `--severity LEVEL` are looked up as they are written; `Severity(s)` takes either.

    The order of the members is the rank (0 the most severe). Each column is how one output
    spells the severity: `loud` (a finding that can change numerics: it fails the run, exit
    status 1, and `fix` edits it unless --select says otherwise), `style` (the terminal's),
    `table_style` and `mark` (the hyperparameter table's), `look` (the html page's letter for a
    line with a finding; `html_class` its class), `markdown`, `sarif` (a result's level),
    `github` (the annotation command) and `counted` (how a count says it: `tally`)."""

    #          JSON       loud   style       table     mark look markdown      SARIF      GitHub     counted
    ERROR =   ("error",   True,  "bold red", "red",    "E", "E", "🔴 error",   "error",   "error",   "error(s)")
    WARNING = ("warning", True,  "yellow",   "yellow", "W", "W", "🟡 warning", "warning", "warning", "warning(s)")
    INFO =    ("info",    False, "cyan",     "cyan",   "i", "I", "🔵 info",    "note",    "notice",  "info")

    loud: bool
    style: str
    table_style: str
    mark: str
    look: str
    markdown: str
    sarif: str
    github: str
    counted: str

    def __new__(cls, value: str, *spellings):
        member = str.__new__(cls, value)
        member._value_ = value
        for column, spelled in zip(("loud", "style", "table_style", "mark", "look", "markdown", "sarif", "github",
                                    "counted"), spellings, strict=True):
            setattr(member, column, spelled)
        return member

    # the string it is: in f-strings, str(), JSON, and as a key of a dict read from YAML
    __str__ = str.__str__
    __format__ = str.__format__
    __hash__ = str.__hash__

    @property
    def rank(self) -> int:
        """0 for the most severe, then in the members' order."""
        return type(self)._member_names_.index(self.name)

    @property
    def html_class(self) -> str:
        """The page's class of a finding of this severity (its colours: report/html_assets.CSS)."""
        return f"sev-{self.value}"

    def at_least(self, floor: "Severity | str") -> bool:
        """As severe as `floor` or more (`--severity LEVEL`)."""
        return self.rank <= Severity(floor).rank

    @classmethod
    def ascending(cls) -> list["Severity"]:
        """The least severe first (how `--severity` lists its choices)."""
        return list(cls)[::-1]

    @classmethod
    def worst(cls, severities: Iterable["Severity | str"]) -> "Severity":
        """The most severe of some severities (strings or members); ValueError if there are none."""
        return min((cls(s) for s in severities), key=lambda s: s.rank)

    @classmethod
    def counts(cls, findings: Iterable) -> dict["Severity", int]:
        """How many findings of each severity, most severe first (every severity, zeros included)."""
        seen = [cls(f.severity) for f in findings]
        return {s: seen.count(s) for s in cls}

    @classmethod
    def tally(cls, findings: Iterable) -> str:
        """The counts as the summaries say them: "2 error(s), 0 warning(s), 1 info"."""
        return ", ".join(f"{n} {s.counted}" for s, n in cls.counts(findings).items())


SEVERITIES = tuple(s.value for s in Severity)  # the names a rule pack may write, most severe first

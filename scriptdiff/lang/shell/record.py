"""What reading one launch script has produced so far, shared by its readers.

The evaluator, the launch reader, the program-options reader and the environment facts all
append to one Record: facts, input errors, config references, the frameworks recognised and
the number of launcher commands; it also gives a line's source text for a fact.
"""
from __future__ import annotations

from ...model import Fact, InputError


class Record:
    """The results of one script (`src`, read for the side in `ctx`)."""

    def __init__(self, src, ctx):
        self.src = src
        self.ctx = ctx
        self.lines = src.text.splitlines()
        self.facts: list[Fact] = []
        self.errors: list[InputError] = []
        self.references: list[tuple[str, int | None, str]] = []
        self.frameworks: set[str] = set()
        self.launches = 0

    def src_line(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

"""What reading one launch script has produced so far, shared by its readers.

The evaluator, the launch reader, the program-options reader and the environment facts all
append to one Record: facts, input errors, config references, the frameworks recognised and
the number of launcher commands; it also gives a line's source text for a fact.
"""
from __future__ import annotations

from ...checks.hparams import canonical_flag
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
        # commands that pass training-like options to a program scriptdiff does not know:
        # (command words as shown, number of options, line)
        self.unknown: list[tuple[str, int, int]] = []
        self.invocations = 0  # launcher commands that produced facts (scopes)

    def unknown_command(self, words, line: int, wraps: bool = False) -> None:
        """A command that is no known launcher: remembered when it passes options that look like
        a training run's (a canonical hyperparameter, many options, or a known launcher after
        `--`), so that the report can say its options were not compared instead of passing
        silently. Options are `--name[=value]` words and Hydra overrides (`a.b=c`)."""
        opts = [w.text[2:].partition("=")[0].replace("-", "_") for w in words[1:]
                if w.text.startswith("--") and len(w.text) > 2]
        opts += [w.text.lstrip("+~").partition("=")[0] for w in words[1:]
                 if not w.text.startswith("-") and "=" in w.text and "." in w.text.partition("=")[0]]
        if not opts:
            return
        known = sum(1 for o in opts if canonical_flag(o, "megatron") or canonical_flag(o, "hf"))
        if known or wraps or len(opts) >= 5:
            name = words[0].text.rsplit("/", 1)[-1]
            if len(words) > 1 and not words[1].text.startswith("-") and words[1].text.isidentifier():
                name += f" {words[1].text}"  # swift sft, ray job
            self.unknown.append((name, len(opts), line))

    def src_line(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

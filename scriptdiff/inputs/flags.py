"""Command-line options, read the one way every reader of a command line reads them.

A launch script's program options (`--lr 1e-4`, `--lr=1e-4`, `--no-bf16`), a launcher's own
(`torchrun --nproc_per_node 8 train.py`), an installer's (`pip install -r req.txt`,
`-rreq.txt`), a wrapper's (`env -i A=1 cmd`), the calling `git diff`'s, and the option strings
a program's parser declares (`add_argument("--lr-warmup", dest=...)`, click's `--x/--no-x`)
are all split here:

- `split(word)` is the option a word is: `--name`, `--name=value`, `-k`, `-k=value` (the
  dashes, the name and the value written after the first `=`), or None for an operand: a word
  that does not start with `-`, `-` alone (standard input), and `--` (END: the words after it
  are operands);
- `scan(words, start, takes)` walks a command line as a parser does: each option (its value
  written after `=`, or the next word when the parser's `takes(flag, next_word)` says the
  option takes one), each operand, and END; `first_operand` is where the operands start;
- `dest(strings)` is the attribute argparse stores an option under; `negative(name)` the
  option a `--no-x` / `--no_x` turns off; `negated(option)` the `--no-x` argparse's
  BooleanOptionalAction adds; `lookup(name, strings, abbrev)` how a parser finds an option
  given on the command line (exactly, or by a unique prefix when it takes abbreviations).
"""
from __future__ import annotations

from typing import Callable, Iterator, NamedTuple

END = "--"


class Flag(NamedTuple):
    """One option word: `--lr=1e-4` is Flag("--lr=1e-4", 2, "lr", "1e-4")."""

    text: str  # as written
    dashes: int  # 2 for a long option, 1 for a short one
    name: str  # after the dashes, up to the first `=`
    value: str | None  # after the first `=`; None when there is no `=`

    @property
    def long(self) -> bool:
        return self.dashes == 2

    @property
    def dest(self) -> str:
        """The name as an identifier (`--lr-warmup` -> lr_warmup)."""
        return self.name.replace("-", "_")

    @property
    def option(self) -> str:
        """The option without its value (`--lr=1e-4` -> --lr)."""
        return self.text[:self.dashes] + self.name

    @property
    def value_at(self) -> int:
        """Where the value written after `=` starts in the word (its length when there is none)."""
        return len(self.text) - len(self.value) if self.value is not None else len(self.text)

    def joined(self, names) -> "Flag":
        """A short option written with its value (`-rreq.txt`: -r req.txt) when its letter is
        one of `names` (the options that take a value); else itself."""
        if self.long or self.value is not None or len(self.name) < 2 or self.name[0] not in names:
            return self
        return Flag(self.text, 1, self.name[0], self.name[1:])


def split(word: str) -> Flag | None:
    """The option `word` is, or None for an operand or END (module doc)."""
    if len(word) < 2 or word[0] != "-" or word == END:
        return None
    dashes = 2 if word[1] == "-" else 1
    name, eq, value = word[dashes:].partition("=")
    return Flag(word, dashes, name, value if eq else None)


def dashed(word: str) -> bool:
    """A word that no parser takes as an operand where an option may stand: an option, or END."""
    return word == END or split(word) is not None


class Item(NamedTuple):
    """One word of a command line as `scan` reads it."""

    at: int  # its index
    flag: Flag | None  # the option; None for an operand or END
    value: int | None = None  # the index of the next word, when that is the option's value
    end: bool = False  # the word is END


def scan(words: list[str], start: int = 0,
         takes: Callable[[Flag, str], bool] | None = None) -> Iterator[Item]:
    """The words from `start` on, as a parser of options reads them (module doc): an option
    takes the next word as its value when it has none after `=` and `takes(flag, next word)`
    says so; after END every word is an operand. The caller stops where its parser stops."""
    i, n, ended = start, len(words), False
    while i < n:
        w = words[i]
        f = None if ended else split(w)
        if f is None:
            end = not ended and w == END
            ended = ended or end
            yield Item(i, None, None, end)
            i += 1
            continue
        if f.value is None and i + 1 < n and takes is not None and takes(f, words[i + 1]):
            yield Item(i, f, i + 1)
            i += 2
            continue
        yield Item(i, f)
        i += 1


def first_operand(words: list[str], start: int = 0, stop: tuple = ()) -> int:
    """The index of the first operand from `start` on, passing over options that take no value
    and END; a word in `stop` (python's `-m`) ends the options too. len(words) when none."""
    for item in scan(words, start):
        if words[item.at] in stop or (item.flag is None and not item.end):
            return item.at
    return len(words)


def dest(strings: list[str]) -> str | None:
    """The attribute argparse stores an option under: from its first long option string, else
    its first (`("-l", "--lr-warmup")` -> lr_warmup); None when there is none."""
    longs = [s for s in strings if s.startswith(END)]
    first = longs[0] if longs else (strings[0] if strings else None)
    return first.lstrip("-").replace("-", "_") if first is not None else None


def negative(name: str) -> str | None:
    """The option that `--no-x` / `--no_x` turns off (`no_x` -> x), or None."""
    if name.startswith(("no_", "no-")):
        return name[3:]
    return None


def negated(option: str) -> str | None:
    """The `--no-x` that argparse's BooleanOptionalAction adds for a long option `--x`."""
    return "--no-" + option[2:] if option.startswith(END) else None


def lookup(name: str, strings: dict[str, str], abbrev: bool) -> tuple[str, list[str]]:
    """How a parser takes `--name` given on its command line, its option strings `strings`
    (option string -> the dest it sets): ("exact" | "prefix" | "ambiguous" | "unknown", the
    option strings matched). With `abbrev` a unique prefix of long options that set one dest
    (`--lr_x` and `--lr-x` are one option) is that option."""
    opt = END + name
    if opt in strings:
        return "exact", [opt]
    if abbrev:
        found = sorted(s for s in strings if s.startswith(opt) and s.startswith(END))
        if found:
            if len({strings[s] for s in found}) == 1:
                return "prefix", found[:1]
            return "ambiguous", found
    return "unknown", []

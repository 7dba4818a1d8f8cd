"""What reading one launch script has produced so far, shared by its readers.

The evaluator, the launch reader, the program-options reader and the environment facts all
append to one Record: facts, input errors, config references, the frameworks recognised and
the number of launcher commands; it also gives a fact its source text.

The script's text is kept once (as `src.text`); a fact's source is an excerpt of its line,
at most budget.SHOWN_EXCERPT characters around the option or variable it came from, so that
a one-line launch script of 10,000 flags does not copy its whole line into every fact (and
every report line). Values withheld as secret-looking are remembered (`withhold`), and
`finish` takes them, and any other secret-looking word, out of every excerpt.

A fragment the script sources (`source ./args_npu.sh`) is read in place (evaluator.py): its
lines are numbered after the script's, each fragment from its own base (`LINE_BASE` times its
index), so a value keeps the file it was written in through every variable it passes; `place`
turns such a line back into (file, line) where a fact or a message is made.
"""
from __future__ import annotations

from ... import budget
from ...budget import note
from ...inputs import flags
from ...model import Fact, InputError
from ...ruleset.secrets import redact_text, secret_spans, secret_words
from ...ruleset.vocabulary import canonical_flag, norm_name

LINE_BASE = 1 << 32  # the lines of the k-th file a script sources are numbered from k * LINE_BASE


class Record:
    """The results of one script (`src`, read for the side in `ctx`)."""

    def __init__(self, src, ctx):
        self.src = src
        self.ctx = ctx
        self.facts: list[Fact] = []
        self.errors: list[InputError] = []
        self.references: list[tuple[str, int | None, str]] = []
        self.frameworks: set[str] = set()
        self.guessed: set[str] = set()  # frameworks only the options' spellings suggest (Extract.guessed)
        self.known: set[str] = set()  # frameworks a launcher or a program's name says
        self.launches = 0
        self.calls = 0  # scripts run with `bash FILE ARGS` (evaluator.called_script)
        self.installs = 0  # commands that install packages (install.py): a setup script's package list
        # commands that pass training-like options to a program scriptdiff does not know:
        # (command words as shown, number of options, line)
        self.unknown: list[tuple[str, int, int, tuple | None]] = []  # (name, options, line, their keys)
        self.invocations = 0  # launcher commands that produced facts (scopes)
        # the branch of an undecided `if` being read: (group, branch, condition as written); a
        # launch there is one way of a choice the script makes at run time (evaluator.undecided_if)
        self.choice: tuple[str, str, str] | None = None
        self.ifs_read = 0  # undecided `if` statements read so far (each a choice of its own)
        self.withheld: set[str] = set()  # secret values met, never to be shown
        self.masked: list = []  # expected NPU edits met in the script (model.Masked)
        self.dialects: dict[str, int] = {}  # framework dialect title -> the first line it was detected at
        self.devices = None  # the device tests decided for this side (specialise.Devices)
        self.files = [src]  # the script, then each fragment it sources, in the order read
        self.repaired: set = set()  # fragments whose bytes were read repaired (evaluator.Repair)
        self.written: dict = {}  # path as evaluated -> (text, first line): files the script writes (here-documents)
        # what the script sourced, as the cache must check it: (as written, line, what the
        # side's resolver found ("" when nothing), a digest of its bytes)
        self.sourced: list[tuple[str, int | None, str, str]] = []
        self.notes: list[str] = []  # for the input's account (a fragment not found, ...)
        self.unread: list[str] = []  # what was not understood (an unknown runner), for the account
        self.commented: dict[str, int] = {}  # flags only in comments, in every file read (comments.py)
        self._starts: dict[int, list[int]] = {}  # file index -> offset of each line in its text
        self._cursor: dict[int, int] = {}  # line -> where the last excerpt of that line was found
        self._secrets: dict[int, list[tuple[int, int]]] = {}  # line -> its secret parts (offsets in src.text)
        self.too_large: list[str] = []  # values over an evaluation budget, one line each (budget.py)
        self.too_large_more = 0  # and how many more were not listed
        # the programs started and the options passed to each (Extract.launches)
        self.launched: list[list] = []

    def over_budget(self, what: str, why, line: int) -> None:
        """A value too large to evaluate (budget.TooLarge): said once per value, the first few."""
        if len(self.too_large) < 5:
            self.too_large.append((f"{self.at(line)}: " if line else "") + note(what, why))
        else:
            self.too_large_more += 1

    def unknown_command(self, words, line: int, wraps: bool = False) -> None:
        """A command that is no known launcher: remembered when it passes options that look like
        a training run's (a canonical hyperparameter, many options, or a known launcher after
        `--`), so that the report can say its options were not compared instead of passing
        silently. Options are `--name[=value]` words and Hydra overrides (`a.b=c`)."""
        split = [flags.split(w.text) for w in words[1:]]
        opts = [f.dest for f in split if f is not None and f.long]
        opts += [w.text.lstrip("+~").partition("=")[0] for w in words[1:]
                 if not flags.dashed(w.text) and "=" in w.text and "." in w.text.partition("=")[0]]
        if not opts:
            return
        known = sum(1 for o in opts if canonical_flag(o, "megatron") or canonical_flag(o, "hf"))
        if known or wraps or len(opts) >= 5:
            name = words[0].text.rsplit("/", 1)[-1]
            if len(words) > 1 and not flags.dashed(words[1].text) and words[1].text.isidentifier():
                name += f" {words[1].text}"  # swift sft, ray job
            # what it can set: the settings its options name, unless it wraps a program out of view
            keys = None if wraps else tuple(dict.fromkeys(k for o in opts for k in (
                canonical_flag(o, "megatron"), canonical_flag(o, "hf"), norm_name(o)) if k))
            self.unknown.append((name, len(opts), line, keys))

    def unknown_words(self, words, what: str) -> None:
        """Words whose value is not known (words.Seg.unknown) where a launch reads them as a whole
        (its program, or the options a variable holds: `deepspeed --module $cmd`): said in the
        account once per cause, with `what` they left unread; the input is then not understood."""
        for w in words:
            for why in w.unknown:
                said = f"{why}: {what}"
                if said not in self.unread:
                    self.unread.append(said)

    def dialect(self, title: str, line: int) -> None:
        """A framework dialect (rules/<framework>.yaml `dialects:`) mapped one of this script's keys."""
        self.dialects.setdefault(title, line)

    # ------------------------------------------------------------ files and lines
    def add_file(self, src) -> int:
        """A fragment read in place: the base its lines are numbered from."""
        self.files.append(src)
        return (len(self.files) - 1) * LINE_BASE

    def place(self, line: int | None) -> tuple[str, int | None]:
        """(the name of the file a line was written in, its line there)."""
        if not line:
            return self.src.name, line
        k = min(line // LINE_BASE, len(self.files) - 1)
        return self.files[k].name, line - k * LINE_BASE

    def at(self, line: int | None) -> str:
        """How a message names a line: "line 3", or "args.sh line 3" in a sourced fragment."""
        name, local = self.place(line)
        return f"line {local}" if name == self.src.name else f"{name} line {local}"

    def _line_span(self, line: int) -> tuple[str, int, int] | None:
        k = min(line // LINE_BASE, len(self.files) - 1) if line else 0
        line -= k * LINE_BASE
        text = self.files[k].text
        starts = self._starts.get(k)
        if starts is None:
            starts = [0]
            pos = text.find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = text.find("\n", pos + 1)
            self._starts[k] = starts
        if not 0 < line <= len(starts):
            return None
        a = starts[line - 1]
        b = starts[line] - 1 if line < len(starts) else len(text)
        if b > a and text[b - 1] == "\r":
            b -= 1
        return text, a, b

    def src_line(self, line: int, near: str | None = None) -> str:
        """The source text of `line` (stripped); a long line gives an excerpt of at most
        budget.SHOWN_EXCERPT characters around `near` (the option or name the fact came from)."""
        span = self._line_span(line)
        if span is None:
            return ""
        text, a, b = span
        if b - a <= budget.SHOWN_EXCERPT:
            return text[a:b].strip()
        at = -1
        if near:
            start = self._cursor.get(line, a)  # options are met in order: search on from the last one
            at = text.find(near, start, b)
            if at == -1:
                at = text.find(near, a, b)
            if at != -1:
                self._cursor[line] = at + len(near)
        if at == -1:
            return text[a:a + budget.SHOWN_EXCERPT].strip() + " ..."
        lo = max(a, at - budget.SHOWN_EXCERPT // 4)
        hi = min(b, lo + budget.SHOWN_EXCERPT)
        # whole words only (a withheld value is replaced whole, never shown in part)
        cut = text.rfind(" ", max(a, lo - budget.SHOWN_EXCERPT), lo + 1)
        lo = cut + 1 if cut != -1 and lo > a else lo
        cut = text.find(" ", hi, min(b, hi + budget.SHOWN_EXCERPT))
        hi = cut if cut != -1 else (b if b - hi <= budget.SHOWN_EXCERPT else hi)
        for sa, sb in self._secret_spans(line, a, b):  # nor a secret, in a line without spaces
            if sa < lo < sb:
                lo = sa
            if sa < hi < sb:
                hi = sb
        return ("... " if lo > a else "") + text[lo:hi].strip() + (" ..." if hi < b else "")

    def _secret_spans(self, line: int, a: int, b: int) -> list[tuple[int, int]]:
        """The secret parts of a line (offsets in src.text), found once per line: an excerpt
        never cuts one, so `finish` withholds it whole."""
        if line not in self._secrets:
            self._secrets[line] = [(a + x, a + y) for x, y in secret_spans(self.src.text[a:b])]
        return self._secrets[line]

    def withhold(self, value: str) -> None:
        if isinstance(value, str) and value:
            self.withheld.add(value)

    def finish(self) -> None:
        """Take withheld values and secret-looking words out of every fact's source text
        (each line's words are looked at once, however many facts it holds)."""
        known = set(self.withheld)
        lines = {f.line for f in self.facts if f.source and f.line}
        lines |= {opt[1] for launch in self.launched for opt in launch[3] if opt[3] and opt[1]}
        for line in lines:
            span = self._line_span(line)
            if span is not None:
                known |= secret_words(span[0][span[1]:span[2]])
        if known:
            for f in self.facts:
                if f.source:
                    f.source = redact_text(f.source, known, scan=False)
            for launch in self.launched:
                for opt in launch[3]:
                    opt[3] = redact_text(opt[3], known, scan=False) if opt[3] else opt[3]
        if len(self.files) > 1:  # facts made from a fragment's lines name that file and its line
            for f in self.facts:
                f.path, f.line = self.place(f.line)
            for m in self.masked:
                for side in (m.gpu, m.npu):
                    if side is not None:
                        side.path, side.line = self.place(side.line)
            for launch in self.launched:  # a launch written in a fragment: its line there
                launch[1] = self.place(launch[1])[1]
                for opt in launch[3]:
                    opt[1] = self.place(opt[1])[1]

"""How much an evaluator may build, and how much a reader may take in: every bound in one place.

scriptdiff evaluates what it reads without running it: shell words (`A=$A$A`, arrays),
`${a.b}` interpolation in YAML/JSON configs, the values of Python configs (mmengine
`dict(...)` trees whose names share subtrees) and Python values (module constants,
arithmetic). Each of these can be made to grow exponentially with the size of the file: a
180-byte script that doubles a variable 22 times builds four million pieces. So each
evaluator meters what it builds against the budgets below; over one, the value is *too
large to evaluate*: it is not compared, the input says so in one line naming the file and
line ("line 23: $A is too large to evaluate (more than 1,000,000 characters); not
compared"), and the file's other settings are still compared.

The readers' own bounds (sizes of files, records and counts read) are here too, so that
the README's list of what is bounded has one source. They are constants, not options: a
test lowers one with monkeypatch; nothing a user writes should need more.
"""
from __future__ import annotations

# --- evaluated values -----------------------------------------------------------------------

VALUE_CHARS = 1_000_000  # characters of one evaluated string (a shell variable, a `${}` result)
VALUE_PIECES = 100_000  # pieces of one value: shell segments and array elements, config leaves
FILE_CHARS = 20_000_000  # characters all the evaluated values of one file may build together
FILE_PIECES = 1_000_000  # pieces (segments, elements, leaves, evaluation steps) of one file
FILE_SETTINGS = 50_000  # settings of one Python config's values, each counted once per nesting level
NUMBER_BITS = 4096  # an evaluated integer larger than this (about 1,233 digits) is no setting

TOO_LARGE_TEXT = "<too large to evaluate>"


class TooLarge(Exception):
    """An evaluation went over a budget; str() says which ("more than 1,000,000 characters")."""


class TooLargeValue(str):
    """The value of a setting that was too large to evaluate (TOO_LARGE, told apart by
    identity): readers leave it out of the facts, so it is never compared."""


TOO_LARGE = TooLargeValue(TOO_LARGE_TEXT)


def note(what: str, why: TooLarge | str, line: int | None = None) -> str:
    """The one-line account of a value that was not evaluated ("line 3: $A is too large ...")."""
    where = f"line {line}: " if line else ""
    return f"{where}{what} is too large to evaluate ({why}); not compared"


class Meter:
    """What one file's evaluation has built so far, against the budgets of this module (read
    when the meter is made, so a test can lower them)."""

    def __init__(self):
        self.value_chars = VALUE_CHARS
        self.value_pieces = VALUE_PIECES
        self.file_chars = FILE_CHARS
        self.file_pieces = FILE_PIECES
        self.chars = 0
        self.pieces = 0

    def value(self, chars: int, pieces: int = 1) -> None:
        """One value of `chars` characters in `pieces` pieces is being built: charged to the
        file, and refused when it (or the file's total) is over budget."""
        if chars > self.value_chars:
            raise TooLarge(f"more than {self.value_chars:,} characters")
        if pieces > self.value_pieces:
            raise TooLarge(f"more than {self.value_pieces:,} pieces")
        self.chars += chars
        self.pieces += pieces
        if self.chars > self.file_chars:
            raise TooLarge(f"the file's values built more than {self.file_chars:,} characters")
        if self.pieces > self.file_pieces:
            raise TooLarge(f"the file's values built more than {self.file_pieces:,} pieces")

    def step(self, n: int = 1) -> None:
        """`n` more steps of evaluation work (no value size to measure)."""
        self.pieces += n
        if self.pieces > self.file_pieces:
            raise TooLarge(f"more than {self.file_pieces:,} evaluation steps")


def check_number(v) -> None:
    """Refuse an integer too large to be a setting (its digits alone would be a budget)."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > NUMBER_BITS:
        raise TooLarge(f"a number of more than {NUMBER_BITS:,} bits")


# --- what readers take in -------------------------------------------------------------------

TREE_DEPTH = 100  # folder levels a walk descends (diff, check, data, curves)
TENSORS = 250_000  # tensors of one checkpoint (a 671B MoE model has about 91,000)
STAT_TENSORS = 10_000  # differing tensors measured by value (max |diff|, rel L2, cosine) per run
TORCH_PICKLE_NODES = 1_000_000  # containers and tensors walked in one PyTorch checkpoint's object
TORCH_DEPTH = 200  # nesting of a PyTorch checkpoint's dicts and lists
TORCH_RECORDS = 1_000_000  # entries of a PyTorch zip checkpoint
TORCH_INFLATED = 256 * 1024 * 1024  # bytes a PyTorch zip checkpoint's compressed entries inflate to
LOG_RECORD = 16 * 1024 * 1024  # one record of a trainer_state.json log_history (it is streamed)
EVENT_RECORD = 64 * 1024 * 1024  # one record of a TensorBoard event file (a scalar takes about 40 bytes)
LINK_HOPS = 40  # symbolic links followed in resolving one path under `collect --root` (Linux's own limit)
DUMP_RECORD = 16 * 1024 * 1024  # one call of an msprobe dump.json, one group of stack.json (both streamed)
DUMP_SLOTS = 10_000  # tensors and arguments of one dumped call compared (a foreach call over 10,000 tensors)
DUMP_DEPTH = 32  # nesting of one dumped call's arguments
DUMP_FRAMES = 200  # frames of one call stack
DUMP_TENSOR_BYTES = 1024 * 1024 * 1024  # one saved tensor file (dump_tensor_data/) read through a safe loader
DUMP_TENSORS = 1_000  # saved tensors read per comparison (slots without statistics, the first divergence)
DUMP_LISTED = 200  # calls without a counterpart listed by name per rank and side (all are counted)
GIT_TIMEOUT = 10.0  # seconds one git command may take (SCRIPTDIFF_GIT_TIMEOUT overrides)

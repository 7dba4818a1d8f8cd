"""How much an evaluator may build, how much a reader may take in, how much a run keeps and
how much of a long input a report writes: every bound in one place.

scriptdiff evaluates what it reads without running it: shell words (`A=$A$A`, arrays),
`${a.b}` interpolation in YAML/JSON configs, the values of Python configs (mmengine
`dict(...)` trees whose names share subtrees) and Python values (module constants,
arithmetic). Each of these can be made to grow exponentially with the size of the file: a
180-byte script that doubles a variable 22 times builds four million pieces. So each
evaluator meters what it builds against the budgets below; over one, the value is *too
large to evaluate*: it is not compared, the input says so in one line naming the file and
line ("line 23: $A is too large to evaluate (more than 1,000,000 characters); not
compared"), and the file's other settings are still compared.

The readers' own bounds (sizes of files, records and counts read, chunks read at a time,
nesting followed, deadlines), the sizes of the memos a run keeps and the cuts a report makes
of a long value are here too, so that docs/bounds.md has one source: no other module
compares a size, a depth or a count with a number of its own (tests/test_budget_home.py
says how that is checked). They are constants, not options: a test lowers one with
monkeypatch (modules read them as `budget.NAME` when they use them); nothing a user writes
should need more.
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
DUMP_RUN = 64 * 1024  # characters of dump.json calls decoded at once by the compiled reader (dumps/reader.py; 256K held 7 MiB more, no faster)
DUMP_SLOTS = 10_000  # tensors and arguments of one dumped call compared (a foreach call over 10,000 tensors)
DUMP_DEPTH = 32  # nesting of one dumped call's arguments
DUMP_FRAMES = 200  # frames of one call stack
DUMP_TENSOR_BYTES = 1024 * 1024 * 1024  # one saved tensor file (dump_tensor_data/) read through a safe loader
DUMP_TENSORS = 1_000  # saved tensors read per comparison (slots without statistics, the first divergence)
DUMP_DICT_CHARS = 200  # characters of a dumped call's dict-valued argument kept (its repr)
DUMP_LISTED = 200  # calls without a counterpart listed by name per rank and side (all are counted)
DUMP_LISTED_ODD = 3  # values that cannot be compared named per rank (all are counted)
DUMP_EVIDENCE_CALLS = 200_000  # API calls of one rank's forward pass kept (without their tensors) to find its attention blocks (dumps/evidence.py)
GIT_TIMEOUT = 10.0  # seconds one git command may take (SCRIPTDIFF_GIT_TIMEOUT overrides)
STORAGE_TIMEOUT = 60.0  # seconds one object-store request may take, retries included (SCRIPTDIFF_STORAGE_TIMEOUT overrides)
PACK_BYTES = 4 * 1024 * 1024  # bytes of the user's rule packs together (the shipped ones hold 500 KB)
PACK_NODES = 100_000  # YAML nodes (keys, values, items; aliases expanded) of the user's packs together

# files, folders and git
MAX_READ = 256 * 1024 * 1024  # bytes of one file read whole, every git blob too (a hard cap, whatever --max-bytes says)
BINARY_SNIFF = 8192  # bytes of a file's head that tell binary from text
KIND_SNIFF = 4000  # characters of a file's head its kind is detected from (rules/kinds.yaml `sniff_bytes`: default)
MARKER_SNIFF = 2000  # bytes of a .json file looked at for a weights fingerprint's or a data manifest's marker
NPU_SNIFF = 4 * 1024 * 1024  # bytes of a staged file looked at for the NPU's name (one-file mode, the hook)
MOUNT_TABLE = 4 << 20  # bytes of /proc/self/mountinfo read to know the pseudo-filesystems
MOUNT_DEVICES = 256  # devices whose filesystem type a process remembers (a new one reads the table again)
COMPARE_CHUNK = 1 << 20  # bytes read at a time when a folder walk hashes a file or compares two
RECORD_DIFF_BYTES = 1 << 28  # bytes of each side read to name the first differing record of two data files
SCAN_CHUNK = 1 << 20  # bytes read at a time when a file is searched for an inline suppression
CONFIG_BYTES = 4 * 1024 * 1024  # a `check` configuration (pyproject.toml, scriptdiff.toml): a few lines, larger is not one
TRACKER_BYTES = 4096  # Megatron's latest_checkpointed_iteration.txt (an iteration number)
MACHINE_FILE_BYTES = 1 << 20  # a file `collect` reads from the machine (/etc/os-release, a driver's version file)
HEADER_FILE_BYTES = 1 << 16  # a C header `collect` reads a library's version from (cudnn.h, nccl.h)
COMMAND_TIMEOUT = 5.0  # seconds a program `collect` runs (nvidia-smi, npu-smi, nvcc) may take
SEARCH_DIRS = 20_000  # folders looked into below the root for a patch's files (`review`)
SEARCH_DEPTH = 6  # ... at most this deep
INIT_DEPTH = 6  # how deep `init` searches a project for its two sides
INIT_FOLDERS = 5000  # and how many of its folders it looks into at most
INIT_LOOK = 2000  # files `init` looks at to tell what a folder of one side holds

# JSON and YAML
PBTXT_TOKENS = 2_000_000  # tokens of a protobuf text config (lang/pbtxt.py): far above any real config
DOCUMENT_DEPTH = 200  # nesting of a JSON or YAML document: deeper than any real config, well inside Python's stack
JSON_EAGER = 512 * 1024  # characters of JSON whose every path's line is found at once; above it, on demand
JSON_CHUNK = 1 << 20  # characters a streamed JSON document (jsonload.Stream) is read in at a time
YAML_NODES = 100_000  # nodes a YAML file's aliases may expand to, however short it is (plus half its size)
INTERPOLATION_DEPTH = 8  # `${a.b}` references resolved inside one another in one config value

# Python and shell
PARSE_DEPTH = 200  # weighted nesting of a Python file the structural parser (libcst) is known to handle
PARSE_NODES_PER_BYTE = 0.25  # nodes of CPython's tree a Python file may hold per byte of --max-bytes (libcst: about 2 KB each)
PARSE_STACK = 256 << 20  # bytes of stack of the thread that parses Python (virtual memory, touched as used)
VALUE_DEPTH = 20  # nesting of a Python value the facts reader evaluates
DICT_DEPTH = 8  # nesting of a module-level dict literal whose keys are read as settings
LITERAL_CHARS = 400  # characters of a Python literal kept as a setting's value (longer: "computed")
POWER_EXPONENT = 128  # exponent up to which `a ** b` is evaluated in a Python value (with |a| < 1e6)
DEVICE_TEST_DEPTH = 30  # nesting of an expression a device test is decided on
CALL_DEPTH = 12  # functions of a Python file followed inside one another to evaluate a value (deeper: unknown)
NAMES_BY_TEXT = 32  # module device names, dicts and helpers up to which a statement is searched for them by text (more: by its names)
RELEVANCE_STEPS = 400  # places a code difference's value is followed to before its reach is unknown (relevance.py)
RELEVANCE_DEPTH = 3  # calls of the file's own functions followed inside one another from a code difference
UNWRAP_DEPTH = 8  # blocks one side wraps inside one another around statements the other runs as they are (align.unwrap)
CONFIG_VALUE_DEPTH = 50  # nesting of a value of a Python config (mmengine dict trees)
CONFIG_POWER_EXPONENT = 64  # exponent up to which `a ** b` is evaluated in a Python config
CONFIG_OPAQUE_CHARS = 200  # characters of an unevaluated Python config expression kept as its text
SHELL_DEPTH = 8  # shell functions, eval strings and sourced fragments read inside one another
LAUNCH_DEPTH = 4  # launchers that start launchers (`ray job submit -- torchrun ...`) followed
SHELL_LOOP_ITERATIONS = 64  # runs of a shell loop unrolled (`for x in a b c`); a longer one leaves what it sets unknown
SHELL_LOOP_RUNS = 256  # loop runs unrolled in one script, nested loops included; past it a loop is not unrolled
KIND_SETS_DEPTH = 4  # kinds that name kinds whose settings they set (rules/kinds.yaml `sets`), followed
PRECISE_DIFF_LINES = 2000  # lines of a side above which difflib's autojunk heuristic keeps a line diff from being quadratic
PAIRED_BLOCK_CELLS = 10_000  # a changed block of the review page whose rows are paired by meaning: GPU lines x NPU lines

# datasets and checkpoints
FILE_HASH_CHUNK = 8 * 1024 * 1024  # bytes of a file (a dataset's, a checkpoint's) hashed at a time
MAP_SEGMENT = 256 * 1024 * 1024  # bytes of a big file memory-mapped at a time for hashing
SAMPLE_EDGE = 4 * 1024 * 1024  # bytes of a file's head and tail a sampled fingerprint reads
SAMPLE_BLOCK = 1024 * 1024  # bytes of each strided block between them
SAMPLE_BLOCKS = 64  # strided blocks a sampled fingerprint reads
SAFETENSORS_HEADER = 100 * 1024 * 1024  # bytes of a safetensors header (the format's own limit)
TENSOR_HASH_CHUNK = 64 * 1024 * 1024  # bytes of a tensor hashed at a time
REMOTE_BLOCK = 16 * 1024 * 1024  # bytes of one ranged read of a checkpoint in object storage
STAT_ELEMS = 256 * 1024  # elements of a tensor measured at a time (float64 chunks that stay in cache)
STORAGE_CHUNK = 8 * 1024 * 1024  # bytes of one ranged read of a file in object storage
STORAGE_AHEAD = 3  # ranged reads in flight per file being read
STORAGE_PAGE = 1000  # keys per listing request (the S3 maximum)
STORAGE_BLOCK = 1024 * 1024  # bytes of s3fs's read block for a file opened whole

# logs
LOG_HEAD = 64 * 1024  # bytes of a log's head its format is told from
LOG_BINARY_SNIFF = 4096  # bytes of that head in which a NUL byte says binary (or a TensorBoard file)
EVENT_SNIFF = 256  # bytes of that head in which a TensorBoard file names `brain.Event`
LOG_LINE = 1 << 20  # characters of a log line read at once (a longer one comes in pieces: a file without newlines stays bounded)
DICT_LINE = 64 * 1024  # a printed dict longer than this is not a metrics line
LOG_CHUNK = 1 << 20  # characters of a trainer_state.json decoded at a time (its log_history is streamed)
OVERFLOW_LINES = 20  # loss-scale overflow lines of a log remembered with their place (the count is exact)
CURVE_POINTS = 1 << 17  # points kept per metric before they are decimated
CURVE_BUFFER = 1 << 16  # raw points buffered before they are folded into a metric

# --- what a run keeps -----------------------------------------------------------------------

CACHE_ENTRY_BYTES = 64 * 1024 * 1024  # one entry of the cache on disk: a larger result is recomputed, not cached
CACHE_HEADER_BYTES = 512  # the header line of a cache entry
CACHE_KEY_FILE_BYTES = 256  # the per-user cache key file (64 hex digits): a larger one is not the key
PARSE_CACHE_BYTES = 1_000_000  # bytes of Python source whose parsed trees are kept for the next file
FREEZE_OBJECTS = 50_000  # new objects a unit of work leaves before a command freezes them rather than collect (run/gcpause.py)
TREE_MEMO_BYTES = 300_000  # bytes of Python source whose CPython trees are kept for a pair's other readers (about 25 MB)
MEMO_OUTPUT_BYTES = 8 * 1024 * 1024  # output of a `diff` kept to be replayed: a larger one is not kept
MEMO_PATHS = 200_000  # input paths a replayable `diff` records: one that reads more is not kept
VERSION_MEMO = 4096  # package version strings kept parsed
NUMBER_MEMO = 4096  # Python number literals kept evaluated
DTYPE_MEMO = 256  # dump dtype names kept normalised
SECRET_NAME_MEMO = 65536  # names kept with whether they look secret (emptied when full)
SECRET_LINE_MEMO = 256  # lines kept with their secret spans (emptied when full)
SECRET_DECODINGS = 3  # percent-encodings of a text undone to look for secrets in it (%253A: twice)
CODE_PATH_MEMO = 65536  # paths kept with whether they are Python (emptied when full)
WRITE_WAIT = 30.0  # seconds a folder diff's reader process may take to write its cache entries before it is stopped
STOP_WAIT = 5  # seconds a killed reader process is given to end

# --- what a report writes of a long input ---------------------------------------------------

SHOWN_CHARS = 200  # characters of a value a report writes (of a message: twice this); --full-values writes it whole
SHOWN_ITEMS = 20  # elements of a list, set or mapping value a report writes
SHOWN_SOURCE = 300  # characters of a source line shown under a finding
SHOWN_BLOCK_LINES = 8  # lines of a multi-line value (a review hunk's) the text report writes, then "… (N more lines)"
LOOP_RUNS_SHOWN = 20  # values a finding lists of the other runs of a loop it stands for (extra.runs)
MESSAGE_VALUE_CHARS = 200  # characters of a value a finding's message names (the value itself stays whole)
SHOWN_STATEMENT = 160  # characters of a Python statement a finding shows as its value, on one line
SHOWN_EXCERPT = 160  # characters of a long script line shown around a fact's option
SHOWN_LOG_LINE = 1000  # characters of a cited log line (the writers cut it further)
PAGE_FILE_BYTES = 2_000_000  # a file the html page reads from disk to show: a larger one is not shown
PAGE_LINES = 20_000  # lines of one side the html page shows (a generated file would make the page huge)
PAGE_LOCATE_CHARS = 2000  # characters of a line in which the page marks the words that write a value (its script: 2000 too)
CHART_POINTS = 4000  # points per series in the page's charts (the run's extremes always among them)
CHART_MARKS = 500  # event steps kept per kind for the charts' markers
CHART_NONFINITE = 200  # non-finite points kept per series in the page's charts
# a function or class under another name on each side (lang/python/align.py renamed_defs): paired
# when this share of its text's lines is the same, among at most this many candidate pairs
RENAME_SIMILARITY = 0.75
RENAME_CANDIDATES = 400

"""Every type that crosses a stage of the pipeline: facts in, findings out.

sources -> parse -> normalize -> facts (Fact, Extract) -> compare (PairResult) -> classify
(Finding, Masked) -> report (Report), steered by Options and a per-side SideContext.

Plain dataclasses, no behaviour beyond ordering and serialisation, so that every reader
(lang/, checks/), the engine, every writer (report/) and the library API share one model
and import nothing above it. The JSON shape is the contract in docs/json.md;
fields may be added, none renamed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from . import __version__
from .severity import SEVERITIES, Severity  # noqa: F401  (re-exported: every stage's type)

SCHEMA = 1



# Where a fact came from. Ordered from weakest to strongest: a training log outranks a
# launch script, which outranks a config file, which outranks a framework default.
ORIGIN_DEFAULT = "default"
ORIGIN_DERIVED = "derived"
ORIGIN_EXPLICIT = "explicit"
RANK_DEFAULT = 0
RANK_CONFIG = 10
RANK_CODE = 15
RANK_SCRIPT = 20
RANK_LOG = 30


@dataclass
class Fact:
    """One typed, normalized setting read from one side, with its provenance."""

    key: str
    value: Any
    check: str = "hyperparameters"
    path: str | None = None
    line: int | None = None
    source: str = ""  # the text it came from, or "default" / "derived"
    origin: str = ORIGIN_EXPLICIT  # explicit | default | derived
    via: str | None = None  # e.g. "$LR", "DeepSpeed config ds.json", "world_size / (tp*pp*cp)"
    rank: int = RANK_SCRIPT
    note: str | None = None  # e.g. "commented out at line 12"
    meta: dict = field(default_factory=dict)

    @property
    def derived(self) -> bool:
        return self.origin == ORIGIN_DERIVED

    def side(self) -> "Side":
        line = self.line if self.origin == ORIGIN_EXPLICIT else None
        source = self.source
        if self.origin == ORIGIN_DEFAULT:
            source = "default"
        elif self.origin == ORIGIN_DERIVED:
            source = "derived"
        return Side(value=self.value, path=self.path, line=line, source=source, via=self.via, fact=self)


@dataclass
class Side:
    """One side of a finding: the value and where it was read."""

    value: Any = None
    path: str | None = None
    line: int | None = None
    source: str = ""
    via: str | None = None  # not part of the contract's required fields; emitted when set
    # the fact this side was read from (its provenance: `scriptdiff fix` edits at its origin);
    # never serialised, not part of the contract
    fact: "Fact | None" = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        d = {"value": jsonable(self.value), "path": self.path, "line": self.line, "source": self.source}
        if self.via:
            d["via"] = self.via
        return d


@dataclass
class Finding:
    rule: str
    check: str
    severity: Severity  # the factory's is a member; one built by hand may give its string
    key: str
    gpu: Side | None
    npu: Side | None
    message: str
    derived: bool = False
    extra: dict = field(default_factory=dict)  # writer hints (e.g. tensor statistics)
    # the other settings of the key that say the same two values (compare.py: a launch flag and
    # the program's keyword against the other side's one setting), as findings of their own:
    # one finding is reported, and `scriptdiff fix` edits every setting it stands for; never
    # serialised, not part of the contract
    settings: list["Finding"] = field(default_factory=list, repr=False, compare=False)

    def sort_key(self, check_order: tuple[str, ...] = ()) -> tuple:
        """Report order: by check (in the order given: the check registry's), path, line, key; a
        finding that explains another of its check (`cause:KEY`, a dump's probable cause) after
        the findings it explains, wherever its own lines are."""
        path = (self.gpu.path if self.gpu else None) or (self.npu.path if self.npu else None) or ""
        line = (self.gpu.line if self.gpu else None) or (self.npu.line if self.npu else None) or 0
        rank = check_order.index(self.check) if self.check in check_order else len(check_order)
        return (rank, self.key.startswith("cause:"), path, line, self.key, self.rule, self.message)

    def to_json(self) -> dict:
        d = {
            "rule": self.rule,
            "check": self.check,
            "severity": Severity(self.severity).value,
            "key": self.key,
            "derived": self.derived,
            "gpu": self.gpu.to_json() if self.gpu else None,
            "npu": self.npu.to_json() if self.npu else None,
            "message": self.message,
        }
        if self.extra:
            d["extra"] = jsonable(self.extra)
        return d


@dataclass
class Masked:
    """An expected GPU->NPU substitution that was recognised and not reported."""

    rule: str
    gpu: Side | None
    npu: Side | None
    # what the edit maps to when its rule covers several (an NPU qualified name, a dump port's
    # form, a transfer_to_npu mapping: rules/fidelity.yaml fidelity_targets), else ""
    target: str = ""
    # what the edit keeps (exact, equivalent, changes: docs/fidelity.md), set by the run
    fidelity: str = ""

    def sort_key(self) -> tuple:
        g = self.gpu or Side()
        n = self.npu or Side()
        return (g.path or n.path or "", g.line or 0, n.line or 0, self.rule, g.source, n.source)

    def to_json(self) -> dict:
        def loc(s: Side | None):
            return None if s is None else {"path": s.path, "line": s.line, "source": s.source}

        return {"rule": self.rule, "gpu": loc(self.gpu), "npu": loc(self.npu), "fidelity": self.fidelity or None,
                "target": self.target or None}


@dataclass
class InputError:
    """An input that could not be read or parsed, and what was done instead."""

    path: str
    message: str
    fatal: bool = False  # the input could not be analysed at all
    # "error", or "note": how an input was read (a GBK file decoded with a fallback), shown as
    # `note:`, never counted as an error and never changing the exit status
    level: str = "error"
    # the checks whose settings a failed input could have set: a dataset manifest only the
    # dataset's, an environment snapshot the environment's and libraries'; empty: any (a script,
    # a launch script, a config can set anything). A side is unknown only for those.
    checks: tuple[str, ...] = ()

    @property
    def is_note(self) -> bool:
        return self.level == "note"

    @property
    def severity(self) -> Severity:
        """How the writers that grade input errors as they grade findings (SARIF, GitHub) grade
        it: a note as info, an input not analysed at all as an error, else a warning."""
        return Severity.INFO if self.is_note else Severity.ERROR if self.fatal else Severity.WARNING

    def to_json(self) -> dict:
        d = {"path": self.path, "message": self.message}
        if self.level != "error":  # additive: an entry without "level" is an error
            d["level"] = self.level
        return d


@dataclass
class InputAccount:
    """What one input yielded: the accounting behind "exit 0 means compared and equal".

    status: "understood" (settings read, or code compared), "identical" (same bytes as its
    counterpart: equal without reading), "not understood" (content from which nothing, or not
    everything, comparable was read: `unread` says what), "failed" (could not be read)."""

    path: str
    side: str  # gpu | npu
    kind: str
    status: str = "understood"
    settings: int = 0  # facts read
    mapped: int = 0  # of which under a canonical key of the vocabulary
    unread: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. where a referenced config was found
    # keys the other side set that could not be compared because this input was not understood
    uncompared: set[str] = field(default_factory=set)
    # its reader could not read part of it, so what it sets is unknown (a side with such an
    # input is compared only where both sides have a value)
    opaque: bool = False
    # when every cause of it being opaque can set only some settings, their keys (Extract.hides);
    # None: it could set any
    hides: set[str] | None = None
    # Extract.unknowns of its reading, and for each phrase the other side's settings it left
    # uncompared (said in `unread` once the comparison is done, only when there are some)
    maybe: dict[str, list[str]] = field(default_factory=dict)
    withheld: dict[str, set[str]] = field(default_factory=dict)
    # the configs it references that were found nowhere (each also one `unread` entry)
    missing: list["MissingReference"] = field(default_factory=list)
    # the files read through it (a launch script's program and configs), each with its own
    # account: its settings count is theirs too, what they could not read is said on them
    through: list["InputAccount"] = field(default_factory=list)
    # what it leaves unknown beyond its own settings and the missing configs: "code" (the
    # program it starts is not in view while the other side's is: what code sets)
    unknown: set[str] = field(default_factory=set)
    # a log's word against its side's scripts (checks/evidence.py): which of the settings the
    # scripts set it confirmed, contradicted, or did not report
    evidence: list[str] = field(default_factory=list)

    def sort_key(self) -> tuple:
        return (self.side, self.path)

    def to_json(self) -> dict:
        d = {"path": self.path, "side": self.side, "kind": self.kind, "status": self.status,
             "settings": self.settings, "mapped": self.mapped, "unread": list(self.unread)}
        if self.notes:
            d["notes"] = list(self.notes)
        if self.evidence:
            d["evidence"] = list(self.evidence)
        if self.through:
            d["through"] = [a.to_json() for a in sorted(self.through, key=InputAccount.sort_key)]
        return d

    def every(self) -> list["InputAccount"]:
        """This account and those of the files read through it."""
        return [self] + [x for a in self.through for x in a.every()]


@dataclass
class MissingReference:
    """A config an input references that its side's resolver found nowhere: the keys a file of
    its kind can set are unknown on that side (registry.kind_can_set), nothing else is."""

    written: str  # as written (--deepspeed examples/ds_z3.json)
    line: int | None
    key: str  # the option or config key that names it (deepspeed, trainer.deepspeed, config_file)
    kind: str  # the kind of file the option names (rules/kinds.yaml `referenced`)
    referrer: str  # the input that names it
    frameworks: tuple[str, ...] = ()  # the referring run's frameworks (what it fills in itself)
    dialect: str | None = None  # the dialect the file is known to be written in (an accelerate config)
    tried: list[str] = field(default_factory=list)
    source: str = ""  # the referring line
    withheld: set[str] = field(default_factory=set)  # keys of the other side it left uncompared
    unread: int = -1  # its entry in the referrer's account `unread`
    invocation: int | None = None  # the program of the referrer that names it (a launch script's), if one


@dataclass
class Report:
    gpu: str
    npu: str
    findings: list[Finding] = field(default_factory=list)
    masked: list[Masked] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    # check name -> (verdict, reason) for `scriptdiff check`; filled by commands that know
    verdicts: dict = field(default_factory=dict)
    # side-by-side rows for `hparams` (key -> (gpu Fact|None, npu Fact|None))
    table: list = field(default_factory=list)
    compared: int = 0  # how many inputs (or input pairs) were actually compared
    # each side's FactTable (GPU, NPU), for views that need more than the findings (hparams)
    tables: tuple | None = None
    # the checks in report order (the engine fills it from the check registry)
    check_order: tuple[str, ...] = ()
    # what a check computed beyond its findings, for views (e.g. "weights": counts and the
    # worst tensors); not part of the JSON contract
    details: dict = field(default_factory=dict)
    # lines the text report shows right after its header (a view's summary, e.g. weights)
    overview: list[str] = field(default_factory=list)
    # the accounting: one InputAccount per input read (what was read, what was understood)
    inputs: list["InputAccount"] = field(default_factory=list)
    # a request that cannot be honoured was met while running (an unknown rule code in an
    # inline ignore comment): exit 2, as a bad --select would
    usage_errors: list[str] = field(default_factory=list)
    # additive top-level JSON sections a command adds (e.g. "curves"); never replaces a field
    json_extra: dict = field(default_factory=dict)
    # only when Options.keep_texts (the html page): each file's text by (side, display path),
    # and which files were compared with which (GPU path, NPU path); not in the JSON contract
    texts: dict[tuple[str, str], str] = field(default_factory=dict)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    # only when Options.keep_facts (`scriptdiff fix`): every source read, by (side, display path),
    # and each comparison scope's (GPU, NPU) FactTables; not in the JSON contract
    sources: dict = field(default_factory=dict)
    unit_tables: list = field(default_factory=list)
    # only when Options.keep_texts: settings written at a line on both sides whose values are
    # equal once normalized, (key, GPU Side, NPU Side): the page's "equal after normalising"
    equal: list = field(default_factory=list)

    def absorb(self, outcome) -> "Report":
        """Add a run's Outcome (scriptdiff.run.pipeline): its findings, masks, errors and inputs;
        the first run that has a table gives the report's; sorted."""
        self.findings += outcome.findings
        self.masked += outcome.masked
        self.errors += outcome.errors
        self.inputs += outcome.inputs
        self.usage_errors += outcome.usage_errors
        if not self.table and outcome.table:
            self.table, self.tables = outcome.table, outcome.tables
        self.texts.update(outcome.texts)
        self.pairs += outcome.pairs
        self.sources.update(outcome.sources)
        self.unit_tables += outcome.unit_tables
        self.equal += outcome.equal
        self.compared += outcome.compared
        self.check_order = outcome.check_order or self.check_order
        return self.sorted()

    def sorted(self) -> "Report":
        self.findings.sort(key=lambda f: f.sort_key(self.check_order))
        self.masked.sort(key=Masked.sort_key)
        self.errors.sort(key=lambda e: (e.path, e.message))
        return self

    def every_input(self) -> list["InputAccount"]:
        """Every file read: the inputs, and the files read through them (their programs, their
        configs), each once."""
        out, seen = [], set()
        for a in (x for top in self.inputs for x in top.every()):
            if (a.side, a.path) not in seen:
                seen.add((a.side, a.path))
                out.append(a)
        return out

    def account_line(self) -> str | None:
        """One line: what was read and how much of it was understood ("read 14 files: 12
        understood, 2 not: a.sh (launcher `swift` is not known ...), ...")."""
        if not self.inputs:
            return None
        every = self.every_input()
        n = len(every)
        bad = [a for a in every if a.status in ("not understood", "failed")]
        ok = n - len(bad)
        line = f"read {n} file{'s' if n != 1 else ''}: {ok} understood or identical"
        if bad:
            shown = "; ".join(f"{a.path} ({a.status}: {a.unread[0] if a.unread else 'could not be read'})"
                              for a in sorted(bad, key=InputAccount.sort_key)[:3])
            line += f", {len(bad)} not: {shown}" + (" ..." if len(bad) > 3 else "")
        return line

    def evidence_lines(self) -> list[str]:
        """Each log's account of the settings its side's scripts set (SD229's evidence)."""
        return [f"{a.path}: {e}" for a in sorted(self.every_input(), key=InputAccount.sort_key) for e in a.evidence]

    def exit_code(self) -> int:
        """0: every input was read, understood and compared, and nothing of severity warning or
        error differs. 1: a difference, or an input that could not be compared while the rest
        was. 2: the run could not go on (nothing of a side could be compared, a bad request)."""
        if self.usage_errors:
            return 2
        if self.errors and any(e.fatal for e in self.errors) and self.compared == 0:
            return 2
        if any(Severity(f.severity).loud for f in self.findings):
            return 1
        if any(e.fatal for e in self.errors):
            return 1  # an input was not compared: never a pass
        return 0

    def to_json(self) -> dict:
        self.sorted()
        d = {
            "schema": SCHEMA,
            "tool": {"name": "scriptdiff", "version": __version__},
            "gpu": self.gpu,
            "npu": self.npu,
            "findings": [f.to_json() for f in self.findings],
            "masked": [m.to_json() for m in self.masked],
            "errors": [e.to_json() for e in self.errors],
        }
        if self.inputs:
            d["inputs"] = [a.to_json() for a in sorted(self.inputs, key=InputAccount.sort_key)]
        if self.verdicts:
            d["verdicts"] = {k: {"verdict": v[0], "reason": v[1]} for k, v in sorted(self.verdicts.items())}
        for k, v in sorted(self.json_extra.items()):
            d.setdefault(k, jsonable(v))
        return d


def jsonable(v: Any) -> Any:
    """Values as JSON sees them: tuples become lists, sets sorted lists, floats stay floats."""
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted(jsonable(x) for x in v)
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return v
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


class UsageError(Exception):
    """A request that cannot be carried out (bad arguments, an unreadable configuration or
    baseline): one line, shown by the CLI as `scriptdiff: <message>` with exit status 2."""


# --- what one stage hands the next ---------------------------------------------------------

# the key of an Extract reference to the program a launcher starts (a config reference's key
# is the option that names it): the program is part of the run, read when it is in view
REF_PROGRAM = "program"


@dataclass
class Extract:
    """What one file yields: its facts, and the masks, errors and references met on the way."""

    facts: list[Fact] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    masked: list[Masked] = field(default_factory=list)
    frameworks: set[str] = field(default_factory=set)
    # those of `frameworks` known only from how the options are spelled (`--learning_rate`: Hugging
    # Face spellings), not from the program itself: their defaults apply only where another
    # input of the run (the program's code, its launcher, a config's dialect) says the same
    guessed: set[str] = field(default_factory=set)
    # framework dialects the reader detected, each "title at file:line" (the input's account notes)
    dialects: set[str] = field(default_factory=set)
    # configs this file refers to: (path as written, line, referring key); followed when they exist
    references: list[tuple[str, int | None, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # rare: one-sided findings (e.g. unresolved)
    # what the reader met and could not compare, each a short phrase naming it ("launcher `swift`
    # is not known: its 23 options were not compared"); a non-empty list makes the input
    # "not understood" (rule input-not-understood), never a silent pass
    unread: list[str] = field(default_factory=list)
    # for an `unread` phrase whose cause can set only some settings, those keys (a launcher not
    # known: the keys its options name); a phrase absent here could set any setting
    hides: dict[str, list[str]] = field(default_factory=dict)
    # what the reader met that may set some settings it cannot read (a Python object built by a
    # function of a module not read: `optimizer = build_optimizer(args)`), each phrase -> those
    # settings (keys, or `bound:NAME`: whatever a call bound to NAME sets on the other side).
    # Unlike `unread`, said only when the other side sets one of them: then they are unknown
    # on this side, never absent (rule input-not-understood)
    unknowns: dict[str, list[str]] = field(default_factory=dict)
    # the reader understood the input even though it yielded no facts (a launch command with
    # no options): nothing to compare is then an answer, not a failure to read
    understood: bool = False
    # how the reader read it, for the input's account (the device tests it decided for this
    # side's device and those it left as written: docs/devices.md)
    notes: list[str] = field(default_factory=list)
    # files read into this one (a launch script's `source ./args.sh`): (as written, line, what
    # the side's resolver found, "" when nothing, a digest of its bytes). A cached reading is
    # used only while every one of them still resolves to the same bytes (engine.extract)
    sourced: list[tuple[str, int | None, str, str]] = field(default_factory=list)
    # a program: the command line its parser accepts (lang/python/cmdline.py), None when the
    # file shows no parser
    command_line: dict | None = None
    # a launch script: each program it starts and the options it passes, in order:
    # [program as written, line, invocation, [[option as written, line, value shown, source], ...]]
    launches: list[list] = field(default_factory=list)
    # what an alignment profile may ask of this file besides its settings (run/alignment.py): each
    # (probe name, line, source line), e.g. a DataLoader that shuffles from torch's default
    # generator (rules/alignment.yaml `probes`); never compared between the sides
    probes: list[tuple[str, int | None, str]] = field(default_factory=list)


@dataclass
class PairResult:
    """What a structural diff of two files (Python, or text as a fallback) finds."""

    findings: list[Finding] = field(default_factory=list)
    masked: list[Masked] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)


@dataclass
class Options:
    """How a run is steered; the same object for every command and every check."""

    select: list[str] | None = None
    ignore: list[str] | None = None
    min_severity: str | None = None  # --severity LEVEL: only findings of LEVEL and above (info < warning < error)
    use_cache: bool = True
    checks: set[str] | None = None  # restrict to these checks
    strict_local: bool = False  # compare local version tags (+cu121)
    max_bytes: int = 500_000  # above this, code is compared as text (docs/python.md: what a pair at the limit costs)
    jobs: int | None = None  # worker processes for parsing; None = one per core
    baseline: object | None = None  # a loaded suppress.Baseline: its findings are not reported
    keep_texts: bool = False  # keep the files' text in the Report (Report.texts, .pairs) for the html page
    progress: object | None = None  # start(total)/advance(n)/close(): files parsed, for a progress display
    keep_facts: bool = False  # keep every source read and each scope's fact tables in the Report (fix)
    profile: str | None = None  # --profile NAME: each side checked against that profile (rules/alignment.yaml `profiles`)
    # each side's scripts checked against what its run reports in its logs (the checks' `audit`
    # hooks: SD229); `hparams`, the table of effective values, leaves it to diff and check
    evidence: bool = True


@dataclass
class SideContext:
    """One side (GPU or NPU) of a run, as the readers see it."""

    side: str  # "gpu" | "npu"
    root: str | None = None  # folder that relative references resolve against
    options: Options = field(default_factory=Options)
    # where this side's references are (references.Resolver: on disk, in a git revision, in a
    # patch laid over its root); None: on disk, from `root`
    resolver: object | None = None
    analysed: int = 0  # sources whose extraction did not fail outright

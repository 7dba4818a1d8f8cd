"""The staged run: every command and check compares its inputs here, the same way.

An entry point (two files, two folders, git revisions, a patch, a `check` configuration, a
pre-commit file list, curves, datasets, checkpoints) builds one `Inputs`: the sources of
each side, which files are compared as code (`pairs`), what is compared with what (`units`:
scopes), facts measured elsewhere (`measured`: datasets, checkpoints) and findings made
before the run (`findings`: unpaired files of a folder, curve differences, unconfigured
checks). `run(inputs, opts)` takes them through the stages of `Run.STAGES` and returns an
`Outcome`; `Report.absorb(outcome)` adds it to the caller's report. The stages:

  read        each source of each unit read once (engine.extract: cached, in workers), the
              configs it references followed, its input account opened
  arguments   each option a launch script passes checked against the parser of the program
              it starts (launchargs.py): one it does not define is a finding, and sets nothing
  scope       each side's facts split by program invocation into tables, derived values added
  compare     the tables compared key by key with each check's classifier; a side with an
              input that failed or was not understood is unknown where it is silent
  structural  changed pairs of structural kinds compared statement by statement
  account     identical inputs marked, texts kept for the page, inputs not understood reported
  finish      each masked edit's fidelity (what it keeps; one that is not exact said: run/fidelity.py),
              duplicates dropped, inline suppressions and the baseline, --select/--ignore
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from .. import budget
from . import alignment
from .compare import FactTable, compare_tables, equal
from ..ruleset.devices import may_branch
from . import launchargs
from .invocations import invocation_count, one_job, one_way, paired_runs
from .finding import finding
from .fidelity import annotate as fidelity_notes, joined as joined_masks
from .engine import diff_pair, extract, filter_findings, focus_partner, follow_references, prefetch, read_inputs
from ..model import (ORIGIN_DEFAULT, ORIGIN_EXPLICIT, Extract, Fact, Finding, InputAccount, InputError, Masked,
                    MissingReference, Options, Report, Side, SideContext)
from .pairing import renamed
from ..inputs.references import source_identity
from ..ruleset.registry import check_names, classifiers, derivations, detect, kind_can_set, relaters
from ..ruleset.registry import kind as registry_kind
from ..ruleset.rules import check_selectors, code
from ..ruleset.secrets import shown_text
from ..inputs.sources import Source
from .suppress import apply as apply_suppressions
from ..ruleset.vocabulary import device_named, side_versions, vocab


@dataclass
class Unit:
    """One comparison scope: the inputs of one run on each side, compared with each other.

    `scriptdiff diff a.sh b.sh`, `hparams` and the run of `check` (launch script, configs,
    logs, snapshots) are one unit each: their files merge into one table per side, as one
    training run does. Folder mode makes one unit per pair of files, so two runs in one folder
    are never merged. `extra` are facts measured elsewhere (datasets, checkpoints)."""

    gpu: list[Source] = field(default_factory=list)
    npu: list[Source] = field(default_factory=list)
    gpu_extra: list[Extract] = field(default_factory=list)
    npu_extra: list[Extract] = field(default_factory=list)
    run: bool = True  # the unit whose table `hparams` shows
    # side -> errors of inputs meant for this unit that failed before the run (a configured path
    # not there, a file that could not be read): that side is unknown, as if they were its extracts'
    failed: dict[str, list[InputError]] = field(default_factory=dict)

    @property
    def single(self) -> bool:
        """One file a side."""
        return len(self.gpu) == 1 == len(self.npu)


@dataclass
class Inputs:
    """What one run compares (see the module's docstring). By default all of each side's
    sources form one unit (one run); `measured` join the run unit; `accounts` are inputs
    accounted elsewhere (files identical to their counterpart, not read); `compared` counts
    comparisons made before the run (curves)."""

    gpu: list[Source] = field(default_factory=list)
    npu: list[Source] = field(default_factory=list)
    pairs: list[tuple[Source, Source]] = field(default_factory=list)
    units: list[Unit] | None = None
    measured: tuple[list[Extract], list[Extract]] | None = None
    findings: list[Finding] = field(default_factory=list)
    roots: tuple[str | None, str | None] = (None, None)
    # where each side's references are (references.Resolver); None: on disk, from its root
    resolvers: tuple[object | None, object | None] = (None, None)
    accounts: list[InputAccount] = field(default_factory=list)
    compared: int = 0


@dataclass
class Outcome:
    """What a run found; `Report.absorb` adds it to a report."""

    findings: list[Finding] = field(default_factory=list)
    masked: list[Masked] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    inputs: list[InputAccount] = field(default_factory=list)
    usage_errors: list[str] = field(default_factory=list)  # an unknown code in an ignore comment
    table: list = field(default_factory=list)  # the run unit's rows, for `hparams`
    tables: tuple | None = None  # the run unit's (GPU, NPU) FactTables
    texts: dict[tuple[str, str], str] = field(default_factory=dict)  # Options.keep_texts
    pairs: list[tuple[str, str]] = field(default_factory=list)
    sources: dict = field(default_factory=dict)  # Options.keep_facts: (side, name) -> Source read
    unit_tables: list = field(default_factory=list)  # Options.keep_facts: each scope's (GPU, NPU) tables
    # Options.keep_texts: settings both sides write at a line, equal once normalized (key, GPU, NPU)
    equal: list[tuple[str, Side, Side]] = field(default_factory=list)
    compared: int = 0
    check_order: tuple[str, ...] = ()


@dataclass
class _Read:
    """One side of a unit, read: each source's extract and the configs it referenced."""

    items: list[tuple[Source | None, Extract]] = field(default_factory=list)
    # the programs its launch scripts start, in order: (as written, line, referring file, found
    # or None (False: read as another input of the run), its identity)
    programs: list[tuple[str, int | None, Source, Source | None, str | None]] = field(default_factory=list)
    # facts that set nothing: made by an option the program does not define (launchargs.py)
    dropped: set[int] = field(default_factory=set)
    # facts of an abbreviated option, keyed as the option it stands for: id(fact) -> that fact
    rekeyed: dict[int, Fact] = field(default_factory=dict)

    @property
    def extracts(self) -> list[Extract]:
        return [ex for _s, ex in self.items]

    @property
    def failed(self) -> bool:
        """An input of this side that could set anything (a script, a launch script, a config)
        could not be read at all: what it would have set is unknown."""
        return any(e.fatal and not e.checks for ex in self.extracts for e in ex.errors)

    def failed_checks(self, failed: list[InputError] = ()) -> set[str]:
        """The checks of the failed inputs that could set only their own checks' settings (a
        dataset manifest, an environment snapshot): this side is unknown for those alone."""
        return {c for ex in self.extracts for e in ex.errors if e.fatal for c in e.checks} \
            | {c for e in failed for c in e.checks}


@dataclass
class _File:
    """One source as the run read it: its reading (with its references) and its account."""

    read: _Read
    account: InputAccount
    # the files read through it (its program, its configs), each with its own account
    followed: list[tuple[Source, InputAccount]] = field(default_factory=list)


def run(inputs: Inputs, opts: Options | None = None) -> Outcome:
    """The whole pipeline over `inputs` (see the module's docstring)."""
    return Run(inputs, opts or Options())()


class Run:
    """One run of the pipeline: `Run(inputs, opts)()` goes through STAGES and returns its Outcome."""

    STAGES = ("read", "arguments", "scope", "compare", "structural", "account", "finish")

    def __init__(self, inputs: Inputs, opts: Options):
        check_selectors(opts.select, "select")
        check_selectors(opts.ignore, "ignore")
        self.inputs, self.opts = inputs, opts
        self.ctx = {"gpu": SideContext("gpu", root=inputs.roots[0], options=opts, resolver=inputs.resolvers[0]),
                    "npu": SideContext("npu", root=inputs.roots[1], options=opts, resolver=inputs.resolvers[1])}
        self.units = inputs.units if inputs.units is not None else [Unit(list(inputs.gpu), list(inputs.npu))]
        if inputs.measured:
            unit = next((u for u in self.units if u.run), None)
            if unit is None:
                unit = Unit()
                self.units.append(unit)
            unit.gpu_extra += inputs.measured[0]
            unit.npu_extra += inputs.measured[1]
        self.out = Outcome(findings=list(inputs.findings), compared=inputs.compared)
        self.files: dict[int, _File] = {}  # id(source) -> how it was read (each source read once)
        # id(source read through another: a program, a config) -> its account and its reading
        self.followed: dict[int, tuple[InputAccount, Extract]] = {}
        self.sides: list[tuple[Unit, _Read, _Read]] = []  # the units compared, both sides read
        self.scoped: list[tuple[Unit, list[FactTable], list[FactTable], dict]] = []
        self._runs: dict[int, dict] = {}  # id(unit) -> each side's programs -> the other side's compared with them
        self.uncompared: dict[int, tuple[InputError, set[str]]] = {}  # id(fatal error) -> keys it hid
        self.programs: list[tuple[Source, Source]] = []  # the programs two runs start, compared as code
        self._paired_programs: set[tuple[str, str]] = set()  # (side, name) of programs paired by their runs
        self._aligned = False  # the alignment profile checked (run/alignment.py), on the first run unit

    def __call__(self) -> Outcome:
        for stage in self.STAGES:
            getattr(self, stage)()
        return self.out

    # ------------------------------------------------------------------------------ read

    def read(self) -> None:
        # a pair compared on its own (no run, one file a side) is read with its other side in view
        partner: dict[int, Source] = {}
        for u in self.units:
            if not u.run and u.single and not u.gpu_extra and not u.npu_extra \
                    and u.gpu[0].data != u.npu[0].data and focus_partner(u.gpu[0], u.npu[0]) is not None:
                partner[id(u.gpu[0])], partner[id(u.npu[0])] = u.npu[0], u.gpu[0]
        # only what a unit will read is worth computing ahead (not the identical or unpaired files)
        prefetch([x for u in self.units for x in u.gpu], [x for u in self.units for x in u.npu], self.inputs.pairs,
                 self.ctx["gpu"], self.ctx["npu"], self.opts,
                 alone=set(partner) & {id(g) for g, _n in self.inputs.pairs})
        # files read as part of a run (its program, its configs), per side: a side's files are
        # known by their real path on disk, or by the name its resolver gives them (REV:path)
        members: dict[str, set[str]] = {"gpu": set(), "npu": set()}
        fragments = self._fragments()
        for unit in sorted(self.units, key=lambda u: not u.run):  # runs first: they claim their programs and configs
            if not unit.run and unit.gpu and all(source_identity(s) in members[side]
                                                 for side, srcs in (("gpu", unit.gpu), ("npu", unit.npu))
                                                 for s in srcs):
                continue  # compared within the run that starts or references it
            if unit.run and unit.gpu and unit.npu and all(
                    source_identity(s) in fragments[side] - self._sourced_by(unit, side)
                    for side, srcs in (("gpu", unit.gpu), ("npu", unit.npu)) for s in srcs):
                continue  # launch-script fragments another run sources (source ./args.sh): read in that run
            gread = self._side(unit.gpu, unit.gpu_extra, self.ctx["gpu"], partner)
            nread = self._side(unit.npu, unit.npu_extra, self.ctx["npu"], partner)
            if unit.run:
                for side, r in (("gpu", gread), ("npu", nread)):
                    members[side].update(source_identity(s) for s, _ex in r.items if s is not None)
                    # the fragments its launch scripts source are read in place: part of the run
                    members[side].update(ident for ex in r.extracts for _w, _l, ident, _d in ex.sourced if ident)
                self._programs(unit, gread, nread)
            self.sides.append((unit, gread, nread))

    def _sourced_by(self, unit: Unit, side: str) -> set[str]:
        """The fragments the launch scripts of `unit` source on `side` (`source ./args.sh`)."""
        ctx = self.ctx[side]
        return {ident for s in (unit.gpu if side == "gpu" else unit.npu) if not s.is_binary()
                for _w, _l, ident, _d in extract(s, ctx).sourced if ident}

    def _fragments(self) -> dict[str, set[str]]:
        """Every fragment some run's launch script sources, per side."""
        out: dict[str, set[str]] = {"gpu": set(), "npu": set()}
        for unit in self.units:
            if unit.run:
                for side in out:
                    out[side] |= self._sourced_by(unit, side)
        return out

    def _side(self, srcs: list[Source], extra: list[Extract], ctx: SideContext, partner: dict) -> _Read:
        out = self.out
        r = _Read(items=[(None, ex) for ex in extra])
        seen = {source_identity(s) for s in srcs}
        for src in srcs:
            if id(src) not in self.files:
                other = partner.get(id(src))
                ex = extract(src, ctx) if other is None else extract(src, ctx, other)
                acc = _account(src, ex, ctx.side)
                sub = _Read(items=[(src, ex)])
                followed: list[tuple[Source, Extract, InputAccount]] = []

                def account_of(rsrc: Source, rex: Extract, side=ctx.side, followed=followed) -> InputAccount:
                    a = _account(rsrc, rex, side)
                    followed.append((rsrc, rex, a))
                    return a

                sub.items += follow_references(ex, src, ctx, seen, acc, sub.programs, account_of)
                for _rs, rex in sub.items[1:]:  # the run's settings read through it count as its own too
                    acc.settings += len(rex.facts)
                    acc.mapped += _mapped(rex.facts)
                _settle(acc, ex)
                for rsrc, rex, a in followed:  # a file read through another: its own account
                    _settle(a, rex, followed=True)
                self.files[id(src)] = _File(sub, acc, [(rsrc, a) for rsrc, _x, a in followed])
                for rsrc, rex, a in followed:
                    self.followed.setdefault(id(rsrc), (a, rex))
                if not any(e.fatal for e in ex.errors):
                    ctx.analysed += 1
                for _rs, rex in sub.items:
                    out.errors.extend(rex.errors)
                    out.masked.extend(rex.masked)
                    out.findings.extend(rex.findings)
            r.items += self.files[id(src)].read.items
            r.programs += self.files[id(src)].read.programs
        for ex in extra:
            out.errors.extend(ex.errors)
            out.masked.extend(ex.masked)
            out.findings.extend(ex.findings)
        return r

    def _programs(self, unit: Unit, gread: _Read, nread: _Read) -> None:
        """The programs two runs start, in order: another program than the expected one (the
        same name, or a rename rule's: train.py <-> train_npu.py) is a finding, and two programs
        found are compared as code, as the run's program, whatever their names."""
        for i, (g, n) in enumerate(zip(gread.programs, nread.programs)):
            (gref, gline, gsrc, gprog, _gid), (nref, nline, nsrc, nprog, _nid) = g, n
            gname, nname = posixpath.basename(gref), posixpath.basename(nref)
            if gname != nname and not renamed(gname, nname):
                key = "program" if max(len(gread.programs), len(nread.programs)) == 1 else f"program:{i + 1}"
                self.out.findings.append(finding(
                    "launched-program-differs", key=key,
                    gpu=Side(value=gref, path=gsrc.name, line=gline, source=_line_of(gsrc, gline)),
                    npu=Side(value=nref, path=nsrc.name, line=nline, source=_line_of(nsrc, nline)),
                    message=f"the GPU run starts {gref} and the NPU run {nref}" + _programs_compared(gprog, nprog)))
            for prog, other, (ref, line, referrer, _p, _i), r in ((gprog, nprog, g, gread), (nprog, gprog, n, nread)):
                acc = self._account_of(referrer)
                if prog is None and other is not None and acc is not None and "code" not in acc.unknown:
                    # one side's program is read, the other's is not in view: what the missing
                    # one's code sets is unknown, not absent
                    acc.unknown.add("code")
                    acc.unread.append(f"line {line}: program {ref} is not in view while the other side's is: "
                                      f"what its code sets was not compared")
                    acc.status = "not understood"
            if gprog and nprog and gname != nname:  # paired by the run: not "on one side only"
                self._paired_programs |= {("gpu", gprog.name), ("npu", nprog.name)}
            if gprog and nprog and gprog.data != nprog.data \
                    and not any(source_identity(a) == source_identity(gprog) and source_identity(b) == source_identity(nprog)
                                for a, b in self.inputs.pairs + self.programs):
                self.programs.append((gprog, nprog))

    # ------------------------------------------------------------------------- arguments

    def arguments(self) -> None:
        """Each option a launch script passes, against the parser of the program it starts
        (launchargs.py): an option the program does not define is a finding, and sets nothing."""
        for _unit, gread, nread in self.sides:
            if not gread.programs and not nread.programs:
                continue
            judged = []
            for side, r in (("gpu", gread), ("npu", nread)):
                accounts = {id(s): self._account_of(s) for s, _ex in r.items if s is not None
                            and self._account_of(s) is not None}
                j = launchargs.judge(side, r.items, r.programs, accounts)
                r.dropped, r.rekeyed = j.dropped, j.rekeyed
                judged.append(j)
            self.out.findings.extend(launchargs.findings(*judged))

    def _accounts(self, r: _Read) -> list[InputAccount]:
        return [a for a in (self._account_of(x) for x, _ex in r.items if x is not None) if a is not None]

    def _account_of(self, src: Source) -> InputAccount | None:
        """The account of a source read (given, or read through another), None if it was not."""
        if id(src) in self.files:
            return self.files[id(src)].account
        return self.followed[id(src)][0] if id(src) in self.followed else None

    def _reading(self, src: Source) -> Extract | None:
        if id(src) in self.files:
            return self.files[id(src)].read.items[0][1]
        return self.followed[id(src)][1] if id(src) in self.followed else None

    # ----------------------------------------------------------------------------- scope

    def scope(self) -> None:
        # each side's framework versions, from any of its inputs (a package list, a version file):
        # the defaults that changed between releases are that version's (vocabulary.default_fact)
        versions = [side_versions(f for _u, *reads in self.sides for ex in reads[i].extracts for f in ex.facts)
                    for i in (0, 1)]
        for unit, gread, nread in self.sides:
            ng, nn = _invocations(gread), _invocations(nread)
            gtables, ntables = _tables(gread, ng), _tables(nread, nn)
            for tables, v in ((gtables, versions[0]), (ntables, versions[1])):
                for t in tables:
                    t.versions = dict(v)
            if len(gtables) != len(ntables):  # a job's scheduler process is none of its runs
                gtables, ntables = self._runs_only(gtables, gread), self._runs_only(ntables, nread)
            if len(gtables) != len(ntables):  # a rank-per-process launch loop is one job of its runs
                gtables, ntables = one_job(gtables), one_job(ntables)
            if len(gtables) != len(ntables):  # programs of which the script starts one, chosen at run time
                gtables, ntables = self._one_way(gtables, ntables, gread, nread)
            if len(gtables) != len(ntables):
                gtables, ntables, by = paired_runs(gtables, ntables)
                self.out.findings.append(invocation_count(unit, ng, nn, by))
            # a side with an input that failed or was not understood is unknown where it is silent;
            # a side whose referenced config was found nowhere, for the keys such a file can set in
            # the run it is named for (a config named by a scoring step hides nothing of the training)
            runs_of = self._runs[id(unit)] = _paired_invocations(gtables, ntables)
            unknown = {}
            for side, r in (("gpu", gread), ("npu", nread)):
                accs = self._accounts(r)
                hidden = set().union(*(a.unknown for a in accs)) if accs else set()
                failed = unit.failed.get(side, [])
                if r.failed or any(not e.checks for e in failed) or any(a.opaque and a.hides is None for a in accs):
                    unknown[side] = lambda _f: True
                else:
                    # a referenced config found nowhere: the keys such a file can set; the program
                    # not in view (the other side's is): what its code sets (read from code: facts.py);
                    # a failed manifest or snapshot: the settings of its own checks
                    missing = [m for a in accs for m in a.missing]
                    code = "code" in hidden
                    only = r.failed_checks(failed)
                    named = set().union(*(a.hides for a in accs if a.opaque))  # what launchers not known name
                    named |= {k for a in accs for keys in a.maybe.values() for k in keys}  # code not read
                    if missing or code or only or named:
                        runs = runs_of[side]
                        unknown[side] = lambda f, missing=missing, code=code, only=only, named=named, runs=runs: (
                            f.check in only or any(could_set(m, f) and _same_run(m, f, runs) for m in missing)
                            or (code and f.meta.get("callee") is not None) or _names(named, f))
            self.scoped.append((unit, gtables, ntables, unknown))

    def _runs_only(self, tables: list[FactTable], r: _Read) -> list[FactTable]:
        """A side's runs without the processes that coordinate its job (a scheduler started with
        MS_ROLE=MS_SCHED: rules/shell.yaml launchers.coordinators), each said on its account."""
        kept, notes = [], []
        for t in tables:
            role = next((f.meta["coordinator"] for fs in t.facts.values() for f in fs
                         if f.meta.get("coordinator") and f.meta.get("invocation") is not None), None)
            if role is None:
                kept.append(t)
            else:
                notes.append(f"line {role[1]}: starts the job's coordinator ({role[0]}), not one of its training "
                             f"runs: not compared as one")
        if not kept:
            return tables
        self._note(r, notes)
        return kept

    def _note(self, r: _Read, notes: list[str]) -> None:
        """Notes on how a side's runs were read, on the account of its launch script (each once)."""
        accs = self._accounts(r)
        if accs:
            accs[0].notes.extend(x for x in notes if x not in accs[0].notes)

    def _one_way(self, gtables: list[FactTable], ntables: list[FactTable], gread: _Read, nread: _Read
                 ) -> tuple[list[FactTable], list[FactTable]]:
        """Each side's choices made at run time kept as one program (invocations.one_way), when that makes
        the two sides start as many programs; the ways not compared said on the script's account."""
        g, gnotes = one_way(gtables, ntables)
        n, nnotes = one_way(ntables, gtables)
        if len(g) != len(n):
            g, gnotes = (g, gnotes) if len(g) == len(ntables) else (gtables, [])
            n, nnotes = (n, nnotes) if len(n) == len(gtables) else (ntables, [])
            if len(g) != len(n):
                return gtables, ntables
        self._note(gread, gnotes)
        self._note(nread, nnotes)
        return g, n

    # --------------------------------------------------------------------------- compare

    def compare(self) -> None:
        out = self.out
        reads = {id(unit): (g, n) for unit, g, n in self.sides}
        # what each side's runs set (a folder's launch scripts with their programs and configs):
        # the claims a log compared as a pair of its own (`diff DIR DIR`) is evidence for
        runs = [[f for unit, *tables, _u in self.scoped if unit.run for t in tables[i]
                 for fs in t.facts.values() for f in fs] for i in (0, 1)]
        for unit, gtables, ntables, unknown in self.scoped:
            for gtable, ntable in zip(gtables, ntables):
                for derive_pair in derivations("derive_pair"):  # checks that need both sides in view
                    derive_pair(gtable, ntable)
                findings, masked, skipped = compare_tables(gtable, ntable, classifiers=classifiers(), unknown=unknown)
                out.findings.extend(findings)
                for i, side, r, table in zip((0, 1), ("gpu", "npu"), reads[id(unit)], (gtable, ntable)):
                    if self.opts.evidence:
                        self._audit(side, r, table if unit.run else _beside(runs[i], table))
                out.masked.extend(masked)
                if self.opts.keep_facts:
                    out.unit_tables.append((gtable, ntable))
                if self.opts.keep_texts:  # the html page tells an edit that normalizes away from a change
                    out.equal += equal_settings(gtable, ntable)
                for key in skipped:  # said on the input that left it unknown
                    for side, r, table, other in zip(("gpu", "npu"), reads[id(unit)], (gtable, ntable),
                                                     (ntable, gtable)):
                        if side in unknown and table.get(key) is None and other.get(key) is not None:
                            self._hidden(r, key, other.get(key), unit.failed.get(side, []),
                                         self._runs.get(id(unit), {}).get(side, {}))
                if unit.run and not self._aligned and self.opts.profile:  # --profile: each side against it
                    self._aligned = True
                    g, n = reads[id(unit)]
                    out.findings.extend(alignment.check(
                        self.opts.profile, gtable, ntable, [s for s, _ex in g.items], [s for s, _ex in n.items],
                        [(*h, s.name) for s, ex in g.items if ex is not None for h in ex.probes],
                        [(*h, s.name) for s, ex in n.items if ex is not None for h in ex.probes]))
                if unit.run and not out.table:
                    out.table = [(k, gtable.get(k), ntable.get(k)) for k in sorted(gtable.keys() | ntable.keys())]
                    out.tables = (gtable, ntable)  # for `hparams`: defaults of keys a side did not set
        # each side's claims in all its units against the evidence measured in place (a dump)
        if self.opts.evidence and self.scoped and self.inputs.measured and any(self.inputs.measured):
            for i, side in enumerate(("gpu", "npu")):
                whole = FactTable()
                for _unit, *tables, _unknown in self.scoped:
                    for t in tables[i]:
                        whole.extend(f for fs in t.facts.values() for f in fs)
                self._audit(side, _Read(), whole, "audit_run")

    def _audit(self, side: str, r: _Read, table: FactTable, which: str = "audit") -> None:
        """One side's claims against its run's evidence (the checks' `audit` hooks, or their
        `audit_run` hooks over all the side read): their findings, and each note on the
        account of the input it is about."""
        accs = {a.path: a for top in self._accounts(r) for a in top.every()}
        for audit in derivations(which):
            found, notes = audit(table, side)
            self.out.findings.extend(found)
            for path, note in notes:
                if path in accs:
                    if note not in accs[path].evidence:
                        accs[path].evidence.append(note)
                elif not any(e.path == path and e.message == note for e in self.out.errors):
                    # an input measured in place (a dump) has no account: its note is said as a note
                    self.out.errors.append(InputError(path, note, level="note"))

    def _hidden(self, r: _Read, key: str, other: Fact, failed: list[InputError] = (),
                runs: dict[int, set[int]] | None = None) -> None:
        """A key of the other side (`other`, its fact) that an unknown side's inputs left
        uncompared: said on the inputs that failed (read here, or before the run: `failed`) or
        were not wholly read, else on the launch script whose program is not in view (for what
        code sets) and on each referenced config found nowhere that could have set it."""
        fatal = [e for e in [e for ex in r.extracts for e in ex.errors] + list(failed)
                 if e.fatal and (not e.checks or other.check in e.checks)]
        for e in fatal:
            self.uncompared.setdefault(id(e), (e, set()))[1].add(key)
        accs = self._accounts(r)
        opaque = [a for a in accs if a.opaque and (a.hides is None or _names(a.hides, other))]
        for acc in opaque:
            acc.uncompared.add(key)
        if fatal or opaque:
            return
        for acc in accs:  # what a call of code not read could set (Extract.unknowns)
            for phrase, keys in acc.maybe.items():
                if _names(set(keys), other):
                    acc.withheld.setdefault(phrase, set()).add(key)
        for acc in accs:
            if "code" in acc.unknown and other.meta.get("callee") is not None:  # its program not in view
                acc.uncompared.add(key)
            for m in acc.missing:
                if could_set(m, other) and _same_run(m, other, runs or {}):
                    m.withheld.add(key)

    # ------------------------------------------------------------------------ structural

    def structural(self) -> None:
        for g, n in self.inputs.pairs + self.programs:
            if (g.data == n.data and not two_programs(g, n)) or g.is_binary() or n.is_binary():
                continue
            res = diff_pair(g, n, self.opts)
            self.out.findings.extend(res.findings)
            self.out.masked.extend(res.masked)
            self.out.errors.extend(res.errors)

    # --------------------------------------------------------------------------- account

    def account(self) -> None:
        out, inputs = self.out, self.inputs
        for e, keys in self.uncompared.values():  # said on the input that failed: what it left uncompared
            e.message += f" ({len(keys)} setting(s) of the other side could not be compared: {listed(keys)})"
        shown = inputs.pairs + self.programs + [(u.gpu[0], u.npu[0]) for u in self.units if u.single]
        for g, n in shown:
            # same bytes on both sides, and nothing read from elsewhere: equal, whatever the reader
            # made of them (a launch script's program and configs may still differ)
            if g.data == n.data and not two_programs(g, n) and not any(self._reading(s).references
                                                                       for s in (g, n) if self._reading(s) is not None):
                for src in (g, n):  # but never one its reader could not read: its runs are not known equal
                    acc = self._account_of(src)
                    if acc is not None and acc.status == "understood":
                        acc.status = "identical"
        if self.opts.keep_texts:  # the html page shows the files read and which were compared with which
            for side, top in (("gpu", inputs.gpu + [s for u in self.units for s in u.gpu]),
                              ("npu", inputs.npu + [s for u in self.units for s in u.npu])):
                read = [s for t in top if id(t) in self.files for s, _ex in self.files[id(t)].read.items
                        if s is not None]
                out.texts.update(((side, s.name), shown_text(s)) for s in top + read if not s.is_binary())
            out.pairs += [(g.name, n.name) for g, n in shown]
        if self.opts.keep_facts:  # `scriptdiff fix`: the sources its facts were read from
            for f in self.files.values():
                out.sources.update(((f.account.side, s.name), s) for s, _ex in f.read.items if s is not None)
        # every file read has its account, once: those given, each with those read through it (a
        # launch script's program and configs), then those accounted before the run (identical, refused)
        tops = [f.account for f in self.files.values()]
        seen = {(a.side, a.path) for a in tops}
        for f in self.files.values():
            for _rsrc, a in f.followed:
                if (a.side, a.path) not in seen:
                    seen.add((a.side, a.path))
                    f.account.through.append(a)
        accounts = [x for a in tops for x in a.every()]
        before = [a for a in inputs.accounts if (a.side, a.path) not in seen]
        for acc in accounts:  # each config found nowhere says which of the other side's settings it hid
            for m in acc.missing:
                if m.withheld and 0 <= m.unread < len(acc.unread):
                    acc.unread[m.unread] += f"; {_hid(m.withheld)}"
            for phrase, keys in acc.withheld.items():  # code not read that left settings unknown: only now said
                acc.unread.append(f"{phrase}; {_hid(keys)}")
                acc.status = "not understood"
        out.inputs += tops + before
        out.findings.extend(f for f in (_not_understood(a) for a in accounts if a.status == "not understood") if f)
        out.findings.extend(self._missing_pairs())

    def _missing_pairs(self) -> list[Finding]:
        """One finding per pair of references found nowhere (references.py): the GPU side's and
        the NPU side's of one run, paired by the option that names them, in order."""
        out: list[Finding] = []
        done: set[int] = set()
        both = code("referenced-config-missing-on-both-sides")
        for _unit, gread, nread in self.sides:
            by_side = []
            owner: dict[int, InputAccount] = {}
            for r in (gread, nread):
                ms = []
                for a in self._accounts(r):
                    for m in a.missing:
                        if id(m) not in done:
                            ms.append(m)
                            owner[id(m)] = a
                done.update(id(m) for m in ms)
                by_side.append(ms)
            gm, nm = by_side
            for g, n in _pair_missing(gm, nm):
                f = _missing_finding(g, n)
                out.append(f)
                if f.rule == both:  # the account tells the finding's story: unread on both sides alike
                    for m in (g, n):
                        acc = owner[id(m)]
                        if 0 <= m.unread < len(acc.unread):
                            acc.unread[m.unread] += (f"; the {'NPU' if m is g else 'GPU'} side names the same file and "
                                                     f"misses it too, and no setting one side states could come from "
                                                     f"it on the other ({both})")
        return out

    # ---------------------------------------------------------------------------- finish

    def finish(self) -> None:
        out = self.out
        out.masked = joined_masks(out.masked)  # an edit found with both its sides, once
        out.findings.extend(fidelity_notes(out.masked))  # a masked edit that is not exact is said
        out.findings = _runs_of_one_line(_reference_said_once(_dedupe(out.findings)))
        for relate in relaters({f.check for f in out.findings}):  # a check that explains its findings by the others
            out.findings = relate(out.findings, out.inputs)
        if self._paired_programs:  # a folder's file its counterpart's run starts under another name
            lone = (code("script-on-one-side-only"), code("other-file-on-one-side-only"))
            out.findings = [f for f in out.findings if f.rule not in lone
                            or not any((side, s.path) in self._paired_programs
                                       for side, s in (("gpu", f.gpu), ("npu", f.npu)) if s is not None)]
        out.check_order = check_names()
        # inline comments + baseline, before --select
        apply_suppressions(out, self.inputs.gpu, self.inputs.npu, self.opts)
        out.findings = filter_findings(out.findings, self.opts)
        # "compared" counts what both sides could contribute: a run where every file of a side
        # failed outright compared nothing (exit 2), whatever the other side held
        measured = [[ex for ex in side if not any(e.fatal for e in ex.errors)]  # a failed one measured nothing
                    for side in (self.inputs.measured or ([], []))]
        g, n = self.ctx["gpu"].analysed, self.ctx["npu"].analysed
        if (g or measured[0]) and (n or measured[1]):
            out.compared += min(g, n) or 1


def two_programs(g: Source, n: Source) -> bool:
    """Two sources with the same bytes that are still two programs: a file that branches on
    the device, read once per device (docs/devices.md). Its GPU run is compared with its NPU run."""
    return g.data == n.data and registry_kind(_kind_name(g)).structural and may_branch(g.data)


def _programs_compared(gprog, nprog) -> str:
    missing = [side for side, p in (("GPU", gprog), ("NPU", nprog)) if p is None]
    if missing:
        return f"; the {' and the '.join(missing)} program is not in view, so the programs were not compared"
    return "; the two programs were compared with each other"


def _line_of(src: Source, line: int | None) -> str:
    lines = src.text.splitlines()
    return lines[line - 1].strip() if line and 0 < line <= len(lines) else ""


def listed(keys, most: int = 12) -> str:
    """Names in one line: sorted, the first `most` (or all but the last two and how many more)."""
    keys = sorted(keys)
    if len(keys) <= most:
        return ", ".join(keys)
    return ", ".join(keys[:most - 2]) + f" and {len(keys) - most + 2} more"


def _scopes(read: _Read) -> tuple[list[Fact], dict[int, list[Fact]]]:
    """A side's facts split by program invocation: the facts of every scope, and those of
    each invocation. A launch script that starts two programs gives two scopes."""
    shared: list[Fact] = []
    by_inv: dict[int, list[Fact]] = {}
    # the invocations that set something, numbered in order (a launch that passes no option,
    # `python tools/prepare.py`, is no scope: the ones after it keep their place)
    order = {inv: k for k, inv in enumerate(sorted({f.meta["invocation"] for ex in read.extracts for f in ex.facts
                                                    if f.meta.get("invocation") is not None}))}
    for ex in read.extracts:
        for f in ex.facts:
            if id(f) in read.dropped:  # an option the program does not define sets nothing
                continue
            f = read.rekeyed.get(id(f), f)
            inv = f.meta.get("invocation")
            (by_inv.setdefault(order[inv], []) if inv is not None else shared).append(f)
    return shared, by_inv


def _beside(run_facts: list[Fact], table: FactTable) -> FactTable:
    """A scope that is not a run (a pair of files compared on their own), audited beside its
    side's runs when it holds what a run reported (a log in a folder): their claims, its
    evidence. Any other scope is audited as it is."""
    if not run_facts or not any(f.meta.get("evidence") for fs in table.facts.values() for f in fs):
        return table
    out = FactTable(frameworks=set(table.frameworks))
    out.extend(f for f in run_facts if not f.meta.get("evidence"))
    out.extend(f for fs in table.facts.values() for f in fs)
    return out


def equal_settings(gtable: FactTable, ntable: FactTable) -> list[tuple[str, Side, Side]]:
    """Every setting written at a line on both sides with the same value once normalized
    (`1e-4` and `1.0e-4`, `1.0` and `1`, a key moved in a JSON object): each pair of a GPU fact
    and an NPU fact of a key with equal values (a writer keeps the pairs it can show, those
    of two files it shows side by side). Facts that lose to a stronger one count too: a
    config line the launch script overrides is still a line of the page."""
    out = []
    for key in sorted(gtable.keys() & ntable.keys()):
        gs = [f for f in gtable.facts[key] if f.line and f.path and f.origin == ORIGIN_EXPLICIT]
        ns = [f for f in ntable.facts[key] if f.line and f.path and f.origin == ORIGIN_EXPLICIT]
        out += [(key, g.side(), n.side()) for g in gs for n in ns if equal(g.value, n.value)]
    return out


def _tables(read: _Read, ninv: int) -> list[FactTable]:
    """One table per invocation scope (at least one), each with the shared facts."""
    shared, by_inv = _scopes(read)
    frameworks: set[str] = set()
    for ex in read.extracts:  # whose defaults apply: what the run's inputs know, not what a spelling suggests
        frameworks |= ex.frameworks - ex.guessed
        cmd = ex.command_line
        if cmd is not None and cmd.get("kind") == "hf" and not cmd.get("complete"):
            frameworks.add("hf")  # a program whose HfArgumentParser takes transformers' TrainingArguments
    out = []
    for i in range(max(ninv, 1)):
        t = FactTable(frameworks=set(frameworks))
        t.extend(shared)
        t.extend(by_inv.get(i, []) if ninv else [])
        for derive in derivations("derive"):
            derive(t)
        out.append(t)
    return out


def _invocations(read: _Read) -> int:
    return len({f.meta["invocation"] for ex in read.extracts for f in ex.facts if "invocation" in f.meta})


def _kind_name(src: Source) -> str:
    return "binary" if src.is_binary() else detect(src).name


def _mapped(facts: list[Fact]) -> int:
    voc = vocab()
    return sum(1 for f in facts if f.check != "hyperparameters" or f.key in voc or f.key.startswith("config:"))


def _account(src: Source, ex: Extract, side: str) -> InputAccount:
    return InputAccount(path=src.name, side=side, kind=_kind_name(src), settings=len(ex.facts),
                        mapped=_mapped(ex.facts), unread=list(ex.unread),
                        notes=[f"dialect: {d}" for d in sorted(ex.dialects)] + list(ex.notes))


def _settle(acc: InputAccount, ex: Extract, followed: bool = False) -> None:
    """The input's status, once its reader and its references have spoken. A file read through
    another (a launch script's config, all `"auto"`) may set nothing of its own."""
    if any(e.fatal for e in ex.errors):
        acc.status = "failed"
        return
    kind = registry_kind(acc.kind) if acc.kind != "binary" else None
    if not followed and not acc.unread and acc.settings == 0 and not ex.understood and kind is not None \
            and kind.relevant and not kind.structural:
        acc.unread.append("no settings could be read from it")
    # what the reader itself could not read makes the input's settings unknown; a referenced
    # config found nowhere is said (unread) but leaves the script's own settings comparable
    acc.opaque = bool(ex.unread) or acc.unread == ["no settings could be read from it"]
    # a launcher not known can set only what its options name (an unknown that hides nothing it
    # could not have set); any other cause, anything
    if acc.opaque and ex.unread and all(u in ex.hides for u in ex.unread):
        acc.hides = {k for u in ex.unread for k in ex.hides[u]}
    acc.maybe = {u: list(keys) for u, keys in ex.unknowns.items()}  # said only if they hide something
    acc.status = "not understood" if acc.unread else "understood"


def _not_understood(acc: InputAccount) -> Finding | None:
    """The input's own SD154: what its reader could not read. A referenced config found nowhere
    is said once for the pair of sides instead (_missing_finding); None when that is all."""
    rule = code("input-not-understood")
    if acc.uncompared:
        acc.unread.append(f"{len(acc.uncompared)} setting(s) of the other side could not be compared: "
                          + listed(acc.uncompared))
    refs = {m.unread for m in acc.missing}
    own = [u for i, u in enumerate(acc.unread) if i not in refs]
    if not own:
        return None
    kind = registry_kind(acc.kind)
    check = kind.checks[0] if kind.checks else "script"
    here = Side(value="; ".join(own), path=acc.path, line=None, source=acc.kind)
    return finding(rule, check=check, key=f"input:{acc.path}",
                   gpu=here if acc.side == "gpu" else None, npu=here if acc.side == "npu" else None,
                   message=f"{acc.kind} file on {acc.side.upper()} not fully understood: {'; '.join(own)}")


def _paired_invocations(gtables: list[FactTable], ntables: list[FactTable]) -> dict[str, dict[int, set[int]]]:
    """For each side, each of its programs (invocation) -> the other side's programs compared
    with it (the runs paired, table by table)."""
    def invs(t: FactTable) -> set[int]:
        return {f.meta["invocation"] for fs in t.facts.values() for f in fs if f.meta.get("invocation") is not None}

    out: dict[str, dict[int, set[int]]] = {"gpu": {}, "npu": {}}
    for gt, nt in zip(gtables, ntables):
        gi, ni = invs(gt), invs(nt)
        for i in gi:
            out["gpu"].setdefault(i, set()).update(ni)
        for j in ni:
            out["npu"].setdefault(j, set()).update(gi)
    return out


def _same_run(m: MissingReference, f: Fact, runs: dict[int, set[int]]) -> bool:
    """Whether the other side's setting `f` is of a run the program naming `m` is compared with."""
    if m.invocation is None or f.meta.get("invocation") is None:
        return True
    return f.meta["invocation"] in runs.get(m.invocation, ())


def _names(keys: set[str], f: Fact) -> bool:
    """Whether a setting is one of `keys` (what a launcher not known names), or computed from one."""
    return f.key in keys or _bound_elsewhere(keys, f) \
        or (f.derived and any(k in keys for k in f.meta.get("inputs") or ()))


def _bound_elsewhere(keys: set[str], f: Fact) -> bool:
    """`bound:NAME:CALLEE` (Extract.unknowns): a setting read from a call bound to NAME on the
    other side, of another function than CALLEE (the same function is compared argument by argument)."""
    bound = f.meta.get("bound")
    if bound is None:
        return False
    head = f"bound:{bound}:"
    return any(k.startswith(head) and k[len(head):] != f.meta.get("callee") for k in keys)


def could_set(m: MissingReference, f: Fact) -> bool:
    """Whether the config `m`, found nowhere, could have set the setting of fact `f` (a key the
    other side has): a key of a check its kind feeds that the kind can set (rules/kinds.yaml
    `sets`, less what the referring run fills in itself), or a value derived from one."""
    if f.origin == ORIGIN_DEFAULT or f.meta.get("counterpart") or f.meta.get("marker"):
        return False  # not a setting (a flag only commented out there, a counterpart's stand-in): nothing to hide
    named = device_named(f.value)
    if named and set(named) == {"<device>"}:
        return False  # the device itself (--device_target=GPU): what the other side names for it is the port
    kind = registry_kind(m.kind) if m.kind else None
    if kind is not None and f.check not in kind.checks:
        return False
    keys = (f.key,) + (tuple(f.meta.get("inputs") or ()) if f.derived else ())
    if kind is None:  # an option no kind lists: what it names could set any setting
        return f.check == "hyperparameters"
    return any(kind_can_set(kind, k, m.frameworks, m.dialect) for k in keys)


def _hid(keys) -> str:
    return f"{len(keys)} setting(s) of the other side could not be compared: {listed(keys)}"


def _pair_missing(gm: list[MissingReference], nm: list[MissingReference]):
    """(GPU, NPU) pairs of missing references, by the option that names them, in order; a
    reference with no counterpart is paired with None."""
    def opt(m: MissingReference) -> str:
        return m.key.replace("-", "_").rsplit(".", 1)[-1].lower()

    left = list(nm)
    for g in gm:
        n = next((x for x in left if opt(x) == opt(g)), None)
        if n is not None:
            left.remove(n)
        yield g, n
    for n in left:
        yield None, n


def _missing_finding(g: MissingReference | None, n: MissingReference | None) -> Finding:
    """One finding for a pair of references found nowhere: info (SD158) when both sides name the
    same file and nothing of either side had to be left uncompared for it, else SD154."""
    def side(m: MissingReference | None) -> Side | None:
        if m is None:
            return None
        tried = ", ".join(m.tried[:4]) + (" ..." if len(m.tried) > 4 else "")
        return Side(value=f"{m.written} not found (tried {tried})", path=m.referrer, line=m.line, source=m.source)

    one = g or n
    kind = registry_kind(one.kind) if one.kind else None
    check = kind.checks[0] if kind is not None and kind.checks else "hyperparameters"
    key = f"reference:{one.key}"
    hid = [(label, other, m.withheld) for label, other, m in (("GPU", "NPU", g), ("NPU", "GPU", n))
           if m is not None and m.withheld]
    said = "; ".join(f"{len(keys)} setting(s) of the {other} side could not be compared: {listed(keys)}"
                     for _label, other, keys in hid)
    if g is not None and n is not None:
        if posixpath.basename(g.written) == posixpath.basename(n.written):
            what = (f"both sides reference {posixpath.basename(g.written)} (GPU {g.referrer}:{g.line}, NPU "
                    f"{n.referrer}:{n.line}) and neither has it: the same file on both sides")
            if not hid:
                return finding("referenced-config-missing-on-both-sides", check=check, key=key, gpu=side(g),
                               npu=side(n), message=f"{what}: what it sets was compared on neither side, and no "
                                                    f"setting that one side states could come from it on the other")
            return finding("input-not-understood", check=check, key=key, gpu=side(g), npu=side(n),
                           message=f"{what}, but settings one side sets could come from it on the other: {said}")
        what = (f"referenced configs found on neither side: {g.written} on GPU ({g.referrer}:{g.line}), "
                f"{n.written} on NPU ({n.referrer}:{n.line}); their settings were not compared")
    else:
        label = "GPU" if g is not None else "NPU"
        what = (f"referenced config {one.written} was not found on {label} ({one.referrer}:{one.line}): "
                f"its settings were not compared")
    return finding("input-not-understood", check=check, key=key, gpu=side(g), npu=side(n),
                   message=what + (f"; {said}" if said else ""))


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """The same finding reached twice (a config compared as a file and as part of the run that
    references it) is reported once."""
    out, seen = [], set()
    for f in findings:
        k = (f.rule, f.key, _where(f.gpu), _where(f.npu), f.message)
        if k in seen:
            continue
        seen.add(k)
        out.append(f)
    return out


def _reference_said_once(findings: list[Finding]) -> list[Finding]:
    """A referenced config found nowhere is one unknown, said once: the finding for the pair of
    references (SD154, keyed `reference:<option>`: the names, the paths tried and what was left
    uncompared) says it, and the hyperparameter finding for the same references at the same
    lines (SD222, `config:<option>`, the names differing and "not found") is not added to it.
    A differing reference that both sides could follow, or that one side names and has, stays SD222."""
    def at(s: Side | None):
        return None if s is None else (s.path, s.line)

    said = [(f.key.split(":", 1)[1], at(f.gpu), at(f.npu)) for f in findings
            if f.rule == code("input-not-understood") and f.key.startswith("reference:")]
    if not said:
        return findings
    lost = code("config-reference-differs")

    def missing(side) -> bool:
        fact = getattr(side, "fact", None)
        return fact is not None and bool(fact.meta.get("reference")) and not fact.meta.get("exists")

    def restated(f: Finding) -> bool:  # each side the pair's finding names (a found side it leaves out) is this one's
        opt, g, n = f.key.split(":", 1)[1], at(f.gpu), at(f.npu)
        return any(o == opt and sg in (None, g) and sn in (None, n) and (sg, sn) != (None, None) for o, sg, sn in said)

    return [f for f in findings if not (
        f.rule == lost and f.key.startswith("config:") and any(missing(s) for s in (f.gpu, f.npu)) and restated(f))]


def _runs_of_one_line(findings: list[Finding]) -> list[Finding]:
    """The same setting differing in several runs of a loop, written at the same lines on both
    sides (`--task_name ${model}_${method}` against `..._npu`): one finding, the first run's,
    saying in how many more runs it differs (`extra["more_runs"]`); the first
    budget.LOOP_RUNS_SHOWN of their values in `extra["runs"]`."""
    first: dict = {}
    out = []
    for f in findings:
        if f.check != "hyperparameters" or f.gpu is None or f.npu is None or not f.gpu.line or not f.npu.line:
            out.append(f)
            continue
        k = (f.rule, f.key, f.gpu.path, f.gpu.line, f.npu.path, f.npu.line)
        head = first.get(k)
        if head is None:
            first[k] = f
            out.append(f)
            continue
        head.extra["more_runs"] = head.extra.get("more_runs", 0) + 1
        runs = head.extra.setdefault("runs", [])
        if len(runs) < budget.LOOP_RUNS_SHOWN:  # the first ones shown; the count says how many
            runs.append([repr(f.gpu.value), repr(f.npu.value)])
    for f in first.values():
        n = f.extra.get("more_runs", 0)
        if n:
            f.message += f"; the same setting differs in {n} more run(s) of the loop, written at these lines"
    return out


def _where(s: Side | None):
    return None if s is None else (s.path, s.line, repr(s.value))


def diff_files(gpu: list[str], npu: list[str], opts: Options | None = None) -> Report:
    """`scriptdiff diff` / `hparams` on files: the sides' facts merged, same-named code paired."""
    report = Report(gpu=" ".join(gpu), npu=" ".join(npu))
    gsrcs = read_inputs(gpu, report)
    nsrcs = read_inputs(npu, report)
    if not gsrcs or not nsrcs:
        return report.sorted()
    return report.absorb(run(Inputs(gsrcs, nsrcs, pair_sources(gsrcs, nsrcs)), opts))


def pair_sources(gsrcs: list[Source], nsrcs: list[Source]) -> list[tuple[Source, Source]]:
    """Which files are compared as code: one file each, or the same kind and base name."""
    if len(gsrcs) == 1 and len(nsrcs) == 1:
        return [(gsrcs[0], nsrcs[0])]
    pairs = []
    by_name = {}
    for n in nsrcs:
        by_name.setdefault(n.basename, n)
    for g in gsrcs:
        n = by_name.get(g.basename)
        if n is not None:
            pairs.append((g, n))
    return pairs

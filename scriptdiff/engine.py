"""The pipeline shared by every command: sources -> parse -> facts -> compare -> findings.

Each input file has a *kind* (python, shell, yaml, json, log, requirements, ...), detected by
the kind registry (scriptdiff/registry.py, declared in rules/kinds.yaml). The kind's reader
turns one file into an `Extract` (facts plus the masks, errors and references it met); a
structural kind also diffs two files statement by statement (`diff_pair`, Python). The engine
merges one side's facts into a FactTable, lets every check derive values (data-parallel size,
...), compares the two tables with each check's classifier and collects everything into one
Report, then applies suppressions, the baseline and --select/--ignore. Every command, every
check (datasets and checkpoints included) ends here.

Readers are imported by the registry when a file of their kind is met, so `scriptdiff --help`
imports none of them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import cache
from .compare import FactTable, compare_tables, vocab
from .finding import finding
from .model import (RANK_CONFIG, REF_PROGRAM, Extract, Fact, Finding, InputAccount, InputError, Options, PairResult, Report, Side,
                    SideContext)
from .references import resolve
from .rules import check_selectors, code
from .secrets import shown_text
from .registry import Kind, check_names, classifiers, derivations, detect, detect_kind, kinds  # noqa: F401 (detect_kind: API)
from .registry import kind as registry_kind
from .sources import Source, SourceError, exception_reason, read_path
from .suppress import apply as apply_suppressions


# Which kinds are worth caching on disk and spreading over worker processes (a libcst parse
# costs milliseconds per hundred lines), and which are compared as text above --max-bytes,
# is each kind's `cached` / `limited` in the registry.
# results computed in this process or received from workers, by cache key
_MEMO: dict[str, object] = {}


def _extract_key(src: Source, ctx: SideContext, kind: Kind, partner: Source | None = None) -> str:
    if partner is None:
        return cache.key("extract", kind.name, src.name, ctx.side, str(ctx.options.max_bytes), src.data)
    return cache.key("extract-focus", kind.name, src.name, ctx.side, str(ctx.options.max_bytes), src.data,
                     b"\x01", partner.data)


def _focus_partner(src: Source, partner: Source | None) -> Source | None:
    """`partner` when the reader of `src` can read it by the pair's difference (a kind with
    `focus: true` in rules/kinds.yaml: lang/python/focus.py) and both are of its kind, else None.
    Said by the kind, not the module: a warm run need not import the reader (and libcst)."""
    if partner is None or src.is_binary() or partner.is_binary():
        return None
    kind = detect(src)
    return partner if kind.focus and detect(partner) is kind else None


def _pair_key(gsrc: Source, nsrc: Source, opts: Options, kind: Kind) -> str:
    return cache.key("pair", kind.name, gsrc.name, nsrc.name, str(opts.max_bytes), gsrc.data, b"\x01", nsrc.data)


def _cached(key: str, use_disk: bool, compute, dump, load):
    """compute() once per key: from this process's memo, the disk cache, or by computing."""
    if key in _MEMO:  # computed by this run (here or in its workers): shape-checked when read from disk only
        return load(_MEMO[key], checked=False)
    if use_disk:
        hit = cache.get(key)
        if hit is not None:
            try:
                return load(hit)
            except (TypeError, ValueError, IndexError, KeyError):
                pass  # an entry from another layout: recompute
    result = compute()
    try:
        dumped = dump(result)
    except TypeError:  # a value the cache cannot represent: keep the result, skip caching
        return result
    _MEMO[key] = dumped
    if use_disk:
        cache.put(key, dumped)
    return result


def extract(src: Source, ctx: SideContext, partner: Source | None = None) -> Extract:
    """Facts from one file; never raises: a failure becomes an errors entry. `partner` is the
    other side of a pair compared on its own (not part of a run): a kind marked `focus`
    then reads only what the pair's difference touches, the rest being equal on both sides."""
    if src.is_binary():
        return Extract(errors=[InputError(src.name, "binary file; not compared", fatal=True)])
    kind = detect(src)
    partner = _focus_partner(src, partner)
    if kind.cached:
        ex = _cached(_extract_key(src, ctx, kind, partner), ctx.options.use_cache,
                     lambda: _extract(src, ctx, kind, partner), cache.dump_extract, cache.load_extract)
    else:
        ex = _extract(src, ctx, kind)
    note = src.decode_note()  # a note, not an error; added after the cache, which stores errors only
    if note:
        ex.errors.append(InputError(src.name, note, level="note"))
    return ex


def _extract(src: Source, ctx: SideContext, kind: Kind, partner: Source | None = None) -> Extract:
    try:
        mod = kind.module()
    except ModuleNotFoundError as e:  # a language this build does not have
        return Extract(errors=[InputError(src.name, f"cannot analyse {kind.name} files: {e}")])
    if kind.limited and len(src.data) > ctx.options.max_bytes:
        ex = Extract(errors=[InputError(src.name, f"larger than the structural limit ({len(src.data):,} > "
                                                  f"{ctx.options.max_bytes:,} bytes, --max-bytes): settings not "
                                                  f"read, compared as text")])
    elif kind.checks and len(src.data) > ctx.options.max_bytes:  # every other reader of settings is bounded too
        ex = Extract(errors=[InputError(src.name, f"larger than the --max-bytes limit ({len(src.data):,} > "
                                                  f"{ctx.options.max_bytes:,} bytes); settings not read", fatal=True)])
    else:
        try:
            ex = mod.extract(src, ctx) if partner is None else mod.extract(src, ctx, partner=partner)
        except RecursionError:
            ex = Extract(errors=[InputError(src.name, "nested too deeply to analyse; skipped")])
        except Exception as e:  # a reader's bug must not cost the user the other inputs
            ex = Extract(errors=[InputError(src.name, f"could not be analysed ({exception_reason(e)}); skipped")])
    return ex


def diff_pair(gsrc: Source, nsrc: Source, opts: Options) -> PairResult:
    kind = detect(gsrc)
    if not kind.structural:
        return PairResult()
    if kind.cached:
        return _cached(_pair_key(gsrc, nsrc, opts, kind), opts.use_cache, lambda: _diff_pair(gsrc, nsrc, opts, kind),
                       cache.dump_pair, cache.load_pair)
    return _diff_pair(gsrc, nsrc, opts, kind)


def _diff_pair(gsrc: Source, nsrc: Source, opts: Options, kind: Kind) -> PairResult:
    try:
        fn = kind.module().diff_pair
        text = registry_kind("text").module()
    except (ModuleNotFoundError, AttributeError):  # a build without this language: its extract() said so
        return PairResult()
    if kind.limited and max(len(gsrc.data), len(nsrc.data)) > opts.max_bytes:
        return text.diff_pair(gsrc, nsrc, opts, reason=f"larger than {opts.max_bytes:,} bytes")
    try:
        return fn(gsrc, nsrc, opts)
    except RecursionError:
        res = text.diff_pair(gsrc, nsrc, opts)
        res.errors.append(InputError(gsrc.name, "nested too deeply for a structural diff; compared as text"))
        return res
    except Exception as e:  # a differ's bug: fall back to text rather than lose the pair
        res = text.diff_pair(gsrc, nsrc, opts)
        res.errors.append(InputError(gsrc.name, f"structural diff failed ({type(e).__name__}); compared as text"))
        return res


# --- worker processes -----------------------------------------------------------------------

# a process forked earlier that runs _run_pool for this one (scriptdiff/zygote.py sets it)
HANDOVER = None

PARALLEL_MIN_JOBS = 4  # units (changed pairs or lone files); below this, workers cost more than they save


def _unit(unit, store: bool = False):
    """Run one unit of work (a pair's two extracts and its diff, or one lone extract) in
    this process or a worker; return [(key, dumped result)]. Doing a pair's three steps
    together lets the language module parse each file once. With `store`, a worker writes
    its results to the cache itself, in parallel, rather than leave every write to the
    parent after the pool (the parent then only keeps them in its memo)."""
    out = []
    for what, key, args in unit:
        if what == "extract":
            src, ctx, kind, partner = args
            out.append((key, cache.dump_extract(_extract(src, ctx, kind, partner))))
        else:
            gsrc, nsrc, opts, kind = args
            out.append((key, cache.dump_pair(_diff_pair(gsrc, nsrc, opts, kind))))
    if store:
        for key, dumped in out:
            cache.put(key, dumped)
    return out


def prefetch(gpu_sources: list[Source], npu_sources: list[Source], pairs: list[tuple[Source, Source]],
             gctx: SideContext, nctx: SideContext, opts: Options, alone: set[int] = frozenset()) -> None:
    """Compute the expensive per-file results ahead of the (ordered) pipeline, in worker
    processes when there are enough of them, and leave them in the memo, where the
    pipeline finds them. Output order never depends on workers."""
    def todo(key: str) -> bool:
        return key not in _MEMO and not (opts.use_cache and cache.get(key) is not None)

    def extract_step(src: Source, ctx: SideContext, partner: Source | None = None):
        if src.is_binary():
            return None
        kind = detect(src)
        if kind.cached:
            partner = _focus_partner(src, partner)
            k = _extract_key(src, ctx, kind, partner)
            if todo(k):
                return ("extract", k, (src, ctx, kind, partner))
        return None

    units: list[list] = []
    paired: set[int] = set()
    for g, n in pairs:
        if g.data == n.data or g.is_binary() or n.is_binary():
            continue
        kind = detect(g)
        if not kind.cached:
            continue
        paired.update((id(g), id(n)))
        focus = id(g) in alone  # a pair compared on its own: each side read with the other in view
        steps = [extract_step(g, gctx, n if focus else None), extract_step(n, nctx, g if focus else None)]
        k = _pair_key(g, n, opts, kind)
        if kind.structural and todo(k):
            steps.append(("pair", k, (g, n, opts, kind)))
        steps = [st for st in steps if st]
        if steps:
            units.append(steps)
    for srcs, ctx in ((gpu_sources, gctx), (npu_sources, nctx)):
        for src in srcs:
            if id(src) not in paired:
                st = extract_step(src, ctx)
                if st:
                    units.append([st])
    if not units:
        return
    workers = min(opts.jobs or (os.cpu_count() or 1), 8, len(units))
    progress = opts.progress  # "parsed 400/1,000 files", when the command shows progress
    if progress is not None:
        progress.start(sum(_files(u) for u in units))
    results, stored = None, False
    if len(units) >= PARALLEL_MIN_JOBS and workers >= 2:
        if HANDOVER is not None and not getattr(progress, "enabled", False):
            # the reader process writes the entries itself once it has sent them, beside this
            # process's serial last steps (zygote.py)
            results = HANDOVER(units, workers, opts.use_cache)
            stored = results is not None and opts.use_cache
        if results is None:
            results = _run_pool(units, workers, progress, store=opts.use_cache)
            stored = results is not None and opts.use_cache
    if results is None:  # few units, one core, or no workers to be had: in order, here
        if progress is not None:
            progress.start(sum(_files(u) for u in units))
        results = (_ticked(_unit(u), u, progress) for u in units)
    for batch in results:
        for key, dumped in batch:
            _MEMO[key] = dumped
            if opts.use_cache and not stored:
                cache.put(key, dumped)
    if progress is not None:
        progress.close()


def _files(unit: list) -> int:
    """The files a unit parses (a pair's two, or one lone file): what progress counts."""
    return len({id(a) for _w, _k, args in unit for a in args if isinstance(a, Source)})


def _ticked(result, unit: list, progress):
    if progress is not None:
        progress.advance(_files(unit))
    return result


def warm_readers() -> None:
    """Import the readers that read a pair by its difference (Python: libcst, the costliest
    import of a run). scriptdiff/zygote.py does this ahead of time, while the parent walks
    the trees; any other reader is imported where a file needs it."""
    for kind in kinds().values():
        if kind.cached and kind.focus:
            try:
                kind.module()
            except ModuleNotFoundError:
                pass


def _run_pool(units: list[list], workers: int, progress=None, store: bool = False):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:  # no fork on this platform
        return None
    cache.quiesce()  # no write of this process's in flight while it forks

    def size(unit) -> int:
        return sum(len(a.data) for _w, _k, args in unit for a in args if isinstance(a, Source))

    def died(step) -> list:
        """The results of a step whose process died (a crash in native code): never run here."""
        what, key, args = step
        why = "the structural parser's process died on this file (a crash in native code); compared as text"
        if what == "extract":
            return [(key, cache.dump_extract(Extract(errors=[InputError(args[0].name, why)])))]
        gsrc, nsrc, opts, _kind = args
        res = registry_kind("text").module().diff_pair(gsrc, nsrc, opts)
        res.errors.append(InputError(f"{gsrc.name} / {nsrc.name}", why.replace("this file", "this pair")))
        return [(key, cache.dump_pair(res))]

    # big units first, so that the last worker is not left with the largest file
    units = sorted(units, key=lambda u: -size(u))
    results, lost = [], []
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = [pool.submit(_unit, u, store) for u in units]
            for u, fut in zip(units, futures):
                try:
                    results.append(_ticked(fut.result(), u, progress))
                except BrokenProcessPool:  # a worker died: every unit not finished is lost
                    lost.append(u)
    except Exception:  # workers unavailable (sandbox, limits): run in order
        return None
    # each step of a lost unit runs alone, in a process of its own, so that the step that
    # kills its process is known; it is reported, and never run again in this process
    for u in lost:
        for step in u:
            try:
                with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as solo:
                    results.append(solo.submit(_unit, [step], store).result())
            except Exception:  # BrokenProcessPool, or no process to be had: not run here either
                results.append(died(step))
                if store:
                    cache.put(*results[-1][0])
        _ticked(None, u, progress)
    return results


def build_table(extracts: list[Extract]) -> FactTable:
    table = FactTable()
    for ex in extracts:
        table.extend(ex.facts)
        table.frameworks |= ex.frameworks
    return table


def follow_references(ex: Extract, src: Source, ctx: SideContext, seen: set[str],
                      account: InputAccount | None = None) -> list[tuple[Source | None, Extract]]:
    """Configs referenced by a file (--deepspeed ds.json, --config x.yaml), found in the order of
    scriptdiff/references.py (beside the referring file, the working directory, the repository
    root) and read. Where one was found elsewhere than beside its referrer, or not at all, the
    referrer's account says so; an unresolved reference leaves the input "not understood"."""
    out = []
    for ref, line, key in ex.references:
        if not src.origin:
            continue
        res = resolve(ref, src.origin, ctx.root)
        if res.path is None:
            if key == REF_PROGRAM:  # torchrun pretrain_gpt.py with Megatron elsewhere: the script's own flags still count
                if account is not None:
                    account.notes.append(f"line {line}: program {ref} is not in view; its code defaults were not read")
                continue
            if account is not None:
                tried = ", ".join(res.tried[:4]) + (" ..." if len(res.tried) > 4 else "")
                account.unread.append(f"line {line}: referenced config {ref} was not found (tried {tried}): "
                                      f"its settings were not compared")
            continue
        if account is not None and res.how != "beside the referring file":
            account.notes.append(f"line {line}: referenced config {ref} found {res.how} ({res.path})")
        rp = os.path.realpath(res.path)
        if rp in seen:
            continue
        seen.add(rp)
        try:
            rsrc = read_path(res.path, name=_display(src.name, ref))
        except SourceError as e:
            out.append((None, Extract(errors=[InputError(res.path, str(e).split(": ", 1)[-1], fatal=True)])))
            continue
        rex = extract(rsrc, ctx)
        # a referenced config belongs to the invocation that names it
        inv = next((f.meta.get("invocation") for f in ex.facts if f.meta.get("reference")
                    and f.meta.get("written") == ref and f.line == line), None)
        if inv is not None:
            rex = replace(rex, facts=[_tagged(f, inv) for f in rex.facts])
        out.append((rsrc, rex))
        out.extend(follow_references(rex, rsrc, ctx, seen, account))
    return out


def _tagged(f: Fact, invocation: int) -> Fact:
    return replace(f, meta={**f.meta, "invocation": invocation})


def _display(referrer: str, ref: str) -> str:
    parent = referrer.replace("\\", "/").rsplit("/", 1)[0] if "/" in referrer else ""
    return f"{parent}/{Path(ref).name}" if parent else Path(ref).name


def filter_findings(findings: list[Finding], opts: Options) -> list[Finding]:
    out = []
    for f in findings:
        if opts.select and not any(f.rule.startswith(s) for s in opts.select):
            continue
        if opts.ignore and any(f.rule.startswith(s) for s in opts.ignore):
            continue
        if opts.checks is not None and f.check not in opts.checks:
            continue
        out.append(f)
    return out


# --- scopes: what is compared with what -------------------------------------------------------

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


@dataclass
class _Read:
    """One side of a unit, read: each source's extract and the configs it referenced."""

    items: list[tuple[Source | None, Extract]] = field(default_factory=list)

    @property
    def extracts(self) -> list[Extract]:
        return [ex for _s, ex in self.items]

    @property
    def failed(self) -> bool:
        """An input of this side could not be read at all: what it would have set is unknown."""
        return any(e.fatal for ex in self.extracts for e in ex.errors)


def _scopes(read: _Read) -> dict:
    """A side's facts split by program invocation: {None: facts of every scope, i: facts of
    invocation i}. A launch script that starts two programs gives two scopes."""
    shared: list[Fact] = []
    by_inv: dict[int, list[Fact]] = {}
    for ex in read.extracts:
        for f in ex.facts:
            inv = f.meta.get("invocation")
            (by_inv.setdefault(inv, []) if inv is not None else shared).append(f)
    return {"shared": shared, "invocations": by_inv}


def _tables(read: _Read, ninv: int) -> list[FactTable]:
    """One table per invocation scope (at least one), each with the shared facts."""
    sc = _scopes(read)
    frameworks: set[str] = set()
    for ex in read.extracts:
        frameworks |= ex.frameworks
    out = []
    for i in range(max(ninv, 1)):
        t = FactTable(frameworks=set(frameworks))
        t.extend(sc["shared"])
        t.extend(sc["invocations"].get(i, []) if ninv else [])
        for derive in derivations("derive"):
            derive(t)
        out.append(t)
    return out


def _invocations(read: _Read) -> int:
    return len({f.meta["invocation"] for ex in read.extracts for f in ex.facts if "invocation" in f.meta})


def compare_sides(gpu_sources: list[Source], npu_sources: list[Source], pairs: list[tuple[Source, Source]],
                  report: Report, opts: Options,
                  extracts: tuple[list[Extract], list[Extract]] | None = None,
                  units: list[Unit] | None = None, roots: tuple[str | None, str | None] = (None, None),
                  accounts: list[InputAccount] | None = None) -> Report:
    """The whole pipeline over already-read sources; appends to `report`.

    `units` say what is compared with what (see Unit); by default all of each side's sources
    form one unit (one run). `extracts` (GPU, NPU) are facts made elsewhere, e.g. datasets or
    checkpoints that `scriptdiff check` fingerprinted in place; they join the run unit.
    `accounts` are inputs accounted elsewhere (files identical to their counterpart, not read).
    Every source is accounted for in report.inputs; one that yields nothing comparable is a
    warning (input-not-understood), and a side that could not be read is unknown: no
    "set on one side only" finding comes from it."""
    check_selectors(opts.select, "select")
    check_selectors(opts.ignore, "ignore")
    gctx = SideContext("gpu", root=roots[0], options=opts)
    nctx = SideContext("npu", root=roots[1], options=opts)
    if units is None:
        units = [Unit(list(gpu_sources), list(npu_sources))]
    if extracts:
        run = next((u for u in units if u.run), None)
        if run is None:
            run = Unit()
            units.append(run)
        run.gpu_extra += extracts[0]
        run.npu_extra += extracts[1]
    # a pair compared on its own (no run, one file a side) is read with its other side in view
    partner_of: dict[int, Source] = {}
    for u in units:
        if not u.run and len(u.gpu) == 1 == len(u.npu) and not u.gpu_extra and not u.npu_extra \
                and u.gpu[0].data != u.npu[0].data and _focus_partner(u.gpu[0], u.npu[0]) is not None:
            partner_of[id(u.gpu[0])], partner_of[id(u.npu[0])] = u.npu[0], u.gpu[0]
    # only what a unit will read is worth computing ahead (not the identical or unpaired files)
    prefetch([x for u in units for x in u.gpu], [x for u in units for x in u.npu], pairs, gctx, nctx, opts,
             alone=set(partner_of) & {id(g) for g, _n in pairs})
    read_accounts: dict[int, InputAccount] = {}
    done: dict[int, _Read] = {}  # id(source) -> what reading it gave (each source read once)

    def read_side(srcs: list[Source], extra: list[Extract], ctx: SideContext) -> _Read:
        r = _Read(items=[(None, ex) for ex in extra])
        seen = {os.path.realpath(s.origin) for s in srcs if s.origin}
        for src in srcs:
            if id(src) not in done:
                partner = partner_of.get(id(src))
                ex = extract(src, ctx) if partner is None else extract(src, ctx, partner)
                acc = _account(src, ex, ctx.side)
                sub = _Read(items=[(src, ex)])
                sub.items += follow_references(ex, src, ctx, seen, acc)
                for _rs, rex in sub.items[1:]:
                    acc.settings += len(rex.facts)
                    acc.mapped += _mapped(rex.facts)
                _settle(acc, ex)
                read_accounts[id(src)] = acc
                done[id(src)] = sub
                if not any(e.fatal for e in ex.errors):
                    ctx.analysed += 1
                for _rs, rex in sub.items:
                    report.errors.extend(rex.errors)
                    report.masked.extend(rex.masked)
                    report.findings.extend(rex.findings)
            r.items += done[id(src)].items
        for ex in extra:
            report.errors.extend(ex.errors)
            report.masked.extend(ex.masked)
            report.findings.extend(ex.findings)
        return r

    uncompared: dict[int, tuple[InputError, set[str]]] = {}
    members: set[str] = set()  # files read as part of a run (its program, its configs)
    for unit in sorted(units, key=lambda u: not u.run):  # runs first: they claim their programs and configs
        if not unit.run and unit.gpu and all(s.origin and os.path.realpath(s.origin) in members
                                             for s in unit.gpu + unit.npu):
            continue  # compared within the run that starts or references it
        gread = read_side(unit.gpu, unit.gpu_extra, gctx)
        nread = read_side(unit.npu, unit.npu_extra, nctx)
        if unit.run:
            members.update(os.path.realpath(s.origin) for r in (gread, nread) for s, _ex in r.items
                           if s is not None and s.origin)
        ng, nn = _invocations(gread), _invocations(nread)
        gtables, ntables = _tables(gread, ng), _tables(nread, nn)
        if len(gtables) != len(ntables):
            report.findings.append(_invocation_count(unit, ng, nn))
        # a side with an input that failed or was not understood is unknown where it is silent
        unknown = {}
        for side, r in (("gpu", gread), ("npu", nread)):
            accs = [read_accounts[id(x)] for x, _ex in r.items if x is not None and id(x) in read_accounts]
            if r.failed or any(a.opaque for a in accs):
                unknown[side] = lambda _f: True
            elif any(a.unread for a in accs):  # a referenced config found nowhere: what configs set is unknown
                unknown[side] = lambda f: f.rank <= RANK_CONFIG
        for gtable, ntable in zip(gtables, ntables):
            for derive_pair in derivations("derive_pair"):  # checks that need both sides in view
                derive_pair(gtable, ntable)
            findings, masked, skipped = compare_tables(gtable, ntable, classifiers=classifiers(), unknown=unknown)
            report.findings.extend(findings)
            report.masked.extend(masked)
            for side, r in (("gpu", gread), ("npu", nread)):
                if skipped and side in unknown:
                    for e in (e for ex in r.extracts for e in ex.errors if e.fatal):
                        uncompared.setdefault(id(e), (e, set()))[1].update(skipped)
                    for x, _ex in r.items:
                        acc = read_accounts.get(id(x)) if x is not None else None
                        if acc is not None and acc.unread:
                            acc.uncompared.update(skipped)
            if unit.run and not report.table:
                report.table = [(k, gtable.get(k), ntable.get(k)) for k in sorted(gtable.keys() | ntable.keys())]
                report.tables = (gtable, ntable)  # for `hparams`: defaults of keys a side did not set
    for e, keys in uncompared.values():  # said on the input that failed: what it left uncompared
        shown = ", ".join(sorted(keys)[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")
        e.message += f" ({len(keys)} setting(s) of the other side could not be compared: {shown})"
    for g, n in pairs:
        if g.data == n.data:
            continue
        if g.is_binary() or n.is_binary():
            continue
        res = diff_pair(g, n, opts)
        report.findings.extend(res.findings)
        report.masked.extend(res.masked)
        report.errors.extend(res.errors)
    for g, n in pairs + [(u.gpu[0], u.npu[0]) for u in units if len(u.gpu) == 1 == len(u.npu)]:
        # same bytes on both sides, and nothing read from elsewhere: equal, whatever the reader
        # made of them (a launch script's program and configs may still differ)
        if g.data == n.data and not any(ex.references for s in (g, n) if id(s) in done
                                        for _x, ex in done[id(s)].items[:1]):
            for src in (g, n):
                if id(src) in read_accounts:
                    read_accounts[id(src)].status = "identical"
    if opts.keep_texts:  # the html page shows the files read and which were compared with which
        for side, top in (("gpu", gpu_sources + [s for u in units for s in u.gpu]),
                          ("npu", npu_sources + [s for u in units for s in u.npu])):
            read = [s for t in top if id(t) in done for s, _ex in done[id(t)].items if s is not None]
            report.texts.update(((side, s.name), shown_text(s)) for s in top + read if not s.is_binary())
        report.pairs += [(g.name, n.name) for g, n in pairs + [(u.gpu[0], u.npu[0]) for u in units
                                                               if len(u.gpu) == 1 == len(u.npu)]]
    report.inputs.extend(read_accounts.values())
    report.inputs.extend(accounts or [])
    report.findings.extend(_not_understood(a) for a in read_accounts.values() if a.status == "not understood")
    report.findings = _dedupe(report.findings)
    report.check_order = check_names()
    apply_suppressions(report, gpu_sources, npu_sources, opts)  # inline comments + baseline, before --select
    report.findings = filter_findings(report.findings, opts)
    # "compared" counts what both sides could contribute: a run where every file of a side
    # failed outright compared nothing (exit 2), whatever the other side held
    sides_ok = (gctx.analysed or (extracts and extracts[0])) and (nctx.analysed or (extracts and extracts[1]))
    report.compared += min(gctx.analysed, nctx.analysed) or (1 if sides_ok else 0)
    return report.sorted()


def _label(srcs: list[Source]) -> str:
    return srcs[0].name if len(srcs) == 1 else (f"{len(srcs)} files" if srcs else "(measured inputs)")


def _kind_name(src: Source) -> str:
    return "binary" if src.is_binary() else detect(src).name


def _mapped(facts: list[Fact]) -> int:
    voc = vocab()
    return sum(1 for f in facts if f.check != "hyperparameters" or f.key in voc or f.key.startswith("config:"))


def _account(src: Source, ex: Extract, side: str) -> InputAccount:
    return InputAccount(path=src.name, side=side, kind=_kind_name(src), settings=len(ex.facts),
                        mapped=_mapped(ex.facts), unread=list(ex.unread),
                        notes=[f"dialect: {d}" for d in sorted(ex.dialects)])


def _settle(acc: InputAccount, ex: Extract) -> None:
    """The input's status, once its reader and its references have spoken."""
    if any(e.fatal for e in ex.errors):
        acc.status = "failed"
        return
    kind = registry_kind(acc.kind) if acc.kind != "binary" else None
    if not acc.unread and acc.settings == 0 and not ex.understood and kind is not None and kind.relevant \
            and not kind.structural:
        acc.unread.append("no settings could be read from it")
    # what the reader itself could not read makes the input's settings unknown; a referenced
    # config found nowhere is said (unread) but leaves the script's own settings comparable
    acc.opaque = bool(ex.unread) or acc.unread == ["no settings could be read from it"]
    acc.status = "not understood" if acc.unread else "understood"


def _not_understood(acc: InputAccount) -> Finding:
    rule = code("input-not-understood")
    if acc.uncompared:
        keys = sorted(acc.uncompared)
        acc.unread.append(f"{len(keys)} setting(s) of the other side could not be compared: "
                          + ", ".join(keys[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else ""))
    kind = registry_kind(acc.kind)
    check = kind.checks[0] if kind.checks else "script"
    here = Side(value="; ".join(acc.unread), path=acc.path, line=None, source=acc.kind)
    return finding(rule, check=check, key=f"input:{acc.path}",
                   gpu=here if acc.side == "gpu" else None, npu=here if acc.side == "npu" else None,
                   message=f"{acc.kind} file on {acc.side.upper()} not fully understood: {'; '.join(acc.unread)}")


def _invocation_count(unit: Unit, ng: int, nn: int) -> Finding:
    rule = code("invocation-count-differs")
    g = Side(value=ng, path=_label(unit.gpu), line=None, source="program invocations")
    n = Side(value=nn, path=_label(unit.npu), line=None, source="program invocations")
    return finding(rule, key="invocations", gpu=g, npu=n,
                   message=f"the GPU script starts {ng} program(s) and the NPU script {nn}: "
                           f"invocations were compared in order, the extra ones against nothing")


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


def _where(s: Side | None):
    return None if s is None else (s.path, s.line, repr(s.value))


def read_inputs(paths: list[str], report: Report) -> list[Source]:
    out = []
    for p in paths:
        try:
            src = read_path(p)
        except SourceError as e:
            report.errors.append(InputError(p, str(e).split(": ", 1)[-1], fatal=True))
            continue
        if src.is_binary():
            report.errors.append(InputError(p, "binary file; not compared", fatal=True))
            continue
        out.append(src)
    return out


def diff_files(gpu: list[str], npu: list[str], opts: Options | None = None) -> Report:
    """`scriptdiff diff` / `hparams` on files: the sides' facts merged, same-named code paired."""
    opts = opts or Options()
    report = Report(gpu=" ".join(gpu), npu=" ".join(npu))
    gsrcs = read_inputs(gpu, report)
    nsrcs = read_inputs(npu, report)
    pairs = pair_sources(gsrcs, nsrcs)
    if not gsrcs or not nsrcs:
        return report.sorted()
    return compare_sides(gsrcs, nsrcs, pairs, report, opts)


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

"""Reading files for the pipeline (scriptdiff.run.pipeline): one file into facts, a pair into
its structural differences, many of them in worker processes, all through the cache.

Each input file has a *kind* (python, shell, yaml, json, log, requirements, ...), detected by
the kind registry (scriptdiff/ruleset/registry.py, declared in rules/kinds.yaml). The kind's reader
turns one file into an `Extract` (facts plus the masks, errors and references it met):
`extract`; a structural kind also diffs two files statement by statement: `diff_pair`.
`prefetch` computes both ahead of the pipeline's ordered stages, in worker processes when
there are enough files (or in the reader process of a folder diff, zygote.py), and leaves
them in the memo; `follow_references` reads the configs a file names (references.py).

Readers are imported by the registry when a file of their kind is met, so `scriptdiff --help`
imports none of them.
"""
from __future__ import annotations

import hashlib
import os
import posixpath
from dataclasses import replace
from pathlib import Path

from ..inputs import cache
from ..model import (REF_PROGRAM, Extract, Fact, Finding, InputAccount, InputError, MissingReference, Options,
                    PairResult, Report, Severity, SideContext)
from ..ruleset.devices import may_branch
from ..ruleset.packages import CONSTRAINT, as_constraints
from ..inputs.references import DiskResolver
from ..inputs.references import source_identity as _identity
from ..ruleset.registry import Kind, detect, kinds, referenced_kind
from ..ruleset.registry import kind as registry_kind
from ..ruleset.secrets import withhold_extract, withhold_pair
from ..inputs.sources import Source, SourceError, exception_reason, over_limit, read_path
from . import gcpause


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


def focus_partner(src: Source, partner: Source | None) -> Source | None:
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
    partner = focus_partner(src, partner)
    if kind.cached:
        key = _extract_key(src, ctx, kind, partner)
        ex = _cached(key, ctx.options.use_cache, lambda: _extract(src, ctx, kind, partner), cache.dump_extract,
                     cache.load_extract)
        if ex.sourced and not _sourced_still(ex, src, ctx):  # a fragment it read has changed: read again
            ex = _extract(src, ctx, kind, partner)
            dumped = cache.dump_extract(ex)
            _MEMO[key] = dumped
            if ctx.options.use_cache:
                cache.put(key, dumped)
    else:
        ex = _extract(src, ctx, kind)
    note = src.decode_note()  # a note, not an error; added after the cache, which stores errors only
    if note:
        ex.errors.append(InputError(src.name, note, level="note"))
    return ex


def _sourced_still(ex: Extract, src: Source, ctx: SideContext) -> bool:
    """Whether every file a reading read into `src` (`source ./args.sh`) is still what the
    side's resolver finds, with the same bytes: the cache key holds `src`'s bytes only."""
    resolver = ctx.resolver or DiskResolver(ctx.root)
    for written, _line, ident, digest in ex.sourced:
        res = resolver.resolve(written, src, ctx.root)
        if res.path is None:
            if ident:
                return False
            continue
        try:
            if resolver.identity(res) != ident or hashlib.sha1(resolver.read(res, written).data).hexdigest() != digest:
                return False
        except SourceError:
            return False
    return True


def _extract(src: Source, ctx: SideContext, kind: Kind, partner: Source | None = None) -> Extract:
    try:
        mod = kind.module()
    except ModuleNotFoundError as e:  # a language this build does not have
        return Extract(errors=[InputError(src.name, f"cannot analyse {kind.name} files: {e}")])
    limit = ctx.options.max_bytes
    if kind.limited and len(src.data) > limit:
        ex = Extract(errors=[InputError(src.name, over_limit(limit, len(src.data), what="settings not read, "
                                                                                          "compared as text"))],
                     unread=[f"its settings were not read ({over_limit(limit, len(src.data))})"])
    elif kind.checks and len(src.data) > limit:  # every other reader of settings is bounded too
        ex = Extract(errors=[InputError(src.name, over_limit(limit, len(src.data), what="settings not read"),
                                        fatal=True)])
    else:
        try:
            ex = mod.extract(src, ctx) if partner is None else mod.extract(src, ctx, partner=partner)
        except RecursionError:
            ex = Extract(errors=[InputError(src.name, "nested too deeply to analyse; skipped")],
                         unread=["its settings were not read (nested too deeply to analyse)"])
        except Exception as e:  # a reader's bug must not cost the user the other inputs
            ex = Extract(errors=[InputError(src.name, f"could not be analysed ({exception_reason(e)}); skipped")],
                         unread=[f"its settings were not read ({exception_reason(e)})"])
    return withhold_extract(ex, src)  # no secret is cached or shown, whichever reader read it


def diff_pair(gsrc: Source, nsrc: Source, opts: Options) -> PairResult:
    kind = detect(gsrc)
    if not kind.structural:
        return PairResult()
    if kind.cached:
        return _cached(_pair_key(gsrc, nsrc, opts, kind), opts.use_cache, lambda: _diff_pair(gsrc, nsrc, opts, kind),
                       cache.dump_pair, cache.load_pair)
    return _diff_pair(gsrc, nsrc, opts, kind)


def _diff_pair(gsrc: Source, nsrc: Source, opts: Options, kind: Kind) -> PairResult:
    return withhold_pair(_diff_pair_of(gsrc, nsrc, opts, kind), code=kind.comments == "python")


def _diff_pair_of(gsrc: Source, nsrc: Source, opts: Options, kind: Kind) -> PairResult:
    try:
        fn = kind.module().diff_pair
        text = registry_kind("text").module()
    except (ModuleNotFoundError, AttributeError):  # a build without this language: its extract() said so
        return PairResult()
    if kind.limited and max(len(gsrc.data), len(nsrc.data)) > opts.max_bytes:
        return text.diff_pair(gsrc, nsrc, opts, reason=over_limit(opts.max_bytes, max(len(gsrc.data), len(nsrc.data))))
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

# a process forked earlier that runs _run_pool for this one (scriptdiff/run/zygote.py sets it)
HANDOVER = None

PARALLEL_MIN_JOBS = 4  # units (changed pairs or lone files); below this, workers cost more than they save


def _unit(unit, store: bool = False):
    """Run one unit of work (a pair's two extracts and its diff, or one lone extract) in
    this process or a worker; return [(key, dumped result)]. Doing a pair's three steps
    together lets the language module parse each file once. With `store`, a worker writes
    its results to the cache itself, in parallel, rather than leave every write to the
    parent after the pool (the parent then only keeps them in its memo)."""
    out = []
    with gcpause.paused():  # the unit's trees are garbage only when it ends (gcpause.py)
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
            partner = focus_partner(src, partner)
            k = _extract_key(src, ctx, kind, partner)
            if todo(k):
                return ("extract", k, (src, ctx, kind, partner))
        return None

    units: list[list] = []
    paired: set[int] = set()
    for g, n in pairs:
        if g.is_binary() or n.is_binary() or (g.data == n.data and not (detect(g).structural and may_branch(g.data))):
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
    if HANDOVER is not None and not getattr(progress, "enabled", False):
        # a reader process is up (a folder diff): it imported the readers while this process
        # walked the trees, so even one unit is done sooner there than here, where the import
        # would start now; it writes the entries itself once it has sent them, beside this
        # process's serial last steps (zygote.py)
        results = HANDOVER(units, workers, opts.use_cache)
        stored = results is not None and opts.use_cache
    if results is None and len(units) >= PARALLEL_MIN_JOBS and workers >= 2:
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
    import of a run). scriptdiff/run/zygote.py does this ahead of time, while the parent walks
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


def follow_references(ex: Extract, src: Source, ctx: SideContext, seen: set[str],
                      account: InputAccount | None = None,
                      programs: list | None = None, account_of=None) -> list[tuple[Source | None, Extract]]:
    """Configs referenced by a file (--deepspeed ds.json, --config x.yaml), found by the side's
    resolver (scriptdiff/inputs/references.py: on disk beside the referring file, the working
    directory, the repository root; in a git revision; in a patch) and read. Where one was
    found elsewhere than beside its referrer, or not at all, the referrer's account says so;
    an unresolved reference leaves the input "not understood". `programs` collects the
    programs launched, in order: (as written, line, referring source, the source read, None when
    not found, False when read as another input of the run, its identity or None).
    `account_of(source, extract)` gives each file read here its own account, which then says
    what its own references came to (at its own lines); without it `account` says it all."""
    out = []
    resolver = ctx.resolver or DiskResolver(ctx.root)  # where this side's references are (references.py)
    for ref, line, key in ex.references:
        # the account is the input's; a reference written in a config it references is named by that file
        at = f"line {line}" if account is None or src.name == account.path else f"{src.name} line {line}"
        res = resolver.resolve(ref, src, ctx.root)
        if res.why:  # this side cannot look anywhere (said once, by whoever chose its resolver)
            _found(ex, ref, line, False)
            if account is not None:
                account.notes.append(f"{at}: {ref} not read: {res.why}")
            continue
        _found(ex, ref, line, res.path is not None)
        if not res.tried and res.path is None:  # nothing to look beside (a fragment, a blob)
            continue
        if res.path is None:
            if key == REF_PROGRAM:  # torchrun pretrain_gpt.py with Megatron elsewhere: the script's own flags still count
                if programs is not None:
                    programs.append((ref, line, src, None, None))
                if account is not None:
                    account.notes.append(f"{at}: program {ref} is not in view; its code defaults were not read")
                continue
            if account is not None:
                tried = ", ".join(res.tried[:4]) + (" ..." if len(res.tried) > 4 else "")
                account.unread.append(f"{at}: referenced config {ref} was not found (tried {tried}): "
                                      f"its settings were not compared")
                account.missing.append(_missing(ex, src, ref, line, key, res.tried, len(account.unread) - 1))
            continue
        if account is not None and res.how != "beside the referring file":
            account.notes.append(f"{at}: referenced config {ref} found {res.how} ({res.path})")
        rp = resolver.identity(res)
        if rp in seen:
            if programs is not None and key == REF_PROGRAM:  # started twice: the same program
                programs.append((ref, line, src, next((s for s, _x in out if s is not None
                                                       and rp == _identity(s)), False), rp))  # False: read elsewhere
            continue
        seen.add(rp)
        try:
            rsrc = resolver.read(res, _display(src.name, ref, res.how))
        except SourceError as e:
            out.append((None, Extract(errors=[InputError(res.path, str(e).split(": ", 1)[-1], fatal=True)])))
            if programs is not None and key == REF_PROGRAM:
                programs.append((ref, line, src, None, None))
            continue
        if programs is not None and key == REF_PROGRAM:
            programs.append((ref, line, src, rsrc, rp))
        _named_kind(rsrc, key, ref)
        rex = extract(rsrc, ctx)
        if key == CONSTRAINT:  # -c FILE: pins for what the lists install, not a list of its own
            rex = replace(rex, facts=as_constraints(rex.facts))
        # a referenced config belongs to the invocation that names it, and to the option that
        # names it (--deepspeed ds.json: a program that defines no --deepspeed never reads it)
        named = next((f for f in ex.facts if f.meta.get("reference")
                      and f.meta.get("written") == ref and f.line == line), None)
        tags = {k: named.meta[k] for k in ("invocation", "flag") if named is not None and k in named.meta}
        if tags:
            rex = replace(rex, facts=[_tagged(f, tags) for f in rex.facts])
        out.append((rsrc, rex))
        mine = account_of(rsrc, rex) if account_of is not None else account
        out.extend(follow_references(rex, rsrc, ctx, seen, mine, programs, account_of))
    return out


def _named_kind(rsrc: Source, key: str, ref: str) -> None:
    """A file read as the kind its reference names when its content alone says another kind
    that feeds other checks: `pip install -r deps.txt` names a requirements file even when
    its first lines do not look like one, `conda env create -f env.yml` a conda environment."""
    named = referenced_kind(key, ref)
    if named is None or rsrc.is_binary():
        return
    found = detect(rsrc)
    if found is not named and not set(found.checks) & set(named.checks):
        rsrc.kind = named.name


def _missing(ex: Extract, src: Source, ref: str, line, key: str, tried: list[str], index: int) -> MissingReference:
    """A reference found nowhere, with what decides which keys it could have set: the kind of
    file its option names, the referring run's frameworks and the dialect the reference says."""
    rkind = referenced_kind(key, ref)
    fact = _reference_fact(ex, ref, line)
    return MissingReference(written=ref, line=line, key=key, kind=rkind.name if rkind is not None else "",
                            referrer=src.name, frameworks=tuple(sorted(ex.frameworks)),
                            dialect=fact.meta.get("dialect") if fact is not None else None, tried=list(tried),
                            source=fact.source if fact is not None else "", unread=index,
                            invocation=fact.meta.get("invocation") if fact is not None else None)


def _reference_fact(ex: Extract, ref: str, line) -> Fact | None:
    return next((f for f in ex.facts if f.meta.get("reference") and f.meta.get("written") == ref and f.line == line),
                None)


def _found(ex: Extract, ref: str, line, found: bool) -> None:
    """The reference's fact (`config:deepspeed`) says whether this side found the file, as its
    resolver says: a reader looked on disk, which a side read from a revision is not."""
    for i, f in enumerate(ex.facts):
        if f.meta.get("reference") and f.meta.get("written") == ref and f.line == line \
                and bool(f.meta.get("exists")) != found:
            ex.facts[i] = replace(f, meta={**f.meta, "exists": found})


def _tagged(f: Fact, tags: dict) -> Fact:
    return replace(f, meta={**f.meta, **tags})


def _display(referrer: str, ref: str, how: str = "") -> str:
    """The name a referenced file is shown by: beside its referrer as written (pkg/train.py of
    `python -m pkg.train`), else by its base name there."""
    parent = referrer.replace("\\", "/").rsplit("/", 1)[0] if "/" in referrer else ""
    written = posixpath.normpath(ref.replace("\\", "/"))
    name = written if how == "beside the referring file" and not written.startswith(("/", "..")) else Path(ref).name
    return f"{parent}/{name}" if parent else name


def filter_findings(findings: list[Finding], opts: Options) -> list[Finding]:
    """--select, --ignore, --severity and the checks a command reports: what is shown, and so
    what makes the exit status."""
    floor = getattr(opts, "min_severity", None)
    out = []
    for f in findings:
        if floor and not Severity(f.severity).at_least(floor):
            continue
        if opts.select and not any(f.rule.startswith(s) for s in opts.select):
            continue
        if opts.ignore and any(f.rule.startswith(s) for s in opts.ignore):
            continue
        if opts.checks is not None and f.check not in opts.checks:
            continue
        out.append(f)
    return out


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

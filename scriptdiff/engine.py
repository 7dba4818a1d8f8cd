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
from pathlib import Path

from . import cache
from .compare import FactTable, compare_tables
from .model import Extract, Finding, InputError, Options, PairResult, Report, SideContext
from .registry import Kind, check_names, classifiers, derivations, detect, detect_kind  # noqa: F401 (detect_kind: API)
from .registry import kind as registry_kind
from .sources import Source, SourceError, read_path
from .suppress import apply as apply_suppressions


# Which kinds are worth caching on disk and spreading over worker processes (a libcst parse
# costs milliseconds per hundred lines), and which are compared as text above --max-bytes,
# is each kind's `cached` / `limited` in the registry.
# results computed in this process or received from workers, by cache key
_MEMO: dict[str, object] = {}


def _extract_key(src: Source, ctx: SideContext, kind: Kind) -> str:
    return cache.key("extract", kind.name, src.name, ctx.side, str(ctx.options.max_bytes), src.data)


def _pair_key(gsrc: Source, nsrc: Source, opts: Options, kind: Kind) -> str:
    return cache.key("pair", kind.name, gsrc.name, nsrc.name, str(opts.max_bytes), gsrc.data, b"\x01", nsrc.data)


def _cached(key: str, use_disk: bool, compute, dump, load):
    """compute() once per key: from this process's memo, the disk cache, or by computing."""
    if key in _MEMO:
        return load(_MEMO[key])
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


def extract(src: Source, ctx: SideContext) -> Extract:
    """Facts from one file; never raises: a failure becomes an errors entry."""
    if src.is_binary():
        return Extract(errors=[InputError(src.name, "binary file; not compared", fatal=True)])
    kind = detect(src)
    if kind.cached:
        return _cached(_extract_key(src, ctx, kind), ctx.options.use_cache, lambda: _extract(src, ctx, kind),
                       cache.dump_extract, cache.load_extract)
    return _extract(src, ctx, kind)


def _extract(src: Source, ctx: SideContext, kind: Kind) -> Extract:
    try:
        mod = kind.module()
    except ModuleNotFoundError as e:  # a language this build does not have
        return Extract(errors=[InputError(src.name, f"cannot analyse {kind.name} files: {e}")])
    if kind.limited and len(src.data) > ctx.options.max_bytes:
        ex = Extract(errors=[InputError(src.name, f"larger than the structural limit ({len(src.data):,} > "
                                                  f"{ctx.options.max_bytes:,} bytes, --max-bytes): settings not "
                                                  f"read, compared as text")])
    else:
        try:
            ex = mod.extract(src, ctx)
        except RecursionError:
            ex = Extract(errors=[InputError(src.name, "nested too deeply to analyse; skipped")])
        except Exception as e:  # a reader's bug must not cost the user the other inputs
            ex = Extract(errors=[InputError(src.name, f"could not be analysed ({type(e).__name__}: "
                                                      f"{str(e).splitlines()[0] if str(e) else ''}); skipped")])
    note = src.decode_note()
    if note:
        ex.errors.append(InputError(src.name, note))
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

PARALLEL_MIN_JOBS = 4  # units (changed pairs or lone files); below this, workers cost more than they save


def _unit(unit):
    """Run one unit of work (a pair's two extracts and its diff, or one lone extract) in
    this process or a worker; return [(key, dumped result)]. Doing a pair's three steps
    together lets the language module parse each file once."""
    out = []
    for what, key, args in unit:
        if what == "extract":
            src, ctx, kind = args
            out.append((key, cache.dump_extract(_extract(src, ctx, kind))))
        else:
            gsrc, nsrc, opts, kind = args
            out.append((key, cache.dump_pair(_diff_pair(gsrc, nsrc, opts, kind))))
    return out


def prefetch(gpu_sources: list[Source], npu_sources: list[Source], pairs: list[tuple[Source, Source]],
             gctx: SideContext, nctx: SideContext, opts: Options) -> None:
    """Compute the expensive per-file results ahead of the (ordered) pipeline, in worker
    processes when there are enough of them, and leave them in the memo, where the
    pipeline finds them. Output order never depends on workers."""
    def todo(key: str) -> bool:
        return key not in _MEMO and not (opts.use_cache and cache.get(key) is not None)

    def extract_step(src: Source, ctx: SideContext):
        if src.is_binary():
            return None
        kind = detect(src)
        if kind.cached:
            k = _extract_key(src, ctx, kind)
            if todo(k):
                return ("extract", k, (src, ctx, kind))
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
        steps = [extract_step(g, gctx), extract_step(n, nctx)]
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
    results = None
    if len(units) >= PARALLEL_MIN_JOBS and workers >= 2:
        results = _run_pool(units, workers)
    if results is None:  # few units, one core, or no workers to be had: in order, here
        results = (_unit(u) for u in units)
    for batch in results:
        for key, dumped in batch:
            _MEMO[key] = dumped
            if opts.use_cache:
                cache.put(key, dumped)


def _run_pool(units: list[list], workers: int):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:  # no fork on this platform
        return None

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
            futures = [pool.submit(_unit, u) for u in units]
            for u, fut in zip(units, futures):
                try:
                    results.append(fut.result())
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
                    results.append(solo.submit(_unit, [step]).result())
            except Exception:  # BrokenProcessPool, or no process to be had: not run here either
                results.append(died(step))
    return results


def build_table(extracts: list[Extract]) -> FactTable:
    table = FactTable()
    for ex in extracts:
        table.extend(ex.facts)
        table.frameworks |= ex.frameworks
    return table


def follow_references(ex: Extract, src: Source, ctx: SideContext, seen: set[str]) -> list[tuple[Source | None, Extract]]:
    """Configs referenced by a file (--deepspeed ds.json, --config x.yaml), read when present."""
    out = []
    base = Path(src.origin).parent if src.origin else None
    for ref, line, key in ex.references:
        if base is None:
            continue
        p = (base / ref) if not os.path.isabs(ref) else Path(ref)
        if not p.is_file():
            p2 = base / Path(ref).name
            p = p2 if p2.is_file() else p
        rp = str(p.resolve()) if p.exists() else str(p)
        if rp in seen or not p.is_file():
            continue
        seen.add(rp)
        try:
            rsrc = read_path(str(p), name=_display(src.name, ref))
        except SourceError as e:
            out.append((None, Extract(errors=[InputError(str(p), str(e))])))
            continue
        rex = extract(rsrc, ctx)
        out.append((rsrc, rex))
        out.extend(follow_references(rex, rsrc, ctx, seen))
    return out


def _display(referrer: str, ref: str) -> str:
    parent = referrer.replace("\\", "/").rsplit("/", 1)[0] if "/" in referrer else ""
    return f"{parent}/{Path(ref).name}" if parent else Path(ref).name


def analyse_side(sources: list[Source], ctx: SideContext,
                 extra: list[Extract] | None = None) -> tuple[FactTable, list[Extract]]:
    extracts = list(extra or [])
    seen = {str(Path(s.origin).resolve()) for s in sources if s.origin}
    for src in sources:
        ex = extract(src, ctx)
        extracts.append(ex)
        if not any(e.fatal for e in ex.errors):
            ctx.analysed += 1
        for _rsrc, rex in follow_references(ex, src, ctx, seen):
            extracts.append(rex)
    table = build_table(extracts)
    for derive in derivations("derive"):
        derive(table)
    return table, extracts


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


def compare_sides(gpu_sources: list[Source], npu_sources: list[Source], pairs: list[tuple[Source, Source]],
                  report: Report, opts: Options,
                  extracts: tuple[list[Extract], list[Extract]] | None = None) -> Report:
    """The whole pipeline over already-read sources; appends to `report`.

    `extracts` (GPU, NPU) are facts made elsewhere, e.g. datasets or checkpoints that
    `scriptdiff check` fingerprinted in place; they merge into each side's table."""
    gctx = SideContext("gpu", options=opts)
    nctx = SideContext("npu", options=opts)
    prefetch(gpu_sources, npu_sources, pairs, gctx, nctx, opts)
    gtable, gex = analyse_side(gpu_sources, gctx, extracts[0] if extracts else None)
    ntable, nex = analyse_side(npu_sources, nctx, extracts[1] if extracts else None)
    for ex in gex + nex:
        report.errors.extend(ex.errors)
        report.masked.extend(ex.masked)
        report.findings.extend(ex.findings)
    for g, n in pairs:
        if g.data == n.data:
            continue
        if g.is_binary() or n.is_binary():
            continue
        res = diff_pair(g, n, opts)
        report.findings.extend(res.findings)
        report.masked.extend(res.masked)
        report.errors.extend(res.errors)
    for derive_pair in derivations("derive_pair"):  # checks that need both sides in view
        derive_pair(gtable, ntable)
    findings, masked = compare_tables(gtable, ntable, classifiers=classifiers())
    report.findings.extend(findings)
    report.masked.extend(masked)
    report.table = [(k, gtable.get(k), ntable.get(k)) for k in sorted(gtable.keys() | ntable.keys())]
    report.tables = (gtable, ntable)  # for `hparams`: defaults of keys a side did not set
    report.check_order = check_names()
    apply_suppressions(report, gpu_sources, npu_sources, opts)  # inline comments + baseline, before --select
    report.findings = filter_findings(report.findings, opts)
    # "compared" counts what both sides could contribute: a run where every file of a side
    # failed outright compared nothing (exit 2), whatever the other side held
    sides_ok = (gctx.analysed or (extracts and extracts[0])) and (nctx.analysed or (extracts and extracts[1]))
    report.compared += min(gctx.analysed, nctx.analysed) or (1 if sides_ok else 0)
    return report.sorted()


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

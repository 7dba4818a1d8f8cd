"""The Python diff: hyperparameter facts, masked substitutions and a structural code diff.

Each file is parsed once with libcst (cached per content for the engine's extract and
diff_pair calls). `extract` returns the hyperparameter facts (facts). `diff_pair`
compares what is left after masking, scope by scope:

1. per block, imports are compared as sets of qualified names (adapter imports masked);
2. the other statements are aligned on their source text, so identical statements cost a
   string comparison;
3. the statements that differ are normalized (comments and formatting dropped, imports
   resolved, NPU forms rewritten into GPU forms) and aligned again; equal after
   normalization means every rewrite was an expected substitution (listed as masked);
4. what still differs is paired by anchor (assignment target, called function, def name)
   and diffed: a changed call argument by argument, a def by signature and body, a
   statement on one side only reported as such.

Arguments that are hyperparameter facts (lr, betas, seeds, ...) are compared as facts and
skipped here, so nothing is reported twice. Severity comes from `classes` in
rules/python.yaml.

The parts: parse (parse, statements, normalization; node positions in spans),
facts (hyperparameters), and for a pair, sharing one pair.PairState:
align (statement alignment), nodediff (node diffs into sites),
classify (severity and findings; relevance: where a difference goes), regions (a rewritten
loop, one finding) and port (imports, masks, swap checks).
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import replace

from ... import budget
from ...run.finding import reclassified
from ...model import Extract, InputError, Masked, PairResult, Severity, Side
from ...ruleset.rules import code
from .. import text
from .align import Aligner
from .classify import Classifier, reach_text
from .cmdline import command_line
from . import focus as python_focus
from .facts import read_facts
from .nodediff import NodeDiff
from .pair import PairState, one_line
from .parse import Parsed, parse
from .port import PortChecks
from .specialise import specialise
from .float64 import account as float64_account
from .probes import probes as find_probes
from .transfer import account as transfer_account, counterparts as transfer_counterparts, may_import as may_import_t2n

# a parsed file costs about 2 KB per syntax node, some 0.5 to 1.5 GB per MB of source: the
# cache keeps a pair's two files and what else fits in budget.PARSE_CACHE_BYTES of source
_CACHE: "OrderedDict[tuple, Parsed]" = OrderedDict()


_PLANS: "OrderedDict[tuple, tuple | None]" = OrderedDict()


def focus_text(gsrc, nsrc, side: str) -> tuple[str, list[int]] | None:
    """This side's text as the structural reader sees it when the pair differs in a few places
    (focus.py: the statements read, and their lines' numbers in the file), or None for
    the whole file."""
    key = python_focus.pair_key(gsrc.data, nsrc.data)
    if key not in _PLANS:
        got = python_focus.take(key)  # planned ahead by the parent of a folder diff (zygote.py)
        _PLANS[key] = python_focus.plan(python_focus.source_text(gsrc), python_focus.source_text(nsrc),
                                            python_focus.fact_callee_names()) \
            if got is python_focus.NOT_GIVEN else got
        while len(_PLANS) > 8:
            _PLANS.popitem(last=False)
    got = _PLANS[key]
    if got is None:
        return None
    return got[0] if side == "gpu" else got[1]


def _key(src, max_bytes: int | None, focus, side: str | None) -> tuple:
    return (src.name, hashlib.blake2b(src.data, digest_size=16).digest(), max_bytes,
            None if focus is None else hashlib.blake2b(focus[0].encode("utf-8", "surrogatepass"),
                                                       digest_size=16).digest(), side)


def analyse(src, max_bytes: int | None = None, focus: tuple[str, list[int]] | None = None,
            side: str | None = None) -> Parsed:
    """Parse, specialise to `side`'s device (specialise.py) and read the facts of one source
    (or `focus`, its focused text and line numbers), cached by name, content, focus, limit and side."""
    key = _key(src, max_bytes, focus, side)
    p = _CACHE.get(key)
    if p is not None:
        _CACHE.move_to_end(key)
        return p
    if focus is None:
        p = parse(src.name, python_focus.source_text(src), max_bytes)
    else:
        p = parse(src.name, focus[0], max_bytes, linemap=focus[1], lines=python_focus.source_text(src).splitlines())
    if p.error is None and side is not None:
        try:
            specialise(p, side)
        except RecursionError:
            raise
        except Exception as e:  # never a traceback: the file is compared as written
            p.spec = None
            p.fact_error = f"device tests not read ({type(e).__name__}: {one_line(str(e), 80)}); compared as written"
    if p.error is None:
        try:
            read_facts(p, "")
        except RecursionError:
            raise
        except Exception as e:  # never a traceback: keep the structural diff, note the lost facts
            p.facts = []
            p.fact_error = f"hyperparameters not read ({type(e).__name__}: {one_line(str(e), 80)})"
    p.size = len(src.data)
    _CACHE[key] = p
    while len(_CACHE) > 2 and (len(_CACHE) > 8 or sum(q.size for q in _CACHE.values()) > budget.PARSE_CACHE_BYTES):
        _CACHE.popitem(last=False)[1].release()
    return p


def extract(src, ctx, partner=None):
    """The file's facts; with `partner` (the other side of a pair compared on its own), those of
    the statements the pair's focus reads (focus.py), the rest being equal on both sides."""
    focus = None
    if partner is not None:
        focus = focus_text(src, partner, "gpu") if ctx.side == "gpu" else focus_text(partner, src, "npu")
    limit = ctx.options.max_bytes
    p = analyse(src, limit, focus, ctx.side)
    if p.error is not None and focus is not None:  # the focused text is no clean cut: the whole file
        p = analyse(src, limit, side=ctx.side)
    if p.error is not None:  # its settings are unknown, not absent: the input is not understood
        return Extract(errors=[InputError(src.name, f"{p.error}; compared as text")],
                       unread=[f"its settings were not read ({p.error})"])
    errors = [InputError(src.name, p.fact_error)] if p.fact_error else []
    lost = p.fact_error if p.fact_error and p.fact_error.startswith("hyperparameters not read") else None
    unread = list(p.too_large) + ([f"its settings were not read ({lost})"] if lost else [])
    masked, notes = device_account(p, ctx.side)
    whole = p
    if focus is not None and ctx.side == "npu" and may_import_t2n(src.data):  # its map covers the whole program,
        whole = analyse(src, limit, side=ctx.side)  # not only the statements the pair's focus reads
    mapped, ported = transfer_account(whole, ctx.side) if whole.error is None else ([], [])
    masked += mapped  # transfer_to_npu's run-time port (transfer.py)
    cmd = None
    if focus is None:  # a program read whole: the command line its parser accepts
        try:
            cmd = command_line(p)
        except RecursionError:
            raise
        except Exception as e:  # never a traceback: the launch flags then count as today
            cmd = {"kind": "argparse", "complete": False, "why": f"its parser could not be read ({type(e).__name__})",
                   "line": None, "parse": None, "parse_line": None, "stops": True, "abbrev": True, "refusal": "",
                   "options": []}
    return Extract(facts=list(p.facts), frameworks=set(p.frameworks), errors=errors, masked=masked, notes=notes,
                   unread=unread, command_line=cmd, findings=ported, probes=find_probes(p), unknowns=dict(p.unknowns))


def device_account(p: Parsed, side: str) -> tuple[list, list[str]]:
    """The code this side's device does not run, as SD019 masks (one per statement, with its
    line), and the account's note on the device tests decided and left as written."""
    sp = p.spec
    if sp is None:
        return [], []
    masked = []
    for line, why, rule in sp.set_aside:
        here = Side(value=why, path=p.name, line=line, source=p.text_at(line))
        masked.append(Masked(rule=code(rule), gpu=here if side == "gpu" else None, npu=here if side == "npu" else None))
    note = sp.note()
    return masked, [note] if note else []


def diff_pair(gsrc, nsrc, opts):
    """The pair's structural differences (a pair above --max-bytes never gets here: the
    engine compares it as text)."""
    limit = opts.max_bytes
    if gsrc.data == nsrc.data or (_key(gsrc, limit, None, "gpu") in _CACHE and _key(nsrc, limit, None, "npu") in _CACHE):
        # one file read once per device (its text has no difference to focus on), or both
        # files read whole already (a run reads its program whole): the whole files
        gt = nt = None
    else:
        gt, nt = focus_text(gsrc, nsrc, "gpu"), focus_text(gsrc, nsrc, "npu")
    g = analyse(gsrc, limit, gt, "gpu")
    n = analyse(nsrc, limit, nt, "npu")
    if gt is not None and (g.error is not None or n.error is not None):  # no clean cut: the whole files
        g, n = analyse(gsrc, limit, side="gpu"), analyse(nsrc, limit, side="npu")
    if g.error is not None or n.error is not None:
        # the error itself is reported by extract(); here only the text comparison
        return text.diff_pair(gsrc, nsrc, opts, reason=(g if g.error is not None else n).text_reason)
    try:
        res = compare(g, n)
    except RecursionError:
        raise  # the engine falls back to text with its own note
    except Exception as e:  # a defect here must not cost the user the comparison
        res = text.diff_pair(gsrc, nsrc, opts, reason="structural diff failed")
        res.errors.append(InputError(nsrc.name, f"structural Python diff failed ({type(e).__name__}: "
                                                f"{one_line(str(e), 80)}); compared as text"))
        return res
    res.findings.extend(float64_account(g, n))  # float64 asked for on the NPU
    if may_import_t2n(nsrc.data):  # transfer_to_npu's mappings with the GPU lines they stand for (whole files)
        gw = g if gt is None else analyse(gsrc, limit, side="gpu")
        nw = n if nt is None else analyse(nsrc, limit, side="npu")
        if gw.error is None and nw.error is None:
            res.masked.extend(transfer_counterparts(gw, nw))
    return res


def compare(g: Parsed, n: Parsed) -> PairResult:
    """The structural diff of two parsed files: findings and masked substitutions."""
    state = PairState(g, n)
    nodes = NodeDiff(state)
    classifier = Classifier(state)
    aligner = Aligner(state, nodes, classifier, PortChecks(state, nodes, classifier))
    aligner.block(g.body, n.body, "<module>")
    classifier.finish(nodes.plumb)  # the file's own functions on one side only, once their calls are compared
    aligner.devices.finish()
    res = PairResult(findings=group_sites(state.findings), masked=state.masked)
    # the parts refer to each other and to both files: cycles that, left to the collector (which a
    # command freezes: run/gcpause.py), would keep both trees to the end of the process
    for part in (aligner, classifier, nodes, state):
        vars(part).clear()
    return res


def group_sites(findings: list) -> list:
    """The same code difference at several places (one decision: `.cuda(0)` -> `.npu(1)` at every
    call) is one finding, at its first place, listing the others' lines."""
    groups: dict = {}
    order = []
    for f in findings:
        if f.check != "script":
            order.append([f])
            continue
        k = (f.message, repr(f.gpu.value) if f.gpu else None, f.gpu is None,
             repr(f.npu.value) if f.npu else None, f.npu is None)
        if k in groups:
            groups[k].append(f)
        else:
            groups[k] = [f]
            order.append(groups[k])
    out = []
    for g in order:
        first = g[0]
        said = reach_text(first.extra)  # where the difference goes (classify.reach_text)
        if len(g) > 1:  # the decision is as severe as its most severe place
            worst = min(g, key=lambda x: Severity(x.severity).rank)
            said = reach_text(worst.extra)
            reaches = {"reaches": worst.extra["reaches"]} if "reaches" in worst.extra else {}
            first = replace(reclassified(first, worst.rule),
                            extra={k: v for k, v in {**first.extra, **reaches}.items()
                                   if k != "reaches" or reaches})
            where = ", ".join(f"{x.gpu.line if x.gpu else '-'}/{x.npu.line if x.npu else '-'}" for x in g[1:])
            first = replace(first, message=f"{first.message}{said}; the same at {len(g) - 1} more place(s), "
                                           f"GPU/NPU lines {where}",
                            extra={**first.extra, "also": [[x.gpu.line if x.gpu else None,
                                                            x.npu.line if x.npu else None] for x in g[1:]]})
        elif said:
            first = replace(first, message=first.message + said)
        out.append(first)
    return out

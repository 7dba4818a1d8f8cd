"""Claims against a dump (issue 44): what a side's scripts set, checked against what that side's
own msprobe dump shows its run did (the `audit` hook of the `dumps` check; rules/dumps.yaml
`dump_evidence`). The other side plays no part.

audit(table, side) -> (findings, notes)
    With a dump in the side's table (the `dumps` fact its `measure` made), the forward pass of
    its first readable rank is read once more (every rank runs the same program), its API calls
    only, and stopped at the end of the forward pass:
      precision  each compute call (a matmul, a linear layer) counted in the lowest precision
                 among its floating inputs and outputs; the run's value is that of most of them
                 ("bf16 set, the calls compute in float32")
      attention  which form of the attention port ran: a fused call (flash_attn,
                 scaled_dot_product_attention, npu_fusion_attention) or the eager block
                 (matmul, softmax, matmul), and in which module
    one SD229 finding for a setting the run did not follow (the attention only when the scripts
    ask for a fused kernel and the dump holds the eager path and no fused call), and one note on
    the dump: which of the settings the scripts set it confirmed, contradicted or left without
    evidence.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .. import budget
from ..checks.evidence import account, claim_of, not_in_effect
from ..model import Finding
from ..run.compare import FactTable, equal
from ..ruleset.rules import RuleSet, derived
from ..ruleset.vocabulary import convert
from . import ports
from .check import KEY
from .reader import DumpError, Header, calls, parents, parse_name

BLOCK = "the msprobe dump"


@derived
def _spec(rs: RuleSet) -> dict:
    return rs.section("dump_evidence") or {}


@dataclass
class Seen:
    """What the forward pass of one side's dump shows, over its ranks."""

    dump: str = ""  # the first rank's dump.json: where a finding points
    compute: Counter = field(default_factory=Counter)  # value of the precision key -> compute calls
    dtypes: Counter = field(default_factory=Counter)  # the dump's dtype -> compute calls
    fused: Counter = field(default_factory=Counter)  # fused attention op -> calls
    eager: int = 0  # eager attention blocks
    modules: list = field(default_factory=list)  # the modules the eager blocks ran in (in order, once each)
    read: bool = False


def _lowest(call, dtypes: dict) -> str | None:
    """The dump dtype of the call's lowest-precision floating tensor among its inputs and outputs."""
    order = {"fp16": 0, "bf16": 1, "fp32": 2}
    best = None
    for name, t in call.slots.items():
        d = getattr(t, "dtype", None)
        if d is None or not name.startswith(("input", "output")) or d not in dtypes:
            continue
        if best is None or order.get(dtypes[d], 3) < order.get(dtypes[best], 3):
            best = d
    return best


def survey(side) -> Seen:
    """The forward pass of the first readable rank of a dumps.run.Side that holds one, read
    through once more."""
    spec = _spec()
    prec, att = spec.get("precision"), spec.get("attention")
    compute = frozenset(prec["calls"]) if prec else frozenset()
    dtypes = prec["dtypes"] if prec else {}
    port = ports.ports().get(att["port"]) if att else None
    fused = frozenset(op for f in port.forms if f.name in att["fused"] for op in f.calls) if port else frozenset()
    eager = next((f for f in port.forms if f.name == att["eager"]), None) if port else None
    seen = Seen()
    for rank in side.ranks:
        if seen.read:
            break  # one rank's forward pass says it: every rank runs the same program
        if rank.label not in side.headers:
            continue
        seen.dump = seen.dump or rank.dump
        queue = []  # the forward pass's API calls
        try:
            for call in calls(rank, Header()):
                if call.phase:
                    break
                if call.is_module or call.direction != "forward":
                    continue
                seen.read = True
                if call.op in compute:
                    d = _lowest(call, dtypes)
                    if d is not None:
                        seen.dtypes[d] += 1
                        seen.compute[dtypes[d]] += 1
                if call.op in fused:
                    seen.fused[call.op] += 1
                if len(queue) < budget.DUMP_EVIDENCE_CALLS:
                    call.slots = {}  # its name and op are all a block needs
                    queue.append(call)
        except DumpError:
            continue  # a rank that broke since it was surveyed: its errors are the comparison's
        if eager is None:
            continue
        i, blocks = 0, []
        while i < len(queue):
            n = ports.sequence_at(queue, i, eager)
            if n:
                blocks.append(queue[i:i + n])
                i += n
            else:
                i += 1
        seen.eager += len(blocks)
        names = {c.name for b in blocks for c in b}
        up = parents(rank.construct, names)
        for b in blocks:
            mod = next((parse_name(up[c.name])[2] for c in b if c.name in up), None)
            if mod and mod not in seen.modules:
                seen.modules.append(mod)
    return seen


def _named(items: list[str], most: int = 3) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


def audit(table: FactTable, side: str) -> tuple[list[Finding], list[tuple[str, str]]]:
    dumps = [f for f in table.facts.get(KEY, []) if "side" in f.meta]
    spec = _spec()
    if not dumps or not spec:
        return [], []
    claims = {}
    for part in ("precision", "attention"):
        key = spec[part]["key"] if part in spec else None
        c = claim_of(table.facts.get(key, [])) if key else None
        if c is not None:
            typed = convert(key, c.value)  # (key, canonical value), None: a switch that sets nothing
            if typed is not None:
                claims[part] = (key, c, typed[1])
    if not claims:
        return [], []
    fact = dumps[-1]
    seen = survey(fact.meta["side"])
    if not seen.read:
        return [], []
    found, ok, bad, unproven = [], [], [], []
    if "precision" in claims:
        key, c, want = claims["precision"]
        if not seen.compute:
            unproven.append(key)
        else:
            ran, n = max(seen.compute.items(), key=lambda kv: (kv[1], kv[0] != "fp32"))
            total = sum(seen.compute.values())
            if equal(want, ran) or want == ran:
                ok.append(key)
            else:
                bad.append(key)
                shown = ", ".join(f"{k.replace('torch.', '')} {v}" for k, v in seen.dtypes.most_common())
                found.append(not_in_effect(key, c, side, ran, BLOCK, seen.dump, None, "",
                                           f"{n} of its {total} compute calls in the forward pass run in {ran}: "
                                           f"{shown}"))
    if "attention" in claims:
        key, c, want = claims["attention"]
        if want is True and seen.fused or want is False and seen.eager and not seen.fused:
            ok.append(key)
        elif want is True and seen.eager and not seen.fused:
            bad.append(key)
            where = f" in {_named(seen.modules)}" if seen.modules else ""
            found.append(not_in_effect(key, c, side, False, BLOCK, seen.dump, None, "",
                                       f"the attention ran the eager path, matmul-softmax-matmul {seen.eager} "
                                       f"time(s){where}, and no fused attention call"))
        else:  # nothing of attention in the dump, or a fused call while off: sdpa is off and fused alike
            unproven.append(key)
    return found, [(fact.path, account(side, sorted(ok), sorted(bad), sorted(unproven)))]

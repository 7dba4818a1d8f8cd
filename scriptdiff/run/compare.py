"""Compare facts by key, and turn differences into findings.

Every check hands its facts here: hyperparameters, environment variables and versions,
packages, dataset files, tensors. One side's facts form a `FactTable`; the effective value
of a key is its highest-ranked fact (a training log over a launch script over a config over
a default). A key on one side only is compared against the other framework's default where
the vocabulary knows one. How a difference is classified (rule code, severity, message) is
decided by the check's *classifier*, named in the check registry (rules/kinds.yaml `checks`,
scriptdiff/ruleset/registry.py) and handed in by the engine; the default classifier reads the
vocabulary's categories (scriptdiff/ruleset/vocabulary.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from .. import budget
from .finding import finding
from ..model import ORIGIN_DEFAULT, Fact, Finding, Masked
from ..ruleset.rules import RuleSet, load
from ..ruleset.vocabulary import category, default_fact, dialect_default


def equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, bool) and isinstance(b, bool) and a == b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if a == b:
            return True
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return False
        try:
            if list(a) == list(b):  # at C speed; a 20-million-element value is not walked in Python
                return True
        except Exception:
            pass
        return all(equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    return a == b


def show(v: Any) -> str:
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple, dict)) and len(v) > budget.MESSAGE_VALUE_CHARS:  # never str() of a huge value
        head = list(v.items())[:20] if isinstance(v, dict) else list(v[:20])
        return f"{head!s}… ({len(v) - 20:,} more items)"
    text = str(v)
    return text if len(text) <= budget.MESSAGE_VALUE_CHARS else f"{text[:budget.MESSAGE_VALUE_CHARS]}… ({len(text) - budget.MESSAGE_VALUE_CHARS:,} more characters)"


@dataclass
class FactTable:
    """One side's facts. `framework` names whose defaults apply ('megatron', 'hf', ...)."""

    facts: dict[str, list[Fact]] = field(default_factory=dict)
    frameworks: set[str] = field(default_factory=set)
    versions: dict[str, str] = field(default_factory=dict)  # framework -> the side's version, where known

    def add(self, fact: Fact) -> None:
        self.facts.setdefault(fact.key, []).append(fact)

    def extend(self, facts: Iterable[Fact]) -> None:
        for f in facts:
            self.add(f)

    def get(self, key: str, sectioned: bool = True) -> Fact | None:
        """The key's effective fact: the key's own setting before a setting of a section
        (`meta["sectioned"]`: critic.optim.lr is lr only when nothing else is), then the highest
        rank, then the last one read (a later assignment overrides). `sectioned=False`: the
        key's own settings only (what derivations read)."""
        facts = self.facts.get(key)
        if not sectioned and facts:
            facts = [f for f in facts if not f.meta.get("sectioned")]
        if not facts:
            return None
        return max(enumerate(facts), key=lambda ix: (not ix[1].meta.get("sectioned"), ix[1].rank, ix[0]))[1]

    def keys(self, check: str | None = None, sectioned: bool = True) -> set[str]:
        return {k for k, fs in self.facts.items() if (check is None or any(f.check == check for f in fs))
                and (sectioned or any(not f.meta.get("sectioned") for f in fs))}

    def value(self, key: str, default: Any = None) -> Any:
        f = self.get(key)
        return default if f is None else f.value


# A classifier turns a difference into a Finding, or into a Masked entry when the difference
# is an expected substitution, or None when it is no difference at all.
Classifier = Callable[[str, Fact | None, Fact | None, RuleSet], "Finding | Masked | None"]


def compare_tables(gpu: FactTable, npu: FactTable, checks: Iterable[str] | None = None,
                   rs: RuleSet | None = None,
                   classifiers: Mapping[str, Classifier] | None = None,
                   unknown: Mapping[str, Callable[[Fact], bool]] | Iterable[str] = ()
                   ) -> tuple[list[Finding], list[Masked], list[str]]:
    """Every key of either side, compared; one finding per difference.

    `classifiers` maps a check to its classifier (the engine passes the registry's); a check
    without one is classified by the vocabulary's categories (`classify_hparam`).

    Equal values whose facts carry `meta["mask"] = CODE` (a renamed environment variable, a
    remapped flag) are listed as masked substitutions.

    `unknown` names the sides ("gpu", "npu") where an input could not be read: a key missing
    there is unknown, not unset, so it is neither compared with a default nor reported as set
    on one side only; such keys are returned as the third element. As a mapping, each side
    has a test of the other side's fact: only keys it accepts are unknown (a side whose
    referenced config was found nowhere is unknown for what configs set, not for its flags).
    """
    rs = rs or load()
    if not isinstance(unknown, Mapping):
        unknown = {side: (lambda _f: True) for side in unknown}
    skipped: list[str] = []
    wanted = set(checks) if checks is not None else None
    findings: list[Finding] = []
    masked: list[Masked] = []
    for key in sorted(gpu.keys() | npu.keys()):
        g = gpu.get(key)
        n = npu.get(key)
        check = (g or n).check
        if wanted is not None and check not in wanted:
            continue
        if (g is None and "gpu" in unknown and unknown["gpu"](n)) or \
                (n is None and "npu" in unknown and unknown["npu"](g)):
            skipped.append(key)
            continue
        if check == "hyperparameters":
            g, n = _same_section(key, gpu, npu, g, n)
            if g is None:
                g = default_fact(key, gpu.frameworks, rs, gpu.versions) or dialect_default(key, gpu, rs)
            if n is None:
                n = default_fact(key, npu.frameworks, rs, npu.versions) or dialect_default(key, npu, rs)
            # a default that only confirms an equal value (a program started as one process may
            # start others itself): against any other value, or none, the side has no known value
            if g is not None and g.meta.get("confirms") and (n is None or not equal(g.value, n.value)):
                g = None
            if n is not None and n.meta.get("confirms") and (g is None or not equal(g.value, n.value)):
                n = None
            if g is None and n is None:
                continue
            if (g is None) != (n is None) and _derived_alike(g or n, gpu if g is None else npu, rs):
                continue
            if (g is None) != (n is None) and (g or n).meta.get("implied"):
                continue  # applied by another setting (accelerate's fp16: its scaler), which is compared itself
        if (g or n).meta.get("option") and ((g is None) != (n is None) or g.value is None and n.value is None):
            continue  # an option one side's parser alone defines (the code diff says so, its uses compared
            # by value), or one neither side gives a value: no setting
        fn = (classifiers or {}).get(check, classify_hparam)
        if g is not None and n is not None and equal(g.value, n.value) and not (g.meta.get("force") or n.meta.get("force")):
            code = g.meta.get("mask") or n.meta.get("mask")
            if code:
                masked.append(Masked(rule=code, gpu=g.side(), npu=n.side()))
            site = _other_site([x for x in gpu.facts.get(key, []) if slot(x) == slot(g)],
                               [x for x in npu.facts.get(key, []) if slot(x) == slot(n)])
            if site is not None:  # the last call agrees, an earlier one does not
                f = fn(key, site[0], site[1], rs)
                if isinstance(f, Finding):
                    findings.append(f)
        else:
            f = fn(key, g, n, rs)
            for x in (f if isinstance(f, list) else [f]):  # a classifier may find several things (dumps)
                if isinstance(x, Masked):
                    masked.append(x)
                elif x is not None:
                    findings.append(x)
        if check == "hyperparameters":
            said = [x for x in findings if x.key == key]
            for f, facts in _slot_findings(key, gpu, npu, g, n, fn, rs):
                if not isinstance(f, Finding):
                    continue
                constant = any(x is not None and "." not in slot(x) for x in facts)
                same = next((x for x in said if _same_values(f, x, constant)), None)
                if same is None:
                    findings.append(f)
                    said.append(f)
                else:  # said once; the finding stands for this setting too
                    same.settings.append(f)
    return findings, masked, skipped


def slot(f: Fact) -> str:
    """Which setting of its key a fact is: the reader's `meta["slot"]` (a section's path, a
    callee's keyword), else the spelling the file wrote (`--block-size` and `--max-length` both
    say seq_length, as two settings)."""
    s = f.meta.get("slot")
    if s:
        return str(s)
    w = f.meta.get("written_key") or f.key
    return str(w).strip().lstrip("-+~").replace("-", "_").lower()


def _slot_findings(key: str, gpu: FactTable, npu: FactTable, g: Fact | None, n: Fact | None,
                   fn: "Classifier", rs: RuleSet) -> list:
    """Two settings that land on one key must not hide each other (issue 27): each setting
    (slot) a side writes besides the one compared is compared too, with the same setting of
    the other side; a setting of a section on one side only is said as such, another spelling
    on one side only is compared with the other side's value of the key."""
    gfacts, nfacts = gpu.facts.get(key, []), npu.facts.get(key, [])
    gs, ns = _by_slot(gfacts), _by_slot(nfacts)
    if len(gs) <= 1 and len(ns) <= 1:  # one setting a side: the one compared
        return []
    out = []
    for name in list(gs) + [x for x in ns if x not in gs]:
        a, b = gs.get(name), ns.get(name)
        if a is not None and b is not None:
            if a is g and b is n:
                continue
            if not equal(a.value, b.value):
                out.append((fn(key, a, b, rs), (a, b)))
            else:
                site = _other_site([x for x in gfacts if slot(x) == name], [x for x in nfacts if slot(x) == name])
                if site is not None:
                    out.append((fn(key, site[0], site[1], rs), site))
            continue
        one, other = (a, n) if a is not None else (b, g)
        if one is g or one is n:
            continue
        if one.meta.get("sectioned"):
            out.append((fn(key, one, None, rs) if a is not None else fn(key, None, one, rs), (one,)))
        elif other is not None and not equal(one.value, other.value):
            out.append((fn(key, one, other, rs) if a is not None else fn(key, other, one, rs), (one,)))
    return [(f, facts) for f, facts in out if f is not None]


def _same_section(key: str, gpu: FactTable, npu: FactTable, g: Fact | None, n: Fact | None):
    """The pair a key is compared on: when a side's value is a section's setting (actor.optim.lr)
    and the other side has that section's too, those two, never one section's against another's."""
    if g is None or n is None or slot(g) == slot(n) or not (g.meta.get("sectioned") or n.meta.get("sectioned")):
        return g, n
    gs, ns = _by_slot(gpu.facts.get(key, [])), _by_slot(npu.facts.get(key, []))
    if g.meta.get("sectioned") and slot(g) in ns:
        return g, ns[slot(g)]
    if n.meta.get("sectioned") and slot(n) in gs:
        return gs[slot(n)], n
    return g, n


def _derived_alike(present: Fact, other: FactTable, rs: RuleSet) -> bool:
    """A value derived on one side only from inputs the other side has alike (the same value,
    or both unset, or its default that confirms it: a world size of 1 stated against a script
    started as one process gives a data parallel size the other side does not derive): the
    same value follows there, so there is no difference."""
    if not present.derived or not present.meta.get("input_values"):
        return False
    for k, v in present.meta["input_values"].items():
        f = other.get(k, sectioned=False) or default_fact(k, other.frameworks, rs, other.versions)
        if f is not None and f.derived:
            return False  # derived there too from something else: compared as it is
        if not equal(None if f is None else f.value, v) and not (f is None and v is None):
            return False
    return True


def _by_slot(facts: list[Fact]) -> dict[str, Fact]:
    """The effective explicit fact of each setting (slot) among a key's facts."""
    out: dict[str, tuple] = {}
    for i, f in enumerate(facts):
        if f.origin == ORIGIN_DEFAULT or f.origin == "derived" or f.meta.get("commented"):
            continue
        s = slot(f)
        if s not in out or (f.rank, i) >= (out[s][0].rank, out[s][1]):
            out[s] = (f, i)
    return {s: f for s, (f, _i) in out.items()}


def _same_values(a: Finding, b: Finding, constant: bool) -> bool:
    """Two findings of one key that say one thing: the same two values read at the same place on
    a side (two calls reading one constant, SEED; a flag and a keyword both against the other
    side's one setting), or the same two values where one is a module-level constant
    (`constant`: `train_cfg.max_epochs = max_epochs`, the setting and what it reads)."""
    def v(side):
        return None if side is None else side.value

    def line(side):
        return None if side is None else side.line
    same = equal(v(a.gpu), v(b.gpu)) and equal(v(a.npu), v(b.npu)) and (a.gpu is None) == (b.gpu is None) \
        and (a.npu is None) == (b.npu is None)
    return same and (constant or (a.gpu is not None and line(a.gpu) == line(b.gpu))
                     or (a.npu is not None and line(a.npu) == line(b.npu)))


def _code_sites(facts: list[Fact]) -> list[Fact]:
    return [f for f in facts if f.meta.get("callee") and f.origin != ORIGIN_DEFAULT]


def _other_site(gfacts: list[Fact], nfacts: list[Fact]) -> tuple[Fact, Fact] | None:
    """A setting written at several call sites in code (clip_grad_norm_ in every step
    function): the value that wins agrees, but a site that differs is a difference too. Sites
    are paired in order when both sides have as many; otherwise a value one side never uses
    is paired with the other side's site nearest in order. None when every site agrees."""
    gs, ns = _code_sites(gfacts), _code_sites(nfacts)
    if len(gs) < 2 and len(ns) < 2:
        return None
    if len(gs) == len(ns):
        return next(((a, b) for a, b in zip(gs, ns) if not equal(a.value, b.value)), None)
    for i, a in enumerate(gs):
        if not any(equal(a.value, b.value) for b in ns) and ns:
            return a, ns[min(i, len(ns) - 1)]
    for j, b in enumerate(ns):
        if not any(equal(a.value, b.value) for a in gs) and gs:
            return gs[min(j, len(gs) - 1)], b
    return None


def classify_hparam(key: str, g: Fact | None, n: Fact | None, rs: RuleSet, name: str | None = None) -> Finding | None:
    """The finding for a difference in `key`; `name` is how the message names it (the user's
    spelling next to the key: "gradient_checkpointing (recompute_granularity)"), the key by default."""
    name = name or key
    cat = category(key, rs)
    title = cat.title
    if g is None or n is None:
        present, side = (g, "GPU") if n is None else (n, "NPU")
        other = "NPU" if side == "GPU" else "GPU"
        note = ""
        for f in (g, n):
            if f is not None and f.note:
                note = f" ({f.note})"
        msg = f"{name} = {show(present.value)} is set on {side} only; {other} has no value and no known default{note}"
    else:
        notes = "; ".join(dict.fromkeys(x for x in (g.note, n.note) if x))
        on = "for" if isinstance(g.value, bool) and isinstance(n.value, bool) else "on"  # not "is on on GPU"
        msg = f"{title}: {name} is {show(g.value)} {on} GPU and {show(n.value)} {on} NPU"
        if notes:
            msg += f" ({notes})"
    derived = bool((g and g.derived) or (n and n.derived))
    return finding(cat.rule, key=key, gpu=g, npu=n, message=msg, derived=derived, rs=rs)

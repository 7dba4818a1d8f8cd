"""What a masked port edit keeps (docs/fidelity.md): its class (exact, equivalent, changes),
where the fact comes from, and why or what changes. A mask rule says it for every edit it
masks (its `fidelity` fields); rules/fidelity.yaml `fidelity_targets` refine it for what one
edit maps to (`Masked.target`). transfer_to_npu's run-time map is here too (`t2n`)."""
from __future__ import annotations

from dataclasses import dataclass

from ..model import Masked
from .rulepack import RuleSet
from .rules import derived, load

CLASSES = ("exact", "equivalent", "changes")
# the target of an import a port edit needs on one side only (`import torch_npu.optim`, `from
# flash_attn import ...`): an import computes nothing, so it is exact whatever its rule's edit keeps
IMPORT_TARGET = "import:"
# the target of a statement a swapped kernel replaces besides the one the swap is listed with
# (the GPU's `variance = x.pow(2).mean(-1)` of an RMSNorm rewritten as one npu_rms_norm call):
# the swap carries the class, the statement is listed with it
PART_TARGET = "part:"


@dataclass(frozen=True)
class Fidelity:
    cls: str  # exact | equivalent | changes
    source: str
    why: str = ""  # the reason (equivalent) or the consequence (changes)
    lowers_precision: bool = False
    kernel: str = ""  # what the edit maps to, when a target names it


def _of(d: dict, kernel: str = "") -> Fidelity:
    cls = d.get("fidelity", "exact")
    return Fidelity(cls=cls, source=d.get("source", ""),
                    why=d.get("consequence" if cls == "changes" else "reason", ""),
                    lowers_precision=bool(d.get("lowers_precision")), kernel=kernel or d.get("kernel", ""))


def of(m: Masked, rs: RuleSet | None = None) -> Fidelity:
    """The fidelity of masked edit `m`: its target's, else its rule's (exact when a user's mask
    says nothing)."""
    rs = rs or load()
    if m.target.startswith(IMPORT_TARGET):
        return Fidelity(cls="exact", source="an import computes nothing", kernel=m.target[len(IMPORT_TARGET):])
    if m.target.startswith(PART_TARGET):
        return Fidelity(cls="exact", source="a statement of a kernel swap: the swap carries its class",
                        kernel=m.target[len(PART_TARGET):])
    t = (rs.section("fidelity_targets") or {}).get(m.target) if m.target else None
    if t is not None:
        return _of(t)
    r = rs.rules.get(m.rule)
    return _of(r.fidelity if r is not None else {}, kernel=m.target)


def tally(masked) -> str:
    """'11 exact, 1 equivalent' over the masked edits' classes (set by the run), in CLASSES order."""
    counts = {c: 0 for c in CLASSES}
    for m in masked:
        counts[m.fidelity or "exact"] = counts.get(m.fidelity or "exact", 0) + 1
    return ", ".join(f"{n} {c}" for c, n in counts.items() if n)


@dataclass(frozen=True)
class TransferMap:
    imports: tuple[str, ...]
    rule: str
    notice: str
    side_effects: tuple[str, ...]
    calls: tuple[tuple[str, str], ...]  # (GPU name or prefix ending in '.', target), longest first

    def target(self, qn: str) -> str | None:
        """The target transfer_to_npu maps qualified name `qn` to, else None."""
        for name, target in self.calls:
            if qn == name or (name.endswith(".") and qn.startswith(name)):
                return target
        return None


@derived
def t2n(rs: RuleSet) -> TransferMap | None:
    """transfer_to_npu's run-time map (rules/fidelity.yaml `transfer_to_npu`), or None."""
    t = rs.section("transfer_to_npu")
    if not t:
        return None
    calls = sorted(t["calls"].items(), key=lambda kv: -len(kv[0]))
    return TransferMap(imports=tuple(t["imports"]), rule=t["rule"], notice=t["notice"],
                       side_effects=tuple(t["side_effects"]), calls=tuple(calls))


def said(masked) -> str:
    """The summary's words for the masked edits: '12 expected substitution(s) masked: 11 exact,
    1 equivalent' (the classes only when something is masked)."""
    return f"{len(masked)} expected substitution(s) masked" + (f": {tally(masked)}" if masked else "")


@dataclass(frozen=True)
class Kernel:
    name: str
    npu: tuple[str, ...]  # the NPU kernel's qualified names
    gpu: tuple[str, ...]  # what marks the GPU form (qualified names or `*.method` patterns)
    target: str  # the fidelity target of the swap
    reads_npu_args: int = 0  # a GPU statement reading the names of the kernel's first N arguments is its form
    epsilon: dict | None = None  # {npu: {name, position, default}, gpu: {pattern: {name, position} | {addend: true}}}


@dataclass(frozen=True)
class KernelSwaps:
    rule: str
    translation: str
    kernels: tuple[Kernel, ...]


@derived
def kernel_swaps(rs: RuleSet) -> KernelSwaps | None:
    """The Python kernel swaps (rules/fidelity.yaml `kernel_swaps`), or None."""
    k = rs.section("kernel_swaps")
    if not k:
        return None
    return KernelSwaps(rule=k["rule"], translation=k["translation"], kernels=tuple(
        Kernel(name=name, npu=tuple(e["npu"]), gpu=tuple(e.get("gpu") or ()), target=e["target"],
               reads_npu_args=int(e.get("reads_npu_args") or 0), epsilon=e.get("epsilon"))
        for name, e in k["kernels"].items()))

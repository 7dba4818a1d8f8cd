"""Model structure identity (issue 44): each side's model measured from what it has without
running anything, and the measures compared (SD606).

measures(entries, path)  from all of a side's checkpoint tensors (read by the weights check,
                         checks/weights.py side_facts): `model:layers`, the distinct layer numbers under a
                         `layer_words` name (rules/evidence.yaml `model_structure`)
classify(key, g, n, rs)  a measure both sides have that differs: "the NPU model has 2 more
                         layers", "the GPU run trains 12.6M parameters, the NPU run 25.2M";
                         PEFT's printed counts (`model:trainable_params`, `model:all_params`,
                         read from the logs by lang/runlog.py) are compared the same way
"""
from __future__ import annotations

from ..model import ORIGIN_DERIVED, Fact, Finding
from ..run.finding import finding
from ..ruleset.rules import derived

PREFIX = "model:"
# how a message names each measure: (what it counts, the thing that has it)
MEASURES = {"model:layers": ("layers", "model"), "model:trainable_params": ("trainable parameters", "run"),
            "model:all_params": ("parameters", "model")}


@derived
def layer_words(rs) -> frozenset[str]:
    return frozenset((rs.section("model_structure") or {}).get("layer_words") or ())


def layers(names) -> int:
    """The layer count of a model whose tensors are `names`: the most distinct numbers any one
    numbered name (model.layers, transformer.h) has."""
    words = layer_words()
    seen: dict[str, set[str]] = {}
    for name in names:
        parts = name.split(".")
        for i in range(len(parts) - 1):
            if parts[i] in words and parts[i + 1].isdigit():
                seen.setdefault(".".join(parts[:i + 1]), set()).add(parts[i + 1])
                break
    return max((len(v) for v in seen.values()), default=0)


def measures(entries: dict, path: str) -> list[Fact]:
    """A checkpoint's layer count from all its tensor names (identical tensors included), as a
    derived fact of the weights check, `model:layers`; none when its names number no layers.
    (What tensors are missing, extra or reshaped the per-tensor rules say: a parameter count
    would only repeat them.)"""
    n = layers(entries) if entries else 0
    if not n:
        return []
    return [Fact(key="model:layers", value=n, check="weights", path=path, origin=ORIGIN_DERIVED,
                 via="distinct layer numbers in its tensor names", source="derived")]


def human(n: int) -> str:
    """12582912 -> 12.6M; 6742609920 -> 6.74B; below a thousand as it is."""
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


def classify(key: str, g: Fact | None, n: Fact | None, rs, check: str = "weights") -> Finding | None:
    if g is None or n is None or g.value == n.value:  # a count one side does not report: not compared
        return None
    what, thing = MEASURES.get(key, (key[len(PREFIX):], "model"))
    gv, nv = int(g.value), int(n.value)
    if key == "model:layers":
        more, less = ("NPU", "GPU") if nv > gv else ("GPU", "NPU")
        message = f"the {more} model has {abs(nv - gv)} more layers than the {less} model ({gv} on GPU, {nv} on NPU)"
    elif thing == "run":
        message = f"the GPU run trains {human(gv)} parameters, the NPU run {human(nv)} ({gv:,} vs {nv:,})"
    else:
        message = f"the GPU {thing} has {human(gv)} {what}, the NPU {thing} {human(nv)} ({gv:,} vs {nv:,})"
    return finding("model-structure-differs", key=key, gpu=g, npu=n, message=message, check=check)

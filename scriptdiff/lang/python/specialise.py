"""A parsed Python file read as the program one device runs (docs/devices.md).

Upstream scripts support Ascend by keeping the CUDA code and adding the NPU code beside it
behind a device test. Before facts are read and code is compared, each side is specialised
to its device: on the NPU side a device test means "this is an Ascend NPU", on the GPU side
"this is a CUDA GPU"; a test for another device (mps, xpu, mlu, hpu, xla, cpu) is false on
both. What is recognised is data (rules/devices.yaml `devices.python`): calls
(`is_torch_npu_available()`, `torch.cuda.is_available()`), `hasattr(torch, "npu")`,
`importlib.util.find_spec("torch_npu")`, try-import flags, names that hold the run's device
(`device.type == "npu"`, `args.device == "npu"`), calls returning it
(`get_accelerator().device_name()`), and, followed through the file, names assigned from
those (`IS_NPU = is_npu_available()`, `DEVICE = "npu" if ... else "cuda"`) and functions
of the file that return a device name (`get_device()`).

`specialise(p, side)` runs in two steps. `Decider` walks the libcst tree in execution order
(module-level code first, then the bodies of functions with the module's final names) and
decides every `if`/`elif` chain, try-import and conditional expression whose test it can
evaluate, for this side's device and for the other (a branch that only raises on the other
device makes this side's branch set aside too: an option the other device refuses has no
counterpart there). Then the statement lists the reader built (parse.St) are rewritten: a
decided `if` becomes the statements of its live clause, the other clauses are set aside
(their lines listed as SD019 masks, their calls read for no facts), a decided conditional
expression reads as its live operand (parse.Norm, facts), and the statements that hold a
specialised part are marked so that text equality does not skip them. A test that cannot be
decided stays as written (both branches compared), and the input's account says so.

The values are the evaluator's (evaluate/: the device face decides each test); the walk is
decider.py, the rewrite rewrite.py.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ...ruleset.devices import side_family
from .decider import Decider
from .evaluate import prepared
from .parse import Parsed
from .rewrite import Rewriter


@dataclass
class Specialised:
    """What specialising one file to its device gave (Parsed.spec)."""

    side: str
    family: str
    live: dict = field(default_factory=dict)  # id(IfExp or DTYPES[device]) -> the node this device evaluates
    devices: dict = field(default_factory=dict)  # id(node) -> the device name it holds (DEVICE, get_device())
    dead_calls: set = field(default_factory=set)  # ids of calls in code set aside (no facts)
    set_aside: list = field(default_factory=list)  # (line, why, mask rule name) of each statement set aside
    plumbing: set = field(default_factory=set)  # ids of statements that define or import a device test
    skipped: dict = field(default_factory=dict)  # first line of a statement set aside -> line of its test
    tests: int = 0  # device tests decided (an if/elif chain, a try-import, a conditional expression, D[device])
    decided: Counter = field(default_factory=Counter)  # idiom -> decided tests it was met in
    undecided: list = field(default_factory=list)  # (line, test text) of device tests left as written
    decider: object = None  # the Decider of this side (device_key evaluates with its names)

    def note(self) -> str | None:
        """The account's note: what was decided for this device, and what was left as written."""
        if not self.tests and not self.undecided:
            return None
        dev = "NPU" if self.side == "npu" else "GPU"
        n = self.tests
        parts = [f"device tests read for the {dev}: {n} decided"
                 + (f" (by {', '.join(f'{k} {v}' for k, v in sorted(self.decided.items()))})" if n else "")]
        if self.undecided:
            shown = "; ".join(f"line {ln}: {txt}" for ln, txt in self.undecided[:4])
            more = f" and {len(self.undecided) - 4} more" if len(self.undecided) > 4 else ""
            parts.append(f"{len(self.undecided)} not decided, compared as written ({shown}{more})")
        return ", ".join(parts)


def specialise(p: Parsed, side: str) -> Specialised:
    """Rewrite `p`'s statement lists into the program `side`'s device runs (module doc)."""
    fam = side_family(side)
    spec = Specialised(side=side, family=fam)
    p.spec = spec
    if p.module is None:
        return spec
    t = prepared()
    patched = any(any(qn == m or qn.startswith(m + ".") for m in t.patched_by) for qn in p.aliases.values())
    other_fam = "cuda" if fam == "npu" else "npu"

    def decide(family: str) -> Decider:
        d = Decider(p, family, aware=False, patched=patched).run()
        if d.saw_npu and d.cuda_on_npu:  # the file tests for the NPU itself: its CUDA tests fail there
            d = Decider(p, family, aware=True, patched=patched).run()
        return d

    own = decide(fam)
    spec.decider = own
    ap = Rewriter(p, own, lambda: decide(other_fam), spec)
    p.body, _ = ap.block(p.body)
    for k, (line, text) in own.undecided.items():
        spec.undecided.append((line, text))
    spec.undecided.sort(key=lambda x: (x[0] or 0))
    return spec

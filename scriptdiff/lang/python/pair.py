"""The state one Python pair comparison shares between its parts, and the helpers they share.

The comparison (python.compare) is split into parts that each do one job: statement
alignment (align), node diffs (nodediff), classification of what differs
(classify) and the port checks (port). They all read and write one
`PairState`: the two parsed files, their normalizers, what normalizing each statement gave,
and the findings and masked substitutions collected so far.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ... import budget
from ...run.finding import finding
from ...model import Finding, Masked, Side
from ...ruleset.vocabulary import category
from .evaluate import QName, value
from .parse import Norm, Parsed, St


def one_line(s: str, limit: int = budget.SHOWN_STATEMENT) -> str:
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


@dataclass
class StKey:
    """What normalizing one statement gave: its key, and the masks, swaps and optimizer calls met."""

    key: object
    hits: list = field(default_factory=list)  # (mask rule, node) or (mask rule, node, target)
    swaps: list = field(default_factory=list)  # (family, call node)
    opts: list = field(default_factory=list)  # (family, qualified name, call node)


class PairState:
    """The two files of a pair, their normalizers, the statements' keys, and the results."""

    def __init__(self, g: Parsed, n: Parsed):
        self.g, self.n = g, n
        self.gn, self.nn = Norm(g), Norm(n)
        self.base = g.name.replace("\\", "/").rsplit("/", 1)[-1]
        self.findings: list[Finding] = []
        self.masked: list[Masked] = []
        self._masked_seen: set = set()
        self.keys: dict[int, StKey] = {}  # id(St) -> its normalized key (align.Aligner.key)
        # a file's own function on one side only, said at the end unless every call of it was
        # followed and found the port (nodediff.NodeDiff.inlined): (St, side, scope, note)
        self.one_sided_defs: list = []
        self.followed: dict = {}  # (side, function name) -> ids of its calls followed and found the port

    def key_of(self, s: St):
        """The statement's normalized key, None when it was not normalized yet."""
        k = self.keys.get(id(s))
        return k.key if k is not None else None

    def set_key(self, s: St, key) -> None:
        """Replace the statement's key (its masks, swaps and optimizer calls stay as they were)."""
        k = self.keys.get(id(s))
        if k is None:
            self.keys[id(s)] = StKey(key)
        else:
            k.key = key

    def add_masked(self, rule: str, gside: Side | None, nside: Side | None, target: str = "") -> None:
        k = (rule, gside.line if gside else None, nside.line if nside else None)
        if k in self._masked_seen:
            return
        self._masked_seen.add(k)
        self.masked.append(Masked(rule=rule, gpu=gside, npu=nside, target=target))

    def add_finding(self, rule: str, scope: str, gside: Side | None, nside: Side | None, message: str,
                    extra: dict | None = None) -> None:
        self.findings.append(finding(rule, key=f"code:{self.base}:{scope}", gpu=gside, npu=nside, message=message,
                                     extra=extra or None))

    def add_hparam(self, key: str, gside: Side | None, nside: Side | None, message: str) -> None:
        """A code change that is a hyperparameter: reported under its vocabulary key and the
        rule of its category (an eager attention call where GPU used flash-attn: use_flash_attn)."""
        self.findings.append(finding(category(key).rule, key=key, gpu=gside, npu=nside, message=message))

    def side(self, p: Parsed, node, fallback_line: int | None, value=True) -> Side:
        if isinstance(node, tuple) and node and node[0] == "MISSING":
            line = p.line_of(node[1], fallback_line)
            return Side(value=None, path=p.name, line=line, source=p.text_at(line))
        line = p.line_of(node, fallback_line)
        return Side(value=typed_value(p, node) if value else None, path=p.name, line=line, source=p.text_at(line))


def typed_value(p: Parsed, node):
    """A literal as its value (0.1, True, 'out'); any other code as its source text."""
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.UnaryOperation,
                         cst.Name, cst.Tuple, cst.List)):
        used: list = []
        try:
            v = value(p, node, used)
        except Exception:
            v = None
            used = [None]
        if not used and not isinstance(v, QName) and not isinstance(v, bytes) \
                and not (v is None and not (type(node) is cst.Name and node.value == "None")):
            return v
    return one_line(p.code(node))

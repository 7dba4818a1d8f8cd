"""Two ranks' call sequences matched in lockstep, within a bounded window.

Both dumps list their calls in execution order, so they are read side by side: calls whose
token (the API or module path, and the direction: `Functional.linear:forward`,
`Module.layers.0.attn.qkv.Linear:backward`) agree are paired, in order. Where the heads
disagree, the nearest way to go on is taken, within the next `window` calls of each side:

- a port (rules/dumps.yaml dump_ports): a form of one computation starting within a few
  calls on one side and another form of it on the other (npu_fusion_attention against
  flash_attn_func or an eager matmul-softmax-matmul block, npu_rms_norm against an RMSNorm
  module's calls, an NpuFused optimizer's calls against torch.optim's) is paired as a group;
- a resynchronisation: the nearest calls from which `anchor` tokens agree on both sides.

Either way the calls skipped to get there are paired with nothing, so they are listed,
never dropped; with neither in the window, each head is unmatched and the walk goes on.
Memory is the two windows, whatever the length of the dumps.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterator

from . import ports

PORT_OFFSET = 4  # calls a port's form may start after each head


@dataclass
class Pair:
    """Calls of the GPU side and of the NPU side paired (either may be empty: no counterpart)."""

    g: list = field(default_factory=list)
    n: list = field(default_factory=list)
    port: tuple | None = None  # (port, GPU form, NPU form, expected substitution)


class Aligner:
    def __init__(self, gpu, npu, window: int = 256, anchor: int = 3):
        self.git, self.nit = iter(gpu), iter(npu)
        self.gq: deque = deque()
        self.nq: deque = deque()
        self.gdone = self.ndone = False
        self.window, self.anchor = max(8, window), max(1, anchor)

    def _fill(self) -> None:
        while not self.gdone and len(self.gq) < self.window:
            try:
                self.gq.append(next(self.git))
            except StopIteration:
                self.gdone = True
        while not self.ndone and len(self.nq) < self.window:
            try:
                self.nq.append(next(self.nit))
            except StopIteration:
                self.ndone = True

    def __iter__(self) -> Iterator[Pair]:
        gq, nq = self.gq, self.nq
        while True:
            self._fill()
            if not gq and not nq:
                return
            if not nq:
                yield Pair([gq.popleft()], [])
                continue
            if not gq:
                yield Pair([], [nq.popleft()])
                continue
            if gq[0].token == nq[0].token and gq[0].form == nq[0].form:  # (an optimizer's calls: its form)
                yield Pair([gq.popleft()], [nq.popleft()])
                continue
            port = self._port()
            sync = self._resync()
            if port is not None and (sync is None or port[0] + port[1] <= sync[0] + sync[1]):
                i, j, gf, gl, nf, nl = port
                yield from self._skip(i, j)
                yield Pair([gq.popleft() for _ in range(gl)], [nq.popleft() for _ in range(nl)],
                           port=(gf.port, gf.name, nf.name, ports.expected(gf.port, gf.name, nf.name)))
            elif sync == (0, 0):  # the same call, only one side's stack says whose step it is in
                yield Pair([gq.popleft()], [nq.popleft()])
            elif sync is not None:
                yield from self._skip(*sync)
            else:
                yield Pair([gq.popleft()], [])
                yield Pair([], [nq.popleft()])

    def _skip(self, i: int, j: int) -> Iterator[Pair]:
        for _ in range(i):
            yield Pair([self.gq.popleft()], [])
        for _ in range(j):
            yield Pair([], [self.nq.popleft()])

    def _port(self):
        """(i, j, GPU form, its calls, NPU form, its calls): two forms of one port starting at
        gq[i] and nq[j], the nearest first; None when there are none."""
        gq, nq = self.gq, self.nq
        gfound = [ports.found(gq, i, self.window) for i in range(min(PORT_OFFSET, len(gq)))]
        nfound = [ports.found(nq, j, self.window) for j in range(min(PORT_OFFSET, len(nq)))]
        best = None
        for i, gl in enumerate(gfound):
            for j, nl in enumerate(nfound):
                if best is not None and i + j >= best[0] + best[1]:
                    continue
                for gf, gn in gl:
                    hit = next(((nf, nn) for nf, nn in nl if nf.port == gf.port and nf.name != gf.name), None)
                    if hit is not None:
                        best = (i, j, gf, gn, hit[0], hit[1])
                        break
        return best

    def _resync(self):
        """(i, j): the nearest calls gq[i], nq[j] from which `anchor` tokens agree (or both
        sides end); None when there are none in the window."""
        gq, nq = self.gq, self.nq
        where: dict[str, list[int]] = {}
        for j, c in enumerate(nq):
            where.setdefault(c.token, []).append(j)
        best = None
        for i, c in enumerate(gq):
            if best is not None and i >= best[0] + best[1]:
                break
            for j in where.get(c.token, ()):
                if best is not None and i + j >= best[0] + best[1]:
                    break
                if self._agree(i, j):
                    best = (i, j)
                    break
        return best

    def _agree(self, i: int, j: int) -> bool:
        gq, nq = self.gq, self.nq
        for k in range(1, self.anchor):
            gi, nj = i + k, j + k
            if gi >= len(gq) or nj >= len(nq):
                # past a window: agree only if a side has truly ended there (not merely unread)
                return (gi >= len(gq) and self.gdone) or (nj >= len(nq) and self.ndone)
            if gq[gi].token != nq[nj].token:
                return False
        return True

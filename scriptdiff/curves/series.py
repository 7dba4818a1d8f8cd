"""One side's training curves: a Track per metric, and the Run that holds them.

A Track keeps (step, value) pairs. Past `cap` points it halves its resolution (neighbouring
points averaged, the first step of each pair kept), so a multi-gigabyte log costs a bounded
amount of memory; `stride` says how many logged points each kept point now stands for
(1 = exact). Non-finite values are counted before any averaging, so the counts are exact
whatever the decimation.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from .. import budget

# how a logged name is called here: every reader maps its spellings onto these
CANONICAL = {
    "lm loss": "loss", "loss": "loss", "train/loss": "loss", "train_loss": "loss", "lm_loss": "loss",
    "grad norm": "grad_norm", "grad_norm": "grad_norm", "train/grad_norm": "grad_norm",
    "learning rate": "lr", "learning_rate": "lr", "lr": "lr", "train/learning_rate": "lr",
    "loss scale": "loss_scale", "loss_scale": "loss_scale",
    "number of skipped iterations": "skipped", "skipped": "skipped",
    "number of nan iterations": "nan_iterations",
    "consumed samples": "consumed_samples", "consumed_samples": "consumed_samples",
    "consumed tokens": "consumed_tokens", "consumed_tokens": "consumed_tokens",
    "num_input_tokens_seen": "consumed_tokens", "train/num_input_tokens_seen": "consumed_tokens",
    "elapsed time per iteration (ms)": "elapsed_ms",
    "global batch size": "global_batch_size",
    "eval/loss": "eval_loss",
}
# bookkeeping, hardware speed and counters: read and shown, never compared as curves
NOT_COMPARED = {"consumed_samples", "consumed_tokens", "global_batch_size", "elapsed_ms", "skipped",
                "nan_iterations", "epoch", "total_flos", "train_runtime", "train_samples_per_second",
                "train_steps_per_second", "eval_runtime", "eval_samples_per_second", "eval_steps_per_second",
                "percentage", "total_steps", "throughput", "step", "timestamp", "_runtime", "_timestamp",
                "iter time (s)", "samples/sec", "mom"}
# the loss a verdict is about, in order of preference
PRIMARY = ("loss", "actor/pg_loss", "actor/loss", "critic/score/mean", "critic/rewards/mean")


def canonical(name: str) -> str:
    n = name.strip()
    return CANONICAL.get(n, CANONICAL.get(n.lower(), n))


def is_downstream(name: str) -> bool:
    """An evaluation metric (eval loss, accuracy, a benchmark score): not the training loss."""
    low = name.lower()
    return low.startswith(("eval", "val", "test", "downstream")) or "accuracy" in low or "/acc" in low


def is_timing(name: str) -> bool:
    low = name.lower()
    return name in NOT_COMPARED or any(w in low for w in ("time", "per_second", "throughput", "tflop", "mfu",
                                                           "timing", "memory", "_mem", "/mem"))


class Track:
    """One metric of one side, in bounded memory.

    Points arrive in a raw buffer (two appends each: the reader's hot path); every
    budget.CURVE_BUFFER points the buffer is folded with numpy: non-finite values counted,
    points grouped by `stride` and averaged, the kept arrays halved (stride doubled) whenever
    they reach `cap`. A remainder shorter than `stride` waits raw for the next chunk."""

    __slots__ = ("cap", "stride", "_rs", "_rv", "_ks", "_kv", "_n", "_nan", "_inf", "_requeued", "first_line")

    def __init__(self, cap: int = budget.CURVE_POINTS):
        self.cap = max(4, cap)
        self.stride = 1
        self._rs = array("d")  # raw, not yet folded
        self._rv = array("d")
        self._ks: list = []  # kept: numpy arrays of folded points
        self._kv: list = []
        self._n = 0  # points folded
        self._nan = 0
        self._inf = 0
        self._requeued = 0  # leading raw points that are a folded point put back (counted already)
        self.first_line: tuple[str, int | None] | None = None  # (path, line) of the first point

    def appenders(self):
        """(append step, append value) for a reader's hot loop, which then calls `due()` now
        and then; the buffers are never replaced, so these stay valid."""
        return self._rs.append, self._rv.append

    def due(self) -> None:
        if len(self._rs) >= budget.CURVE_BUFFER:
            self._fold()

    def add(self, step: float, value: float) -> None:
        self._rs.append(step)
        self._rv.append(value)
        if len(self._rs) >= budget.CURVE_BUFFER:
            self._fold()

    @property
    def points(self) -> int:
        return self._n + len(self._rs)

    @property
    def nan(self) -> int:
        self._fold()
        return self._nan

    @property
    def inf(self) -> int:
        self._fold()
        return self._inf

    @property
    def steps(self):  # kept points (tests, benchmarks)
        self._fold()
        return self._kept()[0]

    def _kept(self):
        import numpy as np

        if len(self._ks) != 1:
            self._ks = [np.concatenate(self._ks)] if self._ks else [np.zeros(0)]
            self._kv = [np.concatenate(self._kv)] if self._kv else [np.zeros(0)]
        return self._ks[0], self._kv[0]

    def _fold(self) -> None:
        import numpy as np

        if not self._rs:
            return
        s = np.frombuffer(self._rs, dtype=np.float64).copy()
        v = np.frombuffer(self._rv, dtype=np.float64).copy()
        fresh = v[self._requeued:]
        self._requeued = 0
        self._nan += int(np.isnan(fresh).sum())
        self._inf += int(np.isinf(fresh).sum())
        full = len(s) // self.stride * self.stride
        rest = len(s) - full
        self._n += full
        if full:
            if self.stride > 1:
                self._ks.append(s[:full:self.stride])
                self._kv.append(v[:full].reshape(-1, self.stride).mean(axis=1))
            else:
                self._ks.append(s)
                self._kv.append(v)
        # the raw buffers are emptied in place, never replaced: a reader may hold their appends
        del self._rs[:]
        del self._rv[:]
        if rest:
            self._rs.extend(s[full:].tolist())
            self._rv.extend(v[full:].tolist())
        ks, kv = self._kept()
        while len(ks) >= self.cap:
            m = len(ks) // 2 * 2
            tail_s, tail_v = ks[m:], kv[m:]
            ks, kv = ks[0:m:2], (kv[0:m:2] + kv[1:m:2]) / 2
            if len(tail_s):  # an odd point out goes back to the raw buffer, standing for `stride` points
                self._rs[0:0] = array("d", [float(tail_s[0])] * self.stride)
                self._rv[0:0] = array("d", [float(tail_v[0])] * self.stride)
                self._n -= self.stride
                self._requeued = self.stride
            self.stride *= 2
        self._ks, self._kv = [ks], [kv]

    def arrays(self):
        """(steps, values) as float64 arrays, sorted by step, a repeated step keeping its last
        value (a resumed run logs some steps twice); a remainder shorter than the stride is
        one more (averaged) point."""
        import numpy as np

        self._fold()
        s, v = self._kept()
        if self._rs:
            s = np.append(s, self._rs[0])
            v = np.append(v, float(np.mean(np.frombuffer(self._rv, dtype=np.float64))))
        if len(s) > 1 and np.any(np.diff(s) <= 0):
            order = np.argsort(s, kind="stable")
            s, v = s[order], v[order]
            keep = np.append(s[1:] != s[:-1], True)  # the last of each run of equal steps
            s, v = s[keep], v[keep]
        return s, v


@dataclass
class Recognised:
    """What one reader recognised in one file: shown to the user, and in the JSON."""

    path: str
    reader: str  # e.g. "Megatron-LM/MindSpeed iteration lines"
    records: int = 0  # lines or records taken
    metrics: list[str] = field(default_factory=list)
    first_step: float | None = None
    last_step: float | None = None
    note: str = ""

    def describe(self) -> str:
        span = ""
        if self.first_step is not None:
            span = f", steps {_num(self.first_step)}-{_num(self.last_step)}"
        shown = ", ".join(self.metrics[:10]) + (f" and {len(self.metrics) - 10} more" if len(self.metrics) > 10 else "")
        note = f"; {self.note}" if self.note else ""
        return f"{self.path}: {self.reader}: {self.records} record(s){span}: {shown}{note}"

    def to_json(self) -> dict:
        return {"path": self.path, "reader": self.reader, "records": self.records, "metrics": list(self.metrics),
                "first_step": self.first_step, "last_step": self.last_step, "note": self.note}


def _num(x) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


EVAL_BIT = 1 << 31  # in a LineIndex code: the record is an evaluation's


class LineIndex:
    """Where a side's records were read: step -> (file, line, byte offset), in bounded memory.

    A reader marks each record it takes (one step, one line) through `appenders(file)`; past
    `cap` records every other one is dropped (the stride doubles), so a multi-gigabyte log
    still answers, for any step, the line of a record at or just before it (`exact` says
    whether it is that step's own). A file without lines (trainer_state.json, TensorBoard)
    is marked with line 0: its findings name the file alone."""

    __slots__ = ("cap", "stride", "files", "_rs", "_rc", "_ro", "_ks", "_kc", "_ko")

    def __init__(self, cap: int = budget.CURVE_POINTS):
        self.cap = max(4, cap)
        self.stride = 1
        self.files: list[str] = []
        self._rs, self._rc, self._ro = array("d"), array("d"), array("d")
        self._ks: list = []
        self._kc: list = []
        self._ko: list = []

    def appenders(self, display: str):
        """mark(step, line, offset, evaluation=False) for one file: one record; an evaluation
        record (validation lines) is told apart from the training record of the same step."""
        base = float(len(self.files) << 32)
        self.files.append(display)
        rs, rc, ro = self._rs.append, self._rc.append, self._ro.append

        def mark(step: float, line: int, offset: int, evaluation: bool = False) -> None:
            rs(step)
            rc(base + line + (EVAL_BIT if evaluation else 0))
            ro(offset)
        return mark

    def due(self) -> None:
        if len(self._rs) >= budget.CURVE_BUFFER:
            self._fold()

    def _fold(self) -> None:
        import numpy as np

        if not self._rs:
            return
        for raw, kept in ((self._rs, self._ks), (self._rc, self._kc), (self._ro, self._ko)):
            a = np.frombuffer(raw, dtype=np.float64)
            kept.append(a[::self.stride].copy())  # a copy: a view would keep the whole chunk alive
            del a
            del raw[:]
        n = sum(len(k) for k in self._ks)
        while n >= self.cap:
            for kept in (self._ks, self._kc, self._ko):
                kept[:] = [np.concatenate(kept)[::2].copy()]
            self.stride *= 2
            n = len(self._ks[0])

    def where(self, step: float, evaluation: bool = False) -> tuple[str, int | None, int | None, bool] | None:
        """(file, line or None, byte offset or None, exact) of the record at `step` (of an
        evaluation record when asked and there is one), else of the last one before it; None
        when nothing was marked at or before it."""
        import numpy as np

        self._fold()
        if not self._ks:
            return None
        if len(self._ks) > 1:
            for kept in (self._ks, self._kc, self._ko):
                kept[:] = [np.concatenate(kept)]
        s = self._ks[0]
        hit = np.nonzero(s == step)[0]
        if len(hit):
            kind = [j for j in hit.tolist() if (int(self._kc[0][j]) & EVAL_BIT != 0) == evaluation]
            i, exact = (kind or hit.tolist())[-1], True  # a step logged twice (a resumed run): its last record
        else:
            before = np.nonzero(s < step)[0]
            if not len(before):
                return None
            i = int(before[np.argmax(s[before])])
            exact = False
        code = int(self._kc[0][i])
        line = code & (EVAL_BIT - 1)
        off = int(self._ko[0][i])
        return self.files[code >> 32], line or None, (off if line and off >= 0 else None), exact


@dataclass
class Run:
    """One side: its tracks by canonical metric name, and what was read."""

    label: str
    tracks: dict[str, Track] = field(default_factory=dict)
    recognised: list[Recognised] = field(default_factory=list)
    errors: list = field(default_factory=list)  # model.InputError
    skipped_files: list[str] = field(default_factory=list)  # files in which no reader found curves
    overflow_lines: int = 0  # "OVERFLOW!" / "Gradient overflow" lines (DeepSpeed, apex)
    overflow_at: list = field(default_factory=list)  # the first few: (step before it or None, file, line)
    cap: int = budget.CURVE_POINTS
    lines: LineIndex = field(default_factory=LineIndex)  # step -> where its record was read
    opened: dict = field(default_factory=dict)  # file -> how to open it again (readers._Opened), for line texts

    def __post_init__(self):
        self.lines.cap = max(4, self.cap)

    def track(self, name: str) -> Track:
        t = self.tracks.get(name)
        if t is None:
            t = self.tracks[name] = Track(self.cap)
        return t

    def add(self, name: str, step: float, value: float, where: tuple[str, int] | None = None) -> None:
        t = self.tracks.get(name)
        if t is None:
            t = self.tracks[name] = Track(self.cap)
            t.first_line = where
        t.add(step, value)

    @property
    def empty(self) -> bool:
        return not any(t.points for t in self.tracks.values())

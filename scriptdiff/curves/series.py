"""One side's training curves: a Track per metric, and the Run that holds them.

A Track keeps (step, value) pairs in two `array('d')`s. Past `cap` points it halves its
resolution (neighbouring points averaged, the first step of each pair kept), so a
multi-gigabyte log costs a bounded amount of memory; `stride` says how many logged points
each kept point now stands for (1 = exact). Non-finite values are counted as they arrive,
so the counts are exact whatever the decimation.
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

CAP = 1 << 17  # points kept per metric before decimation (131072)

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
    """One metric of one side, in bounded memory."""

    __slots__ = ("steps", "values", "cap", "stride", "_bs", "_bv", "_bn", "nan", "inf", "points", "first_line")

    def __init__(self, cap: int = CAP):
        self.steps = array("d")
        self.values = array("d")
        self.cap = max(4, cap)
        self.stride = 1
        self._bs = 0.0
        self._bv = 0.0
        self._bn = 0
        self.nan = 0
        self.inf = 0
        self.points = 0  # logged points seen
        self.first_line: tuple[str, int] | None = None  # (path, line) of the first point

    def add(self, step: float, value: float) -> None:
        self.points += 1
        if value != value:
            self.nan += 1
        elif value in (math.inf, -math.inf):
            self.inf += 1
        if self.stride == 1:
            self.steps.append(step)
            self.values.append(value)
        else:
            if self._bn == 0:
                self._bs = step
                self._bv = 0.0
            self._bv += value
            self._bn += 1
            if self._bn < self.stride:
                return
            self.steps.append(self._bs)
            self.values.append(self._bv / self._bn)
            self._bn = 0
        if len(self.steps) >= self.cap:
            self._halve()

    def _halve(self) -> None:
        import numpy as np

        s = np.frombuffer(self.steps, dtype=np.float64)
        v = np.frombuffer(self.values, dtype=np.float64)
        m = len(s) // 2 * 2
        ns = s[0:m:2].copy()
        nv = (v[0:m:2] + v[1:m:2]) / 2
        if m < len(s):  # the odd point out starts the next (doubled) bucket
            self._bs, self._bv, self._bn = float(s[-1]), float(v[-1]) * self.stride, self.stride
        self.stride *= 2
        self.steps = array("d")
        self.steps.frombytes(ns.tobytes())
        self.values = array("d")
        self.values.frombytes(nv.tobytes())

    def arrays(self):
        """(steps, values) as float64 arrays, sorted by step, a repeated step keeping its last
        value (a resumed run logs some steps twice)."""
        import numpy as np

        s = np.array(self.steps, dtype=np.float64)
        v = np.array(self.values, dtype=np.float64)
        if self._bn:
            s = np.append(s, self._bs)
            v = np.append(v, self._bv / self._bn)
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


@dataclass
class Run:
    """One side: its tracks by canonical metric name, and what was read."""

    label: str
    tracks: dict[str, Track] = field(default_factory=dict)
    recognised: list[Recognised] = field(default_factory=list)
    errors: list = field(default_factory=list)  # model.InputError
    skipped_files: list[str] = field(default_factory=list)  # files in which no reader found curves
    overflow_lines: int = 0  # "OVERFLOW!" / "Gradient overflow" lines (DeepSpeed, apex)
    cap: int = CAP

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

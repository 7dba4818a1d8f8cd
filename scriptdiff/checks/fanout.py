"""Running a fingerprint's parts on a Ray cluster (`--executor ray`, the `ray` extra).

The parts are those of `--shard I/N` (parts.py): each is sent as one task, with the list of
its items (files or tensors) so that no worker lists the data again. The cluster is the one
`--ray-address` or `RAY_ADDRESS` names, else a local one started for the run and stopped at
its end. A task that raises or whose worker dies is retried (`Fanout.retries` times) and
then reported with its part, never dropped: the caller names the part's files. Results come
back in part order and are joined by the same code as a serial run, so the fingerprint is the
same bytes. Progress counts parts done.

The workers read the data with their own access: the same paths (a shared filesystem) or the
same object store, with the credentials of their own environment, profile or instance role.
Nothing of the caller's credentials is sent with a task.
"""
from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass

RAY_HINT = "--executor ray needs the ray extra: pip install 'scriptdiff[ray]'"
EXECUTORS = ("serial", "ray")


class FanoutError(Exception):
    """The cluster cannot be used at all; str() is one line."""


@dataclass(frozen=True)
class Fanout:
    executor: str = "serial"
    address: str | None = None  # a Ray cluster's address; None: RAY_ADDRESS, else a local cluster
    parts: int | None = None  # how many parts; None: 4 per CPU of the cluster, at most one per item
    retries: int = 2  # attempts after the first, per part

    @property
    def distributed(self) -> bool:
        return self.executor == "ray"


def _ray():
    try:
        import ray
    except ImportError:
        raise FanoutError(RAY_HINT) from None
    return ray


class Cluster:
    """A connection to a Ray cluster for one run (started locally when none is named)."""

    def __init__(self, fanout: Fanout):
        memo = sys.modules.get("scriptdiff.commands.runmemo")
        if memo is not None:  # what the cluster's workers read is not this process's: never replayed
            memo.spoil("a Ray cluster")
        self.fanout = fanout
        self.ray = _ray()
        self.owned = False

    def __enter__(self):
        ray = self.ray
        if ray.is_initialized():  # a library caller's own session: used, left as it is
            return self
        address = self.fanout.address or os.environ.get("RAY_ADDRESS") or None
        kw = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        quiet = logging.getLogger("ray")  # its start-up notices are not this run's output
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            if address:
                ray.init(address=address, **kw)
            else:
                ray.init(**kw)
        except Exception as e:  # ConnectionError, RuntimeError, ...: one line
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
            raise FanoutError(f"cannot start or reach {where}: {first}") from None
        finally:
            quiet.setLevel(level)
        self.owned = True
        return self

    def __exit__(self, *exc):
        if self.owned:
            self.ray.shutdown()

    def cpus(self) -> int:
        try:
            return max(1, int(self.ray.cluster_resources().get("CPU", 1)))
        except Exception:
            return 1

    def parts(self, items: int) -> int:
        return max(1, min(items, self.fanout.parts or 4 * self.cpus()))

    def run(self, fn, payloads: list, progress=None) -> list[tuple[object, str | None]]:
        """fn(payload) for each payload as a Ray task: [(result, None) or (None, why it failed)]."""
        ray = self.ray
        task = ray.remote(num_cpus=1, max_retries=self.fanout.retries, retry_exceptions=True)(fn)
        refs = [task.remote(p) for p in payloads]
        index = {r: i for i, r in enumerate(refs)}
        out: list = [(None, "not run")] * len(refs)
        if progress is not None:
            progress.start(len(refs))
        try:
            pending = list(refs)
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for r in done:
                    i = index[r]
                    try:
                        out[i] = (ray.get(r), None)
                    except Exception as e:  # RayTaskError, WorkerCrashedError, ...: the part failed
                        out[i] = (None, failure(e, self.fanout.retries))
                    if progress is not None:
                        progress.advance(1)
        finally:
            if progress is not None:
                progress.close()
        return out


def failure(e: BaseException, retries: int) -> str:
    """Why a part failed, in one line: the task's own exception, not Ray's traceback."""
    cause = getattr(e, "cause", None) or e
    text = (str(cause).strip().splitlines() or [""])[-1] if cause is not e else ""
    if not text:
        lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
        text = lines[-1].strip() if lines else ""
    name = type(cause).__name__
    return f"failed after {retries + 1} attempt(s): {name}{': ' + text if text and name not in text else ''}"

"""The reader process of a folder diff (scriptdiff/run/zygote.py): it runs the worker pool with the
readers imported ahead of time, gives exactly the parent's own results, and whatever happens
to it, the diff still compares every pair."""
from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from scriptdiff import api
from scriptdiff.run import engine, zygote
from scriptdiff.model import Options

TRAIN = """import torch
import torch.nn as nn

LR = {lr}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout({dropout})


def main():
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    return model, optimizer
"""


def tree(root: Path) -> tuple[str, str]:
    """Six changed Python pairs (enough for the worker pool) and one unchanged file."""
    for side in ("gpu", "npu"):
        (root / side).mkdir()
        (root / side / "same.py").write_text("X = 1\n")
    for i in range(6):
        (root / "gpu" / f"m{i}.py").write_text(TRAIN.format(lr="3e-4", dropout=0.1))
        npu = TRAIN.format(lr="1e-4" if i < 2 else "3e-4", dropout=0.1 if i != 3 else 0.0)
        (root / "npu" / f"m{i}.py").write_text(npu.replace(".cuda()", ".npu()").replace(
            "import torch\n", "import torch\nimport torch_npu\n"))
    return str(root / "gpu"), str(root / "npu")


def shown(report) -> list[tuple]:
    return sorted((f.rule, f.key, f.gpu.path if f.gpu else None, f.gpu.line if f.gpu else None,
                   f.gpu.value if f.gpu else None, f.npu.value if f.npu else None) for f in report.findings)


EXPECTED = [("SD101", "code:m3.py:Net.__init__", "m3.py", 11, 0.1, 0.0)] + [
    ("SD202", "lr", f"m{i}.py", 4, 0.0003, 0.0001) for i in range(2)]


@pytest.fixture
def handed(monkeypatch):
    """Records each handover to the reader process (and what came back)."""
    calls = []
    real = zygote.run_pool

    def spy(units, workers, store):
        res = real(units, workers, store)
        calls.append((len(units), res is not None))
        return res

    monkeypatch.setattr(zygote, "run_pool", spy)
    monkeypatch.delenv("SCRIPTDIFF_NO_ZYGOTE", raising=False)
    return calls


def _norm(rows):
    return [(r[0], r[1], Path(r[2]).name if r[2] else None, *r[3:]) for r in rows]


def test_a_folder_diff_hands_its_pairs_to_the_reader_process_and_gets_the_same_findings(tmp_path, handed, monkeypatch):
    g, n = tree(tmp_path)
    report = api.diff(g, n, Options(use_cache=False, jobs=2))
    assert handed == [(6, True)]  # the six changed pairs, run there, results back
    assert _norm(shown(report)) == EXPECTED
    assert zygote._Z is None and engine.HANDOVER is None  # stopped once used
    assert multiprocessing.active_children() == []  # and no process of it is left
    monkeypatch.setenv("SCRIPTDIFF_NO_ZYGOTE", "1")
    alone = api.diff(g, n, Options(use_cache=False, jobs=2))
    assert shown(alone) == shown(report)


def test_even_one_changed_pair_is_read_in_the_reader_process(tmp_path, handed, monkeypatch):
    """Fewer units than a pool is worth still go to the reader process when it is up: it
    imported the readers while the parent walked the trees (the edit-and-rerun case)."""
    g, n = tree(tmp_path)
    for i in range(1, 6):  # only m0.py still differs
        (Path(n) / f"m{i}.py").write_text((Path(g) / f"m{i}.py").read_text())
    report = api.diff(g, n, Options(use_cache=False, jobs=2))
    assert handed == [(1, True)]
    assert _norm(shown(report)) == [("SD202", "lr", "m0.py", 4, 0.0003, 0.0001)]
    assert zygote._Z is None and engine.HANDOVER is None and multiprocessing.active_children() == []
    monkeypatch.setenv("SCRIPTDIFF_NO_ZYGOTE", "1")
    assert shown(api.diff(g, n, Options(use_cache=False, jobs=2))) == shown(report)


def test_a_reader_process_that_died_costs_nothing_but_its_head_start(tmp_path, handed, monkeypatch):
    g, n = tree(tmp_path)
    real_start = zygote.start

    def start_then_kill():
        real_start()
        zygote._Z[0].kill()  # dies before it is handed anything
        zygote._Z[0].join()

    monkeypatch.setattr(zygote, "start", start_then_kill)
    report = api.diff(g, n, Options(use_cache=False, jobs=2))
    assert handed == [(6, False)]  # handed over, nothing came back: the parent ran its own pool
    assert _norm(shown(report)) == EXPECTED
    assert zygote._Z is None and engine.HANDOVER is None


@pytest.mark.parametrize("case", ["files", "one job", "one side a file"])
def test_no_reader_process_where_no_pool_of_pairs_can_follow(tmp_path, handed, monkeypatch, case):
    g, n = tree(tmp_path)
    started = []
    monkeypatch.setattr(zygote, "start", lambda: started.append(1))
    if case == "files":
        api.diff(str(Path(g) / "m0.py"), str(Path(n) / "m0.py"), Options(use_cache=False))
    elif case == "one job":
        api.diff(g, n, Options(use_cache=False, jobs=1))
    else:
        api.diff(str(Path(g) / "m0.py"), n, Options(use_cache=False, jobs=2))
    assert started == [] and handed == []


def test_an_unused_reader_process_is_stopped_when_the_diff_ends(tmp_path, monkeypatch):
    """Two identical trees: no pair to read, so nothing is handed over; the process is still
    stopped (killed mid-import if need be) before the diff returns."""
    monkeypatch.delenv("SCRIPTDIFF_NO_ZYGOTE", raising=False)
    for side in ("gpu", "npu"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "a.py").write_text("X = 1\n")
    report = api.diff(str(tmp_path / "gpu"), str(tmp_path / "npu"), Options(use_cache=False, jobs=2))
    assert report.findings == []
    assert zygote._Z is None and multiprocessing.active_children() == []


def _busy(unit, store=False):
    """A unit of work that keeps its worker busy (pickled by name: a module-level function)."""
    import time

    time.sleep(60)


def _group(pgid: int) -> list[int]:
    """The processes of a process group (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(d.name))
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_stopping_a_busy_reader_process_leaves_no_worker_behind(tmp_path, monkeypatch):
    """An interrupted diff stops the reader process while its workers are busy: the workers go
    with it (one process group, killed whole), none is left waiting on a pool that is gone."""
    import threading
    import time

    monkeypatch.delenv("SCRIPTDIFF_NO_ZYGOTE", raising=False)
    monkeypatch.setattr(engine, "_unit", _busy)  # inherited by the fork
    zygote.start()
    pgid = zygote._Z[0].pid
    units = [[("extract", f"k{i}", ())] for i in range(4)]
    t = threading.Thread(target=zygote.run_pool, args=(units, 2, False), daemon=True)
    t.start()
    deadline = time.time() + 20
    while len(_group(pgid)) < 3 and time.time() < deadline:  # the reader and its two workers
        time.sleep(0.05)
    assert len(_group(pgid)) >= 3
    zygote.stop()
    deadline = time.time() + 5
    while _group(pgid) and time.time() < deadline:
        time.sleep(0.05)
    left = _group(pgid)
    for pid in left:  # a failing run must not leave them holding the test run's output open
        os.kill(pid, signal.SIGKILL)
    assert left == []
    t.join(5)
    assert not t.is_alive() and zygote._Z is None and engine.HANDOVER is None


def test_an_interrupt_outside_the_command_is_one_line(monkeypatch):
    from scriptdiff.commands import runmemo

    from conftest import run_cli

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(runmemo, "replay", interrupted)
    code, out, err = run_cli("diff", "a.py", "b.py")
    assert (code, out, err) == (2, "", "scriptdiff: interrupted\n")


def test_pairs_planned_ahead_by_the_parent_are_not_planned_again(tmp_path, handed, monkeypatch):
    """While the reader process imports the readers, the parent plans the focused reading of
    the changed pairs (kinds.yaml `ahead`); the workers take those plans and plan nothing."""
    import time

    from scriptdiff.lang.python import focus as python_focus

    g, n = tree(tmp_path)
    filler = "".join(f"\n\ndef helper_{i}(x):\n    return x * {i} + {i}\n" for i in range(80))
    for p in [*Path(g).glob("m*.py"), *Path(n).glob("m*.py")]:
        p.write_text(p.read_text() + filler)  # large enough to be read by their change
    parent = os.getpid()
    real_plan, real_warm = python_focus.plan, engine.warm_readers
    planned_here = []

    planned_all = tmp_path / "planned-all"  # the parent's word to the reader process (another process)

    def plan_in_parent_only(*a, **k):
        if os.getpid() != parent:
            raise AssertionError("a worker planned a pair the parent had planned")
        planned_here.append(1)
        out = real_plan(*a, **k)
        if len(planned_here) == 6:
            planned_all.touch()
        return out

    def slow_warm():  # the reader process is still importing until the parent has planned every pair
        for _ in range(6000):  # waits on the parent's word, not on a time (a loaded machine is slow)
            if planned_all.exists():
                break
            time.sleep(0.01)
        real_warm()

    monkeypatch.setattr(python_focus, "plan", plan_in_parent_only)
    monkeypatch.setattr(engine, "warm_readers", slow_warm)
    report = api.diff(g, n, Options(use_cache=False, jobs=2))
    assert handed == [(6, True)] and len(planned_here) == 6
    assert python_focus.plan(*(Path(p).read_text() for p in (Path(g) / "m0.py", Path(n) / "m0.py"))) is not None
    assert _norm(shown(report)) == EXPECTED
    assert report.errors == []


def test_a_reader_process_without_a_group_of_its_own_stops_alone(tmp_path, handed, monkeypatch):
    """Where the reader process cannot lead a process group of its own, it is stopped alone:
    never by killing a group, which would be this process's (the test run itself)."""
    def refused(*a):
        raise PermissionError("setpgid refused")

    monkeypatch.setattr(os, "setpgid", refused)  # in the parent, and in the forked reader process
    g, n = tree(tmp_path)
    report = api.diff(g, n, Options(use_cache=False, jobs=2))
    assert handed == [(6, True)]
    assert _norm(shown(report)) == EXPECTED
    assert zygote._Z is None and multiprocessing.active_children() == []


@pytest.mark.parametrize("via", ["api", "cli"])
def test_the_reader_process_writes_the_entries_it_sent_before_the_diff_ends(tmp_path, handed, monkeypatch, via):
    """With the cache on, the reader process sends its results, then writes their entries while
    this process compares and reports; the diff (the library call, or the command) ends only
    once they are written, and leaves no process behind."""
    from conftest import run_cli

    from scriptdiff.inputs import store

    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("SCRIPTDIFF_CACHE_DIR", str(cache_dir))
    g, n = tree(tmp_path)
    if via == "api":
        report = api.diff(g, n, Options(use_cache=True, jobs=2))
        assert _norm(shown(report)) == EXPECTED
    else:
        code, out, err = run_cli("diff", g, n, "--jobs", "2", "--format", "json")
        assert code == 1 and err == ""
    assert handed == [(6, True)]
    assert zygote._Z is None and multiprocessing.active_children() == [] and store._AFTER == []
    entries = sorted(p.name for p in cache_dir.glob("*.json"))
    assert len(entries) >= 18  # two extracts and one structural diff per changed pair (and the rules)
    # a second run reads them all back: nothing left to hand over
    handed.clear()
    again = api.diff(g, n, Options(use_cache=True, jobs=2))
    assert handed == [] and _norm(shown(again)) == EXPECTED

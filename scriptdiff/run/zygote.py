"""A reader process forked at the start of a folder diff, so that importing the readers
(libcst alone costs about as much as reading the whole tree) overlaps the parent's own start.

Without it, a cold folder diff on two cores runs: the parent imports the pipeline, loads the
rules and walks both trees; then it forks its workers, and each of them imports libcst before
reading its first pair. The import is paid once per worker and after all the rest. With it,
`start()` forks one process at the beginning of a folder diff (`api.diff`), which imports the readers while the
parent does its part. When the parent has its units of work (however few: even one is read
sooner there, its import already under way), `run_pool` hands them over with the parent's
rules, and that process runs the usual pool (`engine._run_pool`: crash isolation and cache
writes included), whose workers it forks with the readers already imported.

Nothing depends on it: where it cannot be started, died, or sends back anything but results,
`run_pool` returns None and the parent runs the pool itself, as before. It is used once, then
stopped; a diff that never needs it stops it at exit (it holds no state worth waiting for).
SCRIPTDIFF_NO_ZYGOTE=1 turns it off.
"""
from __future__ import annotations

import os
import signal

from .. import budget
from . import engine
from ..ruleset import rules
from ..inputs import store as store_mod

_Z = None  # (process, connection) while a reader process is up


def start() -> None:
    """Fork the reader process (no-op if one is up, or turned off, or fork is unavailable)."""
    global _Z, _registered
    if _Z is not None or os.environ.get("SCRIPTDIFF_NO_ZYGOTE"):
        return
    try:
        import atexit
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        store_mod.quiesce()  # no write of this process's in flight while it forks
        mine, theirs = ctx.Pipe()
        p = ctx.Process(target=_main, args=(theirs, mine), name="scriptdiff-readers")
        p.start()
        theirs.close()
    except Exception:  # no fork here (platform, limits): the parent runs its own pool
        return
    try:  # its own process group, set on both sides of the fork so that stop() never races it
        os.setpgid(p.pid, p.pid)
    except OSError:
        pass
    _Z = (p, mine)
    engine.HANDOVER = run_pool
    if not _registered:
        atexit.register(stop)
        _registered = True


_registered = False


def run_pool(units: list, workers: int, store: bool) -> list | None:
    """The results of `engine._run_pool(units, workers, store=store)`, run by the reader
    process, or None if there is none or it failed (the caller then runs the pool itself)."""
    if _Z is None:
        return None
    _p, conn = _Z
    try:
        done = _ahead(units, conn)  # while it is still importing the readers
        conn.send((units, workers, store, rules.load(), done))
        res = conn.recv()
        if res == READY:
            res = conn.recv()
    except Exception:  # it died (EOFError), or the job could not be pickled
        res = None
    if not isinstance(res, list):
        stop()
        return None
    if store:  # it now writes the results it sent to the cache: waited for at the end
        _let_it_write()
    else:
        stop()
    return res


def _let_it_write() -> None:
    """The reader process writes the entries of the results it sent while this process goes on
    with its serial last steps (compare, report: the other core is idle then); it is waited
    for where this run's cache writes are due (store.after: the end of the command, or now)."""
    global _Z
    p, conn = _Z
    _Z = None
    engine.HANDOVER = None

    def wait(hurry: bool):
        if not hurry:
            try:
                p.join(budget.WRITE_WAIT)
            except Exception:
                pass
        _kill(p, conn)

    store_mod.after(wait)


READY = "ready"


def _ahead(units: list, conn) -> dict:
    """Until the reader process says it is ready, do for the changed pairs (largest first, as
    the pool takes them) what their kind's `ahead` module can do without the reader (Python:
    plan the focused reading, some 40% of a pair's cost): {kind name: {key: result}}. The reader
    process hands these to the readers (`given`), which then skip that step."""
    done: dict = {}
    pairs = [args for unit in units for what, _k, args in unit if what == "pair" and args[3].ahead]
    pairs.sort(key=lambda a: -(len(a[0].data) + len(a[1].data)))
    for gsrc, nsrc, _opts, kind in pairs:
        if conn.poll():  # ready: it takes the rest
            break
        try:
            key, value = kind.ahead_module().ahead(gsrc, nsrc)
        except Exception:  # the reader will do it, and say what went wrong
            continue
        done.setdefault(kind.name, {})[key] = value
    return done


def stop() -> None:
    """Stop the reader process (idle, warming up, or done) and the workers it forked: they
    hold nothing to save. They form a process group of their own, killed as one, so that no
    worker is left waiting for work from a pool that is gone (an interrupted diff)."""
    global _Z
    if _Z is None:
        return
    p, conn = _Z
    _Z = None
    engine.HANDOVER = None
    _kill(p, conn)


def _kill(p, conn) -> None:
    try:
        conn.close()
        # its group, while its pid is still its own (not reaped: exitcode is None), and only
        # if the group is its own (never this process's)
        if p.exitcode is None and os.getpgid(p.pid) == p.pid:
            os.killpg(p.pid, signal.SIGKILL)
    except (OSError, AttributeError):  # the group is gone already
        pass
    try:
        p.kill()
        p.join(budget.STOP_WAIT)
    except Exception:
        pass


def _main(conn, parent_end) -> None:
    """The reader process: import the readers, then run one job with the parent's rules."""
    leader = False
    try:
        # a group of its own: the terminal's Ctrl-C reaches the diff, which stops this group
        # whole; the workers forked below join it
        try:
            os.setpgid(0, 0)
        except OSError:  # refused here: it works all the same, and is stopped alone
            pass
        leader = os.getpgid(0) == os.getpid()
        parent_end.close()
        engine.warm_readers()
        conn.send(READY)
        units, workers, store, ruleset, done = conn.recv()
        rules.given(ruleset)  # what the parent loaded (its workers inherit it)
        for name, results in done.items():  # what the parent did ahead (its workers inherit it)
            engine.kinds()[name].ahead_module().given(results)
        results = engine._run_pool(units, workers, None, store=False)
        conn.send(results)
        if store:  # sent: now written, while the parent compares and reports
            for batch in results or ():
                for key, dumped in batch:
                    store_mod.put(key, dumped)
    except BaseException:  # noqa: BLE001  nothing of it may reach the user: the parent runs its own pool
        pass
    finally:
        try:  # the parent is done with it, or gone: so is every worker of its pool (never the
            if leader:  # parent's group: only a group of its own is killed)
                os.killpg(0, signal.SIGKILL)
        finally:
            os._exit(0)

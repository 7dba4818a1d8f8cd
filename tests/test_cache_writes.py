"""Cache writes deferred to a thread (store.deferred): every entry is on disk when the block
ends, none is in flight when the process forks, and a forked child writes its own at once."""
from __future__ import annotations

import multiprocessing

import pytest

from scriptdiff.inputs import store


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIPTDIFF_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _keys(n: int, tag: str = "k") -> list[str]:
    return [store.key(tag, str(i)) for i in range(n)]


def test_entries_put_in_a_deferred_block_are_all_written_when_it_ends(cache_dir):
    keys = _keys(60)
    with store.deferred():
        for i, k in enumerate(keys):
            store.put(k, {"i": i})
    assert store._WRITER is None
    assert [store.get(k) for k in keys] == [{"i": i} for i in range(60)]


def test_outside_a_deferred_block_an_entry_is_written_at_once(cache_dir):
    k = _keys(1)[0]
    store.put(k, [1, 2])
    assert store.get(k) == [1, 2]


def test_quiesce_returns_once_nothing_is_in_flight(cache_dir):
    keys = _keys(200, "q")
    with store.deferred():
        for k in keys:
            store.put(k, {"payload": "x" * 2000})
        store.quiesce()
        assert store._WRITER.pending == 0
        assert all(store.get(k) is not None for k in keys)  # on disk before the block ends


def _child_put(k: str) -> None:
    store.put(k, {"from": "child"})  # no writer thread here: written before the child exits


def test_a_child_forked_in_a_deferred_block_writes_its_own_entries(cache_dir):
    k = _keys(1, "child")[0]
    with store.deferred():
        store.quiesce()
        p = multiprocessing.get_context("fork").Process(target=_child_put, args=(k,))
        p.start()
        p.join(20)
        assert p.exitcode == 0
        assert store.get(k) == {"from": "child"}


def test_a_wait_registered_with_after_runs_at_the_end_of_the_block_or_at_once(cache_dir):
    ran = []
    store.after(lambda hurry: ran.append(("now", hurry)))
    assert ran == [("now", False)]
    with store.deferred():
        store.after(lambda hurry: ran.append(("at the end", hurry)))
        assert ran == [("now", False)]
    assert ran == [("now", False), ("at the end", False)] and store._AFTER == []
    with pytest.raises(KeyboardInterrupt):  # an interrupted run: told to hurry, not to wait
        with store.deferred():
            store.after(lambda hurry: ran.append(("interrupted", hurry)))
            raise KeyboardInterrupt
    assert ran[-1] == ("interrupted", True) and store._AFTER == [] and store._WRITER is None

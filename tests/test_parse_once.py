"""A pair's files are parsed by CPython once each, the cycle collector is kept off a unit's
trees, and no reference cycle keeps a file's tree once the reader has let it go
(scriptdiff/lang/python/cpytree.py, scriptdiff/run/gcpause.py)."""
from __future__ import annotations

import ast
import gc
import weakref

import pytest

import scriptdiff
from scriptdiff import budget
from scriptdiff.inputs.sources import Source
from scriptdiff.lang.python import cpytree
from scriptdiff.lang.python import reader as pyreader
from scriptdiff.model import Options
from scriptdiff.run import engine, gcpause
from scriptdiff.run.pipeline import diff_files

HEAD = '''import torch

LR = {lr}


def build_widget(device="{dev}"):
    net = torch.nn.Linear(8, 8)
    net = net.{dev}()
    return net
'''
FILLER = '''

def helper_{i}(x):
    """Scales its input by a fixed amount."""
    y = x * {i}
    return y + 1
'''


def _fresh():
    pyreader._CACHE.clear()
    pyreader._PLANS.clear()
    engine._MEMO.clear()
    cpytree.clear()


def _write(tmp_path, fillers: int, lr_npu: str):
    g = HEAD.format(lr="3e-4", dev="cuda") + "".join(FILLER.format(i=i) for i in range(fillers))
    n = HEAD.format(lr=lr_npu, dev="npu").replace("    return net", "    net.train(False)\n    return net") + \
        "".join(FILLER.format(i=i) for i in range(fillers))
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    (tmp_path / "gpu" / "widget.py").write_text(g, encoding="utf-8")
    (tmp_path / "npu" / "widget.py").write_text(n, encoding="utf-8")
    return g, n


@pytest.mark.parametrize("fillers", [0, 80])  # one small pair read whole, one large enough to be focused
def test_each_file_is_parsed_by_cpython_once(tmp_path, monkeypatch, fillers):
    g, n = _write(tmp_path, fillers, "1e-4")
    parsed: list[str] = []
    real = ast.parse

    def counting(source, *a, **k):
        parsed.append(source)
        return real(source, *a, **k)

    monkeypatch.setattr(ast, "parse", counting)
    _fresh()
    rep = diff_files([str(tmp_path / "gpu" / "widget.py")], [str(tmp_path / "npu" / "widget.py")],
                     Options(use_cache=False))
    got = [(f.rule, f.key, f.gpu and (f.gpu.value, f.gpu.line), (f.npu.value, f.npu.line)) for f in rep.findings]
    assert got == [("SD202", "lr", (3e-4, 3), (1e-4, 3)),
                   ("SD102", "code:widget.py:build_widget", None, ("net.train(False)", 9))]
    assert parsed.count(g) == 1 and parsed.count(n) == 1


def test_the_memo_keeps_the_last_two_texts(monkeypatch):
    cpytree.clear()
    a, b, c = "x = 1\n", "y = 2\n", "z = 3\n"
    ta = cpytree.whole(a)
    assert cpytree.whole(a) is ta
    tb, tc = cpytree.whole(b), cpytree.whole(c)
    assert cpytree.whole(c) is tc and cpytree.whole(b) is tb
    assert cpytree.whole(a) is not ta  # the oldest was let go
    monkeypatch.setattr(budget, "TREE_MEMO_BYTES", 14)
    big = "w = 1234567890123\n"
    assert cpytree.whole(big) is not cpytree.whole(big)  # over the budget: never kept
    d, e = "d = 4\n", "e = 5\n"
    td = cpytree.whole(d)
    te = cpytree.whole(e)  # the two together are within 14 bytes: both kept
    assert cpytree.whole(d) is td and cpytree.whole(e) is te
    f = "ff = 66\n"
    tf = cpytree.whole(f)  # with it, over 14: the oldest goes
    assert cpytree.whole(f) is tf and cpytree.whole(e) is te and cpytree.whole(d) is not td
    with pytest.raises(SyntaxError):
        cpytree.whole("def (:\n")
    cpytree.clear()


def test_a_pause_restores_the_collector_and_freezes_only_in_a_command(monkeypatch):
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    monkeypatch.setattr(scriptdiff, "COMMAND_PROCESS", False)
    with gcpause.paused():
        assert not gc.isenabled()
        with gcpause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause keeps the outer state
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    monkeypatch.setattr(scriptdiff, "COMMAND_PROCESS", True)
    try:
        with gcpause.paused():
            few = [[] for _ in range(100)]  # a small unit: left to the collector
        assert gc.isenabled() and gc.get_freeze_count() == frozen
        with gcpause.paused():
            many = [[] for _ in range(budget.FREEZE_OBJECTS + 1000)]  # a parsed tree's worth: frozen
        assert gc.isenabled() and gc.get_freeze_count() >= frozen + budget.FREEZE_OBJECTS
        del few, many
    finally:
        gc.unfreeze()


def test_no_cycle_keeps_a_file_the_reader_let_go(tmp_path):
    """With the collector off, the files evicted from the reader's cache and the two files of a
    compared pair are freed by reference counting alone."""
    was = gc.isenabled()
    gc.disable()
    try:
        _fresh()
        gone = []
        for i in range(12):  # each with a device test, so its walk (which refers back to it) is kept
            text = HEAD.format(lr=f"{i + 1}e-4", dev="cuda") + \
                "\nif torch.cuda.is_available():\n    LR = LR * 2\n"
            p = pyreader.analyse(Source(name=f"m{i}.py", data=text.encode()), side="gpu")
            assert p.spec is not None
            gone.append(weakref.ref(p))
            del p
        assert len(pyreader._CACHE) == 8
        assert [r() is None for r in gone] == [True] * 4 + [False] * 8
        g = pyreader.analyse(Source(name="g.py", data=HEAD.format(lr="3e-4", dev="cuda").encode()), side="gpu")
        n = pyreader.analyse(Source(name="n.py", data=HEAD.format(lr="1e-4", dev="npu").encode()), side="npu")
        res = pyreader.compare(g, n)
        assert [(m.rule, m.gpu.line, m.npu.line) for m in res.masked] == [("SD004", 6, 6), ("SD001", 8, 8)]
        refs = [weakref.ref(g), weakref.ref(n)]
        del g, n
        assert [r() is None for r in refs] == [False, False]  # the cache still holds them
        for i in range(8):  # later files push them out
            pyreader.analyse(Source(name=f"later{i}.py", data=f"X = {i}\n".encode()), side="npu")
        assert [r() for r in refs] == [None, None]
    finally:
        _fresh()
        if was:
            gc.enable()

"""The Python diff never raises: exotic syntax, odd edits and mutated files all give a report."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files

ROOT = Path(__file__).resolve().parent.parent

EXOTIC = '''
import torch, torch.nn as nn; import numpy as np
from . import local_mod
from ..pkg import *
x: int = 3
y = (z := 4) + x
async def f(a, /, b, *args, c=1, **kw) -> "T":
    async with torch.cuda.device(0) as d, open("p") as fh:
        async for i in gen():
            yield i
    return [i async for i in gen() if i]
@decorator(arg=torch.cuda.is_available())
@other
class C(Base, metaclass=M):
    attr = lambda self, q=torch.device("cuda:0"): q.cuda()
    def m(self):
        global G
        nonlocal_ = {k: v for k, v in {}.items()}
        try:
            pass
        except* ValueError as e:
            raise RuntimeError("x") from e
        match self.mode:
            case {"a": 1, **rest}:
                pass
            case [1, 2, *others] if others:
                pass
            case Point(x=0) | None:
                pass
            case _:
                pass
        while True:
            break
        else:
            pass
        with (open("a") as a, open("b") as b):
            pass
        del self.x[1:2, ::3]
        assert f"{self.x!r:>{10}}" != r"cuda:" 'npu' and b"cuda", "msg"
        return not -+~1 ** 2 if x else ...
'''


@pytest.mark.parametrize("edit", [
    ("cuda", "npu"), ("case _:", "case 1:"), ("async def f", "def f"), ("@other\n", ""),
    ("x: int = 3", "x: int = 4"), ("break", "continue"), ("metaclass=M", "metaclass=N"), ("", ""),
])
def test_exotic_syntax(tmp_path, edit):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    g, n = tmp_path / "gpu" / "m.py", tmp_path / "npu" / "m.py"
    g.write_text(EXOTIC, encoding="utf-8")
    n.write_text(EXOTIC.replace(*edit), encoding="utf-8")
    r = diff_files([str(g)], [str(n)], Options(use_cache=False))
    assert r.errors == []
    if edit == ("", ""):
        assert r.findings == []


def test_random_line_edits_never_raise(tmp_path):
    rng = random.Random(7)
    srcs = sorted((ROOT / "fixtures" / "python").glob("*/npu/*.py"))
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    for i in range(40):
        src = srcs[i % len(srcs)]
        gpu_text = (src.parent.parent / "gpu" / src.name).read_text(encoding="utf-8")
        lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
        for _ in range(rng.randint(1, 6)):
            j = rng.randrange(len(lines))
            op = rng.choice(["del", "dup", "swap", "indent", "cut"])
            if op == "del":
                del lines[j]
            elif op == "dup":
                lines.insert(j, lines[j])
            elif op == "swap" and j + 1 < len(lines):
                lines[j], lines[j + 1] = lines[j + 1], lines[j]
            elif op == "indent":
                lines[j] = "    " + lines[j]
            elif op == "cut":
                lines[j] = lines[j][: len(lines[j]) // 2] + "\n"
        g, n = tmp_path / "gpu" / src.name, tmp_path / "npu" / src.name
        g.write_text(gpu_text, encoding="utf-8")
        n.write_text("".join(lines), encoding="utf-8")
        r = diff_files([str(g)], [str(n)], Options(use_cache=False))
        for e in r.errors:
            assert "\n" not in e.message and e.message.startswith("not valid Python: line "), e.message


@pytest.mark.parametrize("src", [
    "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n",      # libcst's native parser would crash the process
    "x = " + "+".join(["1"] * 8000) + "\n",
    "x = " + "a." * 12000 + "b\n",
    "x = " + "not " * 3000 + "y\n",                       # parses, but too deep to walk: text fallback
])
def test_deep_code_never_crashes(tmp_path, src):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    g, n = tmp_path / "gpu" / "d.py", tmp_path / "npu" / "d.py"
    g.write_text(src, encoding="utf-8")
    n.write_text(src + "y = f(2)\n", encoding="utf-8")
    r = diff_files([str(g)], [str(n)], Options(use_cache=False))
    assert r.errors and all("\n" not in e.message for e in r.errors)
    assert r.findings  # the added line is still reported (as text)


# ------------------------------------------------------------ native-parser crash shapes
CHAIN = "x = " + " and ".join(["a"] * 8000) + "\n"  # 48 KB of valid Python; libcst's parser overflowed its stack
CHAIN_ERROR = ("expression chain of 8,000 terms (line 1) is beyond the structural parser's limit (200); "
               "compared as text")


def _run_cli(args, cwd):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "scriptdiff", "diff", "--no-cache", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_long_boolean_chain_is_compared_as_text_single_file(tmp_path):
    (tmp_path / "g.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "n.py").write_text(CHAIN, encoding="utf-8")
    r = _run_cli(["g.py", "n.py"], tmp_path)
    assert r.returncode == 1, r.stderr[-500:]
    assert r.stderr.splitlines()[0] == f"scriptdiff: n.py: {CHAIN_ERROR}"
    assert "(compared as text: beyond the structural parser's limits)" in r.stdout


def test_long_boolean_chain_in_a_folder_with_workers(tmp_path):
    for side in ("gpu", "npu"):
        (tmp_path / side).mkdir()
        for i in range(5):  # enough units for the worker pool
            (tmp_path / side / f"m{i}.py").write_text(f"import torch\nx = {i if side == 'gpu' else i + 10}\n",
                                                     encoding="utf-8")
    (tmp_path / "gpu" / "chain.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "npu" / "chain.py").write_text(CHAIN, encoding="utf-8")
    r = _run_cli(["--jobs", "2", "gpu", "npu"], tmp_path)
    assert r.returncode == 1, r.stderr[-500:]
    assert f"scriptdiff: npu/chain.py: {CHAIN_ERROR}" in r.stderr.splitlines()
    assert sum("SD102 code:m" in line for line in r.stdout.splitlines()) == 5  # the other files still compared


@pytest.mark.parametrize("src, what", [
    ("x = " + " or ".join(["a"] * 300) + "\n", "expression chain of 300 terms (line 1)"),
    ("x = " + "+".join(["a"] * 300) + "\n", "expression chain of 300 terms (line 1)"),
    ("x = (" + "\n".join(["'a'"] * 600) + ")\n", "string concatenation of 600 terms (line 1)"),
    ("x = " + "f(" * 90 + ")" * 90 + "\n", "nesting (line 1) is beyond"),
    ("".join(" " * i + "if a:\n" for i in range(90)) + " " * 90 + "pass\n", "nesting (line 80) is beyond"),
    ("x = " + "a[0]" + "[0]" * 180 + "\n", "nesting (line 1) is beyond"),
])
def test_shapes_beyond_the_limit_are_named(tmp_path, src, what):
    (tmp_path / "g.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "n.py").write_text(src, encoding="utf-8")
    r = diff_files([str(tmp_path / "g.py")], [str(tmp_path / "n.py")], Options(use_cache=False))
    assert [e.path for e in r.errors] == [str(tmp_path / "n.py")]
    assert r.errors[0].message.startswith(what), r.errors[0].message
    assert r.errors[0].message.endswith("beyond the structural parser's limit (200); compared as text")
    # compared as text, its settings unread: the NPU input is not understood (never "absent")
    assert [(f.rule, f.npu.path) for f in r.findings] == [("SD108", str(tmp_path / "n.py")),
                                                          ("SD154", str(tmp_path / "n.py"))]
    assert [(a.side, a.status) for a in r.inputs] == [("gpu", "understood"), ("npu", "not understood")]


@pytest.mark.parametrize("src", [
    "x = " + " and ".join(["a"] * 150) + "\n",
    "if a:\n    pass\n" + "elif a:\n    pass\n" * 150,
    "x = " + "f(" * 60 + ")" * 60 + "\n",
])
def test_shapes_under_the_limit_stay_structural(tmp_path, src):
    (tmp_path / "g.py").write_text(src, encoding="utf-8")
    (tmp_path / "n.py").write_text(src + "y = f(2)\n", encoding="utf-8")
    r = diff_files([str(tmp_path / "g.py")], [str(tmp_path / "n.py")], Options(use_cache=False))
    assert r.errors == []
    assert [(f.rule, f.npu.line) for f in r.findings] == [("SD102", src.count("\n") + 1)]


def test_a_dying_worker_is_reported_and_never_rerun_here(tmp_path, monkeypatch):
    """A crash in native code kills the worker; the file is named, and the main process
    (which would die too) never parses it again."""
    import os
    import signal

    from scriptdiff.run import engine

    main = os.getpid()
    real = engine._extract

    def killing(src, ctx, kind, partner=None):
        if src.name.endswith("boom.py"):
            assert os.getpid() != main, "the killing file was parsed again in the main process"
            os.kill(os.getpid(), signal.SIGKILL)  # as a crash in native code would
        return real(src, ctx, kind, partner)

    monkeypatch.setattr(engine, "_extract", killing)
    for side in ("gpu", "npu"):
        (tmp_path / side).mkdir()
        for i in range(5):
            (tmp_path / side / f"m{i}.py").write_text(f"x = {i if side == 'gpu' else i + 1}\n", encoding="utf-8")
    (tmp_path / "gpu" / "boom.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "npu" / "boom.py").write_text("x = 2\n", encoding="utf-8")
    from scriptdiff.run.folders import diff_trees
    r = diff_trees(str(tmp_path / "gpu"), str(tmp_path / "npu"), Options(use_cache=False, jobs=2))
    died = "the structural parser's process died on this file (a crash in native code); compared as text"
    assert sorted((e.path, e.message) for e in r.errors) == [(str(tmp_path / "gpu" / "boom.py"), died),
                                                             (str(tmp_path / "npu" / "boom.py"), died)]
    # the other files are compared, and so is the pair itself (the diff step did not die)
    assert sorted((f.rule, f.gpu.path.rsplit("/", 1)[-1]) for f in r.findings) == \
        [("SD102", "boom.py")] + [("SD102", f"m{i}.py") for i in range(5)]


def test_dense_code_beyond_the_node_budget_is_compared_as_text(tmp_path):
    """1,000 short assignments (6 KB, 4,001 syntax nodes) against a 10,000-byte --max-bytes:
    a budget of 2,500 nodes; libcst's tree would cost about 2 KB a node."""
    (tmp_path / "g.py").write_text("a = 1\n" * 1000, encoding="utf-8")
    (tmp_path / "n.py").write_text("a = 1\n" * 999 + "a = 2\n", encoding="utf-8")
    r = diff_files([str(tmp_path / "g.py")], [str(tmp_path / "n.py")], Options(use_cache=False, max_bytes=10_000))
    assert sorted((e.path.rsplit("/", 1)[-1], e.message) for e in r.errors) == [
        (name, "4,001 syntax nodes are beyond the structural parser's budget (2,500, 0.25 per byte of "
               "--max-bytes 10,000); compared as text") for name in ("g.py", "n.py")]
    assert sorted((f.rule, f.npu.line if f.npu else None) for f in r.findings) == [("SD108", 1000), ("SD154", None),
                                                                                     ("SD154", None)]
    assert {a.status for a in r.inputs} == {"not understood"}  # both sides' settings unread
    ok = diff_files([str(tmp_path / "g.py")], [str(tmp_path / "n.py")], Options(use_cache=False, max_bytes=20_000))
    assert ok.errors == [] and [f.rule for f in ok.findings] == ["SD102"]


def test_the_parse_cache_is_bounded_by_source_bytes():
    from scriptdiff.lang.python import reader as py
    from scriptdiff.inputs.sources import Source

    py._CACHE.clear()
    for i in range(4):
        py.analyse(Source(name=f"f{i}.py", data=(f"x{i} = 1\n" + "#" * 400_000 + "\n").encode()))
    assert [k[0] for k in py._CACHE] == ["f2.py", "f3.py"]  # two kept, whatever their size

"""The Python diff never raises: exotic syntax, odd edits and mutated files all give a report."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from scriptdiff.engine import Options, diff_files

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
    n.write_text(src + "y = 2\n", encoding="utf-8")
    r = diff_files([str(g)], [str(n)], Options(use_cache=False))
    assert r.errors and all("\n" not in e.message for e in r.errors)
    assert r.findings  # the added line is still reported (as text)

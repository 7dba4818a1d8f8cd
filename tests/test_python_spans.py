"""Node positions come from libcst's private codegen API; when it is missing or changed shape,
the public-API fallback gives the same report, and when that fails too the file is compared
as text with an error that says why. Never a traceback."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import pytest

from scriptdiff.run import engine
from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.lang.python import reader as pylang
from scriptdiff.lang.python import spans as python_spans
from scriptdiff.lang.python.spans import LineState, PublicState

ROOT = Path(__file__).resolve().parent.parent

GPU = '''import torch
import torch.nn.functional as F
from flash_attn import flash_attn_func

LR = 1e-4  # learning rate


class Block(torch.nn.Module):
    """A block."""

    @torch.no_grad()
    def __init__(self, dim, dropout=0.1):
        super().__init__()
        # a norm
        self.norm = torch.nn.LayerNorm(dim, eps=1e-5)

    def forward(self, q, k, v):
        x = flash_attn_func(q, k, v, dropout_p=0.1, causal=True)
        return F.gelu(self.norm(x)).cuda()


def main():
    model = Block(8).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.1)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
'''

NPU = '''import torch
import torch_npu
import torch.nn.functional as F

LR = 2e-4  # learning rate


class Block(torch.nn.Module):
    """A block on NPU."""

    @torch.no_grad()
    def __init__(self, dim, dropout=0.2):
        super().__init__()
        # a norm
        self.norm = torch.nn.LayerNorm(dim, eps=1e-6)

    def forward(self, q, k, v):
        x = torch_npu.npu_fusion_attention(q, k, v, 8, "BSND", keep_prob=0.9)[0]
        return F.relu(self.norm(x)).npu()


def main():
    model = Block(8).npu()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.1)
    model.clip_grad_norm_(1.0)
    if torch.npu.is_available():
        torch.npu.synchronize()
    print("extra")
'''


def write_pair(tmp_path: Path, newline: str = "\n") -> tuple[Path, Path]:
    out = []
    for side, text in (("gpu", GPU), ("npu", NPU)):
        d = tmp_path / side
        d.mkdir(parents=True, exist_ok=True)
        (d / "model.py").write_bytes(text.replace("\n", newline).encode("utf-8"))
        out.append(d / "model.py")
    return out[0], out[1]


def report(g: Path, n: Path):
    pylang._CACHE.clear()
    engine._MEMO.clear()
    return diff_files([str(g)], [str(n)], Options(use_cache=False))


def as_data(r):
    return [repr(f) for f in r.findings], [repr(m) for m in r.masked], [repr(e) for e in r.errors]


def _silent_hooks(self, node, *, start_node=None, end_node=None):
    return nullcontext()


BREAKS = {
    # the private module or class is gone (what an ImportError at import time leaves)
    "missing": lambda mp: mp.setattr(python_spans, "PRIVATE_API", False),
    # CodegenState's constructor changed
    "constructor": lambda mp: mp.setattr(LineState, "__init__", lambda self, module: (_ for _ in ()).throw(
        TypeError("unexpected keyword argument 'default_indent'"))),
    # the position hook was renamed: it is never called, nothing is recorded
    "hooks": lambda mp: mp.setattr(LineState, "record_syntactic_position", _silent_hooks),
    # the node hooks were renamed: no spans are recorded
    "node-hooks": lambda mp: (mp.setattr(LineState, "before_codegen", lambda self, node: None),
                              mp.setattr(LineState, "after_codegen", lambda self, node: None)),
    # the token list was renamed: the tokens no longer rebuild the file
    "tokens": lambda mp: mp.setattr(LineState, "add_token", lambda self, value: None),
}


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("how", sorted(BREAKS))
def test_public_fallback_gives_the_same_report(tmp_path, monkeypatch, how, newline):
    g, n = write_pair(tmp_path, newline)
    fast = report(g, n)
    assert type(pylang._CACHE[next(iter(pylang._CACHE))].state) is LineState
    assert {f.rule for f in fast.findings} >= {"SD101", "SD105"} and fast.masked

    BREAKS[how](monkeypatch)
    slow = report(g, n)
    assert all(type(p.state) is PublicState for p in pylang._CACHE.values())
    assert as_data(slow) == as_data(fast)


def test_no_positions_at_all_compares_as_text(tmp_path, monkeypatch, cli):
    g, n = write_pair(tmp_path)
    monkeypatch.setattr(python_spans, "PRIVATE_API", False)

    def broken(self, module):
        raise RuntimeError("metadata\nprovider changed")

    monkeypatch.setattr(PublicState, "__init__", broken)
    r = report(g, n)
    assert [e.message for e in r.errors] == [
        "node positions not available from libcst (RuntimeError: metadata provider changed); compared as text"] * 2
    text = [f for f in r.findings if f.rule == "SD108"]
    assert text and all(f.message.endswith("(compared as text: libcst gave no node positions)") for f in text)
    pylang._CACHE.clear()
    engine._MEMO.clear()
    code, out, err = cli("diff", str(g), str(n), "--no-cache")
    assert code == 1 and "Traceback" not in out + err


def test_private_class_missing_in_a_fresh_process(tmp_path):
    """A real ImportError: libcst without CodegenState in libcst._nodes.internal."""
    g, n = write_pair(tmp_path)
    fast = report(g, n)
    prog = (
        "import json, sys\n"
        "import libcst, libcst.metadata, libcst._nodes.internal as internal\n"
        "del internal.CodegenState\n"
        "from scriptdiff.lang.python import spans as python_spans\n"
        "assert not python_spans.PRIVATE_API\n"
        "from scriptdiff.model import Options\nfrom scriptdiff.run.pipeline import diff_files\n"
        "r = diff_files([sys.argv[1]], [sys.argv[2]], Options(use_cache=False))\n"
        "print(json.dumps([[repr(f) for f in r.findings], [repr(m) for m in r.masked], [repr(e) for e in r.errors]]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", prog, str(g), str(n)], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert json.loads(out) == [list(x) for x in as_data(fast)]

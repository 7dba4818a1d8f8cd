"""Issue 14, speed: a large pair that differs in a few places is read by its differing
statements and what they depend on (lang/python_focus), and says exactly what the whole-file
reading says."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.lang.python import focus as python_focus
from scriptdiff.run.folders import diff_trees

HEAD = '''"""A training module."""
import argparse

import torch
import torch.nn as nn

LR = 3e-4
WARMUP = 100
SCALE = 4


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--clip-grad", type=float, default=1.0)
    return parser.parse_args()
'''

BLOCK = '''

class Block{i}(nn.Module):
    """Layer {i}."""

    def __init__(self, dim, dropout=0.1):
        super().__init__()
        self.fc = nn.Linear(dim, SCALE * dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        y = self.fc(x)
        return self.drop(y) + x


def step_{i}(model, batch, optimizer):
    x = batch["input"].cuda(non_blocking=True)
    loss = model(x).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss
'''

TAIL = '''

def build(model):
    return torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.1)


def main():
    args = get_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(*[Block0(64) for _ in range(2)]).cuda()
    optimizer = build(model)
    for i in range(WARMUP):
        step_0(model, {"input": torch.zeros(2, 64)}, optimizer)


if __name__ == "__main__":
    main()
'''


def module(blocks: int = 60) -> str:
    return HEAD + "".join(BLOCK.format(i=i) for i in range(blocks)) + TAIL


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def shown(report):
    return sorted((f.rule, f.key, f.severity, f.gpu and (repr(f.gpu.value), f.gpu.line),
                   f.npu and (repr(f.npu.value), f.npu.line), f.message) for f in report.findings)


def masked(report):
    return sorted((m.rule, m.gpu and m.gpu.line, m.npu and m.npu.line) for m in report.masked)


def both_ways(tmp_path: Path, gpu: str, npu: str, monkeypatch, folders: bool = False):
    """(focused report, whole-file report) of one pair."""
    out = []
    for name, min_bytes in (("focus", 0), ("whole", 10 ** 12)):
        monkeypatch.setattr(python_focus, "MIN_BYTES", min_bytes)
        d = tmp_path / name
        for side, text in (("gpu", gpu), ("npu", npu)):
            (d / side).mkdir(parents=True)
            (d / side / "train.py").write_text(text, encoding="utf-8")
        opts = Options(use_cache=False, jobs=1)
        if folders:
            out.append(diff_trees(str(d / "gpu"), str(d / "npu"), opts))
        else:
            out.append(diff_files([str(d / "gpu" / "train.py")], [str(d / "npu" / "train.py")], opts))
    return out


def test_a_small_change_in_a_large_file_is_read_in_part():
    gpu = module()
    npu = gpu.replace("LR = 3e-4", "LR = 1e-4")
    got = python_focus.plan(gpu, npu)
    assert got is not None
    (gtext, gmap), (ntext, nmap), kept, total = got
    # the constant, the imports, and build() that reads it (AdamW: the same setting elsewhere
    # is compared whole); not the 60 blocks
    assert kept < total / 10
    assert "def build(model)" in gtext and "class Block7" not in gtext
    assert gmap[gtext.split("\n").index("LR = 3e-4")] == line_of(gpu, "LR = 3e-4")


@pytest.mark.parametrize("folders", [False, True])
def test_a_constant_changed_far_from_its_use_is_found_at_the_file_lines(tmp_path, monkeypatch, folders):
    gpu = module()
    npu = gpu.replace("LR = 3e-4", "LR = 1e-4")
    focus, whole = both_ways(tmp_path, gpu, npu, monkeypatch, folders)
    assert shown(focus) == shown(whole)
    lr = [f for f in focus.findings if f.key == "lr"]
    # AdamW(lr=LR) near the end of the file: the value, where it is written
    assert [(f.rule, f.gpu.value, f.npu.value, f.gpu.via) for f in lr] == [("SD202", 0.0003, 0.0001, "LR")]
    assert lr[0].gpu.line == lr[0].npu.line == line_of(gpu, "LR = 3e-4") == 7


def test_a_port_deep_in_a_large_file_is_masked_at_its_line(tmp_path, monkeypatch):
    gpu = module()
    at = gpu.index("def step_41")
    npu = gpu[:at] + gpu[at:].replace(".cuda(non_blocking=True)", ".npu(non_blocking=True)", 1)
    npu = npu.replace("import torch\n", "import torch\nimport torch_npu\n", 1)
    focus, whole = both_ways(tmp_path, gpu, npu, monkeypatch)
    assert shown(focus) == shown(whole) == []
    assert masked(focus) == masked(whole)
    step = line_of(gpu, "def step_41") + 1
    assert any(m.gpu and m.gpu.line == step and m.npu.line == step + 1 for m in focus.masked)


def test_a_definition_still_used_on_one_side_only_is_read_alike_on_both(tmp_path, monkeypatch):
    """A changed statement that reads an unchanged class on GPU only: the class is read on both
    sides (an unchanged statement is read alike), not reported as a class on GPU only."""
    gpu = module() + "\n\ndef pair(dim):\n    a = Block3(dim)\n    b = Block4(dim)\n    return a, b\n"
    npu = gpu.replace("    a = Block3(dim)\n", "")
    focus, whole = both_ways(tmp_path, gpu, npu, monkeypatch)
    assert shown(focus) == shown(whole)
    assert [(f.rule, f.gpu.line if f.gpu else None, f.npu) for f in focus.findings] == [
        ("SD102", line_of(gpu, "    a = Block3(dim)"), None)]


EDITS = [
    lambda t, r: t.replace("LR = 3e-4", "LR = 2e-4"),
    lambda t, r: t.replace("WARMUP = 100", "WARMUP = 50"),
    lambda t, r: t.replace('default=1234', 'default=42'),
    lambda t, r: t.replace("SCALE * dim", "2 * dim", 1),
    lambda t, r: t.replace("self.drop = nn.Dropout(dropout)\n", "self.drop = nn.Dropout(0.0)\n", r.randrange(1, 4)),
    lambda t, r: t.replace("clip_grad_norm_(model.parameters(), 1.0)", "clip_grad_norm_(model.parameters(), 0.5)", 1),
    lambda t, r: t.replace(".cuda(non_blocking=True)", ".npu(non_blocking=True)"),
    lambda t, r: t.replace("    loss = model(x).mean()\n    loss.backward()\n",
                           "    loss = model(x).mean()\n    optimizer.zero_grad()\n    loss.backward()\n", 1),
    lambda t, r: t.replace("    torch.manual_seed(args.seed)\n    model = ", "    model = ", 1)
                  .replace("    optimizer = build(model)\n", "    optimizer = build(model)\n    torch.manual_seed(args.seed)\n"),
    lambda t, r: t.replace(f"\n\nclass Block{r.randrange(1, 40)}(nn.Module):", "\n\nclass Unused(nn.Module):"),
    lambda t, r: t.replace("WARMUP = 100\n", "") + "\nWARMUP = 100\n",
    lambda t, r: t.replace("import torch.nn as nn\n", "import torch.nn as nn\nimport torch_npu\n"),
]


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("FOCUS_SEEDS", "8"))))
def test_focused_and_whole_file_readings_agree(tmp_path, monkeypatch, seed):
    """Random edits of a large module (1 to 3 of them): the same findings and masks either way,
    and the focused reading reads a small part of the file."""
    r = random.Random(seed)
    gpu = module(40)
    npu = gpu
    for e in r.sample(EDITS, r.randrange(1, 4)):
        npu = e(npu, r)
    assert npu != gpu
    got = python_focus.plan(gpu, npu)
    assert got is not None and got[2] < got[3] / 2
    focus, whole = both_ways(tmp_path, gpu, npu, monkeypatch, folders=seed % 2 == 1)
    assert shown(focus) == shown(whole)
    assert masked(focus) == masked(whole)
    assert shown(focus) or masked(focus)  # every edit shows, as a finding or a masked port
    assert [(e.path, e.message) for e in focus.errors] == [(e.path, e.message) for e in whole.errors]


def test_what_a_whole_parse_is_better_for_is_not_focused():
    small = "x = 1\n"
    assert python_focus.plan(small, "x = 2\n") is None  # small: a whole parse costs little
    big = module()
    assert python_focus.plan(big, big.replace("def ", "def  ")) is None  # most of the file changed
    assert python_focus.plan(big, big + "\ndef broken(:\n") is None  # CPython cannot parse it
    assert python_focus.plan(big, big.replace("\n", "\r", 3)) is None  # lone carriage returns


def test_a_change_that_reaches_most_of_the_file_stops_early():
    """A chain where every statement reads the one before: the closure stops once it would keep
    most of the file (a whole parse is then the better choice), instead of walking it all."""
    g = "x0 = 1\n" + "".join(f"x{i} = x{i - 1} + 1\n" for i in range(1, 3000))
    assert python_focus.plan(g, g.replace("x0 = 1\n", "x0 = 2\n", 1)) is None
    # the same change where only a few statements read it: focused
    h = "x0 = 1\n" + "".join(f"y{i} = {i}\n" for i in range(1, 3000)) + "z = x0 + 1\n"
    got = python_focus.plan(h, h.replace("x0 = 1\n", "x0 = 2\n", 1))
    assert got is not None and got[0][0] == "x0 = 1\nz = x0 + 1\n" and got[0][1] == [1, 3001]


def _cut(text: str) -> list[tuple]:
    return [(c.first, c.last, c.text, sorted(c.binds), c.is_import)
            for c in python_focus.chunks(text, text.split("\n"))]


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("FOCUS_SEEDS", "8"))))
def test_the_npu_side_cut_from_its_differing_lines_is_its_whole_cut(seed):
    """The NPU side's statements, parsed only between the lines both sides share at their start
    and end, are the statements of its whole parse: same lines, text and names."""
    r = random.Random(seed)
    gpu = module(40)
    npu = gpu
    for e in r.sample(EDITS, r.randrange(1, 4)):
        npu = e(npu, r)
    gl, nl = gpu.split("\n"), npu.split("\n")
    got = python_focus.other_side(python_focus.chunks(gpu, gl), gl, nl)
    assert [(c.first, c.last, c.text, sorted(c.binds), c.is_import) for c in got] == _cut(npu)


@pytest.mark.parametrize("edit", [
    # a string opened in the differing lines and closed in the shared ones
    lambda t: t.replace('LR = 3e-4\n', 'LR = 3e-4\nDOC = """\n', 1).replace("WARMUP = 100\n", 'WARMUP = 100\n"""\n', 1),
    # a statement that now runs on into the shared lines (a bracket left open)
    lambda t: t.replace("LR = 3e-4\n", "LR = max(3e-4,\n", 1).replace("WARMUP = 100\n", "WARMUP = 100)\n", 1),
    # a shared line that became the body of a new block
    lambda t: t.replace("LR = 3e-4\n", "if True:\n    LR = 3e-4\n", 1),
    lambda t: "",  # everything removed
    lambda t: t + "\nx = 1\n",  # an addition at the end
    lambda t: "y = 2\n" + t,  # and at the start
])
def test_differing_lines_that_do_not_stand_alone_fall_back_to_the_whole_side(edit):
    gpu = module(10)
    npu = edit(gpu)
    gl, nl = gpu.split("\n"), npu.split("\n")
    got = python_focus.other_side(python_focus.chunks(gpu, gl), gl, nl)
    assert [(c.first, c.last, c.text, sorted(c.binds), c.is_import) for c in got] == _cut(npu)

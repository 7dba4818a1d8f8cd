"""Issue 39: a block one side wraps around statements the other side runs as they are (a `try:`,
a tiling `for` loop, a `with`): one finding for the wrapper, and what it holds compared with the
other side's statements (scriptdiff/lang/python/align.py, Aligner.unwrap)."""
from __future__ import annotations

from test_python_diff import pair_of

GPU = '''import torch


def fit_orbit(net, opt, batch, cfg):
    x = batch.float()
    y = net(x)
    loss = y.pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss
'''

NPU = '''import torch
import torch_npu


def fit_orbit(net, opt, batch, cfg):
    x = batch.float()
    try:
        y = net(x)
        loss = y.pow(2).mean()
        loss.backward()
    except RuntimeError:
        raise
    opt.step()
    opt.zero_grad()
    return loss
'''


def rows(r):
    return [(f.rule, f.key, f.gpu and f.gpu.line, f.npu and f.npu.line, f.message) for f in r.findings
            if f.check == "script" and f.rule != "SD104"]


def test_a_try_around_the_step_is_one_finding_and_its_block_is_compared(tmp_path):
    r = pair_of(tmp_path, GPU, NPU, "fit.py")[2]
    assert rows(r) == [("SD101", "code:fit.py:fit_orbit", None, 7, "statement on NPU only; it wraps 3 statement(s) "
                        "the GPU side runs unwrapped, compared with them")]


def test_a_statement_changed_inside_the_wrapper_is_its_own_finding(tmp_path):
    r = pair_of(tmp_path, GPU, NPU.replace("y.pow(2).mean()", "y.pow(2).sum()"), "fit.py")[2]
    assert rows(r) == [
        ("SD101", "code:fit.py:fit_orbit", 7, 9, "a different function is called (y.pow(2).mean on GPU)"),
        ("SD101", "code:fit.py:fit_orbit", None, 7, "statement on NPU only; it wraps 3 statement(s) the GPU side "
         "runs unwrapped, compared with them")]


KERNEL_GPU = '''def scale_rows(a, c, n_cols, block):
    offs = arange(0, block)
    mask = offs < n_cols
    row = load(a + offs, mask=mask)
    out = row * 0.5
    store(c + offs, out, mask=mask)
'''

KERNEL_NPU = '''def scale_rows(a, c, n_cols, block):
    for i in range(0, n_cols, block):
        offs = i + arange(0, block)
        mask = offs < n_cols
        row = load(a + offs, mask=mask)
        out = row * 0.5
        store(c + offs, out, mask=mask)
'''


def test_a_tiling_loop_around_a_kernel_body_is_the_loop_and_one_changed_offset(tmp_path):
    r = pair_of(tmp_path, KERNEL_GPU, KERNEL_NPU, "kern.py")[2]
    assert [(f[0], f[2], f[3], f[4][:40]) for f in rows(r)] == [
        ("SD101", 2, 3, "statement differs"),
        ("SD101", None, 2, "statement on NPU only; it wraps 5 statem")]


def test_a_block_that_holds_other_statements_is_not_unwrapped(tmp_path):
    """Fewer than half of its statements have counterparts: the wrapper and its statements stay
    one-sided, each its own finding."""
    npu = KERNEL_NPU.replace("        row = load(a + offs, mask=mask)\n        out = row * 0.5\n",
                             "        row = fetch(a, offs)\n        out = halve(row)\n        keep(out)\n")
    npu = npu.replace("        mask = offs < n_cols\n", "        mask = within(offs, n_cols)\n")
    r = pair_of(tmp_path, KERNEL_GPU, npu, "kern.py")[2]
    assert not any("wraps" in f[4] for f in rows(r))

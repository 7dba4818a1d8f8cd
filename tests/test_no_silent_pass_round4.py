"""Issue 40, "Silent passes": what could not be compared is never taken for agreement.

- a file the analyser cannot read (a launch script nested past its limit) is "not
  understood" on each side it was read for, never "identical": one-file mode, two files with
  the same bytes and a folder of them all exit 1, each side's file named with its reason;
- `dumps`: a statistic, a dtype, a shape or an md5 that is not of its type, a value msprobe
  did not describe, a section or a record that is not an object, NaN on both sides, two dumps
  without a call, and a port's output that is no tensor are "not comparable" (SD810, naming
  the call, the side and the field), never agreement; an infinity on both sides agrees (a
  mask's -inf) and a statistic finite on one side only, or inf against -inf, diverges; a
  saved .npy whose header claims more than the file holds is one note naming it.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scriptdiff import api
from scriptdiff.model import Options
from test_dumps import NPU_FA, FLASH, AFTER, Q, T, fwd, write


def _cli(args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scriptdiff", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


# ------------------------------------------------------------------ a file the analyser cannot read

DEEP = ("#!/bin/bash\nif [ -d /usr/local/Ascend ]; then\n" + "( " * 3000 + "torchrun train.py --lr 1"
        + " )" * 3000 + "\nfi\n")
WHY = "its settings were not read (nested too deeply to analyse)"


@pytest.mark.parametrize("how", ["one-file", "two-files", "folder"])
def test_a_script_nested_past_the_limit_is_never_a_pass(tmp_path, how):
    for d in ("gpu", "npu"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "run.sh").write_text(DEEP, encoding="utf-8")
    args = {"one-file": ["gpu/run.sh"], "two-files": ["gpu/run.sh", "npu/run.sh"], "folder": ["gpu"]}[how]
    r = _cli(["diff", "--no-cache", "-f", "json", *args], tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    names = {"one-file": ["gpu/run.sh", "gpu/run.sh"], "two-files": ["gpu/run.sh", "npu/run.sh"],
             "folder": ["gpu/run.sh", "gpu/run.sh"]}[how]
    assert [(a["path"], a["side"], a["status"], a["unread"]) for a in doc["inputs"]] == [
        (names[0], "gpu", "not understood", [WHY]), (names[1], "npu", "not understood", [WHY])]
    assert sorted((f["rule"], f["key"]) for f in doc["findings"]) == [
        ("SD154", f"input:{names[0]}"), ("SD154", f"input:{names[1]}")]
    assert r.stderr.splitlines() == [f"scriptdiff: {n}: nested too deeply to analyse; skipped" for n in sorted(names)]


def test_the_text_account_says_which_files_were_not_understood(tmp_path):
    (tmp_path / "run.sh").write_text(DEEP, encoding="utf-8")
    r = _cli(["diff", "--no-cache", "run.sh"], tmp_path)
    assert r.returncode == 1
    assert f"read 2 files: 0 understood or identical, 2 not: run.sh (not understood: {WHY}); run.sh (not understood: " \
           f"{WHY})" in r.stdout.splitlines()


# ------------------------------------------------------------------ dumps: not comparable, never agreement

L = "Functional.linear.0.forward"
GOOD = {L: fwd([T()], [T()])}


def _dumps(tmp_path, g: dict, n: dict, **kw):
    report = api.dumps(str(write(tmp_path / "g", g, **kw)), str(write(tmp_path / "n", n, **kw)),
                       Options(use_cache=False))
    return [(f.rule, f.key, f.message) for f in report.findings], report.exit_code()


def _odd(*named, values=None, calls=1) -> tuple:
    values = len(named) if values is None else values
    return ("SD810", "dump:values", f"{values} value(s) of {calls} call(s) cannot be compared and were not: "
                                    + "; ".join(named))


@pytest.mark.parametrize("bad,named", [
    (T(mx={"a": 1}), 'output.0\'s Max on NPU is {"a": 1}, not a number'),
    (T(mx=True), "output.0's Max on NPU is true, not a number"),
    (T(norm="many"), "output.0's Norm on NPU is \"many\", not a number"),
    ({**T(), "dtype": 7}, "output.0's dtype on NPU is 7, not a name"),
    ({**T(), "shape": "x"}, "output.0's shape on NPU is \"x\", not a list of sizes"),
    ({**T(), "shape": [2, -4]}, "output.0's shape on NPU is [2, -4], not a list of sizes"),
    ({**T(), "md5": 5}, "output.0's md5 on NPU is 5, not a digest"),
], ids=["max-object", "max-true", "norm-word", "dtype-7", "shape-x", "shape-negative", "md5-number"])
def test_an_npu_statistic_of_the_wrong_type_is_not_comparable(tmp_path, bad, named):
    findings, code = _dumps(tmp_path, GOOD, {L: fwd([T()], [bad])})
    assert (findings, code) == ([_odd(f"{L}: {named}")], 1)


def test_the_same_wrong_type_on_both_sides_is_no_agreement(tmp_path):
    bad = {L: fwd([T()], [T(mx={"a": 1})])}
    findings, code = _dumps(tmp_path, bad, bad)
    assert (findings, code) == ([_odd(f'{L}: output.0\'s Max on GPU is {{"a": 1}}, not a number',
                                      f'{L}: output.0\'s Max on NPU is {{"a": 1}}, not a number')], 1)


def test_the_other_fields_of_a_tensor_are_still_compared(tmp_path):
    findings, code = _dumps(tmp_path, {L: fwd([T()], [T(mean=0.1)])}, {L: fwd([T()], [T(mx=True, mean=9.0)])})
    assert [f[0] for f in findings] == ["SD801", "SD810"] and code == 1
    assert "output.0's Mean is 0.1 on GPU and 9 on NPU" in findings[0][2]


@pytest.mark.parametrize("npu,named", [
    ({L: fwd([T()], [3])}, f"{L} on NPU: output.0 is 3, not a described value"),
    ({L: {"input_args": [T()], "input_kwargs": {}, "output": 5}}, f"{L} on NPU: output is 5, not a list"),
    ({L: 7}, f"{L} on NPU: its record is 7, not an object"),
], ids=["output-int", "output-not-a-list", "record-int"])
def test_an_output_that_became_an_int_is_named(tmp_path, npu, named):
    findings, code = _dumps(tmp_path, GOOD, npu)
    assert code == 1 and findings[-1] == _odd(named)
    assert findings[0][0] == "SD805"  # and the slot it left is a difference


def test_an_output_that_is_an_int_on_both_sides_is_no_agreement(tmp_path):
    both = {L: fwd([T()], [3])}
    findings, code = _dumps(tmp_path, both, both)
    assert (findings, code) == ([_odd(f"{L} on GPU: output.0 is 3, not a described value",
                                      f"{L} on NPU: output.0 is 3, not a described value")], 1)


def test_a_described_int_output_agrees(tmp_path):
    both = {"Tensor.dim.0.forward": fwd([T()], [{"type": "int", "value": 2}])}
    assert _dumps(tmp_path, both, both) == ([], 0)


def test_two_empty_dumps_are_not_comparable(tmp_path):
    assert _dumps(tmp_path, {}, {}) == ([("SD810", "dump:calls", "neither dump of rank . holds a call: nothing was "
                                                                 "compared")], 1)


def test_nan_on_both_sides_is_not_comparable(tmp_path):
    nan = float("nan")
    findings, code = _dumps(tmp_path, {L: fwd([T()], [T(mx=nan)])}, {L: fwd([T()], [T(mx=nan)])})
    assert (findings, code) == ([_odd(f"{L}: output.0's Max is NaN on GPU and on NPU")], 1)


def test_the_same_infinity_on_both_sides_agrees_and_another_diverges(tmp_path):
    inf = float("inf")
    mask = {L: fwd([T(mn=-inf)], [T()])}
    assert _dumps(tmp_path / "a", mask, mask) == ([], 0)
    findings, code = _dumps(tmp_path / "b", {L: fwd([T()], [T(mx=inf, mn=-1.0)])}, {L: fwd([T()], [T(mx=-inf, mn=-1.0)])})
    assert code == 1 and [(f[0], f[2].split(": ", 2)[-1]) for f in findings] == [
        ("SD804", "output.0's Max is inf on GPU and -inf on NPU")]
    findings, code = _dumps(tmp_path / "c", {L: fwd([T()], [T(mx=inf, mn=-1.0)])},
                            {L: fwd([T()], [T(mx=1.0, mn=-inf)])})
    assert code == 1 and [(f[0], f[2].split(": ", 2)[-1]) for f in findings] == [
        ("SD804", "output.0's Max is inf on GPU and 1 on NPU")]  # then the Min: finite on one side only each


def test_a_port_whose_npu_output_is_no_tensor_is_not_comparable(tmp_path):
    npu = {"NPU.npu_fusion_attention.0.forward": fwd([Q, Q, Q], [{"type": "int", "value": 3}])}
    findings, code = _dumps(tmp_path, {**FLASH, **AFTER}, {**npu, **AFTER})
    assert (findings, code) == ([_odd("Functional.flash_attn_func.0.forward: output.0's NPU form has no output "
                                      "tensor")], 1)
    assert _dumps(tmp_path / "same", {**FLASH, **AFTER}, {**NPU_FA, **AFTER}) == ([], 0)


def test_a_port_whose_output_holds_other_values_diverges(tmp_path):
    npu = {"NPU.npu_fusion_attention.0.forward": fwd([Q, Q, Q], [T(shape=(1, 2, 3, 3))])}
    findings, code = _dumps(tmp_path, {**FLASH, **AFTER}, {**npu, **AFTER})
    assert code == 1 and [(f[0], f[2].split(": ", 1)[-1]) for f in findings] == [
        ("SD803", "Functional.flash_attn_func.0.forward (NPU.npu_fusion_attention.0.forward on NPU): output.0 holds "
                  "12 values on GPU ([1, 2, 3, 2]) and 18 on NPU ([1, 2, 3, 3])")]


def test_values_that_cannot_be_compared_are_counted_and_the_first_three_named(tmp_path):
    g = {f"Functional.relu.{i}.forward": fwd([T()], [T()]) for i in range(5)}
    n = {f"Functional.relu.{i}.forward": fwd([T()], [T(mx=True)]) for i in range(5)}
    findings, code = _dumps(tmp_path, g, n)
    named = [f"Functional.relu.{i}.forward: output.0's Max on NPU is true, not a number" for i in range(3)]
    assert (findings, code) == ([("SD810", "dump:values", "5 value(s) of 5 call(s) cannot be compared and were not: "
                                  + "; ".join(named) + "; ... (2 more)")], 1)


def test_a_truncated_npy_is_a_note_naming_it(tmp_path):
    np = pytest.importorskip("numpy")
    for side, scale in (("g", 1.0), ("n", 3.0)):
        d = write(tmp_path / side, {L: fwd([T()], [T(mx=scale, data_name="out.npy")])}, task="tensor")
        (d / "dump_tensor_data").mkdir()
        np.save(d / "dump_tensor_data" / "out.npy", np.full((64, 64), scale, np.float32))
    npy = tmp_path / "n" / "dump_tensor_data" / "out.npy"
    npy.write_bytes(npy.read_bytes()[:1000])
    report = api.dumps(str(tmp_path / "g"), str(tmp_path / "n"), Options(use_cache=False))
    assert report.findings[0].extra["dumps"]["tensors"] is None
    assert [(e.path, e.message) for e in report.errors if not e.is_note] == [
        (f"{tmp_path}/n/dump_tensor_data/out.npy", "its header says 4,096 values of float32 (16,384 bytes) and the "
                                                   "file holds 872 bytes after it (truncated?); not read")]


def test_a_field_not_of_its_type_inside_a_port_group_is_named(tmp_path):
    npu = {"NPU.npu_fusion_attention.0.forward": fwd([Q, {**Q, "dtype": {"x": 1}}, Q],
                                                     [T(shape=(1, 2, 3, 2), mx=0.6, mn=-0.4, mean=0.05, norm=1.3)])}
    findings, code = _dumps(tmp_path, {**FLASH, **AFTER}, {**npu, **AFTER})
    assert (findings, code) == ([_odd('NPU.npu_fusion_attention.0.forward: input.1\'s dtype on NPU is {"x": 1}, '
                                      'not a name')], 1)

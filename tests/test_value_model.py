"""The value model (issue 39): values read from Python carry their kind and flow through
assignments, locals, class attributes, dicts indexed by the device, f-strings and calls of the
file's own functions (bounded; a helper that calls itself is unknown, said once, never absent).

One file that runs on both devices is its GPU run against its NPU run (`scriptdiff diff FILE`):
a value chosen by the device through a helper or a table is found under its key, with both
values and the line each is written at. Every example is made up, with a faithful counterpart
(silent) and a drifted one (its exact finding). Also issue 40's long chains, which now finish
with their result said (benchmarks/bench_values.py measures their time).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from test_device_branches import line_of, loud, one_file, pair

from scriptdiff import budget
from scriptdiff.lang.python.evaluate import UNDECIDED, DevStr, Kind, NotLiteral, module_consts, read, value
from scriptdiff.lang.python.evaluate.kinds import named, words
from scriptdiff.lang.python.evaluate.plumbing import role
from scriptdiff.lang.python.parse import parse
from scriptdiff.lang.python.specialise import specialise


def program(text: str, side: str):
    p = parse("train.py", textwrap.dedent(text))
    specialise(p, side)
    module_consts(p)
    return p


def expr_in(p, target: str):
    """The value node of the assignment to `target`, wherever it stands in the file."""
    found = []

    class V(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if len(node.targets) == 1 and p.code(node.targets[0].target) == target:
                found.append(node.value)

    p.module.visit(V())
    assert found, target
    return found[-1]


# ------------------------------------------------------------------------- the evaluator
FLOW = """\
import os
import torch
from accel_env import platform, get_accel_device
from transformers import is_torch_npu_available


def pick_lr():
    if is_torch_npu_available():
        return 2e-4
    return 1e-4


def get_comm_backend():
    return "hccl" if is_torch_npu_available() else "nccl"


def countdown(n=3):
    if n > 0:
        return countdown(n - 1)
    return 1e-4


class RunEnv:
    DEVICE = "npu" if is_torch_npu_available() else "cuda"
    DTYPE = torch.float16 if is_torch_npu_available() else torch.bfloat16
    TABLE = {"cuda": {"lr": 1e-4}, "npu": {"lr": 2e-4}}


def main(rank):
    local_lr = pick_lr()
    dev = f"npu:{rank}"
    table_lr = RunEnv.TABLE[RunEnv.DEVICE]["lr"]
    inline_lr = {"cuda": 1e-4, "npu": 2e-4}[RunEnv.DEVICE]
    twice = 1
    twice = 2
    from_twice = twice
    via_local = local_lr * 2
    a_backend = get_comm_backend()
    a_device = dev
    a_class_device = RunEnv.DEVICE
    a_named_device = platform.device_type
    a_helper_device = get_accel_device()
    a_named_rank = int(os.environ["LOCAL_RANK"])
    a_recursion = countdown()
"""


@pytest.mark.parametrize("target,gpu,npu", [
    ("local_lr", 1e-4, 2e-4),
    ("via_local", 2e-4, 4e-4),
    ("table_lr", 1e-4, 2e-4),
    ("inline_lr", 1e-4, 2e-4),
    ("a_backend", "nccl", "hccl"),
    ("a_class_device", "cuda", "npu"),
])
def test_a_value_flows_through_locals_helpers_classes_and_tables(target, gpu, npu):
    for side, want in (("gpu", gpu), ("npu", npu)):
        p = program(FLOW, side)
        assert value(p, expr_in(p, target)) == pytest.approx(want) if isinstance(want, float) else want


@pytest.mark.parametrize("target", ["from_twice", "a_recursion"])
def test_a_value_that_cannot_be_followed_is_unknown(target):
    p = program(FLOW, "npu")
    node = expr_in(p, target)
    with pytest.raises(NotLiteral):
        value(p, node)
    assert (read(p, node).value, read(p, node).kind) == (UNDECIDED, Kind.UNKNOWN)


def test_an_f_string_of_a_device_is_the_run_device_its_index_unknown():
    p = program(FLOW, "npu")
    v = value(p, expr_in(p, "a_device"))
    assert (type(v), str(v), v.exact, read(p, expr_in(p, "a_device")).kind) == (DevStr, "npu", False, Kind.DEVICE)


@pytest.mark.parametrize("target,what,known", [
    ("a_backend", "backend", True), ("a_device", "device", True), ("a_class_device", "device", True),
    ("a_named_device", "device", False), ("a_helper_device", "device", False), ("a_named_rank", "rank", False),
])
def test_what_a_value_is_for_the_run(target, what, known):
    p = program(FLOW, "gpu")
    r = role(p, expr_in(p, target))
    assert (r.what, r.known) == (what, known)


@pytest.mark.parametrize("name,got", [
    ("get_current_device", "device"), ("self._target_device", "device"), ("platform.device_type", "device"),
    ("dist_backend", "backend"), ("local_rank", "rank"), ("to_device", None), ("cpu_device", None),
    ("attn_backend", None), ("device_count", None),
])
def test_a_name_whose_value_is_not_known_is_of_a_kind_by_its_words(name, got):
    assert named(name) == got
    assert words("MMDistributedDataParallel") == ("mm", "distributed", "data", "parallel")


def test_helpers_called_past_the_bound_are_unknown(monkeypatch):
    monkeypatch.setattr(budget, "CALL_DEPTH", 3)
    text = "def h0():\n    return 1e-4\n" + "".join(f"def h{i}():\n    return h{i - 1}()\n" for i in range(1, 6)) + \
        "lr2 = h2()\nlr5 = h5()\n"
    p = program(text, "npu")
    assert value(p, p.consts["lr2"]) == 1e-4
    with pytest.raises(NotLiteral):
        value(p, p.consts["lr5"])


# ----------------------------------------------------------- per-device values, one file
BASE = '''\
"""Fine-tune a made-up model; one script for both devices."""
import torch
from transformers import is_torch_npu_available

DEVICE = "npu" if is_torch_npu_available() else "cuda"
SETTINGS = {"cuda": {"lr": 1e-4}, "npu": {"lr": 1e-4}}


def pick_lr():
    if is_torch_npu_available():
        return 1e-4
    return 1e-4


class RunEnv:
    LR = {"cuda": 1e-4, "npu": 1e-4}[DEVICE]


def main(model, loader):
    model.to(DEVICE)
    {use}
    for batch in loader:
        loss = model(batch.to(DEVICE)).mean()
        loss.backward()
        opt.step()
'''

USES = {
    "a helper that returns the rate on the device": (
        "opt = torch.optim.AdamW(model.parameters(), lr=pick_lr())",
        ("    if is_torch_npu_available():\n        return 1e-4", "    if is_torch_npu_available():\n        return 2e-4"),
        ("return 1e-4\n\n\nclass", "return 2e-4")),
    "a table indexed by the device": (
        'opt = torch.optim.AdamW(model.parameters(), lr=SETTINGS[DEVICE]["lr"])',
        ('"npu": {"lr": 1e-4}', '"npu": {"lr": 2e-4}'),
        ('SETTINGS = {', 'SETTINGS = {')),
    "a dict written in place, indexed by the device": (
        'opt = torch.optim.AdamW(model.parameters(), lr={"cuda": 1e-4, "npu": 1e-4}[DEVICE])',
        ('lr={"cuda": 1e-4, "npu": 1e-4}[DEVICE]', 'lr={"cuda": 1e-4, "npu": 2e-4}[DEVICE]'),
        ("opt = ", "opt = ")),
    "a class attribute": (
        "opt = torch.optim.AdamW(model.parameters(), lr=RunEnv.LR)",
        ('LR = {"cuda": 1e-4, "npu": 1e-4}[DEVICE]', 'LR = {"cuda": 1e-4, "npu": 2e-4}[DEVICE]'),
        ("LR = ", "LR = ")),
    "a local chosen by the device": (
        "step_lr = 1e-4 if is_torch_npu_available() else 1e-4\n"
        "    opt = torch.optim.AdamW(model.parameters(), lr=step_lr)",
        ("step_lr = 1e-4 if", "step_lr = 2e-4 if"),
        ("step_lr = ", "step_lr = ")),
}


@pytest.mark.parametrize("shape", sorted(USES))
def test_a_value_chosen_by_the_device_is_found_in_one_file(tmp_path, shape):
    use, drift, (gneedle, nneedle) = USES[shape]
    faithful = BASE.replace("{use}", use)
    assert loud(one_file(tmp_path / "faithful", faithful)) == []
    drifted = faithful.replace(*drift)
    assert drifted != faithful
    gline = line_of(drifted, gneedle) if shape != "a helper that returns the rate on the device" else \
        line_of(drifted, "    return 1e-4\n\n\nclass")
    nline = line_of(drifted, nneedle)
    assert loud(one_file(tmp_path / "drifted", drifted)) == [("SD202", "lr", 1e-4, 2e-4, gline, nline)]


RECURSIVE = """\
import torch
from transformers import is_torch_npu_available


def settle(n):
    if n > 0:
        return settle(n - 1)
    if is_torch_npu_available():
        return 2e-4
    return 1e-4


def main(model):
    return torch.optim.AdamW(model.parameters(), lr=settle(3))
"""


def test_a_recursive_helper_is_unknown_said_once_in_the_account_and_never_absent(tmp_path):
    r = one_file(tmp_path, RECURSIVE)
    said = f"`settle(3)` at line {line_of(RECURSIVE, 'return torch')}: settle() calls itself; its value is unknown"
    assert [(i["side"], i["unread"]) for i in r.to_json()["inputs"]] == [("gpu", [said]), ("npu", [said])]
    gpu = RECURSIVE.replace("lr=settle(3)", "lr=1e-4")
    got = pair(tmp_path / "pair", gpu, RECURSIVE)
    assert [f for f in got.findings if f.key == "lr"] == []  # unknown on the NPU: not "set on GPU only"
    npu_input = next(i for i in got.to_json()["inputs"] if i["side"] == "npu")
    assert npu_input["unread"] == [said, "1 setting(s) of the other side could not be compared: lr"]


def test_a_dtype_held_in_a_variable_is_the_precision_it_sets(tmp_path):
    text = BASE.replace("{use}", "dt = torch.bfloat16 if is_torch_npu_available() else torch.bfloat16\n"
                                 "    model.to(dt)")
    assert loud(one_file(tmp_path / "faithful", text)) == []
    drifted = text.replace("dt = torch.bfloat16 if", "dt = torch.float16 if")
    at = line_of(drifted, "dt = ")
    assert loud(one_file(tmp_path / "drifted", drifted)) == [("SD205", "params_dtype", "bf16", "fp16", at, at)]


# ------------------------------------------------------------- issue 40: long chains
def test_twenty_thousand_chained_device_aliases_are_read(tmp_path):
    n = 20_000
    text = "import torch\nfrom transformers import is_torch_npu_available\n" \
        'D0 = "npu" if is_torch_npu_available() else "cuda"\n' + "".join(f"D{i} = D{i - 1}\n" for i in range(1, n)) + \
        f"x = torch.zeros(3).to(D{n - 1})\n"
    r = one_file(tmp_path, text)
    assert (r.exit_code(), loud(r), len(r.masked)) == (0, [], n + 1)


def helpers(n: int, first: str) -> str:
    """A module of `n` helpers, each returning the one before, the first returning `first`."""
    return "import torch\nfrom transformers import is_torch_npu_available\n\n\ndef h0():\n" \
        f"    return {first}\n" + "".join(f"\n\ndef h{i}():\n    return h{i - 1}()\n" for i in range(1, n))


def test_helpers_chained_past_the_bound_leave_the_test_undecided_and_say_so(tmp_path):
    n = 500
    text = helpers(n, "is_torch_npu_available()") + f"\n\nif h{n - 1}():\n    x = 1\nelse:\n    x = 2\n"
    r = one_file(tmp_path, text)
    at = line_of(text, f"if h{n - 1}")
    assert [i["notes"] for i in r.to_json()["inputs"]] == [
        [f"device tests read for the {dev}: 0 decided, 1 not decided, compared as written (line {at}: h{n - 1}())"]
        for dev in ("GPU", "NPU")]
    assert (r.exit_code(), loud(r)) == (0, [])


def test_a_setting_read_through_helpers_past_the_bound_is_unknown_and_said(tmp_path):
    n = 500
    text = helpers(n, "2e-4 if is_torch_npu_available() else 1e-4") + \
        f"\n\ndef main(model):\n    return torch.optim.AdamW(model.parameters(), lr=h{n - 1}())\n"
    r = one_file(tmp_path, text)
    at = line_of(text, "return torch.optim")
    said = f"`h{n - 1}()` at line {at}: helpers called more than {budget.CALL_DEPTH} deep; its value is unknown"
    assert [i["unread"] for i in r.to_json()["inputs"]] == [[said], [said]]


def test_an_elif_chain_deeper_than_the_parser_takes_is_refused_with_its_reason(tmp_path):
    n = 10_000
    text = "import torch\nfrom transformers import is_torch_npu_available\n" \
        'DEVICE = "npu" if is_torch_npu_available() else "cuda"\nif DEVICE == "d0":\n    x = 0\n' + \
        "".join(f'elif DEVICE == "d{i}":\n    x = {i}\n' for i in range(1, n)) + "else:\n    x = -1\n"
    r = one_file(tmp_path, text)
    assert [e.message for e in r.errors][:1] and all("nested too deeply" in e.message for e in r.errors)
    shallow = text.split('elif DEVICE == "d190"')[0] + "else:\n    x = -1\n"
    r = one_file(tmp_path / "shallow", shallow)
    assert (r.exit_code(), loud(r), r.errors) == (0, [], [])

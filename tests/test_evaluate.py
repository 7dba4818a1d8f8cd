"""The one Python evaluator (scriptdiff/lang/python/evaluate/): values, device tests, constants,
argparse and dataclass defaults, and the kind of each value."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from scriptdiff.lang.python.evaluate import (UNDECIDED, DevStr, Kind, NotLiteral, QName, add_argument, constant,
                                             fields, kind_of, module_consts, option_default, read, value)
from scriptdiff.lang.python.parse import parse
from scriptdiff.lang.python.specialise import specialise

PROGRAM = """\
import os
import argparse
from dataclasses import dataclass, field
import torch
from transformers import is_torch_npu_available

IS_NPU = is_torch_npu_available()
DEVICE = "npu" if IS_NPU else "cuda"
DTYPES = {"npu": torch.float16, "cuda": torch.bfloat16}
CONFIG = {"lr": 1e-4, "eps": 1e-8}
STEPS = 1_000
BACKEND = "hccl" if IS_NPU else "nccl"

parser = argparse.ArgumentParser()
parser.add_argument("-w", "--warmup-steps", type=int, default=STEPS // 10)

@dataclass
class Args:
    seed: int = 1234
    beta: float = field(default=0.9, metadata={"help": "x"})
    name: str = field(default_factory=str)

args = parser.parse_args()
api_key = "abcdefgh12345678"

a_number = STEPS * 2 + 1
a_dict_entry = CONFIG["eps"]
a_device_entry = DTYPES[DEVICE]
an_option = args.warmup_steps
a_field = cfg.seed
an_env_default = float(os.environ.get("LR", "3e-4"))
a_test = is_torch_npu_available()
a_device = DEVICE
a_backend = BACKEND
a_rank = int(os.environ["RANK"])
a_world = int(os.environ.get("WORLD_SIZE", 1))
a_count = torch.cuda.device_count()
a_dtype = torch.bfloat16
a_name = torch.nn.Linear
a_secret = api_key
a_text = "out/run"
a_list = [1, 2.5, None]
unknown = load_config()
"""


def program(side: str):
    p = parse("train.py", PROGRAM)
    specialise(p, side)
    module_consts(p)
    return p


def at(p, name: str):
    return p.consts[name]


@pytest.mark.parametrize("name,npu,gpu", [
    ("a_number", 2001, 2001),
    ("a_dict_entry", 1e-8, 1e-8),
    ("a_device_entry", "torch.float16", "torch.bfloat16"),
    ("an_option", 100, 100),
    ("a_field", 1234, 1234),
    ("an_env_default", 3e-4, 3e-4),
    ("a_test", True, False),
    ("a_device", "npu", "cuda"),
    ("a_backend", "hccl", "nccl"),
    ("a_world", 1, 1),
    ("a_list", [1, 2.5, None], [1, 2.5, None]),
])
def test_a_value_on_each_device(name, npu, gpu):
    for side, want in (("npu", npu), ("gpu", gpu)):
        p = program(side)
        assert value(p, at(p, name)) == want


def test_the_names_a_value_is_read_through():
    p = program("npu")
    used: list = []
    assert value(p, at(p, "an_option"), used) == 100
    assert [n for n, _node in used] == ["--warmup_steps", "STEPS"]
    used = []
    assert value(p, at(p, "a_device_entry"), used) == "torch.float16"
    assert [n for n, _node in used] == ["DTYPES['npu']"]


@pytest.mark.parametrize("name", ["a_rank", "a_count", "unknown"])
def test_a_value_not_known_statically(name):
    p = program("npu")
    with pytest.raises(NotLiteral):
        value(p, at(p, name))


@pytest.mark.parametrize("name,kind,npu", [
    ("a_number", Kind.NUMBER, 2001),
    ("a_test", Kind.FLAG, True),
    ("a_device", Kind.DEVICE, "npu"),
    ("a_backend", Kind.BACKEND, "hccl"),
    ("a_rank", Kind.RANK, UNDECIDED),
    ("a_world", Kind.WORLD_SIZE, 1),
    ("a_count", Kind.WORLD_SIZE, UNDECIDED),
    ("a_device_entry", Kind.DTYPE, "torch.float16"),
    ("a_name", Kind.NAME, "torch.nn.Linear"),
    ("a_secret", Kind.SECRET, "abcdefgh12345678"),
    ("a_text", Kind.TEXT, "out/run"),
    ("a_list", Kind.LIST, [1, 2.5, None]),
    ("unknown", Kind.UNKNOWN, UNDECIDED),
])
def test_what_a_value_is(name, kind, npu):
    p = program("npu")
    got = read(p, at(p, name))
    assert (got.kind, got.value) == (kind, npu)


def test_a_kind_flows_through_a_module_constant():
    p = program("gpu")
    assert read(p, cst.parse_expression("a_rank")).kind is Kind.RANK
    assert read(p, at(p, "a_device")) == ("cuda", Kind.DEVICE, ())  # the device face answered for DEVICE
    assert read(p, at(p, "a_world")) == (1, Kind.WORLD_SIZE, ("$WORLD_SIZE",))


def test_kind_of_plain_values():
    assert [kind_of(v) for v in (True, 3, 0.5, None, "x", (1,), UNDECIDED)] == [
        Kind.FLAG, Kind.NUMBER, Kind.NUMBER, Kind.NONE, Kind.TEXT, Kind.LIST, Kind.UNKNOWN]
    assert kind_of(DevStr.of("npu", False)) is Kind.DEVICE
    assert (kind_of(QName("torch.half")), kind_of(QName("torch.optim.AdamW"))) == (Kind.DTYPE, Kind.NAME)


def test_constants_of_a_declaration():
    expr = cst.parse_expression
    assert [constant(expr(x)) for x in ("True", "False", "None", "'--lr'", "'a' 'b'")] == [
        True, False, None, "--lr", "ab"]
    assert repr(constant(expr("flag"))) == "MISSING" and repr(constant(expr("1"))) == "MISSING"


def test_argparse_and_dataclass_declarations():
    p = program("npu")
    call = next(c for c in p.state.calls if isinstance(c.func, cst.Attribute) and c.func.attr.value == "add_argument")
    strings, kws, dest = add_argument(call)
    assert (strings, sorted(kws), dest) == (["-w", "--warmup-steps"], ["default", "type"], "warmup_steps")
    cls = next(st.node for st in p.body if isinstance(st.node, cst.ClassDef))
    got = [(name, p.code(v) if v is not None else None, sorted(kws)) for _s, name, v, kws in fields(cls)]
    assert got == [("seed", "1234", []), ("beta", "0.9", ["default", "metadata"]), ("name", None, ["default_factory"])]
    assert option_default(p, at(p, "a_field"))[0] == "Args.seed"
    assert option_default(p, at(p, "an_option"))[0] == "--warmup_steps"
    assert option_default(p, cst.parse_expression("args.name")) is None  # a field without a default


def test_a_device_test_the_file_does_not_decide_is_not_a_value():
    text = textwrap.dedent("""\
        import torch
        USE = torch.cuda.is_available() and big_enough()
        x = USE
        """)
    p = parse("t.py", text)
    specialise(p, "npu")
    module_consts(p)
    got = read(p, p.consts["x"])
    assert (got.value, got.kind) == (UNDECIDED, Kind.UNKNOWN)

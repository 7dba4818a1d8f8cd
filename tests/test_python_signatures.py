"""Issue 14, row 2: calls with a known signature (rules/signatures.yaml) are compared by what
they bind, positional against keyword and defaults made explicit; the port is masked and
what really differs is one finding per call."""
from __future__ import annotations

import pytest
from test_python_values import run  # the pair written to gpu/ and npu/ and diffed
from test_rule_validators import load_with as load_pack_with

from scriptdiff.ruleset.rulepack import RuleError


HEAD = "import torch\nimport torch.distributed as dist\n\n\ndef setup(rank, world_size):\n"


def test_init_process_group_positional_vs_keyword_is_one_finding(tmp_path):
    r = run(tmp_path, HEAD + '    dist.init_process_group("nccl")\n',
            HEAD.replace("import torch\n", "import torch\nimport torch_npu\n", 1)
            + '    dist.init_process_group(backend="hccl", rank=rank, world_size=world_size)\n')
    assert r.errors == []
    assert [(f.rule, f.severity, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line, f.message)
            for f in r.findings] == [
        ("SD102", "warning", "code:ppo.py:setup", "world_size=-1 (default), rank=-1 (default)",
         "world_size=world_size, rank=rank", 6, 7,
         "torch.distributed.init_process_group: arguments world_size, rank differ "
         "(bound to its signature, defaults included)")]
    assert sorted(m.rule for m in r.masked) == ["SD005", "SD006"]


def test_positional_vs_keyword_with_the_same_value_is_the_same_call(tmp_path):
    r = run(tmp_path, HEAD + '    dist.init_process_group("nccl", world_size=world_size, rank=rank)\n'
                             '    drop = torch.nn.Dropout(0.1)\n'
                             '    loader = torch.utils.data.DataLoader(ds, 8, shuffle=True)\n',
            HEAD + '    dist.init_process_group(backend="hccl", rank=rank, world_size=world_size)\n'
                   '    drop = torch.nn.Dropout(p=0.1, inplace=False)\n'
                   '    loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=0)\n')
    assert r.findings == []
    assert [m.rule for m in r.masked] == ["SD005"]


def test_a_default_made_explicit_with_another_value_is_reported(tmp_path):
    r = run(tmp_path, HEAD + "    drop = torch.nn.Dropout(0.1)\n",
            HEAD + "    drop = torch.nn.Dropout(0.1, inplace=True)\n")
    assert [(f.rule, f.gpu.value, f.npu.value, f.message) for f in r.findings] == [
        ("SD101", None, True, "torch.nn.Dropout: argument inplace is given on NPU only")]


def test_one_changed_argument_keeps_its_own_message(tmp_path):
    r = run(tmp_path, HEAD + "    drop = torch.nn.Dropout(0.1)\n", HEAD + "    drop = torch.nn.Dropout(p=0.2)\n")
    assert [(f.rule, f.gpu.value, f.npu.value, f.message) for f in r.findings] == [
        ("SD101", 0.1, 0.2, "torch.nn.Dropout: argument p differs")]


def load_with(tmp_path, old: str, new: str):
    return load_pack_with(tmp_path, "signatures.yaml", old, new)


def test_the_shipped_signatures_load(tmp_path):
    rs = load_with(tmp_path, "call_signatures:", "call_signatures:")
    assert rs.section("call_signatures")["torch.nn.Dropout"]["defaults"] == {"p": 0.5, "inplace": False}


@pytest.mark.parametrize("old,new,needle", [
    ("    defaults: {p: 0.5, inplace: false}", "    defaults: {q: 0.5}", "defaults: 'q' is not one of its params"),
    ("    params: [p, inplace]", "    params: [p, p]", "params repeats a name"),
    ("    source: https://pytorch.org/docs/stable/generated/torch.nn.Dropout.html", "    source: ''",
     "rules/signatures.yaml:29: call_signatures.torch.nn.Dropout.source: expected a source (where the signature is "
     "documented) (got '')"),
    ("  torch.nn.Dropout:\n", "  torch.nn.Dropout:\n    oops: 1\n", "rules/signatures.yaml:27: call_signatures.torch.nn.Dropout: unknown field(s) oops (known: params, defaults, "
     "env_defaults, source)"),
])
def test_malformed_signatures_name_the_pack(tmp_path, old, new, needle):
    with pytest.raises(RuleError) as e:
        load_with(tmp_path, old, new)
    assert "signatures.yaml" in str(e.value) and needle in str(e.value)

"""Where each value is written: the provenance the readers record for `scriptdiff fix` (issue 29).

Python facts carry the libcst position of the literal they were read from (followed through
constants, option defaults, dict entries, this device's branch), or why there is none; launch
options the byte spans of their flag and value words (through variables, inside strings of
flags); config facts their path in the file, which the loaders' spans locate."""
from __future__ import annotations

import pytest

from scriptdiff.inputs import yamlload
from scriptdiff.inputs.jsonload import spans_json
from scriptdiff.lang.toml import value_spans
from scriptdiff.model import Options, SideContext
from scriptdiff.run.pipeline import diff_files
from scriptdiff.inputs.sources import Source, overlaid, read_path


def _facts(name: str, text: str, side: str = "npu") -> dict:
    from scriptdiff.run.engine import extract

    ex = extract(Source(name=name, data=text.encode()), SideContext(side, options=Options(use_cache=False)))
    out: dict = {}
    for f in ex.facts:
        out.setdefault(f.key, f)
    return out


# ------------------------------------------------------------------------------ Python

PY = '''import os
import torch
from transformers import is_torch_npu_available

LR = 3e-4
WARM = LR
CFG = {"wd": 0.05}
DT = torch.float16 if is_torch_npu_available() else torch.bfloat16


def opt(m, args):
    torch.optim.AdamW(m.parameters(), lr=WARM, betas=(0.9, 0.95), weight_decay=CFG["wd"],
                      eps=float(os.environ.get("EPS", "1e-8")))
    torch.nn.utils.clip_grad_norm_(m.parameters(), 2.0 * 0.5)
    with torch.autocast("npu", dtype=DT):
        pass
'''


@pytest.mark.parametrize("key,origin", [
    ("lr", {"pos": [5, 5], "node": "Float", "code": "3e-4", "via": ["WARM", "LR"]}),
    ("adam_beta2", {"pos": [12, 59], "node": "Float", "code": "0.95", "via": []}),
    ("weight_decay", {"pos": [7, 13], "node": "Float", "code": "0.05", "via": ["CFG[...]"]}),
    ("params_dtype", {"pos": [8, 5], "node": "Attribute", "code": "torch.float16", "via": ["DT"]}),
    ("adam_eps", {"environment": "EPS"}),
    ("clip_grad", {"computed": "`2.0 * 0.5` is computed"}),
])
def test_python_facts_say_where_their_literal_is(key, origin):
    f = _facts("train.py", PY)[key]
    assert f.meta["origin"] == origin
    if "pos" in origin:  # the position is the literal's, in the file
        line, col = origin["pos"]
        assert PY.splitlines()[line - 1][col:].startswith(origin["code"])


def test_a_constant_assigned_twice_is_ambiguous():
    f = _facts("train.py", "import torch\nLR = 1e-4\nLR = 2e-4\ntorch.optim.AdamW(p, lr=LR)\n")["lr"]
    assert f.meta["origin"] == {"ambiguous": "LR is assigned more than once at module level"}


def test_python_facts_of_a_call_say_where_the_call_is():
    f = _facts("train.py", PY)["adam_beta2"]
    assert f.meta["call"] == [12, 4]


# ------------------------------------------------------------------------------ shell

SH = '''TP=4
LR="2.5e-6"
ARGS=(
    --tensor-model-parallel-size "$TP"
    --lr=$LR
)
OPTS="
    --seed 42 \\
    --use-flash-attn \\
    --data-path a\\"b
"
torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}" $OPTS --micro-batch-size '2' --hidden-size $((8*16))
'''


def _span(text: str, span) -> str:
    data = text.encode()
    return data[span[0]:span[1]].decode()


@pytest.mark.parametrize("key,flag,value", [
    ("tensor_model_parallel_size", "--tensor-model-parallel-size", "4"),  # the value where TP is set
    ("lr", None, "2.5e-6"),  # inside the quotes of LR's assignment (--lr=$LR: no one span)
    ("seed", "--seed", "42"),  # in a string of flags continued with backslashes
    ("use_flash_attn", "--use-flash-attn", None),
    ("micro_batch_size", "--micro-batch-size", "2"),  # inside single quotes
    ("hidden_size", "--hidden-size", None),  # $((...)): computed, no span
])
def test_launch_options_say_where_their_words_are(key, flag, value):
    m = _facts("run.sh", SH)[key].meta["shell"]
    assert (_span(SH, m["flag"]) if m["flag"] else None) == flag
    assert (_span(SH, m["value"]) if m["value"] else None) == value


def test_an_escaped_word_has_no_span():
    m = _facts("run.sh", SH)["data_path"].meta["shell"]
    assert m["value"] is None and m["value_text"] == 'a"b'


def test_launch_options_are_numbered_in_command_order():
    facts = _facts("run.sh", SH)
    order = sorted(("tensor_model_parallel_size", "lr", "seed", "use_flash_attn", "micro_batch_size"),
                   key=lambda k: facts[k].meta["shell"]["word"])
    assert order == ["tensor_model_parallel_size", "lr", "seed", "use_flash_attn", "micro_batch_size"]


# ------------------------------------------------------------------------------ configs

def test_yaml_spans_keep_keys_values_and_quoting():
    text = "a: 1  # c\nb:\n  c: 'x'\n  d: [1, 2]\nm: &m {k: 1}\nn: *m\n"
    s = yamlload.spans(text)
    assert text[slice(*s[("a",)]["value"])] == "1" and text[slice(*s[("a",)]["key"])] == "a"
    assert (text[slice(*s[("b", "c")]["value"])], s[("b", "c")]["style"]) == ("'x'", "'")
    assert s[("b",)]["block"] and not s[("b", "d")]["block"] and s[("b", "d", 1)]["flow"]
    assert ("n",) not in s and ("m",) not in s and ("m", "k") not in s  # an anchor and its alias: no one place


def test_json_and_toml_spans():
    text = '{"a": {"b": 1.0e-8, "c": [1, 2]}, "d": "x"}'
    s = spans_json(text)
    assert (text[s[("a", "b")][0]:s[("a", "b")][0] + 3], text[s[("a", "b")][1]:s[("a", "b")][2]]) == ('"b"', "1.0e-8")
    assert text[s[("a", "c", 1)][1]:s[("a", "c", 1)][2]] == "2" and s[("a", "c", 1)][0] is None
    toml = "[opt]\nlr = 3e-4  # c\nname = 'x # y'\narr = [\n  1,\n]\n"
    t = value_spans(toml)
    assert toml[slice(*t[("opt", "lr")]["value"])] == "3e-4"
    assert toml[slice(*t[("opt", "name")]["value"])] == "'x # y'"
    assert t[("opt", "arr")]["value"] is None and toml[slice(*t[("opt", "arr")]["line"])] == "arr = [\n  1,\n]\n"


def test_config_facts_say_their_path_in_the_file():
    assert _facts("ds.json", '{"optimizer": {"params": {"betas": [0.9, 0.95]}}}')["adam_beta2"].meta["cpath"] == \
        ["optimizer", "params", "betas", 1]
    assert _facts("train.toml", "[optimizer]\nlr = 3e-4\n")["lr"].meta["cpath"] == ["optimizer", "lr"]


# ------------------------------------------------------------------------------ the run

def test_only_keep_facts_keeps_sources_and_tables(fixtures):
    g, n = str(fixtures / "example/gpu/train.py"), str(fixtures / "example/npu/train.py")
    plain = diff_files([g], [n], Options())
    kept = diff_files([g], [n], Options(keep_facts=True))
    assert (plain.sources, plain.unit_tables) == ({}, [])
    assert sorted(kept.sources) == [("gpu", g), ("npu", n)] and len(kept.unit_tables) == 1
    f = next(x for x in kept.findings if x.key == "adam_beta2")
    assert f.npu.fact.meta["origin"]["code"] == "0.999" and "fact" not in f.npu.to_json()


def test_overlaid_files_read_as_given_inside_the_block_only(tmp_path):
    p = tmp_path / "a.sh"
    p.write_text("old\n")
    with overlaid({str(p): b"new\n"}):
        assert read_path(str(p)).data == b"new\n"
    assert read_path(str(p)).data == b"old\n"

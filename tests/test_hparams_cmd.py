"""`scriptdiff hparams`: the effective table (text and JSON), logs outranking scripts, derivations."""
from __future__ import annotations

import json
from pathlib import Path

from scriptdiff.checks.hparams import derive
from scriptdiff.run.compare import FactTable
from scriptdiff.model import SideContext
from scriptdiff.lang import runlog as megatron_log
from scriptdiff.model import Fact
from scriptdiff.inputs.sources import Source

from conftest import run_cli

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "launch"
MEG = FIX / "megatron"
LOG = FIX / "megatron_log"
PRECHECK = ["lr", "global_batch_size", "micro_batch_size", "gradient_accumulation_steps", "data_parallel_size",
            "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
            "expert_model_parallel_size", "sequence_parallel", "lr_warmup_iters", "lr_warmup_fraction", "num_layers",
            "hidden_size", "seq_length", "use_flash_attn", "params_dtype", "seed"]


def test_json_table_lists_every_precheck_key_with_origin():
    code, out, err = run_cli("hparams", str(MEG / "gpu/pretrain_llama2_7b.sh"), str(MEG / "npu/pretrain_llama2_7b.sh"),
                             "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert {"schema", "tool", "gpu", "npu", "findings", "masked", "errors", "table"} <= set(doc)
    rows = {r["key"]: r for r in doc["table"]}
    assert [r["key"] for r in doc["table"]][:len(PRECHECK)] == PRECHECK
    lr = rows["lr"]
    assert lr["equal"] and lr["gpu"]["value"] == 1.25e-06 and lr["gpu"]["line"] == 25 and lr["gpu"]["via"] == "$LR in $GPT_ARGS"
    assert lr["npu"]["via"] == "$LR in $GPT_ARGS" and lr["npu"]["line"] == 26
    dp = rows["data_parallel_size"]
    assert dp["derived"] and dp["gpu"]["origin"] == "derived" and dp["gpu"]["value"] == 2 and dp["gpu"]["line"] is None
    assert rows["gradient_accumulation_steps"]["gpu"]["value"] == 32
    assert rows["context_parallel_size"]["gpu"]["origin"] == "default" and rows["context_parallel_size"]["gpu"]["value"] == 1
    assert rows["seed"]["gpu"]["value"] == 42 and rows["params_dtype"]["npu"]["value"] == "bf16"
    assert rows["use_flash_attn"]["npu"]["value"] is True
    assert rows["world_size"]["gpu"]["value"] == 8
    assert not any(k.startswith("env:") for k in rows)


def test_json_table_notes_commented_flags():
    code, out, err = run_cli("hparams", str(MEG / "gpu/pretrain_llama2_7b.sh"), str(MEG / "npu_injected/pretrain_llama2_7b.sh"),
                             "--format", "json")
    rows = {r["key"]: r for r in json.loads(out)["table"]}
    seed = rows["seed"]
    assert (seed["npu"]["value"], seed["npu"]["origin"], seed["npu"]["note"]) == (1234, "default", "commented out at line 74")
    assert not seed["equal"]


def test_text_table():
    code, out, err = run_cli("hparams", str(MEG / "gpu/pretrain_llama2_7b.sh"), str(MEG / "npu_injected/pretrain_llama2_7b.sh"),
                             "--color", "never")
    assert code == 1
    for key in PRECHECK:
        assert key in out.replace("\n", "")
    assert "E SD202" in out and "E SD207" in out and "commented" in out
    # piped: 100 columns, the origin column wraps ("default (megatron default)" over two lines)
    assert "derived:" in out and max(len(x) for x in out.splitlines() if x[:1] in "┏│└") == 100
    code, md, err = run_cli("hparams", str(MEG / "gpu/pretrain_llama2_7b.sh"),
                            str(MEG / "npu_injected/pretrain_llama2_7b.sh"), "-f", "markdown")
    assert code == 1 and "| default (megatron default) |" in md


def test_log_outranks_scripts_and_several_files_per_side():
    code, out, err = run_cli("hparams", str(MEG / "gpu/pretrain_llama2_7b.sh"), str(LOG / "gpu_train.log"), "vs",
                             str(MEG / "npu/pretrain_llama2_7b.sh"), str(LOG / "npu_train.log"), "--format", "json")
    doc = json.loads(out)
    assert code == 1
    assert [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"], f["gpu"]["line"], f["npu"]["line"])
            for f in doc["findings"] if f["severity"] != "info"] == [("SD207", "seed", 42, 1234, 18, 18)]
    rows = {r["key"]: r for r in doc["table"]}
    assert rows["seed"]["npu"]["path"].endswith("npu_train.log")
    assert rows["data_parallel_size"]["gpu"]["origin"] == "explicit"  # the log said so: not re-derived
    assert any(m["rule"] == "SD011" for m in doc["masked"])  # log: nccl vs hccl


def test_bad_invocation_exits_2():
    code, out, err = run_cli("hparams", "a.sh", "b.sh", "c.sh")
    assert code == 2 and err == ("scriptdiff: hparams: 3 paths and no `vs`: which are GPU and which NPU? give "
                                 "`hparams GPU NPU` or `hparams GPU... vs NPU...`\n")


def test_unreadable_input_is_one_line(tmp_path):
    code, out, err = run_cli("hparams", str(tmp_path / "nope.sh"), str(MEG / "npu/pretrain_llama2_7b.sh"))
    assert code == 2 and "no such file" in err and "Traceback" not in err + out


def test_log_without_arguments_block():
    ex = megatron_log.extract(Source(name="x.log", data=b"iteration 1 | loss 3.2\n"), SideContext("gpu"))
    assert ex.facts == [] and ex.errors[0].message.startswith("no Megatron 'arguments' block")


def test_log_values_are_typed():
    text = ("------------------------ arguments ------------------------\n"
            "  lr .................. 0.0001\n  params_dtype ........ torch.float16\n  use_flash_attn ...... False\n"
            "  data_path ........... ['1.0', 'a']\n  vocab_file .......... None\n"
            "-------------------- end of arguments ---------------------\n  seed ....... 9\n")
    ex = megatron_log.extract(Source(name="x.log", data=text.encode()), SideContext("gpu"))
    f = {x.key: x for x in ex.facts}
    assert f["lr"].value == 1e-4 and f["params_dtype"].value == "fp16" and f["use_flash_attn"].value is False
    assert f["data_path"].value == ["1.0", "a"] and "vocab_file" not in f and "seed" not in f
    assert f["lr"].line == 2


def _table(**kv):
    t = FactTable(frameworks={"megatron"})
    for k, v in kv.items():
        t.add(Fact(key=k, value=v))
    return t


def test_derive_dp_and_gas():
    t = _table(world_size=16, tensor_model_parallel_size=2, pipeline_model_parallel_size=2, global_batch_size=64,
               micro_batch_size=2)
    derive(t)
    assert t.get("data_parallel_size").value == 4 and t.get("data_parallel_size").derived
    assert t.get("gradient_accumulation_steps").value == 8
    assert "global_batch_size=64" in t.get("gradient_accumulation_steps").via


def test_derive_keeps_explicit_and_skips_unknown():
    t = _table(world_size=8, data_parallel_size=2, global_batch_size=64, micro_batch_size=1)
    derive(t)
    assert not t.get("data_parallel_size").derived and t.get("gradient_accumulation_steps").value == 32
    t = _table(global_batch_size=64, micro_batch_size=1)
    derive(t)
    assert t.get("gradient_accumulation_steps") is None  # no world size: nothing guessed
    t = _table(world_size=6, tensor_model_parallel_size=4)
    derive(t)
    assert t.get("data_parallel_size") is None  # not divisible: not derived


def test_derive_global_batch_for_hf():
    t = FactTable(frameworks={"hf"})
    t.add(Fact(key="world_size", value=8))
    t.add(Fact(key="micro_batch_size", value=4))
    derive(t)
    assert t.get("global_batch_size").value == 32  # gradient_accumulation_steps: HF default 1

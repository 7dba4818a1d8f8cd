"""Launch-script evaluation (lang/shell/): assignments in order, expansions, launchers, flags."""
from __future__ import annotations

import pytest

from scriptdiff.model import SideContext
from scriptdiff.lang import shell
from scriptdiff.ruleset.secrets import withheld
from scriptdiff.inputs.sources import Source


def facts(text: str, side: str = "gpu", name: str = "pretrain.sh", origin=None):
    src = Source(name=name, data=text.encode(), origin=origin)
    ex = shell.extract(src, SideContext(side))
    return ex, {f.key: f for f in ex.facts}


def val(text: str, key: str):
    return facts(text)[1][key].value


def test_defaults_and_braces():
    ex, f = facts('GPUS=${GPUS:-4}\nNN=${NNODES:=2}\ntorchrun --nproc_per_node $GPUS --nnodes ${NN} pretrain_gpt.py --lr 1e-4\n')
    assert f["world_size"].value == 8
    assert "nproc_per_node * nnodes" in f["world_size"].via


def test_default_not_used_when_set():
    assert val('X=3\nY=${X:-9}\ntorchrun pretrain_gpt.py --seed $Y\n', "seed") == 3


def test_arithmetic_on_known_values():
    text = 'A=4\nB=2\nC=$(( A * B + 1 ))\ntorchrun pretrain_gpt.py --global-batch-size $((C*8)) --micro-batch-size $C\n'
    ex, f = facts(text)
    assert f["global_batch_size"].value == 72 and f["micro_batch_size"].value == 9


def test_arithmetic_on_unknown_value_is_unresolved():
    ex, f = facts('torchrun pretrain_gpt.py --global-batch-size $((N*8))\n')
    assert f["global_batch_size"].meta["unresolved"] == ["N"]


def test_unresolved_variable_is_kept_not_guessed():
    ex, f = facts('torchrun pretrain_gpt.py --lr $LR --data-path "$DATA_DIR/x" --load $(pwd)/ckpt\n')
    assert f["lr"].value == "$LR" and f["lr"].meta["unresolved"] == ["LR"]
    assert f["data_path"].value == "$DATA_DIR/x"
    assert f["load"].meta["unresolved"] == ["$(pwd)"]


def test_later_assignment_wins_and_append():
    text = 'LR=1e-4\nLR=3e-4\nA=(--seed 1)\nA+=(--clip-grad 0.5)\nS="--lr $LR"\nS+=" --bf16"\ntorchrun pretrain_gpt.py "${A[@]}" $S\n'
    ex, f = facts(text)
    assert f["lr"].value == 3e-4 and f["lr"].line == 2
    assert f["seed"].value == 1 and f["clip_grad"].value == 0.5 and f["params_dtype"].value == "bf16"


def test_quoted_string_is_one_word_and_unquoted_is_split():
    ex, f = facts('S="--lr 1e-4"\ntorchrun pretrain_gpt.py $S "--seed" "42"\n')
    assert f["lr"].value == 1e-4 and f["seed"].value == 42


def test_multiline_string_with_continuations_and_lines():
    text = 'ARGS="\n    --num-layers 32 \\\n    --hidden-size 4096 \\\n    --swiglu\n"\ntorchrun pretrain_gpt.py $ARGS\n'
    ex, f = facts(text)
    assert (f["num_layers"].value, f["num_layers"].line) == (32, 2)
    assert (f["hidden_size"].value, f["hidden_size"].line) == (4096, 3)
    assert (f["swiglu"].value, f["swiglu"].line, f["swiglu"].via) == (True, 4, "$ARGS")


def test_commented_line_inside_flag_string():
    text = 'ARGS="\n    --lr 1e-4\n    # --seed 42\n"\ntorchrun pretrain_gpt.py $ARGS\n'
    ex, f = facts(text)
    assert f["seed"].meta.get("commented") and f["seed"].note == "commented out at line 3"
    assert "lr" in f and ex.errors == []


def test_comment_inside_continued_command_is_read_as_intended_with_a_notice():
    text = 'torchrun pretrain_gpt.py \\\n    --lr 1e-4 \\\n#    --seed 42 \\\n    --bf16\n'
    ex, f = facts(text)
    assert f["params_dtype"].value == "bf16" and f["params_dtype"].line == 4
    assert f["seed"].note == "commented out at line 3"
    assert len(ex.errors) == 1 and "comment line inside a continued command" in ex.errors[0].message


def test_bool_flags_no_forms_and_negative_numbers():
    ex, f = facts('torchrun pretrain_gpt.py --no-masked-softmax-fusion --no-load-optim --foo-bar -1 --use-flash-attn\n')
    assert f["masked_softmax_fusion"].value is False
    assert f["no_load_optim"].value is True
    assert f["foo_bar"].value == -1
    assert f["use_flash_attn"].value is True


def test_unknown_flags_keep_megatron_style_name():
    ex, f = facts('torchrun pretrain_gpt.py --use-fused-rmsnorm --my-new-knob=3\n')
    assert f["use_fused_rmsnorm"].value is True and f["my_new_knob"].value == 3


@pytest.mark.parametrize("cmd,world", [
    ("torchrun --nproc_per_node=4 --nnodes=2 pretrain_gpt.py --lr 1", 8),
    ("python -m torch.distributed.launch --nproc_per_node 8 pretrain_gpt.py --lr 1", 8),
    ("python3 -m torch.distributed.run --nproc-per-node 2 pretrain_gpt.py --lr 1", None),
    ("deepspeed --num_gpus 4 --num_nodes 2 train.py --learning_rate 1", 8),
    ("deepspeed --include localhost:0,1,2 train.py --learning_rate 1", 3),
    ("accelerate launch --multi_gpu --num_processes 16 train.py --learning_rate 1", 16),
    ("msrun --worker_num 8 --local_worker_num 8 --master_port 8118 train.py --lr 1", 8),
])
def test_launchers(cmd, world):
    ex, f = facts(cmd + "\n")
    if world is None:  # --nproc-per-node spelled with dashes: also read
        assert f["world_size"].value == 2
    else:
        assert f["world_size"].value == world
    assert ("lr" in f) and not any(k in f for k in ("nproc_per_node", "num_gpus", "num_processes", "nnodes"))


def test_python_plain_and_unbuffered():
    ex, f = facts("python -u finetune.py --learning_rate 1e-5 --bf16 True --fp16 False\n")
    assert f["lr"].value == 1e-5 and f["params_dtype"].value == "bf16"
    assert ex.frameworks == {"hf", "one_process"}  # a script python starts itself: one process


def test_megatron_framework_detected():
    ex, f = facts("torchrun pretrain_gpt.py --lr 1e-4\n")
    assert ex.frameworks == {"megatron"}


def test_hydra_overrides():
    text = 'python3 -m verl.trainer.main_ppo data.train_batch_size=256 +trainer.val_before_train=False "trainer.logger=[console,wandb]"\n'
    ex, f = facts(text)
    assert f["global_batch_size"].value == 256  # the verl dialect (rules/verl.yaml)
    assert f["trainer.val_before_train"].value is False
    assert f["report_to"].value == ["console", "wandb"]  # trainer is a neutral section (rules/aliases.yaml)


def test_env_exports_and_prefix_assignments():
    text = ('export ASCEND_RT_VISIBLE_DEVICES=0,1\nexport HCCL_DETERMINISTIC=true\nX=1\nexport X\n'
            'TASK_QUEUE_ENABLE=2 torchrun pretrain_gpt.py --lr 1\n')
    ex, f = facts(text, side="npu")
    d = f["env:CUDA_VISIBLE_DEVICES"]
    assert (d.value, d.check, d.meta["name"], d.meta["mask"]) == ("0,1", "environment", "ASCEND_RT_VISIBLE_DEVICES", "SD010")
    assert f["env:NCCL_DETERMINISTIC"].meta["name"] == "HCCL_DETERMINISTIC"
    assert f["env:X"].value == "1" and f["env:X"].meta["role"] == "plain"
    assert f["env:TASK_QUEUE_ENABLE"].meta["role"] == "npu_tuning"


def test_secret_values_are_never_written():
    ex, f = facts("export WANDB_API_KEY=abc123supersecret\nexport HF_TOKEN=hf_xyz\ntorchrun pretrain_gpt.py\n")
    for k, raw in (("env:WANDB_API_KEY", "abc123supersecret"), ("env:HF_TOKEN", "hf_xyz")):
        assert f[k].value == withheld(raw) and f[k].value.startswith("<withheld: secret-looking value ")
        assert f[k].source == f"export {k[4:]}=<withheld>"
        assert raw not in f[k].value


def test_sourced_set_env_is_an_npu_tuning_fact():
    ex, f = facts("source /usr/local/Ascend/ascend-toolkit/set_env.sh\ntorchrun pretrain_gpt.py\n")
    assert f["env:source set_env.sh"].meta["role"] == "npu_tuning"


def test_distributed_backend_nccl_on_npu_carries_the_mask():
    ex, f = facts("torchrun pretrain_gpt.py --distributed-backend nccl\n", side="npu")
    assert f["distributed_backend"].meta["mask"] == "SD011"


def test_partial_parse_analyses_what_parsed():
    text = ('#!/bin/bash\nLR=1e-4\nif [ "$X" == 1 ; then\n  echo (( broken\nfi\n'
            'torchrun --nproc_per_node 8 pretrain_gpt.py --lr $LR --seed 42\n')
    ex, f = facts(text)
    assert f["lr"].value == 1e-4 and f["seed"].value == 42 and f["world_size"].value == 8
    assert [e.message for e in ex.errors] == [
        "shell syntax error at line(s) 3-4; those lines were not analysed, the rest of the script was"]


def test_garbage_never_raises():
    for text in ("\x00\x01", "$((", "${", "torchrun $(( ))", "a=(", "'unterminated", "torchrun --lr=\n", "((((" * 200):
        shell.extract(Source(name="x.sh", data=text.encode()), SideContext("gpu"))


def test_references_recorded_and_existence(tmp_path):
    (tmp_path / "ds.json").write_text("{}")
    script = tmp_path / "run.sh"
    text = "deepspeed train.py --deepspeed ds.json --config missing.yaml --learning_rate 1\n"
    ex, f = facts(text, origin=str(script))
    # the program a launcher starts is part of the run: a reference too
    assert ex.references == [("ds.json", 1, "deepspeed"), ("missing.yaml", 1, "config"), ("train.py", 1, "program")]
    assert f["config:deepspeed"].meta["exists"] is True and f["config:config"].meta["exists"] is False


def test_random_input_never_raises():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    alphabet = st.sampled_from(list("ab=$(){}[]\"'\\\n #-:+*/@.0123456789") + ["torchrun ", "--lr ", "${X:-", "$((",
                                                                               "export ", "ARR=(", "python -m "])

    @settings(max_examples=150, deadline=None, database=None)
    @given(st.lists(alphabet, max_size=60).map("".join))
    def check(text):
        ex = shell.extract(Source(name="x.sh", data=text.encode()), SideContext("npu"))
        for f in ex.facts:
            assert f.key and f.path == "x.sh"

    check()


def test_launcher_inside_a_called_function():
    text = 'run() {\n  torchrun pretrain_gpt.py --lr $LR\n}\nLR=2e-4\nrun\nfunction never { torchrun pretrain_gpt.py --seed 1; }\n'
    ex, f = facts(text)
    assert f["lr"].value == 2e-4 and f["lr"].line == 4 and "seed" not in f and ex.errors == []


def test_recursive_function_terminates():
    ex, f = facts("f() { f; torchrun pretrain_gpt.py --lr 1; }\nf\n")
    assert f["lr"].value == 1


def test_positional_configs_and_llamafactory_cli(tmp_path):
    (tmp_path / "sft.yaml").write_text("learning_rate: 1e-4\n")
    ex, f = facts("FORCE_TORCHRUN=1 llamafactory-cli train sft.yaml learning_rate=2e-4\n", origin=str(tmp_path / "run.sh"))
    assert ex.references == [("sft.yaml", 1, "config")] and f["config:config"].meta["exists"] is True
    assert f["lr"].value == 2e-4 and f["env:FORCE_TORCHRUN"].value == "1"
    ex, f = facts("accelerate launch --config_file accel.yaml --num_processes 4 train.py --learning_rate 1\n")
    assert ex.references == [("accel.yaml", 1, "config_file"), ("train.py", 1, "program")]
    assert f["world_size"].value == 4


def test_a_long_line_gives_short_excerpts_around_each_flag():
    """A one-line launch script of 3,000 flags: each fact's source is a bounded excerpt around
    its own flag, not a copy of the whole line."""
    flags = " ".join(f"--opt-{i} {i}" for i in range(3000))
    ex, f = facts(f"torchrun --nproc_per_node 8 train.py {flags} --lr 3e-4\n")
    assert len(ex.facts) == 3002
    assert max(len(x.source) for x in ex.facts) <= 160 + 2 * 160 + 8
    assert "--opt-1500 1500" in f["opt_1500"].source and "--opt-10 " not in f["opt_1500"].source
    assert f["lr"].source.endswith("--lr 3e-4") and f["lr"].source.startswith("... ")
    assert f["world_size"].source.startswith("torchrun --nproc_per_node 8 train.py")


def test_a_token_flag_is_withheld_and_kept_out_of_other_flags_sources():
    tok = "hf_" + "Zq9" * 9
    ex, f = facts(f"torchrun train.py --hf-token {tok} --lr 3e-4 --hub_token plain-but-named\n")
    assert f["hf_token"].value == withheld(tok)
    assert f["hub_token"].value == withheld("plain-but-named")
    assert f["lr"].value == 3e-4
    for x in ex.facts:
        assert tok not in x.source and "plain-but-named" not in x.source, x.source
    assert f["lr"].source == "torchrun train.py --hf-token <withheld> --lr 3e-4 --hub_token <withheld>"

"""Launch scripts that branch on the device, read once per device (issue 26, shell half).

A dual launch script in the style of upstream examples (`if command -v npu-smi`, `[ -d
/usr/local/Ascend ]`, `[ -n "$ASCEND_HOME_PATH" ]`, `case $DEVICE in npu)`): its NPU branch
is what the NPU runs, its CUDA branch what the GPU runs. Faithful, it is silent against the
GPU script and against itself; a planted difference in a device branch is one finding under
its key with both lines; a test that cannot be decided is read as before and said so."""
from __future__ import annotations

import pytest

from test_device_branches import edit, line_of, loud, one_file, pair

RUN = """LR=6e-4
MBS=4
torchrun --nproc_per_node 8 --master_port 29500 pretrain.py \\
    --lr $LR --micro-batch-size $MBS --seed 1234 --bf16
"""

GPU = """#!/bin/bash
# Pretrain GPT-2 small on 8 devices of one node.
export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
export NCCL_DEBUG=WARN
""" + RUN

DUAL = """#!/bin/bash
# Pretrain GPT-2 small on 8 devices of one node.
if command -v npu-smi >/dev/null 2>&1; then
    source /usr/local/Ascend/ascend-toolkit/set_env.sh
    export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
    export HCCL_CONNECT_TIMEOUT=1200
else
    export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
    export NCCL_DEBUG=WARN
fi
""" + RUN

CASE = """#!/bin/bash
DEVICE=${DEVICE:-cuda}
case $DEVICE in
    npu|ascend)
        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        ;;
    cuda|gpu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        export NCCL_DEBUG=WARN
        ;;
    *)
        echo "unknown device $DEVICE" >&2
        exit 1
        ;;
esac
""" + RUN

ASCEND_DIR = DUAL.replace("if command -v npu-smi >/dev/null 2>&1; then", "if [ -d /usr/local/Ascend ]; then")
ASCEND_ENV = DUAL.replace("if command -v npu-smi >/dev/null 2>&1; then", 'if [ -n "$ASCEND_HOME_PATH" ]; then')
STYLES = {"command -v": DUAL, "case": CASE, "-d": ASCEND_DIR, "-n": ASCEND_ENV}


@pytest.mark.parametrize("style", STYLES)
def test_a_faithful_dual_launch_script_is_silent(tmp_path, style):
    text = STYLES[style]
    assert loud(pair(tmp_path / "pair", GPU, text, name="pretrain.sh")) == []
    assert loud(one_file(tmp_path, text, name="pretrain.sh")) == []


def test_the_env_of_each_branch_belongs_to_its_device(tmp_path):
    r = one_file(tmp_path, DUAL, name="pretrain.sh")
    # CUDA_VISIBLE_DEVICES on the GPU against ASCEND_RT_VISIBLE_DEVICES on the NPU: the port (SD010)
    assert [(m.rule, m.gpu.line, m.npu.line) for m in r.masked if m.rule == "SD010"] == [
        ("SD010", line_of(DUAL, "export CUDA_VISIBLE"), line_of(DUAL, "export ASCEND_RT"))]
    aside = sorted(((m.gpu and "gpu") or "npu", (m.gpu or m.npu).line) for m in r.masked if m.rule == "SD019")
    assert aside == [("gpu", 3), ("gpu", 4), ("gpu", 5), ("gpu", 6), ("npu", 7), ("npu", 8), ("npu", 9)]
    assert {a.side: [n for n in a.notes if n.startswith("device")] for a in r.inputs} == {
        "gpu": ["device tests read for the GPU: 1 decided (by command -v npu-smi 1)"],
        "npu": ["device tests read for the NPU: 1 decided (by command -v npu-smi 1)"]}


@pytest.mark.parametrize("style", STYLES)
def test_a_learning_rate_set_in_the_npu_branch(tmp_path, style):
    text = STYLES[style]
    planted = edit(text, ("LR=6e-4\n", "LR=6e-4\n" + ("if [ -d /usr/local/Ascend ]; then\n    LR=3e-4\nfi\n")))
    at = line_of(planted, "    LR=3e-4")
    gpu_at = line_of(planted, "LR=6e-4")
    assert loud(one_file(tmp_path, planted, name="pretrain.sh")) == [("SD202", "lr", 6e-4, 3e-4, gpu_at, at)]
    assert loud(pair(tmp_path / "pair", GPU, planted, name="pretrain.sh")) == [
        ("SD202", "lr", 6e-4, 3e-4, line_of(GPU, "LR=6e-4"), at)]


def test_a_micro_batch_chosen_in_a_case_branch(tmp_path):
    planted = edit(CASE, ("        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n",
                          "        export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n        MBS_NPU=2\n"),
                   ("MBS=4\n", "MBS=${MBS_NPU:-4}\n"))
    r = one_file(tmp_path, planted, name="pretrain.sh")
    assert loud(r) == [("SD203", "micro_batch_size", 4, 2, line_of(planted, "MBS=${MBS_NPU"),
                        line_of(planted, "MBS_NPU=2"))]


def test_a_test_that_cannot_be_decided_is_read_as_before_and_said_so(tmp_path):
    cond = 'if [ -d /usr/local/Ascend ] && [ "$USE_NPU" = 1 ]; then'
    text = DUAL.replace("if command -v npu-smi >/dev/null 2>&1; then", cond)
    r = one_file(tmp_path, text, name="pretrain.sh")
    notes = {a.side: [n for n in a.notes if n.startswith("device")] for a in r.inputs}
    # on the GPU `false && ...` is decided; on the NPU it depends on $USE_NPU: both branches read
    assert notes == {"gpu": ["device tests read for the GPU: 1 decided (by [ -d /usr/local/Ascend ] 1)"],
                     "npu": ['device tests read for the NPU: 0 decided, 1 not decided, read as written '
                             '(line 3: [ -d /usr/local/Ascend ] && [ "$USE_NPU" = 1 ])']}
    assert sorted((m.gpu.line if m.gpu else None) for m in r.masked if m.rule == "SD019") == [3, 4, 5, 6]


COUNT_GPU = """#!/bin/bash
NNODES=${NNODES:=1}
NPROC=${NPROC:=$(nvidia-smi --list-gpus | wc -l)}
torchrun --nnodes=$NNODES --nproc-per-node=$NPROC pretrain.py --lr 6e-4
"""

COUNT_NPU = """#!/bin/bash
NNODES=${NNODES:=1}
if [[ -n "${ASCEND_RT_VISIBLE_DEVICES}" ]]; then
  NPROC=${NPROC:=$(echo "${ASCEND_RT_VISIBLE_DEVICES}" | tr ',' '\\n' | wc -l)}
else
  NPROC=${NPROC:=$(ls -l /dev/davinci* | grep -v "davinci_manager" | wc -l)}
fi
torchrun --nnodes=$NNODES --nproc-per-node=$NPROC pretrain.py --lr 6e-4
"""


def test_devices_counted_by_each_devices_own_listing_are_one_count(tmp_path):
    """`$(nvidia-smi --list-gpus | wc -l)` against `$(ls /dev/davinci* | grep -v davinci_manager |
    wc -l)` or the visible-devices variable's entries counted: the devices the run sees, one
    value (rules/devices.yaml devices.counts); nothing loud."""
    assert loud(pair(tmp_path, COUNT_GPU, COUNT_NPU, name="train.sh")) == []


def test_a_device_count_with_its_errors_hidden_or_a_fallback_is_the_same_count(tmp_path):
    """`$(nvidia-smi --list-gpus | wc -l 2>/dev/null || echo "0")`: its errors sent to /dev/null
    and a fallback where the tool is missing; where it runs, the devices the run sees."""
    gpu = COUNT_GPU.replace("$(nvidia-smi --list-gpus | wc -l)", '$(nvidia-smi --list-gpus | wc -l 2>/dev/null || echo "0")')
    assert loud(pair(tmp_path, gpu, COUNT_NPU, name="train.sh")) == []
    # its output sent elsewhere, or a fallback that runs another command: not a count known
    for i, odd in enumerate(("$(nvidia-smi --list-gpus | wc -l 1>/tmp/n.txt)", "$(nvidia-smi --list-gpus | wc -l || nproc)")):
        got = [x for x in loud(pair(tmp_path / str(i), COUNT_GPU.replace("$(nvidia-smi --list-gpus | wc -l)", odd),
                                    COUNT_GPU, name="train.sh")) if x[1] == "world_size"]
        at = line_of(COUNT_GPU, "NPROC=${NPROC:=")
        assert got == [("SD203", "world_size", f"{odd} * 1", "$(devices seen) * 1", at, at)]


@pytest.mark.parametrize("count,shown", [
    ("4", 4),
    ("$(ls -l /tmp/models | wc -l)", "$(ls -l /tmp/models | wc -l)"),
    ('$(ls -l /dev/davinci* | grep -v "davinci_manager" | wc -c)', '$(ls -l /dev/davinci* | grep -v "davinci_manager" | wc -c)'),
])
def test_a_count_that_is_not_the_devices_seen_is_still_found(tmp_path, count, shown):
    """A fixed count, a listing of another folder, a count of characters: not the devices the run
    sees; the world size differs (both values, both lines)."""
    npu = COUNT_GPU.replace("$(nvidia-smi --list-gpus | wc -l)", count)
    got = [x for x in loud(pair(tmp_path, COUNT_GPU, npu, name="train.sh")) if x[1] == "world_size"]
    at = line_of(COUNT_GPU, "NPROC=${NPROC:=")
    assert got == [("SD203", "world_size", "$(devices seen) * 1", shown if shown == 4 else f"{shown} * 1", at, at)]


# a variable named for the device in any case (`device_name`), given by a command whose output
# is not known: it holds this run's device, so `[ -n "$device_name" ]` is true and its comparisons
# decide the branch
PROBED = """#!/bin/bash
device_name=$(python3 -c 'import kestrel; print(kestrel.accelerator())')
if [ -n "$device_name" ] && [ "$device_name" == "cuda" ]; then
    export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
elif [ -n "$device_name" ] && [ "$device_name" == "npu" ]; then
    export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
else
    echo "unknown device: $device_name"
    exit 1
fi
LR=6e-4
MBS=4
torchrun --nproc_per_node 8 --master_port 29500 pretrain.py \\
    --lr $LR --micro-batch-size $MBS --seed 1234 --bf16
"""


def test_a_device_named_in_lower_case_from_a_probe_decides_its_branch(tmp_path):
    gpu = GPU
    assert loud(pair(tmp_path / "pair", gpu, PROBED, name="pretrain.sh")) == []
    r = one_file(tmp_path, PROBED, name="pretrain.sh")
    assert loud(r) == []
    assert {a.side: [n for n in a.notes if n.startswith("device")] for a in r.inputs} == {
        "gpu": ["device tests read for the GPU: 1 decided (by case $DEVICE in npu) 1)"],
        "npu": ["device tests read for the NPU: 2 decided (by case $DEVICE in npu) 2)"]}
    # a planted difference in the NPU's branch is found there
    planted = edit(PROBED, ("    export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n",
                            "    export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n    MBS_NPU=2\n"),
                   ("MBS=4\n", "MBS=${MBS_NPU:-4}\n"))
    assert loud(pair(tmp_path / "p2", gpu, planted, name="pretrain.sh")) == [
        ("SD203", "micro_batch_size", 4, 2, line_of(gpu, "MBS=4"), line_of(planted, "    MBS_NPU=2"))]


def test_a_variable_not_named_for_the_device_decides_nothing(tmp_path):
    text = PROBED.replace("device_name", "orbit_kind")
    r = one_file(tmp_path, text, name="pretrain.sh")
    assert [n for a in r.inputs for n in a.notes if n.startswith("device")] == []
    assert [m for m in r.masked if m.rule == "SD019"] == []  # no branch set aside: both read as written

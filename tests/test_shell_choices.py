"""A launch script that starts one of several programs depending on how it is run (the clauses
of one `if` it cannot decide, or `if` statements testing one word against different literals:
`if [ $# == 1 ]` ... `if [ $# == 2 ]`) starts one program, not several: the way sharing the
most settings with the other side is compared, and the script's account names the others."""
from __future__ import annotations

from conftest import script_pair

GPU = """#!/bin/bash
DATA=$1
python train.py --data=$DATA --lr 1e-4
"""

NPU = """#!/bin/bash
DATA=$1
export ASCEND_RT_VISIBLE_DEVICES=0
if [ $# == 1 ]
then
    python train.py --data=$DATA --lr 2e-4 &> log &
fi

if [ $# == 2 ]
then
    python train.py --data=$DATA --lr 2e-4 --resume=$2 &> log &
fi
"""


def found(rep) -> list:
    return [(f.rule, f.key, f.gpu and (f.gpu.line, f.gpu.value), f.npu and (f.npu.line, f.npu.value))
            for f in rep.findings if f.severity != "info"]


def notes(rep, side: str) -> list:
    return [n for a in rep.inputs if a.side == side for n in a.notes if "ways depending" in n]


def test_a_program_chosen_by_the_argument_count_is_one_program(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU)
    assert found(rep) == [("SD202", "lr", (3, 0.0001), (6, 0.0002))]
    assert notes(rep, "npu") == ["line 6: starts one of 2 ways depending on how the script is run; the one under "
                                 "`[ $# == 1 ]` was compared, not the one at line 11 (under `[ $# == 2 ]`)"]


def test_the_way_that_matches_the_other_side_is_compared(tmp_path):
    gpu = GPU.replace("--lr 1e-4", "--lr 1e-4 --resume=$2")
    rep = script_pair(tmp_path, gpu, NPU)
    assert found(rep) == [("SD202", "lr", (3, 0.0001), (11, 0.0002))]
    assert notes(rep, "npu")[0].startswith("line 11: starts one of 2 ways")


def test_the_clauses_of_one_if_are_one_choice(tmp_path):
    npu = """#!/bin/bash
DATA=$1
if [ -n "$RESUME" ]; then
    python train.py --data=$DATA --lr 1e-4 --resume=$RESUME
else
    python train.py --data=$DATA --lr 1e-4
fi
"""
    rep = script_pair(tmp_path, GPU, npu)
    assert found(rep) == []
    assert notes(rep, "npu") == ["line 6: starts one of 2 ways depending on how the script is run; the one under "
                                 "`else` was compared, not the one at line 4 (under `[ -n \"$RESUME\" ]`)"]


def test_two_programs_that_may_both_run_are_two(tmp_path):
    npu = NPU.replace("if [ $# == 2 ]", "if [ -f $2 ]")
    rep = script_pair(tmp_path, GPU, npu)
    assert found(rep)[0] == ("SD223", "invocations", (None, 1), (None, 2))
    assert notes(rep, "npu") == []


COORDINATED = """#!/bin/bash
export MS_WORKER_NUM=4
export MS_ROLE=MS_SCHED
python fit.py --lr 1e-4 --batch_size 64 > sched.log 2>&1 &
export MS_ROLE=MS_WORKER
for((i=0;i<$MS_WORKER_NUM;i++)); do
  python fit.py --lr 1e-4 --batch_size 64 > worker_$i.log 2>&1 &
done
"""

RANKS = """#!/bin/bash
export RANK_SIZE=4
for((i=0;i<$RANK_SIZE;i++)); do
  export RANK_ID=$i
  python fit.py --lr 1e-4 --batch_size {bs} > device_$i.log 2>&1 &
done
"""


def test_a_jobs_coordinator_process_is_none_of_its_runs(tmp_path):
    rep = script_pair(tmp_path, COORDINATED, RANKS.format(bs=32))
    assert found(rep) == [("SD203", "micro_batch_size", (7, 64), (5, 32))]
    assert [n for a in rep.inputs if a.side == "gpu" for n in a.notes if "coordinator" in n] == [
        "line 4: starts the job's coordinator (MS_ROLE=MS_SCHED), not one of its training runs: not compared as one"]


def test_a_process_of_another_role_is_a_run(tmp_path):
    rep = script_pair(tmp_path, COORDINATED.replace("MS_ROLE=MS_SCHED", "MS_ROLE=MS_TRAINER"), RANKS.format(bs=64))
    assert found(rep)[0] == ("SD223", "invocations", (None, 5), (None, 4))
    assert [n for a in rep.inputs for n in a.notes if "coordinator" in n] == []

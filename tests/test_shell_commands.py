"""A launch read whatever carries it (issue 25, item 7): a command built in a string and run
(`eval $cmd`, `bash -c "$cmd"`, `$CMD`, `"${ARGS[@]}"` as the command), `echo`, `set -x` and
wrappers (`nohup`, `env A=1`, `time`) before a launcher, and training arguments kept in a
sourced fragment (`source ./args.sh`, `. args.sh`), found within the side as a referenced
config is (lang/shell/evaluator.py; rules/shell.yaml `launchers.commands`)."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import rows_by_file, write_files

from scriptdiff import api
from scriptdiff.model import Options, SideContext
from scriptdiff.lang import shell
from scriptdiff.run.pipeline import diff_files
from scriptdiff.inputs.sources import Source


write = write_files


rows = rows_by_file


def pair(tmp_path, gpu: str, npu: str, name: str = "run.sh", cache: bool = False):
    write(tmp_path, {f"gpu/{name}": gpu, f"npu/{name}": npu})
    return diff_files([str(tmp_path / "gpu" / name)], [str(tmp_path / "npu" / name)], Options(use_cache=cache))


def facts(text: str, name: str = "run.sh"):
    ex = shell.extract(Source(name=name, data=text.encode()), SideContext("gpu"))
    return ex, {f.key: (f.value, f.line, f.via) for f in ex.facts}


EVAL = """#!/bin/bash
LR={lr}
cmd="torchrun --nproc_per_node 8 pretrain_gpt.py --lr $LR --seed 42 --micro-batch-size 2"
echo $cmd
eval $cmd
"""


def test_eval_of_a_command_string_is_the_launch(tmp_path):
    """The issue's reproduction: `cmd="torchrun ... --lr 1e-4"; echo $cmd; eval $cmd` read as
    "launcher `echo torchrun` is not known". Now the string is parsed again and read as the
    launch it makes: the lr difference is found at the line that sets LR, via $LR in $cmd."""
    rep = pair(tmp_path, EVAL.format(lr="1e-4"), EVAL.format(lr="2e-4"))
    assert rows(rep) == [("SD202", "lr", 1e-4, 2e-4, "run.sh", 2, "run.sh", 2)]
    assert rep.findings[0].gpu.via == "$LR in $cmd"
    assert rep.exit_code() == 1
    assert [(a.status, a.unread) for a in rep.inputs] == [("understood", [])] * 2


def test_eval_faithful_negative(tmp_path):
    rep = pair(tmp_path, EVAL.format(lr="1e-4"), EVAL.format(lr="1.0e-4"))
    assert rep.findings == [] and rep.exit_code() == 0
    assert [a.status for a in rep.inputs] == ["understood"] * 2


def test_eval_values_keep_their_lines_and_variables():
    ex, f = facts(EVAL.format(lr="1e-4"))
    assert ex.errors == [] and ex.unread == []
    assert f["lr"] == (1e-4, 2, "$LR in $cmd")
    assert f["seed"] == (42, 3, "$cmd") and f["micro_batch_size"] == (2, 3, "$cmd")
    assert f["world_size"][:2] == (8, 3)


@pytest.mark.parametrize("run", ["$CMD", "${CMD}", "eval \"$CMD\"", "bash -c \"$CMD\"", "eval ${CMD} 2>&1 | tee log"])
def test_command_held_in_a_string(run):
    text = f'CMD="torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4 --seed 7"\necho "$CMD"\n{run}\n'
    ex, f = facts(text)
    assert ex.unread == [] and ex.errors == []
    assert f["lr"] == (1e-4, 1, "$CMD") and f["seed"] == (7, 1, "$CMD")


def test_command_held_in_an_array():
    text = ("ARGS=(torchrun --nproc_per_node 8 pretrain_gpt.py\n"
            "      --lr 1e-4\n"
            "      --seed 7)\n"
            "set -x\n"
            "\"${ARGS[@]}\"\n")
    ex, f = facts(text)
    assert ex.unread == [] and ex.errors == []
    assert f["lr"] == (1e-4, 2, "$ARGS") and f["seed"] == (7, 3, "$ARGS")


@pytest.mark.parametrize("prefix", ["set -x\n", "set -euxo pipefail\n", "echo torchrun --lr 9 --seed 1 --bf16 --x 1\n",
                                    "printf '%s\\n' \"torchrun --lr 9\"\n"])
def test_echo_and_set_x_before_a_launcher(prefix):
    ex, f = facts(prefix + "torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4\n")
    assert ex.unread == [] and ex.errors == []
    assert f["lr"] == (1e-4, 2, None)


@pytest.mark.parametrize("wrapped", ["nohup torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4 > log 2>&1 &",
                                     "exec torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4",
                                     "time torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4",
                                     "numactl --cpunodebind=0 -m 0 torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4",
                                     "timeout -s INT 10h torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4",
                                     "taskset -c 0-95 torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4",
                                     "taskset 0xff torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4",
                                     "ionice -c 2 -n 7 torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4",
                                     "chrt -f 10 torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4"])
def test_wrappers_before_a_launcher(wrapped):
    ex, f = facts(wrapped + "\n")
    assert ex.unread == [] and ex.errors == []
    assert f["lr"] == (1e-4, 1, None) and f["world_size"][0] == 8


def test_env_wrapper_gives_the_launcher_its_environment():
    ex, f = facts("env NCCL_DETERMINISTIC=1 torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4\n")
    assert ex.unread == []
    assert f["env:NCCL_DETERMINISTIC"][:2] == ("1", 1) and f["lr"] == (1e-4, 1, None)


def test_eval_string_that_does_not_parse_is_said():
    ex, f = facts('cmd="torchrun pretrain_gpt.py --lr 1e-4 ; ( fi"\neval $cmd\n')
    assert [e.message for e in ex.errors] == [
        "line 2: the command string it runs is not valid shell (torchrun pretrain_gpt.py --lr 1e-4 ; ( fi); "
        "the statements that parsed were read"]


# --- sourced fragments ---------------------------------------------------------------------------

MAIN = """#!/bin/bash
set -x
source ./args.sh
. ./env.sh
torchrun --nproc_per_node 8 pretrain_gpt.py $TRAIN_ARGS --seed 42
"""
ARGS = 'TRAIN_ARGS="--lr {lr} \\\n    --micro-batch-size 2"\n'
ENV = "export NCCL_DETERMINISTIC={det}\n"


def test_training_arguments_in_a_sourced_fragment(tmp_path):
    """The issue's reproduction: the arguments live in `source ./args.sh`. They are read from
    each side's fragment, and the findings name the fragment and its line."""
    write(tmp_path, {"gpu/args.sh": ARGS.format(lr="1e-4"), "npu/args.sh": ARGS.format(lr="2e-4"),
                     "gpu/env.sh": ENV.format(det=1), "npu/env.sh": ENV.format(det=0)})
    rep = pair(tmp_path, MAIN, MAIN, "train.sh")
    assert rows(rep) == [("SD202", "lr", 1e-4, 2e-4, "args.sh", 1, "args.sh", 1),
                         ("SD306", "env:NCCL_DETERMINISTIC", "1", "0", "env.sh", 1, "env.sh", 1)]
    lr = next(f for f in rep.findings if f.key == "lr")
    assert lr.gpu.path == f"{tmp_path / 'gpu'}/args.sh" and lr.gpu.source.startswith('TRAIN_ARGS="--lr 1e-4')
    assert rep.exit_code() == 1
    notes = [n for a in rep.inputs if a.side == "gpu" for n in a.notes]
    assert notes[:2] == [f"line 3: sourced ./args.sh read in place (beside the referring file: {tmp_path / 'gpu/args.sh'})",
                         f"line 4: sourced ./env.sh read in place (beside the referring file: {tmp_path / 'gpu/env.sh'})"]


def test_sourced_fragment_faithful_negative_and_folder_mode(tmp_path):
    """Same fragments: silent. In a folder diff the fragments belong to the run that sources
    them: they are not compared again as launch scripts of their own."""
    write(tmp_path, {"gpu/args.sh": ARGS.format(lr="1e-4"), "npu/args.sh": ARGS.format(lr="1.0e-4"),
                     "gpu/env.sh": ENV.format(det=1), "npu/env.sh": ENV.format(det=1)})
    rep = pair(tmp_path, MAIN, MAIN, "train.sh")
    assert rep.findings == [] and rep.errors == [] and rep.exit_code() == 0
    tree = api.diff(str(tmp_path / "gpu"), str(tmp_path / "npu"), Options(use_cache=False))
    assert tree.findings == [] and tree.errors == [] and tree.exit_code() == 0


def test_a_changed_fragment_is_read_again_through_the_cache(tmp_path):
    """The cache keys a launch script by its own bytes; a fragment it sourced is checked on every
    run, so a changed fragment is read again, never served from the cache."""
    write(tmp_path, {"gpu/args.sh": ARGS.format(lr="1e-4"), "npu/args.sh": ARGS.format(lr="1e-4"),
                     "gpu/env.sh": ENV.format(det=1), "npu/env.sh": ENV.format(det=1)})
    assert pair(tmp_path, MAIN, MAIN, "train.sh", cache=True).findings == []
    write(tmp_path, {"npu/args.sh": ARGS.format(lr="3e-4")})
    rep = pair(tmp_path, MAIN, MAIN, "train.sh", cache=True)
    assert rows(rep) == [("SD202", "lr", 1e-4, 3e-4, "args.sh", 1, "args.sh", 1)]


def test_fragment_found_nowhere_is_noted_and_kept_as_sourced(tmp_path):
    write(tmp_path, {"gpu/run.sh": "source ./args.sh\ntorchrun pretrain_gpt.py --lr 1e-4\n"})
    rep = diff_files([str(tmp_path / "gpu/run.sh")], [str(tmp_path / "gpu/run.sh")], Options(use_cache=False))
    acc = rep.inputs[0]
    assert f"line 1: sourced ./args.sh was not found (tried {tmp_path / 'gpu/args.sh'}): what it sets is unresolved" \
        in acc.notes


def test_absolute_and_ascend_scripts_are_not_read():
    ex, f = facts("source /usr/local/Ascend/ascend-toolkit/set_env.sh\nsource $HOME/x.sh\n"
                  "torchrun pretrain_gpt.py --lr 1e-4\n")
    assert f["env:source set_env.sh"][0] == "/usr/local/Ascend/ascend-toolkit/set_env.sh"
    assert f["env:source x.sh"][0] == "$HOME/x.sh" and ex.sourced == []


def test_a_fragment_that_sources_itself_or_the_script_is_read_once(tmp_path):
    write(tmp_path, {"gpu/run.sh": "source ./a.sh\ntorchrun pretrain_gpt.py $X\n",
                     "gpu/a.sh": "X=\"$X --lr 1e-4\"\nsource ./a.sh\nsource ./run.sh\n"})
    ex = shell.extract(Source(name="run.sh", data=(tmp_path / "gpu/run.sh").read_bytes(),
                              origin=str(tmp_path / "gpu/run.sh")), SideContext("gpu"))
    assert [(f.key, f.value, f.line) for f in ex.facts if f.key == "lr"] == [("lr", 1e-4, 1)]
    assert [ident.rsplit("/", 1)[-1] for _w, _l, ident, _d in ex.sourced] == ["a.sh", "a.sh", "run.sh"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_fragment_of_a_side_read_from_a_git_revision_is_found_in_that_revision(tmp_path):
    """`REV1:train.sh REV2:train.sh`: each side sources the fragment its own revision holds,
    never the work tree's."""
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True,
                       env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                            "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})

    git("init", "-q")
    write(tmp_path, {"train.sh": MAIN, "args.sh": ARGS.format(lr="1e-4"), "env.sh": ENV.format(det=1)})
    git("add", "-A")
    git("commit", "-q", "-m", "gpu")
    write(tmp_path, {"args.sh": ARGS.format(lr="2e-4")})
    git("commit", "-q", "-am", "npu")
    write(tmp_path, {"args.sh": ARGS.format(lr="9e-4")})  # the work tree holds a third value
    rep = api.diff("HEAD~1:train.sh", "HEAD:train.sh", Options(use_cache=False), repo=str(tmp_path))
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in rep.findings] == [
        ("SD202", "lr", 1e-4, 2e-4, 1, 1)]


def test_two_expansions_in_one_string_keep_the_blank_between_them():
    """`"--nproc_per_node=$N $PROG"`: tree-sitter gives the second expansion the blank before it;
    both are expanded, the blank stays the string's (one word each side of it after splitting)."""
    script = ('LR={lr}\nN=${{4:-8}}\nPROG="train.py --learning_rate=$LR"\n'
              'CMD="python3 -m torch.distributed.launch --nproc_per_node=$N $PROG"\n$CMD\nTAG="$N  ${{LR}}"\n'
              'torchrun x.py --run-name "$TAG"\n')
    ex, f = facts(script.format(lr="3e-4"))
    assert ex.unread == [] and ex.errors == []
    assert f["lr"] == (3e-4, 1, "$LR in $PROG in $CMD") and f["world_size"][0] == 8
    assert f["run_name"][0] == "8  3e-4"
    _, f2 = facts(script.format(lr="6e-3"))
    assert f2["lr"][0] == 6e-3


# a wrapper that runs its stages as scripts with positional arguments (`bash stages/pretrain.sh
# "$DATA" ...`): the arguments are its settings, compared by the called script's name and position
STAGES = """#!/bin/bash
DATA=/mnt/shared/kestrel/corpus/orbit-558k.json
LLM=org/kestrel-2b
MAXLEN=2048
bash scripts/{stages}/pretrain.sh "$DATA" "$LLM" "$MAXLEN"
bash scripts/{stages}/finetune.sh "$DATA" "$LLM" "$MAXLEN" lora
"""


def test_a_script_run_with_arguments_is_compared_by_position(tmp_path):
    gpu = STAGES.format(stages="train")
    npu = STAGES.format(stages="train_npu").replace("/mnt/shared/kestrel", "/root/work/kestrel")
    rep = pair(tmp_path, gpu, npu)
    assert [f for f in rep.findings if f.severity in ("warning", "error")] == []
    # the data moved between machines: the same file in another place (info), once per script
    assert sorted((f.rule, f.key) for f in rep.findings) == [("SD227", "finetune.sh $1"), ("SD227", "pretrain.sh $1")]
    assert [(a.status, a.notes) for a in rep.inputs] == [("understood", [
        "line 5: runs pretrain.sh, which is not in view; its 3 argument(s) were compared by position",
        "line 6: runs finetune.sh, which is not in view; its 4 argument(s) were compared by position"])] * 2


def test_a_stage_given_another_value_or_not_run_is_found(tmp_path):
    gpu = STAGES.format(stages="train")
    npu = gpu.replace('"$MAXLEN" lora', '"$MAXLEN" full')
    assert rows(pair(tmp_path / "a", gpu, npu)) == [
        ("SD220", "finetune.sh $4", "lora", "full", "run.sh", 6, "run.sh", 6)]
    npu = gpu.replace('bash scripts/train/pretrain.sh', '# bash scripts/train/pretrain.sh')
    rep = pair(tmp_path / "b", gpu, npu)
    assert [(f.rule, f.key, f.gpu.value, f.npu.value) for f in rep.findings] == [("SD223", "invocations", 2, 1)]


def test_a_script_run_with_arguments_in_view_is_read_with_them(tmp_path):
    """The called script beside the caller: read as it runs, its $1... the caller's arguments and
    what it assigns its own; the lr it is given is the run's."""
    stage = "LR=$1\nSTEPS=$2\ntorchrun --nproc_per_node 8 pretrain.py --lr $LR --train-iters $STEPS\n"
    caller = "#!/bin/bash\nLR=9\nbash stage.sh {lr} 5000\necho $LR\n"
    write(tmp_path, {"gpu/stage.sh": stage, "npu/stage.sh": stage})
    rep = pair(tmp_path, caller.format(lr="3e-4"), caller.format(lr="2e-4"))
    assert rows(rep) == [("SD202", "lr", 3e-4, 2e-4, "run.sh", 3, "run.sh", 3)]
    rep = pair(tmp_path / "same", caller.format(lr="3e-4"), caller.format(lr="3.0e-4"))
    write(tmp_path / "same", {"gpu/stage.sh": stage, "npu/stage.sh": stage})
    rep = pair(tmp_path / "same", caller.format(lr="3e-4"), caller.format(lr="3.0e-4"))
    assert rep.findings == [] and [a.status for a in rep.inputs] == ["understood"] * 2


def test_a_positional_parameter_after_an_expansion_and_a_slash_stays_in_its_word():
    # tree-sitter-bash ends `data/$1/$1` at the second `$` and reads `1` as another word (in an
    # assignment: a command named 1); read whole, as bash does, with $1 unresolved
    _, got = facts("P=data/$1/$1\npython3 t.py --p data/$2/$1 --q $P --r $1/$12\n")
    assert {k: v[:2] for k, v in got.items()} == {"p": ("data/$2/$1", 2), "q": ("data/$1/$1", 1),
                                                   "r": ("$1/$12", 2)}


def test_a_folder_moved_as_another_setting_shows_is_the_same_move(tmp_path):
    """`/mnt/a/kestrel/dataset` against `/root/b/dataset` proves nothing alone (a generic last
    part); beside a named file moved from the same folder to the same other folder it is that
    move (SD227, info), saying which setting shows it."""
    run = "torchrun --nproc_per_node 8 fit.py --data-path {root}/corpus/orbit-558k.json --image-root {root}/dataset\n"
    rep = pair(tmp_path, run.format(root="/mnt/a/kestrel"), run.format(root="/root/b"))
    assert [(f.rule, f.severity, f.key) for f in rep.findings] == [
        ("SD227", "info", "data_path"), ("SD227", "info", "image_root")]
    assert rep.findings[1].message.endswith("moved between machines as data_path shows (mnt/a/kestrel on GPU, "
                                            "root/b on NPU)")
    alone = "torchrun --nproc_per_node 8 fit.py --image-root {root}/dataset\n"
    rep = pair(tmp_path / "alone", alone.format(root="/mnt/a/kestrel"), alone.format(root="/root/b"))
    assert [(f.rule, f.severity, f.key) for f in rep.findings] == [("SD220", "warning", "image_root")]


@pytest.mark.parametrize("ckpt,want", [("", None), ("runs/epoch_9.pt", "runs/epoch_9.pt")])
def test_an_alternate_value_expands_to_nothing_when_its_variable_is_empty(ckpt, want):
    """`${ckpt:+--checkpoint $ckpt}`: the option when ckpt holds something, nothing when it is
    empty or unset (bash's `:+`), never the option alone."""
    _ex, f = facts(f"ckpt={ckpt}\npython fit_orbit.py --lr 1e-4 ${{ckpt:+--checkpoint $ckpt}} --seed 1\n")
    assert (f["load"][0] if "load" in f else None) == want
    assert "checkpoint" not in f and f["seed"][0] == 1


def test_a_constant_set_in_every_run_of_a_loop_not_unrolled_is_known():
    """`export KESTREL_STATIC=1` in a rank loop whose count is not known: the environment of every
    run it starts, said by the body's export; `$i`, and a value that replaces another exported
    before the loop, stay unknown (after the loop it is unknown: the loop may not run)."""
    loop = ("export RANK_SIZE=$1\n{before}for((i=0;i<RANK_SIZE;i++))\ndo\n    export DEVICE_ID=$i\n"
            "    export KESTREL_STATIC=1\n    python fit_orbit.py --device_id=$DEVICE_ID --lr 1e-4 &\ndone\n")
    ex, f = facts(loop.format(before=""))
    assert f["env:KESTREL_STATIC"][:2] == ("1", 5) and ex.unread == []
    ex, f = facts(loop.format(before="export KESTREL_STATIC=0\n"))
    assert ex.unread == ["line 3: $KESTREL_STATIC is set in a `for ((...))` loop not unrolled (its arithmetic not known, "
                         "break or continue in it, or more than 64 runs): its value is not known, so KESTREL_STATIC "
                         "(line 3) was not compared"]

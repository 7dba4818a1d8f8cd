"""Shell that sets values in ways a plain assignment does not (issue 39, shape 6; issue 40,
"silent passes"): `printf -v`, `read <<<`, `set --` and a function's arguments, `let`,
`(( ))` and loops are evaluated where what they compute is known; where it is not (read from
input, a `while` loop), the variable is unknown: a setting made from it is never compared,
never equal, and the input's account says so once (lang/shell/evaluator.py, builtins.py,
words.py). A command substitution kept as written is one word, and `$(dirname "$0")` is the
script's own folder. Each shape: a drifted pair (rule, key, both values, lines) and its
faithful counterpart (silent, exit 0)."""
from __future__ import annotations

import pytest
from conftest import rows_by_file, script_facts, script_pair

rows = rows_by_file
pair = script_pair
facts = script_facts


def unread(rep) -> list[list[str]]:
    return [a.unread for a in rep.inputs]


# --- evaluated: each shape, drifted and faithful ---------------------------------------------

SHAPES = {
    "printf -v": ('printf -v LR "%.1e" {v}\n', "0.0003", "0.0001", "lr", 0.0003, 0.0001,
                  "torchrun --nproc_per_node 8 fit_model.py --lr $LR\n"),
    "read <<<": ('read -r LR EPS <<< "{v} 1e-8"\n', "3e-4", "1e-4", "lr", 3e-4, 1e-4,
                 "torchrun --nproc_per_node 8 fit_model.py --lr $LR --adam-eps $EPS\n"),
    "read <<EOF": ("read -r LR <<EOF\n{v}\nEOF\n", "3e-4", "1e-4", "lr", 3e-4, 1e-4,
                   "torchrun --nproc_per_node 8 fit_model.py --lr $LR\n"),
    "IFS read": ('IFS=, read -r WD LR <<< "0.1,{v}"\n', "3e-4", "1e-4", "lr", 3e-4, 1e-4,
                 "torchrun --nproc_per_node 8 fit_model.py --weight-decay $WD --lr $LR\n"),
    "set --": ("set -- {v} 7\nLR=$1\n", "3e-4", "1e-4", "lr", 3e-4, 1e-4,
               "torchrun --nproc_per_node 8 fit_model.py --lr $LR --seed $2\n"),
    "let": ('let "ITERS = 100 * {v}"\n', "4", "5", "train_iters", 400, 500,
            "torchrun --nproc_per_node 8 fit_model.py --train-iters $ITERS\n"),
    "(( ))": ("BASE=16\n(( GBS = BASE * {v}, GBS += 0 ))\n", "4", "8", "global_batch_size", 64, 128,
              "torchrun --nproc_per_node 8 fit_model.py --global-batch-size $GBS\n"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_value_set_by_a_shell_shape_is_compared(tmp_path, shape):
    setter, gv, nv, key, gval, nval, launch = SHAPES[shape]
    head = "#!/bin/bash\n" + setter.format(v="{v}")
    gpu, npu = head.format(v=gv) + launch, head.format(v=nv) + launch
    at = 2 + (shape == "(( ))")  # the line that sets the value
    rep = pair(tmp_path, gpu, npu)
    assert rows(rep) == [(rep.findings[0].rule, key, gval, nval, "run.sh", at, "run.sh", at)]
    assert rep.findings[0].severity == "error" and rep.exit_code() == 1
    assert unread(rep) == [[], []]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_value_set_by_a_shell_shape_faithful_negative(tmp_path, shape):
    setter, gv, _nv, _key, _g, _n, launch = SHAPES[shape]
    text = "#!/bin/bash\n" + setter.format(v=gv) + launch
    rep = pair(tmp_path, text, text.replace("torchrun --nproc_per_node 8", "torchrun  --nproc_per_node=8"))
    assert rep.findings == [] and rep.exit_code() == 0
    assert [a.status for a in rep.inputs] == ["understood", "understood"]


def test_printf_formats_as_bash_does():
    _ex, f = facts('printf -v A "%05.2f" 3.14159\nprintf -v B "%d-%s" 7 x\nprintf -v C "%x" 255\n'
                   'torchrun fit_model.py --a $A --b $B --c $C\n')
    assert (f["a"][0], f["b"][0], f["c"][0]) == (3.14, "7-x", "ff")


def test_a_function_sees_its_own_arguments(tmp_path):
    """`fit() { torchrun ... --lr $1 --seed ${2:-7}; }; fit 3e-4`: $1 is the call's argument."""
    text = "#!/bin/bash\nfit() {{\n  torchrun --nproc_per_node 8 fit_model.py --lr $1 --seed ${{2:-7}}\n}}\nfit {lr}\n"
    rep = pair(tmp_path, text.format(lr="3e-4"), text.format(lr="1e-4"))
    assert rows(rep) == [("SD202", "lr", 3e-4, 1e-4, "run.sh", 5, "run.sh", 5)]
    rep = pair(tmp_path, text.format(lr="3e-4"), text.format(lr="3.0e-4"))
    assert rep.findings == [] and rep.exit_code() == 0
    _ex, f = facts(text.format(lr="3e-4"))
    assert f["seed"] == (7, 3)


def test_the_arguments_of_the_script_itself_stay_as_written():
    """At the top level $1 is the script's own argument: kept as written (unresolved), as before."""
    _ex, f = facts('torchrun fit_model.py --tag "$1" --n $#\n')
    assert f["tag"][0] == "$1" and f["n"][0] == "$#"


def test_a_for_loop_over_known_words_is_unrolled(tmp_path):
    """Each run of the body is a launch of its own (an invocation), the loop variable set to its
    word; after the loop the variable holds the last word."""
    text = ("#!/bin/bash\nfor seed in 1 {s}; do\n  torchrun --nproc_per_node 8 fit_model.py --seed $seed\ndone\n"
            "for m in 2 {m}; do MBS=$m; done\n"
            "torchrun --nproc_per_node 8 fit_model.py --micro-batch-size $MBS\n")
    rep = pair(tmp_path, text.format(s=2, m=4), text.format(s=3, m=8))
    assert rows(rep) == [("SD203", "micro_batch_size", 4, 8, "run.sh", 5, "run.sh", 5),
                         ("SD207", "seed", 2, 3, "run.sh", 2, "run.sh", 2)]
    rep = pair(tmp_path, text.format(s=2, m=4), text.format(s=2, m=4).replace("for m in 2 4", "for m in 2  4"))
    assert rep.findings == [] and rep.exit_code() == 0
    ex, _f = facts(text.format(s=2, m=4))
    assert [x[2] for x in ex.launches] == [0, 1, 2]  # three launches: two from the loop


def test_a_c_style_for_loop_with_known_arithmetic_is_unrolled(tmp_path):
    text = ("#!/bin/bash\nSTEPS=0\nfor ((i = 0; i < {n}; i++)); do\n  (( STEPS += 100 ))\ndone\n"
            "torchrun --nproc_per_node 8 fit_model.py --train-iters $STEPS\n")
    rep = pair(tmp_path, text.format(n=3), text.format(n=4))
    assert rows(rep) == [("SD202", "train_iters", 300, 400, "run.sh", 4, "run.sh", 4)]
    rep = pair(tmp_path, text.format(n=3), text.format(n=3).replace("i++", "++i"))
    assert rep.findings == [] and rep.exit_code() == 0


# --- unknown: never equal, said once ---------------------------------------------------------

WHILE = """#!/bin/bash
N=0
while [ $N -lt 3 ]; do
  N=$((N + 1))
  LR={lr}
done
torchrun --nproc_per_node 8 fit_model.py --lr $LR --seed {seed}
"""


def test_a_value_set_in_a_while_loop_is_unknown_never_equal(tmp_path):
    """The issue's reproduction: two scripts that bash runs with different lr compared equal,
    exit 0. Whether the loop runs is not evaluated, so LR after it is unknown on both sides:
    not compared, and each side's account says why and what it left uncompared (exit 1)."""
    rep = pair(tmp_path, WHILE.format(lr="3e-4", seed=1), WHILE.format(lr="1e-4", seed=1))
    why = ("line 3: $LR is set in a `while` loop whose runs are not evaluated: its value is not known, so --lr "
           "(line 7) was not compared")
    assert unread(rep) == [[why], [why]]
    assert [(f.rule, f.key) for f in rep.findings] == [("SD154", f"input:{tmp_path / 'gpu/run.sh'}"),
                                                       ("SD154", f"input:{tmp_path / 'npu/run.sh'}")]
    assert rep.exit_code() == 1


def test_an_unknown_value_leaves_the_other_settings_compared(tmp_path):
    rep = pair(tmp_path, WHILE.format(lr="3e-4", seed=1), WHILE.format(lr="3e-4", seed=2))
    assert [r for r in rows(rep) if r[0] != "SD154"] == [("SD207", "seed", 1, 2, "run.sh", 7, "run.sh", 7)]


def test_read_from_a_file_is_unknown():
    ex, f = facts("read -r LR < lr.txt\ntorchrun fit_model.py --lr $LR --seed 3\n")
    assert "lr" not in f and f["seed"] == (3, 2)
    assert ex.unread == ["line 1: $LR is set by `read` from input that is not read: its value is not known, "
                         "so --lr (line 2) was not compared"]


@pytest.mark.parametrize("loop", ["for v in $(cat values.txt); do LR=$v; done",
                                  "for v in 1 2; do LR=$v; break; done",
                                  "for ((i = 0; i < LIMIT; i++)); do LR=$i; done",
                                  "until [ -f done.flag ]; do LR=2; done"])
def test_a_loop_not_unrolled_leaves_what_it_sets_unknown(loop):
    ex, f = facts(f"LR=1\n{loop}\ntorchrun fit_model.py --lr $LR\n")
    assert "lr" not in f and len(ex.unread) == 1 and ex.unread[0].startswith("line 2: $LR is set in a `")
    assert ex.unread[0].endswith("its value is not known, so --lr (line 3) was not compared")


def test_a_world_size_from_an_unknown_value_is_not_compared():
    ex, f = facts("while true; do G=$((G + 1)); done\ntorchrun --nproc_per_node $G fit_model.py --lr 1\n")
    assert "world_size" not in f and f["lr"] == (1, 2)
    assert ex.unread == ["line 1: $G is set in a `while` loop whose runs are not evaluated: its value is not known, "
                         "so world_size (line 2) was not compared"]


# --- command substitutions inside a word; the script's own folder ----------------------------

def test_a_command_substitution_is_one_word():
    """`$(dirname $SCRIPT_DIR)/configs/x.yaml` was read as the path `$SCRIPT_DIR)/configs/x.yaml`
    (the substitution split at its blank). A substitution not evaluated is one piece."""
    ex, f = facts("CFG=$(some_tool --dir $HOME)/configs/x.yaml\ntorchrun fit_model.py --where $CFG --lr 1\n")
    assert f["where"] == ("$(some_tool --dir $HOME)/configs/x.yaml", 1)


LAYOUT = """#!/bin/bash
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CFG=$(dirname $SCRIPT_DIR)/configs/fit.yaml
torchrun --nproc_per_node 8 fit_model.py --config $CFG --lr 1e-4
"""


def test_a_config_named_from_the_scripts_folder_is_found(tmp_path):
    """`$(dirname $SCRIPT_DIR)/configs/fit.yaml`, SCRIPT_DIR the script's folder: the file one
    folder up from the script, read and compared."""
    rep = pair(tmp_path, LAYOUT, LAYOUT, name="scripts/run.sh",
               extra={"gpu/configs/fit.yaml": "weight_decay: 0.1\n", "npu/configs/fit.yaml": "weight_decay: 0.01\n"})
    assert rows(rep) == [("SD206", "weight_decay", 0.1, 0.01, "fit.yaml", 1, "fit.yaml", 1)]
    rep = pair(tmp_path, LAYOUT, LAYOUT, name="scripts/run.sh",
               extra={"gpu/configs/fit.yaml": "weight_decay: 0.1\n", "npu/configs/fit.yaml": "weight_decay: 0.10\n"})
    assert rep.findings == [] and rep.exit_code() == 0


@pytest.mark.parametrize("expr,value", [('$(dirname "$0")', "."), ("$(dirname $(dirname $0))", ".."),
                                        ('$(cd "$(dirname "$0")/.." && pwd)', ".."),
                                        ('$(cd ./"`dirname $0`" || exit; pwd)', "."),
                                        ('$(cd "$(dirname "$0")/.." || exit 1; pwd)', ".."),
                                        ('$(cd ./"`dirname $0`" || echo no; pwd)', '$(cd ./"`dirname $0`" || echo no; pwd)'),
                                        ("$(dirname /opt/runs/a/b.yaml)", "/opt/runs/a"),
                                        ("$(basename /opt/runs/a/b.yaml .yaml)", "b"),
                                        ("$(realpath /opt/x/../y)", "/opt/y"),
                                        ("$(basename $0)", "$(basename $0)"),
                                        ("$(realpath relative/x)", "$(realpath relative/x)")])
def test_path_commands_on_known_paths(expr, value):
    _ex, f = facts(f"P={expr}\ntorchrun fit_model.py --where $P\n")
    assert f["where"][0] == value


# --- a referenced config not in view withholds only what it could set --------------------------

def test_a_config_named_from_the_scripts_parent_is_read_and_shown_where_it_is(tmp_path):
    """`BASE=$(cd ./"`dirname $0`" || exit; pwd)` then `--config_path=$BASE/../cfg.yaml`: the
    config one folder above the script is read (shown, as any file a reference leaves the
    script's folder for, by its name beside the script)."""
    for side, lr in (("gpu", "0.1"), ("npu", "0.2")):
        (tmp_path / side / "scripts").mkdir(parents=True)
        (tmp_path / side / "cfg.yaml").write_text(f"lr: {lr}\n")
        (tmp_path / side / "scripts" / "run.sh").write_text(
            'BASE=$(cd ./"`dirname $0`" || exit; pwd)\npython fit_model.py --config_path=$BASE/../cfg.yaml\n')
    from scriptdiff import api
    rep = api.diff(str(tmp_path / "gpu" / "scripts" / "run.sh"), str(tmp_path / "npu" / "scripts" / "run.sh"))
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.path, f.gpu.line) for f in rep.findings] == [
        ("SD202", "lr", 0.1, 0.2, str(tmp_path / "gpu" / "scripts" / "cfg.yaml"), 1)]


def test_a_missing_config_leaves_the_launch_lines_own_values_compared(tmp_path):
    """`--config cfg.yaml --accumulation-steps 4`, cfg.yaml in view on neither side: the value
    the launch line sets itself is still compared."""
    text = "torchrun --nproc_per_node 8 fit_model.py --config cfg.yaml --accumulation-steps {n} --lr 1e-4\n"
    rep = pair(tmp_path, text.format(n=4), text.format(n=8))
    assert [r for r in rows(rep) if r[0] != "SD158"] == [
        ("SD203", "gradient_accumulation_steps", 4, 8, "run.sh", 1, "run.sh", 1)]
    rep = pair(tmp_path, text.format(n=4), text.format(n=4))
    assert [f.rule for f in rep.findings] == ["SD158"] and rep.exit_code() == 0


def test_an_unknown_value_that_reaches_only_paths_is_a_note():
    """A value set in a loop that only an output path uses cannot change what the run computes:
    the account's notes say it, the input stays understood."""
    ex, f = facts('ROOT=.\nwhile [ ! -f "$ROOT/MARK" ]; do ROOT=$(dirname "$ROOT"); done\n'
                  "torchrun fit_model.py --output_dir $ROOT/out --lr 1e-4\n")
    assert ex.unread == [] and f["lr"] == (1e-4, 3)
    assert ex.notes == ["line 2: $ROOT is set in a `while` loop whose runs are not evaluated: its value is not known, "
                        "so --output_dir (line 3) was not compared"]


def test_launches_without_options_keep_the_later_invocations_compared(tmp_path):
    """`python tools/prepare.py` passes nothing: the invocations after it are still compared
    (they were dropped when an earlier launch set nothing)."""
    text = "python tools/prepare.py\ntorchrun --nproc_per_node 8 fit_model.py --lr {lr}\npython tools/report.py\n" \
           "torchrun --nproc_per_node 8 eval_model.py --seed {seed}\n"
    rep = pair(tmp_path, text.format(lr="1e-4", seed=1), text.format(lr="1e-4", seed=2))
    assert rows(rep) == [("SD207", "seed", 1, 2, "run.sh", 4, "run.sh", 4)]
    rep = pair(tmp_path, text.format(lr="1e-4", seed=1), text.format(lr="1e-4", seed=1))
    assert rep.findings == [] and rep.exit_code() == 0


def test_a_value_that_differs_only_by_a_renamed_variable_it_reads_is_the_port(tmp_path):
    """`--nproc_per_node $(echo $CUDA_VISIBLE_DEVICES | awk ...)` against the same counting
    `$ASCEND_RT_VISIBLE_DEVICES`: kept as written, the same but for the renamed variable (SD010,
    masked). Another variable is another value."""
    text = "torchrun --nproc_per_node $(echo ${V} | awk -F, '{{print NF}}') fit_model.py --lr 1e-4\n"
    rep = pair(tmp_path, text.format(V="$CUDA_VISIBLE_DEVICES"), text.format(V="$ASCEND_RT_VISIBLE_DEVICES"))
    assert rep.findings == [] and [m.rule for m in rep.masked] == ["SD010"]
    rep = pair(tmp_path, text.format(V="$CUDA_VISIBLE_DEVICES"), text.format(V="$FIT_DEVICES"))
    assert [(f.rule, f.key) for f in rep.findings] == [("SD203", "world_size")]


def test_nested_loops_are_unrolled_within_the_scripts_budget(monkeypatch):
    """Loops inside loops multiply their runs: past budget.SHELL_LOOP_RUNS for the script a
    loop is no longer unrolled, and what it sets is unknown (never a long wait)."""
    from scriptdiff import budget

    monkeypatch.setattr(budget, "SHELL_LOOP_RUNS", 5)
    ex, f = facts("for a in 1 2; do for b in 1 2; do N=$((a * b)); done; done\n"
                  "torchrun fit_model.py --seed $N\n")
    assert "seed" not in f and ex.unread[0].startswith("line 1: $N is set in a `for` loop not unrolled")
    monkeypatch.setattr(budget, "SHELL_LOOP_RUNS", 256)
    _ex, f = facts("for a in 1 2; do for b in 1 2; do N=$((a * b)); done; done\ntorchrun fit_model.py --seed $N\n")
    assert f["seed"] == (4, 1)


@pytest.mark.parametrize("words", ["{1..3}", "a{b,c}", "*.yaml"])
def test_a_for_loop_over_words_bash_expands_is_not_unrolled(words):
    ex, f = facts(f"for v in {words}; do LR=$v; done\ntorchrun fit_model.py --lr $LR\n")
    assert "lr" not in f and ex.unread[0].startswith("line 1: $LR is set in a `for` loop over words that are not known")


def test_a_config_missing_on_one_side_withholds_only_what_it_could_set(tmp_path):
    """The GPU side's cfg.yaml is not in view: what it could set and the NPU side's config sets
    (micro_batch_size, and the global batch size derived from it) is withheld, named; the
    accumulation steps both launch lines set are compared."""
    text = "torchrun --nproc_per_node 8 fit_model.py --config cfg.yaml --accumulation-steps {n} --lr 1e-4\n"
    rep = pair(tmp_path, text.format(n=4), text.format(n=8), extra={"npu/cfg.yaml": "micro_batch_size: 2\n"})
    assert [r for r in rows(rep) if r[0] not in ("SD154", "SD222")] == [
        ("SD203", "gradient_accumulation_steps", 4, 8, "run.sh", 1, "run.sh", 1)]
    missing = next(f for f in rep.findings if f.rule == "SD154")
    assert missing.message.endswith("2 setting(s) of the NPU side could not be compared: global_batch_size, "
                                    "micro_batch_size")


def test_a_jump_taken_only_when_a_command_fails_does_not_stop_unrolling():
    """`cd "run$i" || exit` leaves the loop only when the cd fails: the run that goes on is read,
    each pass with its own rank; a `break` the normal run takes still stops the unrolling."""
    body = "for ((i = 0; i < 2; i++)); do\n  export FIT_RANK=$i\n  cd ./run$i {jump}\n" \
           "  torchrun fit_model.py --seed 7 &\n  cd ..\ndone\n"
    ex, f = facts(body.format(jump="|| exit"))
    assert ex.unread == [] and f["seed"] == (7, 4)
    ex, f = facts(body.format(jump="; break"))
    assert ex.unread[0].startswith("line 1: $i is set in a `for ((...))` loop not unrolled")


def test_a_field_cut_from_an_echoed_pair_is_the_field():
    """`$(echo "$pair" | cut -d' ' -f2)` on a known pair: the field, as coreutils cuts it; a
    delimiter or an echo option not read leaves the value as written (unresolved)."""
    text = ('for pair in "alpha 1e-4" "beta 2e-4"; do\n  lr=$(echo {q}$pair{q} | cut {d} -f2)\n'
            '  torchrun fit_model.py --lr $lr\ndone\n')
    for q, d in (('"', "-d' '"), ("", '-d" "'), ("", "-d ' '")):
        ex, f = facts(text.format(q=q, d=d))
        assert ex.unread == [] and f["lr"] == (2e-4, 2), (q, d)
    ex, f = facts(text.format(q="", d="-c1-3"))
    assert f["lr"][0] == "$(echo $pair | cut -c1-3 -f2)"


# --- one job started a process per rank -----------------------------------------------------------

MPI = "#!/bin/bash\nmpirun -n 8 python fit_model.py --lr 0.1 --device_num=8\n"
RANKS = """#!/bin/bash
export DEVICE_NUM={n}
for ((i = 0; i < ${{DEVICE_NUM}}; i++)); do
  export RANK_ID=$i
  python fit_model.py --lr {lr} --device_num=$DEVICE_NUM --device_id=$i --rank_id=$i &> log$i &
done
"""


def test_a_loop_that_starts_one_process_per_rank_is_one_job_of_that_many(tmp_path):
    """`mpirun -n 8 python fit_model.py` against a loop that starts fit_model.py eight times in the
    background, each with its own --device_id/--rank_id: one run of 8 processes, compared as one."""
    rep = pair(tmp_path, MPI, RANKS.format(n=8, lr=0.1))
    assert [f for f in rep.findings if f.severity != "info"] == []
    rep = pair(tmp_path / "four", MPI, RANKS.format(n=4, lr=0.1))
    assert [r for r in rows(rep) if r[0] in ("SD203", "SD230")] == [
        ("SD203", "world_size", 8, 4, "run.sh", 2, "run.sh", 2),  # DEVICE_NUM=4, through --device_num
        ("SD230", "data_parallel_size", 8, 4, "run.sh", 2, "run.sh", 2)]  # follows from the world size, shown where it is set


MPI_EITHER = """#!/bin/bash
CKPT=$1
if [ -f $CKPT ]; then
  mpirun -n 8 python fit_model.py --lr 0.1 --warm_start=$CKPT &> log &
else
  mpirun -n 8 python fit_model.py --lr 0.1 &> log &
fi
"""
RANKS_EITHER = """#!/bin/bash
CKPT=$1
export RANK_SIZE={n}
for ((i = 0; i < RANK_SIZE; i++)); do
  export RANK_ID=$i
  export DEVICE_ID=$i
  if [ -f $CKPT ]; then
    python fit_model.py --lr 0.1 --warm_start=$CKPT > log$i 2>&1 &
  else
    python fit_model.py --lr {lr} > log$i 2>&1 &
  fi
done
"""


def test_a_rank_loop_that_starts_each_process_one_of_two_ways_is_two_jobs(tmp_path):
    """Each rank started with a checkpoint when the file exists, else without: two ways of
    starting the job (as `mpirun -n 8` in an if/else), eight processes each, not sixteen runs."""
    rep = pair(tmp_path, MPI_EITHER, RANKS_EITHER.format(n=8, lr=0.1))
    assert [f for f in rep.findings if f.severity != "info"] == []
    rep = pair(tmp_path / "four", MPI_EITHER, RANKS_EITHER.format(n=4, lr=0.2))
    assert [r for r in rows(rep) if r[0] in ("SD202", "SD203", "SD223")] == [
        ("SD202", "lr", 0.1, 0.2, "run.sh", 6, "run.sh", 10),  # the second way only
        ("SD203", "world_size", 8, 4, "run.sh", 4, "run.sh", None),  # 4 processes started, each way
        ("SD203", "world_size", 8, 4, "run.sh", 6, "run.sh", None)]
    # ways started a different number of times are not ranks of jobs: the runs stay runs
    odd = RANKS_EITHER.replace("  else\n", "  else\n    python fit_model.py --lr 0.1 --seed $i > s$i 2>&1 &\n")
    assert [f.rule for f in pair(tmp_path / "odd", MPI_EITHER, odd.format(n=8, lr=0.1)).findings
            if f.key == "invocations"] == ["SD223"]


def test_runs_of_a_loop_that_differ_in_more_than_their_rank_stay_runs(tmp_path):
    rep = pair(tmp_path, MPI, RANKS.format(n=2, lr="0.$((i + 1))"))
    assert [f.rule for f in rep.findings if f.key == "invocations"] == ["SD223"]


# --- a whole command held in a variable --------------------------------------------------------

HELD = ("#!/bin/bash\nread -r -d '' orbit_args <<EOF\nkestrel.cli.fit_orbit \\\n   --pretrain /models/orbit-{size} \\\n"
        "   --actor_learning_rate {lr} \\\n   --bf16\nEOF\n\ndeepspeed --module $orbit_args\n")


def test_a_command_read_whole_from_a_here_document_is_the_launch(tmp_path):
    """`read -r -d '' cmd <<EOF` reads all of the document (bash joins the lines a backslash
    ends); `deepspeed --module $cmd` starts what it holds, each option at its own line."""
    rep = pair(tmp_path, HELD.format(size="0.5b", lr="5e-7"), HELD.format(size="1.5b", lr="3e-7"))
    assert [r for r in rows(rep) if r[1] in ("load", "lr")] == [
        ("SD202", "lr", 5e-7, 3e-7, "run.sh", 5, "run.sh", 5),  # the actor's: the trained model's lr
        ("SD212", "load", "/models/orbit-0.5b", "/models/orbit-1.5b", "run.sh", 4, "run.sh", 4)]
    rep = pair(tmp_path, HELD.format(size="0.5b", lr="5e-7"), HELD.format(size="0.5b", lr="5.0e-7"))
    assert rep.findings == [] and rep.exit_code() == 0


@pytest.mark.parametrize("launch,said", [
    ("deepspeed --module $CMD\n", "the program started at line 2 and what is passed to it were not read"),
    ("python $CMD --lr 1\n", "the program started at line 2 and what is passed to it were not read"),
    ("torchrun fit_model.py $CMD --lr 1\n", "what it holds is passed to fit_model.py and was not compared"),
])
def test_a_command_from_a_value_not_known_is_said_never_silent(launch, said):
    ex, _f = facts("read CMD\n" + launch)
    assert ex.unread == [f"line 1: $CMD is set by `read` from input that is not read: {said}"]


# --- a per-rank loop whose count the caller gives -------------------------------------------------

CALLER_MPI = "#!/bin/bash\nmpirun -n $1 python fit_model.py --lr 0.1\n"
CALLER_RANKS = """#!/bin/bash
export RANK_SIZE=$1
for ((i = 0; i < RANK_SIZE; i++)); do
  export DEVICE_ID=$i
  python fit_model.py --lr {lr} {own}=$i &> log$i &
done
"""


def test_a_per_rank_loop_of_the_callers_count_is_one_job_of_that_many(tmp_path):
    """Its count is the script's first argument: not unrolled, but a loop whose counter only
    says which process each run is is one job of that many processes (world size `$1`, as
    `mpirun -n $1` says); what $i sets (DEVICE_ID, --device_id) is which process it is."""
    rep = pair(tmp_path, CALLER_MPI, CALLER_RANKS.format(lr=0.1, own="--device_id"))
    assert [f for f in rep.findings if f.severity != "info"] == [] and unread(rep) == [[], []]
    ex, f = facts(CALLER_RANKS.format(lr=0.1, own="--device_id"))
    assert f["world_size"] == ("$1", 2)  # where the count is set
    rep = pair(tmp_path / "lr", CALLER_MPI, CALLER_RANKS.format(lr=0.2, own="--device_id"))
    assert [r for r in rows(rep) if r[1] == "lr"] == [("SD202", "lr", 0.1, 0.2, "run.sh", 2, "run.sh", 5)]


def test_a_loop_whose_counter_sets_a_setting_is_runs_not_ranks():
    ex, f = facts(CALLER_RANKS.format(lr=0.1, own="--seed"))
    assert "world_size" not in f and "seed" not in f
    assert ex.unread == ["line 3: $i is set in a `for ((...))` loop not unrolled (its arithmetic not known, break or "
                         "continue in it, or more than 64 runs): its value is not known, so DEVICE_ID (line 4), "
                         "--seed (line 5) were not compared"]


def test_an_arithmetic_expansion_in_a_c_style_loop_is_evaluated():
    """`for ((i = 0; i < $((N)); i++))`: tree-sitter reads `$((N))` there as `$( (N) )`; it is
    read again as arithmetic, and the loop is unrolled."""
    ex, _f = facts("N=3\nfor ((i = 0; i < $((N)); i++)); do\n  python fit_model.py --lr 1 --seed $i\ndone\n")
    assert [x[0] for x in ex.launches] == ["fit_model.py"] * 3 and ex.unread == []


ENV_RANKS = """#!/bin/bash
export DEVICE_NUM=8
for ((i = 0; i < ${DEVICE_NUM}; i++)); do
  export DEVICE_ID=$i
  export RANK_ID=$i
  cd ./run$i || exit
  python fit_model.py --lr 0.1 --distributed=True &> log.txt &
  cd ..
done
"""


def test_runs_told_apart_by_the_rank_their_environment_gives_are_one_job(tmp_path):
    """The rank of each run given by `export DEVICE_ID=$i` / `export RANK_ID=$i` before it, not by
    its options: the same one job of 8 processes as `mpirun -n 8`."""
    gpu = "#!/bin/bash\nmpirun -n 8 python fit_model.py --lr 0.1 --distributed=True\n"
    rep = pair(tmp_path, gpu, ENV_RANKS)
    assert [f for f in rep.findings if f.severity != "info"] == []
    # runs told apart by nothing (no rank in their environment or options) stay runs
    same = ENV_RANKS.replace("  export DEVICE_ID=$i\n  export RANK_ID=$i\n", "")
    rep = pair(tmp_path / "apart", gpu, same)
    assert [(f.rule, f.gpu.value, f.npu.value) for f in rep.findings if f.key == "invocations"] == [("SD223", 1, 8)]

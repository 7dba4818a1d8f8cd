"""Programs by shape (issue 39, shape 3): a runner's command is the launch. `uv run`, `poetry
run`, `pixi run`, `conda run -n X`, `srun`, `mpirun`/`mpiexec` with their own options (data:
rules/shell.yaml `launchers.commands.wrappers`), a Python wrapper whose words after `--` are
a command, an unknown runner (its command compared, the account saying the runner was not
known), a script run by its own `#!`. A framework's defaults apply only to a program known to
be of that framework; otherwise a setting one side leaves out is compared as written, never
against an invented default. Issue 40: a referenced config found on neither side tells one
story, at its own file and line."""
from __future__ import annotations

import pytest
from conftest import rows_by_file, script_facts, script_pair

rows = rows_by_file
pair = script_pair
facts = script_facts


RUNNERS = ["uv run", "uv run --with extra-pkg --python 3.11", "uv run --", "poetry run", "poetry run -C proj",
           "conda run -n fitenv --no-capture-output", "micromamba run -p /opt/envs/fit", "srun -N 2 --ntasks-per-node=1",
           "srun -N2 -p gpu --gres gpu:8", "mpiexec -n 1 --mca btl ^openib", "nohup uv run"]


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_runners_command_is_the_launch(runner):
    """The issue's reproduction: `uv run python train.py ...` was "launcher not known" and its
    options went uncompared. The runner's own options are its; the command after them is read."""
    ex, f = facts(f"{runner} python fit_model.py --lr 1e-4 --seed 5\n")
    assert ex.unread == [] and ex.errors == []
    assert f["lr"] == (1e-4, 1) and f["seed"] == (5, 1)
    assert [x[0] for x in ex.launches] == ["fit_model.py"]


@pytest.mark.parametrize("runner", ["uv run", "srun -N 2", "mpirun -np 2 --bind-to none", "pixi run -e cuda"])
def test_a_runners_command_drifted_and_faithful(tmp_path, runner):
    text = f"{runner} torchrun --nproc_per_node 8 fit_model.py --lr {{lr}}\n"
    rep = pair(tmp_path, text.format(lr="1e-4"), text.format(lr="2e-4"))
    assert rows(rep) == [("SD202", "lr", 1e-4, 2e-4, "run.sh", 1, "run.sh", 1)]
    rep = pair(tmp_path, text.format(lr="1e-4"), text.format(lr="1.0e-4"))
    assert rep.findings == [] and rep.exit_code() == 0
    assert [a.status for a in rep.inputs] == ["understood", "understood"]


def test_uv_run_module_and_a_script_run_by_itself():
    _ex, f = facts("uv run --with x -m pkg.fit --lr 1e-4\n")
    assert f["lr"] == (1e-4, 1)
    ex, f = facts("./fit_model.py --lr 2e-4\n")
    assert f["lr"] == (2e-4, 1) and [x[0] for x in ex.launches] == ["./fit_model.py"]


def test_mpirun_processes_are_the_world_size_of_a_plain_python(tmp_path):
    """`mpirun -np 16 python x.py` starts 16 ranks; under torchrun the world size is torchrun's.
    `-x NAME=value` is the command's environment; `--mca btl ^openib` takes two words."""
    text = "mpirun -np {n} --mca btl ^openib -x FIT_DEBUG=1 python fit_model.py --lr 1e-4\n"
    _ex, f = facts(text.format(n=16))
    assert f["world_size"] == (16, 1) and f["env:FIT_DEBUG"] == ("1", 1) and f["lr"] == (1e-4, 1)
    _ex, f = facts("srun -n 4 torchrun --nproc_per_node 8 --nnodes 4 fit_model.py --lr 1\n")
    assert f["world_size"] == (32, 1)
    rep = pair(tmp_path, text.format(n=16), text.format(n=8))
    assert rows(rep) == [("SD203", "world_size", 16, 8, "run.sh", 1, "run.sh", 1),
                         ("SD230", "data_parallel_size", 16, 8, "run.sh", 1, "run.sh", 1)]  # follows from world_size


def test_a_subcommand_that_is_no_runner_is_read_as_before():
    ex, f = facts("uv pip install torch==2.1.0\nconda create -n fit python=3.10\n")
    assert f["pkg:torch"] == ("2.1.0", 1) and ex.unread == []


def test_pixi_task_name_is_not_known_and_said():
    ex, _f = facts("pixi run fit --lr 1e-4\n")
    assert ex.unread == ["line 1: launcher `fit` is not known: its 1 option was not compared"]


WRAPPED = "python launch_job.py --cluster c1 --queue q -- python fit_model.py --learning_rate {lr} --seed 7\n"
PLAIN = "python fit_model.py --learning_rate 1e-4 --seed 7\n"


def test_a_python_wrappers_command_after_the_separator_is_the_run(tmp_path):
    """The issue's reproduction: the wrapper's own flags were reported as set on one side only.
    The command after `--` is the run; the wrapper's options are its own, said in the account."""
    rep = pair(tmp_path, PLAIN, WRAPPED.format(lr="1e-4"))
    assert rep.findings == [] and rep.exit_code() == 0
    npu = next(a for a in rep.inputs if a.side == "npu")
    assert npu.notes[0] == ("line 1: launch_job.py runs the command after `--` (python), read as the launch; its "
                            "own 2 option(s) are the wrapper's, not compared as the run's")
    rep = pair(tmp_path, PLAIN, WRAPPED.format(lr="2e-4"))
    assert rows(rep) == [("SD202", "lr", 1e-4, 2e-4, "run.sh", 1, "run.sh", 1)]


def test_words_after_the_separator_that_are_no_command_stay_the_programs():
    _ex, f = facts("python fit_model.py --lr 1e-4 -- --extra 3\n")
    assert f["lr"] == (1e-4, 1) and f["extra"] == (3, 1)


def test_an_unknown_runners_command_is_compared_and_the_runner_said(tmp_path):
    text = "jobrun --queue q python fit_model.py --lr {lr}\n"
    rep = pair(tmp_path, text.format(lr="1e-4"), text.format(lr="2e-4"))
    said = ("line 1: `jobrun --queue q` is not a known runner: the command after it (python ...) was read as the "
            "launch; its own 1 option(s) were not compared")
    assert rows(rep) == [("SD154", f"input:{tmp_path / 'gpu/run.sh'}", said, None, "run.sh", None, None, None),
                         ("SD154", f"input:{tmp_path / 'npu/run.sh'}", None, said, None, None, "run.sh", None),
                         ("SD202", "lr", 1e-4, 2e-4, "run.sh", 1, "run.sh", 1)]
    rep = pair(tmp_path, text.format(lr="1e-4"), text.format(lr="1e-4"))
    assert [f.rule for f in rep.findings] == ["SD154", "SD154"] and rep.exit_code() == 1  # never a silent pass


# --- a framework's defaults only for a program known to be of it ------------------------------

HF_GPU = "python fit_model.py --learning_rate 1e-4 --num_train_epochs 3 --seed 42 --output_dir out\n"
HF_NPU = "python fit_model.py --learning_rate 1e-4 --output_dir out\n"
HF_PROGRAM = ("from transformers import HfArgumentParser, TrainingArguments\n"
              "parser = HfArgumentParser((TrainingArguments,))\n"
              "(args,) = parser.parse_args_into_dataclasses()\n")


def test_options_spelled_like_a_framework_get_no_invented_defaults(tmp_path):
    """The issue's reproduction: a program that merely takes `--learning_rate` got Hugging Face
    TrainingArguments' defaults (seed 42, 3 epochs), so leaving them out "agreed". It is not
    known to be a Hugging Face trainer: the settings one side leaves out are compared as written."""
    rep = pair(tmp_path, HF_GPU, HF_NPU)
    assert rows(rep) == [("SD202", "num_train_epochs", 3, None, "run.sh", 1, None, None),
                         ("SD207", "seed", 42, None, "run.sh", 1, None, None)]
    assert rep.findings[1].message == "seed = 42 is set on GPU only; NPU has no value and no known default"
    ex, _f = facts(HF_GPU)
    assert ex.frameworks == {"hf", "one_process"} and ex.guessed == {"hf"}  # the spelling is read, the defaults are not applied


def test_a_program_known_to_be_a_hugging_face_trainer_has_its_defaults(tmp_path):
    """The program in view parses transformers' TrainingArguments: seed 42 and 3 epochs are its
    defaults, so leaving them out is no difference."""
    rep = pair(tmp_path, HF_GPU, HF_NPU, extra={"gpu/fit_model.py": HF_PROGRAM, "npu/fit_model.py": HF_PROGRAM})
    assert rep.findings == [] and rep.exit_code() == 0
    rep = pair(tmp_path, HF_GPU, HF_NPU.replace("--output_dir", "--seed 7 --output_dir"),
               extra={"gpu/fit_model.py": HF_PROGRAM, "npu/fit_model.py": HF_PROGRAM})
    assert rows(rep) == [("SD207", "seed", 42, 7, "run.sh", 1, "run.sh", 1)]


def test_a_launcher_or_a_program_name_still_says_the_framework():
    ex, _f = facts("llamafactory-cli train fit.yaml\n")
    assert ex.frameworks == {"hf"} and ex.guessed == set()
    ex, _f = facts("torchrun pretrain_fit.py --micro-batch-size 2\n")
    assert ex.frameworks == {"megatron"} and ex.guessed == set()
    ex, _f = facts("torchrun fit_model.py --micro-batch-size 2 --tensor-model-parallel-size 2\n")
    assert ex.frameworks == {"megatron"} and ex.guessed == {"megatron"}


# --- issue 40: a config found on neither side, one story ---------------------------------------

FIT_YAML = "stage: sft\nfinetuning_type: full\nlearning_rate: 1.0e-4\nnum_train_epochs: 3\n\nseed: 7\ndeepspeed: ds_fit.json\n"


def test_a_config_missing_on_both_sides_names_its_own_file_and_line(tmp_path):
    """The issue's reproduction: the accounts said "not understood: line 7" (line 7 of the YAML,
    given as the launch script's) while SD158 said nothing was left uncompared, exit 0. Both now
    say one thing, at the YAML's line."""
    launch = "#!/bin/bash\nllamafactory-cli train fit.yaml\n"
    rep = pair(tmp_path, launch, launch, extra={"gpu/fit.yaml": FIT_YAML, "npu/fit.yaml": FIT_YAML})
    g, n = tmp_path / "gpu", tmp_path / "npu"
    assert rows(rep) == [("SD158", "reference:deepspeed", f"ds_fit.json not found (tried {g / 'ds_fit.json'})",
                          f"ds_fit.json not found (tried {n / 'ds_fit.json'})", "fit.yaml", 7, "fit.yaml", 7)]
    assert rep.findings[0].message == (
        f"both sides reference ds_fit.json (GPU {g / 'fit.yaml'}:7, NPU {n / 'fit.yaml'}:7) and neither has it: the "
        f"same file on both sides: what it sets was compared on neither side, and no setting that one side states "
        f"could come from it on the other")
    gpu = next(a for a in rep.inputs if a.side == "gpu")
    # said once, on the file that names it (the launch script is understood), at that file's line
    assert gpu.unread == [] and [(t.path, t.unread) for t in gpu.through] == [(str(g / "fit.yaml"), [
        f"line 7: referenced config ds_fit.json was not found (tried {g / 'ds_fit.json'}): its "
        f"settings were not compared; the NPU side names the same file and misses it too, and no setting one side "
        f"states could come from it on the other (SD158)"])]
    assert rep.exit_code() == 0


def test_a_config_missing_on_one_side_is_a_warning_at_its_own_file(tmp_path):
    launch = "#!/bin/bash\nllamafactory-cli train fit.yaml\n"
    rep = pair(tmp_path, launch, launch, extra={"gpu/fit.yaml": FIT_YAML, "npu/fit.yaml": FIT_YAML,
                                                "gpu/ds_fit.json": '{"zero_optimization": {"stage": 2}}'})
    n = tmp_path / "npu"
    assert [(f.rule, f.key) for f in rep.findings] == [("SD154", "reference:deepspeed")]  # said once
    npu = next(a for a in rep.inputs if a.side == "npu")
    assert npu.unread == [] and [(t.path, t.unread[0].split(" (tried")[0]) for t in npu.through] == [
        (str(n / "fit.yaml"), "line 7: referenced config ds_fit.json was not found")]
    assert rep.exit_code() == 1


@pytest.mark.parametrize("text", ["pkill -9 -f fit_model.py\n", "pgrep -f torchrun fit_model.py\n",
                                  "which python fit_model.py\n"])
def test_a_command_that_only_names_programs_runs_none(text):
    ex, f = facts(text)
    assert f == {} and ex.launches == [] and ex.unread == []


def test_a_python_module_wrapper_and_a_launcher_module():
    ex, f = facts("python -m fitlib.submit --nodes 2 -- torchrun --nproc_per_node 8 fit_model.py --lr 1e-4\n")
    assert f["lr"] == (1e-4, 1) and f["world_size"] == (8, 1) and [x[0] for x in ex.launches] == ["fit_model.py"]
    assert ex.notes == ["line 1: fitlib.submit runs the command after `--` (torchrun), read as the launch; its own 1 "
                        "option(s) are the wrapper's, not compared as the run's"]
    ex, f = facts("python -m torch.distributed.run --nproc_per_node 4 -- fit_model.py --lr 1e-4\n")
    assert f["world_size"] == (4, 1) and f["lr"] == (1e-4, 1) and ex.notes == []


# ------------------------------------------------ a script started directly is one process

@pytest.mark.parametrize("gpu,npu", [
    ("python fit_model.py --lr 1e-4\n", "python fit_model.py --device_num 1 --device_id 0 --lr 1e-4\n"),
    ("python3 -m orbit.fit --lr 1e-4\n", "python3 -m orbit.fit --lr 1e-4 --device_num=1\n"),
    # the Ascend spelling of the world size, and the devices' indices (where, not how many)
    ("python fit_model.py --gpu_ids 0 --lr 1e-4\n", "python fit_model.py --device_ids 0 --rank_size 1 --lr 1e-4\n"),
])
def test_a_world_size_of_one_stated_against_one_process_is_that_run(tmp_path, gpu, npu):
    rep = pair(tmp_path, gpu, npu)
    assert [(f.rule, f.key) for f in rep.findings if f.severity != "info"] == []


@pytest.mark.parametrize("gpu,npu,g,n", [
    # one process against eight devices asked for: the program's default is out of view
    ("python fit_model.py --lr 1e-4\n", "python fit_model.py --device_num 8 --lr 1e-4\n", None, 8),
    # a runner starting one process per rank is not one process
    ("mpirun -n 8 python fit_model.py --lr 1e-4\n", "python fit_model.py --device_num 1 --lr 1e-4\n", 8, 1),
    ("python fit_model.py --lr 1e-4\n", "python fit_model.py --rank_size 8 --lr 1e-4\n", None, 8),
])
def test_any_other_world_size_against_one_process_stays_a_difference(tmp_path, gpu, npu, g, n):
    rep = pair(tmp_path, gpu, npu)
    assert [(r[0], r[1], r[2], r[3]) for r in rows(rep) if r[1] == "world_size"] == [("SD203", "world_size", g, n)]

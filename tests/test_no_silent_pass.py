"""No silent pass (issue: a difference in any file is always reported, and an input that was
not understood is never a pass).

Each reproduction of the issue, in single-file mode, folder mode and `check`; and a property
test: random folders of N paired files (Python, shell, YAML) in which K pairs carry a changed
value give exactly K findings and exit 1, and with K = 0 exit 0 and no warning.
"""
from __future__ import annotations

import json
import random

import pytest

from scriptdiff.project.checkrun import load_config, run_checks
from scriptdiff.run.pipeline import diff_files
from scriptdiff.model import Options
from scriptdiff.run.folders import diff_trees


def write(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def rows(report, severities=("error", "warning")):
    return sorted((f.rule, f.key, (f.gpu.value if f.gpu else None), (f.npu.value if f.npu else None),
                   (f.gpu.path.rsplit("/", 1)[-1] if f.gpu and f.gpu.path else None), (f.gpu.line if f.gpu else None),
                   (f.npu.path.rsplit("/", 1)[-1] if f.npu and f.npu.path else None), (f.npu.line if f.npu else None))
                  for f in report.findings if f.severity in severities)


def opts():
    return Options(use_cache=False)


PY = "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.AdamW(model.parameters(), lr={lr})\n"


def five_python_files(tmp_path):
    for i in range(5):
        write(tmp_path, {f"gpu/m{i}.py": PY.format(lr="3e-4"), f"npu/m{i}.py": PY.format(lr="1e-4" if i < 2 else "3e-4")})


# --- 1. folder mode and check never merge several files into one table -----------------------

def test_folder_of_python_files_reports_each_changed_file(tmp_path):
    five_python_files(tmp_path)
    report = diff_trees(str(tmp_path / "gpu"), str(tmp_path / "npu"), opts())
    assert rows(report) == [("SD202", "lr", 0.0003, 0.0001, f"m{i}.py", 3, f"m{i}.py", 3) for i in (0, 1)]
    assert report.exit_code() == 1
    # the accounting: every file read; the three identical pairs equal without being read
    assert sorted((a.path.rsplit("/", 1)[-1], a.side, a.status) for a in report.inputs) == sorted(
        [(f"m{i}.py", s, "understood") for i in (0, 1) for s in ("gpu", "npu")]
        + [(f"m{i}.py", s, "identical") for i in (2, 3, 4) for s in ("gpu", "npu")])


def test_check_with_scripts_folders_reports_each_changed_file(tmp_path):
    five_python_files(tmp_path)
    write(tmp_path, {"scriptdiff.toml": 'ignore = ["SD155"]\n[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n'})
    report = run_checks(load_config(str(tmp_path / "scriptdiff.toml")), opts())
    assert rows(report) == [("SD202", "lr", 0.0003, 0.0001, f"m{i}.py", 3, f"m{i}.py", 3) for i in (0, 1)]
    assert report.verdicts["hyperparameters"] == ("differences", "2 error(s)")
    assert report.exit_code() == 1


LAUNCH = ("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py \\\n    --num-layers {layers} \\\n"
          "    --lr {lr} \\\n    --micro-batch-size {mbs} {flash}\\\n    --seq-length 4096\n")


def two_launch_scripts(tmp_path):
    write(tmp_path, {
        "gpu/pretrain_7b.sh": LAUNCH.format(layers=32, lr="3e-4", mbs=1, flash="--use-flash-attn "),
        "npu/pretrain_7b.sh": LAUNCH.format(layers=32, lr="3e-4", mbs=1, flash="--use-flash-attn "),
        "gpu/pretrain_13b.sh": LAUNCH.format(layers=40, lr="2e-4", mbs=2, flash="--use-flash-attn "),
        "npu/pretrain_13b.sh": LAUNCH.format(layers=40, lr="1e-4", mbs=1, flash=""),
    })


EXPECTED_13B = [
    ("SD201", "use_flash_attn", True, False, "pretrain_13b.sh", 5, None, None),
    ("SD202", "lr", 0.0002, 0.0001, "pretrain_13b.sh", 4, "pretrain_13b.sh", 4),
    ("SD203", "micro_batch_size", 2, 1, "pretrain_13b.sh", 5, "pretrain_13b.sh", 5),
]


def test_folder_of_launch_scripts_compares_run_against_run(tmp_path):
    two_launch_scripts(tmp_path)
    report = diff_trees(str(tmp_path / "gpu"), str(tmp_path / "npu"), opts())
    assert rows(report) == EXPECTED_13B
    assert report.exit_code() == 1


def test_check_with_launch_scripts_compares_run_against_run(tmp_path):
    two_launch_scripts(tmp_path)
    write(tmp_path, {"scriptdiff.toml": 'ignore = ["SD155"]\n[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n'})
    report = run_checks(load_config(str(tmp_path / "scriptdiff.toml")), opts())
    assert rows(report) == EXPECTED_13B


def test_a_script_that_runs_two_programs_has_two_scopes(tmp_path):
    # merged, the last invocation would win and hide the first one's change
    write(tmp_path, {"gpu/run.sh": "torchrun a.py --lr 1e-4\ntorchrun b.py --lr 2e-4\n",
                     "npu/run.sh": "torchrun a.py --lr 2e-4\ntorchrun b.py --lr 2e-4\n"})
    report = diff_files([str(tmp_path / "gpu/run.sh")], [str(tmp_path / "npu/run.sh")], opts())
    assert rows(report) == [("SD202", "lr", 0.0001, 0.0002, "run.sh", 1, "run.sh", 1)]
    write(tmp_path, {"npu/run.sh": "torchrun a.py --lr 1e-4\n"})
    report = diff_files([str(tmp_path / "gpu/run.sh")], [str(tmp_path / "npu/run.sh")], opts())
    assert rows(report) == [("SD223", "invocations", 2, 1, "run.sh", None, "run.sh", None)]


# --- 2. a launcher that is not known is said, never silent ------------------------------------

SWIFT = "NPROC_PER_NODE=8 colossalai run --model Qwen2-7B --learning_rate 1e-4 --per_device_train_batch_size {bs}\n"
RAY = "kubectl exec trainer --namespace x -- python3 -m verl.trainer.main_ppo data.train_batch_size={bs}\n"


@pytest.mark.parametrize("text,name,count", [(SWIFT, "colossalai run", 3), (RAY, "kubectl exec", 2)])
def test_unknown_launcher_is_a_warning_naming_it(tmp_path, text, name, count):
    write(tmp_path, {"gpu/sft.sh": text.format(bs=2), "npu/sft.sh": text.format(bs=4)})
    report = diff_files([str(tmp_path / "gpu/sft.sh")], [str(tmp_path / "npu/sft.sh")], opts())
    what = f"line 1: launcher `{name}` is not known: its {count} option{'s were' if count > 1 else ' was'} not compared"
    assert [(f.rule, f.key.rsplit("/", 2)[-2], (f.gpu or f.npu).value) for f in report.findings] == [
        ("SD154", "gpu", what), ("SD154", "npu", what)]
    assert report.exit_code() == 1
    tree = diff_trees(str(tmp_path / "gpu"), str(tmp_path / "npu"), opts())
    assert [f.rule for f in tree.findings] == ["SD154", "SD154"] and tree.exit_code() == 1
    write(tmp_path, {"scriptdiff.toml": 'ignore = ["SD155"]\n[gpu]\nlaunch = "gpu/sft.sh"\n[npu]\nlaunch = "npu/sft.sh"\n'})
    report = run_checks(load_config(str(tmp_path / "scriptdiff.toml")), opts())
    verdict, reason = report.verdicts["hyperparameters"]
    assert verdict == "not checked" and reason.startswith("not understood: ")
    assert "gpu/sft.sh" in reason and "npu/sft.sh" in reason
    assert report.exit_code() == 1


SCORE = "kestrel_score --beam {beam} --jobs 4 --blend 0.5 --prune 7.5 --window -1 {extra}\n"


def test_a_launcher_not_known_hides_only_what_its_options_name(tmp_path):
    """A scoring tool started after training (`kestrel_score --beam ...`, a launcher not known)
    is said once (SD154) and can set only what its options name: a seed the NPU run adds to
    its training is still found; an option of the tool that names the seed leaves it unknown."""
    train = "torchrun fit_orbit.py --lr 1e-4{seed}\n"
    write(tmp_path, {"gpu/run.sh": train.format(seed="") + SCORE.format(beam=10, extra=""),
                     "npu/run.sh": train.format(seed=" --seed 7")})
    report = diff_files([str(tmp_path / "gpu/run.sh")], [str(tmp_path / "npu/run.sh")], opts())
    assert [r for r in rows(report) if r[0] != "SD154"] == [("SD207", "seed", None, 7, None, None, "run.sh", 1)]
    assert [f.rule for f in report.findings if f.rule == "SD154"] == ["SD154"]
    write(tmp_path, {"gpu/run.sh": train.format(seed="") + SCORE.format(beam=10, extra="--seed 3")})
    report = diff_files([str(tmp_path / "gpu/run.sh")], [str(tmp_path / "npu/run.sh")], opts())
    assert [r for r in rows(report) if r[0] != "SD154"] == []
    gpu = next(a for a in report.inputs if a.side == "gpu")
    assert gpu.uncompared == {"seed"}


def test_a_config_found_nowhere_hides_only_settings_of_the_run_that_names_it(tmp_path):
    """A scoring step after training names its own config, found nowhere (`python score.py
    --config score.yaml`): it is said (SD154) and can hide only what the run it is named for is
    compared with; the seed the other side's training adds is still found."""
    train = "torchrun fit_orbit.py --lr 1e-4{seed}\n"
    score = "python score_orbit.py --config score.yaml --beam 10\n"
    write(tmp_path, {"gpu/run.sh": train.format(seed="") + score, "npu/run.sh": train.format(seed=" --seed 7")})
    report = diff_files([str(tmp_path / "gpu/run.sh")], [str(tmp_path / "npu/run.sh")], opts())
    assert ("SD207", "seed", None, 7, None, None, "run.sh", 1) in rows(report)
    # named by the training itself, the same config can hide the seed: not compared
    write(tmp_path, {"gpu/run.sh": "torchrun fit_orbit.py --lr 1e-4 --config fit.yaml\n",
                     "npu/run.sh": "torchrun fit_orbit.py --lr 1e-4 --seed 7\n"})
    report = diff_files([str(tmp_path / "gpu/run.sh")], [str(tmp_path / "npu/run.sh")], opts())
    assert not any(f.key == "seed" for f in report.findings)
    assert next(a for a in report.inputs if a.side == "gpu").missing[0].withheld == {"seed"}
    # both: the seed is left uncompared by the training's config, and the account says so of it alone
    write(tmp_path, {"gpu/run.sh": "torchrun fit_orbit.py --lr 1e-4 --config fit.yaml\n" + score})
    report = diff_files([str(tmp_path / "gpu/run.sh")], [str(tmp_path / "npu/run.sh")], opts())
    withheld = {m.written: m.withheld for m in next(a for a in report.inputs if a.side == "gpu").missing}
    assert withheld == {"fit.yaml": {"seed"}, "score.yaml": set()}


def test_the_text_report_ends_with_the_account(tmp_path, cli):
    write(tmp_path, {"gpu/sft.sh": SWIFT.format(bs=2), "npu/sft.sh": SWIFT.format(bs=4)})
    code, out, _ = cli("diff", str(tmp_path / "gpu"), str(tmp_path / "npu"), "--no-cache", "--color", "never")
    assert code == 1
    last = out.strip().splitlines()[-1]
    assert last.startswith("read 2 files: 0 understood or identical, 2 not: ")
    assert "sft.sh (not understood: line 1: launcher `colossalai run` is not known" in last
    code, out, _ = cli("diff", str(tmp_path / "gpu"), str(tmp_path / "npu"), "--no-cache", "-f", "json")
    inputs = json.loads(out)["inputs"]
    assert [(i["side"], i["kind"], i["status"], i["settings"]) for i in inputs] == [
        ("gpu", "shell", "not understood", 0), ("npu", "shell", "not understood", 0)]


# --- 3. a side that fails is unknown, not absent ----------------------------------------------

def test_a_side_that_does_not_parse_invents_nothing(tmp_path):
    write(tmp_path, {"gpu/c.yaml": "learning_rate: 1e-4\nwarmup_steps: 10\n",
                     "npu/c.yaml": "learning_rate: 2e-4\nwarmup_steps: [10\n"})
    report = diff_files([str(tmp_path / "gpu/c.yaml")], [str(tmp_path / "npu/c.yaml")], opts())
    assert report.findings == []  # no "set on GPU only" from a parse failure
    assert [(e.path.rsplit("/", 2)[-2:], e.fatal) for e in report.errors] == [(["npu", "c.yaml"], True)]
    assert report.errors[0].message.endswith("(2 setting(s) of the other side could not be compared: "
                                             "lr, lr_warmup_iters)")  # canonical keys
    assert report.exit_code() == 2  # nothing of the NPU side remains to compare
    # in a folder with another pair that could be compared: the error, the rest, exit 1
    write(tmp_path, {"gpu/d.yaml": "seed: 1\n", "npu/d.yaml": "seed: 2\n"})
    report = diff_trees(str(tmp_path / "gpu"), str(tmp_path / "npu"), opts())
    assert rows(report) == [("SD207", "seed", 1, 2, "d.yaml", 1, "d.yaml", 1)]
    assert [e.path.rsplit("/", 1)[-1] for e in report.errors] == ["c.yaml"] and report.exit_code() == 1


@pytest.mark.parametrize("npu_text", ["", "[1, 2]\n", "just a string\n"])
def test_empty_or_non_mapping_config_is_a_failed_side(tmp_path, npu_text):
    write(tmp_path, {"gpu/c.yaml": "learning_rate: 1e-4\n", "npu/c.yaml": npu_text})
    report = diff_files([str(tmp_path / "gpu/c.yaml")], [str(tmp_path / "npu/c.yaml")], opts())
    assert report.findings == [] and report.exit_code() == 2
    assert [e.fatal for e in report.errors] == [True]


@pytest.mark.parametrize("npu_text,what", [("", "an empty file"), ("torchrun train.py --lr 1\n", "a text file"),
                                          ("\x00\x01binary", None)])
def test_env_with_a_side_that_is_no_snapshot_is_exit_2(tmp_path, cli, npu_text, what):
    write(tmp_path, {"gpu.txt": "torch==2.1.0\nnumpy==1.26.4\n"})
    (tmp_path / "npu.bin").write_bytes(npu_text.encode())
    code, out, err = cli("env", str(tmp_path / "gpu.txt"), str(tmp_path / "npu.bin"))
    assert code == 2
    if what:
        assert f"npu.bin: not an environment snapshot or package list ({what}); not compared" in err


# --- 4. selectors: a typo never turns a gate green ----------------------------------------------

@pytest.mark.parametrize("flag,value,hint", [("--select", "SD2O1", "; did you mean SD201?"),
                                             ("--ignore", "bogus", " (codes run from SD001"),
                                             ("--select", "SD9", "; did you mean SD")])
def test_unknown_selector_is_exit_2_with_a_suggestion(tmp_path, cli, flag, value, hint):
    write(tmp_path, {"g.yaml": "lr: 1\n", "n.yaml": "lr: 1\n"})
    code, out, err = cli("diff", str(tmp_path / "g.yaml"), str(tmp_path / "n.yaml"), flag, value)
    assert code == 2 and out == ""
    assert err.startswith(f"scriptdiff: {flag}: unknown rule code or prefix {value.upper()!r}{hint}")


def test_known_prefix_selectors_still_work(tmp_path, cli):
    write(tmp_path, {"g.yaml": "learning_rate: 1\n", "n.yaml": "learning_rate: 2\n"})
    assert cli("diff", str(tmp_path / "g.yaml"), str(tmp_path / "n.yaml"), "--select", "SD2")[0] == 1
    assert cli("diff", str(tmp_path / "g.yaml"), str(tmp_path / "n.yaml"), "--select", "sd202")[0] == 1
    assert cli("diff", str(tmp_path / "g.yaml"), str(tmp_path / "n.yaml"), "--ignore", "SD2")[0] == 0


def test_unknown_code_in_an_inline_ignore_is_exit_2(tmp_path):
    write(tmp_path, {"g.yaml": "learning_rate: 1\n", "n.yaml": "learning_rate: 2  # scriptdiff: ignore[SD2O2]\n"})
    report = diff_files([str(tmp_path / "g.yaml")], [str(tmp_path / "n.yaml")], opts())
    assert report.exit_code() == 2
    assert [e.message for e in report.errors] == [
        "line 1: ignore comment: unknown rule code or prefix 'SD2O2'; did you mean SD202?"]


# --- referenced configs: one resolution order, said when it matters ---------------------------

def test_reference_found_relative_to_the_working_directory_inside_the_repository(tmp_path, monkeypatch):
    write(tmp_path, {".git/HEAD": "ref: refs/heads/main\n", "tools/configs/ds.json": '{"zero_optimization": {"stage": 2}}',
                     "gpu/run.sh": "deepspeed train.py --deepspeed configs/ds.json --lr 1e-4\n",
                     "npu/run.sh": "deepspeed train.py --deepspeed configs/ds.json --lr 1e-4\n"})
    monkeypatch.chdir(tmp_path / "tools")  # a script run from a sub-folder of its project
    report = diff_files(["../gpu/run.sh"], ["../npu/run.sh"], opts())
    assert report.findings == [] and report.exit_code() == 0
    notes = [n for a in report.inputs for n in a.notes if "ds.json" in n]
    assert notes == [f"line 1: referenced config configs/ds.json found relative to the working directory "
                     f"({tmp_path / 'tools' / 'configs' / 'ds.json'})"] * 2


# --- property: K changed pairs among N give exactly K findings ----------------------------------

TEMPLATES = {
    ".py": (PY, "lr", ["3e-4", "1e-4", "5e-5"]),
    ".sh": ("torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size {v} --seq-length 2048\n",
            "micro_batch_size", ["1", "2", "4"]),
    ".yaml": ("learning_rate: 1e-4\nper_device_train_batch_size: {v}\n", "micro_batch_size",
              ["2", "8", "16"]),
}


@pytest.mark.parametrize("seed", range(12))
def test_k_changed_pairs_give_exactly_k_findings(tmp_path, seed):
    rnd = random.Random(seed)
    n = rnd.randint(3, 9)
    k = 0 if seed % 4 == 0 else rnd.randint(1, n)
    changed = set(rnd.sample(range(n), k))
    for i in range(n):
        ext = rnd.choice(sorted(TEMPLATES))
        text, _key, values = TEMPLATES[ext]
        g, other = rnd.sample(values, 2)
        fill = (lambda v: text.format(lr=v)) if ext == ".py" else (lambda v: text.format(v=v))
        write(tmp_path, {f"gpu/f{i}{ext}": fill(g), f"npu/f{i}{ext}": fill(other if i in changed else g)})
    report = diff_trees(str(tmp_path / "gpu"), str(tmp_path / "npu"), opts())
    got = [(f.gpu.path.rsplit("/", 1)[-1], f.key) for f in report.findings if f.severity in ("error", "warning")]
    want = sorted((f"f{i}{ext}", TEMPLATES[ext][1]) for i in changed
                  for ext in [next(e for e in TEMPLATES if (tmp_path / "gpu" / f"f{i}{e}").exists())])
    assert sorted(got) == want
    assert report.exit_code() == (1 if k else 0)
    if k == 0:
        assert report.findings == [] and report.errors == []


def test_the_tree_benchmark_finds_every_planted_edit(tmp_path):
    """benchmarks/gen_tree.py plants 7 semantic edits (five max_norm 1.0 -> 0.5, one
    --use-flash-attn removed, cutoff_len 2048 -> 1024): the folder diff finds each, where the
    merged tables of old found one. A smaller tree than the benchmark's, same generator."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from gen_tree import generate, missed

    info = generate(tmp_path, n_py=1000, n_cfg=12)
    assert len(info["planted"]) == 7
    report = diff_trees(str(tmp_path / "gpu"), str(tmp_path / "npu"), opts())
    assert missed(report.to_json(), info["planted"]) == []
    assert sorted(f.key for f in report.findings if f.severity in ("error", "warning")) == [
        "clip_grad"] * 5 + ["seq_length", "use_flash_attn"]
    assert report.exit_code() == 1


def test_check_with_a_config_that_does_not_parse_invents_nothing(tmp_path):
    write(tmp_path, {"gpu/c.yaml": "learning_rate: 1e-4\nwarmup_steps: 10\n",
                     "npu/c.yaml": "learning_rate: 2e-4\nwarmup_steps: [10\n",
                     "scriptdiff.toml": 'ignore = ["SD155"]\n[gpu]\nconfigs = "gpu/c.yaml"\n[npu]\nconfigs = "npu/c.yaml"\n'})
    report = run_checks(load_config(str(tmp_path / "scriptdiff.toml")), opts())
    assert report.findings == []
    assert [e.path.rsplit("/", 2)[-2:] for e in report.errors] == [["npu", "c.yaml"]]
    verdict, reason = report.verdicts["hyperparameters"]
    assert verdict == "not checked" and reason.startswith("could not be read: ") and reason.endswith(
        "npu/c.yaml (see errors)")
    assert report.exit_code() == 2

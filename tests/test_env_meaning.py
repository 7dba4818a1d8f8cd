"""Issue 39, round 6: a launch script's own variables read by the words of their names.

A variable in no table of rules/environment.yaml whose name says it names a run, a place or a
cadence (the words that make a setting cosmetic) is SD307, info; any other plain variable that
differs stays SD301; a library's variable keeps its role. Made-up names throughout."""
from __future__ import annotations

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files


def rows(tmp_path, gpu: str, npu: str):
    paths = []
    for side, text in (("gpu", gpu), ("npu", npu)):
        p = tmp_path / side / "launch.sh"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        paths.append([str(p)])
    rep = diff_files(*paths, Options(use_cache=False))
    return sorted((f.rule, f.severity, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                   f.gpu.line if f.gpu else None, f.npu.line if f.npu else None) for f in rep.findings)


SCRIPT = ("export ORBIT_PROJECT_NAME={p}\nexport ORBIT_TB_DIR=/runs/{p}\nexport ORBIT_SAVE_FREQ={f}\n"
          "export ORBIT_LR={lr}\ntorchrun fit_orbit.py\n")


def test_a_scripts_own_names_places_and_cadences_are_info_its_other_variables_loud(tmp_path):
    got = rows(tmp_path, SCRIPT.format(p="a", f=30, lr="1e-4"), SCRIPT.format(p="b", f=-1, lr="2e-4"))
    assert got == [
        ("SD301", "warning", "env:ORBIT_LR", "1e-4", "2e-4", 4, 4),
        ("SD307", "info", "env:ORBIT_PROJECT_NAME", "a", "b", 1, 1),
        ("SD307", "info", "env:ORBIT_SAVE_FREQ", "30", "-1", 3, 3),
        ("SD307", "info", "env:ORBIT_TB_DIR", "/runs/a", "/runs/b", 2, 2),
    ]
    assert rows(tmp_path / "same", SCRIPT.format(p="a", f=30, lr="1e-4"), SCRIPT.format(p="a", f=30, lr="1e-4")) == []


def test_a_librarys_variable_keeps_its_role_whatever_its_name_says(tmp_path):
    # a determinism variable is read by its table, never by its words
    got = rows(tmp_path, "export NCCL_DETERMINISTIC=1\ntorchrun fit_orbit.py\n",
               "export HCCL_DETERMINISTIC=0\ntorchrun fit_orbit.py\n")
    assert [r[:3] for r in got] == [("SD306", "error", "env:NCCL_DETERMINISTIC")]


def test_a_launchers_subcommand_that_starts_no_program_is_neither_a_launch_nor_unknown(tmp_path):
    # a cluster started and stopped around the job: nothing to compare, nothing unknown
    script = ("ray stop --force\nray start --head --num-gpus {n}\n"
              "ray job submit --address auto -- python3 -m orbit.fit trainer.lr={lr}\nray stop\n")
    got = rows(tmp_path, script.format(n=8, lr="1e-4"), script.format(n=16, lr="2e-4"))
    assert got == [("SD202", "error", "lr", 0.0001, 0.0002, 3, 3)]
    # a subcommand the table knows neither way is still said, once a side
    other = "ray frobnicate --num-gpus {n}\nray job submit -- python3 -m orbit.fit trainer.lr=1e-4\n"
    got = rows(tmp_path / "o", other.format(n=8), other.format(n=16))
    assert [r[:3] for r in got] == [("SD154", "warning", f"input:{tmp_path}/o/gpu/launch.sh"),
                                    ("SD154", "warning", f"input:{tmp_path}/o/npu/launch.sh")]


def test_an_idle_subcommand_is_validated_against_the_launching_ones(tmp_path):
    import shutil

    import pytest
    from scriptdiff.ruleset.rulepack import RuleError, load_packs, rules_dir

    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    pack = folder / "shell.yaml"
    text = pack.read_text(encoding="utf-8")
    old = "      idle: [start, stop,"
    assert old in text
    pack.write_text(text.replace(old, "      idle: [job, start, stop,", 1), encoding="utf-8")
    with pytest.raises(RuleError, match="ray: job cannot both launch and start nothing"):
        load_packs(sorted(folder.glob("*.yaml")))


def test_a_variable_passed_on_as_an_option_is_compared_there(tmp_path):
    script = ("export ORBIT_BATCH={b}\nexport ORBIT_SEED={s}\n"
              "torchrun pretrain_gpt.py --global-batch-size $ORBIT_BATCH --micro-batch-size 1\n")
    got = rows(tmp_path, script.format(b=512, s=1), script.format(b=1024, s=2))
    assert [r for r in got if r[0] != "SD230"] == [
        ("SD203", "error", "global_batch_size", 512, 1024, 1, 1),  # the option, where its value is written
        ("SD301", "warning", "env:ORBIT_SEED", "1", "2", 2, 2),  # not passed on: the environment's
        ("SD308", "info", "env:ORBIT_BATCH", "512", "1024", 1, 1),
    ]
    passed = next(f for f in tmp_findings(tmp_path) if f.key == "env:ORBIT_BATCH")
    assert passed.message.endswith("the script passes it on as global_batch_size, compared there")
    # passed on by one side only: the other side's program may read it from the environment
    npu = "export ORBIT_BATCH=1024\ntorchrun pretrain_gpt.py --micro-batch-size 1\n"
    got = rows(tmp_path / "one", script.format(b=512, s=1), npu)
    assert ("SD301", "warning", "env:ORBIT_BATCH", "512", "1024", 1, 1) in got


def tmp_findings(tmp_path):
    return diff_files([str(tmp_path / "gpu" / "launch.sh")], [str(tmp_path / "npu" / "launch.sh")],
                      Options(use_cache=False)).findings

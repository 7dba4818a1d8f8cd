"""The alignment profile (issue 43, docs/fidelity.md): `check --profile alignment` (or `profile =
"alignment"` in the configuration) checks that each side is set up for a GPU/NPU accuracy
comparison; each missing item is an SD228 finding on the side that misses it, with the line to
add, and `fix --profile alignment` writes the NPU launch script's missing export lines."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli
from scriptdiff.inputs import store
from scriptdiff.ruleset.rulepack import RuleError, load_packs, rules_dir

ROOT = Path(__file__).resolve().parents[1]
CONFIG = '[gpu]\nlaunch = ["gpu/run.sh"]\n[npu]\nlaunch = ["npu/run.sh"]\n'
BARE_SH = "torchrun --nproc_per_node 8 train.py\n"
BARE_PY = "import torch\ntorch.manual_seed(1)\n"
FULL_SH = ("export HCCL_DETERMINISTIC=true\nexport LCCL_DETERMINISTIC=1\nexport ATB_MATMUL_SHUFFLE_K_ENABLE=0\n"
           "export CUBLAS_WORKSPACE_CONFIG=:4096:8\ntorchrun --nproc_per_node 8 train.py\n")
FULL_PY = "import torch\ntorch.manual_seed(1)\ntorch.use_deterministic_algorithms(True)\n"


@pytest.fixture(autouse=True)
def _packs():
    """A profile loaded by one test never outlives it, nor does the folder a test goes to."""
    before, here = store.user_packs(), os.getcwd()
    yield
    store.set_user_packs(before)
    os.chdir(here)


def setup(root: Path, sh: dict, py: dict, config: str = CONFIG) -> Path:
    """Both sides' launch script and program under `root` (the current folder: paths read relative)."""
    for side in ("gpu", "npu"):
        (root / side).mkdir(parents=True)
        (root / side / "run.sh").write_text(sh[side])
        (root / side / "train.py").write_text(py[side])
    (root / "scriptdiff.toml").write_text(config)
    os.chdir(root)
    return Path("scriptdiff.toml")


def aligned(out: str) -> list[tuple]:
    return [(f["rule"], f["severity"], f["key"], f["gpu"]["path"] if f["gpu"] else None,
             f["npu"]["path"] if f["npu"] else None, (f["gpu"] or f["npu"])["value"])
            for f in json.loads(out)["findings"] if f["rule"] == "SD228"]


def test_each_missing_item_is_a_finding_on_the_side_that_misses_it(tmp_path):
    cfg = setup(tmp_path, {"gpu": BARE_SH, "npu": BARE_SH}, {"gpu": BARE_PY, "npu": BARE_PY})
    code, out, _ = run_cli("check", "--config", str(cfg), "--profile", "alignment", "--format", "json")
    g, n = "gpu", "npu"
    assert code == 1
    assert aligned(out) == [
        ("SD228", "warning", "align:cublas_workspace", f"{g}/run.sh", None, "missing: export CUBLAS_WORKSPACE_CONFIG=:4096:8"),
        ("SD228", "warning", "align:deterministic_algorithms", f"{g}/train.py", None,
         "missing: torch.use_deterministic_algorithms(True)"),
        ("SD228", "warning", "align:atb_matmul_shuffle_k", None, f"{n}/run.sh",
         "missing: export ATB_MATMUL_SHUFFLE_K_ENABLE=0"),
        ("SD228", "warning", "align:hccl_deterministic", None, f"{n}/run.sh", "missing: export HCCL_DETERMINISTIC=true"),
        ("SD228", "warning", "align:lccl_deterministic", None, f"{n}/run.sh", "missing: export LCCL_DETERMINISTIC=1"),
        ("SD228", "warning", "align:deterministic_algorithms", None, f"{n}/train.py",
         "missing: torch.use_deterministic_algorithms(True)")]
    f = next(f for f in json.loads(out)["findings"] if f["key"] == "align:hccl_deterministic")
    assert f["message"] == (f"NPU side not set up for an accuracy comparison (deterministic HCCL collectives): add "
                            f"`export HCCL_DETERMINISTIC=true` to {n}/run.sh")


def test_a_complete_setup_is_silent(tmp_path):
    cfg = setup(tmp_path, {"gpu": FULL_SH, "npu": FULL_SH}, {"gpu": FULL_PY, "npu": FULL_PY})
    code, out, _ = run_cli("check", "--config", str(cfg), "--profile", "alignment", "--format", "json")
    assert aligned(out) == []


def test_a_value_that_does_not_set_it_is_missing_and_no_seed_is_missing(tmp_path):
    sh = FULL_SH.replace("HCCL_DETERMINISTIC=true", "HCCL_DETERMINISTIC=false")
    cfg = setup(tmp_path, {"gpu": FULL_SH, "npu": sh},
                {"gpu": FULL_PY, "npu": "import torch\ntorch.use_deterministic_algorithms(True)\n"})
    code, out, _ = run_cli("check", "--config", str(cfg), "--profile", "alignment", "--format", "json")
    assert sorted((k, gp is None) for _r, _s, k, gp, _np, _v in aligned(out)) == [
        ("align:hccl_deterministic", True), ("align:seed", True)]


def test_without_the_profile_nothing_is_said_and_the_configuration_can_name_it(tmp_path):
    cfg = setup(tmp_path, {"gpu": BARE_SH, "npu": BARE_SH}, {"gpu": BARE_PY, "npu": BARE_PY})
    _code, out, _ = run_cli("check", "--config", str(cfg), "--format", "json")
    assert aligned(out) == []
    cfg.write_text('profile = "alignment"\n' + CONFIG)
    _code, out, _ = run_cli("check", "--config", str(cfg), "--format", "json")
    assert len(aligned(out)) == 6


def test_megatron_dropout_and_its_npu_spelling(tmp_path):
    gsh = ("export CUBLAS_WORKSPACE_CONFIG=:4096:8\n"
           "torchrun pretrain_gpt.py --seed 1234 --deterministic-mode --attention-dropout 0.0 --hidden-dropout 0.0\n")
    nsh = ("export HCCL_DETERMINISTIC=true\nexport LCCL_DETERMINISTIC=1\nexport ATB_MATMUL_SHUFFLE_K_ENABLE=0\n"
           "torchrun pretrain_gpt.py --seed 1234\n")
    for side, text in (("gpu", gsh), ("npu", nsh)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "run.sh").write_text(text)
    (tmp_path / "scriptdiff.toml").write_text(CONFIG)
    os.chdir(tmp_path)
    _code, out, _ = run_cli("check", "--config", "scriptdiff.toml", "--profile", "alignment",
                            "--format", "json")
    n = "npu"
    assert sorted(aligned(out)) == [
        ("SD228", "warning", "align:deterministic_algorithms", None, f"{n}/run.sh", "missing: --npu-deterministic"),
        ("SD228", "warning", "align:dropout_off", None, f"{n}/run.sh",
         "missing: --attention-dropout 0.0 --hidden-dropout 0.0"),
        ("SD228", "warning", "align:nccl_algo", "gpu/run.sh", None, "missing: export NCCL_ALGO=Ring")]  # Megatron's rule


def test_unknown_profile_is_a_usage_error(tmp_path):
    cfg = setup(tmp_path, {"gpu": BARE_SH, "npu": BARE_SH}, {"gpu": BARE_PY, "npu": BARE_PY})
    code, _out, err = run_cli("check", "--config", str(cfg), "--profile", "nosuch")
    assert (code, err) == (2, "scriptdiff: --profile nosuch: no such profile (known: alignment; a pack of --rules may "
                              "add one under `profiles`)\n")


def test_a_teams_own_profile_is_a_pack(tmp_path):
    cfg = setup(tmp_path, {"gpu": BARE_SH, "npu": BARE_SH}, {"gpu": BARE_PY, "npu": BARE_PY})
    team = tmp_path / "ours.yaml"
    team.write_text(
        "profiles:\n  ours:\n    title: ours\n    items:\n      py_hash:\n        title: hash seed fixed\n"
        "        sides: [npu]\n        stacks: [any]\n        env: PYTHONHASHSEED\n        values: [\"0\"]\n"
        "        add:\n          any: {how: export, line: \"export PYTHONHASHSEED=0\"}\n        source: \"our notes\"\n")
    code, out, _ = run_cli("check", "--config", str(cfg), "--rules", str(team), "--profile", "ours", "--format", "json")
    assert aligned(out) == [("SD228", "warning", "align:py_hash", None, "npu/run.sh", "missing: export PYTHONHASHSEED=0")]


def broken(tmp_path, old: str, new: str):
    """rules/alignment.yaml's text, and the error of loading the shipped packs with `old` made `new` in it."""
    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    path = folder / "alignment.yaml"
    text = path.read_text()
    path.write_text(text.replace(old, new))
    with pytest.raises(RuleError) as e:
        load_packs(sorted(folder.glob("*.yaml")))
    return text, e


def test_bad_profile_item_names_the_pack_and_line(tmp_path):
    text, e = broken(tmp_path, "        env: LCCL_DETERMINISTIC\n", "        env: LCCL_DETERMINISTIC\n        keys: [seed]\n")
    line = text[:text.index("      lccl_deterministic:")].count("\n") + 1
    assert str(e.value) == (f"rules/alignment.yaml:{line}: profiles.alignment.items.lccl_deterministic: an item is "
                            f"satisfied either by keys or by env, one of them")


def test_bundled_example_names_what_each_side_lacks():
    os.chdir(ROOT)
    code, out, _ = run_cli("check", "--config", "fixtures/example/scriptdiff.toml", "--profile", "alignment",
                           "--format", "json")
    assert code == 1
    x = "fixtures/example/"
    assert [(k, gp, np_) for _r, _s, k, gp, np_, _v in aligned(out)] == [
        ("align:cublas_workspace", x + "gpu/pretrain.sh", None),
        ("align:deterministic_algorithms", x + "gpu/train.py", None),
        ("align:atb_matmul_shuffle_k", None, x + "npu/pretrain.sh"),
        ("align:lccl_deterministic", None, x + "npu/pretrain.sh"),
        ("align:deterministic_algorithms", None, x + "npu/train.py")]


def test_fix_adds_the_npu_exports_and_refuses_the_rest(tmp_path):
    ex = tmp_path / "ex"
    shutil.copytree(ROOT / "fixtures/example", ex)
    subprocess.run(["git", "init", "-q"], cwd=ex, check=True)
    subprocess.run(["git", "add", "-A"], cwd=ex, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"], cwd=ex, check=True)
    code, out, err = run_cli("fix", "--profile", "alignment", "--select", "SD228", "--format", "json",
                             str(ex / "gpu"), str(ex / "npu"))
    assert code == 1, err  # what is left: the GPU side's items and the NPU program's line
    text = (ex / "npu/pretrain.sh").read_text()
    assert text.splitlines()[3:8] == ["export CUDA_DEVICE_MAX_CONNECTIONS=1", "export HCCL_DETERMINISTIC=true",
                                      "export ATB_MATMUL_SHUFFLE_K_ENABLE=0", "export LCCL_DETERMINISTIC=1", ""]
    doc = json.loads(out)
    said = [(f["key"], f["fix"]["fixed"], f["fix"]["reason"]) for f in doc["findings"] if f["rule"] == "SD228"]
    assert said == [
        ("align:cublas_workspace", False, f"the GPU side's setup: fix edits the NPU side only; add `export "
                                          f"CUBLAS_WORKSPACE_CONFIG=:4096:8` to {ex}/gpu/pretrain.sh by hand"),
        ("align:deterministic_algorithms", False, f"the GPU side's setup: fix edits the NPU side only; add "
                                                  f"`torch.use_deterministic_algorithms(True)` to {ex}/gpu/train.py by hand"),
        ("align:atb_matmul_shuffle_k", True, None),
        ("align:lccl_deterministic", True, None),
        ("align:deterministic_algorithms", False, f"add `torch.use_deterministic_algorithms(True)` to {ex}/npu/train.py "
                                                  f"by hand: fix writes a missing export line only")]


# ---------------------------------------------------------------- issue 43's remaining items

LOADER_PY = ("import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
             "torch.use_deterministic_algorithms(True)\n"
             "loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2)\n"
             "other = DataLoader(ds, batch_size=4, shuffle=True, generator=g)\n"
             "dist = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds, shuffle=True))\n")


def test_a_shuffling_loader_without_a_seed_is_missing_at_its_line(tmp_path):
    seeded = LOADER_PY.replace("torch.use_deterministic_algorithms(True)\n",
                               "torch.use_deterministic_algorithms(True)\ntorch.manual_seed(1)\n")
    cfg = setup(tmp_path, {"gpu": FULL_SH, "npu": FULL_SH}, {"gpu": seeded, "npu": LOADER_PY})
    _code, out, _ = run_cli("check", "--config", str(cfg), "--profile", "alignment", "--format", "json")
    # the GPU side seeds torch's generator: its loader's order is fixed; the NPU side does not
    assert aligned(out) == [
        ("SD228", "warning", "align:seed", None, "npu/train.py", "missing: torch.manual_seed(1234)"),
        ("SD228", "warning", "align:data_order_seeded", None, "npu/train.py",
         "missing: generator=torch.Generator().manual_seed(1234)")]
    f = next(f for f in json.loads(out)["findings"] if f["key"] == "align:data_order_seeded")
    assert f["npu"]["line"] == 4
    assert f["message"] == ("NPU side not set up for an accuracy comparison (the data order seeded (a shuffling "
                            "DataLoader draws it from torch's default generator)): add "
                            "`generator=torch.Generator().manual_seed(1234)` to `loader = DataLoader(ds, batch_size=4, "
                            "shuffle=True, num_workers=2)` at npu/train.py:4")


def test_loaders_that_are_seeded_or_do_not_shuffle_are_silent(tmp_path):
    py = LOADER_PY.replace("shuffle=True, num_workers=2", "shuffle=False, num_workers=2")
    cfg = setup(tmp_path, {"gpu": FULL_SH, "npu": FULL_SH}, {"gpu": py, "npu": py})
    _code, out, _ = run_cli("check", "--config", str(cfg), "--profile", "alignment", "--format", "json")
    # a generator given, a DistributedSampler (seed 0 by default), no shuffle: nothing but the run's seed
    assert [k for _r, _s, k, _g, _n, _v in aligned(out)] == ["align:seed", "align:seed"]


MEGATRON_GPU = ("export CUBLAS_WORKSPACE_CONFIG=:4096:8\nexport NCCL_ALGO=Ring\n"
                "torchrun --nproc_per_node 8 pretrain_gpt.py --seed 1234 --deterministic-mode "
                "--attention-dropout 0.0 --hidden-dropout 0.0 --tensor-model-parallel-size 2\n")
MEGATRON_NPU = ("export HCCL_DETERMINISTIC=true\nexport LCCL_DETERMINISTIC=1\nexport ATB_MATMUL_SHUFFLE_K_ENABLE=0\n"
                "torchrun --nproc_per_node 8 pretrain_gpt.py --seed 1234 --npu-deterministic "
                "--attention-dropout 0.0 --hidden-dropout 0.0 --tensor-model-parallel-size 2\n")


def megatron(tmp_path, gsh: str, nsh: str) -> list:
    for side, text in (("gpu", gsh), ("npu", nsh)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "run.sh").write_text(text)
    (tmp_path / "scriptdiff.toml").write_text(CONFIG)
    os.chdir(tmp_path)
    _code, out, _ = run_cli("check", "--config", "scriptdiff.toml", "--profile", "alignment", "--format", "json")
    return [f for f in json.loads(out)["findings"] if f["rule"] == "SD228"]


def test_a_complete_megatron_setup_is_silent(tmp_path):
    assert megatron(tmp_path, MEGATRON_GPU, MEGATRON_NPU) == []


def test_megatron_deterministic_mode_needs_nccl_algo_on_the_gpu(tmp_path):
    got = megatron(tmp_path, MEGATRON_GPU.replace("export NCCL_ALGO=Ring\n", "export NCCL_ALGO=NVLS\n"), MEGATRON_NPU)
    assert [(f["key"], f["gpu"]["path"], f["gpu"]["value"], f["npu"]) for f in got] == [
        ("align:nccl_algo", "gpu/run.sh", "missing: export NCCL_ALGO=Ring", None)]
    assert got[0]["extra"]["source"].startswith("NVIDIA/Megatron-LM megatron/training/arguments.py validate_args")


def test_another_data_parallel_size_on_the_npu_names_both(tmp_path):
    got = megatron(tmp_path, MEGATRON_GPU, MEGATRON_NPU.replace("--tensor-model-parallel-size 2",
                                                                "--tensor-model-parallel-size 4"))
    assert [(f["key"], f["gpu"]["value"], f["npu"]["value"], f["npu"]["path"]) for f in got] == [
        ("align:same_data_parallel", 4, 2, "npu/run.sh")]
    assert got[0]["message"] == ("NPU side not set up for an accuracy comparison (the same number of devices per "
                                 "data-parallel group as the GPU run (world_size / (tp * pp * cp))): data_parallel_size "
                                 "is 2 on NPU, 4 on GPU; make it 4 (world_size / (tp * pp * cp) as on the GPU)")


def test_an_item_naming_no_probe_names_the_pack_and_line(tmp_path):
    text, e = broken(tmp_path, "        probe: unseeded_shuffle\n", "        probe: nosuch\n")
    line = text[:text.index("        probe: unseeded_shuffle")].count("\n") + 1
    assert str(e.value) == (f"rules/alignment.yaml:{line}: profiles.alignment.items.data_order_seeded.probe: "
                            f"'nosuch' is not a probe (rules/alignment.yaml probes)")

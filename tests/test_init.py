"""`scriptdiff init` (issue 30): from a project with a GPU setup and its NPU port to a `check`
that finds its configuration by itself. The path is: init, run what it prints, check."""
from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "fixtures" / "example"


def rows(doc: dict, strip: str = "") -> list[tuple]:
    def where(s):
        return (s["path"][len(strip):] if s["path"] and s["path"].startswith(strip) else s["path"], s["line"]) \
            if s else None

    return sorted((f["rule"], f["key"], json.dumps(f["gpu"]["value"] if f["gpu"] else None),
                   json.dumps(f["npu"]["value"] if f["npu"] else None), where(f["gpu"]), where(f["npu"]))
                  for f in doc["findings"])


def test_init_then_check_on_the_example_without_its_configuration(tmp_path, monkeypatch, cli):
    project = tmp_path / "example"
    shutil.copytree(EX, project)
    (project / "scriptdiff.toml").unlink()
    monkeypatch.chdir(project)
    code, out, err = cli("init")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:8] == [
        "scriptdiff: wrote the configuration to scriptdiff.toml",
        "the two sides (paired by the rules of rules/pairing.yaml):",
        "  scripts      gpu  <->  npu",
        "  launch       gpu/pretrain.sh  <->  npu/pretrain.sh",
        "  environment  env-gpu.json  <->  env-npu.json",
        "  packages     requirements-gpu.txt  <->  requirements-npu.txt",
        "  dataset      data-gpu  <->  data-npu",
        "  weights      init-gpu.safetensors  <->  init-npu.safetensors"]
    assert "on the GPU machine, from this folder:" in lines and "  scriptdiff collect -o env-npu.json" in lines
    assert lines[-2:] == ["then, with those files in this folder:", "  scriptdiff check"]
    # check finds the configuration by itself and gives the bundled configuration's verdict
    code, mine, err = cli("check", "-f", "json", "--no-cache")
    assert code == 1, err
    monkeypatch.chdir(ROOT)
    code, bundled, _ = cli("check", "--config", "fixtures/example/scriptdiff.toml", "-f", "json", "--no-cache")
    a, b = json.loads(mine), json.loads(bundled)
    assert rows(a) == rows(b, "fixtures/example/") and len(rows(a)) == 16  # issue 43: SD023, SD027 too
    assert a["verdicts"] == b["verdicts"]
    assert ("SD207", "seed", "42", "1234", ("gpu/train.py", 19), ("npu/train.py", 21)) in rows(a)


def test_the_path_init_run_what_it_prints_check(tmp_path, monkeypatch, cli):
    """A project holding only its two trees: the configuration names the files each machine's
    commands write; run them (here both machines are this one), then check."""
    project = tmp_path / "proj"
    for side in ("gpu", "npu"):
        shutil.copytree(EX / side, project / side)
    (project / "pyproject.toml").write_text('[project]\nname = "port"\n')
    monkeypatch.chdir(project)
    code, out, err = cli("init")
    assert (code, err) == (0, "")
    assert "scriptdiff: wrote the configuration to pyproject.toml" in out
    toml = (project / "pyproject.toml").read_text()
    assert toml.startswith('[project]\nname = "port"\n\n# scriptdiff check configuration, written by `scriptdiff init`')
    assert 'environment = ["env-gpu.json"]  # scriptdiff collect -o env-gpu.json\n' in toml
    assert ('dataset = ["data-npu.json"]  # scriptdiff data fingerprint data/train.jsonl -o data-npu.json\n'
            in toml)
    # the data path and the checkpoint the runs name (train.py's defaults) are in the commands
    assert "  note: data/train.jsonl is the run's data_path (gpu/train.py:45, npu/train.py:47): change it to " \
           "where each machine keeps it" in out.splitlines()
    commands = [ln.strip() for ln in out.splitlines() if ln.startswith("  scriptdiff ")]
    assert commands == [f"scriptdiff {c}" for c in (
        "collect -o env-gpu.json", "data fingerprint data/train.jsonl -o data-gpu.json",
        "weights fingerprint Qwen/Qwen2-1.5B -o weights-gpu.json",
        "collect -o env-npu.json", "data fingerprint data/train.jsonl -o data-npu.json",
        "weights fingerprint Qwen/Qwen2-1.5B -o weights-npu.json", "check")]
    # before the machines' files are there, check --strict says what it could not read
    code, out, _ = cli("check", "-q", "--strict")
    assert code == 1 and "dataset: not checked (no GPU input could be read (see errors))" in out
    # each machine keeps its data and checkpoint where the run says
    (project / "data").mkdir()
    shutil.copy(EX / "data-gpu" / "train.jsonl", project / "data" / "train.jsonl")
    (project / "Qwen" / "Qwen2-1.5B").mkdir(parents=True)
    shutil.copy(EX / "init-gpu.safetensors", project / "Qwen" / "Qwen2-1.5B" / "model.safetensors")
    for command in commands[:-1]:
        argv = shlex.split(command)[1:]
        code, _, err = cli(*argv[:1], "--no-commands", *argv[1:]) if argv[0] == "collect" else cli(*argv)
        assert code == 0, (command, err)
    code, out, err = cli("check", "-f", "json", "--no-cache")
    doc = json.loads(out)
    assert (code, doc["errors"]) == (1, []), err
    assert {k: v["verdict"] for k, v in doc["verdicts"].items()} == {
        "hyperparameters": "differences", "script": "pass", "environment": "pass", "libraries": "pass",
        "dataset": "pass", "weights": "pass"}
    # a configured project is not configured again
    assert cli("init") == (2, "", "scriptdiff: init: pyproject.toml already configures scriptdiff check: edit its "
                                  "[tool.scriptdiff] tables, or remove them to run init again\n")


def test_siblings_in_one_folder(tmp_path, monkeypatch, cli):
    """train.py and train_npu.py, pretrain.sh and pretrain_npu.sh beside each other."""
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(EX / "gpu" / "train.py", src / "train.py")
    shutil.copy(EX / "npu" / "train.py", src / "train_npu.py")
    shutil.copy(EX / "gpu" / "ds_config.json", src / "ds_config.json")
    (src / "pretrain.sh").write_text((EX / "gpu" / "pretrain.sh").read_text())
    (src / "pretrain_npu.sh").write_text((EX / "npu" / "pretrain.sh").read_text().replace("train.py", "train_npu.py"))
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("init", "--dry-run")
    assert (code, err) == (0, "")
    assert out.splitlines()[:9] == [
        "# scriptdiff.toml (not written: --dry-run)",
        "# scriptdiff check configuration, written by `scriptdiff init` (docs/check.md describes every key).",
        "# Paths are relative to this file; a file named with a command is written by that command, run",
        "# from this folder on that side's machine.",
        "",
        "[gpu]",
        'scripts = ["src/train.py"]',
        'launch = ["src/pretrain.sh"]',
        'environment = ["env-gpu.json"]  # scriptdiff collect -o env-gpu.json']
    assert not (tmp_path / "scriptdiff.toml").exists()
    assert cli("init")[0] == 0
    code, out, err = cli("check", "--select", "SD2", "-f", "json", "--no-cache")
    assert [(f["rule"], f["key"], f["gpu"]["path"], f["npu"]["path"]) for f in json.loads(out)["findings"]] == [
        ("SD201", "use_flash_attn", "src/pretrain.sh", "src/train_npu.py"),
        ("SD207", "seed", "src/train.py", "src/train_npu.py"),
        ("SD206", "adam_beta2", "src/train.py", "src/train_npu.py")]


@pytest.mark.parametrize("setup,argv,message", [
    ({"a/x.py": "", "b/x.py": ""}, [],
     "init: found no GPU and NPU setups under . by the pairing rules (gpu/ and npu/ folders, train.py and "
     "train_npu.py, pretrain.sh and pretrain_npu.sh: rules/pairing.yaml); name them: scriptdiff init --gpu DIR "
     "--npu DIR"),
    ({"a/x.py": ""}, ["--gpu", "a"], "init: give both --gpu DIR and --npu DIR, or neither (then the pairing rules "
                                     "find them)"),
    ({"a/x.py": ""}, ["--gpu", "a", "--npu", "b"], "init: --npu b: no such file or folder"),
    ({"gpu/x.py": "", "npu/x.py": "", "scriptdiff.toml": "[gpu]\n"}, [],
     "init: scriptdiff.toml already configures scriptdiff check (--force replaces it)"),
])
def test_init_refuses_with_the_reason(tmp_path, monkeypatch, cli, setup, argv, message):
    for rel, text in setup.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    monkeypatch.chdir(tmp_path)
    assert cli("init", *argv) == (2, "", f"scriptdiff: {message}\n")


def test_init_with_named_folders_and_force(tmp_path, monkeypatch, cli):
    shutil.copytree(EX / "gpu", tmp_path / "Megatron-LM")
    shutil.copytree(EX / "npu", tmp_path / "MindSpeed-LLM")
    (tmp_path / "scriptdiff.toml").write_text("[gpu]\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("init", "--gpu", "Megatron-LM", "--npu", "MindSpeed-LLM", "--force")
    assert (code, err) == (0, "")
    assert "  scripts  Megatron-LM  <->  MindSpeed-LLM" in out.splitlines()
    text = (tmp_path / "scriptdiff.toml").read_text()
    assert '[gpu]\nscripts = ["Megatron-LM"]\nlaunch = ["Megatron-LM/pretrain.sh"]\n' in text
    code, out, _ = cli("check", "--select", "SD207", "-f", "json", "--no-cache")
    assert [(f["rule"], f["gpu"]["value"], f["npu"]["value"]) for f in json.loads(out)["findings"]] == [
        ("SD207", 42, 1234)]


def faithful_project(root: Path) -> None:
    """The example's two trees with its three planted drifts undone: a faithful port."""
    for side in ("gpu", "npu"):
        shutil.copytree(EX / side, root / side)
    train = root / "npu" / "train.py"
    train.write_text(train.read_text().replace("SEED = 1234", "SEED = 42")
                     .replace('attn_implementation="eager"', 'attn_implementation="flash_attention_2"')
                     .replace("betas=(0.9, 0.999)", "betas=(0.9, 0.95)"))
    launch = root / "npu" / "pretrain.sh"
    launch.write_text(launch.read_text().replace("    --min-lr 1e-06 \\\n", "    --min-lr 1e-06 \\\n    --use-flash-attn \\\n"))


def test_check_fresh_from_init_waits_for_what_the_machines_make(tmp_path, monkeypatch, cli):
    """Issue 41: a project fresh from init has none of the files the GPU and NPU machines make
    (environment snapshots, data and weights fingerprints). On a workstation they are not
    checked, said once with the command that makes them, and check passes; --strict (CI) keeps
    them errors; --strict --allow-pending (the pre-commit hook) still fails a check that is not
    checked for another reason."""
    faithful_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli("init")[0] == 0
    code, out, err = cli("check", "-q")
    assert (code, err) == (0, ""), out
    assert out.splitlines()[:6] == [
        "hyperparameters: pass (no differences)",
        "script: pass (no differences (2 info))",
        "environment: not checked (env-gpu.json, env-npu.json not made yet: run `scriptdiff collect -o env-gpu.json` "
        "on the GPU machine, `scriptdiff collect -o env-npu.json` on the NPU machine)",
        "libraries: not checked (env-gpu.json, env-npu.json not made yet (see environment))",
        "dataset: not checked (data-gpu.json, data-npu.json not made yet: run `scriptdiff data fingerprint "
        "data/train.jsonl -o data-gpu.json` on the GPU machine, `scriptdiff data fingerprint data/train.jsonl -o "
        "data-npu.json` on the NPU machine)",
        "weights: not checked (weights-gpu.json, weights-npu.json not made yet: run `scriptdiff weights fingerprint "
        "Qwen/Qwen2-1.5B -o weights-gpu.json` on the GPU machine, `scriptdiff weights fingerprint Qwen/Qwen2-1.5B -o "
        "weights-npu.json` on the NPU machine)"]
    assert cli("check", "--strict", "--allow-pending", "-q")[0] == 0
    code, out, err = cli("check", "--strict", "-q")
    assert code == 1
    assert "dataset: not checked (no GPU input could be read (see errors))" in out
    assert sorted(err.splitlines()) == sorted(f"scriptdiff: {p}: no such file or directory" for p in (
        "env-gpu.json", "env-npu.json", f"{tmp_path}/data-gpu.json", f"{tmp_path}/data-npu.json",
        f"{tmp_path}/weights-gpu.json", f"{tmp_path}/weights-npu.json"))
    # JSON: no input errors, the verdicts say why
    doc = json.loads(cli("check", "-f", "json", "--no-cache")[1])
    assert doc["errors"] == [] and doc["verdicts"]["weights"]["verdict"] == "not checked"
    # a check a side leaves without inputs still fails the hook
    toml = tmp_path / "scriptdiff.toml"
    toml.write_text(toml.read_text().replace('weights = ["weights-gpu.json"]', 'weights = []'))
    code, out, _ = cli("check", "--strict", "--allow-pending", "-q", "--ignore", "SD155")
    assert code == 1 and "weights: not checked (no GPU input (NPU has weights); weights-npu.json not made yet" in out


def test_the_hook_header_names_each_sides_files(tmp_path, monkeypatch, cli):
    """Issue 41: `check --files` (the staged hook) said "GPU counterparts vs NPU a.yaml b.py";
    each side now names its own files: the staged one and its counterpart."""
    faithful_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli("init")[0] == 0
    train = tmp_path / "npu" / "train.py"
    train.write_text(train.read_text().replace("SEED = 42", "SEED = 7"))
    code, out, _ = cli("check", "--files", "npu/train.py", "gpu/pretrain.sh", "--no-cache")
    assert code == 1
    assert out.splitlines()[0] == "scriptdiff: GPU gpu/train.py gpu/pretrain.sh  vs  NPU npu/train.py npu/pretrain.sh"

"""scriptdiff check: one run, six verdicts, from pyproject.toml, scriptdiff.toml or --gpu/--npu."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scriptdiff.project.checkrun import counterparts, load_config, run_checks
from scriptdiff.model import Options
from scriptdiff.ruleset.registry import check_names, checks

CHECKS = tuple(c for c in check_names() if not checks()[c].optional)  # process data: only with logs

ROOT = Path(__file__).resolve().parent.parent


def tree(tmp_path, files: dict[str, str]):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def check_json(cli, *args):
    code, out, err = cli("check", *args, "-f", "json")
    return code, (json.loads(out) if out.strip() else None), err


def test_every_check_has_a_verdict_and_none_is_left_out(tmp_path, cli, monkeypatch):
    tree(tmp_path, {"gpu/a.txt": "lr=1\n", "npu/a.txt": "lr=2\n",
                    "scriptdiff.toml": '[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n'})
    monkeypatch.chdir(tmp_path)
    code, doc, _ = check_json(cli)
    assert code == 1
    assert list(doc["verdicts"]) == sorted(CHECKS)
    v = {k: (x["verdict"], x["reason"]) for k, x in doc["verdicts"].items()}
    assert v["script"] == ("differences", "1 warning(s)")
    assert v["hyperparameters"] == ("pass", "no differences")
    assert v["environment"] == ("not checked", "no inputs: configure environment for gpu and npu")
    assert v["libraries"] == ("not checked", "no inputs: configure environment / packages for gpu and npu")
    assert v["dataset"] == ("not checked", "no inputs: configure dataset for gpu and npu")
    assert v["weights"] == ("not checked", "no inputs: configure weights for gpu and npu")
    assert [(f["rule"], f["gpu"]["value"], f["npu"]["value"], f["gpu"]["line"]) for f in doc["findings"]] == [
        ("SD108", "lr=1", "lr=2", 1)] + [("SD155", f"no {k}", f"no {k}", None)
                                         for k in ("environment", "environment / packages", "dataset", "weights")]
    assert [f["check"] for f in doc["findings"] if f["rule"] == "SD155"] == [
        "environment", "libraries", "dataset", "weights"]
    assert doc["gpu"] == "gpu" and doc["npu"] == "npu"


def test_text_output_shows_every_section(tmp_path, cli, monkeypatch):
    tree(tmp_path, {"gpu/a.txt": "x\n", "npu/a.txt": "x\n",
                    "scriptdiff.toml": '[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n'})
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("check", "--color", "never")
    assert code == 1  # four checks have no inputs: SD155, never a green gate
    for check in CHECKS:
        assert f"== {check} [" in out
    assert "== script [pass] " in out and "== weights [not checked] " in out
    assert "   no inputs: configure weights for gpu and npu" in out


def test_strict_fails_when_something_was_not_checked(tmp_path, cli, monkeypatch):
    tree(tmp_path, {"gpu/a.txt": "x\n", "npu/a.txt": "x\n",
                    "scriptdiff.toml": '[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n'})
    monkeypatch.chdir(tmp_path)
    assert cli("check")[0] == 1  # SD155: the configuration names no input for four checks
    assert cli("check", "--ignore", "SD155")[0] == 0  # deliberately left out
    assert cli("check", "--ignore", "SD155", "--strict")[0] == 1  # --strict still wants every check run


def test_empty_configuration_is_not_a_pass(tmp_path, cli, monkeypatch):
    tree(tmp_path, {"scriptdiff.toml": "[gpu]\n[npu]\n"})
    monkeypatch.chdir(tmp_path)
    code, doc, _ = check_json(cli)
    assert code == 1
    assert sorted(f["check"] for f in doc["findings"] if f["rule"] == "SD155") == sorted(CHECKS)
    assert {v["verdict"] for v in doc["verdicts"].values()} == {"not checked"}


def test_unknown_selector_in_configuration_is_exit_2(tmp_path, cli, monkeypatch):
    tree(tmp_path, {"gpu/a.txt": "x\n", "npu/a.txt": "x\n",
                    "scriptdiff.toml": 'ignore = ["SD2O1"]\n[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n'})
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check")
    assert code == 2 and out == ""
    assert err.strip().endswith("ignore: unknown rule code or prefix 'SD2O1'; did you mean SD201?")


def test_pyproject_tool_section_and_root(tmp_path, cli, monkeypatch):
    tree(tmp_path, {"setups/g/run.txt": "a\n", "setups/n/run.txt": "b\n",
                    "pyproject.toml": '[project]\nname = "x"\n\n[tool.scriptdiff]\nignore = ["SD151", "SD155"]\n'
                                      '[tool.scriptdiff.gpu]\nroot = "setups"\nscripts = ["g"]\n'
                                      '[tool.scriptdiff.npu]\nroot = "setups"\nscripts = ["n"]\n'})
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # found from a subfolder
    code, doc, _ = check_json(cli)
    assert code == 1
    assert [(f["rule"], f["gpu"]["path"], f["npu"]["path"]) for f in doc["findings"]] == [
        ("SD108", "../setups/g/run.txt", "../setups/n/run.txt")]


def test_gpu_npu_options_without_config(tmp_path, cli, monkeypatch):
    tree(tmp_path, {"g/x.txt": "1\n", "n/x.txt": "1\n", "g/only.sh": "echo\n"})
    monkeypatch.chdir(tmp_path)
    code, doc, _ = check_json(cli, "--gpu", "scripts=g", "--npu", "scripts=n", "--ignore", "SD155")
    assert code == 1
    assert [(f["rule"], f["key"], f["severity"]) for f in doc["findings"]] == [("SD150", "file:only.sh", "warning")]
    assert doc["verdicts"]["script"]["verdict"] == "differences"


def test_one_sided_input_is_not_checked_with_reason(tmp_path):
    tree(tmp_path, {"g/a.txt": "1\n", "n/a.txt": "1\n", "env.json": "{}"})
    cfg = load_config(None, [f"scripts={tmp_path / 'g'}", f"environment={tmp_path / 'env.json'}"],
                      [f"scripts={tmp_path / 'n'}"], start=str(tmp_path))
    report = run_checks(cfg, Options(use_cache=False))
    assert report.verdicts["environment"] == ("not checked", "no NPU input (GPU has environment)")


def test_unreadable_input_is_an_error_and_not_a_pass(tmp_path):
    cfg = load_config(None, [f"scripts={tmp_path / 'nope'}"], [f"scripts={tmp_path / 'nope2'}"],
                      start=str(tmp_path))
    report = run_checks(cfg, Options(use_cache=False))
    assert sorted(e.message for e in report.errors) == ["no such file or directory"] * 2
    assert report.verdicts["script"] == ("not checked", "no GPU input could be read (see errors)")


def test_missing_module_is_not_checked_with_the_reason(tmp_path, monkeypatch):
    import scriptdiff.project.checkrun as checkrun

    tree(tmp_path, {"g/d/x.jsonl": "{}\n", "n/d/x.jsonl": "{}\n"})
    monkeypatch.setattr(checkrun, "_module_present", lambda name: name != "checks.dataset")
    cfg = load_config(None, [f"dataset={tmp_path / 'g' / 'd'}"], [f"dataset={tmp_path / 'n' / 'd'}"],
                      start=str(tmp_path))
    report = run_checks(cfg, Options(use_cache=False))
    assert report.verdicts["dataset"] == ("not checked", "this build lacks scriptdiff.checks.dataset")


@pytest.mark.parametrize("toml,message", [
    ("[gpu]\nscripts = 3\n", "gpu.scripts: expected a path or a list of paths"),
    ("[gpu]\nscrips = ['a']\n", "[gpu] unknown key(s) scrips"),
    ("colour = 1\n", "unknown key(s) colour"),
    ("[gpu\n", "not valid TOML"),
])
def test_bad_config_is_one_line_exit_2(tmp_path, cli, toml, message):
    p = tmp_path / "scriptdiff.toml"
    p.write_text(toml)
    code, out, err = cli("check", "--config", str(p))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err and str(p) in err


def test_no_config_anywhere(tmp_path, cli, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("check")
    assert code == 2 and err.startswith("scriptdiff: no configuration: add [tool.scriptdiff]")


def test_pyproject_without_tool_section(tmp_path, cli):
    p = tmp_path / "pyproject.toml"
    p.write_text('[project]\nname = "x"\n')
    code, _, err = cli("check", "--config", str(p))
    assert code == 2 and err.strip() == f"scriptdiff: {p}: no [tool.scriptdiff] table"


def test_sides_from_git_revisions(tmp_path, cli, monkeypatch):
    import subprocess

    r = tmp_path
    def git(*a):
        subprocess.run(["git", "-C", str(r), *a], check=True, capture_output=True)
    git("init", "-q", "-b", "gpu")
    git("config", "user.email", "t@e")
    git("config", "user.name", "t")
    tree(r, {"src/a.txt": "lr=1\n"})
    git("add", "-A")
    git("commit", "-qm", "g")
    git("checkout", "-qb", "npu")
    tree(r, {"src/a.txt": "lr=2\n"})
    git("commit", "-qam", "n")
    git("checkout", "-q", "gpu")
    tree(r, {"scriptdiff.toml": 'ignore = ["SD155"]\n[gpu]\ngit = "gpu"\nscripts = ["src"]\n[npu]\ngit = "npu"\n'
                                'scripts = ["src"]\n'})
    monkeypatch.chdir(r)
    code, doc, _ = check_json(cli)
    assert code == 1
    assert [(f["rule"], f["gpu"]["path"], f["npu"]["path"], f["npu"]["value"]) for f in doc["findings"]] == [
        ("SD108", "gpu:src/a.txt", "npu:src/a.txt", "lr=2")]
    assert doc["gpu"] == "gpu:src"


def test_counterparts_by_rename_rules_and_roots(tmp_path, monkeypatch):
    tree(tmp_path, {"A/x.py": "", "B/x_npu.py": "", "B/y.py": "", "tools/plot.py": "", "g.yaml": "", "n.yaml": "",
                    "src/dual.py": ""})
    monkeypatch.chdir(tmp_path)
    cfg = load_config(None, ["scripts=A", "configs=g.yaml"], ["scripts=B", "configs=n.yaml"], start=str(tmp_path))
    staged = counterparts(["B/x_npu.py", "B/y.py", "tools/plot.py", "n.yaml"], cfg)
    assert staged.pairs == [("A/x.py", "B/x_npu.py"), ("g.yaml", "n.yaml")]
    assert staged.alone == [("B/y.py", "npu", "y.py")] and staged.outside == ["tools/plot.py"]
    cfg.once.append(str(tmp_path / "src"))
    assert counterparts(["src/dual.py"], cfg).once == ["src/dual.py"]


def test_bundled_example(cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, doc, err = check_json(cli, "--config", "fixtures/example/scriptdiff.toml")
    assert code in (0, 1), err
    assert list(doc["verdicts"]) == sorted(CHECKS)
    assert doc["verdicts"]["environment"]["verdict"] == "pass"  # only platform-specific info differs
    assert doc["gpu"] == "fixtures/example/gpu" and doc["npu"] == "fixtures/example/npu"


def test_bundled_example_full_findings():
    """Once the shell, config and python modules are merged: the example's real drifts."""
    pytest.importorskip("scriptdiff.lang.shell")
    pytest.importorskip("scriptdiff.lang.config")
    cfg = load_config(str(ROOT / "fixtures/example/scriptdiff.toml"))
    report = run_checks(cfg, Options(use_cache=False))
    flash = [f for f in report.findings if f.key == "use_flash_attn"]
    assert [(f.rule, f.gpu.value, f.npu.value, f.gpu.line) for f in flash] == [("SD201", True, False, 11)]
    assert flash[0].gpu.path.endswith("fixtures/example/gpu/pretrain.sh")
    # the run is the launch script, the program it starts (train.py) and its configs: every
    # input was read and understood
    assert {(a.path.split("fixtures/example/")[-1], a.status) for a in report.inputs if a.kind != "file"} >= {
        ("gpu/pretrain.sh", "understood"), ("npu/pretrain.sh", "understood")}
    assert not [a for a in report.inputs if a.status in ("not understood", "failed")]
    assert not [f for f in report.findings if f.key in ("lr", "min_lr", "micro_batch_size")]
    assert report.verdicts["hyperparameters"][0] == "differences"
    # NCCL_DETERMINISTIC=1 -> HCCL_DETERMINISTIC=true is the expected port: masked, not reported
    assert not [f for f in report.findings if f.key == "env:NCCL_DETERMINISTIC"]
    # the whole story of the example, exactly: four real drifts among many expected edits
    # (train.py seeds from its SEED constant; the launch scripts pass only options it defines)
    rows = [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.path.split("fixtures/example/")[-1], f.gpu.line,
             f.npu.path.split("fixtures/example/")[-1], f.npu.line)
            for f in report.findings if f.severity in ("error", "warning")]
    assert sorted(rows) == [
        ("SD201", "use_flash_attn", True, False, "gpu/pretrain.sh", 11, "npu/train.py", 86),
        ("SD206", "adam_beta2", 0.95, 0.999, "gpu/train.py", 100, "npu/train.py", 102),
        ("SD207", "seed", 42, 1234, "gpu/train.py", 19, "npu/train.py", 21),
        ("SD401", "pkg:transformers", "4.40.0", "4.38.2", "env-gpu.json", 106, "env-npu.json", 108),
    ]
    assert {k: v[0] for k, v in report.verdicts.items()} == {
        "hyperparameters": "differences", "script": "pass", "environment": "pass", "libraries": "differences",
        "dataset": "pass", "weights": "pass"}


def test_dataset_and_weights_of_the_example(tmp_path):
    """With the dataset and weights modules in the build: the example's data and initial
    checkpoint are fingerprinted in place; a drifted data file turns the verdict."""
    import shutil

    pytest.importorskip("scriptdiff.checks.dataset")
    pytest.importorskip("scriptdiff.checks.weights")
    shutil.copytree(ROOT / "fixtures" / "example", tmp_path / "ex")
    cfg = load_config(str(tmp_path / "ex" / "scriptdiff.toml"))
    report = run_checks(cfg, Options(use_cache=False))
    assert report.verdicts["dataset"] == ("pass", "no differences")
    assert report.verdicts["weights"] == ("pass", "no differences")
    with open(tmp_path / "ex" / "data-npu" / "train.jsonl", "a") as fh:
        fh.write('{"text": "one more"}\n')
    report = run_checks(load_config(str(tmp_path / "ex" / "scriptdiff.toml")), Options(use_cache=False))
    assert [(f.check, f.severity, f.key) for f in report.findings if f.check == "dataset"] == [
        ("dataset", "error", "data:train.jsonl")]
    assert report.verdicts["dataset"] == ("differences", "1 error(s)")


def test_no_config_says_scriptdiff_init(tmp_path, cli, monkeypatch):
    """Issue 41: the way to a configuration is `scriptdiff init`; the message says so."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert cli("check") == (2, "", "scriptdiff: no configuration: add [tool.scriptdiff] to pyproject.toml or write a "
                                   "scriptdiff.toml (`scriptdiff init` finds the two setups and writes one), or give "
                                   "--gpu KEY=PATH / --npu KEY=PATH (docs/check.md)\n")

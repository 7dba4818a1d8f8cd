"""TOML configs (lang/toml.py, rules/toml.yaml): torchtitan training TOMLs and pyproject [tool.*].

The proof that a new file kind needs only its own module, its rule pack and its tests."""
from __future__ import annotations

import json

import pytest

from scriptdiff.api import diff
from scriptdiff.lang.toml import line_map
from scriptdiff.model import Options
from scriptdiff.ruleset.registry import detect_kind
from scriptdiff.inputs.sources import Source

FAITHFUL = "fixtures/toml"


def write(tmp_path, name, gpu, npu):
    (tmp_path / "gpu").mkdir(exist_ok=True)
    (tmp_path / "npu").mkdir(exist_ok=True)
    g, n = tmp_path / "gpu" / name, tmp_path / "npu" / name
    g.write_text(gpu, encoding="utf-8")
    n.write_text(npu, encoding="utf-8")
    return str(g), str(n)


def run(g, n):
    return diff(g, n, Options(use_cache=False))


def test_faithful_torchtitan_port_is_silent(fixtures):
    # the NPU copy spells 3e-4 as 0.0003 and 1e-8 as 1.0e-08: equal values
    r = run(str(fixtures / "toml/gpu/llama3_8b.toml"), str(fixtures / "toml/npu/llama3_8b.toml"))
    assert [(f.rule, f.key) for f in r.findings] == []
    assert r.errors == [] and r.exit_code() == 0


def test_lr_difference_is_the_canonical_lr_finding_with_both_lines(fixtures, tmp_path):
    text = (fixtures / "toml/gpu/llama3_8b.toml").read_text()
    g, n = write(tmp_path, "train.toml", text, text.replace("lr = 3e-4", "lr = 1e-4"))
    r = run(g, n)
    assert [(f.rule, f.severity, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line, f.gpu.via)
            for f in r.findings] == [("SD202", "error", "lr", 3e-4, 1e-4, 17, 17,
                                  "optimizer.lr, torchtitan TOML")]
    assert r.findings[0].gpu.source == "lr = 3e-4" and r.findings[0].npu.source == "lr = 1e-4"
    assert r.exit_code() == 1


def test_torchtitan_keys_land_on_their_canonical_keys(fixtures, tmp_path):
    text = (fixtures / "toml/gpu/llama3_8b.toml").read_text()
    npu = (text.replace("local_batch_size = 1", "local_batch_size = 2")
               .replace("seq_len = 8192", "seq_len = 4096")
               .replace('mixed_precision_param = "bfloat16"', 'mixed_precision_param = "float32"')
               .replace("tensor_parallel_degree = 1", "tensor_parallel_degree = 2")
               .replace('selective_ac_option = "op"', 'selective_ac_option = "2"'))
    g, n = write(tmp_path, "train.toml", text, npu)
    got = {(f.rule, f.key, f.gpu.value, f.npu.value, f.npu.line) for f in run(g, n).findings}
    assert got == {("SD203", "micro_batch_size", 1, 2, 24), ("SD204", "seq_length", 8192, 4096, 25),
                   ("SD205", "params_dtype", "bf16", "fp32", 29), ("SD203", "tensor_model_parallel_size", 1, 2, 33),
                   ("SD220", "activation_checkpoint.selective_ac_option", "op", 2, 38)}


def test_pyproject_tool_tables_are_read_and_dev_tools_skipped(tmp_path):
    gpu = '[project]\nname = "trainer"\nversion = "1.0"\n\n[tool.ruff]\nline-length = 100\n\n' \
          '[tool.trainer]\nlearning_rate = 2e-5\nseed = 42\n'
    npu = '[project]\nname = "trainer-npu"\nversion = "1.1"\n\n[tool.ruff]\nline-length = 120\n\n' \
          '[tool.trainer]\nlearning_rate = 2e-5\nseed = 1234\n'
    g, n = write(tmp_path, "pyproject.toml", gpu, npu)
    r = run(g, n)
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line) for f in r.findings] == [
        ("SD207", "seed", 42, 1234, 10)]


def test_invalid_toml_is_one_line_error_and_the_run_fails(tmp_path, cli):
    g, n = write(tmp_path, "train.toml", "[training]\nsteps = 10\n", "[training\nsteps = 10\n")
    code, out, err = cli("diff", g, n, "--format", "json", "--no-cache")
    doc = json.loads(out)
    assert code == 2
    assert doc["errors"] == [{"path": n, "message": doc["errors"][0]["message"]}]
    assert doc["errors"][0]["message"].startswith("not valid TOML: ") and "\n" not in doc["errors"][0]["message"]
    assert "Traceback" not in err


def test_detected_as_toml():
    assert detect_kind(Source("torchtitan/train_configs/llama3_8b.toml", b"[job]\n")) == "toml"
    assert detect_kind(Source("pyproject.toml", b"[project]\n")) == "toml"


@pytest.mark.parametrize("text,expected", [
    ('[a]\nx = 1\n[a.b]\ny = 2\n', {("a",): 1, ("a", "x"): 2, ("a", "b"): 3, ("a", "b", "y"): 4}),
    ('"q.k" = 1\nsite."x.y".z = 2\n', {("q.k",): 1, ("site", "x.y", "z"): 2}),
    ('s = """\nnot = a key\n"""\nafter = 1\n', {("s",): 1, ("after",): 4}),
    ('arr = [\n  1,\n  2, # c = 3\n]\nnext = 1\n', {("arr",): 1, ("next",): 5}),
    ('[[stage]]\nlr = 1\n[[stage]]\nlr = 2\n', {("stage",): 1, ("stage", 0): 1, ("stage", 0, "lr"): 2,
                                                ("stage", 1): 3, ("stage", 1, "lr"): 4}),
    ("lit = '''\n[not.a.table]\n'''\n[real]\n", {("lit",): 1, ("real",): 4}),
])
def test_line_map(text, expected):
    assert line_map(text) == expected


# --- a TOML named by a launch flag (the kind says it can be referenced: rules/toml.yaml) -------

LAUNCH = "#!/bin/bash\ntorchrun --nproc_per_node 8 -m torchtitan.train --job.config_file llama.toml\n"
LLAMA = '[job]\ndump_folder = "./outputs"\n\n[optimizer]\nname = "AdamW"\nlr = {lr}\n'


def two_launches(tmp_path, gpu_lr: str, npu_lr: str):
    g, n = write(tmp_path, "run.sh", LAUNCH, LAUNCH)
    write(tmp_path, "llama.toml", LLAMA.format(lr=gpu_lr), LLAMA.format(lr=npu_lr))
    return g, n


def test_launch_scripts_follow_the_toml_they_name_and_report_its_lr(tmp_path, cli):
    # before the kinds owned their references, `.toml` was in no reference list: exit 0, "2 understood"
    g, n = two_launches(tmp_path, "8e-4", "3e-4")
    code, out, _err = cli("diff", g, n, "--format", "json", "--no-cache")
    doc = json.loads(out)
    assert code == 1
    assert [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"], f["gpu"]["path"], f["gpu"]["line"],
             f["npu"]["path"], f["npu"]["line"]) for f in doc["findings"]] == [
        ("SD202", "lr", 8e-4, 3e-4, str(tmp_path / "gpu" / "llama.toml"), 6, str(tmp_path / "npu" / "llama.toml"), 6)]


def test_launch_scripts_naming_equal_tomls_are_silent(tmp_path, cli):
    g, n = two_launches(tmp_path, "8e-4", "0.0008")
    code, out, _err = cli("diff", g, n, "--format", "json", "--no-cache")
    assert code == 0 and json.loads(out)["findings"] == []


def test_a_launch_flag_naming_a_toml_is_a_reference(tmp_path):
    from scriptdiff.run.engine import extract
    from scriptdiff.model import SideContext
    from scriptdiff.inputs.sources import read_path

    g, _n = two_launches(tmp_path, "8e-4", "3e-4")
    ex = extract(read_path(g), SideContext(side="gpu"))
    # and the module torchrun starts (-m torchtitan.train) is the program, torchtitan/train.py
    assert ex.references == [("llama.toml", 2, "job.config_file"), ("torchtitan/train.py", 2, "program")]
    ref = next(f for f in ex.facts if f.key == "config:job.config_file")
    assert (ref.value, ref.line, ref.meta["exists"]) == ("llama.toml", 2, True)

"""The shared model, value normalization, decoding and the CLI shell."""
from __future__ import annotations

import json
import argparse
import subprocess
import sys

import pytest

from scriptdiff.run.compare import FactTable, compare_tables, equal
from scriptdiff.ruleset.vocabulary import normalize
from scriptdiff.model import RANK_CONFIG, RANK_LOG, RANK_SCRIPT, Fact, Finding, Report, Side
from scriptdiff.inputs.sources import Source, decode


@pytest.mark.parametrize("a,b,typ", [
    ("1e-6", "1.0e-06", "float"), ("0.0001", "1e-4", "float"), ("8", 8, "int"), ("8.0", "8", "int"),
    ("true", True, "bool"), ("1", "True", "bool"), ("2**32", 4294967296, "float"), ("1_000", "1000", "int"),
])
def test_equal_after_normalize(a, b, typ):
    assert equal(normalize(a, typ), normalize(b, typ))


@pytest.mark.parametrize("a,b,typ", [
    ("1e-6", "1e-5", "float"), ("true", "false", "bool"), ("8", "16", "int"), ("bf16", "fp16", "str"),
])
def test_not_equal_after_normalize(a, b, typ):
    assert not equal(normalize(a, typ), normalize(b, typ))


def test_bool_is_not_int():
    assert not equal(True, 1.0)  # bools only equal bools
    assert not equal(1, True) and not equal(False, 0) and not equal(0.0, False)
    assert not equal(True, 2)
    assert equal(True, True) and equal(False, False) and not equal(True, False)


def test_fact_table_rank_and_order():
    t = FactTable()
    t.add(Fact("lr", 1.0, rank=RANK_CONFIG, path="c.yaml", line=1))
    t.add(Fact("lr", 2.0, rank=RANK_SCRIPT, path="a.sh", line=3))
    t.add(Fact("lr", 3.0, rank=RANK_SCRIPT, path="a.sh", line=9))
    assert t.get("lr").value == 3.0
    t.add(Fact("lr", 4.0, rank=RANK_LOG, path="train.log", line=20))
    assert t.get("lr").value == 4.0


def test_missing_side_compared_against_default():
    g, n = FactTable(frameworks={"megatron"}), FactTable(frameworks={"megatron"})
    g.add(Fact("seed", 1234, path="g.sh", line=2, source="--seed 1234"))
    findings, _, _ = compare_tables(g, n)
    assert findings == []
    g.facts.clear()
    g.add(Fact("seed", 42, path="g.sh", line=2, source="--seed 42"))
    findings, _, _ = compare_tables(g, n)
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.npu.source, f.npu.line) for f in findings] == [
        ("SD207", "seed", 42, 1234, "default", None)]


def test_json_is_deterministic_and_sorted():
    def rep(order):
        r = Report(gpu="g", npu="n")
        fs = [Finding("SD202", "hyperparameters", "error", "lr", Side(1e-4, "b.sh", 5, "--lr 1e-4"),
                      Side(2e-4, "b.sh", 5, "--lr 2e-4"), "m"),
              Finding("SD201", "hyperparameters", "error", "use_flash_attn", Side(True, "a.sh", 9, "x"),
                      Side(False, "a.sh", None, "default"), "m")]
        r.findings = [fs[i] for i in order]
        return json.dumps(r.to_json())
    assert rep([0, 1]) == rep([1, 0])
    doc = json.loads(rep([0, 1]))
    assert doc["schema"] == 1 and doc["tool"]["name"] == "scriptdiff"
    assert [f["key"] for f in doc["findings"]] == ["use_flash_attn", "lr"]
    assert set(doc) >= {"schema", "tool", "gpu", "npu", "findings", "masked", "errors"}


def test_decode_fallbacks():
    assert decode("# 中文注释\n".encode("gbk")) == ("# 中文注释\n", "gb18030")
    assert decode(b"\xef\xbb\xbfx = 1\n") == ("x = 1\n", "utf-8-sig")
    assert decode(b"x = 1\n")[1] == "utf-8"
    assert Source("a.py", b"\x00\x01\x02").is_binary()
    assert not Source("a.py", "λ".encode()).is_binary()


def test_cli_version_and_help_do_not_import_heavy_modules():
    code = ("import sys; from scriptdiff.cli import main; "
            "rc = main(['--help']); "
            "heavy = [m for m in ('libcst', 'rich', 'yaml', 'numpy', 'tree_sitter', 'git', 'safetensors') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_data_fingerprint_imports_neither_the_library_face_nor_the_pipeline(tmp_path):
    """A fingerprint costs its hashing: no api, no pipeline, no rules, no parsers (issue 42)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.jsonl").write_text('{"t": 1}\n{"t": 2}\n')
    out_file = tmp_path / "m.json"
    code = ("import sys; from scriptdiff.cli import main; "
            f"rc = main(['data', 'fingerprint', {str(tmp_path / 'd')!r}, '-o', {str(out_file)!r}]); "
            "print(rc, sorted(m for m in ('scriptdiff.api', 'scriptdiff.run.pipeline', 'scriptdiff.ruleset.rules', "
            "'scriptdiff.checks.weights', 'libcst', 'yaml', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "0 []"
    manifest = json.loads(out_file.read_text())
    assert manifest["files"]["a.jsonl"]["lines"] == 2
    # the same manifest the library face writes
    from scriptdiff import api
    again, errors = api.data_fingerprint([str(tmp_path / "d")])
    assert errors == [] and api.manifest_text(again) == out_file.read_text()


def test_top_level_help_builds_no_command_and_says_what_the_whole_parser_says():
    from scriptdiff.cli import COMMANDS, build_parser

    assert build_parser(None).format_help() == build_parser().format_help()
    code = ("import sys; from scriptdiff.cli import main; rc = main(['--help']); "
            "print(sorted(m for m in sys.modules if m.startswith('scriptdiff.commands.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"

    def sub_help(parser, name):
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return sub.choices[name].format_help()

    for name in ("diff", "dumps"):  # a command's own help: the same from its parser alone
        assert sub_help(build_parser(name), name) == sub_help(build_parser(), name)
    assert sub_help(build_parser("diff"), "dumps").startswith("usage: scriptdiff dumps [-h]\n")  # listed only
    assert set(COMMANDS) <= set(next(a for a in build_parser(None)._actions
                                     if isinstance(a, argparse._SubParsersAction)).choices)


def test_cli_version(cli):
    code, out, _ = cli("--version")
    assert code == 0 or out == ""


def test_missing_path_is_one_line_exit_2(cli, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    code, out, err = cli("diff", str(tmp_path / "a.py"), str(tmp_path / "missing.py"))
    assert code == 2
    assert err.strip().splitlines() == [f"scriptdiff: {tmp_path / 'missing.py'}: no such file or directory"]
    assert "Traceback" not in out + err


def test_binary_input_is_one_line_exit_2(cli, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_bytes(b"\x7fELF\x00\x00\x01")
    code, out, err = cli("diff", str(tmp_path / "a.py"), str(tmp_path / "b.py"), "--format", "json")
    assert code == 2
    assert "binary file" in err and "Traceback" not in err
    assert json.loads(out)["errors"] == [{"path": str(tmp_path / "b.py"), "message": "binary file; not compared"}]


def test_unknown_rule_is_exit_2(cli):
    code, _, err = cli("rule", "SD000")
    assert code == 2 and "no rule" in err


def test_rules_lists_every_code(cli):
    from scriptdiff.ruleset.rules import load

    code, out, _ = cli("rules")
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert listed == list(load().rules)


def test_all_inputs_of_a_side_failing_is_exit_2(cli, tmp_path):
    bad = tmp_path / "snap.json"
    bad.write_text('{"scriptdiff_snapshot": "x"}')
    code, _, err = cli("diff", str(bad), str(bad))
    assert code == 2
    assert err.strip().splitlines() == [f"scriptdiff: {bad}: snapshot schema must be an integer, got 'x'"] * 2

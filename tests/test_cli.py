"""One command-line language (issue 16): shared options, -o, progress, messages, notes,
readable data and weights values, counts."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scriptdiff.cli import COMMANDS, build_parser
from scriptdiff.commands.common import NOT_FOR, SHARED, ProgressBar, progress_wanted

ROOT = Path(__file__).resolve().parent.parent


def pair(tmp_path, g="lr=1e-4\n", n="lr=2e-4\n", name="notes.txt"):
    (tmp_path / "g").mkdir(exist_ok=True)
    (tmp_path / "n").mkdir(exist_ok=True)
    (tmp_path / "g" / name).write_text(g)
    (tmp_path / "n" / name).write_text(n)
    return str(tmp_path / "g" / name), str(tmp_path / "n" / name)


# --- options ------------------------------------------------------------------------------------

def test_o_with_a_file_name_guesses_the_format_from_the_extension(tmp_path, cli):
    g, n = pair(tmp_path)
    out_json, out_sarif, out_md = tmp_path / "out.json", tmp_path / "out.sarif", tmp_path / "out.md"
    code, out, err = cli("diff", g, n, "-o", str(out_json), "-o", str(out_sarif), "-o", str(out_md),
                         "--color", "never")
    assert code == 1, err
    assert "SD108 code:notes.txt:lines" in out  # the text report still goes to standard output
    assert [f["rule"] for f in json.loads(out_json.read_text())["findings"]] == ["SD108"]
    assert json.loads(out_sarif.read_text())["runs"][0]["results"][0]["ruleId"] == "SD108"
    assert out_md.read_text().startswith("### scriptdiff: 0 error(s), 1 warning(s), 0 info\n")


def test_o_that_names_no_format_is_refused_before_any_work(tmp_path, cli):
    g, n = pair(tmp_path)
    code, out, err = cli("diff", g, n, "-o", str(tmp_path / "out.log"))
    assert (code, out) == (2, "")
    assert err == (f"scriptdiff: -o {tmp_path / 'out.log'}: cannot tell the format from the file name: give "
                   f"FORMAT=FILE (FORMAT one of text, json, sarif, markdown, github, html) or a name ending in "
                   f".json, .sarif, .md, .txt, .html\n")
    code, _, err = cli("diff", g, n, "-o", f"github={tmp_path / 'out.log'}")  # FORMAT=FILE: any name
    assert code == 1 and (tmp_path / "out.log").read_text().startswith("::warning title=SD108 code%3Anotes.txt")


def test_single_product_commands_read_o_through_the_same_rule(tmp_path, cli):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("a\n")
    code, _, err = cli("data", "fingerprint", str(tmp_path / "d"), "-o", f"json={tmp_path / 'm'}")
    assert code == 0, err
    assert json.loads((tmp_path / "m").read_text())["totals"]["files"] == 1
    code, _, err = cli("data", "fingerprint", str(tmp_path / "d"), "-o", f"sarif={tmp_path / 'm.sarif'}")
    assert code == 2 and err == (f"scriptdiff: -o sarif={tmp_path / 'm.sarif'}: data fingerprint writes json only, not "
                                 f"sarif (sarif= says sarif): a manifest is the JSON file `scriptdiff data` and "
                                 f"`check` read\n")
    code, _, err = cli("collect", "--no-commands", "-o", f"markdown={tmp_path / 's.md'}")
    assert code == 2 and err == (f"scriptdiff: -o markdown={tmp_path / 's.md'}: collect writes json only, not markdown "
                                 f"(markdown= says markdown): a snapshot is the JSON file `scriptdiff env` and "
                                 f"`check` read\n")
    code, _, err = cli("collect", "--no-commands", "-o", f"json={tmp_path / 's.json'}")
    assert code == 0 and json.loads((tmp_path / "s.json").read_text())["scriptdiff_snapshot"] == 1
    g, n = pair(tmp_path)
    code, out, err = cli("baseline", g, n, "-o", f"json={tmp_path / 'b.json'}")
    assert code == 0 and out == f"scriptdiff: wrote 1 accepted finding(s) to {tmp_path / 'b.json'}\n"


def _parsers():
    import argparse

    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_parses_every_shared_option(command):
    """Each shared option is parsed by every command: taken, or (NOT_FOR) refused with a reason."""
    p = _parsers()[command]
    for option in SHARED:
        assert option in p._option_string_actions, f"{command} does not parse {option}"
    args = p.parse_args([*{"diff": ["a", "b"], "fix": ["a", "b"], "hparams": ["a", "b"], "env": ["a"], "data": ["a", "b"],
                           "weights": ["a", "b"], "curves": ["a", "b"], "dumps": ["a", "b"], "review": ["p"],
                           "rule": ["SD201"]}.get(command, []),
                         "--no-cache", "--jobs", "3", "--max-bytes", "500k", "--progress"])
    assert (args.no_cache, args.jobs, args.max_bytes, args.progress) == (True, 3, 500_000, True)


@pytest.mark.parametrize("command,option", [(c, o) for c, opts in NOT_FOR.items() if c in COMMANDS for o in opts])
def test_a_shared_option_that_cannot_apply_is_refused_with_the_reason(command, option, cli):
    argv = {"env": ["x.json"], "data": ["a", "b"], "weights": ["a", "b"], "curves": ["a", "b"],
            "rule": ["SD201"]}.get(command, [])
    value = {"--jobs": ["2"], "--max-bytes": ["1M"]}.get(option, [])
    code, out, err = cli(command, *argv, option, *value)
    assert (code, out) == (2, "")
    assert err == f"scriptdiff: {command}: {option} does not apply: {NOT_FOR[command][option]}\n"


@pytest.mark.parametrize("argv,message", [
    (["--jobs", "0"], "argument --jobs/-j: '0' is not allowed: --jobs takes a whole number of worker processes, "
                      "1 or more (leave it out for one per core)"),
    (["--jobs", "-5"], "argument --jobs/-j: '-5' is not allowed: --jobs takes a whole number of worker processes, "
                       "1 or more (leave it out for one per core)"),
    (["--max-bytes", "-1"], "argument --max-bytes: '-1' is not allowed: --max-bytes takes a size in bytes, 1 or "
                            "more (e.g. 1000000, 500k, 1M, 2MiB)"),
    (["--max-bytes", "lots"], "argument --max-bytes: 'lots' is not allowed: --max-bytes takes a size in bytes, 1 "
                              "or more (e.g. 1000000, 500k, 1M, 2MiB)"),
])
def test_invalid_counts_are_refused_with_what_is_allowed(tmp_path, cli, argv, message):
    g, n = pair(tmp_path)
    code, out, err = cli("diff", g, n, *argv)
    assert (code, out) == (2, "")
    assert err.strip().splitlines()[-1] == f"scriptdiff diff: error: {message}"


def test_data_jobs_is_the_old_workers(tmp_path, cli):
    code, _, err = cli("data", "fingerprint", str(tmp_path), "--workers", "0")
    assert code == 2 and "argument --jobs/-j/--workers: '0' is not allowed" in err
    assert _parsers()["data"].parse_args(["a", "b", "--workers", "4"]).jobs == 4


@pytest.mark.parametrize("fmt,head", [("text", "SD001  script"), ("json", "[\n  {\n    \"code\": \"SD001\""),
                                      ("markdown", "| Code | Check | Severity | Name | Summary | Pack |\n|---|---|---|---|---|---|\n"
                                                   "| SD001 | script | masked | `cuda-method-to-npu` |"),
                                      ("sarif", "{\n  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\"")])
def test_rules_in_every_format_that_makes_sense(cli, fmt, head):
    code, out, err = cli("rules", "--format", fmt)
    assert code == 0, err
    assert out.startswith(head)
    if fmt == "sarif":
        run = json.loads(out)["runs"][0]
        assert run["results"] == [] and any(r["id"] == "SD201" for r in run["tool"]["driver"]["rules"])


def test_rules_refuses_github_with_the_reason(cli):
    code, out, err = cli("rules", "--format", "github")
    assert (code, out) == (2, "")
    assert err == ("scriptdiff: rules --format github: GitHub annotations are findings on lines, and the catalogue "
                   "has no findings; use text, json, markdown, sarif\n")


# --- git difftool -------------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_difftool_x_scriptdiff_as_the_readme_documents(tmp_path):
    """`git difftool -x scriptdiff` calls `scriptdiff LOCAL REMOTE`: two bare paths are `diff`
    (an added file's LOCAL is /dev/null, read as empty)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "scriptdiff"  # this checkout's CLI under the documented name
    tool.write_text(f"#!/bin/sh\nexec {sys.executable} -m scriptdiff \"$@\"\n")
    tool.chmod(0o755)
    repo = tmp_path / "repo"
    repo.mkdir()
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", GIT_CONFIG_NOSYSTEM="1",
               PYTHONPATH=str(ROOT), HOME=str(tmp_path), CI="")

    def git(*a):
        return subprocess.run(["git", "-C", str(repo), *a], capture_output=True, text=True, env=env, check=True)

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (repo / "notes.txt").write_text("lr=1e-4\n")
    git("add", "-A")
    git("commit", "-qm", "gpu")
    (repo / "notes.txt").write_text("lr=2e-4\n")
    (repo / "added.txt").write_text("seed=1\n")
    git("add", "added.txt")
    out = git("difftool", "-y", "-x", "scriptdiff", "HEAD").stdout
    assert "usage:" not in out
    assert "warning SD108 code:notes.txt:lines  lines differ (compared as text)" in out
    assert "    NPU: lr=2e-4  at b/notes.txt:1" in out  # each side named as git names it
    assert "scriptdiff: GPU a/added.txt  vs  NPU b/added.txt" in out
    assert "warning SD108 code:added.txt:lines  lines on NPU only (compared as text)" in out


def test_two_bare_paths_are_diff_only_when_both_exist(tmp_path, cli):
    g, n = pair(tmp_path)
    code, out, _ = cli(g, n)
    assert code == 1 and "SD108" in out
    code, _, err = cli(g, str(tmp_path / "missing"))
    assert code == 2 and "invalid choice" in err  # not taken for a diff: argparse says what is wrong


# --- progress -----------------------------------------------------------------------------------

def test_folder_diff_progress_as_plain_lines_when_asked(tmp_path, cli):
    for side, lr in (("gpu", "1e-4"), ("npu", "2e-4")):
        (tmp_path / side).mkdir()
        for i in range(5):
            (tmp_path / side / f"m{i}.py").write_text(f"lr = {lr}\nx{i} = {i}\n")
    code, _, err = cli("diff", str(tmp_path / "gpu"), str(tmp_path / "npu"), "--progress", "--no-cache", "-j", "1")
    assert code == 1
    assert [ln for ln in err.splitlines() if "parsed" in ln] == [
        f"scriptdiff: parsed {n}/10 files" for n in (2, 4, 6, 8, 10)]
    code, _, err = cli("diff", str(tmp_path / "gpu"), str(tmp_path / "npu"), "--no-cache")
    assert "parsed" not in err  # not a terminal, not asked: quiet


def test_progress_is_quiet_by_default_under_ci_and_pre_commit(monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    for var in ("CI", "PRE_COMMIT"):
        monkeypatch.delenv(var, raising=False)
    assert progress_wanted(False) is True
    monkeypatch.setenv("CI", "true")
    assert progress_wanted(False) is False and progress_wanted(True) is True
    monkeypatch.delenv("CI")
    monkeypatch.setenv("PRE_COMMIT", "1")
    assert progress_wanted(False) is False


def test_plain_progress_lines_count_tenths_and_sizes():
    import io

    buf = io.StringIO()
    bar = ProgressBar(True, "hashing", stream=buf)
    bar.start(3_000_000_000)
    for _ in range(3):
        bar.advance(1_000_000_000)
    bar.close()
    assert buf.getvalue().splitlines() == ["scriptdiff: hashing 1.0 GB/3.0 GB", "scriptdiff: hashing 2.0 GB/3.0 GB",
                                           "scriptdiff: hashing 3.0 GB/3.0 GB"]
    import pickle

    assert pickle.loads(pickle.dumps(bar)).enabled is False  # a worker process never draws


# --- messages -----------------------------------------------------------------------------------

def test_folder_against_a_file_names_both_arguments(tmp_path, cli):
    (tmp_path / "d").mkdir()
    (tmp_path / "f.py").write_text("x = 1\n")
    code, _, err = cli("diff", str(tmp_path / "d"), str(tmp_path / "f.py"))
    assert code == 2
    assert err == (f"scriptdiff: {tmp_path / 'f.py'}: is a file, but the GPU side {tmp_path / 'd'} is a folder: "
                   f"give two folders, or two files\n")
    code, _, err = cli("diff", str(tmp_path / "f.py"), str(tmp_path / "d"))
    assert err == (f"scriptdiff: {tmp_path / 'f.py'}: is a file, but the NPU side {tmp_path / 'd'} is a folder: "
                   f"give two folders, or two files\n")
    code, _, err = cli("diff", str(tmp_path / "d"), "/dev/zero")
    assert err == ("scriptdiff: /dev/zero: is a character device, not a regular file (only regular files are "
                   "read: give the path of a regular file)\n")


def test_a_path_through_a_file_says_which_part_is_a_file(tmp_path, cli):
    (tmp_path / "f.py").write_text("x = 1\n")
    code, _, err = cli("diff", str(tmp_path / "f.py" / "x.py"), str(tmp_path / "f.py"))
    assert code == 2
    assert err == f"scriptdiff: {tmp_path / 'f.py' / 'x.py'}: no such file: {tmp_path / 'f.py'} is a file, not a folder\n"


def test_a_huge_number_is_said_in_the_users_terms(tmp_path, cli):
    (tmp_path / "g.json").write_text('{"lr": ' + "9" * 5000 + "}")
    (tmp_path / "n.json").write_text('{"lr": 1}')
    code, _, err = cli("diff", str(tmp_path / "g.json"), str(tmp_path / "n.json"))
    assert code == 1
    assert err.splitlines()[0] == (f"scriptdiff: {tmp_path / 'g.json'}: could not be analysed (holds a number of "
                                   f"5,000 digits, longer than the 4,300 digits a number may have; shorten it, or "
                                   f"quote it if it is not meant as a number); skipped")
    assert "set_int_max_str_digits" not in err


def test_valid_python_libcst_cannot_read_is_not_called_invalid(tmp_path, cli, monkeypatch):
    import libcst

    def refuse(text, *a, **k):
        raise libcst.ParserSyntaxError("unsupported by this libcst", lines=["x"], raw_line=2, raw_column=0)

    monkeypatch.setattr(libcst, "parse_module", refuse)
    g, n = pair(tmp_path, "x = 1\ny = 2\n", "x = 1\ny = 3\n", "m.py")
    code, out, err = cli("diff", g, n, "--no-cache", "--color", "never")
    assert "not valid Python" not in err + out
    assert (f"scriptdiff: {g}: valid Python that the structural parser (libcst) cannot read at line 2 "
            f"(unsupported by this libcst); compared as text") in err.splitlines()


def test_the_safe_loader_refusal_never_advises_switching_protection_off():
    from scriptdiff.checks.weights import refusal

    torch_text = ("\x1b[1mWeights only load failed.\x1b[0m This file can still be loaded, to do so you have two "
                  "options, do those steps only if you trust the source of the checkpoint.\n\t(1) Re-running "
                  "`torch.load` with `weights_only` set to `False` will likely succeed, but it can result in "
                  "arbitrary code execution.\n\tWeightsUnpickler error: Unsupported global: GLOBAL "
                  "__main__.Evil was not an allowed global by default.")
    msg = refusal(torch_text)
    assert msg == ("refused by the safe loader (torch.load weights_only=True): it needs the Python object "
                   "`__main__.Evil`, not a tensor or a plain value; such a checkpoint is never loaded (loading it "
                   "could run code). Save the weights as safetensors or as a state_dict of tensors where it was "
                   "made, and compare that")
    assert "\x1b" not in refusal("\x1b[1mWeights only load failed.\x1b[0m")
    assert "False" not in refusal(torch_text)


def test_an_overflowed_statistic_is_not_called_a_zero_tensor():
    from scriptdiff.checks.weights import describe_stats

    base = {"max_abs_diff": None, "rel_l2": None, "cosine": None, "differing_elements": 4, "elements": 4}
    assert "rel L2 n/a (sums of squares overflowed float64)" in describe_stats({**base, "overflow": True})
    assert "rel L2 n/a (GPU tensor is zero)" in describe_stats(base)


def test_overflow_is_flagged_by_the_measurement(tmp_path):
    np = pytest.importorskip("numpy")
    from safetensors.numpy import save_file

    from scriptdiff import api

    save_file({"w": np.full((4,), 1e200, np.float64)}, str(tmp_path / "g.safetensors"))
    save_file({"w": np.full((4,), -1e200, np.float64)}, str(tmp_path / "n.safetensors"))
    report = api.weights(str(tmp_path / "g.safetensors"), str(tmp_path / "n.safetensors"))
    (f,) = report.findings
    assert f.extra.get("overflow") is True
    assert "sums of squares overflowed float64" in f.message and "GPU tensor is zero" not in f.message


# --- notes are not errors -----------------------------------------------------------------------

def test_a_gbk_file_is_a_note_not_an_error(tmp_path, cli):
    (tmp_path / "u.py").write_text("x = 1\n# 中文\n", encoding="utf-8")
    (tmp_path / "k.py").write_bytes("x = 1\n# 中文\n".encode("gbk"))
    code, out, err = cli("diff", str(tmp_path / "u.py"), str(tmp_path / "k.py"), "--color", "never")
    assert code == 0  # a note never changes the exit status
    assert err == f"scriptdiff: note: {tmp_path / 'k.py'}: not UTF-8; decoded as gb18030\n"
    assert "error:" not in out and "input error" not in out
    assert "0 error(s), 0 warning(s), 0 info; 0 expected substitution(s) masked; 1 note(s)" in out
    code, out, _ = cli("diff", str(tmp_path / "u.py"), str(tmp_path / "k.py"), "-f", "json")
    assert json.loads(out)["errors"] == [{"path": str(tmp_path / "k.py"), "message": "not UTF-8; decoded as gb18030",
                                          "level": "note"}]
    code, out, _ = cli("diff", str(tmp_path / "u.py"), str(tmp_path / "k.py"), "-f", "sarif")
    assert [n["level"] for n in json.loads(out)["runs"][0]["invocations"][0]["toolExecutionNotifications"]] == ["note"]


def test_text_to_a_pipe_prints_each_input_error_once(tmp_path):
    (tmp_path / "g.py").write_text("x = 1\n")
    (tmp_path / "n.py").write_bytes(b"\x00\x01binary\x00")
    res = subprocess.run([sys.executable, "-m", "scriptdiff", "diff", str(tmp_path / "g.py"), str(tmp_path / "n.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert res.stdout.count("binary file; not compared") == 1, res.stdout


# --- readable reports and counts ----------------------------------------------------------------

def test_weights_values_are_a_short_table(tmp_path, cli):
    np = pytest.importorskip("numpy")
    from safetensors.numpy import save_file

    save_file({"b": np.ones((2,), np.float32)}, str(tmp_path / "g.safetensors"))
    save_file({"b": np.ones((3,), np.float32)}, str(tmp_path / "n.safetensors"))
    code, out, _ = cli("weights", str(tmp_path / "g.safetensors"), str(tmp_path / "n.safetensors"), "--all",
                       "--color", "never")
    assert code == 1
    lines = out.splitlines()
    i = lines.index("error   SD603 weights:b  tensor b has shape [2] on GPU and [3] on NPU")
    assert lines[i + 1:i + 4] == [
        "         shape  dtype  hash",
        f"    GPU: [2]    F32    312ef0998950…  at {tmp_path / 'g.safetensors'}",
        f"    NPU: [3]    F32    b253c40864a0…  at {tmp_path / 'n.safetensors'}"]
    assert "{'shape'" not in out


def test_data_values_are_a_short_table_and_a_clean_run_says_what_it_compared(tmp_path, cli):
    for side, text in (("g", "a\n"), ("n", "b\n")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "x.txt").write_text(text)
    code, out, _ = cli("data", str(tmp_path / "g"), str(tmp_path / "n"), "--color", "never")
    assert code == 1
    lines = out.splitlines()
    assert lines[1] == "dataset: GPU 1 file(s), 2 bytes; NPU 1 file(s), 2 bytes; 0 identical (compared in full)"
    i = lines.index("error   SD503 data:x.txt  data file x.txt differs between GPU and NPU: content hash differs")
    assert lines[i + 1:i + 4] == ["         size  hash           mode",
                                  f"    GPU: 2     81c4b7f7e054…  full  at {tmp_path / 'g'}/x.txt",
                                  f"    NPU: 2     9d902f9864f3…  full  at {tmp_path / 'n'}/x.txt"]
    code, out, _ = cli("data", str(tmp_path / "g"), str(tmp_path / "g"), "--color", "never")
    assert code == 0
    assert out.splitlines()[1] == "dataset: GPU 1 file(s), 2 bytes; NPU 1 file(s), 2 bytes; 1 identical (compared in full)"


def test_a_clean_weights_run_says_what_it_compared(tmp_path, cli):
    np = pytest.importorskip("numpy")
    from safetensors.numpy import save_file

    save_file({"a": np.zeros((4, 4), np.float32), "b": np.ones((2,), np.float32)}, str(tmp_path / "g.safetensors"))
    code, out, _ = cli("weights", str(tmp_path / "g.safetensors"), str(tmp_path / "g.safetensors"))
    assert code == 0
    assert out.splitlines()[1] == "weights: GPU 2 tensor(s), NPU 2; 2 identical; compared 72 bytes on each side"


def test_a_baseline_run_says_how_many_findings_it_suppressed(tmp_path, cli):
    g, n = pair(tmp_path)
    assert cli("baseline", g, n, "-o", str(tmp_path / "b.json"))[0] == 0
    code, out, _ = cli("diff", g, n, "--baseline", str(tmp_path / "b.json"), "--color", "never")
    assert code == 0
    assert ("0 error(s), 0 warning(s), 0 info; 0 expected substitution(s) masked; 1 suppressed by the baseline"
            in out.splitlines())
    code, out, _ = cli("diff", g, n, "--baseline", str(tmp_path / "b.json"), "-f", "json")
    assert json.loads(out)["suppressed"] == {"baseline": 1}
    code, out, _ = cli("diff", g, n, "-f", "json")
    assert "suppressed" not in json.loads(out)  # additive: only a run given a baseline says it

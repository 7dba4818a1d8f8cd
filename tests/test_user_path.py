"""A user's path through the command line (issue 30): one grammar for the two sides, -o that
writes the format it names or refuses it with the reason, --severity and --quiet, info
findings folded in Markdown, hparams on folders, and the nearest rule code by an edit
distance that counts transpositions."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scriptdiff.ruleset.rules import edit_distance, nearest, unknown_selector

ROOT = Path(__file__).resolve().parent.parent
EX = "fixtures/example"
RUN = {"gpu": [f"{EX}/gpu/pretrain.sh", f"{EX}/gpu/ds_config.json"],
       "npu": [f"{EX}/npu/pretrain.sh", f"{EX}/npu/ds_config.json"]}


def rows(doc: dict) -> list[tuple]:
    return [(f["rule"], f["key"], f["gpu"]["value"] if f["gpu"] else None, f["npu"]["value"] if f["npu"] else None,
             f["gpu"]["path"] if f["gpu"] else None, f["gpu"]["line"] if f["gpu"] else None,
             f["npu"]["path"] if f["npu"] else None, f["npu"]["line"] if f["npu"] else None)
            for f in doc["findings"]]


EXAMPLE_ROWS = [
    ("SD201", "use_flash_attn", True, False, f"{EX}/gpu/pretrain.sh", 11, f"{EX}/npu/train.py", 86),
    ("SD207", "seed", 42, 1234, f"{EX}/gpu/train.py", 19, f"{EX}/npu/train.py", 21),
    ("SD206", "adam_beta2", 0.95, 0.999, f"{EX}/gpu/train.py", 100, f"{EX}/npu/train.py", 102),
    # issue 43: the fused optimizer is an equivalent port edit, transfer_to_npu's side effects said once
    ("SD023", "port:torch_npu.optim.NpuFusedAdamW", "return torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.95), "
     "eps=1e-8)", "return torch_npu.optim.NpuFusedAdamW(groups, lr=args.lr, betas=(0.9, 0.999), eps=1e-8)",
     f"{EX}/gpu/train.py", 100, f"{EX}/npu/train.py", 102),
    ("SD027", "port:transfer_to_npu", None, "transfer_to_npu", None, None, f"{EX}/npu/train.py", 16),
    ("SD302", "env:source set_env.sh", None, "/usr/local/Ascend/ascend-toolkit/set_env.sh", None, None,
     f"{EX}/npu/pretrain.sh", 3),
]


@pytest.fixture
def top(monkeypatch):
    monkeypatch.chdir(ROOT)


def warning_pair(tmp_path):
    for side, lr in (("g", "1e-4"), ("n", "2e-4")):
        (tmp_path / side).mkdir(exist_ok=True)
        (tmp_path / side / "notes.txt").write_text(f"lr={lr}\n")
    return str(tmp_path / "g" / "notes.txt"), str(tmp_path / "n" / "notes.txt")


# --- one grammar for the two sides ----------------------------------------------------------------

def test_diff_takes_several_files_a_side_as_one_run(cli, top):
    """`GPU... vs NPU...`: the files of a side are read together, as `hparams` reads them."""
    code, out, err = cli("diff", *RUN["gpu"], "vs", *RUN["npu"], "-f", "json", "--no-cache")
    assert code == 1, err
    assert rows(json.loads(out)) == EXAMPLE_ROWS
    code, out, err = cli("hparams", *RUN["gpu"], "vs", *RUN["npu"], "-f", "json", "--no-cache")
    assert [r for r in rows(json.loads(out)) if r[0] != "SD302"] == EXAMPLE_ROWS[:5]


@pytest.mark.parametrize("argv,message", [
    (["diff", "a", "b", "c"], "diff: 3 paths and no `vs`: which are GPU and which NPU? give `diff GPU NPU` or "
                              "`diff GPU... vs NPU...`"),
    (["diff", "a", "vs"], "diff: no NPU path after `vs`: `diff GPU NPU` or `diff GPU... vs NPU...`"),
    (["hparams", "vs", "b"], "hparams: no GPU path before `vs`: `hparams GPU NPU` or `hparams GPU... vs NPU...`"),
    (["env", "a", "vs", "b", "vs", "c"], "env: `vs` given 2 times: `env GPU NPU` or `env GPU... vs NPU...` (a file "
                                         "named vs is ./vs)"),
    (["hparams", "a"], "hparams takes two sides: `hparams GPU NPU` or `hparams GPU... vs NPU...` (1 path(s) given)"),
    (["data", "a", "b", "vs", "c"], "data compares one path a side (a folder, a file or a fingerprint), not several: "
                                    "`data GPU NPU`"),
    (["weights", "a", "b", "c"], "weights takes two sides: `weights GPU NPU` (3 path(s) given)"),
])
def test_the_sides_are_refused_once_with_the_grammar(cli, argv, message):
    assert cli(*argv) == (2, "", f"scriptdiff: {message}\n")


def test_a_folder_among_several_files_is_refused(cli, top):
    code, out, err = cli("diff", f"{EX}/gpu", f"{EX}/gpu/train.py", "vs", f"{EX}/npu", f"{EX}/npu/train.py")
    assert (code, out) == (2, "")
    assert err.startswith(f"scriptdiff: diff: {EX}/gpu is a folder: several paths a side are files read together")


def test_the_old_spellings_still_work_with_a_note(cli, top):
    code, out, err = cli("hparams", *RUN["gpu"], "--npu", *RUN["npu"], "-f", "json", "--no-cache")
    assert code == 1
    assert err == ("scriptdiff: note: `hparams GPU... --npu NPU...` is deprecated (it still works): write "
                   "`hparams GPU... vs NPU...`\n")
    assert [r for r in rows(json.loads(out)) if r[0] != "SD302"] == EXAMPLE_ROWS[:5]
    env = [f"{EX}/env-gpu.json", f"{EX}/requirements-gpu.txt", f"{EX}/env-npu.json", f"{EX}/requirements-npu.txt"]
    code, old, err = cli("env", f"{env[0]},{env[1]}", f"{env[2]},{env[3]}", "-f", "json")
    assert code == 1 and err == ("scriptdiff: note: files separated by commas is deprecated (it still works): "
                                 "write `env GPU... vs NPU...`\n")
    code, new, err = cli("env", env[0], env[1], "vs", env[2], env[3], "-f", "json")
    assert (code, err) == (1, "")
    assert rows(json.loads(old)) == rows(json.loads(new))
    assert ("SD401", "pkg:transformers", "4.40.0", "4.38.2") in [r[:4] for r in rows(json.loads(new))]


# --- -o writes the format it names, or refuses it with the reason ---------------------------------

@pytest.mark.parametrize("argv,message", [
    (["collect", "--no-commands", "-o", "x.txt"],
     "-o x.txt: collect writes json only, not text (the extension .txt says text): a snapshot is the JSON file "
     "`scriptdiff env` and `check` read"),
    (["collect", "--no-commands", "-o", "md=x.md"],
     "-o md=x.md: collect writes json only, not markdown (md= says markdown): a snapshot is the JSON file "
     "`scriptdiff env` and `check` read"),
    (["baseline", "g", "n", "-o", "x.sarif"],
     "-o x.sarif: baseline writes json only, not sarif (the extension .sarif says sarif): a baseline is the JSON "
     "file --baseline reads"),
    (["baseline", "g", "n", "-o", "md=x.md"],
     "-o md=x.md: baseline writes json only, not markdown (md= says markdown): a baseline is the JSON file "
     "--baseline reads"),
    (["rules", "-o", "x.html"],
     "-o x.html: rules writes text, json, markdown or sarif, not html (the extension .html says html): the review "
     "page shows files side by side with their findings, and the catalogue has neither"),
    (["rules", "-f", "html"],
     "rules --format html: the review page shows files side by side with their findings, and the catalogue has "
     "neither; use text, json, markdown, sarif"),
    (["weights", "fingerprint", "ckpt", "-o", "w.md"],
     "-o w.md: weights fingerprint writes json only, not markdown (the extension .md says markdown): a "
     "fingerprint is the JSON file `scriptdiff weights` and `check` read"),
])
def test_o_refuses_a_format_the_command_cannot_write(tmp_path, monkeypatch, cli, argv, message):
    monkeypatch.chdir(tmp_path)
    assert cli(*argv) == (2, "", f"scriptdiff: {message}\n")
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def test_o_writes_the_format_its_prefix_names(tmp_path, cli):
    g, n = warning_pair(tmp_path)
    code, _out, err = cli("diff", g, n, "-o", f"md={tmp_path / 'comment'}", "-o", f"txt={tmp_path / 'r'}")
    assert code == 1, err
    assert (tmp_path / "comment").read_text().startswith("### scriptdiff: 0 error(s), 1 warning(s), 0 info\n")
    assert (tmp_path / "r").read_text().startswith(f"scriptdiff: GPU {g}  vs  NPU {n}\n")
    # a command that writes one format takes a name whose extension says nothing as that format
    code, _out, err = cli("baseline", g, n, "-o", str(tmp_path / "accepted.baseline"))
    assert code == 0, err
    assert json.loads((tmp_path / "accepted.baseline").read_text())["findings"][0]["rule"] == "SD108"


def test_output_help_names_every_extension():
    import argparse

    from scriptdiff.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert "(.json, .sarif, .md, .txt, .html)" in " ".join(sub["diff"]._option_string_actions["-o"].help.split())
    assert "(.json, .sarif, .md, .txt)" in " ".join(sub["rules"]._option_string_actions["-o"].help.split())


# --- --severity and --quiet ---------------------------------------------------------------------------

def test_severity_shows_level_and_above_and_the_exit_status_follows(tmp_path, cli, top):
    code, out, _ = cli("diff", f"{EX}/gpu", f"{EX}/npu", "--severity", "warning", "-f", "json", "--no-cache")
    assert code == 1 and rows(json.loads(out)) == EXAMPLE_ROWS[:3]  # the info finding is not shown
    code, out, _ = cli("env", f"{EX}/env-gpu.json", f"{EX}/env-npu.json", "--severity", "warning")
    assert code == 1 and "info    " not in out and "error   SD401 pkg:transformers" in out
    assert "1 error(s), 0 warning(s), 0 info;" in out
    g, n = warning_pair(tmp_path)
    assert cli("diff", g, n, "--severity", "warning")[0] == 1
    code, out, _ = cli("diff", g, n, "--severity", "error")  # a gate on errors only: the warning neither shown nor failing
    assert code == 0 and "SD108" not in out and "0 error(s), 0 warning(s), 0 info" in out
    code, out, err = cli("diff", g, n, "--severity", "fatal")
    assert code == 2 and "scriptdiff diff: error: argument --severity: invalid choice: 'fatal'" in err


def test_check_verdicts_follow_the_severity(cli, top):
    code, out, err = cli("check", "--config", f"{EX}/scriptdiff.toml", "--severity", "error", "-f", "json")
    doc = json.loads(out)
    assert code == 1 and {f["severity"] for f in doc["findings"]} == {"error"}
    assert doc["verdicts"]["environment"] == {"verdict": "pass", "reason": "no differences"}  # its info not shown
    assert doc["verdicts"]["libraries"] == {"verdict": "differences", "reason": "1 error(s)"}


def test_quiet_prints_the_summary_only(tmp_path, cli, top):
    assert cli("diff", f"{EX}/gpu", f"{EX}/npu", "-q", "--no-cache") == (
        1, "3 error(s), 0 warning(s), 3 info; 12 expected substitution(s) masked: 11 exact, 1 equivalent\n"
           "read 6 files: 6 understood or identical\n", "")  # the launch scripts, their programs and configs
    code, out, err = cli("check", "--config", f"{EX}/scriptdiff.toml", "--quiet")
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "hyperparameters: differences (3 error(s))",
        "script: pass (no differences (2 info))",
        "environment: pass (no differences (10 info); NPU stack: SD321 CANN 8.0.RC3 (newest 9.1.0); SD321 torch_npu "
        "2.1.0.post8 (newest 2.1.0.post17))",
        "libraries: differences (1 error(s))",
        "dataset: pass (no differences)",
        "weights: pass (no differences)",
        "4 error(s), 0 warning(s), 12 info; 23 expected substitution(s) masked: 22 exact, 1 equivalent",
        "read 10 files: 10 understood or identical"]
    g, n = warning_pair(tmp_path)
    out_json = tmp_path / "r.json"
    code, out, err = cli("diff", g, n, "-q", "-o", str(out_json))  # -o still writes the whole document
    assert (code, out) == (1, "0 error(s), 1 warning(s), 0 info; 0 expected substitution(s) masked\n"
                              "read 2 files: 2 understood or identical\n")
    assert [f["rule"] for f in json.loads(out_json.read_text())["findings"]] == ["SD108"]
    code, out, err = cli("diff", g, str(tmp_path / "missing.txt"), "-q")  # input errors: on standard error
    assert code == 2 and err.startswith(f"scriptdiff: {tmp_path / 'missing.txt'}: ")
    assert cli("diff", g, n, "-q", "-f", "json") == (
        2, "", "scriptdiff: --quiet prints the text summary; --format json writes the whole document: give one of "
               "them (-o FORMAT=FILE writes a document beside the summary)\n")
    code, out, _ = cli("hparams", *RUN["gpu"], "vs", *RUN["npu"], "-q", "--no-cache")
    assert code == 1 and out.startswith("3 error(s), 0 warning(s), 3 info;")


def test_markdown_folds_info_rows_into_details(cli, top):
    code, out, _ = cli("env", f"{EX}/env-gpu.json", f"{EX}/env-npu.json", "-f", "markdown")
    env = out.split("#### environment\n", 1)[1].split("#### libraries", 1)[0]
    assert env.startswith("\n<details><summary>9 info finding(s) (cannot change numerics)</summary>\n\n"
                          "| Severity | Rule | Key | GPU | NPU | What |\n")
    assert env.rstrip().endswith("</details>") and env.count("| 🔵 info |") == 9
    libs = out.split("#### libraries\n", 1)[1]
    assert "<details>" not in libs and "| 🔴 error | SD401 | `pkg:transformers` |" in libs


# --- hparams on folders ---------------------------------------------------------------------------------

def test_hparams_reads_a_folder_through_its_launch_script(cli, top):
    code, folders, err = cli("hparams", f"{EX}/gpu", f"{EX}/npu", "-f", "json", "--no-cache")
    assert code == 1, err
    code, files, _ = cli("hparams", f"{EX}/gpu/pretrain.sh", f"{EX}/npu/pretrain.sh", "-f", "json", "--no-cache")
    a, b = json.loads(folders), json.loads(files)
    assert a["table"] == b["table"] and rows(a) == rows(b) == EXAMPLE_ROWS
    seed = next(r for r in a["table"] if r["key"] == "seed")
    assert (seed["gpu"]["value"], seed["gpu"]["line"], seed["npu"]["value"], seed["npu"]["line"]) == (42, 19, 1234, 21)


def test_hparams_refuses_a_folder_it_cannot_read_once_before_printing(cli, top):
    code, out, err = cli("hparams", "fixtures/launch/megatron", "fixtures/launch/verl")
    assert (code, out) == (2, "")
    assert err == ("scriptdiff: hparams: fixtures/launch/megatron is a folder with launch scripts "
                   "(fixtures/launch/megatron/gpu/pretrain_llama2_7b.sh, fixtures/launch/megatron/npu/"
                   "pretrain_llama2_7b.sh, fixtures/launch/megatron/npu_injected/pretrain_llama2_7b.sh): a folder is "
                   "read through its one launch script; name the files of one run instead (`hparams GPU... vs "
                   "NPU...`)\n")
    code, out, err = cli("hparams", "fixtures/python/hf_trainer/gpu", "fixtures/python/hf_trainer/npu")
    assert (code, out, err.count("\n")) == (2, "", 1) and "is a folder with no launch script" in err


# --- the nearest rule code --------------------------------------------------------------------------------

def test_edit_distance_counts_a_transposition_as_one():
    assert edit_distance("SD260", "SD206") == 1
    assert edit_distance("SD260", "SD605") == 2  # what the old suggestion (difflib's ratio) chose
    assert edit_distance("ab", "ba") == 1 and edit_distance("abc", "abc") == 0 and edit_distance("", "ab") == 2
    assert nearest("SD260", ["SD160", "SD206", "SD210", "SD220", "SD605"]) == "SD206"  # all one edit: the swap
    assert nearest("SD1061", ["SD101", "SD106"]) == "SD106"
    assert nearest("XYZ99", ["SD101"]) is None


def test_an_inline_ignore_with_a_swapped_code_suggests_the_swap(tmp_path, cli):
    g, n = warning_pair(tmp_path)
    Path(n).write_text("lr=2e-4  # scriptdiff: ignore[SD260]\n")
    code, out, err = cli("diff", g, n)
    assert code == 2
    assert "unknown rule code or prefix 'SD260'; did you mean SD206?" in out + err
    assert unknown_selector("SD260") == "unknown rule code or prefix 'SD260'; did you mean SD206?"


# --- a terminal 80 columns wide ---------------------------------------------------------------------

def test_at_80_columns_quoted_source_lines_wrap_under_their_gutter(top):
    import re

    from scriptdiff import api
    from scriptdiff.model import Options

    report = api.diff(f"{EX}/gpu", f"{EX}/npu", Options(use_cache=False))
    out = re.sub(r"\x1b\[[0-9;]*m", "", api.render(report, "text", color=True, width=80))  # a terminal, colours dropped
    lines = out.splitlines()
    assert max(len(x) for x in lines) <= 80
    i = lines.index("        100 | return torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.95),")
    assert lines[i + 1] == "            | eps=1e-8)"
    i = lines.index("        102 | return torch_npu.optim.NpuFusedAdamW(groups, lr=args.lr,")
    assert lines[i + 1] == "            | betas=(0.9, 0.999), eps=1e-8)"
    assert "        attn_implementation (use_flash_attn) is on for GPU and off for NPU" in lines  # a finding's own hang
    body = lines[lines.index("== hyperparameters ========================================"):
                 next(i for i, x in enumerate(lines) if x.startswith("3 error(s), 0 warning(s), 3 info;"))]
    assert all(x == "" or x.startswith((" ", "error ", "info ", "== ")) for x in body)  # nothing wraps to column 0
    # off a terminal, never broken
    plain = api.render(report, "text", color=False)
    assert "        100 | return torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.95), eps=1e-8)" in plain.splitlines()


# --- the account: every file read, named at its own line (issue 41) -------------------------------

LAYOUT = {
    "train.py": "import argparse\nimport torch\nimport yaml\n\n\ndef main():\n    p = argparse.ArgumentParser()\n"
                "    p.add_argument(\"--config\")\n    p.add_argument(\"--lr\", type=float, default=1e-4)\n"
                "    args = p.parse_args()\n    cfg = yaml.safe_load(open(args.config))\n"
                "    model = torch.nn.Linear(4, 4).cuda()\n"
                "    torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=cfg[\"weight_decay\"])\n\n\nmain()\n",
    "config.yaml": "weight_decay: 0.1\nwarmup_steps: 100\n",
    "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --config config.yaml --lr 1e-4\n",
}


def three_files_a_side(tmp_path, npu_config: str = LAYOUT["config.yaml"]):
    """A launch script, the program it starts and the config it names, on each side; the NPU
    port's only edits are the device's (and `npu_config`)."""
    from conftest import write_files

    write_files(tmp_path, {f"gpu/{k}": v for k, v in LAYOUT.items()})
    write_files(tmp_path, {"npu/train.py": LAYOUT["train.py"].replace(".cuda()", ".npu()")
                           .replace("import torch\n", "import torch\nimport torch_npu\n"),
                           "npu/config.yaml": npu_config,
                           "npu/run.sh": LAYOUT["run.sh"].replace("#!/bin/bash\n", "#!/bin/bash\nsource "
                                                                  "/usr/local/Ascend/ascend-toolkit/set_env.sh\n")})
    return str(tmp_path / "gpu"), str(tmp_path / "npu")


@pytest.mark.parametrize("config,code", [(LAYOUT["config.yaml"], 0), ("weight_decay: 0.01\nwarmup_steps: 100\n", 1)])
def test_a_folder_diff_counts_every_file_it_read(tmp_path, cli, config, code):
    """Three files a side, faithful or with a drift in the config: six files read either way
    (the launch scripts, the programs they start and the configs they name), in the text, the
    JSON (each file read through a launch script under its `through`) and the page."""
    g, n = three_files_a_side(tmp_path, config)
    got, out, _ = cli("diff", g, n, "-q", "--no-cache")
    assert got == code and out.splitlines()[-1] == "read 6 files: 6 understood or identical"
    doc = json.loads(cli("diff", g, n, "-f", "json", "--no-cache")[1])
    shown = {(a["path"].rsplit("/", 2)[-2] + "/" + a["path"].rsplit("/", 1)[-1],
              tuple(t["path"].rsplit("/", 1)[-1] for t in a.get("through", ()))) for a in doc["inputs"]}
    assert shown == {("gpu/run.sh", ("config.yaml", "train.py")), ("npu/run.sh", ("config.yaml", "train.py"))}
    page = tmp_path / "page.html"
    cli("diff", g, n, "-o", f"html={page}", "--no-cache")
    assert page.read_text().count("read 6 files: 6 understood or identical") == 1


def test_the_bundled_example_reads_six_files(cli, top):
    code, out, _ = cli("diff", f"{EX}/gpu", f"{EX}/npu", "-f", "json", "--no-cache")
    doc = json.loads(out)
    assert [(a["path"], [t["path"] for t in a.get("through", ())]) for a in doc["inputs"]] == [
        (f"{EX}/gpu/pretrain.sh", [f"{EX}/gpu/ds_config.json", f"{EX}/gpu/train.py"]),
        (f"{EX}/npu/pretrain.sh", [f"{EX}/npu/ds_config.json", f"{EX}/npu/train.py"])]


def test_a_config_found_nowhere_is_said_at_its_own_file_and_line(tmp_path, cli):
    """A config the run's config names (`deepspeed: ds.json` at config.yaml:3) found on GPU only:
    the NPU config.yaml is not understood at its line 3, not its launch script."""
    g, n = three_files_a_side(tmp_path, LAYOUT["config.yaml"] + "deepspeed: ds.json\n")
    (tmp_path / "gpu" / "config.yaml").write_text(LAYOUT["config.yaml"] + "deepspeed: ds.json\n")
    (tmp_path / "gpu" / "ds.json").write_text('{"gradient_clipping": 1.0}\n')
    code, out, _ = cli("diff", g, n, "-q", "--no-cache")
    assert code == 1
    assert out.splitlines()[-1] == (f"read 7 files: 6 understood or identical, 1 not: {n}/config.yaml (not understood: "
                                    f"line 3: referenced config ds.json was not found (tried {n}/ds.json): its "
                                    f"settings were not compared)")


def test_a_faithful_pair_names_the_file_and_line_of_a_config_neither_side_has(tmp_path, cli):
    """Issue 41: a faithful pair exited 0 saying two files were not understood, at a line of
    another file: both configs (read through the launch scripts) name ds.json, which neither
    side has. Each config says it at its own line 3; the launch scripts are understood."""
    g, n = three_files_a_side(tmp_path, LAYOUT["config.yaml"] + "deepspeed: ds.json\n")
    (tmp_path / "gpu" / "config.yaml").write_text(LAYOUT["config.yaml"] + "deepspeed: ds.json\n")
    code, out, _ = cli("diff", g, n, "-f", "json", "--no-cache")
    doc = json.loads(out)
    assert (code, [f["rule"] for f in doc["findings"] if f["severity"] != "info"]) == (0, [])
    named = sorted((a["path"], a["status"], a["unread"]) for top in doc["inputs"]
                   for a in [top] + top.get("through", []) if a["status"] != "understood")
    assert named == [(f"{side}/config.yaml", "not understood",
                      [f"line 3: referenced config ds.json was not found (tried {side}/ds.json): its settings were not "
                       f"compared; the {other} side names the same file and misses it too, and no setting one side "
                       f"states could come from it on the other (SD158)"]) for side, other in ((g, "NPU"), (n, "GPU"))]


def test_exit_zero_reports_and_exits_0_unless_the_run_could_not_go_on(tmp_path, cli, top):
    """Issue 41: --exit-zero, as ruff's: the findings are reported, the exit status is 0; a run
    that could not go on still exits 2."""
    code, out, _ = cli("diff", f"{EX}/gpu", f"{EX}/npu", "-q", "--exit-zero", "--no-cache")
    assert (code, out.splitlines()[0]) == (0, "3 error(s), 0 warning(s), 3 info; 12 expected substitution(s) masked: "
                                              "11 exact, 1 equivalent")
    assert cli("hparams", *RUN["gpu"], "vs", *RUN["npu"], "-q", "--exit-zero", "--no-cache")[0] == 0
    assert cli("check", "--config", f"{EX}/scriptdiff.toml", "-q", "--strict", "--exit-zero", "--no-cache")[0] == 0
    assert cli("diff", f"{EX}/gpu", str(tmp_path / "missing"), "-q", "--exit-zero")[0] == 2


def test_on_a_terminal_without_colour_lines_wrap_at_its_width(top):
    """Issue 41: wrapping at the terminal's width happened only with colour on (`--color never`
    on an 80-column terminal: lines of 100 and more); it follows the terminal, not the colour."""
    from scriptdiff import api
    from scriptdiff.model import Options

    report = api.diff(f"{EX}/gpu", f"{EX}/npu", Options(use_cache=False))
    lines = api.render(report, "text", color=False, terminal=True, width=80).splitlines()
    assert "\x1b" not in "".join(lines) and max(len(x) for x in lines) <= 80
    assert "            | betas=(0.9, 0.999), eps=1e-8)" in lines  # under the quoted line's gutter
    assert max(len(x) for x in api.render(report, "text", color=False).splitlines()) > 80  # a pipe: never broken


def test_curves_table_keeps_names_whole_and_wraps_evidence_under_its_indent(tmp_path, cli):
    """Issue 41: the curves table cut names at 24 characters and was 96 columns wide whatever it
    held, so an 80-column terminal broke its rows; its columns are as wide as their cells."""
    from scriptdiff import api
    from scriptdiff.model import Options
    from test_curves_verdicts import spike_and_drift

    g, n = spike_and_drift(tmp_path)
    for side in (g, n):  # a metric whose name is longer than 24 characters
        log = side / "train.log"
        log.write_text(log.read_text().replace("| grad norm:", "| grad norm of the last layer:"))
    report = api.curves(str(g), str(n), Options(use_cache=False))
    table = report.overview[report.overview.index(next(x for x in report.overview if x.startswith("series "))):]
    assert table[0].split() == ["series", "points", "first", "N", "run", "worst", "win", "max", "at", "beyond",
                                "diverges"]
    assert any(x.startswith("grad norm of the last layer ") for x in table)
    rows = [x for x in table if not x.startswith(("not compared", "logged on", "  "))]
    assert len({len(x) for x in rows}) == 1 and len(rows[0]) < 96  # aligned, as wide as the cells
    lines = api.render(report, "text", color=False, terminal=True, width=80).splitlines()
    i = lines.index(next(x for x in lines if x.startswith("  mean relative error of loss:")))
    assert len(lines[i]) <= 80 and lines[i + 1].startswith("    ")  # the evidence's continuation hangs


def test_hparams_cells_wrap_between_words_where_the_terminal_allows(cli, top):
    code, out, _ = cli("hparams", *RUN["gpu"], "vs", *RUN["npu"], "--no-cache")
    cells = [c.strip() for x in out.splitlines() if x.startswith("│") for c in x.strip("│").split("│")]
    assert {"derived:", "world_size /", "(tp * pp * cp)"} <= set(cells)  # its inputs are rows of their own
    from scriptdiff import api
    from scriptdiff.model import Options

    report = api.hparams(RUN["gpu"], RUN["npu"], Options(use_cache=False))
    wide = api.render_table(report, "text", terminal=True, width=120)
    words = {w for x in wide.splitlines() if x.startswith("│") for c in x.strip("│").split("│") for w in c.split()}
    assert {"ds_config.json", "data/train.jsonl", "Qwen/Qwen2-1.5B", "pretrain.sh:10"} <= words

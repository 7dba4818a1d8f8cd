"""Issue 40, "Silent passes": what could not be compared is never taken for agreement.

- a file the analyser cannot read (a launch script nested past its limit) is "not
  understood" on each side it was read for, never "identical": one-file mode, two files with
  the same bytes and a folder of them all exit 1, each side's file named with its reason;
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest



def _cli(args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scriptdiff", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


# ------------------------------------------------------------------ a file the analyser cannot read

DEEP = ("#!/bin/bash\nif [ -d /usr/local/Ascend ]; then\n" + "( " * 3000 + "torchrun train.py --lr 1"
        + " )" * 3000 + "\nfi\n")
WHY = "its settings were not read (nested too deeply to analyse)"


@pytest.mark.parametrize("how", ["one-file", "two-files", "folder"])
def test_a_script_nested_past_the_limit_is_never_a_pass(tmp_path, how):
    for d in ("gpu", "npu"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "run.sh").write_text(DEEP, encoding="utf-8")
    args = {"one-file": ["gpu/run.sh"], "two-files": ["gpu/run.sh", "npu/run.sh"], "folder": ["gpu"]}[how]
    r = _cli(["diff", "--no-cache", "-f", "json", *args], tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    names = {"one-file": ["gpu/run.sh", "gpu/run.sh"], "two-files": ["gpu/run.sh", "npu/run.sh"],
             "folder": ["gpu/run.sh", "gpu/run.sh"]}[how]
    assert [(a["path"], a["side"], a["status"], a["unread"]) for a in doc["inputs"]] == [
        (names[0], "gpu", "not understood", [WHY]), (names[1], "npu", "not understood", [WHY])]
    assert sorted((f["rule"], f["key"]) for f in doc["findings"]) == [
        ("SD154", f"input:{names[0]}"), ("SD154", f"input:{names[1]}")]
    assert r.stderr.splitlines() == [f"scriptdiff: {n}: nested too deeply to analyse; skipped" for n in sorted(names)]


def test_the_text_account_says_which_files_were_not_understood(tmp_path):
    (tmp_path / "run.sh").write_text(DEEP, encoding="utf-8")
    r = _cli(["diff", "--no-cache", "run.sh"], tmp_path)
    assert r.returncode == 1
    assert f"read 2 files: 0 understood or identical, 2 not: run.sh (not understood: {WHY}); run.sh (not understood: " \
           f"{WHY})" in r.stdout.splitlines()

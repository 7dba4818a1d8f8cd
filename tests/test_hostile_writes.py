"""Writes where nothing may be written (issue 40): what `rules --test`, `fix` and `init` write,
and where they refuse. Each case asserts the promise: a refusal in one line naming the file and
the reason, the exit status, and nothing written outside the folder it belongs to (the file
refused is as it was, byte for byte)."""
from __future__ import annotations

import os
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from scriptdiff import api
from scriptdiff.model import Options, UsageError


@pytest.fixture(autouse=True)
def shipped_only_after():
    """The user's packs of one test never reach the next (the rule set is the process's)."""
    api.use_rules([])
    yield
    api.use_rules([])


# --- rules --test: an example's files stay in its folder ----------------------------------------

PACK = """\
example_modes:
  SDX102: dumps
rules:
  - code: SDX102
    name: dumps-example
    check: dumps
    severity: error
    summary: a rule whose examples are dump folders
    doc: its examples name the files each side's dump folder holds
    examples:
      - {{lang: json, gpu_name: bundle.json, npu_name: bundle.json, gpu: '{gpu}', npu: '{{}}', fires: true}}
      - {{lang: json, gpu_name: {name}, npu_name: bundle.json, gpu: '{{}}', npu: '{{}}', fires: false}}
"""


def team(tmp: Path, gpu: str = "{}", name: str = "bundle.json") -> str:
    folder = tmp / "team"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pack.yaml").write_text(PACK.format(gpu=gpu, name=name), encoding="utf-8")
    return str(folder)


def test_a_dumps_example_naming_a_file_out_of_its_folder_is_a_broken_pack(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("as it was\n")
    up = "../" * 12 + str(victim).lstrip("/")
    pack = team(tmp_path, gpu='{"' + up + '": "OVERWRITTEN"}')
    code, out, err = run_cli("rules", "--test", pack)
    assert (code, out) == (2, "")
    assert err == (f"scriptdiff: invalid rule pack: {pack}/pack.yaml:11: SDX102: a dumps example's gpu text names "
                   f"'{up}', which is not a path inside the example's folder (a relative one, without '..'); "
                   f"nothing of it is written\n")
    assert victim.read_text() == "as it was\n"
    for name in ("/" + str(victim).lstrip("/"), "dump/../../x.json", "dump\\\\x.json"):  # absolute, up, a backslash
        pack = team(tmp_path, gpu='{"' + name + '": "X"}')
        code, _, err = run_cli("rules", "--test", pack)
        assert code == 2 and "which is not a path inside the example's folder" in err
    assert victim.read_text() == "as it was\n"


@pytest.mark.parametrize("name", ["../../x.sh", "/tmp/x.sh", "sub/x.sh", "..", "''"])
def test_an_example_file_name_that_is_a_path_is_a_broken_pack(tmp_path, name):
    pack = team(tmp_path, name=name)
    code, out, err = run_cli("rules", "--test", pack)
    shown = {"''": "''"}.get(name, repr(name))
    assert (code, out) == (2, "")
    assert err == (f"scriptdiff: invalid rule pack: {pack}/pack.yaml:12: SDX102: an example's 'gpu_name' is a plain "
                   f"file name, not a path (got {shown})\n")
    assert not (tmp_path / "x.sh").exists() and not Path("/tmp/x.sh").exists()


def test_the_run_refuses_a_name_out_of_the_folder_even_past_the_packs_checks(tmp_path):
    """The second lock: an Example built by hand (no pack, no validator) still writes nothing out
    of its folder; the example fails with the reason."""
    from scriptdiff.project import rule_examples
    from scriptdiff.ruleset.rulepack import Example, Rule

    victim = tmp_path / "victim.txt"
    victim.write_text("as it was\n")
    rel = os.path.relpath(victim, "/tmp")
    bad = [Example(lang="json", gpu='{"../../' + "../" * 8 + str(victim).lstrip("/") + '": "X"}', npu="{}",
                   fires=True, gpu_name="bundle.json", npu_name="bundle.json"),
           Example(lang="shell", gpu="x\n", npu="x\n", fires=False, gpu_name="../../" + rel)]
    rule = Rule(code="SD801", name="n", check="dumps", kind="finding", severity="error", summary="", doc="",
                examples=bad[:1])
    other = Rule(code="SD150", name="n", check="script", kind="finding", severity="warning", summary="", doc="",
                 examples=bad[1:])
    results = rule_examples.run_examples([rule, other])
    assert [r.error for r in results] == [
        f"the example names '{'../' * 10 + str(victim).lstrip('/')}', a path out of its folder: refused, nothing "
        f"written",
        f"the example names '../../{rel}', a path out of its folder: refused, nothing written"]
    assert victim.read_text() == "as it was\n"


def test_the_shipped_dumps_examples_still_pass(tmp_path):
    from scriptdiff.project import rule_examples
    from scriptdiff.ruleset.rules import load

    rs = load()
    rules = [rs.rules[c] for c in ("SD801", "SD021")]
    assert all(r.passed for r in rule_examples.run_examples(rules))



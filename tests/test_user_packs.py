"""A team's own rule packs (`--rules DIR`, `rules = [...]` in [tool.scriptdiff]): the launcher,
spellings, settings and masks of an in-house framework scriptdiff does not ship, in the
schema of rules/, merged with the shipped packs; `scriptdiff rules --test DIR` runs their
examples; a broken pack is one line naming its file and line, exit 2."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from test_runmemo import memo  # noqa: F401  (the run memo on, counting the runs that compared)
from scriptdiff import api
from scriptdiff.run import engine, zygote
from scriptdiff.ruleset import rules
from scriptdiff.inputs import store
from scriptdiff.model import Options
from scriptdiff.ruleset.rulepack import RuleError

# `orbit`, a made-up in-house trainer: `orbit fit [options] CONFIG`
ORBIT = """\
# the in-house `orbit` trainer: its launcher, its spellings, a setting of its own, a port mask
launchers:
  entries:
    - name: orbit
      commands: [orbit]
      subcommands: [fit, eval]
      program: subcommand
vocabulary:
  global_batch_size: {aliases: [global_batch]}
  orbit_kernel: {category: orbit_kernels, type: str, aliases: [kernel_impl]}
categories:
  orbit_kernels: {rule: SDX101, title: orbit kernels}
python:
  qualified_renames:
    - {npu: orbit.ascend_kernels, gpu: orbit.fast_kernels, rule: SDX001}
rules:
  - code: SDX001
    name: orbit-kernels-port
    check: script
    kind: mask
    summary: orbit.fast_kernels is orbit.ascend_kernels on NPU
    doc: The expected port of orbit's kernel module.
    examples:
      - {lang: python, gpu: "import orbit\\ny = orbit.fast_kernels.mm(a, b)\\n", npu: "import orbit\\ny = orbit.ascend_kernels.mm(a, b)\\n", fires: true}
      - {lang: python, gpu: "import orbit\\ny = orbit.fast_kernels.mm(a, b)\\n", npu: "import orbit\\ny = orbit.fast_kernels.mm(a, b)\\n", fires: false}
  - code: SDX101
    name: orbit-kernel-differs
    check: hyperparameters
    severity: warning
    summary: orbit's --kernel-impl differs between GPU and NPU
    doc: orbit picks its attention kernels by --kernel-impl; another kernel changes numerics.
    examples:
      - {lang: shell, gpu: "orbit fit --kernel-impl fused\\n", npu: "orbit fit --kernel-impl eager\\n", fires: true}
      - {lang: shell, gpu: "orbit fit --kernel-impl fused\\n", npu: "orbit fit --kernel-impl fused\\n", fires: false}
"""
LAUNCH = "#!/bin/bash\norbit fit --learning-rate {lr} --global-batch 256 train.yaml\n"
EXAMPLE_LINES = [i for i, line in enumerate(ORBIT.splitlines(), 1) if "{lang:" in line]  # [24, 25, 33, 34]


def line_of(text: str, needle: str) -> int:
    assert text.count(needle) == 1, needle
    return text[:text.index(needle)].count("\n") + 1


@pytest.fixture(autouse=True)
def shipped_only_after():
    """Each test starts and ends with the shipped packs only (the rule set is the process's)."""
    api.use_rules([])
    yield
    api.use_rules([])


def pack(folder: Path, text: str = ORBIT, name: str = "orbit.yaml") -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return str(folder)


def launch_pair(root: Path) -> tuple[str, str]:
    for side, lr in (("gpu", "3e-4"), ("npu", "1e-4")):
        (root / side).mkdir(parents=True, exist_ok=True)
        (root / side / "train.sh").write_text(LAUNCH.format(lr=lr), encoding="utf-8")
        (root / side / "train.yaml").write_text("seed: 1\n", encoding="utf-8")
    return str(root / "gpu" / "train.sh"), str(root / "npu" / "train.sh")


def findings(out: str) -> list[tuple]:
    return [(f["rule"], f["key"], f["gpu"] and f["gpu"]["value"], f["npu"] and f["npu"]["value"],
             f["gpu"] and f["gpu"]["line"], f["npu"] and f["npu"]["line"]) for f in json.loads(out)["findings"]]


# --- the proof: an in-house launcher and its spellings --------------------------------------

def test_with_the_pack_the_orbit_launcher_is_read_and_its_learning_rate_compared(tmp_path):
    g, n = launch_pair(tmp_path)
    team = pack(tmp_path / "team-rules")
    code, out, err = run_cli("diff", g, n, "--rules", team, "--format", "json")
    assert (code, err) == (1, "")
    assert findings(out) == [("SD202", "lr", 0.0003, 0.0001, 2, 2)]
    doc = json.loads(out)
    assert doc["findings"][0]["gpu"]["path"] == g and doc["findings"][0]["npu"]["path"] == n
    # --global-batch is global_batch_size through the pack's alias: read on both sides, equal
    code, out, _ = run_cli("hparams", g, n, "--rules", team, "--format", "json")
    rows = {r["key"]: r for r in json.loads(out)["table"]}
    assert (rows["global_batch_size"]["gpu"]["value"], rows["global_batch_size"]["npu"]["value"]) == (256, 256)


def test_without_the_pack_the_same_files_say_the_launcher_is_not_known(tmp_path):
    g, n = launch_pair(tmp_path)
    code, out, _ = run_cli("diff", g, n, "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert [(f["rule"], f["key"]) for f in doc["findings"]] == [("SD154", f"input:{g}"), ("SD154", f"input:{n}")]
    assert all("line 2: launcher `orbit fit` is not known: its 2 options were not compared" in f["message"]
               for f in doc["findings"])


def test_a_folder_diff_with_a_user_pack_runs_its_pairs_in_the_reader_process(tmp_path, monkeypatch):
    calls = []
    real = zygote.run_pool
    monkeypatch.setattr(zygote, "run_pool", lambda *a: calls.append(len(a[0])) or real(*a))
    monkeypatch.delenv("SCRIPTDIFF_NO_ZYGOTE", raising=False)
    for side, lr, kernel in (("gpu", "3e-4", "fused"), ("npu", "1e-4", "eager")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "train.yaml").write_text("seed: 1\n")
        for i in range(engine.PARALLEL_MIN_JOBS + 1):
            (tmp_path / side / f"run{i}.sh").write_text(
                f"#!/bin/bash\norbit fit --learning-rate {lr} --kernel-impl {kernel} train.yaml\n")
    api.use_rules([pack(tmp_path / "team")])
    report = api.diff(str(tmp_path / "gpu"), str(tmp_path / "npu"), Options(use_cache=False, jobs=2))
    assert calls == [engine.PARALLEL_MIN_JOBS + 1]  # handed to the reader process (and its workers)
    assert sorted((f.rule, f.key, f.gpu.path.rsplit("/", 1)[-1], f.gpu.value, f.npu.value) for f in report.findings) \
        == sorted([("SD202", "lr", f"run{i}.sh", 0.0003, 0.0001) for i in range(engine.PARALLEL_MIN_JOBS + 1)]
                  + [("SDX101", "orbit_kernel", f"run{i}.sh", "fused", "eager")
                     for i in range(engine.PARALLEL_MIN_JOBS + 1)])


def test_a_user_port_mask_masks_the_renamed_module(tmp_path):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    (tmp_path / "gpu" / "m.py").write_text("import orbit\ny = orbit.fast_kernels.mm(a, b)\n")
    (tmp_path / "npu" / "m.py").write_text("import orbit\ny = orbit.ascend_kernels.mm(a, b)\n")
    g, n = str(tmp_path / "gpu" / "m.py"), str(tmp_path / "npu" / "m.py")
    code, out, _ = run_cli("diff", g, n, "--rules", pack(tmp_path / "team"), "--format", "json")
    doc = json.loads(out)
    assert (code, doc["findings"]) == (0, [])
    assert [(m["rule"], m["gpu"]["line"], m["npu"]["line"]) for m in doc["masked"]] == [("SDX001", 2, 2)]
    code, out, _ = run_cli("diff", g, n, "--format", "json")  # without it: a code difference
    assert code == 1 and [(f["rule"], f["gpu"]["line"]) for f in json.loads(out)["findings"]] == [("SD102", 2)]


def test_check_reads_the_packs_its_configuration_names_relative_to_it(tmp_path, monkeypatch):
    g, n = launch_pair(tmp_path / "proj")
    pack(tmp_path / "proj" / "team-rules")
    (tmp_path / "proj" / "scriptdiff.toml").write_text(
        'rules = ["team-rules"]\nselect = ["SD2", "SDX"]\n[gpu]\nlaunch = ["gpu/train.sh"]\n[npu]\nlaunch = ["npu/train.sh"]\n')
    monkeypatch.chdir(tmp_path)  # elsewhere: the folder is found relative to the configuration
    code, out, err = run_cli("check", "--config", "proj/scriptdiff.toml", "--format", "json")
    assert (code, err) == (1, "")
    assert findings(out) == [("SD202", "lr", 0.0003, 0.0001, 2, 2)]
    code, _, err = run_cli("check", "--config", "proj/scriptdiff.toml", "--select", "SDX101")
    assert (code, err) == (0, "")  # a code of the configuration's own packs is a known code


# --- rules: origins, --test, the cache ---------------------------------------------------------

def test_rules_lists_every_code_with_its_pack(tmp_path):
    team = pack(tmp_path / "team")
    code, out, _ = run_cli("rules", "--rules", team)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("SD001  script") and lines[0].endswith("  [rules/python.yaml]")
    assert lines[-2:] == [
        f"SDX001  script          masked   orbit-kernels-port: orbit.fast_kernels is orbit.ascend_kernels on NPU  "
        f"[yours: {team}/orbit.yaml]",
        f"SDX101  hyperparameters warning  orbit-kernel-differs: orbit's --kernel-impl differs between GPU and NPU  "
        f"[yours: {team}/orbit.yaml]"]
    code, out, _ = run_cli("rules", "--rules", team, "--format", "json")
    by_code = {r["code"]: r for r in json.loads(out)}
    assert (by_code["SDX101"]["pack"], by_code["SDX101"]["origin"]) == (f"{team}/orbit.yaml", "user")
    assert (by_code["SD202"]["pack"], by_code["SD202"]["origin"]) == ("rules/hparams.yaml", "shipped")
    code, out, _ = run_cli("rule", "SDX101", "--rules", team)
    assert code == 0 and out.startswith(f"SDX101 orbit-kernel-differs  [hyperparameters, warning]  ({team}/orbit.yaml)")
    code, out, _ = run_cli("rules")  # the next run without --rules: the shipped packs only
    assert "SDX" not in out


def test_rules_test_runs_the_packs_own_examples(tmp_path):
    team = pack(tmp_path / "team")
    code, out, err = run_cli("rules", "--test", team)
    assert (code, err) == (0, "")
    a, b, c, d = EXAMPLE_LINES
    assert out.splitlines() == [
        f"PASS  SDX001 example 1 (python, fires)  {team}/orbit.yaml:{a}",
        f"PASS  SDX001 example 2 (python, does not fire)  {team}/orbit.yaml:{b}",
        f"PASS  SDX101 example 1 (shell, fires)  {team}/orbit.yaml:{c}",
        f"PASS  SDX101 example 2 (shell, does not fire)  {team}/orbit.yaml:{d}",
        "4 example(s): 4 passed, 0 failed"]


def test_rules_test_fails_on_an_example_that_does_not_do_what_it_says(tmp_path):
    wrong = ORBIT.replace('npu: "orbit fit --kernel-impl eager\\n", fires: true',
                          'npu: "orbit fit --kernel-impl fused\\n", fires: true')
    team = pack(tmp_path / "team", wrong)
    code, out, _ = run_cli("rules", "--test", team)
    assert code == 1
    assert f"FAIL  SDX101 example 1 (shell, fires)  {team}/orbit.yaml:{EXAMPLE_LINES[2]}: did not fire " \
           f"(also reported: nothing else)" in out.splitlines()
    assert out.splitlines()[-1] == "4 example(s): 3 passed, 1 failed"


def test_a_broken_pack_is_one_line_and_exit_2(tmp_path):
    team = pack(tmp_path / "team", ORBIT.replace("commands: [orbit]", "commands: orbit"))
    for argv in (("rules", "--test", team), ("diff", "a", "b", "--rules", team), ("rules", "--rules", team)):
        code, out, err = run_cli(*argv)
        assert (code, out) == (2, "")
        assert err == (f"scriptdiff: invalid rule pack: {team}/orbit.yaml:{line_of(ORBIT, 'commands: [orbit]')}: "
                       f"launchers.entries[0].commands: expected a list of names (got 'orbit')\n")
    code, _, err = run_cli("rules", "--rules", str(tmp_path / "nowhere"))
    assert (code, err) == (2, f"scriptdiff: --rules {tmp_path / 'nowhere'}: no such folder\n")


def test_user_packs_never_share_a_cache_entry_or_a_snapshot_with_the_shipped_set(tmp_path, monkeypatch):
    monkeypatch.setattr(rules, "_SNAPSHOT_DIR", tmp_path / "__pycache__")
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    rules._load.cache_clear()
    shipped_key = rules.cache.key("ruleset")
    rules.load()
    snaps = sorted(p.name for p in (tmp_path / "__pycache__").iterdir())
    assert snaps == [f"ruleset.{shipped_key}.marshal"]
    team = Path(pack(tmp_path / "team"))
    api.use_rules([str(team)])
    assert rules.cache.key("ruleset") != shipped_key and "SDX101" in rules.load().rules
    assert sorted(p.name for p in (tmp_path / "__pycache__").iterdir()) == snaps  # none written, none removed
    (team / "orbit.yaml").write_text(ORBIT.replace("orbit kernels}", "orbit's kernels}"), encoding="utf-8")
    before = rules.cache.key("ruleset")
    store.user_salt.cache_clear()
    assert rules.cache.key("ruleset") != before  # the pack's bytes are in every key
    api.use_rules([])
    assert rules.cache.key("ruleset") == shipped_key and "SDX101" not in rules.load().rules


# --- how packs merge, and where their errors are ------------------------------------------------

def _shipped_line(pack: str, starts: str) -> int:
    """The line of rules/PACK that starts with `starts` (the shipped packs move as they grow)."""
    lines = (Path(__file__).resolve().parent.parent / "rules" / pack).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.startswith(starts))


@pytest.mark.parametrize("text,line,message", [
    # a user's rule takes an SDX code; a shipped code is refused
    ("rules:\n  - code: SD901\n", 2, "rule code 'SD901' is of the form the shipped packs use (SD123): a rule of your "
                                     "own takes a code SDX001 to SDX999, which no release of scriptdiff ships"),
    # a launcher claiming a shipped launcher's command
    ("launchers:\n  entries:\n    - name: mytorchrun\n      commands: [torchrun]\n      program: after-options\n", 4,
     "launchers.entries[0].commands[0]: command torchrun is also torchrun's"),
    # a category given again, a shipped key's type changed
    ("categories:\n  lr: {rule: SD202, title: x}\n", 2,
     f"categories.lr: defined twice (also in rules/vocabulary.yaml:{_shipped_line('vocabulary.yaml', '  lr: ')})"),
    ("vocabulary:\n  lr: {type: int}\n", 2, "vocabulary.lr.type: defined twice (also in rules/vocabulary.yaml:"
     f"{_shipped_line('vocabulary.yaml', '  lr:                 {category')})"),
    # a spelling another key has
    ("vocabulary:\n  orbit_lr: {category: lr, type: float, aliases: [base_lr]}\n", 2,
     "vocabulary.orbit_lr.aliases[0]: spelling aliases:base_lr maps to both lr and orbit_lr"),
    # wrong fields, each at its own line
    ("env_map:\n  pairs:\n    ORBIT_GPU: [ORBIT_NPU]\n", 3,
     "env_map.pairs.ORBIT_GPU: expected a name (a non-empty string) (got ['ORBIT_NPU'])"),
    ("dialects:\n  orbit:\n    kinds: [yaml]\n    paths:\n      optim.lr: lr\n    detect: orbit\n", 6,
     "dialects.orbit.detect: expected a list of names (got 'orbit')"),
    ("pairing:\n  dir_renames:\n    - {gpu: cuda_ops}\n", 3, "pairing.dir_renames[0]: needs 'gpu' and 'npu' strings"),
    ("python:\n  qualified_renames:\n    - {npu: a.npu, gpu: a.cuda, rule: SD202}\n", 3,
     "python.qualified_renames[0].rule: 'SD202' is not a mask rule code"),
    ("categories:\n  orbit: {rule: SDX404, severity: warning}\n", 2,
     "categories.orbit.severity: a category only names its rule: the severity is the rule's"),
    ("launcher:\n  entries: []\n", 1, "unknown section 'launcher'"),
])
def test_a_wrong_user_pack_is_reported_at_its_file_and_line(tmp_path, text, line, message):
    team = pack(tmp_path / "team", text, name="team.yaml")
    with pytest.raises(RuleError) as e:
        api.use_rules([team])
    assert str(e.value).startswith(f"{team}/team.yaml:{line}: {message}")


def test_two_user_packs_giving_one_code_name_both_files(tmp_path):
    rule = ORBIT[ORBIT.index("rules:"):]
    team = tmp_path / "team"
    pack(team, "launchers:\n  entries:\n    - {name: orbit, commands: [orbit], subcommands: [fit], "
               "program: subcommand}\nvocabulary:\n  orbit_kernel: {category: orbit_kernels, type: str}\n"
               "categories:\n  orbit_kernels: {rule: SDX101}\npython:\n  qualified_renames:\n"
               "    - {npu: orbit.ascend_kernels, gpu: orbit.fast_kernels, rule: SDX001}\n" + rule, name="a.yaml")
    pack(team, rule, name="b.yaml")
    with pytest.raises(RuleError) as e:
        api.use_rules([str(team)])
    assert str(e.value) == f"{team}/b.yaml:2: duplicate rule code SDX001 (also in {team}/a.yaml)"


def test_lists_extend_and_spellings_add_to_a_shipped_key(tmp_path):
    api.use_rules([pack(tmp_path / "team")])
    rs = rules.load()
    assert rs.section("launchers")["entries"][-1]["name"] == "orbit"
    assert [e["name"] for e in rs.section("launchers")["entries"]][:1] == ["torchrun"]  # the shipped ones kept
    assert rs.section("vocabulary")["global_batch_size"]["aliases"][-1] == "global_batch"
    assert rs.section("vocabulary")["global_batch_size"]["category"] == "batch"
    assert rs.section("python")["qualified_renames"][-1]["rule"] == "SDX001"


def test_a_replayed_diff_runs_again_when_its_pack_changes(memo, tmp_path):
    launch_pair(tmp_path)
    pack(tmp_path / "team")
    argv = ("diff", "gpu/train.sh", "npu/train.sh", "--rules", "team", "--format", "json")
    first = run_cli(*argv)
    assert run_cli(*argv) == first and len(memo) == 1  # replayed: the pack is among what it read
    (tmp_path / "team" / "orbit.yaml").write_text(ORBIT.replace("commands: [orbit]", "commands: [orbit2]"))
    code, out, _ = run_cli(*argv)
    assert len(memo) == 2 and [f["rule"] for f in json.loads(out)["findings"]] == ["SD154", "SD154"]


def test_the_pack_of_the_documented_recipe_passes_its_own_examples(tmp_path):
    doc = (Path(__file__).resolve().parent.parent / "docs" / "rule-packs.md").read_text(encoding="utf-8")
    text = doc.split("`team-rules/orbit.yaml`:\n\n```yaml\n", 1)[1].split("```", 1)[0]
    team = pack(tmp_path / "team-rules", text)
    code, out, _ = run_cli("rules", "--test", team)
    assert (code, out.splitlines()[-1]) == (0, "4 example(s): 4 passed, 0 failed")
    g, n = launch_pair(tmp_path)
    code, out, _ = run_cli("diff", g, n, "--rules", team, "--format", "json")
    assert (code, findings(out)) == (1, [("SD202", "lr", 0.0003, 0.0001, 2, 2)])


def test_every_command_takes_rules():
    import argparse

    from scriptdiff.cli import COMMANDS, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    taken = [name for name, p in sub.choices.items() if p._option_string_actions.get("--rules")
             and p._option_string_actions["--rules"].help != argparse.SUPPRESS]
    assert taken == list(COMMANDS)


@pytest.mark.parametrize("content,message", [
    (b"\xff\xfe not text", "cannot read rule pack"),
    (b"- a list\n", ":1: a rule pack must be a mapping"),
    (b"a: &x [*x]\n", "not valid YAML"),
    (b"launchers: [\n", "not valid YAML"),
])
def test_a_hostile_pack_file_is_one_line(tmp_path, content, message):
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "x.yaml").write_bytes(content)
    code, out, err = run_cli("rules", "--rules", str(tmp_path / "team"))
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith(f"scriptdiff: invalid rule pack: {tmp_path / 'team' / 'x.yaml'}:") and message in err


def test_a_fifo_among_the_packs_is_passed_over_and_a_pack_of_sections_only_has_no_examples(tmp_path):
    import os

    team = pack(tmp_path / "team", "launchers:\n  entries:\n    - {name: orbit, commands: [orbit], "
                                   "subcommands: [fit], program: subcommand}\n")
    os.mkfifo(tmp_path / "team" / "pipe.yaml")
    code, out, err = run_cli("rules", "--test", team)
    assert (code, err) == (0, "")
    assert out == f"scriptdiff: no rules with examples in {team} (its sections loaded and are valid)\n"
    code, _, err = run_cli("rules", "--rules", str(tmp_path / "team" / "pipe.yaml"))
    assert (code, err) == (2, f"scriptdiff: --rules {tmp_path / 'team' / 'pipe.yaml'}: not a folder or a rule pack file\n")

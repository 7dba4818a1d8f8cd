"""The launcher table of rules/shell.yaml (`launchers:`): validated on load, and read as data,
so a launcher is added by an entry, not by code (lang/shell/launchers.py)."""
from __future__ import annotations

import pytest
from conftest import ROOT

from scriptdiff.lang import shell
from scriptdiff.lang.shell import evaluator, launchers
from scriptdiff.model import SideContext
from scriptdiff.ruleset.rule_validators import check_launchers
from scriptdiff.ruleset.rules import RuleError, load_packs
from scriptdiff.ruleset.secrets import is_secret
from scriptdiff.inputs.sources import Source
from scriptdiff.inputs.yamlload import load as load_yaml

SHELL = (ROOT / "rules" / "shell.yaml").read_text(encoding="utf-8")
TORCHRUN = """    - name: torchrun
      commands: [torchrun]
"""


def load_with(tmp_path, text: str):
    """Load rules/shell.yaml alone (its rules and sections refer to no other pack), from `text`."""
    pack = tmp_path / "shell.yaml"
    pack.write_text(text, encoding="utf-8")
    return check_launchers(load_packs([pack]))  # raises in load_packs, or here if validators were reset


def test_shipped_launchers_load(tmp_path):
    load_with(tmp_path, SHELL)
    assert launchers.table().find("torchrun").world_size == ("nproc_per_node", "nnodes")


def line_in(text: str, at: str) -> int:
    assert text.count(at) == 1, at
    return text[:text.index(at)].count("\n") + 1


ENTRY_FIELDS = "name, commands, modules, versioned, subcommands, idle, program, module_only, flags, framework, world_size, " \
               "devices, environment, one_process, config"
LAUNCHER_FIELDS = "flags, npu_only_flags, entries, hints, commands, shared, coordinators"


@pytest.mark.parametrize("old,new,at,needle", [  # at: the text on the line the error names
    ("      program: interpreter\n      module_only", "      program: bogus\n      module_only", "program: bogus",
     "launchers.entries[5].program: expected one of after-options, interpreter, subcommand, wrapper (got 'bogus')"),
    (TORCHRUN, TORCHRUN.replace("[torchrun]", "[torchrun, deepspeed]"), "      commands: [deepspeed]",
     "launchers.entries[1].commands[0]: command deepspeed is also torchrun's"),
    (TORCHRUN, TORCHRUN + "      options: [nnodes]\n", "options: [nnodes]",
     f"launchers.entries[0]: unknown field(s) options (known: {ENTRY_FIELDS})"),
    ("      subcommands: [train, sft, pt, rm, ppo, dpo, kto]\n", "", "      program: subcommand\n      framework: hf\n    #",
     "launchers.entries[6].program: llamafactory-cli: program subcommand needs a subcommands list"),
    ("      commands: [msrun]\n", "", "- name: msrun", "launchers.entries[3]: msrun: needs commands or modules to be recognised by"),
    ("      modules: [torch.distributed.run, torch.distributed.launch]\n      program: after-options",
     "      modules: [torch.distributed.run, torch.distributed.launch]\n      program: interpreter",
     "modules: [torch.distributed.run",
     "launchers.entries[0].modules: torchrun: modules (python -m MODULE) need program after-options"),
    ("      world_size: [worker_num]\n", "      world_size: worker_num\n", "world_size: worker_num",
     "launchers.entries[3].world_size: expected a list of names (got 'worker_num')"),
    # which options name a config to follow is the kinds' data (rules/kinds.yaml `referenced`)
    ("  hints:\n", "  references: {flags: [config], suffixes: [.toml]}\n  hints:\n", "references: {flags",
     f"launchers: unknown field(s) references (known: {LAUNCHER_FIELDS})"),
    ("  hints:\n", "  hintz:\n", "hintz:", f"launchers: unknown field(s) hintz (known: {LAUNCHER_FIELDS})"),
    ("      environment: [NPROC_PER_NODE, NNODES, MASTER_PORT, MASTER_ADDR, NODE_RANK]\n      world_size: [nproc_per_node, nnodes]\n    - name: swift-megatron",
     "      environment: NPROC_PER_NODE\n      world_size: [nproc_per_node, nnodes]\n    - name: swift-megatron",
     "environment: NPROC_PER_NODE\n",
     "launchers.entries[7].environment: expected a list of names (got 'NPROC_PER_NODE')"),
    ("      program: wrapper\n", "      program: wrap\n", "program: wrap\n",
     "launchers.entries[9].program: expected one of after-options, interpreter, subcommand, wrapper (got 'wrap')"),
    ("  npu_only_flags: [jit_compile]\n", "  npu_only_flags: jit_compile\n", "npu_only_flags: jit_compile",
     "launchers.npu_only_flags: expected a list of names (got 'jit_compile')"),
    ("  entries:\n", "  entries: []\n  old_entries:\n", "old_entries:",
     f"launchers: unknown field(s) old_entries (known: {LAUNCHER_FIELDS})"),
])
def test_malformed_launchers_fail_at_their_line(tmp_path, old, new, at, needle):
    assert old in SHELL
    text = SHELL.replace(old, new, 1)
    with pytest.raises(RuleError) as e:
        load_with(tmp_path, text)
    assert str(e.value) == f"rules/shell.yaml:{line_in(text, at)}: {needle}"


def test_flags_must_be_strings(tmp_path):
    start = SHELL.index("  flags: [standalone")
    end = SHELL.index("dynamo_backend]") + len("dynamo_backend]")
    text = SHELL[:start] + "  flags: {standalone: true}" + SHELL[end:]
    with pytest.raises(RuleError) as e:
        load_with(tmp_path, text)
    assert str(e.value) == (f"rules/shell.yaml:{line_in(text, '  flags: {standalone')}: launchers.flags: "
                            f"expected a list of names (got {{'standalone': True}})")


def test_a_launcher_is_added_as_data(monkeypatch):
    """A dialect (`colossalai run ...`) needs an entry only: recognised, its options read as the program's."""
    section = load_yaml(SHELL)[0]["launchers"]
    section["entries"].append({"name": "colossalai", "commands": ["colossalai"], "subcommands": ["run"],
                               "program": "subcommand", "framework": "hf"})
    monkeypatch.setattr(evaluator, "table", lambda: launchers.build(section))
    src = Source(name="sft.sh", data=b"colossalai run --learning_rate 1e-4 --per_device_train_batch_size 2\n")
    ex = shell.extract(src, SideContext("gpu"))
    f = {x.key: x.value for x in ex.facts}
    assert ex.errors == [] and "hf" in ex.frameworks
    assert f["lr"] == 1e-4 and f["micro_batch_size"] == 2


def test_unknown_launcher_word_is_not_a_launch():
    ex = shell.extract(Source(name="sft.sh", data=b"colossalai run --learning_rate 1e-4\n"), SideContext("gpu"))
    assert ex.facts == [] and ex.errors == []
    # not silent: the launcher is named, and so is what was not compared
    assert ex.unread == ["line 1: launcher `colossalai run` is not known: its 1 option was not compared"]


def test_known_launcher_with_unknown_subcommand_is_said():
    ex = shell.extract(Source(name="d.sh", data=b"swift deploy --learning_rate 1e-4\n"), SideContext("gpu"))
    assert ex.facts == [] and ex.errors == []
    assert ex.unread == ["line 1: launcher `swift deploy` is not known: its 1 option was not compared"]


def test_python_versions_are_python():
    t = launchers.table()
    assert t.find("python3.10").name == "python" and t.find("python3x") is None
    assert t.looks_like("python3x") and t.looks_like("swift") and not t.looks_like("colossalai")
    assert t.runner("torch.distributed.launch").name == "torchrun" and t.runner("verl.trainer.main_ppo") is None


@pytest.mark.parametrize("name,secret", [("HF_TOKEN", True), ("wandb_api_key", True), ("MY_KEY", True),
                                         ("DB_PASSWD", True), ("KEYRING", False), ("CUDA_VISIBLE_DEVICES", False)])
def test_is_secret(name, secret):
    assert is_secret(name, "plain") is secret

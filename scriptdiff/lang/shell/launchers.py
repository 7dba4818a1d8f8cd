"""The launcher table: which commands start a training program, read from rules/shell.yaml.

The `launchers:` section of rules/shell.yaml (validated by rule_validators.check_launchers)
lists one entry per launcher: how it is recognised (a command word, or `python -m MODULE`),
the subcommand it needs, which of its options take no value, where the program it starts
begins, and which of its options give the world size. It also holds the option names that
tell a Megatron program from a Hugging Face one. Which options name a config file to follow
is the file kinds' data (rules/kinds.yaml `referenced`, registry.referenced_kind).
This module turns that data into a LauncherTable; reading a command is launch.py's job.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...ruleset.rules import RuleSet, derived

# `program:` where the program starts, after the command word (and its subcommand); the
# validator (rule_validators.check_launchers) knows these four:
#   after-options  the launcher's own options come first; the program is the first word that
#                  is not one of them (`--` ends them): torchrun, deepspeed, accelerate launch
#   interpreter    python's own options (no value), then `-m MODULE` or the script; a MODULE
#                  another entry lists under `modules` is that launcher (python -m torch.distributed.run)
#   subcommand     the subcommand is the program and every word after it is its option
#                  (llamafactory-cli train x.yaml key=value)
#   wrapper        the launcher's own words run up to `--`; the command after it is read again
#                  as a launcher command (ray job submit --address x -- python3 -m verl.trainer.main_ppo)


# the defaults of a program a launcher starts as one process (`one_process: true`): a framework
# name of rules/vocabulary.yaml `default` (world_size 1), which only confirms an equal value
# (`default_confirms`): the program out of view may start processes of its own
ONE_PROCESS = "one_process"


@dataclass(frozen=True)
class Launcher:
    """One launcher entry of rules/shell.yaml `launchers.entries`."""

    name: str
    program: str  # after-options | interpreter | subcommand
    commands: tuple = ()  # command words (basename), e.g. torchrun
    modules: tuple = ()  # `python -m MODULE` forms of this launcher
    versioned: bool = False  # a command word followed by a version (python3.10) is this launcher too
    subcommands: frozenset = frozenset()  # the word after the command must be one of these
    # subcommands that start no program (`ray start`, `ray stop`, `accelerate config`): read as
    # nothing, neither a launch nor an unknown one
    idle: frozenset = frozenset()
    module_only: bool = False  # interpreter: only `-m MODULE` starts a program (mpirun)
    flags: frozenset = frozenset()  # launcher options that take no value (besides the shared ones)
    framework: str | None = None  # the framework its programs use (hf for llamafactory-cli)
    world_size: tuple = ()  # options multiplied into the world size; the first must be given
    devices: str | None = None  # option listing host:dev,dev,... counted when no world_size option is given
    # environment variables the launcher reads as its options, by their lower-case name
    # (ms-swift: NPROC_PER_NODE=8 NNODES=2 swift sft ... runs torchrun --nproc_per_node 8 --nnodes 2)
    environment: tuple = ()
    config: str | None = None  # the dialect of the config file its --config_file names (accelerate)
    # the program it starts directly (not through a runner that starts one per rank) is one process
    one_process: bool = False


@dataclass(frozen=True)
class Wrapper:
    """A command that runs the command after its own options (rules/shell.yaml
    `launchers.commands.wrappers`): `nohup`, `env A=1`, and the runners `uv run`, `srun`,
    `mpirun -np 8`. Its options never set a setting of the run; `processes` give the world
    size of a plain `python x.py` it runs."""

    valued: frozenset = frozenset()  # options taking one value
    positional: int = 0  # words before the command (timeout 10h CMD)
    subcommands: frozenset = frozenset()  # the word after it that makes it a runner (uv run)
    pairs: frozenset = frozenset()  # options taking two values (mpirun --mca btl ^openib)
    processes: tuple = ()  # options giving the number of processes (ranks) it starts
    module: frozenset = frozenset()  # options naming a module run with python (uv run -m pkg)
    environment: frozenset = frozenset()  # options whose NAME=value is the command's environment


@dataclass(frozen=True)
class LauncherTable:
    """All launchers, indexed by command word and by module, and the shared option tables."""

    entries: tuple
    by_command: dict
    by_module: dict
    flags: frozenset  # launcher options that take no value, for every launcher
    megatron_hints: frozenset  # two of these among a program's options: a Megatron program
    hf_hints: frozenset  # one of these: a Hugging Face program
    megatron_scripts: tuple  # a program script named with one of these prefixes is a Megatron program
    shared_facts: dict  # launcher option -> the key of the fact it gives (master_port, ...)
    shared_settings: tuple  # launcher options read as hyperparameters (mixed_precision)
    shared_references: tuple  # launcher options naming a config file
    npu_only_flags: frozenset = frozenset()  # program flags an NPU script adds as the port itself (masked)
    # commands that are no launchers but decide how one is read (rules/shell.yaml `commands`)
    printers: frozenset = frozenset()  # echo, printf: print their words, run nothing
    inspectors: frozenset = frozenset()  # pkill, which, grep: name programs, never run one
    evaluators: frozenset = frozenset()  # eval: their words are shell read again
    shells: frozenset = frozenset()  # bash -c STRING: STRING is shell read again
    sourcing: frozenset = frozenset()  # source, .: a fragment read in place
    wrappers: dict = field(default_factory=dict)  # nohup, env, uv, srun, ...: word -> Wrapper
    # environment variable -> the values that make a launched process a coordinator (a
    # scheduler or parameter server of the job), not one of its training runs
    coordinators: dict = field(default_factory=dict)

    def find(self, name: str) -> Launcher | None:
        """The launcher whose command word is `name` (a basename), or None."""
        hit = self.by_command.get(name)
        if hit is not None:
            return hit
        for word, entry in self.by_command.items():
            if entry.versioned and name.startswith(word) and all(c in "0123456789." for c in name[len(word):]):
                return entry
        return None

    def looks_like(self, name: str) -> bool:
        """A launcher's command word, or any word starting with a versioned one (`python...`):
        the looser test used to rejoin a launcher command that a comment line cut in two."""
        return name in self.by_command or any(e.versioned and name.startswith(w) for w, e in self.by_command.items())

    def runner(self, module: str) -> Launcher | None:
        """The launcher that `python -m module` is, or None for an ordinary module."""
        return self.by_module.get(module)


@derived
def table(rs: RuleSet) -> LauncherTable:
    """The launcher table of rules/shell.yaml (already validated when the packs loaded)."""
    return build(rs.section("launchers", {}) or {})


def build(d: dict) -> LauncherTable:
    """A LauncherTable from a validated `launchers:` section."""
    entries = []
    for e in d.get("entries") or []:
        entries.append(Launcher(
            name=e["name"], program=e["program"], commands=tuple(e.get("commands") or ()),
            modules=tuple(e.get("modules") or ()), versioned=bool(e.get("versioned", False)),
            subcommands=frozenset(e.get("subcommands") or ()), module_only=bool(e.get("module_only", False)),
            idle=frozenset(e.get("idle") or ()), flags=frozenset(e.get("flags") or ()), framework=e.get("framework"),
            world_size=tuple(e.get("world_size") or ()), devices=e.get("devices"),
            environment=tuple(e.get("environment") or ()), config=e.get("config"),
            one_process=bool(e.get("one_process", False))))
    hints = d.get("hints") or {}
    cmds = d.get("commands") or {}
    return LauncherTable(
        entries=tuple(entries),
        by_command={c: e for e in entries for c in e.commands},
        by_module={m: e for e in entries for m in e.modules},
        flags=frozenset(d.get("flags") or ()),
        megatron_hints=frozenset(hints.get("megatron") or ()),
        hf_hints=frozenset(hints.get("hf") or ()),
        megatron_scripts=tuple(hints.get("megatron_scripts") or ()),
        shared_facts=dict((d.get("shared") or {}).get("facts") or {}),
        shared_settings=tuple((d.get("shared") or {}).get("settings") or ()),
        shared_references=tuple((d.get("shared") or {}).get("references") or ()),
        npu_only_flags=frozenset(d.get("npu_only_flags") or ()),
        printers=frozenset(cmds.get("print") or ()), inspectors=frozenset(cmds.get("inspect") or ()),
        evaluators=frozenset(cmds.get("evaluate") or ()),
        shells=frozenset(cmds.get("shells") or ()), sourcing=frozenset(cmds.get("source") or ()),
        wrappers={w: _wrapper(e or {}) for w, e in (cmds.get("wrappers") or {}).items()},
        coordinators={k: frozenset(v) for k, v in (d.get("coordinators") or {}).items()})


def _wrapper(e: dict) -> Wrapper:
    return Wrapper(valued=frozenset(e.get("valued") or ()), positional=int(e.get("positional") or 0),
                   subcommands=frozenset(e.get("subcommands") or ()), pairs=frozenset(e.get("pairs") or ()),
                   processes=tuple(e.get("processes") or ()), module=frozenset(e.get("module") or ()),
                   environment=frozenset(e.get("environment") or ()))

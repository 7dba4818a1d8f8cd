"""One launcher command, read: which launcher it is, its own options, where the program starts.

`torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py --lr 1e-4`: the launcher (found in
the table of rules/shell.yaml) and its options give world_size (nproc_per_node x nnodes,
num_gpus x num_nodes, num_processes, worker_num, or the devices in --include) and
master_port / master_addr, mixed_precision and config-file references; the words from the
program on go to the ProgramReader.
"""
from __future__ import annotations

import os

from ... import budget
from ...inputs import flags
from ...model import RANK_SCRIPT, REF_PROGRAM, Fact
from ...ruleset.vocabulary import convert
from .launchers import ONE_PROCESS, Launcher, LauncherTable
from .program import ProgramReader
from .record import Record
from .words import Seg, Word, tail_word, via_text


class LaunchReader:
    """Reads launcher commands (already expanded into words) into facts on the Record."""

    def __init__(self, rec: Record, table: LauncherTable):
        self.rec = rec
        self.table = table
        self.program = ProgramReader(rec, table)

    def launch(self, words: list[Word], line: int, env: dict[str, Word] | None = None,
               ranks: tuple | None = None) -> None:
        """A command whose first word is a launcher's (see LauncherTable.find); `line` is the command's;
        `env` the environment it runs with (its `VAR=x` prefixes and the script's exported variables).

        Each launcher command is one program invocation, one scope: its facts (launcher options
        and program options) carry meta["invocation"] = its index in the script, so that a
        script starting two programs is compared invocation against invocation."""
        first = len(self.rec.facts)
        self._launch(words, line, env or {}, ranks=ranks)
        index = self.rec.invocations
        role = next((f"{k}={w.text}" for k, w in (env or {}).items()
                     if not w.unknown and w.text in self.table.coordinators.get(k, ())), None)
        if len(self.rec.facts) > first or self.rec.launches > index:
            for f in self.rec.facts[first:]:
                f.meta["invocation"] = index
                if role is not None:  # a scheduler of the job, not one of its runs (launchers.coordinators)
                    f.meta["coordinator"] = [role, line]
                if self.rec.choice is not None:  # one way of a choice made at run time
                    f.meta["choice"] = list(self.rec.choice) + [line]
            self.rec.invocations += 1

    def _launch(self, words: list[Word], line: int, env: dict[str, Word], depth: int = 0,
                ranks: tuple | None = None) -> None:
        texts = [w.text for w in words]
        entry = self.table.find(os.path.basename(texts[0]))
        if entry is None:
            return
        i = 1
        if entry.subcommands:
            if len(texts) >= 2 and texts[1] in entry.idle:
                return  # ray start --head, accelerate config: starts no program
            if len(texts) < 2 or texts[1] not in entry.subcommands:
                self.rec.unknown_command(words, line)  # swift deploy --lr ...: said, not silent
                return
            i = 2
        if entry.framework:
            self.rec.frameworks.add(entry.framework)
            self.rec.known.add(entry.framework)
        if entry.program == "wrapper":  # ray job submit [its options] -- python3 -m pkg key=value ...
            sep = texts.index(flags.END, i) if flags.END in texts[i:] else -1
            inner = words[sep + 1:] if sep != -1 else []
            if inner and depth < budget.LAUNCH_DEPTH and self.table.find(os.path.basename(inner[0].text)) is not None:
                self._launch(inner, line, env, depth + 1)
            else:
                self.rec.unknown_command(inner or words, inner[0].line if inner else line, wraps=bool(inner))
            return
        if entry.program == "subcommand":  # llamafactory-cli train config.yaml [key=value ...]
            if entry.environment:  # NPROC_PER_NODE=8 swift sft ...: the launcher's options by environment
                self.launcher_facts(entry, self.env_options(entry, env), line, from_env=True)
            self.start(texts[i - 1], words[i:], entry.framework)
            return
        if entry.program == "interpreter":  # python [-u] [-m module] script args
            i = flags.first_operand(texts, i, stop=("-m",))
            if i < len(texts) and texts[i] == "-":  # `python - <<EOF`: its program is standard input
                return
            if i < len(texts) and texts[i] == "-m" and i + 1 < len(texts):
                mod = texts[i + 1]
                runner = self.table.runner(mod)
                if runner is None:
                    self.ranks(ranks, line)
                    if not ranks and entry.one_process:  # `python -m pkg.train`: one process
                        self.rec.frameworks.add(ONE_PROCESS)
                    self.start(mod, words[i + 2:], module=True, at=words[i + 1].line, named=(words[i + 1], line))
                    return
                entry = runner  # python -m torch.distributed.run: torchrun, options and all
                i += 2
            elif entry.module_only:
                return
            else:
                if i < len(texts):
                    self.ranks(ranks, line)
                    if not ranks and entry.one_process:  # `python train.py`: one process (ONE_PROCESS)
                        self.rec.frameworks.add(ONE_PROCESS)
                    self.start(texts[i], words[i + 1:], at=words[i].line, named=(words[i], line))
                return
        i, opts = self.options(entry, words, i)
        eopts = self.env_options(entry, env)
        self.launcher_facts(entry, {**eopts, **opts}, line, from_env=set(eopts) - set(opts))
        if i < len(texts):  # torchrun -m pkg.train, accelerate launch --module pkg.train: a module
            self.start(texts[i], words[i + 1:], entry.framework, module="m" in opts or "module" in opts,
                       at=words[i].line, named=(words[i], line))

    def ranks(self, ranks: tuple | None, line: int) -> None:
        """The world size a runner gives a plain `python x.py` it starts once per rank
        (`mpirun -np 8`, `srun -n 16`): (runner, option, its value)."""
        if ranks:
            runner, option, value = ranks
            self.launcher_facts(Launcher(name=runner, program="interpreter", world_size=(option,)),
                                {option: value}, line)

    @staticmethod
    def env_options(entry: Launcher, env: dict[str, Word]) -> dict[str, Word]:
        """The launcher options its entry reads from the environment (`environment:`), under
        their lower-case names, as the launcher itself passes them on (NPROC_PER_NODE ->
        --nproc_per_node); an option written on the command line wins."""
        return {name.lower(): env[name] for name in entry.environment if name in env}

    def start(self, program: str, words: list[Word], framework: str | None = None, module: bool = False,
              at: int | None = None, named: tuple | None = None) -> None:
        """Program `program` (a script, or with `module` a module) started with `words`; `at`:
        the line of its name; `named`: (the word that names it, the launch's line), when its value
        may not be known (`deepspeed --module $cmd`: the program and its options are then said not read)."""
        if named is not None and named[0].unknown:
            self.rec.unknown_words([named[0]], f"the program started at line {named[1]} and what is passed to it "
                                               f"were not read")
            self.rec.launches += 1
            return
        passed = self.program.read(program, words, framework)
        self.rec.launches += 1
        if module and program.replace(".", "").replace("_", "").isalnum():  # -m pkg.train: pkg/train.py
            program = program.replace(".", "/") + ".py"
        if program.endswith(".py"):  # the program is part of the run: the engine reads it when it is there
            line = at or (words[0].line if words else (self.rec.facts[-1].line if self.rec.facts else None))
            self.rec.references.append((program, line, REF_PROGRAM))
            # what it is passed, checked against its own parser when it is read (launchargs.py)
            self.rec.launched.append([program, line, self.rec.invocations, passed])

    def options(self, entry: Launcher, words: list[Word], i: int) -> tuple[int, dict[str, Word]]:
        """The launcher's own options from word i on (name with _ for -, -> value word), and
        where the program starts."""
        texts = [w.text for w in words]
        opts: dict[str, Word] = {}
        no_value = self.table.flags | entry.flags

        def takes(f: flags.Flag, nxt: str) -> bool:  # a switch, or an option before the program: no value
            return not (f.name in no_value or f.dest in no_value or nxt.startswith("-") or nxt.endswith(".py"))

        for item in flags.scan(texts, i, takes):
            f = item.flag
            if f is None:  # the program starts here (after `--`)
                return item.at + 1 if item.end else item.at, opts
            if f.value is not None:
                opts[f.dest] = tail_word(words[item.at], f.value_at)
            elif item.value is not None:
                opts[f.dest] = words[item.value]
            else:
                opts[f.dest] = Word([Seg("true", words[item.at].line)])
        return len(texts), opts

    def launcher_facts(self, entry: Launcher, opts: dict[str, Word], line: int, from_env=()) -> None:
        """world_size, master_port/master_addr, mixed_precision and config references from the
        launcher's options (`from_env`: True, or the options, read from environment variables)."""
        def shown(k: str) -> str:
            return k.upper() if from_env is True or k in from_env else k

        def num(w: Word | None):
            if w is None:
                return None
            try:
                return int(w.text)
            except ValueError:
                return None

        parts = []
        total = None
        formula = ""
        first = opts.get(entry.world_size[0]) if entry.world_size else None
        devices = opts.get(entry.devices) if entry.devices else None
        if first is not None:
            parts = [first] + [opts[k] for k in entry.world_size[1:] if opts.get(k) is not None]
            nums = [num(w) for w in parts]
            if all(n is not None for n in nums):
                total = 1
                for n in nums:
                    total *= n
            formula = " * ".join(shown(k) for k in entry.world_size)
        elif devices is not None and "@" not in devices.text and ":" in devices.text:
            parts = [devices]
            total = len(devices.text.split(":", 1)[1].split(","))
            formula = f"devices in --{entry.devices}"
        if parts:
            unresolved = [u for w in parts for u in w.unresolved]
            value = total if total is not None else " * ".join(w.text for w in parts)
            meta = {"unresolved": unresolved} if unresolved else {}
            unknown = list(dict.fromkeys(u for w in parts for u in w.unknown))
            if unknown:  # set in a way not evaluated: not compared (lang/shell/__init__.py says so)
                meta["unknown"], meta["used_at"] = unknown, line
            if len(parts) == 1 and parts[0] is first:  # one option gives it: where it is written (scriptdiff fix)
                meta["shell"] = {"word": None, "flag": None, "flag_text": entry.world_size[0], "values": 1,
                                 "value": list(first.span) if first.span else None, "value_text": first.text,
                                 "via": list(first.via)}
            else:
                meta["shell"] = {"word": None, "flag": None, "values": len(parts), "value": None, "computed": formula}
            fline = parts[0].line or line
            self.rec.facts.append(Fact(key="world_size", value=value, path=self.rec.src.name, line=fline,
                                       source=self.rec.src_line(fline, parts[0].text), rank=RANK_SCRIPT,
                                       via=formula + (f" ({via_text(parts[0].via)})" if parts[0].via else ""),
                                       meta=meta))
        table = self.program.table
        for k, key in table.shared_facts.items():
            w = opts.get(k)
            if w is not None:
                self.rec.facts.append(self.program.make_fact(key, convert(key, w.text)[1], w,
                                                               key_text=k.upper() if shown(k) != k else f"--{k}"))
        for k in table.shared_settings:
            w = opts.get(k)
            if w is not None:
                self.program.add_hparam(k, w.text, w, f"--{k}")
        for k in table.shared_references:
            w = opts.get(k)
            if w is not None:  # accelerate launch --config_file: an accelerate config (the entry's `config`)
                self.program.reference(k, w, dialect=entry.config if k == "config_file" else None)

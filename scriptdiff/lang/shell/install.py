"""Commands that install packages, read as the package lists they install.

An environment-setup script (`conda create -n llm python=3.10 -y; pip install -r
requirements_gpu.txt; pip install flash-attn==2.5.8`) decides the library versions of a run
as much as a requirements file does. Each installer command of rules/shell.yaml `installers:`
(pip, `python -m pip`, `uv pip`, conda/mamba install and create, `conda env create -f`) is read
here: a package word becomes a `pkg:<name>` fact (scriptdiff/ruleset/packages.py reads it as pip or
conda writes it), `-r FILE` / `-c FILE` / `-f env.yml` a reference the engine follows and
reads as a package list of its own (found within the side, as a referenced config is), and
the script gives the libraries check a package list (its marker), compared against the other
side's like any other list. A word built from a variable the script does not set is kept as
written (`torch==$TORCH_VERSION`), compared as written.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ...inputs import flags
from ...model import RANK_CONFIG, Fact, InputError
from ...ruleset.packages import CONSTRAINT, Entry, conda_entry, list_marker, package_facts, requirement
from ...ruleset.rules import RuleSet, derived
from .record import Record
from .words import Word, tail_word

REQUIREMENT = "requirement"  # the reference of a requirements file (rules/kinds.yaml `referenced`)
ENVIRONMENT = "conda_environment"  # the reference of a conda environment file


@dataclass(frozen=True)
class Installer:
    """One entry of rules/shell.yaml `installers:`."""

    name: str
    commands: tuple = ()
    modules: tuple = ()
    subcommands: tuple = ()  # each a tuple of words
    syntax: str = "pip"
    requirements: frozenset = frozenset()
    constraints: frozenset = frozenset()
    environment: frozenset = frozenset()
    editable: frozenset = frozenset()
    valued: frozenset = frozenset()

    def takes_value(self, opt: str) -> bool:
        return opt in self.valued or opt in self.requirements or opt in self.constraints \
            or opt in self.environment or opt in self.editable


@derived
def installers(rs: RuleSet) -> tuple[Installer, ...]:
    return tuple(Installer(
        name=e["name"], commands=tuple(e.get("commands") or ()), modules=tuple(e.get("modules") or ()),
        subcommands=tuple(tuple(s.split()) for s in e.get("subcommands") or ()), syntax=e.get("syntax", "pip"),
        **{f: frozenset(e.get(f) or ()) for f in ("requirements", "constraints", "environment", "editable",
                                                   "valued")})
        for e in rs.section("installers", []) or [])


def match(words: list[Word], interpreter: bool) -> tuple[Installer, list[Word]] | None:
    """The installer a command is, and its words after the subcommand; `interpreter`: the first
    word is a Python interpreter (`python -m pip install ...`)."""
    name = os.path.basename(words[0].text)
    rest = 1
    if interpreter:
        i = flags.first_operand([w.text for w in words], 1, stop=("-m",))
        if i + 1 >= len(words) or words[i].text != "-m":
            return None
        name, rest = f"-m {words[i + 1].text}", i + 2
    found = [inst for inst in installers() if name in inst.commands or name in (f"-m {m}" for m in inst.modules)]
    if not found:  # most commands: no installer, and a launch command's words are not read here
        return None
    for inst in found:
        for sub in inst.subcommands:
            if tuple(w.text for w in words[rest:rest + len(sub)]) == sub:
                return inst, words[rest + len(sub):]
    return None


class InstallReader:
    """Reads installer commands into package facts and references on the Record."""

    def __init__(self, rec: Record):
        self.rec = rec

    def read(self, inst: Installer, words: list[Word], line: int) -> None:
        rec = self.rec
        entries: list[Entry] = []
        joined = inst.requirements | inst.constraints | inst.editable | inst.environment  # -rrequirements.txt

        def takes(f: flags.Flag, _next: str) -> bool:
            return f.joined(joined) is f and inst.takes_value(f.name)

        for item in flags.scan([w.text for w in words], 0, takes):
            w = words[item.at]
            if item.flag is not None:
                self.option(inst, item.flag.joined(joined), w, words[item.value] if item.value is not None else None,
                            entries)
            elif not item.end and w.text not in ("", "\\"):  # after `--` every word is a package
                entries.extend(self.package(inst, w))
        rec.installs += 1
        side = getattr(rec.ctx, "side", "gpu")
        rec.facts.extend(package_facts(entries, rec.src.name, side, RANK_CONFIG))
        if rec.installs == 1:
            rec.facts.append(list_marker(rec.src.name, False))

    def option(self, inst: Installer, f: flags.Flag, w: Word, after: Word | None, entries: list[Entry]) -> None:
        """One option of an installer command, word `w` (and `after`, the next word when that is
        its value): a file it installs from (a reference), an editable package, or an option
        skipped with its value."""
        name = f.name
        value = tail_word(w, f.value_at) if f.value is not None else after
        if value is None:
            return
        files = {**dict.fromkeys(inst.environment, ENVIRONMENT), **dict.fromkeys(inst.constraints, CONSTRAINT),
                 **dict.fromkeys(inst.requirements, REQUIREMENT)}  # the option -> what the file it names is
        if name in files:
            self.reference(value, files[name])
        elif name in inst.editable:
            e, _problem = requirement(f"-e {value.text}", value.line, value.text)
            if e is not None:
                e.source = self.rec.src_line(value.line, value.text)
                entries.append(e)

    def reference(self, w: Word, key: str) -> None:
        """A file the command installs from, followed by the engine (found within the side)."""
        rec = self.rec
        rec.references.append((w.text, w.line, key))
        rec.facts.append(Fact(key=f"config:{key}", value=os.path.basename(w.text), path=rec.src.name, line=w.line,
                              source=rec.src_line(w.line, w.text),
                              via=("$" + w.via[-1]) if w.via else None,
                              meta={"reference": True, "exists": False, "written": w.text, "force": True}))

    def package(self, inst: Installer, w: Word) -> list[Entry]:
        """The package a word names, as pip or conda reads it (none for a local path, `.`)."""
        rec = self.rec
        tx = w.text
        source = rec.src_line(w.line, tx)
        if w.unresolved:  # torch==$TORCH_VERSION: compared as written
            cut = min((tx.index(c) for c in "=<>!~@[;" if c in tx), default=len(tx))
            if cut == 0 or tx.startswith("$"):
                return []
            return [Entry(name=tx[:cut], line=w.line, source=source, spec=tx[cut:], installer=inst.syntax)]
        if inst.syntax == "conda":
            e, python, problem = conda_entry(tx, w.line)
            if python is not None:
                rec.facts.append(Fact(key="version:python", value=python, check="environment", path=rec.src.name,
                                      line=w.line, source=source, rank=RANK_CONFIG,
                                      meta={"component": "python", "platform": "any", "fuzzy": True}))
        else:
            if tx.startswith((".", "/", "~")) or tx.endswith(("/", ".whl", ".tar.gz", ".zip")) and "://" not in tx:
                return []  # a local folder or file: its name is in its own metadata
            e, problem = requirement(tx, w.line, tx)
        if problem:
            rec.errors.append(InputError(rec.src.name, f"{rec.at(w.line)}: {tx!r} is not a package "
                                                       f"{inst.syntax} can install; not compared"))
            return []
        if e is None:
            return []
        e.source, e.installer = source, e.installer or inst.name
        return [e]

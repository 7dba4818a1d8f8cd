"""A launch flag against the parser of the program it is passed to.

A launch script passes options to the program it starts (`torchrun train.py --lr 1e-4 --seed
1234`); the program's parser decides what becomes of each (lang/python/cmdline.py reads it). When
the program is in view and its parser complete there, each `--option` passed is looked up as
the parser looks it up: the option itself, or, where the parser takes abbreviations (argparse's
`allow_abbrev`, on by default), the one long option it is a unique prefix of. An option the
program does not define is a finding of its own:

- SD161 (error) when it stops the run: argparse's `parse_args` ("unrecognized arguments"),
  `HfArgumentParser.parse_args_into_dataclasses()`, click and typer ("No such option"), and an
  abbreviation that matches several options ("ambiguous option") under any parser;
- SD162 (warning) when the program ignores it: `parse_known_args` and
  `parse_args_into_dataclasses(return_remaining_strings=True)` leave it over, unused.

Either way the option sets nothing: its facts (and those of a config it names, `--deepspeed
ds.json`) are left out of the run's table, so the program's own value (its module constant,
its parser's default) is what is compared for that key. A program whose parser cannot be read
whole (built in another module, Megatron's or transformers' own flags, a dataclass imported
from elsewhere, options passed on) is not judged: its options count as the launch script
writes them, and the launch script's account says why they were not checked.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field, replace

from .finding import finding
from ..inputs import flags
from ..model import Extract, Fact, Finding, InputAccount, Side
from ..inputs.references import source_identity
from ..inputs.sources import Source
from ..ruleset.vocabulary import canonical_flag, convert


@dataclass
class Refused:
    """An option a program does not take, on one side."""

    side: str
    name: str  # as written, without the leading dashes
    invocation: int
    how: str  # "unknown" or "ambiguous"
    stops: bool
    matches: list[str]  # what an ambiguous abbreviation could be
    where: Side  # in the launch script
    program: str  # as written in the launch script
    parser: dict  # the program's command line (cmdline.py)
    program_path: str


@dataclass
class Judged:
    """What one side's launch options came to: the options refused, and the facts they made
    (ids of Fact objects), which then set nothing."""

    refused: list[Refused] = field(default_factory=list)
    dropped: set[int] = field(default_factory=set)
    # facts of an abbreviation, read as the option it stands for: id(fact) -> that fact re-keyed
    rekeyed: dict[int, Fact] = field(default_factory=dict)


def lookup(cmd: dict, name: str) -> tuple[str, list[str]]:
    """How the parser `cmd` takes `--name`: ("exact" | "prefix" | "ambiguous" | "unknown", the
    option strings matched)."""
    return flags.lookup(name, {s: o[1] for o in cmd["options"] for s in o[0]}, cmd["abbrev"])


def judge(side: str, items: list[tuple[Source | None, Extract]], programs: list,
          accounts: dict[int, InputAccount]) -> Judged:
    """The options each launch script of a side passes to its program, against that program's
    parser. `items`: the side's sources and extracts as the run read them; `programs`: the
    programs its launch scripts start (pipeline._Read.programs); `accounts`: id(source) ->
    its input account (which gets a note on what was checked, or why not)."""
    out = Judged()
    by_id = {source_identity(s): (s, ex) for s, ex in items if s is not None}
    read = {id(s): ex for s, ex in items if s is not None}
    for ref, line, referrer, prog, ident in programs:
        ex = read.get(id(referrer))
        launch = next((x for x in (ex.launches if ex is not None else ())
                       if x[0] == ref and x[1] == line), None)
        if launch is None or prog is None:
            continue
        psrc, pex = (prog, read.get(id(prog))) if prog is not False else by_id.get(ident, (None, None))
        if psrc is None or pex is None:
            continue
        cmd = pex.command_line
        acc = accounts.get(id(referrer))
        pname = _base(psrc.name)
        if cmd is None or not cmd["complete"]:
            if acc is not None:
                why = cmd["why"] if cmd is not None else f"{pname} shows no command-line parser"
                _note(acc, f"line {line}: the options passed to {ref} were not checked against its parser: {why}")
            continue
        _program, _line, inv, passed = launch
        looked = [(opt, *lookup(cmd, opt[0])) for opt in passed]
        taken = sum(1 for _o, how, _m in looked if how in ("exact", "prefix"))
        if not cmd["stops"] and taken < len(looked) - taken:
            # a parser that leaves most of what it is given over is a peek (swift's tuner
            # check before its own parser runs): the rest is read by code out of view
            if acc is not None:
                _note(acc, f"line {line}: the options passed to {ref} were not checked against its parser: it takes "
                           f"{taken} of the {len(looked)} options passed and leaves the rest to code out of view")
            continue
        if acc is not None:
            _note(acc, f"line {line}: the options passed to {ref} were checked against its parser "
                       f"({_parser_name(cmd)} at {pname}:{cmd['line']})")
        for (name, oline, value, source), how, matches in looked:
            if how == "prefix":  # --lr-warm 50 is --lr-warmup-iters 50: its facts under that option's key
                _rekey(out, items, name, inv, matches[0][2:])
            if how in ("exact", "prefix"):
                continue
            out.refused.append(Refused(
                side=side, name=name, invocation=inv, how=how, stops=cmd["stops"] or how == "ambiguous",
                matches=matches, program=ref, parser=cmd, program_path=psrc.name,
                where=Side(value=f"--{name} {value}".strip(), path=referrer.name, line=oline, source=source)))
            for _s, x in items:  # what it made sets nothing: the launch facts, the config it names
                out.dropped.update(id(f) for f in x.facts
                                   if f.meta.get("flag") == name and f.meta.get("invocation") == inv)
    return out


def _rekey(out: Judged, items, name: str, inv: int, full: str) -> None:
    """The facts option `--name` made, keyed as the option it abbreviates (`full`, without its
    dashes) would have keyed them; facts under another key (a config it names) stay."""
    dest = full.replace("-", "_")
    prefer = "megatron" if "-" in full else "hf"
    old = {canonical_flag(name.replace("-", "_"), prefer), name.replace("-", "_")}
    key = canonical_flag(dest, prefer) or dest
    for _s, x in items:
        for f in x.facts:
            if f.meta.get("flag") == name and f.meta.get("invocation") == inv and f.key in old and f.key != key:
                conv = convert(key, f.value)
                if conv is not None:
                    out.rekeyed[id(f)] = replace(f, key=conv[0], value=conv[1],
                                                 meta={**f.meta, "written_key": full})


def findings(gpu: Judged, npu: Judged) -> list[Finding]:
    """One finding per option refused, with each side that refuses it (a side's first such
    option of that name in that invocation)."""
    groups: dict[tuple, dict[str, Refused]] = {}
    for r in gpu.refused + npu.refused:
        groups.setdefault((r.stops, r.invocation, r.name), {}).setdefault(r.side, r)
    out = []
    for (stops, _inv, name), sides in groups.items():
        g, n = sides.get("gpu"), sides.get("npu")
        out.append(finding("launch-flag-not-defined" if stops else "launch-flag-ignored",
                           key=f"flag:--{name}", gpu=g.where if g else None, npu=n.where if n else None,
                           message=_message(name, g, n)))
    return out


def _message(name: str, g: Refused | None, n: Refused | None) -> str:
    first = g or n
    who = "on GPU and NPU" if g and n else ("on GPU" if g else "on NPU")
    program = " / ".join(sorted({_base(r.program_path) for r in (g, n) if r}))
    cmd = first.parser
    parser = _parser_name(cmd) + (f" {cmd['parse']}" if cmd["kind"] in ("argparse", "hf") and cmd.get("parse") else "")
    places = [f"{_base(r.program_path)}:{r.parser.get('parse_line') or r.parser['line']}" for r in (g, n) if r]
    at = places[0] if len(set(places)) == 1 else f"GPU {places[0]}, NPU {places[1]}"
    if first.how == "ambiguous":
        what = (f"--{name} is an abbreviation of several options of {program} {who} ({', '.join(first.matches)}): "
                f"{parser} ({at}) stops the run with \"ambiguous option\"")
    elif first.stops:
        what = f"{program} defines no option --{name} {who}: {parser} ({at}) stops the run with \"{cmd['refusal']}\""
    else:
        what = f"{program} defines no option --{name} {who}: {parser} ({at}) leaves it over, unused"
    return what + "; the option sets nothing, and the program's own value is compared"


def _parser_name(cmd: dict) -> str:
    return {"argparse": "argparse", "hf": "HfArgumentParser", "click": "click", "typer": "typer"}.get(
        cmd["kind"], cmd["kind"])


def _base(path: str) -> str:
    return posixpath.basename(path.replace("\\", "/"))


def _note(acc: InputAccount, text: str) -> None:
    if text not in acc.notes:
        acc.notes.append(text)

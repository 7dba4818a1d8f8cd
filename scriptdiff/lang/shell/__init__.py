"""Launch scripts (bash): tree-sitter-bash, evaluated in order, never executed.

What is read:
- assignments in order (`VAR=...`, `export`, `declare`/`local`/`readonly`), `${VAR}`,
  `"$VAR"`, `${VAR:-default}` / `${VAR-d}` / `${VAR:=d}`, arrays `ARGS=(...)` / `ARGS+=(...)`
  with `"${ARGS[@]}"`, multi-line strings holding flags, `$((...))` on known values. A
  variable the script does not set is *unresolved*: kept as its text (`$DATA`) and said so,
  never guessed. Command substitutions `$(...)` are unresolved too (one word each), but for
  the path commands on known paths (`$(dirname "$0")`: the script's folder).
- the builtins that set variables (builtins.py): `printf -v`, `read <<<`, `set --`/`shift`
  and a function's arguments, `let`, `(( ))`, and `for` loops (unrolled). What cannot be
  evaluated (read from input, a `while` loop) is *unknown*: a setting made from it is left
  out (`_known`) and the account says so, never equal.
- launcher commands: torchrun, `python -m torch.distributed.run|launch`, deepspeed,
  `accelerate launch`, msrun, plain `python x.py`, and Hydra-style `python -m pkg key=value`,
  whatever runs them: a wrapper or runner (`nohup`, `uv run`, `srun`, `mpirun -np 8`), a
  Python wrapper's command after `--`, an unknown runner's command (said).
  The launcher's own options give world_size (nproc_per_node x nnodes, --num_gpus x
  --num_nodes, --num_processes, --worker_num) and master_port/master_addr (info); the
  training script's options become hyperparameter facts: `--k v`, `--k=v`, `--flag`,
  `--no-flag`, Hydra `a.b=c` / `+a.b=c` / `++a.b=c`.
- exported environment variables (and `VAR=x cmd` prefixes of a launcher) become
  environment facts keyed by scriptdiff.ruleset.envmap; `source .../set_env.sh` is an NPU tuning fact.
- comments holding flags (`# --seed 42`) mark that flag as *commented out* on this side.
- config files named by the script (--deepspeed ds.json, --config x.yaml, --config_file,
  --deepspeed_config) are references the engine follows.

A script that tree-sitter parses only partly is still analysed: the parsed statements give
facts and one errors entry names the lines that did not parse.

The package: `extract` (here) parses and assembles; evaluator.py walks the statements and
keeps the variables; words.py expands words with their provenance; launch.py reads a
launcher command with the table of launchers.py (data from rules/shell.yaml `launchers:`);
program.py turns a program's options into facts; env.py and comments.py make environment
facts and commented-out flags; record.py holds what one script has produced.
"""
from __future__ import annotations

import os

from ...inputs.sources import Source
from ...model import Extract, InputError, Masked, Side
from ...run import engine
from ...ruleset.devices import plumbing_role
from ...ruleset.rules import code
from ...ruleset.vocabulary import category, is_cosmetic, vocab
from .comments import commented_facts, commented_flags
from .evaluator import STATEMENTS, Evaluator, Repair
from .evaluator import parser as _parser
from .record import Record


def parse_tree(data: bytes):
    """The tree-sitter-bash tree of a script's bytes (`scriptdiff fix` edits by its byte spans)."""
    return _parser().parse(data)


def extract(src, ctx) -> Extract:
    """The facts of one launch script `src`, read for the side in `ctx` (the reader rules/kinds.yaml names for shell files)."""
    ex = Extract()
    try:
        parser = _parser()
    except Exception as e:  # tree-sitter missing or broken: text comparison still runs
        ex.errors.append(InputError(src.name, f"cannot parse shell (tree-sitter-bash unavailable: {e})"))
        return ex
    rec = Record(src, ctx)
    repair = Repair(src.text.encode("utf-8"))
    tree, data = repair.parse(parser)
    root = tree.root_node
    if root.has_error:
        bad = _error_lines(root)
        where = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in bad[:5]) + (" ..." if len(bad) > 5 else "")
        ex.errors.append(InputError(src.name, f"shell syntax error at line(s) {where}; those lines were not "
                                              f"analysed, the rest of the script was"))
    rec.commented.update(commented_flags(root, data))
    Evaluator(rec, data).run(root)
    if rec.launches == 0 and not rec.unknown and not rec.installs and not rec.calls:
        ex.errors.append(InputError(src.name, "no launcher command (torchrun, deepspeed, accelerate launch, msrun, "
                                              "python) found; only environment exports were read"))
    for name, count, line, keys in rec.unknown:
        ex.unread.append(f"{rec.at(line)}: launcher `{name}` is not known: its {count} option"
                         f"{'s were' if count != 1 else ' was'} not compared")
        if keys is not None:  # it can set only what its options name
            ex.hides[ex.unread[-1]] = list(keys)
    ex.unread.extend(rec.unread)
    ex.unread.extend(rec.too_large)
    if rec.too_large_more:
        ex.unread.append(f"{rec.too_large_more} more value(s) too large to evaluate; not compared")
    ex.understood = rec.launches > 0 or rec.installs > 0
    rec.facts.extend(commented_facts(rec, rec.commented))
    rec.finish()  # secrets out of the source excerpts; fragment lines named by their file
    ex.facts = _known(rec, ex)
    _passed_on(ex.facts)
    _unrepaired(ex.facts, rec, repair)
    ex.errors.extend(rec.errors)
    # a reference written in a sourced fragment keeps its line there, as its fact does
    embedded = _written_configs(rec, ex)
    ex.references = [(ref, rec.place(line)[1], key) for ref, line, key in rec.references if ref not in embedded]
    ex.references += [r for refs in embedded.values() for r in refs]
    ex.launches = rec.launched
    ex.frameworks = rec.frameworks
    ex.guessed = rec.guessed - rec.known
    ex.masked.extend(rec.masked)
    ex.dialects = {f"{title} at {os.path.basename(rec.place(line)[0])}:{rec.place(line)[1]}"
                   for title, line in rec.dialects.items()}
    ex.sourced = list(rec.sourced)
    ex.notes.extend(rec.notes)
    _device_account(ex, rec)
    return ex


def _written_configs(rec: Record, ex: Extract) -> dict:
    """Configs the script writes itself and then names, as a config reference or as any option's
    value (`cat <<EOF > $ARGS` ... `train.py --train_args_file $ARGS`): read from the
    here-document as the file they are, their facts placed at the script's own lines, their own
    references followed as the script's. Returns
    {path: the written config's own references}; a path the launch does not name is not read."""
    named = {ref for ref, _line, _key in rec.references}
    # an option whose value is a file the script wrote names it too (`--train_args_file $ARGS`)
    named |= {f.value for f in ex.facts if f.check != "environment" and isinstance(f.value, str)
              and f.value in rec.written}
    out: dict = {}
    for path, (text, first) in rec.written.items():
        if path not in named:
            continue
        got = engine.extract(Source(name=path, data=text.encode("utf-8")), rec.ctx)  # read as any input is
        if any(e.fatal for e in got.errors) or not got.facts:
            continue  # not a config of a kind the tool reads: the reference stays as it was
        for f in got.facts:
            # the config reader's own excerpt (its secrets already withheld) at the script's line
            f.path, f.line = rec.src.name, (first + f.line - 1) if f.line else first
            f.meta["written_by_script"] = path
        ex.facts.extend(got.facts)
        ex.notes.append(f"line {first}: the config {path} the script writes (a here-document) was read from "
                        f"it, its settings at the script's lines")
        for f in ex.facts:
            if f.meta.get("reference") and f.meta.get("written") == path:
                f.meta["exists"] = True
        out[path] = [(ref, (first + line - 1) if line else first, key) for ref, line, key in got.references]
    return out


def _unrepaired(facts: list, rec: Record, repair: Repair) -> None:
    """Spans of the read bytes as offsets of the script's own (a name braced: Repair); a fact
    written in a fragment whose bytes were repaired keeps no place (`fix` leaves it)."""
    for f in facts:
        sh = f.meta.get("shell")
        if not isinstance(sh, dict):
            continue
        if f.path != rec.src.name:  # written in a sourced fragment
            if f.path in rec.repaired:
                del f.meta["shell"]
            continue
        if repair.inserted:
            for k in ("flag", "value"):
                if sh.get(k):
                    sh[k] = [repair.original(sh[k][0]), repair.original(sh[k][1])]


def _passed_on(facts: list) -> None:
    """An exported variable whose value the script passes to its program as an option
    (`export GBS=512` ... `trainer.batch=$GBS`): its environment fact names those options
    (meta `passed_on`), so that a difference is said once, under the option's key (SD308)."""
    used: dict[str, set] = {}
    feeds: set = set()  # variables another exported variable is made from: they reach its readers too
    for f in facts:
        if f.check != "environment":
            for name in f.meta.get("through") or ():
                used.setdefault(name, set()).add(f.key)
        else:
            feeds.update(f.meta.get("made_from") or ())
    if not used:
        return
    for f in facts:
        name = f.meta.get("name")
        if f.check == "environment" and name in used and name not in feeds:
            f.meta["passed_on"] = sorted(used[name])


def _known(rec: Record, ex: Extract) -> list:
    """The facts whose values are known; a setting made from a value that is not (a variable
    read from input, set in a loop whose runs are not known: words.Seg.unknown) is left out,
    never compared, never equal, and the account says it once per cause, with what it left
    uncompared (the input is then not understood)."""
    out, left = [], {}
    for f in rec.facts:
        why = f.meta.pop("unknown", None)
        if not why:
            out.append(f)
            continue
        for w in why:
            left.setdefault(w, []).append(f)
    # a loop `for ((i = 0; i < N; i++))` not unrolled whose counter only says which process each
    # run is (DEVICE_ID=$i, --rank_id=$i, its log): one job of N processes; otherwise (--seed=$i)
    # N runs, and no world size follows from it
    kept = []
    for f in out:
        loop = f.meta.pop("rank_loop", None)
        if loop is None or all(_harmless(x) for x in left.get(loop, ())):
            kept.append(f)
    out = kept
    for why, facts in left.items():
        names = list(dict.fromkeys(_setting(f, rec) for f in facts))
        said = (f"{why}: its value is not known, so {', '.join(names)} "
                f"{'was' if len(names) == 1 else 'were'} not compared")
        # a value that reaches only output paths, logging and the like cannot change what the run
        # computes: said in the account's notes, not as an input not understood
        (ex.notes if all(_harmless(f) for f in facts) else ex.unread).append(said)
    return out


def _harmless(f) -> bool:
    """A setting that cannot change numerics: of the vocabulary's cosmetic category, or a key
    outside the vocabulary whose name says so (vocabulary.is_cosmetic: paths, output, logging),
    or a variable that says which process it is (`DEVICE_ID=$i`, `RANK_ID=$i` in a loop that
    starts one process per rank: devices.plumbing_role)."""
    if f.check == "environment" and plumbing_role(str(f.meta.get("name") or "")) == "rank":
        return True
    if f.check != "hyperparameters" or f.meta.get("reference"):
        return False
    return category(f.key).name == "cosmetic" or (f.key not in vocab() and is_cosmetic(f.key))


def _setting(f, rec: Record) -> str:
    """How the account names a setting left uncompared: its option or variable, and its line."""
    name = f"--{f.meta['flag']}" if f.meta.get("flag") else (
        f.meta.get("name") if f.check == "environment" else f.meta.get("written_key") or f.key)
    used = f.meta.pop("used_at", None)  # the line of the option (the fact's is its value's)
    path, line = rec.place(used) if used else (f.path, f.line)
    where = f"line {line}" if path == rec.src.name else f"{os.path.basename(path)} line {line}"
    return f"{name} ({where})"


def _device_account(ex: Extract, rec: Record) -> None:
    """The lines this side's device does not run (SD019 masks), and the account's note."""
    d = rec.devices
    if d is None:
        return
    rule = code("device-branch")
    side = rec.ctx.side
    for line in sorted(set(d.aside)):
        path, local = rec.place(line)
        here = Side(value="branch for another device", path=path, line=local, source=rec.src_line(line))
        ex.masked.append(Masked(rule=rule, gpu=here if side == "gpu" else None, npu=here if side == "npu" else None))
    note = d.note()
    if note:
        ex.notes.append(note)


def _error_lines(root) -> list[tuple[int, int]]:
    """Line ranges that did not parse: inside an ERROR node, whatever is not a whole statement."""
    lines: set[int] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if n.is_missing:
            lines.add(n.start_point[0] + 1)
            continue
        if n.type == "ERROR":
            for c in n.children:
                if c.type in STATEMENTS and not c.has_error:
                    continue
                if c.has_error and c.type != "ERROR" and c.child_count:
                    stack.append(c)
                lines.update(range(c.start_point[0] + 1, c.end_point[0] + 2))
            if not n.children:
                lines.add(n.start_point[0] + 1)
            continue
        if n.has_error:
            stack.extend(n.children)
    out: list[tuple[int, int]] = []
    for ln in sorted(lines):
        if out and ln == out[-1][1] + 1:
            out[-1] = (out[-1][0], ln)
        else:
            out.append((ln, ln))
    return out

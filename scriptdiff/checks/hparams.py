"""Hyperparameters: derived values, and how differences read (the check; what the names
mean is the vocabulary's: scriptdiff/ruleset/vocabulary.py, which every reader asks).

- `derive(table)` (called by the engine for each side) adds data_parallel_size,
  gradient_accumulation_steps and global_batch_size where they can be computed and were
  not set, as facts with origin `derived` whose `via` names the formula and inputs, and what
  the name of a config that cannot be read says (vocabulary `from_name`: a DeepSpeed config
  ds_z3_config.json found nowhere, or the preset `--deepspeed zero3`, is zero_stage 3, noted
  as read from the name).
- The `hyperparameters` classifier wraps compare.classify_hparam: it classifies a dotted
  config path that is not in the vocabulary by its last segment (actor_rollout_ref.actor.
  optim.lr is an lr setting, reported under its full path), reports a differing config
  reference that could not be followed (SD222), unresolved variables (said in the message),
  and masks the expected Megatron flag ports (SD011 nccl->hccl, SD012 transformer_engine->local)
  and device settings (SD015 cuda->npu). An unknown key whose name looks cosmetic (run names,
  paths, hosts, ports, timeouts, buckets: rules/aliases.yaml `cosmetic_names`, a dialect's
  `cosmetic`, or a place word with an output word: `cosmetic_words`) is info (SD221); a
  difference that comes only from a default whose value changed at a known release
  (`default_changed`) is info (SD224), with a note saying so; two paths that name the same
  model or dataset in another place (the same final components) are info (SD227).
"""
from __future__ import annotations

import os
from typing import Any

from ..run.compare import FactTable, classify_hparam, equal, show
from ..run.finding import finding, reclassified
from ..model import ORIGIN_DEFAULT, ORIGIN_DERIVED, ORIGIN_EXPLICIT, Fact, Finding, Masked, Severity, Side
from ..ruleset.devices import device_flag, family_of
from ..ruleset.envmap import gpu_spelled
from ..ruleset.registry import referenced_kind, referencing
from ..ruleset.rules import code, load
from . import structure
from ..ruleset.vocabulary import (category_key, category_named, default_fact, device_named, entry, is_cosmetic,
                                  dialect_default, same_but_device,
                                  names_npu, naming_rules, norm_name, normalize, path_prefixes, same_place_elsewhere,
                                  settings_in_name, value_has_shape, vocab, weights_words, words, written_name)


# ---------------------------------------------------------------- derivations

def _num(table: FactTable, key: str, default: int | None = None) -> tuple[Any, str]:
    f = table.get(key, sectioned=False)  # a section's setting (the rollout's TP) is not the key's
    if f is None:
        d = default_fact(key, table.frameworks)
        if d is not None and isinstance(d.value, (int, float)) and not isinstance(d.value, bool) \
                and not d.meta.get("confirms"):  # (a launch's one process: not a value to compute with)
            return d.value, f"{key}={show(d.value)} (default)"
        return default, f"{key}={default} (unset)" if default is not None else ""
    v = f.value
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None, ""
    return v, f"{key}={show(v)}"


def _add(table: FactTable, key: str, value: Any, formula: str, inputs: list[str], keys: tuple[str, ...]) -> None:
    """A derived fact; meta["inputs"] names every key it was computed from (through derived
    inputs too), so a side that could not read one of them knows the result is unknown."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    deps: list[str] = []
    used: dict[str, Any] = {}  # the value each input had here (None: not set on this side)
    at: dict[str, tuple] = {}  # where each input written in a file was read: (path, line, source)
    for k in keys:
        deps.append(k)
        f = table.get(k, sectioned=False)
        used[k] = None if f is None else f.value
        if f is not None and f.derived:
            deps.extend(f.meta.get("inputs") or ())
            used.update(f.meta.get("input_values") or {})
            at.update(f.meta.get("input_at") or {})
        elif f is not None and f.origin == ORIGIN_EXPLICIT and f.path and f.line:
            at[k] = (f.path, f.line, f.source)
    table.add(Fact(key=key, value=value, origin=ORIGIN_DERIVED, rank=0, source="derived",
                   via=f"{formula} with {', '.join(x for x in inputs if x)}",
                   meta={"inputs": tuple(dict.fromkeys(deps)), "input_values": used, "input_at": at}))


def _located(f: Finding, g: Fact | None, n: Fact | None) -> Finding:
    """A value computed on a side is shown at the line of the first of its inputs that differs
    from the other side (the world size at the line that sets the number of nodes), so the
    finding points at what to look at; its source stays "derived" and `via` the formula."""
    gi = (g.meta.get("input_values") or {}) if g is not None and g.derived else {}
    ni = (n.meta.get("input_values") or {}) if n is not None and n.derived else {}
    for fact, side in ((g, f.gpu), (n, f.npu)):
        if fact is None or not fact.derived or side is None or side.line is not None:
            continue
        at = fact.meta.get("input_at") or {}
        other = ni if fact is g else gi
        for k in fact.meta.get("inputs") or ():
            if k in at and not (other and equal((gi if fact is g else ni).get(k), other.get(k))):
                side.path, side.line = at[k][0], at[k][1]
                break
    return f


def derive(table: FactTable) -> None:
    """Add derived facts to one side's table (only for keys the side did not set)."""
    _resolve_commented(table)
    _named_settings(table)
    keys = table.keys(sectioned=False)
    if "world_size" not in keys and "nproc_per_node" in keys:  # verl trainer.n_gpus_per_node x trainer.nnodes
        npn, npn_s = _num(table, "nproc_per_node")
        nn, nn_s = _num(table, "nnodes", 1)
        if all(isinstance(x, int) and x > 0 for x in (npn, nn)):
            _add(table, "world_size", npn * nn, "nproc_per_node * nnodes", [npn_s, nn_s], ("nproc_per_node", "nnodes"))
    keys = table.keys(sectioned=False)
    if "world_size" in keys and "data_parallel_size" not in keys:
        ws, ws_s = _num(table, "world_size")
        tp, tp_s = _num(table, "tensor_model_parallel_size", 1)
        pp, pp_s = _num(table, "pipeline_model_parallel_size", 1)
        cp, cp_s = _num(table, "context_parallel_size", 1)
        if all(isinstance(x, int) and x > 0 for x in (ws, tp, pp, cp)) and ws % (tp * pp * cp) == 0:
            _add(table, "data_parallel_size", ws // (tp * pp * cp), "world_size / (tp * pp * cp)",
                 [ws_s, tp_s, pp_s, cp_s], ("world_size", "tensor_model_parallel_size",
                                            "pipeline_model_parallel_size", "context_parallel_size"))
    keys = table.keys(sectioned=False)
    dp, dp_s = _num(table, "data_parallel_size")
    mbs, mbs_s = _num(table, "micro_batch_size")
    if "gradient_accumulation_steps" not in keys and "global_batch_size" in keys:
        gbs, gbs_s = _num(table, "global_batch_size")
        if all(isinstance(x, int) and x > 0 for x in (gbs, mbs, dp)) and gbs % (mbs * dp) == 0:
            _add(table, "gradient_accumulation_steps", gbs // (mbs * dp),
                 "global_batch_size / (micro_batch_size * data_parallel_size)", [gbs_s, mbs_s, dp_s],
                 ("global_batch_size", "micro_batch_size", "data_parallel_size"))
    elif "global_batch_size" not in keys and "micro_batch_size" in keys:
        gas, gas_s = _num(table, "gradient_accumulation_steps")
        if all(isinstance(x, int) and x > 0 for x in (gas, mbs, dp)):
            _add(table, "global_batch_size", mbs * gas * dp,
                 "micro_batch_size * gradient_accumulation_steps * data_parallel_size", [mbs_s, gas_s, dp_s],
                 ("micro_batch_size", "gradient_accumulation_steps", "data_parallel_size"))


def _named_settings(table: FactTable) -> None:
    """What the name of a config says when the config itself cannot be read (vocabulary
    `from_name`): `--deepspeed ds_z3_config.json` found nowhere is zero_stage 3, and so is the
    preset `--deepspeed zero3` (ms-swift); the fact is marked as read from the name."""
    added = []
    for facts in table.facts.values():
        for f in facts:
            if f.meta.get("reference"):
                if f.meta.get("exists"):
                    continue
                option, written, how = f.key.split(":", 1)[-1], str(f.meta.get("written") or f.value), "file name"
                kind = referenced_kind(option, written)
            elif isinstance(f.value, str) and f.origin != ORIGIN_DEFAULT and "." not in f.value and "/" not in f.value:
                option, written, how = f.key, f.value, "preset name"
                kind = next(iter(referencing(option)), None)
            else:
                continue
            if kind is None:
                continue
            base = written.replace("\\", "/").rsplit("/", 1)[-1]
            said = settings_in_name(kind.name, base)
            if said and how == "preset name":
                f.meta["said_by_name"] = True  # the preset is compared through what its name says
            for key, value in said:
                note = f"read from the {how}" + (", the config was not found" if how == "file name" else "")
                added.append(Fact(key=key, value=value, check=f.check, path=f.path, line=f.line, source=f.source,
                                  rank=f.rank, via=f"{how} {base}", note=note,
                                  meta={"from_name": True, "written_key": option, "slot": f"{how}:{option}",
                                        **({"invocation": f.meta["invocation"]} if "invocation" in f.meta else {})}))
    table.extend(added)


def _resolve_commented(table: FactTable) -> None:
    """A flag that is only commented out on this side counts as absent: its placeholder fact
    becomes the framework default (or no value), keeping the note 'commented out at line N'."""
    for key in list(table.facts):
        facts = table.facts[key]
        live = [f for f in facts if not f.meta.get("commented")]
        if live:
            table.facts[key] = live
            continue
        note = facts[-1].note
        d = default_fact(key, table.frameworks) or dialect_default(key, table)
        if d is None:
            d = Fact(key=key, value=None, origin="default", rank=0, source="default", via="not set")
        d.check = facts[-1].check
        d.note = note
        table.facts[key] = [d]


# ---------------------------------------------------------------- classifier

def _unresolved_note(f: Fact | None, side: str) -> str:
    if f is not None and f.meta.get("unresolved"):
        names = ", ".join(n if n.startswith("$") else "$" + n for n in f.meta["unresolved"])  # $(cmd) as written
        return f"{side} value depends on {names}, which the script does not set (unresolved)"
    return ""


def classify(key: str, g: Fact | None, n: Fact | None, rs) -> Finding | Masked | None:
    if key.startswith(structure.PREFIX):  # what a run's log says its model is (PEFT's counts)
        return structure.classify(key, g, n, rs, check="hyperparameters")
    if (g is not None and g.meta.get("reference")) or (n is not None and n.meta.get("reference")):
        return _classify_reference(key, g, n, rs)
    if g is not None and n is not None and g.meta.get("said_by_name") and n.meta.get("said_by_name"):
        return None  # --deepspeed zero3 against zero2: compared as zero_stage, what the names say
    g, n = _live(g), _live(n)
    if (g is None or g.value is None) and (n is None or n.value is None):
        return None
    masked = _port_mask(key, g, n)
    if masked is not None:
        return masked
    cat_key = category_key(key)
    f = classify_hparam(cat_key or key, g, n, rs, name=None if cat_key else written_name(key, g, n))
    if f is None:
        return None
    f.key = key
    if cat_key:
        f.message = f.message.replace(f" {cat_key} ", f" {key} ", 1)
    elif key not in vocab() and is_cosmetic(key):
        f = _recategorised(f, "cosmetic", rs)
    elif key not in vocab() and f.rule == category_named("other", rs).rule and _other_weights(key, g, n):
        f = _recategorised(f, "data", rs)
    f = _release_default(f, key, g, n)
    f = _moved(f, g, n)
    f = _follows(f, g, n, rs)
    f = _from_caller(f, g, n, rs)
    f = _located(f, g, n)
    notes = [x for x in (_unresolved_note(g, "GPU"), _unresolved_note(n, "NPU")) if x]
    if notes:
        f.message += "; " + "; ".join(notes)
    return f


def _follows(f: Finding, g: Fact | None, n: Fact | None, rs) -> Finding:
    """A value computed on both sides (or on one side only), never set, whose inputs differ:
    the inputs' own findings say what differs, this one what it leads to (SD230, info), for
    the keys the vocabulary marks `follows` (the data parallel size, the accumulation steps,
    the global batch: what a job's size and batch settings lead to). A value set on either side
    stays its category's finding, and so does a computed world size: it is the job's size,
    however the launcher spells it."""
    if f.severity == Severity.INFO or (g is None and n is None) or not entry(f.key).get("follows"):
        return f
    if any(x is not None and not x.derived for x in (g, n)):
        return f
    if g is None or n is None:
        side, other, present = ("NPU", "GPU", n) if g is None else ("GPU", "NPU", g)
        inputs = ", ".join(present.meta.get("inputs") or ()) or "its inputs"
        msg = (f"{f.key} = {show(present.value)} is computed on {side} only ({present.via}); {other} does not set "
               f"all of {inputs}, each compared on its own: it follows from them")
    else:
        gi, ni = g.meta.get("input_values") or {}, n.meta.get("input_values") or {}
        differ = [k for k in dict.fromkeys([*gi, *ni]) if not equal(gi.get(k), ni.get(k))]
        if not differ:
            return f
        why = "; ".join(f"{k} is {_shown(gi.get(k))} on GPU and {_shown(ni.get(k))} on NPU" for k in differ)
        msg = (f"{f.key} is {show(g.value)} on GPU and {show(n.value)} on NPU, computed on both sides, not set: "
               f"it follows from its inputs, each compared on its own ({why})")
    return reclassified(f, "derived-value-follows", msg, rs=rs)


def _caller_arg(f: Fact | None) -> str | None:
    """`$N` when the fact's value is the script's own argument N, or a path under it (`$2/train`),
    or a command kept as written that is given only that argument (`$(get_real_path $1)`,
    `$(realpath -m "$2")`): given by whoever starts the script, not known here; else None."""
    if f is None or not isinstance(f.value, str):
        return None
    names = [str(u) for u in f.meta.get("unresolved") or ()]
    if len(names) == 1 and names[0] == f.value.strip() and names[0].startswith("$(") and names[0].endswith(")"):
        words = names[0][2:-1].split()
        args = [w.strip("'\"") for w in words[1:] if not w.startswith("-")]
        if len(words) >= 2 and len(args) == 1 and args[0].startswith("$") and args[0].strip("${}").isdigit():
            return f"{args[0]} (through {words[0]})"
        return None
    if len(names) != 1 or not names[0].isdigit():
        return None
    v, n = f.value.strip(), names[0]
    for form in (f"${n}", f"${{{n}}}"):
        if v == form or v.startswith(form + "/"):
            return form
    return None


def _from_caller(f: Finding, g: Fact | None, n: Fact | None, rs) -> Finding:
    """A data, path or unknown setting whose value one side takes from the script's own argument
    (`--dataset=$2`, the ModelArts way of handing a job its mounted folders): not known here, so
    not compared (SD231, info), saying which argument; a learning rate or a batch size taken so
    on one side stays its category's finding, with the unresolved note. Any setting that both
    sides take from their arguments (`$1` on GPU, `$2` on NPU: two scripts that order their
    arguments differently) is known on neither: not compared either, whatever its category."""
    if f.severity == Severity.INFO:
        return f
    said = [(side, arg) for side, x in (("GPU", g), ("NPU", n)) for arg in [_caller_arg(x)] if arg]
    if not said or (f.rule not in naming_rules(rs) and len(said) < 2):  # rules/vocabulary.yaml `naming`
        return f
    who = " and ".join(f"the {side} run takes it from the script's argument {arg}" for side, arg in said)
    return reclassified(f, "value-from-the-caller", f"{f.key}: {who}, given by whoever starts the script and not "
                        f"known here: not compared", rs=rs)


def _shown(v: Any) -> str:
    return "not set" if v is None else show(v)


def relate(findings: list[Finding], inputs) -> list[Finding]:
    """Sections moved (`_sections_moved`), and paths moved between machines, proved by the others
    (the check's `relate` hook, run once every unit is compared): where a finding shows a side's
    folder A replaced by B for a file that names something (`A/corpus/orbit-558k.json` against
    `B/corpus/orbit-558k.json`: SD227), a loud finding whose two values are A/T and B/T is the
    same move, however generic its tail T (`A/dataset` against `B/dataset`, which alone proves
    nothing): SD227 too, saying which finding shows it."""
    findings = _sections_moved(findings)
    moved = code("path-moved-elsewhere")
    moves: dict[tuple[str, str], str] = {}
    for f in findings:
        if f.rule == moved and f.gpu is not None and f.npu is not None:
            same = same_place_elsewhere(f.gpu.value, f.npu.value)
            if same is not None:
                moves.setdefault((same[1], same[2]), f.key)
    if not moves:
        return findings
    out = []
    for f in findings:
        if f.check == "hyperparameters" and f.severity in (Severity.ERROR, Severity.WARNING) \
                and f.gpu is not None and f.npu is not None:
            pair = path_prefixes(f.gpu.value, f.npu.value)
            if pair in moves:
                f = reclassified(f, "path-moved-elsewhere",
                                 f"{f.message}: the same place under another folder, moved between machines as "
                                 f"{moves[pair]} shows ({pair[0]} on GPU, {pair[1]} on NPU)")
        out.append(f)
    return out


# settings a section moved must share at least (and three quarters of the smaller side's, half the larger's)
SECTION_MATCH = 3


def _written_path(side) -> str | None:
    """The dotted path a one-sided config setting was written at (its key, or the path its
    canonical key was read from), None for anything else (a flag, a variable)."""
    fact = getattr(side, "fact", None)
    if fact is None or not side.path or not side.line or fact.meta.get("invocation") is not None:
        return None
    path = fact.via if fact.via and fact.via != fact.key else fact.key
    if not path or any(c in path for c in " $,=/") or path.startswith(("env:", "config:", "reference:", "code:")):
        return None
    return path


def _sections_moved(findings: list[Finding]) -> list[Finding]:
    """A section of settings written under another path on the other side (a config restructured:
    GPU `kestrel_pool.{grid, dim, heads}` against NPU `model.orbit_adapter.{grid, dim, heads}`, or a file's
    top level against a section of the other side's one config). Each side's one-sided settings
    are grouped by file and section; a GPU group and an NPU group that share at least
    SECTION_MATCH setting names, three quarters of the smaller group and half the larger (a
    section may gain settings), are the same section moved: its equal
    settings are one info finding (SD232), each setting whose value differs one finding of its
    category with both sides, and the settings of one group only stay one-sided."""
    groups: dict[tuple, dict] = {}
    for i, f in enumerate(findings):
        if f.check != "hyperparameters" or (f.gpu is None) == (f.npu is None):
            continue
        side = "gpu" if f.gpu is not None else "npu"
        here = f.gpu or f.npu
        path = _written_path(here)
        if path is None:
            continue
        parent, _, leaf = path.rpartition(".")
        groups.setdefault((side, here.path, parent), {}).setdefault(leaf, i)
    gpu = {k: v for k, v in groups.items() if k[0] == "gpu" and len(v) >= SECTION_MATCH}
    npu = {k: v for k, v in groups.items() if k[0] == "npu" and len(v) >= SECTION_MATCH}
    if not gpu or not npu:
        return findings
    pairs = []
    for gk, gv in gpu.items():
        for nk, nv in npu.items():
            common = set(gv) & set(nv)
            if len(common) >= SECTION_MATCH and 4 * len(common) >= 3 * min(len(gv), len(nv)) \
                    and 2 * len(common) >= max(len(gv), len(nv)):
                pairs.append((len(common), gk, nk))
    used: set = set()
    drop: set[int] = set()
    added: list[Finding] = []
    for _n, gk, nk in sorted(pairs, key=lambda x: (-x[0], x[1], x[2])):
        if gk in used or nk in used:
            continue
        used.update((gk, nk))
        gv, nv = gpu[gk], npu[nk]
        same = []
        for leaf in sorted(set(gv) & set(nv)):
            gf, nf = findings[gv[leaf]], findings[nv[leaf]]
            drop.update((gv[leaf], nv[leaf]))
            if equal(gf.gpu.value, nf.npu.value):
                same.append(leaf)
                continue
            rule = gf.rule if gf.severity != Severity.INFO else nf.rule
            added.append(finding(rule, key=gf.key, gpu=gf.gpu, npu=nf.npu,
                                 message=f"{_written_path(gf.gpu)} on GPU is {show(gf.gpu.value)} and "
                                         f"{_written_path(nf.npu)} on NPU {show(nf.npu.value)}: one setting, its "
                                         f"section written under another path"))
        if same:
            gname, nname = gk[2] or "the top level", nk[2] or "the top level"
            gfirst = min((findings[gv[x]].gpu for x in same), key=lambda s: s.line)
            nfirst = min((findings[nv[x]].npu for x in same), key=lambda s: s.line)
            added.append(finding("section-moved", key=f"section:{gk[2] or nk[2]}", gpu=_section_side(gk, gfirst),
                                 npu=_section_side(nk, nfirst), extra={"equal": same},
                                 message=f"{gname} of {os.path.basename(gk[1])} on GPU is {nname} of "
                                         f"{os.path.basename(nk[1])} on NPU: {len(same)} setting(s) equal "
                                         f"({', '.join(same[:8])}{', ...' if len(same) > 8 else ''})"))
    if not drop:
        return findings
    return [f for i, f in enumerate(findings) if i not in drop] + added


def _section_side(group: tuple, first: Side) -> Side:
    """A section's side: its path (or the top level), in its file, at its first setting's line."""
    return Side(value=group[2] or "(top level)", path=group[1], line=first.line, source=first.source)


def _moved(f: Finding, g: Fact | None, n: Fact | None) -> Finding:
    """Two paths naming the same model or dataset in another place (vocabulary.same_place_elsewhere):
    an info of its own (SD227), whatever the key's category."""
    if g is None or n is None or f.severity == Severity.INFO:
        return f
    same = same_place_elsewhere(g.value, n.value)
    if same is None:
        return f
    return reclassified(f, "path-moved-elsewhere",
                        f"{f.message}: the same {same[0]} in another place (a path moved between machines)")


def _other_weights(key: str, g: Fact | None, n: Fact | None) -> bool:
    """A key outside the vocabulary whose words say it names weights (rules/aliases.yaml
    `path_places.weights_words`: adapter_init, text_encoder_setup.ckpt_file) and
    whose two values are paths to different things (not the same one moved elsewhere): the
    initial weights of a part of the model differ, a data finding (SD212), never cosmetic."""
    if g is None or n is None or not (set(words(key)) & weights_words()):
        return False
    if not all(value_has_shape(f.value, "path") for f in (g, n)):
        return False
    return same_place_elsewhere(g.value, n.value) is None


def _live(f: Fact | None) -> Fact | None:
    """A commented-out flag with no known default stands for 'not set'."""
    if f is not None and f.value is None and f.origin == "default" and f.via == "not set":
        return None if not f.note else f
    return f


def _recategorised(f: Finding, category: str, rs) -> Finding:
    """A finding of category `other` read again under `category` (its rule and title)."""
    old, new = category_named("other", rs), category_named(category, rs)
    return reclassified(f, new.rule, f.message.replace(f"{old.title}:", f"{new.title}:", 1), rs=rs)


def _release_default(f: Finding, key: str, g: Fact | None, n: Fact | None) -> Finding:
    """A difference that exists only because one side relies on a default that changed at a
    known release (vocabulary `default_changed`): the other side's value is the old default,
    so its script may simply predate the change. Reported as an info of its own, saying so."""
    changed = entry(key).get("default_changed") or {}
    if not changed or g is None or n is None:
        return f
    for dflt, other in ((g, n), (n, g)):
        if dflt.origin != ORIGIN_DEFAULT or other.origin == ORIGIN_DEFAULT or dflt.meta.get("version"):
            continue  # a side whose framework version is known was compared with that release's default
        fw = str(dflt.via or "").split(" ", 1)[0]
        c = changed.get(fw)
        if c and equal(normalize(c["before"], entry(key).get("type")), other.value):
            side = "GPU" if dflt is g else "NPU"
            return reclassified(f, "difference-only-from-release-default",
                                f"{f.message}; {fw}'s default is {show(dflt.value)} since {c['release']} and was "
                                f"{show(other.value)} before, and the {side} side's {fw} version is not known: the "
                                f"difference comes only from the default, and the script setting it may be written "
                                f"for an older release")
    return f


def _device_value(v: Any, families: list[str]) -> bool:
    """A value naming a device of one of these families (rules/devices.yaml: `npu:0`, `ascend`)."""
    return family_of(str(v).strip().strip("'\"")) in families


def _device_mask(key: str, g: Fact | None, n: Fact | None) -> Masked | None:
    """trainer.device: cuda -> npu (or npu on the NPU side alone, or the GPU named on the GPU side
    alone: `--device_target=GPU` where the NPU run keeps its framework's default): the expected
    port (SD015)."""
    dev = load().section("device_port", {}) or {}
    if not dev:
        return None
    if norm_name(key.rsplit(".", 1)[-1].split("[", 1)[0]) not in dev["names"]:
        # a setting of any name whose every written value is the side's own device, said as a word
        # (`--platform GPU` where the NPU run keeps its default, `platform: Ascend` there): the port
        # (the NPU's device named on the NPU side alone is its implementation of a choice: SD025 below)
        written = [(f, fam) for f, fam in ((g, dev["gpu"]), (n, dev["npu"]))
                   if f is not None and f.origin != ORIGIN_DEFAULT]
        if not written or written[0][0] is not g or not all(
                isinstance(f.value, str) and f.value.strip().isalpha() and _device_value(f.value, fam)
                for f, fam in written):
            return None
        return Masked(rule=code("device-setting-port"), gpu=g.side() if g is not None else None,
                      npu=n.side() if n is not None else None)
    written = [f for f in (g, n) if f is not None and f.origin != ORIGIN_DEFAULT]
    if written and all(_card_index(f.value) for f in written):
        # `--device 7` against no device, or against `--device 3`: which card of the machine, an
        # index of the side's own accelerator (never a count or a family)
        return Masked(rule=code("device-setting-port"), gpu=g.side() if g is not None else None,
                      npu=n.side() if n is not None else None)
    if n is None or n.origin == ORIGIN_DEFAULT:
        if g is None or g.origin == ORIGIN_DEFAULT or not _device_value(g.value, dev["gpu"]):
            return None
        return Masked(rule=code("device-setting-port"), gpu=g.side(), npu=n.side() if n is not None else None)
    if not _device_value(n.value, dev["npu"]):
        return None
    if g is not None and g.origin != ORIGIN_DEFAULT and not _device_value(g.value, dev["gpu"]):
        return None
    return Masked(rule=code("device-setting-port"), gpu=g.side() if g is not None else None, npu=n.side())


def _card_index(v) -> bool:
    """A device setting's value that only says which card: 7, "7", "0,1" (a list of indices)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return v >= 0
    return isinstance(v, str) and bool(v.strip()) and all(p.strip().isdigit() for p in v.split(","))


def _device_named_mask(g: Fact | None, n: Fact | None) -> Masked | None:
    """grouped_triton -> grouped_npu, or a value naming the NPU on the NPU side alone (the GPU side
    keeping its default): the NPU's implementation of the same choice (SD025). One word values
    only (a path naming `npu` is a place, not an implementation)."""
    if g is not None and n is not None and same_but_device(g.value, n.value):
        return Masked(rule=code("device-named-value-port"), gpu=g.side(), npu=n.side())  # the NPU's worker class
    if n is None or not value_has_shape(n.value, "switch") or isinstance(n.value, bool):
        return None
    if g is None or g.origin == ORIGIN_DEFAULT:
        if not names_npu(n.value):
            return None
    elif not value_has_shape(g.value, "switch") or isinstance(g.value, bool) or \
            device_named(g.value) is None or device_named(g.value) != device_named(n.value):
        return None
    return Masked(rule=code("device-named-value-port"), gpu=g.side() if g is not None else None, npu=n.side())


def _device_flag_mask(key: str, g: Fact | None, n: Fact | None) -> Masked | None:
    """`use_npu: false` on the GPU side (or `use_npu: true` on the NPU side, `use_cuda: false`
    there): a switch named by a device and a flag word (rules/devices.yaml plumbing
    `flag_words`) whose every written value says the side's own device is the port (SD015)."""
    fam = device_flag([w for w in norm_name(key.rsplit(".", 1)[-1].split("[", 1)[0]).split("_") if w])
    if fam is None:
        return None
    written = [(f, side) for f, side in ((g, "cuda"), (n, "npu")) if f is not None and f.origin != ORIGIN_DEFAULT]
    if not written or any(not isinstance(f.value, bool) or f.value != (fam == side) for f, side in written):
        return None
    return Masked(rule=code("device-setting-port"), gpu=g.side() if g is not None else None,
                  npu=n.side() if n is not None else None)


def _port_mask(key: str, g: Fact | None, n: Fact | None) -> Masked | None:
    dev = _device_mask(key, g, n) or _device_flag_mask(key, g, n)
    if dev is not None:
        return dev
    if g is not None and n is not None and g.meta.get("unresolved") and n.meta.get("unresolved") \
            and isinstance(g.value, str) and isinstance(n.value, str) and g.value != n.value \
            and gpu_spelled(n.value) == g.value:
        # kept as written, the same but for the renamed variable it reads ($ASCEND_RT_VISIBLE_DEVICES)
        return Masked(rule=code("env-var-renamed"), gpu=g.side(), npu=n.side())
    if key == "distributed_backend" and n is not None and _backend(n.value) == "hccl" and (
            g is None or g.origin == ORIGIN_DEFAULT or _backend(g.value) == "nccl"):
        # nccl -> hccl, or hccl named on the NPU side only (xtuner dist_backend="npu:hccl")
        return Masked(rule=code("distributed-backend-port"), gpu=g.side() if g is not None else None, npu=n.side())
    if g is not None and n is not None:
        gv, nv = str(g.value).lower(), str(n.value).lower()
        if key == "distributed_backend" and gv == "nccl" and nv in ("nccl", "hccl"):
            return Masked(rule=code("distributed-backend-port"), gpu=g.side(), npu=n.side())
        if key == "transformer_impl" and gv == "transformer_engine" and nv == "local":
            return Masked(rule=code("transformer-impl-port"), gpu=g.side(), npu=n.side())
    if is_cosmetic(key) or entry(key).get("category") == "cosmetic":
        return None  # gpu-run / npu-run: a run name, said as such
    return _device_named_mask(g, n)


def _backend(v: Any) -> str:
    """The collective library a backend value names: `npu:hccl,cpu:gloo` -> hccl."""
    words = str(v).strip().strip("'\"").lower().replace(",", " ").replace(":", " ").split()
    return next((w for w in words if w in ("nccl", "hccl")), words[0] if words else "")


def _classify_reference(key: str, g: Fact | None, n: Fact | None, rs) -> Finding | None:
    """A referenced config (--deepspeed ds.json): when both sides could follow it, its contents
    were compared and the path is no finding; otherwise a differing reference is reported."""
    if g is not None and n is not None and g.meta.get("exists") and n.meta.get("exists"):
        return None
    if g is not None and n is not None and str(g.value) == str(n.value) \
            and bool(g.meta.get("exists")) == bool(n.meta.get("exists")):
        return None  # the same name, missing on both sides: nothing to tell them apart
    missing = [s for s, f in (("GPU", g), ("NPU", n)) if f is not None and not f.meta.get("exists")]
    msg = (f"config reference {key} is {show(g.value if g else None)} on GPU and "
           f"{show(n.value if n else None)} on NPU")
    if missing:
        msg += f"; not found beside the {' and '.join(missing)} script, so its settings were not compared"
    return finding("config-reference-differs", key=key, gpu=g, npu=n, message=msg)

"""Hyperparameters: spellings -> canonical keys, derived values, and how differences read.

Shared by the launch-script, config-file and Megatron-log readers (lang/shell.py,
lang/config.py, lang/megatron_log.py):

- `spelling_index()` maps every spelling in rules/vocabulary.yaml (Megatron destinations,
  Hugging Face / LLaMA-Factory keys, DeepSpeed dotted paths, and the `aliases` column: the
  one table of generic names) onto its canonical key; `canonical_flag`, `canonical_path`
  look names up, every reader through them. A path is looked up in this order: a framework
  dialect's paths (`dialects` sections: rules/verl.yaml, rules/accelerate.yaml, ...), the
  framework columns, the alias of its normalised name (top level), and for a nested path the
  alias of its last segment when every section above it is neutral (rules/aliases.yaml).
- `convert(key, raw)` turns a raw value into the canonical one for the few keys whose
  spellings carry different encodings (params_dtype from --bf16 / torch_dtype /
  mixed_precision, use_flash_attn from attn_implementation / LLaMA-Factory flash_attn),
  through the `value_ports` tables of rules/vocabulary.yaml.
- `derive(table)` (called by the engine for each side) adds data_parallel_size,
  gradient_accumulation_steps and global_batch_size where they can be computed and were
  not set, as facts with origin `derived` whose `via` names the formula and inputs.
- The `hyperparameters` classifier wraps compare.classify_hparam: it classifies a dotted
  config path that is not in the vocabulary by its last segment (actor_rollout_ref.actor.
  optim.lr is an lr setting, reported under its full path), reports a differing config
  reference that could not be followed (SD222), unresolved variables (said in the message),
  and masks the expected Megatron flag ports (SD011 nccl->hccl, SD012 transformer_engine->local)
  and device settings (SD015 cuda->npu). An unknown key whose name looks cosmetic (run names,
  paths, hosts, ports, timeouts, buckets: rules/aliases.yaml `cosmetic_names`, a dialect's
  `cosmetic`) is info (SD221); a difference that comes only from a default whose value
  changed at a known release (`default_changed`) is info, with a note saying so.
"""
from __future__ import annotations

import fnmatch
from functools import lru_cache
from typing import Any, Iterable

from ..compare import FactTable, classify_hparam, default_fact, equal, normalize, show, vocab
from ..model import ORIGIN_DEFAULT, ORIGIN_DERIVED, Fact, Finding, Masked
from ..registry import dialects_for
from ..rules import code, load

FRAMEWORK_COLUMNS = ("megatron", "hf", "deepspeed", "python", "aliases")


@lru_cache(maxsize=1)
def value_ports() -> dict[str, dict[str, Any]]:
    """{key: {written value (lower case): canonical value}} from rules/vocabulary.yaml."""
    return load().section("value_ports", {}) or {}


@lru_cache(maxsize=1)
def spelling_index() -> dict[str, dict[str, str]]:
    """{"megatron": {spelling: key}, "hf": ..., "deepspeed": ..., "python": ..., "aliases": ...}."""
    out: dict[str, dict[str, str]] = {fw: {} for fw in FRAMEWORK_COLUMNS}
    for key, entry in vocab().items():
        for fw in out:
            for s in entry.get(fw, []) or []:
                out[fw].setdefault(str(s), key)
    return out


def norm_name(name: str) -> str:
    """A flag or key as the alias table spells it: no leading -, + or ~, lower case, _ for -."""
    return str(name).strip().lstrip("-+~").replace("-", "_").lower()


def canonical_flag(name: str, prefer: str = "megatron") -> str | None:
    """The canonical key of a command-line flag destination (dashes already underscores):
    the framework columns in the preferred order, then the alias table by normalised name."""
    idx = spelling_index()
    if name in vocab():
        return name
    order = ("megatron", "hf") if prefer == "megatron" else ("hf", "megatron")
    for fw in order:
        if name in idx[fw]:
            return idx[fw][name]
    n = norm_name(name)
    if n != name:
        if n in vocab():
            return n
        for fw in order:
            if n in idx[fw]:
                return idx[fw][n]
    return idx["aliases"].get(n)


def canonical_path(path: str, style: str, dialects: Iterable[dict] | None = None) -> str | None:
    """The canonical key of a config file's full dotted path (never the last segment of a path
    under a section that is not neutral). `dialects`: the dialect entries that apply (a config
    reader passes those it detected); None takes every dialect of the style's kind (Hydra
    overrides on a command line: the shell kind's)."""
    hit = dialect_path(path, style, dialects)
    if hit is not None:
        return hit[0]
    idx = spelling_index()
    if style == "deepspeed":
        return idx["deepspeed"].get(path)
    if "." not in path and "[" not in path:
        if path in idx["hf"]:
            return idx["hf"][path]
        if path in idx["megatron"]:
            return idx["megatron"][path]
        return idx["aliases"].get(norm_name(path))
    if "[" in path:
        return None
    *sections, last = path.split(".")
    neutral = neutral_sections()
    if sections and all(norm_name(s) in neutral for s in sections):
        return canonical_flag(last, prefer="hf")
    return None


def fits(key: str, value: Any) -> bool:
    """Whether a config value can be a value of `key` (a name that looks like `data` but holds a
    long list of numbers is not the data path): numbers for int/float, a bool-like for bool,
    a string or a list of strings for str; anything for other types."""
    typ = (vocab().get(key) or {}).get("type")
    if isinstance(value, dict):
        return False
    if typ in ("int", "float"):
        return not isinstance(value, list) and not isinstance(normalize(value, typ), (list, dict)) and (
            value is None or isinstance(normalize(value, typ), (int, float, str)))
    if typ == "str":
        return not isinstance(value, list) or all(isinstance(x, str) for x in value)
    if typ == "bool":
        return not isinstance(value, list)
    return True


def dialect_path(path: str, style: str, dialects: Iterable[dict] | None = None) -> tuple[str, str] | None:
    """(canonical key, dialect title) when a dialect maps this exact path."""
    if dialects is None:
        dialects = dialects_for({"hydra": "shell"}.get(style, style)).values() if style in ("hydra", "yaml", "json") \
            else ()
    for d in dialects:
        key = (d.get("paths") or {}).get(path)
        if key is not None:
            return key, dialect_title(d)
    return None


def dialect_title(d: dict) -> str:
    return d.get("title") or d.get("_name", "")


def detect_dialects(kind: str, paths: Iterable[str]) -> list[dict]:
    """The dialects of `kind` that apply to a config file with these dotted paths: those whose
    `detect` prefixes one of them (or names a top-level key), and those without `detect`."""
    paths = list(paths)
    out = []
    for name, d in dialects_for(kind).items():
        det = d.get("detect")
        if det and not any(p == x or p.startswith(x if x.endswith(".") else x + ".") or p.startswith(x + "[")
                           for x in det for p in paths):
            continue
        out.append({**d, "_name": name})
    return out


@lru_cache(maxsize=1)
def neutral_sections() -> frozenset[str]:
    return frozenset(load().section("neutral_sections", []) or [])


@lru_cache(maxsize=1)
def _cosmetic_patterns() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(patterns of whole dotted paths from the dialects, last-segment names, section names)."""
    cos = load().section("cosmetic_names", {}) or {}
    paths = tuple(p.lower() for d in (load().section("dialects", {}) or {}).values() for p in d.get("cosmetic") or [])
    return paths, tuple(cos.get("names") or ()), tuple(cos.get("sections") or ())


def is_cosmetic(key: str) -> bool:
    """A key outside the vocabulary whose name says it cannot change numerics (rules/aliases.yaml
    cosmetic_names, or a dialect's `cosmetic` paths)."""
    paths, names, sections = _cosmetic_patterns()
    k = key.lower()
    if any(fnmatch.fnmatchcase(k, p) for p in paths):
        return True
    segs = [norm_name(s.split("[", 1)[0]) for s in k.split(".")]
    segs = [s for s in segs if s]
    if not segs:
        return False
    if any(fnmatch.fnmatchcase(segs[-1], p) for p in names):
        return True
    return any(fnmatch.fnmatchcase(s, p) for s in segs[:-1] for p in sections)


def category_key(key: str) -> str | None:
    """For a dotted path outside the vocabulary: the vocabulary key its last segment names."""
    if key in vocab() or ("." not in key):
        return None
    last = key.rsplit(".", 1)[-1].split("[", 1)[0]
    return canonical_flag(last, prefer="hf")


def convert(key: str, raw: Any) -> tuple[str, Any] | None:
    """Canonical (key, value) for spellings whose values are encoded differently.

    Returns None when the setting carries no value (e.g. `bf16: false`, which leaves the
    dtype to whatever else says it)."""
    port = value_ports().get(key)
    if port is not None:  # params_dtype, use_flash_attn (a bool reads as "true"/"false")
        s = str(raw).strip().strip("'\"").lower()
        return key, port.get(s, s)
    entry = vocab().get(key, {})
    value = normalize(raw, entry.get("type"))
    if entry.get("type") == "str" and isinstance(value, str) and value.lower() in ("true", "false"):
        value = value.lower() == "true"  # `--gradient_checkpointing True` and `gradient_checkpointing: true`
    return key, value


# ---------------------------------------------------------------- derivations

def _num(table: FactTable, key: str, default: int | None = None) -> tuple[Any, str]:
    f = table.get(key)
    if f is None:
        d = default_fact(key, table)
        if d is not None and isinstance(d.value, (int, float)) and not isinstance(d.value, bool):
            return d.value, f"{key}={show(d.value)} (default)"
        return default, f"{key}={default} (unset)" if default is not None else ""
    v = f.value
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None, ""
    return v, f"{key}={show(v)}"


def _add(table: FactTable, key: str, value: Any, formula: str, inputs: list[str]) -> None:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    table.add(Fact(key=key, value=value, origin=ORIGIN_DERIVED, rank=0, source="derived",
                   via=f"{formula} with {', '.join(x for x in inputs if x)}"))


def derive(table: FactTable) -> None:
    """Add derived facts to one side's table (only for keys the side did not set)."""
    _resolve_commented(table)
    keys = table.keys()
    if "world_size" not in keys and "nproc_per_node" in keys:  # verl trainer.n_gpus_per_node x trainer.nnodes
        npn, npn_s = _num(table, "nproc_per_node")
        nn, nn_s = _num(table, "nnodes", 1)
        if all(isinstance(x, int) and x > 0 for x in (npn, nn)):
            _add(table, "world_size", npn * nn, "nproc_per_node * nnodes", [npn_s, nn_s])
    keys = table.keys()
    if "world_size" in keys and "data_parallel_size" not in keys:
        ws, ws_s = _num(table, "world_size")
        tp, tp_s = _num(table, "tensor_model_parallel_size", 1)
        pp, pp_s = _num(table, "pipeline_model_parallel_size", 1)
        cp, cp_s = _num(table, "context_parallel_size", 1)
        if all(isinstance(x, int) and x > 0 for x in (ws, tp, pp, cp)) and ws % (tp * pp * cp) == 0:
            _add(table, "data_parallel_size", ws // (tp * pp * cp), "world_size / (tp * pp * cp)",
                 [ws_s, tp_s, pp_s, cp_s])
    keys = table.keys()
    dp, dp_s = _num(table, "data_parallel_size")
    mbs, mbs_s = _num(table, "micro_batch_size")
    if "gradient_accumulation_steps" not in keys and "global_batch_size" in keys:
        gbs, gbs_s = _num(table, "global_batch_size")
        if all(isinstance(x, int) and x > 0 for x in (gbs, mbs, dp)) and gbs % (mbs * dp) == 0:
            _add(table, "gradient_accumulation_steps", gbs // (mbs * dp),
                 "global_batch_size / (micro_batch_size * data_parallel_size)", [gbs_s, mbs_s, dp_s])
    elif "global_batch_size" not in keys and "micro_batch_size" in keys:
        gas, gas_s = _num(table, "gradient_accumulation_steps")
        if all(isinstance(x, int) and x > 0 for x in (gas, mbs, dp)):
            _add(table, "global_batch_size", mbs * gas * dp,
                 "micro_batch_size * gradient_accumulation_steps * data_parallel_size", [mbs_s, gas_s, dp_s])


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
        d = default_fact(key, table)
        if d is None:
            d = Fact(key=key, value=None, origin="default", rank=0, source="default", via="not set")
        d.check = facts[-1].check
        d.note = note
        table.facts[key] = [d]


# ---------------------------------------------------------------- classifier

def _unresolved_note(f: Fact | None, side: str) -> str:
    if f is not None and f.meta.get("unresolved"):
        names = ", ".join("$" + n for n in f.meta["unresolved"])
        return f"{side} value depends on {names}, which the script does not set (unresolved)"
    return ""


def classify(key: str, g: Fact | None, n: Fact | None, rs) -> Finding | Masked | None:
    if (g is not None and g.meta.get("reference")) or (n is not None and n.meta.get("reference")):
        return _classify_reference(key, g, n, rs)
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
        _recategorise(f, "cosmetic", rs)
    _release_default(f, key, g, n)
    notes = [x for x in (_unresolved_note(g, "GPU"), _unresolved_note(n, "NPU")) if x]
    if notes:
        f.message += "; " + "; ".join(notes)
    return f


def written_name(key: str, g: Fact | None, n: Fact | None) -> str:
    """How a finding names `key`: the spellings the sides wrote (meta["written_key"], set by the
    readers) when one differs from the key, the key in brackets: "gradient_checkpointing
    (recompute_granularity)", "use_flash_attention_2 / attn_implementation (use_flash_attn)"."""
    names: list[str] = []
    for f in (g, n):
        w = f.meta.get("written_key") if f is not None else None
        if not w:
            continue
        w = key if norm_name(w) == norm_name(key) else str(w)
        if w not in names:
            names.append(w)
    if not names or names == [key]:
        return key
    return f"{' / '.join(names)} ({key})"


def _live(f: Fact | None) -> Fact | None:
    """A commented-out flag with no known default stands for 'not set'."""
    if f is not None and f.value is None and f.origin == "default" and f.via == "not set":
        return None if not f.note else f
    return f


def _recategorise(f: Finding, category: str, rs) -> None:
    """A finding of category `other` read again under `category` (its rule, severity, title)."""
    cats = rs.section("categories", {})
    old, new = cats.get("other", {}), cats.get(category, {})
    f.rule, f.severity = new["rule"], new["severity"]
    f.message = f.message.replace(f"{old.get('title')}:", f"{new.get('title')}:", 1)


def _release_default(f: Finding, key: str, g: Fact | None, n: Fact | None) -> None:
    """A difference that exists only because one side relies on a default that changed at a
    known release (vocabulary `default_changed`): the other side's value is the old default,
    so its script may simply predate the change. Reported at info level, saying so."""
    changed = (vocab().get(key) or {}).get("default_changed") or {}
    if not changed or g is None or n is None:
        return
    for dflt, other in ((g, n), (n, g)):
        if dflt.origin != ORIGIN_DEFAULT or other.origin == ORIGIN_DEFAULT:
            continue
        fw = str(dflt.via or "").split(" ", 1)[0]
        c = changed.get(fw)
        if c and equal(normalize(c["before"], (vocab().get(key) or {}).get("type")), other.value):
            f.severity = "info"
            f.message += (f"; {fw}'s default was {show(other.value)} before {c['release']}: the difference comes "
                          f"only from the default, and the script setting it may be written for an older release")
            return


def _device_value(v: Any, patterns: list[str]) -> bool:
    s = str(v).strip().strip("'\"").lower()
    return any(fnmatch.fnmatchcase(s, p) for p in patterns)


def _device_mask(key: str, g: Fact | None, n: Fact | None) -> Masked | None:
    """trainer.device: cuda -> npu (or npu on the NPU side alone): the expected port (SD015)."""
    dev = load().section("device_port", {}) or {}
    if n is None or not dev or norm_name(key.rsplit(".", 1)[-1].split("[", 1)[0]) not in dev["names"]:
        return None
    if not _device_value(n.value, dev["npu"]):
        return None
    if g is not None and g.origin != ORIGIN_DEFAULT and not _device_value(g.value, dev["gpu"]):
        return None
    return Masked(rule=code("device-setting-port"), gpu=g.side() if g is not None else None, npu=n.side())


def _port_mask(key: str, g: Fact | None, n: Fact | None) -> Masked | None:
    dev = _device_mask(key, g, n)
    if dev is not None:
        return dev
    if g is None or n is None:
        return None
    gv, nv = str(g.value).lower(), str(n.value).lower()
    if key == "distributed_backend" and gv == "nccl" and nv in ("nccl", "hccl"):
        return Masked(rule=code("distributed-backend-port"), gpu=g.side(), npu=n.side())
    if key == "transformer_impl" and gv == "transformer_engine" and nv == "local":
        return Masked(rule=code("transformer-impl-port"), gpu=g.side(), npu=n.side())
    return None


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
    rule = code("config-reference-differs")
    return Finding(rule=rule, check="hyperparameters", severity=rs.severity(rule), key=key,
                   gpu=g.side() if g else None, npu=n.side() if n else None, message=msg)

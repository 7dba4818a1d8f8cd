"""Config files: YAML (safe loading) and JSON, with line numbers, as hyperparameter facts.

Every leaf is compared under its full dotted path (`actor_rollout_ref.actor.optim.lr`,
`optimizer.params.betas[0]`), never under its last segment alone; key order is ignored.
Paths the vocabulary knows become canonical keys: DeepSpeed paths in a DeepSpeed config
(train_micro_batch_size_per_gpu -> micro_batch_size, fp16.initial_scale_power p ->
initial_loss_scale 2**p, fp16/bf16.enabled -> params_dtype, ...), top-level Hugging Face /
LLaMA-Factory / accelerate keys (learning_rate, cutoff_len, flash_attn, bf16: true,
mixed_precision, ...). A key naming another config (deepspeed: ds.json,
deepspeed_config_file:, config:) is a reference the engine follows when the file exists.

Framework dialects (`dialects` sections of rules/*.yaml: verl, accelerate config, Hydra, ...)
are detected per file by their `detect` paths; a path a detected dialect maps becomes its
canonical key and the fact's `via` names the path and the dialect ("data.train_batch_size,
verl (Hydra overrides)"). Other paths go through vocabulary.path_key (framework columns, the
alias table, then the path's last segments): a path under a section that is not neutral
(critic.optim.lr) lands on its key as that section's setting (`meta["sectioned"]`), compared
with the same path on the other side and never hiding the key's own setting. Hydra specifics: a `defaults:` list is compared
by config group (`defaults.optimizer` = adamw), `${a.b}` is resolved within the file where it
can be, and a file that is a list of `a.b=c` strings (.hydra/overrides.yaml) is read as
command-line overrides.

JSON is read by the line-keeping loader in scriptdiff/inputs/jsonload.py; malformed input gives
one errors entry naming the line.
"""
from __future__ import annotations

import os
from typing import Any

from .. import budget
from ..budget import TOO_LARGE, Meter, TooLarge, note
from ..inputs.jsonload import JSONError, load_json  # noqa: F401 (JSONError: this reader's error type)
from ..model import RANK_CONFIG, Extract, Fact, InputError
from ..inputs.references import resolve
from ..ruleset.registry import dialects_for, referenced_kind
from ..ruleset.envmap import canonical, env_entry
from ..ruleset.rules import code
from ..ruleset.secrets import is_secret, is_secret_name, is_secret_value, is_structured, redact_text, secret_words, withheld
from ..ruleset.vocabulary import (canonical_path, convert, detect_dialects, dialect_path, dtype_switch, fits, is_neutral,
                                  normalize, path_key)
from ..inputs.yamlload import YAMLError, load

# DeepSpeed's own top-level keys: the first are its alone; the others (a model zoo's YAML has a
# `train_batch_size` of its own) mark a DeepSpeed config only two together
DS_OWN = {"train_micro_batch_size_per_gpu", "zero_optimization", "zero_allow_untested_optimizer", "wall_clock_breakdown"}
DS_SHARED = {"train_batch_size", "gradient_clipping", "steps_per_print"}


def is_deepspeed(data: dict) -> bool:
    """A DeepSpeed config: a top-level key DeepSpeed alone has, two it shares with other
    frameworks, or fp16/bf16 given as sections."""
    keys = set(data)
    if keys & DS_OWN or len(keys & DS_SHARED) >= 2:
        return True
    return any(isinstance(data.get(k), dict) for k in ("fp16", "bf16", "optimizer", "scheduler"))


def dotted(path: tuple) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


def leaves(data: Any, path: tuple = ()):
    if isinstance(data, dict):
        if not data and path:
            yield path, {}
        for k, v in data.items():
            yield from leaves(v, path + (k,))
    elif isinstance(data, list) and not {dict, list}.isdisjoint(map(type, data)):  # C speed on long lists
        for i, v in enumerate(data):
            yield from leaves(v, path + (i,))
    elif isinstance(data, list) and path and path[-1] == "betas":
        for i, v in enumerate(data):
            yield path + (i,), v
    else:
        yield path, data


def empty(src, fatal: bool = False) -> Extract | None:
    """The Extract of a config file with nothing in it (one error), else None."""
    if src.text.strip():
        return None
    return Extract(errors=[InputError(src.name, "empty file; nothing compared", fatal=fatal)])


def extract(src, ctx):
    text = src.text
    kind = "json" if src.suffix == ".json" else "yaml"
    ex = empty(src, fatal=True)
    if ex is not None:
        return ex
    ex = Extract()
    try:
        if kind == "json":
            data, lines = load_json(text)
        else:
            try:
                data, lines = load(text, documents=True)
            except YAMLError as e:
                raise JSONError(str(e).split(": ", 1)[-1] if str(e).startswith("line ") else str(e),
                                e.line or 1) from None
    except JSONError as e:
        ex.errors.append(InputError(src.name, f"not valid {kind.upper()}: {e}; not compared", fatal=True))
        return ex
    src_lines = text.splitlines()
    if kind == "yaml" and isinstance(data, list) and data and all(isinstance(x, str) and _override(x) for x in data):
        return _overrides(data, lines, src, src_lines, ex, ctx.root)
    if not isinstance(data, dict):
        ex.errors.append(InputError(src.name, f"top level of the {kind.upper()} file is not a mapping; not compared", fatal=True))
        return ex
    style = "deepspeed" if is_deepspeed(data) else "hf"
    dialects = [] if style == "deepspeed" else detect_dialects(dialects_for(kind), _paths(data))
    ex.frameworks |= dialect_defaults(dialects, "deepspeed" if style == "deepspeed" else "hf")
    if isinstance(data.get("defaults"), list):
        ex.facts.extend(_defaults(data["defaults"], lines, src, src_lines))
        data = {k: v for k, v in data.items() if k != "defaults"}
    big: list = []
    data = interpolate(data, big)
    too_large_notes(ex, big, lines)
    for path, value in leaves(data):
        if not path or value is TOO_LARGE:
            continue
        line = lines.get(path) or lines.get(path[:-1])
        facts = facts_for(path, value, style, src, line, src_lines, ex, ctx.root, dialects)
        for f in facts:  # where it is written in this file (`scriptdiff fix` edits it there)
            f.meta["cpath"] = list(path)
        ex.facts.extend(facts)
    return ex


def too_large_notes(ex: Extract, big: list, lines) -> None:
    """Settings too large to evaluate (budget.py), each one line of the input's account."""
    for path, why in big[:5]:
        ex.unread.append(note(dotted(path), why, lines.get(path)))
    if len(big) > 5:
        ex.unread.append(f"{len(big) - 5} more setting(s) too large to evaluate; not compared")


def dialect_defaults(dialects: list[dict], plain: str | None) -> set[str]:
    """Whose defaults apply to a file: its detected dialects' (`defaults:`), else `plain`."""
    named = [d for d in dialects if d.get("detect")]  # a dialect without `detect` applies to every file
    if not named:
        return {plain} if plain else set()
    return {d.get("defaults", "none") for d in named} - {"none"}


def _paths(data: dict) -> list[str]:
    """The dotted paths of a config, sections included (what dialects are detected by)."""
    out = []
    for path, _ in leaves(data):
        for i in range(1, len(path) + 1):
            if not isinstance(path[i - 1], int):
                out.append(dotted(path[:i]))
    return out


# --- Hydra ---------------------------------------------------------------------------------------

def _override(s: str) -> bool:
    """`a.b=c`, `+a=b`, `++a=b` or `~a` (one Hydra command-line override)."""
    body = s.strip().lstrip("+~")
    name = body.partition("=")[0]
    return bool(name) and ("=" in body or s.startswith("~")) and all(
        part and (part.replace("_", "").replace("-", "").replace("/", "").isalnum()) for part in name.split("."))


def _overrides(items: list[str], lines, src, src_lines, ex, root) -> Extract:
    """A YAML list of Hydra overrides (.hydra/overrides.yaml): read as the command line would be."""
    parsed = []
    for i, s in enumerate(items):
        if s.startswith("~"):
            continue  # a deletion: no value to compare
        name, _, value = s.lstrip("+").partition("=")
        parsed.append((name.strip(), _scalar(value.strip()), lines.get((i,))))
    dialects = [{**d, "_name": n} for n, d in dialects_for("shell").items()]  # as on a command line
    ex.frameworks.add("hf")
    for name, value, line in parsed:
        ex.facts.extend(facts_for(tuple(name.split(".")), value, "hf", src, line, src_lines, ex, root, dialects))
    return ex


def _scalar(v: str) -> Any:
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    return normalize(v, None)


def _defaults(items: list, lines, src, src_lines) -> list[Fact]:
    """A Hydra `defaults:` list, by config group: `- optimizer: adamw` -> defaults.optimizer =
    adamw, `- base` -> defaults.base = included; the position in the list is not compared."""
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            pairs = [(item, "included")] if item != "_self_" else []
        elif isinstance(item, dict):
            pairs = [(str(k).removeprefix("override ").strip(), v) for k, v in item.items()]
        else:
            continue
        for group, value in pairs:
            line = lines.get(("defaults", i, group)) or lines.get(("defaults", i))
            source = src_lines[line - 1].strip() if line and 0 < line <= len(src_lines) else ""
            out.append(Fact(key=f"defaults.{group}", value=value if not isinstance(value, list) else list(value),
                            path=src.name, line=line, source=source, rank=RANK_CONFIG, via="Hydra defaults list"))
    return out


def interpolate(data: Any, too_large: list | None = None) -> Any:
    """`${a.b}` resolved against the same config where it names a path of it (a value that is
    exactly one reference takes the referenced value and type); resolvers (`${oc.env:X}`),
    relative references and unknown paths stay as written.

    Each path is resolved once (a value referring to it N times reuses the result) and what
    is built is metered (budget.py): a value over budget, or built from one, becomes
    budget.TOO_LARGE and its path is appended to `too_large` (path, reason)."""
    flat = {dotted(p): v for p, v in leaves(data) if p}
    if not any(isinstance(v, str) and "${" in v for v in flat.values()):
        return data
    meter = Meter()
    done: dict[str, Any] = {}  # ref -> its resolved value (TOO_LARGE when over budget)
    why: dict[str, TooLarge] = {}

    def ref_value(ref: str, depth: int) -> Any:
        if ref not in done:
            done[ref] = flat[ref]  # a reference back to itself while resolving stays as written
            try:
                done[ref] = sub(flat[ref], depth + 1)
            except TooLarge as e:
                done[ref], why[ref] = TOO_LARGE, e
        return done[ref]

    def sub(v: Any, depth: int = 0) -> Any:
        if not isinstance(v, str) or "${" not in v or depth > budget.INTERPOLATION_DEPTH:
            return v
        s = v.strip()
        if s.startswith("${") and s.endswith("}") and s.count("${") == 1:
            ref = s[2:-1].strip()
            return ref_value(ref, depth) if ref in flat else v
        out, i = [], 0
        size = 0
        while i < len(v):
            j = v.find("${", i)
            k = v.find("}", j) if j >= 0 else -1
            if j < 0 or k < 0:
                out.append(v[i:])
                break
            ref = v[j + 2:k].strip()
            val = ref_value(ref, depth) if ref in flat else None
            if val is TOO_LARGE:
                raise why.get(ref) or TooLarge("it is built from a value too large to evaluate")
            piece = str(val) if val is not None and not isinstance(val, (dict, list)) else v[j:k + 1]
            size += j - i + len(piece)
            if size > meter.value_chars:
                raise TooLarge(f"more than {meter.value_chars:,} characters")
            out += (v[i:j], piece)
            i = k + 1
        meter.value(size, len(out))
        return "".join(out)

    def walk(x: Any, path: tuple) -> Any:
        if isinstance(x, dict):
            return {k: walk(v, path + (k,)) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v, path + (i,)) for i, v in enumerate(x)]
        try:
            return sub(x)
        except TooLarge as e:
            if too_large is not None:
                too_large.append((path, e))
            return TOO_LARGE

    return walk(data, ())


def facts_for(path: tuple, value: Any, style: str, src, line, src_lines, ex, root: str | None = None,
              dialects: list[dict] | None = None) -> list[Fact]:
    dp = dotted(path)
    last = str(path[-1]) if not isinstance(path[-1], int) else ""
    source = src_lines[line - 1].strip() if line and 0 < line <= len(src_lines) else ""

    def fact(key, val, via=None, meta=None):
        return Fact(key=key, value=val, path=src.name, line=line, source=source, rank=RANK_CONFIG,
                    via=via, meta={**(meta or {}), "written_key": dp})  # the report shows the user's spelling

    if any(is_secret_name(k) for k in path if isinstance(k, str)) and not is_structured(value):
        return []  # a credential (hub_token, wandb.api_key): never written out; a tensor path is a setting
    if source and secret_words(source):
        source = redact_text(source)
    if is_secret_value(value):  # a token under an innocent name: compared by fingerprint, never shown
        return [fact(dp, withheld(value), meta={"withheld": True})]
    var = env_entry(path)
    if var is not None and not isinstance(value, (list, dict)):  # env_vars: {NCCL_IB_HCA: ...}: an export
        key, role = canonical(var)
        val = "" if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
        meta = {"name": var, "role": role, "written_key": dp}
        if key != f"env:{var}":
            meta["mask"] = code("env-var-renamed")
        if is_secret(var, val):
            val, meta["withheld"] = withheld(val), True
        return [Fact(key=key, value=val, check="environment", path=src.name, line=line, source=source,
                     rank=RANK_CONFIG, meta=meta)]
    if last and referenced_kind(last, value) is not None:  # deepspeed: ds.json (rules/kinds.yaml `referenced`)
        ex.references.append((value, line, dp))
        exists = resolve(value, src.origin, root).path is not None
        return [fact(f"config:{dp}", os.path.basename(value),
                     meta={"reference": True, "exists": exists, "written": value, "force": True})]
    if isinstance(value, str) and value.strip().lower() == "auto" and style == "deepspeed":
        # HF fills "auto" from its own arguments: not a setting of this file
        return []
    # dtype switches
    if style == "deepspeed" and len(path) == 2 and path[0] in ("fp16", "bf16") and path[1] == "enabled":
        if value is True or str(value).lower() == "true":
            return [fact("params_dtype", str(path[0]), via=f"{path[0]}.enabled")]
        return []
    if style == "deepspeed" and dp == "fp16.initial_scale_power" and isinstance(value, int):
        return [fact("initial_loss_scale", float(2 ** value), via=f"2**{value} from fp16.initial_scale_power")]
    if style == "deepspeed" and dp == "fp16.loss_scale" and value in (0, 0.0):
        return []  # 0 = dynamic, DeepSpeed's default
    said = dtype_switch(last) if last and isinstance(value, bool) and all(is_neutral(x) for x in path[:-1]) else None
    if said is not None:  # fp16, pure_bf16, enable_half: a precision switch (vocabulary.dtype_switch)
        return [fact("params_dtype", said, via=dp)] if value else []
    hit = dialect_path(dp, dialects or [])
    sectioned = False
    if hit:
        key = hit[0]
    else:  # the framework columns, else the generic rule: the path's last segments (vocabulary.path_key)
        key, sectioned = path_key(dp, style, [], value=value) or (None, False)
    if key is not None and not hit and style != "deepspeed" and not fits(key, value):
        key = None  # a generic name holding something else (`data: [1, 2, ...]`): compared as written
    if key is None and style != "deepspeed":
        key = canonical_path(dp, "deepspeed", []) if dp.startswith(("optimizer.", "scheduler.", "zero_optimization.")) else None
        sectioned = False
    if key is None:
        return [fact(dp, normalize(value, None) if not isinstance(value, (list, dict)) else value)]
    conv = convert(key, value)
    if conv is None:
        return []
    key, val = conv
    via = f"{dp}, {hit[1]}" if hit else (None if key == dp else dp)
    meta = {"dialect": hit[1]} if hit else {}
    if sectioned:  # critic.optim.lr: lr, as the critic's own setting (compare.py slots)
        meta["sectioned"] = True
    return [fact(key, val, via=via, meta=meta or None)]

"""The hyperparameter vocabulary: the one service every reader and check asks about settings.

Everything here is a lookup in the rule packs' data (rules/vocabulary.yaml, rules/aliases.yaml
and the `dialects` sections), none of it a check:

- entries: `vocab()` (canonical key -> its entry: type, category, spellings, defaults),
  `entry(key)`, `key_type(key)`; `default_fact(key, frameworks)`, the framework default of a
  key a side did not set; `settings_in_name(kind, file name)`, what a config's name says
  (`from_name`: ds_z3_config.json is ZeRO stage 3);
- values: `normalize(value, type)` (a value as the vocabulary's type says it should be),
  `convert(key, raw)` (the `value_ports` of the keys whose spellings encode values
  differently: --bf16, torch_dtype, attn_implementation), `fits(key, value)`;
- spellings: `spelling_index()` (per framework column: megatron, hf, deepspeed, python, and
  the `aliases` column, the one table of generic names), `norm_name`, `canonical_flag`,
  `name_key` (one name, config suffixes dropped), `nested_key` / `path_key` (a nested name by
  its last segments, and whether it is a setting of a section that is not neutral),
  `canonical_path`, `lookup` (a name in a given column order), `category_key` (a dotted path
  outside the vocabulary takes the key its last segment names);
- meanings (issue 39): `meaning_key` (a name no spelling maps, by its words and its value's
  shape: rules/aliases.yaml `key_meanings`), `may_mean` (the cheap test of the words alone),
  `run_wide_keys` (params_dtype, load: never a section's setting), `names_component`,
  `device_named`/`names_npu` (values that differ only by the device they name);
- dialects, given the dialect entries that apply (the registry says which: registry.dialects_for):
  `dialect_path`, `dialect_title`, `detect_dialects`;
- how a message names a key: `written_name` ("gradient_checkpointing (recompute_granularity)");
- categories: `category(key)` and `category_named(name)`: the rule and title of a difference.
  A category names a rule; the rule's severity is the finding's (rules/*.yaml `rules:`).
  `is_cosmetic(key)`: a name outside the vocabulary that cannot change numerics (its words,
  `is_interval`); `same_place_elsewhere(a, b)`: two paths that name the same model or dataset
  in another place (never two models: a part naming a model by its size decides).

A path is looked up in this order: a framework dialect's paths, the framework columns, the
alias of its normalised name (top level), and for a nested path the spelling of its last
segments (`nested_key`): under neutral sections only it is the key's own setting, under any
other section a setting of that section (`sectioned`), compared slot by slot (compare.py); and
last, given the setting's value, the meaning of its name (`meaning_key`).
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..model import ORIGIN_DEFAULT, RANK_DEFAULT, Fact
from . import packregex
from .rules import RuleSet, derived, load

FRAMEWORK_COLUMNS = ("megatron", "hf", "deepspeed", "python", "aliases")
TRUE_WORDS = {"true", "yes", "on", "1", "enable", "enabled"}
FALSE_WORDS = {"false", "no", "off", "0", "disable", "disabled", "none", "null"}
_NUM_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_POW_RE = re.compile(r"^2\s*\*\*\s*(\d+)$")


# ---------------------------------------------------------------- entries

def vocab(rs: RuleSet | None = None) -> dict:
    """{canonical key: entry} from rules/vocabulary.yaml."""
    return (rs or load()).section("vocabulary", {}) or {}


def entry(key: str, rs: RuleSet | None = None) -> dict:
    """The key's vocabulary entry ({} for a key the vocabulary does not know)."""
    return vocab(rs).get(key) or {}


def key_type(key: str) -> str | None:
    """The key's value type (float, int, bool, str, list, dtype), None when unknown."""
    return entry(key).get("type")


def default_fact(key: str, frameworks: Iterable[str], rs: RuleSet | None = None,
                 versions: Mapping[str, str] | None = None) -> Fact | None:
    """The framework default for `key` on a side (whose defaults are `frameworks`'s) that did
    not set it, if one is known: that of the side's framework version where it is known
    (`versions`, framework -> version: a default that changed at a release, `default_changed`)."""
    e = vocab(rs).get(key)
    if not e or "default" not in e:
        return None
    defaults = e["default"] or {}
    for fw in sorted(frameworks):
        if fw in defaults:
            value, via, meta = defaults[fw], f"{fw} default", {}
            changed = (e.get("default_changed") or {}).get(fw)
            have = (versions or {}).get(fw)
            if changed and have and changed.get("version"):
                older = _older(have, str(changed["version"]))
                if older is not None:
                    meta = {"version": have}  # the side's own release: no guess about it
                    via = f"{fw} {have} default"
                    if older:
                        value = changed["before"]
            if fw in (e.get("default_confirms") or ()):  # stands only where it agrees (compare.py)
                meta = {**meta, "confirms": True}
            return Fact(key=key, value=normalize(value, e.get("type")), origin=ORIGIN_DEFAULT,
                        rank=RANK_DEFAULT, source="default", via=via, meta=meta)
    if "neutral" in defaults:  # what every framework defaults to (no accumulation, no split): it only
        # confirms an equal value the other side states, never stands against another
        return Fact(key=key, value=normalize(defaults["neutral"], e.get("type")), origin=ORIGIN_DEFAULT,
                    rank=RANK_DEFAULT, source="default", via="every framework's default", meta={"confirms": True})
    return None


def dialect_default(key: str, table, rs: RuleSet | None = None) -> Fact | None:
    """The default of a path no vocabulary key spells (`key`), for a side whose run is of a
    dialect that lists it (rules/<framework>.yaml `raw_defaults`): the side has a setting of
    that dialect (read through it, or under one of its `detect` prefixes). None otherwise."""
    rs = rs or load()
    for name, d in (rs.section("dialects", {}) or {}).items():
        raw = d.get("raw_defaults") or {}
        if key not in raw:
            continue
        title, prefixes = d.get("title", name), tuple(d.get("detect") or ())
        if not any((prefixes and k.startswith(prefixes)) or any(f.meta.get("dialect") == title for f in fs)
                   for k, fs in table.facts.items()):
            continue
        return Fact(key=key, value=normalize(raw[key], None), origin=ORIGIN_DEFAULT, rank=RANK_DEFAULT,
                    source="default", via=f"{title} default")
    return None


def _older(have: str, release: str) -> bool | None:
    """Whether version `have` precedes `release` (PEP 440), None when `have` is no version."""
    from packaging.version import InvalidVersion, Version
    try:
        return Version(have) < Version(release)
    except InvalidVersion:
        return None


@derived
def framework_versions(rs: RuleSet) -> dict:
    """rules/vocabulary.yaml `framework_versions`: framework -> {package, names}."""
    return rs.section("framework_versions", {}) or {}


def side_versions(facts: Iterable[Fact]) -> dict[str, str]:
    """The framework versions a side's facts state (`framework_versions`): the pkg: fact of a
    package list, a snapshot or a version file among its inputs, or a setting naming it."""
    out: dict[str, str] = {}
    srcs = framework_versions()
    for f in facts:
        for fw, src in srcs.items():
            pkg = src.get("package")
            if (pkg and f.key == f"pkg:{pkg}") or f.key in (src.get("names") or ()) \
                    or f.key in {f"env:{n.upper()}" for n in src.get("names") or ()}:
                v = str(f.value).strip().lstrip("=v")
                if v and v[0].isdigit():
                    out.setdefault(fw, v.split("+", 1)[0])
    return out


# ---------------------------------------------------------------- values

def to_number(v: Any) -> Any:
    """'1e-6' -> 1e-06, '8' -> 8, '2**32' -> 4294967296; anything else unchanged."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        s = v.strip().replace("_", "") if re.fullmatch(r"[\d_.eE+-]+", v.strip()) else v.strip()
        if _NUM_RE.match(s):
            if re.fullmatch(r"[+-]?\d+", s):
                return int(s)
            return float(s)
        m = _POW_RE.match(s)
        if m:
            return 2 ** int(m.group(1))
    return v


def to_bool(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    if isinstance(v, str):
        s = v.strip().strip("'\"").lower()
        if s in TRUE_WORDS:
            return True
        if s in FALSE_WORDS:
            return False
    return v


def normalize(value: Any, typ: str | None) -> Any:
    """A value as the vocabulary's type says it should be: typed and canonical."""
    if value is None:
        return None
    if typ == "bool":
        return to_bool(value)
    if typ in ("int", "float"):
        n = to_number(value)
        if typ == "float" and isinstance(n, int) and not isinstance(n, bool):
            return float(n)
        if typ == "int" and isinstance(n, float) and n.is_integer():
            return int(n)
        return n
    if typ == "list":
        if isinstance(value, (list, tuple)):
            return [to_number(x) for x in value]
        return value
    if typ == "str":
        return value.strip() if isinstance(value, str) else value
    # untyped: infer
    if isinstance(value, str):
        n = to_number(value)
        if n is not value:
            return n
        b = to_bool(value)
        if isinstance(b, bool) and value.strip().lower() in ("true", "false"):
            return b
    return value


@derived
def value_ports(rs: RuleSet) -> dict[str, dict[str, Any]]:
    """{key: {written value (lower case): canonical value}} from rules/vocabulary.yaml."""
    return rs.section("value_ports", {}) or {}


def convert(key: str, raw: Any) -> tuple[str, Any] | None:
    """Canonical (key, value) for spellings whose values are encoded differently.

    Returns None when the setting carries no value (e.g. `bf16: false`, which leaves the
    dtype to whatever else says it)."""
    port = value_ports().get(key)
    if port is not None:  # params_dtype, use_flash_attn (a bool reads as "true"/"false")
        s = str(raw).strip().strip("'\"").lower()
        return key, port.get(s, s)
    e = entry(key)
    value = normalize(raw, e.get("type"))
    if e.get("type") == "str" and isinstance(value, str) and value.lower() in ("true", "false"):
        value = value.lower() == "true"  # `--gradient_checkpointing True` and `gradient_checkpointing: true`
    return key, value


def fits(key: str, value: Any) -> bool:
    """Whether a config value can be a value of `key` (a name that looks like `data` but holds a
    long list of numbers is not the data path): numbers for int/float, a bool-like for bool,
    a string or a list of strings for str; anything for other types."""
    typ = key_type(key)
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


# ---------------------------------------------------------------- spellings

@derived
def spelling_index(rs: RuleSet) -> dict[str, dict[str, str]]:
    """{"megatron": {spelling: key}, "hf": ..., "deepspeed": ..., "python": ..., "aliases": ...}."""
    out: dict[str, dict[str, str]] = {fw: {} for fw in FRAMEWORK_COLUMNS}
    for key, e in vocab(rs).items():
        for fw in out:
            for s in e.get(fw, []) or []:
                out[fw].setdefault(str(s), key)
    return out


def norm_name(name: str) -> str:
    """A flag or key as the alias table spells it: no leading -, + or ~, lower case, _ for -."""
    return str(name).strip().lstrip("-+~").replace("-", "_").lower()


def lookup(name: str, order: Iterable[str] = ("megatron", "hf", "python", "aliases")) -> str | None:
    """The canonical key `name` spells in the first of these columns that has it, else `name`
    itself when it is a canonical key (no normalising: a keyword in code is spelled exactly)."""
    idx = spelling_index()
    for fw in order:
        k = idx[fw].get(name)
        if k is not None:
            return k
    return name if name in vocab() else None


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
    found = idx["aliases"].get(n)
    role, _, rest = n.partition("_")
    if found is None and rest and role in _trained_roles():  # actor_learning_rate: the trained model's lr
        found = canonical_flag(rest, prefer)
    return found


@derived
def _trained_roles(rs: RuleSet) -> frozenset[str]:
    return frozenset(rs.section("trained_roles", []) or [])


NO_VALUE = object()  # no value given: a name is looked up by its spellings only, never by its meaning


def canonical_path(path: str, style: str, dialects: Iterable[dict] = ()) -> str | None:
    """The canonical key of a config file's full dotted path when it is the key's own setting
    (a dialect's path, a top-level spelling, or a spelling under neutral sections only); None
    for a path under another section (see path_key for those). `dialects`: the dialect entries
    that apply (a config reader passes those it detected)."""
    hit = path_key(path, style, dialects)
    return hit[0] if hit is not None and not hit[1] else None


def path_key(path: str, style: str, dialects: Iterable[dict] = (), value: Any = NO_VALUE) -> tuple[str, bool] | None:
    """(canonical key, sectioned) of a config file's full dotted path: a dialect's path, the
    framework columns (a DeepSpeed config: its column only), else the generic rule of
    `nested_key` (a section that is an element of a list counts by its name:
    workers[0].engine.tensor_parallel_size), and, given the path's `value`, the
    meaning of its name (`meaning_key`). `sectioned`: the path sits under a section that is
    not neutral (critic.optim.lr): a setting of that section, compared with the same
    section's on the other side and never taken for the key's own setting."""
    hit = dialect_path(path, dialects)
    if hit is not None:
        return hit[0], False
    idx = spelling_index()
    if style == "deepspeed":
        key = idx["deepspeed"].get(path)
        return (key, False) if key is not None else None
    if "." not in path and "[" not in path:
        for fw in ("hf", "megatron"):
            if path in idx[fw]:
                return idx[fw][path], False
        key = name_key(path, prefer="hf") or meaning_key(path, value)
        return (key, False) if key is not None else None
    segments = path.split(".")
    if "[" in segments[-1]:
        return None  # an element of a list (betas[1]): no name of its own
    return nested_key([s.split("[", 1)[0] for s in segments], value=value)


@derived
def _generic_names(rs: RuleSet) -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...]]:
    g = rs.section("generic_names", {}) or {}
    return (frozenset(g.get("section_words") or ()), tuple(g.get("suffixes") or ()),
            tuple(g.get("section_suffixes") or ()))


def name_key(name: str, prefer: str = "hf") -> str | None:
    """The canonical key one name spells (a flag destination, a config key, a keyword in code):
    `canonical_flag`, else the name without one of rules/aliases.yaml `generic_names.suffixes`
    (`compile_cfg=True` names compile)."""
    key = canonical_flag(str(name), prefer)
    if key is not None:
        return key
    n = norm_name(name)
    for suffix in _generic_names()[1]:
        if n.endswith(suffix) and len(n) > len(suffix):
            key = canonical_flag(n[: -len(suffix)], prefer)
            if key is not None:
                return key
    return None


def nested_key(segments: Iterable[str], prefer: str = "hf", value: Any = NO_VALUE) -> tuple[str, bool] | None:
    """(canonical key, sectioned) that a nested name (a config path, `_C.SOLVER.BASE_LR`'s
    segments after the root) names by its last segments: the last one, else, when it only
    qualifies its section (`generic_names.section_words`: compile.enable, DATASETS.NAMES),
    the section's name; given the setting's `value`, a last segment no spelling maps is
    looked up by its meaning (`meaning_key`). `sectioned`: a section above it is not neutral
    (rules/aliases.yaml; `model_settings` is the section model). A key the whole run has one of
    (`run_wide_keys`: params_dtype, load) is never a section's setting: under a section that
    is not neutral such a name keeps its path (vae_settings.dtype is the VAE's)."""
    names = [norm_name(s) for s in segments]
    if not names or not all(names):
        return None
    words = _generic_names()[0]
    candidates = [len(names) - 1]
    if names[-1] in words and len(names) >= 2:
        candidates.append(len(names) - 2)
    for i in candidates:
        key = name_key(names[i], prefer)
        if key is None and i == len(names) - 1:
            key = meaning_key(names[i], value)
        if key is not None:
            sectioned = not all(is_neutral(s) for s in names[:i])
            if sectioned and key in run_wide_keys():
                return None
            return key, sectioned
    return None


@derived
def neutral_sections(rs: RuleSet) -> frozenset[str]:
    return frozenset(rs.section("neutral_sections", []) or [])


def is_neutral(section: str) -> bool:
    """A section whose keys mean what they mean at the top level (rules/aliases.yaml
    `neutral_sections`), also when named with one of `generic_names.section_suffixes`
    (model_settings, optimizer_args)."""
    name = norm_name(section)
    neutral = neutral_sections()
    if name in neutral:
        return True
    return any(name.endswith(x) and name[: -len(x)] in neutral for x in _generic_names()[2])


def section_name(callee: str, keyword: str) -> str:
    """A keyword of a config-like call read as a setting of the section the call names: the
    callee's words without a last one of `generic_names.section_suffixes` (LossOptions(mode=)
    is loss_mode, TrainArgs(epochs=) train_epochs); the keyword alone for another call."""
    ws = words(callee)
    tails = {x.strip("_") for x in _generic_names()[2]}
    if len(ws) < 2 or ws[-1] not in tails:
        return keyword
    return "_".join(ws[:-1] + [norm_name(keyword)])


@derived
def run_wide_keys(rs: RuleSet) -> frozenset[str]:
    """rules/aliases.yaml `run_wide_keys`: keys the whole run has one of (params_dtype, load)."""
    return frozenset(rs.section("run_wide_keys", []) or [])


# ---------------------------------------------------------------- keys by meaning (issue 39)

_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD_SPLIT_RE = re.compile(r"[^a-z0-9]+")


_QUALIFIED_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def words(name: str) -> list[str]:
    """A name's words: split at case changes (VaeConfig), `_`, `-`, `.` and any other
    non-alphanumeric character, lower case (`batch_size_per_device`: batch, size, per, device)."""
    return [w for w in _WORD_SPLIT_RE.split(_CAMEL_RE.sub("_", str(name)).lower()) if w]


@dataclass(frozen=True)
class Meaning:
    """One entry of rules/aliases.yaml `key_meanings`: a name whose words hold one word of each
    group of `need` and no word outside `need` and `allow` means `key`, given a value of shape
    `value`."""

    key: str
    need: tuple[frozenset[str], ...]
    allow: frozenset[str]
    value: str

    def fits_words(self, ws: Iterable[str]) -> bool:
        ws = set(ws)
        known = self.allow.union(*self.need)
        return bool(ws) and ws <= known and all(ws & group for group in self.need)


@derived
def meanings(rs: RuleSet) -> tuple[Meaning, ...]:
    return tuple(Meaning(key=e["key"], need=tuple(frozenset(g) for g in e["need"]),
                         allow=frozenset(e.get("allow") or ()), value=e["value"])
                 for e in rs.section("key_meanings", []) or [])


def may_mean(name: str) -> bool:
    """Whether a name's words fit an entry of `key_meanings` (its value still to be shaped):
    the cheap test a reader makes before it evaluates a value only a meaning would read."""
    ws = words(name)
    return any(m.fits_words(ws) for m in meanings())


def meaning_key(name: str, value: Any = NO_VALUE) -> str | None:
    """The key a name that no spelling maps means, by its words and its value's shape
    (rules/aliases.yaml `key_meanings`: `pretrained_weights_dir: /w/kestrel-7b` is load,
    `batch_per_device: 8` micro_batch_size, `trainer.epoch: 3` num_train_epochs); None
    when no entry fits both, or no value is given. Never a key the name's words do not say:
    a word outside an entry's lists (eval_batch_size_per_device) leaves the name its own."""
    if value is NO_VALUE or value is None:
        return None
    ws = words(name)
    for m in meanings():
        if m.fits_words(ws) and value_has_shape(value, m.value):
            return m.key
    return None


@derived
def _dtype_switches(rs: RuleSet) -> tuple[dict, frozenset]:
    d = rs.section("dtype_switches", {}) or {}
    return ({w: dt for dt, ws in (d.get("dtypes") or {}).items() for w in ws}, frozenset(d.get("words") or ()))


def dtype_switch(name: str) -> str | None:
    """The precision a switch's name turns on (rules/aliases.yaml `dtype_switches`: enable_half
    and pure_bf16 are fp16 and bf16), else None: one dtype word, every other word a switch word."""
    dtypes, allowed = _dtype_switches()
    ws = words(name)
    said = {dtypes[w] for w in ws if w in dtypes}
    if len(said) != 1 or sum(w in dtypes for w in ws) != 1 or not all(w in dtypes or w in allowed for w in ws):
        return None
    return next(iter(said))


def value_has_shape(value: Any, shape: str) -> bool:
    """Whether a setting's value (as read: a number, a bool, a string) has a `key_meanings`
    shape: path, file, name (one word or a path: a dataset's name), count, number, switch or
    level (a mixed-precision level as apex and MindSpore spell it: O0 to O3)."""
    if shape == "level":
        return isinstance(value, str) and len(value.strip()) == 2 and value.strip()[0] in "Oo" \
            and value.strip()[1] in "0123"
    if shape in ("count", "number"):
        n = value if isinstance(value, (int, float)) else to_number(value) if isinstance(value, str) else None
        if isinstance(n, bool) or not isinstance(n, (int, float)):
            return False
        return shape == "number" or (isinstance(n, int) and n > 0)
    if shape == "switch":
        if isinstance(value, bool):
            return True
        return isinstance(value, str) and bool(value.strip()) and _path_parts(value) is None and \
            not any(c.isspace() for c in value.strip()) and not isinstance(to_number(value), (int, float))
    if shape == "name":
        return isinstance(value, str) and bool(value.strip()) and not any(c.isspace() for c in value.strip()) \
            and not isinstance(to_number(value), (int, float)) and to_bool(value) not in (True, False)
    if shape in ("path", "file"):
        if not isinstance(value, str) or isinstance(to_number(value), (int, float)) or \
                to_bool(value) in (True, False):
            return False
        parts = _path_parts(value)
        if parts is None:
            return False
        return shape == "path" or _has_suffix(parts[-1])
    return False


def _has_suffix(part: str) -> bool:
    """A file name's part with a suffix of letters (model.safetensors, ckpt.pt; not v1.5)."""
    stem, dot, suffix = part.rpartition(".")
    return bool(stem and dot and suffix and suffix[0].isalpha() and suffix.isalnum())


@derived
def _components(rs: RuleSet) -> frozenset[str]:
    return frozenset(rs.section("components", []) or [])


def names_component(name: str) -> bool:
    """A section or a call named by a model component other than the model trained
    (rules/aliases.yaml `components`: VaeSettings, text_encoder_setup)."""
    return bool(set(words(name)) & _components())


@derived
def _interval_words(rs: RuleSet) -> tuple[frozenset[str], ...]:
    iw = rs.section("interval_words", {}) or {}
    return tuple(frozenset(iw.get(part) or ()) for part in ("actions", "periods", "counted", "counts"))


def is_interval(name: str) -> bool:
    """A name saying how often something besides training is done (rules/aliases.yaml
    `interval_words`: val_epochs, test_every, print_every_n_iters, visualize_every)."""
    actions, periods, counted, counts = _interval_words()
    ws = set(words(name))
    return bool((ws & actions and ws & periods) or (ws & counted and ws & counts))


@derived
def device_value_words(rs: RuleSet) -> tuple[frozenset[str], frozenset[str]]:
    """rules/aliases.yaml device_value_words: (the GPU's words, the NPU's words)."""
    dv = rs.section("device_value_words", {}) or {}
    return frozenset(dv.get("gpu") or ()), frozenset(dv.get("npu") or ())


def device_named(value: Any) -> tuple[str, ...] | None:
    """A value's words with each word naming a device read as "the device" (rules/aliases.yaml
    `device_value_words`): `grouped_triton` and `grouped_npu` are both (grouped, <device>); None for a
    value that is not a string or names no device."""
    if not isinstance(value, str):
        return None
    gpu, npu = device_value_words()
    ws = words(value)
    if not any(w in gpu or w in npu for w in ws):
        return None
    return tuple("<device>" if (w in gpu or w in npu) else w for w in ws)


def _without_device(ws: list[str], names: frozenset) -> tuple[str, ...]:
    """Words with every device word dropped, and a device word that begins a word (the GPU of
    `GPUStepWorker`, read as one word `gpustep`) cut off it, the longest that does (whatever the
    order of the set)."""
    out = []
    for w in ws:
        if w in names:
            continue
        head = max((d for d in names if w.startswith(d) and len(w) > len(d)), key=lambda d: (len(d), d), default=None)
        out.append(w[len(head):] if head else w)
    return tuple(out)


def same_but_device(a: Any, b: Any) -> bool:
    """Two qualified names (`pkg.worker.gpu_step_worker.GPUStepWorker` against
    `pkg.worker.npu.npu_step_worker.NPUStepWorker`) that name their own side's device, the first the
    GPU's and the second the NPU's, and are the same once the device's words are taken out: the
    NPU's class or module for the same role."""
    if not all(isinstance(x, str) and _QUALIFIED_RE.fullmatch(x) for x in (a, b)) or a == b:
        return False
    gpu, npu = device_value_words()
    wa, wb = words(a), words(b)
    if not (any(w in gpu or any(w.startswith(d) for d in gpu) for w in wa)
            and any(w in npu or any(w.startswith(d) for d in npu) for w in wb)):
        return False
    both = gpu | npu
    return _without_device(wa, both) == _without_device(wb, both)


def npu_variant(a: Any, b: Any) -> bool:
    """`b` is the name `a` with words naming the NPU added (`execute_train` and `execute_train_npu`,
    `Trainer` and `NpuTrainer`): the NPU's own version of what `a` names, `a` naming no device."""
    if not isinstance(a, str) or not isinstance(b, str) or device_named(a) is not None or not names_npu(b):
        return False
    _gpu, npu = device_value_words()
    wa = tuple(words(a))
    return bool(wa) and _without_device(words(b), npu) == wa


def names_npu(value: Any) -> bool:
    """A value with a word naming the NPU (npu, flash_npu)."""
    return isinstance(value, str) and bool(set(words(value)) & device_value_words()[1])


def category_key(key: str) -> str | None:
    """For a dotted path outside the vocabulary: the vocabulary key its last segment names."""
    if key in vocab() or ("." not in key):
        return None
    last = key.rsplit(".", 1)[-1].split("[", 1)[0]
    return canonical_flag(last, prefer="hf")


def settings_in_name(kind: str, name: str) -> list[tuple[str, Any]]:
    """(key, value) of each vocabulary key whose `from_name` reads a file of `kind` by its name:
    `ds_z3_config.json` (a DeepSpeed config that cannot be followed) says zero_stage 3."""
    base = str(name).replace("\\", "/").rsplit("/", 1)[-1].lower()
    out = []
    for key, e in vocab().items():
        fn = e.get("from_name")
        if not fn or fn.get("kind") != kind:
            continue
        m = packregex.compile(fn["pattern"]).search(base)  # a pack's expression: RE2, linear
        if m:
            out.append((key, normalize(m.group(1), e.get("type"))))
    return out


# ---------------------------------------------------------------- dialects

def dialect_path(path: str, dialects: Iterable[dict]) -> tuple[str, str] | None:
    """(canonical key, dialect title) when one of these dialects maps this exact path."""
    for d in dialects:
        key = (d.get("paths") or {}).get(path)
        if key is not None:
            return key, dialect_title(d)
    return None


def dialect_title(d: dict) -> str:
    return d.get("title") or d.get("_name", "")


def detect_dialects(candidates: Mapping[str, dict], paths: Iterable[str]) -> list[dict]:
    """Of the dialects that may apply (name -> entry: registry.dialects_for(kind)), those that
    apply to a config file with these dotted paths: those whose `detect` prefixes one of them
    (or names a top-level key), and those without `detect`."""
    paths = list(paths)
    out = []
    for name, d in candidates.items():
        det = d.get("detect")
        if det and not any(p == x or p.startswith(x if x.endswith(".") else x + ".") or p.startswith(x + "[")
                           for x in det for p in paths):
            continue
        out.append({**d, "_name": name})
    return out


# ---------------------------------------------------------------- how a message names a key

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


# ---------------------------------------------------------------- categories

@dataclass(frozen=True)
class Category:
    """A vocabulary category: the rule (its code) that reports a difference in one of its
    keys, and the title a message gives it. The severity is the rule's."""

    name: str
    rule: str
    title: str
    naming: bool = False  # its settings may name things (paths, runs) rather than set numerics


def category_named(name: str, rs: RuleSet | None = None) -> Category:
    """The category called `name` (`other` for a name the vocabulary does not define)."""
    cats = (rs or load()).section("categories", {}) or {}
    c = cats.get(name)
    if c is None:
        name, c = "other", cats["other"]
    return Category(name=name, rule=c["rule"], title=c.get("title", "setting"), naming=bool(c.get("naming")))


def naming_rules(rs: RuleSet | None = None) -> frozenset:
    """The rule codes of the categories marked `naming` (rules/vocabulary.yaml)."""
    cats = (rs or load()).section("categories", {}) or {}
    return frozenset(c["rule"] for c in cats.values() if c.get("naming"))


def category(key: str, rs: RuleSet | None = None) -> Category:
    """The category of a difference in `key` (`other` for a key outside the vocabulary)."""
    return category_named(entry(key, rs).get("category", "other"), rs)


@derived
def _cosmetic_patterns(rs: RuleSet) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(patterns of whole dotted paths from the dialects, last-segment names, section names)."""
    cos = rs.section("cosmetic_names", {}) or {}
    paths = tuple(p.lower() for d in (rs.section("dialects", {}) or {}).values() for p in d.get("cosmetic") or [])
    return paths, tuple(cos.get("names") or ()), tuple(cos.get("sections") or ())


def is_cosmetic(key: str, dialects: bool = True) -> bool:
    """A key outside the vocabulary whose name says it cannot change numerics (rules/aliases.yaml
    cosmetic_names, a dialect's `cosmetic` paths, or cosmetic_words: a place word with an
    output word and no input word, work_dir, save_tb_folder). `dialects=False`: a name in code,
    which no framework's config paths describe (accelerate's gpu_ids is not a script's GPU_IDS)."""
    paths, names, sections = _cosmetic_patterns()
    k = key.lower()
    if dialects and any(fnmatch.fnmatchcase(k, p) for p in paths):
        return True
    segs = [norm_name(s.split("[", 1)[0]) for s in k.split(".")]
    segs = [s for s in segs if s]
    if not segs:
        return False
    if any(fnmatch.fnmatchcase(segs[-1], p) for p in names):
        return True
    if any(fnmatch.fnmatchcase(x, p) for s in segs[:-1] for x in (s, s.rsplit("_", 1)[-1]) for p in sections):
        return True  # the section of a profiler, a logger: global_profiler.tool, train_logger.level
    if is_interval(segs[-1]):  # val_epochs, test_every: how often, not what
        return True
    if any(names_component(s) for s in segs[:-1]):
        return False  # text_encoder_setup.ckpt_file: a component's files are read, not written
    places, outputs, inputs, quantities = _cosmetic_words()
    ws = set(segs[-1].split("_"))
    if ws & outputs and ws & quantities and not ws - outputs - quantities:
        return True  # how many of an output are kept, or whether it is written: max_ckpt_num, use_tensorboard
    return bool(ws & places and ws & outputs and not ws & inputs)


@derived
def _cosmetic_words(rs: RuleSet) -> tuple[frozenset, frozenset, frozenset, frozenset]:
    cw = rs.section("cosmetic_words", {}) or {}
    return tuple(frozenset(cw.get(part) or ())  # type: ignore[return-value]
                 for part in ("places", "outputs", "inputs", "quantities"))


def _path_parts(v: Any) -> list[str] | None:
    """The components of a value shaped like a path (a separator, no spaces, not a URL with a
    query), else None."""
    if not isinstance(v, str):
        return None
    s = v.strip().strip("'\"")
    if not s or any(c.isspace() for c in s) or ("/" not in s and "\\" not in s) or "?" in s:
        return None
    parts = [p for p in s.replace("\\", "/").split("/") if p and p != "."]
    return parts or None


def same_place_elsewhere(a: Any, b: Any) -> tuple[str, str, str] | None:
    """Two paths that name the same thing in another place: (the shared tail, a's prefix, b's
    prefix) when their final components agree up to one that names something (not in
    rules/aliases.yaml `path_places.generic`: /data/models/Qwen2.5-7B and /home/ma-user/work/
    models/Qwen2.5-7B share models/Qwen2.5-7B) and their prefixes differ; None otherwise (a
    different model, or a tail of generic names only: /a/exp1/checkpoint, /b/exp2/checkpoint)."""
    pa, pb = _path_parts(a), _path_parts(b)
    if pa is None or pb is None or pa == pb:
        return None
    generic = tuple(str(g).lower() for g in (load().section("path_places", {}) or {}).get("generic") or ())
    n = _shared_tail(pa, pb)
    tail = pa[len(pa) - n:]

    def names_something(part: str) -> bool:
        stem = part.lower().split(".", 1)[0] if "." in part.lstrip(".") else part.lower()
        return not any(fnmatch.fnmatchcase(stem, g) for g in generic)

    if not tail or not any(names_something(t) for t in tail):
        return None
    deepest = next(t for t in reversed(tail) if names_something(t))
    if not any(c.isdigit() for c in deepest):  # proj.bin names no model by itself: the part above does
        above = {p[len(p) - n - 1] if len(p) > n else "" for p in (pa, pb)}
        if len(above) > 1 and any(_sized(x) for x in above):
            return None  # kestrel-13b/proj.bin against kestrel-7b/proj.bin: another model
    return "/".join(tail), "/".join(pa[:len(pa) - n]) or ".", "/".join(pb[:len(pb) - n]) or "."


def _shared_tail(pa: list[str], pb: list[str]) -> int:
    """How many final components two paths share."""
    n = 0
    while n < min(len(pa), len(pb)) and pa[-1 - n] == pb[-1 - n]:
        n += 1
    return n


def path_prefixes(a: Any, b: Any) -> tuple[str, str] | None:
    """(a's prefix, b's prefix) of two paths that end alike, whatever their shared tail names
    (`/data/x/dataset` and `/root/y/dataset`: ("data/x", "root/y")); None when they are no paths,
    share no final component or are the same path. The prefixes are same_place_elsewhere's."""
    pa, pb = _path_parts(a), _path_parts(b)
    if pa is None or pb is None or pa == pb:
        return None
    n = _shared_tail(pa, pb)
    if not n:
        return None
    return "/".join(pa[:len(pa) - n]) or ".", "/".join(pb[:len(pb) - n]) or "."


@derived
def weights_words(rs: RuleSet) -> frozenset[str]:
    """rules/aliases.yaml `path_places.weights_words`: words of a name that says it names weights."""
    return frozenset((rs.section("path_places", {}) or {}).get("weights_words") or ())


def _sized(part: str) -> bool:
    """A path part naming a model by its size (rules/aliases.yaml `path_places.model_sizes`:
    Kestrel-3-8B, Kestrel-1.3B, opt-350m)."""
    sizes = tuple((load().section("path_places", {}) or {}).get("model_sizes") or ())
    return any(fnmatch.fnmatchcase(w, p) for w in re.split(r"[-_.]", part.lower()) for p in sizes)

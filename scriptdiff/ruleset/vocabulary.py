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
- dialects, given the dialect entries that apply (the registry says which: registry.dialects_for):
  `dialect_path`, `dialect_title`, `detect_dialects`;
- how a message names a key: `written_name` ("gradient_checkpointing (recompute_granularity)");
- categories: `category(key)` and `category_named(name)`: the rule and title of a difference.
  A category names a rule; the rule's severity is the finding's (rules/*.yaml `rules:`).
  `is_cosmetic(key)`: a name outside the vocabulary that cannot change numerics (its words);
  `same_place_elsewhere(a, b)`: two paths that name the same model or dataset in another place.

A path is looked up in this order: a framework dialect's paths, the framework columns, the
alias of its normalised name (top level), and for a nested path the spelling of its last
segments (`nested_key`): under neutral sections only it is the key's own setting, under any
other section a setting of that section (`sectioned`), compared slot by slot (compare.py).
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
            return Fact(key=key, value=normalize(value, e.get("type")), origin=ORIGIN_DEFAULT,
                        rank=RANK_DEFAULT, source="default", via=via, meta=meta)
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
    return idx["aliases"].get(n)


def canonical_path(path: str, style: str, dialects: Iterable[dict] = ()) -> str | None:
    """The canonical key of a config file's full dotted path when it is the key's own setting
    (a dialect's path, a top-level spelling, or a spelling under neutral sections only); None
    for a path under another section (see path_key for those). `dialects`: the dialect entries
    that apply (a config reader passes those it detected)."""
    hit = path_key(path, style, dialects)
    return hit[0] if hit is not None and not hit[1] else None


def path_key(path: str, style: str, dialects: Iterable[dict] = ()) -> tuple[str, bool] | None:
    """(canonical key, sectioned) of a config file's full dotted path: a dialect's path, the
    framework columns (a DeepSpeed config: its column only), else the generic rule of
    `nested_key`. `sectioned`: the path sits under a section that is not neutral
    (critic.optim.lr): a setting of that section, compared with the same section's on the
    other side and never taken for the key's own setting."""
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
        key = name_key(path, prefer="hf")
        return (key, False) if key is not None else None
    if "[" in path:
        return None
    return nested_key(path.split("."))


@derived
def _generic_names(rs: RuleSet) -> tuple[frozenset[str], tuple[str, ...]]:
    g = rs.section("generic_names", {}) or {}
    return frozenset(g.get("section_words") or ()), tuple(g.get("suffixes") or ())


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


def nested_key(segments: Iterable[str], prefer: str = "hf") -> tuple[str, bool] | None:
    """(canonical key, sectioned) that a nested name (a config path, `_C.SOLVER.BASE_LR`'s
    segments after the root) names by its last segments: the last one, else, when it only
    qualifies its section (`generic_names.section_words`: compile.enable, DATASETS.NAMES),
    the section's name. `sectioned`: a section above it is not neutral (rules/aliases.yaml)."""
    names = [norm_name(s) for s in segments]
    if not names or not all(names):
        return None
    words = _generic_names()[0]
    candidates = [len(names) - 1]
    if names[-1] in words and len(names) >= 2:
        candidates.append(len(names) - 2)
    neutral = neutral_sections()
    for i in candidates:
        key = name_key(names[i], prefer)
        if key is not None:
            return key, any(s not in neutral for s in names[:i])
    return None


@derived
def neutral_sections(rs: RuleSet) -> frozenset[str]:
    return frozenset(rs.section("neutral_sections", []) or [])


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


def category_named(name: str, rs: RuleSet | None = None) -> Category:
    """The category called `name` (`other` for a name the vocabulary does not define)."""
    cats = (rs or load()).section("categories", {}) or {}
    c = cats.get(name)
    if c is None:
        name, c = "other", cats["other"]
    return Category(name=name, rule=c["rule"], title=c.get("title", "setting"))


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
    if any(fnmatch.fnmatchcase(s, p) for s in segs[:-1] for p in sections):
        return True
    places, outputs, inputs = _cosmetic_words()
    words = set(segs[-1].split("_"))
    return bool(words & places and words & outputs and not words & inputs)


@derived
def _cosmetic_words(rs: RuleSet) -> tuple[frozenset, frozenset, frozenset]:
    cw = rs.section("cosmetic_words", {}) or {}
    return tuple(frozenset(cw.get(part) or ()) for part in ("places", "outputs", "inputs"))  # type: ignore[return-value]


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
    n = 0
    while n < min(len(pa), len(pb)) and pa[-1 - n] == pb[-1 - n]:
        n += 1
    tail = pa[len(pa) - n:]

    def names_something(part: str) -> bool:
        stem = part.lower().split(".", 1)[0] if "." in part.lstrip(".") else part.lower()
        return not any(fnmatch.fnmatchcase(stem, g) for g in generic)

    if not tail or not any(names_something(t) for t in tail):
        return None
    return "/".join(tail), "/".join(pa[:len(pa) - n]) or ".", "/".join(pb[:len(pb) - n]) or "."

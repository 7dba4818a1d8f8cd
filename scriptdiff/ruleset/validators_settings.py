"""The settings' sections of the rule packs: the vocabulary (rules/vocabulary.yaml), the keys
`hparams` lists first (rules/hparams.yaml), the names of rules/aliases.yaml and the
environment-variable table (rules/environment.yaml); their schemas and validators
(scriptdiff/ruleset/rule_validators.py says how sections are declared).
"""
from __future__ import annotations


from packaging.version import InvalidVersion, Version

from . import packregex
from .packschema import NAMES, Any, Bool, Enum, ListOf, Name, Num, OneOf, Record, Str, Table
from .rulepack import RuleSet, section, validator
from .validators_common import CODE, FRAMEWORKS, TYPES, is_lower


# ------------------------------------------------------------------ rules/vocabulary.yaml

section("categories", Table(Record(
    {"rule": CODE, "title": Str(), "naming": Bool()}, required=("rule",), need="the rule its differences are",
    gone={"severity": "a category only names its rule: the severity is the rule's, written once in its "
                      "rules: catalogue"})))
ALIAS = Name("a normalised name (lower case, _ for -, no dots: a dotted path belongs to a dialect)",
             test=lambda a: is_lower(a) and "-" not in a and "." not in a)
# a pack may add spellings to a shipped key (its lists extend): once=False
section("vocabulary", Table(Record(
    {"category": Name(), "type": Enum(*TYPES), **{fw: NAMES for fw in (*FRAMEWORKS, "python")},
     "aliases": ListOf(ALIAS), "default": Table(Any()), "default_confirms": ListOf(Name()), "values": Any(), "doc": Str(), "follows": Bool(),
     "default_changed": Table(Record({"release": Name(), "version": Name(), "before": Any()},
                                     required=("release", "before"), need="{release: R, before: V}")),
     "from_name": Record({"kind": Name(), "pattern": Str("a regular expression with one group", nonempty=True)},
                         required=("kind", "pattern"), need="{kind: K, pattern: P}")},
    required=("category", "type"),
    gone={"other": "`other` spellings are gone: a generic name goes into `aliases`, a framework's dotted "
                   "path into its dialect (rules/<framework>.yaml)"}), once=False))
section("framework_versions", Table(Record({"package": Name(), "names": NAMES})))
section("value_ports", Table(Table(
    OneOf(Str(), Bool(), Num(), expect="a string, a boolean or a number"),
    key=Str("a lower-case string (quote yes/no/true/false/null)", nonempty=True, test=is_lower),
    nonempty=True, need="written values mapped to canonical values"), once=False))


@validator
def check_vocabulary(rs: RuleSet) -> None:
    """Categories name known rule codes; every key names a known category; a spelling maps to
    one key; default_changed and default_confirms name frameworks with a default."""
    rs.conform("categories", "vocabulary")
    cats = rs.section("categories")
    voc = rs.section("vocabulary")
    if voc is None and cats is None:
        return
    if cats is None or voc is None:
        raise rs.error(("vocabulary" if voc is None else "categories",),
                       "'categories' and 'vocabulary' must both be given")
    for name, cat in cats.items():
        if cat["rule"] not in rs.rules:
            raise rs.error(("categories", name, "rule"), f"{cat['rule']!r} is not a known rule code")
        rule = rs.rules[cat["rule"]]
        if rule.kind != "finding" or rule.check != "hyperparameters":
            raise rs.error(("categories", name, "rule"), f"{rule.code} is not a finding of the hyperparameters check")
    if "other" not in cats:
        raise rs.error(("categories",), "categories need 'other', the category of a key outside the vocabulary")
    seen: dict[str, str] = {}
    for key, entry in voc.items():
        if entry["category"] not in cats:
            raise rs.error(("vocabulary", key, "category"), f"unknown category {entry['category']!r} "
                                                            f"(categories: {', '.join(cats)})")
        for fw in (*FRAMEWORKS, "aliases"):
            for i, spelling in enumerate(entry.get(fw) or []):
                tag = f"{fw}:{spelling}"
                if seen.get(tag, key) != key:
                    raise rs.error(("vocabulary", key, fw, i), f"spelling {tag} maps to both {seen[tag]} and {key}")
                seen[tag] = key
        for fw in [*(entry.get("default_changed") or {}), *(entry.get("default_confirms") or ())]:
            if fw not in (entry.get("default") or {}):
                raise rs.error(("vocabulary", key, "default_changed", fw), "names a framework without a default")
        for fw, c in (entry.get("default_changed") or {}).items():
            if "version" in c:
                try:
                    Version(str(c["version"]))
                except InvalidVersion:
                    raise rs.error(("vocabulary", key, "default_changed", fw, "version"),
                                   f"{c['version']!r} is not a PEP 440 version") from None
        fn = entry.get("from_name")
        if fn is not None:
            kinds = rs.section("kinds") or {}
            if kinds and fn["kind"] not in kinds:
                raise rs.error(("vocabulary", key, "from_name", "kind"), f"{fn['kind']!r} is not a known kind")
            try:
                groups = packregex.compile(fn["pattern"]).groups
            except packregex.PatternError as e:
                raise rs.error(("vocabulary", key, "from_name", "pattern"), str(e)) from None
            if groups != 1:
                raise rs.error(("vocabulary", key, "from_name", "pattern"), "needs exactly one group (the value)")


@validator
def check_value_ports(rs: RuleSet) -> None:
    """`value_ports:`: per vocabulary key, written value -> canonical value."""
    rs.conform("value_ports")
    voc = rs.section("vocabulary") or {}
    for key in rs.section("value_ports") or {}:
        if key not in voc:
            raise rs.error(("value_ports", key), f"{key!r} is not a vocabulary key")

# ------------------------------------------------------------------ rules/hparams.yaml

section("hparams_table", ListOf(Name("a vocabulary key")))


@validator
def check_hparams_table(rs: RuleSet) -> None:
    """`hparams_table:` (rules/hparams.yaml): the keys `scriptdiff hparams` lists first are vocabulary keys."""
    rs.conform("hparams_table")
    voc = rs.section("vocabulary") or {}
    for i, key in enumerate(rs.section("hparams_table") or ()):
        if voc and key not in voc:
            raise rs.error(("hparams_table", i), f"{key!r} is not a vocabulary key")


# ------------------------------------------------------------------ rules/environment.yaml

section("env_map", Record(
    {"pairs": Table(Name(), expect="a mapping GPU name -> NPU name"), "value_equivalents": Table(ListOf(NAMES)),
     **{lst: NAMES for lst in ("same_on_npu", "npu_tuning", "gpu_tuning", "npu_precision", "gpu_precision",
                               "determinism", "search_paths", "sections")}},
    required=("pairs",), need="a 'pairs' mapping GPU name -> NPU name"))


@validator
def check_env_map(rs: RuleSet) -> None:
    rs.conform("env_map")
    env = rs.section("env_map")
    if env is None:
        return
    onto: dict[str, str] = {}
    for gpu, npu in env["pairs"].items():
        if npu in onto:
            raise rs.error(("env_map", "pairs", gpu), f"{gpu} and {onto[npu]} both map onto {npu}")
        onto[npu] = gpu

# ------------------------------------------------------------------ rules/aliases.yaml

LOWER = Name("a lower-case pattern", test=is_lower)
section("neutral_sections", ListOf(Name("a lower-case section name without dots",
                                        test=lambda x: is_lower(x) and "." not in x)))
section("cosmetic_names", Record({"names": ListOf(LOWER), "sections": ListOf(LOWER)}))
section("cosmetic_words", Record({part: ListOf(Name("a lower-case word", test=lambda x: is_lower(x) and "_" not in x))
                                  for part in ("places", "outputs", "inputs", "quantities")}))
section("path_places", Record({"generic": ListOf(LOWER), "model_sizes": ListOf(LOWER), "weights_words": ListOf(LOWER)}))
SUFFIX = Name("a lower-case suffix starting with _", test=lambda x: is_lower(x) and x.startswith("_"))
section("generic_names", Record({
    "section_words": ListOf(Name("a lower-case word", test=lambda x: is_lower(x) and "." not in x)),
    "suffixes": ListOf(SUFFIX), "section_suffixes": ListOf(SUFFIX)}))
WORD = Name("a lower-case word (letters and digits)", test=lambda x: x.isalnum() and x == x.lower())
WORDS = ListOf(WORD)
section("run_wide_keys", ListOf(Name("a vocabulary key")))
section("key_meanings", ListOf(Record(
    {"key": Name("a vocabulary key"), "need": ListOf(ListOf(WORD, nonempty=True), nonempty=True), "allow": WORDS,
     "value": Enum("path", "file", "name", "count", "number", "switch", "level")},
    required=("key", "need", "value"), need="{key: K, need: [[words]], value: SHAPE}")))
section("interval_words", Record({part: WORDS for part in ("actions", "periods", "counted", "counts")}))
section("components", WORDS)
section("dtype_switches", Record({"dtypes": Table(WORDS, key=Enum("fp16", "bf16")), "words": WORDS},
                                 required=("dtypes", "words"), need="dtypes (fp16, bf16: their words) and words"))
section("trained_roles", WORDS)
section("device_value_words", Record({side: ListOf(WORD, nonempty=True) for side in ("gpu", "npu")},
                                     required=("gpu", "npu"), need="non-empty word lists gpu and npu"))
section("device_port", Record({side: ListOf(LOWER, nonempty=True) for side in ("names", "gpu", "npu")},
                              required=("names", "gpu", "npu"), need="non-empty lower-case lists names, gpu and npu"))


@validator
def check_meanings(rs: RuleSet) -> None:
    """run_wide_keys and key_meanings name vocabulary keys; a meaning's word is in one list
    only; device_value_words needs its mask rule (device-named-value-port) and names no word
    on both sides."""
    rs.conform("run_wide_keys", "key_meanings", "interval_words", "components", "trained_roles", "device_value_words",
               "dtype_switches")
    voc = rs.section("vocabulary") or {}
    for i, key in enumerate(rs.section("run_wide_keys") or ()):
        if voc and key not in voc:
            raise rs.error(("run_wide_keys", i), f"{key!r} is not a vocabulary key")
    for i, m in enumerate(rs.section("key_meanings") or ()):
        if voc and m["key"] not in voc:
            raise rs.error(("key_meanings", i, "key"), f"{m['key']!r} is not a vocabulary key")
        seen: set[str] = set()
        for g, group in enumerate(m["need"]):
            for w in group:
                if w in seen:
                    raise rs.error(("key_meanings", i, "need", g), f"{w!r} is in two groups of need")
                seen.add(w)
        for a, w in enumerate(m.get("allow") or ()):
            if w in seen:
                raise rs.error(("key_meanings", i, "allow", a), f"{w!r} is in need already")
    dv = rs.section("device_value_words")
    if dv is not None:
        if not any(r.name == "device-named-value-port" and r.kind == "mask" for r in rs.rules.values()):
            raise rs.error(("device_value_words",), "device_value_words needs the mask rule device-named-value-port")
        for i, w in enumerate(dv["npu"]):
            if w in dv["gpu"]:
                raise rs.error(("device_value_words", "npu", i), f"{w!r} names both devices")


@validator
def check_aliases(rs: RuleSet) -> None:
    """neutral_sections (names), cosmetic_names (names and sections patterns), device_port
    (names, and the device families of rules/devices.yaml each side's value may name; its mask
    rule is named device-setting-port), generic_names (section words that spell no vocabulary
    key, suffixes)."""
    rs.conform("neutral_sections", "cosmetic_names", "device_port", "generic_names", "cosmetic_words", "path_places",
               "devices")
    spelled = {str(x) for e in (rs.section("vocabulary") or {}).values() for fw in (*FRAMEWORKS, "aliases")
               for x in e.get(fw) or []}
    for i, word in enumerate((rs.section("generic_names") or {}).get("section_words") or []):
        if word in spelled:  # a section word names no setting of its own (compile.enable names compile)
            raise rs.error(("generic_names", "section_words", i), f"{word!r} is a spelling of a vocabulary key")
    if rs.section("device_port") is not None and not any(
            r.name == "device-setting-port" and r.kind == "mask" for r in rs.rules.values()):
        raise rs.error(("device_port",), "device_port needs the mask rule device-setting-port")
    families = ((rs.section("devices") or {}).get("families") or {})
    for side in ("gpu", "npu"):
        for i, fam in enumerate((rs.section("device_port") or {}).get(side) or ()):
            if families and fam not in families:  # device names are written once, in their family
                raise rs.error(("device_port", side, i), f"{fam!r} is not a device family ({', '.join(families)})")

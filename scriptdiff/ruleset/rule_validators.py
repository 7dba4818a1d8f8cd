"""The data sections of the rule packs: each one's schema, and the validators of what a schema
cannot say (registered with rulepack.validator).

A section's shape is declared once, as data, in scriptdiff.ruleset.packschema's small language
(`section(name, schema)`); one checker walks it and reports the node that does not fit at
its own file and line (`rules/shell.yaml:14: launchers.entries[2].commands: expected a list
of names (got 'orbit')`). What needs the whole rule set stays code, below each schema: a rule
code a section names must exist, a kind a dialect names must be declared, a spelling maps to
one key, versions parse and are sorted. Those report at the line of the node too
(`rs.error(path, message)`). A module that adds a section adds its schema and validator here.
"""
from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from ..model import SEVERITIES
from . import secret_shapes
from .ascend_version import parse_cann
from .packschema import NAMES, Any, Bool, Enum, Int, ListOf, Name, Null, Num, OneOf, Record, Spec, Str, Table
from .rulepack import RuleSet, section, validator

TYPES = ("bool", "dtype", "float", "int", "list", "str")
FRAMEWORKS = ("megatron", "hf", "deepspeed")
SEVERITY = Enum(*SEVERITIES)
CODE = Name("a rule code (SD123)")


def _lower(x: str) -> bool:
    return x == x.lower()


# ------------------------------------------------------------------ rules/vocabulary.yaml

section("categories", Table(Record(
    {"rule": CODE, "title": Str()}, required=("rule",), need="the rule its differences are",
    gone={"severity": "a category only names its rule: the severity is the rule's, written once in its "
                      "rules: catalogue"})))
ALIAS = Name("a normalised name (lower case, _ for -, no dots: a dotted path belongs to a dialect)",
             test=lambda a: _lower(a) and "-" not in a and "." not in a)
# a pack may add spellings to a shipped key (its lists extend): once=False
section("vocabulary", Table(Record(
    {"category": Name(), "type": Enum(*TYPES), **{fw: NAMES for fw in (*FRAMEWORKS, "python")},
     "aliases": ListOf(ALIAS), "default": Table(Any()), "values": Any(), "doc": Str(),
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
    key=Str("a lower-case string (quote yes/no/true/false/null)", nonempty=True, test=_lower),
    nonempty=True, need="written values mapped to canonical values"), once=False))


@validator
def check_vocabulary(rs: RuleSet) -> None:
    """Categories name known rule codes; every key names a known category; a spelling maps to
    one key; default_changed names frameworks with a default."""
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
        for fw in entry.get("default_changed") or {}:
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
                groups = re.compile(fn["pattern"]).groups
            except re.error as e:
                raise rs.error(("vocabulary", key, "from_name", "pattern"), f"not a regular expression: {e}") from None
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


# ------------------------------------------------------------------ rules/environment.yaml

section("env_map", Record(
    {"pairs": Table(Name(), expect="a mapping GPU name -> NPU name"), "value_equivalents": Table(ListOf(NAMES)),
     **{lst: NAMES for lst in ("same_on_npu", "npu_tuning", "gpu_tuning", "npu_precision", "gpu_precision",
                               "determinism", "search_paths")}},
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


# ------------------------------------------------------------------ rules/libraries.yaml

section("library_checks", Record(
    {"key_packages": NAMES,
     "counterparts": ListOf(Record({"gpu": Name(), "npu": Name(), "mask": CODE, "required": Bool(), "why": Str(),
                                   "also_gpu": NAMES},
                                   required=("gpu", "npu", "mask"))),
     "npu_local_tags": Table(Name()), "platform_packages": Record({"gpu": NAMES, "npu": NAMES}),
     "conda_names": Table(OneOf(Name(), Null(), expect="a package name or null"))},
    required=("key_packages",)))


@validator
def check_library_checks(rs: RuleSet) -> None:
    rs.conform("library_checks")
    for i, cp in enumerate((rs.section("library_checks") or {}).get("counterparts") or []):
        if cp["mask"] not in rs.rules:
            raise rs.error(("library_checks", "counterparts", i, "mask"),
                           f"counterpart {cp['gpu']} <-> {cp['npu']} must name a known mask rule")


# ------------------------------------------------------------------ rules/platform.yaml

section("platform_components", Table(Record(
    {"platform": Enum("gpu", "npu", "any"), "label": Str(), "group": Name(), "pair": Name(), "short": Str(),
     "rc_is_release": Bool()}, required=("platform", "group"))))
section("platform_pairs", Table(Record({"label": Str()})))
section("platform_groups", Table(Record({"major": CODE, "patch": CODE}, required=("major", "patch"))))
section("snapshot_env", Record({"prefixes": NAMES, "names": NAMES}))  # secret-looking names: rules/secrets.yaml


@validator
def check_platform(rs: RuleSet) -> None:
    rs.conform("platform_components", "platform_pairs", "platform_groups", "snapshot_env")
    groups = rs.section("platform_groups") or {}
    pairs = rs.section("platform_pairs") or {}
    for name, g in groups.items():
        for part in ("major", "patch"):
            if g[part] not in rs.rules:
                raise rs.error(("platform_groups", name, part), f"{g[part]!r} is not a known rule code")
    for name, c in (rs.section("platform_components") or {}).items():
        if c["group"] not in groups:
            raise rs.error(("platform_components", name, "group"), f"unknown group {c['group']!r}")
        if c.get("pair") is not None and c["pair"] not in pairs:
            raise rs.error(("platform_components", name, "pair"), f"unknown pair {c['pair']!r}")


# ------------------------------------------------------------------ rules/pairing.yaml

def _renames(base: bool) -> ListOf:
    side = Name("a file name pattern with {base} once", test=lambda s: s.count("{base}") == 1) if base else Name()
    return ListOf(Record({"gpu": side, "npu": side}, required=("gpu", "npu"), need="'gpu' and 'npu' strings"))


section("pairing", Record({"skip_dirs": NAMES, "dir_renames": _renames(False), "name_renames": _renames(True)}))


@validator
def check_pairing(rs: RuleSet) -> None:
    rs.conform("pairing")


# ------------------------------------------------------------------ rules/check.yaml

EXAMPLE_MODES = ("files", "tree", "review", "check", "curves", "dumps")
section("example_modes", Table(Enum(*EXAMPLE_MODES), key=CODE))


@validator
def check_example_modes(rs: RuleSet) -> None:
    rs.conform("example_modes")
    for code in rs.section("example_modes") or {}:
        if code not in rs.rules:
            raise rs.error(("example_modes", code), f"unknown rule code {code}")


# ------------------------------------------------------------------ rules/python.yaml

_RENAME = ListOf(Record({"npu": Name(), "gpu": Name(), "rule": CODE}, required=("npu", "gpu", "rule"),
                        need="npu, gpu and rule strings"))
_IMPORTS = ListOf(Record({"module": Name(), "rule": CODE}, required=("module", "rule")))
section("python", Record({
    "qualified_renames": _RENAME, "method_renames": _RENAME, "attribute_renames": _RENAME,
    "strings": Record({"whole": _RENAME, "substring": _RENAME}),
    "expected_imports": Record({"npu_only": _IMPORTS, "gpu_only": _IMPORTS}),
    "optimizer_swaps": Table(Record({"gpu": NAMES, "npu": NAMES}, required=("gpu", "npu"))),
    "weight_decay_kind": Record({"decoupled": NAMES, "l2": NAMES, "switch": Table(Record(
        {"param": Name(), "position": Int(0), "default": Any()}, required=("param",)))}),
    "clip_swap": Record({"gpu": NAMES, "npu_method": Name(), "rule": CODE}),
    "flash_attention": Record({"gpu": Table(NAMES), "npu": Table(NAMES), "causal_sparse_modes": ListOf(Int(0)),
                               "npu_default_scale": Num()}),
    "device_refactors": Record({
        "to_device": Record({"methods": NAMES, "not_devices": NAMES, "rule": CODE}, required=("rule",)),
        "device_count": Record({"gpu": NAMES, "env": NAMES}),
        "mps": Record({"prefix": Name(), "rule": CODE}, required=("rule",))}),
    "softmax_fp32": Record({"calls": NAMES, "key": Name()}),
    "fact_calls": ListOf(Record(
        {"match": ListOf(Name(), nonempty=True), "args": Table(OneOf(Name(), NAMES, expect="a key or a list of keys")),
         "positional": NAMES, "positional_by_name": Table(Any()), "defaults": Table(Any()), "spellings": Enum("hf"),
         "framework": Enum(*FRAMEWORKS)}, required=("match",), need="a non-empty match list")),
    "value_maps": Table(Table(Any(), key=Any())),
    "generic_keywords": Record({"names": Table(OneOf(Name(), Null(), expect="a vocabulary key or null")),
                                "skip": NAMES, "python_spellings": NAMES}),
    "hf_extra": Table(Name()),
    "dtype_names": Table(NAMES),
    "classes": Record({"names": Table(NAMES, key=SEVERITY), "calls": Table(NAMES, key=SEVERITY),
                       "default": SEVERITY}),
}))


@validator
def check_python(rs: RuleSet) -> None:
    """`python:`: the masks name known mask rules, a fact call's keys are vocabulary keys."""
    rs.conform("python")
    py = rs.section("python")
    if py is None:
        return

    def need_mask(path: tuple, code) -> None:
        r = rs.rules.get(code)
        if r is None or r.kind != "mask":
            raise rs.error(path, f"{code!r} is not a mask rule code")

    for name in ("qualified_renames", "method_renames", "attribute_renames"):
        for i, e in enumerate(py.get(name) or []):
            need_mask(("python", name, i, "rule"), e["rule"])
    for part in ("strings", "expected_imports"):
        for kind, entries in (py.get(part) or {}).items():
            for i, e in enumerate(entries or []):
                need_mask(("python", part, kind, i, "rule"), e["rule"])
    for part, e in (py.get("device_refactors") or {}).items():
        if "rule" in e:
            need_mask(("python", "device_refactors", part, "rule"), e["rule"])
    voc = rs.section("vocabulary") or {}
    for name, k in ((py.get("generic_keywords") or {}).get("names") or {}).items():
        if k is not None and voc and k not in voc:
            raise rs.error(("python", "generic_keywords", "names", name), f"key {k!r} is not in the vocabulary")
    for i, e in enumerate(py.get("fact_calls") or []):
        for arg, v in (e.get("args") or {}).items():
            for k in v if isinstance(v, list) else [v]:
                if voc and k not in voc:
                    raise rs.error(("python", "fact_calls", i, "args", arg), f"key {k!r} is not in the vocabulary")


# ------------------------------------------------------------------ rules/signatures.yaml

section("call_signatures", Table(
    Record({"params": ListOf(Name(), nonempty=True), "defaults": Table(Any()), "env_defaults": Table(Name()),
            "source": Name("a source (where the signature is documented)")},
           required=("params", "source"),
           need={"params": "params (a non-empty list of names)", "source": "a source (where the signature is documented)"}),
    key=Name("a qualified name (no spaces)", test=lambda q: " " not in q)))


@validator
def check_call_signatures(rs: RuleSet) -> None:
    """`call_signatures:`: qualified name -> params (unique names, at most one "*"), defaults
    (of listed, non-"*" parameters) and the source that documents it."""
    rs.conform("call_signatures")
    for qn, e in (rs.section("call_signatures") or {}).items():
        params = e["params"]
        if len(set(params)) != len(params) or params.count("*") > 1:
            raise rs.error(("call_signatures", qn, "params"), "params repeats a name")
        for part in ("defaults", "env_defaults"):
            for k in e.get(part) or {}:
                if k not in params or k == "*":
                    raise rs.error(("call_signatures", qn, part, k), f"{part}: {k!r} is not one of its params")


# ------------------------------------------------------------------ rules/fix.yaml

section("fix_spellings", Table(ListOf(Record(
    {"written": ListOf(Name(), nonempty=True), "kinds": NAMES, "value": OneOf(Str(), Bool(), Num(),
                                                                                expect="a string, a boolean or a number"),
     "npu": OneOf(Str(), Bool(), Num(), expect="a string, a boolean or a number"), "flag": Bool(), "code": Bool(),
     "why": Str()},
    required=("written", "value", "npu", "why"), need="written, value, npu and why")), once=False))


@validator
def check_fix_spellings(rs: RuleSet) -> None:
    """Each spelling is of a vocabulary key, for known kinds; a flag is a --flag, written for shell."""
    spellings = rs.section("fix_spellings")
    if not spellings:
        return
    voc = rs.section("vocabulary") or {}
    kinds = rs.section("kinds") or {}
    for key, entries in spellings.items():
        if voc and key not in voc:
            raise rs.error(("fix_spellings", key), f"{key!r} is not a vocabulary key")
        for i, e in enumerate(entries):
            for j, kind in enumerate(e.get("kinds") or ()):
                if kinds and kind not in kinds:
                    raise rs.error(("fix_spellings", key, i, "kinds", j), f"{kind!r} is not a known kind")
            if e.get("flag") and not (str(e["npu"]).startswith("--") and e.get("kinds") == ["shell"]):
                raise rs.error(("fix_spellings", key, i, "npu"), "a flag spelling is a --flag, for kinds [shell]")


# ------------------------------------------------------------------ rules/kinds.yaml (+ packs)

COMMENT_STYLES = ("python", "hash", "none")
SUFFIX = Name("a lower-case ending with its dot (.py)", test=lambda s: s.startswith(".") and _lower(s))
MODULE = Name("a module under scriptdiff/ (lang.python.focus)", test=lambda m: all(p.isidentifier() for p in m.split(".")))
# which keys a file can set (rules/kinds.yaml `sets`, a dialect's `sets`: registry.kind_can_set)
SETS = OneOf(Enum("any"), Record({"categories": NAMES, "spelled": NAMES, "keys": NAMES, "named": NAMES}),
             expect="'any' or a mapping of categories, spelled, keys, named")
section("kinds", Table(Record(
    {"reader": MODULE, "suffixes": ListOf(SUFFIX), "names": NAMES, "shebang": Str(), "markers": NAMES,
     "sniff": Spec, "sniff_bytes": Int(1), "priority": Int(), "checks": NAMES, "comments": Enum(*COMMENT_STYLES),
     **{flag: Bool() for flag in ("anywhere", "confirm", "cached", "structural", "limited", "skip_identical",
                                  "relevant", "entry", "focus", "versions")},
     "ahead": MODULE, "fixer": MODULE, "example": Name(),
     # which options and keys name a file of this kind, which keys it can set, its page lexer
     "referenced": ListOf(Name("an option name in lower case with underscores (config_file)",
                               test=lambda r: r.isidentifier() and r == r.lower())),
     "sets": SETS,
     "filled_by": Table(NAMES, expect="a mapping of frameworks to the vocabulary keys their runs fill in"),
     "lexer": Name('"module:Class" (a module under pygments.lexers: data:JsonLexer)')},
    required=("reader",), need="a reader module")))
section("checks", Table(Record(
    {"order": Int(), "title": Str(), "inputs": NAMES, "needs": NAMES, "optional": Bool(),
     **{hook: Spec for hook in ("classify", "derive", "derive_pair", "measure", "relate")}},
    required=("order", "title"), need="an order and a title")))


@validator
def check_registry(rs: RuleSet) -> None:
    """`kinds` and `checks` (rules/kinds.yaml and any pack adding to them): the registries."""
    rs.conform("kinds", "checks")
    kinds = rs.section("kinds")
    checks = rs.section("checks")
    if kinds is None and checks is None:
        return
    if kinds is None or checks is None:
        raise rs.error(("kinds" if kinds is None else "checks",), "'kinds' and 'checks' must both be given")
    if "text" not in kinds:
        raise rs.error(("kinds",), "kinds needs 'text', the kind of any file no other kind claims")
    for name, k in kinds.items():
        unknown = [c for c in k.get("checks", []) if c not in checks]
        if unknown:
            raise rs.error(("kinds", name, "checks"), f"unknown check(s) {', '.join(sorted(unknown))}")
        if k.get("anywhere") and not k.get("markers"):
            raise rs.error(("kinds", name, "anywhere"), "'anywhere' needs markers")
        _check_kind_format(rs, name, k)


def _check_kind_format(rs: RuleSet, name: str, k: dict) -> None:
    """What the schema cannot say of a kind's `referenced`, `sets` and `lexer` (rules/kinds.yaml)."""
    if k.get("referenced") and not k.get("suffixes"):
        raise rs.error(("kinds", name, "referenced"), "a kind a reference names needs suffixes")
    sets = k.get("sets", "any")
    _check_sets(rs, ("kinds", name, "sets"), sets)
    voc = rs.section("vocabulary") or {}
    for fw, keys in (k.get("filled_by") or {}).items():
        if fw not in FRAMEWORKS:
            raise rs.error(("kinds", name, "filled_by", fw), f"{fw!r} is not a framework ({', '.join(FRAMEWORKS)})")
        for i, key in enumerate(keys):
            if key not in voc:
                raise rs.error(("kinds", name, "filled_by", fw, i), f"{key!r} is not a vocabulary key")
    if "lexer" in k:
        problem = _lexer_problem(k["lexer"])
        if problem:
            raise rs.error(("kinds", name, "lexer"), problem)


def _check_sets(rs: RuleSet, at: tuple, sets) -> None:
    """A `sets` entry (a kind's or a dialect's): known categories, framework columns and kinds."""
    if not isinstance(sets, dict):
        return
    unknown = set(sets.get("categories", [])) - set(rs.section("categories") or {})
    if unknown:
        raise rs.error(at + ("categories",), f"unknown vocabulary categor(ies) {', '.join(sorted(unknown))}")
    unknown = set(sets.get("spelled", [])) - set(FRAMEWORKS) - {"python"}
    if unknown:
        raise rs.error(at + ("spelled",), f"{', '.join(sorted(unknown))} is not a vocabulary framework column")
    unknown = set(sets.get("named", [])) - set(rs.section("kinds") or {})
    if unknown:
        raise rs.error(at + ("named",), f"{', '.join(sorted(unknown))} is not a known kind")


def _lexer_problem(spec: str) -> str | None:
    """Why "module:Class" names no pygments lexer (None: it does, or pygments is not installed)."""
    mod, sep, cls = spec.partition(":")
    if not sep or not all(p.isidentifier() for p in mod.split(".")) or not cls.isidentifier():
        return f"{spec!r} must be \"module:Class\" (a module under pygments.lexers: data:JsonLexer)"
    try:
        from pygments.lexers._mapping import LEXERS  # the lexer table, without importing any lexer
    except ImportError:  # no pygments: the page shows plain lines, nothing to check against
        return None
    entry = LEXERS.get(cls)
    if entry is None or entry[0] != f"pygments.lexers.{mod}":
        where = f" (it is in {entry[0].removeprefix('pygments.lexers.')})" if entry else ""
        return f"pygments has no lexer {cls} in pygments.lexers.{mod}{where}"
    return None


section("dialects", Table(Record(
    {"kinds": ListOf(Name(), nonempty=True), "paths": Table(Name()), "strip_prefix": Str(), "skip": NAMES,
     "doc": Str(), "title": Str(), "detect": NAMES, "cosmetic": NAMES, "defaults": Enum("none", *FRAMEWORKS),
     "sets": SETS},
    required=("kinds",), need="kinds (the file kinds it applies to)")))


@validator
def check_dialects(rs: RuleSet) -> None:
    """`dialects`: a framework's spellings for the kinds of file it writes (rules/<framework>.yaml).

    dialects.<name>: kinds (the file kinds it applies to), paths (a dotted config path -> the
    canonical vocabulary key), optional strip_prefix (a path prefix pattern such as `tool.*.`
    removed before lookup), skip (path prefixes that are not settings), title (how reports
    name it), detect (path prefixes whose presence in a config file selects the dialect; none:
    it applies to every file of its kinds), cosmetic (fnmatch patterns of paths that cannot
    change numerics: info), defaults (whose framework defaults fill a key a file of this
    dialect omits: hf, megatron, deepspeed or none), doc."""
    rs.conform("dialects")
    kinds = rs.section("kinds") or {}
    voc = rs.section("vocabulary") or {}
    for name, d in (rs.section("dialects") or {}).items():
        for i, kind in enumerate(d["kinds"]):
            if kind not in kinds:
                raise rs.error(("dialects", name, "kinds", i), f"{kind!r} is not a known kind "
                                                               f"({', '.join(sorted(kinds))})")
        for path, key in (d.get("paths") or {}).items():
            if key not in voc:
                raise rs.error(("dialects", name, "paths", path), f"{path!r} -> {key!r} is not a vocabulary key")
        _check_sets(rs, ("dialects", name, "sets"), d.get("sets"))


# ------------------------------------------------------------------ rules/aliases.yaml

LOWER = Name("a lower-case pattern", test=_lower)
section("neutral_sections", ListOf(Name("a lower-case section name without dots",
                                        test=lambda x: _lower(x) and "." not in x)))
section("cosmetic_names", Record({"names": ListOf(LOWER), "sections": ListOf(LOWER)}))
section("cosmetic_words", Record({part: ListOf(Name("a lower-case word", test=lambda x: _lower(x) and "_" not in x))
                                  for part in ("places", "outputs", "inputs")}))
section("path_places", Record({"generic": ListOf(LOWER)}))
section("generic_names", Record({
    "section_words": ListOf(Name("a lower-case word", test=lambda x: _lower(x) and "." not in x)),
    "suffixes": ListOf(Name("a lower-case suffix starting with _", test=lambda x: _lower(x) and x.startswith("_")))}))
section("device_port", Record({side: ListOf(LOWER, nonempty=True) for side in ("names", "gpu", "npu")},
                              required=("names", "gpu", "npu"), need="non-empty lower-case lists names, gpu and npu"))


@validator
def check_aliases(rs: RuleSet) -> None:
    """neutral_sections (names), cosmetic_names (names and sections patterns), device_port
    (names, gpu and npu value patterns; its mask rule is named device-setting-port),
    generic_names (section words that spell no vocabulary key, suffixes)."""
    rs.conform("neutral_sections", "cosmetic_names", "device_port", "generic_names", "cosmetic_words", "path_places")
    spelled = {str(x) for e in (rs.section("vocabulary") or {}).values() for fw in (*FRAMEWORKS, "aliases")
               for x in e.get(fw) or []}
    for i, word in enumerate((rs.section("generic_names") or {}).get("section_words") or []):
        if word in spelled:  # a section word names no setting of its own (compile.enable names compile)
            raise rs.error(("generic_names", "section_words", i), f"{word!r} is a spelling of a vocabulary key")
    if rs.section("device_port") is not None and not any(
            r.name == "device-setting-port" and r.kind == "mask" for r in rs.rules.values()):
        raise rs.error(("device_port",), "device_port needs the mask rule device-setting-port")


# ------------------------------------------------------------------ rules/secrets.yaml

UPPER_WORDS = Name("upper-case words joined by _",
                   test=lambda e: all(w.isalnum() and w.isascii() and w == w.upper() for w in e.split("_")))
ONE_WORD = Name("one word in upper case (no _)", test=lambda e: e.isalnum() and e.isascii() and e == e.upper())
UPPER_WORD = Name("an upper-case word", test=lambda e: e.replace("_", "").isalnum() and e == e.upper())
section("secrets", Record({"words": ListOf(UPPER_WORDS, nonempty=True), "suffixes": ListOf(ONE_WORD, nonempty=True),
                           "not_secret": ListOf(UPPER_WORDS)},
                          required=("words", "suffixes"), need="non-empty 'words' and 'suffixes' lists"))
section("secret_values", Record({
    "query_names": ListOf(UPPER_WORD), "schemes": ListOf(UPPER_WORD),
    "token_prefixes": ListOf(Record({"prefix": Str("a prefix of 3 characters or more", test=lambda p: len(p) >= 3),
                                     "min": Int(8), "chars": Enum(*secret_shapes.CHARS), "example": Name()},
                                    required=("prefix", "min"),
                                    need="a prefix (3 characters or more) and a min length (8 or more)")),
    "patterns": ListOf(Record({"name": Name(), "regex": Name("a regular expression"),
                               "examples": ListOf(Name(), nonempty=True), "not": ListOf(Str())},
                              required=("name", "regex", "examples"),
                              need="a name, a regex and the examples it finds")),
    "entropy": Record({"min_length": Int(16), "min_bits": Num(3, 6)}, required=("min_length", "min_bits"),
                      need="min_length (16 or more) and min_bits (3 to 6)")},
    required=("entropy",), need="entropy thresholds (min_length, min_bits)"))


@validator
def check_secrets(rs: RuleSet) -> None:
    """`secrets:`: lists of upper-case words (an entry of several words joins them with _; a
    suffix is one word)."""
    rs.conform("secrets")


@validator
def check_secret_values(rs: RuleSet) -> None:
    """`secret_values:` (scriptdiff.ruleset.secrets): upper-case query names and schemes, token
    prefixes with a minimum length, patterns that compile, the entropy thresholds; every
    prefix finds its `example` and every pattern its `examples`, and none finds a `not`."""
    rs.conform("secret_values")
    sv = rs.section("secret_values") or {}
    for i, e in enumerate(sv.get("token_prefixes") or []):
        rx = secret_shapes.tokens_regex([e])
        if "example" in e and not secret_shapes.finds(rx, e["example"]):
            raise rs.error(("secret_values", "token_prefixes", i, "example"),
                           f"the prefix {e['prefix']!r} does not find its example {e['example']!r} "
                           f"({e.get('chars', 'word')} characters, at least {e['min']} after the prefix)")
    names: set[str] = set()
    for i, p in enumerate(sv.get("patterns") or []):
        at = ("secret_values", "patterns", i)
        if p["name"] in names:
            raise rs.error(at + ("name",), f"the pattern {p['name']!r} is named twice")
        names.add(p["name"])
        try:
            rx = secret_shapes.compile_pattern(p["regex"])
        except re.error as e:
            raise rs.error(at + ("regex",), f"not a regular expression: {e}") from None
        for j, example in enumerate(p["examples"]):
            if not secret_shapes.finds(rx, example):
                raise rs.error(at + ("examples", j), f"the pattern {p['name']!r} does not find its example {example!r}")
        for j, example in enumerate(p.get("not") or []):
            if secret_shapes.finds(rx, example):
                raise rs.error(at + ("not", j), f"the pattern {p['name']!r} finds {example!r}, listed under not")


# ------------------------------------------------------------------ rules/shell.yaml

PROGRAMS = ("after-options", "interpreter", "subcommand", "wrapper")  # lang/shell/launchers.py reads these
section("launchers", Record({
    "flags": NAMES, "npu_only_flags": NAMES,
    "entries": ListOf(Record(
        {"name": Name(), "commands": NAMES, "modules": NAMES, "versioned": Bool(), "subcommands": NAMES,
         "program": Enum(*PROGRAMS), "module_only": Bool(), "flags": NAMES, "framework": Enum(*FRAMEWORKS),
         "world_size": NAMES, "devices": Name("an option name"), "environment": NAMES,
         "config": Name("a dialect (the framework of the config file its --config_file names)")},
        required=("name", "program"), need={"name": "a name", "program": f"a program ({', '.join(PROGRAMS)})"}),
        nonempty=True, expect="a list of launchers, one mapping each"),
    "hints": Record({"megatron": NAMES, "hf": NAMES, "megatron_scripts": NAMES}),
    "commands": Record({"print": NAMES, "evaluate": NAMES, "shells": NAMES, "source": NAMES,
                        "wrappers": Table(Record({"valued": NAMES, "positional": Int(0)}),
                                          expect="a mapping of command words to {valued, positional}")}),
    "shared": Record({"facts": Table(Name(), expect="a mapping of launcher options to keys"), "settings": NAMES,
                      "references": NAMES})},
    required=("entries",), need="entries, one per launcher"))


section("installers", ListOf(Record(
    {"name": Name(), "commands": NAMES, "modules": NAMES, "subcommands": NAMES, "syntax": Enum("pip", "conda"),
     "requirements": NAMES, "constraints": NAMES, "environment": NAMES, "editable": NAMES, "valued": NAMES},
    required=("name", "subcommands", "syntax"), need={"name": "a name", "subcommands": "the words that install",
                                                      "syntax": "pip or conda"}),
    expect="a list of installers, one mapping each"))


@validator
def check_installers(rs: RuleSet) -> None:
    """`installers:` (rules/shell.yaml): each named once, recognised by commands or modules, and
    no command word with the same subcommand claimed twice."""
    rs.conform("installers")
    names: dict[str, int] = {}
    claimed: dict[tuple, str] = {}
    for i, e in enumerate(rs.section("installers") or []):
        at = ("installers", i)
        if e["name"] in names:
            raise rs.error(at + ("name",), f"the name {e['name']!r} is used twice")
        names[e["name"]] = i
        if not e.get("commands") and not e.get("modules"):
            raise rs.error(at, f"{e['name']}: needs commands or modules to be recognised by")
        for word in (e.get("commands") or []) + [f"-m {m}" for m in e.get("modules") or []]:
            for sub in e["subcommands"]:
                if (word, sub) in claimed:
                    raise rs.error(at + ("subcommands",), f"{word} {sub} is also {claimed[(word, sub)]}'s")
                claimed[(word, sub)] = e["name"]


@validator
def check_launchers(rs: RuleSet) -> None:
    """`launchers:` (rules/shell.yaml and any pack adding a launcher): each launcher named once,
    each command word and module claimed once, and each entry's program fits its fields."""
    rs.conform("launchers")
    d = rs.section("launchers")
    if d is None:
        return
    names: dict[str, int] = {}
    claimed: dict[str, str] = {}
    for i, e in enumerate(d["entries"]):
        at = ("launchers", "entries", i)
        name, program = e["name"], e["program"]
        if name in names:
            raise rs.error(at + ("name",), f"the name {name!r} is used twice (also at {rs.where(at[:2] + (names[name],))})")
        names[name] = i
        if not e.get("commands") and not e.get("modules"):
            raise rs.error(at, f"{name}: needs commands or modules to be recognised by")
        if e.get("modules") and program != "after-options":
            raise rs.error(at + ("modules",), f"{name}: modules (python -m MODULE) need program after-options")
        if program == "subcommand" and not e.get("subcommands"):
            raise rs.error(at + ("program",), f"{name}: program subcommand needs a subcommands list")
        if e.get("module_only") and program != "interpreter":
            raise rs.error(at + ("module_only",), f"{name}: module_only is for program interpreter")
        dialects = rs.section("dialects")  # None: this pack loaded alone, without the dialect packs
        if e.get("config") and dialects is not None and e["config"] not in dialects:
            raise rs.error(at + ("config",), f"{name}: {e['config']!r} is not a known dialect")
        for kind in ("commands", "modules"):
            for j, word in enumerate(e.get(kind) or []):
                if kind == "commands" and word in _command_words(d):
                    raise rs.error(at + (kind, j), f"{word} is also one of launchers.commands")
                tag = f"{kind[:-1]} {word}"
                if tag in claimed:
                    raise rs.error(at + (kind, j), f"{tag} is also {claimed[tag]}'s")
                claimed[tag] = name


def _command_words(d: dict) -> set[str]:
    """The words `launchers.commands` claims (print, evaluate, source, wrappers)."""
    c = d.get("commands") or {}
    return {w for part in ("print", "evaluate", "source") for w in c.get(part) or []} | set(c.get("wrappers") or {})


# ------------------------------------------------------------------ rules/ascend_versions.yaml

ASCEND_LISTS = {  # list -> (its fields: the version kind of each, "pep440" | "cann" | "text"; the sort fields)
    "torch_npu": ({"torch_npu": "pep440", "torch": "pep440", "cann": "cann"}, ("torch_npu",)),
    "cann": ({"release": "cann"}, ("release",)),
    "hdk": ({"cann": "cann", "hdk": "cann"}, ("cann",)),
    "mindspeed": ({"branch": "text", "megatron_core": "pep440", "released": "date"}, ("megatron_core", "released")),
    "mindspeed_llm": ({"version": "pep440", "mindspeed": "text", "megatron_core": "pep440"}, ("version",)),
}
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
VERSION = Name("a quoted version string")


def _rows(name: str) -> ListOf:
    fields, _order = ASCEND_LISTS[name]
    extra = {"commercial": ListOf(VERSION, nonempty=True), "community": ListOf(VERSION, nonempty=True)} \
        if name == "cann" else {}
    return ListOf(Record({**{f: VERSION for f in fields}, "source": Name(), "note": Str(), **extra},
                         required=(*fields, "source")))


section("ascend_versions", Record({
    "tables": Table(Record(
        {"label": Name(), "title": Name(), "url": Name(), "repo": Name(), "path": Name(),
         "commit": Name("a commit (40 hex digits)", test=_COMMIT.match),
         "date": Name("a date (YYYY-MM-DD, quoted)", test=_DATE.match), "dated_by": Enum("commit", "read")},
        required=("label", "title", "url", "date", "dated_by"),
        need={"label": "a label", "title": "a title", "url": "a url", "date": "a date (YYYY-MM-DD, quoted)",
              "dated_by": "dated_by: commit or read"}),
        nonempty=True, need="at least one source"),
    **{name: _rows(name) for name in ASCEND_LISTS}},
    required=("tables",), need="tables (the sources it was read from)"))


@validator
def check_ascend_versions(rs: RuleSet) -> None:
    """rules/ascend_versions.yaml: every table says where and when it was read, every row names
    its table, every version parses (PEP 440 for Python packages, CANN's own form for CANN
    and the HDK), and each list is sorted by its version."""
    from packaging.version import InvalidVersion, Version

    rs.conform("ascend_versions")
    d = rs.section("ascend_versions")
    if d is None:
        return
    tables = d["tables"]
    for tid, t in tables.items():
        if t["dated_by"] == "commit" and not all(k in t for k in ("repo", "path", "commit")):
            raise rs.error(("ascend_versions", "tables", tid),
                           "a table dated by its commit names its repo, path and commit (40 hex)")

    def parsed(kind: str, value: str, path: tuple):
        if kind == "pep440":
            try:
                return Version(value)
            except InvalidVersion:
                raise rs.error(path, f"{value!r} is not a PEP 440 version") from None
        if kind == "cann":
            p = parse_cann(value)
            if p is None:
                raise rs.error(path, f"{value!r} is not a CANN version")
            return p.key()
        if kind == "date" and not _DATE.match(value):
            raise rs.error(path, f"{value!r} is not a date (YYYY-MM-DD)")
        return value

    for name, (fields, order) in ASCEND_LISTS.items():
        last = None
        for i, row in enumerate(d.get(name) or []):
            at = ("ascend_versions", name, i)
            if row["source"] not in tables:
                raise rs.error(at + ("source",), f"source {row['source']!r} is not one of ascend_versions.tables")
            keys = {f: parsed(kind, row[f], at + (f,)) for f, kind in fields.items()}
            for lst in ("commercial", "community"):
                for j, v in enumerate(row.get(lst) or []):
                    parsed("cann", v, at + (lst, j))
            key = tuple(keys[f] for f in order)
            if last is not None and not last < key:
                raise rs.error(at, f"out of order (ascend_versions.{name} is sorted by {' then '.join(order)}, "
                                   f"each once)")
            last = key
    branches = {r["branch"] for r in d.get("mindspeed") or []}
    for i, row in enumerate(d.get("mindspeed_llm") or []):
        if row["mindspeed"] not in branches:
            raise rs.error(("ascend_versions", "mindspeed_llm", i, "mindspeed"),
                           f"MindSpeed branch {row['mindspeed']!r} is not in ascend_versions.mindspeed")


# ------------------------------------------------------------------ rules/devices.yaml

_DEVICE_FAMILIES = ("cuda", "npu", "other")
_EXPECT = Record({"gpu": Bool(), "npu": Bool()}, required=("gpu", "npu"), need="gpu and npu true or false")
_DEVICE_TEST = {"idiom": Name(), "example": Name("an example (code the tests run)"), "expect": _EXPECT}
_DEVICE_NEEDS = ("idiom", "example", "expect")
section("devices", Record({
    "sides": Record({"gpu": Enum("cuda"), "npu": Enum("npu")}, required=("gpu", "npu"), need="gpu: cuda and npu: npu"),
    "families": Record({fam: NAMES for fam in _DEVICE_FAMILIES}, required=_DEVICE_FAMILIES,
                       need="the cuda, npu and other device names"),
    "python": Record({
        **{part: ListOf(Record({**_DEVICE_TEST, "family": Enum(*_DEVICE_FAMILIES), "match": ListOf(Name(), nonempty=True),
                                "mask": Name()}, required=_DEVICE_NEEDS + ("family", "match")))
           for part in ("calls", "attributes", "modules")},
        **{part: Record({**_DEVICE_TEST, "match": ListOf(Name(), nonempty=True)}, required=_DEVICE_NEEDS + ("match",))
           for part in ("holders", "device_calls")},
        **{part: NAMES for part in ("find_module", "npu_tuning", "tensor_devices")},
        "cuda_on_npu": Record({"patched_by": ListOf(Name(), nonempty=True)}),
        "cuda_switches": Table(Record({"determinism": Any(), "tf32": Any(), "npu_way": Str(), "source": Str(),
                                       "note": Str()}, required=("note",), need="a note")),
    }),
    "shell": Record({part: Record({**_DEVICE_TEST, **{fam: NAMES for fam in _DEVICE_FAMILIES},
                                   "match": ListOf(Name(), nonempty=True)}, required=_DEVICE_NEEDS)
                     for part in ("commands", "paths", "variables", "holders", "python_imports")}),
}, required=("sides", "families")))


@validator
def check_devices(rs: RuleSet) -> None:
    """rules/devices.yaml `devices:` (docs/devices.md), beyond its schema: a device name in one
    family only, masks that name mask rules, each CUDA switch either a determinism switch (with
    the NPU way and its source) or a TF32 one, shell holders with their match list."""
    rs.conform("devices")
    dev = rs.section("devices")
    if dev is None:
        return
    seen: dict = {}
    for fam, names in dev["families"].items():
        for i, n in enumerate(names):
            if n != n.lower() or n in seen:
                raise rs.error(("devices", "families", fam, i), f"{n!r} must be lower case and in one family only")
            seen[n] = fam
    py = dev.get("python") or {}
    for part in ("calls", "attributes", "modules"):
        for i, e in enumerate(py.get(part) or []):
            if "mask" in e:
                r = next((r for r in rs.rules.values() if r.name == e["mask"]), None)
                if r is None or r.kind != "mask":
                    raise rs.error(("devices", "python", part, i, "mask"), f"{e['mask']!r} is not the name of a mask rule")
    for qn, sw in (py.get("cuda_switches") or {}).items():
        at = ("devices", "python", "cuda_switches", qn)
        if ("determinism" in sw) == ("tf32" in sw):
            raise rs.error(at, "give determinism (the deterministic value) or tf32")
        if "determinism" in sw and not (sw.get("npu_way") and sw.get("source")):
            raise rs.error(at, "a determinism switch names the NPU way and its source")
    holders = (dev.get("shell") or {}).get("holders")
    if holders is not None and not holders.get("match"):
        raise rs.error(("devices", "shell", "holders"), "shell holders need a match list")


# ------------------------------------------------------------------ rules/dumps.yaml

DUMP_PHASES = ("forward", "backward", "after_backward")
DUMP_KINDS = ("values", "dtype", "shape", "nan", "arguments", "kernel")
_ANCHORS = ListOf(ListOf(Name(), nonempty=True), nonempty=True, expect="a list of anchors (each a list of op names)")
section("dump_ports", Table(Record({
    "title": Str(),
    "forms": Table(Record({"title": Str(), "calls": NAMES, "sequence": _ANCHORS, "gap": Int(0, 16),
                           "modules": NAMES, "frames": NAMES}, required=("title",), need="a title"), nonempty=True),
    "stands_for": Table(ListOf(Name(), nonempty=True)),
}, required=("title", "forms"), need="a title and forms")))
section("dump_depends", ListOf(Record({
    "title": Str(), "calls": NAMES, "port": Name(), "phase": Enum(*DUMP_PHASES), "first": Bool(),
    "kind": Enum(*DUMP_KINDS), "keys": ListOf(Name(), nonempty=True)}, required=("title", "keys"),
    need="a title and keys")))
section("dump_frames", Record({"library": NAMES}))
section("dump_values", ListOf(Record({"gpu": Name(), "npu": Name()}, required=("gpu", "npu"),
                                     need="gpu and npu words")))


@validator
def check_dumps(rs: RuleSet) -> None:
    """rules/dumps.yaml (docs/dumps.md), beyond the schemas: each form is recognised one way
    (calls, sequence, modules or frames), a port's stands_for names its own forms, a
    dependency names a port that exists, a selector, and vocabulary keys."""
    rs.conform("dump_ports", "dump_depends", "dump_frames", "dump_values")
    ports = rs.section("dump_ports") or {}
    for name, port in ports.items():
        for fname, form in port["forms"].items():
            ways = [w for w in ("calls", "sequence", "modules", "frames") if w in form]
            if len(ways) != 1:
                raise rs.error(("dump_ports", name, "forms", fname),
                               "give one of calls, sequence, modules or frames" if not ways
                               else f"give one of {', '.join(ways)}, not several")
            if "gap" in form and "sequence" not in form:
                raise rs.error(("dump_ports", name, "forms", fname, "gap"), "gap belongs to a sequence")
        for npu, gpus in (port.get("stands_for") or {}).items():
            for i, f in enumerate([npu] + list(gpus)):
                if f not in port["forms"]:
                    at = ("dump_ports", name, "stands_for", npu) + ((i - 1,) if i else ())
                    raise rs.error(at, f"{f!r} is not a form of {name} ({', '.join(port['forms'])})")
    vocab = rs.section("vocabulary") or {}
    for i, dep in enumerate(rs.section("dump_depends") or []):
        if not any(k in dep for k in ("calls", "port", "phase", "first", "kind")):
            raise rs.error(("dump_depends", i), "needs a selector: calls, port, phase, first or kind")
        if "port" in dep and dep["port"] not in ports:
            raise rs.error(("dump_depends", i, "port"), f"{dep['port']!r} is not a port of dump_ports")
        for j, k in enumerate(dep["keys"]):
            if vocab and k not in vocab:
                raise rs.error(("dump_depends", i, "keys", j), f"{k!r} is not a vocabulary key (rules/vocabulary.yaml)")

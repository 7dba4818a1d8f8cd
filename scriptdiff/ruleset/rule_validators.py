"""The data sections of the rule packs: each one's schema, and the validators of what a schema
cannot say (registered with rulepack.validator).

A section's shape is declared once, as data, in scriptdiff.ruleset.packschema's small language
(`section(name, schema)`); one checker walks it and reports the node that does not fit at
its own file and line (`rules/shell.yaml:14: launchers.entries[2].commands: expected a list
of names (got 'orbit')`). What needs the whole rule set stays code, below each schema: a rule
code a section names must exist, a kind a dialect names must be declared, a spelling maps to
one key, versions parse and are sorted. Those report at the line of the node too
(`rs.error(path, message)`).

The sections live in families, one module each (FAMILIES, registered in this order when this
module is imported): the settings (validators_settings: vocabulary, the hparams table,
aliases, environment), the code (validators_code: python, signatures, fix, devices), the
setup (validators_setup: libraries, dataset, platform, secrets, shell, Ascend versions),
process data (validators_process: curves, dumps), and here the registries and the run's own
(kinds, checks and dialects, pairing, example modes). A module that adds a section adds its
schema and validator to its family; the names several families share are in
validators_common.
"""
from __future__ import annotations

# the families, registered in this order (the vocabulary's first: the others' validators look keys up in it)
from . import validators_settings, validators_code, validators_setup, validators_process  # noqa: I001
from ..inputs.jsonload import loads
from .packschema import NAMES, Any, Bool, Enum, Int, ListOf, Name, OneOf, Record, RuleError, Spec, Str, Table
from .rulepack import RuleSet, inside_name, section, validator
from .validators_common import CODE, FRAMEWORKS, is_lower
# every validator, by the name the packs' comments and the tests use (rule_validators.check_devices)
from .validators_code import (check_call_signatures, check_devices, check_fidelity, check_fix_copies,  # noqa: F401
                              check_fix_spellings, check_numerics_relevance, check_profiles, check_python,
                              check_kernel_swaps, check_rewritten_regions, check_transfer_to_npu)
from .validators_process import (check_curve_metrics, check_dumps, check_model_structure,  # noqa: F401
                                 check_run_logs)
from .validators_settings import (check_aliases, check_env_map, check_hparams_table, check_meanings,  # noqa: F401
                                  check_value_ports, check_vocabulary)
from .validators_setup import (check_ascend_versions, check_installers, check_launchers,  # noqa: F401
                               check_library_checks, check_platform, check_secret_values, check_secrets,
                               check_tokenizer_settings)


# ------------------------------------------------------------------ rules/kinds.yaml (+ packs)

COMMENT_STYLES = ("python", "hash", "none")
SUFFIX = Name("a lower-case ending with its dot (.py)", test=lambda s: s.startswith(".") and is_lower(s))
MODULE = Name("a module under scriptdiff/ (lang.python.focus)", test=lambda m: all(p.isidentifier() for p in m.split(".")))
# which keys a file can set (rules/kinds.yaml `sets`, a dialect's `sets`: registry.kind_can_set)
SETS = OneOf(Enum("any"), Record({"categories": NAMES, "spelled": NAMES, "keys": NAMES, "named": NAMES}),
             expect="'any' or a mapping of categories, spelled, keys, named")
section("kinds", Table(Record(
    {"reader": MODULE, "suffixes": ListOf(SUFFIX), "names": NAMES, "shebang": Str(), "markers": NAMES,
     "sniff": Spec, "sniff_bytes": Int(1), "priority": Int(), "checks": NAMES, "comments": Enum(*COMMENT_STYLES),
     **{flag: Bool() for flag in ("anywhere", "confirm", "cached", "structural", "limited", "skip_identical",
                                  "relevant", "entry", "focus", "versions")},
     "ahead": MODULE, "fixer": MODULE, "example": Name(), "input": Name("a check input (a check's `inputs`)"),
     # which options and keys name a file of this kind, which keys it can set, its page lexer
     "referenced": ListOf(Name("an option name in lower case with underscores (config_file)",
                               test=lambda r: r.isidentifier() and r == r.lower())),
     "sets": SETS,
     "filled_by": Table(NAMES, expect="a mapping of frameworks to the vocabulary keys their runs fill in"),
     "lexer": Name('"module:Class" (a module under pygments.lexers: data:JsonLexer)')},
    required=("reader",), need="a reader module")))
section("checks", Table(Record(
    {"order": Int(), "title": Str(), "inputs": NAMES, "needs": NAMES, "optional": Bool(),
     **{hook: Spec for hook in ("classify", "derive", "derive_pair", "measure", "relate", "audit", "audit_run")}},
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
    inputs = sorted({i for c in checks.values() for i in c.get("inputs") or ()})
    for name, k in kinds.items():
        unknown = [c for c in k.get("checks", []) if c not in checks]
        if unknown:
            raise rs.error(("kinds", name, "checks"), f"unknown check(s) {', '.join(sorted(unknown))}")
        if k.get("anywhere") and not k.get("markers"):
            raise rs.error(("kinds", name, "anywhere"), "'anywhere' needs markers")
        if "input" in k and k["input"] not in inputs:
            raise rs.error(("kinds", name, "input"), f"{k['input']!r} is not a check input ({', '.join(inputs)})")
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
     "raw_defaults": Table(Any()), "sets": SETS},
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
    dialect omits: hf, megatron, deepspeed or none), raw_defaults (a dotted path no vocabulary
    key spells -> the framework's default for it, the same in every release the rules name: what a
    run of this dialect that omits the path has), doc."""
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
        for path, value in (d.get("raw_defaults") or {}).items():
            if not isinstance(value, (bool, int, float, str)):
                raise rs.error(("dialects", name, "raw_defaults", path), f"{value!r} is not a single value")
            if path in (d.get("paths") or {}):
                raise rs.error(("dialects", name, "raw_defaults", path),
                               f"{path!r} is a vocabulary key's spelling: its default is the vocabulary's")

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
    for code, mode in (rs.section("example_modes") or {}).items():
        if code not in rs.rules:
            raise rs.error(("example_modes", code), f"unknown rule code {code}")
        if mode == "dumps":  # each text names the files it writes in the example's folder: never out of it
            for ex in rs.rules[code].examples:
                for side in ("gpu", "npu"):
                    bad = _outside_names(getattr(ex, side))
                    if bad is not None:
                        rule = rs.rules[code]
                        raise RuleError(f"{rule.pack}:{ex.line or rule.line or 1}: {code}: a dumps example's "
                                        f"{side} text names {bad!r}, which is not a path inside the example's "
                                        f"folder (a relative one, without '..'); nothing of it is written")


def _outside_names(text: str) -> str | None:
    """The first name of a `dumps` example's text (a JSON object of file name -> content) that
    is not a path inside the example's folder; None when all are (or the text is not such an
    object: the run says so)."""
    try:
        data = loads(text)
    except ValueError:
        return None
    return next((k for k in data if not inside_name(k)), None) if isinstance(data, dict) else None


# the families of sections, in the order they are registered (this module's own come last)
FAMILIES = (validators_settings, validators_code, validators_setup, validators_process)

"""Validators for the data sections of the rule packs (registered with rules.validator).

Each checks one section's shape and cross-references (a category names a real rule code),
raising RuleError that names the pack file. A module that adds a section adds its
validator here.
"""
from __future__ import annotations

import re

from .ascend_version import parse_cann
from .rulepack import RuleError, RuleSet, validator

TYPES = {"float", "int", "bool", "str", "list", "dtype"}
FRAMEWORK_FIELDS = {"megatron", "hf", "deepspeed", "python", "other", "aliases"}


def _where(rs: RuleSet, section: str) -> str:
    """The pack that defines a section (or, for merged sections, `section.entry`)."""
    return rs.section_origin.get(section) or rs.section_origin.get(section.split(".", 1)[0], "rules/?")


@validator
def check_vocabulary(rs: RuleSet) -> None:
    cats = rs.section("categories")
    voc = rs.section("vocabulary")
    if voc is None and cats is None:
        return
    where = _where(rs, "vocabulary")
    if not isinstance(cats, dict) or not isinstance(voc, dict):
        raise RuleError(f"{where}:1: 'categories' and 'vocabulary' must both be mappings")
    for name, cat in cats.items():
        if not isinstance(cat, dict) or cat.get("rule") not in rs.rules:
            raise RuleError(f"{where}:1: category {name!r} must name a known rule code (got {cat!r})")
        if cat.get("severity") not in ("error", "warning", "info"):
            raise RuleError(f"{where}:1: category {name!r} has no valid severity")
    seen: dict[str, str] = {}
    for key, entry in voc.items():
        if not isinstance(entry, dict):
            raise RuleError(f"{where}:1: vocabulary key {key!r} must be a mapping")
        unknown = set(entry) - FRAMEWORK_FIELDS - {"category", "type", "default", "default_changed", "values", "doc"}
        if unknown:
            raise RuleError(f"{where}:1: vocabulary key {key!r}: unknown field(s) {sorted(unknown)}")
        if entry.get("category") not in cats:
            raise RuleError(f"{where}:1: vocabulary key {key!r}: unknown category {entry.get('category')!r}")
        if entry.get("type") not in TYPES:
            raise RuleError(f"{where}:1: vocabulary key {key!r}: type must be one of {sorted(TYPES)}")
        for fw in ("megatron", "hf", "deepspeed", "aliases"):
            for spelling in entry.get(fw, []) or []:
                tag = f"{fw}:{spelling}"
                if tag in seen and seen[tag] != key:
                    raise RuleError(f"{where}:1: spelling {tag} maps to both {seen[tag]} and {key}")
                seen[tag] = key
        for alias in entry.get("aliases", []) or []:
            if not isinstance(alias, str) or alias != alias.lower() or "-" in alias or "." in alias or not alias:
                raise RuleError(f"{where}:1: vocabulary key {key!r}: alias {alias!r} must be a normalised name "
                                f"(lower case, _ for -, no dots: a dotted path belongs to a dialect)")
        if "other" in entry:
            raise RuleError(f"{where}:1: vocabulary key {key!r}: `other` spellings are gone: a generic name goes "
                            f"into `aliases`, a framework's dotted path into its dialect (rules/<framework>.yaml)")
        changed = entry.get("default_changed")
        if changed is not None:
            if not isinstance(changed, dict) or not all(
                    isinstance(v, dict) and isinstance(v.get("release"), str) and "before" in v
                    and set(v) <= {"release", "before"} for v in changed.values()):
                raise RuleError(f"{where}:1: vocabulary key {key!r}: default_changed must map a framework to "
                                f"{{release: R, before: V}}")
            if set(changed) - set(entry.get("default") or {}):
                raise RuleError(f"{where}:1: vocabulary key {key!r}: default_changed names a framework "
                                f"without a default")


@validator
def check_env_map(rs: RuleSet) -> None:
    env = rs.section("env_map")
    if env is None:
        return
    where = _where(rs, "env_map")
    if not isinstance(env, dict) or not isinstance(env.get("pairs"), dict):
        raise RuleError(f"{where}:1: env_map needs a 'pairs' mapping GPU name -> NPU name")
    npu_names = list(env["pairs"].values())
    if len(set(npu_names)) != len(npu_names):
        raise RuleError(f"{where}:1: env_map pairs map two GPU names onto one NPU name")
    for lst in ("same_on_npu", "npu_tuning", "gpu_tuning", "npu_precision", "gpu_precision"):
        if not isinstance(env.get(lst, []), list):
            raise RuleError(f"{where}:1: env_map.{lst} must be a list")


@validator
def check_library_checks(rs: RuleSet) -> None:
    lib = rs.section("library_checks")
    if lib is None:
        return
    where = _where(rs, "library_checks")
    if not isinstance(lib, dict) or not isinstance(lib.get("key_packages"), list):
        raise RuleError(f"{where}:1: library_checks needs a 'key_packages' list")
    for cp in lib.get("counterparts", []) or []:
        if not isinstance(cp, dict) or not isinstance(cp.get("gpu"), str) or not isinstance(cp.get("npu"), str):
            raise RuleError(f"{where}:1: each library_checks.counterparts entry needs 'gpu' and 'npu' names")
        if cp.get("mask") not in rs.rules:
            raise RuleError(f"{where}:1: counterpart {cp['gpu']} <-> {cp['npu']} must name a known mask rule")
    plat = lib.get("platform_packages", {}) or {}
    if not isinstance(plat, dict) or set(plat) - {"gpu", "npu"}:
        raise RuleError(f"{where}:1: library_checks.platform_packages must map gpu/npu to lists")


@validator
def check_platform(rs: RuleSet) -> None:
    comps = rs.section("platform_components")
    if comps is None:
        return
    where = _where(rs, "platform_components")
    groups = rs.section("platform_groups") or {}
    pairs = rs.section("platform_pairs") or {}
    for name, g in groups.items():
        if not isinstance(g, dict) or g.get("major") not in rs.rules or g.get("patch") not in rs.rules:
            raise RuleError(f"{where}:1: platform group {name!r} must name known rule codes for major and patch")
    for name, c in comps.items():
        if not isinstance(c, dict) or c.get("platform") not in ("gpu", "npu", "any"):
            raise RuleError(f"{where}:1: component {name!r} needs platform gpu, npu or any")
        if c.get("group") not in groups:
            raise RuleError(f"{where}:1: component {name!r}: unknown group {c.get('group')!r}")
        if c.get("pair") is not None and c["pair"] not in pairs:
            raise RuleError(f"{where}:1: component {name!r}: unknown pair {c['pair']!r}")
    env = rs.section("snapshot_env") or {}
    for lst in ("prefixes", "names"):  # secret-looking names: rules/secrets.yaml
        if not isinstance(env.get(lst, []), list):
            raise RuleError(f"{where}:1: snapshot_env.{lst} must be a list")


@validator
def check_pairing(rs: RuleSet) -> None:
    pairing = rs.section("pairing")
    if pairing is None:
        return
    where = _where(rs, "pairing")
    if not isinstance(pairing, dict):
        raise RuleError(f"{where}:1: pairing must be a mapping")
    for lst in ("skip_dirs",):
        if not all(isinstance(x, str) for x in pairing.get(lst, []) or []):
            raise RuleError(f"{where}:1: pairing.{lst} must be a list of strings")
    for lst in ("dir_renames", "name_renames"):
        for ren in pairing.get(lst, []) or []:
            if not isinstance(ren, dict) or not isinstance(ren.get("gpu"), str) or not isinstance(ren.get("npu"), str):
                raise RuleError(f"{where}:1: pairing.{lst}: each entry needs 'gpu' and 'npu' strings (got {ren!r})")
            if lst == "name_renames" and not all(ren[s].count("{base}") == 1 for s in ("gpu", "npu")):
                raise RuleError(f"{where}:1: pairing.name_renames: {ren!r} must use {{base}} once on each side")


@validator
def check_example_modes(rs: RuleSet) -> None:
    modes = rs.section("example_modes")
    if modes is None:
        return
    where = _where(rs, "example_modes")
    if not isinstance(modes, dict):
        raise RuleError(f"{where}:1: example_modes must map rule codes to a mode")
    for code, mode in modes.items():
        if code not in rs.rules:
            raise RuleError(f"{where}:1: example_modes refers to unknown rule code {code}")
        if mode not in ("files", "tree", "review", "check", "curves"):
            raise RuleError(f"{where}:1: example_modes.{code}: mode must be files, tree, review, check or curves")


@validator
def check_python(rs: RuleSet) -> None:
    """rules/python.yaml `python:` section: masks name known mask rules, tables have their fields."""
    py = rs.section("python")
    if py is None:
        return
    where = _where(rs, "python")
    if not isinstance(py, dict):
        raise RuleError(f"{where}:1: 'python' must be a mapping")

    def need_rule(code, what):
        r = rs.rules.get(code)
        if r is None or r.kind != "mask":
            raise RuleError(f"{where}:1: python.{what}: {code!r} is not a mask rule code")

    for name in ("qualified_renames", "method_renames", "attribute_renames"):
        for i, e in enumerate(py.get(name) or []):
            if not isinstance(e, dict) or not all(isinstance(e.get(k), str) for k in ("npu", "gpu", "rule")):
                raise RuleError(f"{where}:1: python.{name}[{i}] needs npu, gpu and rule strings")
            need_rule(e["rule"], name)
    for kind in ("whole", "substring"):
        for i, e in enumerate((py.get("strings") or {}).get(kind) or []):
            if not isinstance(e, dict) or not all(isinstance(e.get(k), str) for k in ("npu", "gpu", "rule")):
                raise RuleError(f"{where}:1: python.strings.{kind}[{i}] needs npu, gpu and rule strings")
            need_rule(e["rule"], f"strings.{kind}")
    for side in ("npu_only", "gpu_only"):
        for i, e in enumerate((py.get("expected_imports") or {}).get(side) or []):
            if not isinstance(e, dict) or not isinstance(e.get("module"), str):
                raise RuleError(f"{where}:1: python.expected_imports.{side}[{i}] needs a module")
            need_rule(e.get("rule"), f"expected_imports.{side}")
    for fam, e in (py.get("optimizer_swaps") or {}).items():
        if not isinstance(e, dict) or not isinstance(e.get("gpu"), list) or not isinstance(e.get("npu"), list):
            raise RuleError(f"{where}:1: python.optimizer_swaps.{fam} needs gpu and npu lists")
    dr = py.get("device_refactors") or {}
    for part in ("to_device", "mps"):
        if part in dr:
            need_rule((dr[part] or {}).get("rule"), f"device_refactors.{part}")
    voc = rs.section("vocabulary") or {}
    for i, e in enumerate(py.get("fact_calls") or []):
        if not isinstance(e, dict) or not isinstance(e.get("match"), list) or not e["match"]:
            raise RuleError(f"{where}:1: python.fact_calls[{i}] needs a non-empty match list")
        keys = []
        for v in (e.get("args") or {}).values():
            keys += v if isinstance(v, list) else [v]
        for k in keys:
            if voc and k not in voc:
                raise RuleError(f"{where}:1: python.fact_calls[{i}]: key {k!r} is not in the vocabulary")
        if e.get("spellings") not in (None, "hf"):
            raise RuleError(f"{where}:1: python.fact_calls[{i}]: spellings must be 'hf'")
    classes = py.get("classes") or {}
    for part in ("names", "calls"):
        for sev in (classes.get(part) or {}):
            if sev not in ("error", "warning", "info"):
                raise RuleError(f"{where}:1: python.classes.{part}: {sev!r} is not a severity")
    if classes.get("default", "warning") not in ("error", "warning", "info"):
        raise RuleError(f"{where}:1: python.classes.default must be a severity")


@validator
def check_call_signatures(rs: RuleSet) -> None:
    """rules/signatures.yaml `call_signatures:`: qualified name -> params (unique names, at most
    one "*"), defaults (of listed, non-"*" parameters) and the source that documents it."""
    sigs = rs.section("call_signatures")
    if sigs is None:
        return
    where = _where(rs, "call_signatures")
    if not isinstance(sigs, dict):
        raise RuleError(f"{where}:1: call_signatures must be a mapping of qualified names")
    for qn, e in sigs.items():
        if not isinstance(qn, str) or not qn or " " in qn:
            raise RuleError(f"{where}:1: call_signatures: {qn!r} is not a qualified name")
        if not isinstance(e, dict) or set(e) - {"params", "defaults", "source"}:
            raise RuleError(f"{where}:1: call_signatures.{qn} takes params, defaults and source")
        params = e.get("params")
        if not isinstance(params, list) or not params or not all(isinstance(x, str) and x for x in params):
            raise RuleError(f"{where}:1: call_signatures.{qn}.params must be a non-empty list of names")
        if len(set(params)) != len(params) or params.count("*") > 1:
            raise RuleError(f"{where}:1: call_signatures.{qn}.params repeats a name")
        defaults = e.get("defaults") or {}
        if not isinstance(defaults, dict):
            raise RuleError(f"{where}:1: call_signatures.{qn}.defaults must be a mapping")
        for k in defaults:
            if k not in params or k == "*":
                raise RuleError(f"{where}:1: call_signatures.{qn}.defaults: {k!r} is not one of its params")
        if not isinstance(e.get("source"), str) or not e["source"].strip():
            raise RuleError(f"{where}:1: call_signatures.{qn} needs a source (where the signature is documented)")


KIND_FIELDS = {"reader": str, "suffixes": list, "names": list, "shebang": str, "markers": list, "sniff": str,
               "sniff_bytes": int, "priority": int, "anywhere": bool, "confirm": bool, "cached": bool,
               "structural": bool, "limited": bool, "skip_identical": bool, "checks": list, "comments": str,
               "relevant": bool, "entry": bool, "focus": bool, "ahead": str, "example": str}
CHECK_FIELDS = {"order": int, "title": str, "inputs": list, "needs": list, "classify": str, "derive": str,
                "derive_pair": str, "measure": str, "optional": bool}
COMMENT_STYLES = ("python", "hash", "none")


def _spec(value: str) -> bool:
    """A "module:function" reference under scriptdiff/."""
    mod, sep, fn = value.partition(":")
    return bool(sep) and all(p.isidentifier() for p in mod.split(".")) and fn.isidentifier()


def _fields(where: str, what: str, entry, spec: dict) -> None:
    if not isinstance(entry, dict):
        raise RuleError(f"{where}:1: {what} must be a mapping")
    unknown = set(entry) - set(spec)
    if unknown:
        raise RuleError(f"{where}:1: {what}: unknown field(s) {', '.join(sorted(unknown))}")
    for name, typ in spec.items():
        if name in entry and not (isinstance(entry[name], typ) and not (typ is int and isinstance(entry[name], bool))):
            raise RuleError(f"{where}:1: {what}.{name} must be a {typ.__name__}")
        if typ is list and name in entry and not all(isinstance(x, str) for x in entry[name]):
            raise RuleError(f"{where}:1: {what}.{name} must be a list of strings")


@validator
def check_registry(rs: RuleSet) -> None:
    """`kinds` and `checks` (rules/kinds.yaml and any pack adding to them): the registries."""
    kinds = rs.section("kinds")
    checks = rs.section("checks")
    if kinds is None and checks is None:
        return
    where = _where(rs, "kinds")
    if not isinstance(kinds, dict) or not isinstance(checks, dict):
        raise RuleError(f"{where}:1: 'kinds' and 'checks' must both be mappings")
    if "text" not in kinds:
        raise RuleError(f"{where}:1: kinds needs 'text', the kind of any file no other kind claims")
    for name, c in checks.items():
        cw = _where(rs, f"checks.{name}")
        _fields(cw, f"checks.{name}", c, CHECK_FIELDS)
        if not isinstance(c.get("order"), int) or not isinstance(c.get("title"), str):
            raise RuleError(f"{cw}:1: checks.{name} needs an order and a title")
        for hook in ("classify", "derive", "derive_pair", "measure"):
            if hook in c and not _spec(c[hook]):
                raise RuleError(f"{cw}:1: checks.{name}.{hook} must be \"module:function\"")
    for name, k in kinds.items():
        where = _where(rs, f"kinds.{name}")
        _fields(where, f"kinds.{name}", k, KIND_FIELDS)
        if not isinstance(k.get("reader"), str):
            raise RuleError(f"{where}:1: kinds.{name} needs a reader module")
        if not all(s.startswith(".") and s == s.lower() for s in k.get("suffixes", [])):
            raise RuleError(f"{where}:1: kinds.{name}.suffixes must be lower-case endings with their dot")
        if "sniff" in k and not _spec(k["sniff"]):
            raise RuleError(f"{where}:1: kinds.{name}.sniff must be \"module:function\"")
        if "ahead" in k and not all(p.isidentifier() for p in k["ahead"].split(".")):
            raise RuleError(f"{where}:1: kinds.{name}.ahead must be a module under scriptdiff/ (lang.python.focus)")
        if k.get("comments", "hash") not in COMMENT_STYLES:
            raise RuleError(f"{where}:1: kinds.{name}.comments must be one of {', '.join(COMMENT_STYLES)}")
        unknown = set(k.get("checks", [])) - set(checks)
        if unknown:
            raise RuleError(f"{where}:1: kinds.{name}.checks: unknown check(s) {', '.join(sorted(unknown))}")
        if k.get("anywhere") and not k.get("markers"):
            raise RuleError(f"{where}:1: kinds.{name}: 'anywhere' needs markers")


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
    dialects = rs.section("dialects")
    if dialects is None:
        return
    where = _where(rs, "dialects")
    kinds = rs.section("kinds") or {}
    voc = rs.section("vocabulary") or {}
    if not isinstance(dialects, dict):
        raise RuleError(f"{where}:1: 'dialects' must be a mapping")
    for name, d in dialects.items():
        where = _where(rs, f"dialects.{name}")
        _fields(where, f"dialects.{name}", d, {"kinds": list, "paths": dict, "strip_prefix": str, "skip": list,
                                               "doc": str, "title": str, "detect": list, "cosmetic": list,
                                               "defaults": str})
        if d.get("defaults", "none") not in ("none", "megatron", "hf", "deepspeed"):
            raise RuleError(f"{where}:1: dialects.{name}.defaults must be none, megatron, hf or deepspeed")
        unknown = set(d.get("kinds", [])) - set(kinds)
        if not d.get("kinds") or unknown:
            raise RuleError(f"{where}:1: dialects.{name}.kinds must name known kinds (unknown: {sorted(unknown)})")
        for path, key in (d.get("paths") or {}).items():
            if not isinstance(path, str) or key not in voc:
                raise RuleError(f"{where}:1: dialects.{name}.paths: {path!r} -> {key!r} is not a vocabulary key")


@validator
def check_aliases(rs: RuleSet) -> None:
    """rules/aliases.yaml: neutral_sections (names), cosmetic_names (names and sections
    patterns), device_port (names, gpu and npu value patterns; its mask rule is SD015's name)."""
    where = _where(rs, "neutral_sections")
    neutral = rs.section("neutral_sections")
    if neutral is not None and not (isinstance(neutral, list) and all(
            isinstance(x, str) and x and x == x.lower() and "." not in x for x in neutral)):
        raise RuleError(f"{where}:1: neutral_sections must be a list of lower-case section names")
    cos = rs.section("cosmetic_names")
    if cos is not None:
        where = _where(rs, "cosmetic_names")
        if not isinstance(cos, dict) or set(cos) - {"names", "sections"}:
            raise RuleError(f"{where}:1: cosmetic_names must be a mapping with names and sections")
        for lst in ("names", "sections"):
            v = cos.get(lst, [])
            if not isinstance(v, list) or not all(isinstance(x, str) and x and x == x.lower() for x in v):
                raise RuleError(f"{where}:1: cosmetic_names.{lst} must be a list of lower-case patterns")
    dev = rs.section("device_port")
    if dev is not None:
        where = _where(rs, "device_port")
        if not isinstance(dev, dict) or set(dev) != {"names", "gpu", "npu"} or not all(
                isinstance(dev[k], list) and dev[k] and all(isinstance(x, str) and x == x.lower() for x in dev[k])
                for k in dev):
            raise RuleError(f"{where}:1: device_port needs non-empty lower-case lists names, gpu and npu")
        if not any(r.name == "device-setting-port" and r.kind == "mask" for r in rs.rules.values()):
            raise RuleError(f"{where}:1: device_port needs the mask rule device-setting-port")


@validator
def check_value_ports(rs: RuleSet) -> None:
    """rules/vocabulary.yaml `value_ports:`: per vocabulary key, written value -> canonical value."""
    ports = rs.section("value_ports")
    if ports is None:
        return
    where = _where(rs, "value_ports")
    if not isinstance(ports, dict):
        raise RuleError(f"{where}:1: value_ports must map vocabulary keys to tables")
    voc = rs.section("vocabulary") or {}
    for key, table in ports.items():
        if key not in voc:
            raise RuleError(f"{where}:1: value_ports.{key}: {key!r} is not a vocabulary key")
        if not isinstance(table, dict) or not table:
            raise RuleError(f"{where}:1: value_ports.{key} must map written values to canonical values")
        for written, value in table.items():
            if not isinstance(written, str) or not written or written != written.lower():
                raise RuleError(f"{where}:1: value_ports.{key}: {written!r} must be a lower-case string "
                                f"(quote yes/no/true/false/null)")
            if not isinstance(value, (str, bool, int, float)):
                raise RuleError(f"{where}:1: value_ports.{key}.{written}: {value!r} must be a string, "
                                f"a boolean or a number")


SECRET_LISTS = ("words", "suffixes", "not_secret")


@validator
def check_secrets(rs: RuleSet) -> None:
    """rules/secrets.yaml `secrets:`: lists of upper-case words (an entry of several words joins
    them with _; a suffix is one word)."""
    sec = rs.section("secrets")
    if sec is None:
        return
    where = _where(rs, "secrets")
    if not isinstance(sec, dict):
        raise RuleError(f"{where}:1: secrets must be a mapping of {', '.join(SECRET_LISTS)}")
    unknown = set(sec) - set(SECRET_LISTS)
    if unknown:
        raise RuleError(f"{where}:1: secrets: unknown field(s) {sorted(unknown)}")
    if not sec.get("words") or not sec.get("suffixes"):
        raise RuleError(f"{where}:1: secrets needs non-empty 'words' and 'suffixes' lists")
    for lst in SECRET_LISTS:
        entries = sec.get(lst, []) or []
        if not isinstance(entries, list):
            raise RuleError(f"{where}:1: secrets.{lst} must be a list")
        for e in entries:
            words = e.split("_") if isinstance(e, str) else []
            if not words or not all(w.isalnum() and w.isascii() and w == w.upper() for w in words):
                raise RuleError(f"{where}:1: secrets.{lst}: {e!r} must be upper-case words joined by _")
            if lst == "suffixes" and len(words) > 1:
                raise RuleError(f"{where}:1: secrets.suffixes: {e!r} must be one word")


@validator
def check_secret_values(rs: RuleSet) -> None:
    """rules/secrets.yaml `secret_values:` (scriptdiff.secrets.is_secret_value): upper-case
    query names and schemes, token prefixes with a minimum length, the entropy thresholds."""
    sv = rs.section("secret_values")
    if sv is None:
        return
    where = _where(rs, "secret_values")
    fields = {"query_names", "schemes", "token_prefixes", "entropy"}
    if not isinstance(sv, dict) or set(sv) - fields:
        raise RuleError(f"{where}:1: secret_values must be a mapping of {', '.join(sorted(fields))}")
    for lst in ("query_names", "schemes"):
        for e in sv.get(lst, []) or []:
            if not isinstance(e, str) or not e.replace("_", "").isalnum() or e != e.upper():
                raise RuleError(f"{where}:1: secret_values.{lst}: {e!r} must be an upper-case word")
    for e in sv.get("token_prefixes", []) or []:
        if not (isinstance(e, dict) and set(e) == {"prefix", "min"} and isinstance(e["prefix"], str)
                and len(e["prefix"]) >= 3 and isinstance(e["min"], int) and e["min"] >= 8):
            raise RuleError(f"{where}:1: secret_values.token_prefixes: {e!r} needs a prefix (3 characters "
                            f"or more) and a min length (8 or more)")
    ent = sv.get("entropy") or {}
    if set(ent) != {"min_length", "min_bits"} or not isinstance(ent["min_length"], int) \
            or ent["min_length"] < 16 or not isinstance(ent["min_bits"], (int, float)) or not 3 <= ent["min_bits"] <= 6:
        raise RuleError(f"{where}:1: secret_values.entropy needs min_length (16 or more) and min_bits (3 to 6)")


@validator
def check_launchers(rs: RuleSet) -> None:
    """rules/shell.yaml `launchers:` section: one well-formed entry per launcher, each command
    word and module claimed once, and the shared option, reference and hint tables as lists."""
    d = rs.section("launchers")
    if d is None:
        return
    where = _where(rs, "launchers")
    programs = ("after-options", "interpreter", "subcommand", "wrapper")  # lang/shell/launchers.py reads these

    def strings(v, what, allow_empty=True):
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v) or (not allow_empty and not v):
            raise RuleError(f"{where}:1: launchers.{what} must be a {'' if allow_empty else 'non-empty '}"
                            f"list of strings (got {v!r})")

    if not isinstance(d, dict):
        raise RuleError(f"{where}:1: 'launchers' must be a mapping")
    unknown = set(d) - {"flags", "entries", "references", "hints", "shared", "npu_only_flags"}
    if unknown:
        raise RuleError(f"{where}:1: launchers: unknown field(s) {sorted(unknown)}")
    strings(d.get("flags", []), "flags")
    strings(d.get("npu_only_flags", []), "npu_only_flags")
    entries = d.get("entries")
    if not isinstance(entries, list) or not entries:
        raise RuleError(f"{where}:1: launchers.entries must be a non-empty list, one entry per launcher")
    fields = {"name", "commands", "modules", "versioned", "subcommands", "program", "module_only", "flags",
              "framework", "world_size", "devices", "environment"}
    names: set = set()
    claimed: dict[str, str] = {}
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) or not e["name"]:
            raise RuleError(f"{where}:1: launchers.entries[{i}] must be a mapping with a name")
        name = e["name"]
        at = f"entries[{i}] ({name})"
        unknown = set(e) - fields
        if unknown:
            raise RuleError(f"{where}:1: launchers.{at}: unknown field(s) {sorted(unknown)}")
        if name in names:
            raise RuleError(f"{where}:1: launchers.{at}: the name {name!r} is used twice")
        names.add(name)
        program = e.get("program")
        if program not in programs:
            raise RuleError(f"{where}:1: launchers.{at}: program must be one of {', '.join(programs)} (got {program!r})")
        for lst in ("commands", "modules", "subcommands", "flags", "world_size", "environment"):
            strings(e.get(lst, []), f"{at}.{lst}")
        if not e.get("commands") and not e.get("modules"):
            raise RuleError(f"{where}:1: launchers.{at}: needs commands or modules to be recognised by")
        if e.get("modules") and program != "after-options":
            raise RuleError(f"{where}:1: launchers.{at}: modules (python -m MODULE) need program after-options")
        if program == "subcommand" and not e.get("subcommands"):
            raise RuleError(f"{where}:1: launchers.{at}: program subcommand needs a subcommands list")
        for flag in ("versioned", "module_only"):
            if not isinstance(e.get(flag, False), bool):
                raise RuleError(f"{where}:1: launchers.{at}.{flag} must be true or false")
        if e.get("module_only") and program != "interpreter":
            raise RuleError(f"{where}:1: launchers.{at}: module_only is for program interpreter")
        if e.get("framework") is not None and e["framework"] not in ("megatron", "hf", "deepspeed"):
            raise RuleError(f"{where}:1: launchers.{at}.framework must be megatron, hf or deepspeed")
        if e.get("devices") is not None and (not isinstance(e["devices"], str) or not e["devices"]):
            raise RuleError(f"{where}:1: launchers.{at}.devices must name an option")
        for kind in ("commands", "modules"):
            for word in e.get(kind) or []:
                tag = f"{kind[:-1]} {word}"
                if tag in claimed:
                    raise RuleError(f"{where}:1: launchers.{at}: {tag} is also {claimed[tag]}'s")
                claimed[tag] = name
    refs = d.get("references", {})
    if not isinstance(refs, dict) or set(refs) - {"flags", "suffixes"}:
        raise RuleError(f"{where}:1: launchers.references must be a mapping with flags and suffixes")
    strings(refs.get("flags", []), "references.flags")
    strings(refs.get("suffixes", []), "references.suffixes")
    if not all(s.startswith(".") for s in refs.get("suffixes", [])):
        raise RuleError(f"{where}:1: launchers.references.suffixes must start with a dot (.yaml)")
    hints = d.get("hints", {})
    if not isinstance(hints, dict) or set(hints) - {"megatron", "hf", "megatron_scripts"}:
        raise RuleError(f"{where}:1: launchers.hints must be a mapping with megatron, hf and megatron_scripts lists")
    for fw in ("megatron", "hf", "megatron_scripts"):
        strings(hints.get(fw, []), f"hints.{fw}")
    shared = d.get("shared", {})
    if not isinstance(shared, dict) or set(shared) - {"facts", "settings", "references"}:
        raise RuleError(f"{where}:1: launchers.shared must be a mapping with facts, settings and references")
    facts = shared.get("facts", {})
    if not isinstance(facts, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in facts.items()):
        raise RuleError(f"{where}:1: launchers.shared.facts must map launcher options to keys")
    strings(shared.get("settings", []), "shared.settings")
    strings(shared.get("references", []), "shared.references")


ASCEND_LISTS = {  # list -> (its fields: the version kind of each, "pep440" | "cann" | "text"; the sort fields)
    "torch_npu": ({"torch_npu": "pep440", "torch": "pep440", "cann": "cann"}, ("torch_npu",)),
    "cann": ({"release": "cann"}, ("release",)),
    "hdk": ({"cann": "cann", "hdk": "cann"}, ("cann",)),
    "mindspeed": ({"branch": "text", "megatron_core": "pep440", "released": "date"}, ("megatron_core", "released")),
    "mindspeed_llm": ({"version": "pep440", "mindspeed": "text", "megatron_core": "pep440"}, ("version",)),
}
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@validator
def check_ascend_versions(rs: RuleSet) -> None:
    """rules/ascend_versions.yaml: every table says where and when it was read, every row names
    its table, every version parses (PEP 440 for Python packages, CANN's own form for CANN
    and the HDK), and each list is sorted by its version."""
    from packaging.version import InvalidVersion, Version

    d = rs.section("ascend_versions")
    if d is None:
        return
    where = _where(rs, "ascend_versions")
    if not isinstance(d, dict) or set(d) - {"tables", *ASCEND_LISTS}:
        raise RuleError(f"{where}:1: ascend_versions must be a mapping of tables and {', '.join(ASCEND_LISTS)}")
    tables = d.get("tables")
    if not isinstance(tables, dict) or not tables:
        raise RuleError(f"{where}:1: ascend_versions.tables must name at least one source")
    for tid, t in tables.items():
        at = f"ascend_versions.tables.{tid}"
        if not isinstance(t, dict) or not all(isinstance(t.get(k), str) and t[k] for k in ("label", "title", "url")):
            raise RuleError(f"{where}:1: {at} needs a label, a title and a url")
        if not _DATE.match(str(t.get("date", ""))) or t.get("dated_by") not in ("commit", "read"):
            raise RuleError(f"{where}:1: {at} needs a date (YYYY-MM-DD, quoted) and dated_by: commit or read")
        if t["dated_by"] == "commit" and not (t.get("repo") and t.get("path") and _COMMIT.match(str(t.get("commit")))):
            raise RuleError(f"{where}:1: {at}: a table dated by its commit names its repo, path and commit (40 hex)")

    def parsed(kind: str, value, at: str):
        if not isinstance(value, str) or not value:
            raise RuleError(f"{where}:1: {at} must be a quoted version string (got {value!r})")
        if kind == "pep440":
            try:
                return Version(value)
            except InvalidVersion:
                raise RuleError(f"{where}:1: {at}: {value!r} is not a PEP 440 version") from None
        if kind == "cann":
            p = parse_cann(value)
            if p is None:
                raise RuleError(f"{where}:1: {at}: {value!r} is not a CANN version")
            return p.key()
        if kind == "date" and not _DATE.match(value):
            raise RuleError(f"{where}:1: {at}: {value!r} is not a date (YYYY-MM-DD)")
        return value

    for name, (fields, order) in ASCEND_LISTS.items():
        rows = d.get(name, [])
        if not isinstance(rows, list):
            raise RuleError(f"{where}:1: ascend_versions.{name} must be a list")
        last = None
        for i, row in enumerate(rows):
            at = f"ascend_versions.{name}[{i}]"
            if not isinstance(row, dict):
                raise RuleError(f"{where}:1: {at} must be a mapping")
            extra = {"source", "note", "commercial", "community"} if name == "cann" else {"source", "note"}
            unknown = set(row) - set(fields) - extra
            if unknown:
                raise RuleError(f"{where}:1: {at}: unknown field(s) {sorted(unknown)}")
            if row.get("source") not in tables:
                raise RuleError(f"{where}:1: {at}: source {row.get('source')!r} is not one of ascend_versions.tables")
            keys = {f: parsed(kind, row.get(f), f"{at}.{f}") for f, kind in fields.items()}
            for lst in ("commercial", "community"):
                if lst in row:
                    if not isinstance(row[lst], list) or not row[lst]:
                        raise RuleError(f"{where}:1: {at}.{lst} must be a non-empty list of versions")
                    for j, v in enumerate(row[lst]):
                        parsed("cann", v, f"{at}.{lst}[{j}]")
            key = tuple(keys[f] for f in order)
            if last is not None and not last < key:
                raise RuleError(f"{where}:1: {at} is out of order (ascend_versions.{name} is sorted by "
                                f"{' then '.join(order)}, each once)")
            last = key
    branches = {r.get("branch") for r in d.get("mindspeed", [])}
    for i, row in enumerate(d.get("mindspeed_llm", [])):
        if row.get("mindspeed") not in branches:
            raise RuleError(f"{where}:1: ascend_versions.mindspeed_llm[{i}]: MindSpeed branch "
                            f"{row.get('mindspeed')!r} is not in ascend_versions.mindspeed")


_DEVICE_FAMILIES = ("cuda", "npu", "other")


@validator
def check_devices(rs: RuleSet) -> None:
    """rules/devices.yaml `devices:`: the device tests (docs/devices.md). Families are cuda,
    npu or other; each test has an idiom, a non-empty match list and an example with what its
    first device test evaluates to on each side; masks name mask rules; switches say what
    they do."""
    dev = rs.section("devices")
    if dev is None:
        return
    where = _where(rs, "devices")

    def fail(msg: str):
        raise RuleError(f"{where}:1: devices.{msg}")

    def strings(v, what: str, empty: bool = False) -> list:
        if not isinstance(v, list) or (not v and not empty) or not all(isinstance(x, str) and x for x in v):
            fail(f"{what} must be a {'' if empty else 'non-empty '}list of strings")
        return v

    def example(e: dict, what: str) -> None:
        if not isinstance(e.get("example"), str) or not e["example"].strip():
            fail(f"{what} needs an example (code the tests run)")
        exp = e.get("expect")
        if not isinstance(exp, dict) or set(exp) != {"gpu", "npu"} or not all(isinstance(v, bool) for v in exp.values()):
            fail(f"{what}.expect must give gpu and npu true or false")

    if not isinstance(dev, dict) or set(dev) - {"sides", "families", "python", "shell"}:
        fail("must be a mapping of sides, families, python and shell")
    sides = dev.get("sides")
    if not isinstance(sides, dict) or set(sides) != {"gpu", "npu"} or sides.get("gpu") != "cuda" \
            or sides.get("npu") != "npu":
        fail("sides must be {gpu: cuda, npu: npu}")
    fams = dev.get("families")
    if not isinstance(fams, dict) or set(fams) != set(_DEVICE_FAMILIES):
        fail("families must name the cuda, npu and other device names")
    seen: dict = {}
    for fam, names in fams.items():
        for n in strings(names, f"families.{fam}"):
            if n != n.lower() or n in seen:
                fail(f"families.{fam}: {n!r} must be lower case and in one family only")
            seen[n] = fam
    py = dev.get("python") or {}
    if not isinstance(py, dict):
        fail("python must be a mapping")
    for part in ("calls", "attributes", "modules"):
        entries = py.get(part) or []
        if not isinstance(entries, list):
            fail(f"python.{part} must be a list")
        for i, e in enumerate(entries):
            what = f"python.{part}[{i}]"
            if not isinstance(e, dict) or set(e) - {"idiom", "family", "match", "example", "expect", "mask"}:
                fail(f"{what} must be a mapping of idiom, family, match, example, expect (and mask)")
            if not isinstance(e.get("idiom"), str) or e.get("family") not in _DEVICE_FAMILIES:
                fail(f"{what} needs an idiom and a family (cuda, npu or other)")
            strings(e.get("match"), f"{what}.match")
            example(e, what)
            if "mask" in e:
                r = next((r for r in rs.rules.values() if r.name == e["mask"]), None)
                if r is None or r.kind != "mask":
                    fail(f"{what}.mask: {e['mask']!r} is not the name of a mask rule")
    for part in ("holders", "device_calls"):
        e = py.get(part)
        if e is None:
            continue
        if not isinstance(e, dict) or not isinstance(e.get("idiom"), str):
            fail(f"python.{part} must be a mapping with an idiom")
        strings(e.get("match"), f"python.{part}.match")
        example(e, f"python.{part}")
    for part in ("find_module", "npu_tuning", "tensor_devices"):
        if part in py:
            strings(py[part], f"python.{part}")
    cuda_on_npu = py.get("cuda_on_npu")
    if cuda_on_npu is not None:
        if not isinstance(cuda_on_npu, dict):
            fail("python.cuda_on_npu must be a mapping")
        strings(cuda_on_npu.get("patched_by"), "python.cuda_on_npu.patched_by")
    for qn, sw in (py.get("cuda_switches") or {}).items():
        if not isinstance(sw, dict) or set(sw) - {"determinism", "tf32", "npu_way", "source", "note"} \
                or ("determinism" in sw) == ("tf32" in sw) or not isinstance(sw.get("note"), str):
            fail(f"python.cuda_switches.{qn}: give determinism (the deterministic value) or tf32, and a note")
        if "determinism" in sw and not (isinstance(sw.get("npu_way"), str) and isinstance(sw.get("source"), str)):
            fail(f"python.cuda_switches.{qn}: a determinism switch names the NPU way and its source")
    sh = dev.get("shell") or {}
    if not isinstance(sh, dict):
        fail("shell must be a mapping")
    for part, e in sh.items():
        what = f"shell.{part}"
        if part not in ("commands", "paths", "variables", "holders", "python_imports") or not isinstance(e, dict):
            fail(f"{what}: unknown part (commands, paths, variables, holders, python_imports)")
        if not isinstance(e.get("idiom"), str):
            fail(f"{what} needs an idiom")
        for fam in _DEVICE_FAMILIES:
            if fam in e:
                strings(e[fam], f"{what}.{fam}", empty=True)
        if part == "holders":
            strings(e.get("match"), f"{what}.match")
        example(e, what)

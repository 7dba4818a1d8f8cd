"""Validators for the data sections of the rule packs (registered with rules.validator).

Each checks one section's shape and cross-references (a category names a real rule code),
raising RuleError that names the pack file. A module that adds a section adds its
validator here.
"""
from __future__ import annotations

from .rules import RuleError, RuleSet, validator

TYPES = {"float", "int", "bool", "str", "list", "dtype"}
FRAMEWORK_FIELDS = {"megatron", "hf", "deepspeed", "python", "other"}


def _where(rs: RuleSet, section: str) -> str:
    return rs.section_origin.get(section, "rules/?")


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
        unknown = set(entry) - FRAMEWORK_FIELDS - {"category", "type", "default", "values", "doc"}
        if unknown:
            raise RuleError(f"{where}:1: vocabulary key {key!r}: unknown field(s) {sorted(unknown)}")
        if entry.get("category") not in cats:
            raise RuleError(f"{where}:1: vocabulary key {key!r}: unknown category {entry.get('category')!r}")
        if entry.get("type") not in TYPES:
            raise RuleError(f"{where}:1: vocabulary key {key!r}: type must be one of {sorted(TYPES)}")
        for fw in ("megatron", "hf", "deepspeed"):
            for spelling in entry.get(fw, []) or []:
                tag = f"{fw}:{spelling}"
                if tag in seen and seen[tag] != key:
                    raise RuleError(f"{where}:1: spelling {tag} maps to both {seen[tag]} and {key}")
                seen[tag] = key


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

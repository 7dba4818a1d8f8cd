"""The rule-pack format: parse and validate rules/*.yaml (scriptdiff.rules loads them once).

Every pack is a YAML mapping. Its `rules:` list is the catalogue (one entry per stable
rule code, with check, severity, summary, doc and examples that the tests run); every other
top-level key is a named *section* of data (substitution masks, the hyperparameter
vocabulary, the GPU<->NPU environment-variable table, ...) read by the module that needs it
through `section(name)`. A malformed pack stops the run with an error that names the pack
file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model import SEVERITIES
from .store import rules_dir  # noqa: F401  (where the packs are: shared with the cache's salt)
from .yamlload import YAMLError, load

CODE_RE = re.compile(r"^SD\d{3}$")
# sections that several packs may each contribute to (entries merge by name; a name
# given twice is an error): a new file kind, check or dialect lives in its own pack
MERGED_SECTIONS = ("kinds", "checks", "dialects")
KINDS = ("finding", "mask")


class RuleError(Exception):
    """A rule pack is malformed. str() is one line: file:line: reason."""


@dataclass
class Example:
    lang: str
    gpu: str
    npu: str
    fires: bool
    note: str = ""
    line: int | None = None
    # optional file names (e.g. 'pretrain.sh', 'ds_config.json') when the extension is not enough
    gpu_name: str | None = None
    npu_name: str | None = None


@dataclass
class Rule:
    code: str
    name: str
    check: str
    kind: str  # finding | mask
    severity: str  # error | warning | info (for masks: "masked")
    summary: str
    doc: str
    examples: list[Example] = field(default_factory=list)
    pack: str = ""
    line: int | None = None


@dataclass
class RuleSet:
    rules: dict[str, Rule]
    sections: dict[str, Any]
    section_origin: dict[str, str]
    # the line of each node of the merged sections (("kinds", "toml", "lexer") -> 17), for the
    # validators' messages while the packs load; a RuleSet read back from the cache has none
    lines: dict[tuple, int] = field(default_factory=dict, compare=False, repr=False)

    def rule(self, code: str) -> Rule:
        return self.rules[code]

    def section(self, name: str, default: Any = None) -> Any:
        return self.sections.get(name, default)

    def severity(self, code: str) -> str:
        return self.rules[code].severity


def _fail(pack: str, line: int | None, msg: str):
    raise RuleError(f"{pack}:{line or 1}: {msg}")


def _str(entry: dict, key: str, pack: str, line: int | None, required: bool = True) -> str:
    v = entry.get(key)
    if v is None and not required:
        return ""
    if not isinstance(v, str) or not v.strip():
        _fail(pack, line, f"rule field '{key}' must be a non-empty string")
    return v


def parse_pack(text: str, pack: str, checks=None, kinds=None) -> tuple[list[Rule], dict[str, Any]]:
    """One pack's rules and data sections. Each rule's check and each example's kind must be
    declared (`checks`, `kinds`: the names; by default those of the packs shipped here)."""
    rules, sections, _lines = _parse(text, pack)
    if checks is None or kinds is None:
        shipped = shipped_names()
        checks = shipped["checks"] if checks is None else checks
        kinds = shipped["kinds"] if kinds is None else kinds
    _check_names(rules, set(checks) | set((sections.get("checks") or {})),
                 set(kinds) | set((sections.get("kinds") or {})))
    return rules, sections


def _check_names(rules: list[Rule], checks: set, kinds: set) -> None:
    for r in rules:
        if r.check not in checks:
            _fail(r.pack, r.line, f"{r.code}: check {r.check!r} is not one of {', '.join(sorted(checks))}")
        for ex in r.examples:
            if ex.lang not in kinds:
                _fail(r.pack, ex.line, f"{r.code}: example lang must be one of {', '.join(sorted(kinds))}")


def shipped_names() -> dict[str, set]:
    """The check and kind names the packs shipped with this build declare."""
    out: dict[str, set] = {"checks": set(), "kinds": set()}
    for path in sorted(rules_dir().glob("*.yaml")):
        try:
            data, _ = load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, YAMLError):
            continue
        for name in out:
            if isinstance(data, dict) and isinstance(data.get(name), dict):
                out[name] |= set(data[name])
    return out


def _parse(text: str, pack: str) -> tuple[list[Rule], dict[str, Any], dict[tuple, int]]:
    try:
        data, lines = load(text)
    except YAMLError as e:
        _fail(pack, e.line, f"not valid YAML: {e}")
    if data is None:
        return [], {}, {}
    if not isinstance(data, dict):
        _fail(pack, 1, "a rule pack must be a mapping")
    rules: list[Rule] = []
    raw_rules = data.get("rules", []) or []
    if not isinstance(raw_rules, list):
        _fail(pack, lines.get(("rules",)), "'rules' must be a list")
    for i, entry in enumerate(raw_rules):
        line = lines.get(("rules", i))
        if not isinstance(entry, dict):
            _fail(pack, line, "each rule must be a mapping")
        unknown = set(entry) - {"code", "name", "check", "kind", "severity", "summary", "doc", "examples"}
        if unknown:
            _fail(pack, line, f"unknown rule field(s): {', '.join(sorted(unknown))}")
        code = _str(entry, "code", pack, line)
        if not CODE_RE.match(code):
            _fail(pack, line, f"rule code {code!r} is not of the form SD123")
        kind = entry.get("kind", "finding")
        if kind not in KINDS:
            _fail(pack, line, f"{code}: kind must be one of {', '.join(KINDS)}")
        check = _str(entry, "check", pack, line)
        severity = entry.get("severity", "masked" if kind == "mask" else None)
        if kind == "finding" and severity not in SEVERITIES:
            _fail(pack, line, f"{code}: severity must be one of {', '.join(SEVERITIES)}")
        if kind == "mask":
            severity = "masked"
        examples = []
        raw_ex = entry.get("examples")
        if not isinstance(raw_ex, list) or not raw_ex:
            _fail(pack, line, f"{code}: a rule needs examples (at least one that fires and one that does not)")
        for j, ex in enumerate(raw_ex):
            eline = lines.get(("rules", i, "examples", j))
            if not isinstance(ex, dict):
                _fail(pack, eline, f"{code}: each example must be a mapping")
            unknown = set(ex) - {"lang", "gpu", "npu", "fires", "note", "gpu_name", "npu_name"}
            if unknown:
                _fail(pack, eline, f"{code}: unknown example field(s): {', '.join(sorted(unknown))}")
            lang = ex.get("lang")
            if not isinstance(lang, str):
                _fail(pack, eline, f"{code}: example needs a 'lang' (a file kind)")
            if not isinstance(ex.get("fires"), bool):
                _fail(pack, eline, f"{code}: example needs 'fires: true' or 'fires: false'")
            for side in ("gpu", "npu"):
                if not isinstance(ex.get(side), str):
                    _fail(pack, eline, f"{code}: example needs '{side}' text")
            examples.append(Example(lang=lang, gpu=ex["gpu"], npu=ex["npu"], fires=ex["fires"],
                                    note=str(ex.get("note", "")), line=eline,
                                    gpu_name=ex.get("gpu_name"), npu_name=ex.get("npu_name")))
        if not any(e.fires for e in examples) or all(e.fires for e in examples):
            _fail(pack, line, f"{code}: needs at least one example that fires and one that does not")
        rules.append(Rule(code=code, name=_str(entry, "name", pack, line), check=check, kind=kind,
                          severity=severity, summary=_str(entry, "summary", pack, line),
                          doc=_str(entry, "doc", pack, line), examples=examples, pack=pack, line=line))
    sections = {k: v for k, v in data.items() if k != "rules"}
    return rules, sections, lines


def load_packs(paths: list[Path]) -> RuleSet:
    rules: dict[str, Rule] = {}
    sections: dict[str, Any] = {}
    origin: dict[str, str] = {}
    node_lines: dict[tuple, int] = {}
    for path in sorted(paths):
        pack = f"rules/{path.name}"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise RuleError(f"{pack}:1: cannot read rule pack: {e}") from None
        pack_rules, pack_sections, pack_lines = _parse(text, pack)
        node_lines.update((p, n) for p, n in pack_lines.items() if p and p[0] in MERGED_SECTIONS)
        for r in pack_rules:
            if r.code in rules:
                _fail(pack, r.line, f"duplicate rule code {r.code} (also in {rules[r.code].pack})")
            rules[r.code] = r
        for name, value in pack_sections.items():
            if name in MERGED_SECTIONS and isinstance(value, dict) and isinstance(sections.get(name, {}), dict):
                twice = set(value) & set(sections.get(name, {}))
                if twice:
                    also = ", ".join(sorted({origin.get(f"{name}.{e}", origin[name]) for e in twice}))  # the entry's pack
                    _fail(pack, 1, f"{name} {', '.join(sorted(twice))} defined twice (also in {also})")
                sections.setdefault(name, {}).update(value)
                origin.setdefault(name, pack)
                origin.update({f"{name}.{entry}": pack for entry in value})  # validators name the right pack
                continue
            if name in sections:
                _fail(pack, 1, f"section '{name}' is defined twice (also in {origin[name]})")
            sections[name] = value
            origin[name] = pack
    # a subset of packs without the registries (a test, a tool) is checked against the shipped ones
    shipped = shipped_names() if not (sections.get("checks") and sections.get("kinds")) else None
    _check_names(list(rules.values()), set(sections.get("checks") or shipped["checks"]),
                 set(sections.get("kinds") or shipped["kinds"]))
    rs = RuleSet(rules=dict(sorted(rules.items())), sections=sections, section_origin=origin, lines=node_lines)
    for check in VALIDATORS:
        check(rs)
    return rs


# Section validators, registered with @validator (scriptdiff.rule_validators holds them all;
# tests/test_rules_loader.py fails on a check_* function there that is not registered).
VALIDATORS: list = []


def validator(fn):
    """Register a section validator: fn(ruleset) raises RuleError on bad data."""
    VALIDATORS.append(fn)
    return fn

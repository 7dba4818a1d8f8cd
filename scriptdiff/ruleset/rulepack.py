"""The rule-pack format: parse and validate rules/*.yaml (scriptdiff.ruleset.rules loads them once).

Every pack is a YAML mapping. Its `rules:` list is the catalogue (one entry per stable
rule code, with check, severity, summary, doc and examples that the tests run); every other
top-level key is a named *section* of data (substitution masks, the hyperparameter
vocabulary, the GPU<->NPU environment-variable table, ...) read by the module that needs it
through `section(name)`. Each section has a schema (scriptdiff.ruleset.rule_validators declares
them in scriptdiff.ruleset.packschema's terms): `load_packs` checks each pack's part of a section,
merges the parts in load order (the shipped packs, then the user's), and validates the whole.
A malformed pack stops the run with an error that names the pack file and the line of the
node that is wrong.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..model import SEVERITIES
from .packschema import Merge, Positions, RuleError, Schema, Table
from .packschema import check as check_node
from .. import budget
from ..inputs.sources import SourceError, read_bytes
from ..inputs.store import rules_dir  # noqa: F401  (where the packs are: shared with the cache's salt)
from ..inputs.yamlload import Nodes, YAMLError, load

# A shipped rule's code is SD and three digits (its hundreds say its check: DEVELOPERS.md);
# a rule of a user's pack (--rules DIR) is SDX and three digits, so that no code a later
# release ships can ever be one a team has already given its own rule.
CODE_RE = re.compile(r"^SD\d{3}$")
USER_CODE_RE = re.compile(r"^SDX\d{3}$")
KINDS = ("finding", "mask")


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
    # other files written beside both sides' files (name -> text), e.g. the program a launch
    # script starts
    files: dict[str, str] = field(default_factory=dict)


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
    user: bool = False  # from a user's pack (--rules DIR), not shipped with scriptdiff
    # a mask's fidelity (docs/fidelity.md): what the masked port edit keeps, from the rule's
    # fields of RULE_FIELDS (fidelity, source, reason, consequence, lowers_precision)
    fidelity: dict = field(default_factory=dict)


@dataclass
class RuleSet:
    rules: dict[str, Rule]
    sections: dict[str, Any]
    section_origin: dict[str, str]
    # where each node of the sections came from (pack, line), while the packs are validated;
    # None for a RuleSet read back from the cache or built by hand
    positions: Positions | None = field(default=None, repr=False, compare=False)
    _conformed: set = field(default_factory=set, repr=False, compare=False)
    # the tables derived from this rule set (view), each built on first use
    _views: dict = field(default_factory=dict, repr=False, compare=False)

    def view(self, build: Callable[[RuleSet], Any]) -> Any:
        """`build(self)`, built once for this rule set: a table derived from the packs (the
        launcher table, the spelling index, ...). Another rule set (the user's packs changed:
        rules.use_packs) has views of its own, so a table never outlives the packs it was built
        from. scriptdiff.ruleset.rules.derived makes a function of the rule set in use of it."""
        try:
            return self._views[build]
        except KeyError:
            made = self._views[build] = build(self)
            return made

    def __getstate__(self) -> dict:
        """A rule set sent to a reader process (run/zygote.py) goes without its views: they may
        hold compiled patterns and parsers, and the reader builds those it uses."""
        return {**self.__dict__, "_views": {}}

    def rule(self, code: str) -> Rule:
        return self.rules[code]

    def section(self, name: str, default: Any = None) -> Any:
        return self.sections.get(name, default)

    def severity(self, code: str) -> str:
        return self.rules[code].severity

    def _positions(self) -> Positions:
        if self.positions is None:  # built by hand: each section at its pack's first line
            self.positions = Positions()
            for name, pack in self.section_origin.items():
                path = tuple(name.split(".", 1))
                self.positions.table[path] = (pack, 1, path)
        return self.positions

    def error(self, path: tuple, message: str) -> RuleError:
        """The error about the section node at `path` ("launchers", "entries", 2, "commands"),
        at the file and line that node came from: raise it."""
        return self._positions().error(path, message)

    def where(self, path: tuple) -> str:
        """pack:line of the node at `path`."""
        return self._positions().where(path)

    def conform(self, *names: str) -> None:
        """Check these sections against their schemas (once each; absent ones are skipped)."""
        for name in names:
            if name in self._conformed or name not in self.sections or name not in SECTIONS:
                continue
            check_node(self.sections[name], SECTIONS[name], (name,), self._positions(), complete=True)
            self._conformed.add(name)


def plain_name(name) -> bool:
    """`name` is one file name (an example's file, written in its own temporary folder): no
    folder part, nothing that could name a place outside that folder."""
    return isinstance(name, str) and name not in ("", ".", "..") and not any(c in name for c in "/\\\0")


def inside_name(name) -> bool:
    """`name` is a relative path that stays inside the folder it is joined to (the files of a
    `dumps` example: dump/dump.json, scripts/train.py): plain names joined by `/`."""
    return isinstance(name, str) and all(plain_name(part) for part in name.split("/"))


def _fail(pack: str, line: int | None, msg: str):
    raise RuleError(f"{pack}:{line or 1}: {msg}")


def _str(entry: dict, key: str, pack: str, line: int | None, required: bool = True) -> str:
    v = entry.get(key)
    if v is None and not required:
        return ""
    if not isinstance(v, str) or not v.strip():
        _fail(pack, line, f"rule field '{key}' must be a non-empty string")
    return v


def parse_pack(text: str, pack: str, checks=None, kinds=None, user: bool = False) -> tuple[list[Rule], dict[str, Any]]:
    """One pack's rules and data sections. Each rule's check and each example's kind must be
    declared (`checks`, `kinds`: the names; by default those of the packs shipped here).
    `user`: a user's pack, whose rules take SDX codes."""
    rules, sections, _lines = _parse_lines(text, pack, user)
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


def _code(code: str, user: bool) -> str | None:
    """Why `code` cannot be a rule's code in a shipped (or a user's) pack, or None."""
    if (USER_CODE_RE if user else CODE_RE).match(code):
        return None
    if user and CODE_RE.match(code):
        return (f"rule code {code!r} is of the form the shipped packs use (SD123): a rule of your own "
                f"takes a code SDX001 to SDX999, which no release of scriptdiff ships")
    return f"rule code {code!r} is not of the form SD{'X' if user else ''}123"


def _parse_lines(text: str, pack: str, user: bool = False, nodes: Nodes | None = None
                 ) -> tuple[list[Rule], dict[str, Any], dict]:
    """The rules, the data sections and the line table (yamlload) of one pack; `nodes`: what
    the packs may still hold (yamlload.Nodes), else the pack is refused before it is built."""
    try:
        data, lines = load(text, nodes)
    except YAMLError as e:
        _fail(pack, e.line, f"not valid YAML: {e}")
    if data is None:
        return [], {}, lines
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
        unknown = set(entry) - {"code", "name", "check", "kind", "severity", "summary", "doc", "examples"} - set(RULE_FIELDS)
        if unknown:
            _fail(pack, line, f"unknown rule field(s): {', '.join(sorted(unknown))}")
        code = _str(entry, "code", pack, line)
        bad = _code(code, user)
        if bad:
            _fail(pack, lines.get(("rules", i, "code"), line), bad)
        kind = entry.get("kind", "finding")
        if kind not in KINDS:
            _fail(pack, lines.get(("rules", i, "kind"), line), f"{code}: kind must be one of {', '.join(KINDS)}")
        check = _str(entry, "check", pack, lines.get(("rules", i, "check"), line))
        severity = entry.get("severity", "masked" if kind == "mask" else None)
        if kind == "finding" and severity not in SEVERITIES:
            _fail(pack, lines.get(("rules", i, "severity"), line), f"{code}: severity must be one of {', '.join(SEVERITIES)}")
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
            unknown = set(ex) - {"lang", "gpu", "npu", "fires", "note", "gpu_name", "npu_name", "files"}
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
            files = ex.get("files", {})
            if not isinstance(files, dict) or not all(plain_name(k) and isinstance(v, str) for k, v in files.items()):
                _fail(pack, eline, f"{code}: an example's 'files' maps plain file names to their text")
            for key in ("gpu_name", "npu_name"):  # written in the example's folder: never a path out of it
                if key in ex and not plain_name(ex[key]):
                    _fail(pack, lines.get(("rules", i, "examples", j, key), eline),
                          f"{code}: an example's '{key}' is a plain file name, not a path (got {ex[key]!r})")
            examples.append(Example(lang=lang, gpu=ex["gpu"], npu=ex["npu"], fires=ex["fires"],
                                    note=str(ex.get("note", "")), line=eline,
                                    gpu_name=ex.get("gpu_name"), npu_name=ex.get("npu_name"), files=dict(files)))
        if not any(e.fires for e in examples) or all(e.fires for e in examples):
            _fail(pack, line, f"{code}: needs at least one example that fires and one that does not")
        extra = {}
        for name, schema in RULE_FIELDS.items():  # the rule's own data fields, each in its schema
            if name in entry:
                check_node(entry[name], schema, ("rules", i, name), Positions(pack, lines), complete=True, user=user)
                extra[name] = entry[name]
        rules.append(Rule(code=code, name=_str(entry, "name", pack, line), check=check, kind=kind,
                          severity=severity, summary=_str(entry, "summary", pack, line),
                          doc=_str(entry, "doc", pack, line), examples=examples, pack=pack, line=line,
                          user=user, fidelity=extra))
    sections = {k: v for k, v in data.items() if k != "rules"}
    return rules, sections, lines


def load_packs(paths: list[Path], user: list[Path] = ()) -> RuleSet:
    """The packs shipped with scriptdiff (`paths`, named rules/NAME) and then the user's
    (`user`, named by their path), merged section by section as each section's schema says
    (scriptdiff.ruleset.packschema) and validated. A user's rule takes a code of its own (USER_CODE_RE)."""
    rules: dict[str, Rule] = {}
    sections: dict[str, Any] = {}
    origin: dict[str, str] = {}
    merged = Positions()
    packs = [(f"rules/{p.name}", p, False) for p in sorted(paths)] + [(str(p), p, True) for p in user]
    left = budget.PACK_BYTES  # what the user's packs may still hold together: bytes, nodes
    nodes = Nodes(budget.PACK_NODES, "the packs of --rules")
    for pack, path, mine in packs:
        text = read_pack(path, pack, left if mine else budget.MAX_READ)
        pack_rules, pack_sections, lines = _parse_lines(text, pack, user=mine, nodes=nodes if mine else None)
        if mine:
            left -= len(text.encode("utf-8", "surrogatepass"))
        for r in pack_rules:
            if r.code in rules:
                _fail(pack, r.line, f"duplicate rule code {r.code} (also in {rules[r.code].pack})")
            rules[r.code] = r
        here = Positions(pack, lines)
        for name, value in pack_sections.items():
            schema = SECTIONS.get(name)
            if schema is None:
                _fail(pack, lines.get((name,)), f"unknown section {name!r} (a pack holds rules and "
                                               f"{', '.join(sorted(SECTIONS))})")
            check_node(value, schema, (name,), here, complete=False, user=mine)
            if name in sections:
                sections[name] = schema.merge(sections[name], value, (name,), (name,), Merge(merged, here))
            else:
                sections[name] = value
                merged.graft(here, (name,), (name,))
                origin[name] = pack
            if isinstance(schema, Table):  # validators and the registry name an entry's own pack
                for entry in value:
                    origin.setdefault(f"{name}.{entry}", pack)
    # a subset of packs without the registries (a test, a tool) is checked against the shipped ones
    shipped = shipped_names() if not (sections.get("checks") and sections.get("kinds")) else None
    _check_names(list(rules.values()), set(sections.get("checks") or shipped["checks"]),
                 set(sections.get("kinds") or shipped["kinds"]))
    rs = RuleSet(rules=dict(sorted(rules.items())), sections=sections, section_origin=origin, positions=merged)
    rs.conform(*sections)
    for validate in VALIDATORS:
        validate(rs)
    return rs


def read_pack(path: Path, pack: str, limit: int) -> str:
    """A pack's text: a regular file only (a FIFO, a device, a kernel pseudo-file such as a
    link to /proc/kmsg are refused before they are opened: reading one would block), of at
    most `limit` bytes (the user's packs together: budget.PACK_BYTES), UTF-8. RuleError, one
    line at the pack's first line, otherwise."""
    try:
        data = read_bytes(path, pack, limit)
    except SourceError as e:
        why = str(e).removeprefix(f"{pack}: ")
        if why.startswith("larger than"):
            why = (f"larger than the {limit:,} bytes the packs of --rules may still hold together "
                   f"(at most {budget.PACK_BYTES:,} in all); not read")
        raise RuleError(f"{pack}:1: cannot read rule pack: {why}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RuleError(f"{pack}:1: cannot read rule pack: not UTF-8 ({e.reason} at byte {e.start})") from None


# The schema of every data section (scriptdiff.ruleset.rule_validators declares them with `section`):
# a pack may hold `rules` and these sections only.
SECTIONS: dict[str, Schema] = {}


def section(name: str, schema: Schema) -> Schema:
    """Declare the schema of data section `name`."""
    SECTIONS[name] = schema
    return schema


# The data fields a rule entry may hold besides its catalogue fields (code, name, check, kind,
# severity, summary, doc, examples), each with its schema: a mask's fidelity (scriptdiff.ruleset.
# rule_validators declares them with `rule_field`; its validators say which rule needs which).
RULE_FIELDS: dict[str, Schema] = {}


def rule_field(name: str, schema: Schema) -> Schema:
    """Declare data field `name` of a rule entry."""
    RULE_FIELDS[name] = schema
    return schema


# Section validators, registered with @validator (scriptdiff.ruleset.rule_validators and the families
# of sections it imports hold them all; tests/test_rule_validators.py fails on a check_* function
# there that is not registered).
VALIDATORS: list = []


def validator(fn):
    """Register a section validator: fn(ruleset) raises RuleError on bad data."""
    VALIDATORS.append(fn)
    return fn

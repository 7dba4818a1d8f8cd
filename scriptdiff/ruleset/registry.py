"""What this build can read and check: the registry of file kinds and the registry of checks.

Both are data, declared in the `kinds` and `checks` sections of rules/*.yaml (rules/kinds.yaml
documents every field) and validated when the packs load. This module turns each entry into
one object the engine works from:

- a `Kind` says how a file of that kind is detected (suffixes, names, shebang, content
  markers, a sniff function), which reader module turns it into facts (`extract`) and, for
  kinds compared statement by statement, diffs two files (`diff_pair`), whether its results
  are cached and spread over workers, whether --max-bytes bounds it, which checks it feeds,
  how its comments are written (inline suppressions), whether it matters when unpaired,
  which options and config keys name a file of it as a reference to follow (`referenced`),
  which keys such a file can set (`sets`: `kind_can_set`) and how the review page colours it
  (`lexer`); every list of reference suffixes or lexers is derived from the kinds here;
- a `Check` says where a check stands in reports, its title, the functions that classify
  its differences and derive values, and which `scriptdiff check` inputs feed it.

Reader and hook modules are named as data and imported by name when first needed
(importlib): that keeps `scriptdiff --help` from loading libcst, tree-sitter or numpy, lets a
build without a module report "cannot analyse" instead of failing, and is the one place where
the package imports its own modules indirectly. Framework dialects (`dialects` section) plug
in here too: a reader asks `dialects_for(kind)` for the path maps that apply to its files.
"""
from __future__ import annotations

import fnmatch
import importlib
from dataclasses import dataclass, field
from typing import Callable

from .. import budget
from .rules import RuleSet, derived, load
from ..inputs.sources import Source


def _function(spec: str | None) -> Callable | None:
    """"module:function" under scriptdiff/ -> the function (imported on first use)."""
    if not spec:
        return None
    mod, _, name = spec.partition(":")
    return getattr(importlib.import_module(f"scriptdiff.{mod}"), name)


@dataclass(frozen=True)
class KeySet:
    """Which keys a file of a kind (or of a dialect) can set (rules/kinds.yaml `sets`): any, or
    the vocabulary keys of some categories, the vocabulary keys a framework spells (`spelled:
    [deepspeed]`: those with a `deepspeed:` spelling), keys matching fnmatch patterns, and
    whatever a file of the kinds it may name can set (`named: [deepspeed]`: an accelerate
    config's deepspeed_config_file)."""
    any: bool = True
    categories: tuple[str, ...] = ()
    spelled: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    named: tuple[str, ...] = ()

    @classmethod
    def of(cls, spec) -> "KeySet":
        if spec is None or spec == "any":
            return cls()
        return cls(any=False, **{f: tuple(spec.get(f) or ()) for f in ("categories", "spelled", "keys", "named")})


@dataclass(frozen=True)
class Kind:
    name: str
    reader: str
    suffixes: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    shebang: str | None = None
    markers: tuple[str, ...] = ()
    sniff: str | None = None
    sniff_bytes: int = budget.KIND_SNIFF
    priority: int = 0
    anywhere: bool = False
    confirm: bool = True
    cached: bool = False
    structural: bool = False
    limited: bool = False
    skip_identical: bool = False
    checks: tuple[str, ...] = ()
    comments: str = "hash"
    relevant: bool = True
    entry: bool = False  # starts a run: compared with its program and configs (rules/kinds.yaml)
    versions: bool = False  # tells its side's framework version: read even when identical (rules/kinds.yaml)
    focus: bool = False  # its reader reads a pair by the pair's difference (extract's partner=)
    ahead: str | None = None  # a light module: work on a pair done before the reader is imported
    fixer: str | None = None  # the module that edits a file of this kind in place (`scriptdiff fix`)
    input: str | None = None  # the `check` configuration key a file of this kind is an input of (`init`)
    referenced: tuple[str, ...] = ()  # option / config-key names whose value, a file of this kind, is followed
    sets: KeySet = KeySet()  # the keys a file of this kind can set (kind_can_set)
    # framework -> keys a run of that framework passes into a file of this kind itself (the HF
    # Trainer fills a DeepSpeed config's lr, batch sizes, ... and stops on a mismatch): a file of
    # this kind that such a run names cannot set them (kind_can_set)
    filled_by: tuple[tuple[str, tuple[str, ...]], ...] = ()
    lexer: str | None = None  # "module:Class" under pygments.lexers: the review page's colours
    example: str = ""

    def ahead_module(self):
        """The `ahead` module (rules/kinds.yaml), or None."""
        return importlib.import_module(f"scriptdiff.{self.ahead}") if self.ahead else None

    def fixer_module(self):
        """The `fixer` module (rules/kinds.yaml), or None: files of this kind are not edited."""
        return importlib.import_module(f"scriptdiff.{self.fixer}") if self.fixer else None

    def module(self):
        """The reader module (ModuleNotFoundError when this build lacks it)."""
        return importlib.import_module(f"scriptdiff.{self.reader}")

    def claims_name(self, basename: str, suffix: str) -> bool:
        return suffix in self.suffixes or any(fnmatch.fnmatch(basename, p) for p in self.names)

    def confirms(self, head: str, basename: str) -> bool:
        """Whether the content says this is the kind (True when the kind needs no evidence)."""
        if not self.markers and not self.sniff:
            return True
        part = head[:self.sniff_bytes]
        if self.markers and any(m in part for m in self.markers):
            return True
        if self.sniff:
            return bool(_function(self.sniff)(part, basename))
        return False


@dataclass(frozen=True)
class Check:
    name: str
    order: int
    title: str
    inputs: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    classify: str | None = None
    derive: str | None = None
    derive_pair: str | None = None
    measure: str | None = None
    relate: str | None = None  # "module:function(findings, inputs) -> findings": after every unit is compared
    audit: str | None = None  # "module:function(table, side) -> (findings, notes)": one side's claims vs its evidence
    # the same, once per side with every fact it read (all its units and measured inputs in one table)
    audit_run: str | None = None
    optional: bool = False  # a verdict only when its inputs are configured (rules/kinds.yaml)

    def hook(self, which: str) -> Callable | None:
        return _function(getattr(self, which))


@dataclass
class Registry:
    kinds: dict[str, Kind] = field(default_factory=dict)
    checks: dict[str, Check] = field(default_factory=dict)
    dialects: dict[str, dict] = field(default_factory=dict)


def _build(entry: dict, cls, name: str):
    fields = {k: (tuple(v) if isinstance(v, list) else v) for k, v in entry.items() if k in cls.__dataclass_fields__}
    if "sets" in fields:
        fields["sets"] = KeySet.of(entry["sets"])
    if "filled_by" in fields:
        fields["filled_by"] = tuple((fw, tuple(keys)) for fw, keys in sorted(entry["filled_by"].items()))
    return cls(name=name, **fields)


@derived
def registry(rs: RuleSet) -> Registry:
    kinds = {n: _build(e, Kind, n) for n, e in (rs.section("kinds") or {}).items()}
    checks = {n: _build(e, Check, n) for n, e in (rs.section("checks") or {}).items()}
    checks = dict(sorted(checks.items(), key=lambda kv: (kv[1].order, kv[0])))
    return Registry(kinds=kinds, checks=checks, dialects=dict(rs.section("dialects") or {}))


def kind(name: str) -> Kind:
    return registry().kinds[name]


def kinds() -> dict[str, Kind]:
    return registry().kinds


def checks() -> dict[str, Check]:
    """Every check, in report order."""
    return registry().checks


def check_names() -> tuple[str, ...]:
    return tuple(registry().checks)


def check_order(name: str) -> int:
    names = check_names()
    return names.index(name) if name in names else len(names)


def detect(src: Source) -> Kind:
    """The kind of a file, from its name and, where the name is ambiguous, its content.

    Kinds that claim the file's suffix or name are tried by priority (a kind with markers or a
    sniff function only when its content confirms it); then the `#!` line; then kinds whose
    markers identify them anywhere; else text."""
    if src.kind is not None:
        return kind(src.kind)
    found = _detect(src)
    src.kind = found.name
    return found


def _detect(src: Source) -> Kind:
    reg = registry()
    base = src.basename.lower()
    suffix = src.suffix
    head: str | None = None

    def text_head() -> str:
        nonlocal head
        if head is None:
            head = src.text[:budget.KIND_SNIFF]
        return head

    order = sorted(reg.kinds.values(), key=lambda k: (-k.priority, k.name))
    for k in order:
        if k.claims_name(base, suffix) and (not k.confirm or k.confirms(text_head(), base)):
            return k
    first = text_head().splitlines()[0] if text_head().startswith("#!") else ""
    if first:
        for k in sorted(order, key=lambda k: -len(k.shebang or "")):  # "python" before "sh"
            if k.shebang and k.shebang in first:
                return k
    for k in order:
        if k.anywhere and k.markers and any(m in text_head()[:k.sniff_bytes] for m in k.markers):
            return k
    return reg.kinds["text"]


def kind_by_name(basename: str) -> Kind | None:
    """The kind a file name alone decides (one kind claims it and needs no content), else None."""
    base = basename.lower()
    suffix = ("." + base.rsplit(".", 1)[-1]) if "." in base else ""
    claim = [k for k in registry().kinds.values() if k.claims_name(base, suffix)]
    if len(claim) == 1 and (not claim[0].confirm or not (claim[0].markers or claim[0].sniff)):
        return claim[0]
    return None


def identical_skipped_by_name(basename: str) -> bool:
    """Whether an identical pair of files of this name is never read: every kind that may
    claim the name says `skip_identical` (a .py file is Python code or a dict-style config,
    and neither needs its identical twin read)."""
    base = basename.lower()
    suffix = ("." + base.rsplit(".", 1)[-1]) if "." in base else ""
    claim = [k for k in registry().kinds.values() if k.claims_name(base, suffix)]
    return bool(claim) and all(k.skip_identical for k in claim)


def detect_kind(src: Source) -> str:
    """The kind's name (the engine's and the tests' long-standing spelling)."""
    return detect(src).name


def classifiers() -> dict[str, Callable]:
    """check name -> its classifier, for compare.compare_tables."""
    out = {}
    for c in checks().values():
        fn = _safe(c, "classify")
        if fn is not None:
            out[c.name] = fn
    return out


def relaters(present: set[str]) -> list[Callable]:
    """The `relate` hooks of the checks among `present` (those with findings in a run): a
    run without such findings never imports their modules."""
    return [fn for c in checks().values() if c.relate and c.name in present and (fn := _safe(c, "relate")) is not None]


def derivations(which: str) -> list[Callable]:
    """The `derive` (one side), `derive_pair` (both sides), `audit` (one side's claims against
    its run's evidence) or `audit_run` (the same over all a side read) hooks of every check, in order."""
    return [fn for c in checks().values() if (fn := _safe(c, which)) is not None]


def _safe(c: Check, which: str) -> Callable | None:
    try:
        return c.hook(which)
    except ModuleNotFoundError:  # a build without this check's module: its inputs say so
        return None


# --- references: which options and config keys name a file to follow -------------------------

def _option_name(key: str) -> str:
    """The name a reference is known by: `--job.config_file` and `trainer.deepspeed=` by their
    last dotted part, dashes as underscores."""
    return key.replace("-", "_").rsplit(".", 1)[-1].lower()


def referenced_kind(key: str, ref) -> Kind | None:
    """The kind of file a reference names (`--deepspeed ds.json`: a DeepSpeed config,
    `--job.config_file llama.toml`: a TOML config), or None when `key` with this value is no
    reference: a kind lists the option's name under `referenced` and claims the file's suffix."""
    if not isinstance(ref, str):
        return None
    base = ref.strip().replace("\\", "/").rsplit("/", 1)[-1].lower()
    suffix = ("." + base.rsplit(".", 1)[-1]) if "." in base else ""
    return _references().get((_option_name(key), suffix))


@derived
def _references(rs: RuleSet) -> dict[tuple[str, str], Kind]:
    """(option name, suffix) -> the kind it names; the kind of highest priority where two list both."""
    out: dict[tuple[str, str], Kind] = {}
    for k in sorted(registry(rs).kinds.values(), key=lambda k: (k.priority, k.name)):  # higher priority last: it wins
        for name in k.referenced:
            for suffix in k.suffixes:
                out[(name, suffix)] = k
    return out


def referencing(key: str) -> list[Kind]:
    """The kinds whose files an option or config key names (`--deepspeed`: a DeepSpeed config),
    whatever its value: a preset named instead of a file (`--deepspeed zero3`)."""
    name = _option_name(key)
    return sorted({k.name: k for (n, _s), k in _references().items() if n == name}.values(), key=lambda k: k.name)


def reference_suffixes() -> tuple[str, ...]:
    """The suffixes of the kinds a `config` reference may name: a positional `x.yaml` word of a
    launch command is read as its config (a package list's .txt is named by `-r`, never so)."""
    return tuple(sorted({s for n, s in _references() if n == "config"}))


def kind_can_set(kind: str | Kind, key: str, frameworks=(), dialect: str | None = None) -> bool:
    """Whether a file of `kind` can set the fact `key` (a vocabulary key, or a config's own
    dotted path): from the kind's `sets` (rules/kinds.yaml), or the `sets` of the framework
    dialect the file is known to be written in (an accelerate config: rules/accelerate.yaml).
    A DeepSpeed config sets ZeRO, loss scaling and its own sections, never train_iters or
    use_flash_attn; named by a run of `frameworks`, it cannot set what that framework fills
    in itself (`filled_by`: under the HF Trainer, the learning rate, batch sizes, Adam and
    weight decay are the Trainer's arguments, a DeepSpeed value that differs stops the run)."""
    k = kind if isinstance(kind, Kind) else registry().kinds[kind]
    spec = (registry().dialects.get(dialect) or {}).get("sets") if dialect else None
    return _can_set(k, KeySet.of(spec) if spec is not None else k.sets, key, tuple(frameworks), depth=0)


def _can_set(k: Kind, sets: KeySet, key: str, frameworks: tuple[str, ...], depth: int) -> bool:
    filled = dict(k.filled_by)
    if any(key in filled.get(fw, ()) for fw in frameworks):
        return False
    if sets.any or any(fnmatch.fnmatchcase(key, p) for p in sets.keys):
        return True
    named = [registry().kinds[n] for n in sets.named if n in registry().kinds]
    if depth < budget.KIND_SETS_DEPTH and any(_can_set(nk, nk.sets, key, frameworks, depth + 1) for nk in named):
        return True
    entry = (load().section("vocabulary") or {}).get(key)
    if not isinstance(entry, dict):
        return False
    return entry.get("category") in sets.categories or any(entry.get(fw) for fw in sets.spelled)


def dialects_for(kind_name: str) -> dict[str, dict]:
    """The framework dialects that apply to files of a kind (name -> dialect entry)."""
    return {n: d for n, d in registry().dialects.items() if kind_name in (d.get("kinds") or [])}


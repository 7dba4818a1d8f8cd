"""The setup's sections of the rule packs: package lists (rules/libraries.yaml), the settings
naming tokenizer files (rules/dataset.yaml), the platform snapshot (rules/platform.yaml), secret names and shapes (rules/secrets.yaml), launchers and
installers (rules/shell.yaml) and the Ascend version tables (rules/ascend_versions.yaml);
their schemas and validators (scriptdiff/ruleset/rule_validators.py says how sections are
declared).
"""
from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from . import packregex, secret_shapes
from .ascend_version import parse_cann
from .packschema import NAMES, Bool, Enum, Int, ListOf, Name, Null, Num, OneOf, Record, Shipped, Str, Table
from .rulepack import RuleSet, section, validator
from .validators_common import CODE, FRAMEWORKS


# ------------------------------------------------------------------ rules/libraries.yaml

section("library_checks", Record(
    {"key_packages": NAMES,
     "counterparts": ListOf(Record({"gpu": Name(), "npu": Name(), "mask": CODE, "required": Bool(), "why": Str(),
                                   "also_gpu": NAMES},
                                   required=("gpu", "npu", "mask"))),
     "npu_local_tags": Table(Name()), "platform_packages": Record({"gpu": NAMES, "npu": NAMES}),
     "platform_markers": Record({"gpu": NAMES, "npu": NAMES}), "list_names": NAMES,
     "conda_names": Table(OneOf(Name(), Null(), expect="a package name or null"))},
    required=("key_packages",)))


@validator
def check_library_checks(rs: RuleSet) -> None:
    rs.conform("library_checks")
    for i, cp in enumerate((rs.section("library_checks") or {}).get("counterparts") or []):
        if cp["mask"] not in rs.rules:
            raise rs.error(("library_checks", "counterparts", i, "mask"),
                           f"counterpart {cp['gpu']} <-> {cp['npu']} must name a known mask rule")

# ------------------------------------------------------------------ rules/dataset.yaml

section("tokenizer_settings", NAMES)  # launch-script settings naming tokenizer files (checks/dataset.py)


@validator
def check_tokenizer_settings(rs: RuleSet) -> None:
    rs.conform("tokenizer_settings")


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

# ------------------------------------------------------------------ rules/secrets.yaml

UPPER_WORDS = Name("upper-case words joined by _",
                   test=lambda e: all(w.isalnum() and w.isascii() and w == w.upper() for w in e.split("_")))
ONE_WORD = Name("one word in upper case (no _)", test=lambda e: e.isalnum() and e.isascii() and e == e.upper())
UPPER_WORD = Name("an upper-case word", test=lambda e: e.replace("_", "").isalnum() and e == e.upper())
# a user's pack may add secret-looking names and shapes, never exempt one: a pack a repository
# names (check reads [tool.scriptdiff] rules) would otherwise make CI print that repository's secrets
EXEMPT = ("a user's pack may add secret-looking names and shapes, never exempt one from withholding "
          "(the exemptions are rules/secrets.yaml's)")
section("secrets", Record({"words": ListOf(UPPER_WORDS, nonempty=True), "suffixes": ListOf(ONE_WORD, nonempty=True),
                           "not_secret": Shipped(ListOf(UPPER_WORDS), EXEMPT),
                           "not_secret_in_code": Shipped(ListOf(UPPER_WORDS), EXEMPT)},
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
        except packregex.PatternError as e:
            raise rs.error(at + ("regex",), str(e)) from None
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
         "idle": NAMES, "program": Enum(*PROGRAMS), "module_only": Bool(), "flags": NAMES, "framework": Enum(*FRAMEWORKS),
         "world_size": NAMES, "devices": Name("an option name"), "environment": NAMES, "one_process": Bool(),
         "config": Name("a dialect (the framework of the config file its --config_file names)")},
        required=("name", "program"), need={"name": "a name", "program": f"a program ({', '.join(PROGRAMS)})"}),
        nonempty=True, expect="a list of launchers, one mapping each"),
    "hints": Record({"megatron": NAMES, "hf": NAMES, "megatron_scripts": NAMES}),
    "commands": Record({"print": NAMES, "inspect": NAMES, "evaluate": NAMES, "shells": NAMES, "source": NAMES,
                        "wrappers": Table(Record({"valued": NAMES, "positional": Int(0), "subcommands": NAMES,
                                                  "pairs": NAMES, "processes": NAMES, "module": NAMES,
                                                  "environment": NAMES}),
                                          expect="a mapping of command words to {valued, positional, subcommands, "
                                                 "pairs, processes, module, environment}")}),
    "shared": Record({"facts": Table(Name(), expect="a mapping of launcher options to keys"), "settings": NAMES,
                      "references": NAMES}),
    "coordinators": Table(NAMES, expect="a mapping of environment variables to the values of a coordinator role")},
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
    rs.conform("launchers", "dialects")  # (a launcher names a dialect: checked before the registry family)
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
        if e.get("idle") and not e.get("subcommands"):
            raise rs.error(at + ("idle",), f"{name}: idle subcommands need the subcommands that launch")
        both = set(e.get("idle") or ()) & set(e.get("subcommands") or ())
        if both:
            raise rs.error(at + ("idle",), f"{name}: {', '.join(sorted(both))} cannot both launch and start nothing")
        dialects = rs.section("dialects")  # None: this pack loaded alone, without the dialect packs
        if e.get("config") and dialects is not None and e["config"] not in dialects:
            raise rs.error(at + ("config",), f"{name}: {e['config']!r} is not a known dialect")
        for kind in ("commands", "modules"):
            for j, word in enumerate(e.get(kind) or []):
                # a runner of the same word (mpirun) is read first; the entry keeps a bare `mpirun -m M`
                runner = e.get("module_only") and word in ((d.get("commands") or {}).get("wrappers") or {})
                if kind == "commands" and word in _command_words(d) and not runner:
                    raise rs.error(at + (kind, j), f"{word} is also one of launchers.commands")
                tag = f"{kind[:-1]} {word}"
                if tag in claimed:
                    raise rs.error(at + (kind, j), f"{tag} is also {claimed[tag]}'s")
                claimed[tag] = name


def _command_words(d: dict) -> set[str]:
    """The words `launchers.commands` claims (print, evaluate, source, wrappers)."""
    c = d.get("commands") or {}
    return {w for part in ("print", "inspect", "evaluate", "source") for w in c.get(part) or []} \
        | set(c.get("wrappers") or {})

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

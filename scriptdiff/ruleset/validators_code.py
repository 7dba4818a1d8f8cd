"""The code's sections of the rule packs: the Python port masks and fact calls
(rules/python.yaml), call signatures (rules/signatures.yaml), the NPU spellings `fix` writes
(rules/fix.yaml) and the device tests (rules/devices.yaml); their schemas and validators
(scriptdiff/ruleset/rule_validators.py says how sections are declared).
"""
from __future__ import annotations

from .packschema import NAMES, Any, Bool, Enum, Int, ListOf, Name, Null, Num, OneOf, Record, Str, Table
from .rulepack import RuleSet, section, validator
from .validators_common import CODE, FRAMEWORKS, SEVERITY


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
        "to_device": Record({"methods": NAMES, "rule": CODE}, required=("rule",),
                            gone={"not_devices": "the devices that are no device move are rules/devices.yaml "
                                                 "`devices.python.tensor_devices`"}),
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

section("fix_copies", Table(Record({"why": Str()}, required=("why",), need="why"), once=False))


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


@validator
def check_fix_copies(rs: RuleSet) -> None:
    """Each key whose GPU word fix copies is a vocabulary key whose words encode its value."""
    voc = rs.section("vocabulary") or {}
    ports = rs.section("value_ports") or {}
    for key in rs.section("fix_copies") or {}:
        if voc and key not in voc:
            raise rs.error(("fix_copies", key), f"{key!r} is not a vocabulary key")
        if voc and key not in ports:
            raise rs.error(("fix_copies", key), f"{key!r} has no value_ports: its values are copied already")

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
        "plumbing": Record({
            "prefixes": NAMES, "names": Table(ListOf(NAMES, nonempty=True), key=Enum("device", "backend", "rank")),
            **{part: NAMES for part in ("flag_words", "device_calls", "namespaces", "calls", "counts", "parameters")},
            "autocast": Record({"device": NAMES, "any": NAMES, "param": Name()}, required=("device", "any", "param")),
        }),
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

# ------------------------------------------------------------------ rules/relevance.yaml

_PATTERNS = ListOf(Name(), nonempty=True, expect="a non-empty list of call patterns")
section("numerics_relevance", Record({
    "sinks": Table(Record({"shown": Name(), "reason": Name(), "source": Name("a source (a URL documenting it)"),
                           "calls": _PATTERNS, "attributes": NAMES},
                          required=("shown", "reason", "source", "calls"),
                          need={"shown": "shown (how a message names it)", "reason": "a reason",
                                "source": "a source (a URL documenting it)", "calls": "calls (its call patterns)"}),
                   nonempty=True),
    "inert": Table(Record({"reason": Name(), "calls": _PATTERNS, "words": NAMES}, required=("reason", "calls"),
                          need={"reason": "a reason", "calls": "calls (its call patterns)"})),
    "compute_modules": NAMES, "qualifier_words": NAMES, "placement_keywords": NAMES, "move_methods": NAMES,
    "device_words": NAMES,
}, required=("sinks", "inert")))


@validator
def check_numerics_relevance(rs: RuleSet) -> None:
    """`numerics_relevance:` (rules/relevance.yaml), beyond its schema: each sink documented by a
    URL, and no call pattern both a sink and inert (the flow would stop where training goes on)."""
    rs.conform("numerics_relevance")
    d = rs.section("numerics_relevance")
    if d is None:
        return
    sink_calls = {}
    for name, e in d["sinks"].items():
        if not e["source"].startswith(("https://", "http://")):
            raise rs.error(("numerics_relevance", "sinks", name, "source"), f"{e['source']!r} is not a URL")
        for c in e["calls"]:
            sink_calls.setdefault(c, name)
    for name, e in (d.get("inert") or {}).items():
        for i, c in enumerate(e["calls"]):
            if c in sink_calls:
                raise rs.error(("numerics_relevance", "inert", name, "calls", i),
                               f"{c!r} is also a call of the sink {sink_calls[c]!r}")


section("rewritten_regions", Record({
    "share": Num(0, 1), "least": Int(1), "step_sinks": ListOf(Name(), nonempty=True),
    "accumulation": Record({"key": Name(), "step": _PATTERNS, "reset": _PATTERNS, "source": Name()},
                           required=("key", "step", "reset", "source")),
    "implied": ListOf(Record({"call": _PATTERNS, "when": Table(Any()), "unless": NAMES, "sets": Table(Any()),
                              "source": Name()}, required=("call", "sets", "source"),
                             need="call, sets and source")),
}, required=("share", "least", "step_sinks")))


@validator
def check_rewritten_regions(rs: RuleSet) -> None:
    """`rewritten_regions:` (rules/relevance.yaml): the step sinks are sinks of
    `numerics_relevance`, the keys it sets are vocabulary keys."""
    rs.conform("rewritten_regions")
    d = rs.section("rewritten_regions")
    if d is None:
        return
    sinks = (rs.section("numerics_relevance") or {}).get("sinks") or {}
    for i, s in enumerate(d["step_sinks"]):
        if sinks and s not in sinks:
            raise rs.error(("rewritten_regions", "step_sinks", i), f"{s!r} is not a sink of numerics_relevance")
    voc = rs.section("vocabulary") or {}
    keys = [(("rewritten_regions", "accumulation", "key"), (d.get("accumulation") or {}).get("key"))] + [
        (("rewritten_regions", "implied", i, "sets", k), k) for i, e in enumerate(d.get("implied") or [])
        for k in e["sets"]]
    for path, k in keys:
        if k is not None and voc and k not in voc:
            raise rs.error(path, f"key {k!r} is not in the vocabulary")

"""The code's sections of the rule packs: the Python port masks and fact calls
(rules/python.yaml), call signatures (rules/signatures.yaml), the NPU spellings `fix` writes
(rules/fix.yaml), the device tests (rules/devices.yaml) and what each masked port edit keeps
(every mask rule's fidelity fields, rules/fidelity.yaml: docs/fidelity.md) and the profiles
(rules/alignment.yaml); their schemas and validators
(scriptdiff/ruleset/rule_validators.py says how sections are declared).
"""
from __future__ import annotations

from .packschema import NAMES, Any, Bool, Enum, Int, ListOf, Name, Null, Num, OneOf, Record, RuleError, Str, Table
from .rulepack import RuleSet, rule_field, section, validator
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
                               "npu_default_scale": Num(),
                               "sdpa": Table(Record({"params": NAMES, "roles": Table(Name())}, required=("params",))),
                               "sdpa_rule": CODE, "sdpa_target": Name(),
                               "layouts": Table(Name()), "same_layouts": ListOf(NAMES)}),
    "device_refactors": Record({
        "to_device": Record({"methods": NAMES, "rule": CODE}, required=("rule",),
                            gone={"not_devices": "the devices that are no device move are rules/devices.yaml "
                                                 "`devices.python.tensor_devices`"}),
        "device_count": Record({"gpu": NAMES, "env": NAMES}),
        "mps": Record({"prefix": Name(), "rule": CODE}, required=("rule",))}),
    "softmax_fp32": Record({"calls": NAMES, "key": Name()}),
    "same_values": Record({"methods": ListOf(ListOf(Name(), nonempty=True)), "transparent": NAMES},
                          required=("methods",)),
    "fact_calls": ListOf(Record(
        {"match": ListOf(Name(), nonempty=True), "args": Table(OneOf(Name(), NAMES, expect="a key or a list of keys")),
         "positional": NAMES, "positional_by_name": Table(Any()), "defaults": Table(Any()), "spellings": Enum("hf"),
         "framework": Enum(*FRAMEWORKS), "defaults_unknown": Bool(),
         "present": Table(Any())}, required=("match",), need="a non-empty match list")),
    "value_maps": Table(Table(Any(), key=Any())),
    "generic_keywords": Record({"names": Table(OneOf(Name(), Null(), expect="a vocabulary key or null")),
                                "skip": NAMES, "python_spellings": NAMES, "mapping_types": NAMES}),
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
        for k in e.get("present") or {}:
            if voc and k not in voc:
                raise rs.error(("python", "fact_calls", i, "present", k), f"key {k!r} is not in the vocabulary")

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
    "backends": Record({fam: NAMES for fam in _DEVICE_FAMILIES}),
    "python": Record({
        **{part: ListOf(Record({**_DEVICE_TEST, "family": Enum(*_DEVICE_FAMILIES), "match": ListOf(Name(), nonempty=True),
                                "mask": Name()}, required=_DEVICE_NEEDS + ("family", "match")))
           for part in ("calls", "attributes", "modules")},
        **{part: Record({**_DEVICE_TEST, "match": ListOf(Name(), nonempty=True)}, required=_DEVICE_NEEDS + ("match",))
           for part in ("holders", "device_calls")},
        "own_device": Record({**_DEVICE_TEST, **{part: ListOf(Name(), nonempty=True) for part in ("test", "device", "ending")}},
                             required=_DEVICE_NEEDS + ("test", "device", "ending")),
        **{part: NAMES for part in ("find_module", "npu_tuning", "tensor_devices")},
        "cuda_on_npu": Record({"patched_by": ListOf(Name(), nonempty=True)}),
        "tf_session": Record({"targets": NAMES, "values": NAMES, "precision": Name(), "keeps": NAMES,
                              "source": Str()}, required=("targets", "values", "precision", "source")),
        "cuda_switches": Table(Record({"determinism": Any(), "tf32": Any(), "npu_way": Str(), "source": Str(),
                                       "note": Str()}, required=("note",), need="a note")),
        "plumbing": Record({
            "prefixes": NAMES, "names": Table(ListOf(NAMES, nonempty=True), key=Enum("device", "backend", "rank")),
            **{part: NAMES for part in ("flag_words", "switch_names", "switch_words", "device_calls", "namespaces", "calls", "counts",
                                        "parameters")},
            "autocast": Record({"device": NAMES, "any": NAMES, "param": Name(), "stand_in": NAMES},
                               required=("device", "any", "param")),
            "resource_requests": Record({"calls": NAMES, "count": NAMES, "resources": NAMES},
                                        required=("calls", "count", "resources")),
            "device_seeds": Record({"all": NAMES, "device": NAMES}, required=("all", "device")),
            "moves": Record({"words": NAMES, "verbs": NAMES}, required=("words", "verbs")),
        }),
    }),
    "shell": Record({**{part: Record({**_DEVICE_TEST, **{fam: NAMES for fam in _DEVICE_FAMILIES},
                                      "match": ListOf(Name(), nonempty=True)}, required=_DEVICE_NEEDS)
                        for part in ("commands", "paths", "variables", "holders", "python_imports")}}),
    "counts": Record({"shown": Str(), **{part: NAMES for part in (
        "tools", "listers", "printers", "visible", "filters", "counter")}}, required=("shown", "tools", "counter")),
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


# ------------------------------------------------------------------ fidelity (rules/fidelity.yaml)

CLASSES = ("exact", "equivalent", "changes")
TEXT = Name("a sentence")

# a mask rule's fields: its class, where the fact comes from, and why (equivalent) or what
# changes (changes); lowers_precision: the change computes in a lower precision (a warning)
rule_field("fidelity", Enum(*CLASSES))
rule_field("source", TEXT)
rule_field("reason", TEXT)
rule_field("consequence", TEXT)
rule_field("lowers_precision", Bool())

FIDELITY = {"fidelity": Enum(*CLASSES), "source": TEXT, "reason": TEXT, "consequence": TEXT,
            "lowers_precision": Bool()}

# what a masked edit maps to (an NPU qualified name, a dump port's form, a transfer_to_npu
# mapping), when it keeps less or more than its rule says: its own class
section("fidelity_targets", Table(Record(
    {"rule": CODE, "kernel": Name(), **FIDELITY}, required=("rule", "fidelity", "source"))))


def _fidelity_problem(d: dict, mask: bool) -> tuple[str, str] | None:
    """(field, why) of fidelity fields that do not hold together, else None."""
    if not mask:
        named = [k for k in FIDELITY if k in d]
        return (named[0], "only a mask (kind: mask) has a fidelity") if named else None
    cls = d.get("fidelity")
    if cls is None:
        return None
    if "source" not in d:
        return "fidelity", "a fidelity needs its source (the vendor document or code it comes from)"
    if cls == "equivalent" and "reason" not in d:
        return "fidelity", "an equivalent edit needs its reason (why the numerics agree, and within what)"
    if cls == "changes" and "consequence" not in d:
        return "fidelity", "a changing edit needs its consequence (what changes, and by how much)"
    if cls != "changes" and d.get("lowers_precision"):
        return "lowers_precision", "only a changing edit can lower precision"
    if cls == "exact" and "consequence" in d:
        return "consequence", "an exact edit has no consequence"
    return None


@validator
def check_fidelity(rs: RuleSet) -> None:
    """Every shipped mask says what it keeps (fidelity and source), and the fields hold
    together; a user's mask may say it too (without: exact)."""
    for r in rs.rules.values():
        if r.kind == "mask" and not r.user and "fidelity" not in r.fidelity:
            raise RuleError(f"{r.pack}:{r.line or 1}: {r.code}: a shipped mask needs a fidelity "
                            f"(exact, equivalent or changes) and its source")
        bad = _fidelity_problem(r.fidelity, r.kind == "mask")
        if bad:
            raise RuleError(f"{r.pack}:{r.line or 1}: {r.code}: {bad[0]}: {bad[1]}")
    rs.conform("fidelity_targets")
    for name, t in (rs.section("fidelity_targets") or {}).items():
        rule = rs.rules.get(t["rule"])
        if rule is None or rule.kind != "mask":
            raise rs.error(("fidelity_targets", name, "rule"), f"{t['rule']} is not a mask rule")
        bad = _fidelity_problem(t, True)
        if bad:
            raise rs.error(("fidelity_targets", name, bad[0]), bad[1])


# kernel swaps written in Python (rules/fidelity.yaml `kernel_swaps`): an NPU kernel, the GPU
# form it replaces, the fidelity target of the swap, the epsilon each side writes
_PARAM = Record({"name": Name(), "position": Int(0), "default": Num()}, required=("name",))
section("kernel_swaps", Record({
    "rule": CODE, "translation": CODE,
    "kernels": Table(Record({
        "npu": ListOf(Name(), nonempty=True), "gpu": NAMES, "target": Name(), "reads_npu_args": Int(1),
        "epsilon": Record({"npu": _PARAM, "gpu": Table(Record({"name": Name(), "position": Int(0),
                                                               "addend": Bool()}))}, required=("npu", "gpu")),
    }, required=("npu", "target")), nonempty=True),
}, required=("rule", "translation", "kernels")))


@validator
def check_kernel_swaps(rs: RuleSet) -> None:
    """The swap's rule is a mask, its translation a rule, each kernel's target a fidelity target
    of that rule, and each kernel has a GPU form."""
    rs.conform("kernel_swaps")
    k = rs.section("kernel_swaps")
    if not k:
        return
    rule = rs.rules.get(k["rule"])
    if rule is None or rule.kind != "mask":
        raise rs.error(("kernel_swaps", "rule"), f"{k['rule']} is not a mask rule")
    if k["translation"] not in rs.rules:
        raise rs.error(("kernel_swaps", "translation"), f"unknown rule code {k['translation']}")
    targets = rs.section("fidelity_targets") or {}
    for name, e in k["kernels"].items():
        if e["target"] not in targets:
            raise rs.error(("kernel_swaps", "kernels", name, "target"),
                           f"{e['target']!r} is not a fidelity target (rules/fidelity.yaml fidelity_targets)")
        if targets[e["target"]]["rule"] != k["rule"]:
            raise rs.error(("kernel_swaps", "kernels", name, "target"), f"the target {e['target']!r} is not of rule {k['rule']}")
        if not e.get("gpu") and not e.get("reads_npu_args"):
            raise rs.error(("kernel_swaps", "kernels", name), "a kernel needs its GPU form: gpu calls or reads_npu_args")
    f64 = rs.section("float64")
    if f64 and f64["rule"] not in rs.rules:
        raise rs.error(("float64", "rule"), f"unknown rule code {f64['rule']}")
    fa = (rs.section("python") or {}).get("flash_attention") or {}
    if fa.get("sdpa"):  # SDPA to the NPU fused attention: a swap of the same rule, with its target
        if fa.get("sdpa_rule") != k["rule"] or fa.get("sdpa_target") not in targets:
            raise rs.error(("python", "flash_attention", "sdpa_target"),
                           f"the SDPA swap needs sdpa_rule {k['rule']} and an sdpa_target of rules/fidelity.yaml")


# float64 asked for in the NPU program: the forms, the rule, where the fact comes from
section("float64", Record({"rule": CODE, "methods": NAMES, "names": NAMES, "source": TEXT, "consequence": TEXT},
                          required=("rule", "source", "consequence")))


# transfer_to_npu (torch_npu/contrib/transfer_to_npu.py): what it maps at run time, each
# mapping a fidelity target; its side effects, said once per file that imports it
section("transfer_to_npu", Record({
    "imports": NAMES,  # the modules whose import runs it
    "rule": CODE,  # the mask of each mapping
    "notice": CODE,  # the finding that lists the side effects
    "source": TEXT,
    "side_effects": ListOf(TEXT, nonempty=True),
    # GPU qualified name (or prefix ending in '.') -> the fidelity target it maps to
    "calls": Table(Name()),
}, required=("imports", "rule", "notice", "source", "side_effects", "calls")))


@validator
def check_transfer_to_npu(rs: RuleSet) -> None:
    rs.conform("transfer_to_npu")
    t = rs.section("transfer_to_npu")
    if not t:
        return
    for field in ("rule", "notice"):
        if t[field] not in rs.rules:
            raise rs.error(("transfer_to_npu", field), f"unknown rule code {t[field]}")
    targets = rs.section("fidelity_targets") or {}
    for gpu, target in t["calls"].items():
        if target not in targets:
            raise rs.error(("transfer_to_npu", "calls", gpu), f"{target!r} is not a fidelity target "
                                                              f"(rules/fidelity.yaml fidelity_targets)")
        if targets[target]["rule"] != t["rule"]:
            raise rs.error(("transfer_to_npu", "calls", gpu), f"the target {target!r} is not of rule {t['rule']}")



# ------------------------------------------------------- profiles (rules/alignment.yaml)

_STACKS = ("any", "megatron", "hf", "deepspeed", "pytorch")
# npu_line: the line on the NPU side when its stack spells it another way (MindSpeed's --npu-deterministic)
_ADD = Record({"how": Enum("export", "flag", "python"), "line": Name(), "npu_line": Name()}, required=("how", "line"))
section("profiles", Table(Record({
    "title": Name(),
    "items": Table(Record({
        "title": Name(), "sides": ListOf(Enum("gpu", "npu"), nonempty=True),
        "stacks": ListOf(Enum(*_STACKS), nonempty=True),
        "keys": ListOf(Name(), nonempty=True), "want": OneOf(Enum("zero"), Bool()),
        "env": Name(), "values": ListOf(Str(), nonempty=True), "same": Name(), "probe": Name(),
        "add": Table(_ADD, key=Enum(*_STACKS)), "source": TEXT,
    }, required=("title", "sides", "stacks", "add", "source")), nonempty=True),
}, required=("title", "items"))))
# what an item's `probe` asks the Python reader to find in a file: a call with a keyword (or its
# position) set to True and none of `unless` given
section("probes", Table(Record({"calls": ListOf(Name(), nonempty=True), "keyword": Name(), "position": Int(0),
                                "unless": NAMES, "source": TEXT}, required=("calls", "keyword", "source"))))


@validator
def check_profiles(rs: RuleSet) -> None:
    """An item is satisfied by its keys or by its variable (with the values that set it), and
    says the line to add for every stack it applies to."""
    rs.conform("profiles")
    rs.conform("probes")
    for pname, prof in (rs.section("profiles") or {}).items():
        for name, item in prof["items"].items():
            at = ("profiles", pname, "items", name)
            if ("keys" in item) + ("env" in item) + ("same" in item) != 1:
                raise rs.error(at, "an item is satisfied either by keys or by env, one of them"
                               + (" (or by same)" if "same" in item else ""))
            if "probe" in item and item["probe"] not in (rs.section("probes") or {}):
                raise rs.error(at + ("probe",), f"{item['probe']!r} is not a probe (rules/alignment.yaml probes)")
            if "same" in item and item["sides"] != ["npu"]:
                raise rs.error(at + ("sides",), "a `same` item is said on the NPU side: sides: [npu]")
            if ("env" in item) != ("values" in item):
                raise rs.error(at, "env and values go together (the variable, and the values that set it)")
            if "want" in item and "keys" not in item:
                raise rs.error(at + ("want",), "want is said of keys")
            stacks = [s for s in item["stacks"] if s != "any"] or ["megatron", "hf", "deepspeed", "pytorch"]
            missing = [s for s in stacks if s not in item["add"] and "any" not in item["add"]]
            if missing:
                raise rs.error(at + ("add",), f"no line to add for {', '.join(missing)} (give it, or one for any)")
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
    "compute_modules": NAMES, "qualifier_words": NAMES, "placement_keywords": NAMES, "move_methods": NAMES, "loaders": NAMES,
    "device_words": NAMES, "pure_calls": NAMES, "setup_checks": NAMES, "in_place": _PATTERNS,
    "placement_environment": NAMES,
    "rendezvous": Record({"calls": _PATTERNS, "keywords": NAMES}, required=("calls", "keywords")),
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

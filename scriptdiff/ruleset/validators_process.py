"""The process data's sections of the rule packs: the curves' metric names (rules/curves.yaml)
and the msprobe dump ports (rules/dumps.yaml); their schemas and validators
(scriptdiff/ruleset/rule_validators.py says how sections are declared).
"""
from __future__ import annotations

from .packschema import NAMES, Bool, Enum, Int, ListOf, Name, Num, OneOf, Record, Str, Table
from .rulepack import RuleSet, section, validator


# ------------------------------------------------------------------ rules/curves.yaml

section("curve_metrics", Record({
    "names": Table(Name("a metric name"), key=Str("a logged name", nonempty=True)),
    "primary": ListOf(Name(), nonempty=True),
    "not_compared": NAMES,
    "timing_words": NAMES,
    "downstream": Record({"prefixes": NAMES, "words": NAMES}),
    "step_fields": ListOf(Name(), nonempty=True)}, required=("names", "primary", "step_fields")))


@validator
def check_curve_metrics(rs: RuleSet) -> None:
    """`curve_metrics:` (scriptdiff/curves/series.py): a spelling maps onto a metric's own name,
    never onto another spelling (a reader looks a name up once)."""
    rs.conform("curve_metrics")
    names = (rs.section("curve_metrics") or {}).get("names") or {}
    for spelling, metric in names.items():
        if names.get(metric, metric) != metric:
            raise rs.error(("curve_metrics", "names", spelling),
                           f"{metric!r} is itself a spelling of {names[metric]!r}: map {spelling!r} onto that metric")


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

section("dump_evidence", Record({
    "precision": Record({"key": Name("a key"), "calls": ListOf(Name(), nonempty=True),
                         "dtypes": Table(Name("a value"), nonempty=True)}, required=("key", "calls", "dtypes"),
                        need="a key, calls and dtypes"),
    "attention": Record({"key": Name("a key"), "port": Name(), "fused": ListOf(Name(), nonempty=True),
                         "eager": Name()}, required=("key", "port", "fused", "eager"),
                        need="a key, a port, fused forms and an eager form")}))


@validator
def check_dumps(rs: RuleSet) -> None:
    """rules/dumps.yaml (docs/dumps.md), beyond the schemas: each form is recognised one way
    (calls, sequence, modules or frames), a port's stands_for names its own forms, a
    dependency names a port that exists, a selector, and vocabulary keys."""
    rs.conform("dump_ports", "dump_depends", "dump_frames", "dump_values", "dump_evidence")
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
    ev = rs.section("dump_evidence") or {}
    for part in ("precision", "attention"):
        if part in ev and vocab and ev[part]["key"] not in vocab:
            raise rs.error(("dump_evidence", part, "key"), f"{ev[part]['key']!r} is not a vocabulary key "
                                                           "(rules/vocabulary.yaml)")
    att = ev.get("attention")
    if att is not None:
        if att["port"] not in ports:
            raise rs.error(("dump_evidence", "attention", "port"), f"{att['port']!r} is not a port of dump_ports")
        forms = ports[att["port"]]["forms"]
        for i, f in enumerate(att["fused"]):
            if f not in forms or "calls" not in forms[f]:
                raise rs.error(("dump_evidence", "attention", "fused", i),
                               f"{f!r} is not a form of {att['port']} recognised by its calls")
        if att["eager"] not in forms or "sequence" not in forms[att["eager"]]:
            raise rs.error(("dump_evidence", "attention", "eager"),
                           f"{att['eager']!r} is not a form of {att['port']} recognised by a sequence")


# ------------------------------------------------------------------ rules/evidence.yaml

LOG_ITEMS = ("dots", "assign", "fields")
section("run_logs", Table(Record({
    "title": Name(), "framework": Enum("megatron", "hf", "deepspeed"),
    "start": Name(), "end": Name(), "end_line": Name(), "item": Enum(*LOG_ITEMS), "separator": Name(),
    "names": Table(Name("a key")), "switches": Table(Table(OneOf(Str(), Bool(), Num()), nonempty=True)),
    "switches_off": Table(OneOf(Str(), Bool(), Num())),
    "skip": NAMES, "enums": NAMES, "numbers": Bool(), "known_only": Bool(), "bare": Bool()},
    required=("title", "start", "item"), need="a title, a start and an item")))


@validator
def check_run_logs(rs: RuleSet) -> None:
    """`run_logs:` (scriptdiff/lang/runlog.py): one way to close a block, a separator exactly
    for `fields`, and each start line among the `log` kind's markers (so a log named otherwise
    is still found by its content)."""
    rs.conform("run_logs")
    markers = set(((rs.section("kinds") or {}).get("log") or {}).get("markers") or [])
    for name, fmt in (rs.section("run_logs") or {}).items():
        if "end" in fmt and "end_line" in fmt:
            raise rs.error(("run_logs", name, "end_line"), "give end or end_line, not both")
        if (fmt["item"] == "fields") != ("separator" in fmt):
            raise rs.error(("run_logs", name, "item"), "a separator belongs to item: fields, and fields need one")
        if fmt["start"] not in markers:
            raise rs.error(("run_logs", name, "start"), f"{fmt['start']!r} is not a marker of the log kind "
                                                        f"(rules/kinds.yaml kinds.log.markers)")


section("model_structure", Record({"layer_words": ListOf(Name(), nonempty=True)}, required=("layer_words",),
                                  need="layer_words"))


@validator
def check_model_structure(rs: RuleSet) -> None:
    """`model_structure:` (scriptdiff/checks/structure.py): the words tensor names number their
    layers under."""
    rs.conform("model_structure")

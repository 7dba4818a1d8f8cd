"""Property (issue 29): random value edits of a faithful pair, fixed, give back a pair with no findings.

A faithful fixture pair (a launch script, LLaMA-Factory YAML and DeepSpeed JSON, a Hugging Face
Trainer script, a torchtitan TOML) is copied; hypothesis changes some of the NPU side's
numbers where they are written (the places the readers record, each setting's own), `fix`
runs, and `diff` must then report exactly what it reported on the faithful pair."""
from __future__ import annotations

import shutil
from functools import lru_cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptdiff import api
from scriptdiff.inputs import yamlload
from scriptdiff.inputs.jsonload import spans_json
from scriptdiff.lang.toml import value_spans
from scriptdiff.model import Options
from scriptdiff.ruleset.vocabulary import category, is_cosmetic

FIX = Path(__file__).resolve().parent.parent / "fixtures"
PAIRS = ["launch/megatron", "launch/llamafactory", "python/hf_trainer", "toml"]


def _loud(report) -> set:
    return {(f.rule, f.key) for f in report.findings if f.severity in ("error", "warning")}


def _span(fact, text: str) -> tuple[int, int] | None:
    """Where the fact's number is written in its file (characters), from its provenance."""
    m = fact.meta
    if isinstance(m.get("shell"), dict) and m["shell"].get("value") and m["shell"].get("values") == 1:
        return tuple(m["shell"]["value"])  # the fixtures are ASCII: bytes are characters
    o = m.get("origin")
    if isinstance(o, dict) and o.get("pos") and o.get("node") in ("Integer", "Float"):
        line, col = o["pos"]
        start = sum(len(x) for x in text.splitlines(keepends=True)[:line - 1]) + col
        return start, start + len(o["code"])
    path = tuple(m.get("cpath") or ())
    if not path:
        return None
    if fact.path.endswith((".yaml", ".yml")):
        info = yamlload.spans(text).get(path)
        return tuple(info["value"]) if info and not info["block"] else None
    if fact.path.endswith(".json"):
        got = spans_json(text).get(path)
        return (got[1], got[2]) if got else None
    if fact.path.endswith(".toml"):
        info = value_spans(text).get(path)
        return tuple(info["value"]) if info and info.get("value") else None
    return None


@lru_cache(maxsize=None)
def candidates(name: str) -> tuple:
    """(NPU file, start, end, old value) of each number of the NPU side that one setting alone reads,
    and the faithful pair's findings."""
    g, n = str(FIX / name / "gpu"), str(FIX / name / "npu")
    report = api.diff(g, n, Options(keep_facts=True))
    root = (FIX / name / "npu").resolve()
    places: dict[tuple, list] = {}
    for _gt, nt in report.unit_tables:
        for facts in nt.facts.values():
            for f in facts:
                if f.origin != "explicit" or not f.path or isinstance(f.value, bool) \
                        or not isinstance(f.value, (int, float)) or is_cosmetic(f.key) \
                        or category(f.key).name == "cosmetic" or f.meta.get("invocation") not in (None, 0):
                    continue
                src = report.sources.get(("npu", f.path))
                if src is None or root not in Path(src.origin).resolve().parents:
                    continue
                span = _span(f, src.text)
                if span is None or src.text[span[0]:span[1]].strip('"\'') != src.text[span[0]:span[1]]:
                    continue
                rel = str(Path(src.origin).resolve().relative_to(root))
                places.setdefault((rel, span), []).append(f)
    # a place read by one setting alone (a variable two options share is refused, and rightly)
    out = tuple(sorted((rel, a, b, fs[0].value) for (rel, (a, b)), fs in places.items()
                       if len({f.key for f in fs}) == 1))
    return out, frozenset((f.rule, f.key) for f in report.findings)


def _number(old, draw) -> str:
    if isinstance(old, int):
        new = draw(st.integers(min_value=1, max_value=4096).filter(lambda v: v != old))
        return str(new)
    new = draw(st.sampled_from([1e-6, 2.5e-5, 3e-4, 0.01, 0.05, 0.25, 0.5, 0.8, 2.0]).filter(lambda v: v != old))
    return repr(new)


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_value_edits_of_a_faithful_pair_are_fixed_back(tmp_path_factory, data):
    name = data.draw(st.sampled_from(PAIRS))
    places, faithful = candidates(name)
    assert places, name
    chosen = data.draw(st.lists(st.sampled_from(places), min_size=1, max_size=3, unique=True))
    tmp = tmp_path_factory.mktemp("prop")
    shutil.copytree(FIX / name / "gpu", tmp / "gpu")
    shutil.copytree(FIX / name / "npu", tmp / "npu")
    edits: dict[str, list] = {}
    for rel, a, b, old in chosen:
        edits.setdefault(rel, []).append((a, b, _number(old, data.draw)))
    for rel, spans in edits.items():
        p = tmp / "npu" / rel
        text = p.read_text(encoding="utf-8")
        for a, b, new in sorted(spans, reverse=True):
            text = text[:a] + new + text[b:]
        p.write_text(text, encoding="utf-8")
    g, n = str(tmp / "gpu"), str(tmp / "npu")
    broken = api.diff(g, n, Options())
    assert _loud(broken) - faithful, "the edits made a difference"
    result = api.fix(g, n, Options())
    # a derived value (data_parallel_size) is not edited: it follows the settings fixed
    assert [d.why for d in result.refused if d.why != "derived"] == [], [(d.finding.key, d.reason)
                                                                          for d in result.refused]
    after = api.diff(g, n, Options())
    assert {(f.rule, f.key) for f in after.findings} == faithful

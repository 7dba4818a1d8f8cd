"""The JSON report's text: json's own indented spelling, byte for byte, however it is made
(report/values.json_text re-indents json's compact text; a document that is no strict JSON
takes json's own path)."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from scriptdiff.report.values import _indented, json_text

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=12))
DOCS = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=25)


@settings(max_examples=300, deadline=None, database=None)
@given(DOCS)
def test_the_indented_text_is_json_indented(doc):
    assert _indented(doc) == json.dumps(doc, indent=2, ensure_ascii=False)


def test_floats_keep_json_spelling_and_strings_keep_their_bytes():
    doc = {"lr": 1e-06, "eps": 2.5e-05, "big": 1e+17, "s": "a, b: {c} [d]\n\t\"q\" é \ud800", "e": {}, "l": [],
           2: [[], {"x": []}]}
    text = _indented(doc)
    assert '"lr": 1e-06,' in text and '"eps": 2.5e-05,' in text and '"big": 1e+17,' in text
    assert text == json.dumps(doc, indent=2, ensure_ascii=False)


def test_nan_takes_json_own_path():
    doc = {"loss": float("nan"), "x": [float("inf")]}
    assert _indented(doc) == '{\n  "loss": NaN,\n  "x": [\n    Infinity\n  ]\n}'


def test_controls_are_still_escaped_in_the_report_text():
    assert json_text({"v": "a\u202eb\x85"}) == '{\n  "v": "a\\u202eb\\u0085"\n}\n'

import pytest

from scriptdiff.rules import RuleError, parse_pack

GOOD = """
rules:
  - code: SD999
    name: x
    check: script
    severity: info
    summary: s
    doc: d
    examples:
      - {lang: text, gpu: a, npu: b, fires: true}
      - {lang: text, gpu: a, npu: a, fires: false}
"""


def test_good_pack_loads():
    rules, sections = parse_pack(GOOD, "rules/x.yaml")
    assert [r.code for r in rules] == ["SD999"]
    assert sections == {}


@pytest.mark.parametrize("bad,needle", [
    (GOOD.replace("SD999", "X1"), "rules/x.yaml:3: rule code 'X1'"),
    (GOOD.replace("severity: info", "severity: fatal"), "severity must be one of"),
    (GOOD.replace("check: script", "check: vibes"), "check 'vibes'"),
    (GOOD.replace("fires: false", "fires: true"), "one that does not"),
    (GOOD.replace("    doc: d\n", ""), "'doc'"),
    ("rules: [\n", "not valid YAML"),
])
def test_bad_pack_names_file_and_line(bad, needle):
    with pytest.raises(RuleError) as e:
        parse_pack(bad, "rules/x.yaml")
    assert needle in str(e.value)
    assert str(e.value).startswith("rules/x.yaml:")

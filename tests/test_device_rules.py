"""Every device test of rules/devices.yaml, run on its own example (Fixit-style): the
example's marked branch (`x = 1` in Python, the first `export` in shell) runs on the sides
its `expect` names, and on no other. Also: the section's validator refuses what is wrong."""
from __future__ import annotations

import pytest

from scriptdiff.lang.python.parse import parse
from scriptdiff.lang.python.specialise import specialise
from scriptdiff.rulepack import RuleError
from scriptdiff.rule_validators import check_devices
from scriptdiff.rules import load


def _python_examples():
    py = load().section("devices")["python"]
    out = []
    for part in ("calls", "attributes", "modules"):
        for e in py[part]:
            out.append((f"{part}:{e['idiom']}:{e['family']}", e))
    for part in ("holders", "device_calls"):
        out.append((part, py[part]))
    return out


PY = _python_examples()


def marked_runs(text: str, side: str) -> bool:
    """Whether the statement `x = 1` is in the program `side`'s device runs."""
    p = parse("example.py", text)
    assert p.error is None, p.error
    spec = specialise(p, side)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == "x = 1")

    def live(sts):
        for st in sts:
            if st.line == line:
                return True
            if any(live(body) for _l, _n, body in st.clauses):
                return True
        return False

    gone = {ln for ln, _why, _rule in spec.set_aside}
    return live(p.body) and line not in gone


@pytest.mark.parametrize("name,entry", PY, ids=[n for n, _ in PY])
def test_python_device_test_example(name, entry):
    for side in ("gpu", "npu"):
        assert marked_runs(entry["example"], side) is entry["expect"][side], (name, side)


def test_every_python_example_is_a_recognised_device_test():
    for name, entry in PY:
        p = parse("example.py", entry["example"])
        for side in ("gpu", "npu"):
            spec = specialise(parse("example.py", entry["example"]), side)
            assert sum(spec.decided.values()) >= 1 and not spec.undecided, (name, side)
        del p


SH = [(part, e) for part, e in load().section("devices")["shell"].items()]


def first_export_runs(text: str, side: str) -> bool:
    """Whether the example's first `export NAME=...` is among the facts of `side`'s run."""
    from scriptdiff.lang import shell
    from scriptdiff.model import Options, SideContext
    from scriptdiff.sources import Source

    name = next(t.split("export ", 1)[1].split("=", 1)[0] for t in text.splitlines() if "export " in t)
    ex = shell.extract(Source(name="launch.sh", data=text.encode()), SideContext(side, options=Options(use_cache=False)))
    return any(f.meta.get("name") == name or f.key == f"env:{name}" for f in ex.facts)


@pytest.mark.parametrize("part,entry", SH, ids=[p for p, _ in SH])
def test_shell_device_test_example(part, entry):
    for side in ("gpu", "npu"):
        assert first_export_runs(entry["example"], side) is entry["expect"][side], (part, side)


def _bad(mutate) -> str:
    import copy

    rs = load()
    sections = copy.deepcopy(rs.sections)
    mutate(sections["devices"])

    class RS:
        rules = rs.rules
        section_origin = rs.section_origin

        def section(self, name, default=None):
            return sections.get(name, default)

    with pytest.raises(RuleError) as e:
        check_devices(RS())
    return str(e.value)


def test_the_validator_refuses_a_test_without_an_example():
    msg = _bad(lambda d: d["python"]["calls"][0].pop("example"))
    assert msg == "rules/devices.yaml:1: devices.python.calls[0] needs an example (code the tests run)"


def test_the_validator_refuses_an_unknown_family():
    msg = _bad(lambda d: d["python"]["calls"][0].update(family="tpu"))
    assert msg == "rules/devices.yaml:1: devices.python.calls[0] needs an idiom and a family (cuda, npu or other)"


def test_the_validator_refuses_a_mask_that_is_no_mask_rule():
    msg = _bad(lambda d: d["python"]["calls"][1].update(mask="code-changes-numerics"))
    assert msg == "rules/devices.yaml:1: devices.python.calls[1].mask: 'code-changes-numerics' is not the name of a mask rule"


def test_the_validator_refuses_a_determinism_switch_without_the_npu_way():
    msg = _bad(lambda d: d["python"]["cuda_switches"]["torch.backends.cudnn.deterministic"].pop("npu_way"))
    assert msg == ("rules/devices.yaml:1: devices.python.cuda_switches.torch.backends.cudnn.deterministic: "
                   "a determinism switch names the NPU way and its source")


def test_the_validator_refuses_a_name_in_two_families():
    msg = _bad(lambda d: d["families"]["other"].append("npu"))
    assert msg == "rules/devices.yaml:1: devices.families.other: 'npu' must be lower case and in one family only"

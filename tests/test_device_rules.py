"""Every device test of rules/devices.yaml, run on its own example (Fixit-style): the
example's marked branch (`x = 1` in Python, the first `export` in shell) runs on the sides
its `expect` names, and on no other. Also: the section's validator refuses what is wrong."""
from __future__ import annotations

import shutil

import pytest

from scriptdiff.lang.python.parse import parse
from scriptdiff.lang.python.specialise import specialise
from scriptdiff.ruleset.rulepack import RuleError, load_packs, rules_dir
from scriptdiff.ruleset.rules import load


def _python_examples():
    py = load().section("devices")["python"]
    out = []
    for part in ("calls", "attributes", "modules"):
        for e in py[part]:
            out.append((f"{part}:{e['idiom']}:{e['family']}", e))
    for part in ("holders", "device_calls", "own_device"):
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
    from scriptdiff.inputs.sources import Source

    name = next(t.split("export ", 1)[1].split("=", 1)[0] for t in text.splitlines() if "export " in t)
    ex = shell.extract(Source(name="launch.sh", data=text.encode()), SideContext(side, options=Options(use_cache=False)))
    return any(f.meta.get("name") == name or f.key == f"env:{name}" for f in ex.facts)


@pytest.mark.parametrize("part,entry", SH, ids=[p for p, _ in SH])
def test_shell_device_test_example(part, entry):
    for side in ("gpu", "npu"):
        assert first_export_runs(entry["example"], side) is entry["expect"][side], (part, side)


def _load_with(tmp_path, old: str, new: str):
    """Load a copy of rules/ in which `old` is replaced by `new` in rules/devices.yaml."""
    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    path = folder / "devices.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return load_packs(sorted(folder.glob("*.yaml")))


def _line(old: str, new: str, at: str) -> int:
    text = (rules_dir() / "devices.yaml").read_text(encoding="utf-8").replace(old, new, 1)
    assert text.count(at) == 1, at
    return text[:text.index(at)].count("\n") + 1


NPU_CALL = "      - idiom: torch.npu.is_available()\n        family: npu\n"
DETERMINISTIC = ("        determinism: true\n        npu_way: \"torch.use_deterministic_algorithms(True), with "
                 "HCCL_DETERMINISTIC=true for collectives\"\n        source: \"MindSpeed")


@pytest.mark.parametrize("old,new,at,needle", [
    # a test without its example (the code the tests run)
    ("        example: |\n          import torch\n          if torch.npu.is_available():\n              x = 1\n", "",
     "- idiom: torch.npu.is_available()", "devices.python.calls[1]: needs example"),
    # a family that is none of cuda, npu, other
    (NPU_CALL, "      - idiom: torch.npu.is_available()\n        family: tpu\n", "family: tpu",
     "devices.python.calls[1].family: expected one of cuda, npu, other (got 'tpu')"),
    # a mask that names no mask rule
    (NPU_CALL, NPU_CALL + "        mask: code-changes-numerics\n", "mask: code-changes-numerics",
     "devices.python.calls[1].mask: 'code-changes-numerics' is not the name of a mask rule"),
    # a determinism switch without the NPU way
    (DETERMINISTIC, "        determinism: true\n        source: \"MindSpeed", "      torch.backends.cudnn.deterministic:",
     "devices.python.cuda_switches.torch.backends.cudnn.deterministic: a determinism switch names the NPU way and "
     "its source"),
    # a device name in two families
    ("    other: [cpu, mps,", "    other: [npu, cpu, mps,", "other: [npu, cpu",
     "devices.families.other[0]: 'npu' must be lower case and in one family only"),
])
def test_the_validator_refuses_wrong_device_data_at_its_line(tmp_path, old, new, at, needle):
    with pytest.raises(RuleError) as e:
        _load_with(tmp_path, old, new)
    assert str(e.value).startswith(f"rules/devices.yaml:{_line(old, new, at)}: {needle}")

"""A quick run of the fuzzer (fuzz/fuzz_cli.py): small inputs of every class of issue 12,
each in a process of its own (forked by the fuzzer's fork servers) under the fuzzer's caps
(2 GB of address space, a wall-clock limit), so that a crash in native code, a hang or a
blow-up fails the test."""
from __future__ import annotations

import json
import os
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import fuzz_cli  # noqa: E402

PER_CLASS = {c: 3 for c in fuzz_cli.CLASSES} | {"escape": 5} | {c: 1 for c in fuzz_cli.EXTRA}  # big shapes: one each
# a hang costs this much (the fuzzer's own cap): none of these inputs needs two seconds on an
# idle machine, but a shared CI machine may starve a run for several
TIMEOUT = 20.0


@pytest.fixture(scope="module")
def results():
    seeds = fuzz_cli.corpus()
    cases = []
    for cls in fuzz_cli.CLASSES:
        rng = random.Random(f"smoke-{cls}")
        cases += [fuzz_cli.make_case(cls, random.Random(rng.random()), seeds, small=True) for _ in range(PER_CLASS[cls])]
    # a link to /dev/zero in place of an entry (issue 12): always one of them
    cases[[c.cls for c in cases].index("hostile-cache")].cache = "dev-zero"
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda c: fuzz_cli.run_case(c, 2048, TIMEOUT), cases))
    out: dict[str, list] = {}
    for case, (problem, _rss, _wall) in zip(cases, done):
        out.setdefault(case.cls, []).append((case.argv, problem))
    return out


@pytest.mark.parametrize("cls", fuzz_cli.CLASSES)
def test_fuzz_class_small_inputs(results, cls):
    assert len(results[cls]) == PER_CLASS[cls]
    assert [(argv, p) for argv, p in results[cls] if p] == []


def test_the_planted_secret_check_can_fail():
    """The secret check sees a planted string: here a file name every report prints."""
    case = fuzz_cli.Case("secret-value", {"gpu/a.py": b"x = 1\n", "npu/a.py": b"x = 2\n"},
                         ["diff", "gpu/a.py", "npu/a.py"], secrets=["a.py"], fmt="text")
    assert fuzz_cli.run_case(case, 2048, 30.0)[0] == "a planted secret was printed (a.py...)"


def test_a_run_has_the_cases_folder_environment_and_memory_cap(tmp_path):
    """A forked run reads its files from the case's folder, its cache folder from the case's
    environment (not the fork server's), and is held to the case's address-space cap."""
    for side, lr in (("gpu", "1e-4"), ("npu", "2e-4")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "train.py").write_text(f"lr = {lr}\n")
    env = dict(os.environ, SCRIPTDIFF_CACHE_DIR=str(tmp_path / "own-cache"))
    r = fuzz_cli.spawn(["diff", "--format", "json", "gpu/train.py", "npu/train.py"], tmp_path, env, 2048, TIMEOUT)
    assert "problem" not in r and r["code"] == 1
    assert [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"], f["gpu"]["line"], f["npu"]["line"])
            for f in json.loads(r["out"])["findings"]] == [("SD202", "lr", 0.0001, 0.0002, 1, 1)]
    assert list((tmp_path / "own-cache").rglob("*.json"))
    case = fuzz_cli.Case("mutation", {"gpu/a.py": b"x = 1\n", "npu/a.py": b"x = 2\n"}, ["diff", "gpu/a.py", "npu/a.py"])
    assert fuzz_cli.run_case(case, 2048, TIMEOUT)[0] is None
    assert fuzz_cli.run_case(case, 64, TIMEOUT)[0] is not None  # 64 MB: less than the interpreter holds


def test_the_write_classes_judges_can_fail():
    """fix-writes and init-config (issue 40) see what the code before its fix did: a read-only
    NPU file replaced (exit 0), a pyproject.toml made invalid by a second table, a file written
    through a link out of the project."""
    import classes_writes as w

    fix = {"state": "readonly", "force": False, "name": "run.sh", "where": "npu/run.sh", "npu": "a\n", "fixed": "b\n"}
    before = {"npu/run.sh": ("file", b"a\n", 0o444, 1)}
    out = json.dumps({"schema": 1, "findings": [{"severity": "error", "fix": {"fixed": True}}]})
    assert w._judge_fix(fix, {"code": 0, "out": out}, before, {"npu/run.sh": ("file", b"b\n", 0o444, 2)}) == \
        "fix in state readonly gave exit 0, not 1 (refused)"
    init = {"shape": "configured-dotted", "config": "pyproject.toml"}
    old = b'tool.scriptdiff.gpu.scripts = ["gpu"]\n'
    assert w._judge_init(init, {"code": 0, "err": ""}, {"proj/pyproject.toml": ("file", old, 0o644, 1)},
                         {"proj/pyproject.toml": ("file", old + b'[tool.scriptdiff.gpu]\nscripts = ["gpu"]\n', 0o644, 2)}) \
        == "init (configured-dotted) exit 0 and proj/pyproject.toml is not valid TOML"
    init = {"shape": "toml-dangling", "config": "scriptdiff.toml"}
    assert w._judge_init(init, {"code": 0, "err": ""}, {"proj/scriptdiff.toml": ("link", "../outside/new.toml")},
                         {"proj/scriptdiff.toml": ("link", "../outside/new.toml"),
                          "outside/new.toml": ("file", b"[gpu]\n", 0o644, 3)}) == \
        "init (toml-dangling) wrote outside the project: ['outside/new.toml']"

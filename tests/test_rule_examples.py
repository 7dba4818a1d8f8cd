"""Every rule's own examples, run through the real pipeline (Fixit-style).

A rule must carry at least one example that fires and one that does not (the loader
enforces it); here each example is written to a GPU and an NPU file and diffed, and the
rule must appear among the findings or masked substitutions exactly when the example says,
and every finding must carry its rule's severity (one severity per code).
Rules about folders, patches or `check` say so in the `example_modes` section (rules/check.yaml):
their examples run through the folder diff or `review` on the same two files, or (`check`)
through `scriptdiff check` with the GPU text as its configuration.
"""
from __future__ import annotations

import pytest

from scriptdiff.engine import Options, diff_files
from scriptdiff.registry import kinds
from scriptdiff.rules import load

# each kind's example file name (rules/kinds.yaml `example`)
DEFAULT_NAMES = {name: k.example for name, k in kinds().items()}

CASES = [(r.code, i, ex) for r in load().rules.values() for i, ex in enumerate(r.examples)]


def report_for(tmp_path, ex, code: str = ""):
    g = tmp_path / "gpu" / (ex.gpu_name or DEFAULT_NAMES[ex.lang])
    n = tmp_path / "npu" / (ex.npu_name or DEFAULT_NAMES[ex.lang])
    g.parent.mkdir(parents=True)
    n.parent.mkdir(parents=True)
    g.write_text(ex.gpu, encoding="utf-8", newline="")
    n.write_text(ex.npu, encoding="utf-8", newline="")
    mode = (load().section("example_modes", {}) or {}).get(code, "files")
    if mode == "check":  # the rule is about `scriptdiff check`: the GPU text is its configuration
        from scriptdiff.checkrun import load_config, run_checks

        cfg = tmp_path / "scriptdiff.toml"
        cfg.write_text(ex.gpu, encoding="utf-8")
        report = run_checks(load_config(str(cfg)), Options(use_cache=False))
    elif mode == "curves":  # the rule is about training curves: `scriptdiff curves` on the two logs
        from scriptdiff.api import curves

        report = curves(str(g), str(n), Options(use_cache=False))
    elif mode == "tree":  # the rule is about folders: run the folder diff on gpu/ and npu/
        from scriptdiff.tree import diff_trees

        report = diff_trees(str(g.parent), str(n.parent), Options(use_cache=False))
    elif mode == "review":  # the rule is about patches: review the unified diff GPU -> NPU
        import difflib

        from scriptdiff.review import review

        patch = "".join(difflib.unified_diff(ex.gpu.splitlines(True), ex.npu.splitlines(True),
                                             f"a/{g.name}", f"b/{n.name}"))
        report = review(patch.encode(), "example.patch", Options(use_cache=False), root=None)
    else:
        report = diff_files([str(g)], [str(n)], Options(use_cache=False))
    return report



@pytest.mark.parametrize("code,index,example", CASES, ids=[f"{c}-{i}" for c, i, _ in CASES])
def test_rule_example(tmp_path, code, index, example):
    report = report_for(tmp_path, example, code)
    got = {f.rule for f in report.findings} | {m.rule for m in report.masked}
    if example.fires:
        assert code in got, f"{code} example {index + 1} should fire; got {sorted(got)}"
    else:
        assert code not in got, f"{code} example {index + 1} should not fire; got {sorted(got)}"
    # one severity per code: the rule's, whatever made the finding (and every other finding's too)
    rs = load()
    assert [(f.rule, f.severity) for f in report.findings if f.severity != rs.severity(f.rule)] == []
    if example.fires and rs.rule(code).kind == "finding":
        assert {f.severity for f in report.findings if f.rule == code} == {rs.severity(code)}


def test_every_rule_has_both_kinds_of_example():
    for r in load().rules.values():
        assert any(e.fires for e in r.examples) and not all(e.fires for e in r.examples), r.code
        assert r.doc.strip() and r.summary.strip(), r.code

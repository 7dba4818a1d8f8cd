"""A rule's own examples, run through the real pipeline: the shipped packs' in the tests
(tests/test_rule_examples.py), a user's pack's with `scriptdiff rules --test DIR`.

Each example is written to a GPU and an NPU file (the kind's example name, rules/kinds.yaml
`example`, unless the example names its files) and compared; the rule must appear among the
findings or masked substitutions exactly when the example says it fires. Rules about folders,
patches, `check`, curves or dumps say so in the `example_modes` section (rules/check.yaml):
their examples run through the folder diff, `review` on the unified diff of the two texts,
`scriptdiff check` with the GPU text as its configuration, `curves` on the two logs, or
`dumps` on the two dump folders each text writes (one JSON object of file name -> content:
dump/... the dump, scripts/... the scripts, then given with --scripts).
"""
from __future__ import annotations

import difflib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .checkrun import load_config, run_checks
from ..curves import run as curves_run
from ..dumps import entry as dumps_entry
from ..run.pipeline import diff_files
from ..model import Options
from ..ruleset.registry import kinds
from ..run.review import review
from ..ruleset.rulepack import Example, Rule, inside_name
from ..ruleset.rules import load
from ..run.folders import diff_trees


@dataclass
class ExampleResult:
    rule: Rule
    index: int  # 1-based, as `scriptdiff rule CODE` numbers them
    example: Example
    got: set[str] = field(default_factory=set)  # the codes the run reported (findings and masked)
    error: str | None = None  # the run failed: why

    @property
    def passed(self) -> bool:
        return self.error is None and (self.rule.code in self.got) == self.example.fires


def codes_for(folder: Path, ex: Example, code: str) -> set[str]:
    """The rule codes (findings and masked substitutions) of example `ex` of rule `code`, run
    in the empty folder `folder`."""
    report = report_for(folder, ex, code)
    return {f.rule for f in report.findings} | {m.rule for m in report.masked}


def wrong_severities(report) -> list[tuple[str, str]]:
    """(rule, severity) of each finding whose severity is not its rule's (one severity per code)."""
    rs = load()
    return [(f.rule, f.severity) for f in report.findings if f.rule in rs.rules and f.severity != rs.severity(f.rule)]


def report_for(folder: Path, ex: Example, code: str):
    """The Report of example `ex` of rule `code`, run the way the rule needs, in `folder`."""
    names = {name: k.example for name, k in kinds().items()}
    g = inside(folder, "gpu/" + (ex.gpu_name or names[ex.lang]))
    n = inside(folder, "npu/" + (ex.npu_name or names[ex.lang]))
    g.parent.mkdir(parents=True)
    n.parent.mkdir(parents=True)
    g.write_text(ex.gpu, encoding="utf-8", newline="")
    n.write_text(ex.npu, encoding="utf-8", newline="")
    for name, text in ex.files.items():  # beside both sides' files (the program a launch script starts)
        for side in ("gpu", "npu"):
            inside(folder, f"{side}/{name}").write_text(text, encoding="utf-8", newline="")
    mode = (load().section("example_modes", {}) or {}).get(code, "files")
    opts = Options(use_cache=False)
    if mode == "check":  # the rule is about `scriptdiff check`: the GPU text is its configuration
        cfg = folder / "scriptdiff.toml"
        cfg.write_text(ex.gpu, encoding="utf-8")
        report = run_checks(load_config(str(cfg)), opts)
    elif mode == "curves":  # the rule is about training curves: `scriptdiff curves` on the two logs
        report = curves_run.compare(str(g), str(n), opts)
    elif mode == "dumps":  # the rule is about msprobe dumps: each text is a folder, file by file
        for side, text in (("gpu", ex.gpu), ("npu", ex.npu)):
            for rel, content in json.loads(text).items():
                p = inside(folder, f"{side}/{rel}")
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
        scripts = (str(g.parent / "scripts"), str(n.parent / "scripts")) if (g.parent / "scripts").is_dir() else None
        report = dumps_entry.compare(str(g.parent / "dump"), str(n.parent / "dump"), opts, scripts=scripts)
    elif mode == "tree":  # the rule is about folders: run the folder diff on gpu/ and npu/
        report = diff_trees(str(g.parent), str(n.parent), opts)
    elif mode == "review":  # the rule is about patches: review the unified diff GPU -> NPU
        patch = "".join(difflib.unified_diff(ex.gpu.splitlines(True), ex.npu.splitlines(True),
                                             f"a/{g.name}", f"b/{n.name}"))
        report = review(patch.encode(), "example.patch", opts, root=None, by_hunk=True)  # the hunk rules
    else:
        report = diff_files([str(g)], [str(n)], opts)
    return report


class Outside(Exception):
    """An example names a file out of its folder: refused, nothing of it written."""


def inside(folder: Path, rel: str) -> Path:
    """`folder/rel`, a file the example writes; Outside when `rel` is not a path inside `folder`
    (`..`, an absolute path, a backslash) or, links followed, would land out of it. The pack's
    validators refuse such names on load (rulepack.plain_name, inside_name): this is the second
    lock, on the write itself."""
    path = folder / rel
    real, top = os.path.realpath(path), os.path.realpath(folder)
    if not inside_name(rel) or not real.startswith(top.rstrip(os.sep) + os.sep):
        raise Outside(f"the example names {rel.split('/', 1)[-1]!r}, a path out of its folder: refused, "
                      f"nothing written")
    return path


def run_examples(rules: list[Rule]) -> list[ExampleResult]:
    """Every example of these rules, each in a fresh temporary folder. A run that fails is a
    failed example with its reason, never an exception."""
    out = []
    with tempfile.TemporaryDirectory(prefix="scriptdiff-examples-") as tmp:
        for r in rules:
            for i, ex in enumerate(r.examples, 1):
                res = ExampleResult(rule=r, index=i, example=ex)
                try:
                    report = report_for(Path(tmp) / f"{r.code}-{i}", ex, r.code)
                    res.got = {f.rule for f in report.findings} | {m.rule for m in report.masked}
                    wrong = wrong_severities(report)
                    if wrong:
                        res.error = "a finding does not carry its rule's severity: " + \
                            ", ".join(f"{rule} as {sev}" for rule, sev in wrong)
                except Outside as e:
                    res.error = str(e)
                except Exception as e:  # noqa: BLE001  reported as this example's failure
                    res.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")
                out.append(res)
    return out

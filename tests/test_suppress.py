"""Inline `scriptdiff: ignore[CODE]` comments: on the line or above it, read from comments only."""
from __future__ import annotations

import pytest

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.inputs.sources import Source
from scriptdiff.run.suppress import comment_of, comments, markers


def pair(tmp_path, gpu, npu, name="notes.txt", **opts):
    g, n = tmp_path / "gpu" / name, tmp_path / "npu" / name
    g.parent.mkdir(parents=True, exist_ok=True)
    n.parent.mkdir(parents=True, exist_ok=True)
    g.write_text(gpu, encoding="utf-8")
    n.write_text(npu, encoding="utf-8")
    return diff_files([str(g)], [str(n)], Options(use_cache=False, **opts))


def rows(report):
    return [(f.rule, f.severity, f.gpu and f.gpu.line, f.npu and f.npu.line) for f in report.findings]


def test_unsuppressed_baseline_case(tmp_path):
    assert rows(pair(tmp_path, "a\nlr=1\n", "a\nlr=2\n")) == [("SD108", "warning", 2, 2)]


@pytest.mark.parametrize("npu", [
    "a\nlr=2  # scriptdiff: ignore[SD108]\n",          # on the line
    "# scriptdiff: ignore[SD108]\nlr=2\n",             # above the line
    "a\nlr=2  # scriptdiff: ignore\n",                  # no codes: all
    "a\nlr=2  # scriptdiff: ignore[SD1]\n",             # a prefix
    "a\nlr=2  # noqa  scriptdiff: ignore[SD201, SD108]\n",  # several codes, other text around
])
def test_suppressed(tmp_path, npu):
    gpu = "a\nlr=1\n" if not npu.startswith("#") else "x\nlr=1\n"
    report = pair(tmp_path, gpu, npu)
    assert rows(report) == []
    assert report.exit_code() == 0


def test_marker_on_gpu_side_counts(tmp_path):
    assert rows(pair(tmp_path, "a\nlr=1  # scriptdiff: ignore[SD108]\n", "a\nlr=2\n")) == []


def test_other_code_does_not_suppress_and_is_unused(tmp_path):
    report = pair(tmp_path, "a\nlr=1\n", "a\nlr=2  # scriptdiff: ignore[SD201]\n")
    assert rows(report) == [("SD108", "warning", 2, 2), ("SD152", "info", None, 2)]
    unused = report.findings[1]
    assert unused.key == f"suppress:{tmp_path}/npu/notes.txt:2"
    assert unused.npu.value == "# scriptdiff: ignore[SD201]"
    assert "[SD201]" in unused.message


def test_unused_suppression_reported_as_info(tmp_path):
    report = pair(tmp_path, "lr=1\n", "lr=1\n# scriptdiff: ignore[SD108]\nz=0\n")
    # the marker is above `z=0`, which is a difference of its own: used
    assert rows(report) == []
    report = pair(tmp_path, "lr=1\nz=0\n", "lr=1  # scriptdiff: ignore[SD108]\nz=0\n")
    assert [(f.rule, f.npu.line) for f in report.findings if f.rule == "SD152"] == []  # the line differs: used
    report = pair(tmp_path, "lr=1\n", "lr=1\n\n\n# scriptdiff: ignore[SD108]\n")
    assert ("SD152", "info", None, 4) in rows(report)


def test_unused_of_ignored_code_not_reported(tmp_path):
    report = pair(tmp_path, "a\n", "a  # scriptdiff: ignore[SD201]\n", ignore=["SD2"])
    assert [f.rule for f in report.findings if f.rule == "SD152"] == []


def test_marker_inside_a_string_is_not_a_comment():
    assert comment_of('echo "# scriptdiff: ignore[SD108]"') is None
    assert comment_of("x='# scriptdiff: ignore' # real") == "# real"
    assert comment_of("url=http://a#b  # scriptdiff: ignore") == "# scriptdiff: ignore"
    src = Source("t.py", b"s = '# scriptdiff: ignore[SD108]'\nx = 1  # scriptdiff: ignore[SD201]\n")
    assert comments(src) == [(2, "# scriptdiff: ignore[SD201]")]


@pytest.mark.parametrize("name,text,line", [
    ("run.sh", 'torchrun train.py \\\n  --lr 1e-4  # scriptdiff: ignore[SD202]\n', 2),
    ("cfg.yaml", "optimizer:\n  lr: 1e-4  # scriptdiff: ignore[SD202]\n", 2),
    ("train.py", "def f():\n    # scriptdiff: ignore[SD202]\n    return 1\n", 2),
])
def test_markers_in_shell_yaml_python(name, text, line):
    ms = markers(Source(name, text.encode()), "npu")
    assert [(m.line, m.codes) for m in ms] == [(line, ("SD202",))]


def test_json_has_no_comments():
    assert markers(Source("ds.json", b'{"a": "# scriptdiff: ignore"}'), "npu") == []


def test_shell_launch_script_suppression(tmp_path):
    pytest.importorskip("scriptdiff.lang.shell")
    gpu = "torchrun pretrain_gpt.py --lr 1e-4\n"
    npu = "# scriptdiff: ignore[SD202]\ntorchrun pretrain_gpt.py --lr 2e-4\n"
    report = pair(tmp_path, gpu, npu, name="pretrain.sh")
    assert [f.rule for f in report.findings if f.rule == "SD202"] == []
    report = pair(tmp_path, gpu, npu.replace("SD202", "SD201"), name="pretrain.sh")
    assert [f.rule for f in report.findings if f.rule == "SD202"] == ["SD202"]


def test_marker_in_a_followed_config_not_among_the_sources(tmp_path, monkeypatch):
    """A finding may point at a config the launch script referenced (--config x.yaml): its
    comments count too, read from disk."""
    from scriptdiff.model import Finding, Report, Side
    from scriptdiff.run.suppress import apply

    monkeypatch.chdir(tmp_path)
    (tmp_path / "npu").mkdir()
    (tmp_path / "npu" / "cfg.yaml").write_text("optim:\n  lr: 2e-4  # scriptdiff: ignore[SD202]\n")
    r = Report(gpu="g", npu="n")
    r.findings = [Finding("SD202", "hyperparameters", "error", "lr", Side(1e-4, "gpu/cfg.yaml", 2, "lr: 1e-4"),
                          Side(2e-4, "npu/cfg.yaml", 2, "lr: 2e-4"), "lr differs")]
    apply(r, [], [], Options())
    assert r.findings == []
    r.findings = [Finding("SD201", "hyperparameters", "error", "x", None, Side(1, "npu/cfg.yaml", 2, "x"), "m")]
    apply(r, [], [], Options())
    assert [(f.rule, f.npu.line) for f in r.findings] == [("SD201", 2), ("SD152", 2)]


def test_yaml_config_referenced_by_launch_script(tmp_path):
    pytest.importorskip("scriptdiff.lang.shell")
    pytest.importorskip("scriptdiff.lang.config")
    def lr_rules(mark):
        for side, lr, m in (("gpu", "1e-4", ""), ("npu", "2e-4", mark)):
            d = tmp_path / side
            d.mkdir(exist_ok=True)
            (d / "cfg.yaml").write_text(f"lr: {lr}{m}\n")
            (d / "run.sh").write_text("python pretrain_gpt.py --config cfg.yaml\n")
        report = diff_files([str(tmp_path / "gpu" / "run.sh")], [str(tmp_path / "npu" / "run.sh")],
                            Options(use_cache=False))
        return [(f.rule, f.npu.line) for f in report.findings if f.key == "lr"]

    assert lr_rules("") == [("SD202", 1)]
    assert lr_rules("  # scriptdiff: ignore[SD202]") == []

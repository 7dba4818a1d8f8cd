"""Markdown (pull-request comment) and GitHub annotations; several formats in one run."""
from __future__ import annotations

import json

from scriptdiff.model import Finding, InputError, Report, Side
from scriptdiff.report import render


def report():
    r = Report(gpu="gpu", npu="npu")
    r.findings = [
        Finding("SD202", "hyperparameters", "error", "lr", Side(1e-4, "gpu/run.sh", 3, "--lr 1e-4"),
                Side(2e-4, "npu/run.sh", 4, "--lr 2e-4"), "lr differs: a|b"),
        Finding("SD151", "script", "info", "file:README.md", Side("README.md", "gpu/README.md", None, "text"),
                None, "file on GPU only"),
    ]
    r.errors = [InputError("npu/x.py", "not valid Python, line 3: bad\ncontinued")]
    r.verdicts = {"hyperparameters": ("differences", "1 error(s)"), "dataset": ("not checked", "no inputs")}
    return r


def test_markdown_tables(tmp_path, monkeypatch):
    md = render(report(), "markdown")
    assert md.startswith("### scriptdiff: 1 error(s), 0 warning(s), 1 info\n")
    assert "| hyperparameters | ❌ differences | 1 error(s) |" in md
    assert "| dataset | ⚪ not checked | no inputs |" in md
    assert ("| 🔴 error | SD202 | `lr` | `0.0001` at gpu/run.sh:3 | `0.0002` at npu/run.sh:4 | "
            "lr differs: a\\|b |") in md
    assert "| 🔵 info | SD151 | `file:README.md` | `README.md` at gpu/README.md | (absent) | file on GPU only |" in md
    assert "- `npu/x.py`: not valid Python, line 3: bad<br>continued" in md


def test_github_annotations(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = render(report(), "github").splitlines()
    assert out[0] == ("::error file=npu/run.sh,line=4,title=SD202 lr::lr differs: a|b%0AGPU: 0.0001%0ANPU: 0.0002"
                      " [GPU at gpu/run.sh:3]")
    assert out[1] == ("::notice file=gpu/README.md,title=SD151 file%3AREADME.md::file on GPU only%0A"
                      "GPU: README.md%0ANPU: (absent) [GPU at gpu/README.md]")
    # a line break taken from an input is shown (\\n), never encoded into one (issue 32)
    assert out[2] == "::warning title=scriptdiff input::npu/x.py: not valid Python, line 3: bad\\ncontinued"
    assert out[3].startswith("scriptdiff: 1 error(s), 0 warning(s), 1 info")


def test_several_outputs_at_once(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.txt").write_text("1\n")
    (tmp_path / "n.txt").write_text("2\n")
    code, out, err = cli("diff", "g.txt", "n.txt", "--output", "sarif=out.sarif", "--output", "json=out.json",
                         "--output", "markdown=out.md", "--output", "github=out.gh", "-f", "text", "--color", "never")
    assert code == 1, err
    assert "SD108 code:g.txt:lines" in out
    assert json.loads((tmp_path / "out.sarif").read_text())["version"] == "2.1.0"
    assert json.loads((tmp_path / "out.json").read_text())["findings"][0]["rule"] == "SD108"
    assert "| 🟡 warning | SD108 |" in (tmp_path / "out.md").read_text()
    assert (tmp_path / "out.gh").read_text().startswith("::warning file=n.txt,line=1,title=SD108 code%3Ag.txt%3Alines::")


def test_a_note_is_listed_as_a_note_in_every_writer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = Report(gpu="gpu", npu="npu")
    r.errors = [InputError("npu/x.py", "not UTF-8; decoded as gb18030", level="note"),
                InputError("npu/y.sh", "permission denied", fatal=True)]
    md = render(r, "markdown")
    assert "#### input errors\n\n- `npu/y.sh`: permission denied\n" in md
    assert "#### notes\n\n- `npu/x.py`: not UTF-8; decoded as gb18030\n" in md
    gh = render(r, "github").splitlines()
    assert gh[:2] == ["::notice title=scriptdiff input::npu/x.py: not UTF-8; decoded as gb18030",
                      "::error title=scriptdiff input::npu/y.sh: permission denied"]
    text = render(r, "text", color=False)
    assert "note: npu/x.py: not UTF-8; decoded as gb18030" in text.splitlines()
    assert "error: npu/y.sh: permission denied" in text.splitlines()
    assert text.splitlines()[-1].endswith("; 1 input error(s); 1 note(s)")
    assert "note:" not in render(r, "text", color=False, list_errors=False)
    assert r.exit_code() == 2 and Report(gpu="g", npu="n", errors=[r.errors[0]], compared=1).exit_code() == 0


def test_record_values_on_one_line_for_cell_writers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = Report(gpu="gpu", npu="npu")
    r.findings = [Finding("SD603", "weights", "error", "weights:b", Side({"shape": [2], "dtype": "F32", "hash": "a" * 64},
                                                                         "g.safetensors"),
                          Side({"shape": [3], "dtype": "F32", "hash": "b" * 64}, "n.safetensors"), "shape differs")]
    md = render(r, "markdown")
    assert "| `shape [2] · dtype F32 · hash aaaaaaaaaaaa…` at g.safetensors |" in md
    assert "%0AGPU: shape [2] · dtype F32 · hash aaaaaaaaaaaa…%0ANPU: shape [3]" in render(r, "github")

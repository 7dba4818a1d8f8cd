"""Names a command prints are input: a file or folder named with a line break or an ESC never
starts a line of its own nor drives the terminal (issue 40): the `---`/`+++` headers of
`fix --diff`, the folders and commands `init` prints and writes. (A pack's summary and note,
printed by `rules` and `rule CODE`: tests/test_hostile_packs.py.)"""
from __future__ import annotations

import shutil
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "fixtures" / "example"
FORGED = "n\n+++ forged\x1b[2J\r.py"


def test_fix_diff_headers_show_a_file_name_escaped(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    Path("g.py").write_text("import torch\nopt = torch.optim.AdamW(params, lr=1e-4)\n")
    Path(FORGED).write_text("import torch\nopt = torch.optim.AdamW(params, lr=2e-4)\n")
    code, out, err = cli("fix", "--diff", "g.py", FORGED)
    assert code == 1
    assert out.splitlines()[:2] == ["--- n\\n+++ forged\\x1b[2J\\r.py", "+++ n\\n+++ forged\\x1b[2J\\r.py"]
    assert [ln for ln in out.splitlines() if ln.startswith(("---", "+++"))] == out.splitlines()[:2]
    assert "\x1b" not in out + err and "\r" not in out + err
    assert Path(FORGED).read_text().endswith("lr=2e-4)\n")  # --diff writes nothing


def _project(tmp_path: Path, name: str) -> Path:
    project = tmp_path / name
    for side in ("gpu", "npu"):
        shutil.copytree(EX / side, project / side)
    return project


def test_init_prints_a_folder_name_escaped(tmp_path, monkeypatch, cli):
    name = "proj\nscriptdiff: forged\x1b[2J"
    _project(tmp_path, name)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("init", "--dry-run", name)
    assert (code, err) == (0, "")
    assert "\x1b" not in out
    assert out.splitlines()[0] == "# proj\\nscriptdiff: forged\\x1b[2J/scriptdiff.toml (not written: --dry-run)"
    assert not any(ln.startswith("scriptdiff: forged") for ln in out.splitlines())
    assert "on the GPU machine, from proj\\nscriptdiff: forged\\x1b[2J:" in out.splitlines()
    assert out.splitlines()[-1] == "  scriptdiff check --config proj\\nscriptdiff: forged\\x1b[2J/scriptdiff.toml"
    code, out, err = cli("init", name)  # written: the same lines, and the file is valid TOML
    assert code == 0 and "\x1b" not in out
    assert out.splitlines()[0] == "scriptdiff: wrote the configuration to proj\\nscriptdiff: forged\\x1b[2J/scriptdiff.toml"


def test_a_data_path_with_a_line_break_neither_forges_a_line_nor_a_toml_table(tmp_path, monkeypatch, cli):
    """The commands `init` writes as comments in the configuration name the run's data path:
    a path holding a line break would end the comment and start a table of its own."""
    project = _project(tmp_path, "proj")
    evil = 'data/x\n[gpu]\nscripts = ["evil"]\x1b[2J'
    for side in ("gpu", "npu"):
        p = project / side / "train.py"
        p.write_text(p.read_text().replace('default="data/train.jsonl"', f"default={evil!r}"))
    monkeypatch.chdir(project)
    code, out, err = cli("init")
    assert (code, err) == (0, "")
    assert "\x1b" not in out and not any(ln.startswith(("[gpu]", "scripts = ")) for ln in out.splitlines())
    text = (project / "scriptdiff.toml").read_text()
    assert "\x1b" not in text
    config = tomllib.loads(text)
    assert config["gpu"]["scripts"] == ["gpu"] and config["npu"]["scripts"] == ["npu"]
    assert "data fingerprint 'data/x\\n[gpu]\\nscripts = [\"evil\"]\\x1b[2J' -o data-gpu.json" in text

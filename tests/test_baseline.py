"""Baselines: accept today's findings, report only new ones; stale entries are SD152."""
from __future__ import annotations

import json


def setup(tmp_path, gpu, npu):
    g, n = tmp_path / "gpu.txt", tmp_path / "npu.txt"
    g.write_text(gpu)
    n.write_text(npu)
    return str(g), str(n)


def test_baseline_round_trip(tmp_path, cli):
    g, n = setup(tmp_path, "a\nlr=1\n", "a\nlr=2\n")
    base = str(tmp_path / "base.json")
    code, out, err = cli("baseline", g, n, "-o", base)
    assert code == 0, err
    doc = json.loads(open(base).read())
    assert doc["scriptdiff_baseline"] == 1
    assert [(e["rule"], e["key"], e["gpu"], e["npu"]) for e in doc["findings"]] == [
        ("SD108", "code:gpu.txt:lines", "lr=1", "lr=2")]
    code, out, _ = cli("diff", g, n, "--baseline", base, "-f", "json")
    assert code == 0 and json.loads(out)["findings"] == []


def test_edits_elsewhere_keep_the_baseline_and_new_findings_show(tmp_path, cli):
    g, n = setup(tmp_path, "a\nlr=1\n", "a\nlr=2\n")
    base = str(tmp_path / "base.json")
    assert cli("baseline", g, n, "-o", base)[0] == 0
    # lines shift (a header added on both sides) and a new difference appears
    setup(tmp_path, "# header\n\na\nlr=1\nx\nbatch=8\n", "# header\n\na\nlr=2\nx\nbatch=16\n")
    code, out, _ = cli("diff", g, n, "--baseline", base, "-f", "json")
    found = json.loads(out)["findings"]
    assert code == 1
    assert [(f["rule"], f["gpu"]["value"], f["npu"]["value"], f["npu"]["line"]) for f in found] == [
        ("SD108", "batch=8", "batch=16", 6)]


def test_stale_entry_is_reported_as_info(tmp_path, cli):
    g, n = setup(tmp_path, "a\nlr=1\n", "a\nlr=2\n")
    base = str(tmp_path / "base.json")
    assert cli("baseline", g, n, "-o", base)[0] == 0
    setup(tmp_path, "a\nlr=1\n", "a\nlr=1\n")  # fixed
    code, out, _ = cli("diff", g, n, "--baseline", base, "-f", "json")
    found = json.loads(out)["findings"]
    assert code == 0
    assert [(f["rule"], f["severity"], f["npu"]["path"], f["npu"]["source"]) for f in found] == [
        ("SD152", "info", base, "baseline")]
    assert "SD108 code:gpu.txt:lines matches no finding" in found[0]["message"]


def test_bad_baseline_is_one_line_exit_2(tmp_path, cli):
    g, n = setup(tmp_path, "a\n", "b\n")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = cli("diff", g, n, "--baseline", str(bad))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"scriptdiff: {bad}: not a JSON baseline")
    code, _, err = cli("diff", g, n, "--baseline", str(tmp_path / "none.json"))
    assert code == 2 and "baseline file not found" in err


def test_baseline_for_check(tmp_path, cli, monkeypatch):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    (tmp_path / "gpu" / "a.txt").write_text("1\n")
    (tmp_path / "npu" / "a.txt").write_text("2\n")
    (tmp_path / "scriptdiff.toml").write_text('[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n')
    monkeypatch.chdir(tmp_path)
    assert cli("check")[0] == 1
    code, out, err = cli("baseline", "--check", "-o", "b.json")
    assert code == 0, err
    code, out, _ = cli("check", "--baseline", "b.json", "-f", "json")
    doc = json.loads(out)
    assert code == 0 and doc["findings"] == []
    assert doc["verdicts"]["script"] == {"verdict": "pass", "reason": "no differences"}

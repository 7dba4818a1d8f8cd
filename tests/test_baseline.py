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


def _two_pairs(tmp_path):
    for side, lr, seed in (("gpu", 1, 1), ("npu", 2, 2)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "a.yaml").write_text(f"lr: {lr}\n")
        (tmp_path / side / "b.yaml").write_text(f"seed: {seed}\n")
    (tmp_path / "scriptdiff.toml").write_text('[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n')


def test_the_hook_applies_the_baseline_once_over_all_its_pairs(tmp_path, cli, monkeypatch):
    """Each pair used to be a run of its own with the baseline: the first pair's run called
    the second pair's entry stale (SD152, "rewrite the baseline") though the second used it."""
    _two_pairs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli("baseline", "gpu", "npu", "-o", "base.json")[0] == 0
    assert [e["key"] for e in json.loads((tmp_path / "base.json").read_text())["findings"]] == ["lr", "seed"]
    code, out, err = cli("check", "--files", "npu/a.yaml", "npu/b.yaml", "--baseline", "base.json", "-f", "json")
    assert (code, json.loads(out)["findings"]) == (0, []), err
    # the hook sees the staged files only: an entry about another file is not called stale
    code, out, err = cli("check", "--files", "npu/a.yaml", "--baseline", "base.json", "-f", "json")
    assert (code, json.loads(out)["findings"]) == (0, []), err


def test_a_whole_run_still_calls_a_stale_entry_stale(tmp_path, cli, monkeypatch):
    _two_pairs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli("baseline", "gpu", "npu", "-o", "base.json")[0] == 0
    (tmp_path / "npu" / "b.yaml").write_text("seed: 1\n")  # the seed drift is fixed: its entry is stale
    code, out, _err = cli("diff", "gpu", "npu", "--baseline", "base.json", "-f", "json")
    got = [(f["rule"], f["key"], f["message"].split(";")[0]) for f in json.loads(out)["findings"]]
    assert code == 0 and len(got) == 1 and got[0][0] == "SD152" and got[0][2].startswith("baseline entry SD207 seed")

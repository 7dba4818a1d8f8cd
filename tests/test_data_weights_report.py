"""`scriptdiff data` and `scriptdiff weights` report through the same pipeline as `diff`:
--baseline, --select/--ignore, the JSON contract, --output, exit codes; and the hooks
`checks.dataset.check_extract` / `checks.weights.check_extract`."""
from __future__ import annotations

import json

import numpy as np
from safetensors.numpy import save_file

from scriptdiff.checks import dataset, weights
from scriptdiff.model import Finding, Side
from scriptdiff.run.suppress import baseline_document

FINDING_KEYS = {"rule", "check", "severity", "key", "derived", "gpu", "npu", "message"}


def tensors(seed=0):
    r = np.random.default_rng(seed)
    return {
        "embed.weight": r.standard_normal((16, 8)).astype(np.float32),
        "fc.weight": r.standard_normal((32, 8)).astype(np.float32),
        "fc.bias": r.standard_normal((32,)).astype(np.float32),
        "norm.weight": np.ones(8, dtype=np.float16),
    }


def drifted_checkpoints(tmp_path):
    """GPU and NPU checkpoints with one of each kind of difference."""
    g = tensors()
    n = dict(g)
    del n["fc.bias"]  # missing on NPU
    n["lm_head.weight"] = np.zeros((4, 8), np.float32)  # extra on NPU
    n["embed.weight"] = np.zeros((17, 8), np.float32)  # shape
    n["fc.weight"] = g["fc.weight"] * np.float32(1.01)  # values
    save_file(g, str(tmp_path / "g.safetensors"))
    save_file(n, str(tmp_path / "n.safetensors"))
    return tmp_path / "g.safetensors", tmp_path / "n.safetensors", n


def drifted_datasets(tmp_path):
    for side in ("gpu", "npu"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "same.bin").write_bytes(b"same")
    (tmp_path / "gpu" / "shard.bin").write_bytes(b"A" * 100)
    (tmp_path / "npu" / "shard.bin").write_bytes(b"A" * 99 + b"B")
    (tmp_path / "gpu" / "only-gpu.jsonl").write_text('{"t": 1}\n')
    (tmp_path / "npu" / "only-npu.jsonl").write_text('{"t": 2}\n')
    return tmp_path / "gpu", tmp_path / "npu"


def run_json(cli, command, g, n, *extra):
    code, out, err = cli(command, str(g), str(n), "--format", "json", *extra)
    return code, json.loads(out), err


def pairs(doc):
    return sorted((f["rule"], f["key"]) for f in doc["findings"])


def write_baseline(doc: dict, path) -> None:
    """The baseline `scriptdiff baseline` would write for these (JSON) findings."""
    findings = [Finding(rule=f["rule"], check=f["check"], severity=f["severity"], key=f["key"],
                        gpu=Side(value=f["gpu"]["value"]) if f["gpu"] else None,
                        npu=Side(value=f["npu"]["value"]) if f["npu"] else None, message=f["message"])
                for f in doc["findings"]]
    path.write_text(json.dumps(baseline_document(findings)))


# ---------------------------------------------------------------- --baseline

def test_data_baseline_suppresses_exactly_its_findings(tmp_path, cli):
    g, n = drifted_datasets(tmp_path)
    code, doc, _ = run_json(cli, "data", g, n)
    assert code == 1
    assert pairs(doc) == [("SD501", "data:only-gpu.jsonl"), ("SD502", "data:only-npu.jsonl"),
                          ("SD503", "data:shard.bin")]
    base = tmp_path / "baseline.json"
    write_baseline(doc, base)
    code, out, err = cli("data", str(g), str(n), "--baseline", str(base), "--color", "never")
    assert code == 0, out + err
    assert "0 error(s), 0 warning(s), 0 info" in out
    # a new difference is still reported, and only it
    (n / "same.bin").write_bytes(b"SAME")
    code, doc, _ = run_json(cli, "data", g, n, "--baseline", str(base))
    assert code == 1
    assert pairs(doc) == [("SD503", "data:same.bin")]


def test_data_baseline_from_manifests_applies_to_folders(tmp_path, cli):
    """Written with `scriptdiff baseline` on the two manifests, used on the folders."""
    g, n = drifted_datasets(tmp_path)
    for side, path in (("g", g), ("n", n)):
        assert cli("data", "fingerprint", str(path), "-o", str(tmp_path / f"{side}.json"))[0] == 0
    base = tmp_path / "accepted.json"
    code, _, err = cli("baseline", str(tmp_path / "g.json"), str(tmp_path / "n.json"), "-o", str(base))
    assert code == 0, err
    code, out, err = cli("data", str(g), str(n), "--baseline", str(base), "--color", "never")
    assert code == 0, out + err
    assert "0 error(s)" in out


def test_weights_baseline_suppresses_exactly_its_findings(tmp_path, cli):
    g, n, nt = drifted_checkpoints(tmp_path)
    code, doc, _ = run_json(cli, "weights", g, n)
    assert code == 1
    assert pairs(doc) == [("SD601", "weights:fc.bias"), ("SD602", "weights:lm_head.weight"),
                          ("SD603", "weights:embed.weight"), ("SD605", "weights:fc.weight")]
    base = tmp_path / "baseline.json"
    write_baseline(doc, base)
    code, out, err = cli("weights", str(g), str(n), "--baseline", str(base), "--color", "never")
    assert code == 0, out + err
    assert "0 error(s), 0 warning(s), 0 info" in out
    code, doc, _ = run_json(cli, "weights", g, n, "--baseline", str(base))
    assert code == 0 and doc["findings"] == []
    # one more tensor drifts: only it is reported, with its statistics
    nt["norm.weight"] = np.full(8, 2, np.float16)
    save_file(nt, str(n))
    code, doc, _ = run_json(cli, "weights", g, n, "--baseline", str(base))
    assert code == 1
    assert pairs(doc) == [("SD605", "weights:norm.weight")]
    assert doc["findings"][0]["extra"]["max_abs_diff"] == 1.0


def test_weights_baseline_entry_that_matches_nothing_is_reported(tmp_path, cli):
    g, n, _ = drifted_checkpoints(tmp_path)
    _, doc, _ = run_json(cli, "weights", g, n)
    base = tmp_path / "baseline.json"
    write_baseline(doc, base)
    code, doc, _ = run_json(cli, "weights", g, g, "--baseline", str(base))  # nothing differs any more
    assert code == 0
    assert {f["rule"] for f in doc["findings"]} == {"SD152"}
    assert len(doc["findings"]) == 4


def test_missing_baseline_file_is_a_usage_error(tmp_path, cli):
    g, n, _ = drifted_checkpoints(tmp_path)
    for command, a, b in (("weights", g, n), ("data", g, n)):
        code, out, err = cli(command, str(a), str(b), "--baseline", str(tmp_path / "nope.json"))
        assert code == 2 and "baseline file not found" in err and out == ""


# ---------------------------------------------------------------- --select / --ignore

def test_weights_select_keeps_only_shape_findings(tmp_path, cli):
    g, n, _ = drifted_checkpoints(tmp_path)
    code, doc, _ = run_json(cli, "weights", g, n, "--select", "SD603")
    assert code == 1
    assert pairs(doc) == [("SD603", "weights:embed.weight")]
    code, out, _ = cli("weights", str(g), str(n), "--select", "SD603", "--color", "never")
    assert "1 shape differs" in out.splitlines()[1] and "SD605" not in out
    code, doc, _ = run_json(cli, "weights", g, n, "--ignore", "SD6")
    assert code == 0 and doc["findings"] == []


def test_data_select_and_ignore(tmp_path, cli):
    g, n = drifted_datasets(tmp_path)
    code, doc, _ = run_json(cli, "data", g, n, "--select", "SD503")
    assert code == 1 and pairs(doc) == [("SD503", "data:shard.bin")]
    code, doc, _ = run_json(cli, "data", g, n, "--ignore", "SD501,SD502")
    assert pairs(doc) == [("SD503", "data:shard.bin")]


# ---------------------------------------------------------------- the JSON contract, as for diff

def test_weights_json_follows_the_diff_contract(tmp_path, cli):
    g, n, _ = drifted_checkpoints(tmp_path)
    code, doc, _ = run_json(cli, "weights", g, n)
    assert code == 1
    assert doc["schema"] == 1 and doc["tool"]["name"] == "scriptdiff"
    assert (doc["gpu"], doc["npu"]) == (str(g), str(n))
    assert doc["masked"] == [] and doc["errors"] == []
    for f in doc["findings"]:
        assert FINDING_KEYS <= set(f), f
        assert f["check"] == "weights" and f["severity"] == "error"
        assert f["key"].startswith("weights:")
        for side in ("gpu", "npu"):
            assert f[side] is None or set(f[side]) >= {"value", "path", "line", "source"}
    # fingerprints compared by `weights` and by `diff` give the same findings
    for side, path in (("g", g), ("n", n)):
        assert cli("weights", "fingerprint", str(path), "-o", str(tmp_path / f"{side}.json"))[0] == 0
    _, w, _ = run_json(cli, "weights", tmp_path / "g.json", tmp_path / "n.json")
    _, d, _ = run_json(cli, "diff", tmp_path / "g.json", tmp_path / "n.json")
    assert w["findings"] == d["findings"] and w["findings"]


def test_data_every_output_format(tmp_path, cli):
    g, n = drifted_datasets(tmp_path)
    outs = {fmt: tmp_path / f"out.{fmt}" for fmt in ("json", "sarif", "markdown", "github", "text")}
    args = [a for fmt, p in outs.items() for a in ("--output", f"{fmt}={p}")]
    code, out, err = cli("data", str(g), str(n), "--format", "sarif", *args)
    assert code == 1, err
    assert json.loads(out)["version"] == "2.1.0"
    assert pairs(json.loads(outs["json"].read_text())) == [
        ("SD501", "data:only-gpu.jsonl"), ("SD502", "data:only-npu.jsonl"), ("SD503", "data:shard.bin")]
    assert "SD503" in outs["markdown"].read_text() and "SD503" in outs["github"].read_text()
    assert "3 error(s)" in outs["text"].read_text()


def test_exit_2_when_a_side_cannot_be_read(tmp_path, cli):
    g, n, _ = drifted_checkpoints(tmp_path)
    code, doc, _ = run_json(cli, "weights", g, tmp_path / "nope")
    assert code == 2 and doc["findings"] == [] and "no such file or directory" in doc["errors"][0]["message"]
    code, doc, _ = run_json(cli, "data", tmp_path / "nope", tmp_path)
    assert code == 2 and doc["findings"] == []


# ---------------------------------------------------------------- text: the overview after the header

def test_weights_overview_comes_after_the_header(tmp_path, cli):
    g, n, _ = drifted_checkpoints(tmp_path)
    code, out, _ = cli("weights", str(g), str(n), "--color", "never")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"scriptdiff: GPU {g}  vs  NPU {n}"
    assert lines[1] == ("weights: GPU 4 tensor(s), NPU 4; 1 identical, 1 missing on NPU, 1 extra on NPU, "
                        "1 shape differs, 1 values differ")
    assert lines[2].startswith("worst tensors (by relative L2")
    assert out.index("worst tensors") < out.index("== weights ") < out.index("4 error(s)")
    # machine formats and --output files carry the report only
    code, out, _ = cli("weights", str(g), str(n), "--format", "markdown",
                       "--output", f"text={tmp_path / 'full.txt'}")
    assert "weights: GPU 4 tensor(s)" not in out
    assert "weights: GPU 4 tensor(s)" not in (tmp_path / "full.txt").read_text()


# ---------------------------------------------------------------- the hooks

class Recorder:
    def __init__(self):
        self.calls = []

    def start(self, total):
        self.calls.append(("start", total))

    def advance(self, n):
        self.calls.append(("advance", n))

    def close(self):
        self.calls.append(("close",))


def test_weights_check_extract_renames_and_reports_progress(tmp_path):
    t = tensors()
    save_file({f"module.{k}": v for k, v in t.items()}, str(tmp_path / "n.safetensors"))
    bar = Recorder()
    ex = weights.check_extract(str(tmp_path / "n.safetensors"), rename=weights.Renamer([r"^module\.="]),
                               progress=bar)
    assert ex.errors == []
    assert sorted(f.key for f in ex.facts) == sorted(f"weights:{k}" for k in t)
    total = sum(a.nbytes for a in t.values())
    assert bar.calls[0] == ("start", total) and bar.calls[-1] == ("close",)
    assert sum(c[1] for c in bar.calls if c[0] == "advance") == total
    ex = weights.check_extract(str(tmp_path / "nope.safetensors"))
    assert ex.facts == [] and ex.errors[0].fatal


def test_dataset_check_extract_samples_and_reports_progress(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.jsonl").write_text('{"t": 1}\n{"t": 2}\n')
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.json").write_text("{}")
    bar = Recorder()
    ex = dataset.check_extract(str(tmp_path / "d"), workers=1, progress=bar,
                               tokenizers=[str(tmp_path / "tok")])
    assert ex.errors == []
    assert sorted(f.key for f in ex.facts) == ["data:*", "data:a.jsonl", "data:tokenizer:tokenizer.json"]
    assert bar.calls[0] == ("start", 18) and bar.calls[-1] == ("close",)
    ex = dataset.check_extract(str(tmp_path / "missing"))
    assert ex.facts == [] and ex.errors[0].fatal

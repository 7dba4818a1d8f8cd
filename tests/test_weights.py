"""scriptdiff weights: tiny checkpoints built in temporary folders, exact findings asserted."""
from __future__ import annotations

import json
import math
import struct

import blake3
import numpy as np
import pytest
from safetensors.numpy import save_file

from scriptdiff.checks import weights
from scriptdiff.checks.safetensors_io import Reader, list_safetensors, tensor_stats, to_float64
from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files


def rng_tensors(seed=0):
    r = np.random.default_rng(seed)
    return {
        "embed.weight": r.standard_normal((16, 8)).astype(np.float32),
        "layers.0.mlp.fc1.weight": r.standard_normal((32, 8)).astype(np.float32),
        "layers.0.mlp.fc1.bias": r.standard_normal((32,)).astype(np.float32),
        "norm.weight": np.ones(8, dtype=np.float16),
    }


def write_raw_safetensors(path, tensors: dict[str, tuple[str, list[int], bytes]]):
    """A safetensors file written by hand (numpy has no bfloat16 to hand to safetensors)."""
    header, off, blobs = {}, 0, []
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def to_bf16_bytes(a: np.ndarray) -> bytes:
    """float32 -> bfloat16 by truncation (top 16 bits)."""
    return (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()


def run(cli, *args):
    code, out, err = cli("weights", *args)
    return code, out, err


def findings_json(cli, g, n, *extra):
    code, out, err = cli("weights", str(g), str(n), "--format", "json", *extra)
    return code, json.loads(out), err


def by_rule(doc):
    return sorted((f["rule"], f["key"]) for f in doc["findings"])


# ---------------------------------------------------------------- faithful copies: nothing to report

def test_identical_checkpoints_report_nothing(tmp_path, cli):
    t = rng_tensors()
    save_file(t, str(tmp_path / "a.safetensors"))
    save_file(dict(reversed(list(t.items()))), str(tmp_path / "b.safetensors"))  # other order on disk
    code, doc, err = findings_json(cli, tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert code == 0, err
    assert doc["findings"] == [] and doc["errors"] == []


def test_sharded_checkpoint_equals_single_file(tmp_path, cli):
    t = rng_tensors()
    save_file(t, str(tmp_path / "model.safetensors"))
    shards = tmp_path / "sharded"
    shards.mkdir()
    names = sorted(t)
    parts = {"model-00001-of-00002.safetensors": names[:2], "model-00002-of-00002.safetensors": names[2:]}
    wmap = {}
    for fname, keys in parts.items():
        save_file({k: t[k] for k in keys}, str(shards / fname))
        wmap.update({k: fname for k in keys})
    (shards / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wmap}))
    code, doc, err = findings_json(cli, tmp_path / "model.safetensors", shards)
    assert code == 0, err
    assert doc["findings"] == []
    ck = weights.open_checkpoint(str(shards))
    assert ck.kind == "safetensors-sharded"
    assert sorted(r.name for r in ck.tensors) == names
    assert {r.display for r in ck.tensors} == set(parts)


def test_sharded_index_naming_a_missing_tensor_is_an_error(tmp_path, cli):
    t = rng_tensors()
    save_file(t, str(tmp_path / "model-1.safetensors"))
    wmap = {k: "model-1.safetensors" for k in t} | {"ghost.weight": "model-1.safetensors"}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": wmap}))
    code, out, err = run(cli, str(tmp_path), str(tmp_path))
    assert code == 2
    assert "tensor 'ghost.weight' is listed in model-1.safetensors but that shard does not hold it" in err


# ---------------------------------------------------------------- each kind of difference

def test_missing_extra_shape_dtype_and_values(tmp_path, cli):
    g = rng_tensors()
    n = dict(g)
    del n["layers.0.mlp.fc1.bias"]  # missing on NPU
    n["lm_head.weight"] = np.zeros((4, 8), np.float32)  # extra on NPU
    n["embed.weight"] = np.zeros((17, 8), np.float32)  # shape
    n["norm.weight"] = np.ones(8, np.float32)  # dtype only: same values, F16 -> F32
    n["layers.0.mlp.fc1.weight"] = g["layers.0.mlp.fc1.weight"] * np.float32(1.01)  # values
    save_file(g, str(tmp_path / "g.safetensors"))
    save_file(n, str(tmp_path / "n.safetensors"))
    code, doc, _ = findings_json(cli, tmp_path / "g.safetensors", tmp_path / "n.safetensors")
    assert code == 1
    assert by_rule(doc) == [
        ("SD601", "weights:layers.0.mlp.fc1.bias"),
        ("SD602", "weights:lm_head.weight"),
        ("SD603", "weights:embed.weight"),
        ("SD604", "weights:norm.weight"),
        ("SD605", "weights:layers.0.mlp.fc1.weight"),
    ]
    f = {x["rule"]: x for x in doc["findings"]}
    assert f["SD601"]["npu"] is None and f["SD601"]["gpu"]["value"]["shape"] == [32]
    assert f["SD602"]["gpu"] is None and f["SD602"]["npu"]["value"]["dtype"] == "F32"
    assert f["SD603"]["gpu"]["value"]["shape"] == [16, 8] and f["SD603"]["npu"]["value"]["shape"] == [17, 8]
    assert f["SD603"]["message"] == "tensor embed.weight has shape [16, 8] on GPU and [17, 8] on NPU"
    # dtype only: the values are the same, and the statistics say so
    d = f["SD604"]
    assert (d["gpu"]["value"]["dtype"], d["npu"]["value"]["dtype"]) == ("F16", "F32")
    assert d["extra"]["max_abs_diff"] == 0.0 and d["extra"]["rel_l2"] == 0.0 and d["extra"]["cosine"] == 1.0
    assert d["message"].startswith("tensor norm.weight is F16 on GPU and F32 on NPU (same shape [8])")
    # values: statistics computed in float64 against numpy's own
    v = f["SD605"]
    a = g["layers.0.mlp.fc1.weight"].astype(np.float64)
    b = n["layers.0.mlp.fc1.weight"].astype(np.float64)
    assert v["extra"]["max_abs_diff"] == pytest.approx(np.max(np.abs(a - b)), rel=1e-12)
    assert v["extra"]["rel_l2"] == pytest.approx(np.linalg.norm(a - b) / np.linalg.norm(a), rel=1e-9)
    assert v["extra"]["cosine"] == pytest.approx(float(a.ravel() @ b.ravel() / np.linalg.norm(a) / np.linalg.norm(b)), rel=1e-12)
    assert v["extra"]["elements"] == 256
    assert v["gpu"]["path"] == str(tmp_path / "g.safetensors")
    assert v["gpu"]["value"]["hash"] == blake3.blake3(g["layers.0.mlp.fc1.weight"].tobytes()).hexdigest()


def test_dtype_only_difference_bf16_cast_is_measured(tmp_path, cli):
    r = np.random.default_rng(1)
    a = r.standard_normal(1000).astype(np.float32)
    write_raw_safetensors(tmp_path / "g.safetensors", {"w": ("F32", [1000], a.tobytes())})
    write_raw_safetensors(tmp_path / "n.safetensors", {"w": ("BF16", [1000], to_bf16_bytes(a))})
    code, doc, _ = findings_json(cli, tmp_path / "g.safetensors", tmp_path / "n.safetensors")
    assert code == 1
    assert by_rule(doc) == [("SD604", "weights:w")]
    x = doc["findings"][0]["extra"]
    truncated = (a.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)
    assert x["max_abs_diff"] == pytest.approx(np.max(np.abs(a - truncated)), rel=1e-12)
    assert 1e-4 < x["rel_l2"] < 1e-2  # a bf16 cast, not different weights
    assert x["cosine"] > 0.9999


def test_bf16_conversion_is_exact():
    vals = np.array([0.0, -0.0, 1.0, -2.5, 3.140625, 65280.0, np.inf, -np.inf], dtype=np.float32)
    out = to_float64(to_bf16_bytes(vals), "BF16")
    assert out.tolist() == vals.astype(np.float64).tolist()
    assert math.isnan(to_float64(to_bf16_bytes(np.array([np.nan], np.float32)), "BF16")[0])


def test_float8_tables():
    e4m3 = to_float64(bytes([0x00, 0x38, 0x40, 0xC0, 0x7E, 0x01]), "F8_E4M3")
    assert e4m3[:5].tolist() == [0.0, 1.0, 2.0, -2.0, 448.0]
    assert e4m3[5] == 2.0 ** -9
    e5m2 = to_float64(bytes([0x3C, 0x7C, 0xFC]), "F8_E5M2")
    assert e5m2.tolist() == [1.0, math.inf, -math.inf]


def test_stats_are_chunked_and_line_up_across_dtypes(tmp_path, monkeypatch):
    from scriptdiff import budget

    monkeypatch.setattr(budget, "STAT_ELEMS", 7)  # many uneven chunks
    r = np.random.default_rng(2)
    a = r.standard_normal(100).astype(np.float32)
    b = a.astype(np.float64) + 0.5
    write_raw_safetensors(tmp_path / "g.safetensors", {"w": ("F32", [100], a.tobytes())})
    write_raw_safetensors(tmp_path / "n.safetensors", {"w": ("F64", [100], b.tobytes())})
    (g,), _ = list_safetensors(str(tmp_path / "g.safetensors"))
    (n,), _ = list_safetensors(str(tmp_path / "n.safetensors"))
    with Reader() as rg, Reader() as rn:
        st = tensor_stats(rg, g, rn, n)
    a64 = a.astype(np.float64)
    assert st["max_abs_diff"] == pytest.approx(0.5)
    assert st["rel_l2"] == pytest.approx(np.linalg.norm(a64 - b) / np.linalg.norm(a64), rel=1e-12)
    assert st["differing_elements"] == 100


def test_nan_on_one_side_is_counted_not_propagated(tmp_path):
    a = np.array([1.0, 2.0, 3.0, np.nan], np.float32)
    b = np.array([1.0, 2.0, 4.0, 5.0], np.float32)
    write_raw_safetensors(tmp_path / "g.safetensors", {"w": ("F32", [4], a.tobytes())})
    write_raw_safetensors(tmp_path / "n.safetensors", {"w": ("F32", [4], b.tobytes())})
    (g,), _ = list_safetensors(str(tmp_path / "g.safetensors"))
    (n,), _ = list_safetensors(str(tmp_path / "n.safetensors"))
    with Reader() as rg, Reader() as rn:
        st = tensor_stats(rg, g, rn, n)
    assert st["max_abs_diff"] == 1.0
    assert st["nonfinite_mismatches"] == 1
    assert st["differing_elements"] == 2


def test_name_mapping_pairs_renamed_tensors(tmp_path, cli):
    t = rng_tensors()
    save_file(t, str(tmp_path / "g.safetensors"))
    save_file({f"module.{k}": v for k, v in t.items()}, str(tmp_path / "n.safetensors"))
    code, doc, _ = findings_json(cli, tmp_path / "g.safetensors", tmp_path / "n.safetensors")
    assert code == 1 and len(doc["findings"]) == 8  # 4 missing + 4 extra
    code, doc, err = findings_json(cli, tmp_path / "g.safetensors", tmp_path / "n.safetensors", "--map", r"^module\.=")
    assert code == 0, err
    assert doc["findings"] == []
    names = tmp_path / "names.json"
    names.write_text(json.dumps({f"module.{k}": k for k in t}))
    code, doc, _ = findings_json(cli, tmp_path / "g.safetensors", tmp_path / "n.safetensors", "--map-file", str(names))
    assert code == 0 and doc["findings"] == []


def test_bad_map_is_a_usage_error(tmp_path, cli):
    save_file(rng_tensors(), str(tmp_path / "g.safetensors"))
    code, _, err = run(cli, str(tmp_path / "g.safetensors"), str(tmp_path / "g.safetensors"), "--map", "([=x")
    assert code == 2 and "bad pattern" in err and "Traceback" not in err


# ---------------------------------------------------------------- broken input: one line, exit 2

def test_truncated_safetensors_is_a_clear_error(tmp_path, cli):
    save_file(rng_tensors(), str(tmp_path / "good.safetensors"))
    data = (tmp_path / "good.safetensors").read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[:-100])
    code, out, err = run(cli, str(tmp_path / "good.safetensors"), str(tmp_path / "cut.safetensors"))
    assert code == 2
    assert (f"scriptdiff: cut.safetensors: truncated safetensors file: header declares {len(data)} bytes, "
            f"file has {len(data) - 100}") in err
    assert "Traceback" not in err + out
    code, out, err = run(cli, "fingerprint", str(tmp_path / "cut.safetensors"))
    assert code == 2 and "truncated safetensors file" in err and out == ""


def test_header_cut_short_and_garbage_files(tmp_path, cli):
    (tmp_path / "short.safetensors").write_bytes(b"\x10\x00")
    (tmp_path / "huge.safetensors").write_bytes(struct.pack("<Q", 500) + b"{}")
    (tmp_path / "junk.safetensors").write_bytes(struct.pack("<Q", 4) + b"abcd")
    expect = {
        "short.safetensors": "truncated safetensors file: header declares 8 bytes, file has 2",
        "huge.safetensors": "truncated safetensors file: header declares 508 bytes, file has 10",
        "junk.safetensors": "not a safetensors file: the header is not JSON",
    }
    for name, msg in expect.items():
        code, out, err = run(cli, str(tmp_path / name), str(tmp_path / name))
        assert code == 2, name
        assert f"{name}: {msg}" in err, err
        assert "Traceback" not in err


def test_missing_side_and_empty_folder(tmp_path, cli):
    save_file(rng_tensors(), str(tmp_path / "g.safetensors"))
    code, _, err = run(cli, str(tmp_path / "g.safetensors"), str(tmp_path / "nope"))
    assert code == 2 and "no such file or directory" in err
    (tmp_path / "empty").mkdir()
    code, _, err = run(cli, str(tmp_path / "g.safetensors"), str(tmp_path / "empty"))
    assert code == 2 and "no checkpoint found" in err


# ---------------------------------------------------------------- fingerprints

def test_fingerprint_round_trip_and_shared_engine(tmp_path, cli):
    t = rng_tensors()
    save_file(t, str(tmp_path / "g.safetensors"))
    n = dict(t)
    n["norm.weight"] = np.full(8, 2, np.float16)
    save_file(n, str(tmp_path / "n.safetensors"))
    for side in ("g", "n"):
        code, _, err = run(cli, "fingerprint", str(tmp_path / f"{side}.safetensors"), "-o", str(tmp_path / f"{side}.json"))
        assert code == 0, err
    fp = json.loads((tmp_path / "g.json").read_text())
    assert fp["scriptdiff_weights"] == 1 and fp["algorithm"] == "blake3"
    assert fp["tensors"]["embed.weight"] == {"dtype": "F32", "shape": [16, 8], "bytes": 512, "file": "g.safetensors",
                                             "hash": blake3.blake3(t["embed.weight"].tobytes()).hexdigest()}
    assert (tmp_path / "g.json").read_text().index('"scriptdiff_weights"') < 2000
    # fingerprint vs fingerprint, fingerprint vs checkpoint, and the shared `diff` engine agree
    for a, b in (("g.json", "n.json"), ("g.json", "n.safetensors"), ("g.safetensors", "n.json")):
        code, doc, _ = findings_json(cli, tmp_path / a, tmp_path / b)
        assert code == 1
        assert by_rule(doc) == [("SD605", "weights:norm.weight")]
        assert "extra" not in doc["findings"][0]  # no tensors on one side: no statistics claimed
    report = diff_files([str(tmp_path / "g.json")], [str(tmp_path / "n.json")], Options(use_cache=False))
    assert [(f.rule, f.key) for f in report.findings] == [("SD605", "weights:norm.weight")]
    assert report.findings[0].gpu.path == str(tmp_path / "g.safetensors")
    report = diff_files([str(tmp_path / "g.json")], [str(tmp_path / "g.json")], Options(use_cache=False))
    assert report.findings == [] and report.errors == []


def test_malformed_fingerprint_is_an_error(tmp_path, cli):
    bad = tmp_path / "weights.json"
    bad.write_text('{"scriptdiff_weights": 1, "tensors": {"w": {"dtype": "F32", "shape": "4"}}}')
    code, _, err = run(cli, str(bad), str(bad))
    assert code == 2 and "fingerprint entry 'w' needs dtype, shape (list of ints) and hash" in err
    report = diff_files([str(bad)], [str(bad)], Options(use_cache=False))
    assert report.findings == []
    assert [e.message for e in report.errors] == ["fingerprint entry 'w' needs dtype, shape (list of ints) and hash"] * 2


# ---------------------------------------------------------------- text output summarizes

def test_text_output_summarizes_counts_and_worst(tmp_path, cli):
    r = np.random.default_rng(3)
    g = {f"layer{i}.w": r.standard_normal(64).astype(np.float32) for i in range(6)}
    n = {k: v * np.float32(1 + 0.01 * i) for i, (k, v) in enumerate(g.items())}  # layer0 unchanged
    save_file(g, str(tmp_path / "g.safetensors"))
    save_file(n, str(tmp_path / "n.safetensors"))
    code, out, _ = run(cli, str(tmp_path / "g.safetensors"), str(tmp_path / "n.safetensors"), "--top", "2",
                       "--color", "never", "--output", f"json={tmp_path / 'all.json'}")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("scriptdiff: GPU ")  # the report header first; the overview follows it
    assert lines[1] == "weights: GPU 6 tensor(s), NPU 6; 1 identical, 5 values differ"
    assert lines[2] == "worst tensors (by relative L2, GPU as reference; 2 of 5):"
    assert lines[3].startswith("  layer5.w  rel L2 0.05") and lines[4].startswith("  layer4.w  rel L2 0.04")
    assert "(3 more finding(s) not shown; --all or --format json lists them)" in out
    assert out.count("SD605") == 2
    full = json.loads((tmp_path / "all.json").read_text())
    assert len(full["findings"]) == 5
    code, out, _ = run(cli, str(tmp_path / "g.safetensors"), str(tmp_path / "n.safetensors"), "--all", "--color", "never")
    assert out.count("SD605") == 5


def test_hash_independent_of_file_layout(tmp_path):
    """A tensor's hash is of its bytes only: the same tensor at another offset hashes the same."""
    a = np.arange(10, dtype=np.float32)
    write_raw_safetensors(tmp_path / "x.safetensors", {"a": ("F32", [10], a.tobytes())})
    write_raw_safetensors(tmp_path / "y.safetensors", {"pad": ("U8", [3], b"xyz"), "a": ("F32", [10], a.tobytes())})
    fx = weights.fingerprint(weights.open_checkpoint(str(tmp_path / "x.safetensors")))
    fy = weights.fingerprint(weights.open_checkpoint(str(tmp_path / "y.safetensors")))
    assert fx["tensors"]["a"]["hash"] == fy["tensors"]["a"]["hash"] == blake3.blake3(a.tobytes()).hexdigest()



def test_float64_overflow_gives_no_infinity_in_json(tmp_path, cli):
    a = np.array([1e300, 1.0], np.float64)
    b = np.array([-1e300, 1.0], np.float64)
    write_raw_safetensors(tmp_path / "g.safetensors", {"w": ("F64", [2], a.tobytes())})
    write_raw_safetensors(tmp_path / "n.safetensors", {"w": ("F64", [2], b.tobytes())})
    code, out, _ = cli("weights", str(tmp_path / "g.safetensors"), str(tmp_path / "n.safetensors"), "--format", "json")

    def no_constants(name):
        raise AssertionError(f"{name} is not JSON")

    doc = json.loads(out, parse_constant=no_constants)
    x = doc["findings"][0]["extra"]
    assert x["max_abs_diff"] == 2e300 and x["rel_l2"] is None and x["cosine"] is None

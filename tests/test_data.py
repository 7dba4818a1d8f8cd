"""scriptdiff data: tiny datasets built in temporary folders, exact findings asserted."""
from __future__ import annotations

import json
import os
import struct

import blake3
import numpy as np
import pytest

from scriptdiff.checks import dataset
from scriptdiff.checks.hashing import FULL, SampleSpec, hash_file
from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.model import Fact

SMALL = SampleSpec(edge=1024, block=256, blocks=4)  # sampling that bites on files of a few KiB


def write_idx(path, seqs: int, docs: int, dtype_code: int = 8, cut: int = 0):
    """A Megatron .idx: magic, version 1, dtype code, counts, then sizes/pointers/doc index."""
    body = struct.pack("<QBQQ", 1, dtype_code, seqs, docs + 1)
    body += np.full(seqs, 3, np.int32).tobytes() + np.arange(seqs, dtype=np.int64).tobytes()
    body += np.arange(docs + 1, dtype=np.int64).tobytes()
    data = b"MMIDIDX\x00\x00" + body
    path.write_bytes(data[:len(data) - cut] if cut else data)


def make_dataset(root, variant: str = ""):
    (root / "train").mkdir(parents=True)
    (root / "train" / "part-0.jsonl").write_text('{"t": "a"}\n{"t": "b"}\n{"t": "c"}' + ("\n" if variant != "nolf" else ""))
    (root / "train" / "part-1.jsonl").write_text('{"t": "d"}\n')
    write_idx(root / "wiki_text_document.idx", seqs=5, docs=2)
    (root / "wiki_text_document.bin").write_bytes(np.arange(15, dtype=np.uint16).tobytes())
    (root / "README").write_text("notes\n")


def compare(cli, g, n, *extra):
    code, out, err = cli("data", str(g), str(n), "--format", "json", *extra)
    return code, json.loads(out), err


def rules_keys(doc):
    return sorted((f["rule"], f["key"]) for f in doc["findings"])


# ---------------------------------------------------------------- manifests

def test_fingerprint_manifest_contents(tmp_path, cli):
    make_dataset(tmp_path / "d")
    code, out, err = cli("data", "fingerprint", str(tmp_path / "d"))
    assert code == 0, err
    assert out.index('"scriptdiff_manifest": 1') < 2000
    m = json.loads(out)
    assert m["algorithm"] == "blake3" and m["mode"] == "full" and m["sampled"] is False
    assert sorted(m["files"]) == ["README", "train/part-0.jsonl", "train/part-1.jsonl",
                                  "wiki_text_document.bin", "wiki_text_document.idx"]
    p0 = (tmp_path / "d" / "train" / "part-0.jsonl").read_bytes()
    assert m["files"]["train/part-0.jsonl"] == {"format": "jsonl", "hash": blake3.blake3(p0).hexdigest(),
                                                "lines": 3, "mode": "full", "size": len(p0)}
    idx = m["files"]["wiki_text_document.idx"]
    assert (idx["format"], idx["sequences"], idx["documents"], idx["dtype"]) == ("megatron-idx", 5, 2, "uint16")
    assert m["files"]["wiki_text_document.bin"]["format"] == "megatron-bin"
    assert m["totals"] == {"files": 5, "bytes": sum(e["size"] for e in m["files"].values()),
                           "bytes_hashed": sum(e["size"] for e in m["files"].values())}


def test_jsonl_line_count_without_final_newline(tmp_path):
    make_dataset(tmp_path / "d", "nolf")
    m, errors = dataset.fingerprint([str(tmp_path / "d")])
    assert errors == []
    assert m["files"]["train/part-0.jsonl"]["lines"] == 3


def test_faithful_copy_reports_nothing(tmp_path, cli):
    make_dataset(tmp_path / "gpu")
    make_dataset(tmp_path / "npu")
    code, doc, err = compare(cli, tmp_path / "gpu", tmp_path / "npu")
    assert code == 0, err
    assert doc["findings"] == [] and doc["errors"] == []
    # manifests made on each side and compared elsewhere: same answer, also through `diff`
    for side in ("gpu", "npu"):
        assert cli("data", "fingerprint", str(tmp_path / side), "-o", str(tmp_path / f"{side}.json"))[0] == 0
    code, doc, _ = compare(cli, tmp_path / "gpu.json", tmp_path / "npu.json")
    assert code == 0 and doc["findings"] == []
    report = diff_files([str(tmp_path / "gpu.json")], [str(tmp_path / "npu.json")], Options(use_cache=False))
    assert report.findings == [] and report.errors == []


def test_missing_extra_and_different_files(tmp_path, cli):
    make_dataset(tmp_path / "gpu")
    make_dataset(tmp_path / "npu")
    os.remove(tmp_path / "npu" / "train" / "part-1.jsonl")
    (tmp_path / "npu" / "train" / "part-2.jsonl").write_text('{"t": "x"}\n')
    (tmp_path / "npu" / "train" / "part-0.jsonl").write_text('{"t": "a"}\n{"t": "b"}\n')
    write_idx(tmp_path / "npu" / "wiki_text_document.idx", seqs=5, docs=2, dtype_code=4)  # int32 tokens
    code, doc, _ = compare(cli, tmp_path / "gpu", tmp_path / "npu")
    assert code == 1
    assert rules_keys(doc) == [("SD501", "data:train/part-1.jsonl"), ("SD502", "data:train/part-2.jsonl"),
                               ("SD503", "data:train/part-0.jsonl"), ("SD503", "data:wiki_text_document.idx")]
    f = {x["key"]: x for x in doc["findings"]}
    p0 = f["data:train/part-0.jsonl"]
    assert p0["gpu"]["value"]["lines"] == 3 and p0["npu"]["value"]["lines"] == 2
    assert p0["message"] == ("data file train/part-0.jsonl differs between GPU and NPU: size 33 vs 22 bytes; "
                             "lines 3 vs 2; content hash differs")
    assert p0["gpu"]["path"] == f"{tmp_path / 'gpu'}/train/part-0.jsonl"
    assert f["data:wiki_text_document.idx"]["message"].endswith("dtype uint16 vs int32; content hash differs")
    assert f["data:train/part-1.jsonl"]["npu"] is None
    assert f["data:train/part-1.jsonl"]["message"] == ("data file train/part-1.jsonl is on GPU only "
                                                       "(11 bytes, lines 1); missing on NPU")
    assert f["data:train/part-2.jsonl"]["gpu"] is None


def test_same_size_different_content(tmp_path, cli):
    for side, payload in (("gpu", b"A" * 100), ("npu", b"A" * 99 + b"B")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "shard.bin").write_bytes(payload)
    code, doc, _ = compare(cli, tmp_path / "gpu", tmp_path / "npu")
    assert code == 1
    assert rules_keys(doc) == [("SD503", "data:shard.bin")]
    assert doc["findings"][0]["message"] == "data file shard.bin differs between GPU and NPU: content hash differs"


# ---------------------------------------------------------------- sampling never claims more than it read

def test_sample_ranges():
    assert SMALL.ranges(100) == [(0, 100)]
    r = SMALL.ranges(10_000)
    assert r[0] == (0, 1024) and r[-1] == (10_000 - 1024, 1024)
    assert len(r) == 6 and all(length == 256 for _, length in r[1:-1])
    assert all(1024 <= off and off + 256 <= 10_000 - 1024 for off, _ in r[1:-1])


def test_sampled_manifest_is_marked_and_small_files_are_hashed_whole(tmp_path):
    (tmp_path / "d").mkdir()
    big = np.random.default_rng(0).integers(0, 255, 20_000, dtype=np.uint8).tobytes()
    (tmp_path / "d" / "big.bin").write_bytes(big)
    (tmp_path / "d" / "small.jsonl").write_text("{}\n{}\n")
    m, _ = dataset.fingerprint([str(tmp_path / "d")], sample=SMALL)
    assert m["sampled"] is True and m["mode"] == SMALL.mode()
    assert m["files"]["big.bin"]["mode"] == SMALL.mode() and "lines" not in m["files"]["big.bin"]
    assert m["files"]["small.jsonl"] == {"format": "jsonl", "hash": blake3.blake3(b"{}\n{}\n").hexdigest(),
                                         "lines": 2, "mode": FULL, "size": 6}
    assert m["totals"]["bytes_hashed"] == 1024 * 2 + 4 * 256 + 6


def _sampled_pair(tmp_path, change_at: int | None):
    data = bytearray(np.random.default_rng(0).integers(0, 255, 20_000, dtype=np.uint8).tobytes())
    paths = []
    for side in ("gpu", "npu"):
        d = tmp_path / side
        d.mkdir()
        if side == "npu" and change_at is not None:
            data[change_at] ^= 0xFF
        (d / "big.bin").write_bytes(bytes(data))
        m, _ = dataset.fingerprint([str(d)], sample=SMALL)
        (tmp_path / f"{side}.json").write_text(dataset.dumps(m))
        paths.append(tmp_path / f"{side}.json")
    return paths


def test_sampled_equal_says_only_sampled_bytes_were_checked(tmp_path, cli):
    unread = 1024 + 100  # between the head and the first strided block: never read
    assert not any(off <= unread < off + n for off, n in SMALL.ranges(20_000))
    g, n = _sampled_pair(tmp_path, change_at=unread)
    code, doc, _ = compare(cli, g, n)
    assert code == 0  # an info note, not a pass and not a failure
    assert rules_keys(doc) == [("SD505", "data:*")]
    msg = doc["findings"][0]["message"]
    assert msg.startswith("both sides were fingerprinted by sampling (sampled: head and tail 1.0 KiB and 4 blocks")
    assert msg.endswith("): files that match are probably identical (15% of bytes read), not proven identical; "
                        "a difference in the sampled bytes is certain; GPU 3.0 KiB of 19.5 KiB read (15%), "
                        "NPU 3.0 KiB of 19.5 KiB read (15%)")


def test_sampled_difference_in_a_read_block_is_found(tmp_path, cli):
    g, n = _sampled_pair(tmp_path, change_at=5)  # in the head
    code, doc, _ = compare(cli, g, n)
    assert code == 1
    assert rules_keys(doc) == [("SD503", "data:big.bin"), ("SD505", "data:*")]
    f = [x for x in doc["findings"] if x["rule"] == "SD503"][0]
    assert f["message"].endswith("content hash of the sampled bytes differs")


def test_sampled_against_full_compares_sizes_only_and_warns(tmp_path, cli):
    for side in ("gpu", "npu"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "big.bin").write_bytes(bytes(20_000))
    (tmp_path / "gpu" / "other.bin").write_bytes(bytes(20_000))
    (tmp_path / "npu" / "other.bin").write_bytes(bytes(20_001))
    mg, _ = dataset.fingerprint([str(tmp_path / "gpu")])
    mn, _ = dataset.fingerprint([str(tmp_path / "npu")], sample=SMALL)
    (tmp_path / "g.json").write_text(dataset.dumps(mg))
    (tmp_path / "n.json").write_text(dataset.dumps(mn))
    code, doc, _ = compare(cli, tmp_path / "g.json", tmp_path / "n.json")
    assert code == 1
    assert rules_keys(doc) == [("SD503", "data:other.bin"), ("SD506", "data:*")]
    f = {x["rule"]: x for x in doc["findings"]}
    assert f["SD503"]["message"] == ("data file other.bin differs between GPU and NPU: size 20000 vs 20001 bytes "
                                     "(content not compared: one side sampled, the other not)")
    assert f["SD506"]["message"].startswith("NPU was fingerprinted by sampling and the sides were hashed differently")


def test_cli_sample_flag(tmp_path, cli):
    make_dataset(tmp_path / "d")
    code, out, _ = cli("data", "fingerprint", "--sample", str(tmp_path / "d"))
    m = json.loads(out)
    assert code == 0 and m["mode"] == SampleSpec().mode()
    assert m["sampled"] is False  # every file was small enough to be read whole: nothing was sampled
    assert {e["mode"] for e in m["files"].values()} == {FULL}


# ---------------------------------------------------------------- tokenizer files

def test_tokenizer_files_are_part_of_the_check(tmp_path, cli):
    make_dataset(tmp_path / "gpu")
    make_dataset(tmp_path / "npu")
    for side, vocab in (("gpu", '{"a": 0, "b": 1}'), ("npu", '{"a": 0, "b": 2}')):
        (tmp_path / f"tok_{side}").mkdir()
        (tmp_path / f"tok_{side}" / "tokenizer.json").write_text(vocab)
        (tmp_path / f"tok_{side}" / "tokenizer_config.json").write_text("{}")
    code, doc, _ = compare(cli, tmp_path / "gpu", tmp_path / "npu",
                           "--tokenizer", str(tmp_path / "tok_gpu"), "--tokenizer", str(tmp_path / "tok_npu"))
    assert code == 1
    assert rules_keys(doc) == [("SD504", "data:tokenizer:tokenizer.json")]
    assert doc["findings"][0]["gpu"]["path"] == f"{tmp_path / 'tok_gpu'}/tokenizer.json"
    # the same tokenizer on both sides: nothing
    code, doc, _ = compare(cli, tmp_path / "gpu", tmp_path / "npu",
                           "--tokenizer", str(tmp_path / "tok_gpu"), "--tokenizer", str(tmp_path / "tok_gpu"))
    assert code == 0 and doc["findings"] == []
    # carried in manifests made on each side
    for side in ("gpu", "npu"):
        assert cli("data", "fingerprint", str(tmp_path / side), "--tokenizer", str(tmp_path / f"tok_{side}"),
                   "-o", str(tmp_path / f"{side}.json"))[0] == 0
    code, doc, _ = compare(cli, tmp_path / "gpu.json", tmp_path / "npu.json")
    assert rules_keys(doc) == [("SD504", "data:tokenizer:tokenizer.json")]


def test_tokenizer_option_needs_both_sides(tmp_path, cli):
    make_dataset(tmp_path / "gpu")
    code, _, err = cli("data", str(tmp_path / "gpu"), str(tmp_path / "gpu"), "--tokenizer", str(tmp_path))
    assert code == 2 and "give it twice (GPU, then NPU)" in err


def test_tokenizer_paths_from_launch_script_facts(tmp_path):
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.model").write_bytes(b"spm")
    facts = [Fact(key="tokenizer_model", value="./tok", path="pretrain.sh", line=7),
             Fact(key="tokenizer_model", value="meta-llama/Llama-2-7b-hf", path="pretrain.sh", line=8),
             Fact(key="lr", value=1e-4)]
    refs = dataset.tokenizer_refs(facts, str(tmp_path))
    assert [(p, f.line) for p, f in refs] == [(os.path.join(str(tmp_path), "./tok"), 7), ("", 8)]


def test_tokenizer_from_script_reports_unreadable_scripts(tmp_path, cli):
    make_dataset(tmp_path / "gpu")
    code, doc, err = compare(cli, tmp_path / "gpu", tmp_path / "gpu", "--script", str(tmp_path / "missing.sh"),
                             "--script", str(tmp_path / "missing.sh"))
    assert code == 0
    assert [e["message"] for e in doc["errors"]] == ["no such file or directory"] * 2


# ---------------------------------------------------------------- bad input

def test_truncated_idx_is_reported_and_still_hashed(tmp_path):
    (tmp_path / "d").mkdir()
    write_idx(tmp_path / "d" / "x.idx", seqs=5, docs=2, cut=8)
    (tmp_path / "d" / "y.idx").write_bytes(b"not an index at all, just text....")
    m, errors = dataset.fingerprint([str(tmp_path / "d")])
    assert sorted(m["files"]) == ["x.idx", "y.idx"]
    assert sorted((e.path, e.message) for e in errors) == [
        ("x.idx", f"truncated Megatron index: header declares {34 + 5 * 12 + 3 * 8} bytes, file has {34 + 5 * 12 + 3 * 8 - 8}"),
        ("y.idx", "not a Megatron index (.idx) file: bad magic; hashed only"),
    ]


def test_bad_manifest_and_missing_side(tmp_path, cli):
    make_dataset(tmp_path / "gpu")
    bad = tmp_path / "manifest.json"
    bad.write_text('{"scriptdiff_manifest": 1, "files": {"a": {"size": "big"}}}')
    code, doc, err = compare(cli, tmp_path / "gpu", bad)
    assert code == 2
    assert doc["errors"] == [{"path": str(bad), "message": "manifest entry 'a' needs an integer size and a string hash"}]
    code, doc, err = compare(cli, tmp_path / "gpu", tmp_path / "nope")
    assert code == 2 and doc["errors"][0]["message"] == "no such file or directory"
    bad.write_text('{"scriptdiff_manifest": 1, "files": ')
    report = diff_files([str(bad)], [str(bad)], Options(use_cache=False))
    assert report.errors[0].message.startswith("not valid JSON")
    assert "Traceback" not in err


def test_unreadable_file_is_an_error_not_a_crash(tmp_path, cli):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    make_dataset(tmp_path / "d")
    p = tmp_path / "d" / "README"
    p.chmod(0)
    m, errors = dataset.fingerprint([str(tmp_path / "d")])
    assert "README" not in m["files"] and errors[0].message.startswith("cannot read")


def test_hash_file_matches_blake3_across_chunks(tmp_path):
    data = np.random.default_rng(5).integers(0, 255, 100_003, dtype=np.uint8).tobytes() + b"\n\n"
    (tmp_path / "f").write_bytes(data)
    fh = hash_file(tmp_path / "f", count_lines=True, chunk=4096)
    assert fh.hash == blake3.blake3(data).hexdigest()
    assert fh.lines == data.count(b"\n") and fh.size == len(data) and fh.mode == FULL


def test_big_files_hashed_through_the_map_match_blake3(tmp_path, monkeypatch):
    from scriptdiff import budget
    from scriptdiff.checks import wholehash

    monkeypatch.setattr(wholehash, "BIG_FILE", 1000)
    monkeypatch.setattr(budget, "MAP_SEGMENT", 4096)
    data = np.random.default_rng(6).integers(0, 255, 50_001, dtype=np.uint8).tobytes()
    (tmp_path / "f").write_bytes(data)
    seen = []
    fh = hash_file(tmp_path / "f", progress=seen.append)
    assert fh.hash == blake3.blake3(data).hexdigest() and fh.mode == FULL and fh.bytes_read == len(data)
    assert sum(seen) == len(data) and len(seen) == 13


def test_linked_folders_are_followed_once_and_the_manifest_is_not_hashed(tmp_path, cli):
    (tmp_path / "d").mkdir()
    make_dataset(tmp_path / "d" / "z")  # links are followed inside the root (outside: test_hostile_io)
    (tmp_path / "d" / "shards").symlink_to(tmp_path / "d" / "z" / "train")
    (tmp_path / "d" / "shards" / "loop").symlink_to(tmp_path / "d" / "z" / "train")  # train/loop -> itself
    code, _, err = cli("data", "fingerprint", str(tmp_path / "d"), "-o", str(tmp_path / "d" / "manifest.json"))
    m = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert sorted(f for f in m["files"] if "/part-" in f) == ["shards/part-0.jsonl", "shards/part-1.jsonl"]
    assert "folder reached twice through symbolic links; listed once" in err
    # run again: the manifest from the first run is not part of the data
    cli("data", "fingerprint", str(tmp_path / "d"), "-o", str(tmp_path / "d" / "manifest.json"))
    assert "manifest.json" not in json.loads((tmp_path / "d" / "manifest.json").read_text())["files"]


def test_several_roots_keep_files_apart(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "x.bin").write_bytes(d.encode())
    m, _ = dataset.fingerprint([str(tmp_path / "a"), str(tmp_path / "b")])
    assert sorted(m["files"]) == ["a/x.bin", "b/x.bin"]


def test_parquet_rows_come_from_pyarrow_metadata(tmp_path, monkeypatch):
    """pyarrow is an optional extra (not installed here): a stand-in checks the wiring only."""
    import sys
    import types

    class _File:
        def __init__(self, path):
            if "bad" in str(path):
                raise OSError("Parquet magic bytes not found in footer")
            self.metadata = types.SimpleNamespace(num_rows=7)

    fake = types.ModuleType("pyarrow")
    fake.parquet = types.ModuleType("pyarrow.parquet")
    fake.parquet.ParquetFile = _File
    monkeypatch.setitem(sys.modules, "pyarrow", fake)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", fake.parquet)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "good.parquet").write_bytes(b"PAR1....PAR1")
    (tmp_path / "d" / "bad.parquet").write_bytes(b"nope")
    m, errors = dataset.fingerprint([str(tmp_path / "d")])
    assert m["files"]["good.parquet"]["rows"] == 7 and m["files"]["good.parquet"]["format"] == "parquet"
    assert "rows" not in m["files"]["bad.parquet"]
    assert [(e.path, e.message) for e in errors] == [
        ("bad.parquet", "cannot read row count: Parquet magic bytes not found in footer")]


def test_parquet_without_pyarrow_is_hashed_without_rows(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.parquet").write_bytes(b"PAR1....PAR1")
    m, errors = dataset.fingerprint([str(tmp_path / "d")])
    assert errors == [] and m["files"]["x.parquet"]["format"] == "parquet" and "rows" not in m["files"]["x.parquet"]


def test_two_single_files_are_compared_whatever_their_names(tmp_path, cli):
    (tmp_path / "gpu.jsonl").write_text('{"t": 1}\n')
    (tmp_path / "npu_copy.jsonl").write_text('{"t": 1}\n')
    (tmp_path / "other.jsonl").write_text('{"t": 2}\n{"t": 3}\n')
    code, doc, _ = compare(cli, tmp_path / "gpu.jsonl", tmp_path / "npu_copy.jsonl")
    assert code == 0 and doc["findings"] == []
    code, doc, _ = compare(cli, tmp_path / "gpu.jsonl", tmp_path / "other.jsonl")
    assert rules_keys(doc) == [("SD503", "data:gpu.jsonl")]
    assert doc["findings"][0]["npu"]["path"] == f"{tmp_path}/other.jsonl"


def test_a_changed_record_is_named_by_its_line_and_both_records(tmp_path, cli):
    """Issue 41: `data` on a JSONL file with one changed line gave sizes and hashes only; it
    names the first differing record: its line and both records (clipped, secrets withheld)."""
    rows = ['{"text": "the quick brown fox"}', '{"text": "jumps over the lazy dog", "hf_token": "hf_abcdefghijklmnopqrstuvwxyz0123"}',
            '{"text": "scriptdiff example"}']
    for side, changed in (("g", rows[1]), ("n", rows[1].replace("lazy", "busy").replace("hf_abc", "hf_xyz"))):
        (tmp_path / side).mkdir()
        (tmp_path / side / "train.jsonl").write_text("\n".join([rows[0], changed, rows[2]]) + "\n")
    code, out, _ = cli("data", str(tmp_path / "g"), str(tmp_path / "n"), "-f", "json")
    [f] = json.loads(out)["findings"]
    assert code == 1 and (f["rule"], f["gpu"]["line"], f["npu"]["line"]) == ("SD503", 2, 2)
    assert f["message"] == ('data file train.jsonl differs between GPU and NPU: content hash differs; the first '
                            'differing record is line 2: GPU {"text": "jumps over the lazy dog", "hf_token": '
                            '"<withheld>"} / NPU {"text": "jumps over the busy dog", "hf_token": "<withheld>"}')
    assert "hf_abc" not in out and "hf_xyz" not in out
    # fingerprints written on the machines: the files are not here, so no record is named
    for side in ("g", "n"):
        assert cli("data", "fingerprint", str(tmp_path / side), "-o", str(tmp_path / f"{side}.json"))[0] == 0
    code, out, _ = cli("data", str(tmp_path / "g.json"), str(tmp_path / "n.json"), "-f", "json")
    [f] = json.loads(out)["findings"]
    assert f["message"] == "data file train.jsonl differs between GPU and NPU: content hash differs"

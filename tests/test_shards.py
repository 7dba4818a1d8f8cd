"""Fingerprints in parts (`--shard I/N`, `merge`) on local data, and the extras' one-line refusals.

The object-store and Ray runs of the same machinery are in tests/test_object_storage.py
(real servers); these need neither.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from scriptdiff import api
from scriptdiff.inputs import storage
from scriptdiff.checks.parts import parse_shard, split


def test_split_is_contiguous_balanced_by_bytes_and_keeps_empty_parts():
    sizes = [3, 100, 1, 1, 1, 50, 50]
    parts = split(sizes, 3)
    # 206 bytes in 3 parts: each file goes where its middle byte falls (byte 53 of file 1: part 1)
    assert [list(r) for r in parts] == [[0, 1], [2, 3, 4, 5], [6]]
    assert split(sizes, 3) == parts  # the same listing, the same parts
    assert [list(r) for r in split([0, 0, 0, 0], 2)] == [[0, 1], [2, 3]]  # no bytes: by count
    assert [list(r) for r in split([5], 3)] == [[], [0], []]  # more parts than files: empty parts are parts
    assert [list(r) for r in split([], 2)] == [[], []]


@pytest.mark.parametrize("text, message", [
    ("0/3", "--shard 0/3: I must be between 1 and N (part I of N), N at least 1"),
    ("4/3", "--shard 4/3: I must be between 1 and N (part I of N), N at least 1"),
    ("2", "--shard expects I/N (part I of N, 1 <= I <= N), got '2'"),
    ("a/b", "--shard expects I/N (part I of N, 1 <= I <= N), got 'a/b'"),
])
def test_a_bad_shard_is_refused_with_what_is_expected(text, message):
    with pytest.raises(ValueError) as e:
        parse_shard(text)
    assert str(e.value) == message
    assert parse_shard("2/3") == (2, 3)


def make_data(root):
    os.makedirs(root / "sub")
    (root / "a.bin").write_bytes(os.urandom(300_000))
    (root / "b.jsonl").write_text("".join(f'{{"i": {i}}}\n' for i in range(100)))
    (root / "sub" / "c.bin").write_bytes(os.urandom(200_000))
    (root / "sub" / "d.txt").write_text("tail\n")


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "scriptdiff", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_local_shards_merge_to_the_serial_manifest_byte_for_byte(tmp_path):
    make_data(tmp_path / "data")
    assert run("data", "fingerprint", "data", "-o", "full.json", cwd=tmp_path).returncode == 0
    for i in (1, 2, 3, 4):
        r = run("data", "fingerprint", "data", "--shard", f"{i}/4", "-o", f"p{i}.json", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    r = run("data", "merge", "p3.json", "p1.json", "p4.json", "p2.json", "-o", "merged.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "merged.json").read_bytes() == (tmp_path / "full.json").read_bytes()
    assert r.stderr == "scriptdiff: 4 file(s), 500,995 bytes -> merged.json\n"
    # a file changed after some parts were made: the listing differs, the set is refused
    (tmp_path / "data" / "sub" / "d.txt").write_text("tail, longer\n")
    r = run("data", "fingerprint", "data", "--shard", "2/4", "-o", "p2.json", cwd=tmp_path)
    r = run("data", "merge", "p1.json", "p2.json", "p3.json", "p4.json", "-o", "m.json", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, "scriptdiff: p2.json and p1.json do not belong together: they listed "
                                           "different files (the data changed between the runs?)\n")
    assert not (tmp_path / "m.json").exists()


def test_a_sampled_part_does_not_merge_with_full_parts(tmp_path):
    make_data(tmp_path / "data")
    run("data", "fingerprint", "data", "--shard", "1/2", "-o", "p1.json", cwd=tmp_path)
    run("data", "fingerprint", "data", "--sample", "--shard", "2/2", "-o", "p2.json", cwd=tmp_path)
    r = run("data", "merge", "p1.json", "p2.json", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("scriptdiff: p2.json and p1.json do not belong together: different hashing modes "
                               "(full / sampled) (sampled:edge=4194304,block=1048576,blocks=64 vs full)")


def test_a_malformed_part_is_one_line(tmp_path):
    make_data(tmp_path / "data")
    doc, _ = api.data_fingerprint([str(tmp_path / "data")], shard="1/1")
    doc["files"]["a.bin"] = {"size": "big"}
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(api.UsageError) as e:
        api.data_merge([str(tmp_path / "bad.json")])
    assert str(e.value) == f"{tmp_path / 'bad.json'}: part entry 'a.bin' needs an integer size, a string hash and a mode"
    (tmp_path / "other.json").write_text('{"scriptdiff_weights": 1, "tensors": {}}')
    with pytest.raises(api.UsageError) as e:
        api.data_merge([str(tmp_path / "other.json")])
    assert str(e.value) == f"{tmp_path / 'other.json'}: not a part file of `scriptdiff data fingerprint --shard I/N`"


def test_checkpoint_shards_merge_locally(tmp_path):
    import numpy as np
    from safetensors.numpy import save_file

    rng = np.random.default_rng(1)
    save_file({f"layer.{i}.weight": rng.standard_normal((64, 64)).astype(np.float32) for i in range(5)},
              str(tmp_path / "model.safetensors"))
    serial = api.fingerprint_text(api.weights_fingerprint(str(tmp_path / "model.safetensors")))
    for i in (1, 2, 3):
        r = run("weights", "fingerprint", "model.safetensors", "--shard", f"{i}/3", "-o", f"w{i}.json", cwd=tmp_path)
        assert r.returncode == 0 and r.stderr.startswith(f"scriptdiff: part {i} of 3: "), r.stderr
    r = run("weights", "merge", "w1.json", "w2.json", "w3.json", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == serial.replace(str(tmp_path / "model.safetensors"), "model.safetensors")
    r = run("weights", "merge", "w1.json", "w3.json", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, "scriptdiff: missing part(s) 2 of 3 (have 1, 3); nothing merged\n")


def test_options_that_do_not_go_together_are_refused(tmp_path):
    make_data(tmp_path / "data")
    r = run("data", "fingerprint", "data", "--shard", "1/2", "--executor", "ray", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, "scriptdiff: --shard runs one part here and --executor ray runs every "
                                           "part on a cluster: give one of them\n")
    r = run("data", "data", "data", "--shard", "1/2", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, "scriptdiff: --shard fingerprints one part of a dataset: use it with "
                                           "`data fingerprint`\n")
    r = run("data", "fingerprint", "data", "--parts", "4", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, "scriptdiff: --parts applies to --executor ray only\n")


def test_without_the_cloud_extra_an_s3_path_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "s3fs", None)  # import s3fs now fails as when it is not installed
    storage.reset()
    try:
        report = api.data("s3://corpus/pretrain", "s3://corpus/other")
        assert sorted((e.path, e.message) for e in report.errors) == [
            (f"s3://corpus/{name}", "reading object storage (s3://) needs the cloud extra: "
                                    "pip install 'scriptdiff[cloud]'") for name in ("other", "pretrain")]
        assert report.exit_code() == 2
        with pytest.raises(api.UsageError) as e:
            api.weights_fingerprint("s3://ckpt/llama")
        assert str(e.value) == ("s3://ckpt/llama: reading object storage (s3://) needs the cloud extra: "
                                "pip install 'scriptdiff[cloud]'")
    finally:
        storage.reset()


def test_without_the_ray_extra_the_executor_is_one_line(monkeypatch, tmp_path):
    make_data(tmp_path / "data")
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(api.UsageError) as e:
        api.data_fingerprint([str(tmp_path / "data")], fanout=api.executor("ray"))
    assert str(e.value) == "--executor ray needs the ray extra: pip install 'scriptdiff[ray]'"

"""Datasets and checkpoints where they live: an S3 store, shards merged, a Ray cluster.

Real components, started here and stopped at the end (also when a test fails): moto's S3
server on 127.0.0.1 holding a generated dataset and a sharded safetensors checkpoint, its
requests signed and checked against an IAM user it made (so a wrong secret key is refused as
a real store refuses it), and a local Ray cluster of 2 workers (tests/servers.py). The same
fingerprints come from the store, the local copy, merged shards and Ray; a changed object is
named; parts that do not belong together are refused; a wrong secret is one line naming the
bucket, and no credential appears in any output.
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest

pytest.importorskip("s3fs", reason="the cloud extra (s3fs) is part of the test extra")
pytest.importorskip("moto.server", reason="moto[server] is part of the test extra")

import numpy as np  # noqa: E402

from scriptdiff import api, budget  # noqa: E402
from scriptdiff.inputs import storage  # noqa: E402
from scriptdiff.checks import dataset  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from servers import S3Server, aws_variables, ray_cluster, s3_server  # noqa: E402

BUCKET = "train-data"
DATA = f"s3://{BUCKET}/pretrain"
EDIT = f"s3://{BUCKET}/edit"
CKPT = f"s3://{BUCKET}/ckpt/llama"
MiB = 1024 * 1024
RAW = {"BF16": ("<u2", 2), "F32": ("<f4", 4)}


# ---------------------------------------------------------------- generated data

def write_idx(path: str, seqs: int, docs: int) -> None:
    """A Megatron indexed dataset header (version 1, int32 tokens) and its arrays."""
    with open(path, "wb") as fh:
        fh.write(b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 4, seqs, docs + 1))
        fh.write(b"\x01" * (seqs * 4 + seqs * 8 + (docs + 1) * 8))


def make_dataset(root: str, big: bool) -> None:
    rng = np.random.default_rng(7)
    os.makedirs(os.path.join(root, "shards"), exist_ok=True)
    write_idx(os.path.join(root, "corpus_text_document.idx"), 40, 12)
    with open(os.path.join(root, "corpus_text_document.bin"), "wb") as fh:
        fh.write(rng.integers(0, 2**31, 300_000, dtype=np.int32).tobytes())
    for i in range(3):
        with open(os.path.join(root, "shards", f"part-{i:03d}.jsonl"), "w") as fh:
            fh.writelines(json.dumps({"text": f"doc {i}-{j}"}) + "\n" for j in range(50 + i))
    if big:  # larger than the sample layout (72 MiB), so --sample reads part of it
        with open(os.path.join(root, "tokens.bin"), "wb") as fh:
            for _ in range(12):
                fh.write(rng.integers(0, 255, 8 * MiB, dtype=np.uint8).tobytes())


def write_safetensors(path: str, tensors: dict[str, tuple[str, list[int], bytes]]) -> None:
    header, off = {}, 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as fh:
        fh.write(len(head).to_bytes(8, "little") + head)
        for _, _, raw in tensors.values():
            fh.write(raw)


def tensor(rng, dtype: str, shape: list[int], scale: float = 1.0) -> tuple[str, list[int], bytes]:
    values = rng.standard_normal(int(np.prod(shape))).astype(np.float32) * scale
    raw = (values.view(np.uint32) >> 16).astype("<u2").tobytes() if dtype == "BF16" else values.tobytes()
    return dtype, shape, raw


def make_checkpoint(root: str) -> None:
    """Two shards and their index; the embedding (20 MiB) is read from the store in several blocks."""
    rng = np.random.default_rng(11)
    os.makedirs(root, exist_ok=True)
    one = {"model.embed_tokens.weight": tensor(rng, "BF16", [4096, 2560], 0.02),
           "model.layers.0.self_attn.q_proj.weight": tensor(rng, "F32", [256, 256], 0.05)}
    two = {"model.layers.0.mlp.up_proj.weight": tensor(rng, "BF16", [512, 256], 0.05),
           "model.norm.weight": tensor(rng, "F32", [256])}
    write_safetensors(os.path.join(root, "model-00001-of-00002.safetensors"), one)
    write_safetensors(os.path.join(root, "model-00002-of-00002.safetensors"), two)
    wmap = {**{n: "model-00001-of-00002.safetensors" for n in one}, **{n: "model-00002-of-00002.safetensors" for n in two}}
    with open(os.path.join(root, "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {"total_size": 0}, "weight_map": wmap}, fh)


# ---------------------------------------------------------------- the components

class World:
    server: S3Server
    key_id: str
    secret: str
    data: str  # local copy of DATA
    small: str  # local copy of EDIT (before a test changes it)
    ckpt: str  # local copy of CKPT
    tmp: str

    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "RAY_ADDRESS"}
        env.update(self.server.env(self.key_id, self.secret))
        env.update(extra)
        return env


@pytest.fixture(scope="session")
def world(tmp_path_factory):
    """The S3 server with the dataset and the checkpoint, locked to an IAM user whose keys are
    this process's AWS variables while the tests run (restored, and the server stopped, after)."""
    w = World()
    w.tmp = str(tmp_path_factory.mktemp("store"))
    w.data, w.small, w.ckpt = (os.path.join(w.tmp, n) for n in ("pretrain", "edit", "llama"))
    make_dataset(w.data, big=True)
    make_dataset(w.small, big=False)
    make_checkpoint(w.ckpt)
    with s3_server() as server:
        w.server = server
        server.client().create_bucket(Bucket=BUCKET)
        server.upload(BUCKET, w.data, "pretrain")
        server.upload(BUCKET, w.small, "edit")
        server.upload(BUCKET, w.ckpt, "ckpt/llama")
        w.key_id, w.secret = server.lock()
        with aws_variables(server.env(w.key_id, w.secret), also=("RAY_ADDRESS",)):
            storage.reset()
            try:
                yield w
            finally:
                storage.reset()


@pytest.fixture(scope="session")
def cluster(world):
    """A local Ray cluster with 2 workers; its workers inherit the store's variables."""
    pytest.importorskip("ray", reason="ray is part of the test extra")
    with ray_cluster(2) as ctx:
        yield ctx


def cli(args: list[str], env: dict, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scriptdiff", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def manifest_of(path: str, **kw) -> tuple[str, list]:
    manifest, errors = api.data_fingerprint([path], **kw)
    return api.manifest_text(manifest), errors


def without_roots(text: str) -> dict:
    doc = json.loads(text)
    for k in ("roots", "base", "source"):
        doc.pop(k, None)
    return doc


# ---------------------------------------------------------------- one machine, from the store

def test_a_prefix_fingerprints_as_its_local_copy(world):
    remote, rerr = manifest_of(DATA)
    local, lerr = manifest_of(world.data)
    assert rerr == lerr == []
    assert without_roots(remote) == without_roots(local)
    doc = json.loads(remote)
    assert doc["roots"] == [DATA] and doc["base"] == DATA
    assert sorted(doc["files"]) == ["corpus_text_document.bin", "corpus_text_document.idx", "shards/part-000.jsonl",
                                    "shards/part-001.jsonl", "shards/part-002.jsonl", "tokens.bin"]
    # the structure read by range: the .idx header and the JSONL line counts
    assert doc["files"]["corpus_text_document.idx"]["sequences"] == 40
    assert doc["files"]["corpus_text_document.idx"]["documents"] == 12
    assert doc["files"]["shards/part-002.jsonl"]["lines"] == 52


def test_the_listing_is_read_page_by_page(world, monkeypatch):
    calls = []
    real = storage.ObjectStore._call

    def counted(self, url, method, **kw):
        if method == "list_objects_v2":
            calls.append(kw.get("ContinuationToken"))
        return real(self, url, method, **kw)

    monkeypatch.setattr(budget, "STORAGE_PAGE", 2)
    monkeypatch.setattr(storage.ObjectStore, "_call", counted)
    paged, errors = manifest_of(EDIT)
    assert errors == []
    # one look at the prefix (is it a folder), then 3 pages of 2 keys for 5 objects
    assert len(calls) == 4 and calls[0] is None and calls[1] is None and all(calls[2:])
    monkeypatch.undo()
    assert paged == manifest_of(EDIT)[0]


def test_the_store_and_the_local_copy_compare_equal_from_the_command_line(world):
    r = cli(["data", EDIT, world.small], world.env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1] == ("dataset: GPU 5 file(s), 1.2 MB; NPU 5 file(s), 1.2 MB; 5 identical "
                                        "(compared in full)")
    assert world.secret not in r.stdout + r.stderr and world.key_id not in r.stdout + r.stderr


def test_a_changed_object_is_named(world):
    s3 = world.server.client()
    s3.put_object(Bucket=BUCKET, Key="edit/shards/part-001.jsonl", Body=b'{"text": "changed"}\n' * 51)
    try:
        report = api.data(EDIT, world.small)
    finally:
        s3.upload_file(os.path.join(world.small, "shards", "part-001.jsonl"), BUCKET, "edit/shards/part-001.jsonl")
    assert [(f.rule, f.key) for f in report.findings] == [("SD503", "data:shards/part-001.jsonl")]
    f = report.findings[0]
    assert f.gpu.path == f"{EDIT}/shards/part-001.jsonl"
    assert f.gpu.value["size"] == 1020 and f.npu.value["size"] == 1061
    assert f.message == ("data file shards/part-001.jsonl differs between GPU and NPU: size 1020 vs 1061 bytes; "
                         "content hash differs")
    assert report.exit_code() == 1
    assert api.data(EDIT, world.small).findings == []  # restored: the negative case


def test_a_checkpoint_in_the_store_fingerprints_as_its_local_copy(world):
    remote = api.weights_fingerprint(CKPT)
    local = api.weights_fingerprint(world.ckpt)
    assert remote["tensors"] == local["tensors"] and remote["format"] == "safetensors-sharded"
    assert api.weights_fingerprint(CKPT + "/")["tensors"] == local["tensors"]  # s3://bucket/ckpt/ is the same folder
    assert remote["source"] == CKPT
    report = api.weights(CKPT, world.ckpt)
    assert report.findings == [] and report.errors == []
    assert report.details["weights"].identical == 4


def test_a_changed_tensor_in_the_store_is_measured_by_range(world, tmp_path):
    changed = os.path.join(tmp_path, "llama")
    make_checkpoint(changed)
    rng = np.random.default_rng(11)
    one = {"model.embed_tokens.weight": tensor(rng, "BF16", [4096, 2560], 0.02),
           "model.layers.0.self_attn.q_proj.weight": tensor(rng, "F32", [256, 256], 0.05)}
    dtype, shape, raw = one["model.embed_tokens.weight"]
    raw = bytearray(raw)
    raw[-2:] = b"\x80\x3f"  # the last element becomes 1.0 (bf16 0x3f80)
    one["model.embed_tokens.weight"] = (dtype, shape, bytes(raw))
    write_safetensors(os.path.join(changed, "model-00001-of-00002.safetensors"), one)
    world.server.upload(BUCKET, changed, "ckpt/changed")
    report = api.weights(f"s3://{BUCKET}/ckpt/changed", world.ckpt)
    assert [(f.rule, f.key) for f in report.findings] == [("SD605", "weights:model.embed_tokens.weight")]
    extra = report.findings[0].extra
    assert extra["differing_elements"] == 1 and extra["elements"] == 4096 * 2560
    assert report.findings[0].gpu.path == f"s3://{BUCKET}/ckpt/changed/model-00001-of-00002.safetensors"


# ---------------------------------------------------------------- shards for any scheduler

def test_shards_merged_are_the_serial_manifest_byte_for_byte(world, tmp_path):
    env = world.env()
    full = tmp_path / "full.json"
    assert cli(["data", "fingerprint", EDIT, "-o", str(full)], env).returncode == 0
    parts = []
    for i in (1, 2, 3):
        part = tmp_path / f"part-{i}.json"
        r = cli(["data", "fingerprint", EDIT, "--shard", f"{i}/3", "-o", str(part)], env)
        assert r.returncode == 0, r.stderr
        assert r.stderr.startswith(f"scriptdiff: part {i} of 3: ")
        parts.append(str(part))
    merged = tmp_path / "merged.json"
    r = cli(["data", "merge", *reversed(parts), "-o", str(merged)], env)
    assert r.returncode == 0, r.stderr
    assert merged.read_bytes() == full.read_bytes()
    assert world.secret not in full.read_text() + "".join(open(p).read() for p in parts)


def test_parts_that_do_not_belong_together_are_refused(world, tmp_path):
    made = {}
    for name, root, shard in (("s1", EDIT, "1/3"), ("s2", EDIT, "2/3"), ("s3", EDIT, "3/3"),
                              ("l2", world.small, "2/3"), ("q2", EDIT, "2/4")):
        doc, errors = api.data_fingerprint([root], shard=shard)
        assert errors == []
        made[name] = tmp_path / f"{name}.json"
        made[name].write_text(api.manifest_text(doc))
    p = {k: str(v) for k, v in made.items()}

    def refused(*names: str) -> str:
        with pytest.raises(api.UsageError) as e:
            api.data_merge([p[n] for n in names])
        return str(e.value)

    assert refused("s1", "s3") == "missing part(s) 2 of 3 (have 1, 3); nothing merged"
    assert refused("s1", "s2", "s2", "s3") == f"part 2 of 3 is given twice: {p['s2']} and {p['s2']}"
    assert refused("s1", "l2", "s3") == (f"{p['l2']} and {p['s1']} do not belong together: different roots "
                                         f"([\"{world.small}\"] vs [\"{EDIT}\"])")
    assert refused("s1", "q2", "s3") == (f"{p['q2']} is part 2 of 4 but {p['s1']} is part 1 of 3: parts of "
                                         f"different splits do not belong together")
    whole = tmp_path / "whole.json"
    whole.write_text(api.manifest_text(api.data_fingerprint([EDIT])[0]))
    assert api.data_merge([p["s3"], p["s1"], p["s2"]])[1] == []  # a whole set, in any order: merged
    with pytest.raises(api.UsageError, match="a whole fingerprint, not a part"):
        api.data_merge([str(whole)])
    r = cli(["data", "merge", p["s1"], p["s3"], "-o", str(tmp_path / "m.json")], world.env())
    assert (r.returncode, r.stderr) == (2, "scriptdiff: missing part(s) 2 of 3 (have 1, 3); nothing merged\n")
    assert not (tmp_path / "m.json").exists()


def test_checkpoint_shards_merge_to_the_serial_fingerprint(world, tmp_path):
    serial = api.fingerprint_text(api.weights_fingerprint(CKPT))
    parts = []
    for i in (1, 2):
        path = tmp_path / f"w{i}.json"
        path.write_text(api.fingerprint_text(api.weights_fingerprint(CKPT, shard=f"{i}/2")))
        parts.append(str(path))
    assert api.fingerprint_text(api.weights_merge(parts)) == serial
    with pytest.raises(api.UsageError, match=r"^missing part\(s\) 1 of 2 \(have 2\); nothing merged$"):
        api.weights_merge(parts[1:])
    local = tmp_path / "local1.json"
    local.write_text(api.fingerprint_text(api.weights_fingerprint(world.ckpt, shard="1/2")))
    with pytest.raises(api.UsageError, match="do not belong together: different checkpoints"):
        api.weights_merge([str(local), parts[1]])


# ---------------------------------------------------------------- Ray

def test_ray_gives_the_serial_bytes(world, cluster):
    serial, _ = manifest_of(EDIT)
    ray_manifest, errors = manifest_of(EDIT, fanout=api.executor("ray", parts=5))
    assert errors == [] and ray_manifest == serial
    weights_serial = api.fingerprint_text(api.weights_fingerprint(CKPT))
    assert api.fingerprint_text(api.weights_fingerprint(CKPT, fanout=api.executor("ray", parts=3))) == weights_serial
    report = api.weights(CKPT, world.ckpt, fanout=api.executor("ray"))
    assert report.findings == [] and report.errors == []


def failing_part(attempts: str):
    """A part function that fails for the part holding shards/part-001.jsonl and writes a line
    to `attempts` each time it is tried (sent to the workers by value)."""
    def part(payload):
        items, mode, workers = payload
        if "shards/part-001.jsonl" in [rel for rel, *_ in items]:
            with open(attempts, "a") as fh:
                fh.write("attempt\n")
            raise RuntimeError("worker lost its disk")
        return dataset.hash_items(items, None, workers)[0], []
    return part


def test_a_failed_part_is_retried_then_reported_with_its_files(world, cluster, monkeypatch, tmp_path):
    import ray.cloudpickle

    attempts = tmp_path / "attempts"
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.setattr(dataset, "hash_part", failing_part(str(attempts)))
    manifest, errors = api.data_fingerprint([world.small], fanout=api.executor("ray", parts=3))
    assert attempts.read_text().count("attempt") == 3  # the first try and 2 retries
    assert [(e.path, e.message, e.fatal) for e in errors] == [
        (world.small, "part 3 of 3 failed after 3 attempt(s): RuntimeError: worker lost its disk; its 4 file(s) "
                      "were not hashed: corpus_text_document.idx, shards/part-000.jsonl, shards/part-001.jsonl, "
                      "shards/part-002.jsonl", True)]
    assert "shards/part-001.jsonl" not in manifest["files"]
    report = api.data(world.small, world.small, fanout=api.executor("ray", parts=3))
    assert report.findings == [] and report.exit_code() == 2  # that side is unknown, not smaller


def test_ray_from_the_command_line_shows_parts_done(world, cluster, tmp_path):
    out = tmp_path / "ray.json"
    address = cluster.address_info["gcs_address"]
    r = cli(["data", "fingerprint", world.small, "--executor", "ray", "--ray-address", address, "--parts", "2",
             "--progress", "-o", str(out)], world.env())
    assert r.returncode == 0, r.stderr
    assert "scriptdiff: parts on the Ray cluster 2/2 parts" in r.stderr
    assert out.read_text() == api.manifest_text(api.data_fingerprint([world.small])[0])


# ---------------------------------------------------------------- sampling

def test_a_sampled_comparison_says_probably_identical_and_how_much_was_read(world):
    local, _ = manifest_of(world.data, sample=True)
    assert json.loads(local)["files"]["tokens.bin"]["mode"] == "sampled:edge=4194304,block=1048576,blocks=64"
    r = cli(["data", DATA, world.data, "--sample"], world.env())  # the store's samples hashed against the local ones
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1] == ("dataset: GPU 6 file(s), 101.9 MB; NPU 6 file(s), 101.9 MB; 6 probably "
                                        "identical (sampled: 75% of the bytes read)")
    assert ("info    SD505 data:*  both sides were fingerprinted by sampling (sampled: head and tail 4.0 MiB and 64 "
            "blocks of 1.0 MiB per large file): files that match are probably identical (75% of bytes read), not "
            "proven identical; a difference in the sampled bytes is certain; GPU 73.1 MiB of 97.1 MiB read (75%), "
            "NPU 73.1 MiB of 97.1 MiB read (75%)") in r.stdout.splitlines()


# ---------------------------------------------------------------- credentials and errors

@pytest.mark.parametrize("command", [["data", "fingerprint", DATA], ["weights", "fingerprint", CKPT],
                                     ["data", DATA, "LOCAL"], ["weights", CKPT, "LOCAL"]])
def test_a_wrong_secret_is_one_line_naming_the_bucket(world, command):
    wrong = "wrong-secret-Zq8v1x"
    command = [{"LOCAL": world.small if command[0] == "data" else world.ckpt}.get(a, a) for a in command]
    r = cli(command, world.env(AWS_SECRET_ACCESS_KEY=wrong))
    assert r.returncode == 2
    err = r.stderr.strip()
    assert "Traceback" not in r.stdout + r.stderr
    assert wrong not in r.stdout + r.stderr and world.key_id not in r.stdout + r.stderr
    line = (f"{command[-1] if command[1] == 'fingerprint' else command[1]}: access to bucket {BUCKET} denied: "
            f"SignatureDoesNotMatch (the secret key does not match the access key); check the credentials "
            f"(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE or ~/.aws/credentials) and the endpoint "
            f"(AWS_ENDPOINT_URL)")
    assert line in (err + r.stdout)
    assert len([ln for ln in err.splitlines() if "denied" in ln]) == 1


def test_a_profile_in_the_config_files_reaches_the_store(world, tmp_path):
    config, creds = tmp_path / "config", tmp_path / "credentials"
    config.write_text(f"[profile team]\nregion = us-east-1\nendpoint_url = {world.server.url}\n")
    creds.write_text(f"[team]\naws_access_key_id = {world.key_id}\naws_secret_access_key = {world.secret}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE=str(config), AWS_SHARED_CREDENTIALS_FILE=str(creds), AWS_PROFILE="team",
               AWS_EC2_METADATA_DISABLED="true")
    r = cli(["weights", "fingerprint", CKPT, "--format", "json"], env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tensors"] == api.weights_fingerprint(world.ckpt)["tensors"]
    assert world.secret not in r.stdout + r.stderr and world.key_id not in r.stdout + r.stderr


def test_check_reads_store_urls_in_its_configuration(world, tmp_path):
    (tmp_path / "scriptdiff.toml").write_text(
        f'[gpu]\ndataset = "{EDIT}"\nweights = "{CKPT}"\n[npu]\ndataset = "{world.small}"\nweights = "{world.ckpt}"\n')
    report = api.check(str(tmp_path / "scriptdiff.toml"))
    assert report.verdicts["dataset"][0] == "pass" and report.verdicts["weights"][0] == "pass"
    assert report.errors == []
    text = api.render(report, "json")
    assert world.secret not in text and world.key_id not in text


def test_credentials_in_a_url_are_refused_without_echoing_them(world):
    for call in (lambda: api.data("s3://AKIDEXAMPLE:s3cr3tvalue@bucket/data", world.small),
                 lambda: api.weights_fingerprint("s3://AKIDEXAMPLE:s3cr3tvalue@bucket/ckpt")):
        with pytest.raises(api.UsageError) as e:
            call()
        assert str(e.value) == ("s3://***@bucket/...: credentials in the URL are not read (they would end up in "
                                "reports); give them through AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or a profile")


def test_a_server_started_for_a_test_is_stopped_when_the_test_fails():
    with pytest.raises(RuntimeError, match="the test failed"):
        with s3_server() as server:
            pid = server.proc.pid
            raise RuntimeError("the test failed")
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # gone, not a zombie: stop() waited for it

"""An object store that misbehaves (issue 40): an endpoint that accepts and never answers, an
object replaced while it is fingerprinted, keys that climb out of their prefix.

Real components: moto's S3 server on 127.0.0.1 and a relay in front of it (tests/servers.py:
S3Relay) that stalls requests or replaces an object between two ranged reads, as another
writer would. Every store call has a deadline (budget.STORAGE_TIMEOUT,
SCRIPTDIFF_STORAGE_TIMEOUT): past it, one line names the object and exit 2, and the store is
not asked again in that run; each object's reads are pinned to the version listed (If-Match
on its ETag), so a replaced object fails instead of hashing half of each version; a key whose
path below the prefix has an empty, `.` or `..` part is refused, never a manifest entry."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("s3fs", reason="the cloud extra (s3fs) is part of the test extra")
pytest.importorskip("moto.server", reason="moto[server] is part of the test extra")

from scriptdiff import api, budget  # noqa: E402
from scriptdiff.inputs import storage  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from servers import aws_variables, s3_relay, s3_server  # noqa: E402

BUCKET = "hostile-store"
BIG = b'{"text": "old"}\n' * 40_000  # 640,000 bytes: several ranged reads at a lowered STORAGE_CHUNK
NEW = b'{"text": "new"}\n' * 40_000


@pytest.fixture(scope="module")
def relay():
    with s3_server() as server, s3_relay(server) as r, aws_variables(r.env()):
        s3 = server.client()
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key="corpus/big.jsonl", Body=BIG)
        s3.put_object(Bucket=BUCKET, Key="corpus/small.jsonl", Body=b'{"text": "s"}\n')
        storage.reset()
        try:
            yield r
        finally:
            storage.reset()


@pytest.fixture(autouse=True)
def fresh(relay):
    relay.stall = False
    s3 = relay.upstream.client()
    s3.put_object(Bucket=BUCKET, Key="corpus/big.jsonl", Body=BIG)  # each test starts from the same store
    storage.reset()
    yield
    relay.stall = False
    storage.reset()


def cli(args: list[str], **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scriptdiff", *args], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)


def test_an_endpoint_that_never_answers_is_one_line_within_the_deadline(relay):
    """It ran past 200 s with no output: now the first call's deadline ends the run."""
    relay.stall = True
    r = cli(["data", "fingerprint", f"s3://{BUCKET}/corpus"], SCRIPTDIFF_STORAGE_TIMEOUT="1")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (f"scriptdiff: s3://{BUCKET}/corpus: the object store ({relay.url}) did not answer within 1 s; "
                        f"not read (SCRIPTDIFF_STORAGE_TIMEOUT=SECONDS to wait longer)\n")


def test_an_object_whose_reads_stall_is_named_and_the_store_not_asked_again(relay, monkeypatch):
    monkeypatch.setattr(budget, "STORAGE_TIMEOUT", 1.0)
    relay.stall = f"{BUCKET}/corpus/big.jsonl"
    manifest, errors = api.data_fingerprint([f"s3://{BUCKET}/corpus"])
    assert [(e.path, e.message, e.fatal) for e in errors] == [
        ("big.jsonl", f"the object store ({relay.url}) did not answer within 1 s; not read "
                      f"(SCRIPTDIFF_STORAGE_TIMEOUT=SECONDS to wait longer)", True)]
    assert "big.jsonl" not in manifest["files"]
    gets = dict(relay.gets)
    with pytest.raises(storage.AccessError, match="did not answer within 1 s"):
        storage.store_for(f"s3://{BUCKET}/corpus/small.jsonl").read(f"s3://{BUCKET}/corpus/small.jsonl", 0, 4)
    assert relay.gets == gets  # not asked again in this run
    relay.stall = False
    manifest, errors = api.data_fingerprint([f"s3://{BUCKET}/corpus"])  # a new run asks again
    assert errors == [] and sorted(manifest["files"]) == ["big.jsonl", "small.jsonl"]


def test_an_object_replaced_between_two_ranged_reads_fails_instead_of_hashing_both(relay, monkeypatch):
    """It gave the hash of neither version, exit 0."""
    monkeypatch.setattr(budget, "STORAGE_CHUNK", 100_000)
    monkeypatch.setattr(budget, "STORAGE_AHEAD", 0)
    relay.replace(f"{BUCKET}/corpus/big.jsonl", NEW, after=3)  # before the third ranged read
    manifest, errors = api.data_fingerprint([f"s3://{BUCKET}/corpus"])
    assert [(e.path, e.message, e.fatal) for e in errors] == [
        ("big.jsonl", "changed while being read (the store now holds another version of it than the one listed); "
                      "not read", True)]
    assert sorted(manifest["files"]) == ["small.jsonl"]
    manifest, errors = api.data_fingerprint([f"s3://{BUCKET}/corpus"])  # the new version, whole
    local = api.data_fingerprint([str(_write(NEW))])[0]["files"]["big.jsonl"]
    assert errors == [] and manifest["files"]["big.jsonl"]["hash"] == local["hash"]


def _write(data: bytes):
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="hostile-store-"))
    (folder / "big.jsonl").write_bytes(data)
    return folder / "big.jsonl"


def test_a_store_that_ignores_if_match_is_caught_by_the_version_it_sends(relay, monkeypatch):
    monkeypatch.setattr(budget, "STORAGE_CHUNK", 100_000)
    monkeypatch.setattr(budget, "STORAGE_AHEAD", 0)
    real = storage.ObjectStore._get

    async def ignoring(self, bucket, key, rng, etag):  # a store that serves whatever it holds now
        return await real(self, bucket, key, rng, None)

    monkeypatch.setattr(storage.ObjectStore, "_get", ignoring)
    relay.replace(f"{BUCKET}/corpus/big.jsonl", NEW, after=2)
    manifest, errors = api.data_fingerprint([f"s3://{BUCKET}/corpus"])
    assert [(e.path, e.fatal) for e in errors] == [("big.jsonl", True)]
    assert errors[0].message.startswith("changed while being read")


def test_the_command_line_exits_2_when_an_object_changed(relay):
    """From the command line: the object is larger than one ranged read (8 MiB), replaced
    after its first: one line names it, exit 2, and no manifest (nothing else was read)."""
    s3 = relay.upstream.client()
    s3.put_object(Bucket=BUCKET, Key="large/x.bin", Body=b"a" * (budget.STORAGE_CHUNK + 10))
    relay.replace(f"{BUCKET}/large/x.bin", b"b" * (budget.STORAGE_CHUNK + 10), after=1)
    r = cli(["data", "fingerprint", f"s3://{BUCKET}/large"])
    assert (r.returncode, r.stdout) == (2, "")  # no manifest: nothing of the prefix was read whole
    assert r.stderr.splitlines() == ["scriptdiff: x.bin: changed while being read (the store now holds another "
                                     "version of it than the one listed); not read"]


@pytest.mark.parametrize("key", ["corpus/../../x.jsonl", "corpus//y.jsonl", "corpus/./z.jsonl", "corpus/a/../w.jsonl"])
def test_a_key_that_is_not_a_plain_path_below_its_prefix_is_refused(relay, key):
    s3 = relay.upstream.client()
    s3.put_object(Bucket=BUCKET, Key=key, Body=b'{"text": "x"}\n')
    try:
        manifest, errors = api.data_fingerprint([f"s3://{BUCKET}/corpus"])
    finally:
        s3.delete_object(Bucket=BUCKET, Key=key)
    below = key[len("corpus/"):]
    assert [(e.path, e.message, e.fatal) for e in errors] == [
        (f"s3://{BUCKET}/{key}", f"the key's path below the prefix ({below}) is not a plain relative path (an empty, "
                                 f". or .. part, or a leading /); not read", False)]
    assert sorted(manifest["files"]) == ["big.jsonl", "small.jsonl"]
    assert not any(name.startswith(("/", "..")) or "/../" in name for name in manifest["files"])


def test_an_object_opened_whole_is_read_by_range_with_its_version_pinned(relay, monkeypatch):
    url = f"s3://{BUCKET}/corpus/big.jsonl"
    store = storage.store_for(url)
    store.kind(url)
    monkeypatch.setattr(budget, "STORAGE_BLOCK", 64)
    with store.open(url) as fh:
        fh.seek(len(BIG) - 16)
        assert fh.read() == b'{"text": "old"}\n'
        fh.seek(0)
        assert fh.read(15) == b'{"text": "old"}'
        relay.upstream.client().put_object(Bucket=BUCKET, Key="corpus/big.jsonl", Body=NEW)
        fh.seek(100_000)
        with pytest.raises(storage.ChangedError):
            fh.read(10)

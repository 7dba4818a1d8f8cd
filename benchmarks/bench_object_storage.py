"""Fingerprinting a dataset in object storage, and on Ray: figures against baselines of the same run.

A generated dataset (--size-gb, default 2, in objects of --object-mb, default 32) is written
to a temporary folder and uploaded to a local S3 server (moto's server mode on 127.0.0.1,
started and stopped here; tests/servers.py). Then, medians of --runs:

- `data fingerprint s3://...` in process, against the floor: a bare ranged read of the same
  bytes through the same store layer (same chunks, same requests in flight, same files in
  parallel, nothing hashed), and against the fingerprint of the local copy;
- `--executor ray` with 1 and with 2 workers (a local Ray cluster each) against the serial
  fingerprint, on the local copy (hashing-bound) and once from the store;
- peak memory (wait4) of `scriptdiff data fingerprint s3://...` on the whole dataset, on a
  quarter of it, of one `--shard 1/4` part and of a 1-byte dataset in the store (start-up and
  the S3 client's imports): the memory follows the chunks and the part, not the dataset;
- a planted difference: one object rewritten in the store (same size) is the one finding of
  `data s3://... LOCAL_MANIFEST`, and the store, the merged shards and Ray agree byte for byte.

moto's server is a single Python process that copies a whole object to serve any range of
it: its cost is part of both the fingerprint and the floor, so the ratio is the figure to
read, not the absolute speed. Files are deleted at the end.

    PYTHONPATH=$PWD python benchmarks/bench_object_storage.py [--size-gb 2] [--runs 3]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from _timing import time_fn  # noqa: E402
from servers import ray_cluster, s3_server  # noqa: E402

MiB = 1024 * 1024
BUCKET = "bench-data"


def generate(folder: str, total: int, obj: int) -> list[str]:
    import numpy as np

    rng = np.random.default_rng(3)
    names = []
    for i in range(max(1, total // obj)):
        name = f"shard-{i // 16:02d}/tokens-{i:05d}.bin"
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(rng.integers(0, 255, obj, dtype=np.uint8).tobytes())
        names.append(name)
    return names


# Runs a command and prints "status seconds peak-KiB" from wait4. A child counts the memory of
# the process it was spawned from as its own peak until it calls exec, so the command is
# spawned from this small interpreter rather than from the benchmark (which holds the data).
MEASURE = ("import os, sys, time\n"
           "null = os.open(os.devnull, os.O_WRONLY)\n"
           "t = time.perf_counter()\n"
           "pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, "
           "file_actions=[(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)])\n"
           "_, status, usage = os.wait4(pid, 0)\n"
           "print(os.waitstatus_to_exitcode(status), time.perf_counter() - t, usage.ru_maxrss)\n")


def peak_rss(cmd: list[str], env: dict) -> tuple[float, float]:
    """(seconds, peak resident MiB) of one command, from wait4 in a small measuring process."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], env=env, capture_output=True, text=True, check=True)
    status, took, kib = out.stdout.split()
    if status != "0":
        raise SystemExit(f"failed ({status}): {' '.join(cmd)}")
    return float(took), int(kib) / 1024


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-gb", type=float, default=2.0)
    ap.add_argument("--object-mb", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    total = int(args.size_gb * 1024 ** 3)
    free = shutil.disk_usage(tempfile.gettempdir()).free
    if free < 3 * total:
        print(f"need {3 * total / 1024 ** 3:.1f} GiB free in {tempfile.gettempdir()} (the local copy and the "
              f"store's), have {free / 1024 ** 3:.1f} GiB: use a smaller --size-gb")
        return 2
    from scriptdiff import api
    from scriptdiff.inputs import storage
    from scriptdiff.checks import dataset
    from scriptdiff.checks.hashing import default_workers

    work = tempfile.mkdtemp(prefix="sd-bench-s3-")
    try:
        local = os.path.join(work, "data")
        t = time.perf_counter()
        names = generate(local, total, args.object_mb * MiB)
        size = sum(os.path.getsize(os.path.join(local, n)) for n in names)
        print(f"dataset: {len(names)} objects of {args.object_mb} MiB, {size / 1024 ** 3:.2f} GiB "
              f"(generated in {time.perf_counter() - t:.1f} s)")
        with s3_server() as server:
            s3 = server.client()
            s3.create_bucket(Bucket=BUCKET)
            t = time.perf_counter()
            server.upload(BUCKET, local, "data")
            print(f"uploaded to the local S3 server in {time.perf_counter() - t:.1f} s")
            saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("AWS_")}
            os.environ.update(server.env())
            storage.reset()
            url = f"s3://{BUCKET}/data"
            try:
                return run(args, api, storage, dataset, default_workers, server, url, local, names, size, work)
            finally:
                for k in [k for k in os.environ if k.startswith("AWS_")]:
                    del os.environ[k]
                os.environ.update(saved)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, api, storage, dataset, default_workers, server, url, local, names, size, work) -> int:
    from scriptdiff import budget

    gib = size / 1024 ** 3
    store = storage.store_for(url)
    plan = dataset.plan([url])
    assert len(plan.items) == len(names)

    def floor():
        def read(item):
            _, path, n, _ = item
            for _ in store.spans(path, [(0, n)]):
                pass
        with ThreadPoolExecutor(max_workers=default_workers()) as pool:
            list(pool.map(read, plan.items))

    remote_text = {}

    def from_store():
        m, errors = api.data_fingerprint([url])
        assert not errors, errors
        remote_text["last"] = m

    def from_disk():
        m, errors = api.data_fingerprint([local])
        assert not errors, errors
        remote_text["local"] = m

    runs = args.runs
    floor()  # warm-up: the server's first reads of each object
    t_floor, t_s3, t_local = [], [], []
    for _ in range(runs):  # interleaved, so that drift in the server's state hits both alike
        t_floor += time_fn(floor, runs=1, warmup=0)
        t_s3 += time_fn(from_store, runs=1, warmup=0)
        t_local += time_fn(from_disk, runs=1, warmup=0)
    strip = lambda m: {k: v for k, v in m.items() if k not in ("roots", "base")}  # noqa: E731
    assert strip(remote_text["last"]) == strip(remote_text["local"]), "store and local copy disagree"
    print(f"\n== one machine: fingerprint {gib:.2f} GiB (median of {runs}; {default_workers()} files in parallel) ==")
    print(f"bare ranged read of the same bytes (floor)  {med(t_floor):7.2f} s  {gib / med(t_floor):6.2f} GiB/s")
    print(f"data fingerprint s3://...                   {med(t_s3):7.2f} s  {gib / med(t_s3):6.2f} GiB/s  "
          f"{med(t_s3) / med(t_floor):.2f}x the floor")
    print(f"data fingerprint of the local copy          {med(t_local):7.2f} s  {gib / med(t_local):6.2f} GiB/s  "
          f"(s3 is {med(t_s3) / med(t_local):.1f}x slower than local disk)")

    # --- memory: the whole dataset, a quarter of it, one part
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    quarter = len(names) // 4
    s3 = server.client()  # a prefix holding a quarter of the objects, copied inside the store
    for n in names[:quarter]:
        s3.copy_object(Bucket=BUCKET, Key=f"quarter/{n}", CopySource={"Bucket": BUCKET, "Key": f"data/{n}"})
    cli = [sys.executable, "-m", "scriptdiff", "data", "fingerprint"]
    out = os.path.join(work, "m.json")
    whole = peak_rss([*cli, url, "-o", out], env)
    part = peak_rss([*cli, f"s3://{BUCKET}/quarter", "-o", out], env)
    shard = peak_rss([*cli, url, "--shard", "1/4", "-o", out], env)
    s3.put_object(Bucket=BUCKET, Key="tiny/x", Body=b"x")
    base = peak_rss([*cli, f"s3://{BUCKET}/tiny", "-o", out], env)
    print("\n== peak memory (wait4, a fresh process each) ==")
    print(f"fingerprint s3://... {gib:.2f} GiB             {whole[1]:6.0f} MiB  ({whole[0]:.1f} s)")
    print(f"fingerprint a quarter of it ({gib / 4:.2f} GiB)     {part[1]:6.0f} MiB  ({part[0]:.1f} s)")
    print(f"--shard 1/4 of the whole                    {shard[1]:6.0f} MiB  ({shard[0]:.1f} s)")
    print(f"a 1-byte dataset in the store (start-up)    {base[1]:6.0f} MiB")
    print(f"beyond start-up: whole {whole[1] - base[1]:.0f} MiB, quarter {part[1] - base[1]:.0f} MiB "
          f"(chunks of {budget.STORAGE_CHUNK // MiB} MiB, {budget.STORAGE_AHEAD + 1} per file, {default_workers()} files at once)")

    # --- Ray: 1 and 2 workers against serial, on the local copy (hashing) and from the store
    serial_text = api.manifest_text(api.data_fingerprint([local])[0])
    t_serial = time_fn(lambda: api.data_fingerprint([local]), runs=runs, warmup=0)
    rows = []
    for workers in (1, 2):
        with ray_cluster(workers):
            fan = api.executor("ray")
            got = api.manifest_text(api.data_fingerprint([local], fanout=fan)[0])
            assert got == serial_text, "Ray's manifest differs from the serial one"
            t_ray = time_fn(lambda: api.data_fingerprint([local], fanout=fan), runs=runs, warmup=0)
            t_ray_s3 = time_fn(lambda: api.data_fingerprint([url], fanout=fan), runs=1, warmup=0)
            rows.append((workers, t_ray, t_ray_s3))
    print(f"\n== Ray (a local cluster on this machine's 2 cores; start-up not counted; median of {runs}) ==")
    print(f"serial, local copy                           {med(t_serial):7.2f} s")
    for workers, t_ray, t_ray_s3 in rows:
        print(f"ray, {workers} worker(s), local copy                {med(t_ray):7.2f} s  "
              f"{med(t_ray) / med(t_serial):.2f}x serial")
    for workers, t_ray, t_ray_s3 in rows:
        print(f"ray, {workers} worker(s), from the store (1 run)     {t_ray_s3[0]:7.2f} s  "
              f"{t_ray_s3[0] / med(t_s3):.2f}x serial from the store")

    # --- planted difference, and shards = serial
    manifest_path = os.path.join(work, "local.json")
    with open(manifest_path, "w") as fh:
        fh.write(serial_text)
    parts = []
    for i in (1, 2, 3):
        doc, errors = api.data_fingerprint([url], shard=f"{i}/3")
        p = os.path.join(work, f"part-{i}.json")
        with open(p, "w") as fh:
            fh.write(api.manifest_text(doc))
        parts.append(p)
    merged = api.manifest_text(api.data_merge(parts)[0])
    assert merged == api.manifest_text(remote_text["last"]), "merged shards differ from the serial manifest"
    victim = names[len(names) // 2]
    body = bytearray(open(os.path.join(local, victim), "rb").read())
    body[len(body) // 2] ^= 0xFF
    s3.put_object(Bucket=BUCKET, Key=f"data/{victim}", Body=bytes(body))
    report = api.data(url, manifest_path)
    found = [(f.rule, f.key) for f in report.findings]
    planted = [("SD503", f"data:{victim}")]
    print("\n== planted difference ==")
    print(f"one byte changed in {victim}: found {found}; merged shards = serial: yes; Ray = serial: yes")
    if found != planted:
        print(f"MISSED: expected {planted}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

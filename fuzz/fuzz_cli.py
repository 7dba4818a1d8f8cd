"""Fuzz every parser through the CLI: no input may produce a traceback or an internal error.

Run: python fuzz/fuzz_cli.py [N] [--seed S]
Each round builds a GPU/NPU pair from a seed corpus (the fixtures) and a mutation (random
bytes, truncation, NUL bytes, GBK/Latin-1 re-encoding, UTF-8 BOM, CRLF, deep nesting, a long
line, an empty file, ...), gives the files a random kind (.py .sh .yaml .json .log
requirements.txt, snapshot/manifest/weights JSON), runs `scriptdiff diff --format json`
in-process and checks: exit status in {0, 1, 2}; stdout is valid JSON when the status is
0 or 1; no "internal error" and no "Traceback" on stderr. Prints how many inputs it tried
and how many failed, and writes each failing pair under fuzz/failures/.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scriptdiff.cli import main as cli_main  # noqa: E402

NAMES = ["train.py", "pretrain.sh", "config.yaml", "ds_config.json", "train.log", "requirements.txt",
         "snapshot.json", "manifest.json", "weights.json", "notes.txt", "environment.yml", "pip-list.json"]
HEADERS = {"snapshot.json": '{"scriptdiff_snapshot": 1, ', "manifest.json": '{"scriptdiff_manifest": 1, ',
           "weights.json": '{"scriptdiff_weights": 1, '}


def corpus() -> list[bytes]:
    out = []
    for p in sorted((ROOT / "fixtures").rglob("*")):
        if p.is_file() and p.stat().st_size < 200_000:
            out.append(p.read_bytes())
    return out or [b"x = 1\n"]


def mutate(rng: random.Random, data: bytes, name: str) -> bytes:
    op = rng.randrange(16)
    if op == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
    if op == 1:
        return data[: rng.randrange(len(data) + 1)]
    if op == 2:
        b = bytearray(data)
        for _ in range(rng.randrange(1, 8)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if op == 3:
        i = rng.randrange(len(data) + 1)
        return data[:i] + b"\x00" * rng.randrange(1, 5) + data[i:]
    if op == 4:
        return data.decode("utf-8", "replace").encode("gbk", "replace") + "# 中文注释 学习率\n".encode("gbk")
    if op == 5:
        return data.decode("utf-8", "replace").encode("latin-1", "replace")
    if op == 6:
        return b"\xef\xbb\xbf" + data
    if op == 7:
        return data.replace(b"\n", b"\r\n")
    if op == 8:
        depth = rng.choice([50, 200, 1000, 5000])
        if name.endswith(".py"):
            return b"x = " + b"(" * depth + b"1" + b")" * depth + b"\n"
        if name.endswith((".json", ".yaml", ".yml")):
            return b"[" * depth + b"]" * depth
        return b"echo " + b"$(" * depth + b")" * depth + b"\n"
    if op == 9:
        return b"a" * rng.choice([10_000, 1_000_000]) + b"\n"
    if op == 10:
        return b""
    if op == 11:
        return data * rng.randrange(2, 6)
    if op == 12:
        lines = data.splitlines(keepends=True)
        rng.shuffle(lines)
        return b"".join(lines)
    if op == 13:
        return (HEADERS.get(name, "{") + '"x": ' * rng.randrange(1, 4)).encode() + data[:200]
    if op == 14:
        i = rng.randrange(len(data) + 1)
        junk = rng.choice([b"${", b"$((", b"'", b'"', b"\\\n", b"{{", b"- [", b": :", b"\t", b"--", b"=\n", b"(["])
        return data[:i] + junk + data[i:]
    return data


def run_one(gpath: Path, npath: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main(["diff", str(gpath), str(npath), "--format", "json", "--no-cache"])
        except SystemExit as e:  # must never happen either
            code = 99 if e.code not in (0, 1, 2) else e.code
        except BaseException as e:  # noqa: BLE001
            return 98, "", f"escaped exception: {type(e).__name__}: {e}"
    return code, out.getvalue(), err.getvalue()


def check(code: int, out: str, err: str) -> str | None:
    if code not in (0, 1, 2):
        return f"exit status {code}"
    if "internal error" in err or "Traceback" in err or "escaped exception" in err:
        return err.strip().splitlines()[-1] if err.strip() else "internal error"
    if code in (0, 1):
        try:
            doc = json.loads(out)
        except ValueError as e:
            return f"invalid JSON output: {e}"
        if doc.get("schema") != 1:
            return "JSON without schema 1"
    return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int, nargs="?", default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    seeds = corpus()
    failures = 0
    fail_dir = ROOT / "fuzz" / "failures"
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        for i in range(args.n):
            name = rng.choice(NAMES)
            base = rng.choice(seeds)
            g = Path(d, "gpu", name)
            n = Path(d, "npu", name)
            g.parent.mkdir(exist_ok=True)
            n.parent.mkdir(exist_ok=True)
            g.write_bytes(mutate(rng, base, name) if rng.random() < 0.5 else base)
            n.write_bytes(mutate(rng, base, name))
            code, out, err = run_one(g, n)
            problem = check(code, out, err)
            if problem:
                failures += 1
                dest = fail_dir / f"{args.seed}-{i}"
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy(g, dest / f"gpu_{name}")
                shutil.copy(n, dest / f"npu_{name}")
                (dest / "problem.txt").write_text(problem + "\n" + err)
                if failures <= 20:
                    print(f"FAIL {i} {name}: {problem}", file=sys.stderr)
    dt = time.perf_counter() - t0
    print(f"fuzz: {args.n} inputs tried, {failures} failed ({dt:.1f} s, seed {args.seed})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

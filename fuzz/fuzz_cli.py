"""Fuzz every parser through the CLI: no input may crash, hang, blow up, leak or escape.

Run: python fuzz/fuzz_cli.py [N] [--seed S] [--jobs J] [--only CLASS ...] [--mem-mb 2048] [--timeout 20]

Each input is one class's generator applied to a seed (the fixtures), and runs in a
process of its own under caps (RLIMIT_AS --mem-mb, a wall-clock --timeout), so that a
crash in native code, a hang or a blow-up counts as a failure. The processes are forked by
two fork servers that have imported the package once (see ForkServer), not started afresh:
an interpreter's start-up and imports cost several times a small input's run. The
classes (issue 12):

  mutation      the fixtures mutated (random bytes, truncation, NUL bytes, GBK/Latin-1,
                BOM, CRLF, deep nesting, a long line, an empty file, ...), any file kind
  native-crash  Python shapes that overflowed libcst's native parser: long and/or/+
                chains, deep parentheses, calls, subscripts, `not`, nested blocks, elifs,
                implicit string concatenations
  special-file  a FIFO, a link to /dev/zero or /dev/urandom, a folder, named as an input
  alias-bomb    a YAML billion-laughs file
  nesting-bomb  JSON, TOML and protobuf text nested thousands deep (as a config and as --baseline)
  shell-huge    a one-line launch script of thousands of flags
  tiny-tensors  a safetensors file of many tiny tensors (`weights A B`)
  hostile-cache a warm cache whose entries are replaced by nested JSON, a FIFO, a link to
                /dev/zero, wrong types or a well-formed empty entry: the findings must be
                those of a --no-cache run
  secret-value  secrets planted by value and name in scripts and configs: the planted
                string must never appear on stdout or stderr (text, json, sarif)
  escape        terminal escape sequences in comments and values: no raw ESC byte in
                text output

Every input also checks: exit status in {0, 1, 2}; no traceback and no "internal error";
JSON output parses. Prints per class: inputs, failures, and the worst input's peak RSS and
wall time; failing inputs are kept under fuzz/failures/.
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import io
import itertools
import json
import os
import random
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cli_main(argv):  # imported late: the parent process of a fuzz run never loads the package
    from scriptdiff.cli import main
    return main(argv)


NAMES = ["train.py", "pretrain.sh", "config.yaml", "ds_config.json", "train.log", "requirements.txt",
         "snapshot.json", "manifest.json", "weights.json", "notes.txt", "environment.yml", "pip-list.json",
         "pipeline.config"]
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



# ------------------------------------------------------------------------ inputs by class

@dataclass
class Case:
    """One fuzz input: files to write (relative path -> bytes, or a special-file marker),
    the CLI arguments, and what else to check."""

    cls: str
    files: dict = field(default_factory=dict)
    argv: list = field(default_factory=list)
    secrets: list = field(default_factory=list)  # strings that must never be printed
    no_esc: bool = False  # no raw ESC byte in the output (text format)
    cache: str | None = None  # hostile-cache: how to poison the warm cache
    fmt: str = "json"
    max_rss: float = 0  # MB: a bounded reader must stay below this (0: only the --mem-mb cap)


SPECIAL = ("fifo", "dev-zero", "dev-urandom", "folder")


class _Small:
    """A Random whose choice() of numbers takes the smaller half (quick tests)."""

    def __init__(self, rng: random.Random):
        self._rng = rng

    def choice(self, seq):
        if seq and all(isinstance(x, int) for x in seq):
            return self._rng.choice(sorted(seq)[:max(1, len(seq) // 2)])
        return self._rng.choice(seq)

    def __getattr__(self, name):
        return getattr(self._rng, name)
CHAIN_SHAPES = {
    "and": lambda n: "x = " + " and ".join(["a"] * n) + "\n",
    "or": lambda n: "x = " + " or ".join(["a"] * n) + "\n",
    "plus": lambda n: "x = " + "+".join(["a"] * n) + "\n",
    "cmp": lambda n: "x = " + "<".join(["a"] * n) + "\n",
    "paren": lambda n: "x = " + "(" * n + "a" + ")" * n + "\n",
    "list": lambda n: "x = " + "[" * n + "]" * n + "\n",
    "call": lambda n: "x = " + "f(" * n + ")" * n + "\n",
    "not": lambda n: "x = " + "not " * n + "a\n",
    "attr": lambda n: "x = a" + ".b" * n + "\n",
    "sub": lambda n: "x = a" + "[0]" * n + "\n",
    "elif": lambda n: "if a:\n    pass\n" + "elif a:\n    pass\n" * n,
    "ifnest": lambda n: "".join(" " * i + "if a:\n" for i in range(min(n, 99))) + " " * min(n, 99) + "pass\n",
    "strcat": lambda n: "x = (" + "\n".join(["'a'"] * n) + ")\n",
    "lambda": lambda n: "x = " + "lambda: " * n + "a\n",
    "ternary": lambda n: "x = " + "a if a else " * n + "a\n",
}


def _yaml_bomb(levels: int) -> bytes:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"lr: *a{levels - 1}")
    return ("\n".join(lines) + "\n").encode()


def _safetensors(count: int, rng: random.Random) -> bytes:
    header, data = {}, b""
    for i in range(count):
        raw = struct.pack("<f", rng.random())
        header[f"layer.{i}.w"] = {"dtype": "F32", "shape": [1], "data_offsets": [len(data), len(data) + 4]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def make_case(cls: str, rng: random.Random, seeds: list[bytes], small: bool = False) -> Case:
    """One input of class `cls`; `small` keeps sizes to what a quick test can afford."""
    if small and cls != "native-crash":  # the smaller half of each list of sizes below (crash shapes are cheap)
        rng = _Small(rng)
    if cls in EXTRA:
        return EXTRA[cls].make_case(cls, rng, small, Case)
    if cls == "mutation":
        name = rng.choice(NAMES)
        base = rng.choice(seeds)
        g = mutate(rng, base, name) if rng.random() < 0.5 else base
        return Case(cls, {f"gpu/{name}": g, f"npu/{name}": mutate(rng, base, name)},
                    ["diff", f"gpu/{name}", f"npu/{name}"])
    if cls == "native-crash":
        shape = rng.choice(sorted(CHAIN_SHAPES))
        n = rng.choice([150, 250, 1000, 3000, 8000, 20000])
        text = CHAIN_SHAPES[shape](n).encode()
        files = {"gpu/train.py": b"x = 1\n", "npu/train.py": text}
        if rng.random() < 0.5:  # folder mode with workers: the pool must survive
            for i in range(4):
                files[f"gpu/m{i}.py"] = f"x = {i}\n".encode()
                files[f"npu/m{i}.py"] = f"x = {i + 1}\n".encode()
            return Case(cls, files, ["diff", "--jobs", "2", "gpu", "npu"])
        return Case(cls, files, ["diff", "gpu/train.py", "npu/train.py"])
    if cls == "special-file":
        kind = rng.choice(SPECIAL)
        name = rng.choice(["train.py", "pretrain.sh", "config.yaml", "ds_config.json", "model.safetensors"])
        cmd = "weights" if name.endswith(".safetensors") else "diff"
        return Case(cls, {f"gpu/{name}": b"x = 1\n" if cmd == "diff" else _safetensors(2, rng),
                          f"npu/{name}": ("special", kind)}, [cmd, f"gpu/{name}", f"npu/{name}"])
    if cls == "alias-bomb":
        levels = rng.choice([4, 6, 9, 10])
        return Case(cls, {"gpu/config.yaml": b"lr: 1\n", "npu/config.yaml": _yaml_bomb(levels)},
                    ["diff", "gpu/config.yaml", "npu/config.yaml"])
    if cls == "nesting-bomb":
        depth = rng.choice([500, 5000, 50000])
        where = rng.choice(["json", "toml", "pbtxt", "baseline"])
        if where == "json":
            return Case(cls, {"gpu/ds_config.json": b"{}", "npu/ds_config.json": b"[" * depth + b"]" * depth},
                        ["diff", "gpu/ds_config.json", "npu/ds_config.json"])
        if where == "toml":
            return Case(cls, {"gpu/config.toml": b"lr = 1\n", "npu/config.toml": b"lr = " + b"[" * depth + b"]" * depth + b"\n"},
                        ["diff", "gpu/config.toml", "npu/config.toml"])
        if where == "pbtxt":
            return Case(cls, {"gpu/pipeline.config": b"t { lr: 1 }\n",
                              "npu/pipeline.config": b"a { " * depth + b"}" * depth + b"\n"},
                        ["diff", "gpu/pipeline.config", "npu/pipeline.config"])
        return Case(cls, {"gpu/train.py": b"lr = 1\n", "npu/train.py": b"lr = 2\n", "baseline.json": b"[" * depth + b"]" * depth},
                    ["diff", "--baseline", "baseline.json", "gpu/train.py", "npu/train.py"])
    if cls == "shell-huge":
        count = rng.choice([1000, 5000, 20000])
        flags = " ".join(f"--opt-{i} {i}" for i in range(count))
        nflags = flags.replace("--opt-7 7", "--opt-7 8")
        return Case(cls, {"gpu/run.sh": f"torchrun --nproc_per_node 8 train.py {flags}\n".encode(),
                          "npu/run.sh": f"torchrun --nproc_per_node 8 train.py {nflags}\n".encode()},
                    ["diff", "gpu/run.sh", "npu/run.sh"])
    if cls == "tiny-tensors":
        count = rng.choice([100, 1000, 5000])
        return Case(cls, {"gpu/model.safetensors": _safetensors(count, rng),
                          "npu/model.safetensors": _safetensors(count, rng)},
                    ["weights", "gpu/model.safetensors", "npu/model.safetensors"])
    if cls == "hostile-cache":
        base = rng.choice([b for b in seeds if b.startswith((b"import", b"#", b"from"))] or seeds)
        poison = rng.choice(["nested", "fifo", "dev-zero", "wrong-types", "empty", "garbage"])
        return Case(cls, {"gpu/train.py": base, "npu/train.py": base.replace(b"cuda", b"npu").replace(b"1e-4", b"2e-4")},
                    ["diff", "gpu/train.py", "npu/train.py"], cache=poison)
    if cls == "secret-value":
        tok = rng.choice(["hf_", "ghp_", "sk-", "AKIA", "github_pat_"]) + "".join(
            rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789") for _ in range(32))
        where = rng.choice(["flag", "env", "url", "bearer", "hf-env", "python"])
        fmt = rng.choice(["text", "json", "sarif"])
        if where == "python":
            g = f'from transformers import TrainingArguments\nargs = TrainingArguments(output_dir="o", hub_token="{tok}", learning_rate=1e-4)\n'
            return Case(cls, {"gpu/train.py": g.encode(), "npu/train.py": g.replace("1e-4", "2e-4").replace(tok, tok[::-1]).encode()},
                        ["diff", "gpu/train.py", "npu/train.py"], secrets=[tok, tok[::-1]], fmt=fmt)
        line = {"flag": f"torchrun train.py --hf-token {tok} --lr 1e-4",
                "env": f"export HF_CREDS={tok}\ntorchrun train.py --lr 1e-4",
                "url": f"export HF_ENDPOINT=https://{tok}@hub.example.com\ntorchrun train.py --data https://x.example.com/d?private_token={tok} --lr 1e-4",
                "bearer": f"export NVIDIA_NGC_API='Bearer {tok}'\ntorchrun train.py --lr 1e-4",
                "hf-env": f"export DS_ACCESS={tok}\nexport ACCELERATE_LOGIN={tok}\ntorchrun train.py --lr 1e-4"}[where]
        other = line.replace(tok, tok[::-1]).replace("1e-4", "2e-4")
        return Case(cls, {"gpu/run.sh": (line + "\n").encode(), "npu/run.sh": (other + "\n").encode()},
                    ["diff", "gpu/run.sh", "npu/run.sh"], secrets=[tok, tok[::-1]], fmt=fmt)
    if cls == "escape":
        esc = rng.choice(["\x1b]0;pwned\x07", "\x1b[2J\x1b[H", "\x1b[31mred\x1b[0m", "\x9b2J", "\x1bP+q\x1b\\"])
        which = rng.choice(["py", "sh", "yaml"])
        if which == "py":
            g, n, name = "lr = 1e-4\n", f"# {esc}\nlr = 2e-4  # {esc}\nx = '{esc}'\n", "train.py"
        elif which == "sh":
            g, n, name = "torchrun t.py --lr 1\n", f"# {esc}\ntorchrun t.py --lr 2 --tag '{esc}'\n", "run.sh"
        else:
            g, n, name = "lr: 1\n", f"# {esc}\nlr: 2\nname: \"{esc}\"\n", "config.yaml"
        return Case(cls, {f"gpu/{name}": g.encode(), f"npu/{name}": n.encode()},
                    ["diff", f"gpu/{name}", f"npu/{name}"], no_esc=True, fmt="text")
    raise ValueError(cls)


CLASSES = ("mutation", "native-crash", "special-file", "alias-bomb", "nesting-bomb", "shell-huge",
           "tiny-tensors", "hostile-cache", "secret-value", "escape")

# classes whose generators live in modules beside this file: class -> module (make_case,
# write_special for its own special-file markers, cleanup; and `run(case, go, folder)` when a
# class makes its own runs and judges what they show: go(argv, sub=None, variables=None) runs the
# CLI capped, in the case's folder or its subfolder sub, with these environment variables added)
import classes_bounds  # noqa: E402  (bounded evaluation, hangs, unnamed internal errors: issue 32)
import classes_integrity  # noqa: E402  (false passes, stale replays, paths and arguments: issue 32)
import classes_dumps  # noqa: E402  (hostile msprobe dumps: issue 33)

import classes_secrets  # noqa: E402  (secrets in every writer, forged lines: issue 32)
import classes_writes  # noqa: E402  (fix and init: writes where nothing may be written, issue 40)
import classes_dump_fields  # noqa: E402  (dump fields not of their type: never agreement: issue 40)
import classes_hangs  # noqa: E402  (hostile rule packs, an object store that stalls or changes: issue 40)

EXTRA = {c: m for m in (classes_bounds, classes_integrity, classes_dumps, classes_secrets, classes_writes,
                        classes_dump_fields, classes_hangs)
         for c in m.CLASSES}
CLASSES = CLASSES + tuple(EXTRA)


# ------------------------------------------------------------------------ running one input

def write_case(case: Case, d: Path) -> None:
    for rel, data in case.files.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, tuple):
            kind = data[1]
            if any(m.write_special(p, data) for m in set(EXTRA.values())):
                continue
            if kind == "fifo":
                os.mkfifo(p)
            elif kind == "folder":
                p.mkdir()
            else:
                os.symlink("/dev/zero" if kind == "dev-zero" else "/dev/urandom", p)
        else:
            p.write_bytes(data)


def child(result_path: str, mem_mb: int, argv: list[str]) -> int:
    """In the run's own process (forked by a fork server, or started with --child), in the
    case's folder and environment: let the classes prepare it, cap its memory, run the CLI in
    process, write what happened."""
    for m in dict.fromkeys(EXTRA.values()):
        hook = getattr(m, "in_child", None)
        if hook is not None:
            hook()
    import resource
    if mem_mb:
        resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
    t = time.perf_counter()
    code, out, err = run_one_argv(argv)
    rss = peak_rss_mb()
    Path(result_path).write_text(json.dumps({"code": code, "out": out, "err": err, "rss": rss,
                                             "wall": time.perf_counter() - t}))
    return 0


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM). A process forked by the fork server starts with the
    server's private pages (the interpreter's heap, this script's and the preloaded package's
    and libraries' objects: about 29 MB, shared until written) and the file pages the fork
    copied (about 4 MB), and counts the other file pages (the libraries' code) as it touches
    them; so the figure is the run's peak with the base a fresh interpreter has once it has
    imported what the run imports, give or take the preloaded modules this run would not have
    imported. ru_maxrss would carry the server's own peak instead."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_one_argv(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main(argv)
        except SystemExit as e:  # must never happen either
            code = 99 if e.code not in (0, 1, 2) else e.code
        except BaseException as e:  # noqa: BLE001
            return 98, out.getvalue(), err.getvalue() + f"\nescaped exception: {type(e).__name__}: {e}"
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------------ the fork servers
#
# A fresh interpreter that imports the package costs about a second before a run reads its
# first byte (three runs for a hostile-cache input). A fork server pays that once: it is this
# script started with --serve, imports the package and the libraries the CLI imports when it
# runs (import only: no rules loaded, nothing run, no environment variable read), and forks
# one process per run. That process is a run's own, as a subprocess was: its own process
# group, folder, environment (the case's, replacing the server's), file descriptors 0-2
# (/dev/null, then a log file: what native code or a tool writes there), memory cap, and
# exit status (a native crash kills it alone; the server reports the signal). The parent
# never imports the package (its children would inherit its peak), and enforces the
# wall-clock limit: past it, the server kills the run's process group.
#
# Every run of a fresh interpreter had its own string hash seed; the runs forked by one
# server share the server's. So there are two servers, and the runs of one input alternate
# between them: an output that depends on a set's order still differs between the two runs
# of stale-replay or hostile-cache, as it did between two interpreters.

PRELOAD = ("libcst.native", "tree_sitter", "tree_sitter_bash", "rich.console", "rich.markup", "rich.text",
           "blake3", "pickle", "datetime", "resource")  # besides every scriptdiff module (numpy is left to
# the runs that need it: its import is large and may start threads, and a server forks safely only without)


def _preload() -> int:
    import importlib
    import pkgutil

    import scriptdiff
    names = [m.name for m in pkgutil.walk_packages(scriptdiff.__path__, "scriptdiff.", onerror=lambda _name: None)
             if not m.name.endswith("__main__")]
    done = 0
    for name in [*names, *PRELOAD]:
        try:
            importlib.import_module(name)
            done += 1
        except Exception:  # noqa: BLE001  the run imports it again, and shows what goes wrong
            pass
    return done


def serve() -> dict | None:
    """The fork server's loop (--serve): requests are JSON lines on stdin, {id, argv, cwd, env,
    mem_mb, result, log} to fork a run, {kill: id} to kill one; each run's end is a line
    {id, code} on stdout (code: exit status, or minus the signal), or {id, error} if it could
    not be forked. Returns None when stdin closes (its runs killed first), and the request in
    each forked process, which then runs it and exits as an interpreter does."""
    import gc
    import select
    import signal

    count = _preload()
    gc.freeze()  # the preloaded objects are never collected: forked runs do not copy their pages
    rfd, wfd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # the protocol has stdout to itself: anything printed goes to stderr
    os.close(null)
    sig_r, sig_w = os.pipe()
    os.set_blocking(sig_r, False)
    os.set_blocking(sig_w, False)
    signal.set_wakeup_fd(sig_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the parent; stdin's end stops this
    running: dict[int, int] = {}  # pid -> request id

    def say(msg: dict) -> None:
        os.write(wfd, json.dumps(msg).encode() + b"\n")

    def kill(pid: int) -> None:  # not reaped yet: the pid and its group are still the run's
        for fn in (os.killpg, os.kill):
            try:
                fn(pid, signal.SIGKILL)
            except OSError:
                pass

    say({"ready": os.getpid(), "preloaded": count})
    buf = b""
    while True:
        ready = select.select([rfd, sig_r], [], [])[0]
        if sig_r in ready:
            with contextlib.suppress(BlockingIOError):
                while os.read(sig_r, 512):
                    pass
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if not pid:
                break
            say({"id": running.pop(pid), "code": os.waitstatus_to_exitcode(status)})
        if rfd not in ready:
            continue
        data = os.read(rfd, 1 << 16)
        if not data:
            for pid in running:
                kill(pid)
            return None
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            req = json.loads(line)
            if "kill" in req:
                for pid in [p for p, i in running.items() if i == req["kill"]]:
                    kill(pid)
                continue
            try:
                pid = os.fork()
            except OSError as e:
                say({"id": req["id"], "error": str(e)})
                continue
            if pid == 0:
                signal.set_wakeup_fd(-1)
                for sig in (signal.SIGCHLD, signal.SIGINT):
                    signal.signal(sig, signal.SIG_DFL)
                for fd in (rfd, wfd, sig_r, sig_w):
                    os.close(fd)
                return req
            with contextlib.suppress(OSError):  # its group, set on both sides of the fork (no race)
                os.setpgid(pid, pid)
            running[pid] = req["id"]


def forked(req: dict) -> int:
    """In a process the fork server forked: become the run's own process, then run it."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    argv = req["argv"]
    sys.argv = [str(Path(__file__).resolve()), "--child", req["result"], "--mem-mb", str(req["mem_mb"]), "--", *argv]
    return child(req["result"], req["mem_mb"], argv)


class ForkServer:
    """The parent's side of one fork server (started on first use, stopped at exit)."""

    def __init__(self):
        self.lock = threading.Lock()  # starting it, writing to it
        self.book = threading.Lock()  # the runs it owes an answer (never held while writing)
        self.proc: subprocess.Popen | None = None
        self.waiting: dict[int, tuple[threading.Event, dict]] = {}
        self.ids = itertools.count()

    def _start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        if not self.proc.stdout.readline().startswith(b'{"ready"'):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("the fork server did not start (its error is above)")
        self.waiting = {}
        threading.Thread(target=self._answers, args=(self.proc, self.waiting), daemon=True).start()

    def _answers(self, proc: subprocess.Popen, waiting: dict) -> None:
        for line in proc.stdout:
            msg = json.loads(line)
            with self.book:
                ev, box = waiting.pop(msg["id"], (None, None))
            if ev is not None:
                box.update(msg)
                ev.set()
        code = proc.wait()
        with self.book:  # the server is gone: so is every answer it owed
            for ev, box in waiting.values():
                box["error"] = f"the fork server died (exit {code})"
                ev.set()
            waiting.clear()

    def run(self, req: dict, timeout: float) -> dict | None:
        """{code} or {error} of one run, or None: no answer in `timeout` s (then killed)."""
        ev, box = threading.Event(), {}
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            rid = next(self.ids)
            with self.book:
                self.waiting[rid] = (ev, box)
            try:
                self.proc.stdin.write(json.dumps({**req, "id": rid}).encode() + b"\n")
                self.proc.stdin.flush()
            except OSError as e:
                with self.book:
                    self.waiting.pop(rid, None)
                return {"error": f"the fork server is gone ({e})"}
        if ev.wait(timeout):
            return box
        with self.lock, contextlib.suppress(OSError):
            self.proc.stdin.write(json.dumps({"kill": rid}).encode() + b"\n")
            self.proc.stdin.flush()
        ev.wait(30)  # its end, once killed
        return None

    def stop(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


SERVERS = (ForkServer(), ForkServer())
_RUNS = {"dir": None, "ids": itertools.count(), "turns": itertools.count()}


def _runs_dir() -> Path:
    """A folder of this process's for the runs' result and log files (out of the cases' own)."""
    with SERVERS[0].lock:
        if _RUNS["dir"] is None:
            _RUNS["dir"] = Path(tempfile.mkdtemp(prefix="sdfuzz-runs-"))
            atexit.register(_stop)
        return _RUNS["dir"]


def _stop() -> None:
    for s in SERVERS:
        s.stop()
    shutil.rmtree(_RUNS["dir"], ignore_errors=True)


def spawn(argv: list[str], cwd: Path, env: dict, mem_mb: int, timeout: float, turn: int = 0) -> dict:
    """One CLI run in a process of its own, forked by fork server `turn` % 2, in folder `cwd`
    with environment `env` (nothing else of this process's), under RLIMIT_AS `mem_mb` and a
    wall-clock `timeout`: {code, out, err, rss, wall} or {problem}."""
    base = _runs_dir() / f"run-{next(_RUNS['ids'])}"
    res, log = base.with_suffix(".json"), base.with_suffix(".log")
    req = {"argv": list(argv), "cwd": str(cwd), "env": dict(env), "mem_mb": mem_mb, "result": str(res), "log": str(log)}
    t = time.perf_counter()
    try:
        ans = SERVERS[turn % len(SERVERS)].run(req, timeout)
        wall = time.perf_counter() - t
        if ans is None:
            return {"problem": f"hang: no answer in {timeout:.0f} s", "wall": wall, "rss": 0}
        if "error" in ans:
            return {"problem": f"the run could not be started: {ans['error']}", "wall": wall, "rss": 0}
        if ans["code"] < 0:
            return {"problem": f"killed by signal {-ans['code']} (a crash in native code?)", "wall": wall, "rss": 0}
        if not res.exists():
            text = log.read_bytes().decode("utf-8", "replace") if log.exists() else ""
            tail = text.strip().splitlines()[-1:] or ["no output"]
            return {"problem": f"the run died (exit {ans['code']}): {tail[0][:200]}", "wall": wall, "rss": 0}
        return json.loads(res.read_text())
    finally:
        res.unlink(missing_ok=True)
        log.unlink(missing_ok=True)


def _poison(cache_dir: Path, how: str) -> int:
    n = 0
    for p in sorted(cache_dir.rglob("*.json")):
        n += 1
        try:  # the entry's own shape, every list emptied: well-formed, and hiding everything
            empty = json.dumps({k: ([] if isinstance(v, list) else v) for k, v in json.loads(p.read_text()).items()})
        except (ValueError, AttributeError, OSError):
            empty = "{}"
        p.unlink()
        if how == "fifo":
            os.mkfifo(p)
        elif how == "dev-zero":
            os.symlink("/dev/zero", p)
        else:
            p.write_text({"nested": "[" * 100000 + "]" * 100000, "wrong-types": '{"facts": 3, "errors": "x"}',
                          "empty": empty,
                          "garbage": "\x00\xff not json"}[how])
    return n


def _findings(doc_text: str) -> list:
    try:
        doc = json.loads(doc_text)
    except ValueError:
        return ["<invalid json>"]
    return sorted((f["rule"], f["key"], json.dumps(f.get("gpu"), sort_keys=True), json.dumps(f.get("npu"), sort_keys=True))
                  for f in doc.get("findings", []))


def run_case(case: Case, mem_mb: int, timeout: float) -> tuple[str | None, float, float]:
    """(problem or None, peak RSS MB, wall s) of one input."""
    with tempfile.TemporaryDirectory(prefix="sdfuzz-") as tmp, contextlib.ExitStack() as undo:
        d = Path(tmp)
        for m in set(EXTRA.values()):  # what rmtree cannot remove (folders nested 1,000 deep)
            undo.callback(m.cleanup, d)
        write_case(case, d)
        env = {k: v for k, v in os.environ.items()}
        env["SCRIPTDIFF_CACHE_DIR"] = str(d / ".cache")
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.pop("NO_COLOR", None)
        fmt = ["--format", case.fmt]
        argv = case.argv[:1] + fmt + case.argv[1:]
        turns = itertools.count(next(_RUNS["turns"]))  # this input's runs alternate between the servers

        def go(a, sub=None, variables=None):  # variables: the run's own (a store's endpoint)
            return spawn(a, d / sub if sub else d, {**env, **(variables or {})}, mem_mb, timeout, turn=next(turns))

        own = getattr(EXTRA.get(case.cls), "run", None)  # a class that makes its runs and judges them itself
        if own is not None:
            r = own(case, go, d)
        elif case.cache is None:
            argv.insert(1, "--no-cache") if case.argv[0] == "diff" else None
            r = go(argv)
        else:
            ref = go(case.argv[:1] + ["--no-cache", "--format", "json"] + case.argv[1:])
            warm = go(argv)  # fills the cache
            if "problem" in ref or "problem" in warm:
                r = ref if "problem" in ref else warm
            else:
                _poison(d / ".cache", case.cache)
                r = go(argv)
                if "problem" not in r and _findings(r["out"]) != _findings(ref["out"]):
                    r["problem"] = f"a poisoned cache ({case.cache}) changed the findings"
        rss, wall = r.get("rss", 0), r.get("wall", 0)
        if "problem" in r:
            return r["problem"], rss, wall
        code, out, err = r["code"], r["out"], r["err"]
        if case.fmt != "json" and code in (0, 1):
            problem = check(code, "{\"schema\": 1}", err)  # not JSON: the other checks only
        else:
            problem = check(code, out, err)
        if problem is None:
            for s in case.secrets:
                if s in out or s in err:
                    problem = f"a planted secret was printed ({s[:6]}...)"
        if problem is None and case.max_rss and rss > case.max_rss:
            problem = f"peak RSS {rss:.0f} MB, above the {case.max_rss:.0f} MB this input may take"
        if problem is None and case.no_esc and ("\x1b" in out or "\x1b" in err or "\x9b" in out or "\x9b" in err):
            problem = "a raw terminal escape reached the text output"
        return problem, rss, wall


# ------------------------------------------------------------------------ the run

def plan(n: int, seed: int, only: list[str] | None) -> list[tuple[int, str, float]]:
    """n inputs as (index, class, seed of its generator): every class once first, then
    classes at random. Inputs are made when they run, so this process stays small (its
    children would inherit its peak memory in ru_maxrss)."""
    rng = random.Random(seed)
    classes = [c for c in CLASSES if not only or c in only]
    return [(i, classes[i] if i < len(classes) else rng.choice(classes), rng.random()) for i in range(n)]


def keep_failure(seed: int, i: int, case: Case, problem: str) -> None:
    dest = ROOT / "fuzz" / "failures" / f"{seed}-{i}-{case.cls}"
    dest.mkdir(parents=True, exist_ok=True)
    for rel, data in case.files.items():
        if isinstance(data, bytes):
            (dest / rel.replace("/", "_")).write_bytes(data)
    (dest / "problem.txt").write_text(f"{problem}\nargv: {case.argv}\ncache: {case.cache}\n")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:  # --child RESULT --mem-mb N -- ARGV... (one run, in this process)
        return child(argv[1], int(argv[3]), argv[5:])
    if argv[:1] == ["--serve"]:  # a fork server (see ForkServer): returns in each process it forks
        req = serve()
        return 0 if req is None else forked(req)
    ap = argparse.ArgumentParser(description="Fuzz scriptdiff's CLI with hostile and huge inputs.")
    ap.add_argument("n", type=int, nargs="?", default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--only", action="append", choices=CLASSES, help="only this class (repeatable)")
    ap.add_argument("--mem-mb", type=int, default=2048, help="RLIMIT_AS of each run (MB)")
    ap.add_argument("--timeout", type=float, default=20.0, help="wall-clock limit of each run (s)")
    ap.add_argument("--start", type=int, default=0, metavar="K",
                    help="run the plan's inputs from the K-th on (the same plan of N inputs and seed: a run "
                         "stopped by something else than an input is taken up where it stopped)")
    ap.add_argument("--progress", type=int, default=250, metavar="K",
                    help="a progress line on stderr every K inputs (0: none)")
    args = ap.parse_args(argv)
    cases = plan(args.n, args.seed, args.only)[max(0, args.start):]
    seeds = corpus()
    stats: dict[str, dict] = {}
    t0 = time.perf_counter()

    def one(item):
        i, cls, case_seed = item
        case = make_case(cls, random.Random(case_seed), seeds)
        try:
            return i, case, run_case(case, args.mem_mb, args.timeout)
        except Exception as e:  # the harness itself (a server it starts): this input fails, the run goes on
            return i, case, (f"the harness failed: {type(e).__name__}: {e}", 0, 0)

    done = failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for i, case, (problem, rss, wall) in pool.map(one, cases):
            done += 1
            failed += bool(problem)
            if args.progress and done % args.progress == 0:
                print(f"fuzz: {done}/{len(cases)} inputs, {failed} failed, {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr, flush=True)
            st = stats.setdefault(case.cls, {"n": 0, "fail": 0, "rss": (0, -1), "wall": (0, -1), "problems": {}})
            st["n"] += 1
            st["rss"] = max(st["rss"], (rss, i))
            st["wall"] = max(st["wall"], (wall, i))
            if problem:
                st["fail"] += 1
                st["problems"][problem.splitlines()[0][:100]] = st["problems"].get(problem.splitlines()[0][:100], 0) + 1
                keep_failure(args.seed, i, case, problem)
    failures = sum(st["fail"] for st in stats.values())
    print(f"{'class':14} {'inputs':>6} {'failed':>6} {'worst RSS MB':>13} {'worst wall s':>13}")
    for cls in CLASSES:
        st = stats.get(cls)
        if st:
            print(f"{cls:14} {st['n']:>6} {st['fail']:>6} {st['rss'][0]:>9.0f} #{st['rss'][1]:<3} "
                  f"{st['wall'][0]:>9.1f} #{st['wall'][1]}")
            for prob, k in sorted(st["problems"].items(), key=lambda x: -x[1])[:3]:
                print(f"    {k} x {prob}")
    print(f"fuzz: {len(cases)} inputs tried, {failures} failed ({time.perf_counter() - t0:.1f} s, seed {args.seed}, "
          f"caps {args.mem_mb} MB / {args.timeout:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Fuzz classes of bounded evaluation, hangs and unnamed internal errors (issue 32).

Registered by fuzz_cli.py (one block there); each generator returns a fuzz_cli.Case. The
shapes are the issue's own, at the smallest size that showed the blow-up before the fix:

  unbounded-eval  a shell variable doubled 22 times (`A=$A$A`) and an array likewise; a YAML
                  `${}` fan-out; an mmengine config whose names share subtrees; Python
                  constants that refer to each other eight times over, and a product of
                  huge numbers; a PyTorch zip bomb (a 2.6 MB .pt whose data.pkl inflates to
                  2.7 GB); a trainer_state.json of 10 MB a side (which took 157 MB before, 80
                  MB streamed: the case fails above 120 MB, `max_rss`); a git blob over the 256 MiB cap (through
                  REV:path and --git, in a repository made for the case); 600,000 tiny
                  safetensors tensors
  hang            /proc/kmsg through a link (diff, curves, env, check logs=, a folder holding
                  the link; where /proc/kmsg is absent, a link to /proc/self/status); a FIFO
                  as a git ref (refs/heads/x, packed-refs)
  internal-error  training logs of 1-2 iterations, repeated steps, two far-apart points, a
                  1-record and a 300-tag TensorBoard run; self-referential and deeply nested
                  PyTorch pickles; folders nested 1,000 deep (diff, check, data, curves); an
                  all-zero SHA and a corrupt git object

Special files are markers ("special", kind, ...) that write_special() makes in the case's
folder: "deep" (a folder chain), "link" (a symbolic link), "git" (a repository).
"""
from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import struct
import subprocess
import zlib

CLASSES = ("unbounded-eval", "hang", "internal-error")

ZERO_SHA = "0" * 40


def _pair(name: str, g: str | bytes, n: str | bytes) -> dict:
    enc = (lambda x: x.encode() if isinstance(x, str) else x)
    return {f"gpu/{name}": enc(g), f"npu/{name}": enc(n)}


# ------------------------------------------------------------------ shapes: unbounded evaluation

def doubling_script(times: int = 22) -> str:
    return "A=x\n" + "A=$A$A\n" * times + "torchrun t.py --lr 1 --tag $A\n"


def doubling_array(times: int = 22) -> str:
    return "A=(x)\n" + 'A=("${A[@]}" "${A[@]}")\n' * times + 'torchrun t.py "${A[@]}" --lr 1\n'


def fanout_yaml(levels: int = 9, fan: int = 8) -> str:
    lines = ["lr: 1", "a0: xxxxxxxxxx"]
    for i in range(1, levels):
        lines.append(f"a{i}: \"" + "".join(["${a%d}" % (i - 1)] * fan) + "\"")
    return "\n".join(lines) + "\n"


def shared_pyconfig(levels: int = 22) -> str:
    lines = ["a0 = dict(lr=1e-4, betas=[0.9, 0.999], eps=1e-8, weight_decay=0.01)"]
    for i in range(1, levels):
        lines.append(f"a{i} = dict(x=a{i - 1}, y=a{i - 1})")
    lines.append("optimizer = dict(type='AdamW', lr=1e-4)")
    return "\n".join(lines) + "\n"


def python_fanout(levels: int = 9) -> str:
    lines = ["from transformers import TrainingArguments", "A0 = [1, 2, 3, 4, 5, 6, 7, 8]"]
    for i in range(1, levels + 1):
        lines.append(f"A{i} = [" + ", ".join([f"A{i - 1}"] * 8) + "]")
    lines.append(f"args = TrainingArguments(output_dir='o', learning_rate=A{levels})")
    return "\n".join(lines) + "\n"


def python_big_number(levels: int = 9) -> str:
    lines = ["from transformers import TrainingArguments", "B0 = 999999 ** 128"]
    for i in range(1, levels + 1):
        lines.append(f"B{i} = B{i - 1} * B{i - 1}")
    lines.append(f"args = TrainingArguments(output_dir='o', learning_rate=1e-4, seed=B{levels})")
    return "\n".join(lines) + "\n"


def torch_zip_bomb(inflated: int = 2_700_000_000) -> bytes:
    """A PyTorch-style zip (archive/data.pkl, archive/version) whose data.pkl is deflated zeros
    declaring `inflated` bytes: about inflated/1030 bytes of file. Made from one compressed
    megabyte repeated (a full flush makes each piece stand alone); the CRC is not computed
    (nothing may inflate it to check)."""
    mb = 1 << 20
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = co.compress(b"\0" * mb) + co.flush(zlib.Z_FULL_FLUSH)
    n = inflated // mb
    tail = zlib.compressobj(9, zlib.DEFLATED, -15)
    end = tail.compress(b"\0" * (inflated - n * mb)) + tail.flush()
    data = piece * n + end
    entries = [("archive/data.pkl", data, inflated, 8), ("archive/version", b"3\n", 2, 0)]
    out = io.BytesIO()
    central = b""
    for name, body, size, method in entries:
        off = out.tell()
        nm = name.encode()
        crc = zlib.crc32(body) if method == 0 else 0
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, crc, len(body), size, len(nm), 0))
        out.write(nm + body)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0, crc, len(body), size,
                               len(nm), 0, 0, 0, 0, 0, off) + nm
    cd = out.tell()
    out.write(central)
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), cd, 0))
    return out.getvalue()


def trainer_state(records: int, shift: float) -> bytes:
    hist = [{"epoch": round(i / 1000, 3), "grad_norm": 1.0 + i % 7 / 10, "learning_rate": 1e-4,
             "loss": round(2.5 - i / 1e6 + shift, 6), "step": i} for i in range(1, records)]
    return json.dumps({"best_metric": None, "epoch": 3.0, "global_step": records, "log_history": hist,
                       "max_steps": records}, indent=2).encode()


def tiny_tensors(count: int, seed: int) -> bytes:
    header = {f"layer.{i}.w": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(count)}
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + struct.pack("<f", float(seed)) * count


# ------------------------------------------------------------------ shapes: internal errors

def megatron_log(points: list[tuple[int, float]]) -> str:
    return "".join(f" iteration {s:8d}/  200000 | lm loss: {v:.6E} | grad norm: 1.000 |\n" for s, v in points)


def tensorboard_run(records: list[dict]) -> bytes | None:
    """Event-file bytes of records ({tag: value} per step, steps from 1), or None without
    tensorboard."""
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter
    except ImportError:
        return None
    buf = io.BytesIO()
    w = RecordWriter(buf)
    w.write(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())
    for step, tags in enumerate(records, 1):
        s = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=t, simple_value=v) for t, v in tags.items()])
        w.write(event_pb2.Event(wall_time=1.0 + step, step=step, summary=s).SerializeToString())
    return buf.getvalue()


def self_referential_pickle() -> bytes:
    d: dict = {"w": [1.0]}
    d["self"] = d
    return pickle.dumps({"state_dict": d}, protocol=2)


def nested_pickle(depth: int = 100_000) -> bytes:
    # built opcode by opcode (pickle.dumps itself would recurse): EMPTY_LIST APPENDS... nested
    return b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."


# ------------------------------------------------------------------ the generators

def make_case(cls: str, rng, small: bool, Case):
    if cls == "unbounded-eval":
        return _unbounded(rng, small, Case)
    if cls == "hang":
        return _hang(rng, Case)
    if cls == "internal-error":
        return _internal(rng, small, Case)
    raise ValueError(cls)


def _diff(Case, cls, name, g, n, **kw):
    return Case(cls, _pair(name, g, n), ["diff", f"gpu/{name}", f"npu/{name}"], **kw)


def _unbounded(rng, small: bool, Case):
    shape = rng.choice(["double", "array", "fanout", "pyconfig", "pyvalue", "pynumber", "zipbomb", "trainer-state",
                        "git-blob", "tensors"])
    cls = "unbounded-eval"
    if shape == "double":
        s = doubling_script(rng.choice([20, 22, 24]))
        return _diff(Case, cls, "run.sh", s, s.replace("--lr 1", "--lr 2"))
    if shape == "array":
        s = doubling_array(rng.choice([20, 22]))
        return _diff(Case, cls, "run.sh", s, s.replace("--lr 1", "--lr 2"))
    if shape == "fanout":
        s = fanout_yaml(rng.choice([9, 12]), rng.choice([8, 10]))
        return _diff(Case, cls, "config.yaml", s, s.replace("lr: 1", "lr: 2"))
    if shape == "pyconfig":
        s = shared_pyconfig(rng.choice([22, 30]))
        return _diff(Case, cls, "config.py", s, s.replace("lr=1e-4)", "lr=2e-4)"))
    if shape == "pyvalue":
        s = python_fanout(rng.choice([9, 10]))
        return _diff(Case, cls, "train.py", s, s.replace("[1, 2,", "[0, 2,"))
    if shape == "pynumber":
        s = python_big_number(rng.choice([9, 12]))
        return _diff(Case, cls, "train.py", s, s.replace("999999 **", "999998 **"))
    if shape == "zipbomb":
        bomb = torch_zip_bomb()
        return Case(cls, {"gpu/model.pt": bomb, "npu/model.pt": bomb}, ["weights", "gpu/model.pt", "npu/model.pt"])
    if shape == "trainer-state":
        n = 75_000  # 10 MB a side: 157 MB before the fix (read whole), 80 MB streamed
        return Case(cls, {"gpu/trainer_state.json": trainer_state(n, 0.0), "npu/trainer_state.json": trainer_state(n, 0.01)},
                    ["curves", "gpu/trainer_state.json", "npu/trainer_state.json"], max_rss=120)
    if shape == "git-blob":
        spec = {"main": {"big.yaml": ("zeros", 270_000_000), "small.yaml": b"lr: 1\n"},
                "npu": {"big.yaml": b"lr: 2\n", "small.yaml": b"lr: 1\n"}}
        argv = rng.choice([["diff", "--repo", "repo", "main:big.yaml", "npu:big.yaml"],
                           ["diff", "--git", "--repo", "repo", "main", "npu"]])
        return Case(cls, {"repo": ("special", "git", spec)}, argv)
    count = 600_000
    return Case(cls, {"gpu/model.safetensors": tiny_tensors(count, 1), "npu/model.safetensors": tiny_tensors(count, 2)},
                ["weights", "gpu/model.safetensors", "npu/model.safetensors"])


def _hang(rng, Case):
    cls = "hang"
    shape = rng.choice(["kmsg", "kmsg", "kmsg", "fifo-ref", "fifo-packed-refs"])
    if shape == "kmsg":
        target = "/proc/kmsg" if os.path.exists("/proc/kmsg") else "/proc/self/status"
        cmd = rng.choice(["diff", "curves", "env", "check-logs", "folder"])
        link = ("special", "link", target)
        if cmd == "folder":
            return Case(cls, {"gpu/train.log": link, "npu/train.log": link, "gpu/a.py": b"x = 1\n",
                              "npu/a.py": b"x = 2\n"}, ["diff", "gpu", "npu"])
        name = {"env": "pip-list.json"}.get(cmd, "train.log")
        files = {f"gpu/{name}": link, f"npu/{name}": b"lr: 1\n" if cmd == "diff" else link}
        if cmd == "check-logs":
            return Case(cls, files, ["check", "--gpu", f"logs=gpu/{name}", "--npu", f"logs=npu/{name}"])
        return Case(cls, files, [cmd, f"gpu/{name}", f"npu/{name}"])
    spec = {"main": {"a.py": b"lr = 1\n"}, "x": {"a.py": b"lr = 2\n"},
            "_fifo": "refs/heads/x" if shape == "fifo-ref" else "packed-refs"}
    argv = rng.choice([["diff", "--git", "--repo", "repo", "main", "x"],
                       ["diff", "--repo", "repo", "main:a.py", "x:a.py"]])
    return Case(cls, {"repo": ("special", "git", spec)}, argv)


def _internal(rng, small: bool, Case):
    cls = "internal-error"
    shape = rng.choice(["short-log", "short-log", "tensorboard", "pickle", "deep", "deep", "zero-sha", "corrupt"])
    if shape == "short-log":
        g, n = rng.choice([
            ([(1, 2.5)], [(1, 2.6)]),  # one iteration
            ([(1, 2.5), (2, 2.4)], [(1, 2.5), (2, 2.9)]),  # two
            ([(1, 2.5), (1, 2.4), (1, 2.3)], [(1, 2.5), (2, 2.4)]),  # a repeated step
            ([(1, 2.5), (100_000, 2.4)], [(1, 2.5), (100_000, 2.9)]),  # two far-apart points
            ([(1, 2.5)], [(1, 2.5), (2, 2.4)]),
        ])
        return Case(cls, _pair("train.log", megatron_log(g), megatron_log(n)), ["curves", "gpu/train.log", "npu/train.log"])
    if shape == "tensorboard":
        many = rng.random() < 0.5
        tags = {f"tag{i}": float(i) for i in range(300)} if many else {}
        g = tensorboard_run([{**tags, "loss": 2.5}])
        n = tensorboard_run([{**tags, "loss": 2.6}] * (2 if many else 1))
        if g is None:  # no tensorboard here: the same run as a log
            return Case(cls, _pair("train.log", megatron_log([(1, 2.5)]), megatron_log([(1, 2.6)])),
                        ["curves", "gpu/train.log", "npu/train.log"])
        name = "events.out.tfevents.1.host"
        return Case(cls, {f"gpu/run/{name}": g, f"npu/run/{name}": n}, ["curves", "gpu/run", "npu/run"])
    if shape == "pickle":
        data = self_referential_pickle() if rng.random() < 0.5 else nested_pickle(rng.choice([1000, 100_000]))
        return Case(cls, {"gpu/model.pt": data, "npu/model.pt": data}, ["weights", "gpu/model.pt", "npu/model.pt"])
    if shape == "deep":
        cmd = rng.choice(["diff", "check", "data", "curves"])
        leaf = {"diff": b"lr = 1\n", "check": b"lr = 1\n", "data": b"x\n", "curves": megatron_log([(1, 2.5)]).encode()}[cmd]
        name = "train.log" if cmd == "curves" else "train.py"
        files = {"gpu": ("special", "deep", 1000, name, leaf), "npu": ("special", "deep", 1000, name, leaf + b"\n")}
        if cmd == "check":
            return Case(cls, files, ["check", "--gpu", "scripts=gpu", "--npu", "scripts=npu"])
        return Case(cls, files, [cmd, "gpu", "npu"])
    spec = {"main": {"a.py": b"lr = 1\n"}, "npu": {"a.py": b"lr = 2\n"}}
    if shape == "corrupt":
        spec["_corrupt"] = "npu:a.py"
        argv = rng.choice([["diff", "--repo", "repo", "main:a.py", "npu:a.py"], ["diff", "--git", "--repo", "repo", "main", "npu"]])
    else:
        argv = rng.choice([["diff", "--git", "--repo", "repo", "main", ZERO_SHA],
                           ["diff", "--repo", "repo", "main:a.py", f"{ZERO_SHA}:a.py"]])
    return Case(cls, {"repo": ("special", "git", spec)}, argv)


# ------------------------------------------------------------------ writing special inputs

def write_special(p, marker: tuple) -> bool:
    """Make the special input `marker` at path p; False when it is not one of this module's."""
    kind = marker[1]
    if kind == "link":
        os.symlink(marker[2], p)
        return True
    if kind == "deep":
        _deep(p, marker[2], marker[3], marker[4])
        return True
    if kind == "git":
        _repo(p, marker[2])
        return True
    return False


def _deep(p, depth: int, name: str, leaf: bytes) -> None:
    """A chain of `depth` folders (made through descriptors: the path gets longer than the
    system allows for one call) with one file at the bottom, and one at the top."""
    os.makedirs(p, exist_ok=True)
    (p / "top.py").write_bytes(b"x = 1\n")
    fd = os.open(p, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        f = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(f, leaf)
        os.close(f)
    finally:
        os.close(fd)


def _repo(p, spec: dict) -> None:
    """A repository with one branch per key of spec (files: bytes, or ("zeros", n)); "_fifo"
    names a file under .git made a FIFO, "_corrupt" REV:path a blob overwritten with junk."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "f", "GIT_AUTHOR_EMAIL": "f@x", "GIT_COMMITTER_NAME": "f",
           "GIT_COMMITTER_EMAIL": "f@x"}

    def git(*a):
        return subprocess.run(["git", "-C", str(p), *a], check=True, capture_output=True, env=env).stdout

    os.makedirs(p, exist_ok=True)
    git("init", "-q", "-b", "main")
    first = True
    for branch, files in spec.items():
        if branch.startswith("_"):
            continue
        if not first:
            git("checkout", "-q", "-b", branch, "main")
        for name, data in files.items():
            f = p / name
            if isinstance(data, tuple):
                with open(f, "wb") as fh:
                    block = b"a" * (1 << 20)
                    left = data[1]
                    while left > 0:
                        fh.write(block[:left])
                        left -= len(block)
            else:
                f.write_bytes(data)
        git("add", "-A")
        git("commit", "-q", "-m", branch)
        first = False
    git("checkout", "-q", "main")
    for name in list(spec.get("main", {})):  # the work tree is not what is compared: keep it small
        (p / name).unlink(missing_ok=True)
    if "_corrupt" in spec:
        sha = git("rev-parse", spec["_corrupt"]).decode().strip()
        obj = p / ".git" / "objects" / sha[:2] / sha[2:]
        os.chmod(obj, 0o644)
        obj.write_bytes(b"\x78\x9cjunk")
    if "_fifo" in spec:
        target = p / ".git" / spec["_fifo"]
        if target.exists():
            target.unlink()
        os.mkfifo(target)


def cleanup(d) -> None:
    """Remove the deep folder chains under a case's folder d, bottom up and without recursion
    (shutil.rmtree recurses once per level); the rest is left to the caller."""
    for top in list(os.scandir(d)) if os.path.isdir(d) else []:
        if not top.is_dir(follow_symlinks=False):
            continue
        depth, fd = 0, os.open(top.path, os.O_RDONLY)
        fds = [fd]
        try:
            while True:
                try:
                    nfd = os.open("d", os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY, dir_fd=fds[-1])
                except OSError:
                    break
                fds.append(nfd)
                depth += 1
            if depth < 50:
                continue
            while len(fds) > 1:  # empty the deepest folder, then remove it from its parent
                inner = fds.pop()
                for e in os.listdir(inner):
                    try:
                        os.unlink(e, dir_fd=inner)
                    except IsADirectoryError:
                        shutil.rmtree(os.path.join(f"/proc/self/fd/{inner}", e), ignore_errors=True)
                os.close(inner)
                os.rmdir("d", dir_fd=fds[-1])
        finally:
            for f in fds:
                try:
                    os.close(f)
                except OSError:
                    pass

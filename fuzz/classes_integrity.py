"""Fuzz classes of false passes, stale replays, and paths and arguments (issue 32).

Registered by fuzz_cli.py (one block there); each generator returns a fuzz_cli.Case, and each
case is run by `run` below (several runs of the CLI, and what each must show), because what
these classes break is an answer, not a crash: "equal" and exit 0 for a damaged log, a
replay of findings whose bytes were edited since, a file read from outside a tree. The
shapes are the issue's own:

  false-pass    a TensorBoard event file of 100 records with one flipped byte, or cut inside
                a record; a Megatron log, a CSV or JSONL export and a trainer_state.json cut
                inside a record; `check` with one side's input (each input kind) missing, a
                FIFO or a link to /dev/zero; `data /dev/zero DIR` (either side). Each with its
                negative case: the intact file is "equal", exit 0.
  stale-replay  two runs of the same `diff`: the first edits a file after it was read and
                before it ends (tools the run's process loads from `.fuzz-between-read-and-end`
                in the case's folder, through `in_child`); the second must show what `--no-cache` shows. Without
                the edit, the second run must print what the first printed.
  paths-args    `collect --root` over a chain of 41-60 links whose last one names the host's
                /etc/os-release (absolute, or `..` climbing past the root); a folder with a link
                to a file or a folder outside it (`diff`, `check scripts=`, `curves`), and one
                inside it (negative); git's external-diff call (7 and 9 arguments) with a file
                named `-o.py`, `--help`, `-h`, `--version`, `diff`, `--format=json` or `-`.

Special files are markers ("special", kind, ...) that write_special() makes in the case's
folder: "chain" (a link chain), "link" (a symbolic link).
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import classes_bounds as shapes

CLASSES = ("false-pass", "stale-replay", "paths-args")

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"
STALE = ".fuzz-stale"  # in a child's folder: the run memo on, the files an hour old for it
EDIT_MARKER = ".fuzz-between-read-and-end"  # and the child edits a file before the run ends (once)
GPU_PY = "import torch\nopt = torch.optim.AdamW(params, lr=3e-4)\n"
NPU_PY = "import torch\nimport torch_npu\nopt = torch.optim.AdamW(params, lr={lr})\n"


# ------------------------------------------------------------------ shapes

def loss_records(n: int = 100) -> list[dict]:
    return [{"loss": round(2.5 - i / 1000, 6)} for i in range(n)]


def record_spans(data: bytes) -> list[tuple[int, int]]:
    """(offset, total length) of each record of an event file's bytes."""
    out, off = [], 0
    while off + 12 <= len(data):
        n = struct.unpack("<Q", data[off:off + 8])[0]
        out.append((off, 12 + n + 4))
        off += 12 + n + 4
    return out


def flipped(data: bytes, pos: int, mask: int = 0x10) -> bytes:
    b = bytearray(data)
    b[pos] ^= mask or 1
    return bytes(b)


def megatron(n: int = 100) -> str:
    return shapes.megatron_log([(s, 2.5 - s / 1000) for s in range(1, n + 1)])


def csv_export(n: int = 100) -> str:
    return "step,loss\n" + "".join(f"{s},{2.5 - s / 1000}\n" for s in range(1, n + 1))


def jsonl_export(n: int = 100) -> str:
    return "".join(json.dumps({"current_steps": s, "loss": 2.5 - s / 1000}) + "\n" for s in range(1, n + 1))


def cut_inside_a_line(text: str, rng) -> str:
    """The text cut inside its last line (never just after a newline); a JSON document (one
    that does not end with a newline) anywhere in its middle half."""
    if not text.endswith("\n"):
        return text[:rng.randrange(len(text) // 4, 3 * len(text) // 4)]
    last = text.rstrip("\n").rfind("\n") + 1
    return text[:rng.randrange(last + 1, len(text) - 1)]


def host_os_name() -> str | None:
    try:
        for line in Path("/etc/os-release").read_text(errors="replace").splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip("'\"") or None
    except OSError:
        return None
    return None


# ------------------------------------------------------------------ the generators

def make_case(cls: str, rng, small: bool, Case):
    if cls == "false-pass":
        return _false_pass(rng, Case)
    if cls == "stale-replay":
        return _stale(rng, Case)
    if cls == "paths-args":
        return _paths(rng, Case)
    raise ValueError(cls)


def _expect(case, **what):
    case.files = {k: v.encode() if isinstance(v, str) else v for k, v in case.files.items()}
    case.expect = what  # read by run(): what this input must show
    return case


def _false_pass(rng, Case):
    cls = "false-pass"
    shape = rng.choice(["tb-flip", "tb-flip", "tb-cut", "tb-intact", "log-cut", "log-cut", "log-intact",
                        "check-side", "check-side", "data-special", "data-intact"])
    if shape.startswith("tb"):
        g = shapes.tensorboard_run(loss_records())
        if g is None:  # no tensorboard here: a Megatron log stands in
            shape = "log-cut" if shape != "tb-intact" else "log-intact"
        else:
            spans = record_spans(g)
            n = g
            if shape == "tb-flip":
                n = flipped(g, rng.randrange(spans[1][0], len(g)), rng.randrange(1, 256))
            elif shape == "tb-cut":
                off, length = spans[rng.randrange(1, len(spans))]
                n = g[:off + rng.randrange(1, length)]
            name = "events.out.tfevents.1.host"
            case = Case(cls, {f"gpu/run/{name}": g, f"npu/run/{name}": n}, ["curves", "gpu/run", "npu/run"])
            return _expect(case, equal=shape == "tb-intact", damaged=f"npu/run/{name}", shape=shape)
    if shape.startswith("log"):
        kind = rng.choice(["train.log", "metrics.csv", "trainer_log.jsonl", "trainer_state.json"])
        text = {"train.log": megatron(), "metrics.csv": csv_export(), "trainer_log.jsonl": jsonl_export(),
                "trainer_state.json": shapes.trainer_state(100, 0.0).decode()}[kind]
        n = text if shape == "log-intact" else cut_inside_a_line(text, rng)
        case = Case(cls, {f"gpu/{kind}": text, f"npu/{kind}": n}, ["curves", f"gpu/{kind}", f"npu/{kind}"])
        return _expect(case, equal=shape == "log-intact", damaged=f"npu/{kind}", shape=f"{shape}:{kind}")
    if shape == "check-side":
        key, npu, name = rng.choice([
            ("launch", (EXAMPLE / "npu" / "pretrain.sh").read_bytes(), "pretrain.sh"),
            ("configs", (EXAMPLE / "npu" / "ds_config.json").read_bytes(), "ds_config.json"),
            ("scripts", None, "scripts"),
            ("logs", megatron().encode(), "train.log"),
            ("packages", (EXAMPLE / "requirements-npu.txt").read_bytes(), "requirements.txt"),
            ("environment", (EXAMPLE / "env-npu.json").read_bytes(), "env.json"),
            ("dataset", None, "data"),
            ("weights", (EXAMPLE / "init-npu.safetensors").read_bytes(), "init.safetensors")])
        files: dict = {}
        if key == "scripts":
            for f in ("pretrain.sh", "train.py", "ds_config.json"):
                files[f"npu/{name}/{f}"] = (EXAMPLE / "npu" / f).read_bytes()
        elif key == "dataset":
            files[f"npu/{name}/train.jsonl"] = (EXAMPLE / "data-npu" / "train.jsonl").read_bytes()
        else:
            files[f"npu/{name}"] = npu
        how = rng.choice(["missing", "fifo", "dev-zero"])
        if how != "missing":
            files[f"gpu/{name}"] = ("special", how)
        case = Case(cls, files, ["check", "--gpu", f"{key}=gpu/{name}", "--npu", f"{key}=npu/{name}"])
        return _expect(case, unknown="gpu", shape=f"check:{key}:{how}")
    if shape == "data-special":
        files = {"d/train.jsonl": (EXAMPLE / "data-npu" / "train.jsonl").read_bytes()}
        special = rng.choice(["/dev/zero", "fifo"])
        if special == "fifo":
            files["f"] = ("special", "fifo")
        path = "/dev/zero" if special == "/dev/zero" else "f"
        argv = ["data", path, "d"] if rng.random() < 0.5 else ["data", "d", path]
        return _expect(Case(cls, files, argv), code=2, lines=1, shape=f"data:{special}")
    files = {"d/train.jsonl": (EXAMPLE / "data-npu" / "train.jsonl").read_bytes()}
    return _expect(Case(cls, files | {"e/train.jsonl": files["d/train.jsonl"]}, ["data", "d", "e"]),
                   code=0, shape="data:intact")


def _stale(rng, Case):
    edit = rng.random() < 0.75
    lr = rng.choice(["1e-4", "2e-4", "3e-5"])
    # in a folder of their own (w/): the fuzzer's result files beside it never change it
    files = {"w/gpu/sub/train.py": GPU_PY, "w/npu/sub/train.py": NPU_PY.format(lr="3e-4"), f"w/{STALE}": ""}
    if edit:  # the same size: only the file's times tell the edit
        files[f"w/{EDIT_MARKER}"] = json.dumps({"path": "npu/sub/train.py", "text": NPU_PY.format(lr=lr)})
    case = Case("stale-replay", files, ["diff", "gpu", "npu"])
    return _expect(case, edit=edit, shape="edit" if edit else "unchanged")


def _paths(rng, Case):
    cls = "paths-args"
    shape = rng.choice(["collect-chain", "collect-chain", "collect-inside", "folder-file", "folder-dir",
                        "folder-inside", "git-external", "git-external"])
    if shape.startswith("collect"):
        files: dict = {"root/usr/lib/os-release": b'PRETTY_NAME="Tree OS 1"\nID=tree\n'}
        if shape == "collect-chain":
            n = rng.randrange(41, 61)
            last = rng.choice(["/etc/os-release", "../" * 12 + "etc/os-release"])
            files["root/etc/os-release"] = ("special", "chain", n, last)
        else:  # a chain under the limit to a file of the tree, through an absolute link: read there
            files["root/etc/os-release"] = ("special", "chain", rng.randrange(1, 30), "/usr/lib/os-release")
        case = Case(cls, files, ["collect", "--root", "root", "-o", "snap.json"], fmt="text")
        return _expect(case, snapshot="snap.json", os_name=None if shape == "collect-chain" else "Tree OS 1",
                       shape=shape)
    if shape.startswith("folder"):
        token = f"OUTSIDE{rng.randrange(10 ** 9)}"
        files = {"outside/b.py": f"lr = 7  # {token}\n", "outside/cfg/c.yaml": f"lr: 7  # {token}\n",
                 "gpu/a.py": "lr = 1\n", "npu/a.py": "lr = 1\n", "npu/b.py": "lr = 1\n", "npu/cfg/c.yaml": "lr: 1\n",
                 "gpu/in/b.py": f"lr = 7  # {token}\n"}
        link = {"folder-file": ("gpu/b.py", "../outside/b.py"), "folder-dir": ("gpu/cfg", "../outside/cfg"),
                "folder-inside": ("gpu/b.py", "in/b.py")}[shape]
        files[link[0]] = ("special", "link", link[1])
        cmd = rng.choice(["diff", "check"])
        argv = ["diff", "gpu", "npu"] if cmd == "diff" else ["check", "--gpu", "scripts=gpu", "--npu", "scripts=npu"]
        hidden = {"folder-file": "file:b.py", "folder-dir": "file:cfg/c.yaml"}.get(shape)  # unknown, not one-sided
        return _expect(Case(cls, files, argv), token=token, inside=shape == "folder-inside", link=link[0],
                       hidden=hidden, shape=f"{shape}:{cmd}")
    name = rng.choice(["-o.py", "--help", "-h", "--version", "diff", "--format=json", "-", "-x.yaml"])
    old, new = ("old/" + name.replace("/", "_"), "new/" + name.replace("/", "_"))
    files = {old: "lr = 1\n", new: "lr = 2\n"}
    argv = [name, old, "a" * 40, "100644", new, "0" * 40, "100644"]
    if rng.random() < 0.3:  # git's rename form: new-path and metadata follow
        argv += [name, f"similarity index 90%\nrename from {name}\nrename to {name}\n"]
    return _expect(Case(cls, files, argv, fmt="text"), header=f"scriptdiff: GPU a/{name}  vs  NPU b/{name}",
                   shape=f"git-external:{name}:{len(argv)}", raw=True)


# ------------------------------------------------------------------ running a case

def run(case, go, d: Path) -> dict:
    """Run `case` (go(argv, sub=None) runs the CLI in a capped child in the case's folder `d`, or
    in its subfolder `sub`, and returns {code, out, err, rss, wall} or {problem}); the result of
    the run that decides, with a "problem" when it did not show what it must."""
    want = case.expect
    if case.cls == "stale-replay":
        return _run_stale(case, go, want)
    argv = list(case.argv)
    if not want.get("raw") and argv[0] in ("curves", "diff", "check", "data"):
        argv = argv[:1] + ["--format", "json"] + argv[1:]
    r = go(argv)
    if "problem" in r:
        return r
    r["problem"] = _judge(case, want, r, d)
    if r["problem"] is None:
        del r["problem"]
    return r


def _judge(case, want: dict, r: dict, d: Path) -> str | None:
    code, out, err = r["code"], r["out"], r["err"]
    doc = None
    if out.strip().startswith("{"):
        try:
            doc = json.loads(out)
        except ValueError:
            return "invalid JSON output"
    if "equal" in want:  # curves: a damaged file is an error and never "equal"
        verdict = ((doc or {}).get("curves") or {}).get("verdict")
        if want["equal"]:
            if (code, verdict) != (0, "equal"):
                return f"an intact log gave exit {code}, verdict {verdict!r} ({want['shape']})"
            return None
        if code == 0 or verdict == "equal":
            return f"a damaged log gave exit {code}, verdict {verdict!r} ({want['shape']})"
        if not any(e["path"] == want["damaged"] for e in (doc or {}).get("errors", [])) \
                and want["damaged"] not in err:
            return f"a damaged log was not named ({want['shape']})"
        return None
    if "unknown" in want:  # check: a side that fails is unknown, never absent
        if code not in (1, 2):
            return f"exit {code} with an unreadable GPU input ({want['shape']})"
        one_sided = [f["rule"] + " " + f["key"] for f in (doc or {}).get("findings", [])
                     if f.get("gpu") is None and f.get("npu") is not None and f["rule"] not in ("SD154", "SD155")]
        if one_sided:
            return f"'on NPU only' beside an unreadable GPU input: {one_sided[0]} ({want['shape']})"
        return None
    if "code" in want:  # data
        if code != want["code"]:
            return f"exit {code}, not {want['code']} ({want['shape']})"
        if want.get("lines") and len(err.strip().splitlines()) != want["lines"]:
            return f"{len(err.strip().splitlines())} error lines, not {want['lines']} ({want['shape']})"
        return None
    if "snapshot" in want:  # collect --root: nothing read from outside the root
        try:
            snap = json.loads((d / want["snapshot"]).read_text())
        except (OSError, ValueError):
            return f"no snapshot written (exit {code}) ({want['shape']})"
        host = host_os_name()
        name = (snap.get("os") or {}).get("name")
        if want["os_name"] is not None and name != want["os_name"]:
            return f"the tree's os-release was not read through its links: {name!r} ({want['shape']})"
        if want["os_name"] is None and host and (name == host or host in json.dumps(snap)):
            return f"the host's /etc/os-release was read through a link chain: {name!r} ({want['shape']})"
        return None
    if "token" in want:  # folder mode: nothing read through a link out of the tree
        seen = want["token"] in out or want["token"] in err
        if want["inside"]:
            return None if seen else f"a link inside the tree was not followed ({want['shape']})"
        if seen:
            return f"a file outside the tree was read through {want['link']} ({want['shape']})"
        if code == 0 or want["link"] not in err + out:
            return f"a link out of the tree was not said (exit {code}) ({want['shape']})"
        if any(f["key"] == want["hidden"] for f in (doc or {}).get("findings", [])):
            return f"{want['hidden']} called one-sided beside a refused link ({want['shape']})"
        return None
    if "header" in want:  # git's external diff: the names are paths, and git goes on (exit 0)
        if code != 0 or want["header"] not in out:
            return f"external diff: exit {code}, no report of the file ({want['shape']}): {err.strip()[:120]}"
    return None


def _findings(out: str) -> list | None:
    """The report's findings as printed (JSON output is sorted and deterministic)."""
    try:
        return json.loads(out).get("findings")
    except (ValueError, AttributeError):
        return None


def _run_stale(case, go, want: dict) -> dict:
    argv = ["diff", "--format", "json", "gpu", "npu"]
    first = go(argv, "w")  # the child edits the file after reading it, before the run ends
    if "problem" in first:
        return first
    second = go(argv, "w")
    if "problem" in second:
        return second
    ref = go(["diff", "--no-cache", "--format", "json", "gpu", "npu"], "w")
    if "problem" in ref:
        return ref
    shown, truth = _findings(second["out"]), _findings(ref["out"])
    if shown is None or shown != truth or second["code"] != ref["code"]:
        second["problem"] = (f"stale replay: the second run shows {len(shown or [])} finding(s), "
                             f"--no-cache {len(truth or [])} ({want['shape']})")
    elif not want["edit"] and second["out"] != first["out"]:
        second["problem"] = "an unchanged run printed something else the second time"
    return second


# ------------------------------------------------------------------ in the child process

def _between_read_and_end() -> None:
    """In the fuzzer's child (its folder holds STALE): turn the run memo on and let the files be
    an hour old for it (its clock, `runmemo._now`, moved on: no racy window); with EDIT_MARKER
    too, edit the marked file after the run read it and 2.1 s before it ends (a slow run). The
    edit marker is removed first, so that later runs in the folder only replay or run."""
    marker = Path(EDIT_MARKER)
    os.environ.pop("SCRIPTDIFF_NO_RUN_MEMO", None)
    import time

    from scriptdiff.commands import runmemo

    runmemo._now = lambda: time.time_ns() + 3600 * 10 ** 9
    if not marker.is_file():
        return
    spec = json.loads(marker.read_text())
    marker.unlink()
    real = runmemo.finish

    def finish(rec, code):
        p = Path(spec["path"])
        st = p.stat()
        p.write_text(spec["text"])
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # its time stamp put back: only ctime moves
        time.sleep(2.1)  # a slow run: the edit is older than the racy window when the run ends
        real(rec, code)

    runmemo.finish = finish


def in_child() -> None:
    """Called by fuzz_cli in each run's own process, in the case's folder, before the CLI runs."""
    if Path(STALE).exists():
        _between_read_and_end()


# ------------------------------------------------------------------ writing special inputs

def write_special(p, marker: tuple) -> bool:
    """Make the special input `marker` at path p; False when it is not one of this module's."""
    kind = marker[1]
    if kind == "chain":  # p -> l1 -> l2 ... -> l{n} -> target, the links beside p
        n, target = marker[2], marker[3]
        for i in range(1, n + 1):
            os.symlink(f"{p.name}.l{i + 1}" if i < n else target, p.parent / f"{p.name}.l{i}")
        os.symlink(f"{p.name}.l1", p)
        return True
    return False


def cleanup(d) -> None:
    """Nothing of this module's needs more than rmtree."""

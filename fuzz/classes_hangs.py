"""Fuzz classes of hostile rule packs and of an object store gone wrong (issue 40).

Registered by fuzz_cli.py (one block there); each generator returns a fuzz_cli.Case and each
class judges its own runs (`run`): what a run must show, not only that it ended.

  pack     a user's pack (`--rules DIR`, or named by `check`'s configuration), of one shape:
             regex       a backtracking expression (`(x+x+)+y`, `(a|aa)+$`, `(\\w+\\s?)+$`) in
                         `secret_values.patterns` with a `not` entry of 40 to 5,000
                         characters, or in a vocabulary key's `from_name`; `diff` then shows
                         values holding long runs of those characters (every shown text is
                         scanned): the run ends, exit 0/1, valid JSON
             lookaround  an expression RE2 cannot run (look-around, a back-reference): one
                         line at the expression's line, exit 2
             big         20,000 to 200,000 vocabulary keys (1.3 to 12.5 MB), or an alias
                         bomb: loaded, or one line naming the pack, exit 2
             kernel      the pack a link to /proc/kmsg (/proc/self/status where absent), in a
                         --rules folder or in check's configuration: one line, exit 2
             paths       `rules --test` of a pack whose example names a file out of its
                         folder (`gpu_name: ../../...`, an absolute path, a dumps example's
                         key): nothing is written there (a canary path under the temporary
                         folder must not exist afterwards)
  storage  `data fingerprint s3://...` against a local S3 server (tests/servers.py: moto,
           started once per fuzz run) behind a relay (S3Relay) that, in turn, stalls every
           request, stalls one object's reads, replaces an object between two of its reads
           (a small one between its sniff and its hash, or one larger than a ranged read
           between two chunks), or lists keys with `..`, `.` or empty parts. Under
           SCRIPTDIFF_STORAGE_TIMEOUT=2 the run must end with one line naming the prefix or
           the object (exit 2); every manifest entry must be the fingerprint of the version
           listed (a local copy of it fingerprinted the same way), or the replaced object
           fails, named (exit 2); no entry may be a path out of the prefix.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import uuid
from pathlib import Path

CLASSES = ("pack", "storage")
ROOT = Path(__file__).resolve().parent.parent
PACK_SHAPES = ("regex", "lookaround", "big", "kernel", "paths")
STORE_SHAPES = ("stall", "stall-object", "replace", "replace-large", "keys")
DEADLINE = "2"  # SCRIPTDIFF_STORAGE_TIMEOUT of a storage run: a stall ends well inside the fuzzer's cap

# (expression, an example it finds, the character a long run of which it backtracks on)
BACKTRACKING = [("(x+x+)+y", "xxy", "x"), ("(a|aa)+$", "aa", "a"), ("(\\w+\\s?)+$", "ab cd", "w")]
NOT_RE2 = ["(?<![0-9])x+y", "x+(?=y)", "(?!a)x+", "(x)\\1y", "(?<=a)x"]


def _kernel_file() -> str:
    return "/proc/kmsg" if os.path.exists("/proc/kmsg") else "/proc/self/status"


# ------------------------------------------------------------------ pack

def _regex_pack(rng, small: bool) -> tuple[str, str, str]:
    rx, found, ch = rng.choice(BACKTRACKING)
    run = ch * rng.choice([40, 400] if small else [40, 400, 5000])
    tail = "!" if ch != "x" else ""
    where = rng.choice(["secret", "from_name"])
    if where == "secret":
        pack = ("secret_values:\n  patterns:\n"
                f"    - name: slow\n      regex: {json.dumps(rx)}\n      examples: [{json.dumps(found)}]\n"
                f"      not: [{json.dumps(run + tail)}]\n")
    else:
        pack = ("vocabulary:\n  orbit_stage:\n    category: distributed\n    type: int\n"
                f"    from_name: {{kind: deepspeed, pattern: {json.dumps('(' + rx.replace('(', '(?:') + ')')}}}\n")
    return pack, run + tail, where


def make_pack(rng, small: bool, Case):
    shape = rng.choice(PACK_SHAPES)
    files = {"gpu/run.sh": b"torchrun train.py --lr 1\n", "npu/run.sh": b"torchrun train.py --lr 2\n"}
    if shape == "regex":
        pack, run, where = _regex_pack(rng, small)
        files["team/p.yaml"] = pack.encode()
        files["gpu/run.sh"] = f"torchrun train.py --lr 1 --tag {run} --deepspeed {run}.json\n".encode()
        files["npu/run.sh"] = f"torchrun train.py --lr 2 --tag {run}y --deepspeed {run}y.json\n".encode()
        case = Case("pack", files, ["diff", "--format", "json", "--rules", "team", "gpu/run.sh", "npu/run.sh"],
                    fmt="text")
        case.expect = {"shape": f"regex:{where}", "codes": (0, 1)}
        return case
    if shape == "lookaround":
        rx = rng.choice(NOT_RE2)
        files["team/p.yaml"] = (f"secret_values:\n  patterns:\n    - name: around\n      regex: {json.dumps(rx)}\n"
                                f"      examples: [xy]\n").encode()
        case = Case("pack", files, ["rules", "--rules", "team"], fmt="text")
        case.expect = {"shape": f"lookaround:{rx}", "codes": (2,), "line": "team/p.yaml:4: secret_values.patterns[0]"
                       ".regex: not an expression RE2 runs"}
        return case
    if shape == "big":
        if rng.random() < 0.3:
            lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
            lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, rng.choice([4, 6, 8]))]
            files["team/p.yaml"] = ("\n".join(lines) + "\n").encode()
            what = "alias-bomb"
        else:
            keys = rng.choice([2_000, 20_000] if small else [20_000, 60_000, 200_000])
            files["team/p.yaml"] = ("vocabulary:\n" + "".join(
                f"  key_{i:07d}: {{category: optimizer, type: float, aliases: [k{i:07d}]}}\n"
                for i in range(keys))).encode()
            what = f"{keys}-keys"
        case = Case("pack", files, ["rules", "--rules", "team"], fmt="text")
        case.expect = {"shape": f"big:{what}", "codes": (0, 2), "line": "team/p.yaml:1: "}
        return case
    if shape == "kernel":
        via = rng.choice(["rules", "check"])
        files["team/k.yaml"] = ("special", "pack-link", _kernel_file())
        if via == "check":
            files["scriptdiff.toml"] = (b'rules = ["team/k.yaml"]\n[gpu]\nlaunch = ["gpu/run.sh"]\n'
                                        b'[npu]\nlaunch = ["npu/run.sh"]\n')
            case = Case("pack", files, ["check"], fmt="text")
        else:
            case = Case("pack", files, ["rules", "--rules", "team"], fmt="text")
        case.expect = {"shape": f"kernel:{via}", "codes": (2,), "line": "team/k.yaml:1: cannot read rule pack: "}
        return case
    # paths: an example that names a file out of its temporary folder
    canary = os.path.join(tempfile.gettempdir(), f"sdfuzz-canary-{uuid.UUID(int=rng.getrandbits(128)).hex}")
    how = rng.choice(["relative", "absolute", "dumps"])
    up = "../" * 40 + canary.lstrip("/")
    if how == "dumps":
        pack = ("example_modes:\n  SDX102: dumps\n"
                "rules:\n  - code: SDX102\n    name: orbit-dump\n    check: dumps\n    severity: error\n"
                "    summary: s\n    doc: d\n    examples:\n"
                f"      - {{lang: json, gpu_name: bundle.json, npu_name: bundle.json, fires: true, "
                f"gpu: {json.dumps(json.dumps({up: 'OVERWRITTEN'}))}, npu: '{{}}'}}\n"
                "      - {lang: json, gpu_name: bundle.json, npu_name: bundle.json, fires: false, gpu: '{}', npu: '{}'}\n")
    else:
        # a folder of its own under the canary name: the example's writer makes the folders it needs
        name = (up if how == "relative" else canary) + "/x.sh"
        pack = ("launchers:\n  entries:\n    - {name: orbit, commands: [orbit], subcommands: [fit], program: subcommand}\n"
                "vocabulary:\n  orbit_kernel: {category: orbit_kernels, type: str, aliases: [kernel_impl]}\n"
                "categories:\n  orbit_kernels: {rule: SDX101, title: orbit kernels}\n"
                "rules:\n  - code: SDX101\n    name: orbit-kernel\n    check: hyperparameters\n    severity: warning\n"
                "    summary: s\n    doc: d\n    examples:\n"
                f"      - {{lang: shell, gpu_name: {json.dumps(name)}, gpu: \"orbit fit --kernel-impl fused\\n\", "
                f"npu: \"orbit fit --kernel-impl eager\\n\", fires: true}}\n"
                f"      - {{lang: shell, npu_name: {json.dumps(name)}, gpu: \"orbit fit --kernel-impl fused\\n\", "
                f"npu: \"orbit fit --kernel-impl fused\\n\", fires: false}}\n")
    files["team/p.yaml"] = pack.encode()
    case = Case("pack", files, ["rules", "--test", "team"], fmt="text")
    case.expect = {"shape": f"paths:{how}", "codes": (0, 1, 2), "canary": canary}
    return case


def run_pack(case, go, d: Path) -> dict:
    want = case.expect
    r = go(case.argv)
    canary = want.get("canary")
    escaped = sorted(str(p) for p in Path(canary).parent.glob(Path(canary).name + "*")) if canary else []
    for p in escaped:  # never left behind, whatever the verdict
        shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
    if "problem" in r:
        return r
    code, out, err = r["code"], r["out"], r["err"]
    problem = None
    if "Traceback" in err or "internal error" in err:
        problem = err.strip().splitlines()[-1]
    elif escaped:
        problem = f"an example wrote out of its folder: {escaped[0]} ({want['shape']})"
    elif code not in want["codes"]:
        problem = f"exit {code}, not {' or '.join(map(str, want['codes']))} ({want['shape']}): {err.strip()[:160]}"
    elif code == 2 and len(err.strip().splitlines()) != 1:
        problem = f"{len(err.strip().splitlines())} lines on standard error, not one ({want['shape']})"
    elif code == 2 and want.get("line") and want["line"] not in err:
        problem = f"the refusal does not name {want['line']!r} ({want['shape']}): {err.strip()[:160]}"
    elif case.argv[0] == "diff":
        try:
            doc = json.loads(out)
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or doc.get("schema") != 1:
            problem = f"no JSON report ({want['shape']})"
    return _with(r, problem)


# ------------------------------------------------------------------ storage

_SERVER = None
_SERVER_LOCK = threading.Lock()


def _servers():
    sys.path.insert(0, str(ROOT / "tests"))
    import servers

    return servers


def _server():
    """The local S3 server of this fuzz run, started on first use (stopped when the run ends)."""
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is None:
            _SERVER = _servers().S3Server().start()
        return _SERVER


def make_storage(rng, small: bool, Case):
    shape = rng.choice(STORE_SHAPES if not small else STORE_SHAPES[:3] + ("keys",))
    objects = {f"corpus/part-{i}.jsonl": "".join(f'{{"text": "doc {i}-{j}"}}\n'
                                                 for j in range(rng.choice([1, 50, 2000]))).encode()
               for i in range(rng.choice([1, 2, 4]))}
    target = rng.choice(sorted(objects))
    plan = {"shape": shape, "target": target, "after": rng.choice([1, 2, 3])}
    if shape == "replace-large":
        plan["after"] = rng.choice([2, 3])  # past the sniff, between two ranged reads of 8 MiB
        objects[target] = b"a" * (8 * 1024 * 1024 + rng.choice([10, 1000, 300_000]))
    if shape == "keys":
        bad = rng.choice(["corpus/../../x.jsonl", "corpus//y.jsonl", "corpus/./z.jsonl", "corpus/a/../w.jsonl",
                          "corpus/../corpus/v.jsonl"])
        plan["bad"] = bad
        objects[bad] = b'{"text": "out"}\n'
    case = Case("storage", {}, ["data", "fingerprint", "s3://BUCKET/corpus"], fmt="text")
    case.store = {"objects": objects, "plan": plan}
    return case


def _plain(rel: str) -> bool:
    return bool(rel) and all(p not in ("", ".", "..") for p in rel.split("/"))


def run_storage(case, go, d: Path) -> dict:
    try:
        servers = _servers()
        server = _server()
    except Exception as e:  # no moto, or the server did not start: the class cannot run here
        return {"problem": f"the local S3 server is not available: {type(e).__name__}: {e}"}
    objects, plan = case.store["objects"], case.store["plan"]
    bucket = "sdfuzz-" + uuid.uuid4().hex[:20]
    s3 = server.client()
    s3.create_bucket(Bucket=bucket)
    relay = servers.S3Relay(server).start()
    try:
        for key, body in objects.items():
            s3.put_object(Bucket=bucket, Key=key, Body=body)
        listed = {k[len("corpus/"):]: v for k, v in objects.items() if _plain(k[len("corpus/"):])}
        for rel, body in listed.items():  # the local copy of what the listing shows
            p = d / "listed" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(body)
        ref = go(["data", "fingerprint", "listed"])
        if "problem" in ref or ref["code"] != 0:
            return ref if "problem" in ref else {**ref, "problem": f"the local copy did not fingerprint: {ref['err'][:160]}"}
        want = json.loads(ref["out"])["files"]
        shape, target = plan["shape"], f"{bucket}/{plan['target']}"
        if shape == "stall":
            relay.stall = True
        elif shape == "stall-object":
            relay.stall = target
        elif shape.startswith("replace"):
            relay.replace(target, objects[plan["target"]][::-1] + b"changed\n", after=plan["after"])
        env_url = f"s3://{bucket}/corpus"
        r = go(["data", "fingerprint", env_url], variables={**relay.env(), "SCRIPTDIFF_STORAGE_TIMEOUT": DEADLINE})
    finally:
        relay.stop()
        for key in objects:
            s3.delete_object(Bucket=bucket, Key=key)
        s3.delete_bucket(Bucket=bucket)
    return r if "problem" in r else _with(r, _judge_storage(plan, r, want, bucket))


def _with(r: dict, problem: str | None) -> dict:
    """The run `r`, with its problem when the judge found one."""
    return {**r, "problem": problem} if problem else r


def _judge_storage(plan: dict, r: dict, want: dict, bucket: str) -> str | None:
    code, out, err = r["code"], r["out"], r["err"]
    shape, rel = plan["shape"], plan["target"][len("corpus/"):]
    lines = err.strip().splitlines()
    if "Traceback" in err or "internal error" in err:
        return lines[-1] if lines else "internal error"
    try:
        got = json.loads(out)["files"] if out.strip() else None
    except (ValueError, KeyError, TypeError):
        return f"invalid manifest ({shape})"
    if got is not None:
        for name, entry in got.items():
            if not _plain(name):
                return f"a manifest entry out of the prefix: {name!r} ({shape})"
            ref = want.get(name)
            if ref is None or (entry.get("hash"), entry.get("size")) != (ref.get("hash"), ref.get("size")):
                return f"{name}: not the fingerprint of the version listed ({shape})"
    if shape in ("stall", "stall-object"):
        named = f"s3://{bucket}/corpus" if shape == "stall" else rel
        if code != 2 or not any(ln.startswith(f"scriptdiff: {named}: ") and "did not answer within" in ln
                                for ln in lines):
            return f"a stalled store gave exit {code} without naming {named} ({shape}): {err.strip()[:160]}"
        return None
    if shape.startswith("replace"):
        if code == 0 and got is not None and rel in got:
            return None  # read whole before the replacement: the listed version (checked above)
        if code == 2 and any(ln.startswith((f"scriptdiff: s3://{bucket}/corpus: ", f"scriptdiff: {rel}: "))
                             and "did not answer within" in ln for ln in lines):
            return None  # a loaded machine's local store missed the deadline first: named, never a hash of neither
        if code != 2 or not any(ln.startswith(f"scriptdiff: {rel}: changed while being read") for ln in lines):
            return f"a replaced object gave exit {code} without naming it ({shape}): {err.strip()[:160]}"
        return None
    # keys
    if code == 2 and any(ln.startswith(f"scriptdiff: s3://{bucket}/corpus: ") and "did not answer within" in ln
                         for ln in lines):
        return None  # the listing missed the deadline on a loaded machine: named, nothing hashed
    if code != 0 or got is None or sorted(got) != sorted(want):
        return f"exit {code}, files {sorted(got or [])} ({shape}: {plan['bad']})"
    if not any(plan["bad"] in ln and "not a plain relative path" in ln for ln in lines):
        return f"the key {plan['bad']!r} was not named ({shape})"
    return None


# ------------------------------------------------------------------ the module's interface

def make_case(cls: str, rng, small: bool, Case):
    return make_pack(rng, small, Case) if cls == "pack" else make_storage(rng, small, Case)


def run(case, go, d: Path) -> dict:
    return run_pack(case, go, d) if case.cls == "pack" else run_storage(case, go, d)


def write_special(p, marker: tuple) -> bool:
    """Make the special input `marker` at path p; False when it is not one of this module's."""
    if marker[1] == "pack-link":
        os.symlink(marker[2], p)
        return True
    return False


def cleanup(d) -> None:
    """Nothing of this class outlives its temporary folder (run_pack removes a canary)."""

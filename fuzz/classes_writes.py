"""Fuzz classes of writes where nothing may be written (issue 40): `fix` and `init`, the two
commands that change a file of the user's project.

Registered by fuzz_cli.py (one block there). Each case is a small project; `run` below puts it
into its state (git commands, links, modes) in the case's folder, photographs every file, runs
the command, and judges the outcome against the promise:

  fix-writes   a GPU/NPU pair (a Python call, a launch script, a YAML, JSON or TOML config) with
               one differing value, the NPU file in one state: committed in a git repository, in
               no repository, with uncommitted edits, untracked, git-ignored, marked
               skip-worktree or assume-unchanged, in a repository git refuses to read (dubious
               ownership), with a damaged index, a tracked link whose target has uncommitted
               edits, a link to a file outside the NPU side, a file with another name (a hard
               link), a read-only file; sometimes --force. A state git vouches for (or --force on
               a git state) is fixed: exit 0, the file holds the GPU value and nothing else moved
               (a comment stays on the line of the keyword it was written for). Any other is
               refused: exit 1, the NPU file named with the reason, and no file of the case
               changed (links, modes and other names as they were).
  init-config  gpu/ and npu/ beside an existing configuration: a pyproject.toml (plain, a
               tool table of another tool, dotted tool keys, CRLF line breaks, an inline tool
               table, scriptdiff configured as an inline table, dotted keys, spaced or quoted
               headers, latin-1, not valid TOML, a mutation of any of them), a scriptdiff.toml
               or pyproject.toml that is a link out of the project (dangling or not), a hard
               link, a read-only file. Exit 0 only with a configuration file that is valid TOML,
               keeps what the file held and adds [tool.scriptdiff] gpu and npu (in the file's
               line breaks); otherwise exit 2 with one line naming the file, and the file as it
               was. Nothing outside the project is ever written.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

CLASSES = ("fix-writes", "init-config")
GIT_ENV_MARKER = ".fuzz-git-env"  # in a run's folder: environment variables its git sees (dubious ownership)
GIT_STATES = ("dirty", "untracked", "ignored", "skip-worktree", "assume-unchanged", "dubious", "index")
STATES = ("committed", "committed", "no-repo", "no-repo", "link-dirty", "link-out", "hardlink", "readonly") + GIT_STATES
# each refused state and a word its reason must have
REASON = {"dirty": "uncommitted", "untracked": "uncommitted", "ignored": "ignored by git",
          "skip-worktree": "skip-worktree", "assume-unchanged": "assume-unchanged", "dubious": "does not read",
          "index": "does not read", "link-dirty": "uncommitted", "link-out": "outside the NPU side",
          "hardlink": "other name", "readonly": "read-only"}

# (file name, GPU text, NPU text, the NPU text fixed): one value differs; {g}/{n} the values' texts
FILES = {
    "python": ("train.py", "import torch\nopt = torch.optim.AdamW(params, lr={g}, eps=1e-8)\n",
               "import torch\nopt = torch.optim.AdamW(params, lr={n}, eps=1e-8)\n"),
    "shell": ("run.sh", "torchrun train.py --lr {g} --seed 1\n", "torchrun train.py --lr {n} --seed 1\n"),
    "yaml": ("config.yaml", "lr: {g}\nseed: 1\n", "lr: {n}\nseed: 1\n"),
    "json": ("ds_config.json", '{{"train_batch_size": {g}, "steps_per_print": 10}}\n',
             '{{"train_batch_size": {n}, "steps_per_print": 10}}\n'),
    "toml": ("train.toml", "lr = {g}\nseed = 1\n", "lr = {n}\nseed = 1\n"),
}
# a keyword added after one a comment follows (the comment stays with its keyword)
COMMENTED = ("train.py", "import torch\nopt = torch.optim.AdamW(\n    params,\n    lr=1e-4,  # {c}\n"
                         "    weight_decay={g},\n)\n",
             "import torch\nopt = torch.optim.AdamW(\n    params,\n    lr=1e-4,  # {c}\n)\n")


def make_case(cls: str, rng, small: bool, Case):
    return _fix(rng, Case) if cls == "fix-writes" else _init(rng, Case)


def _expect(case, **what):
    case.files = {k: v.encode() if isinstance(v, str) else v for k, v in case.files.items()}
    case.expect = what
    return case


# ------------------------------------------------------------------ fix

def _fix(rng, Case):
    state = rng.choice(STATES)
    force = state in GIT_STATES + ("link-dirty",) and rng.random() < 0.25
    if rng.random() < 0.2:
        name, gpu, npu = COMMENTED
        g, c = rng.choice(["0.1", "0.05", "0.2"]), rng.choice(["lr", "the base rate", "tuned, see #12"])
        gpu, npu = gpu.format(g=g, c=c), npu.format(c=c)
        fixed = None  # the keyword is added: judged by its lines
    else:
        kind = rng.choice(sorted(FILES))
        name, gpu, npu = FILES[kind]
        pick = ["16", "32", "64"] if kind == "json" else ["1e-4", "2e-4", "3e-5", "0.001"]
        g, n = rng.sample(pick, 2)
        gpu, npu, fixed = gpu.format(g=g), npu.format(n=n), npu.format(n=g)
    files = {f"gpu/{name}": gpu, f"npu/{name}": npu, "outside/keep.txt": "outside\n"}
    where = f"npu/{name}"
    if state in ("link-dirty", "link-out"):  # npu/NAME is a link; the file it names holds the NPU text
        target = "npu/launch/" + name if state == "link-dirty" else "outside/" + name
        files[target] = npu
        files[where] = ("special", "link", os.path.relpath(target, "npu"))
        where = target
    argv = ["fix", "-f", "json"] + (["--force"] if force else [])
    return _expect(Case("fix-writes", files, argv + [f"gpu/{name}", f"npu/{name}"]), state=state, force=force,
                   name=name, where=where, npu=npu, fixed=fixed)


def _git(d: Path, *args: str, env: dict | None = None) -> None:
    subprocess.run(["git", "-c", "user.name=f", "-c", "user.email=f@f", "-c", "core.autocrlf=false", *args], cwd=d,
                   check=True, capture_output=True, env=env)


def _prepare_fix(want: dict, d: Path) -> None:
    """Put the case's folder into its state."""
    state, where = want["state"], d / want["where"]
    if state in ("no-repo", "link-out", "hardlink", "readonly"):
        if state == "hardlink":
            os.link(where, d / "outside" / "other-name")
        if state == "readonly":
            os.chmod(where, 0o444)
        return
    _git(d, "init", "-q")
    if state == "ignored":
        (d / ".gitignore").write_text("npu/\n")
    if state == "untracked":
        _git(d, "add", "gpu", "outside")
    else:
        _git(d, "add", "-A")
    _git(d, "commit", "-q", "-m", "port")
    if state in ("dirty", "link-dirty", "skip-worktree", "assume-unchanged", "dubious"):
        if state in ("skip-worktree", "assume-unchanged"):
            _git(d, "update-index", f"--{state}", os.path.relpath(where, d))
        edit = " \n" if want["name"].endswith(".json") else "# edited\n"  # a change of nothing the run reads
        where.write_text(want["npu"] + edit)
        want["npu"] += edit
        want["fixed"] = want["fixed"] and want["fixed"] + edit
    if state == "dubious":  # git's own switch: the repository is another user's
        (d / GIT_ENV_MARKER).write_text(json.dumps({"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"}))
    if state == "index":
        (d / ".git" / "index").write_bytes(b"DIRC\x00\x00\x00\x02garbage")


def _photo(d: Path) -> dict:
    """Every entry of the case's folder (out of .git and the cache): a link's target, a file's
    bytes, mode and inode."""
    out = {}
    for top, dirs, files in os.walk(d):
        dirs[:] = [x for x in dirs if x not in (".git", ".cache")]
        for f in files:
            p = Path(top) / f
            rel = str(p.relative_to(d))
            st = os.lstat(p)
            out[rel] = ("link", os.readlink(p)) if stat.S_ISLNK(st.st_mode) else \
                ("file", p.read_bytes(), stat.S_IMODE(st.st_mode), st.st_ino)
    return out


def _judge_fix(want: dict, r: dict, before: dict, after: dict) -> str | None:
    state, code = want["state"], r["code"]
    try:
        doc = json.loads(r["out"])
    except ValueError:
        return "fix -f json printed no JSON"
    decisions = [f["fix"] for f in doc.get("findings", []) if f["severity"] in ("error", "warning")]
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    allowed = state in ("committed", "no-repo") or (want["force"] and state in GIT_STATES + ("link-dirty",))
    if allowed:
        if code != 0 or not decisions or not all(x["fixed"] for x in decisions):
            why = [x.get("reason") for x in decisions if not x["fixed"]]
            return f"fix ({state}{', --force' if want['force'] else ''}) did not fix it: exit {code}, {why[:1]}"
        if changed != [want["where"]]:
            return f"fix ({state}) changed {changed}, not just {want['where']}"
        new = after[want["where"]]
        if new[0] != "file" or new[2] != before[want["where"]][2]:
            return f"fix ({state}) did not keep {want['where']} a file of its mode"
        text = new[1].decode()
        if want["fixed"] is not None and text != want["fixed"]:
            return f"fix ({state}) wrote {text!r}, not {want['fixed']!r}"
        if want["fixed"] is None:  # a keyword added: every comment line of the file is still there, whole
            lost = [ln for ln in want["npu"].splitlines() if "#" in ln and ln not in text.splitlines()]
            if lost:
                return f"fix moved a comment away from its keyword: {lost[0]!r} is gone"
        return None
    if code != 1:
        return f"fix in state {state} gave exit {code}, not 1 (refused)"
    if changed:
        return f"fix in state {state} changed {changed}"
    refused = [x for x in decisions if not x["fixed"]]
    if not refused or any(x["why"] not in ("file", "outside") for x in refused):
        return f"fix in state {state}: not refused for its file ({[x.get('why') for x in refused]})"
    name = "npu/" + want["name"]
    reason = refused[0]["reason"] or ""
    if name not in reason or REASON[state] not in reason or "\n" in reason:
        return f"fix in state {state}: the reason does not name {name} and why in one line: {reason!r}"
    return None


# ------------------------------------------------------------------ init

PYPROJECTS = {
    "plain": '[project]\nname = "port"\nversion = "1"\n',
    "other-tool": '[project]\nname = "port"\n\n[tool.black]\nline-length = 88\n',
    "dotted-tool": 'tool.black.line-length = 88\n\n[project]\nname = "port"\n',
    "tool-table": '[tool]\nblack = {line-length = 88}\n\n[project]\nname = "port"\n',
    "no-newline": '[project]\nname = "port"',
    "inline-tool": 'tool = {black = {line-length = 88}}\n[project]\nname = "port"\n',
    "configured-inline": 'tool = {scriptdiff = {gpu = {scripts = ["gpu"]}, npu = {scripts = ["npu"]}}}\n',
    "configured-dotted": 'tool.scriptdiff.gpu.scripts = ["gpu"]\ntool.scriptdiff.npu.scripts = ["npu"]\n',
    "configured-spaced": '[ tool . scriptdiff . gpu ]\nscripts = ["gpu"]\n[ tool . scriptdiff . npu ]\nscripts = ["npu"]\n',
    "configured-quoted": '[tool."scriptdiff".gpu]\nscripts = ["gpu"]\n[tool . "scriptdiff" . npu]\nscripts = ["npu"]\n',
    "invalid": '[project\nname = "port"\n',
}
INIT_SHAPES = tuple(PYPROJECTS) + ("mutated", "mutated", "crlf", "latin-1", "toml-link", "toml-dangling",
                                   "pyproject-link", "pyproject-dangling", "hardlink", "readonly")
GOOD = ("plain", "other-tool", "dotted-tool", "tool-table", "no-newline", "crlf")  # init must write these


def _init(rng, Case):
    shape = rng.choice(INIT_SHAPES)
    files = {"proj/gpu/run.sh": "torchrun train.py --lr 1e-4\n", "proj/npu/run.sh": "torchrun train.py --lr 2e-4\n",
             "outside/keep.toml": '[project]\nname = "elsewhere"\n'}
    text = PYPROJECTS.get(shape) or PYPROJECTS[rng.choice(["plain", "other-tool", "dotted-tool", "tool-table"])]
    data = text.encode()
    if shape == "mutated":
        data = _mutate(rng, data)
    elif shape == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif shape == "latin-1":
        data = data.replace(b'"port"', '"café"'.encode("latin-1"))
    config = "pyproject.toml"
    if shape in ("toml-link", "toml-dangling"):
        config = "scriptdiff.toml"
        files["proj/scriptdiff.toml"] = ("special", "link", "../outside/" + ("keep.toml" if shape == "toml-link"
                                                                                 else "new.toml"))
    elif shape in ("pyproject-link", "pyproject-dangling"):
        files["proj/pyproject.toml"] = ("special", "link", "../outside/" + ("keep.toml" if shape == "pyproject-link"
                                                                                else "new.toml"))
    else:
        files["proj/pyproject.toml"] = data
    argv = ["init"] + (["--force"] if shape == "toml-link" else [])
    case = Case("init-config", files, argv, fmt="text")
    return _expect(case, shape=shape, config=config)


def _mutate(rng, data: bytes) -> bytes:
    op = rng.randrange(5)
    i = rng.randrange(len(data) + 1)
    if op == 0:
        return data[:i]
    if op == 1:
        return data[:i] + rng.choice([b"[", b"]", b"{", b"}", b"=", b'"', b"\n", b".", b"#", b"\\"]) + data[i:]
    if op == 2:
        lines = data.splitlines(keepends=True)
        k = rng.randrange(len(lines))
        return b"".join(lines[:k + 1] + lines[k:])
    if op == 3:
        return data + rng.choice([b"[tool]\n", b"tool = 1\n", b"[tool.scriptdiff]\n", b"tool.x = {}\n"])
    return data[:i] + b"\x00" + data[i:]


def _prepare_init(want: dict, d: Path) -> None:
    p = d / "proj" / "pyproject.toml"
    if want["shape"] == "hardlink":
        os.link(p, d / "outside" / "other-name.toml")
    if want["shape"] == "readonly":
        os.chmod(p, 0o444)


def _toml(data: bytes):
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None


def _judge_init(want: dict, r: dict, before: dict, after: dict) -> str | None:
    shape, code, err = want["shape"], r["code"], r["err"]
    rel = "proj/" + want["config"]
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    if any(not k.startswith("proj/") for k in changed):
        return f"init ({shape}) wrote outside the project: {changed}"
    old = before.get(rel)
    old_data = _toml(old[1]) if old and old[0] == "file" else None
    if code == 0:
        if changed != [rel]:
            return f"init ({shape}) changed {changed}, not just {rel}"
        new = after[rel]
        if new[0] != "file":
            return f"init ({shape}) left {rel} a link"
        data = _toml(new[1])
        if data is None:
            return f"init ({shape}) exit 0 and {rel} is not valid TOML"
        conf = data.get("tool", {}).get("scriptdiff", data) if rel.endswith("pyproject.toml") else data
        if not isinstance(conf, dict) or not {"gpu", "npu"} <= set(conf):
            return f"init ({shape}) exit 0 and {rel} has no gpu and npu tables"
        if old_data is not None and rel.endswith("pyproject.toml"):
            data["tool"].pop("scriptdiff")
            if not data["tool"] and "tool" not in old_data:
                data.pop("tool")
            if data != old_data:
                return f"init ({shape}) changed what {rel} held"
        if old and b"\r\n" in old[1] and new[1].count(b"\n") != new[1].count(b"\r\n"):
            return f"init ({shape}) wrote LF lines into a CRLF file"
        return None
    if code != 2:
        return f"init ({shape}) gave exit {code}"
    if changed:
        return f"init ({shape}) refused and still changed {changed}"
    lines = err.strip().splitlines()
    if len(lines) != 1 or not lines[0].startswith("scriptdiff: init: ") or want["config"] not in lines[0]:
        return f"init ({shape}) refused without one line naming {want['config']}: {err.strip()[:200]!r}"
    if shape in GOOD:
        return f"init refused a pyproject.toml it can take ({shape}): {lines[0]}"
    return None


# ------------------------------------------------------------------ running a case

def run(case, go, d: Path) -> dict:
    want = case.expect
    if case.cls == "fix-writes":
        _prepare_fix(want, d)
        before = _photo(d)
        r = go(case.argv)
        if "problem" not in r:
            r["problem"] = _judge_fix(want, r, before, _photo(d))
    else:
        _prepare_init(want, d)
        before = _photo(d)
        r = go(case.argv, "proj")
        if "problem" not in r:
            r["problem"] = _judge_init(want, r, before, _photo(d))
    if r.get("problem") is None:
        r.pop("problem", None)
    return r


def in_child() -> None:
    """In each run's process, in its folder: the environment its git must see (the fix-writes
    state of a repository git refuses to read)."""
    if Path(GIT_ENV_MARKER).is_file():
        os.environ.update(json.loads(Path(GIT_ENV_MARKER).read_text()))


def write_special(p, marker: tuple) -> bool:
    return False


def cleanup(d) -> None:
    """Read-only files are removed with their folder (rmtree needs nothing more)."""

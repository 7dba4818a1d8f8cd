"""`scriptdiff init`: from a project that holds a GPU setup and its NPU port to a configuration
that `scriptdiff check` finds by itself.

The project is walked (the folders rules/pairing.yaml skips are skipped) and its two sides
are found by the pairing rules, the same rules that pair the files of two folders:

  trees     two folders beside each other named by `dir_renames` (gpu/ and npu/, cuda/ and
            npu/, gpu/ and ascend/): `scripts` of each side, and each launch script in them
            (a kind that starts a run) its `launch`
  siblings  two files or folders beside each other whose names pair by `name_renames`
            (train.py and train_npu.py, pretrain.sh and pretrain_npu.sh, env-gpu.json and
            env-npu.json): each is the input its kind says (a launch script `launch`, Python
            `scripts`, a config `configs`, a log `logs`, a snapshot `environment`, a package
            list `packages`, a manifest or data `dataset`, a checkpoint or fingerprint
            `weights`)

What a project does not hold (a machine's environment, where its data and its initial
checkpoint live) is named as the file the printed command writes on each machine
(`scriptdiff collect -o env-gpu.json`, `data fingerprint`, `weights fingerprint`); `check`
then reads it once it is there. Nothing here prints: `commands/init.py` does.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import tomlkit

from .. import budget
from .checkrun import INPUT_KEYS, MACHINE, find_config, toml_reader
from ..model import Options, UsageError
from ..report.values import safe
from ..run.pairing import candidates, pairing_rules
from ..run.pipeline import diff_files
from ..ruleset.registry import detect
from ..inputs import writeback
from ..inputs.jsonload import JSONError, check_depth
from ..inputs.sources import SourceError, read_path
from ..inputs.walk import skipped
from ..run.pairing import skip_dirs

DATA_SUFFIXES = (".jsonl", ".ndjson", ".parquet", ".arrow", ".idx", ".csv", ".tsv")


@dataclass
class Plan:
    """What `init` found and will write: each side's inputs by key, where they came from, the
    commands each machine runs, and the configuration file."""

    root: str
    inputs: dict[str, dict[str, list[str]]] = field(default_factory=lambda: {"gpu": {}, "npu": {}})
    found: list[tuple[str, str, str]] = field(default_factory=list)  # (key, GPU path, NPU path)
    # side -> [(key, command)]: what each machine runs to write the file its key names
    commands: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: {"gpu": [], "npu": []})
    folders: int = 0  # folders looked into (budget.INIT_FOLDERS)
    notes: list[str] = field(default_factory=list)
    target: str = ""  # the configuration file written (pyproject.toml or scriptdiff.toml)
    text: str = ""  # what is written to it (appended to pyproject.toml)
    before: bytes | None = None  # the target's bytes as read (None: a new file)
    data: bytes = b""  # the target's whole new content
    refusal: str = ""  # why the target cannot take the configuration (`write` refuses; --dry-run shows it)

    def add(self, key: str, gpu: str, npu: str) -> None:
        for side, path in (("gpu", gpu), ("npu", npu)):
            paths = self.inputs[side].setdefault(key, [])
            if path not in paths:
                paths.append(path)
        self.found.append((key, gpu, npu))


def plan(root: str = ".", gpu: str | None = None, npu: str | None = None, force: bool = False) -> Plan:
    """Find the two sides under `root` (or take `gpu`/`npu`, two folders), and say what the
    configuration will hold and where it goes. UsageError when nothing is found or the
    project already has a configuration (`force`: a scriptdiff.toml is replaced)."""
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        raise UsageError(f"init: {root} is not a folder")
    p = Plan(root=root)
    p.target = _target(root, force)
    if gpu or npu:
        if not (gpu and npu):
            raise UsageError("init: give both --gpu DIR and --npu DIR, or neither (then the pairing rules find them)")
        for side, path in (("gpu", gpu), ("npu", npu)):
            if not os.path.exists(path):
                raise UsageError(f"init: --{side} {path}: no such file or folder")
        _tree(p, _rel(gpu, root), _rel(npu, root))
    else:
        _search(p, root, "", 0)
    p.found.sort(key=lambda f: INPUT_KEYS.index(f[0]))
    if not p.found:
        raise UsageError(f"init: found no GPU and NPU setups under {_shown(root)} by the pairing rules "
                         f"(gpu/ and npu/ folders, train.py and train_npu.py, pretrain.sh and pretrain_npu.sh: "
                         f"rules/pairing.yaml); name them: scriptdiff init --gpu DIR --npu DIR")
    _machines(p)
    try:
        p.before = _before(p.target)
        existing = _pyproject_text(p.target, p.before) if _is_pyproject(p.target) else ""
    except UsageError as e:
        p.refusal, existing = str(e), ""
    if _is_pyproject(p.target):
        newline = "\r\n" if "\r\n" in existing.split("\n", 1)[0] + "\n" else "\n"  # the file's own line breaks
        p.text = render(p, pyproject=True, existing=existing.replace("\r\n", "\n"))
        whole = existing + p.text.replace("\n", newline)
        if not p.refusal:
            try:
                _appendable(p.target, existing, whole)
            except UsageError as e:
                p.refusal = str(e)
        p.data = whole.encode("utf-8")
    else:
        p.text = render(p, pyproject=False)
        p.data = p.text.encode("utf-8")
    return p


def write(p: Plan) -> None:
    """Write the configuration: pyproject.toml with [tool.scriptdiff] added at its end, or
    scriptdiff.toml (re)written; replaced whole and flushed to the disk (inputs/writeback.py),
    only if the file is still as it was read. UsageError with the reason otherwise."""
    if p.refusal:
        raise UsageError(p.refusal)
    try:
        writeback.replace(p.target, p.before, p.data, _shown(p.target))
    except writeback.WriteRefused as e:
        raise UsageError(f"init: {_shown(p.target)} {e}; not written") from None


def _is_pyproject(path: str) -> bool:
    return os.path.basename(path) == "pyproject.toml"


def _target(root: str, force: bool) -> str:
    """Where the configuration goes: scriptdiff.toml, or pyproject.toml when it is there and
    scriptdiff.toml is not. UsageError when the project is configured already (in any form:
    checkrun.find_config reads the TOML)."""
    toml, pyproject = os.path.join(root, "scriptdiff.toml"), os.path.join(root, "pyproject.toml")
    found = find_config(root)
    if found is not None and not (force and os.path.basename(found) == "scriptdiff.toml"):
        again = " (--force replaces it)" if os.path.basename(found) == "scriptdiff.toml" else \
            ": edit its [tool.scriptdiff] tables, or remove them to run init again"
        raise UsageError(f"init: {_shown(found)} already configures scriptdiff check{again}")
    return toml if os.path.lexists(toml) or not os.path.lexists(pyproject) else pyproject


def _before(target: str) -> bytes | None:
    """The target's bytes as read (None: a new file). Only a file of the project is written: a
    link in its place (dangling or not) is refused."""
    if os.path.islink(target):
        raise UsageError(f"init: {_shown(target)} is a link (to {safe(os.readlink(target))}): init writes only a file "
                         f"of the project, never through a link; remove the link, or write the configuration there "
                         f"by hand (init --dry-run prints it)")
    if not os.path.lexists(target):
        return None
    try:
        return read_path(target).data
    except SourceError as e:
        raise UsageError(f"init: {e}") from None


def _pyproject_text(path: str, data: bytes) -> str:
    """pyproject.toml's text: UTF-8, as TOML is, else refused."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"init: {_shown(path)} is not UTF-8 (byte {e.start}), which a TOML file is: save it as "
                         f"UTF-8 first") from None


def _appendable(path: str, old: str, new: str) -> None:
    """The configuration appended to pyproject.toml (`old`, giving `new`) must read back as
    written: `old` valid TOML (tomlkit: how its `tool` table is written, layout kept), `new` too
    for `check`'s reader, holding old's tables unchanged and our [tool.scriptdiff] tables. Else
    UsageError: the file is not written (an inline `tool = {...}` table cannot take them)."""
    shown = _shown(path)
    by_hand = "add the [tool.scriptdiff] tables by hand (init --dry-run prints them), or write scriptdiff.toml"
    try:
        check_depth(old)
        doc = tomlkit.parse(old)
    except (tomlkit.exceptions.ParseError, JSONError, RecursionError) as e:
        raise UsageError(f"init: {shown}: not valid TOML ({safe(str(e).splitlines()[0])}): fix it first") from None
    tool = doc.get("tool")
    if isinstance(tool, tomlkit.items.InlineTable):
        raise UsageError(f"init: {shown}: its tool table is written inline (tool = {{...}}), which cannot take "
                         f"[tool.scriptdiff] tables; {by_hand}")
    tomllib = toml_reader()
    before = doc.unwrap()
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"init: {shown}: the [tool.scriptdiff] tables added at its end would not be valid TOML "
                         f"({safe(str(e).splitlines()[0])}); {by_hand}") from None
    config = after.get("tool", {}).pop("scriptdiff", None)
    if not after.get("tool") and "tool" not in before:
        after.pop("tool", None)
    if after != before or not isinstance(config, dict) or set(config) != {"gpu", "npu"}:
        raise UsageError(f"init: {shown}: the [tool.scriptdiff] tables added at its end would not read back as "
                         f"written; {by_hand}")


def _search(p: Plan, root: str, rel: str, depth: int) -> None:
    """Trees and siblings in the folder `rel` of the project, then in its sub-folders."""
    here = os.path.join(root, rel) if rel else root
    p.folders += 1
    if p.folders > budget.INIT_FOLDERS:
        return
    try:
        names = sorted(e.name for e in os.scandir(here))
    except OSError:
        return
    skip = skip_dirs()
    dirs = {n for n in names if os.path.isdir(os.path.join(here, n)) and not os.path.islink(os.path.join(here, n))
            and not skipped(n, skip)}
    taken: set[str] = set()
    for ren in pairing_rules().get("dir_renames", []) or []:  # gpu/ and npu/: two trees
        g, n = ren["gpu"], ren["npu"]
        if g in dirs and n in dirs and not {g, n} & taken:
            _tree(p, _join(rel, g), _join(rel, n))
            taken |= {g, n}
    rules = pairing_rules()
    for name in names:  # train.py and train_npu.py, env-gpu.json and env-npu.json: siblings
        if name in taken or skipped(name, skip):
            continue
        other = next((c for c in candidates(name, rules)[1:] if "/" not in c and c in names and c not in taken), None)
        if other is None:
            continue
        key = _key(os.path.join(here, name))
        if key is None or key != _key(os.path.join(here, other)):
            continue
        if key == "scripts" and os.path.isdir(os.path.join(here, name)):
            _tree(p, _join(rel, name), _join(rel, other))
        else:
            p.add(key, _join(rel, name), _join(rel, other))
        taken |= {name, other}
    if depth < budget.INIT_DEPTH:
        for d in sorted(dirs - taken):
            _search(p, root, _join(rel, d), depth + 1)


def _tree(p: Plan, gpu: str, npu: str) -> None:
    """Two folders, one a side: `scripts`, and the launch scripts in each their `launch`."""
    p.add("scripts", gpu, npu)
    launch = {side: _launch_scripts(os.path.join(p.root, path)) for side, path in (("gpu", gpu), ("npu", npu))}
    for side, path in (("gpu", gpu), ("npu", npu)):
        if launch[side]:
            p.inputs[side].setdefault("launch", []).extend(_join(path, s) for s in launch[side])
    if launch["gpu"] or launch["npu"]:
        p.found.append(("launch", ", ".join(_join(gpu, s) for s in launch["gpu"]) or "-",
                        ", ".join(_join(npu, s) for s in launch["npu"]) or "-"))


def _launch_scripts(folder: str) -> list[str]:
    """The files under `folder` that start a run (launch scripts), relative to it."""
    out = []
    skip = skip_dirs()
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not skipped(d, skip))
        for f in sorted(files):
            path = os.path.join(top, f)
            try:
                if detect(read_path(path)).entry:
                    out.append(os.path.relpath(path, folder).replace(os.sep, "/"))
            except SourceError:
                continue
    return out


def _key(path: str) -> str | None:
    """The configuration key a file or folder of one side is an input of, or None."""
    from ..checks.checkpoints import TORCH_SUFFIXES  # lazy: keeps --help fast (numpy)

    checkpoint = (".safetensors", *TORCH_SUFFIXES)
    if os.path.isdir(path):
        files = []
        for top, dirs, fs in os.walk(path):
            dirs.sort()
            files += [os.path.join(top, f) for f in sorted(fs)]
            if len(files) >= budget.INIT_LOOK:
                break
        if any(f.endswith(checkpoint) or f.endswith(".safetensors.index.json") for f in files):
            return "weights"
        if any(_key(f) in ("scripts", "launch") for f in files[:budget.INIT_LOOK] if not f.lower().endswith(DATA_SUFFIXES)):
            return "scripts"
        return "dataset" if files else None
    if path.lower().endswith(checkpoint):
        return "weights"
    if path.lower().endswith(DATA_SUFFIXES):
        return "dataset"
    try:
        return detect(read_path(path)).input  # rules/kinds.yaml `input`
    except SourceError:
        return None


def _machines(p: Plan) -> None:
    """The commands each machine runs for what the project does not hold, and the files they
    write named in the configuration; what it holds is read in place (or refreshed)."""
    facts = _run_facts(p)
    origins: dict[tuple[str, str], list[str]] = {}  # (key, value) -> where each run names it
    for key, (file, command, placeholder) in MACHINE.items():
        for side in ("gpu", "npu"):
            have = p.inputs[side].get(key)
            if have and not (len(have) == 1 and have[0].endswith(".json")):
                if side == "gpu":  # a dataset folder or a checkpoint of the project: `check` reads it in place
                    p.notes.append(f"{key}: {', '.join(have)} and {', '.join(p.inputs['npu'].get(key, []))} are in "
                                   f"the project: check reads them in place")
                continue
            out = have[0] if have else file.format(side=side)
            path = placeholder
            if placeholder:
                name = {"dataset": "data_path", "weights": "load"}[key]
                fact = facts[side].get(name)
                path = _quote(str(fact.value)) if fact else placeholder
                if fact:
                    origins.setdefault((name, fact.value), []).append(f"{_shown_in(fact.path, p.root)}:{fact.line}")
            p.commands[side].append((key, command.format(file=out, path=path)))
            if not have:
                p.inputs[side][key] = [out]
    for (name, value), where in origins.items():
        p.notes.append(f"{value} is the run's {name} ({', '.join(where)}): change it to where each machine keeps it")
    for side in ("gpu", "npu"):
        for key, placeholder in (("dataset", "DATA"), ("weights", "CHECKPOINT")):
            if any(f" {placeholder} " in c for _k, c in p.commands[side]):
                what = "the training data (a folder or files)" if key == "dataset" else "the initial checkpoint"
                p.notes.append(f"{placeholder}: {what} on that machine")
    p.notes = list(dict.fromkeys(p.notes))


def _run_facts(p: Plan) -> dict[str, dict]:
    """The data path and initial checkpoint each side's run names (`--data-path`, `--load`,
    `model_name_or_path`), read from the one launch script a side, else nothing."""
    launch = [p.inputs[s].get("launch", []) for s in ("gpu", "npu")]
    if not all(len(x) == 1 for x in launch):
        return {"gpu": {}, "npu": {}}
    report = diff_files([os.path.join(p.root, launch[0][0])], [os.path.join(p.root, launch[1][0])],
                        Options(use_cache=False))
    out: dict[str, dict] = {"gpu": {}, "npu": {}}
    for key, g, n in report.table:
        for side, fact in (("gpu", g), ("npu", n)):
            if key in ("data_path", "load") and fact is not None and fact.path and isinstance(fact.value, str):
                out[side][key] = fact
    return out


def render(p: Plan, pyproject: bool, existing: str = "") -> str:
    """The configuration text: [gpu] and [npu] tables (under [tool.scriptdiff] in pyproject.toml)."""
    lines = [] if not pyproject else ([""] if existing and not existing.endswith("\n\n") else [])
    lines += ["# scriptdiff check configuration, written by `scriptdiff init` (docs/check.md describes every key).",
              "# Paths are relative to this file; a file named with a command is written by that command, run",
              "# from this folder on that side's machine."]
    for side in ("gpu", "npu"):
        lines += ["", f"[{'tool.scriptdiff.' if pyproject else ''}{side}]"]
        made = dict(p.commands[side])
        for key in INPUT_KEYS:
            paths = p.inputs[side].get(key)
            if paths:
                line = f"{key} = [{', '.join(json.dumps(x) for x in paths)}]"
                # a comment ends at its line: a path with a line break in the command is escaped
                lines.append(f"{line}  # {safe(made[key])}" if key in made else line)
    text = "\n".join(lines) + "\n"
    return ("\n" if pyproject and existing and not existing.endswith("\n") else "") + text


def _rel(path: str, root: str) -> str:
    rel = os.path.relpath(os.path.abspath(path), root)
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def _join(a: str, b: str) -> str:
    return f"{a}/{b}" if a else b


def _shown_in(path: str, root: str) -> str:
    """A path as the project names it (relative to its root)."""
    rel = os.path.relpath(os.path.abspath(path), root)
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)

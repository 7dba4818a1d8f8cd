"""`scriptdiff check`: the six pre-checks in one run, from a configuration.

The configuration names, for each side, its scripts and folders, launch scripts, configs,
training logs, environment snapshots, package lists, datasets and weights (docs/check.md).
Everything is read once and handed to the shared engine in a single comparison, so facts
from a launch script, a DeepSpeed config and a training log merge per side exactly as in
`scriptdiff diff`. Each check then gets a verdict, stored in Report.verdicts:

  pass          its inputs were read on both sides and nothing of severity warning/error differs
  differences   at least one warning or error in that check
  not checked   and why: no inputs on a side, or this build cannot read them

A check with no inputs is shown as not checked, never left out.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from dataclasses import dataclass, field

from .. import budget
from ..inputs import gitsrc
from ..run import onefile, scopes
from ..checks.ascend_stack import verdict_notes
from ..run.engine import filter_findings, read_inputs
from ..run.finding import finding
from ..run.pipeline import Inputs, Unit, listed, run
from ..inputs.jsonload import JSONError, check_depth
from ..model import Extract, Finding, InputError, Options, Report, Severity, Side
from ..ruleset.registry import check_names, checks, detect, kind, kinds
from ..inputs.sources import SourceError, is_repo_top, read_text, special_reason, upward
from ..inputs.storage import check_urls, is_url
from ..ruleset.rules import check_profile, code, unknown_selector, use_packs
from ..run.suppress import apply_baseline
from ..inputs.walk import Entry, walk
from ..run.pairing import candidates, pairing_rules, skip_dirs
from ..run.folders import collect, unpaired_finding

# configuration keys (per side), in the order they are read; which of them feed which check
# is each check's `inputs` in the check registry (rules/kinds.yaml)
INPUT_KEYS = ("scripts", "launch", "configs", "logs", "environment", "packages", "dataset", "weights", "dumps")
SIDE_KEYS = set(INPUT_KEYS) | {"root", "git"}
TOP_KEYS = {"gpu", "npu", "select", "ignore", "baseline", "rules", "scripts", "profile"}
# inputs that are files of a kind, read as sources (the others are measured in place). The
# run's own inputs come first: they merge into one scope per side (one training run), and a
# launch script that also sits in a scripts folder is read as part of the run.
RUN_KEYS = ("launch", "configs", "logs", "environment", "packages")
SOURCE_KEYS = RUN_KEYS + ("scripts",)
# what each machine writes when the project does not hold it (`init` names the file and prints
# the command; `check` says a file not made yet once, with its command): key -> (file, command,
# what its PATH is)
MACHINE = {"environment": ("env-{side}.json", "scriptdiff collect -o {file}", None),
           "dataset": ("data-{side}.json", "scriptdiff data fingerprint {path} -o {file}", "DATA"),
           "weights": ("weights-{side}.json", "scriptdiff weights fingerprint {path} -o {file}", "CHECKPOINT")}


class CheckConfigError(Exception):
    """The configuration cannot be used; str() is one line naming the file."""


@dataclass
class SideConfig:
    name: str  # gpu | npu
    base: str  # folder the paths are relative to
    git: str | None = None
    inputs: dict[str, list[str]] = field(default_factory=dict)
    typed: list[str] = field(default_factory=list)  # paths given on the command line (--gpu/--npu KEY=PATH)


@dataclass
class CheckConfig:
    path: str | None
    gpu: SideConfig
    npu: SideConfig
    select: list[str] | None = None
    ignore: list[str] | None = None
    baseline: str | None = None
    rules: list[str] = field(default_factory=list)  # the user's rule pack folders (relative to the file)
    profile: str | None = None  # `profile = "alignment"`: each side checked against it (as --profile)
    # scripts that run on both devices, given once (top-level `scripts`, or the same path
    # under both sides): each file's GPU run is compared with its NPU run (onefile.py)
    once: list[str] = field(default_factory=list)


def find_config(start: str = ".") -> str | None:
    """scriptdiff.toml, else a pyproject.toml with [tool.scriptdiff], here or in a parent."""
    for d in upward(start):
        for name in ("scriptdiff.toml", "pyproject.toml"):
            p = os.path.join(d, name)
            sys.audit("scriptdiff.looked", p)  # a replayed check depends on whether it exists (commands/runmemo)
            if os.path.isfile(p) and (name == "scriptdiff.toml" or _has_tool_section(p)):
                return p
        if is_repo_top(d):
            return None
    return None


def _has_tool_section(path: str) -> bool:
    """The pyproject.toml configures scriptdiff: a `tool.scriptdiff` table however it is written
    ([tool.scriptdiff.gpu], `[ tool . scriptdiff ]`, dotted keys, an inline table); a file that
    is not valid TOML does when it has the header, and check then says why it cannot be read."""
    try:
        text = read_text(path, limit=budget.CONFIG_BYTES)
    except SourceError:
        return False
    tomllib = toml_reader()
    try:
        check_depth(text)
        tool = tomllib.loads(text).get("tool")
    except (tomllib.TOMLDecodeError, JSONError, RecursionError):
        return "[tool.scriptdiff" in text
    return isinstance(tool, dict) and "scriptdiff" in tool


def toml_reader():
    """The standard library's TOML reader (tomli on Python 3.10): what `check` reads with."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib


def _toml(path: str) -> dict:
    tomllib = toml_reader()
    try:  # a regular file under a cap: a FIFO or /dev/zero named as the configuration is refused
        text = read_text(path, limit=budget.CONFIG_BYTES)
        check_depth(text)  # tomllib recurses: deep arrays or inline tables are refused first
        return tomllib.loads(text)
    except SourceError as e:
        raise CheckConfigError(str(e).replace("no such file or directory", "no such file")) from None
    except RecursionError:
        raise CheckConfigError(f"{path}: nested too deeply to read") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, JSONError) as e:
        raise CheckConfigError(f"{path}: not valid TOML: {str(e).splitlines()[0]}") from None


def _list(v, where: str) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    raise CheckConfigError(f"{where}: expected a path or a list of paths")


def load_config(path: str | None = None, gpu_opts: list[str] | None = None, npu_opts: list[str] | None = None,
                start: str = ".") -> CheckConfig:
    """The configuration from `path` (or found from `start`), with --gpu/--npu KEY=PATH added."""
    gpu_opts, npu_opts = gpu_opts or [], npu_opts or []
    if path is None:
        path = find_config(start)
        if path is None and not (gpu_opts or npu_opts):
            raise CheckConfigError("no configuration: add [tool.scriptdiff] to pyproject.toml or write a "
                                   "scriptdiff.toml (`scriptdiff init` finds the two setups and writes one), or give "
                                   "--gpu KEY=PATH / --npu KEY=PATH (docs/check.md)")
    data, base = _table(path) if path is not None else ({}, os.getcwd())
    rules = _rules(data, path, base)
    if rules:  # before the selectors below, which may name the packs' own codes
        use_packs(rules, add=True)
    label = path or "--gpu/--npu"
    sides = []
    for name, extra in (("gpu", gpu_opts), ("npu", npu_opts)):
        raw = data.get(name) or {}
        if not isinstance(raw, dict):
            raise CheckConfigError(f"{label}: [{name}] must be a table")
        unknown = set(raw) - SIDE_KEYS
        if unknown:
            raise CheckConfigError(f"{label}: [{name}] unknown key(s) {', '.join(sorted(unknown))} "
                                   f"(expected {', '.join(sorted(SIDE_KEYS))})")
        root = raw.get("root", ".")
        if not isinstance(root, str):
            raise CheckConfigError(f"{label}: {name}.root must be a path")
        git = raw.get("git")
        if git is not None and not isinstance(git, str):
            raise CheckConfigError(f"{label}: {name}.git must be a revision")
        side = SideConfig(name=name, base=os.path.normpath(os.path.join(base, root)), git=git)
        for key in INPUT_KEYS:
            side.inputs[key] = [p if os.path.isabs(p) or is_url(p) else os.path.join(side.base, p)
                                for p in _list(raw.get(key), f"{label}: {name}.{key}")]
            try:
                check_urls(side.inputs[key])
            except SourceError as e:
                raise CheckConfigError(f"{label}: {name}.{key}: {e}") from None
        for spec in extra:
            key, eq, value = spec.partition("=")
            if not eq or key not in INPUT_KEYS or not value:
                raise CheckConfigError(f"--{name} expects KEY=PATH with KEY one of {', '.join(INPUT_KEYS)}; "
                                       f"got {spec!r}")
            added = [v if is_url(v) else os.path.abspath(v) for v in value.split(",")]
            side.inputs[key].extend(added)
            side.typed.extend(added)
        sides.append(side)
    codes = {}
    for k in ("select", "ignore"):
        codes[k] = [c.upper() for c in _list(data.get(k), f"{label}: {k}")] or None
        for c in codes[k] or []:
            msg = unknown_selector(c)
            if msg:
                raise CheckConfigError(f"{label}: {k}: {msg}")
    baseline = data.get("baseline")
    if baseline is not None:
        baseline = _list(baseline, f"{label}: baseline")[0]
        baseline = baseline if os.path.isabs(baseline) else os.path.join(base, baseline)
    once = [p if os.path.isabs(p) else os.path.join(base, p) for p in _list(data.get("scripts"), f"{label}: scripts")]
    for side in sides:  # given once, it is each side's script (for the verdicts), compared with itself
        side.inputs["scripts"] += [p for p in once if p not in side.inputs["scripts"]]
    if once and (sides[0].git or sides[1].git):
        raise CheckConfigError(f"{label}: scripts given once are read from disk: drop gpu.git / npu.git, or name "
                               f"each side's scripts")
    if not (sides[0].git or sides[1].git):  # the same folder or file on both sides: given once
        both = {os.path.realpath(p) for p in sides[1].inputs["scripts"]}
        once += [p for p in sides[0].inputs["scripts"] if os.path.realpath(p) in both and p not in once]
    profile = data.get("profile")
    if profile is not None and (not isinstance(profile, str) or not profile):
        raise CheckConfigError(f"{label}: profile must be a profile's name (alignment)")
    return CheckConfig(path=path, gpu=sides[0], npu=sides[1], baseline=baseline, rules=rules, once=once,
                       profile=profile, **codes)


def _table(path: str) -> tuple[dict, str]:
    """The [tool.scriptdiff] table of `path` (or the whole scriptdiff.toml), and its folder."""
    doc = _toml(path)
    base = os.path.dirname(os.path.abspath(path))
    if os.path.basename(path) == "pyproject.toml" or "tool" in doc:
        data = (doc.get("tool") or {}).get("scriptdiff")
        if not isinstance(data, dict):
            raise CheckConfigError(f"{path}: no [tool.scriptdiff] table")
    else:
        data = doc
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise CheckConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown))} "
                               f"(expected {', '.join(sorted(TOP_KEYS))})")
    return data, base


def _rules(data: dict, path: str | None, base: str) -> list[str]:
    """`rules = ["DIR", ...]`: the user's rule pack folders, relative to the configuration's folder."""
    return [_display(p if os.path.isabs(p) else os.path.join(base, p))
            for p in _list(data.get("rules"), f"{path}: rules")]


def config_rules(path: str | None = None, start: str = ".") -> list[str]:
    """The rule pack folders the configuration at `path` (or found from `start`) names; none
    without a configuration. CheckConfigError when it cannot be read."""
    path = path or find_config(start)
    if path is None:
        return []
    data, base = _table(path)
    return _rules(data, path, base)


def _display(p: str) -> str:
    """A configured path as shown in reports: relative to the current folder (a URL as it is)."""
    if is_url(p):
        return p
    try:
        return os.path.relpath(p).replace(os.sep, "/")
    except ValueError:  # another drive
        return p


def _module_present(name: str) -> bool:
    try:
        return importlib.util.find_spec(f"scriptdiff.{name}") is not None
    except (ImportError, ValueError):
        return False


class _Side:
    """One side's configured inputs as listings, and how many of each key could be read."""

    def __init__(self, cfg: SideConfig, report: Report):
        self.cfg = cfg
        self.report = report
        self.read_ok: dict[str, int] = {}
        # key -> its inputs that could not be read (a path not there, a FIFO, a folder walk cut
        # short, a file that would not read): what they hold is unknown, never absent
        self.failed: dict[str, list[InputError]] = {}

    def listing(self, key: str) -> dict:
        """relative name -> Entry for the key's paths (folders walked, files by name)."""
        skip = skip_dirs()
        out: dict = {}
        repo = None
        before = len(self.report.errors)
        refused: set[int] = set()  # links out of a folder: collect() accounts them, file by file
        for p in self.cfg.inputs.get(key, []):
            if self.cfg.git:
                try:
                    repo = repo or gitsrc.open_repo(self.cfg.base)
                    top = repo.working_tree_dir
                    rel = os.path.relpath(p, top).replace(os.sep, "/")
                    if gitsrc.is_tree(repo, self.cfg.git, rel):
                        found = gitsrc.subtree_listing(repo, self.cfg.git, rel, skip)
                    else:
                        found = gitsrc.listing(repo, self.cfg.git, [rel])
                        found = {k.rsplit("/", 1)[-1]: v for k, v in found.items()}
                except gitsrc.GitError as e:
                    self.report.errors.append(InputError(f"{self.cfg.git}:{_display(p)}", str(e), fatal=True))
                    continue
            else:
                found = _entries(p, self.report)
            for rel, e in found.items():
                out.setdefault(rel if rel not in out else f"{key}:{len(out)}:{rel}", e)
                if getattr(e, "refused", None) is not None:
                    refused.add(id(e.refused))
        scope = _scope_of(key)
        for e in self.report.errors[before:]:
            if e.fatal and id(e) not in refused:
                e.checks = scope
                self.failed.setdefault(key, []).append(e)
        self.failed.setdefault(key, [])
        return out


@dataclass
class Waiting:
    """An input a machine makes (an environment snapshot, a data or weights fingerprint) that is
    not there yet: on a workstation the check it feeds is not checked, with the command that
    makes it, rather than failed on a file no workstation has."""

    side: str  # gpu | npu
    key: str  # environment | dataset | weights
    path: str  # as shown (relative to the current folder)
    command: str  # what makes it, run from the configuration's folder on that side's machine


def waiting_inputs(cfg: CheckConfig) -> list[Waiting]:
    """The configured inputs of the keys machines make (MACHINE) that name a JSON file not there
    yet, each with its command: the one `init` wrote beside it in the configuration, else the
    command's pattern. A side read from a git revision, a URL, another kind of path or a path
    typed on the command line is read (and fails) as any input."""
    out: list[Waiting] = []
    written = None
    for side in (cfg.gpu, cfg.npu):
        if side.git:
            continue
        for key, (_file, command, placeholder) in MACHINE.items():
            paths = side.inputs.get(key, [])
            for p in paths:
                if is_url(p) or not p.endswith(".json") or os.path.lexists(p) or p in side.typed:
                    continue
                if written is None:
                    written = _commands_written(cfg.path)
                made = written.get((side.name, key)) if len(paths) == 1 else None
                rel = os.path.relpath(p, side.base).replace(os.sep, "/")
                out.append(Waiting(side.name, key, _display(p),
                                   made or command.format(file=rel, path=placeholder or "")))
    return out


def _commands_written(path: str | None) -> dict[tuple[str, str], str]:
    """(side, key) -> the command written beside that key in the configuration file, as `init`
    writes it (`environment = ["env-gpu.json"]  # scriptdiff collect -o env-gpu.json`)."""
    if path is None:
        return {}
    try:
        import tomlkit

        doc = tomlkit.parse(read_text(path, limit=budget.CONFIG_BYTES))
    except (ImportError, SourceError, ValueError):
        return {}
    data = doc.get("tool", {}).get("scriptdiff", {}) if os.path.basename(path) == "pyproject.toml" or "tool" in doc \
        else doc
    out = {}
    for side in ("gpu", "npu"):
        table = data.get(side) if hasattr(data, "get") else None
        for key in MACHINE:
            try:
                comment = table.item(key).trivia.comment.lstrip("#").strip()
            except (AttributeError, KeyError):
                continue
            if comment.startswith("scriptdiff "):
                out[(side, key)] = comment
    return out


def _without(cfg: CheckConfig, waiting: list[Waiting]) -> CheckConfig:
    """The configuration less the inputs not made yet (what is read)."""
    gone = {(w.side, w.key, w.path) for w in waiting}
    sides = [dataclasses.replace(s, inputs={k: [p for p in v if (s.name, k, _display(p)) not in gone]
                                            for k, v in s.inputs.items()}) for s in (cfg.gpu, cfg.npu)]
    return dataclasses.replace(cfg, gpu=sides[0], npu=sides[1])


def run_checks(cfg: CheckConfig, opts=None, strict: bool = False) -> Report:
    """Read every configured input, compare both sides once, and give each check a verdict.
    An input a machine makes that is not there yet (`waiting_inputs`) leaves its checks not
    checked, said once with its command; `strict` (CI) reads it, and fails on it, as any input."""
    opts = opts or Options()
    waiting = [] if strict else waiting_inputs(cfg)
    given, cfg = cfg, _without(cfg, waiting)
    if cfg.select and not opts.select:
        opts.select = cfg.select
    if cfg.ignore and not opts.ignore:
        opts.ignore = cfg.ignore
    if cfg.profile and not opts.profile:
        opts.profile = cfg.profile
    check_profile(opts.profile)
    report = Report(gpu=_label(cfg.gpu), npu=_label(cfg.npu))
    sides = {"gpu": _Side(cfg.gpu, report), "npu": _Side(cfg.npu, report)}
    gsrcs: list = []
    nsrcs: list = []
    pairs: list = []
    the_run = Unit()
    units = [the_run]
    for w in waiting:  # not made yet: its side is unknown for the settings it could set, nothing more
        the_run.failed.setdefault(w.side, []).append(InputError(w.path, "not made yet", checks=_scope_of(w.key)))
    identical: list = []
    found: list = []  # findings made before the run: unpaired scripts, unconfigured checks
    kinds: dict[str, set[str]] = {"gpu": set(), "npu": set()}
    seen: dict[str, set] = {"gpu": set(), "npu": set()}
    once = {os.path.realpath(p) for p in cfg.once}
    for key in SOURCE_KEYS:
        gl, nl = sides["gpu"].listing(key), sides["npu"].listing(key)
        if key == "scripts" and once:  # given once: each file compared with itself, below
            gl, nl = ({r: e for r, e in li.items() if not _under(e, once)} for li in (gl, nl))
        for side, listing in (("gpu", gl), ("npu", nl)):
            sides[side].read_ok[key] = len(listing)
            for rel in [r for r, e in listing.items() if e.display in seen[side]]:
                del listing[rel]  # already read under another key (a launch script inside a scripts folder)
            seen[side] |= {e.display for e in listing.values()}
        if not gl and not nl:
            continue
        several = key == "launch" and max(len(gl), len(nl)) > 1
        if key == "launch" and len(gl) == 1 == len(nl):  # one launch script a side: they pair, whatever their names
            nl = {next(iter(gl)): next(iter(nl.values()))}
        c = collect(gl, nl, report, opts, unpaired=(key == "scripts" or several))
        found += _known(c.findings, key, sides)  # a listing cut short: the other side's unpaired files unknown
        for side in ("gpu", "npu"):  # and files that could not be read (refused links too): the run unknown
            sides[side].failed.setdefault(key, []).extend(c.failed.get(side, []))
        g, n, p = c.gpu, c.npu, c.pairs
        if key in ("logs", "environment", "packages"):
            p = []  # compared as facts only
        if several:  # several launch scripts a side: each pair (by name, rules/pairing.yaml) is a run
            units += scopes.units(c.pairs, c.same)
        elif key in RUN_KEYS:  # one run: merged per side (a side whose input failed is unknown in it)
            the_run.gpu += g
            the_run.npu += n
            for side in ("gpu", "npu"):
                if sides[side].failed.get(key):
                    the_run.failed.setdefault(side, []).extend(sides[side].failed[key])
        else:  # a scripts folder, scoped as a folder diff: launch scripts are runs, other pairs their own scopes
            units += scopes.units(c.pairs, c.same)
        identical += c.identical + c.refused
        gsrcs += g
        nsrcs += n
        pairs += p
        for side, srcs in (("gpu", g), ("npu", n)):
            kinds[side] |= {detect(s).name for s in srcs}
    if cfg.once:
        listing: dict = {}
        for p in cfg.once:
            listing.update({f"{p}:{r}": e for r, e in _entries(p, report).items()})
        g1, n1, p1, u1, acc1 = onefile.inputs(listing, report)
        gsrcs += g1
        nsrcs += n1
        pairs += p1
        units += u1
        identical += acc1
        for side, srcs in (("gpu", g1), ("npu", n1)):
            kinds[side] |= {detect(s).name for s in srcs}
            sides[side].read_ok["scripts"] = sides[side].read_ok.get("scripts", 0) + len(srcs) + len(acc1) // 2
    extracts: dict[str, list[Extract]] = {"gpu": [], "npu": []}
    missing: dict[str, list[str]] = {c: [] for c in check_names()}
    for check in checks().values():  # inputs measured in place: datasets, checkpoints
        if not check.measure:
            continue
        for key in check.inputs:
            if not (cfg.gpu.inputs[key] or cfg.npu.inputs[key]):
                continue
            absent = [m for m in check.needs if not _module_present(m)]
            if absent:
                missing[check.name].extend(f"scriptdiff.{m}" for m in absent)
                continue
            for side in ("gpu", "npu"):
                for p in getattr(cfg, side).inputs[key]:
                    ex = _measure(check, p)
                    extracts[side].append(ex)
                    if not any(e.fatal for e in ex.errors):
                        sides[side].read_ok[key] = sides[side].read_ok.get(key, 0) + 1
    # SD155 for each check the configuration gives no input: a finding like any other, so that
    # suppressions, the baseline and --select/--ignore apply to it
    found += [_not_configured(c, given) for c in check_names() if not checks()[c].optional
              and not any(given.gpu.inputs[k] or given.npu.inputs[k] for k in checks()[c].inputs)]
    where = (_scope(cfg.gpu), _scope(cfg.npu))
    report.absorb(run(Inputs(gsrcs, nsrcs, pairs, units=units, measured=(extracts["gpu"], extracts["npu"]),
                             findings=found, roots=(where[0].root, where[1].root),
                             resolvers=(where[0].resolver, where[1].resolver), accounts=identical), opts))
    for side in ("gpu", "npu"):  # what a measured check computed for the views (the curves of `process`)
        for ex in extracts[side]:
            for fact in ex.facts:
                report.details.update(fact.meta.get("details", {}))
    # which checks this build could not do, from the kinds of file that were read
    for side in ("gpu", "npu"):
        for name in sorted(kinds[side]):
            k = kind(name)
            if not _module_present(k.reader):
                for check in k.checks:
                    label = f"scriptdiff.{k.reader} ({name} files)"
                    if not any(m.split(" ")[0] == f"scriptdiff.{k.reader}" for m in missing[check]):
                        missing[check].append(label)
    for check in checks().values():
        if any(cfg.gpu.inputs[k] or cfg.npu.inputs[k] for k in check.inputs):
            for m in check.needs:
                if not _module_present(m) and not any(x.split(" ")[0] == f"scriptdiff.{m}" for x in missing[check.name]):
                    missing[check.name].append(f"scriptdiff.{m}")
    report.verdicts = {c: _verdict(c, given, sides, report, missing[c]) for c in check_names()  # optional: if configured
                       if not checks()[c].optional or any(given.gpu.inputs[k] or given.npu.inputs[k]
                                                          for k in checks()[c].inputs)}
    _not_made_yet(report, waiting, given)
    for c, note in verdict_notes(report.findings).items():  # the NPU stack against the Ascend tables
        report.verdicts[c] = (report.verdicts[c][0], f"{report.verdicts[c][1]}; {note}")
    # a configured path read under two keys (logs: the run's facts, then its curves) that could not
    # be read is said once
    seen: set = set()
    report.errors = [e for e in report.errors if not ((e.path, e.message, e.fatal, e.level) in seen
                                                      or seen.add((e.path, e.message, e.fatal, e.level)))]
    return report.sorted()


def _not_made_yet(report: Report, waiting: list[Waiting], given: CheckConfig) -> None:
    """The verdict of each check fed by an input not made yet: not checked (when nothing it
    read differs), its files and the commands that make them, the commands said once (under
    the first check they feed). `report.details["waiting"]`: the checks left so by them alone."""
    said: dict[str, str] = {}
    report.details["waiting"] = set()
    for c in report.verdicts:
        mine = [w for w in waiting if w.key in checks()[c].inputs]
        if not mine:
            continue
        files = listed([w.path for w in mine])
        first = [w for w in mine if w.path not in said]
        if first:
            note = f"{files} not made yet: run " + ", ".join(f"`{w.command}` on the {w.side.upper()} machine"
                                                          for w in first)
            for w in first:
                said[w.path] = c
        else:
            note = f"{files} not made yet (see {said[mine[0].path]})"
        verdict, reason = report.verdicts[c]
        bare = any(not any(getattr(given, s).inputs[k] for k in checks()[c].inputs) for s in ("gpu", "npu"))
        if verdict == "differences" or bare:  # a side configures none of its inputs: that is its verdict
            report.verdicts[c] = (verdict, f"{reason}; {note}")
        else:
            report.verdicts[c] = ("not checked", note)
            report.details["waiting"].add(c)


def _known(found: list[Finding], key: str, sides: dict) -> list[Finding]:
    """The findings of a listing's unpaired files, but for those whose counterpart may be in an
    input of the other side that could not be listed (a configured path not there, a walk cut
    short): a side that fails is unknown, not absent. Its error says which files could not be
    paired. (A link out of a folder is handled by collect(): only its own name is unknown.)"""
    out = []
    hidden: dict[str, list[str]] = {"gpu": [], "npu": []}
    for f in found:
        here = "gpu" if f.gpu is not None and f.npu is None else "npu" if f.npu is not None and f.gpu is None else None
        other = {"gpu": "npu", "npu": "gpu"}.get(here or "")
        if other and sides[other].failed.get(key):
            hidden[other].append((f.gpu or f.npu).value)
            continue
        out.append(f)
    for side, names in hidden.items():
        if names:
            e = sides[side].failed[key][0]
            e.message += (f" ({len(names)} file(s) of the {'NPU' if side == 'gpu' else 'GPU'} side could not be "
                          f"paired: {listed(names)})")
    return out


def _under(e, roots: set[str]) -> bool:
    path = getattr(e, "path", None)
    if not path:
        return False
    rp = os.path.realpath(path)
    return any(rp == r or rp.startswith(r + os.sep) for r in roots)


def _entries(p: str, report: Report) -> dict:
    """A configured path on disk as a listing: a folder walked, a file by its name; anything
    else (not there, a FIFO, a device: never opened) one error."""
    if os.path.isdir(p):
        return walk(p, skip_dirs(), report.errors, _display(p))
    if os.path.isfile(p):
        return {os.path.basename(p): Entry(os.path.basename(p), os.path.getsize(p), _display(p), p)}
    reason = special_reason(os.stat(p).st_mode) if os.path.exists(p) else None
    report.errors.append(InputError(_display(p), reason or "no such file or directory", fatal=True))
    return {}


def _scope(side: SideConfig) -> scopes.SideScope:
    """Where a configured side's references are: on disk under its root, or in its `git`
    revision (the root's path in the repository, then the repository's top), never the work tree."""
    if not side.git:
        return scopes.disk(side.base)
    try:
        top = gitsrc.open_repo(side.base).working_tree_dir
    except gitsrc.GitError:  # said by the listing already
        return scopes.disk(side.base)
    rel = os.path.relpath(side.base, top).replace(os.sep, "/")
    return scopes.revision(side.base, side.git, root="" if rel == "." else rel)


def _not_configured(check: str, cfg: CheckConfig) -> Finding:
    """SD155: a check for which the configuration names no input cannot pass."""
    rule = code("check-not-configured")
    keys = " / ".join(checks()[check].inputs)
    where = cfg.path or "--gpu/--npu"
    side = Side(value=f"no {keys}", path=cfg.path, line=None, source="configuration")
    return finding(rule, check=check, key=f"check:{check}", gpu=side, npu=side,
                   message=f"{where} names no input for the {check} check ({keys}): it cannot pass; configure "
                           f"it, or ignore {rule} to leave it out deliberately")


def _label(side: SideConfig) -> str:
    """How a side is named in the report: its scripts folders, else its first inputs."""
    paths = side.inputs.get("scripts", []) or [p for k in INPUT_KEYS for p in side.inputs.get(k, [])]
    where = " ".join(_display(p) for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
    where = where or _display(side.base)
    return f"{side.git}:{where}" if side.git else where


@dataclass
class Staged:
    """Files about to be committed, as the configuration sees them (`counterparts`)."""

    pairs: list[tuple[str, str]] = field(default_factory=list)  # (GPU, NPU) of a file and its counterpart
    alone: list[tuple[str, str, str]] = field(default_factory=list)  # (file, side, name) in a side, no counterpart
    once: list[str] = field(default_factory=list)  # in scripts given once: each file runs on both devices
    outside: list[str] = field(default_factory=list)  # in no configured input: not the hook's business


def configured_inputs(cfg: CheckConfig) -> list[str]:
    """Every configured path, both sides (what the hook may be given files of)."""
    return [p for side in (cfg.gpu, cfg.npu) for k in INPUT_KEYS for p in side.inputs.get(k, [])] + list(cfg.once)


def counterparts(files: list[str], cfg: CheckConfig) -> Staged:
    """For files about to be committed (the pre-commit hook): which configured input each is in,
    and its counterpart on the other side.

    A file under a configured folder (scripts, launch, configs, logs, environment, packages)
    pairs with the same (or renamed, rules/pairing.yaml) relative path under the other side's
    folder of that key; a file configured by name pairs with the other side's file at the same
    place in that key's list (or by a rename rule when the lists differ in length). A file
    found under one side with no counterpart is `alone` (the pairing finding, SD150/SD151); a
    file in scripts given once is its own counterpart (`once`); a file in no configured input
    is `outside`: not the hook's business (dataset and checkpoint folders are the check's)."""
    rules = pairing_rules()
    back = {k: [{"gpu": r["npu"], "npu": r["gpu"]} for r in rules.get(k, []) or []]
            for k in ("dir_renames", "name_renames")}
    once = [os.path.realpath(p) for p in cfg.once]
    out = Staged()
    for f in files:
        full = os.path.realpath(f)
        if any(full == r or full.startswith(r + os.sep) for r in once):
            out.once.append(f)
            continue
        where = _placed(full, cfg, rules, back)
        if where is None:
            out.outside.append(f)
        elif where[0] == "pair":
            pair = (_display(where[1]), _display(where[2]))
            if pair not in out.pairs:
                out.pairs.append(pair)
        else:
            out.alone.append((f, where[1], where[2]))
    return out


def _placed(full: str, cfg: CheckConfig, rules: dict, back: dict):
    """("pair", GPU, NPU) for a file in a configured input with a counterpart, ("alone", side,
    name) without one, or None when no configured input holds it."""
    for key in INPUT_KEYS:
        for side, other in (("gpu", "npu"), ("npu", "gpu")):
            mine, theirs = getattr(cfg, side).inputs.get(key, []), getattr(cfg, other).inputs.get(key, [])
            for i, p in enumerate(mine):
                rp = os.path.realpath(p)
                if os.path.isdir(rp):
                    if key not in SOURCE_KEYS or not full.startswith(rp + os.sep):
                        continue
                    rel = os.path.relpath(full, rp).replace(os.sep, "/")
                    dirs = [theirs[i]] if len(theirs) == len(mine) else theirs
                    found = next((os.path.join(d, c) for d in dirs if os.path.isdir(d)
                                  for c in candidates(rel, rules if side == "gpu" else back)
                                  if os.path.isfile(os.path.join(d, c))), None)
                elif rp == full:
                    rel = os.path.basename(p)
                    if len(theirs) == len(mine):
                        found = theirs[i] if os.path.isfile(theirs[i]) else None
                    else:
                        names = {os.path.basename(t): t for t in theirs if os.path.isfile(t)}
                        found = next((names[c] for c in candidates(rel, rules if side == "gpu" else back)
                                      if c in names), None)
                else:
                    continue
                if found is None:
                    return ("alone", side, rel)
                return ("pair", full, found) if side == "gpu" else ("pair", found, full)
    return None


def diff_counterparts(files: list[str], cfg: CheckConfig, opts=None) -> Report:
    """`scriptdiff check --files F...` (the pre-commit hook): each file in a configured input
    against its counterpart, all in one comparison scoped as a folder diff is (scopes.units): a
    staged launch script is a run with its program and configs, and a staged program that run
    read is not compared again on its own. A file in one side with no counterpart is the
    pairing finding a folder diff makes of it (SD150, or SD151 for a file that decides no
    run); a file in scripts given once that runs on both devices (it names the NPU) is
    compared against itself, its GPU run with its NPU run (onefile.py); a file in no configured
    input is left alone."""
    opts = opts or Options()
    staged = counterparts(files, cfg)
    pairs = staged.pairs
    def named(paths: list[str]) -> str:
        paths = list(dict.fromkeys(paths))
        return " ".join(paths) if len(paths) <= 3 else f"{' '.join(paths[:2])} and {len(paths) - 2} more"

    # each side's files as compared: a staged file and its counterpart on their own sides
    sides = {"gpu": [g for g, _n in pairs] + [_display(f) for f, s, _r in staged.alone if s == "gpu"],
             "npu": [n for _g, n in pairs] + [_display(f) for f, s, _r in staged.alone if s == "npu"]}
    for side in sides:
        sides[side] += [_display(f) for f in staged.once]
    report = Report(gpu=named(sides["gpu"]) or "(none)", npu=named(sides["npu"]) or "(none)")
    inline_only = dataclasses.replace(opts, baseline=None)
    gl: dict = {}
    nl: dict = {}
    for i, (g, n) in enumerate(pairs):  # paired by the counterparts rule: one key per pair
        for listing, path in ((gl, g), (nl, n)):
            if not os.path.isfile(path):
                reason = special_reason(os.stat(path).st_mode) if os.path.exists(path) else None
                report.errors.append(InputError(path, reason or "no such file or directory", fatal=True))
                continue
            rel = f"{i}/{os.path.basename(g)}"  # the same key on both sides; the GPU name names the kind
            listing[rel] = Entry(rel, os.path.getsize(path), path, path)
    if gl and nl:
        c = collect(gl, nl, report, opts, unpaired=False)
        report.absorb(run(scopes.inputs(c, (scopes.disk(), scopes.disk()), report=report), inline_only))
        report.compared = max(report.compared, c.npairs)
    found = []
    for f, side, rel in staged.alone:  # in one side, no counterpart: what a folder diff says of it
        srcs = read_inputs([_display(f)], report)
        k = detect(srcs[0]) if srcs else None
        found.append(unpaired_finding(_display(f), rel, side, k is not None and k.relevant,
                                      k.name if k is not None else "binary"))
    if found:
        report.absorb(run(Inputs([], [], [], findings=found), inline_only))
    for f in staged.once:  # runs on both devices (it names the NPU): against itself
        if onefile.is_dual(f):
            srcs = read_inputs([_display(f)], report)
            if srcs:
                g, n = onefile.runs(srcs[0])
                report.absorb(run(Inputs([g], [n], [(g, n)] if detect(g).structural else []), inline_only))
        report.compared = max(report.compared, 1)
    # once for all the pairs; the staged files are part of the setup: no entry is called stale
    apply_baseline(report, opts, partial=True)
    report.findings = filter_findings(report.findings, opts)
    return report.sorted()


def _scope_of(key: str) -> tuple[str, ...]:
    """The checks an input given under `key` can set settings of, when that input is data (an
    environment snapshot, a package list); () for code (scripts, launch scripts, configs,
    logs), which can set anything."""
    if key in ("scripts", "launch", "configs", "logs"):
        return ()
    return tuple(c.name for c in checks().values() if key in c.inputs)


def _measure(check, path: str) -> Extract:
    """A dataset or checkpoint (or its manifest / fingerprint file) read in place as an
    Extract of facts, through the check's `measure` hook (rules/kinds.yaml). One that fails
    leaves its side unknown for this check's settings only."""
    try:
        ex = check.hook("measure")(path)
    except (OSError, ValueError) as e:  # the hook reports input errors itself; this is the safety net
        ex = Extract(errors=[InputError(_display(path), f"cannot read {check.name} input: {e}", fatal=True)])
    for e in ex.errors:
        if e.fatal:
            e.checks = (check.name,)
    return ex


def _verdict(check: str, cfg: CheckConfig, sides: dict, report: Report, missing: list[str]) -> tuple[str, str]:
    keys = checks()[check].inputs
    given = {s: [k for k in keys if getattr(cfg, s).inputs[k]] for s in ("gpu", "npu")}
    quiet = (code("check-not-configured"), code("input-not-understood"))
    found = [f for f in report.findings if f.check == check and f.rule not in quiet]
    bad = [f for f in found if Severity(f.severity).loud]
    info = len(found) - len(bad)
    wanted = " / ".join(keys)
    failed = sorted({_display(a.path) for a in report.every_input() if a.status == "failed" and a.kind in kinds()
                     and check in kind(a.kind).checks}
                    | {e.path for s in ("gpu", "npu") for k in keys for e in sides[s].failed.get(k, [])})
    if failed and not bad:  # an input of this check could not be read: never a pass
        for s in ("gpu", "npu"):
            if given[s] and not any(sides[s].read_ok.get(k) for k in keys):
                return "not checked", f"no {s.upper()} input could be read (see errors)"
        return "not checked", f"could not be read: {', '.join(failed)} (see errors)"
    unread = [f for f in report.findings if f.check == check and f.rule == code("input-not-understood")]
    if unread:  # an input of this check was not understood: never a pass for that file
        files = ", ".join(sorted({(f.gpu or f.npu).path for f in unread}))
        if bad:
            return "differences", f"{len(bad)} finding(s); not checked: {files} (not understood)"
        return "not checked", f"not understood: {files} ({unread[0].message.split(': ', 1)[-1]})"
    if bad:
        reason = ", ".join(f"{n} {s.counted}" for s, n in Severity.counts(bad).items() if n)
        if missing:
            reason += f"; partly not checked: this build lacks {', '.join(missing)}"
        return "differences", reason
    shown = f"; {len(found)} info finding(s) from other inputs shown" if found else ""
    if not given["gpu"] and not given["npu"]:
        return "not checked", f"no inputs: configure {wanted} for gpu and npu{shown}"
    for s, other in (("gpu", "npu"), ("npu", "gpu")):
        if not given[s]:
            return "not checked", f"no {s.upper()} input ({other.upper()} has {', '.join(given[other])}){shown}"
    if missing:
        return "not checked", f"this build lacks {', '.join(missing)}"
    for s in ("gpu", "npu"):
        if not any(sides[s].read_ok.get(k) for k in keys):
            return "not checked", f"no {s.upper()} input could be read (see errors)"
    return "pass", "no differences" + (f" ({info} info)" if info else "")

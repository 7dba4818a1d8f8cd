"""scriptdiff as a library: every command's work, returned as data, never printed.

The command line (scriptdiff/cli.py, scriptdiff/commands/) is a thin layer over these
functions: it turns arguments into calls, renders the Report with a writer and prints it.
Everything here returns a `Report` (findings, masked substitutions, input errors, verdicts;
`report.to_json()` is the JSON contract, `report.exit_code()` the CLI's status) or plain
data, and raises `UsageError` (one line) when the request itself cannot be carried out.

    from scriptdiff import api

    report = api.diff("fixtures/example/gpu", "fixtures/example/npu")
    for f in report.findings:
        print(f.rule, f.severity, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None)
    print(api.render(report, "markdown"))

Functions: init, diff, diff_revisions, fix, hparams, check, check_files, env, collect, data,
data_fingerprint, data_merge, weights, weights_fingerprint, weights_merge, executor, review, read_patch,
baseline, load_baseline, render, external_diff, rules, rule, curves (and curves_view), dumps (and
dumps_settings). Long work (hashing) reports progress to an object with start(total),
advance(n) and close() when one is passed; the library itself never prints. Options (select/ignore,
cache, jobs, --max-bytes, a loaded baseline) travel in `Options`.
"""
from __future__ import annotations

import copy
import dataclasses
import os
from typing import TYPE_CHECKING

from . import fix as fixing
from .inputs import gitsrc
from .run import onefile, scopes, zygote
from .run.engine import read_inputs
from .model import Fact, Finding, InputError, Options, Report, Severity, UsageError
from .run.pipeline import Inputs, diff_files, pair_sources, run
from .ruleset.registry import detect
from .report import render as _render
from .ruleset.rules import Rule, check_profile, check_selectors, use_packs, user_packs  # noqa: F401
from .ruleset.rules import load as load_rules
from .inputs.sources import SourceError, overlaid, read_path
from .run.suppress import SuppressError, baseline_document
from .run.suppress import load_baseline as _load_baseline
from .run.folders import diff_listings, diff_trees
from .run.pairing import skip_dirs
from .inputs.walk import walk
from .ruleset.vocabulary import default_fact, dialect_default

if TYPE_CHECKING:  # names of annotations only; imported where used
    from .project.checkrun import CheckConfig
    from .checks import weights as weights_mod
    from .run.review import read_patch  # noqa: F401


def __getattr__(name: str):
    """`api.read_patch`, imported with the review module when first asked for; `api.HPARAM_KEYS`,
    the keys `hparams` always lists, in order (rules/hparams.yaml `hparams_table`, of the packs
    in use)."""
    if name == "read_patch":
        from .run.review import read_patch  # lazy: keeps --help fast

        return read_patch
    if name == "HPARAM_KEYS":
        return tuple(load_rules().section("hparams_table") or ())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["UsageError", "Options", "Report", "Finding", "Fact", "diff", "diff_revisions", "fix",
           "hparams", "check", "check_files", "env", "collect", "data", "data_fingerprint", "data_merge",
           "weights", "weights_fingerprint", "weights_merge", "executor", "review", "read_patch", "baseline",
           "load_baseline", "render", "external_diff", "rules",
           "rule", "weights_overview", "renamer", "snapshot_text", "manifest_text", "fingerprint_text",
           "render_table", "HPARAM_KEYS", "check_selectors", "curves", "curves_view", "dumps", "dumps_settings", "init"]


def rules() -> list[Rule]:
    """The rule catalogue (`scriptdiff rules`): every rule with its code, check, severity,
    summary, doc and examples, in code order."""
    return list(load_rules().rules.values())


def use_rules(dirs: list[str]) -> None:
    """Load the user's rule packs in these folders (or pack files) after the shipped ones, for
    every later call of this process; [] for none (docs/rule-packs.md). Validated now: a
    broken pack raises RuleError, one line naming its file and line; a missing folder UsageError."""
    use_packs(dirs)
    load_rules()


def config_rules(config: str | None = None) -> list[str]:
    """The rule pack folders a configuration names (`rules = [...]` in [tool.scriptdiff],
    relative to it): the one at `config`, or the one found from the current folder; [] without."""
    from .project.checkrun import CheckConfigError, config_rules as read  # lazy: keeps --help fast

    try:
        return read(config)
    except CheckConfigError as e:
        raise UsageError(str(e)) from None


def test_rules(dirs: list[str]) -> list:
    """`scriptdiff rules --test DIR`: the examples of the rules in the user's packs of these
    folders (already in use: use_rules), each run through the real pipeline as the shipped
    packs' are in the tests; a list of rule_examples.ExampleResult."""
    from pathlib import Path

    from .project.rule_examples import run_examples  # lazy: keeps --help fast

    folders = [Path(d) for d in dirs]
    mine = {str(p) for p in user_packs() if any(p == f or f in p.parents for f in folders)}
    return run_examples([r for r in load_rules().rules.values() if r.user and r.pack in mine])


test_rules.__test__ = False  # a library function, not a test for pytest to collect


def rule(code_or_name: str) -> Rule:
    """One rule (`scriptdiff rule CODE`), by code (SD201) or name (attention-kernel-differs)."""
    rs = load_rules()
    key = code_or_name.upper()
    if key in rs.rules:
        return rs.rules[key]
    for r in rs.rules.values():
        if r.name == code_or_name:
            return r
    raise UsageError(f"no rule {code_or_name!r}; `scriptdiff rules` lists them")


def render(report: Report, fmt: str = "text", **options) -> str:
    """The report in a format: text, json, sarif, markdown, github."""
    return _render(report, fmt, **options)


def load_baseline(path: str):
    """A baseline file, ready for Options(baseline=...)."""
    try:
        return _load_baseline(path)
    except SuppressError as e:
        raise UsageError(str(e)) from None


def baseline(report: Report) -> dict:
    """The baseline document accepting a report's findings (`scriptdiff baseline`)."""
    return baseline_document(report.findings)


# --- diff --------------------------------------------------------------------------------------

def diff(gpu: str | list[str], npu: str | list[str] | None = None, options: Options | None = None,
         git: bool = False, repo: str = ".") -> Report:
    """`scriptdiff diff`: two files, two folders, or REV:path on either side; several files a
    side (lists) are read together as one run, as `hparams` reads them. With git=True the
    arguments are the command line's `--git REV1 REV2 [PATH...]` (see diff_revisions). One
    path (npu None), or `--git REV [PATH...]` with one revision: that file's or folder's GPU
    run against its NPU run (scriptdiff/run/onefile.py, docs/devices.md)."""
    opts = options or Options()
    gpu_list = [gpu] if isinstance(gpu, str) else list(gpu)
    if git:
        revs = [*gpu_list] + ([npu] if npu is not None else [])
        if len(revs) == 1 or _one_revision(revs[0], revs[1], repo):  # --git REV [--] PATH...: one revision
            return onefile.diff_revision(revs[0], revs[1:], opts, repo)
        return diff_revisions(revs[0], revs[1], revs[2:], opts, repo)
    if npu is None:
        if len(gpu_list) != 1:
            raise UsageError("diff takes one path (its GPU run against its NPU run), or a GPU path and an NPU path")
        path = gpu_list[0]
        if os.path.isdir(path):
            return onefile.diff_folder(path, opts)
        return onefile.diff_file(path, opts, repo)
    npu_list = [npu] if isinstance(npu, str) else list(npu)
    if len(gpu_list) != 1 or len(npu_list) != 1:  # GPU... vs NPU...: each side's files read together, one run
        for p in gpu_list + npu_list:
            if os.path.isdir(p) or gitsrc.split_revpath(p):
                raise UsageError(f"diff: {p} is a {'folder' if os.path.isdir(p) else 'REV:path'}: several paths a "
                                 f"side are files read together as one run; give a folder alone on its side "
                                 f"(use --git REV1 REV2 PATH... for paths in two revisions)")
        return diff_files(gpu_list, npu_list, opts)
    g, n = gpu_list[0], npu_list[0]
    if gitsrc.split_revpath(g) or gitsrc.split_revpath(n):
        return _git_sides(g, n, opts, repo)
    if os.path.isdir(g) or os.path.isdir(n):
        # two folders may hold many pairs for worker processes: a reader process imports the
        # readers for them while this one walks the trees (scriptdiff/run/zygote.py)
        helped = os.path.isdir(g) and os.path.isdir(n) and (opts.jobs or os.cpu_count() or 1) >= 2 \
            and not getattr(opts.progress, "enabled", False)
        if helped:
            zygote.start()
        try:
            return diff_trees(g, n, opts)
        finally:
            if helped:
                zygote.stop()
    return diff_files([g], [n], opts)


def _one_revision(rev: str, arg: str, repo: str) -> bool:
    """`--git REV PATH`: ARG is no revision but a path at REV (as git tells `REV -- PATH`)."""
    try:
        r = gitsrc.open_repo(repo)
    except gitsrc.GitError:
        return False
    try:
        gitsrc.commit(r, arg)
        return False
    except gitsrc.GitError:
        pass
    try:
        gitsrc.is_tree(r, rev, arg)
    except gitsrc.GitError:
        return False
    return True


def diff_revisions(rev1: str, rev2: str, paths: list[str], options: Options | None = None,
                   repo: str = ".") -> Report:
    """`scriptdiff diff --git REV1 REV2 [PATH...]`: two revisions' trees, or these paths in them."""
    opts = options or Options()
    try:
        r = gitsrc.open_repo(repo)
        skip = skip_dirs()
        gl = gitsrc.listing(r, rev1, paths, skip)
        nl = gitsrc.listing(r, rev2, paths, skip)
    except gitsrc.GitError as e:
        raise UsageError(str(e)) from None
    label = f" -- {' '.join(paths)}" if paths else ""
    report = Report(gpu=f"{rev1}{label}", npu=f"{rev2}{label}")
    # each side's launch scripts find their program and configs in their own revision
    return diff_listings(gl, nl, report, opts, sides=(scopes.revision(repo, rev1), scopes.revision(repo, rev2)))


def _git_sides(g: str, n: str, opts: Options, repo_dir: str) -> Report:
    """REV:path against REV:path (or a file/folder on disk): files or folders on both sides."""
    skip = skip_dirs()
    report = Report(gpu=g, npu=n)
    repo = None
    sides = []
    where = []  # each side's scope: a revision's tree (REV:path), or the disk
    try:
        for arg in (g, n):
            rp = gitsrc.split_revpath(arg)
            if rp is None:
                if os.path.isdir(arg):
                    sides.append(("tree", walk(arg, skip, report.errors, arg.rstrip("/"))))
                    where.append(scopes.disk(arg))
                else:
                    srcs = read_inputs([arg], report)
                    sides.append(("file", srcs[0] if srcs else None))
                    where.append(scopes.disk())
                continue
            repo = repo or gitsrc.open_repo(repo_dir)
            rev, path = rp
            if gitsrc.is_tree(repo, rev, path):
                sides.append(("tree", gitsrc.subtree_listing(repo, rev, path, skip)))
                where.append(scopes.revision(repo_dir, rev, root=path))
            else:
                src = gitsrc.read_source(repo, rev, path)
                if src.is_binary():
                    raise UsageError(f"{src.name}: binary file; not compared")
                sides.append(("file", src))
                where.append(scopes.revision(repo_dir, rev))
    except gitsrc.GitError as e:
        raise UsageError(str(e)) from None
    (gk, gv), (nk, nv) = sides
    if gk != nk:
        raise UsageError(f"cannot compare a {'folder' if gk == 'tree' else 'file'} ({g}) with a "
                         f"{'folder' if nk == 'tree' else 'file'} ({n})")
    if gk == "tree":
        return diff_listings(gv, nv, report, opts, sides=(where[0], where[1]))
    if gv is None or nv is None:
        return report.sorted()
    return report.absorb(run(scopes.files([gv], [nv], [(gv, nv)], (where[0], where[1]), report=report), opts))


def external_diff(argv: list[str], options: Options | None = None, env: dict | None = None) -> Report:
    """git's external diff call: path old-file old-hex old-mode new-file new-hex new-mode
    [new-path metadata] (GIT_EXTERNAL_DIFF=scriptdiff git diff; a difftool's two files come
    here with their path and unknown ids). Each side's references are found in the revision
    git compares on that side (scopes.git_diff_sides), else not followed, with a note."""
    opts = options or Options()
    if len(argv) not in (7, 9):
        raise UsageError("git external diff expects 7 (or 9) arguments")
    path, old_file, new_file = argv[0], argv[1], argv[4]
    new_path = argv[7] if len(argv) == 9 else path
    report = Report(gpu=f"a/{path}", npu=f"b/{new_path}")
    scope = scopes.git_diff_sides(scopes.GitDiffSide(path, old_file, argv[2], f"a/{path}"),
                                  scopes.GitDiffSide(new_path, new_file, argv[5], f"b/{new_path}"), env)
    if scope.errors:
        report.errors.extend(scope.errors)
        return report
    g, n = scope.sources
    if g.is_binary() or n.is_binary():
        report.errors.append(InputError(n.name, "binary file; not compared"))
        return report
    return report.absorb(run(scopes.files([g], [n], [(g, n)], scope.sides, report=report), opts))


# --- fix ---------------------------------------------------------------------------------------

def fix(gpu: str | list[str], npu: str | None = None, options: Options | None = None, write: bool = True,
        force: bool = False, git: bool = False, repo: str = ".") -> "fixing.FixResult":
    """`scriptdiff fix`: edit the NPU side so that each chosen finding's NPU value becomes the GPU
    value, at the place it is written (docs/fix.md). The inputs are `diff`'s (two files, two
    folders, or one file or folder's two runs); a git revision is refused, since it cannot be
    written. `options.select`/`ignore` choose the rules (by default the warning and error
    findings); `write=False` (`--diff`) plans and checks the edits and writes nothing; `force`
    edits files with uncommitted changes in a git work tree. Every finding of the run is in the
    result, fixed or with the reason it is not."""
    opts = options or Options()
    args = [gpu] if isinstance(gpu, str) else list(gpu)
    if git:
        raise UsageError("fix edits files on disk, and a git revision cannot be written (--git): check out the "
                         "NPU revision and give its path")
    for a in args + ([npu] if npu is not None else []):
        if gitsrc.split_revpath(a):
            raise UsageError(f"{a}: a git revision cannot be written; fix edits files on disk (check out the "
                             f"revision and give its path)")
    run_opts = dataclasses.replace(opts, keep_facts=True, select=None, ignore=None, baseline=None, keep_texts=False)
    report = diff(args, npu, run_opts, repo=repo)
    target = npu if npu is not None else args[0]
    root = target if os.path.isdir(target) else (os.path.dirname(target) or ".")
    decisions = fixing.plan(report, root, opts.select, opts.ignore, force=force, vouch=fixing.unvouched)
    sources = {name: src for (side, name), src in report.sources.items() if side == "npu"}
    result = fixing.FixResult(gpu=report.gpu, npu=report.npu, decisions=decisions, errors=list(report.errors),
                              report=report, masked=(len(report.masked), len(report.masked)))
    active = [d for d in decisions if d.edits]
    files = fixing.apply(active, sources)
    active = [d for d in active if d.edits]

    def rerun(changed: dict) -> Report:
        with overlaid({c.src.origin: fixing.encoded(c.src, c.new) for c in changed.values()}):
            return diff(args, npu, run_opts, repo=repo)

    after = rerun(files) if files else report
    failed = _unverified(report, after, active)
    if failed:  # which edits do not pass: each alone, then the ones that pass together
        good = []
        for d in active:
            alone = fixing.apply([_copy(d)], sources)
            if alone and not _unverified(report, rerun(alone), [d]):
                good.append(d)
            else:
                d.refuse("the edit did not pass the check: " + (failed.get(id(d)) or "diff after it differs more")
                         + "; fix it by hand", "not verified")
        files = fixing.apply(good, sources)
        after = rerun(files) if files else report
        if _unverified(report, after, good):
            for d in good:
                d.refuse("the edits together did not pass the check (diff after them); fix them one at a time",
                         "not verified")
            files, after = {}, report
        active = [d for d in good if d.edits]
    for d in active:
        d.fixed = True
    result.files, result.after, result.masked = files, after, (len(report.masked), len(after.masked))
    if write and files:
        for line in fixing.write(files):
            name = line.split(": ", 1)[0]
            result.errors.append(InputError(name, line.split(": ", 1)[1]))
            for d in active:
                if any(e.path == name for e in d.edits):
                    d.refuse(f"not written: {line.split(': ', 1)[1]}", "file")
            files.pop(name, None)
        result.written = bool(files)
    return result


def _copy(d):
    return copy.copy(d)


def _ident(f: Finding) -> tuple:
    return (f.rule, f.key, f.gpu.path if f.gpu else None, f.npu.path if f.npu else None)


def _unverified(before: Report, after: Report, active: list) -> dict:
    """What the check found wrong, by decision (id -> why; 0 -> for all): a fixed finding still
    reported, a new warning or error, a computed value (data parallel size, accumulation steps)
    that agreed and now differs, a different number of masked substitutions, a new input error."""
    out: dict = {}
    now = {_ident(f) for f in after.findings}
    for d in active:
        if _ident(d.finding) in now:
            out[id(d)] = f"diff still reports {d.finding.rule} {d.finding.key}"
    was = {_ident(f) for f in before.findings}
    new = sorted({f"{f.rule} {f.key}" for f in after.findings if (Severity(f.severity).loud or f.derived)
                  and _ident(f) not in was})
    if new:
        out[0] = f"diff then reports {', '.join(new[:3])}"
    if len(after.masked) != len(before.masked):
        out[0] = f"the masked substitutions went from {len(before.masked)} to {len(after.masked)}"
    errs = {(e.path, e.message) for e in before.errors}
    added = [e for e in after.errors if (e.path, e.message) not in errs]
    if added:
        out[0] = f"{added[0].path}: {added[0].message}"
    if 0 in out:
        for d in active:
            out.setdefault(id(d), out[0])
    return out


# --- hparams -----------------------------------------------------------------------------------



def hparams(gpu: list[str], npu: list[str], options: Options | None = None, include_env: bool = False) -> Report:
    """`scriptdiff hparams`: both sides' effective settings; `report.table` holds the rows
    (key, GPU fact, NPU fact), defaults filled in where a side did not set a key. A folder is
    read through its launch script, as a folder diff reads its run (the program it starts, the
    configs it references); a folder with none, or with several, is refused (UsageError)."""
    gpu, npu = _run_files(list(gpu)), _run_files(list(npu))
    report = diff_files(gpu, npu, dataclasses.replace(options or Options(), evidence=False))
    rows = {k: (g, n) for k, g, n in report.table}
    tables = report.tables
    out = []
    first = tuple(load_rules().section("hparams_table") or ())  # rules/hparams.yaml, in this order
    for k in list(first) + sorted(k for k in rows if k not in first):
        g, n = rows.get(k, (None, None))
        if tables is not None:
            g = g if g is not None else default_fact(k, tables[0].frameworks) or dialect_default(k, tables[0])
            n = n if n is not None else default_fact(k, tables[1].frameworks) or dialect_default(k, tables[1])
        f = g or n
        if f is not None and f.check != "hyperparameters" and not include_env:
            continue
        out.append((k, g, n))
    report.table = out
    return report


def _run_files(paths: list[str]) -> list[str]:
    """`paths` with each folder replaced by its run: the one launch script in it (a kind that
    starts a run, rules/kinds.yaml `entry`), which brings its program and configs with it."""
    out = []
    for p in paths:
        if not os.path.isdir(p):
            out.append(p)
            continue
        errors: list[InputError] = []
        runs = []
        for e in sorted(walk(p, skip_dirs(), errors, p.rstrip("/") or p).values(), key=lambda e: e.display):
            try:
                if detect(read_path(e.path)).entry:
                    runs.append(e.display)
            except SourceError:
                continue
        if len(runs) != 1:
            what = f"launch scripts ({', '.join(runs[:4])}{' ...' if len(runs) > 4 else ''})" if runs \
                else "no launch script"
            raise UsageError(f"hparams: {p} is a folder with {what}: a folder is read through its one launch "
                             f"script; name the files of one run instead (`hparams GPU... vs NPU...`)")
        out.append(runs[0])
    return out


# --- check -------------------------------------------------------------------------------------

def check(config: str | CheckConfig | None = None, gpu: list[str] | None = None, npu: list[str] | None = None,
          options: Options | None = None, strict: bool = False) -> Report:
    """`scriptdiff check`: the six pre-checks from a configuration (a path, a CheckConfig, or
    found from the current folder), with KEY=PATH inputs added per side; verdicts in
    `report.verdicts`. The configuration's baseline applies unless options carry one. An
    environment snapshot or fingerprint the machines make that is not there yet leaves its
    checks not checked (`report.details["waiting"]`), or, `strict`, is an input error."""
    from .project.checkrun import CheckConfig, run_checks  # lazy: keeps --help fast
    opts = options or Options()
    cfg = config if isinstance(config, CheckConfig) else _config(config, gpu, npu)
    if opts.baseline is None and cfg.baseline:
        opts.baseline = load_baseline(cfg.baseline)
    return run_checks(cfg, opts, strict=strict)


def check_files(files: list[str], config: str | None = None, gpu: list[str] | None = None,
                npu: list[str] | None = None, options: Options | None = None) -> Report:
    """`scriptdiff check --files`: each file in a configured input against its GPU/NPU
    counterpart (the pre-commit hook). The configuration is required, and at least one of its
    inputs must exist (UsageError); a file in no configured input is left alone."""
    from .project.checkrun import configured_inputs, diff_counterparts, find_config  # lazy: keeps --help fast
    opts = options or Options()
    if not (config or gpu or npu or find_config()):
        raise UsageError("check --files: no configuration: the staged files are compared with their counterparts in "
                         "the GPU and NPU inputs it names; run `scriptdiff init`, or add [tool.scriptdiff] to "
                         "pyproject.toml or write scriptdiff.toml (docs/check.md)")
    cfg = _config(config, gpu, npu)
    named = configured_inputs(cfg)
    if not any(os.path.exists(p) for p in named):
        shown = ", ".join(sorted({os.path.relpath(p) for p in named})[:4]) or "none"
        raise UsageError(f"check --files: none of the inputs {os.path.relpath(cfg.path) if cfg.path else '--gpu/--npu'} "
                         f"names exists ({shown}"
                         f"{' ...' if len(named) > 4 else ''}): fix the configuration (`scriptdiff init` writes one)")
    if opts.baseline is None and cfg.baseline:
        opts.baseline = load_baseline(cfg.baseline)
    return diff_counterparts(files, cfg, opts)


def _config(path: str | None, gpu: list[str] | None, npu: list[str] | None) -> "CheckConfig":
    from .project.checkrun import CheckConfigError, load_config  # lazy: keeps --help fast

    try:
        return load_config(path, gpu or [], npu or [])
    except CheckConfigError as e:
        raise UsageError(str(e)) from None


def init(root: str = ".", gpu: str | None = None, npu: str | None = None, force: bool = False,
         write: bool = True):
    """`scriptdiff init`: find the project's GPU and NPU setups by the pairing rules (or take
    `gpu` and `npu`), and write the configuration `check` finds by itself ([tool.scriptdiff]
    appended to pyproject.toml, else scriptdiff.toml). Returns the plan (initconf.Plan: what
    was found, the file and its text, the commands each machine runs); UsageError when
    nothing is found or the project is configured already."""
    from .project import initconf  # lazy: keeps --help fast

    plan = initconf.plan(root, gpu, npu, force=force)
    if write:
        try:
            initconf.write(plan)
        except OSError as e:
            raise UsageError(f"init: cannot write {plan.target}: {e.strerror or e}") from None
    return plan


# --- environment -------------------------------------------------------------------------------

def env(gpu: list[str], npu: list[str], options: Options | None = None, strict_local: bool = False) -> Report:
    """`scriptdiff env`: snapshots, requirements, pip freeze / pip list, conda files per side.

    With no GPU files (`gpu=[]`), one-side mode: the NPU side's stack is checked against the
    published Ascend version tables (rules/ascend_versions.yaml) and only those advisories
    are reported. Either way, `report.overview` holds the NPU stack as a compact table
    (component, version, kind, newest known) when the NPU side has one."""
    from .checks.ascend_stack import is_advisory, stack_lines, stack_rows  # lazy: keeps --help fast
    for p in list(gpu) + list(npu):
        if os.path.isdir(p):
            raise UsageError(f"{p}: is a directory; `env` compares snapshot or package-list files")
    if not npu:
        raise UsageError("env needs the NPU side's snapshot or package list")
    one_side = not gpu
    opts = options or Options()
    opts.strict_local = strict_local or opts.strict_local
    opts.checks = {"environment", "libraries"}
    opts.use_cache = False
    report = Report(gpu="(none: one-side mode)" if one_side else " ".join(gpu), npu=" ".join(npu))
    sides = []
    for paths in (gpu, npu):  # an input that is no snapshot or package list is an error, not an empty side
        srcs = []
        for src in read_inputs(list(paths), report):
            k = detect(src)
            if opts.checks & set(k.checks):
                srcs.append(src)
            else:
                what = "an empty file" if not src.data.strip() else f"a {k.name} file"
                report.errors.append(InputError(src.name, f"not an environment snapshot or package list ({what}); "
                                                          f"not compared", fatal=True))
        sides.append(srcs)
    if not sides[1] or (not one_side and not sides[0]):
        return report.sorted()
    report.absorb(run(Inputs(sides[0], sides[1], [] if one_side else pair_sources(sides[0], sides[1])), opts))
    if one_side:  # the NPU stack's advisories alone: nothing was compared with a GPU side
        report.findings = [f for f in report.findings if is_advisory(f.key)]
        report.masked = []
        report.compared = max(report.compared, 1 if any(a.status != "failed" for a in report.inputs) else 0)
    if report.tables:
        report.details["npu_stack"] = stack_rows(report.tables[1])
        report.overview = stack_lines(report.details["npu_stack"])
    return report


def collect(root: str | None = None, run_commands: bool | None = None, sites: list[str] | None = None) -> dict:
    """`scriptdiff collect`: this machine's (or an install tree's) environment snapshot."""
    from .project.collect import collect as _collect  # lazy: keeps --help fast
    if root is not None and not os.path.isdir(root):
        raise UsageError(f"--root {root}: not a directory")
    return _collect(root=root, run_commands=False if root else run_commands, sites=sites)


# --- patches -----------------------------------------------------------------------------------

def review(patch: bytes, name: str = "<patch>", options: Options | None = None, root: str | None = None,
           by_hunk: bool = False) -> Report:
    """`scriptdiff review PATCH`: what a GPU->NPU patch changes beyond the expected
    substitutions: the findings `diff` gives on its two sides (the patched files found under
    `root` as `git apply -p` finds them, read whole, each side's references resolved with the
    patched texts) that lie in its changed hunks, with a summary of those hunks
    (`report.overview`, JSON `hunks`). `by_hunk`: one finding per hunk instead (SD156 error,
    SD153 warning or SD157 info, by its most severe difference)."""
    from .run.review import review as _review  # lazy: keeps --help fast
    return _review(patch, name, options or Options(), root=root, by_hunk=by_hunk)


# --- dataset -----------------------------------------------------------------------------------

def executor(name: str = "serial", address: str | None = None, parts: int | None = None):
    """How fingerprints are hashed: "serial" (this machine, the default) or "ray" (in parts on
    the Ray cluster `address` or RAY_ADDRESS names, else a local one); `parts`: how many."""
    from .checks import entry  # lazy: keeps --help fast
    return entry.executor(name, address, parts)


def data(gpu: str, npu: str, options: Options | None = None, sample: bool = False,
         workers: int | None = None, tokenizers: tuple[str, str] | None = None,
         scripts: tuple[str, str] | None = None, progress=None, fanout=None) -> Report:
    """`scriptdiff data GPU NPU`: two datasets (folders, files or object-store prefixes
    fingerprinted now, or manifests), file by file. `tokenizers` / `scripts`: (GPU, NPU)
    tokenizer paths, or launch scripts naming them. `sample`: hash only heads, tails and
    strided blocks of large files. `progress`: an object with start(total), advance(n),
    close(). `fanout`: `executor("ray")` to hash on a Ray cluster."""
    from .checks import entry  # lazy: keeps --help fast
    return entry.data(gpu, npu, options, _hashing(sample, workers, progress, fanout), tokenizers, scripts)


def _hashing(sample: bool, workers: int | None, progress, fanout):
    from .checks import entry  # lazy: keeps --help fast
    return entry.hashing(sample, workers, progress, fanout)


def data_fingerprint(paths: list[str], sample: bool = False, workers: int | None = None,
                     tokenizers: list[str] | None = None, scripts: list[str] | None = None, progress=None,
                     exclude: set[str] | None = None, shard: "str | tuple[int, int] | None" = None,
                     fanout=None) -> tuple[dict, list[InputError]]:
    """`scriptdiff data fingerprint PATH...`: the manifest of the files under the paths (local
    paths or `s3://` prefixes), and the input errors met (fatal ones when nothing could be
    read). `shard` ("I/N"): part I of N only, a part file for `data_merge`. `fanout`:
    `executor("ray")` to hash the parts on a Ray cluster (the same manifest)."""
    from .checks import entry  # lazy: keeps --help fast
    return entry.data_fingerprint(paths, _hashing(sample, workers, progress, fanout), tokenizers, scripts,
                                  exclude, shard)


def data_merge(parts: list[str], tokenizers: list[str] | None = None, scripts: list[str] | None = None
               ) -> tuple[dict, list[InputError]]:
    """`scriptdiff data merge PART...`: the manifest of a complete set of `--shard I/N` part
    files, the same bytes a serial run writes, and the errors the parts met. UsageError (one
    line) when they do not belong together: different roots or listings, a part missing or
    given twice."""
    from .checks import entry  # lazy: keeps --help fast
    return entry.data_merge(parts, tokenizers, scripts)


# --- weights -----------------------------------------------------------------------------------

def weights(gpu: str, npu: str, options: Options | None = None, rename: "weights_mod.Renamer | None" = None,
            progress=None, fanout=None) -> Report:
    """`scriptdiff weights GPU NPU`: two checkpoints (or fingerprints; local or `s3://`) tensor
    by tensor; the differing tensors measured (Finding.extra: max |diff|, relative L2,
    cosine) when both are at hand. `report.details["weights"]` holds the counts and the worst
    tensors; `weights_overview(report)` gives the shortened text view. `fanout`:
    `executor("ray")` to hash on a Ray cluster (progress then counts parts)."""
    from .checks import entry  # lazy: keeps --help fast
    return entry.weights(gpu, npu, options, rename, progress, fanout)


def weights_fingerprint(path: str, progress=None, shard: "str | tuple[int, int] | None" = None,
                        fanout=None) -> dict:
    """`scriptdiff weights fingerprint CHECKPOINT`: name, dtype, shape and hash of every tensor
    (a local or `s3://` checkpoint). `shard` ("I/N"): part I of N only, a part file for
    `weights_merge`; `fanout`: `executor("ray")` to hash the parts on a Ray cluster."""
    from .checks import entry  # lazy: keeps --help fast
    return entry.weights_fingerprint(path, progress, shard, fanout)


def weights_merge(parts: list[str]) -> dict:
    """`scriptdiff weights merge PART...`: the fingerprint of a complete set of `--shard I/N`
    part files, the same bytes a serial run writes; UsageError when they do not belong together."""
    from .checks import entry  # lazy: keeps --help fast
    return entry.weights_merge(parts)


def weights_overview(report: Report, top: int = 10) -> Report:
    """The text view of a big weights comparison: the summary (tensor counts, the worst
    tensors) as the report's overview, and at most `top` findings per rule."""
    from .checks import weights as weights_mod  # lazy: keeps --help fast
    return weights_mod.shortened(report, report.details["weights"], top)


def renamer(patterns: list[str] | None = None, map_file: str | None = None):
    """The NPU -> GPU tensor renaming of `weights --map PATTERN=REPLACEMENT` / `--map-file`."""
    from .checks import weights as weights_mod  # lazy: keeps --help fast
    try:
        if map_file:
            return weights_mod.Renamer.from_file(map_file, patterns or [])
        return weights_mod.Renamer(patterns) if patterns else None
    except ValueError as e:
        raise UsageError(str(e)) from None


def snapshot_text(snapshot: dict) -> str:
    """An environment snapshot as the JSON text `collect` writes."""
    from .project.collect import dumps as snapshot_dumps  # lazy: keeps --help fast
    return snapshot_dumps(snapshot)


def manifest_text(manifest: dict) -> str:
    """A dataset manifest (or a `--shard` part of one) as the JSON text `data fingerprint` writes."""
    from .checks import entry  # lazy: keeps --help fast
    return entry.manifest_text(manifest)


def fingerprint_text(fingerprint: dict) -> str:
    """A weights fingerprint (or a `--shard` part of one) as the JSON text `weights fingerprint` writes."""
    from .checks import entry  # lazy: keeps --help fast
    return entry.fingerprint_text(fingerprint)


def render_table(report: Report, fmt: str = "text", **options) -> str:
    """`hparams` output: the side-by-side table (text, json, markdown) or a report format."""
    from .report import hparams_table  # lazy: keeps --help fast
    return hparams_table.render(report, fmt, **options)


# --- process data (training curves) ------------------------------------------------------------

def curves(gpu: str | list[str], npu: str | list[str], options: Options | None = None, rtol: float = 0.01,
           first: int = 10, window: int = 50, spike_z: float = 6.0, align: str = "auto", progress=None,
           repo: str = ".", floor: str | list[str] | None = None, floor_side: str = "gpu") -> Report:
    """`scriptdiff curves GPU NPU`: both runs' training curves (logs or exports; files, folders
    or REV:path per side), aligned, measured and judged; the verdict is a finding of check
    `process`. `report.overview` says what was read, the alignment, the verdict with its
    evidence and the per-series table; the JSON gains a `curves` section. `floor`: a second
    run of `floor_side` (`--floor`): each metric's tolerance is at least that side's run-to-run
    spread, and the verdict says whether the gap is within it (docs/evidence.md)."""
    from .curves import run  # lazy: keeps --help fast

    if floor_side not in ("gpu", "npu"):
        raise UsageError("--floor-side must be gpu or npu")
    settings = run.settings(rtol=rtol, first=first, window=window, spike_z=spike_z, align=align)
    return run.compare(gpu, npu, options or Options(), settings, progress=progress, repo=repo, floor=floor,
                       floor_side=floor_side)


def curves_view(report: Report, what: str, **options):
    """A view of a `curves` report: "chart" (terminal lines; width, height, series), "plot"
    (path: a PNG or SVG through matplotlib; returns its pixel size), "markdown" (plot: an
    image to embed), "errors" (path: every aligned point as CSV; returns the row count)."""
    if what == "markdown":  # the report's own section (report/curves.py), the plot linked relative to the document
        from .report.curves import markdown_section, relative_to  # lazy: keeps --help fast
        from .ruleset.secrets import redact_text  # lazy: keeps --help fast

        res, plot = report.details.get("curves"), options.get("plot")
        return redact_text(markdown_section(res, relative_to(plot, options.get("out_path")) if plot else None))
    from .curves import run  # lazy: keeps --help fast

    return run.view(report, what, **options)


# --- process data (msprobe dumps) -------------------------------------------------------------

def dumps_settings(rtol: float = 0.5, output_rtol: float = 0.1, input_rtol: float = 0.01, atol: float = 1e-6,
                   chain: int = 10, window: int = 256):
    """The thresholds and bounds of a dumps comparison (docs/dumps.md); UsageError when one is
    out of range."""
    from .dumps import entry  # lazy: keeps --help fast

    return entry.settings(rtol=rtol, output_rtol=output_rtol, input_rtol=input_rtol, atol=atol, chain=chain,
                          window=window)


def dumps(gpu: str, npu: str, options: Options | None = None, settings=None,
          scripts: tuple[str, str] | None = None, progress=None, floor: str | None = None,
          floor_side: str = "gpu") -> Report:
    """`scriptdiff dumps GPU_DUMP NPU_DUMP`: two runs' msprobe dumps (a dump, step or rank
    folder, or a dump.json, per side) matched call by call; the first divergence and what
    follows it are findings of check `dumps`. With `scripts` (two folders or files) the setups
    are compared in the same run and the first divergence linked to their findings (its
    probable cause). `report.overview` says what was read and shows the calls side by side;
    the JSON gains a `dumps` section. `progress` (start, advance, close) is told the bytes
    of dump.json read. `floor`: a second run's dump of `floor_side` (`--floor`): each call
    statistic's tolerance is at least the two runs' spread (docs/evidence.md)."""
    from .dumps import entry  # lazy: keeps --help fast

    return entry.compare(gpu, npu, options or Options(), settings, scripts=scripts, progress=progress, floor=floor,
                         floor_side=floor_side)

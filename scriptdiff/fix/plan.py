"""What `scriptdiff fix` does with each finding: the edits that bring the NPU value back to the
GPU's, or the reason it does not.

A finding is fixed from its facts' provenance (`Side.fact`: path, line, `meta`), in three ways:

- set: the NPU side writes the setting; its value, where it is written, becomes the GPU's
  (the GPU side's own value, or the default the GPU side relies on: Python writes it, a launch
  option or a config key the GPU side leaves out is removed instead, so the NPU side relies
  on the same default);
- remove: the NPU side writes it and the GPU side has no value for it at all;
- add: the GPU side writes it and the NPU side does not: written into the NPU file of the same
  kind in the same comparison scope (the launch script of the same run, the config of the
  same name, the call the GPU call pairs with), next to its neighbours.

The edit itself is the NPU file kind's editor's (rules/kinds.yaml `fixer`). Refused, with the
reason: findings about datasets, weights, environments, libraries, curves and initial
checkpoints (what to do is said), code differences, derived values, inputs not understood,
references to other config files, secret-looking values, a file outside the NPU side or not
on disk, a file with merge-conflict markers, a file a replacement would betray (hard links,
read-only), a file git cannot vouch for (without --force: uncommitted, untracked or ignored,
marked skip-worktree, or a repository git cannot read), and whatever its editor refuses (computed, environment, ambiguous, no spelling, no place).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from ..run.compare import show
from ..ruleset.envmap import npu_name
from ..model import ORIGIN_DEFAULT, ORIGIN_EXPLICIT, Fact, Finding, Report, Severity
from ..ruleset.registry import detect
from ..ruleset.rules import code
from ..inputs import writeback
from ..inputs.sources import Source
from .base import Edit, Refused, Request, conflict_line

# the data-and-checkpoint settings that name a file, a folder or a hub id: never written by fix
PATHS = frozenset({"load", "data_path", "pretrained_checkpoint", "model_name_or_path", "tokenizer_model",
                   "tokenizer_name_or_path", "save"})


@dataclass
class Decision:
    """One finding, and what fix does with it."""

    finding: Finding
    chosen: bool = False
    action: str = ""  # set | add | remove
    edits: list[Edit] = field(default_factory=list)
    reason: str | None = None  # why it is not fixed
    why: str | None = None  # the kind of reason (base.WHYS)
    fixed: bool = False  # edited and checked (api.fix)

    def refuse(self, reason: str, why: str) -> None:
        self.reason, self.why, self.edits, self.fixed = reason, why, [], False


@dataclass
class Context:
    report: Report
    npu_root: str
    force: bool = False
    files: dict[str, "Refused | None"] = field(default_factory=dict)  # NPU file -> why it cannot be edited
    vouch: Any = None  # callable(real path) -> why git cannot vouch for the file, or None (fix.unvouched)


def chosen(f: Finding, select: list[str] | None, ignore: list[str] | None) -> bool:
    """--select picks rules by code or prefix (any severity); without it, the loud findings."""
    if ignore and any(f.rule.startswith(c) for c in ignore):
        return False
    if select:
        return any(f.rule.startswith(c) for c in select)
    return Severity(f.severity).loud


def plan(report: Report, npu_root: str, select: list[str] | None = None, ignore: list[str] | None = None,
         force: bool = False, vouch=None) -> list[Decision]:
    """A decision for every finding of the report (made with Options.keep_facts)."""
    ctx = Context(report, npu_root, force, vouch=vouch)
    out = []
    for f in report.findings:
        d = Decision(f, chosen=chosen(f, select, ignore))
        if not d.chosen:
            d.refuse("not chosen: info cannot change numerics (--select its code to fix it)" if not Severity(f.severity).loud
                     and not select else "not chosen (--select/--ignore)", "not chosen")
            out.append(d)
            continue
        try:
            d.action, d.edits = decide(f, ctx)
        except Refused as e:
            d.refuse(str(e), e.why)
        else:  # the other settings of the key the finding stands for (compare.py): edited alike;
            for other in f.settings:  # one that cannot be leaves its finding, which the check sees
                try:
                    d.edits += [e for e in decide(other, ctx)[1] if e not in d.edits]
                except Refused:
                    pass
        out.append(d)
    return out


# ------------------------------------------------------------------------------ deciding

def advice(f: Finding) -> str | None:
    """What to do about a finding that is not a setting of a file fix can edit."""
    g = f.gpu.value if f.gpu is not None else None
    n = f.npu.value if f.npu is not None else None
    if f.check == "libraries":
        pkg = f.key.removeprefix("pkg:")
        return (f"a library version: install {pkg}=={g} on NPU (pin it in the NPU requirements)" if g else
                f"a library on NPU only: {pkg} {n}; remove it or match the GPU environment")
    if f.check == "environment":
        if f.key.startswith("env:"):
            gname = f.key.removeprefix("env:")
            name = (f.npu.fact.meta.get("name") if f.npu is not None and f.npu.fact is not None else None) \
                or npu_name(gname) or gname  # the NPU's own name: HCCL_DETERMINISTIC for NCCL_DETERMINISTIC
            return (f"an environment variable: set {name}={g} where the NPU run starts" if g is not None else
                    f"an environment variable set on NPU only ({f.key.removeprefix('env:')}); unset it if it is not "
                    f"the NPU's tuning")
        if f.key.startswith("newest:"):
            return "the NPU stack is older than the newest release scriptdiff knows: upgrade it on the NPU machine"
        what = f.key.split(":", 1)[-1]
        return (f"a version of the machine ({what}): the GPU side has {show(g)}, the NPU side {show(n)}; match it "
                f"on the NPU machine where it matters (`scriptdiff env` compares them)")
    if f.check == "dataset":
        return "a dataset file differs: copy the GPU side's data to the NPU side (compare fingerprints again)"
    if f.check == "weights":
        return "an initial weight differs: load the GPU side's checkpoint on NPU"
    if f.check == "process":
        return "a training curve: not a setting; fix the setup and run again"
    if f.rule == code("data-or-checkpoint-differs") and (f.key in PATHS or any(
            isinstance(v, str) and ("/" in v or "\\" in v) for v in (g, n))):  # a switch (--finetune) is a setting
        what = "checkpoint" if f.key in ("load", "pretrained_checkpoint", "model_name_or_path") else \
            "tokenizer" if f.key.startswith("tokenizer") else "data"
        return (f"the {what} on each side: load {show(g)} on NPU (or copy it there under the NPU path) and set "
                f"the path by hand" if g is not None else f"the {what} is set on NPU only: check it by hand")
    return None


def decide(f: Finding, ctx: Context) -> tuple[str, list[Edit]]:
    if f.rule == code("alignment-setup-missing"):
        return "add", _aligned(f, ctx)
    adv = advice(f)
    if adv is not None:
        raise Refused(adv, "check")
    if f.rule == code("input-not-understood"):
        raise Refused("an input that was not understood: nothing of it can be set; see why in its note", "unknown")
    if f.check == "script":
        raise Refused("a difference in the code, not a value: port that code by hand", "code")
    if f.check != "hyperparameters":
        raise Refused(f"a {f.check} finding: not a setting fix edits", "other")
    gf = f.gpu.fact if f.gpu is not None else None
    nf = f.npu.fact if f.npu is not None else None
    if f.derived or any(x is not None and x.derived for x in (gf, nf)):
        via = next((x.via for x in (nf, gf) if x is not None and x.derived and x.via), None)
        raise Refused(f"derived ({via or 'computed from other settings'}): it follows the settings it is "
                      f"computed from; fix those", "derived")
    if f.key.startswith("config:"):
        raise Refused("another config file is referenced: point the NPU side at the file that matches the GPU's "
                      "by hand", "reference")
    if any(x is not None and (x.meta.get("withheld") or str(x.value).startswith("<withheld")) for x in (gf, nf)):
        raise Refused("a secret-looking value: never written", "secret")
    gt, nt = _unit(ctx.report, f, gf, nf)
    npu_facts = [x for fs in (nt.facts.values() if nt else ()) for x in fs]
    gpu_facts = [x for fs in (gt.facts.values() if gt else ()) for x in fs]
    g_here, n_here = _written(gf), _written(nf)
    if g_here and n_here and isinstance(gf.meta.get("shell"), dict) and nf.meta.get("callee") == "argparse":
        n_here, nf = False, None  # the NPU run relies on its program's default: the flag goes into its launch
    if n_here:
        src = _source(ctx, "npu", nf.path)
        kind, mod = _editor(src)
        _check_file(ctx, src)
        gsrc = ctx.report.sources.get(("gpu", gf.path)) if g_here else None
        req = Request(key=f.key, value=f.gpu.value if f.gpu is not None else None, src=src, kind=kind, fact=nf,
                      gpu=gf if g_here else None, gpu_src=gsrc, npu_facts=npu_facts, gpu_facts=gpu_facts)
        if g_here or (gf is not None and gf.origin == ORIGIN_DEFAULT and kind == "python"):
            return "set", mod.set_value(req)  # Python writes the default the GPU side relies on
        # the GPU side has no value, or relies on a default: the NPU setting goes, and so will it
        return "remove", mod.remove(req)
    if g_here:
        gsrc = _source(ctx, "gpu", gf.path)
        src = _add_target(ctx, gf, gsrc, npu_facts)
        kind, mod = _editor(src)
        _check_file(ctx, src)
        mine = nf if nf is not None and (nf.path or nf.origin == ORIGIN_DEFAULT) else None  # a default's call, a comment
        req = Request(key=f.key, value=f.gpu.value, src=src, kind=kind, fact=mine, gpu=gf, gpu_src=gsrc,
                      npu_facts=npu_facts, gpu_facts=gpu_facts)
        sh = gf.meta.get("shell")
        rank = (sh["word"],) if isinstance(sh, dict) and sh.get("word") is not None else (gf.line or 0,)
        return "add", [e if e.order else dataclasses.replace(e, order=rank) for e in mod.add(req)]
    if gf is not None and gf.origin == ORIGIN_DEFAULT and nf is None:
        raise Refused(f"the GPU side relies on a default ({gf.via or 'a framework default'}) where the NPU side has "
                      f"no value at all (a call it does not make, or a file it could not read); set it by hand",
                      "no place")
    raise Refused("neither side writes it in a file (a default on both sides, or a log)", "no place")


def _aligned(f: Finding, ctx: Context) -> list[Edit]:
    """The alignment profile's missing item (run/alignment.py): its `export` line written into the
    NPU launch script, after the last variable the script exports (else after its #! line)."""
    add = f.extra.get("add") or {}
    line, path = add.get("line", ""), add.get("path")
    if add.get("side") != "npu":
        raise Refused(f"the GPU side's setup: fix edits the NPU side only; add `{line}` to "
                      f"{path or 'the GPU run'} by hand", "outside")
    if add.get("how") != "export" or not path:
        raise Refused(f"add `{line}` to {path or 'the NPU run'} by hand: fix writes a missing export line only",
                      "no place")
    src = _source(ctx, "npu", path)
    _check_file(ctx, src)
    text = src.text
    after = max((x.line for _gt, nt in ctx.report.unit_tables for fs in nt.facts.values() for x in fs
                 if x.path == path and x.key.startswith("env:") and x.origin == ORIGIN_EXPLICIT and x.line), default=0)
    if not after and text.startswith("#!"):
        after = 1
    lines = text.splitlines(keepends=True)
    at = sum(len(x) for x in lines[:after])
    lead = "\n" if after and lines and not lines[after - 1].endswith("\n") else ""
    return [Edit(path=src.name, start=at, end=at, text=f"{lead}{line}\n", order=(after, line))]


def _written(x: Fact | None) -> bool:
    """The fact is a setting written in a file (not a default, a derived value or a comment)."""
    return x is not None and x.origin == ORIGIN_EXPLICIT and bool(x.path) and not x.meta.get("commented") \
        and x.value is not None


def _unit(report: Report, f: Finding, gf: Fact | None, nf: Fact | None):
    for gt, nt in report.unit_tables:
        if any(x is gf for x in gt.facts.get(f.key, ())) or any(x is nf for x in nt.facts.get(f.key, ())):
            return gt, nt
    return None, None


def _source(ctx: Context, side: str, path: str | None) -> Source:
    src = ctx.report.sources.get((side, path))
    if src is None:
        raise Refused(f"{path} was not read as a file of the {side.upper()} side (a log or a snapshot?); edit it by "
                      f"hand", "no place")
    return src


def _editor(src: Source):
    kind = detect(src)
    mod = kind.fixer_module()
    if mod is None:
        raise Refused(f"{src.name} is a {kind.name} file, which fix does not edit; edit it by hand", "no place")
    return kind.name, mod


def _add_target(ctx: Context, gf: Fact, gsrc: Source, npu_facts: list[Fact]) -> Source:
    """The NPU file a setting the GPU file writes is added to: the NPU file of the same kind in
    the scope (of the same name when there are several)."""
    gkind = detect(gsrc).name
    names = []
    for x in npu_facts:
        if x.path and x.origin == ORIGIN_EXPLICIT and x.path not in names:
            src = ctx.report.sources.get(("npu", x.path))
            if src is not None and detect(src).name == gkind:
                names.append(x.path)
    if not names:
        raise Refused(f"no {gkind} file of the NPU side with settings read in this comparison to add it to; add it "
                      f"by hand", "no place")
    same = [n for n in names if os.path.basename(n) == os.path.basename(gsrc.name)]
    if len(same) == 1:
        return ctx.report.sources[("npu", same[0])]
    if len(names) == 1:
        return ctx.report.sources[("npu", names[0])]
    raise Refused(f"{len(names)} NPU {gkind} files could take it ({', '.join(names[:3])}); add it by hand",
                  "ambiguous")


def _check_file(ctx: Context, src: Source) -> None:
    """A file fix may edit: on disk, inside the NPU side, written back byte for byte, no conflict
    markers, no uncommitted changes (unless --force)."""
    if src.name in ctx.files:
        err = ctx.files[src.name]
        if err is not None:
            raise err
        return
    err = None
    try:
        _file_ok(ctx, src)
    except Refused as e:
        err = e
    ctx.files[src.name] = err
    if err is not None:
        raise err


def _file_ok(ctx: Context, src: Source) -> None:
    if not src.origin or not os.path.isfile(src.origin):
        raise Refused(f"{src.name} is not a file on disk (a git revision or a patch): fix edits files; check out "
                      f"the NPU side and give its path", "outside")
    root = os.path.realpath(ctx.npu_root)
    real = os.path.realpath(src.origin)
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        raise Refused(f"{src.name} is {real}, outside the NPU side ({ctx.npu_root}): editing it would change what "
                      f"else reads it; edit it by hand", "outside")
    if encoded(src, src.text) != src.data:
        raise Refused(f"{src.name} cannot be written back byte for byte ({src.encoding}); edit it by hand", "file")
    line = conflict_line(src.text)
    if line is not None:
        raise Refused(f"{src.name} has merge-conflict markers (line {line}): resolve the conflict first", "file")
    who = f"{src.name} (a link to {real})" if os.path.islink(src.origin) else src.name
    why = writeback.refusal(real)  # the file written is the link's target, replaced whole
    if why is not None:
        raise Refused(f"{who} {why}; edit it by hand", "file")
    why = ctx.vouch(real) if not ctx.force and ctx.vouch is not None else None
    if why is not None:  # git is asked about the file written, not about a link to it
        raise Refused(f"{who} {why}, or give --force", "file")


def encoded(src: Source, text: str) -> bytes:
    """`text` in the source's encoding (its byte-order mark kept)."""
    _ = src.text
    enc = src.encoding or "utf-8"
    if enc == "utf-8-sig":
        return b"\xef\xbb\xbf" + text.encode("utf-8")
    try:
        return text.encode(enc, "surrogateescape" if enc == "utf-8" else "strict")
    except (UnicodeEncodeError, LookupError):
        return b""

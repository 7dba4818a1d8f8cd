"""The link back to the setup: the static findings that probably explain the first divergence.

The `dumps` check's `relate` hook (rules/kinds.yaml), run once every unit of a run is
compared, with all the run's findings: the dumps' first divergence (dumps/findings.py)
carries its stacks and the settings it depends on; the setup's findings (the scripts', the
hyperparameters', ...) carry both sides' files and lines. In order, the first that finds any:

  line      a static finding at the diverging call's own line (its innermost stack frame
            outside the libraries) on either side: the same file (the longest common ending of
            the two paths: the dump was written on another machine) and the same line
  function  a finding about the function of that frame (script findings are keyed
            code:FILE:QUALNAME), never the module level
  setting   a finding on a setting the call depends on (rules/dumps.yaml dump_depends)

Each is a probable-cause finding (SD808) with both its lines. When the setup was compared
(scripts or configs were read in this run) and none explains it, SD809 says the cause is
not in the setup that was compared. The divergence itself is moved onto the script it ran
in, when that script was read (its line then shows on the review page).
"""
from __future__ import annotations

from ..run.finding import finding
from ..model import Finding, Side
from .findings import CHECK, own_frame

NOT_CAUSES = {CHECK, "process"}


def relate(findings: list[Finding], inputs: list) -> list[Finding]:
    firsts = [f for f in findings if f.check == CHECK and (f.extra.get("dumps") or {}).get("first")]
    if not firsts:
        return findings
    static = [f for f in findings if f.check not in NOT_CAUSES]
    setup = [a for a in inputs if a.status != "failed"]  # the setup's files read (or identical) in this run
    out = [f for f in findings if f not in firsts]
    for d in firsts:
        d = _moved(d, setup)
        out.append(d)
        causes, how = probable_causes(d.extra["dumps"], static)
        call = d.extra["dumps"]["gpu"][0] if d.extra["dumps"]["gpu"] else d.key
        for c, why in zip(causes, how):
            out.append(finding("dump-probable-cause", key=f"cause:{d.key}:{c.key}", gpu=c.gpu, npu=c.npu,
                               message=f"probable cause of the first divergence at {call}: {c.rule} {c.key}, "
                                       f"{why}: {c.message}"))
        if not causes and setup:
            out.append(finding("dump-cause-not-in-setup", key=f"cause:{d.key}", gpu=d.gpu, npu=d.npu,
                               message=f"no finding of the compared setup is at the lines of {call}"
                                       f"{_lines(d)}, in its function{_function(d)} or on the settings it depends on"
                                       f"{_keys(d)}: the cause is not in the setup that was compared"))
    return out


def _lines(d: Finding) -> str:
    parts = [f"{side.upper()} {s.path}:{s.line}" for side, s in (("gpu", d.gpu), ("npu", d.npu))
             if s is not None and s.line]
    return f" ({', '.join(parts)})" if parts else ""


def _function(d: Finding) -> str:
    fr = own_frame(d.extra["dumps"].get("frames", {}).get("gpu", []) or d.extra["dumps"].get("frames", {}).get("npu", []))
    return f" {fr.function}" if fr is not None and fr.function != "<module>" else ""


def _keys(d: Finding) -> str:
    keys = [k for _t, ks in d.extra["dumps"].get("depends", []) for k in ks]
    return f" ({', '.join(dict.fromkeys(keys))})" if keys else ""


def suffix(a: str | None, b: str | None) -> int:
    """How many trailing path parts two paths share (0: not the same file name)."""
    if not a or not b:
        return 0
    pa = a.replace("\\", "/").split("/")
    pb = b.replace("\\", "/").split("/")
    n = 0
    while n < min(len(pa), len(pb)) and pa[-1 - n] == pb[-1 - n]:
        n += 1
    return n


def probable_causes(ev: dict, static: list[Finding]) -> tuple[list[Finding], list[str]]:
    frames = {side: own_frame(ev.get("frames", {}).get(side, [])) for side in ("gpu", "npu")}
    # at the call's line
    hits: list[tuple[Finding, str]] = []
    for f in static:
        for side in ("gpu", "npu"):
            s, fr = getattr(f, side), frames[side]
            if s is not None and fr is not None and s.line and s.line == fr.line and suffix(s.path, fr.path):
                hits.append((f, f"at the diverging call's line ({side.upper()} {_base(fr.path)}:{fr.line})"))
                break
    if not hits:  # in its function
        for f in static:
            if not f.key.startswith("code:"):
                continue
            qual = f.key.split(":", 2)[-1]
            for side in ("gpu", "npu"):
                s, fr = getattr(f, side), frames[side]
                if s is not None and fr is not None and fr.function not in ("<module>", "") \
                        and qual.split(".")[-1] == fr.function and suffix(s.path, fr.path):
                    hits.append((f, f"in {qual}, the function of the diverging call"))
                    break
    if not hits:  # on a setting it depends on
        for title, keys in ev.get("depends", []):
            for f in static:
                if f.key in keys and all(f is not h for h, _w in hits):
                    hits.append((f, f"on {f.key}, a setting {title} depends on"))
    return [h for h, _w in hits], [w for _h, w in hits]


def _base(p: str) -> str:
    return p.replace("\\", "/").rsplit("/", 1)[-1]


def _moved(d: Finding, setup: list) -> Finding:
    """The divergence at the script it ran in, when that script was read in this run."""
    sides = {}
    moved = False
    for side in ("gpu", "npu"):
        s = getattr(d, side)
        sides[side] = s
        if s is None or not s.line:
            continue
        best = max(((suffix(a.path, s.path), a.path) for a in setup if a.side == side), default=(0, None))
        if best[0] and best[1] != s.path:
            sides[side] = Side(value=s.value, path=best[1], line=s.line, source=s.source)
            moved = True
    if not moved:
        return d
    return finding(d.rule, key=d.key, gpu=sides["gpu"], npu=sides["npu"], message=d.message, check=d.check,
                   extra=d.extra)

"""The alignment profile (docs/fidelity.md): with `--profile alignment` (Options.profile; a
profile is an entry of the `profiles` section: rules/alignment.yaml, or a team's pack), each side of the
run is checked for what a GPU/NPU accuracy comparison needs (seeds, deterministic algorithms,
the deterministic communication and matmul variables of its stack, dropout at zero). An item a
side misses is an SD228 finding on that side, with the line to add (`extra["add"]`: how,
line), which `scriptdiff fix` writes into an NPU launch script (an `export` line)."""
from __future__ import annotations

from dataclasses import replace

from ..model import ORIGIN_EXPLICIT, Finding, Side
from ..ruleset.envmap import canonical, value_equivalent
from ..ruleset.registry import detect
from ..ruleset.rules import load
from .compare import FactTable
from .finding import finding

STACKS = ("megatron", "hf", "deepspeed")  # the frameworks an item may name; a side with none is "pytorch"
KIND_OF = {"export": "shell", "flag": "shell", "python": "python"}  # where each way of adding goes


def profile(name: str | None) -> dict | None:
    """The profile called `name` (rules/alignment.yaml `profiles`, or a team's pack), or None."""
    return (load().section("profiles") or {}).get(name) if name else None


def _stacks(table: FactTable) -> list[str]:
    found = [s for s in STACKS if s in table.frameworks]
    return found or ["pytorch"]


def _satisfied(item: dict, table: FactTable) -> bool:
    if "env" in item:
        name = item["env"]
        f = table.get(canonical(name)[0])
        if f is None or f.origin != ORIGIN_EXPLICIT:
            return False
        if f.meta.get("name") not in (None, name):  # the other platform's name of it (NCCL_ for HCCL_)
            return False
        v = str(f.value).strip()
        return any(v == want or value_equivalent(name, v, want) for want in item["values"])
    for key in item["keys"]:
        f = table.get(key)
        if f is None or f.origin != ORIGIN_EXPLICIT:
            return False
        want = item.get("want")
        if want is True and f.value is not True and str(f.value).lower() not in ("true", "1"):
            return False
        if want == "zero":
            try:
                if float(f.value) != 0.0:
                    return False
            except (TypeError, ValueError):
                return False
    return True


def _where(sources, how: str) -> str | None:
    """The file of this side where the line goes: its launch script (export, flag) or program."""
    want = KIND_OF.get(how)
    names = [s.name for s in sources if s is not None and (s.kind or detect(s.name)) == want]
    return names[0] if names else None


def check(name: str | None, gtable: FactTable, ntable: FactTable, gsources, nsources,
          gprobes=(), nprobes=()) -> list[Finding]:
    """Profile `name`'s findings for one run: each item a side it applies to misses. `gprobes`,
    `nprobes`: each side's probe hits, (probe, line, source line, path) (Extract.probes)."""
    prof = profile(name)
    if not prof:
        return []
    out = []
    for side, table, sources, probes in (("gpu", gtable, gsources, gprobes), ("npu", ntable, nsources, nprobes)):
        stacks = _stacks(table)
        for name, item in prof["items"].items():
            if side not in item["sides"]:
                continue
            if "any" not in item["stacks"] and not any(s in item["stacks"] for s in stacks):
                continue
            if "same" in item:
                out += _differs(name, item, gtable, ntable, gsources, nsources)
                continue
            hits = [h for h in probes if h[0] == item["probe"]] if "probe" in item else [None]
            if not hits or _satisfied(item, table):
                continue
            adds = item["add"]
            add = next((adds[s] for s in stacks if s in adds), adds.get("any"))
            if add is None:
                continue
            line = add.get("npu_line", add["line"]) if side == "npu" else add["line"]
            for hit in hits:
                out.append(_missing(name, item, side, add["how"], line,
                                    hit[3] if hit is not None else _where(sources, add["how"]), hit))
    return out


def _missing(name: str, item: dict, side: str, how: str, line: str, path: str | None, hit) -> Finding:
    """The finding of an item a side misses; at the probe's place when a probe found it."""
    if hit is None:
        here = Side(value=f"missing: {line}", path=path, line=None, source=None)
        where = f" to {path}" if path else ""
    else:
        here = Side(value=f"missing: {line}", path=path, line=hit[1], source=hit[2])
        where = f" to `{hit[2]}` at {path}:{hit[1]}"
    return finding("alignment-setup-missing", key=f"align:{name}",
                   gpu=here if side == "gpu" else None, npu=here if side == "npu" else None,
                   message=f"{side.upper()} side not set up for an accuracy comparison "
                           f"({item['title']}): add `{line}`{where}",
                   extra={"add": {"how": how, "line": line, "side": side, "path": path},
                          "source": item.get("source")})


def _differs(name: str, item: dict, gtable: FactTable, ntable: FactTable, gsources, nsources) -> list[Finding]:
    """A `same` item: the NPU side's value of its key against the GPU side's, when both are known
    (a derived value is said at the side's launch script)."""
    key = item["same"]
    g, n = gtable.get(key), ntable.get(key)
    if g is None or n is None or g.value is None or n.value is None or str(g.value) == str(n.value):
        return []
    line = f"{key} {g.value}"
    how = next(iter(item["add"].values()))
    gside, nside = g.side(), n.side()
    if gside.path is None:
        gside = replace(gside, path=_where(gsources, how["how"]))
    if nside.path is None:
        nside = replace(nside, path=_where(nsources, how["how"]))
    return [finding("alignment-setup-missing", key=f"align:{name}", gpu=gside, npu=nside,
                    message=f"NPU side not set up for an accuracy comparison ({item['title']}): {key} is {n.value} "
                            f"on NPU, {g.value} on GPU; make it {g.value} ({how['line']})",
                    extra={"add": {"how": how["how"], "line": line, "side": "npu", "path": nside.path},
                           "source": item.get("source")})]

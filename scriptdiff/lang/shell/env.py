"""Environment facts from a launch script: exported variables, `VAR=x launcher ...`
prefixes and sourced environment scripts (`source .../set_env.sh` is an NPU tuning fact).

Each variable is keyed by scriptdiff.ruleset.envmap (its GPU-side name when it has an NPU
counterpart, masked as the expected rename); a secret-looking name or value
(scriptdiff.ruleset.secrets) is withheld: the value becomes a marker with a short fingerprint, so a
changed token still compares as changed, and the source text never shows it.
"""
from __future__ import annotations

import os

from ...ruleset.envmap import canonical
from ...model import RANK_SCRIPT, Fact
from ...ruleset.rules import code
from ...ruleset.secrets import is_secret, withheld
from .record import Record
from .words import Seg


def env_fact(rec: Record, name: str, line: int, segs: list[Seg]) -> None:
    """The environment fact for variable `name` set to `segs` at `line`."""
    value = "".join(s.text for s in segs)
    unresolved = tuple(u for s in segs for u in s.unresolved)
    key, role = canonical(name)
    source = rec.src_line(line, name)
    if is_secret(name, value):  # the one rule (rules/secrets.yaml), shared with `collect` and the config reader
        rec.withhold(value)
        value = withheld(value)
        source = f"export {name}=<withheld>"
    meta = {"name": name, "role": role}
    if key != f"env:{name}":
        meta["mask"] = code("env-var-renamed")
    if unresolved:
        meta["unresolved"] = list(unresolved)
    unknown = tuple(dict.fromkeys(u for s in segs for u in s.unknown))
    if unknown:  # set in a way not evaluated: not compared (lang/shell/__init__.py says so)
        meta["unknown"] = list(unknown)
    via = None
    vias = [x for s in segs for x in s.via]
    if vias:
        via = "$" + vias[-1]
        meta["made_from"] = tuple(dict.fromkeys(x.strip("${}") for x in vias))
    rec.facts.append(Fact(key=key, value=value, check="environment", path=rec.src.name, line=line, source=source,
                          rank=RANK_SCRIPT, via=via, meta=meta))


def sourced_fact(rec: Record, path: str, line: int) -> None:
    """`source path` / `. path`: an NPU tuning fact when it is Ascend's or CANN's set_env script."""
    base = os.path.basename(path)
    role = "npu_tuning" if ("ascend" in path.lower() or base in ("set_env.sh", "setenv.sh")
                            or "cann" in path.lower()) else "plain"
    rec.facts.append(Fact(key=f"env:source {base}", value=path, check="environment", path=rec.src.name,
                          line=line, source=rec.src_line(line, base), rank=RANK_SCRIPT,
                          meta={"name": f"source {base}", "role": role, "sourced": True}))

"""The NPU stack against the published Ascend version tables (rules/ascend_versions.yaml).

One side's facts (a snapshot's `version:cann` / `version:driver`, and the `pkg:` facts of its
snapshot and package lists) are looked up in the tables, and every finding is added to that
side as an advisory fact (only on a side with a snapshot: the environment check's input;
package lists alone are the libraries check's) (`derive`, run per side by the engine): a fact on one side only is
reported once for that side, the same fact on both sides once for both. Keys:

  release:cann, release:driver, release:torch-npu   a non-commercial build (SD318)
  compat:torch-npu-cann     torch_npu released for another CANN (SD319)
  compat:driver-cann        the driver older than the HDK installed with the CANN (SD320)
  newest:cann, newest:torch-npu   a newer commercial release is known (SD321)
  compat:mindspeed-megatron mindspeed adapts another Megatron core (SD322)
  compat:mindspeed-llm      MindSpeed-LLM with another MindSpeed (SD323)

Nothing is fetched: "newest" is the newest in the tables, named with the table's date.
CANN versions are not PEP 440: 8.0.RC1 < 8.0.RC3 < 8.0.RC3.20 < 8.0.0.beta1 < 8.0.0 <
8.1.RC1 (an RC is a release of its own; alpha/beta markers and T builds are pre-releases).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ruleset.ascend_version import cann_key, parse_cann
from ..run.finding import finding
from ..model import RANK_LOG, Fact, Finding
from ..ruleset.rules import RuleSet, derived
from .libraries import parse_version

ADVISORY_PREFIXES = ("release:", "compat:torch-npu-cann", "compat:driver-cann", "newest:",
                     "compat:mindspeed-megatron", "compat:mindspeed-llm")
# --------------------------------------------------------------------------- the tables

@dataclass
class Tables:
    tables: dict
    torch_npu: list
    cann: list
    hdk: list
    mindspeed: list
    mindspeed_llm: list

    def cite(self, source: str) -> str:
        t = self.tables.get(source) or {}
        label = t.get("label") or t.get("title") or source
        when = t.get("date", "?")
        return f"{label}, read {when}" if t.get("dated_by") == "read" else f"{label} of {when}"

    # -- CANN
    def releases(self) -> list[str]:
        """Every CANN release the tables name, oldest first."""
        names = {r["cann"] for r in self.torch_npu} | {r["release"] for r in self.cann} | {r["cann"] for r in self.hdk}
        return sorted(names, key=cann_key)

    def newest_cann(self) -> tuple[str, str]:
        """The newest commercial CANN release and the table that names it."""
        row = max(self.torch_npu, key=lambda r: cann_key(r["cann"]))
        return row["cann"], row["source"]

    def cann_release(self, version: str) -> tuple[str | None, str, dict | None]:
        """(the release a CANN build belongs to, its kind, the editions row naming it).
        kind: commercial | community | pre-release | unknown."""
        p = parse_cann(version)
        if p is None:
            return None, "unknown", None
        text = str(version).strip().lower()
        for row in self.cann:
            if text in (c.lower() for c in row.get("commercial", [])):
                return row["release"], "commercial", row
            if text in (c.lower() for c in row.get("community", [])):
                return row["release"], "community", row
        edition = next((r for r in self.cann if r["release"] == p.release), None)
        known = p.release in set(self.releases())
        if p.prerelease:
            return (p.release if known else None), "pre-release", edition
        return (p.release if known else None), ("commercial" if known else "unknown"), edition

    # -- torch_npu
    def torch_npu_row(self, version: str) -> dict | None:
        v = parse_version(version)
        if v is None:
            return None
        for row in self.torch_npu:
            if parse_version(row["torch_npu"]) == v:
                return row
        return None

    def torch_npu_for(self, line: tuple, cann: str | None = None) -> list[dict]:
        """Commercial torch_npu releases for one PyTorch line (its first three numbers), oldest
        first; only those for `cann` when given."""
        out = []
        for row in self.torch_npu:
            v = parse_version(row["torch_npu"])
            if v is None or v.is_prerelease or _release3(v) != line:
                continue
            if cann is None or row["cann"] == cann:
                out.append(row)
        return sorted(out, key=lambda r: parse_version(r["torch_npu"]))

    def newest_torch_npu(self) -> dict:
        rows = [r for r in self.torch_npu if not parse_version(r["torch_npu"]).is_prerelease]
        return max(rows, key=lambda r: parse_version(r["torch_npu"]))

    # -- MindSpeed
    def core_lines(self) -> dict[str, list[str]]:
        """Megatron core release -> the MindSpeed release branches that adapt it."""
        out: dict[str, list[str]] = {}
        for row in self.mindspeed:
            out.setdefault(row["megatron_core"], []).append(row["branch"])
        return out


def _release3(v) -> tuple:
    return (tuple(v.release) + (0, 0, 0))[:3]


@derived
def tables(rs: RuleSet) -> Tables:
    data = rs.section("ascend_versions", {}) or {}
    return Tables(tables=data.get("tables") or {}, torch_npu=list(data.get("torch_npu") or []),
                  cann=list(data.get("cann") or []), hdk=list(data.get("hdk") or []),
                  mindspeed=list(data.get("mindspeed") or []), mindspeed_llm=list(data.get("mindspeed_llm") or []))


# --------------------------------------------------------------------------- one side's stack

def _pkg(table, name: str) -> Fact | None:
    f = table.get(f"pkg:{name}")
    if f is None or f.meta.get("counterpart") or not f.meta.get("version"):
        return None
    return f


def _version(table, comp: str) -> Fact | None:
    f = table.get(f"version:{comp}")
    return f if f is not None and f.value is not None else None


def _has_snapshot(table) -> bool:
    """The side includes an environment snapshot (`version:` facts): the advisory belongs to the
    environment check, whose input that is; package lists alone are the libraries check's."""
    return any(k.startswith("version:") for k in table.keys("environment"))


def _advice(key: str, rule: str, at: Fact, value: str, message: str, source: str) -> Fact:
    return Fact(key=key, value=value, check="environment", path=at.path, line=at.line, source=at.source,
                rank=RANK_LOG, via=tables().cite(source),
                meta={"force": True, "advisory": True, "rule": rule, "message": message})


def derive(table) -> None:
    """Per side: the NPU stack against the tables, as advisory facts."""
    T = tables()
    if not T.torch_npu or not _has_snapshot(table):
        return
    cann_f, driver_f = _version(table, "cann"), _version(table, "driver")
    tn_f, torch_f = _pkg(table, "torch-npu"), _pkg(table, "torch")
    ms_f, mc_f, llm_f = _pkg(table, "mindspeed"), _pkg(table, "megatron-core"), _pkg(table, "mindspeed-llm")
    if not any((cann_f, driver_f, tn_f, ms_f, llm_f)):
        return
    facts: list[Fact] = []
    release = None
    if cann_f is not None:
        release, kind, edition = T.cann_release(str(cann_f.value))
        facts += _cann_facts(T, cann_f, str(cann_f.value), release, kind, edition)
    if driver_f is not None:
        facts += _driver_facts(T, driver_f, str(driver_f.value), release)
    if tn_f is not None:
        facts += _torch_npu_facts(T, tn_f, tn_f.meta["version"], release)
    if ms_f is not None and mc_f is not None:
        facts += _mindspeed_facts(T, ms_f, mc_f)
    if llm_f is not None and ms_f is not None:
        facts += _mindspeed_llm_facts(T, llm_f, ms_f)
    table.extend(facts)


def _cann_facts(T: Tables, at: Fact, version: str, release, kind: str, edition) -> list[Fact]:
    out = []
    newest, nsrc = T.newest_cann()
    if kind in ("community", "pre-release"):
        what = (f"the community edition (社区版) of CANN {release}" if kind == "community"
                else f"a pre-release build{' of CANN ' + release if release else ''}")
        instead = release or newest
        src = (edition or {}).get("source", nsrc) if release else nsrc
        out.append(_advice("release:cann", "non-commercial-release", at, f"CANN {version} ({kind})",
                           f"CANN {version} is {what}, not a commercial release: install the commercial "
                           f"CANN {instead} ({T.cite(src)})", src))
    if release and cann_key(release) < cann_key(newest):
        out.append(_advice("newest:cann", "newer-commercial-release-known", at, f"CANN {release} (newest {newest})",
                           f"CANN {version} is older than CANN {newest}, the newest commercial release "
                           f"scriptdiff knows ({T.cite(nsrc)})", nsrc))
    return out


def _driver_facts(T: Tables, at: Fact, version: str, release) -> list[Fact]:
    p = parse_cann(version)
    if p is None:
        return []
    out = []
    if p.prerelease:
        out.append(_advice("release:driver", "non-commercial-release", at, f"Ascend driver {version} (pre-release)",
                           f"Ascend driver {version} is a pre-release build, not a commercial Ascend HDK "
                           f"release: install the commercial HDK {p.release}", "deployer"))
    row = next((r for r in T.hdk if r["cann"] == release), None) if release else None
    if row is not None and p.key()[:5] < parse_cann(row["hdk"]).key()[:5]:
        out.append(_advice("compat:driver-cann", "driver-older-than-cann-hdk", at,
                           f"Ascend driver {version} with CANN {release}",
                           f"Ascend driver {version} is older than Ascend HDK {row['hdk']}, the driver and "
                           f"firmware release installed with CANN {release} ({T.cite(row['source'])})",
                           row["source"]))
    return out


def _torch_npu_facts(T: Tables, at: Fact, version: str, release) -> list[Fact]:
    v = parse_version(version)
    if v is None:
        return []
    out: list[Fact] = []
    line = _release3(v)
    line_text = ".".join(str(x) for x in line)
    own = T.torch_npu_for(line)
    newest_all = T.newest_torch_npu()
    src = newest_all["source"]
    if v.is_prerelease or v.is_devrelease:
        target = own[-1] if own else newest_all
        what = "a development build" if v.is_devrelease else "a pre-release (rc) build"
        out.append(_advice("release:torch-npu", "non-commercial-release", at, f"torch_npu {version} ({what})",
                           f"torch_npu {version} is {what}, not a commercial release: install torch_npu "
                           f"{target['torch_npu']} (PyTorch {target['torch']}, CANN {target['cann']}; "
                           f"{T.cite(target['source'])})", target["source"]))
    row = T.torch_npu_row(version)
    if row is not None and release is not None and row["cann"] != release:
        fits = T.torch_npu_for(line, release)
        hint = (f"the table's torch_npu for PyTorch {line_text} with CANN {release} is {fits[-1]['torch_npu']}"
                if fits else f"the table has no torch_npu for PyTorch {line_text} with CANN {release}")
        out.append(_advice("compat:torch-npu-cann", "torch-npu-cann-mismatch", at,
                           f"torch_npu {version} with CANN {release}",
                           f"torch_npu {version} was released for CANN {row['cann']} (PyTorch {row['torch']}), "
                           f"but this side has CANN {release}; {hint} ({T.cite(row['source'])})", row["source"]))
    if not (v.is_prerelease or v.is_devrelease) and own and v < parse_version(own[-1]["torch_npu"]):
        best = own[-1]
        tail = "" if best is newest_all else (f"; the newest torch_npu known is {newest_all['torch_npu']} "
                                              f"(PyTorch {newest_all['torch']}, CANN {newest_all['cann']})")
        out.append(_advice("newest:torch-npu", "newer-commercial-release-known", at,
                           f"torch_npu {version} (newest {best['torch_npu']})",
                           f"torch_npu {version} is older than {best['torch_npu']}, the newest commercial release "
                           f"for PyTorch {line_text} (CANN {best['cann']}){tail} ({T.cite(src)})", src))
    return out


def _mindspeed_facts(T: Tables, ms: Fact, mc: Fact) -> list[Fact]:
    a, b = parse_version(ms.meta["version"]), parse_version(mc.meta["version"])
    if a is None or b is None:
        return []
    core = ".".join(str(x) for x in _release3(a))
    branches = T.core_lines().get(core)
    if not branches or _release3(a) == _release3(b):
        return []
    src = next(r["source"] for r in T.mindspeed if r["megatron_core"] == core)
    return [_advice("compat:mindspeed-megatron", "mindspeed-megatron-mismatch", ms,
                    f"mindspeed {ms.meta['version']} with megatron-core {mc.meta['version']}",
                    f"mindspeed {ms.meta['version']} adapts Megatron core {core} (release branches "
                    f"{', '.join(branches)}), but this side has megatron-core {mc.meta['version']} "
                    f"({T.cite(src)})", src)]


def _mindspeed_llm_facts(T: Tables, llm: Fact, ms: Fact) -> list[Fact]:
    a, b = parse_version(llm.meta["version"]), parse_version(ms.meta["version"])
    if a is None or b is None:
        return []
    row = next((r for r in T.mindspeed_llm if parse_version(r["version"]).release == a.release), None)
    if row is None or ".".join(str(x) for x in _release3(b)) == row["megatron_core"]:
        return []
    return [_advice("compat:mindspeed-llm", "mindspeed-llm-mindspeed-mismatch", llm,
                    f"mindspeed-llm {llm.meta['version']} with mindspeed {ms.meta['version']}",
                    f"MindSpeed-LLM {row['version']} needs MindSpeed {row['mindspeed']} (mindspeed "
                    f"{row['megatron_core']}, Megatron core {row['megatron_core']}), but this side has mindspeed "
                    f"{ms.meta['version']} ({T.cite(row['source'])})", row["source"])]


# --------------------------------------------------------------------------- findings

def is_advisory(key: str) -> bool:
    return key.startswith(ADVISORY_PREFIXES)


def classify(key: str, g: Fact | None, n: Fact | None, rs) -> Finding | None:
    """An advisory fact as a finding: for the side that has it, or once for both."""
    f = n or g
    if f is None or not f.meta.get("advisory"):
        return None
    msg = f.meta["message"]
    if g is not None and n is not None:
        msg += " (both sides)" if g.value == n.value else f"; GPU side: {g.meta['message']}"
    elif g is not None:
        msg += " (GPU side)"
    return finding(f.meta["rule"], key=key, gpu=g, npu=n, message=msg, extra={"advisory": "npu-stack"})


# --------------------------------------------------------------------------- the text table

def stack_rows(table) -> list[tuple[str, str, str, str]]:
    """(component, version, kind, newest known) for the NPU stack of one side; empty when the
    side has none (no CANN, driver or torch_npu)."""
    T = tables()
    cann_f, driver_f = _version(table, "cann"), _version(table, "driver")
    tn_f = _pkg(table, "torch-npu")
    if not (cann_f or driver_f or tn_f) or not T.torch_npu or not _has_snapshot(table):
        return []
    rows = []
    newest, _src = T.newest_cann()
    release = None
    if cann_f is not None:
        release, kind, _e = T.cann_release(str(cann_f.value))
        rows.append(("CANN", str(cann_f.value), kind, newest))
    if driver_f is not None:
        p = parse_cann(str(driver_f.value))
        kind = "unknown" if p is None else ("pre-release" if p.prerelease else "commercial")
        row = next((r for r in T.hdk if r["cann"] == release), None) if release else None
        top = max(T.hdk, key=lambda r: cann_key(r["cann"])) if T.hdk else None
        shown = (f"HDK {row['hdk']} for CANN {release}" if row else
                 f"HDK {top['hdk']} for CANN {top['cann']}" if top else "-")
        rows.append(("driver", str(driver_f.value), kind, shown))
    fw = _version(table, "firmware")
    if fw is not None:
        rows.append(("firmware", str(fw.value), "-", "-"))
    if tn_f is not None:
        v = parse_version(tn_f.meta["version"])
        kind = "unknown"
        best = "-"
        if v is not None:
            kind = ("development" if v.is_devrelease else "pre-release" if v.is_prerelease
                    else "commercial" if T.torch_npu_row(tn_f.meta["version"]) else "not in the table")
            own = T.torch_npu_for(_release3(v))
            top = T.newest_torch_npu()
            best = (f"{own[-1]['torch_npu']} for PyTorch {own[-1]['torch']}" if own else "-")
            if not own or own[-1] is not top:
                best += f"; {top['torch_npu']} overall"
        rows.append(("torch_npu", tn_f.meta["version"], kind, best))
    torch_f = _pkg(table, "torch")
    if torch_f is not None:
        rows.append(("torch", torch_f.meta["version"], "-", f"{T.newest_torch_npu()['torch']} (with torch_npu)"))
    ms_f = _pkg(table, "mindspeed")
    if ms_f is not None:
        v = parse_version(ms_f.meta["version"])
        core = ".".join(str(x) for x in _release3(v)) if v is not None else ""
        lines = T.core_lines()
        last = T.mindspeed[-1] if T.mindspeed else None
        rows.append(("mindspeed", ms_f.meta["version"], "release line" if core in lines else "not in the table",
                     f"{last['megatron_core']} (branch {last['branch']})" if last else "-"))
    for name in ("megatron-core", "mindspeed-llm"):
        f = _pkg(table, name)
        if f is not None:
            rows.append((name, f.meta["version"], "-", "-"))
    return rows


def stack_lines(rows) -> list[str]:
    if not rows:
        return []
    T = tables()
    newest, src = T.newest_cann()
    head = ("component", "version", "kind", "newest known")
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(3)]
    out = [f"NPU stack (newest known as of {T.cite(src)}):"]
    for r in [head, *rows]:
        out.append("  " + "  ".join(str(r[i]).ljust(widths[i]) for i in range(3)) + "  " + str(r[3]))
    return out


def verdict_notes(findings) -> dict[str, str]:
    """check -> a short line for `scriptdiff check`'s verdict: the NPU stack's advisories."""
    out: dict[str, list[str]] = {}
    for f in findings:
        if f.extra.get("advisory") == "npu-stack":
            side = f.npu or f.gpu
            out.setdefault(f.check, []).append(f"{f.rule} {side.value}")
    return {c: "NPU stack: " + "; ".join(items) for c, items in out.items()}

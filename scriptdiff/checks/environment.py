"""Environment generation (pre-check 4): a `scriptdiff collect` snapshot in, facts out.

A snapshot (docs/snapshot.md) yields
- `version:<component>` facts (check environment): cann, cann_kernels, nnal, hccl, driver,
  firmware on NPU; cuda, cudnn, nccl, nvidia_driver on GPU; python, os, arch anywhere. A
  component of the snapshot's own platform that was not found is a fact with value None,
  so that two snapshots of one platform show what one of them lacks (SD317); a component of
  the other platform is left out (a GPU machine has no firmware to compare).
- the platform-specific pairs, shown side by side and never compared across platforms:
  `version:accelerator_toolkit` ("CUDA 12.1.1" / "CANN 8.0.RC3"),
  `version:accelerator_driver` ("NVIDIA 535.104.05" / "Ascend 24.1.rc2") and
  `version:torch_backend` ("torch 2.1.0+cu121" / "torch_npu 2.1.0.post8") (SD310);
- `pkg:<name>` facts for its distributions (classified by checks/libraries.py);
- `env:<GPU name>` facts for its recorded environment variables, keyed through the one
  GPU<->NPU table (scriptdiff.ruleset.envmap); their classifier is checks/envvars.py.

`classify_version` is how a difference of a `version:*` key becomes a finding; the
`environment` classifier (checks/envvars.py) delegates every non-`env:` key to it.
"""
from __future__ import annotations


from ..run.compare import show
from ..run.finding import finding
from ..ruleset.envmap import canonical
from ..inputs.jsonload import JSONError, load_json
from ..model import RANK_LOG, Extract, Fact, Finding, InputError, Masked
from ..ruleset.rules import RuleSet, code, derived
from . import ascend_stack, libraries
from .libraries import normalize_name, parse_version, version_level

SUPPORTED_SCHEMA = 1


@derived
def _platform_data(rs: RuleSet):
    return (rs.section("platform_components", {}) or {}, rs.section("platform_pairs", {}) or {},
            rs.section("platform_groups", {}) or {})


# --------------------------------------------------------------------------- reading a snapshot

def line_index(doc: dict, lines: dict[tuple, int]) -> dict[tuple, int]:
    """Lines of a snapshot's entries, from the line-keeping JSON loader: ("versions", comp),
    ("env", NAME), ("dist", pep503 name) and top-level keys."""
    idx: dict[tuple, int] = {k: v for k, v in lines.items() if len(k) == 1}
    for top in ("versions", "env"):
        for k, v in lines.items():
            if len(k) == 2 and k[0] == top:
                idx[(top, k[1])] = v
    dists = doc.get("distributions") if isinstance(doc, dict) else None
    if isinstance(dists, list):
        for i, d in enumerate(dists):
            if isinstance(d, dict) and isinstance(d.get("name"), str) and ("distributions", i) in lines:
                idx.setdefault(("dist", normalize_name(d["name"])), lines[("distributions", i)])
    return idx


def _version_of(entry):
    if isinstance(entry, dict):
        v = entry.get("version")
    else:
        v = entry
    return None if v is None else str(v)


def extract(src, ctx):
    ex = Extract()
    try:
        doc, json_lines = load_json(src.text)
    except (JSONError, ValueError) as e:
        ex.errors.append(InputError(src.name, f"not a valid snapshot: not valid JSON: {e}", fatal=True))
        return ex
    if not isinstance(doc, dict) or "scriptdiff_snapshot" not in doc:
        ex.errors.append(InputError(src.name, "not a scriptdiff snapshot (no 'scriptdiff_snapshot' field)", fatal=True))
        return ex
    schema = doc.get("scriptdiff_snapshot")
    if not isinstance(schema, int) or isinstance(schema, bool):
        ex.errors.append(InputError(src.name, f"snapshot schema must be an integer, got {schema!r}", fatal=True))
        return ex
    if schema > SUPPORTED_SCHEMA:
        ex.errors.append(InputError(src.name, f"snapshot schema {schema} is newer than this scriptdiff reads "
                                              f"({SUPPORTED_SCHEMA}); fields it does not know are ignored"))
    strict, side = ctx.options.strict_local, ctx.side
    lines = line_index(doc, json_lines)
    comps, pairs, _ = _platform_data()
    dists = doc.get("distributions") or []
    if not isinstance(dists, list):
        ex.errors.append(InputError(src.name, "'distributions' is not a list; packages not compared"))
        dists = []
    text_lines: list[str] = []

    def quoted(line: int | None) -> str:
        """The snapshot's own line, stripped, as the report's source line ('' when unknown)."""
        if not line:
            return ""
        if not text_lines:
            text_lines.extend(src.text.splitlines())
        return text_lines[line - 1].strip() if 0 < line <= len(text_lines) else ""

    entries = []
    for i, d in enumerate(dists):
        if not isinstance(d, dict) or not isinstance(d.get("name"), str) or d.get("version") is None:
            ex.errors.append(InputError(src.name, f"distribution {i + 1} has no name and version; skipped"))
            continue
        e = libraries.Entry(name=d["name"], line=lines.get(("dist", normalize_name(d["name"]))),
                            source=f"{d['name']}=={d['version']}", version=str(d["version"]),
                            spec=f"=={d['version']}", installer=d.get("installer"))
        source = d.get("source")
        if isinstance(source, dict):
            e.url = source.get("url") if isinstance(source.get("url"), str) else None
            e.commit = source.get("commit") if isinstance(source.get("commit"), str) else None
            e.editable = bool(source.get("editable"))
        if not isinstance(e.installer, str):
            e.installer = None
        entries.append(e)
    versions = doc.get("versions") or {}
    if not isinstance(versions, dict):
        ex.errors.append(InputError(src.name, "'versions' is not a mapping; versions not compared"))
        versions = {}
    platform = doc.get("platform")
    if platform not in ("gpu", "npu", "cpu"):
        platform = _infer_platform(versions, entries)
    ex.facts.extend(libraries.package_facts(entries, src.name, side, RANK_LOG, strict,
                                            platform if platform in ("gpu", "npu") else None, exhaustive=True))
    if "distributions" in doc:
        ex.facts.append(libraries.list_marker(src.name, True))

    def vfact(comp: str, value, source: str, line_key: tuple, **meta) -> None:
        # the report quotes the snapshot's own line: the value's line ("name": "Ubuntu ...")
        # when the entry is an object, else the entry's; `source` only when no line is known
        line = json_lines.get(line_key + ("version",)) or json_lines.get(line_key + ("name",)) \
            if line_key[0] in ("python", "os", "versions") else None
        line = line or lines.get(line_key)
        if line_key[0] == "dist":
            i = dist_index.get(line_key[1])
            line = json_lines.get(("distributions", i, "version")) or line
        source = quoted(line) or source
        ex.facts.append(Fact(key=f"version:{comp}", value=value, check="environment", path=src.name,
                             line=line, source=source, rank=RANK_LOG,
                             meta={"component": comp, "snapshot_platform": platform, **meta}))

    dist_index = {normalize_name(d["name"]): i for i, d in enumerate(dists)
                  if isinstance(d, dict) and isinstance(d.get("name"), str)}

    py = doc.get("python")
    pyv = _version_of(py) if isinstance(py, (dict, str)) else None
    if pyv:
        inferred = isinstance(py, dict) and py.get("inferred_from")
        vfact("python", pyv, f"python {pyv}" + (f" (from {inferred})" if inferred else ""), ("python",),
              platform="any", **({"fuzzy": True} if inferred else {}))
    osd = doc.get("os")
    osname = osd.get("name") if isinstance(osd, dict) else osd
    if isinstance(osname, str) and osname:
        vfact("os", str(osname), f"os {osname}", ("os",), platform="any")
    if isinstance(doc.get("arch"), str) and doc["arch"]:
        vfact("arch", str(doc["arch"]), f"arch {doc['arch']}", ("arch",), platform="any")
    found: dict[str, str | None] = {}
    texts: dict[str, str] = {}
    for comp, entry in sorted(versions.items()):
        v = _version_of(entry)
        cplat = (comps.get(comp) or {}).get("platform", "any")
        if v is None and cplat not in (platform, "any"):
            continue  # the other platform's component: nothing to compare
        where = entry.get("source") if isinstance(entry, dict) and isinstance(entry.get("source"), str) else None
        label = (comps.get(comp) or {}).get("label", comp)
        src_text = f"{label} {v}" + (f" ({where})" if where else "") if v else f"{label} not found"
        vfact(comp, v, src_text, ("versions", comp), platform=cplat)
        found[comp] = v
        texts[comp] = src_text
    if platform in ("gpu", "npu"):
        for pair in pairs:
            comp = next((c for c, d in comps.items() if d.get("pair") == pair and d.get("platform") == platform), None)
            if comp is None:
                continue
            short = comps[comp].get("short", comp)
            v = found.get(comp)
            if comp not in found and comp not in versions:
                continue
            value = f"{short} {v}" if v else f"{short} not found"
            if comp == "driver" and found.get("firmware"):
                value += f" (firmware {found['firmware']})"
            vfact(pair, value, texts.get(comp, value), ("versions", comp), platform=platform, pair=True)
        backend = _torch_backend(platform, entries)
        if backend:
            vfact("torch_backend", backend[0], backend[0], ("dist", backend[1]), platform=platform, pair=True)
    env = doc.get("env") or {}
    if isinstance(env, dict):
        ex.facts.extend(env_facts(env, src.name, lines, quoted))
    return ex


def _infer_platform(versions: dict, entries) -> str:
    def has(c):
        return bool(_version_of(versions.get(c)))

    if any(has(c) for c in ("driver", "firmware", "cann")) or any(
            e.name.lower().replace("_", "-") == "torch-npu" for e in entries):
        return "npu"
    if any(has(c) for c in ("nvidia_driver", "cuda")):
        return "gpu"
    return "cpu"


def _torch_backend(platform: str, entries) -> tuple[str, str] | None:
    by = {normalize_name(e.name): e for e in entries}
    if platform == "npu" and "torch-npu" in by:
        return f"torch_npu {by['torch-npu'].version}", "torch-npu"
    if platform == "gpu" and "torch" in by:
        v = by["torch"].version or ""
        pv = parse_version(v)
        build = (pv.local if pv is not None else None) or ""
        return (f"torch {v} (CUDA build {build})" if build.startswith("cu") else f"torch {v}"), "torch"
    return None


def env_facts(env: dict, path: str, lines: dict | None = None, quoted=None) -> list[Fact]:
    """One fact per recorded variable, keyed by its GPU-side name (envmap.canonical); `quoted(line)`
    gives the file's own line as the source, else NAME=value is shown."""
    facts = []
    for name, value in sorted(env.items()):
        if not isinstance(name, str):
            continue
        key, role = canonical(name)
        meta = {"name": name, "role": role}
        if key != f"env:{name}":
            meta["mask"] = code("env-var-renamed")
        val = "" if value is None else str(value)
        line = (lines or {}).get(("env", name))
        source = (quoted(line) if quoted is not None else "") or f"{name}={val}"
        facts.append(Fact(key=key, value=val, check="environment", path=path,
                          line=line, source=source, rank=RANK_LOG, meta=meta))
    return facts


# --------------------------------------------------------------------------- classifying

def classify_version(key: str, g: Fact | None, n: Fact | None, rs) -> Finding | Masked | None:
    """A difference of a `version:*` key as a finding, or None (no difference worth a line).
    The NPU stack's advisories (checks/ascend_stack.py) are classified there."""
    if ascend_stack.is_advisory(key):
        return ascend_stack.classify(key, g, n, rs)
    if not key.startswith("version:"):
        return None
    comp = key.split(":", 1)[1]
    comps, pairs, groups = _platform_data()

    if g is None or n is None:
        return None  # the other side records no such thing (a package list, another platform)
    if comp in pairs:
        gp, np_ = g.meta.get("platform"), n.meta.get("platform")
        if gp == np_:
            return None  # same platform: the specific keys are compared instead
        label = pairs[comp].get("label", comp)
        return finding("accelerator-platform-pair", key=key, gpu=g, npu=n,
                       message=f"{label}: {show(g.value)} on GPU, {show(n.value)} on NPU "
                               f"(platform-specific, shown side by side, not compared)")
    spec = comps.get(comp, {"label": comp, "group": "host"})
    label = spec.get("label", comp)
    gv, nv = g.value, n.value
    if gv is None or nv is None:
        have, miss = ("GPU", "NPU") if gv is not None else ("NPU", "GPU")
        return finding("component-not-found", key=key, gpu=g, npu=n,
                       message=f"{label} is {show(gv if gv is not None else nv)} on the "
                               f"{have} side and was not found on the {miss} side")
    level = version_level(str(gv), str(nv), rc_is_release=bool(spec.get("rc_is_release")),
                          fuzzy_a=bool(g.meta.get("fuzzy")), fuzzy_b=bool(n.meta.get("fuzzy")))
    if level == "equal":
        return None
    host = code("host-differs")
    group = groups.get(spec.get("group", "host"), groups.get("host", {"major": host, "patch": host}))
    rule = group["major"] if level in ("major", "minor", "unparsed") else group["patch"]
    what = {"major": "major version", "minor": "minor version", "patch": "patch level", "local": "build tag",
            "unparsed": "version"}[level]
    return finding(rule, key=key, gpu=g, npu=n,
                   message=f"{label} is {show(gv)} on GPU and {show(nv)} on NPU ({what} differs)")

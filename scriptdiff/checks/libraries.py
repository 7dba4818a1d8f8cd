"""Third-party libraries (pre-check 3): package lists in, `pkg:<name>` facts out.

Reads requirements / pip freeze / `pip list` text, `pip list --format=json`, and conda
environment.yml files (snapshots are read by checks/environment.py, which hands their
distributions to `package_facts`). Names are normalized as PEP 503 says, versions parsed as
PEP 440 versions. The `libraries` classifier decides what a difference means, from the data
in rules/libraries.yaml: the key packages (major/minor difference = error, patch = warning,
other packages info), the GPU<->NPU counterparts (flash-attn <-> torch_npu, megatron-core
<-> + mindspeed, deepspeed <-> + deepspeed-npu, torch's CUDA build <-> torch_npu), the
platform-only packages, Ascend apex's +ascend tag, and local build tags (+cu121), which are
ignored unless asked (`--strict-local`).

Counterparts need both sides in view while a classifier sees one key at a time: `derive`
(run per side by the engine) adds, on the side that has the counterpart, a stand-in fact
for the package the other side has (meta["counterpart"]); the classifier masks a real
package met by a stand-in. `derive` also checks, within one side, that torch_npu belongs to
that side's torch release (key compat:torch-npu).
"""
from __future__ import annotations

import fnmatch
import re
from functools import lru_cache

from .. import budget
from ..run.compare import show
from ..run.finding import finding
from ..inputs.jsonload import loads as load_json_data
from ..model import ORIGIN_DERIVED, RANK_CONFIG, RANK_DEFAULT, RANK_LOG, Extract, Fact, Finding, InputError, Masked
from ..ruleset.packages import (LIST_KEY, STRICT_DIRECTIVE, Entry, conda_entry, data, entry_value, is_requirement_list,
                        list_marker, normalize_name, package_facts, parse_requirements, scrub_url)
from ..ruleset.rules import code
from ..inputs.yamlload import YAMLError
from ..inputs.yamlload import load as load_yaml

__all__ = ["Entry", "STRICT_DIRECTIVE", "entry_value", "list_marker", "looks_like_requirements", "normalize_name",
           "package_facts", "parse_conda", "parse_pip_json", "parse_requirements", "scrub_url", "version_level"]
looks_like_requirements = is_requirement_list  # its older name (tests, packs' sniff specs)


@lru_cache(maxsize=budget.VERSION_MEMO)
def parse_version(s: str):
    from packaging.version import InvalidVersion, Version

    try:
        return Version(str(s).strip())
    except (InvalidVersion, TypeError):
        return None


def _pad(rel: tuple, n: int) -> tuple:
    return tuple(rel) + (0,) * (n - len(rel))


def version_level(a: str, b: str, rc_is_release: bool = False, fuzzy_a: bool = False,
                  fuzzy_b: bool = False) -> str:
    """How two version strings differ: equal | local | patch | minor | major | unparsed.

    'major' and 'minor' are the first two release numbers; 'patch' is anything finer
    (third number, post, pre and dev releases), unless `rc_is_release` (CANN: 8.0.RC2 and
    8.0.RC3 are two releases), where a pre-release difference counts as 'minor'. A fuzzy
    side (conda's `numpy=1.26`) matches any version that starts with its release.
    """
    va, vb = parse_version(a), parse_version(b)
    if va is None or vb is None:
        return "equal" if str(a).strip().lower() == str(b).strip().lower() else "unparsed"
    n = max(len(va.release), len(vb.release), 3)
    ra, rb = _pad(va.release, n), _pad(vb.release, n)
    if fuzzy_a and tuple(vb.release[:len(va.release)]) == tuple(va.release):
        ra = _pad(vb.release, n)
    if fuzzy_b and tuple(va.release[:len(vb.release)]) == tuple(vb.release):
        rb = _pad(va.release, n)
    if ra[0] != rb[0]:
        return "major"
    if ra[1] != rb[1]:
        return "minor"
    if rc_is_release and va.pre != vb.pre:
        return "minor"
    if ra != rb or va.pre != vb.pre or va.post != vb.post or va.dev != vb.dev:
        return "patch"
    if va.local != vb.local:
        return "local"
    return "equal"


def _release3(v: str) -> str:
    pv = parse_version(v)
    return ".".join(str(x) for x in _pad(pv.release, 3)[:3]) if pv is not None else str(v)


def public(v: str) -> str:
    pv = parse_version(v)
    return pv.public if pv is not None else str(v).split("+", 1)[0]


# --------------------------------------------------------------------------- parsing

def parse_pip_json(text: str) -> tuple[list[Entry], list[str]]:
    try:
        data = load_json_data(text)
    except ValueError as e:
        return [], [f"not valid JSON: {e}"]
    if not isinstance(data, list):
        return [], ["a pip list JSON file must be a list of {name, version} objects"]
    lines = _json_name_lines(text)
    out, problems = [], []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or "version" not in item:
            problems.append(f"item {i + 1}: not a {{name, version}} object; skipped")
            continue
        name = item["name"]
        ver = str(item["version"])
        e = Entry(name=name, line=lines.get(name), source=f"{name}=={ver}", version=ver, spec=f"=={ver}")
        loc = item.get("editable_project_location")
        if isinstance(loc, str):
            e.editable, e.url = True, "file://" + loc
        if isinstance(item.get("installer"), str):
            e.installer = item["installer"]
        out.append(e)
    return out, problems


def _json_name_lines(text: str) -> dict[str, int]:
    """Line of each `"name": "<x>"` in a JSON text (first occurrence)."""
    out: dict[str, int] = {}
    for i, ln in enumerate(text.splitlines(), 1):
        for m in re.finditer(r'"name"\s*:\s*"([^"]+)"', ln):
            out.setdefault(m.group(1), i)
    return out


def parse_conda(text: str) -> tuple[list[Entry], list[str], str | None, int | None]:
    """environment.yml -> entries (conda and pip), problems, python version and its line."""
    try:
        doc, lines = load_yaml(text)
    except YAMLError as e:
        return [], [f"not valid YAML: {e}"], None, None
    if not isinstance(doc, dict) or not isinstance(doc.get("dependencies"), list):
        return [], ["no 'dependencies' list; not a conda environment file"], None, None
    out: list[Entry] = []
    problems: list[str] = []
    python, pyline = None, None
    for i, dep in enumerate(doc["dependencies"]):
        line = lines.get(("dependencies", i))
        if isinstance(dep, dict) and isinstance(dep.get("pip"), list):
            for j, req in enumerate(dep["pip"]):
                if not isinstance(req, str):
                    continue
                sub, probs, _ = parse_requirements(req)
                pline = lines.get(("dependencies", i, "pip", j))
                for e in sub:
                    e.line = pline
                    e.installer = "pip"
                out.extend(sub)
                problems.extend(f"line {pline}: {p.split(': ', 1)[-1]}" for p in probs)
            continue
        if not isinstance(dep, str):
            problems.append(f"line {line}: dependency is not a string; skipped")
            continue
        e, py, problem = conda_entry(dep, line)
        if problem:
            problems.append(problem)
        elif py is not None:
            python, pyline = py, line
        elif e is not None:
            out.append(e)
    return out, problems, python, pyline


# --------------------------------------------------------------------------- facts

def extract(src, ctx):

    # the engine detected the kind (registry.detect); a direct call falls back to the suffix
    kind = src.kind or {".json": "pipjson", ".yaml": "conda", ".yml": "conda"}.get(src.suffix, "requirements")
    strict, side = ctx.options.strict_local, ctx.side
    ex = Extract()
    rank = RANK_CONFIG
    exhaustive = False
    if kind == "pipjson":
        entries, problems = parse_pip_json(src.text)
        rank, exhaustive = RANK_LOG, True
    elif kind == "conda":
        entries, problems, python, pyline = parse_conda(src.text)
        if python:
            ex.facts.append(Fact(key="version:python", value=python, check="environment", path=src.name, line=pyline,
                                 source=f"python={python}", rank=RANK_CONFIG,
                                 meta={"component": "python", "platform": "any", "fuzzy": True}))
    else:
        refs: list = []  # -r FILE / -c FILE: followed by the engine, read as package lists of their own
        entries, problems, asked = parse_requirements(src.text, refs)
        ex.references.extend(refs)
        strict = strict or asked
        if "freeze" in src.basename.lower() or _is_pip_list(src.text):
            rank, exhaustive = RANK_LOG, True
    fatal = not entries and bool(problems) and kind in ("pipjson", "conda")
    for p in problems:
        ex.errors.append(InputError(src.name, p + ("" if fatal else "; line skipped"), fatal=fatal))
    ex.facts.extend(package_facts(entries, src.name, side, rank, strict, exhaustive=exhaustive))
    ex.facts.append(list_marker(src.name, exhaustive))
    return ex


def _is_pip_list(text: str) -> bool:
    rows = [ln for ln in text.splitlines()[:3] if ln.strip()]
    return len(rows) >= 2 and rows[0].split()[:2] == ["Package", "Version"] and rows[1].lstrip().startswith("---")


def derive_pair(gpu, npu) -> None:
    """Tell each package fact what the other side's list is: none at all, a hand-written
    selection, or everything installed (decides what "on one side only" means)."""
    def summary(table):
        markers = table.facts.get(LIST_KEY, [])
        return bool(markers), any(f.value is True for f in markers)

    gs, ns = summary(gpu), summary(npu)
    for table, other in ((gpu, ns), (npu, gs)):
        for k in table.keys("libraries"):
            if k.startswith("pkg:"):
                for f in table.facts[k]:
                    f.meta["other_has_pkgs"], f.meta["other_exhaustive"] = other


# --------------------------------------------------------------------------- both sides

NPU_MARKERS = ("torch-npu", "mindspeed", "deepspeed-npu")


def _match(name: str, patterns) -> bool:
    return any(name == p or ("*" in p and fnmatch.fnmatchcase(name, p)) for p in patterns or [])


def side_platform(real: dict[str, Fact]) -> str | None:
    for f in real.values():
        p = f.meta.get("platform")
        if p in ("gpu", "npu"):
            return p
    plat = data().get("platform_packages", {}) or {}
    if any(n in real for n in NPU_MARKERS) or any(_match(n, plat.get("npu")) for n in real if n != "torch-npu"):
        return "npu"
    torch = real.get("torch")
    if torch is not None and str(torch.meta.get("version") or "").split("+", 1)[-1].startswith("cu"):
        return "gpu"
    if "flash-attn" in real or any(_match(n, plat.get("gpu")) for n in real):
        return "gpu"
    return None


def derive(table) -> None:
    """Per side: constraints that install nothing dropped, stand-ins for counterparts, and the
    torch_npu/torch release check."""
    for k in [k for k in table.keys("libraries") if k.startswith("pkg:")]:
        if all(f.meta.get("constraint") for f in table.facts[k]):  # -c pins a package only if one is installed
            del table.facts[k]
    pkgs = {k[4:]: table.get(k) for k in table.keys("libraries") if k.startswith("pkg:")}
    real = {n: f for n, f in pkgs.items() if f is not None and not f.meta.get("counterpart")}
    if not real:
        return
    side = next((f.meta.get("side") for f in real.values() if f.meta.get("side")), None)
    platform = side_platform(real)
    tn, t = real.get("torch-npu"), real.get("torch")
    if tn is not None and t is not None and tn.meta.get("version") and t.meta.get("version"):
        a, b = parse_version(tn.meta["version"]), parse_version(t.meta["version"])
        if a is not None and b is not None and _pad(a.release, 3)[:3] != _pad(b.release, 3)[:3]:
            table.add(Fact(key="compat:torch-npu", value=f"torch_npu {tn.meta['version']} with torch {t.meta['version']}",
                           check="libraries", path=tn.path, line=tn.line, source=tn.source, origin=ORIGIN_DERIVED,
                           rank=RANK_LOG, via=f"torch {t.meta['version']} at {t.path}:{t.line or '-'}",
                           meta={"force": True, "torch_npu": tn.meta["version"], "torch": t.meta["version"]}))
    for cp in data().get("counterparts", []) or []:
        g, n = cp["gpu"], cp["npu"]
        if side == "npu" and platform != "gpu" and n in real and g not in real and g != "torch":
            have = real[n]
            table.add(_standin(g, have, cp))
        if side == "gpu" and platform != "npu" and n not in real:
            have = real.get(g) or next((real[a] for a in cp.get("also_gpu", []) or [] if a in real), None)
            if have is not None:
                table.add(_standin(n, have, cp))


def _standin(name: str, have: Fact, cp: dict) -> Fact:
    return Fact(key=f"pkg:{name}", value=f"(counterpart: {have.meta.get('name')} {have.value})", check="libraries",
                path=have.path, line=have.line, source=have.source, rank=RANK_DEFAULT, via="counterpart",
                meta={"counterpart": True, "mask": cp["mask"], "of": have.meta.get("name"), "why": cp.get("why", ""),
                      "side": have.meta.get("side")})


def classify(key: str, g: Fact | None, n: Fact | None, rs) -> Finding | Masked | None:
    lib = rs.section("library_checks", {}) or {}
    if key == LIST_KEY:
        return None  # bookkeeping (see derive_pair), never a finding
    if key.startswith("compat:"):
        f = g or n
        where = "NPU" if n is not None else "GPU"
        return finding("torch-npu-torch-mismatch", key=key, gpu=g, npu=n, derived=True,
                       message=f"torch_npu {f.meta['torch_npu']} belongs to torch "
                               f"{_release3(f.meta['torch_npu'])}, but the {where} side has torch "
                               f"{f.meta['torch']}")
    if not key.startswith("pkg:"):
        return None
    name = key[4:]
    is_key = name in set(lib.get("key_packages", []) or [])
    label = (g or n).meta.get("name", name)

    if g is not None and n is not None:
        gs, ns = g.meta.get("counterpart"), n.meta.get("counterpart")
        if gs and ns:
            return None
        if gs or ns:
            stand = g if gs else n
            return Masked(rule=stand.meta["mask"], gpu=g.side(), npu=n.side())
        return _compare(key, label, is_key, g, n, lib)
    present = g if g is not None else n
    side = "gpu" if g is not None else "npu"
    if present.meta.get("counterpart"):
        return None
    plat = (lib.get("platform_packages", {}) or {}).get(side, [])
    if _match(name, plat):
        return Masked(rule=code("platform-only-package"), gpu=g.side() if g else None, npu=n.side() if n else None)
    for cp in lib.get("counterparts", []) or []:
        if side == "gpu" and cp["gpu"] == name and cp.get("required"):
            return finding("counterpart-missing", key=key, gpu=g, npu=n,
                           message=f"{label} {show(present.value)} on GPU, and the NPU side has no {cp['npu']} "
                                   f"to stand for it ({cp.get('why', '')})")
    where, other = ("GPU", "NPU") if side == "gpu" else ("NPU", "GPU")
    if present.meta.get("other_has_pkgs") is False:
        return None  # the other side gave no package list at all: nothing to compare against
    if present.meta.get("exhaustive") and present.meta.get("other_exhaustive") is False:
        return finding("installed-not-listed", key=key, gpu=g, npu=n,
                       message=f"{label} {show(present.value)} is installed on {where}; the {other} side's "
                               f"package list (a hand-written selection) does not name it")
    if is_key:
        return finding("key-package-one-side", key=key, gpu=g, npu=n,
                       message=f"key package {label} {show(present.value)} is installed on {where} only")
    return finding("package-one-side", key=key, gpu=g, npu=n,
                   message=f"{label} {show(present.value)} is installed on {where} only")


def _compare(key, label, is_key, g: Fact, n: Fact, lib):
    gm, nm = g.meta, n.meta
    gv, nv = gm.get("version"), nm.get("version")
    if gv is None or nv is None:  # a range, a URL or a bare name on at least one side
        gc, nc = gm.get("commit"), nm.get("commit")
        if gc and nc:
            if gc[:len(nc)] == nc or nc[:len(gc)] == gc:
                return None
            return finding("package-source-differs" if is_key else "package-version-differs", key=key, gpu=g, npu=n,
                           message=f"{label} comes from commit {gc[:12]} on GPU and {nc[:12]} on NPU")
        if gm.get("spec", "") == nm.get("spec", "") and gm.get("url") == nm.get("url"):
            return None
        return finding("requirement-not-pinned" if is_key else "package-version-differs", key=key, gpu=g, npu=n,
                       message=f"{label} is required as {show(g.value)} on GPU and {show(n.value)} on NPU; "
                               f"the installed versions cannot be compared (pin them, or compare snapshots)")
    level = version_level(gv, nv, fuzzy_a=bool(gm.get("fuzzy")), fuzzy_b=bool(nm.get("fuzzy")))
    if level == "equal":
        gc, nc = gm.get("commit"), nm.get("commit")
        if (gc or nc) and (gc or "")[:12] != (nc or "")[:12]:
            return finding("package-source-differs" if is_key else "package-version-differs", key=key, gpu=g, npu=n,
                           message=f"{label} {public(gv)} comes from {('commit ' + gc[:12]) if gc else 'a release'} on GPU and "
                                   f"{('commit ' + nc[:12]) if nc else 'a release'} on NPU")
        return None
    if level == "local":
        gl, nl = (parse_version(gv).local or ""), (parse_version(nv).local or "")
        tag = (lib.get("npu_local_tags", {}) or {}).get(key[4:])
        if tag and nl.startswith(tag) and not gl.startswith(tag):
            return Masked(rule=code("ascend-apex"), gpu=g.side(), npu=n.side())
        if gm.get("strict_local") or nm.get("strict_local"):
            return finding("local-build-tag-differs", key=key, gpu=g, npu=n,
                           message=f"{label} {public(gv)} is built as +{gl or '(none)'} "
                                   f"on GPU and +{nl or '(none)'} on NPU (--strict-local)")
        return Masked(rule=code("local-build-tag-ignored"), gpu=g.side(), npu=n.side())
    if level == "unparsed":
        return finding("key-package-patch-differs" if is_key else "package-version-differs", key=key, gpu=g, npu=n,
                       message=f"{label} is {gv} on GPU and {nv} on NPU (not PEP 440 versions; compared as text)")
    if not is_key:
        return finding("package-version-differs", key=key, gpu=g, npu=n,
                       message=f"{label} is {gv} on GPU and {nv} on NPU ({level} version)")
    if level in ("major", "minor"):
        return finding("key-package-version-differs", key=key, gpu=g, npu=n,
                       message=f"key package {label} is {gv} on GPU and {nv} on NPU ({level} version differs)")
    return finding("key-package-patch-differs", key=key, gpu=g, npu=n,
                   message=f"key package {label} is {gv} on GPU and {nv} on NPU (patch level differs)")


# --- content sniffing for the kind registry (rules/kinds.yaml `sniff`) ------------------------

def looks_like_conda(head: str, basename: str) -> bool:
    """A conda environment file: dependencies plus channels, its usual name, or a pip section."""
    return "dependencies:" in head and ("channels:" in head or basename in ("environment.yml", "environment.yaml")
                                        or ("name:" in head and "pip" in head))


def looks_like_pip_json(head: str, basename: str) -> bool:
    """`pip list --format json`: a list of {name, version} objects."""
    head = head.lstrip()
    return head.startswith("[") and '"name"' in head and '"version"' in head


def looks_like_package_list(head: str, basename: str) -> bool:
    """A package list by its name (a .txt named requirements*, *freeze*, *pip*) or by its
    content, whatever the name (pip freeze saved as env_gpu.txt or freeze.log): a requirements
    file (packages.is_requirement_list: unpinned names, comments first, -e, --index-url, git+
    lines and markers included), a `pip list` table, or mostly pins (at least 3, at least 4 in
    5 entry lines: a saved terminal session keeps its prompt and a warning or two)."""
    if basename.endswith(".txt") and any(w in basename for w in ("requirement", "freeze", "pip")):
        return True
    return looks_like_requirements(head) or _mostly_pins(head)


_PIN_LINE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*(\[[^\]]*\])?\s*(==|===|>=|<=|~=|!=|<|>| @ )")


def _mostly_pins(head: str) -> bool:
    lines = head.splitlines() if head.endswith("\n") else head.splitlines()[:-1]  # the last may be cut
    rows = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    pins = sum(1 for r in rows if _PIN_LINE.match(r) and " " not in r.split("==", 1)[0].strip())
    return pins >= 3 and pins * 5 >= len(rows) * 4

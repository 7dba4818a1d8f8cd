"""Package lists as every reader states them: requirement lines, conda specs, `pkg:` facts.

The libraries check (checks/libraries.py) reads package lists (requirements, pip freeze, pip
list, conda environment files) and the launch-script reader (lang/shell/install.py) reads the
packages an environment-setup script installs (`pip install torch==2.1.0`, `conda create -n
x python=3.10 numpy=1.26`): both state them in the one form here, so a package installed by a
script and the same package pinned in a requirements file compare as one key.

- A requirement line is parsed with `packaging` (PEP 508: a name, extras, specifiers, an
  environment marker, `name @ URL`), or is a VCS/URL line naming its package with `#egg=`;
  per-requirement options (`--hash=...`) are dropped, and the options of a requirements
  file are read as pip reads them: `-r FILE` / `-c FILE` name another file (a reference the
  engine follows), `-e` an editable install, the rest (`--index-url`, `-f`, ...) install
  nothing themselves.
- A requirements file is recognised by its content, whatever its name (`is_requirement_list`):
  every entry line parses as one of the above, and one of them says it is a package list (a
  version specifier, a marker, extras, a URL, a pip option, or a package the rules know).
- A conda spec (`numpy=1.26`, `pytorch::pytorch==2.1.0`) is read as conda means it (`=1.26`
  is any 1.26.*), conda-only plumbing (rules/libraries.yaml `conda_names`) left out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import RANK_DEFAULT, Fact
from .rules import RuleSet, derived

_NAME_NORM = re.compile(r"[-_.]+")
STRICT_DIRECTIVE = "scriptdiff: strict-local"

# pip's requirement-file options (pip/_internal/req/req_file.py): those that name another file,
# with what that file is, and the rest of those a line may hold (they install nothing themselves)
FILE_OPTIONS = {"-r": "requirement", "--requirement": "requirement", "-c": "constraint", "--constraint": "constraint"}
LINE_OPTIONS = ("-i", "--index-url", "--extra-index-url", "--no-index", "-f", "--find-links", "--trusted-host", "--pre",
                "--prefer-binary", "--only-binary", "--no-binary", "--use-feature", "--require-hashes", "-Z",
                "--always-unzip", "--use-pep517", "--no-use-pep517", "--config-settings", "--global-option",
                "--install-option")
# options written after a requirement on its own line (pip-compile's hashes)
PER_REQUIREMENT = ("--hash", "--global-option", "--install-option", "--config-settings")


def normalize_name(name: str) -> str:
    """PEP 503: runs of -, _ and . become one -, lower case."""
    return _NAME_NORM.sub("-", name.strip()).lower()


@derived
def data(rs: RuleSet) -> dict:
    return rs.section("library_checks", {}) or {}


@dataclass
class Entry:
    """One package as a list states it."""

    name: str  # as written
    line: int | None
    source: str
    version: str | None = None  # pinned version (exact)
    spec: str = ""  # specifier as written, normalized ('' = any)
    url: str | None = None
    commit: str | None = None
    editable: bool = False
    installer: str | None = None
    fuzzy: bool = False  # conda 'name=1.26' (any 1.26.*)
    extra: dict = field(default_factory=dict)
    constraint: bool = False  # from a constraints file (-c): pins a package only if something installs it


def scrub_url(url: str | None) -> str | None:
    """A URL without user:password@ (tokens in git URLs never reach a report)."""
    if not url:
        return url
    return re.sub(r"(://)[^/@\s]*@", r"\1", url)


def _commit_of(url: str) -> str | None:
    """The revision pinned in a VCS URL: git+https://host/x.git@<rev>#egg=..."""
    u = url.split("#", 1)[0]
    if "+" not in u.split("://", 1)[0] and not u.startswith("git"):
        return None
    path = u.split("://", 1)[-1]
    if "@" in path.split("/", 1)[-1]:
        rev = path.rsplit("@", 1)[1]
        return rev or None
    return None


def _egg_name(url: str) -> str | None:
    if "#" not in url:
        return None
    for part in url.split("#", 1)[1].split("&"):
        if part.startswith("egg="):
            return part[4:].split("[")[0] or None
    return None


def _is_url(code: str) -> bool:
    head = code.split("://", 1)[0]
    return "://" in code and head.replace("+", "").isalpha()


def option_file(code: str) -> tuple[str, str] | None:
    """("requirement" | "constraint", FILE) for `-r FILE`, `-rFILE`, `--requirement=FILE`, `-c FILE`."""
    for opt, what in FILE_OPTIONS.items():
        if code == opt:
            return None
        if code.startswith(opt + " ") or code.startswith(opt + "="):
            path = code[len(opt) + 1:].strip()
            return (what, path) if path else None
        if len(opt) == 2 and code.startswith(opt) and not code.startswith(opt + "-"):
            return what, code[2:].strip()
    return None


def requirement(code: str, line: int | None, source: str) -> tuple[Entry | None, str | None]:
    """One requirement (no option line): the Entry, or a problem saying why it is none; (None,
    None) for what installs a package scriptdiff cannot name (`-e .`, a URL without #egg=)."""
    from packaging.requirements import InvalidRequirement, Requirement

    code = _without_options(code)
    if code.startswith(("-e ", "--editable ", "--editable=")):
        target = (code.split(None, 1)[1] if " " in code else code.split("=", 1)[1]).strip()
        name = _egg_name(target)
        if name is None:
            return None, None  # `-e .`: the name is in that folder's metadata, not here
        return Entry(name=name, line=line, source=source, url=scrub_url(target.split("#", 1)[0]),
                     commit=_commit_of(target), editable=True), None
    if _is_url(code):  # git+https://host/x.git@rev#egg=x, https://host/x.whl
        name = _egg_name(code)
        if name is None:
            return None, None
        return Entry(name=name, line=line, source=source, url=scrub_url(code.split("#", 1)[0]),
                     commit=_commit_of(code)), None
    try:
        req = Requirement(code)
    except InvalidRequirement as e:
        return None, f"line {line}: not a requirement: {str(e).splitlines()[0][:80]}"
    e = Entry(name=req.name, line=line, source=source)
    if req.url:
        e.url = scrub_url(req.url)
        e.commit = _commit_of(req.url)
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        e.version = specs[0].version
    e.spec = ",".join(sorted(str(s) for s in specs))
    return e, None


def _without_options(code: str) -> str:
    """A requirement without the options pip lets a line add after it (`--hash=sha256:...`)."""
    words = code.split()
    keep = []
    skip = False
    for w in words:
        if skip:
            skip = False
            continue
        if w.startswith(PER_REQUIREMENT):
            skip = "=" not in w and w in PER_REQUIREMENT
            continue
        keep.append(w)
    return " ".join(keep)


def _logical_lines(text: str):
    """(first line number, the line with its `\\` continuations joined) of a requirements text."""
    raw = text.splitlines()
    i = 0
    while i < len(raw):
        start = i + 1
        line = raw[i]
        while line.rstrip().endswith("\\") and i + 1 < len(raw):
            i += 1
            line = line.rstrip()[:-1] + " " + raw[i].strip()
        i += 1
        yield start, line


def parse_requirements(text: str, refs: list | None = None) -> tuple[list[Entry], list[str], bool]:
    """requirements.txt / pip freeze / `pip list` columns -> entries, problems, strict-local asked.
    `refs`, when given, receives (FILE, line, "requirement" | "constraint") for each `-r FILE`
    and `-c FILE` line: files the engine follows and reads as package lists of their own."""
    entries: list[Entry] = []
    problems: list[str] = []
    strict = False
    raw = text.splitlines()
    # `pip list` (columns) output
    first = [(i, ln) for i, ln in enumerate(raw) if ln.strip()][:2]
    if len(first) == 2 and first[0][1].split()[:2] == ["Package", "Version"] and first[1][1].lstrip().startswith("---"):
        for i, ln in enumerate(raw[first[1][0] + 1:], start=first[1][0] + 2):
            parts = ln.split()
            if len(parts) >= 2:
                e = Entry(name=parts[0], line=i, source=ln.strip(), version=parts[1], spec=f"=={parts[1]}")
                if len(parts) >= 3 and parts[2].startswith("/"):
                    e.editable, e.url = True, "file://" + parts[2]
                entries.append(e)
            elif parts:
                problems.append(f"line {i}: not a 'name version' row: {ln.strip()[:60]}")
        return entries, problems, strict
    for start, line in _logical_lines(text):
        stripped = scrub_url(line.strip())
        if not stripped:
            continue
        if stripped.startswith("#"):
            body = stripped.lstrip("#").strip()
            if body.lower() == STRICT_DIRECTIVE:
                strict = True
            m = re.match(r"Editable install with no version control \((.+)==(.+)\)$", body)
            if m:  # pip freeze's note for `pip install -e <dir>`
                entries.append(Entry(name=m.group(1), line=start, source=stripped, version=m.group(2),
                                     spec=f"=={m.group(2)}", editable=True))
            continue
        # an inline comment starts at ' #'
        code = re.split(r"\s+#", stripped, maxsplit=1)[0].strip()
        if code.startswith(("-e ", "--editable ", "--editable=")):
            e, _ = requirement(code, start, stripped)
            if e is not None:
                entries.append(e)
            else:
                target = (code.split(None, 1)[1] if " " in code else code.split("=", 1)[1]).strip()
                if entries and entries[-1].line == start - 1 and entries[-1].editable and entries[-1].url is None:
                    entries[-1].url = "file://" + target if target.startswith("/") else target
            continue
        if code.startswith("-"):
            named = option_file(code)
            if named is not None and refs is not None:
                refs.append((named[1], start, named[0]))
            continue  # --index-url, -f, ...: not packages
        e, problem = requirement(code, start, stripped)
        if problem:
            problems.append(problem)
        elif e is not None:
            entries.append(e)
    return entries, problems, strict


def known_names() -> frozenset[str]:
    """Packages the rules name (key packages, counterparts, platform packages): an unpinned
    list of names holding one of them is a package list."""
    d = data()
    names = set(d.get("key_packages") or [])
    for cp in d.get("counterparts") or []:
        names |= {cp.get("gpu"), cp.get("npu")} | set(cp.get("also_gpu") or [])
    for pats in (d.get("platform_packages") or {}).values():
        names |= {p for p in pats or [] if "*" not in p}
    return frozenset(normalize_name(n) for n in names if n)


def is_requirement_list(head: str) -> bool:
    """A requirements file by its content (the first characters of it, `head`): every entry
    line is a requirement, a pip option line or a URL naming its package, and at least one says
    it is a package list (a specifier, a marker, extras, a URL, an option, a known package).
    Comments and blank lines may come anywhere, the first line included; a last line cut off
    by the head is not judged."""
    from packaging.requirements import InvalidRequirement, Requirement

    cut = not head.endswith("\n") and head.count("\n") > 0
    text = head.rsplit("\n", 1)[0] if cut else head
    lines = list(_logical_lines(text))
    rows = [re.split(r"\s+#", ln.strip(), maxsplit=1)[0].strip() for _n, ln in lines]
    rows = [r for r in rows if r and not r.startswith("#")]
    if not rows:
        return False
    if rows[0].split()[:2] == ["Package", "Version"] and len(rows) > 1 and rows[1].startswith("---"):
        return True
    known = known_names()
    evidence = 0
    for r in rows:
        if r.startswith("-"):
            if option_file(r) or r.startswith(("-e ", "--editable")) or r.split("=", 1)[0].split()[0] in LINE_OPTIONS:
                evidence += 1
                continue
            return False
        if _is_url(r):
            if _egg_name(r) is None and not r.endswith((".whl", ".tar.gz", ".zip")):
                return False
            evidence += 1
            continue
        try:
            req = Requirement(_without_options(r))
        except InvalidRequirement:
            return False
        if req.specifier or req.marker or req.url or req.extras or normalize_name(req.name) in known:
            evidence += 1
    return evidence > 0


def conda_entry(dep: str, line: int | None) -> tuple[Entry | None, str | None, str | None]:
    """One conda spec (`numpy=1.26`, `pytorch::pytorch==2.1.0`, `python=3.10`): (its Entry, the
    Python version when it is python, a problem). Conda-only plumbing gives (None, None, None)."""
    spec = dep.strip()
    if "::" in spec:
        spec = spec.split("::", 1)[1]
    m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", spec)
    if not m:
        return None, None, f"line {line}: not a conda package spec: {spec[:60]}"
    name, rest = m.group(1), m.group(2).strip()
    version, fuzzy, spec_s = None, False, rest
    if rest.startswith("=="):
        version = rest[2:].split("=", 1)[0].strip()
    elif rest.startswith("=") or re.match(r"^\d", rest):
        version = rest.lstrip("=").split("=", 1)[0].strip().rstrip("*").rstrip(".")
        fuzzy = True  # conda's `numpy=1.26` means 1.26.*
    if version and any(c in version for c in "<>|,!"):
        version, fuzzy = None, False
    if normalize_name(name) == "python":
        return None, version or rest, None
    names = data().get("conda_names", {}) or {}
    key_name = names.get(normalize_name(name), name) if normalize_name(name) in names else name
    if key_name is None:
        return None, None, None  # conda-only plumbing (pip, cudatoolkit ...), not a Python package
    return Entry(name=key_name, line=line, source=scrub_url(dep), version=version or None,
                 spec=f"=={version}" if version else spec_s, installer="conda", fuzzy=fuzzy), None, None


# --------------------------------------------------------------------------- facts

def entry_value(e: Entry):
    if e.version is not None:
        v = e.version
        if e.commit:
            v += f" @ {e.commit[:12]}"
        return v
    if e.url:
        return e.url + (f"@{e.commit}" if e.commit and e.commit not in e.url else "")
    return e.spec or "(any version)"


def package_facts(entries: list[Entry], path: str, side: str, rank: int, strict: bool = False,
                  platform: str | None = None, exhaustive: bool = False) -> list[Fact]:
    """`exhaustive`: the list names everything installed (snapshot, pip freeze, pip list), not a
    hand-written selection (requirements, environment.yml)."""
    facts = []
    for e in entries:
        meta = {"name": e.name, "version": e.version, "spec": e.spec, "pinned": e.version is not None,
                "side": side, "exhaustive": exhaustive}
        if e.url:
            meta["url"] = e.url
        if e.commit:
            meta["commit"] = e.commit
        if e.editable:
            meta["editable"] = True
        if e.installer:
            meta["installer"] = e.installer
        if e.fuzzy:
            meta["fuzzy"] = True
        if strict:
            meta["strict_local"] = True
        if platform:
            meta["platform"] = platform
        if e.constraint:
            meta["constraint"] = True
        facts.append(Fact(key=f"pkg:{normalize_name(e.name)}", value=entry_value(e), check="libraries", path=path,
                          line=e.line, source=e.source, rank=rank + (1 if e.constraint else 0), meta=meta))
    return facts


LIST_KEY = "pkglist"
CONSTRAINT = "constraint"  # the reference of a `-c FILE` line (a requirements file's, or pip install -c)


def list_marker(path: str, exhaustive: bool) -> Fact:
    """Says that this side gave a package list (even an empty one), and of which sort."""
    return Fact(key=LIST_KEY, value=exhaustive, check="libraries", path=path, source="package list",
                rank=RANK_DEFAULT, meta={"marker": True})


def as_constraints(facts: list[Fact]) -> list[Fact]:
    """The facts of a constraints file (`-c FILE`): each pin applies only to a package something
    else installs (checks/libraries.derive drops the rest) and outranks an unpinned requirement;
    the file itself is no list of installed packages (no list marker)."""
    out = []
    for f in facts:
        if f.key == LIST_KEY:
            continue
        if f.key.startswith("pkg:") and not f.meta.get("constraint"):
            f = Fact(key=f.key, value=f.value, check=f.check, path=f.path, line=f.line, source=f.source,
                     origin=f.origin, via=f.via, rank=f.rank + 1, note=f.note, meta={**f.meta, "constraint": True})
        out.append(f)
    return out

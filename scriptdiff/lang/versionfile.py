"""A framework's version file (rules/versionfile.yaml): `package_info.py` with MAJOR, MINOR,
PATCH (and PRE_RELEASE) and `__package_name__`, as Megatron-LM's megatron/core/package_info.py.

The file is parsed with the standard library's `ast` (never imported or run); its module-level
literals give the version of the package it names, one fact `pkg:<name>` of the libraries
check, compared like a package list's. A side's framework version, wherever it comes from
(this file, a package list, an environment snapshot), also picks the defaults of its release
(vocabulary.side_versions, default_changed).
"""
from __future__ import annotations

import ast
import re

from ..model import RANK_CONFIG, Extract, Fact, InputError

_NAME_NORM = re.compile(r"[-_.]+")
PARTS = ("MAJOR", "MINOR", "PATCH")


def extract(src, ctx) -> Extract:
    ex = Extract()
    try:
        tree = ast.parse(src.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        ex.errors.append(InputError(src.name, f"not valid Python ({type(e).__name__}); its version was not read"))
        return ex
    consts: dict[str, tuple[object, int]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Constant):
            consts[node.targets[0].id] = (node.value.value, node.lineno)
    name = consts.get("__package_name__", (None, None))[0]
    parts = [consts[p][0] for p in PARTS if p in consts]
    if not isinstance(name, str) or len(parts) < 2 or not all(isinstance(p, (int, str)) for p in parts):
        ex.unread.append("no __package_name__ with MAJOR and MINOR: no version read")
        return ex
    version = ".".join(str(p) for p in parts)
    pre = consts.get("PRE_RELEASE", ("", None))[0]
    if isinstance(pre, str) and pre:
        version += pre
    line = consts["MAJOR"][1]
    lines = src.text.splitlines()
    pkg = _NAME_NORM.sub("-", name.strip()).lower()
    ex.facts.append(Fact(key=f"pkg:{pkg}", value=version, check="libraries", path=src.name, line=line,
                         source=lines[line - 1].strip() if 0 < line <= len(lines) else "", rank=RANK_CONFIG,
                         via="MAJOR.MINOR.PATCH of its version file", meta={"name": name, "version": version}))
    return ex

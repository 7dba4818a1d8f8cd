"""How the files of two sides pair: by relative path, then by the rename rules of
rules/pairing.yaml (train.py <-> train_npu.py, *_gpu.* <-> *_npu.*, gpu/ <-> npu/).

Folders and git trees (run/folders.py), `check`'s inputs, the pre-commit file list and the programs
two launch scripts start (pipeline.py: the same program under an expected name is no
finding) all pair names here.
"""
from __future__ import annotations

from ..ruleset.rules import load


def pairing_rules() -> dict:
    """The `pairing` section of rules/pairing.yaml."""
    return load().section("pairing", {}) or {}


def _split(rel: str) -> tuple[list[str], str, str]:
    parts = rel.split("/")
    name = parts[-1]
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:  # no extension, or a dot-file such as .env
        stem, ext = name, ""
    return parts[:-1], stem, ("." + ext) if ext else ""


def _match(template: str, stem: str) -> str | None:
    """The {base} of `stem` under `template` ('{base}_gpu' matches 'model_gpu' -> 'model')."""
    pre, _, post = template.partition("{base}")
    if len(stem) <= len(pre) + len(post) or not stem.startswith(pre) or not stem.endswith(post):
        return None
    return stem[len(pre):len(stem) - len(post)]


def candidates(rel: str, rules: dict) -> list[str]:
    """NPU-side names a GPU file may have been renamed to, most likely first."""
    dirs, stem, ext = _split(rel)
    dir_variants = [dirs]
    for ren in rules.get("dir_renames", []) or []:
        for i, seg in enumerate(dirs):
            if seg == ren["gpu"]:
                dir_variants.append(dirs[:i] + [ren["npu"]] + dirs[i + 1:])
    stems = [stem]
    for ren in rules.get("name_renames", []) or []:
        base = _match(ren["gpu"], stem)
        if base is not None:
            stems.append(ren["npu"].replace("{base}", base))
    out = []
    for dv in dir_variants:
        for s in stems:
            c = "/".join([*dv, s + ext])
            if c != rel and c not in out:
                out.append(c)
    if rel not in out:
        out.insert(0, rel)
    return out


def pair_paths(gpu: list[str], npu: list[str], rules: dict) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(pairs, GPU-only, NPU-only): same relative path first, then the rename rules."""
    nset = set(npu)
    pairs = [(g, g) for g in gpu if g in nset]
    used = {g for g, _ in pairs}
    free_npu = nset - used
    left = []
    for g in gpu:
        if g in used:
            continue
        for c in candidates(g, rules):
            if c in free_npu:
                pairs.append((g, c))
                free_npu.discard(c)
                break
        else:
            left.append(g)
    return sorted(pairs), sorted(left), sorted(free_npu)


def renamed(gpu: str, npu: str) -> bool:
    """Whether `npu` is `gpu` itself or one of its expected NPU names (candidates)."""
    return npu in candidates(gpu, pairing_rules())


def skip_dirs() -> list[str]:
    return list(pairing_rules().get("skip_dirs", []) or [])

"""GPU<->NPU environment-variable names, from the one table in rules/environment.yaml.

`canonical(name)` gives the key an environment variable is compared under (env:<GPU-side
name>) and its role: 'paired' (has a counterpart), 'npu_tuning', 'gpu_tuning',
'npu_precision', 'gpu_precision', 'same_on_npu' or 'plain'. Used by launch-script exports
and environment snapshots alike.
"""
from __future__ import annotations

import fnmatch

from .rules import RuleSet, derived


@derived
def _table(rs: RuleSet):
    env = rs.section("env_map", {}) or {}
    pairs = dict(env.get("pairs", {}))
    reverse = {v: k for k, v in pairs.items()}
    return env, pairs, reverse


def canonical(name: str) -> tuple[str, str]:
    env, pairs, reverse = _table()
    if name in pairs:
        return f"env:{name}", "paired"
    if name in reverse:
        return f"env:{reverse[name]}", "paired"
    for role in ("npu_precision", "gpu_precision", "npu_tuning", "gpu_tuning", "same_on_npu"):
        for pat in env.get(role, []) or []:
            if name == pat or ("*" in pat and fnmatch.fnmatchcase(name, pat)):
                return f"env:{name}", role
    return f"env:{name}", "plain"


def variable_name(name) -> bool:
    """An environment variable's spelling: upper-case letters, digits and `_`, a letter first."""
    return isinstance(name, str) and name[:1].isalpha() and name.isupper() and all(
        c.isdigit() or c == "_" or ("A" <= c <= "Z") for c in name)


def env_entry(path: tuple) -> str | None:
    """The variable a config entry sets when it sits in an environment section (env_map
    `sections`: `env_vars.NCCL_IB_HCA`, `runtime_env.env_vars.HCCL_BUFFSIZE`), else None."""
    env, _pairs, _reverse = _table()
    if len(path) < 2 or not variable_name(path[-1]) or not isinstance(path[-2], str):
        return None
    return path[-1] if path[-2].lower() in (env.get("sections") or ()) else None


def gpu_spelled(text: str) -> str:
    """`text` with every variable it reads (`$NAME`, `${NAME}`) that has a GPU counterpart
    spelled as that counterpart: `$(echo $ASCEND_RT_VISIBLE_DEVICES | wc -l)` reads as
    `$(echo $CUDA_VISIBLE_DEVICES | wc -l)` (a value kept as written that differs from the GPU
    side's only by the renamed variable it reads is the same value)."""
    reverse = _table()[2]
    if "$" not in text or not reverse:
        return text
    out, i, n = [], 0, len(text)
    while i < n:
        if text[i] != "$":
            out.append(text[i])
            i += 1
            continue
        brace = text.startswith("${", i)
        j = i + 1 + brace
        k = j
        while k < n and (text[k].isalnum() or text[k] == "_"):
            k += 1
        name = text[j:k]
        out.append(text[i:j] + reverse.get(name, name))
        i = k
    return "".join(out)


def npu_name(gpu_name: str) -> str | None:
    return _table()[1].get(gpu_name)


def value_equivalent(name: str, a: str, b: str) -> bool:
    env, _, _ = _table()
    for group in (env.get("value_equivalents", {}) or {}).get(name, []):
        if a in group and b in group:
            return True
    return False

"""The devices a run can be on, as rules/devices.yaml names them (docs/devices.md).

Each side of a comparison is one device: the GPU side a CUDA GPU, the NPU side an Ascend
NPU. Device names as scripts write them (`"npu:0"`, `"gpu"`, `DEVICE=ascend`) belong to a
family: cuda, npu, or other (mps, xpu, cpu, ...: a device neither side is). The readers
specialise each side to its device (lang/python/specialise.py, lang/shell/specialise.py);
this module holds what they and the pipeline share, and is cheap to import.
"""
from __future__ import annotations

import re

from .rules import RuleSet, derived

FAMILIES = ("cuda", "npu", "other")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")  # fooBar, MMData: a word each


def name_words(name: str) -> tuple:
    """An identifier's words: `_targetDevice` -> ("target", "device"), `num_gpus` -> ("num", "gpus")."""
    return tuple(w.lower() for part in name.split("_") for w in _CAMEL.split(part) if w)


@derived
def _roles(rs: RuleSet) -> tuple[frozenset, dict]:
    py = (table(rs).get("python") or {}).get("plumbing") or {}
    return frozenset(py.get("prefixes") or ()), {k: [tuple(w) for w in v] for k, v in (py.get("names") or {}).items()}


def plumbing_role(name: str | None) -> str | None:
    """What a name whose value is not known holds, by its words (rules/devices.yaml
    python.plumbing): "device" (`get_current_device`, `self._target_device`), "backend"
    (`dist_backend`), "rank" (`local_rank`, `rank_id`): any number of the plumbing's `prefixes`,
    then one of its `names`; None for any other name. The last dotted part is read."""
    if not name:
        return None
    ws = name_words(name.rsplit(".", 1)[-1])
    prefixes, names = _roles()
    for role, endings in names.items():
        for end in endings:
            n = len(end)
            if len(ws) >= n and ws[-n:] == end and all(w in prefixes for w in ws[:-n]):
                return role
    return None


@derived
def table(rs: RuleSet) -> dict:
    return rs.section("devices", {}) or {}


def side_family(side: str) -> str:
    """The device family of a side ("gpu" -> "cuda", "npu" -> "npu")."""
    return (table().get("sides") or {}).get(side, "cuda" if side == "gpu" else "npu")


@derived
def _names(rs: RuleSet) -> dict[str, str]:
    out = {}
    for fam, names in (table(rs).get("families") or {}).items():
        for n in names or []:
            out[str(n).lower()] = fam
    return out


def family_of(name: str) -> str | None:
    """The family of a device name as written ("npu:0" -> npu, "GPU" -> cuda, "cpu" -> other),
    None for a word that names no device."""
    if not isinstance(name, str):
        return None
    base = name.strip().lower().split(":", 1)[0]
    return _names().get(base)


def backend_family(name) -> str | None:
    """The device family whose runs use the collective library a value names ("nccl" -> cuda,
    "HCCL" -> npu: rules/devices.yaml `backends`), None for any other value."""
    if not isinstance(name, str):
        return None
    low = name.strip().strip("'\"").lower()
    for fam, names in (table().get("backends") or {}).items():
        if low in (str(n).lower() for n in names or ()):
            return fam
    return None


def visible_variable(name) -> bool:
    """A variable that lists the devices a process sees (rules/devices.yaml `counts.visible`)."""
    return isinstance(name, str) and name in ((table().get("counts") or {}).get("visible") or ())


def ids_count(value) -> int | None:
    """How many devices a list of device ids names (`0,1,2`: 3); None for anything else."""
    parts = [x.strip() for x in str(value).strip().strip("'\"").split(",")]
    return len(parts) if parts and all(x.isdigit() for x in parts) else None


def device_flag(words) -> str | None:
    """The device family a switch's name says it turns on (`use_npu`, `npu`, `is_cuda`: its
    words are one name of the cuda or npu family and plumbing `flag_words` only), else None."""
    flags = set((((table().get("python") or {}).get("plumbing") or {}).get("flag_words")) or ())
    named = [family_of(w) for w in words if family_of(w) in ("cuda", "npu")]
    if len(named) != 1 or not all(w in flags or family_of(w) == named[0] for w in words):
        return None
    return named[0]


@derived
def _words(rs: RuleSet) -> tuple[bytes, ...]:
    names = (table(rs).get("families") or {}).get("npu") or ()
    return tuple(str(n).lower().encode() for n in names)


def _alpha(b: int) -> bool:
    return 97 <= b <= 122  # the text is lower-cased first


def _has_word(low: bytes, w: bytes) -> bool:
    """`w` in `low` with no letter right before or after it (`torch_npu`, `"npu:0"`, `_NPU`,
    `/usr/local/Ascend`; not `input` or `ascending`)."""
    at = low.find(w)
    while at != -1:
        end = at + len(w)
        if (at == 0 or not _alpha(low[at - 1])) and (end >= len(low) or not _alpha(low[end])):
            return True
        at = low.find(w, at + 1)
    return False


def may_branch(data: bytes) -> bool:
    """Whether a file may run differently on the two devices: it names the NPU somewhere
    (`is_torch_npu_available`, `import torch_npu`, `"npu"`, `/usr/local/Ascend`). A file that
    never does reads the same on both (its CUDA tests hold on both: docs/devices.md), so two
    byte-identical copies of it are equal without being read."""
    low = data.lower()
    return any(_has_word(low, w) for w in _words())

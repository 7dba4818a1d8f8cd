"""Environment variables (launch-script exports and snapshots): how a difference reads.

Keys are `env:<GPU-side name>` (scriptdiff.ruleset.envmap); each fact's meta carries the variable's
actual name, its role from the env_map table in rules/environment.yaml, and `mask: SD010`
when the NPU name was mapped onto the GPU one. Rules (rules/envvars.yaml):

  SD010 mask     a mapped variable renamed with the same meaning and value
  SD301 warning  a mapped or plain variable's value differs
  SD306 error    a determinism variable (env_map.determinism) differs, or is set on one
                 side only
  SD302 info     an NPU-only tuning variable (or `source .../set_env.sh`)
  SD303 info     a GPU-only tuning variable
  SD304 warning  a precision-affecting variable set on one side only, or differing
  SD305 info     any other variable set on one side only; search paths (PATH,
                 LD_LIBRARY_PATH, PYTHONPATH, ...) set or differing
  SD308 info     a plain variable the script passes on to its program as an option (compared
                 there, under the option's key)
  SD307 info     a plain variable (in no table) whose name, read as a setting's, says it
                 names a run, a place or a cadence (PROJECT_NAME, TENSORBOARD_DIR, SAVE_FREQ)

Values that mean the same compare equal: "1"/"true"/"on", and the per-variable
value_equivalents of env_map; each run's own device or backend named (TRAIN_DEVICE=gpu / =npu,
COMM=nccl / =hccl) and a visible-devices list naming as many devices (=0 / =1) are the port. A
secret-looking name or value (scriptdiff.ruleset.secrets) is compared as read but shown only as a withheld marker with a short fingerprint, whatever the source
(a launch script withholds at reading; a hand-written or old snapshot may not have). Other `environment` keys (version:...) are delegated to
scriptdiff.checks.environment.classify_version.
"""
from __future__ import annotations

import dataclasses
import fnmatch

from ..run.compare import show
from ..ruleset.envmap import value_equivalent
from ..run.finding import finding
from ..model import Fact, Masked
from ..ruleset.devices import backend_family, family_of, ids_count, visible_variable
from ..ruleset.rules import code, load
from ..ruleset.secrets import WITHHELD, is_secret, redact_text, withheld
from ..ruleset.vocabulary import is_cosmetic, to_bool
from .environment import classify_version


def _env():
    return load().section("env_map", {}) or {}


def same_value(name: str, a, b) -> bool:
    if a == b:
        return True
    sa, sb = str(a).strip(), str(b).strip()
    if sa == sb or value_equivalent(name, sa.lower(), sb.lower()):
        return True
    ba, bb = to_bool(sa), to_bool(sb)
    return isinstance(ba, bool) and isinstance(bb, bool) and ba == bb


def _names_a_place(name: str) -> bool:
    """A variable's name read as a setting's is cosmetic, as written or after its first word
    (a script's namespace: ORBIT_PROJECT_NAME is project_name)."""
    low = name.lower()
    rest = low.partition("_")[2]
    return is_cosmetic(low, dialects=False) or ("_" in rest and is_cosmetic(rest, dialects=False))


def _listed(name: str, patterns) -> bool:
    return any(name == p or ("*" in p and fnmatch.fnmatchcase(name, p)) for p in patterns or [])


def _name(f: Fact | None) -> str:
    return (f.meta.get("name") if f is not None else None) or ""


def _role(g: Fact | None, n: Fact | None) -> str:
    for f in (g, n):
        if f is not None and f.meta.get("role"):
            return f.meta["role"]
    return "plain"


def classify(key: str, g: Fact | None, n: Fact | None, rs):
    if not key.startswith("env:"):
        return classify_version(key, g, n, rs)
    return classify_env(key, g, n, rs)


def _shown(f: Fact | None, name: str) -> Fact | None:
    """The fact as a report may show it: a secret-looking value withheld (compared as read)."""
    if f is None or not isinstance(f.value, str) or f.value.startswith(WITHHELD) \
            or not is_secret(_name(f) or name, f.value):
        return f
    return dataclasses.replace(f, value=withheld(f.value), source=redact_text(f.source, {f.value}))


def classify_env(key: str, g: Fact | None, n: Fact | None, rs):
    env = _env()
    gpu_name = key[4:]
    same = g is not None and n is not None and same_value(gpu_name, g.value, n.value)
    g, n = _shown(g, gpu_name), _shown(n, gpu_name)
    gname, nname = _name(g) or gpu_name, _name(n) or gpu_name
    role = _role(g, n)
    sourced = (g or n).meta.get("sourced")
    if same:
        mask = g.meta.get("mask") or n.meta.get("mask")
        return Masked(rule=mask, gpu=g.side(), npu=n.side()) if mask else None
    if g is not None and n is not None and family_of(str(g.value).strip().lower()) == "cuda" \
            and family_of(str(n.value).strip().lower()) == "npu":  # TRAIN_DEVICE=gpu against =npu: the run's device
        return Masked(rule=code("device-plumbing"), gpu=g.side(), npu=n.side())
    if g is not None and n is not None and backend_family(g.value) == "cuda" and backend_family(n.value) == "npu":
        return Masked(rule=code("distributed-backend-port"), gpu=g.side(), npu=n.side())  # DIST_BACKEND=nccl / =hccl
    if g is not None and n is not None and visible_variable(gpu_name) and ids_count(g.value) is not None \
            and ids_count(g.value) == ids_count(n.value):  # CUDA_VISIBLE_DEVICES=0 against =1: another device, as many
        return Masked(rule=code("device-plumbing"), gpu=g.side(), npu=n.side())
    both = g is not None and n is not None
    where = "GPU" if n is None else "NPU"
    present = g if n is None else n
    label = gname if n is None else nname
    if sourced:
        if role == "npu_tuning":
            return finding("npu-tuning-variable", key=key, gpu=g, npu=n,
                           message=f"NPU environment script {label[7:]} is sourced on {where} only "
                                   "(sets the CANN paths; tuning, not numerics)")
        return finding("env-var-one-side", key=key, gpu=g, npu=n,
                       message=f"{label} is sourced on {where} only")
    if role == "npu_tuning":
        what = (f"{nname} is {show(n.value)} on NPU and {show(g.value)} on GPU" if both
                else f"{label}={show(present.value)} is set on {where} only")
        return finding("npu-tuning-variable", key=key, gpu=g, npu=n,
                       message=f"NPU tuning variable: {what} (performance, not numerics)")
    if role == "gpu_tuning":
        what = (f"{gname} is {show(g.value)} on GPU and {show(n.value)} on NPU" if both
                else f"{label}={show(present.value)} is set on {where} only")
        return finding("gpu-tuning-variable", key=key, gpu=g, npu=n,
                       message=f"GPU tuning variable: {what} (performance, not numerics)")
    if role in ("npu_precision", "gpu_precision"):
        what = (f"{gname} is {show(g.value)} on GPU and {show(n.value)} on NPU" if both
                else f"{label}={show(present.value)} is set on {where} only")
        return finding("precision-variable", key=key, gpu=g, npu=n,
                       message=f"precision-affecting variable: {what}")
    if both and role == "paired" and _listed(gname, env.get("gpu_tuning")) and _listed(nname, env.get("npu_tuning")):
        # twins that tune each side's collective library (NCCL_DEBUG / HCCL_DEBUG): not numerics
        return finding("gpu-tuning-variable", key=key, gpu=g, npu=n,
                       message=f"tuning variables: {gname} (GPU) / {nname} (NPU) is {show(g.value)} on GPU and "
                               f"{show(n.value)} on NPU (performance, not numerics)")
    if not both and role == "paired":  # a paired variable that is tuning on its own side
        for lst, rule, side in (("gpu_tuning", "gpu-tuning-variable", "GPU"),
                                ("npu_tuning", "npu-tuning-variable", "NPU")):
            if _listed(label, env.get(lst)):
                return finding(rule, key=key, gpu=g, npu=n,
                               message=f"{side} tuning variable: {label}={show(present.value)} "
                                       f"is set on {where} only (performance, not numerics)")
    if gpu_name in (env.get("search_paths") or []):
        what = (f"{gname} is {show(g.value)} on GPU and {show(n.value)} on NPU" if both
                else f"{label}={show(present.value)} is set on {where} only")
        return finding("env-var-one-side", key=key, gpu=g, npu=n,
                       message=f"search path: {what} (expected to differ between platforms; "
                               "the libraries check compares what is installed)")
    determinism = set(env.get("determinism", []) or [])
    is_det = gpu_name in determinism or gname in determinism or nname in determinism
    passed = [f.meta.get("passed_on") for f in (g, n)] if both else []
    if both and not is_det and role == "plain" and all(passed):
        keys = sorted(set(passed[0]) | set(passed[1]))
        return finding("env-var-passed-on", key=key, gpu=g, npu=n,
                       message=f"{gname if gname == nname else f'{gname} (GPU) / {nname} (NPU)'} is {show(g.value)} "
                               f"on GPU and {show(n.value)} on NPU; the script passes it on as {', '.join(keys)}, "
                               f"compared there")
    if both and not is_det and role == "plain" and gname == nname and _names_a_place(gname):
        return finding("env-var-names-a-place", key=key, gpu=g, npu=n,
                       message=f"{gname} is {show(g.value)} on GPU and {show(n.value)} on NPU: its name says it names "
                               f"a run, a place or a cadence (not numerics); where the script passes it on, the "
                               f"option is compared under its own key")
    if both:
        names = gname if gname == nname else f"{gname} (GPU) / {nname} (NPU)"
        return finding("determinism-variable-differs" if is_det else "env-var-value-differs", key=key, gpu=g, npu=n,
                       message=f"{names} is {show(g.value)} on GPU and {show(n.value)} on NPU")
    if is_det:
        other = nname if n is None else gname
        if n is None and gpu_name in (env.get("pairs") or {}):
            other = env["pairs"][gpu_name]
        return finding("determinism-variable-differs", key=key, gpu=g, npu=n,
                       message=f"determinism variable {label}={show(present.value)} is set on "
                               f"{where} only (no {other} on the other side)")
    return finding("env-var-one-side", key=key, gpu=g, npu=n,
                   message=f"{label}={show(present.value)} is set on {where} only")

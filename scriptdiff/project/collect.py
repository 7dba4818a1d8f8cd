"""`scriptdiff collect`: this machine's environment as a versioned JSON snapshot.

Fast and light by design (it runs on every training node): no torch, no numpy, no
importing of any installed package. Versions come from files: the distributions' own
metadata (found with importlib.metadata, read as text), the Ascend and CUDA version files,
C headers (cuDNN, NCCL) and /proc. Commands (npu-smi, nvidia-smi, nvcc) run only when they
are on PATH, with a short timeout, and never under --root. The format is documented in
docs/snapshot.md; `SCHEMA_VERSION` changes when a field changes meaning or is removed.

Every absolute path read is taken under `root` (default /), so that a laid-out install tree
(tests, an offline audit of a mounted image) reads like a machine. Environment variables
are recorded from an allowlist (rules/platform.yaml `snapshot_env`, plus every name of the
GPU<->NPU table in rules/environment.yaml); a secret-looking name (rules/secrets.yaml) is
never recorded, nor a value that carries credentials in a URL.

Only regular files are read, at most 1 MiB each (sources.open_regular): a FIFO at
IMG/etc/os-release or a device where a version file should be is not waited on or read
forever; the snapshot lists each such file under "unread" with the reason, and the
`collect` command prints them.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import PurePosixPath

from .. import __version__, budget
from ..inputs.jsonload import loads as load_json_data
from ..ruleset.rules import load
from ..ruleset.secrets import is_secret, is_secret_name, withhold_tree
from ..inputs.sources import SourceError, open_regular

SCHEMA_VERSION = 1
ASCEND_ROOT = "/usr/local/Ascend"


# --------------------------------------------------------------------------- files under root

MACHINE_FILES = frozenset({"/proc/driver/nvidia/version"})  # kernel files read on purpose (they never block)


class Reader:
    """Reads absolute paths under a root folder as a chroot would: each symbolic link on the way
    is resolved inside the root (an absolute target from the root, `..` never above it), at most
    budget.LINK_HOPS of them per path, so no path read leaves the root."""

    def __init__(self, root: str | None = None):
        self.root = os.path.abspath(root) if root else "/"
        self.unread: list[str] = []  # "path: reason" for files that exist but are not regular files

    def path(self, p: str) -> str | None:
        """Where `p` (a path of the tree) is on this machine: a path under the root with no
        symbolic link left in it, or None when its links go round more than budget.LINK_HOPS
        times (noted in `unread`)."""
        if self.root == "/":
            return p
        stack = list(PurePosixPath(p).parts[1:])
        cur = self.root
        hops = 0
        while stack:
            part = stack.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if cur != self.root:
                    cur = os.path.dirname(cur)
                continue
            nxt = os.path.join(cur, part)
            if os.path.islink(nxt):
                hops += 1
                if hops > budget.LINK_HOPS:
                    why = f"{p}: more than {budget.LINK_HOPS} symbolic links to follow (a chain or a loop of links)"
                    if why not in self.unread:
                        self.unread.append(why)
                    return None
                try:
                    target = os.readlink(nxt)
                except OSError:
                    return None
                if target.startswith("/"):
                    cur = self.root
                    stack = list(PurePosixPath(target).parts[1:]) + stack
                else:
                    stack = list(PurePosixPath(target).parts) + stack
                continue
            cur = nxt
        return cur

    def inside(self, real: str) -> str | None:
        """A machine path found under the root (a distribution's metadata folder) resolved again
        from the root: whatever links it went through, the result stays under the root."""
        if self.root == "/":
            return real
        rel = os.path.relpath(real, self.root)
        if rel == ".." or rel.startswith(".." + os.sep):
            return None
        return self.path("/" + rel.replace(os.sep, "/"))

    def text(self, p: str, limit: int = budget.MACHINE_FILE_BYTES) -> str | None:
        real = self.path(p)
        return None if real is None else self.read_file(real, p, limit)

    def read_file(self, real: str, display: str, limit: int = budget.MACHINE_FILE_BYTES) -> str | None:
        """A regular file's first `limit` bytes as text, or None (missing, or not a regular
        file: then noted in `unread`). `real` is a path under the root that `path` resolved."""
        # a kernel pseudo-file is refused (it may block: /proc/kmsg), but for the machine files
        # read here on purpose, when they are themselves and not a link elsewhere
        ok = display in MACHINE_FILES and os.path.realpath(real) == display
        try:
            with open_regular(real, display, pseudo_ok=ok, follow=self.root == "/") as fh:
                data = fh.read(limit)
        except SourceError as e:
            msg = str(e)
            if not msg.endswith(("no such file or directory", "broken symbolic link", "is a directory",
                                 "not a valid path")) and msg not in self.unread:
                self.unread.append(msg)
            return None
        except OSError:
            return None
        return data.decode("utf-8", errors="replace")

    def isdir(self, p: str) -> bool:
        real = self.path(p)
        return real is not None and os.path.isdir(real)

    def listdir(self, p: str) -> list[str]:
        real = self.path(p)
        try:
            return sorted(os.listdir(real)) if real is not None else []
        except OSError:
            return []

    def realpath(self, p: str) -> str:
        """The machine path (not under root) that p resolves to."""
        real = self.path(p)
        if real is None:
            return p
        real = os.path.realpath(real)
        if self.root == "/":
            return real
        root_real = os.path.realpath(self.root)
        if real == root_real:
            return "/"
        if real.startswith(root_real + os.sep):
            return "/" + os.path.relpath(real, root_real)
        return p


def read_kv(text: str | None) -> dict[str, str]:
    """key=value lines (version.info, ascend_install.info, os-release); keys lower-cased."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        if "=" not in line or line.lstrip().startswith("#"):
            continue
        k, v = line.split("=", 1)
        out.setdefault(k.strip().lower(), v.strip().strip("'\""))
    return out


def _found(version, source, **detail) -> dict:
    d = {"version": version, "source": source}
    d.update({k: v for k, v in detail.items() if v not in (None, "", [])})
    return d


def _missing(tried: list[str], **detail) -> dict:
    d = {"version": None, "tried": tried}
    d.update({k: v for k, v in detail.items() if v not in (None, "", [])})
    return d


def _first_kv(rd: Reader, files: list[str], keys: tuple[str, ...]) -> tuple[str | None, str | None, dict]:
    for f in files:
        kv = read_kv(rd.text(f))
        for k in keys:
            if kv.get(k):
                return kv[k], f, kv
    return None, None, {}


# --------------------------------------------------------------------------- Ascend

def ascend_root(rd: Reader) -> str:
    kv = read_kv(rd.text("/etc/ascend_install.info"))
    p = kv.get("driver_install_path_param")
    return p.rstrip("/") if p else ASCEND_ROOT


def toolkit_homes(rd: Reader, env: dict, root: str) -> list[str]:
    homes = []
    for h in (env.get("ASCEND_TOOLKIT_HOME"), env.get("ASCEND_HOME_PATH"), f"{root}/ascend-toolkit/latest",
              f"{root}/latest"):
        if h and h.startswith("/") and h.rstrip("/") not in homes:
            homes.append(h.rstrip("/"))
    return homes


def _archs(arch: str | None) -> list[str]:
    return [arch] if arch else ["x86_64", "aarch64"]


def collect_ascend(rd: Reader, env: dict, arch: str) -> dict:
    root = ascend_root(rd)
    out: dict = {}
    homes = toolkit_homes(rd, env, root)
    files = []
    for h in homes:
        files += [f"{h}/toolkit/version.info"]
        files += [f"{h}/{a}-linux/ascend_toolkit_install.info" for a in _archs(arch)]
        files += [f"{h}/runtime/version.info", f"{h}/compiler/version.info"]
    v, src, kv = _first_kv(rd, files, ("version",))
    home = src.rsplit("/", 2)[0] if src else None
    if src and src.endswith("ascend_toolkit_install.info"):
        home = src.rsplit("/", 2)[0]
    out["cann"] = (_found(v, src, home=rd.realpath(home) if home else None, version_dir=kv.get("version_dir"),
                          timestamp=kv.get("timestamp")) if v else _missing(files))
    kfiles = [f"{h}/opp_kernel/version.info" for h in ([home] if home else homes)]
    v, src, _ = _first_kv(rd, kfiles, ("version",))
    out["cann_kernels"] = _found(v, src) if v else _missing(kfiles)
    hfiles = []
    for h in ([home] if home else homes):
        hfiles += [f"{h}/hccl/version.info", f"{h}/share/info/hccl/version.info"]
    v, src, _ = _first_kv(rd, hfiles, ("version",))
    out["hccl"] = _found(v, src) if v else _missing(hfiles)
    atb = env.get("ATB_HOME_PATH")
    nfiles = []
    if atb and atb.startswith("/"):
        nfiles.append(str(PurePosixPath(atb).parent.parent / "version.info"))
    nfiles.append(f"{root}/nnal/atb/latest/version.info")
    v, src, _ = _first_kv(rd, nfiles, ("ascend-cann-atb version", "version"))
    out["nnal"] = _found(v, src) if v else _missing(nfiles)
    for comp, folder in (("driver", "driver"), ("firmware", "firmware")):
        f = f"{root}/{folder}/version.info"
        v, src, _ = _first_kv(rd, [f], ("version",))
        out[comp] = _found(v, src) if v else _missing([f])
    return out


def npu_smi(run) -> dict | None:
    text = run(["npu-smi", "info"])
    if text is None:
        return None
    version = None
    for line in text.splitlines():
        m = re.search(r"Version:\s*([0-9][\w.\-]*)", line)
        if m:
            version = m.group(1)
            break
    return {"version": version, "text": text.splitlines()[:60]}


# --------------------------------------------------------------------------- NVIDIA

def collect_nvidia(rd: Reader, env: dict, run) -> tuple[dict, list | None]:
    out: dict = {}
    devices = None
    f = "/proc/driver/nvidia/version"
    text = rd.text(f)
    m = re.search(r"Kernel Module.*?\s(\d+\.\d+(?:\.\d+)?)\s", text or "")
    if m:
        out["nvidia_driver"] = _found(m.group(1), f)
    else:
        smi = run(["nvidia-smi", "--query-gpu=driver_version,name", "--format=csv,noheader"])
        rows = [[c.strip() for c in r.split(",")] for r in (smi or "").splitlines() if r.strip()]
        if rows and rows[0][0]:
            out["nvidia_driver"] = _found(rows[0][0], "nvidia-smi")
            devices = [r[1] for r in rows if len(r) > 1]
        else:
            out["nvidia_driver"] = _missing([f] + (["nvidia-smi"] if run.enabled else []))
    homes = []
    for h in (env.get("CUDA_HOME"), env.get("CUDA_PATH"), "/usr/local/cuda"):
        if h and h.startswith("/") and h.rstrip("/") not in homes:
            homes.append(h.rstrip("/"))
    tried = []
    cuda = None
    for h in homes:
        tried.append(f"{h}/version.json")
        t = rd.text(f"{h}/version.json")
        if t:
            try:
                v = load_json_data(t).get("cuda", {}).get("version")
            except (ValueError, AttributeError):
                v = None
            if v:
                cuda = _found(v, f"{h}/version.json", home=rd.realpath(h))
                break
        tried.append(f"{h}/version.txt")
        m = re.search(r"CUDA Version\s+([\d.]+)", rd.text(f"{h}/version.txt") or "")
        if m:
            cuda = _found(m.group(1), f"{h}/version.txt", home=rd.realpath(h))
            break
    if cuda is None:
        nv = run(["nvcc", "--version"])
        m = re.search(r"release\s+[\d.]+,\s*V([\d.]+)", nv or "")
        if m:
            cuda = _found(m.group(1), "nvcc --version")
        else:
            cuda = _missing(tried + (["nvcc --version"] if run.enabled else []))
    out["cuda"] = cuda
    incs = [f"{h}/include" for h in homes] + ["/usr/include", "/usr/include/x86_64-linux-gnu",
                                               "/usr/include/aarch64-linux-gnu"]
    out["cudnn"] = _header_version(rd, incs, ("cudnn_version.h", "cudnn.h"), "CUDNN", ("MAJOR", "MINOR", "PATCHLEVEL"))
    out["nccl"] = _header_version(rd, incs, ("nccl.h",), "NCCL", ("MAJOR", "MINOR", "PATCH"))
    return out, devices


def _header_version(rd: Reader, incs: list[str], names: tuple[str, ...], prefix: str, parts: tuple[str, ...]) -> dict:
    tried = []
    for inc in incs:
        for name in names:
            f = f"{inc}/{name}"
            tried.append(f)
            text = rd.text(f, limit=budget.HEADER_FILE_BYTES)
            if not text:
                continue
            nums = []
            for p in parts:
                m = re.search(rf"#\s*define\s+{prefix}_{p}\s+(\d+)", text)
                if not m:
                    break
                nums.append(m.group(1))
            if len(nums) == len(parts):
                return _found(".".join(nums), f)
    return _missing(tried)


# --------------------------------------------------------------------------- Python side

def site_dirs(rd: Reader, extra: list[str] | None, env: dict) -> list[str]:
    """Folders searched for distributions: sys.path, or under --root the usual places."""
    if rd.root == "/" and not extra:
        return [p for p in sys.path if p and os.path.isdir(p)]
    dirs: list[str] = []
    cands = list(extra or [])
    if rd.root != "/":
        prefix = env.get("CONDA_PREFIX")
        bases = ["/usr/lib", "/usr/local/lib", "/opt/conda/lib"] + ([f"{prefix}/lib"] if prefix else [])
        for base in bases:
            for py in rd.listdir(base):
                if py.startswith("python3"):
                    cands += [f"{base}/{py}/site-packages", f"{base}/{py}/dist-packages"]
        cands += [p for p in sys.path if p.startswith("/")]
    for c in cands:
        real = rd.path(c) if c.startswith("/") else c
        if real is not None and os.path.isdir(real) and real not in dirs:
            dirs.append(real)
    return dirs


def _headers(text: str) -> dict[str, str]:
    """Name and Version from a METADATA / PKG-INFO header block."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        if ":" in line and not line[0].isspace():
            k, v = line.split(":", 1)
            k = k.strip().lower()
            if k in ("name", "version") and k not in out:
                out[k] = v.strip()
                if len(out) == 2:
                    break
    return out


def _dist_text(dist, name: str, rd: Reader | None) -> str | None:
    """A file of a distribution's metadata folder, read only if it is a regular file."""
    folder = getattr(dist, "_path", None)  # importlib.metadata.PathDistribution's folder
    if rd is None or not isinstance(folder, os.PathLike):
        return dist.read_text(name)
    shown = os.path.join(os.fspath(folder), name)
    real = rd.inside(shown)  # under --root: its links resolved inside the root, never out of it
    return None if real is None else rd.read_file(real, shown)


def read_distributions(dirs: list[str], rd: Reader | None = None) -> list[dict]:
    from importlib.metadata import distributions

    rd = rd or Reader()
    seen: dict[str, dict] = {}
    for dist in distributions(path=dirs):
        meta = _dist_text(dist, "METADATA", rd) or _dist_text(dist, "PKG-INFO", rd) or ""
        h = _headers(meta)
        name, version = h.get("name"), h.get("version")
        if not name or not version:
            continue
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue  # shadowed by an earlier path entry, as import would see it
        d = {"name": name, "version": version}
        installer = (_dist_text(dist, "INSTALLER", rd) or "").strip()
        if installer:
            d["installer"] = installer
        du = _dist_text(dist, "direct_url.json", rd)
        if du:
            d["source"] = direct_url(du)
        seen[key] = d
    return sorted(seen.values(), key=lambda d: d["name"].lower())


def direct_url(text: str) -> dict:
    """PEP 610 direct_url.json -> {url, editable, vcs, commit, requested_revision}; a field that
    holds a credential (a URL's user information or token parameter, a token as the revision)
    is withheld, as in every field of a snapshot (secrets.withhold_tree)."""
    try:
        doc = load_json_data(text)
    except ValueError:
        return {"error": "unreadable direct_url.json"}
    if not isinstance(doc, dict):
        return {"error": "unreadable direct_url.json"}
    out = {"url": str(doc.get("url", ""))}
    dir_info = doc.get("dir_info") or {}
    if isinstance(dir_info, dict) and dir_info.get("editable"):
        out["editable"] = True
    vcs = doc.get("vcs_info") or {}
    if isinstance(vcs, dict):
        for k_in, k_out in (("vcs", "vcs"), ("commit_id", "commit"), ("requested_revision", "requested_revision")):
            if vcs.get(k_in):
                out[k_out] = str(vcs[k_in])
    return out


# --------------------------------------------------------------------------- environment variables

def env_policy() -> tuple[tuple, set, dict]:
    rs = load()
    pol = rs.section("snapshot_env", {}) or {}
    names = set(pol.get("names", []) or [])
    env_map = rs.section("env_map", {}) or {}
    for gpu_name, npu_name in (env_map.get("pairs", {}) or {}).items():
        names.update((gpu_name, npu_name))
    patterns = []
    for role in ("same_on_npu", "npu_tuning", "gpu_tuning", "npu_precision", "gpu_precision"):
        for n in env_map.get(role, []) or []:
            if "*" in n:
                patterns.append(n)
            else:
                names.add(n)
    prefixes = tuple(pol.get("prefixes", []) or []) + tuple(p.rstrip("*") for p in patterns)
    return prefixes, names, pol


def looks_secret(name: str, pol: dict | None = None) -> bool:
    """scriptdiff.ruleset.secrets.is_secret_name (rules/secrets.yaml); `pol` is not used any more."""
    return is_secret_name(name)


def collect_env(environ: dict) -> tuple[dict, int]:
    """Allowlisted variables (sorted) and how many allowlisted ones were withheld as secret-looking."""
    prefixes, names, _ = env_policy()
    out: dict[str, str] = {}
    withheld = 0
    for name in sorted(environ):
        if not (name in names or name.startswith(prefixes)):
            continue
        value = str(environ[name])
        if is_secret(name, value):
            withheld += 1
            continue
        out[name] = value
    return out, withheld


# --------------------------------------------------------------------------- commands

class Runner:
    """Runs a command only when enabled and on PATH; output text or None."""

    def __init__(self, enabled: bool, env: dict):
        self.enabled = enabled
        self.env = env
        self.ran: list[str] = []

    def __call__(self, argv: list[str]) -> str | None:
        if not self.enabled:
            return None
        import shutil
        import subprocess

        exe = shutil.which(argv[0], path=self.env.get("PATH", os.defpath))
        if not exe:
            return None
        self.ran.append(" ".join(argv))
        try:
            res = subprocess.run([exe, *argv[1:]], capture_output=True, timeout=budget.COMMAND_TIMEOUT, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        if res.returncode != 0:
            return None
        return res.stdout.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- the snapshot

def _tree_arch(rd: Reader, versions: dict) -> str | None:
    """The architecture of a --root tree, from the files that name it."""
    cann = versions.get("cann") or {}
    m = re.search(r"/(x86_64|aarch64)-linux/", cann.get("source") or "")
    if m:
        return m.group(1)
    for a in ("x86_64", "aarch64"):
        if cann.get("home") and rd.isdir(f"{cann['home']}/{a}-linux"):
            return a
    m = re.search(r"NVIDIA UNIX (?:Open Kernel Module for )?(x86_64|aarch64)", rd.text("/proc/driver/nvidia/version") or "")
    if m:
        return m.group(1)
    for a in ("x86_64", "aarch64"):
        if rd.isdir(f"/usr/lib/{a}-linux-gnu"):
            return a
    return None


def detect_platform(versions: dict, dists: list[dict], smi: dict | None) -> str:
    names = {re.sub(r"[-_.]+", "-", d["name"]).lower(): d for d in dists}

    def has(c):
        return bool((versions.get(c) or {}).get("version"))

    if has("driver") or has("firmware"):
        return "npu"
    if has("nvidia_driver"):
        return "gpu"
    if has("cann") or smi or "torch-npu" in names:
        return "npu"
    torch = names.get("torch", {}).get("version", "")
    if has("cuda") or "+cu" in torch:
        return "gpu"
    return "cpu"


def collect(root: str | None = None, environ: dict | None = None, run_commands: bool | None = None,
            sites: list[str] | None = None) -> dict:
    """The snapshot as a dict (see docs/snapshot.md)."""
    import platform as _platform

    t0 = time.perf_counter()
    env = dict(os.environ if environ is None else environ)
    rd = Reader(root)
    if run_commands is None:
        run_commands = rd.root == "/"
    run = Runner(run_commands, env)
    # under --root, the tree's architecture and Python are not this process's: inferred or left out
    arch = (_platform.machine() or "unknown") if rd.root == "/" else None
    osr = read_kv(rd.text("/etc/os-release"))
    versions: dict = {}
    versions.update(collect_ascend(rd, env, arch))
    nv, gpu_devices = collect_nvidia(rd, env, run)
    versions.update(nv)
    dirs = site_dirs(rd, sites, env)
    dists = read_distributions(dirs, rd)
    if arch is None:
        arch = _tree_arch(rd, versions)
    python = {"version": _platform.python_version(), "implementation": _platform.python_implementation(),
              "executable": sys.executable}
    if rd.root != "/":
        python = {"version": None}
        for d in dirs:
            m = re.search(r"/python(3\.\d+)/(site|dist)-packages$", d)
            if m:
                python = {"version": m.group(1), "inferred_from": "/" + os.path.relpath(d, rd.root)}
                break
    byname = {re.sub(r"[-_.]+", "-", d["name"]).lower(): d for d in dists}
    for comp, wheels in (("cudnn", ("nvidia-cudnn-cu12", "nvidia-cudnn-cu11")),
                         ("nccl", ("nvidia-nccl-cu12", "nvidia-nccl-cu11"))):
        if not versions[comp].get("version"):
            for w in wheels:
                if w in byname:
                    versions[comp] = _found(byname[w]["version"], f"distribution {byname[w]['name']}")
                    break
    smi = npu_smi(run)
    env_vars, withheld = collect_env(env)
    conda = None
    if env.get("CONDA_PREFIX") or env.get("CONDA_DEFAULT_ENV"):
        conda = {"name": env.get("CONDA_DEFAULT_ENV") or os.path.basename(env.get("CONDA_PREFIX", "")),
                 "prefix": env.get("CONDA_PREFIX")}
    snap = {
        "scriptdiff_snapshot": SCHEMA_VERSION,
        "tool": {"name": "scriptdiff", "version": __version__},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "root": rd.root,
        "platform": detect_platform(versions, dists, smi),
        "python": python,
        "os": {"name": osr.get("pretty_name") or _platform.system(), "id": osr.get("id"),
               "version_id": osr.get("version_id"), "kernel": _platform.release() if rd.root == "/" else None},
        "arch": arch,
        "conda": conda,
        "versions": dict(sorted(versions.items())),
        "npu_smi": smi,
        "gpu_devices": gpu_devices,
        "commands_run": run.ran,
        "distributions": dists,
        "env": env_vars,
        "env_withheld": withheld,
    }
    if rd.unread:
        snap["unread"] = rd.unread
    snap = withhold_tree(snap)  # one rule for every field: a secret-looking string is never written
    snap["collect_seconds"] = round(time.perf_counter() - t0, 4)
    return snap


def dumps(snap: dict) -> str:
    """JSON with one distribution and one variable per line (greppable, line numbers for reports)."""
    out = ["{"]
    items = list(snap.items())
    for i, (k, v) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if k == "distributions" and isinstance(v, list) and v:
            out.append(f'  "{k}": [')
            out += [f"    {json.dumps(d, ensure_ascii=False)}{',' if j < len(v) - 1 else ''}" for j, d in enumerate(v)]
            out.append(f"  ]{comma}")
            continue
        body = json.dumps(v, indent=2, ensure_ascii=False).replace("\n", "\n  ")
        out.append(f"  {json.dumps(k)}: {body}{comma}")
    out.append("}")
    return "\n".join(out) + "\n"

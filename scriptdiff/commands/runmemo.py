"""A warm run: the same `diff` on unchanged inputs prints what it printed before, without
reading them again (issue 14: a warm run costs about what `git diff` costs).

A run of `scriptdiff diff` or `scriptdiff check` whose output goes to a pipe or a file (not a
terminal), with the cache on, no git revisions and no standard input, records what it looked at:

- every file it opened for reading and every folder it listed (Python's audit events
  `open`, `os.scandir`, `os.listdir`), every path it looked for and did not find (a
  referenced config: scriptdiff/inputs/references.py raises the audit event `scriptdiff.looked`),
  the folder of each file among these
  of these, and the working directory;
- each one's identity: kind, size, modification and change times (ns), inode and device,
  taken when the run first looks at it (the audit event comes as the file is opened, before
  its bytes are read), never when the run ends: a file edited after it was read no longer
  has the identity recorded for it, so the next run reads it again. A folder's modification
  time changes when a file is added to it, removed or renamed.

Its standard output, standard error, exit status and the bytes of each `-o` file it wrote are
then stored in the cache (a keyed,
validated entry: scriptdiff/inputs/store.py), under a key of scriptdiff's version, code and rule
packs (`store.salt`), the Python version, the working directory, the arguments and the
environment variables that change output (`SCRIPTDIFF_*`, `NO_COLOR`, `COLUMNS`, ...).

A later run with the same key replays the entry when every recorded path still has its
identity (one `stat` each); anything else is a miss, and the run happens as usual. Files
are not read and nothing heavy is imported on a hit. A hit writes each `-o` file again, as
the run did (only to a path its own arguments name after `-o`/`--output`: a tampered entry
that names another path is not replayed); a file the run creates changes its folder, so the
run after the first one that creates it is compared once more before replays begin.

Not recorded, so never replayed: a run that read an object store, a git repository's objects or
a Ray cluster (`spoil`: what they hold has no identity a `stat` can check), a run where a file
it read was modified in the `RACY_NS` before it was read (its time stamp cannot tell a later edit in the same tick, the
racy-git problem), an exit status of 2 (a failure may be the machine's), output that could
not be written whole (a closed pipe: `| head`), and output larger than
budget.MEMO_OUTPUT_BYTES. `--no-cache` or `SCRIPTDIFF_NO_RUN_MEMO=1` turns it off.
"""
from __future__ import annotations

import json
import os
import stat
import sys
import time

from .. import budget
from ..inputs import store

RACY_NS = 2_000_000_000
_ENV = ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TERM", "CI", "PRE_COMMIT", "GITHUB_ACTIONS",
        "LANG", "LC_ALL", "LC_CTYPE", "PYTHONIOENCODING", "PYTHONUTF8", "HOME", "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME")

_rec: "Recorder | None" = None
_hooked = False


COMMANDS = ("diff", "check")  # the commands a warm run replays


def enabled(argv: list[str]) -> bool:
    return bool(argv) and argv[0] in COMMANDS and not os.environ.get("SCRIPTDIFF_NO_RUN_MEMO") \
        and "--no-cache" not in argv and not sys.stdout.isatty() and not sys.stderr.isatty()


def spoil(why: str) -> None:
    """The recorded run read something a file's identity cannot vouch for (an object store, a git
    repository's objects, a Ray cluster): it is not stored, so never replayed."""
    rec = _rec
    if rec is not None:
        rec.ok = False
        rec.spoiled = why


def _key(argv: list[str]) -> str:
    env = sorted((k, v) for k, v in os.environ.items() if k in _ENV or k.startswith("SCRIPTDIFF_"))
    # made before the run's own rule packs (--rules) load: their files are among what it reads
    return store.key("run", json.dumps([sys.version, os.getcwd(), list(argv), env]), user=False)


def identity(path: str):
    """What must not change for a replay: None for a path that does not exist."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISDIR(st.st_mode):
        return ["d", st.st_ino, st.st_dev, st.st_mtime_ns, st.st_ctime_ns]
    return ["f", st.st_mode, st.st_size, st.st_ino, st.st_dev, st.st_mtime_ns, st.st_ctime_ns]


def _shape_ok(entry) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("paths"), list) \
        and isinstance(entry.get("out"), str) and isinstance(entry.get("err"), str) \
        and type(entry.get("code")) is int and entry["code"] in (0, 1) \
        and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in entry["paths"]) \
        and isinstance(entry.get("files", []), list) \
        and all(isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) and isinstance(f[1], str)
                for f in entry.get("files", []))


def _named_outputs(argv: list[str]) -> set:
    """The absolute paths the arguments name after -o/--output (`-o F`, `-oF`, `--output=F`, each
    also as `FORMAT=F`): the only files a replay may write."""
    out, it = set(), iter(argv[:argv.index("--")] if "--" in argv else argv)
    for a in it:
        if a in ("-o", "--output"):
            spec = next(it, "")
        elif a.startswith("--output="):
            spec = a[len("--output="):]
        elif a.startswith("-o") and not a.startswith("--"):
            spec = a[2:]
        else:
            continue
        for path in (spec, spec.partition("=")[2]):
            if path:
                out.add(os.path.abspath(path))
    return out


def wrote(path: str, text: str) -> None:
    """An `-o` file the recorded run wrote (common.write_text): written again by a replay."""
    rec = _rec
    if rec is not None:
        rec.files.append([os.path.abspath(path), text])


def replay(argv: list[str]) -> int | None:
    """The stored run's exit status after writing its output, or None (run it)."""
    if not enabled(argv):
        return None
    try:
        entry = store.get(_key(argv), loads=json.loads)
    except (OSError, ValueError):
        return None
    if not _shape_ok(entry):
        return None
    for path, ident in entry["paths"]:
        if identity(path) != ident:
            return None
    files = entry.get("files") or []
    named = _named_outputs(argv)
    if any(path not in named for path, _text in files):
        return None
    for path, text in files:  # as common.write_text writes them
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            from .common import fail  # lazy: keeps --help fast, and a replay (only a failed write needs it)

            return fail(f"cannot write {path}: {e.strerror or e}")
    sys.stdout.write(entry["out"])
    sys.stdout.flush()
    sys.stderr.write(entry["err"])
    sys.stderr.flush()
    return entry["code"]


# ------------------------------------------------------------------------------ recording

class _Tee:
    """A text stream that passes everything on and keeps a copy."""

    def __init__(self, inner):
        self._inner = inner
        self.parts: list[str] = []
        self.size = 0
        self.broken = False  # a write or flush failed (a closed pipe: `| head`): not stored

    def write(self, s):
        if isinstance(s, str):
            self.parts.append(s)
            self.size += len(s)
        try:
            return self._inner.write(s)
        except BaseException:
            self.broken = True
            raise

    def flush(self):
        try:
            return self._inner.flush()
        except BaseException:
            self.broken = True
            raise

    def __getattr__(self, name):  # flush, isatty, fileno, encoding, errors, buffer...
        return getattr(self._inner, name)


class Recorder:
    def __init__(self, argv: list[str]):
        self.argv = list(argv)
        self.key = _key(argv)
        # path -> (its identity, the time) when the run first looked at it, before reading it
        self.paths: dict[str, tuple[list | None, int]] = {}
        self.ok = True
        own = [os.path.dirname(os.path.abspath(__file__)), str(store.rules_dir()), str(store.cache_dir()),
               os.path.dirname(str(store.key_file())), sys.prefix, sys.base_prefix, sys.exec_prefix,
               "/proc", "/dev", "/sys"]
        self.skip = tuple(os.path.join(os.path.abspath(p), "") for p in own if p)
        self.out, self.err = _Tee(sys.stdout), _Tee(sys.stderr)
        self.files: list = []  # [absolute path, text] of each -o file written
        self.spoiled = ""  # why the run cannot be replayed (spoil)
        self._add(os.getcwd())

    def _add(self, p: str):
        ident = identity(p)
        self.paths[p] = (ident, _now())
        if len(self.paths) > budget.MEMO_PATHS:
            self.ok = False
        return ident

    def saw(self, path) -> None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        elif isinstance(path, os.PathLike):
            path = os.fspath(path)
            path = os.fsdecode(path) if isinstance(path, bytes) else path
        if not isinstance(path, str):
            return
        p = os.path.abspath(path)
        if p.startswith(self.skip) or p in self.paths:
            return
        ident = self._add(p)  # now, before the bytes are read: an edit made after this is a change
        folder = os.path.dirname(p)
        if (ident is None or ident[0] != "d") and folder not in self.paths:
            self._add(folder)  # a file's folder: a file added beside it (a config) counts


def _audit(event: str, args) -> None:
    rec = _rec
    if rec is None:
        return
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        if isinstance(mode, str):
            if any(c in mode for c in "wax+"):
                return
        elif isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR):
            return
        rec.saw(path)
    elif event in ("os.scandir", "os.listdir"):
        rec.saw(args[0] if args else ".")
    elif event == "scriptdiff.looked":  # a path looked for without opening it (references.py)
        rec.saw(args[0] if args else None)


def _now() -> int:
    """The clock the racy window is told by (a test moves it on: files hours old in no time)."""
    return time.time_ns()


def start(argv: list[str], args) -> Recorder | None:
    """Record this run when it may be replayed later."""
    global _rec, _hooked
    if not enabled(argv) or getattr(args, "git", False) \
            or getattr(args, "git_external", False) or getattr(args, "git_path", None) \
            or getattr(args, "progress", False) \
            or getattr(args, "no_cache", False):
        return None
    inputs = [p for p in getattr(args, "paths", None) or [] if p != "vs"]  # both sides (common.split_sides)
    if not all(isinstance(p, str) and p != "-" and os.path.exists(p) for p in inputs):
        return None  # REV:path, standard input, a missing path
    try:  # the entry's folder first: made later, it would change a recorded folder (the working one)
        store._entry_path(_key(argv)).parent.mkdir(parents=True, exist_ok=True)
        rec = Recorder(argv)
    except (OSError, ValueError):
        return None
    for p in inputs:
        rec.saw(p)
    if not _hooked:
        sys.addaudithook(_audit)  # stays for the process; it does nothing when no run is recorded
        _hooked = True
    _rec = rec
    sys.stdout, sys.stderr = rec.out, rec.err
    return rec


def finish(rec: Recorder | None, code: int) -> None:
    global _rec
    if rec is None:
        return
    _rec = None
    sys.stdout, sys.stderr = rec.out._inner, rec.err._inner
    if not rec.ok or code not in (0, 1) or rec.out.broken or rec.err.broken \
            or rec.out.size + rec.err.size + sum(len(text) for _p, text in rec.files) > budget.MEMO_OUTPUT_BYTES:
        return
    paths = []
    for p in sorted(rec.paths):
        ident, seen = rec.paths[p]  # as it was when the run read it: an edit made since misses the replay
        if ident is not None and max(ident[-2:]) >= seen - RACY_NS:
            return  # modified too shortly before it was read for its time stamp to tell a later edit
        paths.append([p, ident])
    store.put(rec.key, {"paths": paths, "out": "".join(rec.out.parts), "err": "".join(rec.err.parts),
                        "code": code, "files": rec.files})

"""The cache's storage: keyed, validated entries on disk (see scriptdiff/inputs/cache.py for what
an entry holds and every check a hit passes). Kept free of the model and the rule loader,
so that a warm run (scriptdiff/commands/runmemo.py) can look an entry up without importing them."""
from __future__ import annotations

import json
import os
import stat
from functools import lru_cache
from pathlib import Path

from .. import __version__, budget

# hashlib's own blake2b and hmac's comparison, taken where they live: a replay imports neither
# hashlib nor hmac, which load OpenSSL's bindings (7-12 ms of a 60 ms replay)
try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - another interpreter
    from hashlib import blake2b
try:
    from _operator import _compare_digest as compare_digest
except ImportError:  # pragma: no cover - another interpreter
    from hmac import compare_digest


def rules_dir() -> Path:
    """rules/ of this source checkout when run from one, else the packs shipped in the wheel."""
    here = Path(__file__).resolve().parents[2] / "rules"
    if (here / "vocabulary.yaml").is_file():
        return here
    from importlib import resources  # only an installed wheel needs it (a replay skips the import)

    return Path(str(resources.files("scriptdiff.rulepacks")))


FORMAT = 1


def cache_dir() -> Path:
    env = os.environ.get("SCRIPTDIFF_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "scriptdiff" if xdg else Path.home() / ".cache" / "scriptdiff"


_USER_PACKS: tuple[Path, ...] = ()  # the user's rule packs (--rules DIR), in the order they load


def user_packs() -> tuple[Path, ...]:
    """The user's rule pack files this process loads after the shipped ones (scriptdiff.ruleset.rules)."""
    return _USER_PACKS


def set_user_packs(paths) -> None:
    """Load these user pack files too (scriptdiff.ruleset.rules.use_packs): every key changes with them."""
    global _USER_PACKS
    _USER_PACKS = tuple(paths)
    user_salt.cache_clear()


@lru_cache(maxsize=1)
def salt() -> str:
    """Changes whenever scriptdiff's version or any rule pack shipped with it changes."""
    h = blake2b(__version__.encode(), digest_size=16)
    # the packs and the code by name, size and time stamp, as git tells a changed file: a
    # development checkout changes without a version bump (a replay pays this walk: reading
    # the packs' 600 KB and pathlib's rglob were 6 ms of it)
    for folder, suffix in ((str(rules_dir()), ".yaml"),
                           (os.path.dirname(os.path.dirname(os.path.realpath(__file__))), ".py")):
        for path, st in sorted(_files(folder, suffix)):
            h.update(f"{os.path.basename(path)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _files(folder: str, suffix: str):
    """(path, stat) of every file named *suffix under folder, links to folders not followed."""
    with os.scandir(folder) as it:
        for e in it:
            if e.is_dir(follow_symlinks=False):
                yield from _files(e.path, suffix)
            elif e.name.endswith(suffix):
                yield e.path, e.stat()


@lru_cache(maxsize=1)
def user_salt() -> str:
    """The user's rule packs in use (set_user_packs), by name and bytes; "" for none."""
    if not _USER_PACKS:
        return ""
    from .sources import SourceError, read_bytes  # lazy: keeps --help fast (and a replay: only user packs need it)

    h = blake2b(digest_size=16)
    for p in _USER_PACKS:
        h.update(b"\x00user\x00" + str(p).encode("utf-8", "surrogatepass") + b"\x00")
        try:  # a regular file of a pack's size only: a link to /proc/kmsg or a FIFO would block
            h.update(read_bytes(p, str(p), budget.PACK_BYTES))
        except SourceError:  # the load that follows says why, naming the file
            h.update(b"\x00unreadable")
    return h.hexdigest()


def key(*parts: str | bytes, user: bool = True) -> str:
    """The cache key of `parts`, under the salt: an entry made with a user's packs is never one
    a run without them (or with other ones) reads. `user=False`: under the shipped packs' salt
    alone (a replayed run, whose key is made before its packs load: it records their files
    among what it read instead)."""
    h = blake2b(salt().encode(), digest_size=20)
    if user and _USER_PACKS:
        h.update(user_salt().encode() + b"\x01")
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


# --- the secret that keys the digests -----------------------------------------------------

def key_file() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else Path.home() / ".config") / "scriptdiff" / "cache.key"


def secret() -> bytes:
    """The key of the entries' digests: `$SCRIPTDIFF_CACHE_SECRET` (for a cache shared on
    purpose, e.g. between CI jobs), else this user's key file, created on first use with
    32 random bytes. A key file that is not a regular file owned by this user and closed to
    others is not used; without a usable key the digest is unkeyed (it then detects damaged,
    hand-made and copied entries, but not one forged by someone running scriptdiff)."""
    env = os.environ.get("SCRIPTDIFF_CACHE_SECRET")
    if env:
        return blake2b(env.encode("utf-8", "surrogatepass"), digest_size=32).digest()
    return _user_secret(str(key_file()))


@lru_cache(maxsize=4)
def _user_secret(path: str) -> bytes:
    for _ in range(2):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            _create_key_file(path)
            continue
        except OSError:
            return b""
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077 or st.st_size > budget.CACHE_KEY_FILE_BYTES or \
                (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return b""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as fh:
                text = fh.read(budget.CACHE_KEY_FILE_BYTES + 1).strip()
            return bytes.fromhex(text.decode("ascii")) if len(text) == 64 else b""
        except (OSError, ValueError):
            return b""
    return b""


def _create_key_file(path: str) -> None:
    """Write a new random key atomically (a link of a finished file: a concurrent creator
    either wins or finds the whole key)."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return
    import secrets  # only a first run needs it (a replay skips the import)

    write_then(folder, ".cache.key.", (secrets.token_hex(32) + "\n").encode(), lambda tmp: os.link(tmp, path))


def write_then(folder, prefix: str, data: bytes, publish) -> None:
    """Write `data` to a fresh temporary file in `folder` (mode 0600), hand its path to
    `publish` (os.replace or os.link to the final name), and never leave the temporary
    behind. Any OSError means the write did not happen: a cache never fails a run."""
    import tempfile  # only a write needs it (a replay skips the import)

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        publish(tmp)
    except OSError:
        pass
    finally:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def digest(k: str, payload: bytes) -> str:
    h = blake2b(key=secret(), digest_size=32)
    h.update(k.encode("ascii", "replace"))
    h.update(b"\x00")
    h.update(payload)
    return h.hexdigest()


# --- entries --------------------------------------------------------------------------------

def _entry_path(k: str) -> Path:
    """Entries sit side by side in the cache folder. Folders per key prefix (git's objects/ab/)
    cost a directory creation for most entries of a first run, which on ext4 here took
    longer than writing the entries themselves; today's file systems index large folders."""
    return cache_dir() / f"{k}.json"


def _read_regular(p: Path, limit: int) -> bytes | None:
    """The bytes of `p` if it is a regular file of at most `limit` bytes; never opens a
    link, FIFO or device (lstat first, then a non-blocking open without following links
    and a second check that it is the same regular file)."""
    try:
        st = os.lstat(p)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st2 = os.fstat(fd)
        if not stat.S_ISREG(st2.st_mode) or (st2.st_ino, st2.st_dev) != (st.st_ino, st.st_dev):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def get(k: str, loads=None) -> object | None:
    """The payload stored under key `k`, or None (a miss) unless the entry passes every check.
    `loads` parses the payload (default: the depth-checked jsonload.loads; runmemo passes
    json.loads for its flat entry, whose nesting a RecursionError bounds)."""
    raw = _read_regular(_entry_path(k), budget.CACHE_ENTRY_BYTES)
    if raw is None:
        return None
    head, sep, payload = raw.partition(b"\n")
    if not sep or len(head) > budget.CACHE_HEADER_BYTES:
        return None
    try:
        header = json.loads(head)
    except (ValueError, RecursionError):
        return None
    if not isinstance(header, dict) or header.get("scriptdiff_cache") != FORMAT or header.get("key") != k \
            or not isinstance(header.get("digest"), str):
        return None
    if not compare_digest(header["digest"], digest(k, payload)):
        return None
    if loads is None:
        from .jsonload import loads  # lazy: keeps --help fast, and a replay (json.loads) skips the source reader

    try:
        return loads(payload)
    except (ValueError, RecursionError):
        return None


def put(k: str, value: object) -> None:
    """Store `value` under key `k` (never fails a run); inside `deferred()`, by its writer thread."""
    if _WRITER is not None:
        _WRITER.put((k, value))
        return
    _put_now(k, value)


class _Writer:
    """A thread that writes entries while the run goes on (see deferred)."""

    def __init__(self):
        import queue  # only a command that defers its writes needs these (a replay skips them)
        import threading

        self.q = queue.SimpleQueue()
        self.pending = 0
        self.idle = threading.Condition()
        self.t = threading.Thread(target=self._run, name="scriptdiff-cache-writer", daemon=True)
        self.t.start()

    def put(self, item) -> None:
        with self.idle:
            self.pending += 1
        self.q.put(item)

    def _run(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            try:
                _put_now(*item)
            finally:
                with self.idle:
                    self.pending -= 1
                    if not self.pending:
                        self.idle.notify_all()

    def quiesce(self) -> None:
        with self.idle:
            self.idle.wait_for(lambda: not self.pending)

    def close(self) -> None:
        self.q.put(None)
        self.t.join()


_WRITER: _Writer | None = None


class deferred:
    """`with store.deferred():` cache entries put inside are written by a thread of this process
    while the command goes on (creating files waits on the file system, mostly in the kernel,
    while the other core is idle: the command's last steps are serial), and all of them are
    written when the block ends. The command line wraps each command in it; a library call
    writes as it goes."""

    def __enter__(self):
        global _WRITER
        self.mine = _WRITER is None
        if self.mine:
            try:
                _WRITER = _Writer()
            except RuntimeError:  # no thread to be had: written as they come
                self.mine = False
        return self

    def __exit__(self, *exc):
        global _WRITER
        if self.mine and _WRITER is not None:
            w, _WRITER = _WRITER, None
            try:
                while _AFTER:  # other writers of this run (zygote.py's reader process); an
                    _AFTER.pop(0)(exc[0] is not None)  # interrupted run does not wait for them
            finally:
                w.close()
        return False


_AFTER: list = []


def quiesce() -> None:
    """Wait until the writer thread, if any, is idle. Called before a fork: a thread caught in
    the middle of a write could leave a lock held (tempfile's, the first time) in the child."""
    if _WRITER is not None:
        _WRITER.quiesce()


def after(wait) -> None:
    """`wait(hurry)` once the deferred writes are due (at the end of `deferred()`), or now when
    writes are not deferred: how another process writing this run's entries is waited for
    (`hurry`: the run was interrupted, or failed; stop it rather than wait)."""
    if _WRITER is None:
        wait(False)
    else:
        _AFTER.append(wait)


def _forget_writer() -> None:  # a forked child has no copy of the thread: it writes as it goes
    global _WRITER
    _WRITER = None
    _AFTER.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_writer)


def _put_now(k: str, value: object) -> None:
    d = cache_dir()
    try:
        payload = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
        if len(payload) > budget.CACHE_ENTRY_BYTES - budget.CACHE_HEADER_BYTES:
            return
        header = json.dumps({"scriptdiff_cache": FORMAT, "key": k, "digest": digest(k, payload)},
                            separators=(",", ":")).encode()
        try:
            mode = os.lstat(d).st_mode
        except FileNotFoundError:
            d.mkdir(parents=True, exist_ok=True)
            mode = os.lstat(d).st_mode
        if not stat.S_ISDIR(mode):  # a link or a file where the folder should be
            return
    except (OSError, TypeError, ValueError, RecursionError):
        return
    write_then(d, ".tmp.", header + b"\n" + payload, lambda tmp: os.replace(tmp, d / f"{k}.json"))

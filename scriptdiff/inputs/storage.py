"""Where a dataset's or a checkpoint's bytes live: a local path, or an object in a store.

The dataset and weights readers never open a file themselves: they ask the `Store` that
holds the path (`store_for(path)`) to tell what it is (`kind`), to list a folder (`walk`,
`files_in`), to give its size and a byte range of it (`size`, `read`, `spans`), and to read
a small file whole (`read_text`, `head`). Two stores answer:

- `LocalStore`, the disk. Only regular files inside the dataset root are read (sources.py
  refuses FIFOs, devices and kernel pseudo-files; links leading out of the root are
  refused, folders reached twice listed once). The readers keep their memory-mapped fast
  paths for it (`Store.local`).
- `ObjectStore`, an S3-compatible store (`s3://bucket/prefix`: S3, OBS, MinIO), through
  fsspec/s3fs (`pip install 'scriptdiff[cloud]'`; without it, one line says so). The
  endpoint and the credentials are botocore's own: `AWS_ENDPOINT_URL` (or
  `AWS_ENDPOINT_URL_S3`), `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` /
  `AWS_SESSION_TOKEN`, `AWS_PROFILE` and the `~/.aws/config` and `~/.aws/credentials`
  files. Nothing is downloaded whole: a listing is read page by page
  (`budget.STORAGE_PAGE` keys a request), and bytes by ranged GET requests of at most
  `budget.STORAGE_CHUNK` bytes, a few in flight (`budget.STORAGE_AHEAD`), so memory follows
  the chunk size, never the object.

A prefix is a folder: `s3://bucket/data` lists every object under `data/`, keyed by the
path below it, exactly as a local copy of it is keyed by the path below its folder, so the
two fingerprints are equal. An object whose key ends in `/` (a folder marker) is not a file.

Credentials never leave botocore: they are not in a URL scriptdiff accepts (a URL with
`user@` is refused without echoing it), and every message about the store passes through
`scrub`, which blanks the values of the credential variables and of the session's resolved
keys. A store's refusal names the bucket and the reason in one line
(`s3://b/x: access to bucket b denied: SignatureDoesNotMatch (the secret key does not match
the access key); ...`), never a traceback.
"""
from __future__ import annotations

import io
import os
import sys
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .. import budget
from .sources import (SourceError, check_regular, open_regular, pseudo_reason, read_bytes, seconds, special_reason)

SCHEMES = ("s3://",)
CLOUD_HINT = "reading object storage (s3://) needs the cloud extra: pip install 'scriptdiff[cloud]'"
SECRET_VARIABLES = ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")
CREDENTIALS_HELP = ("check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE or "
                    "~/.aws/credentials) and the endpoint (AWS_ENDPOINT_URL)")


class StorageError(SourceError):
    """A path that cannot be read from its store: one line, naming the path and the reason."""


class ChangedError(StorageError):
    """A file or object that changed while it was read: no fingerprint of it is one version's,
    so it fails the run (a manifest without it must not pass for a whole one)."""


class AccessError(StorageError):
    """The store refused the credentials, has none, or cannot be reached: nothing more of it
    can be read either (a file-level error would hide that the whole side is unread)."""


def is_url(path) -> bool:
    """An object-store URL (`s3://...`), not a local path."""
    return isinstance(path, str) and path[:5].lower() in SCHEMES


def check_urls(paths) -> None:
    """StorageError for a URL scriptdiff does not take (credentials in it), before it is
    shown anywhere: a report names its inputs."""
    for p in paths:
        if is_url(p):
            split_url(p)


@dataclass
class Walked:
    files: list[tuple[str, str]] = field(default_factory=list)  # (relative path, path or URL)
    sizes: dict[str, int] = field(default_factory=dict)  # relative path -> size, when the listing gave it
    kinds: dict[str, str | None] = field(default_factory=dict)  # each root given -> "file", "dir" or None
    errors: list = field(default_factory=list)  # model.InputError-like: built by the caller's factory


# ---------------------------------------------------------------- the store of a path

class Store:
    local = True

    def kind(self, path: str) -> str | None:  # "file", "dir", or None when nothing is there
        raise NotImplementedError

    def size(self, path: str) -> int:
        raise NotImplementedError

    def read(self, path: str, offset: int, length: int) -> bytes:
        raise NotImplementedError

    def spans(self, path: str, spans: list[tuple[int, int]], chunk: int | None = None) -> Iterator[bytes]:
        """The bytes of each (offset, length), in order, in pieces of at most `chunk` bytes
        (budget.STORAGE_CHUNK by default)."""
        chunk = chunk or budget.STORAGE_CHUNK
        for off, length in spans:
            for a in range(off, off + length, chunk):
                n = min(chunk, off + length - a)
                data = self.read(path, a, n)
                if len(data) != n:
                    raise ChangedError(f"{path}: changed while being read (short read at byte {a + len(data)})")
                yield data

    def files_in(self, folder: str) -> list[str]:
        """Names directly in a folder, sorted."""
        raise NotImplementedError

    def join(self, folder: str, name: str) -> str:
        raise NotImplementedError

    def name(self, path: str) -> str:
        raise NotImplementedError

    def parent(self, path: str) -> str:
        raise NotImplementedError

    def read_bytes(self, path: str, limit: int) -> bytes:
        raise NotImplementedError

    def head(self, path: str, n: int) -> bytes:
        """The first n bytes of a file, or b"" when it cannot be read."""
        try:
            size = self.size(path)
            return self.read(path, 0, min(n, size)) if size else b""
        except (SourceError, OSError):
            return b""

    def read_text(self, path: str, limit: int = budget.MAX_READ) -> str:
        data = self.read_bytes(path, limit)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise StorageError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None

    def open(self, path: str):
        """A seekable binary file object (for readers of formats that seek: Parquet footers)."""
        raise NotImplementedError


class LocalStore(Store):
    local = True

    def kind(self, path: str) -> str | None:
        p = Path(path)
        if p.is_dir():
            return "dir"
        try:
            os.lstat(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            pass  # said by check_regular
        check_regular(p, path)  # a FIFO, a device, a broken link: SourceError, never opened
        return "file"

    def size(self, path: str) -> int:
        return os.path.getsize(path)

    def read(self, path: str, offset: int, length: int) -> bytes:
        with open_regular(path) as fh:
            fh.seek(offset)
            return fh.read(length)

    def files_in(self, folder: str) -> list[str]:
        try:
            return sorted(os.listdir(folder))
        except OSError:
            return []

    def join(self, folder: str, name: str) -> str:
        return os.path.join(folder, name)

    def name(self, path: str) -> str:
        return Path(path).name

    def parent(self, path: str) -> str:
        return str(Path(path).parent)

    def inside(self, folder: str, path: str) -> bool:
        base = str(Path(folder).resolve())
        return str(Path(path).resolve()).startswith(base + os.sep)

    def read_bytes(self, path: str, limit: int) -> bytes:
        return read_bytes(path, path, limit)

    def open(self, path: str):
        return open_regular(path)

    def walk(self, root: str, prefix: str, out: Walked, error, skip: set[str], seen: set[str]) -> None:
        """Every regular file under a local folder into `out` (see walk())."""
        visited: set[str] = set()
        top = os.path.realpath(root)
        # symbolic links to folders are followed (datasets are often assembled from links),
        # as long as they stay inside the root; a folder reached twice (a link loop) is
        # listed once and reported
        for dirpath, dirnames, filenames in os.walk(root, followlinks=True, onerror=lambda e: out.errors.append(
                error(getattr(e, "filename", root) or root, f"cannot list: {e.strerror or e}"))):
            if os.path.relpath(dirpath, root).count(os.sep) >= budget.TREE_DEPTH:  # os.walk recurses
                out.errors.append(error(dirpath, f"folder nested more than {budget.TREE_DEPTH} levels deep; "
                                                 f"its files were not read", True))
                dirnames[:] = []
                continue
            real = os.path.realpath(dirpath)
            if not _inside(real, top):
                out.errors.append(error(dirpath, f"symbolic link leads outside the dataset root (to {real}); "
                                                 f"not read"))
                dirnames[:] = []
                continue
            if real in visited:
                out.errors.append(error(dirpath, "folder reached twice through symbolic links; listed once"))
                dirnames[:] = []
                continue
            visited.add(real)
            dirnames.sort()
            for fn in sorted(filenames):
                full = os.path.join(dirpath, fn)
                real_file = os.path.realpath(full)
                if real_file in skip:
                    continue
                if not _inside(real_file, top):
                    out.errors.append(error(full, f"symbolic link leads outside the dataset root (to "
                                                  f"{real_file}); not read"))
                    continue
                why = _not_regular(full)
                if why:
                    out.errors.append(error(full, f"{why}; skipped"))
                    continue
                rel = prefix + os.path.relpath(full, root).replace(os.sep, "/")
                if rel in seen:
                    continue
                seen.add(rel)
                out.files.append((rel, full))


def _inside(real: str, top: str) -> bool:
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _not_regular(path: str) -> str | None:
    """Why a listed name is not read as a data file (None: a regular file); never opens it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "broken symbolic link" if os.path.islink(path) else "vanished while listing"
    except OSError as e:
        return f"cannot read: {e.strerror or e}"
    return special_reason(st.st_mode) or pseudo_reason(path, st)


# ---------------------------------------------------------------- object storage

def split_url(url: str) -> tuple[str, str]:
    """(bucket, key) of `s3://bucket/key`; StorageError for a URL scriptdiff does not take."""
    rest = url[5:]
    bucket, _, key = rest.partition("/")
    if "@" in bucket:  # s3://KEY:SECRET@bucket: never read, never echoed
        raise StorageError(f"s3://***@{bucket.rsplit('@', 1)[1]}/...: credentials in the URL are not read (they "
                           f"would end up in reports); give them through AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY "
                           f"or a profile")
    if not bucket:
        raise StorageError(f"{url}: no bucket named (expected s3://BUCKET/PREFIX)")
    return bucket, key


class ObjectStore(Store):
    """An S3-compatible store, through s3fs (the session reads the standard AWS settings)."""

    local = False

    def __init__(self):
        memo = sys.modules.get("scriptdiff.commands.runmemo")
        if memo is not None:  # what a bucket holds has no identity a stat can check: never replayed
            memo.spoil("an object store")
        try:
            import s3fs
        except ImportError:
            raise StorageError(CLOUD_HINT) from None
        # no instance cache and no listing cache: a fingerprint sees the store as it is now;
        # botocore's own timeouts end a connection that hangs (each call's deadline: _run)
        t = timeout()
        self.fs = s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False,
                                    config_kwargs={"connect_timeout": t, "read_timeout": t})
        self._pool = ThreadPoolExecutor(max_workers=max(4, budget.STORAGE_AHEAD * 4), thread_name_prefix="scriptdiff-range")
        self._sizes: dict[str, int] = {}
        self._etags: dict[str, str] = {}  # the version of each object read (listed, or its first read's)
        self._silent: str | None = None  # why the store is no longer asked: it did not answer in time
        self._lock = threading.Lock()

    # --- calls, with every failure turned into one line
    def _run(self, url: str, fn, *args, **kwargs):
        """`fn(*args, **kwargs)` (a coroutine of the store's session) run to its end within the
        deadline (timeout(): every retry included), as git's commands are. A store that let
        one call pass its deadline is not asked again in this run: each later call fails at
        once with the same reason (a stalled endpoint costs one deadline, not one per object)."""
        from fsspec.asyn import sync
        from fsspec.exceptions import FSTimeoutError

        if self._silent:
            raise AccessError(f"{url}: {self._silent}")
        t = timeout()
        try:
            return sync(self.fs.loop, fn, *args, timeout=t, **kwargs)
        except (FSTimeoutError, TimeoutError):
            with self._lock:
                self._silent = self._silent or (f"the object store ({endpoint() or 'default endpoint'}) did not answer "
                                                f"within {t:g} s; not read (SCRIPTDIFF_STORAGE_TIMEOUT=SECONDS to wait "
                                                f"longer)")
            raise AccessError(scrub(f"{url}: {self._silent}", self)) from None
        except StorageError:
            raise
        except Exception as e:  # botocore, aiohttp and s3fs raise many types: all become one line
            raise self.error(url, e) from None

    def _call(self, url: str, method: str, **kwargs):
        return self._run(url, self.fs._call_s3, method, **kwargs)

    def error(self, url: str, e: BaseException) -> StorageError:
        text = scrub(describe(url, e), self)
        refused = any(w in text for w in (": access to bucket ", ": no credentials for bucket ",
                                          ": cannot reach the object store"))
        return (AccessError if refused else ChangedError if text.endswith(CHANGED) else StorageError)(text)

    def forget(self) -> None:
        """What this store remembers of earlier runs: sizes, versions, its silence (begin())."""
        with self._lock:
            self._sizes.clear()
            self._etags.clear()
            self._silent = None

    def _pin(self, path: str, etag) -> None:
        """Remember the version (ETag) of `path` a listing or a HEAD request gave: every read of
        it asks for that version (If-Match), so an object replaced while it is fingerprinted is
        refused, never hashed half old, half new."""
        if isinstance(etag, str) and etag:
            with self._lock:
                self._etags[path] = etag

    def _object(self, url: str) -> dict | None:
        bucket, key = split_url(url)
        if not key:
            return None
        try:
            return self._call(url, "head_object", Bucket=bucket, Key=key)
        except StorageError as e:
            if "no such object" in str(e):
                return None
            raise

    def pages(self, url: str, prefix: str) -> Iterator[list[dict]]:
        """The objects under a key prefix, one listing page (at most budget.STORAGE_PAGE keys) at a time."""
        bucket, _ = split_url(url)
        kw = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": budget.STORAGE_PAGE}
        while True:
            out = self._call(url, "list_objects_v2", **kw)
            yield out.get("Contents", [])
            if not out.get("IsTruncated"):
                return
            kw["ContinuationToken"] = out["NextContinuationToken"]

    def kind(self, path: str) -> str | None:
        bucket, key = split_url(path)
        folder = key.rstrip("/")
        prefix = folder + "/" if folder else ""
        # the listing first: it answers for a folder in one request, and a refusal comes with its reason
        out = self._call(path, "list_objects_v2", Bucket=bucket, Prefix=prefix, MaxKeys=1)
        if out.get("KeyCount") or out.get("Contents"):
            return "dir"
        if folder and not key.endswith("/"):
            head = self._object(path)
            if head is not None:
                with self._lock:
                    self._sizes[path] = int(head.get("ContentLength", 0))
                self._pin(path, head.get("ETag"))
                return "file"
        return None

    def size(self, path: str) -> int:
        with self._lock:
            if path in self._sizes:
                return self._sizes[path]
        head = self._object(path)
        if head is None:
            raise StorageError(f"{path}: no such object")
        n = int(head.get("ContentLength", 0))
        with self._lock:
            self._sizes[path] = n
        self._pin(path, head.get("ETag"))
        return n

    def read(self, path: str, offset: int, length: int) -> bytes:
        """Bytes offset.. of the version of `path` first seen (its listed ETag, or the one its
        first read returned): a read of another version is refused (StorageError), so the
        pieces of one fingerprint all come from one version of the object."""
        if length <= 0:
            return b""
        bucket, key = split_url(path)
        with self._lock:
            pinned = self._etags.get(path)
        etag, data = self._run(path, self._get, bucket, key, f"bytes={offset}-{offset + length - 1}", pinned)
        if isinstance(etag, str) and etag:
            with self._lock:
                pinned = self._etags.setdefault(path, etag)
            if etag != pinned:  # a store that ignores If-Match: the version it sent says it
                raise ChangedError(f"{path}: {CHANGED}")
        return data

    async def _get(self, bucket: str, key: str, rng: str, etag: str | None):
        """One ranged GET of the version `etag` (when known), read whole: (its ETag, its bytes)."""
        kw = {"Bucket": bucket, "Key": key, "Range": rng}
        if etag:
            kw["IfMatch"] = etag
        resp = await self.fs._call_s3("get_object", **kw)
        body = resp["Body"]
        try:
            return resp.get("ETag"), await body.read()
        finally:
            body.close()

    def spans(self, path: str, spans: list[tuple[int, int]], chunk: int | None = None) -> Iterator[bytes]:
        """Ranged reads in order, budget.STORAGE_AHEAD of them in flight: at most that + 1 chunks in memory."""
        chunk = chunk or budget.STORAGE_CHUNK
        pieces = [(a, min(chunk, off + length - a)) for off, length in spans for a in range(off, off + length, chunk)]
        pending: deque = deque()
        it = iter(pieces)
        try:
            for a, n in it:
                pending.append((a, n, self._pool.submit(self.read, path, a, n)))
                if len(pending) > budget.STORAGE_AHEAD:
                    break
            while pending:
                a, n, fut = pending.popleft()
                data = fut.result()
                nxt = next(it, None)
                if nxt is not None:
                    pending.append((nxt[0], nxt[1], self._pool.submit(self.read, path, *nxt)))
                if len(data) != n:
                    raise ChangedError(f"{path}: changed while being read (short read at byte {a + len(data)})")
                yield data
        finally:
            for _, _, fut in pending:
                fut.cancel()

    def files_in(self, folder: str) -> list[str]:
        bucket, key = split_url(folder)
        prefix = key.rstrip("/") + "/" if key.rstrip("/") else ""
        names = []
        for page in self.pages(folder, prefix):
            for o in page:
                rest = o["Key"][len(prefix):]
                if rest and "/" not in rest and rest not in (".", ".."):
                    names.append(rest)
                    with self._lock:
                        self._sizes[self.join(folder, rest)] = int(o.get("Size", 0))
                    self._pin(self.join(folder, rest), o.get("ETag"))
        return sorted(names)

    def join(self, folder: str, name: str) -> str:
        return folder.rstrip("/") + "/" + name

    def name(self, path: str) -> str:
        return path.rstrip("/").rsplit("/", 1)[-1]

    def parent(self, path: str) -> str:
        return path.rstrip("/").rsplit("/", 1)[0]

    def inside(self, folder: str, name: str) -> bool:
        parts = name.split("/")
        return not (name.startswith("/") or ".." in parts or "" in parts)

    def read_bytes(self, path: str, limit: int) -> bytes:
        size = self.size(path)
        if size > limit:
            raise StorageError(f"{path}: larger than {limit:,} bytes; not read")
        return b"".join(self.spans(path, [(0, size)])) if size else b""

    def open(self, path: str):
        """A seekable file of the object, read by range through `read` (its deadline, its
        version pinned), budget.STORAGE_BLOCK bytes at a time."""
        import io

        return io.BufferedReader(_Ranged(self, path, self.size(path)), buffer_size=budget.STORAGE_BLOCK)

    def walk(self, root: str, prefix: str, out: Walked, error, skip: set[str], seen: set[str]) -> None:
        _, key = split_url(root)
        base = key.rstrip("/") + "/" if key.rstrip("/") else ""
        for page in self.pages(root, base):
            for o in page:
                k = o["Key"]
                if k.endswith("/"):  # a folder marker, not a file
                    continue
                url = self.join(root, k[len(base):])
                if url in skip:
                    continue
                below = k[len(base):]
                if not plain_key(below):  # corpus/../../x.jsonl is no file below the prefix
                    out.errors.append(error(url, f"the key's path below the prefix ({below}) is not a plain relative "
                                                 f"path (an empty, . or .. part, or a leading /); not read"))
                    continue
                self._pin(url, o.get("ETag"))
                rel = prefix + below
                if rel in seen:
                    continue
                seen.add(rel)
                out.files.append((rel, url))
                out.sizes[rel] = int(o.get("Size", 0))
                with self._lock:
                    self._sizes[url] = out.sizes[rel]


class _Ranged(io.RawIOBase):
    """An object as a raw seekable file: each read is a ranged read of the store's (`read`)."""

    def __init__(self, store: ObjectStore, path: str, size: int):
        self.store, self.path, self.size, self.pos = store, path, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = max(0, offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset)
        return self.pos

    def readinto(self, b) -> int:
        n = min(len(b), budget.STORAGE_CHUNK, self.size - self.pos)
        if n <= 0:
            return 0
        data = self.store.read(self.path, self.pos, n)
        b[:len(data)] = data
        self.pos += len(data)
        return len(data)


CHANGED = "changed while being read (the store now holds another version of it than the one listed); not read"


def plain_key(rel: str) -> bool:
    """A key's path below its prefix is a plain relative path: no empty, `.` or `..` part and
    no leading `/` (S3 keys are any text: `corpus/../../x.jsonl` would become a manifest's
    `../../x.jsonl`)."""
    return bool(rel) and all(part not in ("", ".", "..") for part in rel.split("/"))


def timeout() -> float:
    """Seconds one object-store call may take: budget.STORAGE_TIMEOUT, or $SCRIPTDIFF_STORAGE_TIMEOUT."""
    return seconds("SCRIPTDIFF_STORAGE_TIMEOUT", budget.STORAGE_TIMEOUT)


def describe(url: str, e: BaseException) -> str:
    """A store's failure as one line naming the path (and the bucket) and the reason."""
    bucket = url[5:].split("/", 1)[0] if is_url(url) else ""
    code, text = _code(e)
    if code in ("PreconditionFailed", "412"):  # If-Match: the version read first is gone
        return f"{url}: {CHANGED}"
    if code in ("SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied", "InvalidToken", "ExpiredToken",
                "403", "AllAccessDisabled"):
        why = {"SignatureDoesNotMatch": "the secret key does not match the access key",
               "InvalidAccessKeyId": "the store does not know the access key",
               "AccessDenied": "the credentials are not allowed to read it",
               "ExpiredToken": "the session token has expired",
               "InvalidToken": "the session token is not valid"}.get(code, "the store refused the credentials or the request")
        if code == "403":
            code = "403 Forbidden"
        return f"{url}: access to bucket {bucket} denied: {code} ({why}); {CREDENTIALS_HELP}"
    if code == "NoSuchBucket":
        return f"{url}: no such bucket {bucket}"
    if code in ("NoSuchKey", "404") or isinstance(e, FileNotFoundError):
        return f"{url}: no such object"
    name = type(e).__name__
    if name in ("NoCredentialsError", "PartialCredentialsError"):
        return f"{url}: no credentials for bucket {bucket}: {CREDENTIALS_HELP}"
    if name in ("EndpointConnectionError", "ClientConnectorError", "ConnectTimeoutError", "ConnectionError",
                "ServerDisconnectedError", "ReadTimeoutError") or isinstance(e, ConnectionError):
        return f"{url}: cannot reach the object store for bucket {bucket} ({endpoint() or 'default endpoint'})"
    if name == "ProfileNotFound":
        return f"{url}: {text}"
    first = text.splitlines()[0] if text else name
    return f"{url}: object store error for bucket {bucket}: {code + ': ' if code else ''}{first}"


def _code(e: BaseException) -> tuple[str, str]:
    """The S3 error code behind an exception (s3fs keeps botocore's as the cause), and its text."""
    for x in (e, e.__cause__, e.__context__):
        resp = getattr(x, "response", None)
        if isinstance(resp, dict):
            err = resp.get("Error") or {}
            c = str(err.get("Code") or "")
            if c:
                return c, str(err.get("Message") or "")
    return "", str(e)


def endpoint() -> str:
    """The endpoint in use, as scheme://host:port (any user:password part left out)."""
    from urllib.parse import urlsplit

    raw = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
    if not raw:
        return ""
    try:
        u = urlsplit(raw)
        return f"{u.scheme}://{u.hostname}" + (f":{u.port}" if u.port else "")
    except ValueError:
        return "the configured endpoint"


def scrub(text: str, store: "ObjectStore | None" = None) -> str:
    """`text` with every credential value blanked: the variables', and the session's keys."""
    values = [os.environ.get(v) for v in SECRET_VARIABLES]
    if store is not None:
        values += session_keys(store)
    for v in sorted({v for v in values if v and len(v) >= 4}, key=len, reverse=True):
        text = text.replace(v, "***")
    return text


def session_keys(store: "ObjectStore") -> list[str]:
    """The keys the store's client signs with (from a profile or a file, not only the
    variables), read from the client's signer without any request."""
    out = []
    try:
        creds = store.fs.s3._request_signer._credentials
    except Exception:  # no client yet, or another botocore: nothing resolved, nothing to blank
        return out
    for name in ("access_key", "secret_key", "token", "_access_key", "_secret_key", "_token"):
        v = vars(creds).get(name) if hasattr(creds, "__dict__") else None
        if isinstance(v, str):
            out.append(v)
    return out


# ---------------------------------------------------------------- one store per kind, per process

_LOCAL = LocalStore()
_REMOTE: ObjectStore | None = None
_REMOTE_LOCK = threading.Lock()


def store_for(path: str) -> Store:
    """The store holding `path`; StorageError (one line) when it cannot be reached at all."""
    global _REMOTE
    if not is_url(path):
        return _LOCAL
    split_url(path)
    with _REMOTE_LOCK:
        if _REMOTE is None:
            try:
                _REMOTE = ObjectStore()
            except StorageError as e:
                raise StorageError(f"{path}: {e}") from None
        return _REMOTE


def begin() -> None:
    """A new run (of a data or weights command): the store in use, if any, is seen as it is
    now. The sizes and versions it remembers are forgotten, and a store that did not answer
    in an earlier run of this process is asked again."""
    with _REMOTE_LOCK:
        remote = _REMOTE
    if remote is not None:
        remote.forget()


def reset() -> None:
    """Forget the object store session (new credentials or endpoint are read on next use)."""
    global _REMOTE
    with _REMOTE_LOCK:
        _REMOTE = None


def walk(paths: list[str], error, exclude: set[str] | None = None) -> Walked:
    """Every regular file under `paths`, keyed by a relative path, sorted.

    One folder or prefix: paths relative to it. One file or object: its name. Several paths:
    each prefixed with its own base name, so `a/x.bin` and `b/x.bin` stay apart. `error(path,
    message, fatal=False)` makes the caller's error records.
    """
    out = Walked()
    single = len(paths) == 1
    seen: set[str] = set()
    skip = {x if is_url(x) else os.path.realpath(x) for x in (exclude or ())}
    for p in paths:
        try:
            store = store_for(p)
            kind = store.kind(p)
        except SourceError as e:
            out.errors.append(error(p, str(e).split(": ", 1)[-1], True))
            continue
        out.kinds[p] = kind
        name = store.name(p) or str(p)
        prefix = "" if single else name + "/"
        if kind == "dir":
            try:
                store.walk(p, prefix, out, error, skip, seen)
            except SourceError as e:
                out.errors.append(error(p, str(e).split(": ", 1)[-1], True))
            continue
        if kind is None:
            out.errors.append(error(p, "no such object" if is_url(p) else "no such file or directory", True))
            continue
        rel = name if single else prefix.rstrip("/")
        out.files.append((rel, str(p)))
        if not store.local:
            out.sizes[rel] = store.size(p)
    out.files.sort()
    return out

"""Real components started on this machine for the object-storage and Ray tests (and the
benchmark): a local S3 server (moto's server mode on 127.0.0.1, a free port) and a local Ray
cluster. Each is a context manager that stops what it started when its block ends, also when
the block raises, and an exit handler stops it when the process ends first.

The S3 server starts open; `S3Server.lock()` then makes it check every request's signature
against an IAM user it created, so a wrong secret key is refused as a real store refuses it.
"""
from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager

REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """moto's S3 server in a child process (its own process group), on 127.0.0.1."""

    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.key_id = "bootstrap-key"  # accepted while the server is open
        self.secret = "bootstrap-secret"

    def start(self, timeout: float = 60.0) -> "S3Server":
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                     env=env, start_new_session=True)
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the local S3 server exited with status {self.proc.returncode}")
            try:
                urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1).read()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the local S3 server did not answer within {timeout:.0f} s")
                time.sleep(0.1)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def env(self, key_id: str | None = None, secret: str | None = None) -> dict:
        """The AWS variables that point a client at this server (no profile, no config file)."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": key_id or self.key_id,
                "AWS_SECRET_ACCESS_KEY": secret or self.secret, "AWS_DEFAULT_REGION": REGION,
                "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                "AWS_EC2_METADATA_DISABLED": "true"}

    def client(self, service: str = "s3"):
        import boto3

        return boto3.client(service, endpoint_url=self.url, region_name=REGION, aws_access_key_id=self.key_id,
                            aws_secret_access_key=self.secret)

    def upload(self, bucket: str, folder: str, prefix: str) -> None:
        """Every file under `folder` as an object under `prefix/` (made through boto3)."""
        s3 = self.client()
        for dirpath, _, files in os.walk(folder):
            for fn in files:
                full = os.path.join(dirpath, fn)
                rel = os.path.relpath(full, folder).replace(os.sep, "/")
                s3.upload_file(full, bucket, f"{prefix}/{rel}")

    def lock(self) -> tuple[str, str]:
        """Make an IAM user allowed everything, then require signed requests from now on;
        returns its (access key id, secret key), which the tests use from then on."""
        iam = self.client("iam")
        iam.create_user(UserName="tester")
        key = iam.create_access_key(UserName="tester")["AccessKey"]
        iam.put_user_policy(UserName="tester", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        req = urllib.request.Request(f"{self.url}/moto-api/reset-auth", data=b"0", method="POST",
                                     headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(req, timeout=10).read()
        self.key_id, self.secret = key["AccessKeyId"], key["SecretAccessKey"]
        return self.key_id, self.secret


@contextmanager
def s3_server():
    server = S3Server().start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def aws_variables(env: dict, also: tuple = ()):
    """Within the block, this process's AWS_ variables (and those named in `also`) are `env`'s
    only; restored when the block ends."""
    def ours() -> list[str]:
        return [k for k in os.environ if k.startswith("AWS_") or k in also]

    saved = {k: os.environ[k] for k in ours()}
    for k in saved:
        del os.environ[k]
    os.environ.update(env)
    try:
        yield
    finally:
        for k in ours():
            del os.environ[k]
        os.environ.update(saved)


class S3Relay:
    """A relay on 127.0.0.1 (a free port) in front of an S3 server, playing a store gone wrong
    for the object-storage tests and the fuzzer's storage class:

    - `stall = True`: every request is accepted, read, and never answered (an endpoint whose
      connections hang) until the relay stops; `stall = "bucket/key"`: only the requests for
      that object (its reads, once the listing has been answered);
    - `replace(key, body, after=N)`: the N-th GET of the object `key` (bucket/key) first
      replaces it with `body` through the server itself, as another writer would between two
      ranged reads of one fingerprint.

    Every other request goes to the server as it came (its signature too) and its answer back."""

    def __init__(self, upstream: S3Server):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.upstream = upstream
        self.stall: bool | str = False
        self.gets: dict[str, int] = {}  # bucket/key -> GETs seen
        self._replace: dict[str, tuple[bytes, int]] = {}
        self._released = threading.Event()
        self._lock = threading.Lock()
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _forward(self):
                import http.client

                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                key = self.path.split("?", 1)[0].lstrip("/")
                if relay.stall is True or (relay.stall and key == relay.stall):
                    relay._released.wait()
                    self.close_connection = True
                    return
                if self.command == "GET":
                    relay._seen(key)
                conn = http.client.HTTPConnection("127.0.0.1", relay.upstream.port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=dict(self.headers))
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                # a HEAD answer has no body but says the object's length
                self.send_header("Content-Length", resp.getheader("Content-Length", "0") if self.command == "HEAD"
                                 else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        # bound to a port the system picks, here: a port found free first may be taken by
        # another process before the bind (the fuzzer met it with test suites running beside)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="s3-relay", daemon=True)

    def replace(self, key: str, body: bytes, after: int = 1) -> None:
        """Replace bucket/key with `body` when its `after`-th GET from now arrives (before
        answering it)."""
        with self._lock:
            self._replace[key] = (body, self.gets.get(key, 0) + after)

    def _seen(self, key: str) -> None:
        with self._lock:
            self.gets[key] = n = self.gets.get(key, 0) + 1
            todo = self._replace.get(key)
            if todo is None or n != todo[1]:
                return
            del self._replace[key]
        bucket, _, name = key.partition("/")
        self.upstream.client().put_object(Bucket=bucket, Key=name, Body=todo[0])

    def env(self, key_id: str | None = None, secret: str | None = None) -> dict:
        """The AWS variables that point a client at the relay."""
        return {**self.upstream.env(key_id, secret), "AWS_ENDPOINT_URL": self.url}

    def start(self) -> "S3Relay":
        self.thread.start()
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        self._released.set()  # stalled requests end (unanswered) and the server can stop
        if self.thread.is_alive():
            self.server.shutdown()
            self.thread.join(10)
        self.server.server_close()


@contextmanager
def s3_relay(upstream: S3Server):
    relay = S3Relay(upstream).start()
    try:
        yield relay
    finally:
        relay.stop()


@contextmanager
def ray_cluster(cpus: int = 2):
    """A local Ray cluster of `cpus` worker slots, no dashboard, on this machine (Ray binds to
    the machine's own address, never to another host); shut down when the block ends (the
    cluster's processes with it)."""
    import logging

    import ray

    logging.getLogger("ray").setLevel(logging.ERROR)  # its start-up notices
    ctx = ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    atexit.register(ray.shutdown)
    try:
        yield ctx
    finally:
        ray.shutdown()

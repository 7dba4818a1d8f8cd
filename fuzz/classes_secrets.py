"""Fuzz classes of secrets and forged lines (issue 32).

Registered by fuzz_cli.py (one line there); each generator returns a fuzz_cli.Case whose
`secrets` are strings that must appear in no output (standard output and standard error, in
the format drawn at random among text, json, sarif, markdown, github and html). The shapes are
the issue's own:

  secret-shapes  a token planted by value (after `,` `:` `;` `/`, a newline or a tab; an hf_
                 token in a URL path; #access_token= in a fragment; ?private_token= and
                 ?job_token= in a query; user information in a URL; Slack and Telegram
                 webhooks; a JWT; `Bearer` not at the start; --token=x and --hub-token x inside
                 a value; a token after 3,000 characters) or by name (HF_TOKEN and friends in
                 a launch script, hub_token in a one-line JSON config, os.environ["..."] =,
                 .update(...), .setdefault(...), os.putenv(...) in Python, a message that
                 quotes the value), in a launch script, a YAML or JSON config, a Python file, a
                 requirements line (git+https://user:tok@...), a snapshot (conda, env,
                 direct_url source and requested_revision), a review patch and a folder.
                 The case fails when any planted token appears in any output.
  forged-lines   a newline (also CR, U+2028, U+0085, ESC, 0x9b, a bidirectional override) in a
                 file name, a tensor name and a dtype, a TensorBoard tag, a CSV header, a
                 YAML, shell or Python value, a snapshot field and an unreadable file's name
                 (an error line); a file name that is not UTF-8. The case fails when an output
                 line starts (after spaces) with the forged `::error` workflow command, or when
                 any raw control character (or a lone surrogate: a byte that is not UTF-8)
                 reaches an output.
"""
from __future__ import annotations

import json
import struct

import classes_bounds

CLASSES = ("secret-shapes", "forged-lines")

FORMATS = ("text", "json", "sarif", "markdown", "github", "html")
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"


def _rand(rng, n: int, chars: str = ALPHABET) -> str:
    return "".join(rng.choice(chars) for _ in range(n))


def _pair(name: str, g: str | bytes, n: str | bytes) -> dict:
    enc = (lambda x: x.encode("utf-8", "surrogateescape") if isinstance(x, str) else x)
    return {f"gpu/{name}": enc(g), f"npu/{name}": enc(n)}


# ------------------------------------------------------------------ secrets: the shapes

def token_shapes(rng) -> list[tuple[str, str]]:
    """(text that holds the secret, the secret) for every value shape of the issue."""
    ghp = "ghp_" + _rand(rng, 36)
    hf = "hf_" + _rand(rng, 30)
    word = _rand(rng, 14, "abcdefghijkmnopqrstuvwxyz23456789")
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + _rand(rng, 12) + "In0." + _rand(rng, 43)
    return [
        (f"a,{ghp}", ghp), (f"a:{ghp}", ghp), (f"a;{ghp}", ghp), (f"a/{ghp}", ghp),
        (f"a\n{ghp}", ghp), (f"a\t{ghp}", ghp),
        (f"https://huggingface.co/{hf}/resolve/main/x", hf),
        (f"https://app.example.com/cb#access_token={word}&state=1", word),
        (f"https://gitlab.example.com/api/v4/x?private_token={word}", word),
        (f"https://gitlab.example.com/api/v4/x?job_token={word}", word),
        (f"https://oauth2:{word}@gitlab.example.com/org/repo.git", word),
        (f"https://hooks.slack.com/services/T{_rand(rng, 8)}/B{_rand(rng, 8)}/{word}{_rand(rng, 10)}", word),
        (f"https://api.telegram.org/bot{rng.randrange(10**8, 10**9)}:AA{word}{_rand(rng, 20)}/sendMessage", word),
        (jwt, jwt[-43:]),
        (f"x Bearer {word}9", word),
        (f"--token={word} --lr 1", word),
        (f"--hub-token {word} --lr 1", word),
        ("a" * 3000 + f",{ghp}", ghp),
        (" ".join(["a"] * 2500) + f" {ghp}", ghp),
    ]


def _snapshot(value: str, where: str) -> str:
    snap = {"scriptdiff_snapshot": 1, "tool": {"name": "scriptdiff", "version": "0.1.0"}, "root": "/",
            "platform": "gpu", "python": {"version": "3.10.14"}, "os": {"name": "Ubuntu 22.04"}, "arch": "x86_64",
            "conda": {"name": "train", "prefix": "/opt/conda/envs/train"}, "versions": {},
            "distributions": [{"name": "torch", "version": "2.1.0"}],
            "env": {"CUDA_VISIBLE_DEVICES": "0"}, "env_withheld": 0}
    if where == "conda":
        snap["conda"] = {"name": value, "prefix": f"/opt/conda/envs/{value}"}
    elif where == "env":
        snap["env"]["HF_ENDPOINT"] = value
    else:
        snap["distributions"].append({"name": "foo", "version": "1.0", "source": {
            "url": value, "vcs": "git", "commit": "a" * 40, "requested_revision": value}})
    return json.dumps(snap, indent=2)


def _secret_case(rng, Case):
    shapes = token_shapes(rng)
    i = rng.randrange(len(shapes))
    (text, secret), (other, osecret) = shapes[i], token_shapes(rng)[i]  # the NPU side: another token, same shape
    fmt = rng.choice(FORMATS)
    place = rng.choice(["export", "flag", "yaml", "json", "python", "requirements", "snapshot", "folder",
                        "review", "named-sh", "named-json", "named-py"])
    esc = json.dumps(text)  # a quoted string any of YAML, JSON and Python reads back as `text`
    oesc = json.dumps(other)
    secrets = [secret, osecret]
    if place == "export":
        g, n, name = f"export X={_sh(text)}\ntorchrun t.py --lr 1\n", f"export X={_sh(other)}\ntorchrun t.py --lr 2\n", "run.sh"
    elif place == "flag":
        g, n, name = f"torchrun t.py --data {_sh(text)} --lr 1\n", f"torchrun t.py --data {_sh(other)} --lr 2\n", "run.sh"
    elif place == "yaml":
        g, n, name = f"lr: 1\nrun_name: {esc}\n", f"lr: 2\nrun_name: {oesc}\n", "config.yaml"
    elif place == "json":
        g, n, name = f'{{"lr":1,"run_name":{esc}}}\n', f'{{"lr":2,"run_name":{oesc}}}\n', "ds_config.json"
    elif place == "python":
        g = f"import os\nos.environ['X'] = {esc}\nurl = {esc}\nlr = 1e-4\n"
        n, name = f"import os\nos.environ['X'] = {oesc}\nurl = {oesc}\nlr = 2e-4\n", "train.py"
    elif place == "requirements":
        url = text if "://" in text else f"https://x.example.com/{text}"
        ourl = other if "://" in other else f"https://x.example.com/{other}"
        g, n, name = f"torch==2.1.0\nfoo @ git+{url}\n", f"torch==2.1.0\nfoo @ git+{ourl}\n", "requirements.txt"
        if "\n" in url or "\t" in url or " " in url:
            g, n = f"torch==2.1.0\nfoo @ https://x.example.com/f.whl?private_token={secret}\n", \
                f"torch==2.1.0\nfoo @ https://x.example.com/f.whl?private_token={osecret}\n"
        return Case("secret-shapes", _pair(name, g, n), ["env", f"gpu/{name}", f"npu/{name}"], secrets=secrets, fmt=fmt)
    elif place == "snapshot":
        where = rng.choice(["conda", "env", "source"])
        files = {"gpu/snapshot.json": _snapshot(text, where).encode(), "npu/snapshot.json": _snapshot(other, where).encode()}
        return Case("secret-shapes", files, ["env", "gpu/snapshot.json", "npu/snapshot.json"], secrets=secrets, fmt=fmt)
    elif place == "folder":
        files = _pair("run.sh", f"export X={_sh(text)}\ntorchrun t.py --lr 1\n", f"export X={_sh(other)}\ntorchrun t.py --lr 2\n")
        files |= _pair("config.yaml", f"lr: 1\nrun_name: {esc}\n", f"lr: 1\nrun_name: {oesc}\n")
        return Case("secret-shapes", files, ["diff", "gpu", "npu"], secrets=secrets, fmt=fmt)
    elif place == "review":
        old, new = f"lr = 1e-4\nurl = {esc}\n", f"lr = 2e-4\nurl = {oesc}\n"
        patch = ("--- a/train.py\n+++ b/train.py\n@@ -1,2 +1,2 @@\n-lr = 1e-4\n-url = " + esc + "\n+lr = 2e-4\n+url = "
                 + oesc + "\n")
        files = {"train.py": old.encode(), "port.patch": patch.encode()}
        _ = new
        return Case("secret-shapes", files, ["review", "port.patch"], secrets=secrets, fmt=fmt)
    elif place == "named-sh":  # by name: the value need not look like anything
        var = rng.choice(["HF_TOKEN", "WANDB_API_KEY", "HF_CREDS", "DS_ACCESS", "NVIDIA_NGC_API"])
        g, n, name = f"export {var}={word_of(secret)}\ntorchrun t.py --lr 1\n", \
            f"export {var}={word_of(secret)[::-1]}\ntorchrun t.py --lr 2\n", "run.sh"
        secrets = [word_of(secret), word_of(secret)[::-1]]
    elif place == "named-json":
        w = word_of(secret)
        g, n, name = f'{{"lr":1e-4,"hub_token":"{w}","seed":1}}\n', f'{{"lr":2e-4,"hub_token":"{w}","seed":1}}\n', "cfg.json"
        secrets = [w]
    else:  # named-py: os.environ and its friends
        w = word_of(secret)
        form = rng.choice(['os.environ["WANDB_API_KEY"] = "{v}"', 'os.environ.update(HF_TOKEN="{v}", X="1")',
                           'os.environ.update({{"OPENAI_API_KEY": "{v}"}})', 'os.environ.setdefault("HF_CREDS", "{v}")',
                           'os.putenv("DB_PASSWORD", "{v}")', 'os.environ["HF_TOKEN"] = "hf_{v}"'])
        g = "import os\n" + form.format(v=w) + "\nlr = 1e-4\n"
        n = "import os\n" + form.format(v=w[::-1]) + "\nlr = 2e-4\n"
        name, secrets = "train.py", [w, w[::-1]]
    return Case("secret-shapes", _pair(name, g, n), ["diff", f"gpu/{name}", f"npu/{name}"], secrets=secrets, fmt=fmt)


def word_of(secret: str) -> str:
    """A secret of letters and digits only (a value whose name is what makes it secret)."""
    w = "".join(c for c in secret if c.isalnum())[:24]
    return w if len(w) >= 8 else w + "q1w2e3r4"


def _sh(text: str) -> str:
    """`text` as one shell word: double-quoted, its newlines and tabs as they are (a quoted word
    may span lines), `"`, `$`, backquote and backslash escaped."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")
    return f'"{out}"'


# ------------------------------------------------------------------ forged lines

FORGED = "::error file=x.py,line=1::FORGED"
# a line break (or what some reader takes for one) and what must never be sent raw
BREAKS = ["\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c"]
CONTROLS = ["\x1b[2J\x1b[H", "\x9b2J", "\x1b]0;pwned\x07", "\u202e", "\x00", "\x08"]


def forbidden(payload: str) -> list[str]:
    """What no output may hold once `payload` was planted: the forged command at the start of a
    line (after any spaces), and each raw control character of the payload."""
    out = []
    for br in ("\n", "\r"):
        out += [br + " " * k + FORGED[:18] for k in range(0, 17)]
    out += [c for c in payload if (ord(c) < 0x20 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f
            or c in "\u2028\u2029\u202e" or 0xd800 <= ord(c) <= 0xdfff]
    return sorted(set(out))


def _safetensors(tensors: list[tuple[str, str]]) -> bytes:
    header, data = {}, b""
    for name, dtype in tensors:
        header[name] = {"dtype": dtype, "shape": [1], "data_offsets": [len(data), len(data) + 4]}
        data += struct.pack("<f", float(len(data)))
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def _forged_case(rng, Case):
    br = rng.choice(BREAKS)
    payload = rng.choice([br + FORGED, br + FORGED + rng.choice(CONTROLS), rng.choice(CONTROLS) + br + FORGED])
    fmt = rng.choice(FORMATS)
    where = rng.choice(["file-name", "non-utf8-name", "error-line", "tensor", "dtype", "tb-tag", "csv", "yaml",
                        "shell", "python", "snapshot"])
    bad = forbidden(payload)
    q = json.dumps(payload)  # YAML, JSON and Python read this back as the payload
    if where in ("file-name", "non-utf8-name", "error-line"):
        stem = "a" + (payload if where != "non-utf8-name" else "\udc9b2J\udcff" + rng.choice(["", br + FORGED]))
        stem = stem.replace("/", "_").replace("\x00", "_")
        name = stem + ".yaml"
        bad = forbidden(stem)
        g = b"lr: 1\n" if where != "error-line" else b"lr: 1\n  - : [\n"
        files = {f"gpu/{name}": g, "npu/b.yaml": b"lr: 2\n"}
        return Case("forged-lines", files, ["diff", f"gpu/{name}", "npu/b.yaml"], secrets=bad, fmt=fmt,
                    no_esc=fmt == "text")
    if where in ("tensor", "dtype"):
        g = _safetensors([("a", "F32"), ("b", "F32")])
        n = _safetensors([("a" + payload, "F32"), ("b", "F16" + payload)] if where == "tensor" else
                         [("a", "F32"), ("b", "F32" + payload)])
        return Case("forged-lines", {"gpu/model.safetensors": g, "npu/model.safetensors": n},
                    ["weights", "gpu/model.safetensors", "npu/model.safetensors"], secrets=bad, fmt=fmt, no_esc=fmt == "text")
    if where == "tb-tag":
        g = classes_bounds.tensorboard_run([{"loss" + payload: 2.5 - i / 10, "loss": 2.5 - i / 10} for i in range(4)])
        n = classes_bounds.tensorboard_run([{"loss" + payload: 2.6 - i / 10, "loss": 2.6 - i / 10} for i in range(4)])
        if g is not None:
            ev = "events.out.tfevents.1.host"
            return Case("forged-lines", {f"gpu/run/{ev}": g, f"npu/run/{ev}": n}, ["curves", "gpu/run", "npu/run"],
                        secrets=bad, fmt=fmt, no_esc=fmt == "text")
        where = "csv"  # no tensorboard here: the same tag as a CSV header
    if where == "csv":
        head = "step," + json.dumps("loss" + payload)  # a quoted CSV field keeps its line break
        g = head + "\n" + "".join(f"{i},{2.5 - i / 10}\n" for i in range(1, 5))
        n = head + "\n" + "".join(f"{i},{2.6 - i / 10}\n" for i in range(1, 5))
        return Case("forged-lines", _pair("metrics.csv", g, n), ["curves", "gpu/metrics.csv", "npu/metrics.csv"],
                    secrets=bad, fmt=fmt, no_esc=fmt == "text")
    if where == "yaml":
        return Case("forged-lines", _pair("config.yaml", f"lr: 1\nrun_name: {q}\n", "lr: 1\nrun_name: b\n"),
                    ["diff", "gpu/config.yaml", "npu/config.yaml"], secrets=bad, fmt=fmt, no_esc=fmt == "text")
    if where == "shell":
        return Case("forged-lines", _pair("run.sh", f"torchrun t.py --lr 1 --tag {_sh(payload)}\n",
                                          "torchrun t.py --lr 1 --tag b\n"),
                    ["diff", "gpu/run.sh", "npu/run.sh"], secrets=bad, fmt=fmt, no_esc=fmt == "text")
    if where == "python":
        return Case("forged-lines", _pair("train.py", f"lr = 1e-4\nrun_name = {q}\n", "lr = 1e-4\nrun_name = 'b'\n"),
                    ["diff", "gpu/train.py", "npu/train.py"], secrets=bad, fmt=fmt, no_esc=fmt == "text")
    snap_g = _snapshot("x", "conda")
    doc = json.loads(snap_g)
    doc["os"]["name"] = "Ubuntu" + payload
    doc["python"]["version"] = "3.10" + payload
    doc["distributions"].append({"name": "foo" + payload, "version": "1.0" + payload})
    return Case("forged-lines", {"gpu/snapshot.json": snap_g.encode(), "npu/snapshot.json": json.dumps(doc).encode()},
                ["env", "gpu/snapshot.json", "npu/snapshot.json"], secrets=bad, fmt=fmt, no_esc=fmt == "text")


# ------------------------------------------------------------------ the module's hooks

def make_case(cls: str, rng, small: bool, Case):
    if cls == "secret-shapes":
        return _secret_case(rng, Case)
    if cls == "forged-lines":
        return _forged_case(rng, Case)
    raise ValueError(cls)


def write_special(p, marker: tuple) -> bool:
    return False  # no special files of its own


def cleanup(d) -> None:
    return None

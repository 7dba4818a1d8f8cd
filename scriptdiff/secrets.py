"""Secret-looking names and values, from the one list in rules/secrets.yaml.

`is_secret_name(name)` says whether a variable or key name looks like it holds a credential
(HF_TOKEN, hub_token, WANDB_API_KEY, DB_PASSWD, AUTH_HEADER, GITHUB_PAT), so that its value
is never written out: `collect` withholds such environment variables, the config reader
drops such keys and the launch-script reader redacts such exports. Names that carry
hyperparameters (pad_token_id, num_key_value_heads, max_new_tokens, TOKENIZERS_PARALLELISM)
are not secret-looking. The matching rules are described in rules/secrets.yaml.

`is_secret_value(value)` looks at the value itself, whatever its name: URLs with user
information or a token query parameter, `Bearer ...`, provider token formats (hf_, ghp_,
sk-, AKIA, ...) and long high-entropy words. `is_secret(name, value)` is either. A value
that is withheld is replaced by `withheld(value)`: a marker that says so, with a short
fingerprint so that a changed token still compares as changed; `redact_text` withholds
the secret-looking words of a source excerpt shown in a report.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from functools import lru_cache
from urllib.parse import parse_qsl, urlsplit

from .registry import detect
from .rules import load
from .sources import Source

_SEPARATOR = re.compile(r"[^A-Za-z0-9]+")  # a name's words (a name, never code)


def words_of(name: str) -> tuple[str, ...]:
    """The upper-case words of a name: split at every character that is not a letter or digit."""
    return tuple(w for w in _SEPARATOR.split(name.upper()) if w)


@lru_cache(maxsize=1)
def _lists() -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...], tuple[tuple[str, ...], ...]]:
    sec = load().section("secrets", {}) or {}
    words = tuple(tuple(e.upper().split("_")) for e in sec.get("words", []) or [])
    suffixes = tuple(e.upper() for e in sec.get("suffixes", []) or [])
    not_secret = tuple(tuple(e.upper().split("_")) for e in sec.get("not_secret", []) or [])
    return words, suffixes, not_secret


def _contains(seq: tuple[str, ...], part: tuple[str, ...]) -> bool:
    n = len(part)
    return any(seq[i:i + n] == part for i in range(len(seq) - n + 1))


def is_secret_name(name: str) -> bool:
    """True when `name` looks like it names a credential (see rules/secrets.yaml). A module or
    tensor path ending in key or token (`blocks.0.attn.key`, `model.layers.3.dist_token`: a
    dotted name with a layer index) names a parameter, not a credential."""
    ws = words_of(name)
    if not ws:
        return False
    words, suffixes, not_secret = _lists()
    if any(_contains(ws, w) for w in words):
        return True
    if "." in name and any(part.isdigit() for part in name.split(".")):
        return False  # a parameter's path ending in key or token
    if not ws[-1].endswith(suffixes):
        return False
    return not any(len(e) <= len(ws) and ws[-len(e):] == e for e in not_secret)


# ------------------------------------------------------------------------------- values

WITHHELD = "<withheld: secret-looking value"  # every marker starts so


@lru_cache(maxsize=1)
def _value_rules() -> tuple[frozenset, tuple, tuple, int, float]:
    sv = load().section("secret_values", {}) or {}
    query = frozenset(e.upper() for e in sv.get("query_names", []) or [])
    schemes = tuple(e.lower() + " " for e in sv.get("schemes", []) or [])
    prefixes = tuple((e["prefix"], int(e["min"])) for e in sv.get("token_prefixes", []) or [])
    ent = sv.get("entropy") or {}
    return query, schemes, prefixes, int(ent.get("min_length", 32)), float(ent.get("min_bits", 4.2))


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ENTROPY_CHARS = _TOKEN_CHARS | frozenset("+/=")
_MAX_INSPECTED = 4096  # longer values are not one credential: only their words are looked at


def entropy_bits(word: str) -> float:
    """Shannon entropy of `word`, in bits per character."""
    n = len(word)
    return -sum(c / n * math.log2(c / n) for c in Counter(word).values()) if n else 0.0


def _url_secret(value: str) -> bool:
    try:
        u = urlsplit(value)
    except ValueError:
        return False
    if not u.scheme or not u.netloc:
        return False
    if "@" in u.netloc:  # https://TOKEN@host, https://user:pass@host
        return True
    query_names = _value_rules()[0]
    for name, _v in parse_qsl(u.query, keep_blank_values=True):
        if is_secret_name(name) or "_".join(words_of(name)) in query_names:
            return True
    return False


def _token_shaped(word: str) -> bool:
    _q, _s, prefixes, min_length, min_bits = _value_rules()
    for prefix, least in prefixes:
        if word.startswith(prefix) and len(word) - len(prefix) >= least \
                and all(c in _TOKEN_CHARS for c in word[len(prefix):]):
            return True
    if len(word) < min_length or not all(c in _ENTROPY_CHARS for c in word):
        return False
    if not (any(c.isdigit() for c in word) and any(c.isalpha() for c in word)):
        return False
    if word.count("/") > 2 or word.count("-") + word.count("_") > len(word) // 8:
        return False  # paths and names made of words (org/Model-Name-7B-Instruct)
    if sum(ord(b) - ord(a) == 1 for a, b in zip(word, word[1:])) > len(word) // 4:
        return False  # an alphabet ('abcdef...0123456789'), not a random draw
    return entropy_bits(word) >= min_bits


def is_secret_value(value) -> bool:
    """True when a value looks like a credential, whatever its name (see rules/secrets.yaml)."""
    if not isinstance(value, str):
        return False
    v = value.strip().strip("'\"")
    if len(v) < 8:
        return False
    if len(v) > _MAX_INSPECTED:
        return any(is_secret_value(w) for w in v[:_MAX_INSPECTED].split())
    if "://" in v and _url_secret(v):
        return True
    if v.lower().startswith(_value_rules()[1]):
        return True
    if _path_shaped(v):  # outputs/run-8f3e2a9b...: a place, named however a run is named
        return False
    if _token_shaped(v):
        return True
    if " " in v or "=" in v:  # a value of several words (--opts "a=b token"): each word
        return any(w != v and is_secret_value(w) for w in v.replace("=", " ").split())
    return False


def _path_shaped(v: str) -> bool:
    """A file path, not a token that happens to hold `/` (base64): one word, a separator, and it
    starts at a root (`/`, `./`, `~/`, `$VAR/`) or with a lower-case directory name."""
    if "/" not in v or "://" in v or any(c.isspace() for c in v):
        return False
    if v.startswith(("/", "./", "../", "~/", "$")):
        return True
    first = v.split("/", 1)[0]
    return len(first) >= 2 and first == first.lower() and all(c.isalnum() or c in "_-." for c in first) \
        and any(c.isalpha() for c in first)


def is_secret(name: str | None, value) -> bool:
    """A name or a string value that looks like a credential; True, False, numbers and None never do."""
    if isinstance(value, (bool, int, float)) or value is None:
        return False
    return bool(name and is_secret_name(name)) or is_secret_value(value)


def fingerprint(value) -> str:
    """A short digest of a withheld value: tells whether it changed, too short to confirm a
    guess of a real token (32 bits)."""
    return hashlib.blake2b(str(value).encode("utf-8", "replace"), digest_size=4, person=b"scriptdiff").hexdigest()


def withheld(value) -> str:
    """The marker that stands for a withheld value (compared in its place)."""
    return f"{WITHHELD} {fingerprint(value)}>"


# keyword arguments of everyday Python that end in a secret-looking word and hold none:
# sorted(key="..."), np.add(signature="ii->i"), update_environment(PWD="/tmp")
_GENERIC_IN_CODE = {("KEY",), ("SIGNATURE",), ("SIG",), ("PWD",), ("SESSION",), ("ACCESS",)}


def _credential_word(word: str) -> bool:
    """The word after `Bearer` / `Basic`: a credential when it is one token-like word."""
    return len(word) >= 8 and all(c in _ENTROPY_CHARS or c in ".~" for c in word) \
        and (any(c.isdigit() for c in word) or is_secret_value(word))


def secret_words(text: str, code: bool = False) -> set[str]:
    """The parts of `text` (a line of a script or of code) that must not be shown:
    secret-looking words, the values of secret-looking NAME=value and --flag=value words,
    a credential after `Bearer`. In `code` (Python), only a quoted value counts for
    NAME=value: `key=item` passes a variable, `hub_token="..."` a credential."""
    found: set[str] = set()
    schemes = _value_rules()[1]
    after_scheme = after_name = False
    for word in text.split():
        core = word.strip("'\"\\;,(){}[]")
        if core and not core.startswith("<withheld"):
            pre, eq, rhs = core.partition("=")
            quoted = rhs[:1] in ("'", '"')
            rhs = rhs.strip("'\"")
            if (after_scheme and _credential_word(core)) or \
                    (after_name and (core.lower() + " ") not in schemes
                     and (not code or word.lstrip("([{")[:1] in ("'", '"'))):
                found.add(core)  # Bearer TOKEN; `hub_token: VALUE` ("hub_token": "VALUE" in code)
            elif eq and rhs and (quoted or not code) and is_secret(pre.lstrip("-"), rhs) \
                    and not (code and words_of(pre) in _GENERIC_IN_CODE):
                found.add(rhs)  # NAME=value, --flag=value, key="value": the name stays
            elif is_secret_value(core):
                found.add(core)
        after_scheme = bool(core) and (core.lower() + " ") in schemes
        name = core[:-1].strip("'\"") if core.endswith(":") else ""
        after_name = bool(name) and is_secret_name(name) and words_of(name) not in _GENERIC_IN_CODE
    return found


def redact_lines(text: str, code: bool = False) -> str:
    """A whole file as a report may show it (the html page): every line through
    `secret_words`, each secret replaced by its `withheld` marker, so that a changed token
    still shows as a changed line and an unchanged one as equal."""
    if not text:
        return text
    return "\n".join(_replaced(line, secret_words(line, code), withheld) for line in text.split("\n"))


def shown_text(src: Source) -> str:
    """A file's text as a report may show it whole (the html page): `redact_lines`, with
    Python's reading of NAME=value for the kinds written in Python."""
    return redact_lines(src.text, code=detect(src).comments == "python")


def redact_text(text: str, known=(), scan: bool = True, code: bool = False) -> str:
    """`text` (a source excerpt) with every value in `known` and (with `scan`) every
    secret-looking word (secret_words) replaced by `<withheld>`."""
    if not text:
        return text
    return _replaced(text, set(known) | (secret_words(text, code) if scan else set()), lambda _k: "<withheld>")


def _replaced(text: str, words: set[str], marker) -> str:
    """`text` with each of `words` (longest first) replaced by `marker(word)`; a word under 3
    characters only where it stands alone."""
    for k in sorted(words, key=len, reverse=True):
        if k and (len(k) >= 3 or f" {k} " in f" {text} ") and k in text:
            text = text.replace(k, marker(k))
    return text

"""Secret-looking names and values, from the one list in rules/secrets.yaml: the one mechanism
that keeps credentials out of everything scriptdiff writes.

Names. `is_secret_name(name)` says whether a variable or key name looks like it holds a
credential (HF_TOKEN, hub_token, WANDB_API_KEY, DB_PASSWD, AUTH_HEADER, GITHUB_PAT). Names
that carry hyperparameters (pad_token_id, num_key_value_heads, max_new_tokens,
TOKENIZERS_PARALLELISM) are not secret-looking. The matching rules are in rules/secrets.yaml.

Values. `secret_spans(text)` finds every part of a text that must not be shown, anywhere in
it (after `,` `:` `;` `/`, a newline or a tab, thousands of characters in): the user
information of a URL and the values of its secret-named query and fragment parameters, the
credential after `Bearer`/`Basic`, the token shapes of the rules (provider prefixes, JWTs,
webhook URLs), the value written after a secret-looking name (NAME=value, NAME: value,
"NAME": "value", os.environ["NAME"] = "value", ("NAME", "value"), --name value,
--name=value) and long high-entropy words. The whole text is inspected, in time linear in
its length (a text is bounded by what a reader takes in and by scriptdiff.budget's value
budgets). `is_secret_value(value)` is "it has such a part"; `is_secret(name, value)` either.

Where it is applied, each through this module:
- a setting's value: replaced whole by `withheld(value)`, a marker with a short fingerprint,
  so that a changed token still compares as changed: by the readers, which know the names
  (`is_secret`), and for every fact, masked line and error of every file by
  `withhold_extract`/`withhold_pair`, which the engine runs after each reader (before the
  cache: no secret is stored either);
- every finding (`withhold_finding`, run by finding.finding, the one factory): a value that is
  secret-looking, or written as a secret in its source line, is withheld whole; its source
  lines, message, key and extra text have each secret part replaced by `<withheld>`;
- everything else a writer shows (`withhold_report`: input errors and notes, masked lines,
  overview lines, verdict reasons, the hparams table, the inputs' notes), run by
  report.render (every writer's entry) and by the CLI before it prints error lines;
- a whole file the html page shows (`shown_text`, `redact_lines`): each secret part replaced by
  its fingerprinted marker, line by line; so are the texts `fix` shows (`shown_change`: its
  diff and each edit's old and new words);
- a snapshot (`withhold_tree`, run by `collect`): every secret-looking string field withheld.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import string
from collections import Counter

from .. import budget
from ..model import Extract, Fact, InputError, Masked, PairResult, Side
from .registry import detect
from .rules import RuleSet, derived
from .secret_shapes import compile_pattern, spans as pattern_spans, tokens_regex
from ..inputs.sources import Source

_SEPARATOR = re.compile(r"[^A-Za-z0-9]+")  # a name's words (a name, never code)


def words_of(name: str) -> tuple[str, ...]:
    """The upper-case words of a name: split at every character that is not a letter or digit."""
    return tuple(w for w in _SEPARATOR.split(name.upper()) if w)


class _Rules:
    """rules/secrets.yaml, read once per rule set (a run given --rules has its own)."""

    def __init__(self, rs):
        sec = rs.section("secrets", {}) or {}
        self.words = tuple(tuple(e.upper().split("_")) for e in sec.get("words", []) or [])
        self.suffixes = tuple(e.upper() for e in sec.get("suffixes", []) or [])
        self.not_secret = tuple(tuple(e.upper().split("_")) for e in sec.get("not_secret", []) or [])
        self.not_secret_in_code = frozenset(tuple(e.upper().split("_")) for e in sec.get("not_secret_in_code") or ())
        sv = rs.section("secret_values", {}) or {}
        self.query = frozenset(e.upper() for e in sv.get("query_names", []) or [])
        self.schemes = tuple(e.lower() for e in sv.get("schemes", []) or [])
        self.tokens = tokens_regex(sv.get("token_prefixes", []) or [])
        self.patterns = tuple(compile_pattern(p["regex"]) for p in sv.get("patterns", []) or [])
        # the credential after an Authorization scheme ("Bearer x"), built from the schemes' names
        self.scheme_rx = re.compile(
            r"(?i)(?<![A-Za-z0-9])(?:" + "|".join(re.escape(s) for s in self.schemes)
            + r")[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{8,})") if self.schemes else None
        ent = sv.get("entropy") or {}
        self.min_length = int(ent.get("min_length", 32))
        self.min_bits = float(ent.get("min_bits", 4.2))
        # an entropy candidate: a long run of the characters tokens are drawn from
        self.entropy_rx = re.compile("[A-Za-z0-9+/_-]{%d,}={0,2}" % self.min_length)
        # a secret-looking name holds one of these (the first word of a `words` entry, or a
        # suffix): a name without any is rejected at once
        needles = {w[0] for w in self.words} | set(self.suffixes)
        self.needles = re.compile("|".join(sorted(map(re.escape, needles))), re.IGNORECASE) if needles else None
        # the same words for ASCII text lowered first: ten times faster than IGNORECASE, which
        # tries every word at every position (a 40,000-flag launch line has 80,000 excerpts)
        self.needles_ascii = re.compile("|".join(sorted(map(re.escape, {w.lower() for w in needles})))) \
            if needles else None
        self.names: dict[str, bool] = {}  # is_secret_name, memoised
        self.code_paths: dict[str, bool] = {}  # is_code, memoised
        self.span_memo: dict[tuple[str, bool], tuple] = {}  # secret_spans, memoised


@derived
def _rules(rs: RuleSet) -> _Rules:
    return _Rules(rs)


def _contains(seq: tuple[str, ...], part: tuple[str, ...]) -> bool:
    n = len(part)
    return any(seq[i:i + n] == part for i in range(len(seq) - n + 1))


def is_secret_name(name: str) -> bool:
    """True when `name` looks like it names a credential (see rules/secrets.yaml). A module or
    tensor path ending in key or token (`blocks.0.attn.key`, `model.layers.3.dist_token`: a
    dotted name with a layer index) names a parameter, not a credential."""
    r = _rules()
    hit = r.names.get(name)
    if hit is None:
        hit = r.names[name] = _secret_name(name, r)
        if len(r.names) > budget.SECRET_NAME_MEMO:
            r.names.clear()
    return hit


def _secret_name(name: str, r: _Rules) -> bool:
    if r.needles is None or r.needles.search(name) is None:
        return False
    ws = words_of(name)
    if not ws:
        return False
    if any(_contains(ws, w) for w in r.words):
        return True
    if "." in name and any(part.isdigit() for part in name.split(".")):
        return False  # a parameter's path ending in key or token
    if not ws[-1].endswith(r.suffixes):
        return False
    return not any(len(e) <= len(ws) and ws[-len(e):] == e for e in r.not_secret)


# ------------------------------------------------------------------------------- values

WITHHELD = "<withheld: secret-looking value"  # every fingerprinted marker starts so
SHORT_MARKER = "<withheld>"  # what stands for a secret part of a source line or a message

_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_-")
_ENTROPY_CHARS = _TOKEN_CHARS | frozenset("+/=")


def entropy_bits(word: str) -> float:
    """Shannon entropy of `word`, in bits per character."""
    n = len(word)
    return -sum(c / n * math.log2(c / n) for c in Counter(word).values()) if n else 0.0


def _high_entropy(word: str, r: _Rules) -> bool:
    """One long word drawn at random: letters and digits both, not a path or a name made of
    words, not an alphabet, and at least `min_bits` bits per character."""
    if len(word) < r.min_length:
        return False
    if not (any(c.isdigit() for c in word) and any(c.isalpha() for c in word)):
        return False
    if word.count("/") > 2 or word.count("-") + word.count("_") > len(word) // 8:
        return False  # paths and names made of words (org/Model-Name-7B-Instruct)
    if sum(ord(b) - ord(a) == 1 for a, b in zip(word, word[1:])) > len(word) // 4:
        return False  # an alphabet ('abcdef...0123456789'), not a random draw
    return entropy_bits(word) >= r.min_bits


def _credential_word(word: str) -> bool:
    """The word after `Bearer` / `Basic`: a credential when it is one token-like word."""
    return len(word) >= 8 and all(c in _ENTROPY_CHARS or c in ".~" for c in word) \
        and (any(c.isdigit() for c in word) or is_secret_value(word))


# where a URL ends in a line of text
_URL_END = frozenset(" \t\r\n\"'<>`\\{}|^")
_SCHEME_CHARS = frozenset(string.ascii_letters + string.digits + "+.-")


def _url_spans(text: str, r: _Rules) -> list[tuple[int, int]]:
    """In every URL of `text`: its user information, and the values of its query and
    fragment parameters whose names are secret-looking (or listed in `query_names`). A URL
    inside another (`file:///cache/https://user:pass@host`, `?next=https://u:p@h/x?sig=...`)
    is one too. In time linear in the text: each host is scanned once (it ends before the
    next `://`), and the query of the outermost URL only (split at `?` as well as `&`)."""
    out: list[tuple[int, int]] = []
    n = len(text)
    i = text.find("://")
    end = -1  # where the outermost URL around this `://` ends
    while i != -1:
        s = i
        while s > 0 and text[s - 1] in _SCHEME_CHARS:
            s -= 1
        nested = i < end
        if not nested:
            end = i + 3
            while end < n and text[end] not in _URL_END:
                end += 1
        e = end
        if s < i and text[s].isalpha():
            a = host_end = i + 3
            while host_end < e and text[host_end] not in "/?#":
                host_end += 1
            at = text.rfind("@", a, host_end)
            if at > a:  # https://TOKEN@host, https://user:pass@host
                out.append((a, at))
            if not nested:
                q, h = text.find("?", a, e), text.find("#", a, e)
                if q != -1 and (h == -1 or q < h):
                    out += _params(text, q + 1, h if h != -1 else e, r)
                if h != -1:
                    out += _params(text, h + 1, e, r)  # #access_token=... (an OAuth implicit grant)
        i = text.find("://", i + 3)
    return out


def _params(text: str, a: int, b: int, r: _Rules) -> list[tuple[int, int]]:
    """The secret parameters of a query or fragment text[a:b] (name=value, split at & and ;)."""
    out = []
    for m in _PARAM_SPLIT.finditer(text, a, b):
        eq = text.find("=", m.start(), m.end())
        if eq != -1 and eq + 1 < m.end():
            name = text[m.start():eq]
            if is_secret_name(name) or "_".join(words_of(name)) in r.query:
                out.append((eq + 1, m.end()))
    return out


_PARAM_SPLIT = re.compile("[^&;?]+")  # a query's parameters, and a nested URL's (a URL's syntax, not code)


_VALUE_END = frozenset(" \t\r\n\"'`,;&|(){}[]<>")  # an unquoted value after `=` or a flag
_COLON_END = frozenset("\r\n,}]")  # an unquoted value after `:` (YAML: the rest of the line)
_STRING_PREFIX = frozenset("rbfuRBFU")  # f"...", b'...' (code)


def _named_spans(text: str, code: bool) -> list[tuple[int, int]]:
    """The values written after a secret-looking name: NAME=value, NAME: value, "NAME":
    "value", ["NAME"] = "value", ("NAME", "value") (a quoted name, a quoted value), and
    --name value, --name=value. In `code` (Python) only a quoted value counts: `key=item`
    passes a variable, `hub_token="..."` a credential, `hub_token: str` is an annotation; a
    flag can only be text in a string there (`"train --hub-token x"`), read as text."""
    out: list[tuple[int, int]] = []
    r = _rules()
    needles = r.needles
    if needles is None:
        return out
    if text.isascii() and r.needles_ascii.search(text.lower()) is None:
        return out  # no secret-looking word at all (IGNORECASE also folds a few non-ASCII letters)
    done = 0  # the end of the last name looked at, or of the value last withheld
    for m in needles.finditer(text):  # only a name holding a secret-looking word can be one
        if m.start() < done:
            continue
        i = m.start()
        while i > 0 and text[i - 1] in _NAME_CHARS:
            i -= 1
        j = _NAME_RUN.match(text, m.start()).end()
        done = j
        if _class_of_module(text[i:j]):
            continue  # `tensorflow.Session: ...`: a library's class named in a message, no credential
        span = _value_after(text, i, j, code)
        if span is not None:
            out.append(span)
            done = span[1]
    return out


def _class_of_module(name: str) -> bool:
    """A qualified class name (`tensorflow.Session`, `requests.sessions.Session`): a module path
    then one CamelCase word, which names code, never a credential's holder."""
    head, dot, last = name.rpartition(".")
    return bool(dot and head and last[:1].isupper() and any(c.islower() for c in last)
                and last.isalnum() and all(p[:1].islower() for p in head.split(".")))


# a name as a text writes it (HF_TOKEN, hub_token, --hub-token, wandb.api_key)
_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")
_NAME_RUN = re.compile("[A-Za-z0-9_.-]*")


def _value_after(text: str, i: int, j: int, code: bool) -> tuple[int, int] | None:
    """The span of the value written after the name text[i:j], if that name is secret-looking."""
    n = len(text)
    quoted = i > 0 and text[i - 1] in "\"'"
    flag = text[i] == "-"  # --name (after a character that is no part of a name: a space, a quote, a /)
    k = j
    while k < n and k - j < 2 and text[k] in "\"']":  # "NAME" / ["NAME"]
        k += 1
    while k < n and text[k] in " \t":
        k += 1
    if k >= n:
        return None
    c = text[k]
    if c == "=" and text[k + 1:k + 2] != "=":
        sep = "="
    elif c == ":" and text[k + 1:k + 2] not in (":", "=", "/"):
        sep = ":"
    elif c == "," and quoted:
        sep = ","
    elif flag and k > j and c not in "-=":
        sep = " "
    else:
        return None
    bare = text[i:j].lstrip("-")
    if not bare or not is_secret_name(bare) or (code and words_of(bare) in _rules().not_secret_in_code):
        return None
    if sep != " ":
        k += 1
        while k < n and text[k] in " \t":
            k += 1
    p = k
    while code and p < n and p - k < 2 and text[p] in _STRING_PREFIX:
        p += 1
    if p < n and text[p] in "\"'" and (p == k or code):  # a quoted value
        q = text[p]
        e = p + 1
        while e < n and text[e] != q and text[e] != "\n":
            e += 2 if text[e] == "\\" else 1
        a, b = p + 1, min(e, n)
    else:
        if (code and not flag) or sep == ",":
            return None  # code: a name (key=item), not a credential; a flag is text in a string
        ends = _COLON_END if sep == ":" else _VALUE_END
        e = k
        while e < n and text[e] not in ends:
            e += 1
        if sep == ":":
            hash_at = text.find(" #", k, e)  # a YAML comment after the value
            e = hash_at if hash_at != -1 else e
            while e > k and text[e - 1] in " \t":
                e -= 1
            if text[k:e].split(" ", 1)[0].lower() in _rules().schemes:
                return None  # Authorization: Bearer x (the scheme's credential is found on its own)
        a, b = k, e
    v = text[a:b]
    if not v.strip() or v.startswith(SHORT_MARKER[:-1]) or (sep == " " and v.startswith("-")) or _reference(v) \
            or is_structured(v):
        return None
    return a, b


_IDENT = re.compile("[a-z_][a-z0-9_]*|[0-9]+")  # one part of a dotted path (a name's syntax, not code)


def is_structured(value) -> bool:
    """A value that names a place in a program, never a credential, whatever the name it is
    written under: a dotted path of lower-case identifiers (a module or tensor path:
    `model.language_model.embed_tokens.weight`, `blocks.0.attn.key`), two named parts at
    least. A token's own shape is still found in it (`is_secret_value`)."""
    if not isinstance(value, str) or "." not in value:
        return False
    parts = value.split(".")
    return all(_IDENT.fullmatch(p) for p in parts) and sum(not p.isdigit() for p in parts) >= 2


def _reference(v: str) -> bool:
    """A variable reference ($HF_TOKEN, ${HF_TOKEN}, $(cat f)): a name, not a value."""
    if v.startswith("$(") or (v.startswith("${") and v.endswith("}")):
        return True
    return v.startswith("$") and len(v) > 1 and v[1:].replace("_", "").isalnum()


def secret_spans(text: str, code: bool = False) -> list[tuple[int, int]]:
    """The (start, end) of every part of `text` that must not be shown, sorted and merged.
    In `code` (a line of Python), a value after a secret-looking name counts only quoted. A
    path (outputs/run-8f3e2a9b...: a place, named however a run is named) is never secret by
    its randomness alone, only by a token's own shape."""
    if not text or len(text) < 3:
        return []
    r = _rules()
    memo = r.span_memo  # the facts of one line share its text: a one-line launch script of
    got = memo.get((text, code))  # 40,000 flags is scanned once, not once per flag
    if got is None:
        if len(memo) > budget.SECRET_LINE_MEMO:
            memo.clear()
        got = memo[(text, code)] = _spans_of(text, code, r)
    return list(got)


def _spans_of(text: str, code: bool, r: _Rules, depth: int = 0) -> tuple[tuple[int, int], ...]:
    found: list[tuple[int, int]] = []
    if r.tokens is not None:
        found += [m.span() for m in r.tokens.finditer(text)]
    for rx in r.patterns:
        found += pattern_spans(rx, text)
    if r.scheme_rx is not None:
        found += [m.span("secret") for m in r.scheme_rx.finditer(text) if _credential_word(m.group("secret"))]
    if "://" in text:
        found += _url_spans(text, r)
    found += _named_spans(text, code)
    found += [m.span() for m in r.entropy_rx.finditer(text)
              if _high_entropy(m.group(), r) and not _path_shaped(m.group())]
    if "%" in text and depth < budget.SECRET_DECODINGS:  # https%3A%2F%2Fuser%3Apass%40host: the same rules, decoded
        plain, at = _percent_decoded(text)
        if plain is not None:
            found += [(at[a], at[b]) for a, b in _spans_of(plain, code, r, depth + 1)]
    return tuple(_merged(found))


_PERCENT = re.compile("%([0-7][0-9A-Fa-f])")  # an escaped ASCII character (a URL's syntax, not code)


def _percent_decoded(text: str) -> tuple[str | None, list[int]]:
    """`text` with its percent-escapes of ASCII characters decoded (`%3A` -> `:`), and where
    each character of the decoded text starts in `text` (one more entry: its end); None when
    `text` has no such escape."""
    pieces: list[str] = []
    at: list[int] = []
    last = 0
    for m in _PERCENT.finditer(text):
        pieces.append(text[last:m.start()])
        at.extend(range(last, m.start()))
        pieces.append(chr(int(m.group(1), 16)))
        at.append(m.start())
        last = m.end()
    if not pieces:
        return None, at
    pieces.append(text[last:])
    at.extend(range(last, len(text) + 1))
    return "".join(pieces), at


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(s for s in spans if s[1] > s[0]):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def is_secret_value(value) -> bool:
    """True when a value looks like a credential, or holds one anywhere in it, whatever its
    name (see rules/secrets.yaml)."""
    if not isinstance(value, str):
        return False
    v = value.strip().strip("'\"")
    if len(v) < 8:
        return False
    r = _rules()
    if v.lower().startswith(tuple(s + " " for s in r.schemes)):
        return True  # an Authorization header's value: "Bearer x"
    return bool(secret_spans(v))


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
    """A name or a string value that looks like a credential; True, False, numbers, None and
    a structured value under a secret-looking name (`--embedding_key model.embed.weight`) never do."""
    if isinstance(value, (bool, int, float)) or value is None:
        return False
    return bool(name and is_secret_name(name) and not is_structured(value)) or is_secret_value(value)


def fingerprint(value) -> str:
    """A short digest of a withheld value: tells whether it changed, too short to confirm a
    guess of a real token (32 bits)."""
    return hashlib.blake2b(str(value).encode("utf-8", "surrogatepass"), digest_size=4,
                           person=b"scriptdiff").hexdigest()


def withheld(value) -> str:
    """The marker that stands for a withheld value (compared in its place)."""
    return f"{WITHHELD} {fingerprint(value)}>"


def secret_words(text: str, code: bool = False) -> set[str]:
    """The parts of `text` (a line of a script or of code) that must not be shown."""
    return {text[a:b] for a, b in secret_spans(text, code)}


def _known_spans(text: str, known, whole: bool = False) -> list[tuple[int, int]]:
    """Where the values in `known` occur in `text`; a value under 3 characters only where it
    stands alone (between spaces, quotes or the ends); with `whole`, any value only where no
    letter or digit touches it (a name's word)."""
    parts = []
    for k in sorted({k for k in known if isinstance(k, str) and k}, key=len, reverse=True):
        if k in text:
            if whole:
                parts.append(rf"(?<![A-Za-z0-9]){re.escape(k)}(?![A-Za-z0-9])")
            else:
                parts.append(re.escape(k) if len(k) >= 3 else rf"(?<![^\s'\"=:]){re.escape(k)}(?![^\s'\"])")
    if not parts:
        return []
    return [m.span() for m in re.finditer("|".join(parts), text)]


def _replace(text: str, spans: list[tuple[int, int]], marker) -> str:
    if not spans:
        return text
    out, last = [], 0
    for a, b in spans:
        out += [text[last:a], marker(text[a:b])]
        last = b
    out.append(text[last:])
    return "".join(out)


def redact_text(text: str, known=(), scan: bool = True, code: bool = False) -> str:
    """`text` (a source excerpt, a message) with every value in `known` and (with `scan`)
    every secret part (secret_spans) replaced by `<withheld>`."""
    if not text or not isinstance(text, str):
        return text
    spans = _known_spans(text, known) + (secret_spans(text, code) if scan else [])
    return _replace(text, _merged(spans), lambda _k: SHORT_MARKER)


def redact_lines(text: str, code: bool = False) -> str:
    """A whole file as a report may show it (the html page): each secret part of each line
    replaced by its `withheld` marker, so that a changed token still shows as a changed line
    and an unchanged one as equal."""
    if not text:
        return text
    spans = secret_spans(text, code)  # one scan: no secret part spans two lines
    found = {text[a:b] for a, b in spans}  # and each secret found is withheld wherever else it occurs
    return _replace(text, _merged(spans + _known_spans(text, found)), withheld)


def is_code(path: str | None) -> bool:
    """The file at `path` is written in Python (its lines are read as code: only a quoted
    value after a secret-looking name counts)."""
    if not path:
        return False
    memo = _rules().code_paths
    if path not in memo:
        if len(memo) > budget.CODE_PATH_MEMO:
            memo.clear()
        memo[path] = detect(Source(name=str(path), data=b"")).comments == "python"
    return memo[path]


def shown_text(src: Source) -> str:
    """A file's text as a report may show it whole (the html page): `redact_lines`, with
    Python's reading of NAME=value for the kinds written in Python."""
    return redact_lines(src.text, code=detect(src).comments == "python")


def shown_change(src: Source, old: str, new: str) -> tuple[str, str, set[str]]:
    """A file's text before and after an edit (what `fix` shows: its diff, each edit's old and
    new words), each line as `redact_lines` shows it; a secret found in either text is
    withheld in both, so an unchanged token shows as an unchanged line. Also returns the
    secrets found, for the edits' pieces (`redact_text(piece, found)`)."""
    code = detect(src).comments == "python"
    found = {t[a:b] for t in (old, new) for a, b in secret_spans(t, code)}

    def shown(t: str) -> str:
        return _replace(t, _merged(secret_spans(t, code) + _known_spans(t, found)), withheld) if t else t
    return shown(old), shown(new), found


# ------------------------------------------------------------------ applied: values, findings, reports

def _value(v, found: set[str], known: set[str]):
    """A value as it may be shown: a string that is secret-looking or that its source line
    writes as a secret is withheld whole (its raw text goes into `known`); lists, tuples,
    sets and mappings are walked. Unchanged values are returned as they are."""
    if isinstance(v, str):
        if not v or v.startswith(WITHHELD):
            return v
        if is_secret_value(v) or any(v == f or (len(v) >= 8 and v in f) or (len(f) >= 8 and f in v) for f in found):
            known.add(v)
            return withheld(v)
        return v
    if isinstance(v, (list, tuple)) and v:
        new = [_value(x, found, known) for x in v]
        if all(a is b for a, b in zip(new, v)):
            return v
        return new if isinstance(v, list) else tuple(new)
    if isinstance(v, dict) and v:
        new_d = {k: _value(x, found, known) for k, x in v.items()}
        return v if all(new_d[k] is v[k] for k in v) else new_d
    if isinstance(v, (set, frozenset)) and v:
        new_s = {_value(x, found, known) for x in v}
        return v if new_s == v else type(v)(new_s)
    return v


def _shown_source(source: str | None) -> bool:
    return bool(source) and source not in ("default", "derived")


def _side(side: Side | None, found: set[str], known: set[str]) -> Side | None:
    if side is None:
        return None
    v = _value(side.value, found, known)
    return side if v is side.value else dataclasses.replace(side, value=v)


def _text_of(x, found: set[str]):
    """Strings (values and keys) in writer hints (a finding's `extra`, a report's additive
    JSON sections) with every secret part withheld."""
    if isinstance(x, str):
        return redact_text(x, found)
    if isinstance(x, list):
        return [_text_of(y, found) for y in x]
    if isinstance(x, tuple):
        return tuple(_text_of(y, found) for y in x)
    if isinstance(x, dict):
        return {_text_of(k, found) if isinstance(k, str) else k: _text_of(y, found) for k, y in x.items()}
    return x


def withhold_finding(key: str, message: str, gpu: Side | None, npu: Side | None, extra: dict):
    """A finding's parts as every writer may show them (finding.finding calls this for every
    finding): (key, message, gpu, npu, extra)."""
    found: set[str] = set()
    codes = {}
    for s in (gpu, npu):
        if s is not None and _shown_source(s.source):
            codes[id(s)] = is_code(s.path)
            found |= secret_words(s.source, codes[id(s)])
    known: set[str] = set()
    g, n = _side(gpu, found, known), _side(npu, found, known)
    found |= known
    sides = []
    for old, s in ((gpu, g), (npu, n)):
        if s is not None and (_shown_source(s.source) or s.via):
            source = redact_text(s.source, found, code=codes.get(id(old), False)) \
                if _shown_source(s.source) else s.source
            via = redact_text(s.via, found) if s.via else s.via
            if source != s.source or via != s.via:
                s = dataclasses.replace(s, source=source, via=via)
        sides.append(s)
    return (redact_text(key, found) if key else key, redact_text(message, found), sides[0], sides[1],
            _text_of(extra, found) if extra else extra)


def withhold_fact(f: Fact, code: bool = False, found: set[str] | frozenset = frozenset()) -> Fact:
    """A fact as it is kept and shown: a secret-looking value (or one of `found`, the secrets
    of the line it was read from) withheld whole; its source line, and its key, without
    secrets. Changes `f` in place (facts are the extract's own) and returns it."""
    known: set[str] = set(found)
    v = _value(f.value, set(found), known)
    if v is not f.value:
        f.value = v
    if _shown_source(f.source):
        f.source = redact_text(f.source, known, code=code)
    if known and isinstance(f.key, str):  # a name built from a secret's words (a malformed flag): its
        f.key = _replace(f.key, _known_spans(f.key, known, whole=True), withheld)  # marker tells a changed one apart
        if any(isinstance(x, str) for x in f.meta.values()):  # how the name was written (messages show it)
            f.meta = {k: _replace(x, _known_spans(x, known, whole=True), withheld) if isinstance(x, str) else x
                      for k, x in f.meta.items()}
    if f.meta and any(isinstance(x, (dict, list)) for x in f.meta.values()):
        meta = {k: _provenance(x, known, code) if isinstance(x, (dict, list)) else x for k, x in f.meta.items()}
        if any(meta[k] is not x for k, x in f.meta.items()):
            f.meta = meta
    return f


def _provenance(x, known: set[str], code: bool):
    """A fact's provenance (its `meta` below the top: the words of a launch option as written,
    a literal's code, the variables it came through) as it is kept (in the cache) and shown:
    each secret part, and each of `known`, by its fingerprinted marker. Unchanged parts are
    returned as they are (a provenance several facts share stays shared)."""
    if isinstance(x, str):
        spans = secret_spans(x, code) + (_known_spans(x, known) if known else [])
        return _replace(x, _merged(spans), withheld) if spans else x
    if isinstance(x, dict):
        new = {k: _provenance(y, known, code) for k, y in x.items()}
        return x if all(new[k] is x[k] for k in x) else new
    if isinstance(x, list):
        new_l = [_provenance(y, known, code) for y in x]
        return x if all(a is b for a, b in zip(new_l, x)) else new_l
    return x


def _line_secrets(src: Source, code: bool):
    """line number -> the secret words of that line of `src` (raw: before any reader redacted
    its excerpts), computed once per line."""
    text = src.text
    starts: list[int] = []
    memo: dict[int, set[str]] = {}

    def of(line: int) -> set[str]:
        if line not in memo:
            if not starts:
                starts.append(0)
                pos = text.find("\n")
                while pos != -1:
                    starts.append(pos + 1)
                    pos = text.find("\n", pos + 1)
            if 0 < line <= len(starts):
                a = starts[line - 1]
                b = starts[line] - 1 if line < len(starts) else len(text)
                memo[line] = secret_words(text[a:b], code)
            else:
                memo[line] = set()
        return memo[line]
    return of


def _masked(m: Masked, code: bool) -> Masked:
    sides = []
    for s in (m.gpu, m.npu):
        if s is not None and _shown_source(s.source):
            source = redact_text(s.source, code=code)
            s = s if source == s.source else dataclasses.replace(s, source=source)
        sides.append(s)
    return m if sides == [m.gpu, m.npu] else dataclasses.replace(m, gpu=sides[0], npu=sides[1])


def _error(e: InputError) -> InputError:
    message, path = redact_text(e.message), redact_text(e.path)
    return e if (message, path) == (e.message, e.path) else dataclasses.replace(e, message=message, path=path)


def withhold_extract(ex: Extract, src: Source) -> Extract:
    """An extract as it is cached and shown (the engine runs this after every reader): every
    fact, masked line, error and note through the rules above."""
    code = detect(src).comments == "python"
    secrets_of = _line_secrets(src, code) if not src.is_binary() else (lambda _line: set())
    for f in ex.facts:
        withhold_fact(f, code, secrets_of(f.line) if f.line and f.path == src.name else frozenset())
    ex.masked = [_masked(m, code) for m in ex.masked]
    ex.errors = [_error(e) for e in ex.errors]
    ex.unread = [redact_text(u) for u in ex.unread]
    ex.notes = [redact_text(u) for u in ex.notes]
    return ex


def withhold_pair(res: PairResult, code: bool) -> PairResult:
    """A structural diff's result as it is cached and shown: its findings were made by
    finding.finding (withheld there); its masked lines and errors here."""
    res.masked = [_masked(m, code) for m in res.masked]
    res.errors = [_error(e) for e in res.errors]
    return res


def withhold_report(report) -> None:
    """Everything of `report` a writer shows besides its findings (made withheld), through the
    same rules: input errors and notes, masked lines, overview lines, verdict reasons, the
    hparams table's facts, the inputs' notes, additive JSON sections (the curves' series
    names). In place; running it twice changes nothing."""
    report.errors = [_error(e) for e in report.errors]
    report.masked = [_masked(m, is_code((m.npu or m.gpu).path if (m.npu or m.gpu) else None))
                     for m in report.masked]
    report.overview = [redact_text(x) for x in report.overview]
    report.verdicts = {k: (v[0], redact_text(v[1])) if isinstance(v, tuple) and len(v) == 2 else v
                       for k, v in report.verdicts.items()}
    for row in report.table:
        for f in row[1:3]:
            if isinstance(f, Fact):
                withhold_fact(f, is_code(f.path))
    for a in report.every_input():
        a.unread = [redact_text(u) for u in a.unread]
        a.notes = [redact_text(u) for u in a.notes]
    report.usage_errors = [redact_text(u) for u in report.usage_errors]
    report.json_extra = {k: _text_of(v, set()) for k, v in report.json_extra.items()}  # curves: series names


def withhold_tree(x):
    """A document as it may be written (a snapshot): in every string, at any depth, each
    secret part replaced by its fingerprinted marker (a URL keeps its host and path; a
    changed token still compares as changed)."""
    if isinstance(x, str):
        if x.lower().startswith(tuple(s + " " for s in _rules().schemes)):
            return withheld(x)
        return _replace(x, secret_spans(x), withheld)
    if isinstance(x, list):
        return [withhold_tree(y) for y in x]
    if isinstance(x, dict):
        return {k: withhold_tree(y) for k, y in x.items()}
    return x


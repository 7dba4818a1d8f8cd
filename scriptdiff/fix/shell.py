"""`scriptdiff fix` in launch scripts: byte spans from the tree-sitter-bash parse tree.

The reader recorded, for each option of a program it read (lang/shell/program.py,
`meta["shell"]`), its place among the program's options, the byte span of the flag word and
the span of its value where the value is written in one piece: in the command, in an array
or a string of flags, or in the assignment of the variable it came through (`TP=4` for
`--tensor-model-parallel-size "$TP"`). The editor changes those bytes and nothing else:

- a value: its span gets the new word, quoted as the place it sits in needs (inside double
  quotes, or a bare word);
- a flag the NPU side has and the GPU side not: its words are removed with what separates
  them from the word before (blanks, a newline, the `\\` of a continued line), so its line
  goes when it stood alone on one;
- a flag the GPU side has and the NPU side not: written after the option the GPU command has
  before it (else before the one after it), on a line of its own when its neighbour has one
  (with the same indentation, and a `\\` where the command continues over lines), else on
  the neighbour's line.

A value read through `${VAR:-default}` comes from the environment, one with an unresolved
variable or built from pieces is computed, a variable that also sets another option is
shared: each is refused with the reason. The parse tree says whether a span sits in a
string; the edited script must parse no worse than before.
"""
from __future__ import annotations

import re
from functools import lru_cache

from ..inputs import flags
from ..lang.shell import parse_tree
from ..model import ORIGIN_EXPLICIT, Fact
from .base import Edit, Refused, Request, char_offset, needs_spelling, number_text, refuse_unspelled, spelling

KIND = "shell"
_SAFE = re.compile(r"[A-Za-z0-9_./:,+=@%-]+")  # a word that needs no quotes anywhere


@lru_cache(maxsize=4)
def _tree(data: bytes):
    return parse_tree(data)


class _File:
    def __init__(self, req: Request):
        self.name = req.src.name
        self.text = req.src.text
        self.data = self.text.encode("utf-8")
        self.tree = _tree(self.data)

    def edit(self, a: int, b: int, new: bytes) -> Edit:
        return Edit(self.name, char_offset(self.data, a), char_offset(self.data, b), new.decode("utf-8"))

    def node_at(self, a: int, b: int):
        return self.tree.root_node.descendant_for_byte_range(a, b)

    def inside(self, a: int, b: int, *types: str):
        n = self.node_at(a, b)
        while n is not None:
            if n.type in types:
                return n
            n = n.parent
        return None


def _meta(f: Fact | None) -> dict:
    m = f.meta.get("shell") if f is not None else None
    if not isinstance(m, dict):
        raise Refused("not an option of a program the script starts (where it is written was not recorded); "
                      "edit it by hand", "no place")
    return m


def _why_not_one_piece(f: Fact, m: dict) -> Refused:
    if m.get("computed"):
        return Refused(f"computed by the launcher ({m['computed']}); set those options by hand", "computed")
    via = m.get("via") or []
    env = [v for v in via if str(v).startswith("${")]
    if env:
        return Refused(f"read from the environment ({env[0]}); set it where the NPU run starts", "environment")
    if f.meta.get("unresolved"):
        return Refused(f"built from ${f.meta['unresolved'][0]}, which the script does not set; edit it by hand",
                       "computed")
    if (m.get("values") or 0) > 1:
        return Refused("written as several words; edit it by hand", "computed")
    return Refused("computed, not written as one value (`$((...))`, pieces of several variables); edit it by hand",
                   "computed")


def _word(value, text: str | None = None) -> str:
    if text is not None:
        return text
    if isinstance(value, bool):
        return "true" if value else "false"
    n = number_text(value)
    if n is not None:
        return n
    if isinstance(value, str):
        return value
    raise Refused(f"{value!r} cannot be written as one shell word; edit it by hand")


def _quoted(fl: _File, a: int, b: int, word: str) -> bytes:
    """`word` as it must be written at bytes a..b: escaped inside double quotes, as it is inside
    single quotes (refused if it holds one), quoted where a bare word needs it."""
    if fl.inside(a, b, "raw_string"):
        if "'" in word:
            raise Refused("the new value holds a ' and sits in single quotes; edit it by hand")
        return word.encode("utf-8")
    if fl.inside(a, b, "string"):
        return re.sub(r'([\\"$`])', r"\\\1", word).encode("utf-8")
    if word and _SAFE.fullmatch(word):
        return word.encode("utf-8")
    return ('"' + re.sub(r'([\\"$`])', r"\\\1", word) + '"').encode("utf-8")


def _new_value(req: Request, m_npu: dict | None) -> str:
    """The word the NPU side gets: its own spelling (rules/fix.yaml), else the GPU's word for the
    same option, else the value written out."""
    g = req.gpu
    entry = spelling(req.key, req.written, req.value, KIND)
    if entry is not None and not entry.get("flag"):
        return _word(entry["npu"])
    raw = (m_npu or {}).get("value_text")
    if raw is not None and needs_spelling(req.key, raw):
        raise refuse_unspelled(req.key, req.written, req.value)
    gm = g.meta.get("shell") if g is not None else None
    if isinstance(gm, dict) and gm.get("values") == 1 and gm.get("value_text") is not None \
            and not g.meta.get("unresolved") and g.origin == ORIGIN_EXPLICIT \
            and (g.meta.get("written_key") == (req.fact.meta.get("written_key") if req.fact else None)
                 or req.fact is None):
        if needs_spelling(req.key, gm["value_text"]) and not (isinstance(req.value, bool)):
            raise refuse_unspelled(req.key, req.written, req.value)
        return gm["value_text"]
    return _word(req.value)


def set_value(req: Request) -> list[Edit]:
    f = req.fact
    m = _meta(f)
    fl = _File(req)
    if m.get("values") == 0:  # a bare flag: its presence is the value
        return _set_flag(req, fl, m)
    span = m.get("value")
    if not span:
        raise _why_not_one_piece(f, m)
    if any(str(v).startswith("${") for v in m.get("via") or []):
        raise _why_not_one_piece(f, m)
    shared = sorted({x.key for x in req.npu_facts if x is not f and x.path == f.path and x.key != f.key
                     and isinstance(x.meta.get("shell"), dict) and x.meta["shell"].get("value") == span})
    if shared:
        var = next((v for v in m.get("via") or [] if not str(v).startswith("$")), "the variable")
        raise Refused(f"${var} also sets {', '.join(shared)}: changing it would change them too; edit it by hand",
                      "ambiguous")
    a, b = span
    old = fl.data[a:b].decode("utf-8", "replace")
    if old != m.get("value_text") and not (m.get("value_text") or "").endswith(old):
        raise Refused("the value is not where it was read (the file changed?); run fix again", "file")
    word = _new_value(req, m)
    return [fl.edit(a, b, _quoted(fl, a, b, word))]


def _set_flag(req: Request, fl: _File, m: dict) -> list[Edit]:
    """A flag whose presence says the value (--bf16, --use-flash-attn, --no-load-rng)."""
    entry = spelling(req.key, req.written, req.value, KIND)
    if entry is not None and entry.get("flag"):  # --fp16 -> --bf16
        if not m.get("flag"):
            raise Refused("the flag is written through a variable; edit it by hand")
        a, b = m["flag"]
        return [fl.edit(a, b, entry["npu"].encode("utf-8"))]
    if isinstance(req.value, bool) or req.value is None:
        # the flag says the NPU value; without it the option takes its default, which is the GPU value
        return remove(req)
    raise Refused(f"a flag that says {req.fact.value!r}; scriptdiff knows no flag for {req.value!r} "
                  f"(rules/fix.yaml fix_spellings); edit it by hand")


def _extent(fl: _File, m: dict) -> tuple[int, int]:
    """Bytes of the option as written: its flag and value words."""
    if not m.get("flag"):
        raise Refused("the option is written through a variable or joined to one (--x=\"$V\"); edit it by hand")
    a, b = m["flag"]
    n = m.get("values") or 0
    f = flags.split(m.get("flag_text") or "")
    if n == 0 or f is None or f.value is not None:
        return a, b  # --flag, --k=v and k=v are one word
    span = m.get("value")
    if n == 1 and span and span[0] >= b and _gap(fl.data[b:span[0]]):
        return a, span[1]
    node = fl.node_at(a, b)
    while node is not None and node.parent is not None and node.parent.type not in ("command", "array"):
        node = node.parent
    if node is None or node.parent is None or node.start_byte != a:
        raise Refused("its value is not written beside it; edit it by hand")
    end = node.end_byte
    sib = node.next_named_sibling
    for _ in range(n):
        while sib is not None and sib.type == "comment":
            sib = sib.next_named_sibling
        if sib is None:
            raise Refused("its value is not written beside it; edit it by hand")
        end = sib.end_byte
        sib = sib.next_named_sibling
    return a, end


def _gap(b: bytes) -> bool:
    return all(c in b" \t=" for c in b.replace(b"\\\n", b""))


def remove(req: Request) -> list[Edit]:
    """The option's words go, with the blanks, newlines and line continuations before them back
    to the word before: `a \\\n  --x 1 \\\n  --y` becomes `a \\\n  --y`, the last option of a
    command takes the `\\` that continued into it along, an option alone in an array its line."""
    m = _meta(req.fact)
    fl = _File(req)
    a, e = _extent(fl, m)
    data = fl.data
    p = a
    while p > 0:
        c = data[p - 1:p]
        if c in (b" ", b"\t", b"\n", b"\r") or (c == b"\\" and data[p:p + 1] in (b"\n", b"\r")):
            p -= 1
            continue
        break
    return [fl.edit(p, e, b"")]


def add(req: Request) -> list[Edit]:
    g = req.gpu
    gm = _meta(g)
    fl = _File(req)
    words = _new_words(req, gm)
    mine = [x for x in req.npu_facts if x.path == req.src.name and isinstance(x.meta.get("shell"), dict)
            and x.meta.get("invocation") == g.meta.get("invocation") and x.origin == ORIGIN_EXPLICIT]
    by_key: dict[str, Fact] = {}
    for x in mine:
        by_key.setdefault(x.key, x)
    theirs = sorted((x for x in req.gpu_facts if x.path == g.path and isinstance(x.meta.get("shell"), dict)
                     and x.meta["shell"].get("word") is not None
                     and x.meta.get("invocation") == g.meta.get("invocation") and x.key != g.key),
                    key=lambda x: x.meta["shell"]["word"])
    here = gm.get("word")
    if here is None:
        raise Refused("an option of the launcher, not of the program; add it by hand", "no place")
    before = [x for x in theirs if x.meta["shell"]["word"] < here][::-1]
    after = [x for x in theirs if x.meta["shell"]["word"] > here]
    for side, group in (("after", before), ("before", after)):
        for x in group:
            anchor = by_key.get(x.key)
            if anchor is None:
                continue
            try:
                a, e = _extent(fl, anchor.meta["shell"])
            except Refused:
                continue
            return [_insert(fl, a, e, words, side)]
    raise Refused("no option of the NPU command was found next to where the GPU command has it; add it by hand",
                  "no place")


def _new_words(req: Request, gm: dict) -> str:
    written = gm.get("flag_text") or ""
    flag = flags.split(written)
    if flag is None:  # a Hydra override: path=value
        path = written.partition("=")[0]
        return f"{path}={_plain(_new_value(req, None))}"
    name = flag.option
    entry = spelling(req.key, req.gpu.meta.get("written_key"), req.value, KIND)
    if entry is not None and entry.get("flag"):
        return entry["npu"]
    if gm.get("values") == 0:
        return name
    if gm.get("values") != 1:
        raise Refused("written as several words on GPU; add it by hand", "computed")
    if req.gpu.meta.get("unresolved"):
        raise Refused(f"its GPU value comes from ${req.gpu.meta['unresolved'][0]}, unset in the script; add it by hand")
    return f"{name} {_plain(_new_value(req, None))}"


def _plain(word: str) -> str:
    if word and _SAFE.fullmatch(word):
        return word
    return '"' + re.sub(r'([\\"$`])', r"\\\1", word) + '"'


def _insert(fl: _File, a: int, e: int, words: str, side: str) -> Edit:
    """`words` after the option at bytes a..e (side "after") or before it."""
    data = fl.data
    ls = data.rfind(b"\n", 0, a) + 1
    le = data.find(b"\n", e)
    le = len(data) if le == -1 else le
    prefix, rest = data[ls:a], data[e:le]
    container = fl.inside(a, e, "array", "string", "raw_string")
    if container is not None and container.type != "array":
        if "'" in words and container.type == "raw_string" or '"' in words and container.type == "string":
            raise Refused("the new option needs quotes inside a quoted string; add it by hand")
    text = words.encode("utf-8")
    if prefix.strip() == b"" and rest.strip() in (b"", b"\\"):  # one option a line
        if rest.strip() == b"\\" or container is None:
            sep = b" \\\n" + prefix
        else:
            sep = b"\n" + prefix
        if side == "after":
            return fl.edit(e, e, sep + text)
        return fl.edit(a, a, text + sep)
    if side == "after":
        return fl.edit(e, e, b" " + text)
    return fl.edit(a, a, text + b" ")


def parses(old: str, new: str) -> str | None:
    """Why the edited script no longer parses (as its original did), or None."""
    before = _tree(old.encode("utf-8")).root_node.has_error
    after = _tree(new.encode("utf-8")).root_node.has_error
    if after and not before:
        return "the edited script does not parse as bash"
    return None

"""`scriptdiff fix` in YAML, JSON and TOML configs: span edits that keep comments, key order
and quoting.

The config readers record each fact's path in its file (`meta["cpath"]`). The editor of each
format asks its line-keeping loader where that path is written (yamlload.spans,
jsonload.spans_json, lang/toml.value_spans: the span of the key and of the value) and edits
those characters only:

- a value: the value's span gets the new value, in the quotes the NPU file already uses (a
  plain YAML scalar stays plain where YAML reads it back as the same value);
- a key the NPU file has and the GPU side not: its entry is removed (YAML and TOML: its
  lines; JSON: the entry and one comma);
- a key the GPU side has and the NPU file not: written after the key the GPU file has before
  it in the same mapping (else before the one after it), with that neighbour's indentation.

A value set by a switch (`fp16: true`, DeepSpeed's `fp16.enabled: true` say params_dtype =
fp16) is set the way the GPU file sets it when that file, of a format of the same editor, says
the key by a switch too: the NPU's switch gets the GPU file's value of it (off where the GPU
file has none) and the GPU's switch is turned on in the NPU file (added beside its neighbours
where the NPU file lacks it), so the pair flips together.

Refused with the reason: a value that is an interpolation (`${a.b}`), a switch the GPU side
does not answer with a switch, a computed value (`initial_scale_power`), a value inside a
flow collection or an inline array where an entry would be added or removed, a block scalar,
a section the NPU file lacks.
"""
from __future__ import annotations

import json
from typing import Any

from ..run.compare import equal
from ..model import ORIGIN_EXPLICIT, Fact
from ..ruleset.registry import detect, kind
from ..ruleset.vocabulary import convert, entry, normalize, value_ports
from .base import Edit, Refused, Request, copied, needs_spelling, number_text, ported, refuse_unspelled, spelling

_MISSING = object()


def cpath(f: Fact | None) -> tuple:
    p = f.meta.get("cpath") if f is not None else None
    if not isinstance(p, list) or not p:
        raise Refused("where the value is written in its file was not recorded; edit it by hand", "no place")
    return tuple(p)


def at(data: Any, path: tuple) -> Any:
    for step in path:
        if isinstance(data, dict) and step in data:
            data = data[step]
        elif isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data):
            data = data[step]
        else:
            raise Refused(f"{_dotted(path)} is not in the file any more (it changed?); run fix again", "file")
    return data


def _lookup(data: Any, path: tuple) -> Any:
    """The value at `path`, or _MISSING where the file does not write it."""
    try:
        return at(data, path)
    except Refused:
        return _MISSING


def _dotted(path: tuple) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else ("." if out else "") + str(p)
    return out


def check_plain(f: Fact, raw: Any) -> None:
    """The NPU fact is this raw value, read as itself: not an interpolation, a switch or a power."""
    if isinstance(raw, str) and "${" in raw:
        raise Refused(f"an interpolation ({raw.strip()}): fix the value it refers to", "computed")
    if isinstance(raw, (dict, list)):
        raise Refused("a section or a list, not one value; edit it by hand", "computed")
    if f.key in value_ports() or entry(f.key):
        conv = convert(f.key, raw)
        read = conv[1] if conv is not None else None
    else:
        read = normalize(raw, None)
    if not equal(read, f.value):
        raise Refused(f"{_dotted(cpath(f))} = {json.dumps(raw)} says {f.key} = {f.value!r} through a rule of its "
                      f"format (a switch or a computed value); set it by hand", "computed")


class Format:
    """One config format: its spans, its data and how it writes a value."""

    kind = ""

    def spans(self, text: str) -> dict:
        raise NotImplementedError

    def data(self, text: str) -> Any:
        raise NotImplementedError

    def value_span(self, info: dict) -> tuple[int, int] | None:
        raise NotImplementedError

    def scalar(self, value: Any, old: str | None) -> str:
        """`value` as this format writes it, in the quotes of `old` (the NPU's text) if it has some."""
        raise NotImplementedError

    def parses(self, old: str, new: str) -> str | None:
        raise NotImplementedError

    # ---------------------------------------------------------------------- the three edits

    def set_value(self, req: Request) -> list[Edit]:
        f = req.fact
        path = cpath(f)
        text = req.src.text
        raw = at(self.data(text), path)
        if isinstance(raw, bool) and not isinstance(f.value, bool) and self.gpu_raw(req) is True:
            return self.switches(req, path)
        check_plain(f, raw)
        info = self.spans(text).get(path)
        span = self.value_span(info) if info else None
        if span is None:
            raise Refused(f"{_dotted(path)} is not written as one value in this file (a block scalar, an alias, "
                          f"a multi-line value); edit it by hand")
        a, b = span
        return [Edit(req.src.name, a, b, self.new_text(req, raw, text[a:b]))]

    def switches(self, req: Request, path: tuple) -> list[Edit]:
        """The NPU says the key by the switch at `path` (`fp16: true`), the GPU file of a format
        of this editor by another (`bf16: true`): each of the two is set in the NPU file as the
        GPU file sets it (a switch the GPU file does not write is off), a switch the NPU file
        lacks is added where the GPU file has it."""
        g = req.gpu
        if req.gpu_src is None or detect(req.gpu_src).fixer != kind(self.kind).fixer:
            raise Refused(f"{_dotted(path)} = true says {req.key} = {req.fact.value!r} through a switch, and the GPU "
                          f"side says it in another format; set it by hand", "computed")
        gpath = cpath(g)
        gdata, data, text = self.data_of(req.gpu_src), self.data(req.src.text), req.src.text
        spans = self.spans(text)
        edits: list[Edit] = []
        for p in (path, gpath):
            want = _lookup(gdata, p)
            want = False if want is _MISSING else want
            have = _lookup(data, p)
            if not isinstance(want, bool) or (have is not _MISSING and not isinstance(have, bool)):
                raise Refused(f"{_dotted(p)} is not a switch (true or false) on both sides; set {req.key} by hand",
                              "computed")
            if have is _MISSING:
                if want:
                    edits += self.add(Request(key=req.key, value=True, src=req.src, kind=req.kind, gpu=g,
                                              gpu_src=req.gpu_src, npu_facts=req.npu_facts, gpu_facts=req.gpu_facts))
                continue
            info = spans.get(p)
            span = self.value_span(info) if info else None
            if span is None:
                raise Refused(f"{_dotted(p)} is not written as one value in this file; set {req.key} by hand")
            if have is not want:
                edits.append(Edit(req.src.name, span[0], span[1], self.scalar(want, text[span[0]:span[1]])))
        return edits

    def new_text(self, req: Request, raw: Any, old: str | None) -> str:
        """The new value's text: the NPU spelling (rules/fix.yaml), else the GPU file's own text
        of it (same format, same name, same quotes), else the value written in this format."""
        e = spelling(req.key, req.written, req.value, self.kind)
        if e is not None and not e.get("flag") and not e.get("code"):
            return self.scalar(e["npu"], old)
        graw = self.gpu_raw(req)
        if old is not None and needs_spelling(req.key, raw):
            token = self.gpu_token(req)  # the NPU writes it as the GPU file does: the GPU's word, if it runs there
            if token is None or not copied(req.key) or isinstance(graw, (dict, list)) or graw is None:
                raise refuse_unspelled(req.key, req.written, req.value)
            return token if self.quote(old) == self.quote(token) else self.scalar(graw, old)
        worded = graw is not None and needs_spelling(req.key, graw)
        token = self.gpu_token(req)
        if token is not None and not worded and (old is None or self.quote(old) == self.quote(token)):
            return token
        value = req.value
        if graw is not None and not isinstance(graw, (dict, list)) and not worded \
                and equal(normalize(graw, None), req.value):
            value = graw
        if ported(req.key) and not isinstance(value, bool):
            raise refuse_unspelled(req.key, req.written, req.value)
        return self.scalar(value, old)

    def quote(self, text: str) -> str:
        t = text.strip()
        return t[0] if t[:1] in ("'", '"') else ""

    def gpu_raw(self, req: Request) -> Any:
        g = req.gpu
        if g is None or req.gpu_src is None or g.origin != ORIGIN_EXPLICIT or "cpath" not in g.meta:
            return None
        try:
            return at(self.data_of(req.gpu_src), cpath(g))
        except Refused:
            return None

    def data_of(self, src) -> Any:
        try:
            return self.data(src.text)
        except Exception:
            raise Refused("the GPU file cannot be read again") from None

    def gpu_token(self, req: Request) -> str | None:
        """The GPU's text of the value, when the GPU file is of this format (a kind this editor
        edits: rules/kinds.yaml `fixer`) and writes the setting under the same name as the NPU side."""
        g, gs = req.gpu, req.gpu_src
        if g is None or gs is None or g.origin != ORIGIN_EXPLICIT or "cpath" not in g.meta:
            return None
        if detect(gs).fixer != kind(self.kind).fixer:
            return None
        gp = cpath(g)
        mine = req.fact.meta.get("cpath") if req.fact is not None else None
        if mine and str(gp[-1]) != str(mine[-1]):
            return None
        try:
            info = self.spans(gs.text).get(gp)
        except Exception:
            return None
        span = self.value_span(info) if info else None
        if span is None:
            return None
        token = gs.text[span[0]:span[1]]
        return token if "\n" not in token else None

    def remove(self, req: Request) -> list[Edit]:
        raise NotImplementedError

    def add(self, req: Request) -> list[Edit]:
        raise NotImplementedError

    # ---------------------------------------------------------------------- helpers for add

    def adding(self, req: Request) -> tuple[tuple, str, dict]:
        """(the GPU key's path, the NPU text, its spans) for adding a key to a mapping."""
        path = cpath(req.gpu)
        if any(isinstance(p, int) for p in path):
            raise Refused(f"{_dotted(path)} is inside a list; add it by hand", "no place")
        return path, req.src.text, self.spans(req.src.text)

    def gpu_siblings(self, req: Request, path: tuple) -> tuple[list, list]:
        """The keys the GPU file writes before and after `path` in the same mapping (nearest first)."""
        try:
            gspans = self.spans(req.gpu_src.text)
        except Exception:
            return [], []
        parent = path[:-1]
        sibs = sorted((self.order(info), p) for p, info in gspans.items()
                      if len(p) == len(path) and p[:-1] == parent and p != path and self.order(info) is not None)
        mine = self.order(gspans.get(path) or {})
        if mine is None:
            return [], [p for _o, p in sibs]
        return [p for o, p in sibs if o < mine][::-1], [p for o, p in sibs if o > mine]

    def order(self, info: dict) -> int | None:
        raise NotImplementedError


def number_or_none(v: Any) -> str | None:
    return number_text(v)

"""`scriptdiff fix` in JSON configs (DeepSpeed and others; scriptdiff/fix/config.py says how):
spans from jsonload.spans_json, so key order, layout and number spelling stay as written."""
from __future__ import annotations

import json
from typing import Any

from ..inputs.jsonload import JSONError, load_json, spans_json
from .base import Edit, Refused, Request, number_text
from .config import Format, _dotted, cpath

KIND = "json"


class Json(Format):
    kind = KIND

    def spans(self, text: str) -> dict:
        try:
            return {p: {"key": k, "value": (a, b)} for p, (k, a, b) in spans_json(text).items()}
        except JSONError as e:
            raise Refused(f"not valid JSON ({e}); fix it first", "file") from None

    def data(self, text: str) -> Any:
        try:
            return load_json(text)[0]
        except JSONError as e:
            raise Refused(f"not valid JSON ({e}); fix it first", "file") from None

    def value_span(self, info: dict) -> tuple[int, int] | None:
        return tuple(info["value"])

    def order(self, info: dict) -> int | None:
        return info.get("key")

    def scalar(self, value: Any, old: str | None) -> str:
        if self.quote(old or "") and isinstance(value, (int, float)) and not isinstance(value, bool):
            return json.dumps(number_text(value) or str(value))  # the NPU file writes it as a string
        if isinstance(value, bool) or value is None:
            return json.dumps(value)
        if isinstance(value, (int, float)):
            n = number_text(value)
            if n is None:
                raise Refused(f"{value!r} is no JSON number; edit it by hand")
            return n
        if isinstance(value, str):
            return json.dumps(value, ensure_ascii=False)
        raise Refused(f"{value!r} is not one JSON value; edit it by hand")

    def _entries(self, spans: dict, parent: tuple) -> list[tuple[tuple, dict]]:
        return sorted(((p, i) for p, i in spans.items() if len(p) == len(parent) + 1 and p[:-1] == parent
                       and i.get("key") is not None), key=lambda pi: pi[1]["key"])

    def remove(self, req: Request) -> list[Edit]:
        path = cpath(req.fact)
        text = req.src.text
        spans = self.spans(text)
        entries = self._entries(spans, path[:-1])
        k = next((n for n, (p, _i) in enumerate(entries) if p == path), None)
        if k is None:
            raise Refused(f"{_dotted(path)} is not a key of an object here; remove it by hand")
        info = entries[k][1]
        if k + 1 < len(entries):  # up to the next key: this entry, its comma and the space after it
            a, b = info["key"], entries[k + 1][1]["key"]
            la, lb = text.rfind("\n", 0, a) + 1, text.rfind("\n", 0, b) + 1
            if not text[la:a].strip() and not text[lb:b].strip() and lb > la:  # one entry a line: its lines
                a, b = la, lb
            return [Edit(req.src.name, a, b, "")]
        if k > 0:  # the last one: from the previous value's end (its comma goes)
            return [Edit(req.src.name, entries[k - 1][1]["value"][1], info["value"][1], "")]
        return [Edit(req.src.name, info["key"], info["value"][1], "")]

    def add(self, req: Request) -> list[Edit]:
        path, text, spans = self.adding(req)
        parent = spans.get(path[:-1])
        if parent is None or text[parent["value"][0]:parent["value"][0] + 1] != "{":
            raise Refused(f"the NPU file has no object {_dotted(path[:-1]) or '(top level)'} to add {_dotted(path)} "
                          f"to; add it by hand", "no place")
        entries = self._entries(spans, path[:-1])
        if not entries:
            raise Refused(f"{_dotted(path[:-1]) or 'the top level'} is empty on NPU; add {_dotted(path)} by hand")
        entry = f"{json.dumps(str(path[-1]), ensure_ascii=False)}: {self.new_text(req, None, None)}"
        sep = self._separator(text, parent, entries)
        before, after = self.gpu_siblings(req, path)
        have = {p: i for p, i in entries}
        for p in before:
            if p in have:
                end = have[p]["value"][1]
                return [Edit(req.src.name, end, end, "," + sep + entry)]
        for p in after:
            if p in have:
                k = have[p]["key"]
                return [Edit(req.src.name, k, k, entry + "," + sep)]
        raise Refused(f"no key of {_dotted(path[:-1]) or 'the top level'} was found next to where the GPU file "
                      f"has {_dotted(path)}; add it by hand", "no place")

    @staticmethod
    def _separator(text: str, parent: dict, entries: list) -> str:
        """What separates two entries of the object after the comma (a newline and indentation,
        or a space)."""
        if len(entries) >= 2:
            a, b = entries[0][1]["value"][1], entries[1][1]["key"]
            comma = text.find(",", a, b)
            return text[comma + 1:b] if comma != -1 else " "
        gap = text[parent["value"][0] + 1:entries[0][1]["key"]]
        return gap if gap.strip() == "" and gap else " "

    def parses(self, old: str, new: str) -> str | None:
        try:
            load_json(new)
        except JSONError as e:
            return f"not valid JSON after the edit ({e})"
        return None


_J = Json()
set_value, add, remove, parses = _J.set_value, _J.add, _J.remove, _J.parses

"""`scriptdiff fix` in YAML configs (scriptdiff/fix/config.py says how): spans from
yamlload.spans, so comments, key order and quoting stay as written."""
from __future__ import annotations

import json
from typing import Any

from ..inputs import yamlload
from .base import Edit, Refused, Request, number_text
from .config import Format, _dotted, cpath

KIND = "yaml"


def _safe_load(text: str) -> Any:
    return yamlload.load(text)[0]


class Yaml(Format):
    kind = KIND

    def spans(self, text: str) -> dict:
        try:
            return yamlload.spans(text)
        except yamlload.YAMLError as e:
            raise Refused(f"not valid YAML ({e}); fix it first", "file") from None

    def data(self, text: str) -> Any:
        try:
            return _safe_load(text)
        except yamlload.YAMLError as e:
            raise Refused(f"not valid YAML ({e}); fix it first", "file") from None

    def value_span(self, info: dict) -> tuple[int, int] | None:
        if info.get("block") or info.get("style") in ("|", ">"):
            return None
        return tuple(info["value"])

    def order(self, info: dict) -> int | None:
        k = info.get("key")
        return k[0] if k else None

    def scalar(self, value: Any, old: str | None) -> str:
        q = self.quote(old or "")
        if q and not isinstance(value, bool) and value is not None:
            s = value if isinstance(value, str) else self.plain(value)
            return json.dumps(s) if q == '"' else "'" + s.replace("'", "''") + "'"
        return self.plain(value)

    def plain(self, value: Any) -> str:
        if value is None or isinstance(value, bool):
            return {None: "null", True: "true", False: "false"}[value]
        if isinstance(value, (int, float)):
            n = number_text(value)
            if n is None:
                raise Refused(f"{value!r} cannot be written as a YAML number here; edit it by hand")
            mantissa, e, exp = n.partition("e")
            # YAML 1.1 (PyYAML) reads 1e-05 as a string: its float needs a dot before the exponent
            return f"{mantissa}.0e{exp}" if e and "." not in mantissa else n
        if isinstance(value, str):
            try:
                back = _safe_load(f"k: {value}\n")
            except Exception:
                back = None
            if isinstance(back, dict) and back.get("k") == value and value == value.strip() and "#" not in value:
                return value
            return json.dumps(value)
        raise Refused(f"{value!r} is not one YAML value; edit it by hand")

    def remove(self, req: Request) -> list[Edit]:
        path = cpath(req.fact)
        text = req.src.text
        spans = self.spans(text)
        info = spans.get(path)
        if info is None or info.get("flow") or not info.get("key"):
            raise Refused(f"{_dotted(path)} is not a key of a block mapping here; remove it by hand")
        siblings = [p for p in spans if len(p) == len(path) and p[:-1] == path[:-1] and p != path]
        if not siblings:
            raise Refused(f"{_dotted(path)} is the only key of its section; remove it by hand")
        ks = info["key"][0]
        ls = text.rfind("\n", 0, ks) + 1
        if text[ls:ks].strip():
            raise Refused(f"{_dotted(path)} shares its line with another key (`- key:`); remove it by hand")
        end = info["value"][1]
        if not text[end - 1:end] == "\n":
            nl = text.find("\n", end)
            end = len(text) if nl == -1 else nl + 1
        return [Edit(req.src.name, ls, end, "")]

    def add(self, req: Request) -> list[Edit]:
        path, text, spans = self.adding(req)
        parent = spans.get(path[:-1])
        if parent is None or not parent.get("block") or path[:-1] and parent.get("flow"):
            raise Refused(f"the NPU file has no block section {_dotted(path[:-1]) or '(top level)'} to add "
                          f"{_dotted(path)} to; add it by hand", "no place")
        before, after = self.gpu_siblings(req, path)
        gtext = req.gpu_src.text
        ginfo = self.spans(gtext).get(path) or {}
        key = gtext[ginfo["key"][0]:ginfo["key"][1]] if ginfo.get("key") else str(path[-1])
        value = self.new_text(req, None, None)
        for side, group in (("after", before), ("before", after)):
            for p in group:
                info = spans.get(p)
                if info is None or not info.get("key") or info.get("flow"):
                    continue
                ks = info["key"][0]
                ls = text.rfind("\n", 0, ks) + 1
                indent = text[ls:ks]
                if indent.strip():
                    continue
                line = f"{indent}{key}: {value}\n"
                if side == "before":
                    return [Edit(req.src.name, ls, ls, line)]
                end = info["value"][1]
                if text[end - 1:end] != "\n":
                    nl = text.find("\n", end)
                    if nl == -1:
                        return [Edit(req.src.name, len(text), len(text), "\n" + line.rstrip("\n"))]
                    end = nl + 1
                return [Edit(req.src.name, end, end, line)]
        raise Refused(f"no key of {_dotted(path[:-1]) or 'the top level'} was found next to where the GPU file "
                      f"has {_dotted(path)}; add it by hand", "no place")

    def parses(self, old: str, new: str) -> str | None:
        try:
            _safe_load(new)
        except yamlload.YAMLError as e:
            return f"not valid YAML after the edit ({e})"
        return None


_Y = Yaml()
set_value, add, remove, parses = _Y.set_value, _Y.add, _Y.remove, _Y.parses

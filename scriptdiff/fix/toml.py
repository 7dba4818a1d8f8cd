"""`scriptdiff fix` in TOML configs (scriptdiff/fix/config.py says how): spans from the TOML
reader's own walk over the file's lines (lang/toml.value_spans), so comments, order and
quoting stay as written. A value written over several lines, or an element of an array, is
refused."""
from __future__ import annotations

import json
from typing import Any

from ..inputs.jsonload import JSONError, check_depth
from ..lang.toml import tomllib, value_spans
from .base import Edit, Refused, Request, number_text
from .config import Format, _dotted, cpath

KIND = "toml"


class Toml(Format):
    kind = KIND

    def spans(self, text: str) -> dict:
        return value_spans(text)

    def data(self, text: str) -> Any:
        try:
            check_depth(text)
            return tomllib.loads(text)
        except (tomllib.TOMLDecodeError, JSONError) as e:
            raise Refused(f"not valid TOML ({str(e).splitlines()[0]}); fix it first", "file") from None

    def value_span(self, info: dict) -> tuple[int, int] | None:
        v = info.get("value")
        return tuple(v) if v else None

    def order(self, info: dict) -> int | None:
        k = info.get("key")
        return k[0] if k else None

    def scalar(self, value: Any, old: str | None) -> str:
        q = self.quote(old or "")
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float)):
            n = number_text(value)
            if n is None:
                raise Refused(f"{value!r} cannot be written as a TOML number here; edit it by hand")
            return json.dumps(n) if q else n
        if isinstance(value, str):
            if q == "'" and "'" not in value and "\n" not in value:
                return f"'{value}'"
            return json.dumps(value, ensure_ascii=False)
        raise Refused(f"{value!r} is not one TOML value; edit it by hand")

    def remove(self, req: Request) -> list[Edit]:
        path = cpath(req.fact)
        info = self.spans(req.src.text).get(path)
        if info is None or "line" not in info:
            raise Refused(f"{_dotted(path)} is not a `key = value` line here (an inline table or array?); "
                          f"remove it by hand")
        a, b = info["line"]
        return [Edit(req.src.name, a, b, "")]

    def add(self, req: Request) -> list[Edit]:
        path = cpath(req.gpu)
        gspans = self.spans(req.gpu_src.text)
        ginfo = gspans.get(path)
        if ginfo is None or "table" not in ginfo or "key" not in ginfo:
            raise Refused(f"{_dotted(path)} is not a `key = value` line on GPU; add it by hand")
        table = ginfo["table"]
        text = req.src.text
        spans = self.spans(text)
        if table not in spans:
            raise Refused(f"the NPU file has no table [{_dotted(table)}] to add {_dotted(path)} to; add it by hand", "no place")
        gtext = req.gpu_src.text
        key = gtext[ginfo["key"][0]:ginfo["key"][1]]
        value = self.new_text(req, None, None)
        before, after = self.gpu_siblings(req, path)
        for side, group in (("after", before), ("before", after)):
            for p in group:
                info = spans.get(p)
                if info is None or "line" not in info or info.get("table") != table:
                    continue
                a, b = info["line"]
                indent = text[a:info["key"][0]]
                line = f"{indent}{key} = {value}\n"
                if side == "after":
                    if not text[a:b].endswith("\n"):
                        return [Edit(req.src.name, b, b, "\n" + line.rstrip("\n"))]
                    return [Edit(req.src.name, b, b, line)]
                return [Edit(req.src.name, a, a, line)]
        end = spans[table]["end"]
        if end and text[end - 1:end] != "\n":
            return [Edit(req.src.name, end, end, f"\n{key} = {value}")]
        return [Edit(req.src.name, end, end, f"{key} = {value}\n")]

    def gpu_siblings(self, req: Request, path: tuple) -> tuple[list, list]:
        gspans = self.spans(req.gpu_src.text)
        table = (gspans.get(path) or {}).get("table")
        sibs = sorted((i["key"][0], p) for p, i in gspans.items()
                      if "key" in i and i.get("table") == table and p != path)
        mine = gspans[path]["key"][0]
        return [p for o, p in sibs if o < mine][::-1], [p for o, p in sibs if o > mine]

    def parses(self, old: str, new: str) -> str | None:
        try:
            tomllib.loads(new)
        except tomllib.TOMLDecodeError as e:
            return f"not valid TOML after the edit ({str(e).splitlines()[0]})"
        return None


_T = Toml()
set_value, add, remove, parses = _T.set_value, _T.add, _T.remove, _T.parses

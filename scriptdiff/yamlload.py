"""Safe YAML loading that keeps line numbers.

`load(text)` returns `(data, lines)` where `data` is plain Python (dict, list, str, int,
float, bool, None) built with PyYAML's *safe* constructors only, and `lines` maps each
path (a tuple of keys and list indices) to the 1-based line where its value starts (for a
mapping key: the line of the key). Used for config files and for the rule packs, so that
an error in either can point at a line.
"""
from __future__ import annotations

from typing import Any

import yaml

try:  # the C loader is much faster where PyYAML was built with libyaml
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _Loader


class YAMLError(Exception):
    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


def load(text: str) -> tuple[Any, dict[tuple, int]]:
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        problem = e.problem or e.context or "invalid YAML"
        raise YAMLError(f"line {line}: {problem}" if line else problem, line) from None
    except yaml.YAMLError as e:
        raise YAMLError(str(e).splitlines()[0]) from None
    except RecursionError:
        raise YAMLError("nested too deeply") from None
    lines: dict[tuple, int] = {}
    if node is None:
        return None, lines
    constructor = yaml.SafeLoader("")  # only used for its safe scalar constructors

    def build(n, path: tuple, depth: int = 0):
        if depth > 200:
            raise YAMLError("nested too deeply", n.start_mark.line + 1)
        lines.setdefault(path, n.start_mark.line + 1)
        if isinstance(n, yaml.MappingNode):
            constructor.flatten_mapping(n)
            out = {}
            for k, v in n.value:
                key = constructor.construct_object(k, deep=True) if isinstance(k, yaml.ScalarNode) else str(k.value)
                if isinstance(key, (list, dict)):
                    key = str(key)
                lines[path + (key,)] = k.start_mark.line + 1
                out[key] = build(v, path + (key,), depth + 1)
            return out
        if isinstance(n, yaml.SequenceNode):
            return [build(v, path + (i,), depth + 1) for i, v in enumerate(n.value)]
        try:
            return constructor.construct_object(n, deep=True)
        except yaml.constructor.ConstructorError as e:
            raise YAMLError(f"line {n.start_mark.line + 1}: {e.problem}", n.start_mark.line + 1) from None

    try:
        data = build(node, ())
    except RecursionError:
        raise YAMLError("nested too deeply") from None
    return data, lines

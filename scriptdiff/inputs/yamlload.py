"""Safe YAML loading that keeps line numbers.

`load(text)` returns `(data, lines)` where `data` is plain Python (dict, list, str, int,
float, bool, None) built with PyYAML's *safe* constructors only, and `lines` maps each
path (a tuple of keys and list indices) to the 1-based line where its value starts (for a
mapping key: the line of the key). Used for config files and for the rule packs, so that
an error in either can point at a line: the packs' checker (scriptdiff.ruleset.packschema.Positions)
reports each node of a section at the line this table gives its path.

Aliases are expanded into plain data, so a few hundred bytes of anchors that refer to
anchors (a "billion laughs" file) would become billions of values. Before anything is
built, the composed node graph is measured (each node once, aliases and merge keys
counted at their expanded size) and a document that would expand beyond
`node_budget(len(text))` nodes is refused with one YAMLError. The budget is above what any
file without aliases can hold (a node takes at least two characters), so only alias
expansion can exceed it.
"""
from __future__ import annotations

import sys
from typing import Any

from .. import budget


def _yaml():
    """PyYAML, imported when a document is first read (10 ms: a run that reads no YAML, its
    rule packs coming from their snapshot, never pays it)."""
    mod = sys.modules.get("yaml")
    if mod is None:
        import yaml as mod
    return mod


def _loader():
    yaml = _yaml()
    return getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader  # the C loader where PyYAML has libyaml


def node_budget(size: int) -> int:
    """How many expanded nodes a document of `size` characters may build."""
    return budget.YAML_NODES + size // 2


class Nodes:
    """What several documents may hold together, in nodes (the user's rule packs:
    budget.PACK_NODES): each `load` given it takes its document's size from `left`, and
    refuses a document larger than what is left. `whose` names the documents in the message."""

    def __init__(self, limit: int, whose: str):
        self.limit = self.left = limit
        self.whose = whose


class YAMLError(Exception):
    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


def later_key(k: int) -> str:
    """The key a config's k-th YAML document (k >= 2) is read under (`documents=True`)."""
    return f"document_{k}"


def _documents(yaml, text: str, loader):
    """The composed documents of a multi-document stream whose documents are all mappings, as
    one mapping node: the first document's entries, then each later one under `document_K`.
    None when the stream holds one document or another shape (the single-document path)."""
    docs = list(yaml.compose_all(text, Loader=loader))
    if len(docs) < 2 or not all(d is None or isinstance(d, yaml.MappingNode) for d in docs) or docs[0] is None:
        return None
    first = docs[0]
    entries = list(first.value)
    for k, d in enumerate(docs[1:], start=2):
        if d is None:
            continue
        key = yaml.ScalarNode("tag:yaml.org,2002:str", later_key(k), d.start_mark, d.start_mark)
        entries.append((key, d))
    return yaml.MappingNode(first.tag, entries, first.start_mark, docs[-1].end_mark or first.end_mark,
                            flow_style=first.flow_style)


def load(text: str, nodes: Nodes | None = None, documents: bool = False) -> tuple[Any, dict[tuple, int]]:
    """`nodes`: the document takes its size (nodes, aliases expanded) from what is left of it,
    however long its text; over it, one YAMLError before anything is built. `documents`: a
    stream of several mappings (`---` between them: a model zoo's settings, then their
    descriptions) is read as the first one's entries with each later one under `document_K`
    (its lines kept); a config reads that way, a rule pack holds one document."""
    yaml = _yaml()
    try:
        if nodes is not None and _events_over(yaml, text, nodes.left):  # composing costs ten times parsing
            raise YAMLError(_over(nodes, nodes.left))
        try:
            node = yaml.compose(text, Loader=_loader())
        except yaml.composer.ComposerError as e:
            node = _documents(yaml, text, _loader()) if documents and "another document" in str(e) else None
            if node is None:
                raise
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
    allowed = node_budget(len(text))
    cap = allowed if nodes is None else min(allowed, nodes.left)
    size = expanded_size(node, cap)
    if size > cap:
        if cap < allowed:
            raise YAMLError(_over(nodes, cap))
        raise YAMLError(f"aliases expand beyond {allowed:,} nodes (a billion-laughs file?)")
    if nodes is not None:
        nodes.left -= size
    constructor = yaml.SafeLoader("")  # only used for its safe scalar constructors

    def build(n, path: tuple, depth: int = 0):
        if depth > budget.DOCUMENT_DEPTH:
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


def _over(nodes: Nodes, left: int) -> str:
    return (f"more than the {left:,} nodes (keys, values and list items, aliases expanded) left of the "
            f"{nodes.limit:,} {nodes.whose} may hold together")


def _events_over(yaml, text: str, left: int) -> bool:
    """Whether the document's parse events hold more than `left` nodes (each scalar, list,
    mapping and alias is one; an alias's expansion is counted once composed): read before
    composing, which for a 4 MB document of 600,000 nodes takes 8 s where parsing takes 0.6."""
    kinds = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.AliasEvent)
    n = 0
    for event in yaml.parse(text, Loader=_loader()):
        if isinstance(event, kinds):
            n += 1
            if n > left:
                return True
    return False


def spans(text: str) -> dict[tuple, dict]:
    """Where each path of a YAML document is written, for editing it in place (`scriptdiff fix`):
    path -> {"key": (start, end) of its key or None (a list element, the root), "value": (start,
    end) of its value, "style": the scalar's quoting (None plain, "'", '"', "|", ">"), "flow":
    whether it sits in a flow collection ({a: 1}, [1, 2]), "block": whether the value is a block
    mapping or sequence}, character offsets into `text`. Read by PyYAML's pure-Python composer
    (its marks count characters). A node reached twice (an anchor and its aliases) is left out
    with what is under it, and so is what a merge key (`<<:`) brings: none of it is written at
    one path. Raises YAMLError as `load` does."""
    yaml = _yaml()
    try:
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.composer.ComposerError as e:  # several documents: as `load(documents=True)` reads them
            node = _documents(yaml, text, yaml.SafeLoader) if "another document" in str(e) else None
            if node is None:
                raise
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise YAMLError(f"line {mark.line + 1}: {e.problem or e.context}" if mark else str(e),
                        mark.line + 1 if mark else None) from None
    except (yaml.YAMLError, RecursionError) as e:
        raise YAMLError(str(e).splitlines()[0] if str(e) else "invalid YAML") from None
    out: dict[tuple, dict] = {}
    if node is None:
        return out
    seen: set[int] = set()
    shared: set[int] = set()  # nodes reached twice: an anchor and its aliases
    ids: dict[tuple, int] = {}
    stack = [(node, (), None, False)]
    while stack:
        n, path, key, flow = stack.pop()
        if len(path) > budget.DOCUMENT_DEPTH:
            continue
        if id(n) in seen:
            shared.add(id(n))
            continue
        seen.add(id(n))
        ids[path] = id(n)
        block = isinstance(n, (yaml.MappingNode, yaml.SequenceNode)) and not n.flow_style
        out[path] = {"key": key, "value": (n.start_mark.index, n.end_mark.index),
                     "style": getattr(n, "style", None) if isinstance(n, yaml.ScalarNode) else None,
                     "flow": flow, "block": block}
        inner = flow or (isinstance(n, (yaml.MappingNode, yaml.SequenceNode)) and bool(n.flow_style))
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                if not isinstance(k, yaml.ScalarNode) or k.tag == "tag:yaml.org,2002:merge":
                    continue
                stack.append((v, path + (k.value,), (k.start_mark.index, k.end_mark.index), inner))
        elif isinstance(n, yaml.SequenceNode):
            stack.extend((v, path + (i,), None, inner) for i, v in enumerate(n.value))
    bad = {p for p, i in ids.items() if i in shared}
    if bad:  # neither the anchor nor an alias is one place: what is under them is not either
        out = {p: v for p, v in out.items() if not any(p[:k] in bad for k in range(len(p) + 1))}
    return out


def expanded_size(root, cap: int) -> int:
    """How many nodes `root` becomes once every alias and merge key is expanded, counting
    each distinct node once (memoised: the graph is a DAG) and stopping above `cap`.
    Iterative, so a deep document cannot overflow the stack here. PyYAML composes
    `&a [*a]` into a node that contains itself: that is a YAMLError."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the current path
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            open_nodes.discard(nid)
            total = 1
            for child in _children(node):
                total = min(total + sizes[id(child)], cap + 1)
            sizes[nid] = total
        elif nid not in sizes:
            if nid in open_nodes:
                raise YAMLError("an anchor contains an alias to itself (a recursive alias)")
            open_nodes.add(nid)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))
    return sizes[id(root)]


def _children(node) -> list:
    yaml = sys.modules["yaml"]  # imported by load(), which composed the node
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []

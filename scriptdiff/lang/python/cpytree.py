"""CPython's tree of a file's whole text, parsed once however many readers ask for it.

Three readers of a Python pair want CPython's tree of the same whole text: the focus plan
(focus.py, the top-level statements), the structural parser's guard (parse.py, before libcst
is given the file) and the relevance flow (relevance.py, following values). Each parsed it
again (about 65 ms for a 3,000-line file). `whole()` keeps the trees of the last two texts
it parsed (a pair's two files), keyed by the text itself, so a pair's files are parsed once
each; a part of a file (a focused text, the middle of the NPU side) is parsed where it is
read, never kept. What is kept is bounded (`budget.TREE_MEMO_BYTES` of text, about 80 times that
in trees); a larger file is parsed by each reader, as before. The trees are read, never changed,
by every caller. A failure (a syntax
error, a tree too deep) is raised to each caller as `ast.parse` raises it, never kept.
"""
from __future__ import annotations

import ast
import warnings

from ... import budget

KEPT = 2  # a pair's two files
_MEMO: dict[str, ast.Module] = {}  # text -> its tree, oldest first


def whole(text: str) -> ast.Module:
    """`ast.parse(text)` (its warnings silenced: the analysed file's invalid escapes are its
    own business), from the memo when this text was the last or the one before."""
    tree = _MEMO.pop(text, None)
    if tree is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    if len(text) > budget.TREE_MEMO_BYTES:  # a tree is about 80 times its text: not kept
        return tree
    _MEMO[text] = tree  # the newest last
    while len(_MEMO) > KEPT or sum(map(len, _MEMO)) > budget.TREE_MEMO_BYTES:
        del _MEMO[next(iter(_MEMO))]
    return tree


def clear() -> None:
    _MEMO.clear()

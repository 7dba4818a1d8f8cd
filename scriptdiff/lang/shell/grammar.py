"""The tree-sitter-bash parser, built once: the evaluator reads scripts with it, and the
expander reads again what tree-sitter leaves as other text (words.py)."""
from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def parser():
    """The tree-sitter-bash parser (ImportError or OSError when it is not installed)."""
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))

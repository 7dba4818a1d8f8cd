"""The Python reader (libcst), in rooms: `reader` (the kind's extract and diff_pair),
`parse`, `spans` and `guard` (one parse per file, on a big stack, measured first),
`facts` and `values` (settings), `focus` (a pair read by its difference; CPython's ast
only), and for a pair `align`, `nodediff`, `classify`, `port`, which share `pair.PairState`.

This file imports nothing: `lang.python.focus` is imported ahead of libcst (rules/kinds.yaml).
"""

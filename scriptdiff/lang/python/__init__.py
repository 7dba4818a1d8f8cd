"""The Python reader (libcst), in rooms: `reader` (the kind's extract and diff_pair),
`parse`, `spans` and `guard` (one parse per file, on a big stack, measured first),
`evaluate` (the one evaluator of values: device tests, constants, defaults, each value's kind),
`specialise` with its walk `decider` and its rewrite `rewrite` (each side as its device runs it),
`facts` and `values` (settings), `cmdline` (the command line a program's parser accepts),
`focus` (a pair read by its difference; CPython's ast only), and for a pair `align`,
`nodediff`, `classify`, `port`, `devicecode`, which share `pair.PairState`.

This file imports nothing: `lang.python.focus` is imported ahead of libcst (rules/kinds.yaml).
"""

"""CPython's cycle collector kept off the trees a unit of work builds.

A structural read allocates millions of small objects (libcst's nodes, the indexes over them)
that live until the unit ends, and the cycle collector walks them again at every young and
every full collection: about a quarter of a 3,000-line pair's time, for almost no garbage.
During a unit the collector is off (reference counting still frees at once whatever is not
part of a cycle). After it:

- in a process that ends with its command (`scriptdiff.COMMAND_PROCESS`: the command line,
  a worker forked from it), a unit that left more than `budget.FREEZE_OBJECTS` new objects (a parsed
  Python file: 400,000 for a 3,000-line pair) has them frozen (`gc.freeze`): never walked
  again, still freed by reference counting. What would keep such a tree alive through a
  reference cycle is broken where it is made (lang/python/parse.py `Parsed.release`, the pair's
  parts at the end of lang/python/reader.py `compare`), so a frozen tree is freed when the
  reader lets it go (tests/test_parse_once.py);
- otherwise (a small unit: a launch script, a config, a short module; or the library called
  by a long-lived program) the collector is turned back on and collects as usual.

Nested pauses keep the outer state.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager

import scriptdiff

from .. import budget


@contextmanager
def paused():
    was = gc.isenabled()
    before = gc.get_count()[0]  # objects the collector tracks, net of those freed, since its last run
    gc.disable()
    try:
        yield
    finally:
        if was:
            if scriptdiff.COMMAND_PROCESS and gc.get_count()[0] - before > budget.FREEZE_OBJECTS:
                gc.freeze()
            gc.enable()

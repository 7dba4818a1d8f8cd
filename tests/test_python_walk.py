"""One walk of a module answers the passes after the diff (issue 42: a libcst visitor pass per
question cost a third of a parse each): what it finds, and in the order of the text."""
from __future__ import annotations

import libcst as cst

from scriptdiff.lang.python.parse import node_index, parse
from scriptdiff.lang.python.regions import calls_of

SRC = '''import torch.cuda.amp as amp
from orbit.util import helper


@register(name_of("x"))
def step(batch, lr=scale(2)):
    y = first(batch) if check(batch) else other(batch)
    return torch.cuda.amp.autocast(dtype=y.dtype), helper.call("msg")
'''


def names(nodes) -> list:
    return [cst.Module([]).code_for_node(n) for n in nodes]


def test_the_calls_of_a_statement_come_in_the_order_of_the_text():
    fn = cst.parse_module(SRC).body[2]
    assert [cst.Module([]).code_for_node(c.func) for c in calls_of(fn)] == [
        "register", "name_of", "scale", "first", "check", "other", "torch.cuda.amp.autocast", "helper.call"]


def test_one_walk_finds_calls_chains_attributes_names_strings_and_imports():
    p = parse("step.py", SRC)
    ix = node_index(p)
    assert node_index(p) is ix  # built once
    assert len(ix.imports) == 2
    assert sorted(names(ix.calls)) == sorted(["register(name_of(\"x\"))", 'name_of("x")', "scale(2)", "first(batch)",
                                              "check(batch)", "other(batch)", "torch.cuda.amp.autocast(dtype=y.dtype)",
                                              'helper.call("msg")'])
    chains = set(names(ix.chains))  # outermost names and attributes, imports left out
    assert {"torch.cuda.amp.autocast", "helper.call", "y.dtype", "register", "step", "lr"} <= chains
    assert "torch.cuda.amp" not in chains and "amp" not in chains and "orbit.util" not in chains
    assert "torch.cuda.amp" in names(ix.attributes) and "orbit.util" not in names(ix.attributes)
    assert {"amp", "orbit", "helper", "batch"} <= {n.value for n in ix.names}  # imports included
    assert sorted(s.evaluated_value for s in ix.strings) == ["msg", "x"]
    assert [cst.Module([]).code_for_node(a.targets[0].target) for a in ix.assigns] == ["y"]

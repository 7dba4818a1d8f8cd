"""Megatron / MindSpeed training logs: the `arguments` block printed at start-up.

Megatron prints every argument once, typed, between
`------------------------ arguments ------------------------` and
`-------------------- end of arguments ---------------------`, one per line as
`  name ........ value` (often behind a timestamp or rank prefix). These are the effective
values the run used, so they outrank the launch scripts and configs (RANK_LOG). Values are
Python literals (read with ast.literal_eval, never evaluated); `None` means unset and is
skipped. A log without the block gives one errors entry.
"""
from __future__ import annotations

import ast

from ..model import RANK_LOG, Extract, Fact, InputError
from ..ruleset.vocabulary import canonical_flag, convert

START = "------------------------ arguments ------------------------"
END = "-------------------- end of arguments ---------------------"
SKIP = {"bf16", "fp16"}  # params_dtype carries them


def parse_value(tok: str):
    tok = tok.strip()
    try:
        return ast.literal_eval(tok)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return tok  # e.g. torch.bfloat16, AttnMaskType.causal


def block(lines: list[str]):
    """(line number, name, value text) for each line of the first arguments block."""
    start = None
    for i, ln in enumerate(lines):
        if START in ln:
            start = i
            break
    if start is None:
        return None
    out = []
    for j in range(start + 1, len(lines)):
        ln = lines[j]
        if END in ln:
            break
        k = ln.find(" ..")
        if k < 0:
            continue
        head = ln[:k].split()
        if not head:
            continue
        name = head[-1]
        value = ln[k:].lstrip(" .")
        if ln[k:].strip(" .") == "" and not value:
            continue
        out.append((j + 1, name, value))
    return out


def extract(src, ctx):
    ex = Extract()
    lines = src.text.splitlines()
    items = block(lines)
    if items is None:
        ex.errors.append(InputError(src.name, "no Megatron 'arguments' block found in the log; nothing compared"))
        return ex
    ex.frameworks.add("megatron")
    for line, name, tok in items:
        if name in SKIP:
            continue
        value = parse_value(tok)
        if value is None:
            continue
        key = canonical_flag(name) or name
        conv = convert(key, value)
        if conv is None:
            continue
        key, value = conv
        ex.facts.append(Fact(key=key, value=value, path=src.name, line=line, source=lines[line - 1].strip(),
                             rank=RANK_LOG))
    return ex

"""Training logs: the settings a run reports about itself (evidence, issue 44).

A run prints what it did: Megatron / MindSpeed their `arguments` block, the Hugging Face
Trainer its `TrainingArguments(...)`, DeepSpeed its engine configuration, PEFT its parameter
counts. Each format is a small line grammar declared as data (rules/evidence.yaml
`run_logs`: the line that opens a block, the one that closes it, how one setting is written),
read here in one pass per format; the first block of each format in a file is read. These are
the effective values the run used, so they outrank the launch scripts and configs (RANK_LOG),
and each fact says which block it came from (`meta["evidence"]`): checks/evidence.py compares
them with what the side's scripts set. Values are Python literals where they parse as one
(ast.literal_eval, never evaluated), else text; `None` means unset and is skipped. A log with
none of the blocks gives one errors entry.
"""
from __future__ import annotations

import ast

from ..model import RANK_LOG, Extract, Fact, InputError
from ..ruleset.rules import derived
from ..ruleset.vocabulary import canonical_flag, convert, vocab


@derived
def formats(rs) -> dict[str, dict]:
    """name -> the format's grammar (rules/evidence.yaml `run_logs`), in the packs' order."""
    return dict(rs.section("run_logs") or {})


def parse_value(tok: str):
    tok = tok.strip()
    try:
        return ast.literal_eval(tok)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return tok  # e.g. torch.bfloat16, AttnMaskType.causal, /tmp/out


def _item(fmt: dict, ln: str) -> tuple[str, str] | None:
    """(name, value text) of one line of a block, by the format's item grammar; None when the
    line holds no setting (a continuation of a multi-line value, a blank line)."""
    if fmt["item"] == "dots":
        k = ln.find(" ..")
        if k < 0:
            return _bare(ln) if fmt.get("bare") else None
        head = ln[:k].split()
        value = ln[k:].lstrip(" .")
        return (head[-1], value) if head and value else None
    name, eq, value = ln.strip().partition("=")
    if not eq or not name or " " in name.strip():
        return None
    return name.strip(), value.strip().removesuffix(",")


def _bare(ln: str) -> tuple[str, str] | None:
    """`  name  value`: a name as long as the dots' column, printed with no dots (DeepSpeed's
    `train_micro_batch_size_per_gpu  2`): the first name followed by two spaces and a value."""
    k = ln.find("  ")
    while k >= 0:
        head = ln[:k].split()
        if head and ln[k - 1] != " " and head[-1].isidentifier() and ln[k:].strip():
            return head[-1], ln[k:].strip()
        k = ln.find("  ", k + 1)
    return None


def block(lines: list[str], fmt: dict):
    """(line number, name, value text) for each setting of the format's first block, or None
    when the file has no such block."""
    start = next((i for i, ln in enumerate(lines) if fmt["start"] in ln), None)
    if start is None:
        return None
    if fmt["item"] == "fields":  # one line: `name: value || name: value`
        ln = lines[start]
        out = []
        for part in ln[ln.find(fmt["start"]):].split(fmt["separator"]):
            name, colon, value = part.partition(":")
            if colon and name.strip() and value.strip():
                out.append((start + 1, name.strip(), value.strip()))
        return out
    out = []
    for j in range(start + 1, len(lines)):
        ln = lines[j]
        if ("end" in fmt and fmt["end"] in ln) or ("end_line" in fmt and ln.strip() == fmt["end_line"]):
            break
        got = _item(fmt, ln)
        if got is not None:
            out.append((j + 1, *got))
    return out


def _value(fmt: dict, tok: str):
    if fmt.get("numbers"):
        tok = tok.replace(",", "")
    for prefix in fmt.get("enums", ()):  # SchedulerType.COSINE -> cosine
        if tok.startswith(prefix + ".") and tok[len(prefix) + 1:].isidentifier():
            return tok[len(prefix) + 1:].lower()
    return parse_value(tok)


def settings(fmt: dict, name: str, value) -> list[tuple[str, object]]:
    """The (key, value) pairs one written setting of a block stands for: its switch, its
    name's key (the format's `names`, else the vocabulary's spelling of its framework), the
    value converted as the vocabulary converts it; none for a skipped or unset one."""
    if name in fmt.get("skip", ()) or value is None:
        return []
    if name in fmt.get("switches", {}):
        return list(fmt["switches"][name].items()) if value is True else []
    key = fmt.get("names", {}).get(name)
    if key is None:
        key = canonical_flag(name, prefer="hf" if fmt.get("framework") == "hf" else "megatron") or name
    if ":" in key:  # not a setting of the vocabulary (a count): as read
        return [(key, value)]
    if fmt.get("known_only") and key not in vocab():  # a printed field no script names (_n_gpu)
        return []
    conv = convert(key, value)
    return [] if conv is None else [conv]


def extract(src, ctx):
    ex = Extract()
    lines = src.text.splitlines()
    found = False
    for fmt in formats().values():
        items = block(lines, fmt)
        if items is None:
            continue
        found = True
        if fmt.get("framework"):
            ex.frameworks.add(fmt["framework"])
        def fact(key, value, line, name):
            return Fact(key=key, value=value, path=src.name, line=line, source=lines[line - 1].strip(), rank=RANK_LOG,
                        meta={"evidence": fmt["title"], "written": name})

        made: list[Fact] = []
        off: dict[str, tuple[int, str]] = {}  # a key whose switches were printed: the first one's line and name
        for line, name, tok in items:
            made += [fact(key, value, line, name) for key, value in settings(fmt, name, _value(fmt, tok))]
            for key in fmt.get("switches", {}).get(name, {}):
                off.setdefault(key, (line, name))
        for key, value in (fmt.get("switches_off") or {}).items():  # every switch printed off: the default
            if key in off and not any(f.key == key for f in made):
                made.append(fact(key, value, *off[key]))
        ex.facts += made
    if not found:
        ex.errors.append(InputError(src.name, "no Megatron 'arguments' block (nor another block of settings a run "
                                              "prints: rules/evidence.yaml) found in the log; nothing compared"))
    return ex

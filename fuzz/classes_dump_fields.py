"""Fuzz class of msprobe dumps whose fields are of the wrong type (`scriptdiff dumps`, issue 40).

Registered by fuzz_cli.py (one block there). Each input is two copies of a real dump
(fixtures/dumps/base: 194 calls, statistics) with one to three values of one call made
hostile, on the NPU side only or on both sides alike:

  stat        a Max, Min, Mean or Norm that is an object, a list, true/false or a word
  dtype       a dtype that is a number, a list or an object
  shape       a shape that is a word, a number, an object or holds a negative size or a word
  md5         an md5 that is a number
  bare        a tensor or an argument replaced by a bare number, word or true (msprobe describes
              every value: {"type": "int", "value": 3})
  section     an `output` or `input_args` that is a number or a word
  record      a call's whole record that is a number, a list or a word
  nan         a statistic that is NaN on both sides
  empty       both dumps without a call

What a run must show (its own `run` judges it): never agreement. The exit status is 1 (never
0, never 2: the rest of the dump is read), and the JSON report holds an SD810 finding whose
message names the call (or, for `empty`, says that nothing was compared). The intact pair
(one input in ten, `intact`) must be equal with exit 0: the check can tell.
"""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

CLASSES = ("dump-fields",)
ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "fixtures" / "dumps" / "base" / "dump" / "step0" / "rank0"
SHAPES = ("stat", "dtype", "shape", "md5", "bare", "section", "record", "nan", "empty", "intact")
STATS = ("Max", "Min", "Mean", "Norm")


def _base() -> dict:
    return json.loads((BASE / "dump.json").read_text(encoding="utf-8"))


def _tensors(rec) -> list[tuple[object, object]]:
    """(container, key) of every tensor description in a call's record."""
    out = []
    stack = [rec]
    while stack:
        v = stack.pop()
        items = list(v.items()) if isinstance(v, dict) else list(enumerate(v)) if isinstance(v, list) else []
        for k, x in items:
            if isinstance(x, dict) and "dtype" in x and "shape" in x:
                out.append((v, k))
            elif isinstance(x, (dict, list)):
                stack.append(x)
    return out


HOSTILE = {
    "stat": [{"a": 1}, [1.0], True, False, "many", {"value": 1.0}],
    "dtype": [7, ["torch.float32"], {"name": "float32"}, 1.5],
    "shape": ["x", 4, {"0": 2}, [2, -4], [2, "a"], [2, 1.5], [True]],
    "md5": [5, ["0a1b"], {"h": 1}],
    "bare": [3, "x", True, 2.5],
    "section": [5, "out", 1.5, True],
    "record": [7, ["x"], "call", True],
}


def make_case(cls: str, rng: random.Random, small: bool, Case):
    shape = rng.choice(SHAPES)
    g, n = _base(), _base()
    both = rng.random() < 0.3
    names = [k for k, rec in n["data"].items() if _tensors(rec)]
    call = rng.choice(names)
    if shape == "empty":
        g["data"], n["data"] = {}, {}
    elif shape != "intact":
        places = _tensors(n["data"][call])
        edits = [(rng.randrange(len(places)), rng.choice(STATS), rng.choice(HOSTILE.get(shape, [None])))
                 for _ in range(rng.choice([1, 1, 2, 3]))]
        section = rng.choice(HOSTILE["section"])
        for doc in (g, n) if both or shape == "nan" else (n,):  # the same edits on each side edited
            rec = doc["data"][call]
            mine = _tensors(rec)
            for i, stat, value in edits:
                box, key = mine[i]
                if shape == "stat":
                    box[key][stat] = value
                elif shape == "nan":
                    box[key][stat] = math.nan
                elif shape in ("dtype", "shape", "md5"):
                    box[key][shape] = value
                elif shape == "bare":
                    box[key] = value
            if shape == "section":
                rec[next((k for k in ("output", "input_args", "input") if k in rec), "output")] = section
            elif shape == "record":
                doc["data"][call] = edits[0][2]
    files = {}
    for side, doc in (("gpu", g), ("npu", n)):
        files[f"{side}/step0/rank0/dump.json"] = json.dumps(doc).encode()  # NaN written as NaN, as msprobe's json does
        files[f"{side}/step0/rank0/stack.json"] = (BASE / "stack.json").read_bytes()
    case = Case(cls, files, ["dumps", "gpu", "npu"])
    case.expect = {"shape": shape, "call": call, "both": both}
    return case


def run(case, go, d: Path) -> dict:
    r = go(["dumps", "--format", "json", "gpu", "npu"])
    if "problem" in r:
        return r
    problem = _judge(case.expect, r)
    if problem is not None:
        r["problem"] = problem
    return r


def _judge(want: dict, r: dict) -> str | None:
    shape, call = want["shape"], want["call"]
    code = r["code"]
    try:
        doc = json.loads(r["out"])
    except ValueError:
        return f"invalid JSON output ({shape})"
    findings = doc.get("findings", [])
    if shape == "intact":
        return None if (code, findings) == (0, []) else f"an intact pair gave exit {code}, {len(findings)} finding(s)"
    if code != 1:
        what = "two dumps without a call" if shape == "empty" else \
            f"a {shape} field not of its type ({'both sides' if want['both'] or shape == 'nan' else 'NPU'})"
        return f"{what} gave exit {code}"
    said = [f for f in findings if f.get("rule") == "SD810"]
    if shape == "empty":
        return None if any("nothing was compared" in f.get("message", "") for f in said) else \
            "two empty dumps were not said to be not comparable"
    if not any(call in f.get("message", "") for f in said):
        return f"the call whose {shape} field is not of its type ({call}) is not named by SD810"
    return None


def write_special(p, marker: tuple) -> bool:
    return False


def cleanup(d) -> None:
    """Nothing of this class outlives its temporary folder."""

"""Fuzz class of hostile msprobe dumps (`scriptdiff dumps`, issue 33).

Registered by fuzz_cli.py (one block there). Each input is a GPU dump and an NPU dump; the
NPU one (or both) is one of these shapes, from a real dump msprobe wrote (fixtures/dumps/base):

  mutated     the dump.json with bytes flipped, cut or duplicated
  truncated   the dump.json cut at a random byte
  nested      a call whose arguments nest 500 to 50,000 brackets deep
  wide        a call with 12,000 arguments (past budget.DUMP_SLOTS)
  stack       stack.json replaced by garbage, a nesting bomb, or removed
  pickle      a tensor dump whose diverging tensor is a pickle calling os.system (never run), bare
              or inside a PyTorch zip archive
  npy-object  a tensor dump whose diverging tensor is a .npy of Python objects
  path-name   a data_name that climbs out of dump_tensor_data (../../...)

Every run must end in a report or one line per input error, never a traceback, within the
fuzzer's memory and time caps; nothing the inputs name outside their folder is touched.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

CLASSES = ("dump",)
ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "fixtures" / "dumps" / "base" / "dump" / "step0" / "rank0"
SHAPES = ("mutated", "truncated", "nested", "wide", "stack", "pickle", "npy-object", "path-name")


def _tensor(mx: float, data_name: str | None = None) -> dict:
    t = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 4], "Max": mx, "Min": -1.0, "Mean": 0.1,
         "Norm": 2.0, "requires_grad": False}
    if data_name:
        t["data_name"] = data_name
    return t


def _dump(calls: dict, task: str = "statistics") -> bytes:
    return json.dumps({"task": task, "level": "L1", "framework": "pytorch", "dump_data_dir": None,
                       "data": calls}).encode()


def _saved(name: str, mx: float) -> dict:
    return {"Functional.linear.0.forward": {"input_args": [_tensor(1.0)], "input_kwargs": {},
                                            "output": [_tensor(mx, name)]}}


def make_case(cls: str, rng: random.Random, small: bool, Case):
    shape = rng.choice(SHAPES)
    dump = BASE / "dump.json"
    stack = BASE / "stack.json"
    g = {"gpu/step0/rank0/dump.json": dump.read_bytes(), "gpu/step0/rank0/stack.json": stack.read_bytes()}
    n = {"npu/step0/rank0/dump.json": dump.read_bytes(), "npu/step0/rank0/stack.json": stack.read_bytes()}
    data = n["npu/step0/rank0/dump.json"]
    if shape == "mutated":
        b = bytearray(data)
        for _ in range(rng.choice([1, 5, 50])):
            i = rng.randrange(len(b))
            op = rng.random()
            if op < 0.5:
                b[i] = rng.randrange(256)
            elif op < 0.8:
                del b[i:i + rng.randrange(1, 200)]
            else:
                b[i:i] = b[i:i + rng.randrange(1, 200)]
        n["npu/step0/rank0/dump.json"] = bytes(b)
    elif shape == "truncated":
        n["npu/step0/rank0/dump.json"] = data[:rng.randrange(len(data))]
    elif shape == "nested":
        depth = rng.choice([500, 5000] if small else [500, 5000, 50000])
        n["npu/step0/rank0/dump.json"] = (b'{"task": "statistics", "data": {"Functional.linear.0.forward": {"input_args": '
                                          + b"[" * depth + b"]" * depth + b"}}}")
    elif shape == "wide":
        calls = {"Functional.cat.0.forward": {"input_args": [[_tensor(1.0)] * 12000], "input_kwargs": {},
                                              "output": [_tensor(2.0)]}}
        g = {"gpu/dump.json": _dump(calls)}
        n = {"npu/dump.json": _dump(calls)}
    elif shape == "stack":
        how = rng.choice(["garbage", "nest", "gone", "list"])
        n["npu/step0/rank0/stack.json"] = {"garbage": bytes(rng.randrange(256) for _ in range(3000)),
                                           "nest": b'{"0": ' + b"[" * 20000 + b"]" * 20000 + b"}",
                                           "list": b'[["x"], ["y"]]', "gone": None}[how]
        if how == "gone":
            del n["npu/step0/rank0/stack.json"]
    else:
        name = {"pickle": "t.pt", "npy-object": "t.npy", "path-name": "../../../../etc/hostname"}[shape]
        g = {"gpu/dump.json": _dump(_saved(name, 1.0), "tensor"), "gpu/dump_tensor_data/.keep": b""}
        n = {"npu/dump.json": _dump(_saved(name, 9.0), "tensor"), "npu/dump_tensor_data/.keep": b""}
        if shape == "pickle":
            zipped = rng.random() < 0.5 and not small  # a zip archive makes the run load torch (seconds)
            for side in ("gpu", "npu"):
                payload = f"cos\nsystem\n(S'touch ran-{side}'\ntR.".encode()
                if zipped:
                    import io
                    import zipfile

                    buf = io.BytesIO()
                    with zipfile.ZipFile(buf, "w") as zf:
                        zf.writestr("archive/data.pkl", payload)
                        zf.writestr("archive/version", "3\n")
                    payload = buf.getvalue()
                (g if side == "gpu" else n)[f"{side}/dump_tensor_data/t.pt"] = payload
        elif shape == "npy-object":
            import io

            import numpy as np

            buf = io.BytesIO()
            np.save(buf, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
            g["gpu/dump_tensor_data/t.npy"] = n["npu/dump_tensor_data/t.npy"] = buf.getvalue()
    return Case(cls, {**g, **n}, ["dumps", "gpu", "npu"])


def write_special(p, marker: tuple) -> bool:
    return False


def cleanup(d) -> None:
    """Nothing of this class outlives its temporary folder."""

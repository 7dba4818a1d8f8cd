"""Issue 39: one statement written two ways. `x = a if c else b` on one side and `if c: x = a /
else: x = b` on the other assign the same value the same way: compared part by part (the
target, the test, each branch's value), silent when the parts are equal, the part that differs
said at its own line. A function renamed, its parameters the same, is info; a function or class
renamed is found by its text. Made-up names."""
from __future__ import annotations

from conftest import script_pair

EXPR = ("import torch\n\n\ndef pick(cfg, ids):\n"
        "    cfg[\"device\"] = torch.device(\"cpu\") if len(ids) == 0 or not torch.cuda.is_available() "
        "else torch.device(\"cuda\")\n"
        "    cfg[\"lr\"] = 1e-4 if cfg[\"big\"] else 3e-4\n"
        "    return cfg\n")
BLOCKS = ("import torch\nimport torch_npu\n\n\ndef pick(cfg, ids):\n"
          "    if len(ids) == 0 or not torch.npu.is_available():\n"
          "        cfg[\"device\"] = torch.device(\"cpu\")\n"
          "    else:\n"
          "        cfg[\"device\"] = torch.device(\"npu\")\n"
          "    if cfg[\"big\"]:\n"
          "        cfg[\"{key}\"] = 1e-4\n"
          "    else:\n"
          "        cfg[\"lr\"] = {lr}\n"
          "    return cfg\n")


def rows(rep):
    return sorted(((f.rule, str(f.severity), f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                    f.gpu.line if f.gpu else None, f.npu.line if f.npu else None) for f in rep.findings), key=repr)


def test_a_conditional_expression_and_the_if_that_assigns_the_same_are_one_statement(tmp_path):
    rep = script_pair(tmp_path, EXPR, BLOCKS.format(key="lr", lr="3e-4"), name="pick.py")
    assert rows(rep) == []
    assert [(m.rule, m.gpu, m.npu.line) for m in rep.masked] == [("SD006", None, 2)]  # import torch_npu


def test_the_branch_that_differs_is_said_at_its_line(tmp_path):
    rep = script_pair(tmp_path, EXPR, BLOCKS.format(key="lr", lr="5e-4"), name="pick.py")
    assert rows(rep) == [("SD102", "warning", 0.0003, 0.0005, 6, 13)]


def test_branches_assigning_different_targets_are_not_one_statement(tmp_path):
    rep = script_pair(tmp_path, EXPR, BLOCKS.format(key="rate", lr="3e-4"), name="pick.py")
    assert rows(rep) == [("SD102", "warning", "lr", "rate", 6, 11)]


RENAMED = ("import torch.distributed as dist\n\n\ndef {name}(group={default}):\n    dist.destroy_process_group(group)\n"
           "\n\ndef train(model):\n    model.step()\n    {name}()\n")


def test_a_function_renamed_is_info_and_its_calls_follow(tmp_path):
    rep = script_pair(tmp_path / "same", RENAMED.format(name="close_pool", default="None"),
                      RENAMED.format(name="close_worker_pool", default="None"), name="pool.py")
    assert rows(rep) == [("SD103", "info", "close_pool", "close_worker_pool", 4, 4)]
    assert rep.findings[0].message == ("def close_pool is named close_worker_pool on NPU, its parameters the same: "
                                       "what it runs is compared in its body")
    rep = script_pair(tmp_path / "default", RENAMED.format(name="close_pool", default="None"),
                      RENAMED.format(name="close_worker_pool", default="'world'"), name="pool.py")
    assert rows(rep) == [("SD102", "warning", "close_pool", "close_worker_pool", 4, 4),  # renamed, a default changed:
                         ("SD102", "warning", None, "world", 4, 4)]  # both said


POOL = ("import torch\n\n\nclass {name}({base}):\n    def __init__(self, size):\n        self.size = size\n"
        "        self.items = []\n\n    def fill(self, x):\n        self.items.append(x * {scale})\n"
        "        return len(self.items)\n\n    def drain(self):\n        self.items.clear()\n")
OTHER = ("import torch\n\n\nclass Ledger:\n    def total(self, rows):\n        return sum(r.amount for r in rows)\n"
         "\n    def close(self):\n        print('closed')\n        return None\n")


def test_a_class_renamed_is_paired_by_its_text_and_its_body_compared(tmp_path):
    # beside a class the other side does not have, the renamed one is found by its text
    rep = script_pair(tmp_path / "same", POOL.format(name="PoolRunner", base="object", scale=2),
                      POOL.format(name="WorkerPool", base="object", scale=2) + OTHER[13:], name="pool.py")
    assert rows(rep) == [("SD102", "warning", "PoolRunner", "WorkerPool", 4, 4),  # another class is built
                         ("SD103", "info", None, "class Ledger:", None, 17)]  # defined, used nowhere here
    assert rep.findings[0].message == "the classdef header differs"
    rep = script_pair(tmp_path / "body", POOL.format(name="PoolRunner", base="object", scale=2),
                      POOL.format(name="WorkerPool", base="Base", scale=3) + OTHER[13:], name="pool.py")
    assert rows(rep) == [("SD102", "warning", "PoolRunner", "WorkerPool", 4, 4),
                         ("SD102", "warning", 2, 3, 10, 10),  # its body compared
                         ("SD103", "info", None, "class Ledger:", None, 17)]
    assert rep.findings[0].message == ("class PoolRunner is named WorkerPool on NPU and its bases differ "
                                       "(object on GPU, Base on NPU)")


def test_a_class_of_other_text_is_not_a_rename(tmp_path):
    rep = script_pair(tmp_path, POOL.format(name="PoolRunner", base="object", scale=2) + OTHER[13:],
                      OTHER + OTHER[13:].replace("Ledger", "Journal"), name="pool.py")
    assert sorted(f.message for f in rep.findings if f.message.startswith("class")) == [
        "class on GPU only: PoolRunner", "class on NPU only: Journal"]


MOVED = ("import os\n\n\ndef scale(x, factor=2.0):\n    return x * factor\n\n\n"
         "def run(x):\n    return scale(x)\n")


def test_a_function_moved_and_changed_is_compared_as_one_function(tmp_path):
    """`scale` moved below its caller and changed: one definition compared with the other
    (its default said at both lines), never "on GPU only" and "on NPU only"."""
    moved = ("import os\n\n\ndef run(x):\n    return scale(x)\n\n\n"
             "def scale(x, factor={f}):\n    return x * factor\n")
    rep = script_pair(tmp_path, MOVED, moved.format(f="3.0"), name="scale.py")
    assert [r for r in rows(rep) if r[1] != "info"] == [("SD101", "error", 2.0, 3.0, 4, 8)]
    same = script_pair(tmp_path / "same", MOVED, moved.format(f="2.0"), name="scale.py")
    assert [r for r in rows(same) if r[1] != "info"] == []

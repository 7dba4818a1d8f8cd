"""scriptdiff init: find a project's GPU and NPU setups and write the configuration `check` reads."""
from __future__ import annotations

import os
import sys

DESCRIPTION = """Find the GPU setup and its NPU port in this project and write the configuration
`scriptdiff check` then finds by itself: [tool.scriptdiff] in pyproject.toml when there is one,
else scriptdiff.toml. Then print what to run on each machine.

The two sides are found by the pairing rules (rules/pairing.yaml), as `diff` pairs two folders:
gpu/ and npu/ folders (cuda/, ascend/), train.py and train_npu.py, pretrain.sh and
pretrain_npu.sh, env-gpu.json and env-npu.json, data_gpu/ and data_npu/; each is the input its
kind says (scripts, launch scripts, configs, logs, an environment snapshot, package lists, a
dataset, a checkpoint). What lives on the machines (the environment, the dataset, the initial
checkpoint) is named as the file the printed commands write there:

  scriptdiff collect -o env-gpu.json                         (on the GPU machine)
  scriptdiff data fingerprint DATA -o data-gpu.json
  scriptdiff weights fingerprint CHECKPOINT -o weights-gpu.json

and the same with -npu on the NPU machine; with those files here, `scriptdiff check`."""

SYNOPSIS = "[DIR]"


def add_arguments(p) -> None:
    p.add_argument("root", nargs="?", default=".", metavar="DIR", help="the project's folder (default: .)")
    p.add_argument("--gpu", metavar="DIR", help="the GPU setup's folder, when the pairing rules cannot find it")
    p.add_argument("--npu", metavar="DIR", help="the NPU setup's folder (with --gpu)")
    p.add_argument("--force", action="store_true", help="replace an existing scriptdiff.toml")
    p.add_argument("--dry-run", action="store_true", help="print the configuration instead of writing it")


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast
    from ..report.values import safe  # lazy: keeps --help fast

    # every folder, file and note printed is the project's own text: made safe (a folder
    # named with a line break or an ESC never starts a line of its own nor drives the terminal)
    plan = api.init(args.root, args.gpu, args.npu, force=args.force, write=not args.dry_run)
    where = safe(os.path.relpath(plan.target))
    if args.dry_run:
        print(f"# {where} (not written: --dry-run)")
        print("\n".join(safe(line) for line in plan.text.split("\n")))
        if plan.refusal:  # what writing it would refuse, and why
            print(f"scriptdiff: note: {safe(plan.refusal)}", file=sys.stderr)
    else:
        print(f"scriptdiff: wrote the configuration to {where}")
    print("the two sides (paired by the rules of rules/pairing.yaml):")
    width = max(len(k) for k, _g, _n in plan.found)
    for key, g, n in plan.found:
        print(f"  {key:<{width}}  {safe(g)}  <->  {safe(n)}")
    for note in plan.notes:
        print(f"  note: {safe(note)}")
    here = "this folder" if os.path.abspath(plan.root) == os.getcwd() else safe(os.path.relpath(plan.root))
    for side in ("gpu", "npu"):
        if plan.commands[side]:
            print(f"\non the {side.upper()} machine, from {here}:")
            for _key, command in plan.commands[side]:
                print(f"  {safe(command)}")
    check = "scriptdiff check" if here == "this folder" else f"scriptdiff check --config {where}"
    print(f"\nthen, with those files in {here}:\n  {check}")
    return 0

"""scriptdiff collect: write this machine's environment snapshot."""
from __future__ import annotations

import sys

from .common import OutputError, fail, output_spec, safe, write_text

DESCRIPTION = """Write this machine's environment snapshot (JSON, schema in docs/snapshot.md).

Records Python, OS and CPU architecture; installed distributions (name, version, installer,
source of editable and direct-URL installs); the conda environment; Ascend CANN toolkit,
kernels, NNAL, HCCL, driver and firmware versions and npu-smi output; NVIDIA driver, CUDA,
cuDNN and NCCL versions; and allowlisted training environment variables. Secret-looking
variables (TOKEN, KEY, SECRET, PASSWORD, CREDENTIAL, AUTH, ...) are never recorded.
Nothing is imported from the installed packages: versions come from files.

Compare two snapshots with `scriptdiff env gpu.json npu.json`."""


def add_arguments(p) -> None:
    p.add_argument("-o", "--output", metavar="[json=]FILE",
                   help="write the snapshot (JSON) to FILE, as -o does for every command (default: standard output)")
    p.add_argument("--root", metavar="DIR",
                   help="read every absolute path under DIR instead of / (an install tree laid out for tests "
                        "or an offline audit); no command is run")
    p.add_argument("--site", action="append", default=[], metavar="DIR",
                   help="read distributions from DIR (repeatable; under --root, DIR is taken under the root); "
                        "default: this Python's sys.path, or under --root the usual site-packages folders")
    p.add_argument("--no-commands", action="store_true", help="do not run npu-smi, nvidia-smi or nvcc")


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast

    try:
        out = output_spec(args.output, ("json",), "collect",
                          "a snapshot is the JSON file `scriptdiff env` and `check` read")[1] if args.output else None
    except OutputError as e:
        return fail(str(e))
    out = None if out == "-" else out
    snap = api.collect(root=args.root, run_commands=False if args.no_commands else None, sites=args.site or None)
    for msg in snap.get("unread", []):  # special files where a version file was expected: not read
        print(f"scriptdiff: {safe(msg)}; not read", file=sys.stderr)
    text = api.snapshot_text(snap)
    if out:
        failed = write_text(out, text)
        if failed is not None:
            return failed
        print(f"scriptdiff: wrote {out} ({len(snap['distributions'])} distributions, platform "
              f"{snap['platform']}, {snap['collect_seconds']:.3f} s)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0

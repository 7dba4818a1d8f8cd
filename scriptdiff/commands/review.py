"""scriptdiff review PATCH: the Beyond Compare review of a GPU->NPU port, done by the tool."""
from __future__ import annotations

from .common import add_engine_arguments, add_output_arguments, emit, prepare

DESCRIPTION = """Review a unified diff (a pull request) that ports a GPU file to NPU.

Each hunk is compared with the same masks and structural diff as `scriptdiff diff`. Hunks
made only of expected substitutions (torch.cuda -> torch.npu, nccl -> hccl, ...) are
masked; every other hunk is reported with its lines in the new file and what changed in
it, under the rule of its most severe difference (SD156 error, SD153 warning, SD157 info). When the patched files exist under --root (default: the current folder)
the whole files are compared, which is more precise than hunk fragments.

PATCH may be `-` for standard input, e.g. `git diff main...npu-port | scriptdiff review -`."""


def add_arguments(p) -> None:
    p.add_argument("patch", metavar="PATCH", help="unified diff file, or - for standard input")
    p.add_argument("--root", default=".", help="folder the patch's paths are relative to (default: .)")
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    add_engine_arguments(p)
    add_output_arguments(p)


def run(args) -> int:
    api, opts = prepare(args)
    data, name = api.read_patch(args.patch, opts)  # a regular file or standard input, under --max-bytes
    return emit(api.review(data, name, opts, root=args.root), args)

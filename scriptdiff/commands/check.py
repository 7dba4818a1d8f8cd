"""scriptdiff check: all six pre-checks from a [tool.scriptdiff] configuration."""
from __future__ import annotations

from .common import add_engine_arguments, add_output_arguments, emit, exit_status, prepare

DESCRIPTION = """Run the six pre-checks (hyperparameters, scripts, environment, libraries,
dataset, weights) on a GPU setup and its NPU port, and print one report with a verdict per
check: pass, differences, or not checked (and why).

The inputs come from [tool.scriptdiff] in pyproject.toml or from scriptdiff.toml (found
in the current folder or a parent), or from --gpu/--npu KEY=PATH, KEY one of scripts,
launch, configs, logs, environment, packages, dataset, weights. docs/check.md describes
every key. Example:

  [tool.scriptdiff.gpu]            [tool.scriptdiff.npu]
  scripts = ["gpu"]                scripts = ["npu"]
  launch = ["gpu/pretrain.sh"]     launch = ["npu/pretrain.sh"]
  environment = "env-gpu.json"     environment = "env-npu.json"
"""


def add_arguments(p) -> None:
    p.add_argument("--config", "-c", metavar="FILE", help="pyproject.toml or scriptdiff.toml to read "
                                                          "(default: found from the current folder)")
    p.add_argument("--gpu", action="append", default=[], metavar="KEY=PATH",
                   help="add a GPU input, e.g. --gpu scripts=gpu/ --gpu environment=env-gpu.json (repeatable)")
    p.add_argument("--npu", action="append", default=[], metavar="KEY=PATH", help="add an NPU input (repeatable)")
    p.add_argument("--files", nargs="*", metavar="FILE",
                   help="only these files, each against its counterpart in the configured GPU/NPU inputs (a file "
                        "in scripts given once that runs on both devices against itself; a file in no configured "
                        "input is left alone): the pre-commit hook")
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    p.add_argument("--profile", metavar="NAME",
                   help="also check each side against a profile: alignment (set up for a GPU/NPU accuracy "
                        "comparison: seeds, deterministic algorithms and variables, dropout off; docs/fidelity.md), "
                        "or one a pack of --rules adds under `profiles`")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a check is not checked (a gate that cannot pass on missing inputs, for CI): an "
                        "environment snapshot or fingerprint the machines make that is not there yet is an error")
    p.add_argument("--allow-pending", action="store_true",
                   help="with --strict: an environment snapshot or fingerprint the machines make that is not there "
                        "yet leaves its checks not checked without failing (the pre-commit hook: a workstation has "
                        "none of them until the machines have run their commands)")
    add_engine_arguments(p)
    add_output_arguments(p)


def rule_dirs(args) -> list[str]:
    """The rule pack folders of the configuration (`rules = [...]`), loaded besides --rules."""
    from .. import api  # lazy: keeps --help fast

    return api.config_rules(args.config)


def run(args) -> int:
    api, opts = prepare(args)
    if args.files is not None:
        report = api.check_files(args.files, args.config, args.gpu, args.npu, opts)
        if not report.findings and not report.errors and args.format == "text":
            return 0  # nothing to say for a commit that keeps the port faithful
        return emit(report, args)
    report = api.check(args.config, args.gpu, args.npu, opts, strict=args.strict and not args.allow_pending)
    code = emit(report, args)
    waiting = report.details.get("waiting", set())
    if code == 0 and args.strict and any(v[0] == "not checked" and c not in waiting
                                         for c, v in report.verdicts.items()):
        return exit_status(1, args)
    return code

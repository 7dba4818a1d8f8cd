"""Command line: parse arguments, call the library, pick a writer, set the exit code.

Kept thin and light: each subcommand lives in scriptdiff/commands/<name>.py with
`add_arguments(parser)` and `run(args) -> int`, and those modules import nothing heavy at
the top, so `scriptdiff --help` and `--version` load neither libcst nor rich.
"""
from __future__ import annotations

import os
import sys

import scriptdiff

from . import __version__

# subcommand -> (module, one-line help). Order is the order shown in --help.
COMMANDS = {
    "diff": ("diff", "compare a GPU and an NPU script, config or folder (or one file's GPU run with its NPU "
                     "run); report what can change numerics"),
    "fix": ("fix", "edit the NPU side so that each finding's NPU value becomes the GPU value, where it is written "
                   "(--diff: show the edits, write nothing)"),
    "hparams": ("hparams", "the effective hyperparameter table of both sides, side by side"),
    "init": ("init", "find the GPU and NPU setups of this project and write the configuration `check` reads"),
    "check": ("check", "run all six pre-checks from a [tool.scriptdiff] configuration"),
    "env": ("env", "compare two environment snapshots or package lists"),
    "collect": ("collect", "write this machine's environment snapshot (versions, drivers, env vars)"),
    "data": ("data", "fingerprint or compare datasets"),
    "weights": ("weights", "fingerprint or compare initial weights (checkpoints)"),
    "curves": ("curves", "compare the GPU and NPU training curves (loss, grad norm, ...): where runs diverge"),
    "dumps": ("dumps", "compare two runs' msprobe dumps: the first diverging call and the setting behind it"),
    "review": ("review", "review a unified diff that ports a GPU file to NPU"),
    "baseline": ("baseline", "write the current findings to a baseline file"),
    "rules": ("rules_cmd", "list every rule (code, check, severity, summary, pack); --test DIR runs a pack's examples"),
    "rule": ("rule_cmd", "show one rule's documentation and examples"),
}

DESCRIPTION = (
    "scriptdiff: show that a GPU training setup and its Ascend NPU port are the same setup.\n"
    "It masks the expected cuda->npu substitutions and reports only what can change numerics:\n"
    "hyperparameters, training scripts, library and environment versions, data and weights."
)


def git_external_call(argv: list[str]) -> bool:
    """Whether argv is git's external diff call: `path old-file old-hex old-mode new-file new-hex
    new-mode [new-path metadata]`, where each hex is an object id (or `.` for a missing side)
    and each mode six octal digits (or `.`)."""
    if len(argv) not in (7, 9):
        return False

    def oid(x: str) -> bool:
        return x == "." or (len(x) in (40, 64) and all(c in "0123456789abcdef" for c in x))

    def mode(x: str) -> bool:
        return x == "." or (len(x) == 6 and all(c in "01234567" for c in x))

    return oid(argv[2]) and mode(argv[3]) and oid(argv[5]) and mode(argv[6])


def build_parser(only: str | None = ""):
    """The whole command line. `only` names the one command whose options are built (the others
    are listed with their one-line help, which is all the top-level help and argparse's errors
    show); None builds none of them (`--help`, `--version`), the default "" builds every one."""
    import argparse  # lazy: a replayed diff and a plain file's fingerprint parse no options
    import importlib.util

    parser = argparse.ArgumentParser(prog="scriptdiff", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="exit status: 0 no warning or error, 1 findings, 2 the run failed.\n"
                                            "`scriptdiff COMMAND --help` shows a command's options.")
    parser.add_argument("--version", action="version", version=f"scriptdiff {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in COMMANDS.items():
        if only == "" or name == only:
            _add_command(sub, name, module, help_)
        elif importlib.util.find_spec(f"scriptdiff.commands.{module}") is not None:
            sub.add_parser(name, help=help_)  # listed only: its options are not asked for
    return parser


def _add_command(sub, name: str, module: str, help_: str) -> None:
    import argparse  # lazy: a replayed diff and a plain file's fingerprint parse no options
    import importlib

    from .commands import common  # lazy: keeps --help fast, and a replayed diff (runmemo)

    try:
        mod = importlib.import_module(f"scriptdiff.commands.{module}")
    except ModuleNotFoundError:
        return
    synopsis = getattr(mod, "SYNOPSIS", None)  # the sides as common.split_sides reads them
    p = sub.add_parser(name, help=help_, description=getattr(mod, "DESCRIPTION", help_),
                       usage=f"%(prog)s [options] {synopsis}" if synopsis else None,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    mod.add_arguments(p)
    common.add_shared_arguments(p, name)  # the options every command shares (refused where they cannot apply)
    p.set_defaults(_run=mod.run, _rule_dirs=getattr(mod, "rule_dirs", None))  # a command's own packs


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # run as the program (not called by a long-lived one): its process ends with it
        scriptdiff.COMMAND_PROCESS = True
    try:
        return _main(argv)
    except KeyboardInterrupt:  # outside the command itself (its replay, or storing it): no traceback either
        print("scriptdiff: interrupted", file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # GIT_EXTERNAL_DIFF calls `scriptdiff path old-file old-hex old-mode new-file new-hex new-mode`
    # (plus new-path and rename metadata for a renamed file): told by the ids and modes, never by
    # the names, which are paths whatever they look like (a tracked `-o.py`, `--help`, `diff`)
    difftool = bool(os.environ.get("BASE")) and bool(os.environ.get("GIT_DIFF_PATH_COUNTER")) \
        and os.path.basename(os.environ.get("GIT_EXTERNAL_DIFF", "")) == "git-difftool--helper"
    if git_external_call(argv):
        argv = ["diff", "--git-external", "--", *argv]
    elif len(argv) == 1 and os.environ.get("GIT_DIFF_PATH_COUNTER") and not difftool \
            and argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version"):
        # git's external diff on an unmerged path: its one argument is the path; say so, and
        # exit 0 so that git goes on to the next file
        from .report.values import safe  # lazy: keeps --help fast

        print(f"scriptdiff: {safe(argv[0])}: unmerged; not compared", file=sys.stderr)
        return 0
    # `git difftool -x scriptdiff` (and any tool that appends two paths) calls
    # `scriptdiff LOCAL REMOTE`: two paths with no command are `scriptdiff diff LOCAL REMOTE`
    # (under git difftool, two paths that exist are paths, whatever they look like)
    elif len(argv) == 2 and all(os.path.lexists(a) for a in argv) \
            and (difftool or not any(a in COMMANDS or a.startswith("-") for a in argv)):
        argv = ["diff", "--", *argv]
    # under `git difftool` (-x scriptdiff, or a difftool.*.cmd): LOCAL and REMOTE are the two
    # sides of one path in revisions git knows; the path lets each side find its references there
    base = os.environ.get("BASE")
    options = argv[:argv.index("--")] if "--" in argv else argv
    if argv[:1] == ["diff"] and difftool and not any(a in ("--git", "--git-path", "--git-external") for a in options):
        rest = argv[1:]
        if len(rest) == 2 and all(os.path.lexists(a) for a in rest):  # `diff "$LOCAL" "$REMOTE"`: two paths
            rest = ["--", *rest]
        argv = ["diff", f"--git-path={base}", *rest]
    if argv[:1] in (["diff"], ["check"]):  # the same run on unchanged inputs: its stored output (runmemo)
        from .commands import runmemo  # lazy: keeps --help fast (only diff and check need it)

        replayed = runmemo.replay(argv)
        if replayed is not None:
            return replayed
    if argv[:2] == ["data", "fingerprint"]:  # one plain file: hashed with nothing else imported
        from .commands import quickprint  # lazy: keeps --help fast (only a fingerprint needs it)

        done = quickprint.run(argv[2:])
        if done is not None:
            return done
    # only the command asked for is built (the others cost 25 ms and are shown by name only);
    # a command name later in argv (`--foo diff`) builds them all, as argparse's errors may need
    only = argv[0] if argv[:1] and argv[0] in COMMANDS else "" if any(a in COMMANDS for a in argv) else None
    parser = build_parser(only)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code not in (0, None) else 0
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    from .commands import common  # lazy: keeps --help fast, and a replayed diff (runmemo)

    refused = common.refuse_inapplicable(args, args.command)
    if refused is not None:
        return refused
    memo = None
    if args.command in ("diff", "check"):
        from .commands import runmemo  # lazy: keeps --help fast (only diff and check need it)

        memo = runmemo.start(argv, args)
    code = 2
    try:
        code = _dispatch(args)
        return code
    finally:
        if memo is not None:
            runmemo.finish(memo, code)  # stored for a replay only when it exited 0 or 1


def _dispatch(args) -> int:
    from .inputs import store  # lazy: keeps --help fast
    from .commands import common  # lazy: keeps --help fast, and a replayed diff (runmemo)

    try:
        with store.deferred():  # cache entries are written beside the command's last steps
            common.apply_rules(args)  # the user's packs (--rules): loaded and validated first
            return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("scriptdiff: interrupted", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception as e:  # the last line of defence: one line, never a traceback
        from .model import UsageError  # lazy: keeps --help fast (the model's dataclasses cost 20 ms)
        from .ruleset.rulepack import RuleError  # lazy: keeps --help fast (the rule-pack loader imports yaml)

        from .report.values import safe  # lazy: keeps --help fast (only an error needs it)

        if isinstance(e, UsageError):  # a request that cannot be carried out: one line, no traceback
            print(f"scriptdiff: {safe(e)}", file=sys.stderr)
            return 2
        if os.environ.get("SCRIPTDIFF_DEBUG"):
            raise
        if isinstance(e, RuleError):
            print(f"scriptdiff: invalid rule pack: {safe(e)}", file=sys.stderr)
        else:
            msg = safe(str(e).splitlines()[0]) if str(e) else type(e).__name__
            print(f"scriptdiff: internal error: {type(e).__name__}: {msg} "
                  f"(set SCRIPTDIFF_DEBUG=1 for details)", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

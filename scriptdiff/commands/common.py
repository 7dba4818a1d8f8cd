"""The one command-line language: options every command shares, and how output is written.

Every command gets the same shared options (cli.build_parser adds any a command did not add
itself): `--rules DIR` (the user's rule packs), `--no-cache`, `--jobs N`, `--max-bytes N` and
`--progress`. Where one cannot apply
(`collect --jobs`), it is still parsed and refused with the reason (NOT_FOR), never silently
ignored. `-o/--output` means the same everywhere: FORMAT=FILE, or a FILE whose format its
extension says (`-o out.json`); commands that write one product (collect, baseline, the
fingerprints) read it through the same rule and refuse a format they cannot write, with the
reason (`output_spec`). The two sides are given the same way everywhere (`split_sides`):
`GPU NPU`, or several files a side as `GPU... vs NPU...`. Commands that report findings share
`--severity LEVEL` and `-q/--quiet` (`add_output_arguments`)."""
from __future__ import annotations

import argparse
import os
import re
import sys
import threading

from ..report import FORMATS, render
from ..severity import Severity
from ..report.values import error_line, safe
from .quickprint import progress_wanted  # noqa: F401 (one rule for every command's progress)

# what a file's extension says its format is (`-o out.json`); github annotations have none
EXTENSIONS = {".json": "json", ".sarif": "sarif", ".md": "markdown", ".markdown": "markdown",
              ".txt": "text", ".html": "html", ".htm": "html"}
# short names understood before `=` in -o FORMAT=FILE (`-o md=comment.md`)
ALIASES = {"md": "markdown", "txt": "text", "htm": "html"}
# --severity LEVEL: findings of LEVEL and above are shown (and make the exit status)
SEVERITIES = tuple(s.value for s in Severity.ascending())

SHARED = ("--rules", "--no-cache", "--jobs", "--max-bytes", "--progress")

_NO_INPUT = "it reads no input files"
# command -> shared option -> why it does not apply to that command (it is refused, with this)
NOT_FOR = {
    "collect": {"--no-cache": "collect reads version files directly and caches nothing",
                "--jobs": "collect runs in one process (it takes a fraction of a second)",
                "--max-bytes": "collect reads only small version files, each under a fixed bound",
                "--progress": "collect takes a fraction of a second"},
    "init": {"--no-cache": "init only lists the project's folders and writes a configuration",
             "--jobs": "init runs in one process (it lists folders)",
             "--max-bytes": "init only looks at names and the head of each candidate file",
             "--progress": "init lists folders and takes a fraction of a second"},
    "rules": {o: _NO_INPUT for o in SHARED if o != "--rules"},
    "rule": {o: _NO_INPUT for o in SHARED if o != "--rules"},
    "env": {"--no-cache": "snapshots and package lists are read directly, never cached",
            "--jobs": "snapshots and package lists are read in one process"},
    "data": {"--no-cache": "dataset fingerprints are computed afresh each run, never cached",
             "--max-bytes": "dataset files are hashed whole whatever their size (--sample hashes parts of them)"},
    "weights": {"--no-cache": "tensor hashes are computed afresh each run, never cached",
                "--jobs": "tensors are hashed in one process, chunk by chunk",
                "--max-bytes": "checkpoints are read whole whatever their size, chunk by chunk in bounded memory"},
    "curves": {"--no-cache": "training logs are read afresh each run, never cached",
               "--jobs": "training logs are read in one process",
               "--max-bytes": "training logs are read whole whatever their size, in bounded pieces"},
}


def _whole(value: str, option: str, what: str, hint: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = None
    if n is None or n < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not allowed: {option} takes {what}, 1 or more{hint}")
    return n


def jobs_count(value: str) -> int:
    """--jobs N: a whole number of worker processes, at least 1."""
    return _whole(value, "--jobs", "a whole number of worker processes", " (leave it out for one per core)")


_SIZE = re.compile(r"\s*(\d+)\s*([kmg]i?)?b?\s*", re.I)
_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}


def byte_count(value: str) -> int:
    """--max-bytes N: a whole number of bytes, at least 1; 500k, 1M, 2MiB are understood."""
    m = _SIZE.fullmatch(value)
    n = int(m.group(1)) * _UNITS[(m.group(2) or "").lower()] if m else 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not allowed: --max-bytes takes a size in bytes, 1 or more "
                                         f"(e.g. 1000000, 500k, 1M, 2MiB)")
    return n


def extensions(formats: tuple[str, ...] = FORMATS) -> str:
    """The file extensions that say one of `formats` (`.json, .sarif, .md, .txt, .html`)."""
    return ", ".join(e for e, f in EXTENSIONS.items() if f in formats and e not in (".markdown", ".htm"))


def add_output_option(p, formats: tuple[str, ...] = FORMATS, what: str = "the report") -> None:
    """-o/--output as every command that writes several formats takes it."""
    p.add_argument("--output", "-o", action="append", default=[], metavar="[FORMAT=]FILE",
                   help=f"also write {what} to FILE (repeatable): FORMAT=FILE, or a FILE whose extension "
                        f"says the format ({extensions(formats)}), e.g. -o out.{'sarif' if 'sarif' in formats else 'json'}")


def add_output_arguments(p) -> None:
    p.add_argument("--format", "-f", choices=FORMATS, default="text", help="output format (default: text)")
    add_output_option(p)
    p.add_argument("--select", metavar="CODES", help="only these rule codes or prefixes, comma-separated (SD2,SD101)")
    p.add_argument("--ignore", metavar="CODES", help="drop these rule codes or prefixes, comma-separated")
    p.add_argument("--severity", choices=SEVERITIES, metavar="LEVEL",
                   help="show only findings of LEVEL and above (info, warning, error); the exit status follows "
                        "what is shown (--severity error: warnings neither shown nor failing)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="print only the summary (counts, verdicts, what was read) and set the exit status; "
                        "input errors still go to standard error")
    p.add_argument("--show-masked", action="store_true", help="list the expected substitutions that were masked")
    p.add_argument("--full-values", action="store_true", help="show long values whole (default: their head and a count)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour in text output")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even when findings (or inputs not compared) are reported, as ruff's --exit-zero; "
                        "2 still when the run could not go on")


def exit_status(code: int, args) -> int:
    """The exit status a command returns: `code`, or 0 for 1 under --exit-zero (2 stays)."""
    return 0 if code == 1 and getattr(args, "exit_zero", False) else code


def add_side_arguments(p, gpu_help: str, npu_help: str) -> None:
    """GPU [GPU ...] [NPU], as diff and fix take them."""
    p.add_argument("gpu", nargs="+", metavar="GPU", help=gpu_help)
    p.add_argument("npu", metavar="NPU", nargs="?", help=npu_help)


def add_engine_arguments(p) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="do not read or write the parse cache (~/.cache/scriptdiff, or $SCRIPTDIFF_CACHE_DIR)")
    p.add_argument("--jobs", "-j", type=jobs_count, metavar="N",
                   help="worker processes for parsing, 1 or more (default: one per core)")
    p.add_argument("--max-bytes", type=byte_count, metavar="N",
                   help="larger Python files are compared as text; larger configs, launch scripts, logs, "
                        "package lists, snapshots and patches are not read (default: 500000; 500k, 1M understood)")


def add_rules_argument(p) -> None:
    p.add_argument("--rules", action="append", default=[], metavar="DIR",
                   help="also load the rule packs (*.yaml) in DIR, after the shipped ones (repeatable): your "
                        "launchers, spellings, masks and rules (docs/rule-packs.md)")


def apply_rules(args) -> None:
    """Load the user's rule packs this command names (--rules, and a command's own: `check`
    reads them from its configuration), or none: the rule set is the process's, so a command
    run in the same process after one with --rules does not keep them. A broken pack stops
    here, as one line (RuleError; a missing folder: UsageError)."""
    from ..inputs import store  # lazy: keeps --help fast

    dirs = list(getattr(args, "rules", None) or [])
    own = getattr(args, "_rule_dirs", None)
    if own is not None:
        dirs += own(args)
    if not dirs and not store.user_packs():
        return
    from .. import api  # lazy: keeps --help fast

    api.use_rules(dirs)


def add_progress_argument(p) -> None:
    p.add_argument("--progress", action="store_true",
                   help="show progress on standard error even when it is not a terminal (plain lines then); "
                        "by default progress is shown on a terminal only, and never under CI or pre-commit")


def add_shared_arguments(p, command: str) -> None:
    """Give `p` every shared option it lacks. One that cannot apply to `command` is still
    parsed (hidden from --help) so that refuse_inapplicable can say why it is refused."""
    have = set(p._option_string_actions)
    not_for = NOT_FOR.get(command, {})
    missing = [o for o in SHARED if o not in have]
    if not missing:
        return
    scratch = argparse.ArgumentParser(add_help=False)
    add_rules_argument(scratch)
    add_engine_arguments(scratch)
    add_progress_argument(scratch)
    for action in scratch._actions:
        opt = next((s for s in action.option_strings if s.startswith("--")), None)
        if opt not in missing:
            continue
        names = [s for s in action.option_strings if s not in have]
        kwargs = {"dest": action.dest, "default": action.default, "metavar": action.metavar,
                  "help": argparse.SUPPRESS if opt in not_for else action.help}
        if action.nargs == 0:
            p.add_argument(*names, action="store_true", **{k: v for k, v in kwargs.items() if k != "metavar"})
        elif isinstance(action, argparse._AppendAction):
            p.add_argument(*names, action="append", **kwargs)
        else:
            p.add_argument(*names, type=action.type, **kwargs)


def refuse_inapplicable(args, command: str) -> int | None:
    """2 after a one-line reason when a shared option that cannot apply to `command` was given."""
    for opt, why in NOT_FOR.get(command, {}).items():
        value = getattr(args, opt.lstrip("-").replace("-", "_"), None)
        if value not in (None, False, []):
            return fail(f"{command}: {opt} does not apply: {why}")
    return None


# --------------------------------------------------------------------------- the two sides

VS = "vs"  # GPU... vs NPU...: the word between the two sides' files (a file named vs is ./vs)


def split_sides(paths: list[str], command: str, one: bool = False, several: bool = True
                ) -> tuple[list[str], list[str]]:
    """The two sides of a command line, the same grammar for every command:

      GPU NPU             one path a side
      GPU... vs NPU...    several files a side (`several`: the commands whose side may be
                          several files, read together as one run)
      PATH                one path (`one`: a command that gives it a meaning; NPU is [] then)

    Raises UsageError (one line, exit 2) for anything else, naming the grammar."""
    from ..model import UsageError  # lazy: keeps --help fast (the model's dataclasses cost 20 ms)

    grammar = f"`{command} GPU NPU`" + (f" or `{command} GPU... vs NPU...`" if several else "")
    if paths.count(VS) > 1:
        raise UsageError(f"{command}: `{VS}` given {paths.count(VS)} times: {grammar} (a file named {VS} is ./{VS})")
    if VS in paths:
        i = paths.index(VS)
        gpu, npu = list(paths[:i]), list(paths[i + 1:])
        if not gpu or not npu:
            raise UsageError(f"{command}: no {'GPU' if not gpu else 'NPU'} path {'before' if not gpu else 'after'} "
                             f"`{VS}`: {grammar}")
    elif len(paths) == 2:
        gpu, npu = [paths[0]], [paths[1]]
    elif len(paths) == 1 and one:
        return [paths[0]], []
    else:
        if len(paths) > 2 and several:
            raise UsageError(f"{command}: {len(paths)} paths and no `{VS}`: which are GPU and which NPU? "
                             f"give {grammar}")
        raise UsageError(f"{command} takes {'one path or ' if one else ''}two sides: {grammar} "
                         f"({len(paths)} path(s) given)")
    if not several and (len(gpu) > 1 or len(npu) > 1):
        raise UsageError(f"{command} compares one path a side (a folder, a file or a fingerprint), not several: "
                         f"`{command} GPU NPU`")
    return gpu, npu


def deprecated(old: str, new: str) -> None:
    """A spelling that still works but is no longer documented: one note on standard error."""
    print(f"scriptdiff: note: {old} is deprecated (it still works): write {new}", file=sys.stderr)


def codes(s: str | None) -> list[str] | None:
    if not s:
        return None
    return [c.strip().upper() for c in s.split(",") if c.strip()]


def options_from(args):
    from ..model import Options  # lazy: keeps --help fast (the model's dataclasses cost 20 ms)
    from .. import api  # lazy: keeps --help fast

    select, ignore = codes(getattr(args, "select", None)), codes(getattr(args, "ignore", None))
    api.check_selectors(select, "--select")
    api.check_selectors(ignore, "--ignore")
    if getattr(args, "quiet", False) and getattr(args, "format", "text") != "text":
        raise api.UsageError(f"--quiet prints the text summary; --format {args.format} writes the whole document: "
                             f"give one of them (-o FORMAT=FILE writes a document beside the summary)")
    opts = Options(select=select, ignore=ignore, min_severity=getattr(args, "severity", None),
                   use_cache=not getattr(args, "no_cache", False), jobs=getattr(args, "jobs", None),
                   max_bytes=getattr(args, "max_bytes", None) or Options.max_bytes, keep_texts=wants_html(args),
                   profile=getattr(args, "profile", None))
    api.check_profile(opts.profile)
    opts.progress = ProgressBar(progress_wanted(getattr(args, "progress", False)), "parsed", unit="files")
    args._options = opts  # emit() reads what the run did with them (the baseline's count)
    return opts


def wants_html(args) -> bool:
    """The html page is among the outputs: the run keeps the files' text for it."""
    outs = [o.split("=", 1)[0] if "=" in o else o.rsplit(".", 1)[-1] for o in getattr(args, "output", None) or []]
    return "html" in (getattr(args, "format", None), *(o.lower() for o in outs))


def fail(message: str) -> int:
    print(f"scriptdiff: {safe(message)}", file=sys.stderr)
    return 2


def use_color(args) -> bool:
    color = {"always": True, "never": False}.get(getattr(args, "color", "auto"), None)
    return sys.stdout.isatty() if color is None else color


def render_options(args, color: bool, terminal: bool = False) -> dict:
    """The writers' options from the command line (report.render, api.render_table). `terminal`:
    the output goes to a terminal, whose width text wraps at, with or without colour."""
    return {"show_masked": getattr(args, "show_masked", False), "full_values": getattr(args, "full_values", False),
            "color": color, "terminal": terminal}


class OutputError(ValueError):
    """An -o value that names no format this command writes."""


def format_named(word: str) -> str | None:
    """The format `word` names before `=` in -o FORMAT=FILE (`sarif`, or a short name: `md`)."""
    word = word.lower()
    return word if word in FORMATS else ALIASES.get(word)


def output_spec(spec: str, formats: tuple[str, ...] = FORMATS, command: str | None = None,
                why: str | dict | None = None) -> tuple[str, str]:
    """`-o` as every command reads it: (format, path) from FORMAT=FILE, or from a FILE whose
    extension says its format (out.json, out.sarif, out.md, out.txt, out.html). A format the
    command cannot write is refused with the reason (`why`: one reason, or one per format),
    whether FORMAT= or the extension names it; a command that writes one format only (a
    snapshot, a baseline, a fingerprint: json) takes a FILE whose extension says nothing
    (`-o gpu.snapshot`) as that format."""
    who = f"{command} " if command else "this command "

    def refuse(fmt: str, said: str) -> OutputError:
        reason = why.get(fmt) if isinstance(why, dict) else why
        only = " only" if len(formats) == 1 else ""
        listed = formats[0] if len(formats) == 1 else f"{', '.join(formats[:-1])} or {formats[-1]}"
        return OutputError(f"-o {spec}: {who}writes {listed}{only}, not {fmt} ({said})"
                           + (f": {reason}" if reason else ""))

    head, sep, path = spec.partition("=")
    fmt = format_named(head) if sep else None
    if fmt is not None:
        if fmt not in formats:
            raise refuse(fmt, f"{head}= says {fmt}")
        if not path:
            raise OutputError(f"-o {spec}: no file name after {head}=")
        return fmt, path
    path = spec  # a FILE, whose name may itself contain '='
    if not path:
        raise OutputError("-o: no file name")
    name = os.path.basename(path).lower()
    said = next(((ext, f) for ext, f in EXTENSIONS.items() if name.endswith(ext)), None)
    if said is not None:
        if said[1] in formats:
            return said[1], path
        raise refuse(said[1], f"the extension {said[0]} says {said[1]}")
    if len(formats) == 1:
        return formats[0], path
    raise OutputError(f"-o {spec}: cannot tell the format from the file name: give FORMAT=FILE "
                      f"(FORMAT one of {', '.join(formats)}) or a name ending in {extensions(formats)}")


def output_targets(args, formats: tuple[str, ...] = FORMATS, command: str | None = None,
                   why: str | dict | None = None) -> list[tuple[str, str]]:
    """Every -o of `args` as (format, path); OutputError on the first that says no format."""
    return [output_spec(s, formats, command, why) for s in getattr(args, "output", None) or []]


def prepare(args, outputs: bool = True):
    """What every reporting command does first: refuse a bad -o before any work is done, read
    the options from the arguments, load --baseline into them. Returns (api, Options); a
    request that cannot be carried out raises UsageError (one line, exit 2, from the CLI)."""
    from .. import api  # lazy: keeps --help fast

    if outputs:
        try:
            output_targets(args)
        except OutputError as e:
            raise api.UsageError(str(e)) from None
    opts = options_from(args)
    if getattr(args, "baseline", None):
        opts.baseline = api.load_baseline(args.baseline)
    return api, opts


def check_outputs(args) -> int | None:
    """Refuse a bad -o before any work is done: 2 after the reason, else None."""
    try:
        output_targets(args)
    except OutputError as e:
        return fail(str(e))
    return None


def write_text(path: str, text: str) -> int | None:
    """Write `text` to `path`; None when done, else 2 after a one-line reason."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        return fail(f"cannot write {path}: {e.strerror or e}")
    memo = sys.modules.get("scriptdiff.commands.runmemo")  # a recorded diff: a replay writes it again
    if memo is not None:
        memo.wrote(path, text)
    return None


def write_outputs(report, args) -> int | None:
    """The -o/--output extras, always complete and uncoloured; 2 on failure."""
    try:
        targets = output_targets(args)
    except OutputError as e:
        return fail(str(e))
    for fmt, path in targets:
        failed = write_text(path, render(report, fmt, **render_options(args, False), out_path=path))
        if failed is not None:
            return failed
    return None


def print_errors(report) -> None:
    """Input errors and notes on standard error, one line each (`note:` for a note)."""
    for e in report.errors:
        label = "note: " if getattr(e, "level", "error") == "note" else ""
        print(error_line(e.path, e.message, label), file=sys.stderr)


def errors_on_stderr(args) -> bool:
    """Where input errors are printed, once each: on standard error, one line each, when
    standard output is a machine format or not a terminal (a pipe, a file: `2>&1 | less` then
    shows each once), or the report is the summary only (--quiet); in the text report when
    both are the terminal. --output files always list them."""
    return args.format != "text" or not sys.stdout.isatty() or bool(getattr(args, "quiet", False))


def emit(report, args, full=None) -> int:
    """Write the report in the chosen format (and any --output extras); return the exit code.

    `full`: when `report` is a shortened view of a larger report (weights' summary), the
    --output files and the exit status come from the full one."""
    on_stderr = errors_on_stderr(args)
    if on_stderr:
        print_errors(report)
    baseline = getattr(getattr(args, "_options", None), "baseline", None)
    if baseline is not None:  # how many findings the baseline suppressed, as ruff says it
        for r in {id(report): report, id(full or report): full or report}.values():
            r.details["baseline_suppressed"] = len(baseline.used)
    opts = render_options(args, use_color(args), sys.stdout.isatty())
    if on_stderr:
        opts["list_errors"] = False
    if getattr(args, "quiet", False):  # the summary of the whole report, whatever view was shown
        report, opts["quiet"] = full or report, True
    failed = write_outputs(full or report, args)
    if failed is not None:
        return failed
    out = render(report, args.format, **opts)
    sys.stdout.write(out)
    sys.stdout.flush()
    return exit_status((full or report).exit_code(), args)


# --------------------------------------------------------------------------- progress

def size_text(n: float) -> str:
    """1,234 bytes, 1.2 MB: a size as a summary line reads it."""
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n}"


class ProgressBar:
    """Progress of long work on standard error, or nothing when not enabled.

    On a terminal: a rich progress bar (transient). Elsewhere (a log file, CI with
    --progress): plain lines at each tenth of the work, "scriptdiff: parsed 400/1,000 files"
    or "scriptdiff: hashing 1.2 GB/3.0 GB". The object the library takes: start(total),
    advance(n) (from any thread), close(); it may be started again after close(). `unit` is
    "bytes" or a noun counted ("files")."""

    def __init__(self, enabled: bool, label: str = "hashing", unit: str = "bytes", stream=None):
        self.enabled = enabled
        self.label = label
        self.unit = unit
        self.stream = stream
        self._p = None
        self._plain = False
        self._lock = threading.Lock()

    def __reduce__(self):  # a worker process gets no progress (a rich bar holds threads and locks)
        return (ProgressBar, (False, self.label, self.unit))

    def _out(self):
        return self.stream or sys.stderr

    def _amount(self, n: int) -> str:
        return size_text(n) if self.unit == "bytes" else f"{n:,}"

    def start(self, total: int) -> None:
        self.close()
        if not self.enabled or total <= 0:
            return
        self._total, self._done, self._step = total, 0, 0
        if not self._out().isatty():
            self._plain = True
            return
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TimeRemainingColumn,
                                   TransferSpeedColumn)

        columns = ([DownloadColumn(), TransferSpeedColumn()] if self.unit == "bytes"
                   else [MofNCompleteColumn(), f"{self.unit}"])
        self._p = Progress("[progress.description]{task.description}", BarColumn(), *columns,
                           TimeRemainingColumn(), console=Console(file=self._out()), transient=True)
        self._p.start()
        self._task = self._p.add_task(self.label, total=total)

    def advance(self, n: int) -> None:
        if self._p is not None:
            with self._lock:
                self._p.update(self._task, advance=n)
        elif self._plain:
            with self._lock:
                self._done += n
                step = min(10, self._done * 10 // self._total)
                if step > self._step:
                    self._step = step
                    self._line()

    def _line(self) -> None:
        total = self._amount(self._total)
        done = self._amount(min(self._done, self._total))
        text = (f"{self.label} {done}/{total}" if self.unit == "bytes"
                else f"{self.label} {done}/{total} {self.unit}")
        print(f"scriptdiff: {text}", file=self._out(), flush=True)

    def close(self) -> None:
        if self._p is not None:
            self._p.stop()
            self._p = None
        self._plain = False

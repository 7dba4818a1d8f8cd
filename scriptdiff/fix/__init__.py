"""`scriptdiff fix GPU NPU`: bring the NPU side back to the GPU side, keeping each file as it was
written (docs/fix.md).

The run is `diff`'s (api.fix runs api.diff with Options.keep_facts, so the same inputs give
the same findings), then:

1. plan (plan.py): each finding becomes edits of the NPU file its value comes from (the
   fact's provenance, recorded by the readers) or a refusal with its reason; the editor is the
   file kind's (rules/kinds.yaml `fixer`: fix/python.py through libcst, fix/shell.py by
   tree-sitter byte spans, fix/yaml.py, fix/json.py, fix/toml.py by the loaders' spans);
2. apply (`apply`): each file's edits, spliced into its text; two fixes editing the same place
   differently are refused; every edited file must still parse (its editor's `parses`);
3. check (api.fix): the same diff again over the edited texts (sources.overlaid, nothing
   written yet): each fixed finding must be gone, no new loud finding may appear and the
   masked substitutions must be the same in number; an edit that does not pass is taken back
   and its finding refused ("not verified");
4. write (`write`), unless --diff: each file again as read (else refused: it changed
   meanwhile), replaced whole (same mode), in its own encoding.

`FixResult` is the outcome: each finding with whether it was fixed and why not, the files
changed (old and new text) and the unified diff; `to_json()` is `fix -f json`.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field

from .. import __version__
from ..model import SCHEMA, InputError, Report
from ..ruleset.registry import detect
from ..ruleset.secrets import redact_text, shown_change
from ..inputs import writeback
from ..inputs.sources import Source
from .base import WHYS, Edit, Refused  # noqa: F401 (the package's names)
from .plan import Decision, encoded, plan  # noqa: F401


@dataclass
class FileChange:
    src: Source
    old: str
    new: str
    _shown: tuple[str, str, set[str]] | None = field(default=None, repr=False, compare=False)

    def shown(self) -> tuple[str, str, set[str]]:
        """The old and new text as `fix` may show them (every secret part withheld: secrets.
        shown_change) and the secrets found in them."""
        if self._shown is None:
            self._shown = shown_change(self.src, self.old, self.new)
        return self._shown


@dataclass
class FixResult:
    gpu: str
    npu: str
    decisions: list[Decision] = field(default_factory=list)
    files: dict[str, FileChange] = field(default_factory=dict)  # display path -> its change
    errors: list[InputError] = field(default_factory=list)
    written: bool = False
    report: Report | None = None  # the diff the fixes were planned from
    after: Report | None = None  # the diff over the edited files (the check)
    masked: tuple[int, int] = (0, 0)  # masked substitutions before and after

    @property
    def fixed(self) -> list[Decision]:
        return [d for d in self.decisions if d.fixed]

    @property
    def refused(self) -> list[Decision]:
        return [d for d in self.decisions if d.chosen and not d.fixed]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for d in self.decisions:
            if not d.fixed:
                out[d.why or "other"] = out.get(d.why or "other", 0) + 1
        return dict(sorted(out.items()))

    def unified(self, name_shown=str) -> str:
        """The unified diff of every changed file (what `fix --diff` prints), every secret part of
        its lines withheld (a changed one by a marker that tells it changed). `name_shown`: how a
        file name is written in its `---`/`+++` headers (the command passes report.values.safe:
        a name holding a line break or an ESC must not start a line of its own)."""
        out = []
        for name in sorted(self.files):
            shown_old, shown_new, _found = self.files[name].shown()
            old, new = shown_old.splitlines(keepends=True), shown_new.splitlines(keepends=True)
            shown = name_shown(name)
            for line in difflib.unified_diff(old, new, fromfile=shown, tofile=shown):
                out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)

    def exit_code(self, diff_mode: bool) -> int:
        """--diff: 1 when something would change, else 0 (as `ruff check --diff`). Writing: 0 when
        every chosen finding was fixed, 1 when some were not. 2: nothing could be compared."""
        if self.report is not None and self.report.errors and any(e.fatal for e in self.report.errors) \
                and self.report.compared == 0:
            return 2
        if diff_mode:
            return 1 if self.files else 0
        return 1 if self.refused else 0

    def to_json(self) -> dict:
        findings = []
        for d in self.decisions:
            j = d.finding.to_json()
            j["fix"] = {"fixed": d.fixed, "action": d.action or None, "reason": None if d.fixed else d.reason,
                        "why": None if d.fixed else d.why,
                        "edits": [self._edit_json(e) for e in d.edits] if d.fixed else []}
            findings.append(j)
        return {
            "schema": SCHEMA,
            "tool": {"name": "scriptdiff", "version": __version__},
            "command": "fix",
            "gpu": self.gpu,
            "npu": self.npu,
            "written": self.written,
            "findings": findings,
            "files": sorted(self.files),
            "summary": {"fixed": len(self.fixed), "not_fixed": len(self.decisions) - len(self.fixed),
                        "by_reason": self.counts(), "masked": {"before": self.masked[0], "after": self.masked[1]}},
            "errors": [e.to_json() for e in self.errors],
        }

    def edit_shown(self, e: Edit) -> tuple[int, str, str]:
        """An edit as it may be shown: its line, the words it replaces and the words it writes,
        every secret part withheld."""
        c = self.files.get(e.path)
        if c is None:
            return 0, "", redact_text(e.text)
        found = c.shown()[2]
        return c.old.count("\n", 0, e.start) + 1, redact_text(c.old[e.start:e.end], found), redact_text(e.text, found)

    def _edit_json(self, e: Edit) -> dict:
        line, old, new = self.edit_shown(e)
        return {"path": e.path, "line": line, "old": old, "new": new}


# ------------------------------------------------------------------------------ applying

def apply(decisions: list[Decision], sources: dict) -> dict[str, FileChange]:
    """Splice every decision's edits into its files. A decision whose edit overlaps another's
    (unless both make the same edit) is refused; a file that would no longer parse refuses
    every decision editing it. Returns the changed files."""
    taken: dict[str, list[tuple[Edit, Decision]]] = {}
    for d in decisions:
        if not d.edits:
            continue
        clash = None
        for e in d.edits:
            for o, od in taken.get(e.path, ()):
                if o == e:
                    continue
                if e.start < o.end and o.start < e.end:  # insertions at one place go in by their order
                    clash = od
        if clash is not None:
            d.refuse(f"another fix ({clash.finding.rule} {clash.finding.key}) edits the same place; fix one, then "
                     f"run fix again", "ambiguous")
            continue
        for e in d.edits:
            if not any(o == e for o, _od in taken.get(e.path, ())):
                taken.setdefault(e.path, []).append((e, d))
    files: dict[str, FileChange] = {}
    for path, edits in taken.items():
        src = sources[path]
        text = src.text
        for e, _d in sorted(edits, key=lambda ed: (ed[0].start, ed[0].end, ed[0].order), reverse=True):
            text = text[:e.start] + e.text + text[e.end:]
        mod = detect(src).fixer_module()
        why = mod.parses(src.text, text) if mod is not None else None
        if why is not None:
            for _e, d in edits:
                d.refuse(f"{path}: {why}; fix it by hand", "file")
            continue
        if text != src.text:
            files[path] = FileChange(src, src.text, text)
    return files


# ------------------------------------------------------------------------------ git

def unvouched(path: str) -> str | None:
    """Why git cannot vouch for the file at `path` (the real path written, a link's target):
    None when it is committed as it is, or when no git repository holds it; else what stops
    the fix (uncommitted or untracked changes, ignored by git, a mark that keeps git status
    from looking at it, or git failing to answer), and what to do about it."""
    from ..inputs import gitsrc  # lazy: keeps --help fast (only fix asks git about the work tree)

    state, detail = gitsrc.work_tree_state(path)
    if state in ("committed", "none"):
        return None
    if state in ("changed", "untracked"):
        return "has uncommitted changes (git status): commit or stash them first"
    if state == "ignored":
        return "is ignored by git (.gitignore): what it holds now is in no commit; commit it first"
    if state in ("skip-worktree", "assume-unchanged"):
        return (f"is marked {state} in git, so git status does not look at it: clear the mark (git update-index "
                f"--no-{state}) and commit it first")
    return (f"is in a repository git does not read ({detail}): git cannot tell whether it has uncommitted "
            f"changes; let git read it first")


# ------------------------------------------------------------------------------ writing

def write(files: dict[str, FileChange]) -> list[str]:
    """Write each changed file (in its encoding, its mode kept, replaced whole and flushed to
    the disk: inputs/writeback.py); a file that changed on disk since it was read, or that a
    replacement would betray (a link, hard links, read-only), is left alone. Returns the names
    not written, each with its reason."""
    failed = []
    for name, c in sorted(files.items()):
        path = os.path.realpath(c.src.origin)  # a link keeps pointing at the file it names
        try:
            writeback.replace(path, c.src.data, encoded(c.src, c.new), name)
        except writeback.WriteRefused as e:
            failed.append(f"{name}: {e}; not written" + (" (run fix again)" if "changed on disk" in str(e) else ""))
    return failed

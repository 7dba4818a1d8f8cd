"""Training logs and metric exports -> one `Run` per side, streamed in bounded memory.

A side is files or folders on disk, or `REV:path` in git. Each file's reader is chosen by
its content, never by its name alone:

  TensorBoard event file   the record header names `brain.Event` (each record's checksums
                           verified, events.py; its protocol buffers are TensorBoard's:
                           `pip install 'scriptdiff[tensorboard]'`)
  HF trainer_state.json    a JSON document with `log_history`
  JSONL export             one JSON object per line with a step field (LLaMA-Factory's
                           trainer_log.jsonl: `current_steps`; W&B: `_step`; `step`, ...)
  CSV export               a header with a step column (W&B's "run - metric" columns too)
  text log, line by line   Megatron-LM/MindSpeed `iteration N/M | key: value | ...` and
                           `validation loss at iteration N | ...`, HF Trainer's printed
                           dicts (`{'loss': ..., 'grad_norm': ...}`), verl/OpenRLHF
                           `step:N - key:value - ...`, DeepSpeed `step=N, skipped=K, lr=[...]`
                           and `steps: N loss: X ...`, and overflow lines

Logs are data, not code: lines are split on their separators (`|`, ` - `, `:`), printed
dicts read with ast.literal_eval, JSON with the package's depth-checked loader. A file in
which no reader recognises anything is listed as such (Run.skipped_files), never guessed.
Every reader records what it recognised (`Recognised`: reader, records, metrics, steps).
"""
from __future__ import annotations

import ast
import csv
import io
import os

from .. import budget
from ..inputs import gitsrc
from ..inputs.jsonload import JSONError, Stream, loads, number
from ..model import InputError
from ..ruleset.secrets import redact_text
from ..inputs.sources import SourceError, open_regular
from ..run.pairing import skip_dirs
from ..inputs.walk import walk
from . import events
from .series import Recognised, Run, canonical

PROGRESS_EVERY = 1 << 20  # bytes between progress updates

STEP_FIELDS = ("current_steps", "global_step", "train/global_step", "trainer/global_step", "step", "_step",
               "Step", "iteration", "iter")
MEGATRON = "Megatron-LM/MindSpeed iteration lines"
MEGATRON_EVAL = "Megatron-LM/MindSpeed validation lines"
HF_STATE = "HF Trainer trainer_state.json log_history"
HF_DICT = "HF Trainer printed metric dicts"
VERL = "verl/OpenRLHF step:N console metrics"
DS_STEP = "DeepSpeed step lines"
DS_OVERFLOW = "DeepSpeed/apex overflow lines"
TB = "TensorBoard event file"


class ReadError(Exception):
    """A side that cannot be read: one line naming it."""


class _Opened:
    """One input file: its display name, size and a way to open its bytes."""

    def __init__(self, display: str, size: int, path: str | None = None, blob=None, data: bytes | None = None):
        self.display, self.size, self.path, self.blob, self.data = display, size, path, blob, data

    def open(self):
        if self.data is not None:
            return io.BytesIO(self.data)
        if self.blob is not None:  # a git blob (gitsrc.BlobEntry): refused past the size cap
            return io.BytesIO(self.blob.source().data)
        return open_regular(self.path, self.display)


def inputs(spec: str, errors: list, repo_dir: str = ".") -> list[_Opened]:
    """The files of one side argument: a file, a folder (walked), or REV:path."""
    rp = gitsrc.split_revpath(spec)
    if rp is not None:
        rev, path = rp
        try:
            repo = gitsrc.open_repo(repo_dir)
            found = gitsrc.listing(repo, rev, [path.strip("/")] if path.strip("/") else None, skip_dirs())
        except gitsrc.GitError as e:
            raise ReadError(str(e)) from None
        return [_Opened(e.display, e.size, blob=e) for _k, e in sorted(found.items())]
    if os.path.isdir(spec):
        found = walk(spec, skip_dirs(), errors, spec.rstrip("/"))
        return [_Opened(e.display, e.size, path=e.path) for _k, e in sorted(found.items())
                if e.refused is None]  # a link out of the folder: said by the walk, never opened
    if not os.path.exists(spec):
        raise ReadError(f"{spec}: no such file or directory")
    try:
        size = os.path.getsize(spec)
    except OSError as e:
        raise ReadError(f"{spec}: cannot read: {e.strerror or e}") from None
    return [_Opened(spec, size, path=spec)]


def read_bytes(name: str, data: bytes, label: str) -> Run:
    """One file already in memory (a Source the engine read) as a Run."""
    return read_side([], label, files=[_Opened(name, len(data), data=data)])


def read_side(specs: list[str], label: str, progress=None, cap: int = budget.CURVE_POINTS, repo_dir: str = ".",
              files: list[_Opened] | None = None) -> Run:
    """Every file of a side, read into one Run (resumed runs: later files continue the steps)."""
    run = Run(label=label, cap=cap)
    if files is None:
        files = []
        for s in specs:
            try:
                files += inputs(s, run.errors, repo_dir)
            except ReadError as e:
                run.errors.append(InputError(s, str(e).split(": ", 1)[-1] if str(e).startswith(s) else str(e),
                                             fatal=True))
    for f in files:
        try:
            read_file(f, run, progress)
        except SourceError as e:
            run.errors.append(InputError(f.display, str(e).split(": ", 1)[-1], fatal=True))
        except OSError as e:
            run.errors.append(InputError(f.display, f"cannot read: {e.strerror or e}", fatal=True))
    return run


def line_text(run: Run, display: str, line: int | None, offset: int | None) -> str:
    """The text of one cited log line (a finding's excerpt), read again from its file: at its
    byte offset, or by counting lines (CSV); secret-looking words withheld; "" when the file
    cannot be opened again or the line is not there."""
    f = run.opened.get(display)
    if f is None or not line:
        return ""
    try:
        with f.open() as fh:
            if offset is not None:
                fh.seek(offset)
                raw = fh.readline(budget.LOG_LINE)
            else:
                raw = b""
                for k, raw in enumerate(_lines(fh), 1):
                    if k == line:
                        break
                else:
                    return ""
    except (OSError, SourceError, gitsrc.GitError):
        return ""
    text = raw.decode("utf-8", "replace").strip()
    if len(text) > budget.SHOWN_LOG_LINE:
        text = text[:budget.SHOWN_LOG_LINE] + "…"
    return redact_text(text)


def read_file(f: _Opened, run: Run, progress=None) -> None:
    run.opened[f.display] = f
    with f.open() as fh:
        head = fh.read(budget.LOG_HEAD)
        fh.seek(0)
        if not head:
            run.skipped_files.append(f"{f.display} (empty)")
            return
        if b"brain.Event" in head[:budget.EVENT_SNIFF] or (b"\x00" in head[:budget.LOG_BINARY_SNIFF] and "tfevents" in f.display):
            _tensorboard(f, run)
            _advance(progress, f.size)
            return
        if b"\x00" in head[:budget.LOG_BINARY_SNIFF]:
            run.skipped_files.append(f"{f.display} (binary)")
            _advance(progress, f.size)
            return
        stripped = head.lstrip()
        if stripped.startswith(b"{") and b'"log_history"' in head:
            _trainer_state(f, fh, run)
            _advance(progress, f.size)
            return
        first = stripped.split(b"\n", 1)[0].strip()
        if first.startswith(b"{") and first.endswith(b"}") and _json_object(first) is not None:
            _jsonl(f, fh, run, progress)
            return
        if b"," in first and _csv_step_column(first) is not None:
            _csv(f, fh, run, progress)
            return
        _text(f, fh, run, progress)


def _advance(progress, n: int) -> None:
    if progress is not None and n:
        progress.advance(n)


def _note(rec: Recognised, step: float) -> None:
    """One more record at `step`."""
    rec.records += 1
    if rec.first_step is None or step < rec.first_step:
        rec.first_step = step
    if rec.last_step is None or step > rec.last_step:
        rec.last_step = step


def _finish(run: Run, rec: Recognised | None, names: set) -> None:
    if rec is not None and rec.records:
        rec.metrics = sorted(names)
        run.recognised.append(rec)


# --- text logs --------------------------------------------------------------------------------

_KEYS: dict[bytes, str | None] = {}


def _key(raw: bytes) -> str:
    k = _KEYS.get(raw)
    if k is None:
        k = _KEYS[raw] = canonical(raw.decode("utf-8", "replace").strip())
    return k


def _text(f: _Opened, fh, run: Run, progress) -> None:
    """One pass over a text log; each line goes to the reader its content names."""
    recs: dict[str, tuple[Recognised, set]] = {}
    hf_train = 0  # the console prints no step: HF dicts are numbered in order

    def rec(reader: str) -> tuple[Recognised, set]:
        r = recs.get(reader)
        if r is None:
            r = recs[reader] = (Recognised(path=f.display, reader=reader), set())
        return r

    done = 0
    lineno = 0
    offset = 0  # of the next line
    add = run.add
    mark = run.lines.appenders(f.display)  # where each record was read (findings name its line)
    by_raw: dict = {}  # Megatron key as printed -> its Track
    last_step = None
    for line in _lines(fh):
        lineno += 1
        if not line.endswith(b"\n") and _cut(f, fh, line, lineno, run, bool(recs)):
            break
        start = offset
        offset += len(line)
        if lineno & 0x1FFF == 0:
            for t in run.tracks.values():  # fold what the hot loop appended (bounded memory)
                t.due()
            run.lines.due()
            if progress is not None:
                pos = fh.tell()
                _advance(progress, pos - done)
                done = pos
        if b"iteration" in line and b"|" in line:
            if b"validation loss at iteration" in line:
                r, names = rec(MEGATRON_EVAL)
                segs = line.split(b"|")
                step = _int_after(segs[0], b"iteration")
                if step is None:
                    continue
                for seg in segs[1:]:
                    k, sep, v = seg.partition(b":")
                    if not sep:
                        continue
                    name = k.strip().decode("utf-8", "replace")
                    name = {"lm loss value": "eval_loss", "lm loss PPL": "eval_ppl"}.get(
                        name, "eval_" + name.replace(" ", "_"))
                    try:
                        val = float(v)
                    except ValueError:
                        continue
                    add(name, step, val, (f.display, lineno))
                    names.add(name)
                _note(r, step)
                mark(step, lineno, start, True)
                continue
            segs = line.split(b"|")
            head = segs[0]
            i = head.find(b"iteration")
            slash = head.find(b"/", i)
            if i < 0 or slash < 0:
                continue
            try:
                step = float(int(head[i + 9:slash]))
            except ValueError:
                continue
            r, names = rec(MEGATRON)
            for seg in segs[1:]:  # the hot path of a multi-gigabyte log: one lookup, one append
                k, sep, v = seg.partition(b":")
                if not sep:
                    continue
                try:
                    val = float(v)
                except ValueError:
                    continue
                app = by_raw.get(k)
                if app is None:
                    name = _key(k)
                    add(name, step, val, (f.display, lineno))
                    names.add(name)
                    by_raw[k] = run.tracks[name].appenders()
                    continue
                app[0](step)
                app[1](val)
            _note(r, step)
            mark(step, lineno, start)
            last_step = step
            continue
        if b"step:" in line and b" - " in line:
            j = line.find(b"step:")
            parts = line[j:].rstrip().split(b" - ")
            try:
                step = float(int(parts[0][5:]))
            except ValueError:
                continue
            r, names = rec(VERL)
            for p in parts[1:]:
                k, sep, v = p.rpartition(b":")
                if not sep:
                    continue
                try:
                    val = float(v)
                except ValueError:
                    continue
                name = _key(k)
                add(name, step, val, (f.display, lineno))
                names.add(name)
            _note(r, step)
            mark(step, lineno, start)
            last_step = step
            continue
        if b"{'" in line and len(line) < budget.DICT_LINE:
            a, b = line.find(b"{"), line.rfind(b"}")
            if b <= a:
                continue
            try:
                d = ast.literal_eval(line[a:b + 1].decode("utf-8", "replace"))
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                continue
            if not isinstance(d, dict) or "train_runtime" in d:  # the end-of-training summary
                continue
            vals = {str(k): number(v) for k, v in d.items()}
            vals = {k: v for k, v in vals.items() if v is not None}
            if not vals:
                continue
            is_eval = any(k.startswith("eval_") for k in vals)
            if not is_eval:
                hf_train += 1
            step = float(hf_train)
            r, names = rec(HF_DICT)
            r.note = "no step is printed: records numbered in order"
            for k, v in vals.items():
                name = canonical(k)
                add(name, step, v, (f.display, lineno))
                names.add(name)
            _note(r, step)
            mark(step, lineno, start, is_eval)
            last_step = step
            continue
        if b"step=" in line and b"skipped=" in line:
            step = _int_after(line, b"step=")
            skipped = _int_after(line, b"skipped=")
            if step is None:
                continue
            r, names = rec(DS_STEP)
            if skipped is not None:
                add("skipped_total", step, skipped, (f.display, lineno))
                names.add("skipped_total")
            k = line.find(b"lr=[")
            if k >= 0:
                end = line.find(b"]", k)
                first = line[k + 4:end].split(b",")[0]
                try:
                    add("lr", step, float(first), (f.display, lineno))
                    names.add("lr")
                except ValueError:
                    pass
            _note(r, step)
            mark(step, lineno, start)
            last_step = step
            continue
        if b"steps:" in line and b"loss:" in line:
            step = _int_after(line, b"steps:")
            k = line.find(b"loss:")
            if step is None:
                continue
            try:
                val = float(line[k + 5:].split()[0])
            except (ValueError, IndexError):
                continue
            r, names = rec(DS_STEP)
            add("loss", step, val, (f.display, lineno))
            names.add("loss")
            _note(r, step)
            mark(step, lineno, start)
            last_step = step
            continue
        if b"OVERFLOW!" in line or b"Gradient overflow" in line:
            run.overflow_lines += 1
            if len(run.overflow_at) < budget.OVERFLOW_LINES:
                run.overflow_at.append((last_step, f.display, lineno))
            r, names = rec(DS_OVERFLOW)
            r.records += 1
    _advance(progress, max(0, f.size - done))
    if not recs:
        run.skipped_files.append(f"{f.display} (no training metrics recognised)")
    for r, names in recs.values():
        if r.reader == DS_OVERFLOW:
            run.recognised.append(r)
            continue
        _finish(run, r, names)


def _lines(fh):
    """The file's lines, none longer than budget.LOG_LINE (a longer one comes in pieces)."""
    return iter(lambda: fh.readline(budget.LOG_LINE), b"")


def _cut(f: _Opened, fh, line: bytes, lineno: int, run: Run, log: bool) -> bool:
    """Whether `line`, which has no newline, is the last of the file: a log written line by line
    that ends inside a line was cut while it was written (a killed job, a copy made too
    early), and the line may be a record cut short (`lm loss: 2.4` of `2.4183E+00`). It is
    not read, and in a file already recognised as a log (`log`) it is said: a cut log is an
    error, never a shorter run."""
    pos = fh.tell()
    if fh.read(1):
        fh.seek(pos)
        return False  # a piece of a line longer than budget.LOG_LINE
    if log:  # (even a last line of spaces: the line it began was cut)
        run.errors.append(_cut_error(f, lineno))
    return True


def _cut_error(f: _Opened, lineno: int) -> InputError:
    return InputError(f.display, f"line {lineno:,}: the file ends inside this line (cut while it was written?); "
                                 f"the line was not read, the lines before it are compared, and the curves "
                                 f"cannot pass", fatal=True)


def _int_after(line: bytes, marker: bytes) -> float | None:
    i = line.find(marker)
    if i < 0:
        return None
    rest = line[i + len(marker):].lstrip()
    n = 0
    while n < len(rest) and 48 <= rest[n] <= 57:
        n += 1
    return float(int(rest[:n])) if n else None


# --- structured exports -----------------------------------------------------------------------

def _json_object(text: bytes):
    try:
        d = loads(text)
    except (JSONError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def _step_of(d: dict) -> tuple[str, float] | None:
    for k in STEP_FIELDS:
        v = number(d.get(k))
        if v is not None:
            return k, v
    return None


def _jsonl(f: _Opened, fh, run: Run, progress) -> None:
    rec: Recognised | None = None
    names: set = set()
    done = 0
    offset = 0
    mark = run.lines.appenders(f.display)
    for lineno, line in enumerate(_lines(fh), 1):
        if lineno & 0x3FF == 0 and progress is not None:
            pos = fh.tell()
            _advance(progress, pos - done)
            done = pos
        if not line.endswith(b"\n") and _json_object(line.strip()) is None \
                and _cut(f, fh, line, lineno, run, rec is not None):
            break  # (a last line without a newline that is a whole JSON object is a whole record)
        start = offset
        offset += len(line)
        line = line.strip()
        if not line:
            continue
        d = _json_object(line)
        if d is None:
            run.errors.append(InputError(f.display, f"line {lineno}: not a JSON object; the line was skipped"))
            continue
        st = _step_of(d)
        if st is None:
            continue
        if rec is None:
            reader = ("LLaMA-Factory trainer_log.jsonl" if st[0] == "current_steps"
                      else "W&B JSONL export" if st[0] == "_step" else "JSONL export")
            rec = Recognised(path=f.display, reader=reader)
        step = st[1]
        _add_record(run, names, d, step, lambda k: k == st[0] or k in STEP_FIELDS, (f.display, lineno))
        _note(rec, step)
        mark(step, lineno, start)
    _advance(progress, max(0, f.size - done))
    if rec is None:
        run.skipped_files.append(f"{f.display} (JSON lines without a step field)")
    _finish(run, rec, names)


def _csv_columns(header: list[str]) -> list[str]:
    """W&B's CSV export names columns "<run> - <metric>" and adds __MIN/__MAX bands."""
    out = []
    for h in header:
        h = h.strip()
        if " - " in h:
            h = h.split(" - ", 1)[1]
        out.append(h)
    return out


def _csv_step_column(first: bytes) -> int | None:
    try:
        header = next(csv.reader([first.decode("utf-8-sig", "replace")]))
    except (csv.Error, StopIteration):
        return None
    cols = _csv_columns(header)
    for k in STEP_FIELDS:
        if k in cols:
            return cols.index(k)
    return None


def _csv(f: _Opened, fh, run: Run, progress) -> None:
    text = io.TextIOWrapper(fh, encoding="utf-8-sig", errors="replace", newline="")
    ended: list[int] = []  # the line the file ended inside (no newline after it), if any

    def lines():
        n = 0
        for line in iter(lambda: text.readline(budget.LOG_LINE), ""):
            n += 1
            if not line.endswith(("\n", "\r")):
                ahead = text.readline(budget.LOG_LINE)
                if not ahead:  # the last line, cut: its row is not read
                    ended.append(n)
                    return
                line += ahead  # a piece of a line longer than budget.LOG_LINE
            yield line

    reader = csv.reader(lines())
    header = _csv_columns(next(reader))
    sc = next(i for k in STEP_FIELDS for i, h in enumerate(header) if h == k)
    cols = [(i, canonical(h)) for i, h in enumerate(header)
            if i != sc and h and h not in STEP_FIELDS and not h.endswith(("__MIN", "__MAX", "__step"))]
    rec = Recognised(path=f.display, reader="W&B CSV export" if " - " in ",".join(header) or header[sc] == "Step"
                     else "CSV export")
    names: set = set()
    lineno = 1
    mark = run.lines.appenders(f.display)
    try:
        for row in reader:
            lineno += 1
            if len(row) <= sc:
                continue
            step = number(row[sc])
            if step is None:
                continue
            for i, name in cols:
                if i < len(row) and row[i].strip():
                    val = number(row[i])
                    if val is not None:
                        run.add(name, step, val, (f.display, lineno))
                        names.add(name)
            _note(rec, step)
            mark(step, lineno, -1)  # the csv module reads text: no byte offset
    except csv.Error as e:  # e.g. a field past the csv module's size limit
        run.errors.append(InputError(f.display, f"line {lineno + 1}: {e}; the rest of the file was not read"))
    if ended:
        run.errors.append(_cut_error(f, ended[0]))
    _advance(progress, f.size)
    if not rec.records:
        run.skipped_files.append(f"{f.display} (CSV without numeric rows)")
    _finish(run, rec, names)


def _trainer_state(f: _Opened, fh, side: Run) -> None:
    """HF trainer_state.json, streamed: its log_history is decoded one record at a time
    (_log_history), so memory follows one record, not the document. A malformed document
    adds nothing to the side (its records are read into a run of their own first): a damaged
    file is an error, never a shorter run."""
    run = Run(label=side.label, cap=side.cap)
    try:
        _read_state(f, fh, run, side.lines.appenders(f.display))
    finally:
        side.errors.extend(run.errors)
        side.skipped_files.extend(run.skipped_files)
        side.recognised.extend(run.recognised)
    if any(e.fatal for e in run.errors):
        return
    if not side.tracks:
        side.tracks = run.tracks
        return
    for name, t in run.tracks.items():  # a later file of a resumed run
        for step, value in zip(*t.arrays()):
            side.add(name, float(step), float(value), t.first_line)


def _read_state(f: _Opened, fh, run: Run, mark) -> None:
    rec = Recognised(path=f.display, reader=HF_STATE)
    names: set = set()
    where = (f.display, None)  # a JSON document: records have no line of their own (marked line 0)
    apps: dict = {"step": None}  # field -> its track's appenders (None: not a metric); the hot path
    try:
        for k, d in enumerate(_log_history(fh)):
            if not isinstance(d, dict) or "train_runtime" in d:
                continue
            step = number(d.get("step"))
            if step is None:
                continue
            if k & 0x1FFF == 0:
                for t in run.tracks.values():  # fold what the hot loop appended (bounded memory)
                    t.due()
            for key, v in d.items():
                app = apps.get(key, False)
                if app is None:
                    continue
                val = v if type(v) is float else number(v) if not isinstance(v, str) else None
                if val is None:
                    continue
                if app is False:  # a field met for the first time
                    name = canonical(key)
                    run.add(name, step, val, where)
                    names.add(name)
                    apps[key] = run.tracks[name].appenders()
                    continue
                app[0](step)
                app[1](val)
            _note(rec, step)
            mark(step, 0, 0)
    except JSONError as e:
        run.errors.append(InputError(f.display, f"not valid JSON: {str(e).splitlines()[0]}", fatal=True))
        return
    except _NoHistory:
        run.errors.append(InputError(f.display, "log_history is not a list; not read", fatal=True))
        return
    if not rec.records:
        run.skipped_files.append(f"{f.display} (empty log_history)")
    _finish(run, rec, names)


class _NoHistory(Exception):
    """A JSON object without a log_history list."""


def _log_history(fh):
    """The records of a trainer_state.json's top-level "log_history" list, one at a time,
    streamed (jsonload.Stream: a chunk's worth of records decoded at once, a value of more
    than budget.LOG_RECORD characters is an error). Raises JSONError for malformed JSON,
    _NoHistory when there is no log_history list."""
    doc = Stream(fh, budget.LOG_RECORD, budget.LOG_CHUNK)
    if doc.peek() != "{":
        raise JSONError(f"expected '{{' {doc.where()}")
    for key in doc.members():
        if key == "log_history":
            if doc.peek() != "[":
                raise _NoHistory
            yield from doc.elements()
            return
    raise _NoHistory


def _tensorboard(f: _Opened, run: Run) -> None:
    """Scalars of a TensorBoard event file, read record by record with each record's checksums
    verified (events.py); the Event protocol buffers are TensorBoard's (an optional extra)."""
    try:
        import google_crc32c  # noqa: F401  (events.py verifies each record with it)
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.util import tensor_util
    except ImportError:
        run.errors.append(InputError(f.display, "a TensorBoard event file: install 'scriptdiff[tensorboard]' "
                                                "to read it; not read", fatal=True))
        return
    rec = Recognised(path=f.display, reader=TB)
    names: set = set()
    damage = events.Damage()
    mark = run.lines.appenders(f.display)
    with f.open() as fh:
        try:
            size = os.fstat(fh.fileno()).st_size  # as it is now: a file still written has grown since it was listed
        except (OSError, ValueError):  # in memory (a git blob)
            size = f.size
        for index, offset, data in events.records(fh, size, damage):
            try:
                ev = Event.FromString(data)
            except Exception as e:  # noqa: BLE001  (protobuf's DecodeError: its checksums matched, its content did not)
                damage.refuse(index, offset, f"not an Event record ({type(e).__name__}; skipped)")
                continue
            if not ev.HasField("summary"):
                continue
            for v in ev.summary.value:
                if v.HasField("tensor"):
                    dims = [d.size for d in v.tensor.tensor_shape.dim]
                    if any(d != 1 for d in dims):  # a scalar only: never built from a declared shape
                        continue
                    try:
                        arr = tensor_util.make_ndarray(v.tensor)
                        if arr.size != 1:
                            continue
                        val = float(arr.reshape(-1)[0])
                    except (TypeError, ValueError):
                        continue
                elif v.HasField("simple_value"):
                    val = float(v.simple_value)
                else:
                    continue
                name = canonical(v.tag)
                run.add(name, float(ev.step), val, (f.display, None))
                names.add(name)
            _note(rec, float(ev.step))
            mark(float(ev.step), 0, offset)
    said = damage.message()
    if said:  # compared as far as it is trusted, never as a shorter run: an error, and no pass
        run.errors.append(InputError(f.display, said, fatal=True))
    if not rec.records:
        run.skipped_files.append(f"{f.display} (no scalars)")
    _finish(run, rec, names)


def _add_record(run, names: set, record: dict, step, skip, where) -> None:
    """Every numeric field of one logged record (but the step fields `skip` names) as a point
    of its canonical series at `step`; strings are not metrics."""
    for k, v in record.items():
        if skip(k):
            continue
        val = number(v) if not isinstance(v, str) else None
        if val is None:
            continue
        name = canonical(k)
        run.add(name, step, val, where)
        names.add(name)

"""Issue 14, warm runs: the same `diff` on unchanged inputs replays its stored output
(scriptdiff/runmemo.py), and any change to what the run read, or could have read, runs it again."""
from __future__ import annotations

import json
import os

import pytest

from conftest import run_cli
from scriptdiff import api
from scriptdiff.inputs import store
from scriptdiff.commands import runmemo

GPU = "import torch\nopt = torch.optim.AdamW(params, lr=3e-4)\n"
NPU = "import torch\nimport torch_npu\nopt = torch.optim.AdamW(params, lr={lr})\n"


@pytest.fixture
def memo(tmp_path, monkeypatch):
    """Run memo on, in a cache of its own; no racy window (these files are seconds old); a
    counter of the runs that really compared."""
    monkeypatch.delenv("SCRIPTDIFF_NO_RUN_MEMO", raising=False)
    monkeypatch.setenv("SCRIPTDIFF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(runmemo, "RACY_NS", 0)
    monkeypatch.chdir(tmp_path)
    calls = []
    real = api.diff
    monkeypatch.setattr(api, "diff", lambda *a, **k: calls.append(a) or real(*a, **k))
    for side, text in (("gpu", GPU), ("npu", NPU.format(lr="3e-4"))):
        (tmp_path / side / "sub").mkdir(parents=True)
        (tmp_path / side / "sub" / "train.py").write_text(text, encoding="utf-8")
    return calls


def lr_values(out: str):
    return [(f["gpu"]["value"], f["npu"]["value"]) for f in json.loads(out)["findings"] if f["key"] == "lr"]


def test_the_same_diff_on_unchanged_inputs_is_replayed(memo):
    first = run_cli("diff", "gpu", "npu", "--format", "json")
    second = run_cli("diff", "gpu", "npu", "--format", "json")
    assert first == second and first[0] == 0
    assert len(memo) == 1  # the second run compared nothing: it replayed


def test_a_changed_file_is_compared_again_even_with_its_time_stamp_put_back(memo, tmp_path):
    run_cli("diff", "gpu", "npu", "--format", "json")
    f = tmp_path / "npu" / "sub" / "train.py"
    st = f.stat()
    f.write_text(NPU.format(lr="1e-4"), encoding="utf-8")  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # the change time still moves
    code, out, _ = run_cli("diff", "gpu", "npu", "--format", "json")
    assert (code, lr_values(out)) == (1, [(0.0003, 0.0001)])
    assert len(memo) == 2


def test_a_file_added_to_a_folder_is_compared_again(memo, tmp_path):
    run_cli("diff", "gpu", "npu", "--format", "json")
    (tmp_path / "gpu" / "sub" / "eval.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "npu" / "sub" / "eval.py").write_text("x = 2\n", encoding="utf-8")
    code, out, _ = run_cli("diff", "gpu", "npu", "--format", "json")
    assert code == 1 and [(f["rule"], f["gpu"]["value"], f["npu"]["value"]) for f in json.loads(out)["findings"]] \
        == [("SD102", 1, 2)]
    assert len(memo) == 2


def test_a_referenced_config_that_appears_is_read(memo, tmp_path):
    """`--deepspeed ds.json` found nowhere: the run says so; once the file is there, it is read."""
    for side, stage in (("gpu", 2), ("npu", 3)):
        (tmp_path / side / "sub" / "run.sh").write_text(
            "torchrun train.py --deepspeed ds.json --lr 1e-4\n", encoding="utf-8")
    code, out, _ = run_cli("diff", "gpu", "npu", "--format", "json")
    assert not [f for f in json.loads(out)["findings"] if f["key"] == "zero_stage"]
    for side, stage in (("gpu", 2), ("npu", 3)):
        (tmp_path / side / "sub" / "ds.json").write_text(json.dumps({"zero_optimization": {"stage": stage}}))
    code, out, _ = run_cli("diff", "gpu", "npu", "--format", "json")
    assert [(f["gpu"]["value"], f["npu"]["value"]) for f in json.loads(out)["findings"]
            if f["key"] == "zero_stage"] == [(2, 3)]
    assert len(memo) == 2


def test_other_arguments_or_environment_are_another_run(memo, monkeypatch):
    run_cli("diff", "gpu", "npu", "--format", "json")
    run_cli("diff", "gpu", "npu", "--format", "sarif")
    monkeypatch.setenv("NO_COLOR", "1")
    run_cli("diff", "gpu", "npu", "--format", "json")
    assert len(memo) == 3


def test_what_is_not_replayed(memo, tmp_path, monkeypatch):
    run_cli("diff", "gpu", "npu", "--format", "json", "--no-cache")
    run_cli("diff", "gpu", "npu", "--format", "json", "--no-cache")
    assert len(memo) == 2  # --no-cache: never stored
    assert run_cli("diff", "gpu", "missing", "--format", "json")[0] == 2
    assert run_cli("diff", "gpu", "missing", "--format", "json")[0] == 2
    assert len(memo) == 4  # a missing input: exit 2, never stored
    monkeypatch.setattr(runmemo, "RACY_NS", 10 ** 12)  # every file counts as just modified
    run_cli("diff", "gpu", "npu", "--format", "sarif")
    run_cli("diff", "gpu", "npu", "--format", "sarif")
    assert len(memo) == 6


def test_an_output_file_is_written_again_by_a_replay(memo, tmp_path):
    argv = ("diff", "gpu", "npu", "--format", "json", "-o", "sarif=out/r.sarif")
    (tmp_path / "out").mkdir()
    first = run_cli(*argv)
    report = (tmp_path / "out" / "r.sarif").read_text(encoding="utf-8")
    assert first[0] == 0 and json.loads(report)["version"] == "2.1.0"
    (tmp_path / "out" / "r.sarif").write_text("stale", encoding="utf-8")
    assert run_cli(*argv) == first and len(memo) == 1  # replayed: the file written again, nothing compared
    assert (tmp_path / "out" / "r.sarif").read_text(encoding="utf-8") == report
    # an entry that names a file the arguments do not name is not replayed: the run compares again
    key = runmemo._key(list(argv))
    entry = store.get(key, loads=json.loads)
    entry["files"] = [[str(tmp_path / "elsewhere.txt"), "x"]]
    store.put(key, entry)
    assert run_cli(*argv) == first and len(memo) == 2
    assert not (tmp_path / "elsewhere.txt").exists()


def test_a_tampered_or_foreign_entry_is_not_replayed(memo, tmp_path):
    first = run_cli("diff", "gpu", "npu", "--format", "json")
    entries = [p for p in (tmp_path / "cache").rglob("*.json")
               if b'"paths"' in p.read_bytes()]
    assert len(entries) == 1
    head, _, payload = entries[0].read_bytes().partition(b"\n")
    doc = json.loads(payload)
    doc["out"], doc["code"] = '{"findings": []}', 0  # a forged pass
    entries[0].write_bytes(head + b"\n" + json.dumps(doc).encode())
    assert run_cli("diff", "gpu", "npu", "--format", "json") == first
    assert len(memo) == 2
    # written with the right digest but the wrong shape: a miss, not a crash
    k = json.loads(head)["key"]
    store.put(k, {"paths": "x", "out": 1})
    assert run_cli("diff", "gpu", "npu", "--format", "json") == first
    assert len(memo) == 3


def test_a_replay_reads_no_input(memo, tmp_path, monkeypatch, capsys):
    """What a replay costs: one look at each recorded path, no file opened but its entry, and
    no comparison run: the stored output is written as it was."""
    code, first, _ = run_cli("diff", "gpu", "npu", "--format", "json")
    assert len(memo) == 1
    opened, looked = [], []
    real_open, real_identity = os.open, runmemo.identity
    monkeypatch.setattr(os, "open", lambda p, *a, **k: opened.append(str(p)) or real_open(p, *a, **k))
    monkeypatch.setattr(runmemo, "identity", lambda p: looked.append(p) or real_identity(p))
    entry = next(json.loads(p.read_bytes().partition(b"\n")[2]) for p in (tmp_path / "cache").rglob("*.json")
                 if b'"paths"' in p.read_bytes())
    assert runmemo.replay(["diff", "gpu", "npu", "--format", "json"]) == code == 0
    assert capsys.readouterr().out == first
    assert len(memo) == 1  # api.diff was not called again
    assert looked == [path for path, _ident in entry["paths"]] and looked
    assert all(str(tmp_path / "cache") in p for p in opened) and len(opened) == 1


def test_output_cut_short_by_a_closed_pipe_is_not_stored(memo, monkeypatch):
    """`scriptdiff diff ... | head`: the pipe closes, the run exits 0 without its whole output;
    replaying that later would print a whole report with the wrong status."""
    import contextlib
    import io

    from scriptdiff.cli import main

    class Closed(io.StringIO):
        def write(self, s):
            raise BrokenPipeError

    with contextlib.redirect_stdout(Closed()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["diff", "gpu", "npu", "--format", "json"]) == 0
    code, out, _ = run_cli("diff", "gpu", "npu", "--format", "json")
    assert code == 0 and json.loads(out)["findings"] == []
    assert len(memo) == 2  # compared again: nothing was stored


def _edit_before_the_run_ends(monkeypatch, path, text):
    """Edit `path` after the run read it and before it ends: from the hook that ends it."""
    real = runmemo.finish

    def finish(rec, code):
        st = path.stat()
        path.write_text(text, encoding="utf-8")  # the same size: only the times tell it
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        real(rec, code)

    monkeypatch.setattr(runmemo, "finish", finish)


def test_a_file_edited_after_it_was_read_is_compared_again(memo, tmp_path, monkeypatch):
    """Issue 32: the identity of each file is the one it had when the run read it, not when the
    run ended; a file edited in between (a slow run, no racy window) is never replayed with the
    findings of its old bytes."""
    f = tmp_path / "npu" / "sub" / "train.py"
    with monkeypatch.context() as m:
        _edit_before_the_run_ends(m, f, NPU.format(lr="1e-4"))
        code, out, _ = run_cli("diff", "gpu", "npu", "--format", "json")
    assert (code, lr_values(out)) == (0, [])  # what the run read: lr 3e-4 on both sides
    code, out, _ = run_cli("diff", "gpu", "npu", "--format", "json")
    assert (code, lr_values(out)) == (1, [(0.0003, 0.0001)])  # the edit, as --no-cache sees it
    assert run_cli("diff", "gpu", "npu", "--format", "json", "--no-cache")[:2] == (code, out)
    assert len(memo) == 3


def test_a_slow_run_on_old_files_is_stored_and_a_later_edit_still_misses(memo, tmp_path, monkeypatch):
    """With the real racy window: the files are old (the clock moved an hour on), the run is
    stored, an unchanged file replays, and an edit made after the read is a miss."""
    monkeypatch.setattr(runmemo, "RACY_NS", 2_000_000_000)
    real_now = runmemo._now
    monkeypatch.setattr(runmemo, "_now", lambda: real_now() + 3600 * 10 ** 9)
    first = run_cli("diff", "gpu", "npu", "--format", "json")
    assert run_cli("diff", "gpu", "npu", "--format", "json") == first and len(memo) == 1  # replayed
    f = tmp_path / "npu" / "sub" / "train.py"
    with monkeypatch.context() as m:
        _edit_before_the_run_ends(m, f, NPU.format(lr="1e-4"))
        run_cli("diff", "gpu", "npu", "--format", "sarif")
    code, out, _ = run_cli("diff", "gpu", "npu", "--format", "sarif")
    assert len(memo) == 3 and code == 1 and "0.0001" in out


def test_the_same_check_on_unchanged_inputs_is_replayed_and_an_edit_is_read(tmp_path, monkeypatch):
    monkeypatch.delenv("SCRIPTDIFF_NO_RUN_MEMO", raising=False)
    monkeypatch.setenv("SCRIPTDIFF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(runmemo, "RACY_NS", 0)
    work = tmp_path / "proj"
    for side, text in (("gpu", GPU), ("npu", NPU.format(lr="1e-4"))):
        (work / side).mkdir(parents=True)
        (work / side / "train.py").write_text(text, encoding="utf-8")
    (work / "scriptdiff.toml").write_text('[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n', encoding="utf-8")
    monkeypatch.chdir(work)
    calls = []
    real = api.check
    monkeypatch.setattr(api, "check", lambda *a, **k: calls.append(a) or real(*a, **k))
    first = run_cli("check", "--format", "json")
    assert first[0] == 1 and lr_values(first[1]) == [(0.0003, 0.0001)]
    assert run_cli("check", "--format", "json") == first and len(calls) == 1  # replayed
    (work / "npu" / "train.py").write_text(NPU.format(lr="3e-4"), encoding="utf-8")
    assert lr_values(run_cli("check", "--format", "json")[1]) == [] and len(calls) == 2
    # a run that read what a file's identity cannot vouch for (an object store) is never replayed
    monkeypatch.setattr(api, "check", lambda *a, **k: calls.append(a) or runmemo.spoil("an object store")
                        or real(*a, **k))
    run_cli("check", "--format", "sarif")
    run_cli("check", "--format", "sarif")
    assert len(calls) == 4

"""Bounded evaluation and reading (issue 32): every evaluator meters what it builds, every
reader bounds what it takes in, and a hostile input is one line, never a blow-up, a wait or
a traceback.

Budgets are lowered with monkeypatch (scriptdiff/budget.py) so that the shapes stay small;
each test asserts the outcome (the "too large to evaluate" line naming the file and line, the
other settings still compared, the exit status, the one-line error), never a time.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import scriptdiff.budget as budget
from test_weights_torch_layout import _Tensor, fake_torch  # noqa: F401  (a fixture)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fuzz"))
import classes_bounds as shapes  # noqa: E402


def _pair(tmp_path, name, gpu, npu):
    g, n = tmp_path / "gpu" / name, tmp_path / "npu" / name
    g.parent.mkdir(parents=True, exist_ok=True)
    n.parent.mkdir(parents=True, exist_ok=True)
    g.write_text(gpu) if isinstance(gpu, str) else g.write_bytes(gpu)
    n.write_text(npu) if isinstance(npu, str) else n.write_bytes(npu)
    return str(g), str(n)


def _json(cli, *args):
    code, out, err = cli(*args, "--format", "json")
    assert "Traceback" not in err and "internal error" not in err
    return code, (json.loads(out) if out.strip() else None), err


def _not_understood(doc) -> dict:
    """input path -> its 'not understood' message (SD154)."""
    return {(f.get("gpu") or f.get("npu"))["path"]: (f.get("gpu") or f.get("npu"))["value"]
            for f in doc["findings"] if f["rule"] == "SD154"}


def _rules(doc) -> list:
    return sorted((f["rule"], f["key"], (f.get("gpu") or {}).get("value"), (f.get("npu") or {}).get("value"))
                  for f in doc["findings"] if f["rule"] != "SD154")


# --------------------------------------------------------------- unbounded evaluation

@pytest.mark.parametrize("shape", [shapes.doubling_script, shapes.doubling_array])
def test_a_doubled_shell_variable_or_array_is_too_large_and_the_rest_is_compared(tmp_path, cli, monkeypatch, shape):
    monkeypatch.setattr(budget, "VALUE_PIECES", 1000)
    script = shape(12)  # 4,096 segments or elements
    g, n = _pair(tmp_path, "run.sh", script, script.replace("--lr 1", "--lr 2"))
    code, doc, _ = _json(cli, "diff", g, n, "--no-cache")
    assert code == 1
    assert _not_understood(doc) == {
        p: "line 11: $A is too large to evaluate (more than 1,000 pieces); not compared" for p in (g, n)}
    assert ("SD202", "lr", 1.0, 2.0) in _rules(doc)


def test_the_marker_of_a_too_large_value_never_doubles(tmp_path, cli, monkeypatch):
    """After the budget is hit, further doublings copy one marker: 40 of them stay small."""
    monkeypatch.setattr(budget, "VALUE_PIECES", 1000)
    script = shapes.doubling_script(40)
    g, n = _pair(tmp_path, "run.sh", script, script.replace("--lr 1", "--lr 2"))
    code, doc, _ = _json(cli, "diff", g, n, "--no-cache")
    assert code == 1
    assert ("SD202", "lr", 1.0, 2.0) in _rules(doc)


def test_a_shell_budget_that_is_not_reached_changes_nothing(tmp_path, cli):
    script = shapes.doubling_script(4)
    g, n = _pair(tmp_path, "run.sh", script, script.replace("--lr 1", "--lr 2"))
    code, doc, _ = _json(cli, "diff", g, n, "--no-cache")
    assert _not_understood(doc) == {}
    assert ("SD202", "lr", 1.0, 2.0) in _rules(doc)


def test_an_interpolation_fan_out_is_too_large_and_the_rest_is_compared(tmp_path, cli, monkeypatch):
    monkeypatch.setattr(budget, "VALUE_CHARS", 10_000)
    text = shapes.fanout_yaml(9, 8)  # a1 is 80 characters, a4 40,960, a8 167 million
    g, n = _pair(tmp_path, "config.yaml", text, text.replace("lr: 1", "lr: 2"))
    code, doc, _ = _json(cli, "diff", g, n, "--no-cache")
    assert code == 1
    msg = _not_understood(doc)[g]
    assert msg.startswith("line 6: a4 is too large to evaluate (more than 10,000 characters); not compared; "
                          "line 7: a5 is too large to evaluate")
    keys = {f["key"] for f in doc["findings"]}
    assert "lr" in keys and not any(k.startswith("a4") for k in keys)


def test_interpolation_still_resolves_within_budget(tmp_path, cli):
    g, n = _pair(tmp_path, "config.yaml", "base: 1e-4\nlr: ${base}\nname: run-${base}\n",
                 "base: 2e-4\nlr: ${base}\nname: run-${base}\n")
    code, doc, _ = _json(cli, "diff", g, n, "--no-cache")
    values = {f["key"]: (f["gpu"]["value"], f["npu"]["value"]) for f in doc["findings"]}
    assert values["lr"] == (0.0001, 0.0002)
    assert values["name"] == ("run-1e-4", "run-2e-4")
    assert _not_understood(doc) == {}


def test_a_python_config_with_shared_subtrees_is_too_large(tmp_path, cli, monkeypatch):
    monkeypatch.setattr(budget, "FILE_SETTINGS", 500)
    text = shapes.shared_pyconfig(22)
    g, n = _pair(tmp_path, "config.py", text, text.replace("lr=1e-4)", "lr=2e-4)"))
    code, doc, _ = _json(cli, "diff", g, n, "--no-cache")
    assert code == 1
    assert _not_understood(doc)[g].startswith(
        "line 5: a4 is too large to evaluate (more than 500 settings, each counted once per level of nesting); "
        "not compared; line 10: a9 is too large to evaluate (the file's values would hold")
    assert [(r, k, a, b) for r, k, a, b in _rules(doc) if k.endswith("lr")] == [("SD202", "lr", 0.0001, 0.0002)]


def test_python_constants_that_fan_out_are_too_large(tmp_path, cli, monkeypatch):
    monkeypatch.setattr(budget, "VALUE_PIECES", 2000)
    text = shapes.python_fanout(4)  # 8**5 elements
    g, n = _pair(tmp_path, "train.py", text, text.replace("[1, 2,", "[0, 2,"))
    code, doc, _ = _json(cli, "diff", g, n, "--no-cache")
    assert code == 1
    assert _not_understood(doc)[g] == "line 7: `A4` is too large to evaluate (more than 2,000 evaluation steps); not compared"


def test_a_product_of_huge_numbers_is_too_large_not_an_overflow(tmp_path, cli):
    text = shapes.python_big_number(9)
    g, n = _pair(tmp_path, "train.py", text, text.replace("999999 **", "999998 **"))
    code, doc, err = _json(cli, "diff", g, n, "--no-cache")
    assert code == 1
    assert _not_understood(doc)[n] == "line 12: `B9` is too large to evaluate (a number of more than 4,096 bits); not compared"


def test_a_value_too_large_spends_the_budget_once(tmp_path, cli, monkeypatch):
    """A keyword read several ways (as a setting, as an argument) is evaluated once up to the
    budget, then known to be too large: the fuzzed 8**10-element constant took 20 s when each
    reading spent the whole budget again."""
    from scriptdiff.lang.python.evaluate import static
    monkeypatch.setattr(budget, "VALUE_PIECES", 2000)
    steps = []
    real = static.Values._evaluate

    def counted(self, node, used, depth):
        steps.append(1)
        return real(self, node, used, depth)
    monkeypatch.setattr(static.Values, "_evaluate", counted)
    text = shapes.python_fanout(4)
    g, n = _pair(tmp_path, "train.py", text, text.replace("[1, 2,", "[0, 2,"))
    code, doc, _ = _json(cli, "diff", g, n, "--no-cache")
    assert _not_understood(doc)[n] == "line 7: `A4` is too large to evaluate (more than 2,000 evaluation steps); not compared"
    assert 2 * 2000 < len(steps) <= 2 * (2000 + 200)  # each side's value once over the budget, not once per reading


def _deflated_zip(path: Path, inflated: int) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("archive/data.pkl", b"\0" * inflated)
        zf.writestr(zipfile.ZipInfo("archive/version"), b"3\n")


def test_a_torch_zip_bomb_is_refused_before_torch_loads_it(tmp_path, cli, fake_torch, monkeypatch):  # noqa: F811
    monkeypatch.setattr(budget, "TORCH_INFLATED", 100_000)
    _deflated_zip(tmp_path / "a.pt", 200_000)
    _deflated_zip(tmp_path / "b.pt", 200_000)
    code, out, err = cli("weights", str(tmp_path / "a.pt"), str(tmp_path / "b.pt"))
    assert code == 2
    assert "scriptdiff: a.pt: compressed entries that inflate to 200,000 bytes, more than the 100,000 " \
           f"scriptdiff inflates (torch.save does not compress: a zip bomb?); not loaded" in err.splitlines()
    assert fake_torch.calls == []


def test_the_issue_zip_bomb_is_refused_from_its_directory(tmp_path, fake_torch):  # noqa: F811
    from scriptdiff.checks.weights import WeightsError, torch_tensors

    (tmp_path / "bomb.pt").write_bytes(shapes.torch_zip_bomb())  # 2.6 MB that inflate to 2.7 GB
    with pytest.raises(WeightsError) as e:
        torch_tensors(str(tmp_path / "bomb.pt"), "bomb.pt")
    assert str(e.value).startswith("bomb.pt: compressed entries that inflate to 2,700,000,000 bytes")
    assert fake_torch.calls == []


def test_a_stored_torch_zip_is_loaded(tmp_path, fake_torch):  # noqa: F811
    import numpy as np
    from scriptdiff.checks.weights import torch_tensors

    with zipfile.ZipFile(tmp_path / "ok.pt", "w") as zf:  # torch.save's way: entries stored
        zf.writestr("archive/data.pkl", b"\0" * 1000)
    fake_torch.contents[str(tmp_path / "ok.pt")] = {"w": _Tensor(np.ones(3, dtype=np.float32))}
    assert [r.name for r in torch_tensors(str(tmp_path / "ok.pt"), "ok.pt")] == ["w"]


def _trainer_state(path: Path, records: list) -> None:
    path.write_text(json.dumps({"best_metric": None, "log_history": records, "max_steps": len(records)}, indent=2))


def test_trainer_state_is_streamed_across_chunks(monkeypatch):
    from scriptdiff.curves import readers

    doc = {"a": 1.5, "log_history": [{"step": i, "loss": 1 / (i + 1), "x": {"y": [i, "a}b]"]}} for i in range(300)],
           "z": {"q": "}"}, "n": 12345678}
    for chunk in (7, 64, 1000):
        monkeypatch.setattr(budget, "LOG_CHUNK", chunk)
        for indent in (None, 2):
            got = list(readers._log_history(io.BytesIO(json.dumps(doc, indent=indent).encode())))
            assert got == doc["log_history"]


def test_a_trainer_state_record_over_the_budget_is_one_line(tmp_path, cli, monkeypatch):
    monkeypatch.setattr(budget, "LOG_CHUNK", 256)
    monkeypatch.setattr(budget, "LOG_RECORD", 1000)
    _trainer_state(tmp_path / "g.json", [{"step": 1, "loss": 2.0, "note": "x" * 5000}])
    _trainer_state(tmp_path / "n.json", [{"step": 1, "loss": 2.0}])
    code, out, err = cli("curves", str(tmp_path / "g.json"), str(tmp_path / "n.json"))
    assert code == 2
    assert [ln for ln in err.splitlines() if "g.json" in ln][0].startswith(
        f"scriptdiff: {tmp_path / 'g.json'}: not valid JSON: a value of more than 1,000 characters at character")


def test_a_broken_trainer_state_adds_nothing_to_its_side(tmp_path):
    from scriptdiff.curves.readers import read_side

    (tmp_path / "trainer_state.json").write_text('{"log_history": [{"step": 1, "loss": 2.0}, {"step": 2, "lo')
    run = read_side([str(tmp_path / "trainer_state.json")], "gpu")
    assert run.empty
    assert [e.fatal for e in run.errors] == [True]


def test_a_git_blob_over_the_cap_is_refused_from_its_size(tmp_path, cli, monkeypatch):
    import scriptdiff.inputs.gitsrc as gitsrc

    repo = tmp_path / "r"
    shapes._repo(repo, {"main": {"big.yaml": b"lr: 1\n" + b"# x\n" * 100, "small.yaml": b"lr: 1\n"},
                        "npu": {"big.yaml": b"lr: 2\n", "small.yaml": b"lr: 1\n"}})
    from scriptdiff.ruleset.rules import load

    load()  # the shipped packs are read before the cap is lowered (run alone, the test read them under it)
    monkeypatch.setattr(budget, "MAX_READ", 100)
    ran = []
    real_run = gitsrc.Repo.run
    monkeypatch.setattr(gitsrc.Repo, "run", lambda self, args, **kw: ran.append(args) or real_run(self, args, **kw))
    code, out, err = cli("diff", "--repo", str(repo), "main:big.yaml", "npu:big.yaml")
    assert code == 2
    assert err.strip().splitlines() == ["scriptdiff: main:big.yaml: larger than 100 bytes; not read"]
    assert not [a for a in ran if a[:2] == ["cat-file", "blob"]]
    code, doc, err = _json(cli, "diff", "--git", "--repo", str(repo), "main", "npu")
    assert {"path": "main:big.yaml", "message": "larger than 100 bytes; not read"} in doc["errors"]


def _safetensors(path: Path, count: int, value: float) -> None:
    path.write_bytes(shapes.tiny_tensors(count, int(value)))


def test_a_checkpoint_of_too_many_tensors_is_one_line(tmp_path, cli, monkeypatch):
    monkeypatch.setattr(budget, "TENSORS", 10)
    _safetensors(tmp_path / "a.safetensors", 20, 1)
    _safetensors(tmp_path / "b.safetensors", 5, 1)
    code, out, err = cli("weights", str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors"))
    assert code == 2
    assert err.strip().splitlines() == ["scriptdiff: a.safetensors: 20 tensors, more than the 10 scriptdiff compares "
                                        "in one checkpoint; not compared"]


def test_differing_tensors_past_the_stats_budget_are_found_but_not_measured(tmp_path, cli, monkeypatch):
    monkeypatch.setattr(budget, "STAT_TENSORS", 2)
    _safetensors(tmp_path / "a.safetensors", 5, 1)
    _safetensors(tmp_path / "b.safetensors", 5, 2)
    code, doc, _ = _json(cli, "weights", str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors"))
    assert code == 1
    msgs = sorted(f["message"] for f in doc["findings"])
    assert len(msgs) == 5
    assert sum("values not measured: more than 2 differing tensors are measured in one run" in m for m in msgs) == 3
    assert sum("rel L2" in m for m in msgs) == 2


# --------------------------------------------------------------- hangs

KMSG = "/proc/kmsg"
needs_kmsg = pytest.mark.skipif(not os.path.exists(KMSG), reason="no /proc/kmsg here")
PSEUDO = ("is a kernel interface on the proc pseudo-filesystem, not a regular file (reading it may block) "
          "(only regular files are read: save its content to a file and give that file)")


def _run(tmp_path, *args):
    """The CLI in a subprocess with a hang guard (a blocking read would never return)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "scriptdiff", *args], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert "Traceback" not in p.stderr
    return p.returncode, p.stdout, p.stderr


@needs_kmsg
@pytest.mark.parametrize("cmd", ["diff", "curves", "env", "check", "folder"])
def test_a_link_to_proc_kmsg_is_refused_not_read(tmp_path, cmd):
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    name = "pip-list.json" if cmd == "env" else "train.log"
    os.symlink(KMSG, tmp_path / "g" / name)
    (tmp_path / "n" / name).write_text(" iteration 1/ 10 | lm loss: 2.5 |\n")
    args = {"diff": ["diff", f"g/{name}", f"n/{name}"], "curves": ["curves", f"g/{name}", f"n/{name}"],
            "env": ["env", f"g/{name}", f"n/{name}"], "check": ["check", "--gpu", f"logs=g/{name}", "--npu", f"logs=n/{name}"],
            "folder": ["diff", "g", "n"]}[cmd]
    code, out, err = _run(tmp_path, *args)
    if cmd == "folder":  # a link out of the folder is refused before it is looked at (issue 32)
        assert f"scriptdiff: g/{name}: symbolic link to a file outside the tree (to {KMSG}); not followed" \
            in err.splitlines()
    elif cmd == "check":  # the NPU log is unknown against it, said on the line
        assert f"scriptdiff: g/{name}: {PSEUDO} (1 setting(s) of the other side could not be compared: " \
               f"process:curves)" in err.splitlines()
    else:
        assert f"scriptdiff: g/{name}: {PSEUDO}" in err.splitlines()
    assert code in (1, 2)


@needs_kmsg
def test_collect_refuses_proc_kmsg_and_reads_its_own_machine_files(monkeypatch):
    from scriptdiff.project import collect

    rd = collect.Reader()
    assert rd.text(KMSG) is None
    assert rd.unread == [f"{KMSG}: {PSEUDO}"]
    monkeypatch.setattr(collect, "MACHINE_FILES", frozenset({"/proc/version"}))
    assert "Linux" in collect.Reader().text("/proc/version")


def test_without_a_mount_table_proc_and_sys_are_refused_by_path(monkeypatch):
    from scriptdiff.inputs import filekind, sources

    monkeypatch.setattr(filekind, "_pseudo_devices", lambda: None)
    filekind._device_type.cache_clear()  # what the process knew of the mount table
    try:
        st = os.stat("/proc/self/status")
        assert sources.pseudo_reason("/proc/self/status", st).startswith("is a kernel interface on the proc")
        assert sources.pseudo_reason(__file__, os.stat(__file__)) is None
    finally:
        filekind._device_type.cache_clear()


def test_the_mount_table_names_procfs(tmp_path):
    from scriptdiff.inputs import sources

    assert sources.pseudo_reason("/proc/self/status", os.stat("/proc/self/status")) is not None
    (tmp_path / "x").write_text("x")
    assert sources.pseudo_reason(tmp_path / "x", os.stat(tmp_path / "x")) is None


@pytest.mark.parametrize("where", ["refs/heads/x", "packed-refs"])
def test_a_fifo_git_ref_is_refused_without_asking_git(tmp_path, cli, where):
    repo = tmp_path / "r"
    shapes._repo(repo, {"main": {"a.py": b"lr = 1\n"}, "x": {"a.py": b"lr = 2\n"}, "_fifo": where})
    for args in (["diff", "--git", "--repo", str(repo), "main", "x"], ["diff", "--repo", str(repo), "main:a.py", "x:a.py"]):
        code, out, err = cli(*args)
        assert code == 2
        rev = "main" if where == "packed-refs" else "x"
        assert err.strip().splitlines() == [f"scriptdiff: {rev}: the repository's {where} is a FIFO; not read"]


def test_a_git_command_that_blocks_is_stopped_at_the_deadline(tmp_path, cli, monkeypatch):
    repo = tmp_path / "r"
    shapes._repo(repo, {"main": {"a.py": b"lr = 1\n"}})
    (repo / ".git" / "config").unlink()
    os.mkfifo(repo / ".git" / "config")  # every git command opens it, and waits
    monkeypatch.setenv("SCRIPTDIFF_GIT_TIMEOUT", "1")
    code, out, err = cli("diff", "--git", "--repo", str(repo), "main", "main")
    assert code == 2
    assert err.strip().splitlines() == [f"scriptdiff: {repo}: git did not answer within 1 s (a FIFO or a hung file "
                                        f"system in the repository?); not read"]


def test_an_object_whose_header_blocks_is_stopped_at_the_deadline(tmp_path, monkeypatch):
    """A blob's size comes from the object database's `info` (GitPython's long-lived
    `cat-file --batch-check`), under the same deadline as every git command: a staged blob
    whose loose object is a FIFO is one line, not a wait."""
    import subprocess

    from scriptdiff.inputs import gitsrc

    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "a.py").write_text("lr = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "a.py"], cwd=repo, check=True)
    sha = subprocess.run(["git", "rev-parse", ":a.py"], cwd=repo, check=True, capture_output=True,
                         text=True).stdout.strip()
    loose = repo / ".git" / "objects" / sha[:2] / sha[2:]
    loose.chmod(0o644)
    loose.unlink()
    os.mkfifo(loose)
    monkeypatch.setenv("SCRIPTDIFF_GIT_TIMEOUT", "1")
    with pytest.raises(gitsrc.GitError) as e:
        gitsrc.IndexResolver(str(repo), "").blob("a.py")
    assert str(e.value) == "a.py: git did not answer within 1 s (a FIFO or a hung file system in the repository?); not read"


# --------------------------------------------------------------- unnamed internal errors

@pytest.mark.parametrize("gpu,npu,verdict", [
    ([(1, 2.5)], [(1, 2.6)], "first-step difference"),
    ([(1, 2.5), (2, 2.4)], [(1, 2.5), (2, 2.9)], "first-step difference"),
    ([(1, 2.5), (1, 2.4), (1, 2.3)], [(1, 2.3), (2, 2.4)], "equal"),
    ([(1, 2.5), (100_000, 2.4)], [(1, 2.5), (100_000, 2.4)], "equal"),
])
def test_a_short_run_gets_a_verdict(tmp_path, cli, gpu, npu, verdict):
    g, n = _pair(tmp_path, "train.log", shapes.megatron_log(gpu), shapes.megatron_log(npu))
    code, out, err = cli("curves", g, n, "--format", "json")
    assert "internal error" not in err
    doc = json.loads(out)
    assert doc["curves"]["verdict"] == verdict if "curves" in doc else doc["verdict"] == verdict
    code, out, err = cli("curves", g, n)
    assert "too few points for windows, a persistent divergence or spikes" in out


@pytest.mark.parametrize("many", [False, True])
def test_a_one_record_tensorboard_run_gets_a_verdict(tmp_path, cli, many):
    tags = {f"tag{i}": float(i) for i in range(300)} if many else {}
    g = shapes.tensorboard_run([{**tags, "loss": 2.5}])
    if g is None:
        pytest.skip("tensorboard is not installed")
    n = shapes.tensorboard_run([{**tags, "loss": 2.5}] * 2)
    for side, data in (("g", g), ("n", n)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "events.out.tfevents.1.host").write_bytes(data)
    code, out, err = cli("curves", str(tmp_path / "g"), str(tmp_path / "n"))
    assert code == 0 and "internal error" not in err
    assert "verdict: equal" in out


def test_self_referential_and_deep_torch_objects_are_one_line(tmp_path, cli, fake_torch):  # noqa: F811
    import numpy as np

    selfref: dict = {"w": _Tensor(np.ones(2, dtype=np.float32))}
    selfref["me"] = selfref
    deep: list = [_Tensor(np.ones(1, dtype=np.float32))]
    for _ in range(5000):
        deep = [deep]
    for name, obj in (("self.pt", selfref), ("deep.pt", deep)):
        (tmp_path / name).write_bytes(pickle.dumps(0))
        fake_torch.contents[str(tmp_path / name)] = obj
    code, out, err = cli("weights", str(tmp_path / "self.pt"), str(tmp_path / "deep.pt"))
    assert code == 2
    assert sorted(err.strip().splitlines()) == [
        "scriptdiff: deep.pt: the checkpoint's object is nested more than 200 levels deep; not read",
        "scriptdiff: self.pt: the checkpoint's object contains itself (at me); not read"]


def test_shared_torch_containers_are_bounded(tmp_path, fake_torch, monkeypatch):  # noqa: F811
    import numpy as np
    from scriptdiff.checks.weights import WeightsError, torch_tensors

    monkeypatch.setattr(budget, "TORCH_PICKLE_NODES", 1000)
    d: dict = {"w": _Tensor(np.ones(1, dtype=np.float32))}
    for _ in range(20):
        d = {"a": d, "b": d}  # a million paths through 41 containers
    (tmp_path / "m.pt").write_bytes(b"x")
    fake_torch.contents[str(tmp_path / "m.pt")] = d
    with pytest.raises(WeightsError) as e:
        torch_tensors(str(tmp_path / "m.pt"), "m.pt")
    assert str(e.value) == "m.pt: the checkpoint's object holds more than 1,000 containers and tensors; not read"


@pytest.fixture
def deep_trees(tmp_path):
    leaf = shapes.megatron_log([(1, 2.5)]).encode()
    shapes._deep(tmp_path / "g", 1000, "train.log", leaf)
    shapes._deep(tmp_path / "n", 1000, "train.log", leaf + b"\n")
    yield tmp_path
    shapes.cleanup(tmp_path)


DEEP = "folder nested more than 100 levels deep; its files were not compared"


@pytest.mark.parametrize("cmd", ["diff", "check", "data", "curves"])
def test_folders_nested_1000_deep_are_one_line(deep_trees, cli, cmd):
    g, n = str(deep_trees / "g"), str(deep_trees / "n")
    args = {"diff": ["diff", g, n], "check": ["check", "--gpu", f"scripts={g}", "--npu", f"scripts={n}"],
            "data": ["data", g, n], "curves": ["curves", g, n]}[cmd]
    code, out, err = cli(*args)
    assert "internal error" not in err and "Traceback" not in err
    assert code in (1, 2)
    deep = "/".join(["d"] * 101)
    if cmd == "data":
        assert f"scriptdiff: {g}/{deep}: folder nested more than 100 levels deep; its files were not read" in err.splitlines()
    else:
        assert any(ln.endswith(f"/{deep}: {DEEP}") for ln in err.splitlines()), err


@pytest.mark.parametrize("args,message", [
    (["diff", "--git", "main", shapes.ZERO_SHA], f"{shapes.ZERO_SHA}: unknown revision"),
    (["diff", "main:a.py", f"{shapes.ZERO_SHA}:a.py"], f"{shapes.ZERO_SHA}: unknown revision"),
    (["diff", "main:a.py", "npu:a.py"], "npu:a.py: cannot be read from git ("),
])
def test_a_zero_sha_or_a_corrupt_object_is_one_line(tmp_path, cli, args, message):
    repo = tmp_path / "r"
    shapes._repo(repo, {"main": {"a.py": b"lr = 1\n"}, "npu": {"a.py": b"lr = 2\n"}, "_corrupt": "npu:a.py"})
    code, out, err = cli(args[0], "--repo", str(repo), *args[1:])
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"scriptdiff: {message}")

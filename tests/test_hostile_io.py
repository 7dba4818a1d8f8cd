"""Hostile inputs on disk: special files, oversized files, far hunks, paths out of their root.

Every test that could hang on a regression (a FIFO opened for reading blocks until a writer
comes) runs under a 10-second alarm, so a hang fails the test instead of the CI job.
"""
from __future__ import annotations

import json
import os
import signal
import struct

import pytest

from scriptdiff.model import Options
from scriptdiff.run.review import review
from scriptdiff.budget import MAX_READ
from scriptdiff.inputs.sources import SourceError, open_regular, read_path

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not hasattr(signal, "SIGALRM"),
                                reason="FIFOs and alarms are POSIX")

FIFO = "is a FIFO (named pipe), not a regular file (only regular files are read: save its content to a file and give that file)"
CHAR = "is a character device, not a regular file (only regular files are read: give the path of a regular file)"


class Hung(BaseException):  # not an Exception: the CLI's last line of defence must not swallow it
    pass


@pytest.fixture(autouse=True)
def no_hang():
    def fire(*_):
        raise Hung("blocked for 10 s: a special file was opened or read")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def safetensors(path, tensors: dict[str, float]) -> None:
    header, data = {}, b""
    for name, v in tensors.items():
        header[name] = {"dtype": "F32", "shape": [1], "data_offsets": [len(data), len(data) + 4]}
        data += struct.pack("<f", v)
    h = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h)) + h + data)


# ---------------------------------------------------------------- the one check

def test_special_files_are_refused_before_they_are_opened(tmp_path):
    os.mkfifo(tmp_path / "p")
    with pytest.raises(SourceError) as e:
        read_path(tmp_path / "p", "p")
    assert str(e.value) == f"p: {FIFO}"
    with pytest.raises(SourceError) as e:
        read_path("/dev/zero")
    assert str(e.value) == f"/dev/zero: {CHAR}"


def test_a_fifo_swapped_in_after_the_stat_is_refused_without_blocking(tmp_path, monkeypatch):
    import scriptdiff.inputs.sources as sources

    os.mkfifo(tmp_path / "p")
    monkeypatch.setattr(sources, "check_regular", lambda path, display=None, pseudo_ok=False, follow=True: None)  # the race: stat said "file"
    with pytest.raises(SourceError) as e:
        open_regular(tmp_path / "p", "p")
    assert str(e.value) == f"p: {FIFO}"


def test_a_file_above_the_cap_is_not_read(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(SourceError) as e:
        read_path(tmp_path / "big", "big", limit=100)
    assert str(e.value) == "big: larger than 100 bytes; not read"
    assert read_path(tmp_path / "big", "big", limit=101).data == b"x" * 101
    assert MAX_READ == 256 * 1024 * 1024


# ---------------------------------------------------------------- diff, weights, collect, review

def test_fifo_and_dev_zero_as_diff_sides(tmp_path, cli):
    os.mkfifo(tmp_path / "gpu.yaml")
    (tmp_path / "npu.yaml").write_text("lr: 1\n")
    code, _, err = cli("diff", str(tmp_path / "gpu.yaml"), str(tmp_path / "npu.yaml"))
    assert code == 2 and err.strip() == f"scriptdiff: {tmp_path / 'gpu.yaml'}: {FIFO}"
    code, _, err = cli("diff", "/dev/zero", str(tmp_path / "npu.yaml"))
    assert code == 2 and err.strip() == f"scriptdiff: /dev/zero: {CHAR}"


def test_fifo_shard_and_fifo_index_in_a_checkpoint_folder(tmp_path, cli):
    g = tmp_path / "g"
    g.mkdir()
    safetensors(g / "a.safetensors", {"w": 1.0})
    os.mkfifo(g / "b.safetensors")
    code, _, err = cli("weights", str(g), str(g))
    assert code == 2 and err.strip().splitlines() == [f"scriptdiff: b.safetensors: {FIFO}"] * 2
    n = tmp_path / "n"
    n.mkdir()
    safetensors(n / "a.safetensors", {"w": 1.0})
    os.mkfifo(n / "model.safetensors.index.json")
    code, _, err = cli("weights", str(g / "a.safetensors"), str(n))
    assert code == 2
    assert err.strip() == (f"scriptdiff: {n / 'model.safetensors.index.json'}: not a readable safetensors "
                           f"index: {FIFO}")
    code, _, err = cli("weights", "fingerprint", str(g / "b.safetensors"))
    assert code == 2 and err.strip() == f"scriptdiff: {g / 'b.safetensors'}: {FIFO}"


def test_dev_zero_as_a_weights_side(cli, tmp_path):
    safetensors(tmp_path / "a.safetensors", {"w": 1.0})
    code, _, err = cli("weights", "/dev/zero", str(tmp_path / "a.safetensors"))
    assert code == 2 and err.strip() == f"scriptdiff: /dev/zero: {CHAR}"


def test_fifo_at_etc_os_release_under_collect_root(tmp_path, cli):
    (tmp_path / "img" / "etc").mkdir(parents=True)
    os.mkfifo(tmp_path / "img" / "etc" / "os-release")
    code, out, err = cli("collect", "--root", str(tmp_path / "img"))
    assert code == 0
    assert err.strip() == f"scriptdiff: /etc/os-release: {FIFO}; not read"
    snap = json.loads(out)
    assert snap["unread"] == [f"/etc/os-release: {FIFO}"] and snap["os"]["id"] is None


def test_fifo_and_dev_zero_as_review_patch(tmp_path, cli):
    os.mkfifo(tmp_path / "p.diff")
    code, _, err = cli("review", str(tmp_path / "p.diff"))
    assert code == 2 and err.strip() == f"scriptdiff: {tmp_path / 'p.diff'}: {FIFO}"
    code, _, err = cli("review", "/dev/zero")
    assert code == 2 and err.strip() == f"scriptdiff: /dev/zero: {CHAR}"


def test_review_patch_above_max_bytes_is_refused(tmp_path, cli):
    p = tmp_path / "p.diff"
    p.write_text("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    code, _, err = cli("review", str(p), "--max-bytes", "10")
    assert code == 2
    assert p.stat().st_size == 34
    assert err.strip() == f"scriptdiff: {p}: larger than the --max-bytes limit (34 > 10 bytes); not read"


# ---------------------------------------------------------------- --max-bytes bounds every reader

def test_settings_file_above_max_bytes_is_not_read_and_the_other_file_is_compared(tmp_path, cli):
    for side, lr, seed in (("gpu", "1e-4", 1), ("npu", "2e-4", 2)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "conf.yaml").write_text(f"lr: {lr}\n" + "# padding\n" * 50)
        (tmp_path / side / "run.sh").write_text(f"python train.py --seed {seed}\n")
    code, out, _ = cli("diff", str(tmp_path / "gpu"), str(tmp_path / "npu"), "--max-bytes", "200",
                       "--format", "json", "--no-cache")
    doc = json.loads(out)
    assert code == 1
    assert [(f["key"], f["gpu"]["value"], f["npu"]["value"]) for f in doc["findings"]] == [("seed", 1, 2)]
    assert sorted((e["path"], e["message"]) for e in doc["errors"]) == [
        (str(tmp_path / side / "conf.yaml"),
         "larger than the --max-bytes limit (509 > 200 bytes); settings not read") for side in ("gpu", "npu")]


def test_shell_file_above_max_bytes_is_one_line(tmp_path, cli):
    (tmp_path / "a.sh").write_text("python train.py --lr 1 " + "--x 1 " * 50 + "\n")
    (tmp_path / "b.sh").write_text("python train.py --lr 2\n")
    code, _, err = cli("diff", str(tmp_path / "a.sh"), str(tmp_path / "b.sh"), "--max-bytes", "100", "--no-cache")
    assert err.strip() == (f"scriptdiff: {tmp_path / 'a.sh'}: larger than the --max-bytes limit (324 > 100 bytes); "
                           f"settings not read (1 setting(s) of the other side could not be compared: lr)")
    assert code == 2  # the GPU side had nothing readable: nothing was compared


# ---------------------------------------------------------------- review: far hunks, paths out of the root

GIANT = "--- a/x.py\n+++ b/x.py\n@@ -99999999999999,1 +99999999999999,1 @@\n-a = 1\n+a = 2\n"


def test_giant_hunk_position_is_refused(tmp_path, cli):
    p = tmp_path / "giant.diff"
    p.write_text(GIANT)
    code, _, err = cli("review", str(p), "--root", str(tmp_path))
    assert code == 2
    assert err.strip() == (f"scriptdiff: {p}: hunk @@ -99999999999999,1 +99999999999999,1 @@ of x.py starts at "
                           f"line 99,999,999,999,999, beyond any file under the --max-bytes limit (500,000 bytes); "
                           f"hunk not reviewed")


def test_far_hunk_next_to_a_good_one_keeps_the_good_one():
    text = GIANT + "--- a/y.txt\n+++ b/y.txt\n@@ -1,1 +1,1 @@\n-lr=1\n+lr=2\n"
    report = review(text.encode(), "p.diff", Options(use_cache=False, max_bytes=1000))
    assert [(f.key, f.npu.line) for f in report.findings] == [("code:y.txt:lines", 1)]
    assert [e.path for e in report.errors] == ["p.diff", "y.txt"]
    assert report.exit_code() == 1


def test_review_does_not_read_outside_its_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "x.txt").write_text("lr=2\n")  # would match the patch, were it read
    (root / "link.txt").symlink_to(tmp_path / "x.txt")
    text = "".join(f"--- a/{n}\n+++ b/{n}\n@@ -1,1 +1,1 @@\n-lr=1\n+lr=2\n"
                   for n in ("../x.txt", "/etc/passwd", "link.txt"))
    text = text.replace("a//etc/passwd", "/etc/passwd").replace("b//etc/passwd", "/etc/passwd")
    report = review(text.encode(), "p.diff", Options(use_cache=False), root=str(root))
    assert sorted((e.path, e.message) for e in report.errors) == [
        (name, "lies outside the review root (--root); not read; hunks compared as fragments")
        for name in ("../x.txt", "/etc/passwd", "link.txt")]


def test_review_file_under_root_that_is_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "x.txt")
    text = "--- a/x.txt\n+++ b/x.txt\n@@ -1,1 +1,1 @@\n-lr=1\n+lr=2\n"
    report = review(text.encode(), "p.diff", Options(use_cache=False), root=str(tmp_path))
    assert [(e.path, e.message) for e in report.errors] == [
        ("x.txt", f"{FIFO}; not read; hunks compared as fragments")]
    assert [f.key for f in report.findings] == ["code:x.txt:lines"]


# ---------------------------------------------------------------- data fingerprint

def test_data_fingerprint_stays_inside_its_root(tmp_path, cli):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("s\n")
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.jsonl").write_text("{}\n")
    (d / "leak.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (d / "tree").symlink_to(tmp_path / "outside")
    os.mkfifo(d / "pipe.jsonl")
    code, out, err = cli("data", "fingerprint", str(d))
    assert sorted(json.loads(out)["files"]) == ["a.jsonl"]
    assert sorted(err.strip().splitlines()) == [
        f"scriptdiff: {d / 'leak.txt'}: symbolic link leads outside the dataset root "
        f"(to {tmp_path / 'outside' / 'secret.txt'}); not read",
        f"scriptdiff: {d / 'pipe.jsonl'}: {FIFO}; skipped",
        f"scriptdiff: {d / 'tree'}: symbolic link leads outside the dataset root (to {tmp_path / 'outside'}); not read",
    ]
    assert code == 0


def test_data_fingerprint_of_a_fifo_or_a_device(tmp_path, cli):
    os.mkfifo(tmp_path / "p.bin")
    code, _, err = cli("data", "fingerprint", str(tmp_path / "p.bin"))
    assert code == 2 and err.strip() == f"scriptdiff: {tmp_path / 'p.bin'}: {FIFO}"
    code, _, err = cli("data", "fingerprint", "/dev/zero")
    assert code == 2 and err.strip() == f"scriptdiff: /dev/zero: {CHAR}"


# ---------------------------------------------------------------- many tiny tensors

def test_identical_tensors_are_counted_not_made_into_facts(tmp_path):
    from scriptdiff import api

    safetensors(tmp_path / "g.safetensors", {f"t{i}": float(i) for i in range(50)})
    safetensors(tmp_path / "n.safetensors", {**{f"t{i}": float(i) for i in range(50)}, "t7": -1.0, "x": 0.0})
    report = api.weights(str(tmp_path / "g.safetensors"), str(tmp_path / "n.safetensors"), Options(use_cache=False))
    assert [(f.key, f.extra.get("max_abs_diff")) for f in report.findings] == [
        ("weights:t7", 8.0), ("weights:x", None)]
    gt, nt = report.tables
    assert sorted(gt.keys("weights")) == ["weights:t7"] and sorted(nt.keys("weights")) == ["weights:t7", "weights:x"]
    assert report.details["weights"].identical == 49


def test_check_configuration_that_is_a_fifo_is_refused(tmp_path, cli):
    fifo = tmp_path / "scriptdiff.toml"
    os.mkfifo(fifo)
    code, out, err = cli("check", "--config", str(fifo))  # the autouse alarm fails a hang
    assert code == 2 and err.strip() == f"scriptdiff: {fifo}: {FIFO}"


def test_baseline_that_is_a_fifo_is_refused(tmp_path, cli):
    (tmp_path / "a.yaml").write_text("lr: 1\n")
    fifo = tmp_path / "b.json"
    os.mkfifo(fifo)
    code, out, err = cli("diff", str(tmp_path / "a.yaml"), str(tmp_path / "a.yaml"), "--baseline", str(fifo))
    assert code == 2
    assert err.strip() == f"scriptdiff: {fifo}: {FIFO} (not a usable baseline)"

"""Issue 32, the rows of false passes and wrong exits, and of paths and arguments: a damaged
or cut log is an error and never "equal"; a side of `check` that fails is unknown, never
absent; `data` on a device is exit 2; `collect --root` never reads outside its root; folder
mode refuses links out of the tree; git's external diff takes its arguments as paths. (The
stale replay row is in test_runmemo.py.) Each with its negative case."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fuzz"))
import classes_bounds as shapes  # noqa: E402
import classes_integrity as integrity  # noqa: E402

TB = "events.out.tfevents.1.host"
CUT = "the file ends inside this line (cut while it was written?); the line was not read, the lines before it are " \
      "compared, and the curves cannot pass"


def _tb(tmp_path, npu: bytes | None = None):
    """A 100-step TensorBoard run on both sides (a file_version record, then one loss record a
    step), the NPU side replaced by `npu`; the paths of both folders."""
    pytest.importorskip("tensorboard", reason="tensorboard not installed: pip install 'scriptdiff[tensorboard]'")
    pytest.importorskip("google_crc32c", reason="google-crc32c not installed: pip install 'scriptdiff[tensorboard]'")
    g = shapes.tensorboard_run(integrity.loss_records())
    for side, data in (("g", g), ("n", g if npu is None else npu(g))):
        (tmp_path / side).mkdir()
        (tmp_path / side / TB).write_bytes(data)
    return "g", "n"


def _curves(tmp_path, monkeypatch, cli, g, n):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("curves", g, n, "--format", "json")
    doc = json.loads(out) if out.strip() else {}
    read = [(r["reader"], r["records"], r["first_step"], r["last_step"]) for r in doc.get("curves", {}).get("read", {})
            .get("npu", [])]
    return code, doc.get("curves", {}).get("verdict"), read, [(e["path"], e["message"]) for e in doc.get("errors", [])]


# ------------------------------------------------------------------ TensorBoard event files

def test_the_layout_of_the_event_file_these_tests_damage(tmp_path):
    _tb(tmp_path)
    spans = integrity.record_spans((tmp_path / "n" / TB).read_bytes())
    assert len(spans) == 101 and spans[:2] == [(0, 40), (40, 42)] and spans[18] == (754, 42)  # record 19: step 18


def test_a_flipped_byte_in_a_records_data_skips_that_record_and_is_an_error(tmp_path, monkeypatch, cli):
    g, n = _tb(tmp_path, lambda data: integrity.flipped(data, 754 + 12 + 4))
    assert _curves(tmp_path, monkeypatch, cli, g, n) == (
        1, "incomplete", [("TensorBoard event file", 99, 1, 100)],
        [(f"n/{TB}", "damaged TensorBoard event file: record 19 at byte 754: its data does not match its checksum "
                     "(skipped); the 100 sound record(s) are compared, and the curves cannot pass")])
    code, out, err = cli("curves", g, n, "--no-chart")
    assert code == 1
    assert err.splitlines() == [f"scriptdiff: n/{TB}: damaged TensorBoard event file: record 19 at byte 754: its data "
                                f"does not match its checksum (skipped); the 100 sound record(s) are compared, and the "
                                f"curves cannot pass"]
    assert "verdict: incomplete\n  not read whole: NPU n/" + TB + " (see the errors): the curves are equal only as " \
           "far as they were read\n" in out


@pytest.mark.parametrize("damage,why", [
    (lambda data: integrity.flipped(data, 754),  # a byte of its length
     "its length does not match its checksum (the rest of the file, 3,486 bytes, was not read)"),
    (lambda data: integrity.flipped(data, 754 + 9),  # a byte of its length's checksum
     "its length does not match its checksum (the rest of the file, 3,486 bytes, was not read)"),
    (lambda data: data[:754 + 20],  # cut inside it
     "the file ends inside it, after 20 of its 42 bytes (cut while it was written?)"),
    (lambda data: data[:754 + 5],  # cut inside its header
     "the file ends inside its header, after 5 of 12 bytes (cut while it was written?)"),
])
def test_a_damaged_length_or_a_cut_ends_what_is_trusted(tmp_path, monkeypatch, cli, damage, why):
    g, n = _tb(tmp_path, damage)
    assert _curves(tmp_path, monkeypatch, cli, g, n) == (
        1, "incomplete", [("TensorBoard event file", 17, 1, 17)],
        [(f"n/{TB}", f"damaged TensorBoard event file: record 19 at byte 754: {why}; the 18 sound record(s) are "
                     f"compared, and the curves cannot pass")])


def test_a_difference_before_the_damage_is_still_the_verdict(tmp_path, monkeypatch, cli):
    """What was read is compared as usual: a difference in it is found (exit 1 either way)."""
    def npu(data):
        n = shapes.tensorboard_run([{"loss": r["loss"] * 1.1} for r in integrity.loss_records()])
        return integrity.flipped(n, 754)
    g, n = _tb(tmp_path, npu)
    code, verdict, read, errors = _curves(tmp_path, monkeypatch, cli, g, n)
    assert (code, verdict, read, len(errors)) == (1, "first-step difference", [("TensorBoard event file", 17, 1, 17)], 1)


def test_an_intact_event_file_is_still_equal(tmp_path, monkeypatch, cli):
    g, n = _tb(tmp_path)
    assert _curves(tmp_path, monkeypatch, cli, g, n) == (0, "equal", [("TensorBoard event file", 100, 1, 100)], [])


@pytest.mark.parametrize("absent", ["tensorboard.compat.proto.event_pb2", "google_crc32c"])
def test_without_the_extra_an_event_file_is_said_not_read(tmp_path, monkeypatch, cli, absent):
    g, n = _tb(tmp_path)
    monkeypatch.setitem(sys.modules, absent, None)
    code, verdict, read, errors = _curves(tmp_path, monkeypatch, cli, g, n)
    assert (code, verdict, errors) == (2, None, [
        ("g/" + TB, "a TensorBoard event file: install 'scriptdiff[tensorboard]' to read it; not read"),
        ("n/" + TB, "a TensorBoard event file: install 'scriptdiff[tensorboard]' to read it; not read")])


# ------------------------------------------------------------------ text logs and exports

@pytest.mark.parametrize("name,text,reader,line", [
    ("train.log", integrity.megatron(), "Megatron-LM/MindSpeed iteration lines", 100),
    ("metrics.csv", integrity.csv_export(), "CSV export", 101),
    ("trainer_log.jsonl", integrity.jsonl_export(), "LLaMA-Factory trainer_log.jsonl", 100),
])
def test_a_log_cut_inside_its_last_line_is_an_error(tmp_path, monkeypatch, cli, name, text, reader, line):
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    (tmp_path / "g" / name).write_text(text)
    (tmp_path / "n" / name).write_text(text[:-4])  # `lm loss: 2.40` of 2.400000E+00: a number cut short
    assert _curves(tmp_path, monkeypatch, cli, f"g/{name}", f"n/{name}") == (
        1, "incomplete", [(reader, 99, 1, 99)], [(f"n/{name}", f"line {line}: {CUT}")])


def test_a_log_cut_after_the_first_character_of_a_line_is_an_error(tmp_path, monkeypatch, cli):
    """` iteration ...` cut after its leading space: the line holds nothing yet, but it was cut."""
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    (tmp_path / "g" / "train.log").write_text(integrity.megatron())
    (tmp_path / "n" / "train.log").write_text(integrity.megatron(99) + " ")
    assert _curves(tmp_path, monkeypatch, cli, "g/train.log", "n/train.log") == (
        1, "incomplete", [("Megatron-LM/MindSpeed iteration lines", 99, 1, 99)], [("n/train.log", f"line 100: {CUT}")])


@pytest.mark.parametrize("name,text,reader", [
    ("train.log", integrity.megatron(), "Megatron-LM/MindSpeed iteration lines"),
    ("metrics.csv", integrity.csv_export(), "CSV export"),
    ("trainer_log.jsonl", integrity.jsonl_export(), "LLaMA-Factory trainer_log.jsonl"),
])
def test_a_whole_log_is_still_equal(tmp_path, monkeypatch, cli, name, text, reader):
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    (tmp_path / "g" / name).write_text(text)
    (tmp_path / "n" / name).write_text(text)
    assert _curves(tmp_path, monkeypatch, cli, f"g/{name}", f"n/{name}") == (0, "equal", [(reader, 100, 1, 100)], [])


def test_a_jsonl_export_whose_last_record_is_whole_needs_no_newline(tmp_path, monkeypatch, cli):
    text = integrity.jsonl_export()
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    (tmp_path / "g" / "t.jsonl").write_text(text)
    (tmp_path / "n" / "t.jsonl").write_text(text.rstrip("\n"))
    assert _curves(tmp_path, monkeypatch, cli, "g/t.jsonl", "n/t.jsonl")[:3] == (
        0, "equal", [("LLaMA-Factory trainer_log.jsonl", 100, 1, 100)])


def test_a_cut_trainer_state_is_said_where_it_ends(tmp_path, monkeypatch, cli):
    text = shapes.trainer_state(100, 0.0).decode()
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    (tmp_path / "g" / "trainer_state.json").write_text(text)
    cut = text.index('"step": 50')
    (tmp_path / "n" / "trainer_state.json").write_text(text[:cut + 5])
    start = text.rindex("{", 0, cut)  # the record the file ends in: its batch began at the first record
    code, verdict, read, errors = _curves(tmp_path, monkeypatch, cli, "g/trainer_state.json", "n/trainer_state.json")
    assert (code, verdict, read) == (2, None, [])
    assert len(errors) == 1 and errors[0][0] == "n/trainer_state.json"
    assert errors[0][1].startswith("not valid JSON: the file ends inside the value that starts at character ")
    assert errors[0][1].endswith(" (cut while it was written?)")
    assert int(errors[0][1].split("character ")[1].split(" ")[0].replace(",", "")) <= start + 1


# ------------------------------------------------------------------ check: a side that fails is unknown

EXAMPLE = ROOT / "fixtures" / "example"


def _npu_input(tmp_path, key: str) -> str:
    """One NPU input of `key` from the bundled example (a folder for scripts and dataset)."""
    n = tmp_path / "n"
    n.mkdir()
    if key == "scripts":
        for f in ("pretrain.sh", "train.py", "ds_config.json"):
            (n / "scripts").mkdir(exist_ok=True)
            (n / "scripts" / f).write_bytes((EXAMPLE / "npu" / f).read_bytes())
        return "n/scripts"
    if key == "dataset":
        (n / "data").mkdir()
        (n / "data" / "train.jsonl").write_bytes((EXAMPLE / "data-npu" / "train.jsonl").read_bytes())
        return "n/data"
    src = {"launch": EXAMPLE / "npu" / "pretrain.sh", "configs": EXAMPLE / "npu" / "ds_config.json",
           "packages": EXAMPLE / "requirements-npu.txt", "environment": EXAMPLE / "env-npu.json",
           "weights": EXAMPLE / "init-npu.safetensors"}.get(key)
    if key == "logs":
        (n / "train.log").write_text(integrity.megatron())
        return "n/train.log"
    (n / src.name).write_bytes(src.read_bytes())
    return f"n/{src.name}"


@pytest.mark.parametrize("key", ["launch", "configs", "scripts", "logs", "packages", "environment", "dataset",
                                 "weights"])
@pytest.mark.parametrize("how", ["missing", "fifo", "dev-zero"])
def test_an_unreadable_gpu_input_of_check_is_unknown_not_absent(tmp_path, monkeypatch, cli, key, how):
    npu = _npu_input(tmp_path, key)
    gpu = tmp_path / "gpu-input"
    if how == "fifo":
        os.mkfifo(gpu)
    elif how == "dev-zero":
        os.symlink("/dev/zero", gpu)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "--gpu", f"{key}=gpu-input", "--npu", f"{key}={npu}", "--format", "json")
    doc = json.loads(out)
    assert code == 2  # nothing of the GPU side could be read
    one_sided = [(f["rule"], f["key"]) for f in doc["findings"]
                 if f["gpu"] is None and f["rule"] not in ("SD154", "SD155")]
    assert one_sided == []
    gpu_errors = [e["message"] for e in doc["errors"] if e["path"] in ("gpu-input", str(gpu))]
    assert len(gpu_errors) == 1
    reason = {"missing": "no such file or directory", "fifo": "is a FIFO (named pipe), not a regular file",
              "dev-zero": "is a character device, not a regular file"}[how]
    assert gpu_errors[0].startswith(reason)
    said = {"launch": "setting(s) of the other side could not be compared: ",
            "configs": "setting(s) of the other side could not be compared: ",
            "scripts": "file(s) of the NPU side could not be paired: ds_config.json, pretrain.sh, train.py)",
            "logs": "1 setting(s) of the other side could not be compared: process:curves)",
            "packages": "setting(s) of the other side could not be compared: pkg:",
            "environment": "setting(s) of the other side could not be compared: ",
            "dataset": "2 setting(s) of the other side could not be compared: data:*, data:train.jsonl)",
            "weights": "setting(s) of the other side could not be compared: "}[key]
    assert said in gpu_errors[0]


def test_an_unreadable_gpu_config_beside_a_readable_launch_script(tmp_path, monkeypatch, cli):
    """The GPU run is read, but its config is not there: what configs set on the NPU side is
    unknown against it (named on the error line), the scripts' own settings are compared."""
    for side, lr in (("g", "1e-4"), ("n", "2e-4")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "run.sh").write_text(f"torchrun train.py --lr {lr} --seed 42\n")
    (tmp_path / "n" / "c.yaml").write_text("warmup_steps: 3\nweight_decay: 0.1\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "--gpu", "launch=g/run.sh", "--gpu", "configs=g/c.yaml", "--npu", "launch=n/run.sh",
                         "--npu", "configs=n/c.yaml", "--format", "json", "--ignore", "SD155")
    doc = json.loads(out)
    assert code == 1
    assert [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"]) for f in doc["findings"]] == [
        ("SD202", "lr", 0.0001, 0.0002)]
    assert doc["errors"] == [{"path": "g/c.yaml", "message": "no such file or directory (2 setting(s) of the other "
                                                             "side could not be compared: lr_warmup_iters, "
                                                             "weight_decay)"}]
    assert doc["verdicts"]["hyperparameters"] == {"verdict": "differences", "reason": "1 error(s)"}


@pytest.mark.parametrize("key, scope", [("dataset", "data-gpu.json"), ("weights", "weights-gpu.json"),
                                        ("environment", "env-gpu.json")])
def test_a_failed_manifest_leaves_unknown_only_its_own_checks_settings(tmp_path, monkeypatch, cli, key, scope):
    """A GPU dataset manifest (checkpoint fingerprint, environment snapshot) that is not there
    leaves the GPU side unknown for that check's settings only: what the launch scripts set on
    NPU only (a flag; `source set_env.sh` unless the snapshot is the one missing) is still
    reported, and the missing file's error line names nothing it could not have set."""
    npu = _npu_input(tmp_path, key)  # makes n/
    (tmp_path / "g").mkdir()
    for side, extra in (("g", ""), ("n", "source /usr/local/Ascend/ascend-toolkit/set_env.sh\n")):
        (tmp_path / side / "run.sh").write_text(f"{extra}torchrun train.py --lr 1e-4" +
                                                (" --seed 7" if side == "n" else "") + "\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "--gpu", "launch=g/run.sh", "--npu", "launch=n/run.sh", "--gpu", f"{key}={scope}",
                         "--npu", f"{key}={npu}", "--format", "json", "--ignore", "SD155")
    doc = json.loads(out)
    assert code == 1  # differences found; the input that could not be read is an error line
    one_sided = [(f["rule"], f["key"], f["npu"]["value"]) for f in doc["findings"] if f["gpu"] is None]
    assert ("SD207", "seed", 7) in one_sided  # a hyperparameter: no manifest or snapshot sets it
    source = ("SD302", "env:source set_env.sh", "/usr/local/Ascend/ascend-toolkit/set_env.sh")
    [error] = [e["message"] for e in doc["errors"] if e["path"].endswith(scope)]
    assert error.startswith("no such file or directory") and "seed" not in error
    if key == "environment":  # an environment setting: unknown against a snapshot that is not there
        assert source not in one_sided
        assert "env:source set_env.sh" in error and "env:PYTHONHASHSEED" in error  # the NPU snapshot's too
    else:
        assert source in one_sided
        assert "set_env.sh" not in error
        assert not [k for _r, k, _v in one_sided if k.startswith(("data:", "weights:"))]
    assert doc["verdicts"][key]["verdict"] == "not checked"


def test_a_failed_launch_script_still_leaves_everything_unknown(tmp_path, monkeypatch, cli):
    """The negative case: a launch script can set anything (an export, a flag, a sourced
    script), so a GPU one that is not there hides every NPU-only setting."""
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "run.sh").write_text("source /usr/local/Ascend/ascend-toolkit/set_env.sh\n"
                                           "torchrun train.py --lr 1e-4 --seed 7\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "--gpu", "launch=g/run.sh", "--npu", "launch=n/run.sh", "--format", "json",
                         "--ignore", "SD155")
    doc = json.loads(out)
    assert code == 2
    assert [f["key"] for f in doc["findings"] if f["gpu"] is None] == []
    [error] = [e["message"] for e in doc["errors"] if e["path"] == "g/run.sh"]
    assert "env:source set_env.sh" in error and "seed" in error


def test_a_readable_gpu_side_without_the_setting_is_one_sided(tmp_path, monkeypatch, cli):
    """The negative case: a GPU config that is there and does not set it: on NPU only."""
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    (tmp_path / "g" / "run.sh").write_text("torchrun train.py --seed 42\n")
    (tmp_path / "n" / "run.sh").write_text("torchrun train.py --seed 42 --lr 1e-4\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "--gpu", "launch=g/run.sh", "--npu", "launch=n/run.sh", "--format", "json",
                         "--ignore", "SD155")
    doc = json.loads(out)
    assert [(f["rule"], f["key"], f["gpu"], f["npu"]["value"]) for f in doc["findings"]] == [
        ("SD202", "lr", None, 0.0001)]
    assert (code, doc["errors"]) == (1, [])


# ------------------------------------------------------------------ data on a device

@pytest.mark.parametrize("args", [("/dev/zero", "d"), ("d", "/dev/zero")])
def test_data_on_a_device_is_exit_2_with_one_line(tmp_path, monkeypatch, cli, args):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "train.jsonl").write_text('{"text": "a"}\n')
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("data", *args)
    assert (code, err) == (2, "scriptdiff: /dev/zero: is a character device, not a regular file (only regular files "
                              "are read: give the path of a regular file)\n")
    assert cli("data", "missing", "d")[::2] == (2, "scriptdiff: missing: no such file or directory\n")


def test_data_on_two_folders_is_still_compared(tmp_path, monkeypatch, cli):
    for side in ("d", "e"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "train.jsonl").write_text('{"text": "a"}\n')
    monkeypatch.chdir(tmp_path)
    assert cli("data", "d", "e")[::2] == (0, "")


# ------------------------------------------------------------------ collect --root

def _chain(tmp_path, n: int, target: str) -> Path:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "usr" / "lib").mkdir(parents=True)
    (root / "usr" / "lib" / "os-release").write_text('PRETTY_NAME="Tree OS 1"\nID=tree\n')
    integrity.write_special(root / "etc" / "os-release", ("special", "chain", n, target))
    return root


@pytest.mark.parametrize("target", ["/etc/os-release", "../" * 12 + "etc/os-release"])
def test_collect_root_never_follows_a_link_chain_out_of_the_root(tmp_path, cli, target):
    root = _chain(tmp_path, 45, target)
    code, out, err = cli("collect", "--root", str(root), "-o", str(tmp_path / "snap.json"))
    snap = json.loads((tmp_path / "snap.json").read_text())
    assert code == 0
    assert (snap["os"]["name"], snap["os"]["id"]) == ("Linux", None)  # nothing read: not the host's os-release
    assert snap["unread"] == ["/etc/os-release: more than 40 symbolic links to follow (a chain or a loop of links)"]
    assert err.splitlines()[0] == "scriptdiff: /etc/os-release: more than 40 symbolic links to follow (a chain or a " \
                                  "loop of links); not read"


def test_collect_root_follows_links_inside_the_root_as_a_chroot(tmp_path, cli):
    root = _chain(tmp_path, 20, "/usr/lib/os-release")  # absolute: from the root, not from the host's /
    code, out, err = cli("collect", "--root", str(root), "-o", str(tmp_path / "snap.json"))
    snap = json.loads((tmp_path / "snap.json").read_text())
    assert (code, snap["os"]["name"], snap["os"]["id"], snap.get("unread")) == (0, "Tree OS 1", "tree", None)


def test_collect_root_reads_distribution_metadata_inside_the_root_only(tmp_path, cli):
    """A .dist-info whose METADATA is a link that climbs out of the root (`../` past its top)
    reads the root's file of that name, never the machine's."""
    root = tmp_path / "root"
    site = root / "usr" / "lib" / "python3.10" / "site-packages"
    for name, version in (("good", "1.0"), ("evil", "6.6.6")):
        (site / f"{name}-{version}.dist-info").mkdir(parents=True)
    (site / "good-1.0.dist-info" / "METADATA").write_text("Name: good\nVersion: 1.0\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "METADATA").write_text("Name: evil\nVersion: 6.6.6\n")
    os.symlink("../" * 20 + str(outside / "METADATA").lstrip("/"), site / "evil-6.6.6.dist-info" / "METADATA")
    code, out, err = cli("collect", "--root", str(root), "-o", str(tmp_path / "snap.json"))
    snap = json.loads((tmp_path / "snap.json").read_text())
    assert [(d["name"], d["version"]) for d in snap["distributions"]] == [("good", "1.0")]


# ------------------------------------------------------------------ folder mode: links out of the tree

def _tree_with_links(tmp_path, link: str, target: str):
    files = {"outside/b.py": "lr = 7  # OUTSIDE\n", "outside/cfg/c.yaml": "lr: 7  # OUTSIDE\n",
             "gpu/a.py": "lr = 1\n", "npu/a.py": "lr = 2\n", "npu/b.py": "lr = 1\n", "npu/cfg/c.yaml": "lr: 1\n",
             "gpu/in/b.py": "lr = 7  # INSIDE\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    os.symlink(target, tmp_path / link)


def _refused(tmp_path, monkeypatch, cli, link: str, target: str):
    """`diff gpu npu` with `link` out of the GPU tree: (stderr, findings by rule and key, JSON)."""
    _tree_with_links(tmp_path, link, target)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("diff", "gpu", "npu", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and "OUTSIDE" not in out + err  # an input that failed; nothing read from outside
    return err, sorted((f["rule"], f["key"]) for f in doc["findings"]), doc


def test_a_link_to_a_file_outside_the_tree_is_refused_and_accounted(tmp_path, monkeypatch, cli):
    err, found, doc = _refused(tmp_path, monkeypatch, cli, "gpu/b.py", "../outside/b.py")
    assert err == "scriptdiff: gpu/b.py: symbolic link to a file outside the tree (to ../outside/b.py); not followed\n"
    assert found == [("SD150", "file:cfg/c.yaml"), ("SD150", "file:in/b.py"), ("SD202", "lr")]  # b.py: not one-sided
    assert [(a["path"], a["status"], a["unread"]) for a in doc["inputs"] if a["status"] == "failed"] == [
        ("gpu/b.py", "failed", ["symbolic link to a file outside the tree (to ../outside/b.py); not followed"])]
    code, out, err = cli("diff", "gpu", "npu")
    assert "read 3 files: 2 understood or identical, 1 not: gpu/b.py (failed: symbolic link to a file outside the " \
           "tree (to ../outside/b.py); not followed)" in out


def test_a_link_to_a_folder_outside_the_tree_is_refused_and_its_names_unknown(tmp_path, monkeypatch, cli):
    err, found, doc = _refused(tmp_path, monkeypatch, cli, "gpu/cfg", "../outside/cfg")
    assert err == ("scriptdiff: gpu/cfg: symbolic link to a folder outside the tree (to ../outside/cfg); not followed "
                   "(1 file(s) of the NPU side under it could not be paired: cfg/c.yaml)\n")
    assert found == [("SD150", "file:b.py"), ("SD150", "file:in/b.py"), ("SD202", "lr")]  # cfg/c.yaml: not one-sided
    assert [(a["path"], a["kind"], a["status"]) for a in doc["inputs"] if a["status"] == "failed"] == [
        ("gpu/cfg", "folder", "failed")]


def test_a_link_inside_the_tree_is_followed(tmp_path, monkeypatch, cli):
    _tree_with_links(tmp_path, "gpu/b.py", "in/b.py")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("diff", "gpu", "npu", "--format", "json")
    doc = json.loads(out)
    assert (code, err) == (1, "")
    assert sorted((f["rule"], f["key"], (f["gpu"] or {}).get("path")) for f in doc["findings"]) == [
        ("SD150", "file:cfg/c.yaml", None), ("SD150", "file:in/b.py", "gpu/in/b.py"), ("SD202", "lr", "gpu/a.py"),
        ("SD202", "lr", "gpu/b.py")]
    assert "INSIDE" in out


def test_check_and_curves_refuse_the_same_links(tmp_path, monkeypatch, cli):
    _tree_with_links(tmp_path, "gpu/b.py", "../outside/b.py")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "--gpu", "scripts=gpu", "--npu", "scripts=npu", "--format", "json", "--ignore", "SD155")
    assert code == 1 and "OUTSIDE" not in out + err
    assert [e["message"] for e in json.loads(out)["errors"] if e["path"] == "gpu/b.py"] == [
        "symbolic link to a file outside the tree (to ../outside/b.py); not followed"]
    (tmp_path / "logs" / "g").mkdir(parents=True)
    (tmp_path / "logs" / "n").mkdir()
    (tmp_path / "outside" / "train.log").write_text(integrity.megatron())
    (tmp_path / "logs" / "n" / "train.log").write_text(integrity.megatron())
    (tmp_path / "logs" / "g" / "a.log").write_text(integrity.megatron())
    os.symlink("../../outside/train.log", tmp_path / "logs" / "g" / "train.log")
    code, verdict, read, errors = _curves(tmp_path, monkeypatch, cli, "logs/g", "logs/n")
    assert (code, verdict, errors) == (1, "incomplete", [
        ("logs/g/train.log", "symbolic link to a file outside the tree (to ../../outside/train.log); not followed")])


# ------------------------------------------------------------------ git's external diff

@pytest.mark.parametrize("name", ["-o.py", "--help", "-h", "--version", "diff", "--format=json", "-"])
def test_the_external_diff_call_takes_its_arguments_as_paths(tmp_path, monkeypatch, cli, name):
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    (tmp_path / "old" / "f").write_text("lr = 1\n")
    (tmp_path / "new" / "f").write_text("lr = 2\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(name, "old/f", "a" * 40, "100644", "new/f", "0" * 40, "100644")
    assert (code, err) == (0, f"scriptdiff: note: a/{name}: {tmp_path}: not inside a git repository: the configs and "
                              f"programs the files reference were not read on either side\n")
    assert out.startswith(f"scriptdiff: GPU a/{name}  vs  NPU b/{name}\n")
    assert ("error   SD202 lr  learning-rate schedule: lr is 1.0 on GPU and 2.0 on NPU" if name.endswith(".py")
            else f"warning SD108 code:{name}:lines  lines differ (compared as text)") in out
    code, out, err = cli(name, "old/f", "a" * 40, "100644", "new/f", "0" * 40, "100644", name,
                         f"similarity index 90%\nrename from {name}\nrename to {name}\n")
    assert code == 0 and out.startswith(f"scriptdiff: GPU a/{name}  vs  NPU b/{name}\n")


def test_seven_arguments_that_are_not_git_s_are_a_command(cli):
    """The negative case: without git's ids and modes, seven words are parsed as a command line."""
    code, out, err = cli("diff", "a", "b", "c", "d", "e", "f")
    assert code == 2 and "internal error" not in err


def test_an_unmerged_path_is_said_and_git_goes_on(monkeypatch, cli):
    monkeypatch.setenv("GIT_DIFF_PATH_COUNTER", "1")
    assert cli("-o.py") == (0, "", "scriptdiff: -o.py: unmerged; not compared\n")


def test_git_diff_with_a_tracked_file_named_like_an_option(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env)

    git("init", "-q")
    (repo / "-o.py").write_text("import torch\nlr = 1\n")
    (repo / "a.py").write_text("lr = 1\n")
    git("add", "--", "-o.py", "a.py")
    git("commit", "-qm", "x")
    (repo / "-o.py").write_text("import torch\nlr = 2\n")
    (repo / "a.py").write_text("lr = 3\n")
    out = subprocess.run(["git", "-C", str(repo), "diff"], capture_output=True, text=True, timeout=120,
                         env={**env, "GIT_EXTERNAL_DIFF": f"{sys.executable} -m scriptdiff"})
    assert out.returncode == 0, out.stderr
    assert "scriptdiff: GPU a/-o.py  vs  NPU b/-o.py" in out.stdout  # and git went on to the next file:
    assert "scriptdiff: GPU a/a.py  vs  NPU b/a.py" in out.stdout
    assert "usage:" not in out.stderr
    for tool in ("-m scriptdiff", "-m scriptdiff diff"):  # git difftool: its work-tree side is `-o.py` itself
        out = subprocess.run(["git", "-C", str(repo), "difftool", "-y", "-x", f"{sys.executable} {tool}", "--",
                              "-o.py"], capture_output=True, text=True, timeout=120, env=env)
        assert "GPU: 1.0  at a/-o.py:2" in out.stdout and "NPU: 2.0  at b/-o.py:2" in out.stdout, out.stderr
        assert "usage:" not in out.stderr

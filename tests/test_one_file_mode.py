"""One file, two devices (issue 26): a file that runs on both devices checked against itself.

`scriptdiff diff FILE`, `diff DIR`, `diff REV:path`, `diff --git REV -- FILE`, `check` with a
`scripts` entry given once, and `check --files` (the pre-commit hook) on a staged dual-device
file: each compares the file's GPU run with its NPU run, under the same rules and keys as a
pair, with the file and the line on each side."""
from __future__ import annotations

import json
import subprocess

from scriptdiff import api
from scriptdiff.model import Options

from test_device_branches import HAND, HF, edit, line_of

PLANTED = edit(HF, ('parser.add_argument("--learning_rate", type=float, default=2e-5)',
                    'parser.add_argument("--learning_rate", type=float, default=1e-5 if is_torch_npu_available() else 2e-5)'))
LR = line_of(PLANTED, '"--learning_rate"')


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def lr_findings(doc) -> list:
    return [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"], f["gpu"]["path"], f["gpu"]["line"],
             f["npu"]["path"], f["npu"]["line"]) for f in doc["findings"] if f["severity"] in ("warning", "error")]


def test_diff_with_one_file_compares_its_gpu_run_with_its_npu_run(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "train.py", PLANTED)
    code, out, err = cli("diff", "train.py", "--no-cache", "--format", "json")
    assert code == 1, err
    doc = json.loads(out)
    assert (doc["gpu"], doc["npu"]) == ("train.py (GPU run)", "train.py (NPU run)")
    assert lr_findings(doc) == [("SD202", "lr", 2e-5, 1e-5, "train.py", LR, "train.py", LR)]
    code, out, _ = cli("diff", "train.py", "--no-cache", "--color", "never", "--show-masked")
    assert "scriptdiff: GPU train.py (GPU run)  vs  NPU train.py (NPU run)" in out
    # the branch each device does not run, listed with its line
    npu_only = line_of(PLANTED, "        torch.npu.set_compile_mode")
    assert f"SD019  train.py:{npu_only} torch.npu.set_compile_mode(jit_compile=False)  ->  (absent)" in out


def test_a_faithful_dual_file_passes_and_a_file_without_device_tests_says_so(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "train.py", HF)
    assert cli("diff", "train.py", "--no-cache")[0] == 0
    write(tmp_path / "plain.py", "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\n")
    code, out, err = cli("diff", "plain.py", "--no-cache", "--color", "never")
    assert code == 0
    assert "plain.py: names no device: its GPU run and its NPU run are the same program" in out + err


def test_a_test_that_cannot_be_decided_stays_as_written_and_the_account_says_so(tmp_path):
    text = edit(HF, ("    if is_torch_npu_available():\n        torch.npu.set_compile_mode",
                     "    if is_torch_npu_available() and args.seed > 0:\n        torch.npu.set_compile_mode"))
    r = api.diff(str(write(tmp_path / "train.py", text)), None, Options(use_cache=False))
    at = line_of(text, "and args.seed > 0")
    notes = {a.side: a.notes for a in r.inputs}
    # on the GPU `False and ...` is decided; on the NPU it depends on --seed: compared as written
    assert notes["npu"] == [f"device tests read for the NPU: 1 decided (by is_npu_available() 1), 1 not decided, "
                            f"compared as written (line {at}: is_torch_npu_available() and args.seed > 0)"]
    assert notes["gpu"] == ["device tests read for the GPU: 2 decided (by is_npu_available() 2)"]
    # the if is on the NPU only, compared as written: its body only tunes the NPU, the port (issue 27)
    assert r.findings == []
    assert [(m.rule, m.gpu, m.npu.line) for m in r.masked if m.npu is not None and m.npu.line == at + 1] == [
        ("SD020", None, at + 1)]


def test_diff_with_one_folder_reads_each_dual_file_against_itself(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "proj" / "train.py", PLANTED)
    write(tmp_path / "proj" / "hand.py", HAND)
    write(tmp_path / "proj" / "util.py", "def f(x):\n    return x * 2\n")
    code, out, err = cli("diff", "proj", "--no-cache", "--format", "json")
    assert code == 1, err
    doc = json.loads(out)
    assert lr_findings(doc) == [("SD202", "lr", 2e-5, 1e-5, "proj/train.py", LR, "proj/train.py", LR)]
    status = {(i["path"], i["side"]): (i["status"], i.get("notes", [])) for i in doc["inputs"]}
    assert status[("proj/util.py", "npu")] == ("identical", ["names no device: its GPU run and its NPU run are "
                                                             "the same program"])
    assert status[("proj/hand.py", "gpu")][0] == status[("proj/hand.py", "npu")][0] == "understood"


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_git_one_revision_and_rev_path(tmp_path, cli):
    repo = tmp_path / "r"
    write(repo / "train.py", PLANTED)
    git(repo, "init", "-q")
    git(repo, "-c", "user.email=t@e", "-c", "user.name=t", "add", "train.py")
    git(repo, "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "dual")
    write(repo / "train.py", HF)  # the work tree is not read
    for args in (["--git", "HEAD", "--", "train.py"], ["--git", "HEAD", "train.py"], ["HEAD:train.py"]):
        code, out, err = cli("diff", "--repo", str(repo), "--no-cache", "--format", "json", *args)
        assert code == 1, (args, err)
        assert lr_findings(json.loads(out)) == [("SD202", "lr", 2e-5, 1e-5, "HEAD:train.py", LR, "HEAD:train.py", LR)]
    # a second argument that is neither a revision nor a path at the first is an unknown revision
    code, _out, err = cli("diff", "--repo", str(repo), "--git", "HEAD", "nobranch")
    assert code == 2 and err.strip() == "scriptdiff: nobranch: unknown revision"


def test_check_with_scripts_given_once(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "src" / "train.py", PLANTED)
    write(tmp_path / "scriptdiff.toml", 'scripts = ["src"]\nignore = ["SD155"]\n')
    code, out, err = cli("check", "--no-cache", "--format", "json")
    assert code == 1, err
    doc = json.loads(out)
    assert lr_findings(doc) == [("SD202", "lr", 2e-5, 1e-5, "src/train.py", LR, "src/train.py", LR)]
    assert doc["verdicts"]["hyperparameters"]["verdict"] == "differences" and doc["verdicts"]["script"]["verdict"] == "pass"
    # the same folder named under both sides is given once too
    write(tmp_path / "scriptdiff.toml", 'ignore = ["SD155"]\n[gpu]\nscripts = ["src"]\n[npu]\nscripts = ["src"]\n')
    code, out, _ = cli("check", "--no-cache", "--format", "json")
    assert lr_findings(json.loads(out)) == [("SD202", "lr", 2e-5, 1e-5, "src/train.py", LR, "src/train.py", LR)]


def test_the_staged_hook_checks_a_dual_device_file_against_itself(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "scriptdiff.toml", 'scripts = ["."]\n')  # the project's scripts, given once
    write(tmp_path / "train.py", PLANTED)
    code, out, err = cli("check", "--files", "train.py", "--no-cache", "--format", "json")
    assert code == 1, err
    assert lr_findings(json.loads(out)) == [("SD202", "lr", 2e-5, 1e-5, "train.py", LR, "train.py", LR)]
    write(tmp_path / "train.py", HF)
    assert cli("check", "--files", "train.py", "--no-cache")[0] == 0


def test_the_html_page_dims_the_branches_each_device_does_not_run(tmp_path):
    path = write(tmp_path / "train.py", HAND)
    r = api.diff(str(path), None, Options(use_cache=False, keep_texts=True))
    page = api.render(r, "html")
    assert "masked by SD019 device-branch" in page
    gpu_dead = line_of(HAND, 'backend="hccl"')
    assert any(m.rule == "SD019" and m.gpu and m.gpu.line == gpu_dead for m in r.masked)

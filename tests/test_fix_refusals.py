"""Every refusal of `scriptdiff fix` (issue 29): what is not safe is not edited, and the reason
says what to do instead. Each case asserts the finding's reason and kind of reason exactly,
and that the NPU file was not changed."""
from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import pytest

from scriptdiff import api
from scriptdiff.model import Options, UsageError

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"


def pair(tmp: Path, files: dict[str, tuple[str | bytes, str | bytes]]) -> tuple[str, str]:
    """tmp/gpu and tmp/npu with these files (name -> (GPU text, NPU text); None: not on that side)."""
    for side, k in (("gpu", 0), ("npu", 1)):
        for name, both in files.items():
            body = both[k]
            if body is None:
                continue
            p = tmp / side / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    return str(tmp / "gpu"), str(tmp / "npu")


def decision(result, key: str):
    ds = [d for d in result.decisions if d.finding.key == key]
    assert len(ds) == 1, [(d.finding.rule, d.finding.key) for d in result.decisions]
    return ds[0]


def refused(tmp: Path, files: dict, key: str, **kw) -> tuple[str, str]:
    """(why, reason) of the finding on `key`, which must not be fixed; the NPU side unchanged."""
    g, n = pair(tmp, files)
    before = {p: p.read_bytes() for p in Path(n).rglob("*") if p.is_file()}
    result = api.fix(g, n, Options(**kw.pop("options", {})), **kw)
    d = decision(result, key)
    assert not d.fixed and d.chosen and d.edits == []
    assert {p: p.read_bytes() for p in Path(n).rglob("*") if p.is_file()} == before
    return d.why, d.reason


def test_a_computed_value_is_refused(tmp_path):
    py = "import torch\n\ndef opt(m):\n    return torch.optim.AdamW(m.parameters(), lr={})\n"
    assert refused(tmp_path, {"train.py": (py.format("1e-4"), py.format("1e-4 * 2"))}, "lr") == (
        "computed", "computed, not written as a value (`1e-4 * 2` is computed); edit it by hand")


def test_a_value_computed_in_a_launch_script_is_refused(tmp_path):
    sh = "torchrun train.py --train-iters {} --lr 1e-4\n"
    assert refused(tmp_path, {"run.sh": (sh.format("2000"), sh.format("$((1000 * 4))"))}, "train_iters") == (
        "computed", "computed, not written as one value (`$((...))`, pieces of several variables); edit it by hand")


def test_a_derived_value_is_refused_with_what_it_follows(tmp_path):
    g, n = str(FIX / "launch/megatron/gpu"), str(FIX / "launch/megatron/npu_injected")
    d = decision(api.fix(g, n, Options(), write=False), "data_parallel_size")
    assert (d.fixed, d.why, d.finding.rule) == (False, "not chosen", "SD230")  # computed, not set: info
    d = decision(api.fix(g, n, Options(select=["SD230"]), write=False), "data_parallel_size")
    assert (d.fixed, d.why) == (False, "derived")
    assert d.reason == ("derived (world_size / (tp * pp * cp) with world_size=8, tensor_model_parallel_size=4, "
                        "pipeline_model_parallel_size=2, context_parallel_size=1 (default)): it follows the settings "
                        "it is computed from; fix those")


def test_a_value_read_from_the_environment_is_refused(tmp_path):
    py = "import os\nimport torch\n\ndef opt(m):\n    return torch.optim.AdamW(m.parameters(), lr={})\n"
    assert refused(tmp_path / "py", {"train.py": (py.format("1e-4"), py.format('float(os.environ.get("LR", "2e-4"))'))},
                   "lr") == ("environment", "read from the environment ($LR); set it where the NPU run starts")
    sh = "{}torchrun train.py --lr $LR\n"
    assert refused(tmp_path / "sh", {"run.sh": (sh.format("LR=1e-4\n"), sh.format("LR=${LR:-2e-4}\n"))}, "lr") == (
        "environment", "read from the environment (${LR:-2e-4}); set it where the NPU run starts")


def test_a_file_outside_the_npu_side_is_refused(tmp_path):
    gpu = "deepspeed --num_gpus 8 train.py --deepspeed ds.json\n"
    npu = "deepspeed --num_gpus 8 train.py --deepspeed ../shared/ds.json\n"
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "ds.json").write_text('{"gradient_clipping": 0.5, "train_micro_batch_size_per_gpu": 2}\n')
    files = {"run.sh": (gpu, npu), "ds.json": ('{"gradient_clipping": 1.0, "train_micro_batch_size_per_gpu": 2}\n',
                                               None)}
    why, reason = refused(tmp_path, files, "clip_grad")
    assert (why, reason) == ("outside", f"{tmp_path}/npu/ds.json is {tmp_path}/shared/ds.json, outside the NPU side "
                                        f"({tmp_path}/npu): editing it would change what else reads it; edit it by hand")


def test_a_value_written_at_two_places_is_refused(tmp_path):
    py = "import torch\n\nLR = 1e-4\n{}\n\ndef opt(m):\n    return torch.optim.AdamW(m.parameters(), lr=LR)\n"
    assert refused(tmp_path / "py", {"train.py": (py.format(""), py.format("LR = 3e-4"))}, "lr") == (
        "ambiguous", "written at two places (LR is assigned more than once at module level); edit the one the NPU run "
                     "uses by hand")


def test_a_variable_that_sets_two_options_is_refused(tmp_path):
    gpu = "torchrun pretrain_gpt.py --micro-batch-size 4 --tensor-model-parallel-size 2\n"
    npu = "V=4\ntorchrun pretrain_gpt.py --micro-batch-size $V --tensor-model-parallel-size $V\n"
    assert refused(tmp_path, {"run.sh": (gpu, npu)}, "tensor_model_parallel_size") == (
        "ambiguous", "$V also sets micro_batch_size: changing it would change them too; edit it by hand")


def test_two_fixes_of_one_place_are_refused_but_the_first(tmp_path):
    py = "import torch\n\n{}\n\ndef opt(m):\n    return torch.optim.AdamW(m.parameters(), lr={}, weight_decay={})\n"
    g, n = pair(tmp_path, {"train.py": (py.format("", "1e-4", "0.1"), py.format("X = 0.5", "X", "X"))})
    result = api.fix(g, n, Options(), write=False)
    fixed = [d.finding.key for d in result.fixed]
    other = [d for d in result.refused]
    assert len(fixed) == 1 and len(other) == 1 and other[0].why == "ambiguous"
    assert other[0].reason == (f"another fix (SD20{'2' if fixed == ['lr'] else '6'} {fixed[0]}) edits the same place; "
                               f"fix one, then run fix again")


@pytest.mark.parametrize("files,key,reason", [
    ({"requirements.txt": ("torch==2.1.0\ntransformers==4.40.0\n", "torch==2.1.0\ntransformers==4.38.2\n")},
     "pkg:transformers", "a library version: install transformers==4.40.0 on NPU (pin it in the NPU requirements)"),
    ({"run.sh": ("export NCCL_DETERMINISTIC=1\ntorchrun train.py --lr 1e-4\n",
                 "export HCCL_DETERMINISTIC=false\ntorchrun train.py --lr 1e-4\n")},
     "env:NCCL_DETERMINISTIC", "an environment variable: set HCCL_DETERMINISTIC=1 where the NPU run starts"),
    ({"sft.yaml": ("model_name_or_path: Qwen/Qwen2-7B\nlearning_rate: 1.0e-4\n",
                   "model_name_or_path: /data/qwen2-7b-npu\nlearning_rate: 1.0e-4\n")},
     "load", "the checkpoint on each side: load Qwen/Qwen2-7B on NPU (or copy it there under the NPU path) and set "
             "the path by hand"),
])
def test_findings_that_are_no_setting_say_what_to_do(tmp_path, files, key, reason):
    assert refused(tmp_path, files, key) == ("check", reason)


def test_an_environment_version_says_what_to_do(tmp_path):
    d = decision(api.fix(str(FIX / "example/env-gpu.json"), str(FIX / "example/env-npu.json"),
                         Options(select=["SD316"]), write=False), "version:os")
    assert (d.fixed, d.why, d.reason) == (
        False, "check", "a version of the machine (os): the GPU side has Ubuntu 22.04.3 LTS, the NPU side openEuler "
                        "22.03 (LTS-SP1); match it on the NPU machine where it matters (`scriptdiff env` compares them)")


def _manifest(tmp: Path, name: str, text: str) -> str:
    d = tmp / f"data-{name}"
    d.mkdir()
    (d / "train.jsonl").write_text(text)
    manifest, _errors = api.data_fingerprint([str(d)])
    out = tmp / f"{name}.json"
    out.write_text(json.dumps(manifest))
    return str(out)


def test_a_dataset_difference_says_what_to_do(tmp_path):
    g = _manifest(tmp_path, "gpu", '{"text": "a"}\n')
    n = _manifest(tmp_path, "npu", '{"text": "b"}\n')
    result = api.fix(g, n, Options(), write=False)
    assert [(d.finding.check, d.why, d.reason) for d in result.decisions] == [
        ("dataset", "check", "a dataset file differs: copy the GPU side's data to the NPU side (compare fingerprints "
                             "again)")]


def _safetensors(path: Path, values: list[float]) -> str:
    body = struct.pack(f"<{len(values)}f", *values)
    header = json.dumps({"w": {"dtype": "F32", "shape": [len(values)], "data_offsets": [0, len(body)]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + body)
    fp = api.weights_fingerprint(str(path))
    out = path.with_suffix(".json")
    out.write_text(json.dumps(fp))
    return str(out)


def test_a_weights_difference_says_what_to_do(tmp_path):
    g = _safetensors(tmp_path / "gpu.safetensors", [1.0, 2.0])
    n = _safetensors(tmp_path / "npu.safetensors", [1.0, 3.0])
    result = api.fix(g, n, Options(), write=False)
    assert [(d.finding.check, d.why, d.reason) for d in result.decisions] == [
        ("weights", "check", "an initial weight differs: load the GPU side's checkpoint on NPU")]


def test_a_code_difference_is_refused(tmp_path):
    py = "import torch\n\ndef loss(x):\n    return {}\n"
    assert refused(tmp_path, {"model.py": (py.format("torch.nn.functional.gelu(x)"),
                                           py.format("torch.nn.functional.relu(x)"))}, "code:model.py:loss") == (
        "code", "a difference in the code, not a value: port that code by hand")


def test_an_input_not_understood_is_refused(tmp_path):
    gpu = "torchrun train.py --lr 1e-4\n"
    npu = "mylauncher run train.py --lr 1e-4 --seed 1 --train-iters 10 --micro-batch-size 2 --hidden-size 8\n"
    g, n = pair(tmp_path, {"run.sh": (gpu, npu)})
    result = api.fix(g, n, Options(), write=False)
    d = next(d for d in result.decisions if d.finding.key.startswith("input:"))
    assert (d.fixed, d.why, d.reason) == (False, "unknown", "an input that was not understood: nothing of it can be "
                                                            "set; see why in its note")


def test_a_secret_looking_value_is_never_written(tmp_path):
    sh = "torchrun train.py --lr 1e-4 --hf_token hf_{}\n"
    assert refused(tmp_path, {"run.sh": (sh.format("A" * 34), sh.format("B" * 34))}, "hf_token") == (
        "secret", "a secret-looking value: never written")


def test_no_npu_spelling_is_refused_rather_than_copying_the_gpu_word(tmp_path):
    gpu = "model_name_or_path: m\nflash_attn: fa2\n"
    npu = "model_name_or_path: m\nflash_attn: disabled\n"
    assert refused(tmp_path, {"sft.yaml": (gpu, npu)}, "use_flash_attn") == (
        "spelling", "scriptdiff knows no NPU spelling of use_flash_attn = on for `flash_attn` (rules/fix.yaml "
                    "fix_spellings); set it by hand")


def test_no_place_on_the_npu_side_is_refused(tmp_path):
    gpu = "import torch\n\ntorch.manual_seed(1)\n\n\ndef step(m, opt):\n" \
          "    torch.nn.utils.clip_grad_norm_(m.parameters(), max_norm=0.5)\n    opt.step()\n"
    npu = "import torch\n\ntorch.manual_seed(1)\n\n\ndef step(m, opt):\n    opt.step()\n"
    why, reason = refused(tmp_path, {"train.py": (gpu, npu)}, "clip_grad")
    assert (why, reason) == ("no place", "the NPU side has no call to add max_norm= to; add it by hand")


def test_a_file_with_merge_conflict_markers_is_refused(tmp_path):
    gpu = "torchrun train.py --lr 1e-4\n"
    npu = "<<<<<<< HEAD\nexport X=1\n=======\nexport X=2\n>>>>>>> other\ntorchrun train.py --lr 2e-4\n"
    assert refused(tmp_path, {"run.sh": (gpu, npu)}, "lr") == (
        "file", f"{tmp_path}/npu/run.sh has merge-conflict markers (line 1): resolve the conflict first")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_uncommitted_changes_are_refused_unless_forced(tmp_path):
    g, n = pair(tmp_path, {"run.sh": ("torchrun train.py --lr 1e-4\n", "torchrun train.py --lr 1e-4\n")})
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "port")
    (tmp_path / "npu" / "run.sh").write_text("torchrun train.py --lr 2e-4\n")  # not committed
    result = api.fix(g, n, Options())
    d = decision(result, "lr")
    assert (d.fixed, d.why, d.reason) == (False, "file", f"{n}/run.sh has uncommitted changes (git status): commit "
                                                         f"or stash them first, or give --force")
    assert (tmp_path / "npu" / "run.sh").read_text() == "torchrun train.py --lr 2e-4\n"
    result = api.fix(g, n, Options(), force=True)
    assert decision(result, "lr").fixed
    assert (tmp_path / "npu" / "run.sh").read_text() == "torchrun train.py --lr 1e-4\n"
    (tmp_path / "npu" / "new.sh").write_text("torchrun other.py --lr 3e-4\n")  # untracked: not committed either
    (tmp_path / "gpu" / "new.sh").write_text("torchrun other.py --lr 1e-4\n")
    d = decision(api.fix(g, n, Options(), write=False), "lr")
    assert (d.why, d.reason) == ("file", f"{n}/new.sh has uncommitted changes (git status): commit or stash them "
                                         f"first, or give --force")


def test_git_revisions_are_refused_for_writing(cli):
    with pytest.raises(UsageError, match="a git revision cannot be written"):
        api.fix("main", "npu-branch", Options(), git=True)
    code, out, err = cli("fix", "HEAD:fixtures/example/gpu", "HEAD:fixtures/example/npu")
    assert (code, out) == (2, "")
    assert err == ("scriptdiff: HEAD:fixtures/example/gpu: a git revision cannot be written; fix edits files on disk "
                   "(check out the revision and give its path)\n")
    code, out, err = cli("fix", "--git", "main", "npu")
    assert (code, err) == (2, "scriptdiff: fix edits files on disk, and a git revision cannot be written (--git): "
                              "check out the NPU revision and give its path\n")


def test_an_edit_that_does_not_pass_the_check_is_taken_back(tmp_path):
    # tensor parallelism differs, and so does world_size (computed from two launcher options: refused); fixing
    # tp alone would make data_parallel_size and gradient_accumulation_steps differ, where they agree now
    gpu = "torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --tensor-model-parallel-size 2 " \
          "--global-batch-size 64 --micro-batch-size 1\n"
    npu = "torchrun --nproc_per_node 2 --nnodes 2 pretrain_gpt.py --tensor-model-parallel-size 1 " \
          "--global-batch-size 64 --micro-batch-size 1\n"
    g, n = pair(tmp_path, {"pretrain.sh": (gpu, npu)})
    result = api.fix(g, n, Options())
    d = decision(result, "tensor_model_parallel_size")
    assert (d.fixed, d.why) == (False, "not verified")
    # the computed data parallel size and accumulation steps would differ (SD230): taken back
    assert d.reason.startswith("the edit did not pass the check: diff then reports SD230 data_parallel_size, "
                               "SD230 gradient_accumulation_steps")
    assert decision(result, "world_size").reason == ("computed by the launcher (nproc_per_node * nnodes); set those "
                                                     "options by hand")
    assert (tmp_path / "npu" / "pretrain.sh").read_text() == npu and not result.written


def test_broken_inputs_are_one_line_each_and_nothing_is_written(tmp_path, cli):
    g, n = pair(tmp_path, {"train.py": ("import torch\nopt = torch.optim.AdamW(p, lr=1e-4)\n",
                                        "import torch\nopt = torch.optim.AdamW(p, lr=2e-4\n"),
                           "c.yaml": ("lr: 1\n", "lr: [\n")})
    code, out, err = cli("fix", g, n)
    assert code == 1 and "Traceback" not in out + err
    assert err.splitlines() == [
        f"scriptdiff: {n}/c.yaml: not valid YAML: line 2: did not find expected node content; not compared "
        f"(1 setting(s) of the other side could not be compared: lr)",
        f"scriptdiff: {n}/train.py: not valid Python: line 2: '(' was never closed; compared as text"]
    # a side that does not parse is unknown, not absent: no lr finding to fix, its input refused
    assert "SD202" not in out
    assert ("not fixed  SD154 input:" + n + "/train.py  an input that was not understood: nothing of it can be set; "
            "see why in its note") in out
    assert (Path(n) / "train.py").read_text() == "import torch\nopt = torch.optim.AdamW(p, lr=2e-4\n"
    code, out, err = cli("fix", str(tmp_path / "nope"), n)
    assert (code, err) == (2, f"scriptdiff: {tmp_path}/nope: no such file or directory\n")


def test_an_option_of_a_command_line_written_as_a_string_is_refused(tmp_path):
    py = 'ARGS = (\n    "--lr {} "\n    "--train-steps 500 "\n)\n\n\ndef main(run):\n    run(ARGS)\n'
    assert refused(tmp_path, {"launch.py": (py.format("1e-5"), py.format("3e-5"))}, "lr") == (
        "computed", "computed, not written as a value (an option of a command line the file writes as a string); "
                    "edit it by hand")

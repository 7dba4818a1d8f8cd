"""scriptdiff dumps: msprobe dumps matched call by call, the first divergence and its probable
cause in the setup.

The pairs under fixtures/dumps/ were written by msprobe itself (fixtures/dumps/gen.py: a
two-layer transformer on CPU, one step, task statistics, level mix); each pair of runs differs
by one known cause, which each test names exactly: the first diverging call (rule, key, both
values, both lines) and the static finding that explains it (rule, key, both lines). Smaller
dumps written here test the ports, ranks, saved tensors and hostile input.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scriptdiff import api
from scriptdiff.project.checkrun import load_config, run_checks
from scriptdiff.dumps.align import Aligner
from scriptdiff.dumps.reader import Header, calls, locate
from scriptdiff.model import Options

ROOT = Path(__file__).resolve().parent.parent
FX = "fixtures/dumps"
CASES = {  # case: (GPU run, NPU run), as fixtures/dumps/gen.py pairs them
    "same": ("base", "base"), "softmax_fp16": ("base", "softmax_fp16"), "flash_eager": ("flash", "base"),
    "dropout": ("base", "dropout"), "seed": ("base", "seed"), "lr": ("base", "lr"),
}


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # the reports name the fixtures by their paths from the repository top


def run(case: str, scripts: bool = True, **settings):
    g, n = CASES[case]
    st = api.dumps_settings(**settings) if settings else None
    return api.dumps(f"{FX}/{g}/dump", f"{FX}/{n}/dump", Options(use_cache=False), st,
                     scripts=(f"{FX}/{g}/scripts", f"{FX}/{n}/scripts") if scripts else None)


def brief(f):
    def side(s):
        return None if s is None else (s.value, s.path, s.line)
    return f.rule, f.key, side(f.gpu), side(f.npu)


def by_rule(report):
    out = {}
    for f in report.findings:
        out.setdefault(f.rule, []).append(f)
    return out


# --- the pairs msprobe wrote: the first divergence and its probable cause -----------------------

def test_an_identical_pair_is_equal():
    report = run("same")
    assert (report.findings, report.errors, report.exit_code()) == ([], [], 0)
    assert report.compared == 1
    assert "no divergence: every matched call agrees within the thresholds" in report.overview


def test_softmax_in_half_precision_is_a_dtype_change_at_the_softmax_line():
    report = run("softmax_fp16")
    got = by_rule(report)
    assert sorted(got) == ["SD802", "SD808"]
    (d,) = got["SD802"]
    assert brief(d) == ("SD802", "dump:step0/rank0:Torch.softmax.0.forward",
                        ("float32", f"{FX}/base/scripts/train.py", 45),
                        ("float16", f"{FX}/softmax_fp16/scripts/train.py", 45))
    assert d.message.startswith("first divergence (rank step0/rank0, forward pass, call 11): Torch.softmax.0.forward: "
                                "output.0 is float32 on GPU and float16 on NPU (a dtype change)")
    (c,) = got["SD808"]
    assert brief(c) == ("SD808", "cause:dump:step0/rank0:Torch.softmax.0.forward:code:train.py:SelfAttention.forward",
                        ("torch.softmax(scores, dim=-1)", f"{FX}/base/scripts/train.py", 45),
                        ("torch.softmax(scores, dim=-1, dtype=torch.float16).float()",
                         f"{FX}/softmax_fp16/scripts/train.py", 45))
    assert "SD101 code:train.py:SelfAttention.forward, at the diverging call's line (GPU train.py:45)" in c.message
    assert report.exit_code() == 1


def test_flash_against_eager_attention_is_a_kernel_change_explained_by_the_attention_setting():
    report = run("flash_eager")
    got = by_rule(report)
    assert sorted(got) == ["SD806", "SD808"]
    (d,) = got["SD806"]
    assert brief(d) == ("SD806", "dump:step0/rank0:Functional.scaled_dot_product_attention.0.forward",
                        ("the fused attention kernel (flash_attn, scaled_dot_product_attention)",
                         f"{FX}/flash/scripts/train.py", 49),
                        ("eager attention (matmul, softmax, matmul)", f"{FX}/base/scripts/train.py", 44))
    assert "its outputs agree within the thresholds" in d.message
    assert d.extra["dumps"]["npu"] == ["Torch.matmul.0.forward", "Tensor.__truediv__.0.forward",
                                       "Torch.softmax.0.forward", "Functional.dropout.0.forward",
                                       "Torch.matmul.1.forward"]
    (c,) = got["SD808"]
    assert brief(c) == ("SD808", "cause:dump:step0/rank0:Functional.scaled_dot_product_attention.0.forward:use_flash_attn",
                        ("flash_attention_2", f"{FX}/flash/scripts/train.py", 18),
                        ("eager", f"{FX}/base/scripts/train.py", 18))
    assert "SD201 use_flash_attn, on use_flash_attn, a setting the attention kernel depends on" in c.message
    assert report.masked == []  # eager on NPU is no port substitution for the fused kernel


def test_a_changed_dropout_is_the_dropout_call_argument_explained_by_the_dropout_setting():
    report = run("dropout")
    got = by_rule(report)
    assert sorted(got) == ["SD805", "SD807", "SD808"]
    (d,) = got["SD805"]
    assert brief(d) == ("SD805", "dump:step0/rank0:Functional.dropout.0.forward",
                        ("0.0", f"{FX}/base/scripts/train.py", 46), ("0.1", f"{FX}/dropout/scripts/train.py", 46))
    assert "input.p is 0.0 on GPU and 0.1 on NPU" in d.message
    (c,) = got["SD808"]
    assert brief(c) == ("SD808", "cause:dump:step0/rank0:Functional.dropout.0.forward:attention_dropout",
                        (0.0, f"{FX}/base/scripts/train.py", 17), (0.1, f"{FX}/dropout/scripts/train.py", 17))
    (u,) = got["SD807"]  # with p = 0 the GPU records no dropout backward: listed, never dropped
    assert u.message == ("0 GPU call(s) and 2 NPU call(s) have no counterpart (rank step0/rank0): NPU "
                         "Functional.dropout.1.backward, Functional.dropout.0.backward")


def test_another_seed_shows_in_the_first_call_inputs_and_is_explained_by_the_seed():
    report = run("seed")
    got = by_rule(report)
    assert sorted(got) == ["SD801", "SD808"]
    (d,) = got["SD801"]
    assert brief(d) == ("SD801", "dump:step0/rank0:Tensor.pow.0.forward",
                        ("0.177353", f"{FX}/base/scripts/train.py", 29), ("-0.0375734", f"{FX}/seed/scripts/train.py", 29))
    assert "call 1): Tensor.pow.0.forward: input.0's Mean is 0.177353 on GPU and -0.0375734 on NPU (relative error " \
           "1.21 > 0.5) (the call's inputs already differ)" in d.message
    (c,) = got["SD808"]
    assert brief(c) == ("SD808", "cause:dump:step0/rank0:Tensor.pow.0.forward:seed",
                        (1234, f"{FX}/base/scripts/train.py", 16), (42, f"{FX}/seed/scripts/train.py", 16))


def test_another_learning_rate_diverges_in_the_optimizer_step_not_in_the_forward_or_backward():
    report = run("lr")
    got = by_rule(report)
    assert sorted(got) == ["SD805", "SD808"]
    (d,) = got["SD805"]
    assert brief(d) == ("SD805", "dump:step0/rank0:Tensor.mul_.0.forward",
                        ("0.99999", f"{FX}/base/scripts/train.py", 92), ("0.99998", f"{FX}/lr/scripts/train.py", 92))
    assert d.extra["dumps"]["phase"] == "after the backward pass"
    rr = report.details["dumps"].ranks[0]
    assert all(c.phase == 2 for c in [rr.first] + rr.chain)  # nothing of the forward or backward pass differs
    (c,) = got["SD808"]
    assert brief(c) == ("SD808", "cause:dump:step0/rank0:Tensor.mul_.0.forward:lr",
                        (0.001, f"{FX}/base/scripts/train.py", 15), (0.002, f"{FX}/lr/scripts/train.py", 15))


def test_without_scripts_the_divergence_is_the_same_at_the_dumped_lines_and_no_cause_is_looked_for():
    for case, rule, key in (("softmax_fp16", "SD802", "dump:step0/rank0:Torch.softmax.0.forward"),
                            ("seed", "SD801", "dump:step0/rank0:Tensor.pow.0.forward")):
        report = run(case, scripts=False)
        assert [(f.rule, f.key) for f in report.findings] == [(rule, key)]
        d = report.findings[0]
        assert (d.gpu.path, d.npu.path) == ("/workspace/train.py", "/workspace/train.py")


def test_the_cause_is_not_in_the_setup_when_the_scripts_agree(tmp_path):
    report = api.dumps(f"{FX}/base/dump", f"{FX}/softmax_fp16/dump", Options(use_cache=False),
                       scripts=(f"{FX}/base/scripts", f"{FX}/base/scripts"))
    assert sorted(f.rule for f in report.findings) == ["SD802", "SD809"]
    (n,) = [f for f in report.findings if f.rule == "SD809"]
    assert n.message == ("no finding of the compared setup is at the lines of Torch.softmax.0.forward (GPU "
                         f"{FX}/base/scripts/train.py:45, NPU {FX}/base/scripts/train.py:45), in its function forward "
                         "or on the settings it depends on (attention_softmax_in_fp32, masked_softmax_fusion, "
                         "params_dtype, load_dtype, fp32_residual_connection, "
                         "accumulate_allreduce_grads_in_fp32, fp16_lm_cross_entropy): the cause is not in the setup "
                         "that was compared")


def test_check_with_dumps_gives_the_same_findings_and_an_eighth_verdict(tmp_path):
    cfg = tmp_path / "scriptdiff.toml"
    cfg.write_text(f'[gpu]\nscripts = ["{ROOT}/{FX}/base/scripts"]\ndumps = ["{ROOT}/{FX}/base/dump"]\n'
                   f'[npu]\nscripts = ["{ROOT}/{FX}/lr/scripts"]\ndumps = ["{ROOT}/{FX}/lr/dump"]\n')
    report = run_checks(load_config(str(cfg)), Options(use_cache=False))
    dumps = [(f.rule, f.key) for f in report.findings if f.check == "dumps"]
    assert dumps == [(f.rule, f.key) for f in run("lr").findings]
    assert report.verdicts["dumps"] == ("differences", "1 error(s)")
    assert [(f.rule, f.key) for f in report.findings if f.check == "hyperparameters"] == [("SD202", "lr")]


def test_check_without_dumps_gives_no_dumps_verdict(fixtures):
    report = run_checks(load_config(str(fixtures / "example" / "scriptdiff.toml")), Options(use_cache=False))
    assert "dumps" not in report.verdicts


def test_check_with_an_unreadable_dump_is_not_checked(tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "dump.json").write_text('{"task": "statistics", "data": {"A.x.0.forward": {')
    cfg = tmp_path / "scriptdiff.toml"
    cfg.write_text(f'[gpu]\ndumps = ["g"]\n[npu]\ndumps = ["{ROOT}/{FX}/base/dump"]\n')
    report = run_checks(load_config(str(cfg)), Options(use_cache=False))
    assert report.verdicts["dumps"][0] == "not checked"


# --- the command line ----------------------------------------------------------------------------

def test_cli_exit_codes_and_text(cli):
    code, out, err = cli("dumps", f"{FX}/base/dump", f"{FX}/base/dump")
    assert (code, err) == (0, "")
    code, out, err = cli("dumps", f"{FX}/base/dump", f"{FX}/softmax_fp16/dump", "--scripts", f"{FX}/base/scripts",
                         f"{FX}/softmax_fp16/scripts")
    assert code == 1
    assert "first divergence: rank step0/rank0, forward pass, call 11: Torch.softmax.0.forward\n" \
           "  output.0 is float32 on GPU and float16 on NPU (a dtype change)\n" in out
    assert "  > Torch.softmax.0.forward                       Torch.softmax.0.forward                       " \
           "output.0 float32 -> float16\n" in out
    code, out, err = cli("dumps", "nowhere", f"{FX}/base/dump")
    assert (code, err) == (2, "scriptdiff: nowhere: no such file or directory\n")


def test_json_has_the_dumps_section(cli):
    code, out, _ = cli("dumps", f"{FX}/base/dump", f"{FX}/lr/dump", "-f", "json")
    doc = json.loads(out)
    assert code == 1
    first = doc["dumps"]["first"]
    assert (first["rank"], first["phase"], first["gpu"], first["kind"]) == \
        ("step0/rank0", "after the backward pass", ["Tensor.mul_.0.forward"], "arguments")
    assert doc["dumps"]["read"]["gpu"]["ranks"]["step0/rank0"]["calls"] == 194
    assert doc["dumps"]["settings"] == {"rtol": 0.5, "output_rtol": 0.1, "input_rtol": 0.01, "atol": 1e-06,
                                        "chain": 10, "window": 256}


def test_html_page_shows_the_calls_side_by_side_with_the_divergence_marked(cli):
    code, out, _ = cli("dumps", f"{FX}/base/dump", f"{FX}/softmax_fp16/dump", "--scripts", f"{FX}/base/scripts",
                       f"{FX}/softmax_fp16/scripts", "-f", "html")
    assert code == 1
    assert "<h2>API dumps: the first divergence</h2>" in out
    # the divergence is finding 0: its probable cause (SD808) follows it (issue 41)
    assert ("<tr class=first><td><a href='#f0'>&#9654;</a><td>Torch.softmax.0.forward<td>Torch.softmax.0.forward"
            "<td class=st>output.0 float32 -&gt; float16</tr>") in out
    assert f"<a href='#f0'>{FX}/base/scripts/train.py:45</a>" in out  # linked to the script's line
    assert "id=p0" in out  # the scripts' panel the link lands in


def test_thresholds_are_options_and_checked(cli):
    code, _out, err = cli("dumps", f"{FX}/base/dump", f"{FX}/base/dump", "--rtol", "0")
    assert (code, err) == (2, "scriptdiff: --rtol must be a positive relative error (0.5 = 50%)\n")
    # with a tolerance above the seed's largest relative error, its first call no longer differs by value
    report = run("seed", scripts=False, rtol=1.5, output_rtol=1.5)
    assert report.findings[0].key != "dump:step0/rank0:Tensor.pow.0.forward"


# --- dumps written here: ports, ranks, order, saved tensors ----------------------------------------

def T(dtype="float32", shape=(2, 4), mx=1.0, mn=-1.0, mean=0.1, norm=2.0, **extra):
    return {"type": "torch.Tensor", "dtype": f"torch.{dtype}", "shape": list(shape), "Max": mx, "Min": mn,
            "Mean": mean, "Norm": norm, "requires_grad": False, **extra}


def fwd(inputs, outputs, kwargs=None):
    return {"input_args": inputs, "input_kwargs": kwargs or {}, "output": outputs}


def bwd(inputs, outputs):
    return {"input": inputs, "output": outputs}


def write(folder: Path, data: dict, stack=None, construct=None, task="statistics", level="L1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dump.json").write_text(json.dumps({"task": task, "level": level, "framework": "pytorch",
                                                  "dump_data_dir": None, "data": data}, indent=1))
    if stack is not None:
        (folder / "stack.json").write_text(json.dumps(stack))
    if construct is not None:
        (folder / "construct.json").write_text(json.dumps(construct))
    return folder


def compare(tmp_path, g: dict, n: dict, **kw):
    return api.dumps(str(write(tmp_path / "g", g, **kw)), str(write(tmp_path / "n", n, **kw)), Options(use_cache=False))


OUT = T(shape=(1, 2, 3, 2), mx=0.6, mn=-0.4, mean=0.05, norm=1.3)
Q = T(shape=(1, 2, 3, 2))
FUSED = {"Functional.scaled_dot_product_attention.0.forward": fwd([Q, Q, Q], [OUT])}
FLASH = {"Functional.flash_attn_func.0.forward": fwd([Q, Q, Q], [OUT])}
NPU_FA = {"NPU.npu_fusion_attention.0.forward": fwd([Q, Q, Q], [OUT, T(shape=(1, 2, 3, 8))])}
EAGER = {"Torch.matmul.0.forward": fwd([Q, T(shape=(1, 2, 2, 3))], [T(shape=(1, 2, 3, 3))]),
         "Tensor.__truediv__.0.forward": fwd([T(shape=(1, 2, 3, 3))], [T(shape=(1, 2, 3, 3))]),
         "Torch.softmax.0.forward": fwd([T(shape=(1, 2, 3, 3))], [T(shape=(1, 2, 3, 3))]),
         "Torch.matmul.1.forward": fwd([T(shape=(1, 2, 3, 3)), Q], [OUT])}
AFTER = {"Functional.linear.0.forward": fwd([OUT], [T()])}


@pytest.mark.parametrize("gpu", [FLASH, EAGER], ids=["flash_attn_func", "eager"])
def test_npu_fusion_attention_stands_for_flash_attention_or_eager_attention(tmp_path, gpu):
    report = compare(tmp_path, {**gpu, **AFTER}, {**NPU_FA, **AFTER})
    assert (report.findings, report.exit_code()) == ([], 0)
    (m,) = report.masked
    assert (m.rule, m.gpu.source, m.npu.source, m.npu.value) == (
        "SD021", next(iter(gpu)) if len(gpu) == 1 else f"{next(iter(gpu))} .. Torch.matmul.1.forward (4 calls)",
        "NPU.npu_fusion_attention.0.forward", "the NPU fused attention kernel (torch_npu.npu_fusion_attention)")


def test_a_substituted_kernel_whose_output_differs_is_a_divergence(tmp_path):
    bad = {"NPU.npu_fusion_attention.0.forward": fwd([Q, Q, Q], [T(shape=(1, 2, 3, 2), mx=1.6, mn=-0.4, mean=0.05,
                                                                     norm=1.3)])}
    report = compare(tmp_path, {**FLASH, **AFTER}, {**bad, **AFTER})
    assert [(f.rule, f.key, f.gpu.value, f.npu.value) for f in report.findings] == [
        ("SD801", "dump:Functional.flash_attn_func.0.forward", "0.6", "1.6")]
    assert report.masked == []
    report = compare(tmp_path / "eager", {**EAGER, **AFTER}, {**bad, **AFTER})
    (row,) = [r for r in report.findings[0].extra["dumps"]["rows"] if r[3]]
    assert row == ["Torch.matmul.0.forward .. Torch.matmul.1.forward (4 calls)", "NPU.npu_fusion_attention.0.forward",
                   "output.0 relative error 0.625", True]


def test_npu_rms_norm_stands_for_an_rmsnorm_module_forward_and_backward(tmp_path):
    x, y = T(shape=(1, 3, 4)), T(shape=(1, 3, 4), mx=1.5)
    mod_f, mod_b = "Module.layers.0.norm.RMSNorm.forward.0", "Module.layers.0.norm.RMSNorm.backward.0"
    gpu = {"Tensor.pow.0.forward": fwd([x, {"type": "int", "value": 2}], [x]), "Tensor.mean.0.forward": fwd([x], [x]),
           "Tensor.__add__.0.forward": fwd([x], [x]), "Torch.rsqrt.0.forward": fwd([x], [x]),
           "Tensor.__mul__.0.forward": fwd([x, x], [y]), mod_f: fwd([x], [y]),
           "Tensor.__mul__.0.backward": bwd([x], [x]), "Torch.rsqrt.0.backward": bwd([x], [x]),
           "Tensor.__add__.0.backward": bwd([x], [x]), "Tensor.mean.0.backward": bwd([x], [x]),
           "Tensor.pow.0.backward": bwd([x], [x]), mod_b: bwd([x], [x])}
    npu = {"NPU.npu_rms_norm.0.forward": fwd([x, T(shape=(4,))], [y, T(shape=(1, 3, 1))]), mod_f: fwd([x], [y]),
           "NPU.npu_rms_norm.0.backward": bwd([x], [x, T(shape=(4,))]), mod_b: bwd([x], [x])}
    report = compare(tmp_path, gpu, npu, level="mix")
    assert (report.findings, report.exit_code()) == ([], 0)
    assert [(m.gpu.source, m.npu.source) for m in report.masked] == [
        ("Tensor.__mul__.0.backward .. Tensor.pow.0.backward (5 calls)", "NPU.npu_rms_norm.0.backward"),
        ("Tensor.pow.0.forward .. Tensor.__mul__.0.forward (5 calls)", "NPU.npu_rms_norm.0.forward")]


def _opt_stack(calls_, path):
    return {"0": [calls_, [f"File {path}, line 90, in _group_step, \n combined.mul_(1 - lr * wd)",
                           "File /workspace/train.py, line 30, in main, \n optimizer.step()"]]}


def test_an_npufused_optimizer_stands_for_torch_adamw_as_a_whole(tmp_path):
    w = T(shape=(4, 4))
    gpu_opt = {f"Tensor.mul_.{i}.forward": fwd([w, {"type": "float", "value": 0.99999}], [w]) for i in range(4)}
    npu_opt = {"Tensor.mul_.0.forward": fwd([T(shape=(64,)), {"type": "float", "value": 0.99999}], [T(shape=(64,))])}
    tail = {"Functional.linear.9.forward": fwd([w], [w])}
    g = write(tmp_path / "g", {**gpu_opt, **tail}, _opt_stack(list(gpu_opt), "/usr/lib/python3/site-packages/torch/optim/adamw.py"))
    n = write(tmp_path / "n", {**npu_opt, **tail},
              _opt_stack(list(npu_opt), "/usr/lib/python3/site-packages/torch_npu/optim/npu_fused_adamw.py"))
    report = api.dumps(str(g), str(n), Options(use_cache=False))
    assert (report.findings, report.exit_code()) == ([], 0)
    (m,) = report.masked
    assert (m.gpu.value, m.npu.value) == ("a torch.optim optimizer (AdamW, Adam, SGD, ...)",
                                          "an NpuFused optimizer (torch_npu.optim.NpuFusedAdamW, Ascend apex "
                                          "NpuFusedAdam, ...)")
    # without the NPU stack the calls pair by name (one side's form is unknown), and the
    # combined tensor is another shape; without both, the same
    (n / "stack.json").unlink()
    report = api.dumps(str(g), str(n), Options(use_cache=False))
    assert sorted(f.rule for f in report.findings) == ["SD803", "SD807"]  # 3 GPU updates left without a counterpart
    (g / "stack.json").unlink()
    report = api.dumps(str(g), str(n), Options(use_cache=False))
    assert sorted(f.rule for f in report.findings) == ["SD803", "SD807"]


def test_arguments_past_the_budget_are_said_not_compared(tmp_path, monkeypatch):
    from scriptdiff import budget

    monkeypatch.setattr(budget, "DUMP_SLOTS", 3)
    call = {"Torch.cat.0.forward": fwd([[T(), T(), T(), T()]], [T()])}
    report = compare(tmp_path, call, call)
    assert [(f.rule, f.key, f.message) for f in report.findings] == [
        ("SD810", "dump:arguments", "4 tensor(s) and argument(s) of 2 call(s) (the first Torch.cat.0.forward) are past "
                                    "the 3 a call keeps or 32 levels deep: they were not compared")]


def test_calls_pair_by_order_and_module_path_through_an_extra_call(tmp_path):
    a = {"Functional.linear.0.forward": fwd([T()], [T()]), "Module.l.0.fc.Linear.forward.0": fwd([T()], [T()]),
         "Functional.gelu.0.forward": fwd([T()], [T()]), "Functional.linear.1.forward": fwd([T()], [T()]),
         "Module.l.1.fc.Linear.forward.0": fwd([T()], [T()])}
    b = dict(list(a.items())[:2] + [("Tensor.float.0.forward", fwd([T()], [T()]))] + list(a.items())[2:])
    report = compare(tmp_path, a, b, level="mix")
    assert [(f.rule, f.message) for f in report.findings] == [
        ("SD807", "0 GPU call(s) and 1 NPU call(s) have no counterpart: NPU Tensor.float.0.forward")]
    assert report.details["dumps"].ranks[0].matched == 5


def test_the_first_divergence_is_the_forward_pass_then_the_earliest_call_then_the_lowest_rank(tmp_path):
    ok, bad = fwd([T()], [T()]), fwd([T()], [T(mx=9.0)])
    layout = {  # rank -> calls (GPU), the NPU differing where `bad` is
        "rank0": ({"Functional.linear.0.forward": ok, "Functional.linear.1.forward": ok,
                   "Functional.linear.0.backward": bwd([T()], [T()])},
                  {"Functional.linear.0.forward": ok, "Functional.linear.1.forward": ok,
                   "Functional.linear.0.backward": bwd([T()], [T(mx=9.0)])}),
        "rank1": ({"Functional.linear.0.forward": ok, "Functional.linear.1.forward": ok},
                  {"Functional.linear.0.forward": ok, "Functional.linear.1.forward": bad}),
        "rank2": ({"Functional.linear.0.forward": ok, "Functional.linear.1.forward": ok},
                  {"Functional.linear.0.forward": ok, "Functional.linear.1.forward": bad}),
    }
    for rank, (g, n) in layout.items():
        write(tmp_path / "g" / "step0" / rank, g)
        write(tmp_path / "n" / "step0" / rank, n)
    report = api.dumps(str(tmp_path / "g"), str(tmp_path / "n"), Options(use_cache=False))
    assert [(f.rule, f.key) for f in report.findings] == [("SD801", "dump:step0/rank1:Functional.linear.1.forward")]
    assert [r.first.label for r in report.details["dumps"].ranks] == ["step0/rank0", "step0/rank1", "step0/rank2"]


def test_a_rank_on_one_side_only_is_not_comparable(tmp_path):
    same = {"Functional.linear.0.forward": fwd([T()], [T()])}
    for side, ranks in (("g", ("rank0", "rank1")), ("n", ("rank0",))):
        for r in ranks:
            write(tmp_path / side / "step0" / r, same)
    report = api.dumps(str(tmp_path / "g"), str(tmp_path / "n"), Options(use_cache=False))
    assert [(f.rule, f.key, f.message) for f in report.findings] == [
        ("SD810", "dump:step0/rank1:rank", "rank step0/rank1 is in the GPU dump only: it was not compared (the NPU "
                                            "dump has step0/rank0)")]
    assert report.exit_code() == 1


def test_one_process_folder_a_side_pairs_whatever_its_name(tmp_path):
    same = {"Functional.linear.0.forward": fwd([T()], [T()])}
    write(tmp_path / "g" / "step0" / "proc123", same)
    write(tmp_path / "n" / "step0" / "rank0", same)
    report = api.dumps(str(tmp_path / "g"), str(tmp_path / "n"), Options(use_cache=False))
    assert (report.findings, report.compared, report.exit_code()) == ([], 1, 0)


def test_device_names_in_arguments_differ_by_the_port_alone(tmp_path):
    def to(dev):
        return {"Tensor.to.0.forward": fwd([T(), {"type": "torch.device", "value": dev}], [T()])}

    assert compare(tmp_path / "a", to("cuda:0"), to("npu:0")).findings == []
    report = compare(tmp_path / "b", to("cuda:0"), to("cpu"))
    assert [(f.rule, f.gpu.value, f.npu.value) for f in report.findings] == [("SD805", "'cuda:0'", "'cpu'")]


def test_nan_on_one_side_only(tmp_path):
    report = compare(tmp_path, {"Functional.linear.0.forward": fwd([T()], [T()])},
                     {"Functional.linear.0.forward": fwd([T()], [T(mx=float("inf"), norm=float("nan"))])})
    assert [(f.rule, f.message.split(": ", 2)[-1]) for f in report.findings] == [
        ("SD804", "output.0 has NaN/inf on NPU only (Max inf, Norm nan)")]


def test_an_output_that_departs_while_its_inputs_agree_is_found_below_the_statistics_threshold(tmp_path):
    g = {"Functional.gelu.0.forward": fwd([T()], [T(mx=1.0)])}
    n = {"Functional.gelu.0.forward": fwd([T()], [T(mx=1.2)])}  # 0.17 < 0.5, but > 0.1 with equal inputs
    report = compare(tmp_path, g, n)
    assert [f.rule for f in report.findings] == ["SD801"]
    assert "while the inputs agree within 0.01" in report.findings[0].message


def test_md5_summaries_and_statistics_are_not_comparable(tmp_path):
    g = write(tmp_path / "g", {"Functional.linear.0.forward": fwd([T()], [T()])})
    n = write(tmp_path / "n", {"Functional.linear.0.forward": fwd([T()], [{"type": "torch.Tensor", "dtype": "torch.float32",
                                                                            "shape": [2, 4], "md5": "0a1b2c3d"}])},
              task="md5")
    report = api.dumps(str(g), str(n), Options(use_cache=False))
    assert [f.rule for f in report.findings] == ["SD810"]


def test_md5_summaries_compare_by_equality(tmp_path):
    def md5(h):
        return {"Functional.linear.0.forward": fwd([{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 4],
                                                     "md5": "11111111"}],
                                                   [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 4],
                                                     "md5": h}])}

    assert compare(tmp_path / "a", md5("0a1b2c3d"), md5("0a1b2c3d"), task="md5").findings == []
    report = compare(tmp_path / "b", md5("0a1b2c3d"), md5("ffffffff"), task="md5")
    assert [(f.rule, f.gpu.value, f.npu.value) for f in report.findings] == [("SD801", "0a1b2c3d", "ffffffff")]


def test_a_side_is_a_dump_step_or_rank_folder_or_a_dump_json(tmp_path):
    same = {"Functional.linear.0.forward": fwd([T()], [T()])}
    for step in ("step0", "step3"):
        write(tmp_path / "d" / step / "rank0", same)
    assert [r.label for r in locate(str(tmp_path / "d"))] == ["step0/rank0", "step3/rank0"]
    assert [r.label for r in locate(str(tmp_path / "d" / "step3"))] == ["rank0"]
    assert [r.label for r in locate(str(tmp_path / "d" / "step3" / "rank0"))] == [""]
    assert [r.dump for r in locate(str(tmp_path / "d" / "step3" / "rank0" / "dump.json"))] == \
        [str(tmp_path / "d" / "step3" / "rank0" / "dump.json")]
    report = api.dumps(str(tmp_path / "d" / "step3"), str(tmp_path / "d" / "step0" / "rank0" / "dump.json"),
                       Options(use_cache=False))
    assert (report.findings, report.compared) == ([], 1)  # one rank a side pairs whatever its name


def test_saved_tensors_give_the_first_divergence_evidence_through_npy_headers(tmp_path):
    np = pytest.importorskip("numpy")
    for side, scale in (("g", 1.0), ("n", 3.0)):
        d = write(tmp_path / side, {"Functional.linear.0.forward": fwd(
            [T(data_name="Functional.linear.0.forward.input.0.npy")],
            [T(mx=scale, data_name="Functional.linear.0.forward.output.0.npy")])}, task="tensor")
        (d / "dump_tensor_data").mkdir()
        np.save(d / "dump_tensor_data" / "Functional.linear.0.forward.input.0.npy", np.ones((2, 4), np.float32))
        np.save(d / "dump_tensor_data" / "Functional.linear.0.forward.output.0.npy",
                np.full((2, 4), scale, np.float32))
    report = api.dumps(str(tmp_path / "g"), str(tmp_path / "n"), Options(use_cache=False))
    t = report.findings[0].extra["dumps"]["tensors"]
    assert (t["slot"], t["max_abs_diff"], t["cosine"]) == ("output.0", 2.0, 1.0)


# --- bounded memory and hostile dumps: one line each, no traceback ---------------------------------

def test_the_stream_walks_a_document_across_any_chunking():
    import io

    from scriptdiff.inputs.jsonload import Stream

    doc = {"task": "statistics", "data": {f"A.op.{i}.forward": {"input_args": [{"Max": i * 1.5e-3, "s": "a},]\""}],
                                           "output": [None, True, -2]} for i in range(120)},
           "skipped": [1, {"q": "}"}, [2.5e-7]], "n": 12345678}
    for chunk in (3, 7, 64, 4096):
        for indent in (None, 1):
            s = Stream(io.BytesIO(json.dumps(doc, indent=indent).encode()), 10_000, chunk)
            got = {}
            for key in s.members():
                if key == "data":
                    got[key] = dict(s.items())
                elif key != "skipped":  # left: walked, never decoded whole
                    got[key] = s.value()
            assert got == {k: v for k, v in doc.items() if k != "skipped"}, (chunk, indent)


@pytest.mark.parametrize("text,message", [
    ('{"a": [1, 2', "the file ends inside the value that starts at character 7 (cut while it was written?)"),
    ('{"a": 1,, "b": 2}', "Expecting value at character 9"),
    ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", "nested too deeply (> 200 levels) at character 7"),
])
def test_the_stream_says_where_a_document_breaks(text, message):
    import io

    from scriptdiff.inputs.jsonload import JSONError, Stream

    s = Stream(io.BytesIO(text.encode()), 100_000, 16)
    with pytest.raises(JSONError) as e:
        for _key in s.members():
            s.value()
    assert str(e.value) == message


def test_calls_are_streamed_one_at_a_time(tmp_path):
    write(tmp_path / "d", {f"Functional.linear.{i}.forward": fwd([T()], [T()]) for i in range(50)})
    (rank,) = locate(str(tmp_path / "d"))
    it = calls(rank, Header())
    first = next(it)
    assert (first.name, first.token, first.index) == ("Functional.linear.0.forward", "Functional.linear:forward", 0)


def test_the_aligner_holds_a_bounded_window(tmp_path):
    write(tmp_path / "d", {f"Functional.linear.{i}.forward": fwd([T()], [T()]) for i in range(300)})
    (rank,) = locate(str(tmp_path / "d"))
    al = Aligner(calls(rank, Header()), calls(rank, Header()), window=16)
    seen = 0
    for _pair in al:
        seen += 1
        assert len(al.gq) <= 16 and len(al.nq) <= 16
    assert seen == 300


def _cli_one_line(cli, *args):
    code, out, err = cli("dumps", *args)
    assert "Traceback" not in out + err
    return code, err.strip().splitlines()


def test_a_truncated_dump_is_one_line(tmp_path, cli):
    d = write(tmp_path / "g", {"Functional.linear.0.forward": fwd([T()], [T()])})
    text = (d / "dump.json").read_text()
    (d / "dump.json").write_text(text[: len(text) // 2])
    code, lines = _cli_one_line(cli, str(d), f"{FX}/base/dump")
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"scriptdiff: {d}/dump.json: not valid JSON: ")
    assert lines[0].endswith("(cut while it was written?)")


def test_a_deeply_nested_dump_is_one_line(tmp_path, cli):
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "dump.json").write_text('{"task": "statistics", "data": {"A.x.0.forward": '
                                              + "[" * 100_000 + "]" * 100_000 + "}}")
    code, lines = _cli_one_line(cli, str(tmp_path / "g"), f"{FX}/base/dump")
    assert code == 2
    assert lines == [f"scriptdiff: {tmp_path}/g/dump.json: not valid JSON: nested too deeply (> 200 levels) at "
                     f"character 50"]


def test_a_call_over_the_record_budget_is_one_line(tmp_path, cli, monkeypatch):
    from scriptdiff import budget

    monkeypatch.setattr(budget, "DUMP_RECORD", 1000)
    monkeypatch.setattr(budget, "JSON_CHUNK", 256)  # a record is bounded beyond one chunk
    d = write(tmp_path / "g", {"Functional.linear.0.forward": fwd([T(note="x" * 5000)], [T()])})
    code, lines = _cli_one_line(cli, str(d), f"{FX}/base/dump")
    assert code == 2
    assert lines[0].startswith(f"scriptdiff: {d}/dump.json: not valid JSON: a value of more than 1,000 characters at")


def test_a_missing_stack_json_is_a_note_and_the_rest_is_compared(tmp_path, cli):
    d = tmp_path / "g"
    d.mkdir()
    for name in ("dump.json", "construct.json"):
        (d / name).write_bytes((ROOT / FX / "softmax_fp16" / "dump" / "step0" / "rank0" / name).read_bytes())
    code, lines = _cli_one_line(cli, f"{FX}/base/dump", str(d), "-f", "json")
    assert code == 1
    assert lines == [f"scriptdiff: note: {d}: no stack.json: the calls' lines are not known (the cause is looked for "
                     f"by the settings a call depends on only)"]


def test_a_pickle_in_dump_tensor_data_is_never_unpickled(tmp_path, cli):
    marker = tmp_path / "ran"
    for side, mx in (("g", 1.0), ("n", 5.0)):  # an os.system call, pickled by hand: it must never run
        d = write(tmp_path / side, {"Functional.linear.0.forward": fwd(
            [T()], [T(mx=mx, data_name="Functional.linear.0.forward.output.0.pt")])}, task="tensor")
        (d / "dump_tensor_data").mkdir()
        with open(d / "dump_tensor_data" / "Functional.linear.0.forward.output.0.pt", "wb") as fh:
            fh.write(f"cos\nsystem\n(S'touch {marker}-{side}'\ntR.".encode())
    code, lines = _cli_one_line(cli, str(tmp_path / "g"), str(tmp_path / "n"))
    assert code == 1  # the divergence is found from the statistics
    assert list(tmp_path.glob("ran*")) == []
    lines = [ln for ln in lines if "no stack.json" not in ln]
    assert len(lines) == 1
    assert lines == [f"scriptdiff: {tmp_path}/g/dump_tensor_data/Functional.linear.0.forward.output.0.pt: not a "
                     f"PyTorch zip archive (a bare pickle?); never unpickled, not read"]


def test_a_pickle_inside_a_pytorch_zip_goes_to_the_safe_loader_only(tmp_path, cli):
    import zipfile

    pytest.importorskip("torch", reason="torch not installed: pip install 'scriptdiff[torch]'")
    marker = tmp_path / "ran"
    for side, mx in (("g", 1.0), ("n", 5.0)):
        d = write(tmp_path / side, {"Functional.linear.0.forward": fwd([T()], [T(mx=mx, data_name="t.pt")])},
                  task="tensor")
        (d / "dump_tensor_data").mkdir()
        with zipfile.ZipFile(d / "dump_tensor_data" / "t.pt", "w") as zf:
            zf.writestr("archive/data.pkl", f"cos\nsystem\n(S'touch {marker}'\ntR.")
            zf.writestr("archive/version", "3\n")
    code, lines = _cli_one_line(cli, str(tmp_path / "g"), str(tmp_path / "n"))
    assert code == 1 and not marker.exists()
    lines = [ln for ln in lines if "no stack.json" not in ln]
    assert len(lines) == 1 and lines[0].startswith(f"scriptdiff: {tmp_path}/g/dump_tensor_data/t.pt: refused by the "
                                                   f"safe loader (torch.load weights_only=True)")


def test_not_a_dump_is_one_line(tmp_path, cli):
    (tmp_path / "x").mkdir()
    code, lines = _cli_one_line(cli, str(tmp_path / "x"), f"{FX}/base/dump")
    assert (code, lines) == (2, [f"scriptdiff: {tmp_path}/x: no msprobe dump here (a dump.json, or "
                                 f"stepN/rankR/dump.json folders)"])
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "dump.json").write_text('{"task": "statistics"}')
    code, lines = _cli_one_line(cli, str(tmp_path / "y"), f"{FX}/base/dump")
    assert (code, lines) == (2, [f"scriptdiff: {tmp_path}/y/dump.json: no \"data\" object: not an msprobe dump.json"])


def test_a_data_name_that_is_a_path_is_refused(tmp_path):
    from scriptdiff.dumps.reader import DumpError, tensor_ref

    d = write(tmp_path / "g", {"A.x.0.forward": {}})
    (d / "dump_tensor_data").mkdir()
    (rank,) = locate(str(d))
    with pytest.raises(DumpError) as e:
        tensor_ref(rank, "../../etc/passwd")
    assert str(e.value) == f"{d}: data_name '../../etc/passwd' is not a file name; not read"
    assert os.path.exists("/etc/passwd")  # nothing was touched; the check is on the name


def test_a_probable_cause_follows_the_divergence_it_explains(cli):
    """Issue 41: SD808 (the cause, at the setting's line 15) was printed before the SD805 it
    explains (at line 92): a cause now follows the findings of its check."""
    code, out, _ = cli("dumps", f"{FX}/base/dump", f"{FX}/lr/dump", "--scripts", f"{FX}/base/scripts",
                       f"{FX}/lr/scripts", "-f", "json")
    assert [(f["rule"], f["gpu"]["line"]) for f in json.loads(out)["findings"] if f["check"] == "dumps"] == [
        ("SD805", 92), ("SD808", 15)]

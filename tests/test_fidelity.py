"""What each masked port edit keeps (issue 43, docs/fidelity.md): every shipped mask carries a
fidelity with its source; a masked edit that is exact is silent, an equivalent one an info
finding (SD023), one that changes numerics an info finding (SD024) or, when it lowers the
precision, a warning (SD026), each naming the edit, what it maps to and why; transfer_to_npu
maps the CUDA names an NPU program keeps (SD028) and says its side effects once (SD027)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scriptdiff.model import Options
from scriptdiff.ruleset.rulepack import RuleError, load_packs, rules_dir
from scriptdiff.ruleset.rules import load
from scriptdiff.run.pipeline import diff_files

ROOT = Path(__file__).resolve().parents[1]
T2N = "import torch\nimport torch_npu\nfrom torch_npu.contrib import transfer_to_npu\n"


def run(tmp_path, gpu: str, npu: str):
    g, n = tmp_path / "g.py", tmp_path / "n.py"
    g.write_text(gpu)
    n.write_text(npu)
    return diff_files([str(g)], [str(n)], Options(use_cache=False))


def rows(report):
    return [(f.rule, f.severity.value, f.key, f.gpu.line if f.gpu else None, f.npu.line if f.npu else None)
            for f in report.findings]


def test_every_shipped_mask_has_a_fidelity_and_its_source():
    rs = load()
    masks = [r for r in rs.rules.values() if r.kind == "mask"]
    assert len(masks) == 33  # SD029, the kernel swaps written in Python, is the 32nd; SD031 (device-named calls) the 33rd
    for r in masks:
        assert r.fidelity["fidelity"] in ("exact", "equivalent", "changes"), r.code
        assert r.fidelity["source"].strip(), r.code
        if r.fidelity["fidelity"] == "equivalent":
            assert r.fidelity["reason"].strip(), r.code
    assert {r.code for r in masks if r.fidelity["fidelity"] != "exact"} == {"SD007", "SD008", "SD012", "SD021", "SD029",
                                                                           "SD031"}


def test_exact_edit_is_silent(tmp_path):
    r = run(tmp_path, "import torch\nmodel = model.cuda()\ntorch.cuda.synchronize()\n",
            "import torch\nimport torch_npu\nmodel = model.npu()\ntorch.npu.synchronize()\n")
    assert rows(r) == []
    assert sorted((m.rule, m.fidelity) for m in r.masked) == [("SD001", "exact"), ("SD002", "exact"),
                                                             ("SD006", "exact")]


def test_equivalent_edit_is_info_naming_what_it_maps_to(tmp_path):
    r = run(tmp_path, "import torch\nopt = torch.optim.AdamW(model.parameters(), lr=1e-4)\n",
            "import torch\nimport torch_npu\nopt = torch_npu.optim.NpuFusedAdamW(model.parameters(), lr=1e-4)\n")
    assert rows(r) == [("SD023", "info", "port:torch_npu.optim.NpuFusedAdamW", 2, 3)]
    f = r.findings[0]
    assert f.check == "script"
    assert f.message == ("port edit fused-optimizer-swap (SD007) to torch_npu.optim.NpuFusedAdamW is equivalent, not "
                         "exact: the same update on one flattened fp32 buffer of the group (clip_grad_norm_fused_: the "
                         "norm over it), in another order: equal within fp32 rounding, not bit for bit")
    assert f.extra["fidelity"] == "equivalent" and f.extra["source"].startswith("torch_npu/optim/__init__.py")
    assert f.gpu.value == "opt = torch.optim.AdamW(model.parameters(), lr=1e-4)"
    assert [(m.rule, m.fidelity, m.target) for m in r.masked if m.rule == "SD007"] == [
        ("SD007", "equivalent", "torch_npu.optim.NpuFusedAdamW")]


def test_flash_attention_swap_is_equivalent_with_scale_and_keep_prob(tmp_path):
    r = run(tmp_path, "from flash_attn import flash_attn_func\n"
                      "out = flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=s, causal=False)\n",
            "import torch_npu\nout = torch_npu.npu_fusion_attention(q, k, v, n, 'BSND', scale=s, keep_prob=1.0)[0]\n")
    assert rows(r) == [("SD023", "info", "port:torch_npu.npu_fusion_attention", 2, 2)]
    assert "keep_prob = 1 - dropout_p" in r.findings[0].message


def test_changes_that_lower_precision_is_a_warning_with_its_consequence(tmp_path):
    r = run(tmp_path, "import torch\nbuf = torch.cuda.DoubleTensor(4)\n", T2N + "buf = torch.cuda.DoubleTensor(4)\n")
    assert rows(r) == [("SD027", "info", "port:transfer_to_npu", None, 3),
                       ("SD026", "warning", "port:t2n:torch.cuda.DoubleTensor", None, 4)]
    assert r.findings[1].message == (
        "port edit transfer-to-npu-mapping (SD028) to torch.npu.FloatTensor changes numerics: a float64 "
        "tensor is created as float32 on the NPU: about 7 significant digits instead of 16, and everything computed "
        "from it stays in float32")


def test_backend_switch_with_no_npu_effect_is_info(tmp_path):
    r = run(tmp_path, "import torch\ntorch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = False\n",
            T2N + "torch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = False\n")
    assert rows(r) == [("SD027", "info", "port:transfer_to_npu", None, 3),
                       ("SD024", "info", "port:t2n:torch.backends.cudnn.deterministic", None, 4),
                       ("SD023", "info", "port:t2n:torch.backends.cudnn.benchmark", None, 5)]
    assert "HCCL_DETERMINISTIC=true" in r.findings[1].message


def test_transfer_to_npu_maps_a_cuda_script(tmp_path):
    body = ("import torch\n"
            "torch.cuda.set_device(0)\n"
            "x = torch.randn(4).cuda()\n"
            "cap = torch.cuda.get_device_capability()\n"
            "f = torch.jit.script(fn)\n"
            "torch.cuda.synchronize()\n")
    r = run(tmp_path, body, T2N + body[len("import torch\n"):])
    assert [(m.rule, m.npu.line, m.target, m.fidelity) for m in sorted(r.masked, key=lambda m: m.npu.line)] == [
        ("SD006", 2, "import:torch_npu", "exact"), ("SD006", 3, "import:torch_npu.contrib.transfer_to_npu", "exact"),
        ("SD028", 4, "t2n:torch.cuda", "exact"),
        ("SD028", 6, "t2n:torch.cuda.get_device_capability", "changes"),
        ("SD028", 7, "t2n:torch.jit.script", "changes"),
        ("SD028", 8, "t2n:torch.cuda", "exact")]
    assert rows(r) == [("SD027", "info", "port:transfer_to_npu", None, 3),
                       ("SD024", "info", "port:t2n:torch.cuda.get_device_capability", None, 6),
                       ("SD024", "info", "port:t2n:torch.jit.script", None, 7)]
    notice = r.findings[0].message
    assert notice == ("transfer_to_npu ports the GPU code at run time: backend nccl -> hccl; torch.jit.script a "
                      "pass-through; torch.cuda.DoubleTensor -> FloatTensor (float64 as float32); device arguments name "
                      "the NPU; profiler experimental_config dropped, has_triton False")


def test_without_transfer_to_npu_nothing_is_mapped(tmp_path):
    body = "import torch\nbuf = torch.cuda.DoubleTensor(4)\ntorch.cuda.synchronize()\n"
    r = run(tmp_path, body, "import torch_npu\n" + body)
    assert rows(r) == []
    assert [(m.rule, m.fidelity) for m in r.masked] == [("SD006", "exact")]


def test_transfer_to_npu_on_the_gpu_side_maps_nothing(tmp_path):
    r = run(tmp_path, T2N + "buf = torch.cuda.DoubleTensor(4)\n", "import torch\nbuf = torch.cuda.DoubleTensor(4)\n")
    assert [f.rule for f in r.findings] == ["SD104", "SD104"]  # the imports on the GPU side only
    assert r.masked == []


def test_summary_line_and_show_masked_give_the_classes(tmp_path):
    g, n = tmp_path / "g.py", tmp_path / "n.py"
    g.write_text("import torch\nopt = torch.optim.AdamW(m.parameters(), lr=1e-4)\nbuf = torch.cuda.DoubleTensor(4)\n")
    n.write_text(T2N + "opt = torch_npu.optim.NpuFusedAdamW(m.parameters(), lr=1e-4)\nbuf = torch.cuda.DoubleTensor(4)\n")
    p = subprocess.run([sys.executable, "-m", "scriptdiff", "diff", str(g), str(n), "--show-masked", "--no-cache",
                        "--color", "never"], capture_output=True, text=True, cwd=tmp_path)
    lines = p.stdout.splitlines()
    assert "0 error(s), 1 warning(s), 2 info; 4 expected substitution(s) masked: 2 exact, 1 equivalent, 1 changes" in lines
    assert "  SD007  g.py:2 opt = torch.optim.AdamW(m.parameters(), lr=1e-4)  ->  n.py:4 opt = " \
           "torch_npu.optim.NpuFusedAdamW(m.parameters(), lr=1e-4)  [equivalent]" in [x.replace(str(tmp_path) + "/", "")
                                                                                   for x in lines]
    # the mapping with the GPU line it stands for (issue 43: transfer_to_npu masks show both lines)
    assert "  SD028  g.py:3 buf = torch.cuda.DoubleTensor(4)  ->  n.py:5 buf = torch.cuda.DoubleTensor(4)  [changes]" in [
        x.replace(str(tmp_path) + "/", "") for x in lines]
    j = subprocess.run([sys.executable, "-m", "scriptdiff", "diff", str(g), str(n), "-f", "json", "--no-cache"],
                       capture_output=True, text=True, cwd=tmp_path)
    masked = json.loads(j.stdout)["masked"]
    assert sorted((m["rule"], m["fidelity"], m["target"]) for m in masked) == [
        ("SD006", "exact", "import:torch_npu"), ("SD006", "exact", "import:torch_npu.contrib.transfer_to_npu"),
        ("SD007", "equivalent", "torch_npu.optim.NpuFusedAdamW"),
        ("SD028", "changes", "t2n:torch.cuda.DoubleTensor")]


def test_bundled_example_summary_gives_the_classes():
    p = subprocess.run([sys.executable, "-m", "scriptdiff", "diff", "fixtures/example/gpu", "fixtures/example/npu",
                        "--no-cache", "--color", "never"], capture_output=True, text=True, cwd=ROOT)
    assert "3 error(s), 0 warning(s), 3 info; 12 expected substitution(s) masked: 11 exact, 1 equivalent " \
           "(--show-masked lists them)" in p.stdout.splitlines()


def _copy(tmp_path) -> Path:
    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return folder


@pytest.mark.parametrize("pack,old,new,needle", [
    # a shipped mask without a fidelity
    ("python.yaml", "    kind: mask\n    fidelity: exact\n", "    kind: mask\n", "SD001: a shipped mask needs a fidelity"),
    # a changing mask without its consequence, a target without its reason
    ("python.yaml", "    fidelity: equivalent\n    source: \"torch_npu/optim", "    fidelity: changes\n    source: \"torch_npu/optim",
     "SD007: fidelity: a changing edit needs its consequence"),
    ("fidelity.yaml", "    fidelity: changes\n    lowers_precision: true\n", "    fidelity: equivalent\n    lowers_precision: true\n",
     "fidelity_targets.t2n:torch.cuda.DoubleTensor.fidelity: an equivalent edit needs its reason"),
    ("fidelity.yaml", "  t2n:torch.cuda:\n    rule: SD028", "  t2n:torch.cuda:\n    rule: SD101",
     "fidelity_targets.t2n:torch.cuda.rule: SD101 is not a mask rule"),
    ("fidelity.yaml", "    fidelity: exact\n    source: \"torch_npu/contrib/transfer_to_npu.py (Ascend/pytorch)\"",
     "    fidelity: sometimes\n    source: \"x\"", "fidelity: expected one of exact, equivalent, changes (got 'sometimes')"),
    ("fidelity.yaml", "    torch.jit.script: t2n:torch.jit.script", "    torch.jit.script: t2n:nowhere",
     "transfer_to_npu.calls.torch.jit.script: 't2n:nowhere' is not a fidelity target"),
])
def test_bad_fidelity_data_names_the_pack_and_line(tmp_path, pack, old, new, needle):
    folder = _copy(tmp_path)
    path = folder / pack
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(RuleError) as e:
        load_packs(sorted(folder.glob("*.yaml")))
    assert str(e.value).startswith(f"rules/{pack}:") and needle in str(e.value), str(e.value)


def test_a_users_mask_may_say_its_fidelity(tmp_path):
    pack = tmp_path / "team.yaml"
    pack.write_text(
        "rules:\n"
        "  - code: SDX001\n    name: team-mask\n    check: script\n    kind: mask\n    fidelity: changes\n"
        "    source: \"our kernel notes\"\n    consequence: \"rounds to bf16\"\n    lowers_precision: true\n"
        "    summary: s\n    doc: d\n    examples:\n"
        "      - {lang: python, gpu: \"a = 1\\n\", npu: \"a = 1\\n\", fires: true}\n"
        "      - {lang: python, gpu: \"a = 1\\n\", npu: \"a = 1\\n\", fires: false}\n")
    rs = load_packs(sorted(rules_dir().glob("*.yaml")), user=[pack])
    assert rs.rules["SDX001"].fidelity == {"fidelity": "changes", "source": "our kernel notes",
                                           "consequence": "rounds to bf16", "lowers_precision": True}
    bad = tmp_path / "bad.yaml"
    bad.write_text(pack.read_text().replace("    consequence: \"rounds to bf16\"\n", ""))
    with pytest.raises(RuleError, match="SDX001: fidelity: a changing edit needs its consequence"):
        load_packs(sorted(rules_dir().glob("*.yaml")), user=[bad])


# ---------------------------------------------------------------- kernel swaps written in Python

RMS_GPU = ("import torch\n\n\nclass RMSNorm(torch.nn.Module):\n    def forward(self, h):\n"
           "        dtype = h.dtype\n        h = h.to(torch.float32)\n"
           "        var = h.pow(2).mean(-1, keepdim=True)\n        h = h * torch.rsqrt(var + EPS)\n"
           "        return self.weight * h.to(dtype)\n")
RMS_NPU = ("import torch\nimport torch_npu\n\n\nclass RMSNorm(torch.nn.Module):\n    def forward(self, h):\n"
           "        return torch_npu.npu_rms_norm(h, self.weight, epsilon=EPS)[0]\n")


def masks(report):
    return sorted((m.rule, m.gpu.line if m.gpu else None, m.npu.line if m.npu else None, m.target, m.fidelity)
                  for m in report.masked if m.rule == "SD029")


def test_rmsnorm_module_rewritten_as_npu_rms_norm_is_one_masked_swap(tmp_path):
    r = run(tmp_path, RMS_GPU.replace("EPS", "self.eps"), RMS_NPU.replace("EPS", "self.eps"))
    assert rows(r) == [("SD023", "info", "port:kernel:rms_norm", 9, 7)]
    assert r.findings[0].message.startswith("port edit kernel-swap (SD029) to torch_npu.npu_rms_norm is equivalent, "
                                            "not exact: the fused RMSNorm computes x * rsqrt(mean(x^2) + epsilon)")
    assert masks(r) == [("SD029", 6, None, "part:kernel:rms_norm", "exact"),
                        ("SD029", 7, None, "part:kernel:rms_norm", "exact"),
                        ("SD029", 8, None, "part:kernel:rms_norm", "exact"),
                        ("SD029", 9, 7, "kernel:rms_norm", "equivalent"),
                        ("SD029", 10, None, "part:kernel:rms_norm", "exact")]


def test_rmsnorm_epsilon_that_differs_names_both_values_and_lines(tmp_path):
    r = run(tmp_path, RMS_GPU.replace("EPS", "1e-5"), RMS_NPU.replace("EPS", "1e-6"))
    assert rows(r) == [("SD111", "error", "code:g.py:RMSNorm.forward", 9, 7),
                       ("SD023", "info", "port:kernel:rms_norm", 9, 7)]
    f = r.findings[0]
    assert (f.gpu.value, f.npu.value) == (1e-5, 1e-6)
    assert f.message == "npu_rms_norm swap: epsilon 1e-06 on NPU, the GPU adds 1e-05"
    # left out: the kernel's default against the GPU's value
    r = run(tmp_path, "import torch\nimport torch.nn.functional as F\ny = F.rms_norm(x, (h,), w, 1e-5)\n",
            "import torch\nimport torch.nn.functional as F\nimport torch_npu\ny = torch_npu.npu_rms_norm(x, w)[0]\n")
    assert rows(r) == [("SD111", "error", "code:g.py:<module>", 3, 4), ("SD023", "info", "port:kernel:rms_norm", 3, 4)]
    assert r.findings[0].message == ("npu_rms_norm swap: epsilon is not given, so the kernel adds its default 1e-06; "
                                     "the GPU adds 1e-05")
    # the same epsilon, written as a name on both sides, or as the kernel's default: silent but for the class
    r = run(tmp_path, "import torch\nimport torch.nn.functional as F\ny = F.rms_norm(x, (h,), w, 1e-6)\n",
            "import torch\nimport torch.nn.functional as F\nimport torch_npu\ny = torch_npu.npu_rms_norm(x, w)[0]\n")
    assert rows(r) == [("SD023", "info", "port:kernel:rms_norm", 3, 4)]


def test_swiglu_and_rotary_swaps_are_masked_with_their_class(tmp_path):
    r = run(tmp_path,
            "import torch\nimport torch.nn.functional as F\n\n\ndef mlp(self, x):\n"
            "    return self.down(F.silu(self.gate(x)) * self.up(x))\n\n\n"
            "def rope(q, k, cos, sin):\n    q2 = (q * cos) + (rotate_half(q) * sin)\n"
            "    k2 = (k * cos) + (rotate_half(k) * sin)\n    return q2, k2\n",
            "import torch\nimport torch_npu\n\n\ndef mlp(self, x):\n"
            "    return self.down(torch_npu.npu_swiglu(torch.cat([self.gate(x), self.up(x)], dim=-1)))\n\n\n"
            "def rope(q, k, cos, sin):\n    q2 = torch_npu.npu_rotary_mul(q, cos, sin)\n"
            "    k2 = torch_npu.npu_rotary_mul(k, cos, sin)\n    return q2, k2\n")
    assert [x for x in rows(r) if x[0] != "SD104"] == [
        ("SD023", "info", "port:kernel:swiglu", 6, 6), ("SD023", "info", "port:kernel:rotary", 10, 10),
        ("SD023", "info", "port:kernel:rotary", 11, 11)]
    assert masks(r) == [("SD029", 6, 6, "kernel:swiglu", "equivalent"), ("SD029", 10, 10, "kernel:rotary", "equivalent"),
                        ("SD029", 11, 11, "kernel:rotary", "equivalent")]


def test_a_changed_computation_without_the_kernel_is_still_a_difference(tmp_path):
    # the NPU side computes its own rotation (no fused kernel): compared as code, nothing masked
    r = run(tmp_path, "def rope(q, cos, sin):\n    return (q * cos) + (rotate_half(q) * sin)\n",
            "def rope(q, cos, sin):\n    return (q * cos) - (rotate_half(q) * sin)\n")
    assert [x[0] for x in rows(r)] == ["SD102"] and masks(r) == []


SDPA_GPU = ("import torch.nn.functional as F\n\n\ndef attn(q, k, v):\n"
            "    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)\n    return out\n")
SDPA_NPU = ("import torch_npu\n\n\ndef attn(q, k, v):\n"
            "    out = torch_npu.npu_fusion_attention(q, k, v, 8, 'BNSD', atten_mask=mask, scale=q.shape[-1] ** -0.5, "
            "keep_prob=KEEP, sparse_mode=2)[0]\n    return out\n")


def test_sdpa_to_npu_fusion_attention_is_a_masked_swap_with_its_class(tmp_path):
    r = run(tmp_path, SDPA_GPU, SDPA_NPU.replace("KEEP", "0.9"))
    assert [x for x in rows(r) if x[0] != "SD104"] == [("SD023", "info", "port:kernel:sdpa", 5, 5)]
    assert masks(r) == [("SD029", 5, 5, "kernel:sdpa", "equivalent")]
    assert "keep_prob = 1 - dropout_p, input_layout 'BNSD'" in r.findings[-1].message


def test_sdpa_swap_with_another_keep_probability_scale_or_layout_names_both(tmp_path):
    r = run(tmp_path, SDPA_GPU.replace("is_causal=True", "is_causal=True, scale=0.1"),
            SDPA_NPU.replace("KEEP", "0.95").replace("scale=q.shape[-1] ** -0.5", "scale=0.125").replace("'BNSD'", "'BSND'"))
    got = [(f.rule, f.key, f.gpu.value, f.gpu.line, f.npu.value, f.npu.line, f.message) for f in r.findings
           if f.rule in ("SD105", "SD207")]
    assert got == [
        ("SD207", "attention_dropout", 0.1, 5, 0.95, 5, "SDPA translation: keep_prob must be 1 - dropout_p"),
        ("SD105", "code:g.py:attn", "BNSD", 5, "BSND", 5,
         "SDPA translation: input_layout 'BSND' is not the layout of q, k, v for scaled_dot_product_attention (BNSD)"),
        ("SD105", "code:g.py:attn", 0.1, 5, 0.125, 5, "SDPA translation: scale differs from the GPU call's scale")]
    # the scale left to the NPU's default, where SDPA scales by 1/sqrt(head_dim)
    r = run(tmp_path, SDPA_GPU, SDPA_NPU.replace("KEEP", "0.9").replace("scale=q.shape[-1] ** -0.5, ", ""))
    assert [(f.rule, f.npu.value, f.message) for f in r.findings if f.rule == "SD105"] == [
        ("SD105", None, "SDPA translation: scale is not given: npu_fusion_attention defaults to 1.0, flash_attn to "
                        "softmax_scale or 1/sqrt(head_dim)")]


def test_sdpa_on_both_sides_is_compared_as_written(tmp_path):
    r = run(tmp_path, SDPA_GPU, SDPA_GPU.replace("dropout_p=0.1", "dropout_p=0.0"))
    assert masks(r) == [] and [(f.rule, f.gpu.line, f.npu.line) for f in r.findings] == [("SD101", 5, 5)]
    r = run(tmp_path, SDPA_GPU, SDPA_GPU)
    assert rows(r) == [] and r.masked == []


def test_transfer_to_npu_masks_show_the_gpu_line_they_stand_for(tmp_path):
    gpu = "import torch\nx = 1\ntorch.cuda.synchronize()\nbuf = torch.cuda.DoubleTensor(4)\ntorch.cuda.synchronize()\n"
    npu = T2N + "torch.cuda.synchronize()\nbuf = torch.cuda.DoubleTensor(4)\ny = 2\ntorch.cuda.synchronize()\n"
    r = run(tmp_path, gpu, npu)
    assert sorted((m.gpu.line if m.gpu else None, m.npu.line, m.target) for m in r.masked if m.rule == "SD028") == [
        (3, 4, "t2n:torch.cuda"), (4, 5, "t2n:torch.cuda.DoubleTensor"), (5, 7, "t2n:torch.cuda")]
    f = next(f for f in r.findings if f.rule == "SD026")
    assert (f.gpu, f.npu.line, f.extra["stands_for"]) == (None, 5, {"path": str(tmp_path / "g.py"), "line": 4})
    # a CUDA name the GPU file does not have: the NPU line alone
    r = run(tmp_path, "import torch\n", T2N + "torch.cuda.synchronize()\n")
    assert [(m.gpu, m.npu.line) for m in r.masked if m.rule == "SD028"] == [(None, 4)]


# ---------------------------------------------------------------- float64 on the NPU

def test_float64_on_the_npu_is_said_at_the_npu_line_with_the_gpu_line(tmp_path):
    gpu = "import torch\nx = 1\nloss = loss.double()\ny = torch.zeros(3, dtype=torch.float64)\nz = t.to(torch.double)\n"
    npu = "import torch\nimport torch_npu\nloss = loss.double()\ny = torch.zeros(3, dtype=torch.float64)\nz = t.to(torch.double)\n"
    r = run(tmp_path, gpu, npu)
    got = [(f.rule, f.severity.value, f.key, f.gpu.value, f.gpu.line, f.npu.value, f.npu.line)
           for f in r.findings if f.rule == "SD030"]
    assert got == [("SD030", "info", "dtype:float64", ".double()", 3, ".double()", 3),
                   ("SD030", "info", "dtype:float64", "torch.float64", 4, "torch.float64", 4),
                   ("SD030", "info", "dtype:float64", "torch.double", 5, "torch.double", 5)]
    f = next(f for f in r.findings if f.rule == "SD030")
    assert f.message == (".double() asks for float64 on the NPU: torch_npu does not compute in float64: a cast to "
                         "float64 on the NPU gives float32 (about 7 significant digits instead of 16) and what is "
                         "computed from it stays in float32, while the GPU computes it in float64")
    assert f.extra["source"].startswith("Ascend/pytorch torch_npu/csrc/aten/ops/op_api (NPUNativeOpApiFunctions::to")


def test_float64_on_the_npu_only_and_silence_without_it(tmp_path):
    r = run(tmp_path, "import torch\nloss = loss.float()\n", "import torch\nimport torch_npu\nloss = loss.double()\n")
    assert [(f.gpu, f.npu.line) for f in r.findings if f.rule == "SD030"] == [(None, 3)]
    # neither side asks for float64 (a module's own `double`, an argument, numpy's float64: not the NPU's)
    r = run(tmp_path, "import numpy as np\nimport torch\na = x.float()\nb = np.float64(1)\nc = m.double(2)\n",
            "import numpy as np\nimport torch\nimport torch_npu\na = x.float()\nb = np.float64(1)\nc = m.double(2)\n")
    assert [f for f in r.findings if f.rule == "SD030"] == []
    # a GPU-only float64 is the code difference it is, not SD030
    r = run(tmp_path, "import torch\nloss = loss.double()\n", "import torch\nimport torch_npu\nloss = loss.float()\n")
    assert [f.rule for f in r.findings if f.rule == "SD030"] == []

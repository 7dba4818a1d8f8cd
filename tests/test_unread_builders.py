"""An object built by a function of a module the run does not read (`optimizer =
assemble_optimizer(params, args)`), or a project's autocast helper called without a dtype:
what it sets is unknown on that side, never absent. It is said once, on that input (SD154),
and only when the other side sets something it could have set; the settings both sides give
are still compared, and a call of a library the rules know is read as before."""
from __future__ import annotations

from conftest import script_pair

GPU = """import torch
from sketchlab.nets import make_net


def main(args, loader):
    model = make_net(args)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=0.01)
    for x in loader:
        with torch.cuda.amp.autocast():
            loss = model(x.cuda())
        loss.backward()
        optimizer.step()
"""

NPU = """import torch
import torch_npu
from sketchlab.nets import make_net
from sketchlab.recipes import assemble_optimizer, mixed_precision_scope


def main(args, loader):
    model = make_net(args)
    optimizer = assemble_optimizer(model.parameters(), args)
    for x in loader:
        with mixed_precision_scope.autocast(enabled=True):
            loss = model(x.npu())
        loss.backward()
        optimizer.step()
"""


def found(rep) -> list:
    return [(f.rule, f.severity, f.key, f.gpu and (f.gpu.line, f.gpu.value), f.npu and (f.npu.line, f.npu.value))
            for f in rep.findings]


def test_settings_of_an_object_built_by_code_not_read_are_unknown_and_said_once(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU, name="train.py")
    said = ("line 9: `optimizer` is built by sketchlab.recipes.assemble_optimizer, whose settings are not read; "
            "4 setting(s) "
            "of the other side could not be compared: adam_beta1, adam_beta2, adam_eps, weight_decay; line 11: "
            "sketchlab.recipes.mixed_precision_scope.autocast is called without dtype=, its default not known; "
            "1 setting(s) of the other side could not be compared: params_dtype")
    assert found(rep) == [
        ("SD101", "error", "code:train.py:main", (7, "torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=0.01)"),
         (9, "assemble_optimizer(model.parameters(), args)")),
        ("SD154", "warning", f"input:{tmp_path}/npu/train.py", None, (None, said)),
        ("SD104", "info", "code:train.py:<module>", None, (4, "sketchlab.recipes.assemble_optimizer")),
        ("SD104", "info", "code:train.py:<module>", None, (4, "sketchlab.recipes.mixed_precision_scope")),
    ]
    npu = next(a for a in rep.inputs if a.side == "npu")
    assert npu.status == "not understood"


def test_the_same_builder_on_both_sides_says_nothing(tmp_path):
    gpu = NPU.replace("import torch_npu\n", "").replace("x.npu()", "x.cuda()")
    rep = script_pair(tmp_path, gpu, NPU, name="train.py")
    assert [f for f in found(rep) if f[1] != "info"] == []
    assert {a.status for a in rep.inputs} == {"understood"}


def test_what_both_sides_give_is_still_compared(tmp_path):
    gpu = GPU.replace("lr=args.lr", "lr=1e-4")
    npu = NPU.replace("assemble_optimizer(model.parameters(), args)", "assemble_optimizer(model.parameters(), lr=2e-4)")
    rep = script_pair(tmp_path, gpu, npu, name="train.py")
    assert [f for f in found(rep) if f[0] == "SD202"] == [
        ("SD202", "error", "lr", (7, 0.0001), (9, 0.0002))]
    sd154 = [f for f in rep.findings if f.rule == "SD154"]
    assert len(sd154) == 1 and "lr" not in sd154[0].npu.value.split("compared: ")[1].split(";")[0].split(", ")


def test_a_library_the_rules_know_is_read_not_left_unknown(tmp_path):
    npu = NPU.replace("from sketchlab.recipes import assemble_optimizer, mixed_precision_scope",
                      "from transformers.optimization import Adafactor") \
        .replace("assemble_optimizer(model.parameters(), args)", "Adafactor(model.parameters())") \
        .replace("mixed_precision_scope.autocast(enabled=True)", "torch.autocast('npu')")
    rep = script_pair(tmp_path, GPU, npu, name="train.py")
    assert [f for f in found(rep) if f[0] in ("SD206", "SD154")] == [
        ("SD206", "error", "adam_beta1", (None, 0.9), None),
        ("SD206", "error", "adam_beta2", (None, 0.999), None),
        ("SD206", "error", "adam_eps", (None, 1e-08), None),
        ("SD206", "error", "weight_decay", (7, 0.01), None),
    ]


def test_a_helper_given_its_dtype_is_compared(tmp_path):
    npu = NPU.replace("autocast(enabled=True)", "autocast(dtype=torch.bfloat16)")
    rep = script_pair(tmp_path, GPU, npu, name="train.py")
    assert [f for f in found(rep) if f[0] == "SD205"] == [("SD205", "error", "params_dtype", (None, "fp16"), (11, "bf16"))]
    assert "params_dtype" not in next(f for f in rep.findings if f.rule == "SD154").npu.value


def test_the_same_function_given_a_setting_on_one_side_only_is_compared(tmp_path):
    """Both sides build `solver` with the project's own function: a keyword given on one side
    only is a difference of that call (its default is not known, the call's arguments are)."""
    gpu = "from sketchlab.solve import make_solver\n\nsolver = make_solver(net, amp_level='O3', epochs=10)\n"
    npu = "from sketchlab.solve import make_solver\n\nsolver = make_solver(net, epochs=10)\n"
    rep = script_pair(tmp_path, gpu, npu, name="run.py")
    assert [f for f in found(rep) if f[1] != "info"] == [("SD205", "error", "params_dtype", (3, "o3"), None)]


def test_an_object_made_from_itself_is_no_builder(tmp_path):
    """`model = prepare_for_lowbit(model)` transforms the model the file built: what it was built
    with (`from_pretrained(attn_implementation=...)`) is still compared."""
    gpu = ("from transformers import AutoModelForCausalLM\nfrom sketchlab.lowbit import prepare_for_lowbit\n\n"
           "model = AutoModelForCausalLM.from_pretrained(path)\nmodel = prepare_for_lowbit(model)\n")
    npu = gpu.replace("from_pretrained(path)", "from_pretrained(path, attn_implementation='eager')")
    rep = script_pair(tmp_path, gpu, npu, name="run.py")
    assert [f for f in found(rep) if f[1] != "info"] == [("SD201", "error", "use_flash_attn", None, (4, False))]
    assert {a.status for a in rep.inputs} == {"understood"}

"""Issue 39: a code difference is loud only when it can reach what training computes.

Each case is a made-up training module with a faithful port (the difference reaches only
logging, timing, memory statistics or placement: one info saying so) and a drifted one (the
same place now reaches the optimizer, the precision, the data: loud, `extra["reaches"]` names
the sink, the side and the line), and a difference whose way cannot be followed stays as it was.
"""
from __future__ import annotations

import json

from test_python_diff import pair_of

from scriptdiff.lang.python import relevance
from scriptdiff.report import render


def run(tmp_path, gpu: str, npu: str):
    return pair_of(tmp_path, gpu, npu, "fit.py")[2]


def code(r):
    return [(f.rule, f.key, f.gpu and f.gpu.line, f.npu and f.npu.line, f.message, f.extra.get("reaches"))
            for f in r.findings if f.check == "script" and f.rule != "SD104"]


LOOP = '''import time

import torch
from orbitkit.util import print_main


def fit_epoch(net, opt, batches, steps, total_steps):
    t0 = time.time()
    for batch in batches:
        loss = net(batch).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    frac = steps / total_steps
    print_main(f"done {frac:.0%} in {time.time() - t0:.1f}s")
    return loss
'''


def test_a_statement_that_only_measures_memory_is_info(tmp_path):
    npu = LOOP.replace("import torch\n", "import torch\nimport torch_npu\n").replace(
        "    t0 = time.time()\n", "    t0 = time.time()\n    torch.npu.reset_peak_memory_stats()\n")
    r = run(tmp_path, LOOP, npu)
    assert code(r) == [("SD103", "code:fit.py:fit_epoch", None, 10,
                        "statement on NPU only; reaches nothing training computes (memory statistics)",
                        {"sink": None, "only": ["memory statistics"]})]


def test_a_statement_that_casts_the_batch_reaches_the_precision(tmp_path):
    npu = LOOP.replace("    for batch in batches:\n", "    for batch in batches:\n        batch = batch.half()\n")
    r = run(tmp_path, LOOP, npu)
    assert code(r) == [("SD101", "code:fit.py:fit_epoch", None, 10, "statement on NPU only",
                        {"sink": "precision", "side": "npu", "line": 10, "through": [],
                         "said": "the precision (NPU line 10)"})]


def test_a_fraction_computed_otherwise_and_only_printed_is_info(tmp_path):
    """`print_main` is no call the file defines: its name says it prints (rules/relevance.yaml
    `words`); the value goes nowhere else."""
    npu = LOOP.replace("steps / total_steps", "steps / max(total_steps, 1)")
    r = run(tmp_path, LOOP, npu)
    assert code(r) == [("SD103", "code:fit.py:fit_epoch", 14, 14,
                        "statement differs; reaches nothing training computes (logging)",
                        {"sink": None, "only": ["logging"]})]


def test_the_same_value_given_to_the_schedule_is_loud(tmp_path):
    gpu = LOOP.replace('    print_main(f"done {frac:.0%} in {time.time() - t0:.1f}s")\n',
                       '    opt.param_groups[0]["lr"] = 1e-4 * frac\n')
    npu = gpu.replace("steps / total_steps", "steps / max(total_steps, 1)")
    r = run(tmp_path, gpu, npu)
    assert code(r) == [("SD102", "code:fit.py:fit_epoch", 14, 14, "statement differs",
                        {"sink": "optimizer", "side": "gpu", "line": 15, "through": ["frac"],
                         "said": "the optimizer and its schedule (GPU line 15, through frac)"})]


PLACE = '''import torch
from orbitkit.hw import pick_accel


def evaluate(net, batches, rank):
    dev = torch.device("cuda", rank)
    net = net.to(dev)
    total = 0.0
    for x, y in batches:
        x = x.to(dev, non_blocking=True)
        total += float((net(x).argmax(-1) == y.to(dev)).sum())
    return total
'''


def test_a_device_chosen_by_a_helper_is_placement(tmp_path):
    npu = PLACE.replace('torch.device("cuda", rank)', "pick_accel(rank)")
    r = run(tmp_path, PLACE, npu)
    assert code(r) == [("SD103", "code:fit.py:evaluate", 6, 6,
                        "a different function is called (torch.device on GPU); reaches nothing training computes "
                        "(placement)", {"sink": None, "only": ["placement"]})]


def test_a_cast_where_the_port_places_is_loud(tmp_path):
    npu = PLACE.replace("    net = net.to(dev)\n", "    net = net.to(torch.bfloat16)\n")
    r = run(tmp_path, PLACE, npu)
    assert code(r) == [("SD101", "code:fit.py:evaluate", 7, 7, "net.to: argument 1 differs",
                        {"sink": "precision", "side": "npu", "line": 7, "through": [],
                         "said": "the precision (NPU line 7)"})]


def test_a_move_to_the_host_is_not_placement(tmp_path):
    """The CPU computes with other kernels than the accelerator: not the port, so not demoted
    (the rank it no longer passes only says which accelerator: placement)."""
    npu = PLACE.replace('torch.device("cuda", rank)', 'torch.device("cpu")')
    r = run(tmp_path, PLACE, npu)
    assert code(r) == [
        ("SD102", "code:fit.py:evaluate", 6, 6, "torch.device: argument 1 differs", None),
        ("SD103", "code:fit.py:evaluate", 6, 6,
         "torch.device: argument 2 is given on GPU only; reaches nothing training computes (placement)",
         {"sink": None, "only": ["placement"]})]


def test_a_move_to_the_host_written_as_an_f_string_is_not_placement(tmp_path):
    """`f"cpu:{rank}"` is the host as `"cpu"` is; `f"npu:{rank}"` a device of the run (placement)."""
    gpu = PLACE.replace('    net = net.to(dev)\n', '    net = net.to(f"cuda:{rank}")\n')
    (tmp_path / "host").mkdir()
    (tmp_path / "accel").mkdir()
    r = run(tmp_path / "host", gpu, gpu.replace('f"cuda:{rank}"', 'f"cpu:{rank}"'))
    assert code(r) == [("SD101", "code:fit.py:evaluate", 7, 7, "net.to: argument 1 differs", None)]
    r = run(tmp_path / "accel", gpu, gpu.replace('f"cuda:{rank}"', 'f"npu:{rank}"').replace(
        "import torch\n", "import torch\nimport torch_npu\n"))
    assert code(r) == []


def test_a_call_the_file_does_not_define_stays_as_it_was(tmp_path):
    """`patch_kernels(net)` may change anything: its reach is unknown, the finding is as before."""
    npu = PLACE.replace("from orbitkit.hw import pick_accel\n", "from orbitkit.hw import patch_kernels\n").replace(
        "    net = net.to(dev)\n", "    net = net.to(dev)\n    patch_kernels(net)\n")
    r = run(tmp_path, PLACE, npu)
    assert code(r) == [("SD102", "code:fit.py:evaluate", None, 8, "statement on NPU only", None)]


WORLD = '''import os

import torch


def world():
    return int(os.environ["WORLD_SIZE"])


def loader(ds, total_batch):
    per_rank = total_batch // world()
    return torch.utils.data.DataLoader(ds, batch_size=per_rank)


def banner():
    print(f"running on {world()} processes")
'''


def test_a_function_result_is_followed_to_its_callers(tmp_path):
    """What `world()` returns reaches the data loader's batch size through its caller: loud."""
    npu = WORLD.replace('int(os.environ["WORLD_SIZE"])', 'int(os.environ.get("NPROC", 1))')
    r = run(tmp_path, WORLD, npu)
    assert code(r) == [("SD102", "code:fit.py:world", 7, 7, "int: argument 1 differs",
                        {"sink": "data", "side": "gpu", "line": 12, "through": ["per_rank"],
                         "said": "data order and content (GPU line 12, through per_rank)"})]


def test_a_function_result_that_is_only_printed_is_info(tmp_path):
    gpu = WORLD.replace("    per_rank = total_batch // world()\n", "    per_rank = total_batch\n")
    npu = gpu.replace('int(os.environ["WORLD_SIZE"])', 'int(os.environ.get("NPROC", 1))')
    r = run(tmp_path, gpu, npu)
    assert code(r) == [("SD103", "code:fit.py:world", 7, 7,
                        "int: argument 1 differs; reaches nothing training computes (logging)",
                        {"sink": None, "only": ["logging"]})]


def test_the_reports_say_where_a_difference_goes(tmp_path):
    """JSON: `extra.reaches`; text: a line under the finding (its message is the difference's own)."""
    npu = LOOP.replace("    for batch in batches:\n", "    for batch in batches:\n        batch = batch.half()\n")
    r = run(tmp_path, LOOP, npu)
    d = json.loads(render(r, "json"))
    assert [f["extra"] for f in d["findings"] if f["check"] == "script"] == [
        {"reaches": {"sink": "precision", "side": "npu", "line": 10, "through": [],
                     "said": "the precision (NPU line 10)"}}]
    text = render(r, "text").splitlines()
    at = next(i for i, x in enumerate(text) if x.startswith("error   SD101 code:fit.py:fit_epoch  statement on NPU only"))
    assert text[at + 1] == "    reaches the precision (NPU line 10)"


def test_a_library_log_function_is_no_logging_call():
    """`*.log` is a logger's method; `torch.log` computes (rules/relevance.yaml compute_modules),
    and a helper named `log_softmax` is not a printing helper."""
    assert relevance.inert_of("logger.log", False) == "logging"
    assert relevance.inert_of("torch.log", True) is None
    assert relevance.inert_of("log_softmax", False) is None
    assert relevance.inert_of("log_rank_zero", False) == "logging"
    assert relevance.inert_of("torch.cuda.synchronize", True) == "timing"


def test_a_search_that_goes_too_far_is_unknown(monkeypatch):
    src = "def f(a):\n    b = a\n    c = b\n    d = c\n    print(d)\n"
    flow = relevance.Flow(src)
    assert relevance.statements(flow, flow.statements_at(2, "b = a")).verdict == relevance.INERT
    monkeypatch.setattr("scriptdiff.budget.RELEVANCE_STEPS", 2)
    assert relevance.statements(flow, flow.statements_at(2, "b = a")) == relevance.Reach(
        relevance.UNKNOWN, ("too far to follow",))


# ------------------------------------------------------------------ rewritten regions
ACCEL = '''import torch
from accelerate import Accelerator


def fit(net, opt, batches, cfg):
    hub = Accelerator(mixed_precision="fp16", gradient_accumulation_steps=4)
    net, opt, batches = hub.prepare(net, opt, batches)
    for i, batch in enumerate(batches):
        with hub.accumulate(net):
            loss = net(batch).mean()
            hub.backward(loss)
            hub.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
        if i % 10 == 0:
            hub.print(f"step {i} loss {loss.item()}")
'''

HAND = '''import torch
import torch_npu


def fit(net, opt, batches, cfg):
    net = net.npu()
    scaler = torch.npu.amp.GradScaler()
    every = 4
    for i, batch in enumerate(batches):
        batch = batch.npu()
        with torch.npu.amp.autocast(dtype=torch.float16):
            loss = net(batch).mean() / every
        scaler.scale(loss).backward()
        if (i + 1) % every == 0:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
        if i % 10 == 0:
            print(f"step {i} loss {loss.item()}")
'''

REGION = ("SD110", "code:fit.py:fit", 5, 5,
          "function fit was rewritten (8 of 11 statements differ on GPU, 13 of 16 on NPU): one finding for the "
          "region; the settings each side applies in it are compared under their keys (clip_grad, "
          "gradient_accumulation_steps, initial_loss_scale, loss_scale_window, params_dtype)")


def loud(r):
    return [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in r.findings
            if f.severity != "info"]


def test_a_rewritten_loop_with_the_same_settings_is_one_line(tmp_path):
    """accelerate's fp16, its accumulation and its clipping against autocast, a GradScaler, a step
    every 4 and clip_grad_norm_: the same settings, so one info for the region and nothing loud."""
    r = run(tmp_path, ACCEL, HAND)
    assert loud(r) == []
    assert [(f.rule, f.key, f.gpu.line, f.npu.line, f.message) for f in r.findings if f.rule == "SD110"] == [REGION]
    assert [f.extra for f in r.findings if f.rule == "SD110"] == [
        {"region": {"gpu": [5, 16], "npu": [5, 21], "statement_findings": 8,  # the two moves to the device are no finding
                    "settings": ["clip_grad", "gradient_accumulation_steps", "initial_loss_scale",
                                 "loss_scale_window", "params_dtype"]}}]


def test_a_rewritten_loop_that_accumulates_otherwise_is_the_setting(tmp_path):
    r = run(tmp_path, ACCEL, HAND.replace("    every = 4\n", "    every = 8\n"))
    assert loud(r) == [("SD203", "gradient_accumulation_steps", 4, 8, 6, 8)]


def test_a_rewritten_loop_in_another_precision_is_the_setting(tmp_path):
    r = run(tmp_path, ACCEL, HAND.replace("dtype=torch.float16", "dtype=torch.bfloat16"))
    assert loud(r) == [("SD205", "params_dtype", "fp16", "bf16", 6, 11)]


def test_a_rewritten_loop_that_clips_otherwise_is_the_setting(tmp_path):
    r = run(tmp_path, ACCEL, HAND.replace("(net.parameters(), 1.0)", "(net.parameters(), 0.5)"))
    assert loud(r) == [("SD208", "clip_grad", 1.0, 0.5, 12, 16)]


def test_a_loss_scale_accelerate_does_not_apply_is_the_setting(tmp_path):
    """accelerate's fp16 runs torch's GradScaler with its defaults: 65536 against 1024."""
    r = run(tmp_path, ACCEL, HAND.replace("GradScaler()", "GradScaler(init_scale=1024)"))
    assert loud(r) == [("SD209", "initial_loss_scale", 65536.0, 1024.0, None, 7)]


def test_a_loop_edited_not_rewritten_keeps_its_statement_findings(tmp_path):
    """Most of the loop is the same: no region, the one changed statement is its own finding
    (where `scaler.update()` goes is not followed: `scaler` is no new container of the function)."""
    gpu = HAND.replace("import torch_npu\n", "").replace(".npu()", ".cuda()").replace("torch.npu.amp", "torch.cuda.amp")
    r = run(tmp_path, gpu, gpu.replace("            scaler.update()\n", ""))
    assert [(f.rule, f.key, f.gpu and f.gpu.line, f.npu, f.message, f.extra) for f in r.findings] == [
        ("SD102", "code:fit.py:fit", 17, None, "statement on GPU only", {})]


def test_a_rewritten_function_that_trains_nothing_is_one_finding(tmp_path):
    """A rewritten data function: no training step on either side, its statement findings are one
    SD109 for the function, with both spans and how many it folds; edited, not rewritten, its
    statements are compared one by one."""
    gpu = "def shard(items, n):\n    out = []\n    for i, x in enumerate(items):\n        if i % n == 0:\n" \
          "            out.append(x)\n    return out\n"
    npu = "def shard(items, n):\n    keep = items[::n]\n    total = len(keep)\n    assert total >= 0\n" \
          "    return list(keep)\n"
    r = run(tmp_path, gpu, npu)
    assert [(f.rule, f.severity, f.gpu.line, f.npu.line, f.message, f.extra) for f in r.findings] == [
        ("SD109", "warning", 1, 1, "function shard was rewritten (5 of 5 statements differ on GPU, 4 of 4 on NPU): "
         "one finding for the region, its 6 statement findings folded; what it computes is not compared "
         "statement by statement", {"region": {"gpu": [1, 6], "npu": [1, 5], "statement_findings": 6, "reaches": []}})]
    (tmp_path / "e").mkdir()
    r = run(tmp_path / "e", gpu, gpu.replace("i % n == 0", "i % n == 1"))
    assert [(f.rule, f.gpu.line, f.npu.line, f.message) for f in r.findings] == [
        ("SD102", 4, 4, "the if header differs")]


def test_a_hand_written_accumulation_in_an_elif_of_a_method_is_read(tmp_path):
    """The `if i % N == 0:` around the step and the reset is found wherever it sits (an `elif`,
    a method of a class), N read from the function it is in."""
    hand = HAND.replace("def fit(net, opt, batches, cfg):\n", "class Runner:\n  def fit(self, net, opt, batches, cfg):\n")
    hand = "\n".join(("  " + ln if ln.startswith("    ") else ln) for ln in hand.split("\n"))
    hand = hand.replace("          if (i + 1) % every == 0:\n",
                        "          if i < 0:\n              continue\n          elif (i + 1) % every == 0:\n")
    accel = ACCEL.replace("def fit(net, opt, batches, cfg):\n", "class Runner:\n  def fit(self, net, opt, batches, cfg):\n")
    accel = "\n".join(("  " + ln if ln.startswith("    ") else ln) for ln in accel.split("\n"))
    (tmp_path / "same").mkdir()
    (tmp_path / "other").mkdir()
    assert loud(run(tmp_path / "same", accel, hand)) == []
    assert loud(run(tmp_path / "other", accel, hand.replace("      every = 4\n", "      every = 8\n"))) == [
        ("SD203", "gradient_accumulation_steps", 4, 8, 7, 9)]


def test_an_if_every_n_steps_without_a_reset_is_no_accumulation(tmp_path):
    """A step under `if i % N == 0:` with the reset outside it (each step's gradients thrown away)
    is no accumulation: the NPU side sets none, against accelerate's 4."""
    hand = HAND.replace("            opt.zero_grad()\n", "").replace(
        "        scaler.scale(loss).backward()\n", "        scaler.scale(loss).backward()\n        opt.zero_grad()\n")
    r = run(tmp_path, ACCEL, hand)
    assert [(f.rule, f.key, f.gpu and (f.gpu.value, f.gpu.line), f.npu, f.severity) for f in r.findings
            if f.severity != "info"] == [("SD203", "gradient_accumulation_steps", (4, 6), None, "error")]


SCOPED = '''lr = 1.0


def outer(lr):
    def inner():
        return lr * 2
    def shadow(lr):
        return lr
    def module_one():
        global lr
        return lr
    class Box:
        lr = 3
        y = lr
        def get(self):
            return lr
    return inner() + lr
'''


def test_the_reads_of_a_name_follow_python_scopes():
    """A function's name is read in it and in the functions inside it that do not bind it again
    nor declare it global; a class's own names are seen in its body, not in its methods."""
    flow = relevance.Flow(SCOPED)
    outer = flow.defs["outer"][0]
    box = next(n for n in flow.placed if type(n).__name__ == "ClassDef")
    assert sorted(n.lineno for n in flow.reads(outer, "lr")) == [6, 16, 17]
    assert sorted(n.lineno for n in flow.reads(flow.defs["shadow"][0], "lr")) == [8]
    assert sorted(n.lineno for n in flow.reads(box, "lr")) == [14]
    assert sorted(n.lineno for n in flow.reads(flow.tree, "lr")) == [11]
    for scope in (outer, box, flow.tree):  # the same as asking each read which scope binds it
        assert sorted(n.lineno for n in flow.reads(scope, "lr")) == sorted(
            n.lineno for n in flow.loads["lr"] if flow.binder(n, "lr") is scope)


def test_a_node_is_found_by_its_character_column_after_wide_characters():
    """Columns are characters, CPython's offsets are bytes: a line with `é` before the node."""
    flow = relevance.Flow('def f(x):\n    s = "é"; y = x.half()\n    return y\n')
    assert [flow.segment(n) for n in flow.statements_at(2, 's = "é"; y = x.half()')] == ['s = "é"', "y = x.half()"]
    node = flow.locate(2, 13, "y = x.half()")
    assert node is not None and flow.segment(node) == "y = x.half()"
    assert flow.locate(2, 14, "y = x.half()") is None



CHECKED = '''import torch


def build(cfg, params):
    assert (cfg.use_gpu and cfg.use_xla) is not True, "gpu and xla cannot both be on"
    lr = cfg.get("lr", 1e-4)
    assert lr < 1
    opt = torch.optim.AdamW(params, lr=lr)
    return opt
'''


def test_an_assertions_message_is_for_people_and_its_test_is_not(tmp_path):
    """What a failed check says is words for people (info, however it changed); the NPU's own
    switch read on the NPU side only and added to the check, which each run answers alike, is
    the port (masked); a check that asks something else is as it was (whether the run goes on:
    a check removed lets a configuration run that the other side refuses)."""
    npu = CHECKED.replace("def build(cfg, params):\n", 'def build(cfg, params):\n    use_npu = cfg.get("use_npu", False)\n'
                          ).replace('(cfg.use_gpu and cfg.use_xla) is not True, "gpu and xla cannot both be on"',
                                    '(cfg.use_gpu and cfg.use_xla and use_npu) is not True, "gpu, xla and npu: one only"')
    (tmp_path / "port").mkdir()
    r = run(tmp_path / "port", CHECKED, npu)
    assert code(r) == [("SD103", "code:fit.py:build", 5, 6, "statement differs; reaches nothing training computes "
                        "(an assertion's message)", {"sink": None, "only": ["an assertion's message"]})]
    assert (None, 5) in [(m.gpu and m.gpu.line, m.npu and m.npu.line) for m in r.masked if m.rule == "SD022"]
    (tmp_path / "check").mkdir()
    r = run(tmp_path / "check", CHECKED, CHECKED.replace("assert lr < 1\n", "assert lr < 10\n"))
    assert code(r) == [("SD102", "code:fit.py:build", 7, 7, "statement differs", None)]


def test_host_threads_are_how_fast_not_what(tmp_path):
    """`cv2.setNumThreads(0)` and `torch.set_num_threads(4)` on the NPU side only: how many host
    threads decode data or run host ops (info, threads); a default dtype set beside them is loud."""
    gpu = "import torch\n\n\ndef setup():\n    torch.manual_seed(0)\n"
    npu = ("import cv2\nimport torch\n\n\ndef setup():\n    cv2.setNumThreads(0)\n    torch.set_num_threads(4)\n"
           "    torch.manual_seed(0)\n")
    (tmp_path / "threads").mkdir()
    r = run(tmp_path / "threads", gpu, npu)
    assert code(r) == [("SD103", "code:fit.py:setup", None, line, "statement on NPU only; reaches nothing training "
                        "computes (threads)", {"sink": None, "only": ["threads"]}) for line in (6, 7)]
    (tmp_path / "dtype").mkdir()
    r = run(tmp_path / "dtype", gpu, npu.replace("torch.set_num_threads(4)", "torch.set_default_dtype(torch.float16)"))
    assert [(f.rule, f.npu.line) for f in r.findings if f.check == "script" and f.severity != "info"] == [("SD102", 7)]


GUARDED = '''import torch


def build(cfg, params, batch):
    opt = torch.optim.AdamW(params, lr=cfg.lr)
    return opt
'''


def test_a_check_the_npu_side_adds_refuses_a_run_and_changes_none(tmp_path):
    """An `if ...: raise` or an `assert` on the NPU side only, its tests calling nothing: a run that
    goes on computes what the GPU's does (info). The same check dropped on the NPU side lets it run
    what the GPU refuses (as it was); a test that calls something may change anything."""
    check = ("    if cfg.fast_kernel and not FAST_OK:\n        raise ImportError(\"the fast kernel is missing here\")\n"
             "    assert len(batch) % 2 == 0, \"even batches only\"\n")
    checked = GUARDED.replace("    opt = torch", check + "    opt = torch")
    (tmp_path / "added").mkdir()
    r = run(tmp_path / "added", GUARDED, checked)
    assert code(r) == [
        ("SD103", "code:fit.py:build", None, line, "statement on NPU only; reaches nothing training computes "
         "(a check the NPU side adds)", {"sink": None, "only": ["a check the NPU side adds"]}) for line in (5, 7)]
    (tmp_path / "dropped").mkdir()
    r = run(tmp_path / "dropped", checked, GUARDED)
    assert [(f.rule, f.gpu.line, f.message) for f in r.findings if f.check == "script" and f.severity != "info"] == [
        ("SD102", 5, "statement on GPU only"), ("SD102", 7, "statement on GPU only")]
    (tmp_path / "calls").mkdir()
    r = run(tmp_path / "calls", GUARDED, GUARDED.replace(
        "    opt = torch", "    if not load_weights(params):\n        raise RuntimeError(\"no weights\")\n    opt = torch"))
    assert [(f.rule, f.npu.line, f.message) for f in r.findings if f.check == "script" and f.severity != "info"] == [
        ("SD102", 5, "statement on NPU only")]


PROBE_GPU = '''import torch


def has_kestrel(want):
    want = str(want)
    if want.startswith("cuda"):
        return torch.cuda.is_available()
    elif want == "mps":
        return torch.backends.mps.is_available()
    elif want == "xpu":
        return torch.xpu.is_available()
    elif want == "cpu":
        return True
    else:
        raise ValueError(want)


def pick_kestrel(try_device):
    try_device = str(try_device)
    if try_device.startswith("cuda"):
        assert torch.cuda.is_available()
        dev = torch.device(try_device)
    elif try_device == "xpu":
        assert torch.xpu.is_available()
        dev = torch.device("xpu")
    else:
        dev = torch.device(try_device)
    return dev
'''

PROBE_NPU = '''import torch
import torch_npu


def has_kestrel(want):
    want = str(want)
    if want.startswith("cuda"):
        return torch.cuda.is_available()
    elif want == "mps":
        return torch.backends.mps.is_available()
    elif want == "npu":
        return torch.npu.is_available()
    elif want == "cpu":
        return True
    elif want == "xpu":
        return torch.xpu.is_available()
    else:
        raise ValueError(want)


def pick_kestrel(try_device):
    try_device = str(try_device)
    match try_device:
        case "cuda":
            assert torch.cuda.is_available()
            dev = torch.device("cuda")
        case "npu":
            assert torch.npu.is_available()
            dev = torch.device("npu")
        case _:
            dev = torch.device(try_device)
    return dev
'''


def test_a_device_probe_and_a_device_check_rewritten_as_match_are_the_port(tmp_path):
    """A function whose every return is a device test or a constant truth answers whether a device
    is there; `assert torch.cuda.is_available()` checks the run's own device; an if chain rewritten
    as `match` over device names only places tensors: each is info, with what it reaches."""
    r = run(tmp_path, PROBE_GPU, PROBE_NPU)
    check = {"sink": None, "only": ["a device check"]}
    assert code(r) == [
        ("SD103", "code:fit.py:has_kestrel", 12, 15, "statement differs; reaches nothing training computes "
         "(a device check)", check),
        ("SD103", "code:fit.py:has_kestrel", 13, 16, "statement differs; reaches nothing training computes "
         "(a device check)", check),
        ("SD103", "code:fit.py:pick_kestrel", 20, None, "statement on GPU only; reaches nothing training "
         "computes (a device check, placement)", {"sink": None, "only": ["a device check", "placement"]}),
        ("SD103", "code:fit.py:pick_kestrel", None, 23, "statement on NPU only; reaches nothing training "
         "computes (a device check, placement)", {"sink": None, "only": ["a device check", "placement"]})]


def test_a_match_arm_that_seeds_and_a_function_that_returns_more_than_a_test_stay_loud(tmp_path):
    (tmp_path / "b").mkdir()
    npu = PROBE_NPU.replace('            dev = torch.device("npu")\n',
                            '            dev = torch.device("npu")\n            torch.manual_seed(7)\n')
    r = run(tmp_path, PROBE_GPU, npu)
    assert [(f[0], f[1], f[2], f[3]) for f in code(r) if f[1].endswith("pick_kestrel")] == [
        ("SD103", "code:fit.py:pick_kestrel", 20, None), ("SD101", "code:fit.py:pick_kestrel", None, 23)]
    assert code(r)[-1][5]["sink"] == "randomness"
    # `return 0.5` among its returns: no device test, its callers are not in the file (unknown)
    gpu = PROBE_GPU.replace("        return True\n", "        return 0.5\n")
    npu = PROBE_NPU.replace("        return True\n", "        return 0.5\n")
    r = run(tmp_path / "b", gpu, npu)
    assert [(f[0], f[2], f[3]) for f in code(r) if f[1].endswith("has_kestrel")] == [
        ("SD102", 12, 15), ("SD102", 13, 16)]


# ------------------------------------------- collectives change the tensor they are given
SUMMED = '''import torch
import torch.distributed as dist
from orbitkit.util import print_main


def fit_epoch(net, opt, batches):
    for batch in batches:
        loss = net(batch).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss
'''


def test_a_metric_summed_over_the_ranks_and_printed_is_info(tmp_path):
    """The NPU side times its steps and sums the total over the ranks through a helper of its
    own before printing it: the collective changes only that tensor, which only reaches a print."""
    npu = SUMMED.replace("def fit_epoch(net, opt, batches):\n", '''def sum_ranks(t):
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def fit_epoch(net, opt, batches):
    seen = torch.zeros(1)
''').replace("        opt.zero_grad()\n", "        opt.zero_grad()\n        seen += batch.shape[0]\n").replace(
        "    return loss\n", "    seen = sum_ranks(seen)\n    print_main(f'samples {seen.item()}')\n    return loss\n")
    r = run(tmp_path, SUMMED, npu)
    assert [(x[0], x[2], x[3], x[5]) for x in code(r)] == [
        ("SD103", None, 6, {"sink": None, "only": ["logging"]}),
        ("SD103", None, 12, {"sink": None, "only": ["logging"]}),
        ("SD103", None, 18, {"sink": None, "only": ["logging"]}),
        ("SD103", None, 19, {"sink": None, "only": ["logging"]}),
        ("SD103", None, 20, {"sink": None, "only": ["logging"]})]


def test_a_loss_summed_over_the_ranks_before_backward_reaches_the_loss(tmp_path):
    npu = SUMMED.replace("        loss.backward()\n", "        dist.all_reduce(loss)\n        loss.backward()\n")
    r = run(tmp_path, SUMMED, npu)
    assert [(x[0], x[2], x[3], (x[5] or {}).get("sink")) for x in code(r)] == [("SD102", None, 9, "loss")]


def test_files_staged_from_object_storage_are_info(tmp_path):
    """`moxing.file.copy_parallel` (ModelArts' SDK) copies files between object storage and the
    disk: rules/relevance.yaml `staging`. Any other call the file does not define stays loud."""
    npu = LOOP.replace("import torch\n", "import moxing as mox\nimport torch\n").replace(
        "    t0 = time.time()\n", '    t0 = time.time()\n    mox.file.copy_parallel("obs://bucket/set", "/cache/set")\n')
    r = run(tmp_path, LOOP, npu)
    assert code(r) == [("SD103", "code:fit.py:fit_epoch", None, 10,
                        "statement on NPU only; reaches nothing training computes (staging)",
                        {"sink": None, "only": ["staging"]})]
    npu = npu.replace("mox.file.copy_parallel", "mox.data.resample")
    (tmp_path / "other").mkdir()
    assert code(run(tmp_path / "other", LOOP, npu)) == [
        ("SD102", "code:fit.py:fit_epoch", None, 10, "statement on NPU only", None)]

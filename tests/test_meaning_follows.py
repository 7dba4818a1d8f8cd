"""Issue 39, round 6: one cause, one loud finding.

A value the tool computes (data parallel size, accumulation steps, global batch) that differs
because one of its inputs does, or that one side alone can compute, follows from that input's
own finding: SD230 (info) with the inputs' two values. A value written on either side, and a
computed world size (the job's size), stay SD203. Made-up programs and keys throughout."""
from __future__ import annotations

from pathlib import Path

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files


def pair(tmp_path: Path, name: str, gpu: str, npu: str):
    out = []
    for side, text in (("gpu", gpu), ("npu", npu)):
        p = tmp_path / side / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        out.append([str(p)])
    return diff_files(*out, Options(use_cache=False))


def rows(rep):
    return sorted((f.rule, f.severity, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                   f.gpu.line if f.gpu else None, f.npu.line if f.npu else None) for f in rep.findings)


LAUNCH = "torchrun --nproc_per_node {n} pretrain_gpt.py --tensor-model-parallel-size {tp} " \
         "--micro-batch-size 1 --global-batch-size {gbs}{extra}\n"


def test_a_computed_value_follows_from_the_input_that_differs(tmp_path):
    rep = pair(tmp_path, "run.sh", LAUNCH.format(n=8, tp=2, gbs=64, extra=""), LAUNCH.format(n=8, tp=4, gbs=64, extra=""))
    assert rows(rep) == [
        ("SD203", "error", "tensor_model_parallel_size", 2, 4, 1, 1),
        ("SD230", "info", "data_parallel_size", 4, 2, 1, 1),  # shown where the input that differs is set
        ("SD230", "info", "gradient_accumulation_steps", 16, 32, 1, 1),
    ]
    dp = next(f for f in rep.findings if f.key == "data_parallel_size")
    assert dp.message == ("data_parallel_size is 4 on GPU and 2 on NPU, computed on both sides, not set: it follows "
                          "from its inputs, each compared on its own (tensor_model_parallel_size is 2 on GPU and 4 "
                          "on NPU)")
    # the same split written in another order: nothing
    same = pair(tmp_path / "same", "run.sh", LAUNCH.format(n=8, tp=2, gbs=64, extra=""),
                "torchrun --nproc_per_node=8 pretrain_gpt.py --global-batch-size=64 --micro-batch-size=1 "
                "--tensor-model-parallel-size=2\n")
    assert rows(same) == []


def test_a_value_written_on_one_side_is_compared_as_written(tmp_path):
    # NPU writes the accumulation steps that GPU computes (16): a real comparison, loud
    rep = pair(tmp_path, "run.sh", LAUNCH.format(n=8, tp=2, gbs=64, extra=""),
               LAUNCH.format(n=8, tp=2, gbs=64, extra=" --gradient-accumulation-steps 8"))
    assert [r for r in rows(rep) if r[2] == "gradient_accumulation_steps"] == [
        ("SD203", "error", "gradient_accumulation_steps", 16, 8, 1, 1)]  # GPU computes it on line 1


def test_a_value_only_one_side_can_compute_follows_from_what_the_other_lacks(tmp_path):
    # a verl-style config: the NPU side adds the devices per node, the GPU side leaves them to its launcher
    gpu = ("trainer:\n  nnodes: 1\ndata:\n  train_batch_size: 64\nactor_rollout_ref:\n  actor:\n"
           "    ppo_micro_batch_size_per_gpu: 2\n")
    npu = gpu.replace("  nnodes: 1\n", "  nnodes: 1\n  n_gpus_per_node: 8\n")
    rep = pair(tmp_path, "rl.yaml", gpu, npu)
    assert [r for r in rows(rep) if r[0] in ("SD203", "SD230")] == [
        ("SD203", "error", "nproc_per_node", None, 8, None, 3),
        ("SD203", "error", "world_size", None, 8, None, 3),  # the job's size, computed: loud, at its input
        ("SD230", "info", "data_parallel_size", None, 8, None, 3),
        ("SD230", "info", "gradient_accumulation_steps", None, 4, None, 5),
    ]
    dp = next(f for f in rep.findings if f.key == "data_parallel_size")
    assert dp.message.startswith("data_parallel_size = 8 is computed on NPU only (world_size / (tp * pp * cp) with "
                                 "world_size=8, ") and "GPU does not set all of world_size, " in dp.message
    assert rows(pair(tmp_path / "same", "rl.yaml", npu, npu)) == []



def test_a_computed_value_is_shown_where_the_input_that_differs_is_set(tmp_path):
    # the job's size from two settings of a made-up trainer section: the number of nodes differs
    # (line 3), the devices per node (line 2) do not; the finding points at the nodes
    gpu = "trainer:\n  n_gpus_per_node: 8\n  nnodes: {n}\noptim:\n  lr: 1.0e-4\n"
    rep = pair(tmp_path, "kestrel.yaml", gpu.format(n=2), gpu.format(n=4))
    assert [r for r in rows(rep) if r[2] in ("world_size", "data_parallel_size")] == [
        ("SD203", "error", "world_size", 16, 32, 3, 3),
        ("SD230", "info", "data_parallel_size", 16, 32, 3, 3),
    ]
    ws = next(f for f in rep.findings if f.key == "world_size")
    assert ws.gpu.source == "derived" and ws.gpu.via == "nproc_per_node * nnodes with nproc_per_node=8, nnodes=2"
    assert rows(pair(tmp_path / "same", "kestrel.yaml", gpu.format(n=2), gpu.format(n=2))) == []

# --------------------------------------- a name assigned from a device test is that test's value

LOADER = '''import torch
from orbitkit.common import detect_kind, start

device_type = detect_kind()
rank, device = start(device_type)


def batches(rows):
    while True:
        {flag} = {test}
        t = torch.tensor(rows, dtype=torch.long, pin_memory={flag})
        x = t[:, :-1].to(device=device, dtype={dtype}, non_blocking={flag})
        yield x
'''


def test_a_flag_named_like_a_switch_but_assigned_from_a_device_test_is_the_test(tmp_path):
    # `use_cuda` reads like a setting's switch (on only on the GPU run), but the file assigns it
    # from a device test: on each run it is that test's answer, the NPU's list of devices included
    gpu = LOADER.format(flag="use_cuda", test='device_type == "cuda"', dtype="torch.int32")
    npu = LOADER.format(flag="use_accel", test='device_type in ["cuda", "npu"]', dtype="torch.int32")
    assert [r for r in rows(pair(tmp_path, "loader.py", gpu, npu)) if r[1] != "info"] == []
    drifted = LOADER.format(flag="use_accel", test='device_type in ["cuda", "npu"]', dtype="torch.int64")
    assert [r[:3] + r[5:] for r in rows(pair(tmp_path / "d", "loader.py", gpu, drifted)) if r[1] != "info"] == [
        ("SD101", "error", "code:loader.py:batches", 12, 12)]


# --------------------------------------- a value handed to the script by its caller ($2)

def test_a_size_both_scripts_take_from_their_arguments_is_known_on_neither(tmp_path):
    # the GPU script takes the device count as its first argument, the NPU script as its second
    # (its first is the rank table): neither value is known here, so they are not compared
    gpu = "n=$1\nmpirun -n $n python train_orbit.py --learning_rate 1e-4\n"
    npu = "export RANK_TABLE_FILE=$1\nmpirun -n $2 python train_orbit.py --learning_rate 1e-4\n"
    rep = pair(tmp_path, "run.sh", gpu, npu)
    assert [r for r in rows(rep) if r[2] == "world_size"] == [("SD231", "info", "world_size", "$1", "$2", 1, 2)]
    # taken from the caller on one side only, it is still the job's size against a number: loud
    one = pair(tmp_path / "one", "run.sh", gpu.replace("n=$1", "n=8"), npu)
    assert [r for r in rows(one) if r[2] == "world_size"] == [("SD203", "error", "world_size", 8, "$2", 1, 2)]


def test_a_folder_handed_over_as_the_scripts_argument_is_not_known_here(tmp_path):
    gpu = "python train_orbit.py --batch_size 2 --learning_rate 1e-4\n"
    npu = ("data_dir=${2}\nresult_dir=${3}\n"
           "python train_orbit.py --dataset=${data_dir} --result=${result_dir} --batch_size 2 --learning_rate 1e-4\n")
    rep = pair(tmp_path, "run.sh", gpu, npu)
    assert rows(rep) == [("SD231", "info", "data_path", None, "$2", None, 1),
                         ("SD231", "info", "result", None, "$3", None, 2)]
    assert next(f for f in rep.findings if f.key == "data_path").message.startswith(
        "data_path: the NPU run takes it from the script's argument $2, given by whoever starts the script and not "
        "known here: not compared")
    # a learning rate handed over so can change numerics: its category's finding, saying so
    rep = pair(tmp_path / "lr", "run.sh", gpu, "lr=${1}\npython train_orbit.py --batch_size 2 --learning_rate ${lr}\n")
    assert rows(rep) == [("SD202", "error", "lr", 0.0001, "$1", 1, 1)]


# --------------------------------------- the accelerator's seed, whichever device it is

SEEDED = ("import torch\nimport torch_npu\n\ndef init(device_type):\n    torch.manual_seed(42)\n"
          "    if device_type == \"cuda\":\n        torch.cuda.manual_seed(42)\n{npu}")


def test_the_npu_generators_seed_is_the_device_seed(tmp_path):
    gpu = SEEDED.format(npu="")
    npu = SEEDED.format(npu="    elif device_type == \"npu\":\n        torch_npu.npu.manual_seed({})\n")
    assert rows(pair(tmp_path, "seed.py", gpu, npu.format(42))) == []
    assert rows(pair(tmp_path / "d", "seed.py", gpu, npu.format(7))) == [
        ("SD207", "error", "device_seed", 42, 7, 7, 9)]


# --------------------------------------- placement of loaded bytes; the NPU's tuning options

ENGINE = '''import torch


class OrbitEngine:
    def __init__(self, cfg, path):
        self.net = build_orbit(cfg)
        self.net.load_state_dict(torch.load(path{where}, weights_only=True))
        if cfg.use_cuda:
            self.device = torch.device("cuda")
            self.net.to(self.device)
{npu}'''

NPU_BRANCH = '''        elif cfg.use_npu:
            import torch_npu
            opts = {"ACL_OP_COMPILER_CACHE_MODE": "enable"}
            torch_npu.npu.set_option(opts)
            self.device = torch.device("npu")
            self.net.to(self.device)
'''


def test_a_checkpoint_loaded_to_the_host_and_the_npus_options_are_the_port(tmp_path):
    gpu = ENGINE.format(where="", npu="")
    npu = ENGINE.format(where=', map_location="cpu"', npu=NPU_BRANCH)
    assert [r for r in rows(pair(tmp_path, "engine.py", gpu, npu)) if r[1] != "info"] == []
    infos = {f.message for f in pair(tmp_path / "i", "engine.py", gpu, npu).findings}
    assert "torch.load: argument map_location is given on NPU only; reaches nothing training computes (placement)" \
        in infos
    # a tensor moved to the host for computation is another matter: not known, stays loud
    moved = npu.replace("weights_only=True))", "weights_only=True))\n        self.bias = self.net.bias.to(\"cpu\") * 2")
    gpu_moved = gpu.replace("weights_only=True))", "weights_only=True))\n        self.bias = self.net.bias * 2")
    assert [r[:3] for r in rows(pair(tmp_path / "m", "engine.py", gpu_moved, moved)) if r[1] != "info"] == [
        ("SD101", "error", "code:engine.py:OrbitEngine.__init__")]


# --------------------------------------- what decides the device a helper returns

DETECT = '''import torch
{head}

def pick_orbit_{what}():
{npu}    if torch.cuda.is_available():
        choice = {cuda}
    else:
        choice = {other}
    return choice
'''
NPU_PROBE = '''    if ORBIT_NPU_OK:
        ok = False
        if hasattr(torch_npu, "is_available"):
            ok = torch_npu.is_available()
        if ok:
            choice = {npu}
            return choice
'''
HEAD = "try:\n    import torch_npu\n    ORBIT_NPU_OK = True\nexcept ImportError:\n    ORBIT_NPU_OK = False\n"


def test_a_probe_that_only_decides_which_device_a_helper_returns_is_the_port(tmp_path):
    gpu = DETECT.format(head="", what="device", npu="", cuda='"cuda"', other='"cpu"')
    npu = DETECT.format(head=HEAD, what="device", npu=NPU_PROBE.format(npu='"npu"'), cuda='"cuda"', other='"cpu"')
    assert [r for r in rows(pair(tmp_path, "detect.py", gpu, npu)) if r[1] != "info"] == []
    # the same probe deciding the dtype the helper returns can change what is computed: loud
    gpu = DETECT.format(head="", what="dtype", npu="", cuda="torch.bfloat16", other="torch.float32")
    npu = DETECT.format(head=HEAD, what="dtype", npu=NPU_PROBE.format(npu="torch.float16"), cuda="torch.bfloat16",
                        other="torch.float32")
    loud = [r for r in rows(pair(tmp_path / "d", "detect.py", gpu, npu)) if r[1] != "info"]
    assert loud and {r[2] for r in loud} == {"code:detect.py:pick_orbit_dtype"}


def test_an_entry_script_named_with_a_leading_npu_word_is_the_expected_port(tmp_path):
    gpu = "python3 fit_orbit.py --batch_size 8 --lr 1e-4\n"
    assert rows(pair(tmp_path, "run.sh", gpu, gpu.replace("fit_orbit.py", "npu_fit_orbit.py"))) == []
    assert [r[:3] for r in rows(pair(tmp_path / "o", "run.sh", gpu, gpu.replace("fit_orbit.py", "fit_comet.py")))] == [
        ("SD160", "warning", "program")]


# --------------------------------------- PyTorch 2.9's TF32 spelling

TF32 = 'import torch\n{npu}\n\ndef init(device_type):\n    if device_type == "cuda":\n        {line}\n    return 1\n'


def test_pytorch_2_9_fp32_precision_tf32_is_the_gpu_only_tf32_switch(tmp_path):
    line = 'torch.backends.fp32_precision = "tf32"'
    rep = pair(tmp_path, "t.py", TF32.format(npu="", line=line), TF32.format(npu="import torch_npu", line=line))
    assert rows(rep) == [("SD107", "info", "code:t.py:init", 'torch.backends.fp32_precision = "tf32"', None, 6, None)]
    assert rep.findings[0].message.startswith(
        "torch.backends.fp32_precision = 'tf32' turns TF32 on in the GPU run and does nothing on the NPU: ")
    # "ieee" keeps fp32: nothing is turned on, nothing to say
    ieee = 'torch.backends.fp32_precision = "ieee"'
    rep = pair(tmp_path / "i", "t.py", TF32.format(npu="", line=ieee), TF32.format(npu="import torch_npu", line=ieee))
    assert rows(rep) == []


# --------------------------------------- DeepSpeed's own defaults; its offload and dump knobs

DS = ('{{\n  "fp16": {{\n    "enabled": "auto"{scale}\n  }},\n  "train_micro_batch_size_per_gpu": "auto",\n'
      '  "zero_optimization": {{\n    "stage": 3{extra}\n  }}\n}}\n')
SCALE = (',\n    "loss_scale": 0,\n    "loss_scale_window": 1000,\n    "initial_scale_power": 16,\n'
         '    "hysteresis": 2,\n    "min_loss_scale": 1')


def test_deepspeeds_loss_scale_defaults_written_out_equal_them_left_out(tmp_path):
    npu_extra = ',\n    "offload_param": {"device": "cpu"},\n    "gather_16bit_weights_on_model_save": true'
    rep = pair(tmp_path, "ds.json", DS.format(scale=SCALE, extra=""), DS.format(scale="", extra=npu_extra))
    assert [r for r in rows(rep) if r[1] != "info"] == []
    assert sorted(r[2] for r in rows(rep)) == ["zero_optimization.gather_16bit_weights_on_model_save",
                                               "zero_optimization.offload_param.device"]  # SD221, info
    # a loss-scale window other than DeepSpeed's default is still a difference
    rep = pair(tmp_path / "d", "ds.json", DS.format(scale=SCALE.replace("1000", "500"), extra=""),
               DS.format(scale="", extra=""))
    assert [r for r in rows(rep) if r[1] != "info"] == [("SD209", "error", "loss_scale_window", 500.0, 1000, 5, None)]



ZPP = ',\n    "zero_quantized_weights": {w},\n    "zero_quantized_gradients": false'
ACKPT = '{{\n  "train_micro_batch_size_per_gpu": 1,\n  "activation_checkpointing": {{\n    "partition_activations": {p},' \
    '\n    "cpu_checkpointing": true,\n    "number_checkpoints": 4\n  }}\n}}\n'


def test_zero_plus_plus_left_at_deepspeeds_default_and_activation_checkpointing_are_no_difference(tmp_path):
    """ZeRO++'s quantized weights and gradients written `false` equal DeepSpeed's default; the
    activation_checkpointing section only trades memory for time (SD221, info)."""
    rep = pair(tmp_path, "ds.json", DS.format(scale="", extra=""), DS.format(scale="", extra=ZPP.format(w="false")))
    assert rows(rep) == []
    rep = pair(tmp_path / "a", "ds.json", '{\n  "train_micro_batch_size_per_gpu": 1\n}\n', ACKPT.format(p="true"))
    assert [(r[0], r[1], r[2]) for r in rows(rep)] == [
        ("SD221", "info", "activation_checkpointing.cpu_checkpointing"),
        ("SD221", "info", "activation_checkpointing.number_checkpoints"),
        ("SD221", "info", "activation_checkpointing.partition_activations")]
    # int8 weights on one side: the ZeRO setting differs from the default
    rep = pair(tmp_path / "q", "ds.json", DS.format(scale="", extra=""), DS.format(scale="", extra=ZPP.format(w="true")))
    assert rows(rep) == [("SD213", "warning", "zero_quantized_weights", False, True, None, 8)]


# --------------------------------------- a helper defined on one side only, called nowhere in its file

HELPERS = "import torch\n\n\ndef scale(x):\n    return x * 2\n{extra}"
NEW = "\n\ndef orbit_count(kind):\n    return torch.npu.device_count() if kind == 'npu' else 1\n"


def test_a_helper_defined_on_one_side_and_called_nowhere_there_is_info(tmp_path):
    rep = pair(tmp_path, "helpers.py", HELPERS.format(extra=""), HELPERS.format(extra=NEW))
    assert rows(rep) == [("SD103", "info", "code:helpers.py:orbit_count", None,
                          "def orbit_count(kind):", None, 8)]
    assert rep.findings[0].message == ("function on NPU only: orbit_count: defined, called nowhere in this file; "
                                       "a call of it is a difference where it is written")
    # decorated (a decorator may register it): stays as it was
    deco = NEW.replace("\ndef orbit_count", "\n@register_orbit\ndef orbit_count")
    rep = pair(tmp_path / "d", "helpers.py", HELPERS.format(extra=""), HELPERS.format(extra=deco))
    assert [r[:3] for r in rows(rep)] == [("SD102", "warning", "code:helpers.py:orbit_count")]
    # called in its file: its effect is followed from the call, never said "called nowhere"
    called = NEW + "\n\nN = orbit_count('npu')\n"
    rep = pair(tmp_path / "c", "helpers.py", HELPERS.format(extra=""), HELPERS.format(extra=called))
    assert not any("called nowhere" in f.message for f in rep.findings)
    assert [f.key for f in rep.findings if f.key.endswith("orbit_count")] == ["code:helpers.py:orbit_count"]


def test_a_folder_made_from_the_scripts_argument_by_a_helper_is_not_known_here(tmp_path):
    """`$(get_real_path $1)` on one side and `$(get_real_path $2)` on the other (the NPU script
    takes its rank table first): each the argument its caller gives, through the script's own
    helper, not a difference this side can see."""
    head = 'get_real_path(){\n  echo "$(realpath -m $PWD/$1)"\n}\n'
    gpu = head + "DATA=$(get_real_path $1)\npython fit_orbit.py --dataset_path=$DATA --lr 1e-4\n"
    npu = head + "TABLE=$(get_real_path $1)\nDATA=$(get_real_path $2)\npython fit_orbit.py --dataset_path=$DATA --lr 1e-4\n"
    rep = pair(tmp_path, "run.sh", gpu, npu)
    assert rows(rep) == [("SD231", "info", "data_path", "$(get_real_path $1)", "$(get_real_path $2)", 4, 5)]
    assert next(f for f in rep.findings if f.key == "data_path").message.startswith(
        "data_path: the GPU run takes it from the script's argument $1 (through get_real_path) and the NPU run takes "
        "it from the script's argument $2 (through get_real_path)")
    # a helper given something besides the script's argument is a value of its own, compared as written
    gpu = head + "DATA=$(get_real_path $1 /data/orbit)\npython fit_orbit.py --dataset_path=$DATA --lr 1e-4\n"
    npu = head + "DATA=$(get_real_path $1 /data/kestrel)\npython fit_orbit.py --dataset_path=$DATA --lr 1e-4\n"
    assert [r[:2] for r in rows(pair(tmp_path / "b", "run.sh", gpu, npu))] == [("SD212", "error")]


def test_a_neutral_value_on_one_side_is_what_every_framework_defaults_to(tmp_path):
    # a program no framework pack names: accumulation 1 and a tensor-parallel size of 1 written on
    # the NPU side only are what every framework does by default; 4 stays a difference
    gpu = "python fit_orbit.py --lr 1e-4\n"
    rep = pair(tmp_path, "run.sh", gpu, "python fit_orbit.py --lr 1e-4 --accumulation_steps 1 --tp_size 1\n")
    assert [r for r in rows(rep) if r[1] != "info"] == []
    rep = pair(tmp_path / "four", "run.sh", gpu, "python fit_orbit.py --lr 1e-4 --accumulation_steps 4\n")
    assert [r for r in rows(rep) if r[1] != "info"] == [("SD203", "error", "gradient_accumulation_steps", None, 4, None, 1)]

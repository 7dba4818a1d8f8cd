"""A noise floor for `dumps` (issue 44): `dumps GPU NPU --floor GPU2` compares the two GPU runs
first, and each call statistic's relative error between them becomes its tolerance where it is
larger than the thresholds; the overview says which statistics the spread keeps within, the
finding how far beyond it a divergence lies."""
from __future__ import annotations

import json

import pytest

from scriptdiff import api
from scriptdiff.model import Options


def _tensor(mx: float) -> dict:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 4], "Max": mx, "Min": -1.0, "Mean": 0.1,
            "Norm": 2.0, "requires_grad": False}


def _dump(folder, first_max: float) -> str:
    """Two linear calls whose inputs agree; the first's output Max is `first_max`."""
    rank = folder / "step0" / "rank0"
    rank.mkdir(parents=True)
    data = {"Functional.linear.0.forward": {"input_args": [_tensor(1.0)], "input_kwargs": {},
                                            "output": [_tensor(first_max)]},
            "Functional.linear.1.forward": {"input_args": [_tensor(1.0)], "input_kwargs": {}, "output": [_tensor(2.0)]}}
    (rank / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch",
                                                "dump_data_dir": None, "data": data}))
    return folder.name


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """GPU Max 1.0, a second GPU run 0.4 (a 60% spread), NPU 0.45 (55%: beyond --rtol 0.5, within
    the spread) and another NPU 0.2 (80%: beyond it)."""
    monkeypatch.chdir(tmp_path)
    return {name: _dump(tmp_path / name, m) for name, m in (("gpu", 1.0), ("gpu2", 0.4), ("npu", 0.45),
                                                           ("npu_far", 0.2))}


FLOOR = ("floor: the GPU-to-GPU spread of two runs sets each call statistic's tolerance (at least the thresholds): "
         "16 call statistic(s), the largest 60.00% (Functional.linear.0.forward output.0 Max)")


def test_a_gap_within_the_gpu_to_gpu_spread_is_no_finding(runs):
    plain = api.dumps("gpu", "npu", Options(use_cache=False))
    assert [(f.rule, f.key) for f in plain.findings] == [("SD801", "dump:step0/rank0:Functional.linear.0.forward")]
    report = api.dumps("gpu", "npu", Options(use_cache=False), floor="gpu2")
    assert report.findings == []
    assert report.exit_code() == 0
    assert report.overview[4:] == [
        FLOOR,
        "  Functional.linear.0.forward output.0 Max: 55.00% between GPU and NPU, within the GPU-to-GPU spread (60.00%)",
        "no divergence: every matched call agrees within the thresholds and the GPU-to-GPU spread"]
    assert report.json_extra["dumps"]["settings"]["floor"] == {"side": "gpu", "statistics": 16, "largest": 0.6}
    assert report.json_extra["dumps"]["ranks"][0]["within_floor"] == [
        ["Functional.linear.0.forward", "output.0", "Max", 0.55, 0.6]]


def test_a_gap_beyond_the_spread_is_a_finding_with_its_margin(runs):
    report = api.dumps("gpu", "npu_far", Options(use_cache=False), floor="gpu2")
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.message) for f in report.findings] == [
        ("SD801", "dump:step0/rank0:Functional.linear.0.forward", "1", "0.2",
         "first divergence (rank step0/rank0, forward pass, call 1): Functional.linear.0.forward: output.0's Max is 1 "
         "on GPU and 0.2 on NPU (relative error 0.8 > 0.5, beyond the GPU-to-GPU spread (60.00%) by 20.00 points "
         "(1.3x))")]
    assert report.overview[4:6] == [FLOOR, "  no call statistic beyond the thresholds is within the GPU-to-GPU spread"]


def test_the_floor_of_the_npu_side(runs):
    """--floor-side npu: the second run is the NPU's (npu_far against npu: a 55.6% spread)."""
    report = api.dumps("gpu", "npu", Options(use_cache=False), floor="npu_far", floor_side="npu")
    assert report.findings == []
    assert report.overview[5] == ("  Functional.linear.0.forward output.0 Max: 55.00% between GPU and NPU, within the "
                                  "NPU-to-NPU spread (55.56%)")


def test_a_statistic_the_two_runs_agree_on_is_said_so(runs, tmp_path):
    _dump(tmp_path / "gpu_same", 1.0)
    report = api.dumps("gpu", "npu_far", Options(use_cache=False), floor="gpu_same")
    assert [f.message.rsplit(": ", 1)[1] for f in report.findings] == [
        "output.0's Max is 1 on GPU and 0.2 on NPU (relative error 0.8 > 0.5, the two GPU runs agree on it)"]


def test_an_unreadable_floor_run_is_an_error(runs, tmp_path):
    (tmp_path / "nothing").mkdir()
    report = api.dumps("gpu", "npu", Options(use_cache=False), floor="nothing")
    assert report.exit_code() == 2
    assert [(e.path, e.fatal) for e in report.errors if not e.is_note] == [("nothing", True)]


def test_cli_floor(runs, cli):
    code, out, _err = cli("dumps", "gpu", "npu", "--floor", "gpu2")
    assert code == 0
    assert "within the GPU-to-GPU spread (60.00%)" in out

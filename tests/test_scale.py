"""Cache, worker processes and size limits: faster, never different."""
from __future__ import annotations

import json
import math

import pytest

from scriptdiff.inputs import cache
from scriptdiff.run import engine
from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.report import render


@pytest.mark.parametrize("value", [
    (0.9, 0.95), [1, (2, 3)], {"a": (1, 2)}, {1: "x"}, {"s"}, float("inf"), -math.inf, None, True, "x",
    {"__t": 1},
])
def test_cache_encoding_round_trips(value):
    back = cache.dec(json.loads(json.dumps(cache.enc(value))))
    assert back == value and type(back) is type(value)


def test_nan_round_trips():
    assert math.isnan(cache.dec(json.loads(json.dumps(cache.enc(float("nan"))))))


def test_unencodable_value_is_refused():
    with pytest.raises(TypeError):
        cache.enc(object())


def test_corrupt_cache_entry_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIPTDIFF_CACHE_DIR", str(tmp_path))
    k = "ab" + "0" * 38
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / f"{k}.json").write_text("{not json")
    assert cache.get(k) is None
    cache.put(k, {"x": 1})
    assert cache.get(k) == {"x": 1}


PY_GPU = """import torch
model = Net().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95))
torch.cuda.synchronize()
loss = model(x).mean() * {scale}
"""


def _tree(tmp_path, n):
    g, p = tmp_path / "gpu", tmp_path / "npu"
    for i in range(n):
        for side, text in ((g, PY_GPU.format(scale=1.0)),
                           (p, "import torch_npu\n" + PY_GPU.format(scale=1.0 if i % 3 else 2.0)
                            .replace(".cuda()", ".npu()").replace("torch.cuda.", "torch.npu."))):
            f = side / f"pkg{i % 4}" / f"m{i}.py"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
    return g, p


def test_workers_and_cache_give_byte_identical_json(tmp_path, monkeypatch):
    pytest.importorskip("scriptdiff.lang.python.reader")
    from scriptdiff.run.folders import diff_trees

    g, n = _tree(tmp_path, 12)
    monkeypatch.setenv("SCRIPTDIFF_CACHE_DIR", str(tmp_path / "cache"))
    outs = []
    for opts in (Options(use_cache=False, jobs=1), Options(use_cache=True, jobs=2), Options(use_cache=True, jobs=2),
                 Options(use_cache=True, jobs=1)):
        engine._MEMO.clear()
        outs.append(render(diff_trees(str(g), str(n), opts), "json"))
    assert outs[0] == outs[1] == outs[2] == outs[3]
    doc = json.loads(outs[0])
    assert doc["findings"] and doc["masked"]
    assert any((tmp_path / "cache").rglob("*.json"))  # the warm runs had something to read


def test_parallel_prefetch_fills_the_memo(tmp_path):
    pytest.importorskip("scriptdiff.lang.python.reader")
    from scriptdiff.run.folders import diff_trees

    g, n = _tree(tmp_path, 10)
    engine._MEMO.clear()
    diff_trees(str(g), str(n), Options(use_cache=False, jobs=2))
    # 10 changed pairs: 20 extracts and 10 structural diffs, computed once each
    assert len(engine._MEMO) == 30


def test_file_over_the_size_limit_is_compared_as_text(tmp_path):
    g = tmp_path / "gpu" / "big.py"
    n = tmp_path / "npu" / "big.py"
    g.parent.mkdir()
    n.parent.mkdir()
    body = "".join(f"x{i} = {i}\n" for i in range(2000))
    g.write_text(body)
    n.write_text(body.replace("x7 = 7\n", "x7 = 8\n"))
    report = diff_files([str(g)], [str(n)], Options(use_cache=False, max_bytes=1000))
    assert [(f.rule, f.gpu.line, f.gpu.value, f.npu.value) for f in report.findings if f.rule == "SD108"] == [
        ("SD108", 8, "x7 = 7", "x7 = 8")]
    # its settings were not read on either side: both inputs are not understood, never "equal"
    assert sorted((f.rule, f.key) for f in report.findings if f.rule != "SD108") == [
        ("SD154", f"input:{g}"), ("SD154", f"input:{n}")]
    msgs = sorted(e.message for e in report.errors)
    assert any("larger than the --max-bytes limit" in m and "compared as text" in m for m in msgs)
    assert "larger than the --max-bytes limit (23,780 > 1,000 bytes)" in report.findings[0].message

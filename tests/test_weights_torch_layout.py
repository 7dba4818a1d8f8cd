"""PyTorch and Megatron checkpoint layouts, read through a stand-in for torch.

torch is an optional extra and is not installed here, so these tests replace it with a tiny
module whose `load` returns numpy-backed tensors and records how it was called. They check
scriptdiff's own part: the safe-loader arguments, which file is read in each layout, how
nested state dicts are flattened into names, and that a tensor read this way hashes and
compares exactly like the same tensor read from safetensors. They do not prove anything
about real torch files (that needs torch; see tests/test_weights_pickle.py for the
malicious-pickle check, which runs against real torch when it is installed).
"""
from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest
from safetensors.numpy import save_file


class _Tensor:
    def __init__(self, a: np.ndarray):
        self.a = a
        self.dtype = f"torch.{a.dtype.name}"
        self.shape = a.shape

    def numel(self):
        return self.a.size

    def element_size(self):
        return self.a.itemsize

    def detach(self):
        return self

    def contiguous(self):
        return _Tensor(np.ascontiguousarray(self.a))

    def reshape(self, *shape):
        return _Tensor(self.a.reshape(*shape))

    def view(self, dtype):
        assert dtype == "uint8"
        return _Tensor(self.a.view(np.uint8))

    def numpy(self):
        return self.a


@pytest.fixture
def fake_torch(monkeypatch):
    calls = []
    contents: dict[str, object] = {}
    mod = types.ModuleType("torch")
    mod.uint8 = "uint8"
    mod.is_tensor = lambda x: isinstance(x, _Tensor)

    def load(path, map_location=None, weights_only=False, mmap=False):
        calls.append({"path": str(path), "weights_only": weights_only, "map_location": map_location, "mmap": mmap})
        if not weights_only:
            raise AssertionError("scriptdiff called torch.load without weights_only=True")
        return contents[str(path)]

    mod.load = load
    mod.serialization = types.SimpleNamespace(safe_globals=lambda allowed: _Ctx(allowed, calls))
    monkeypatch.setitem(sys.modules, "torch", mod)
    return types.SimpleNamespace(calls=calls, contents=contents)


class _Ctx:
    def __init__(self, allowed, calls):
        import argparse

        assert allowed == [argparse.Namespace]
        self.calls = calls

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def tensors(seed=0):
    r = np.random.default_rng(seed)
    return {"embedding.word_embeddings.weight": r.standard_normal((8, 4)).astype(np.float32),
            "decoder.layers.0.mlp.linear_fc1.weight": r.standard_normal((16, 4)).astype(np.float32)}


def test_hf_bin_equals_the_same_tensors_in_safetensors(tmp_path, cli, fake_torch):
    t = tensors()
    save_file(t, str(tmp_path / "model.safetensors"))
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "pytorch_model.bin").write_bytes(b"not read: the stand-in answers")
    fake_torch.contents[str(tmp_path / "hf" / "pytorch_model.bin")] = {k: _Tensor(v) for k, v in t.items()}
    code, out, err = cli("weights", str(tmp_path / "model.safetensors"), str(tmp_path / "hf"), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["findings"] == []
    assert fake_torch.calls == [{"path": str(tmp_path / "hf" / "pytorch_model.bin"), "weights_only": True,
                                 "map_location": "cpu", "mmap": True}]


def test_megatron_layout_reads_the_model_of_each_rank(tmp_path, cli, fake_torch):
    def make(root, seed):
        it = root / "iter_0000200"
        for rank in ("mp_rank_00", "mp_rank_01"):
            (it / rank).mkdir(parents=True)
            f = it / rank / "model_optim_rng.pt"
            f.write_bytes(b"-")
            t = tensors(seed + (rank == "mp_rank_01"))
            fake_torch.contents[str(f)] = {
                "iteration": 200,
                "model": {"language_model": {k: _Tensor(v) for k, v in t.items()}},
                "optimizer": {"state": {"0": {"exp_avg": _Tensor(np.zeros(3, np.float32))}}},
            }
        (root / "latest_checkpointed_iteration.txt").write_text("200\n")
        (root / "iter_0000100").mkdir()  # an older iteration: not read

    make(tmp_path / "gpu", 0)
    make(tmp_path / "npu", 0)
    code, out, err = cli("weights", str(tmp_path / "gpu"), str(tmp_path / "npu"), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["findings"] == []
    # one rank of the NPU side differs: exactly its two tensors are reported, with the rank in the name
    f = tmp_path / "npu" / "iter_0000200" / "mp_rank_01" / "model_optim_rng.pt"
    fake_torch.contents[str(f)]["model"]["language_model"]["decoder.layers.0.mlp.linear_fc1.weight"] = \
        _Tensor(np.zeros((16, 4), np.float32))
    code, out, _ = cli("weights", str(tmp_path / "gpu"), str(tmp_path / "npu"), "--format", "json")
    doc = json.loads(out)
    assert code == 1
    assert [(x["rule"], x["key"]) for x in doc["findings"]] == [
        ("SD605", "weights:mp_rank_01/language_model.decoder.layers.0.mlp.linear_fc1.weight")]
    assert doc["findings"][0]["extra"]["cosine"] is None  # NPU tensor is all zeros
    assert doc["findings"][0]["extra"]["rel_l2"] == 1.0
    # the optimizer state is not part of the initial weights
    assert "exp_avg" not in out


def test_safe_loader_refusal_is_one_line(tmp_path, cli, fake_torch, monkeypatch):
    import pickle

    def refuse(path, **kw):
        raise pickle.UnpicklingError("Weights only load failed. Unsupported global: GLOBAL os.system\nmore text")

    monkeypatch.setattr(sys.modules["torch"], "load", refuse)
    (tmp_path / "x.pt").write_bytes(b"-")
    code, _, err = cli("weights", str(tmp_path / "x.pt"), str(tmp_path / "x.pt"))
    assert code == 2
    assert err.strip().splitlines()[0] == ("scriptdiff: x.pt: refused by the safe loader (torch.load weights_only=True): "
                                           "it needs the Python object `os.system`, not a tensor or a plain value; "
                                           "such a checkpoint is never loaded (loading it could run code). Save the "
                                           "weights as safetensors or as a state_dict of tensors where it was made, "
                                           "and compare that")

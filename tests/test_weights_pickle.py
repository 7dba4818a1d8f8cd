"""A malicious pickle checkpoint runs no code, whatever command reads it.

The payload's __reduce__ makes unpickling call open(marker, "w"), creating a marker file.
The first test proves the payload works (plain pickle.loads in a child process creates the
marker), so the others, which assert that no marker appears, can fail.
"""
from __future__ import annotations

import io
import pickle
import subprocess
import sys

import pytest


class _Payload:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def evil_bytes(marker) -> bytes:
    buf = io.BytesIO()
    pickle.dump({"model": {"w": _Payload(str(marker))}}, buf, protocol=2)
    return buf.getvalue()


def layouts(tmp_path, marker) -> dict[str, str]:
    data = evil_bytes(marker)
    (tmp_path / "evil.pt").write_bytes(data)
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "pytorch_model.bin").write_bytes(data)
    mega = tmp_path / "mega" / "iter_0000010" / "mp_rank_00"
    mega.mkdir(parents=True)
    (mega / "model_optim_rng.pt").write_bytes(data)
    (tmp_path / "mega" / "latest_checkpointed_iteration.txt").write_text("10\n")
    return {"file": str(tmp_path / "evil.pt"), "hf": str(hf), "megatron": str(tmp_path / "mega")}


def test_payload_really_runs_code_when_unpickled(tmp_path):
    marker = tmp_path / "proof"
    (tmp_path / "evil.pkl").write_bytes(evil_bytes(marker))
    subprocess.run([sys.executable, "-c", f"import pickle; pickle.load(open({str(tmp_path / 'evil.pkl')!r}, 'rb'))"],
                   check=False, capture_output=True)
    assert marker.exists()


@pytest.fixture
def no_torch(monkeypatch):
    """torch is not installed here; if it is somewhere else, hide it for this test."""
    monkeypatch.setitem(sys.modules, "torch", None)


@pytest.mark.parametrize("layout", ["file", "hf", "megatron"])
def test_without_torch_nothing_is_unpickled(tmp_path, cli, no_torch, layout):
    marker = tmp_path / "pwned"
    paths = layouts(tmp_path, marker)
    for args in (("weights", paths[layout], paths[layout]), ("weights", "fingerprint", paths[layout])):
        code, out, err = cli(*args)
        assert code == 2
        assert "needs the torch extra: pip install 'scriptdiff[torch]'" in err
        assert "Traceback" not in err
        assert not marker.exists()


def test_other_commands_never_unpickle(tmp_path, cli):
    marker = tmp_path / "pwned"
    paths = layouts(tmp_path, marker)
    code, _, err = cli("diff", paths["file"], paths["file"])
    assert "binary file; not compared" in err
    code, _, err = cli("data", str(tmp_path / "hf"), str(tmp_path / "hf"), "--format", "json")
    assert code == 0
    assert not marker.exists()


@pytest.mark.parametrize("layout", ["file", "hf", "megatron"])
def test_with_torch_the_safe_loader_refuses(tmp_path, cli, layout):
    pytest.importorskip("torch", reason="torch is an optional extra and is not installed in this environment")
    marker = tmp_path / "pwned"
    paths = layouts(tmp_path, marker)
    code, out, err = cli("weights", paths[layout], paths[layout])
    assert code == 2
    assert "refused by the safe loader (torch.load weights_only=True)" in err
    assert not marker.exists()

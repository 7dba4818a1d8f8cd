"""`data fingerprint FILE` of one plain file is done without the full command's imports
(commands/quickprint.py); its output must be the full command's, byte for byte, and every
shape that is not plain must be left to the full command."""
import os
import subprocess
import sys

import blake3
import pytest

from conftest import ROOT, run_cli
from scriptdiff.commands import quickprint

FULL = ("--jobs", "1")  # any option other than -o sends the command down the full path


def both(tmp_path, path: str, stdout: bool = False):
    """(quick path's exit, output, stderr), (full command's), each writing its own manifest."""
    outs = []
    for extra, name in (((), "quick.json"), (FULL, "full.json")):
        target = str(tmp_path / name)
        args = ["data", "fingerprint", *extra, path] + ([] if stdout else ["-o", target])
        code, out, err = run_cli(*args)
        text = out if stdout else (tmp_path / name).read_text(encoding="utf-8")
        outs.append((code, text, err.replace(target, "OUT")))
    return outs


@pytest.mark.parametrize("size", [0, 1, 4095, 70_001])
def test_a_plain_file_gets_the_full_commands_manifest(tmp_path, monkeypatch, size):
    from scriptdiff.checks import wholehash

    monkeypatch.setattr(wholehash, "BIG_FILE", 65_536)  # 70,001 bytes: through the memory map
    data = os.urandom(size)
    f = tmp_path / "shard 0 é.bin"
    f.write_bytes(data)
    assert quickprint.run([str(f), "-o", str(tmp_path / "probe.json")]) == 0  # the quick path took it
    quick, full = both(tmp_path, str(f))
    assert quick == full
    assert quick[0] == 0 and f'"hash": "{blake3.blake3(data).hexdigest()}"' in quick[1]
    assert quick[2] == f"scriptdiff: 1 file(s), {size:,} bytes -> OUT\n"


def test_to_standard_output_and_a_relative_path(tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.tok").write_bytes(b"abc\n")
    monkeypatch.chdir(tmp_path)
    quick, full = both(tmp_path, "d/x.tok", stdout=True)
    assert quick == full and quick[0] == 0 and quick[2] == ""
    assert '"roots": [\n  "d/x.tok"\n ]' in quick[1] and '"base": "d"' in quick[1]


def test_what_is_not_plain_is_left_to_the_full_command(tmp_path, monkeypatch):
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * 10)
    (tmp_path / "link.bin").symlink_to(f)
    (tmp_path / "rows.jsonl").write_text('{"a": 1}\n')
    os.mkfifo(tmp_path / "pipe")
    out = str(tmp_path / "m.json")
    for args in ([str(tmp_path / "link.bin")],          # a link: the full command checks where it leads
                 [str(tmp_path / "rows.jsonl")],        # a format whose structure the manifest records
                 [str(tmp_path / "pipe")],              # a FIFO: refused by the full command, never opened
                 [str(tmp_path)],                       # a folder
                 [str(tmp_path / "missing.bin")],       # not there: the full command says so
                 [str(f), str(f)],                      # several paths
                 ["--sample", str(f)],                  # any other option
                 [str(f), "-o", str(tmp_path / "m.html")],  # an output the command refuses
                 [str(f), "-o", "json=" + out],
                 [str(f), "-o", str(f)],                # the manifest would overwrite its file
                 ["s3://bucket/a.bin"],
                 [str(f), "-o"]):
        assert quickprint.run(args) is None, args
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert quickprint.run([str(f), "-o", out]) is None  # progress is drawn: the full command draws it
    monkeypatch.setenv("CI", "true")
    assert quickprint.run([str(f), "-o", out]) == 0


def test_the_refusals_are_the_full_commands(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    code, out, err = run_cli("data", "fingerprint", str(tmp_path / "pipe"), "-o", str(tmp_path / "m.json"))
    assert code == 2 and "is a FIFO (named pipe)" in err and "Traceback" not in err
    code, out, err = run_cli("data", "fingerprint", str(tmp_path / "nothing.bin"))
    assert code == 2 and "no such file or directory" in err


def test_a_plain_fingerprint_imports_neither_the_model_nor_the_readers(tmp_path):
    f = tmp_path / "w.bin"
    f.write_bytes(b"w" * 100)
    probe = ("import sys, runpy; sys.argv = ['scriptdiff', 'data', 'fingerprint', sys.argv[1], '-o', sys.argv[2]]\n"
             "try:\n    runpy.run_module('scriptdiff', run_name='__main__')\nexcept SystemExit as e:\n"
             "    assert e.code == 0, e.code\n"
             "print(' '.join(sorted(m for m in sys.modules if m.startswith(('scriptdiff', 'dataclasses', "
             "'concurrent')))))")
    env = dict(os.environ, PYTHONPATH=str(ROOT), CI="true")
    done = subprocess.run([sys.executable, "-c", probe, str(f), str(tmp_path / "m.json")], capture_output=True,
                          text=True, env=env, timeout=60)
    loaded = set(done.stdout.split())
    assert done.returncode == 0, done.stderr
    assert {"scriptdiff.commands.quickprint", "scriptdiff.checks.wholehash", "scriptdiff.checks.manifest"} <= loaded
    assert not loaded & {"scriptdiff.model", "scriptdiff.inputs.sources", "scriptdiff.inputs.storage",
                         "scriptdiff.checks.dataset", "scriptdiff.commands.common", "dataclasses",
                         "concurrent.futures"}, loaded

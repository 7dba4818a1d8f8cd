"""Hostile input to the shared loaders (issue 12): nesting bombs in every JSON input, YAML
alias bombs, huge values in reports, poisoned cache entries and terminal escapes.

Every case asserts the exact message, naming the file, and that the rest still works."""
from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from scriptdiff.inputs import cache
from scriptdiff.run import engine

DEEP = "[" * 5000 + "]" * 5000
TOO_DEEP = "nested too deeply (> 200 levels)"


@pytest.fixture
def no_hang():
    """A case that would block (a FIFO opened for reading) fails instead of hanging the suite."""
    def alarm(*_):
        raise TimeoutError("blocked: a special file was opened")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def one_line_errors(err: str) -> list[str]:
    lines = [ln for ln in err.splitlines() if ln]
    assert all("internal error" not in ln and "Traceback" not in ln and "RecursionError" not in ln for ln in lines)
    return sorted(set(lines))


# ------------------------------------------------------------------ 1. nesting, everywhere

@pytest.mark.parametrize("name,content,args,message", [
    ("deep.safetensors", None, ("weights", "{p}", "{p}"),
     "deep.safetensors: not a safetensors file: the header is not JSON: " + TOO_DEEP),
    ("manifest.json", '{"scriptdiff_manifest": 1, "files": ' + DEEP + "}", ("data", "{p}", "{p}"),
     "{p}: not valid JSON: " + TOO_DEEP),
    ("weights.json", '{"scriptdiff_weights": 1, "tensors": ' + DEEP + "}", ("weights", "{p}", "{p}"),
     "{p}: not valid JSON: " + TOO_DEEP),
    ("model.safetensors.index.json", '{"weight_map": ' + DEEP + "}", ("weights", "{d}", "{d}"),
     "{p}: not a readable safetensors index: " + TOO_DEEP),
])
def test_nested_json_input_is_one_line_naming_the_file(tmp_path, monkeypatch, cli, name, content, args, message):
    monkeypatch.chdir(tmp_path)
    d = Path("ck")
    d.mkdir()
    p = d / name
    if content is None:  # a safetensors file whose header is the bomb
        header = ('{"a": ' + DEEP + "}").encode()
        p.write_bytes(struct.pack("<Q", len(header)) + header)
    else:
        p.write_text(content)
    code, _, err = cli(*(a.format(p=p, d=d) for a in args))
    assert code == 2
    assert one_line_errors(err) == ["scriptdiff: " + message.format(p=p)]


def test_nested_map_file_baseline_and_toml_config(tmp_path, cli):
    (tmp_path / "deep.json").write_text(DEEP)
    (tmp_path / "g.yaml").write_text("lr: 0.001\n")
    (tmp_path / "n.yaml").write_text("lr: 0.002\n")
    from safetensors.numpy import save_file
    import numpy as np

    save_file({"w": np.ones(2, dtype=np.float32)}, str(tmp_path / "w.safetensors"))
    code, _, err = cli("weights", str(tmp_path / "w.safetensors"), str(tmp_path / "w.safetensors"),
                       "--map-file", str(tmp_path / "deep.json"))
    assert (code, one_line_errors(err)) == (2, [f"scriptdiff: {tmp_path / 'deep.json'}: not a readable JSON name map: "
                                               f"{TOO_DEEP}"])
    code, _, err = cli("diff", str(tmp_path / "g.yaml"), str(tmp_path / "n.yaml"), "--baseline",
                       str(tmp_path / "deep.json"))
    assert (code, one_line_errors(err)) == (2, [f"scriptdiff: {tmp_path / 'deep.json'}: not a JSON baseline: {TOO_DEEP}"])
    toml = tmp_path / "scriptdiff.toml"
    toml.write_text("x = " + DEEP + "\n")
    code, _, err = cli("check", "--config", str(toml))
    assert (code, one_line_errors(err)) == (2, [f"scriptdiff: {toml}: not valid TOML: {TOO_DEEP}"])


def test_nested_toml_and_json_configs_leave_the_other_inputs_compared(tmp_path, cli):
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    (tmp_path / "g" / "a.toml").write_text("lr = 1\n")
    (tmp_path / "n" / "a.toml").write_text("lr = " + DEEP + "\n")
    (tmp_path / "g" / "b.json").write_text('{"seed": 1}')
    (tmp_path / "n" / "b.json").write_text('{"seed": 2}')
    code, out, err = cli("diff", str(tmp_path / "g"), str(tmp_path / "n"), "-f", "json")
    doc = json.loads(out)
    assert [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"]) for f in doc["findings"]
            if f["key"] == "seed"] == [("SD207", "seed", 1, 2)]
    assert doc["errors"] == [{"path": str(tmp_path / "n" / "a.toml"), "message": f"not valid TOML: {TOO_DEEP}; not compared "
                                                                  "(1 setting(s) of the other side could not be "
                                                                  "compared: lr)"}]
    assert code == 1 and "internal error" not in err


def test_loads_depth_check_counts_only_real_brackets():
    from scriptdiff.inputs.jsonload import JSONError, check_depth, loads

    assert loads('["' + "[" * 1000 + '"]') == ["[" * 1000]  # brackets inside a string
    assert loads("[" * 200 + "]" * 200) is not None  # exactly the limit
    with pytest.raises(JSONError, match=r"^nested too deeply \(> 200 levels\)$"):
        loads("[" * 201 + "]" * 201)
    with pytest.raises(JSONError, match=r"^line 2: Expecting value$"):
        loads('[1,\n ]' + "[]" * 300)
    check_depth("[" * 300 + "}" * 300)  # mismatched: left to the decoder, not "too deep"


# ------------------------------------------------------------------ 2. YAML alias bombs

LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))


def test_billion_laughs_is_refused_under_a_memory_cap(tmp_path):
    """9**9 strings from 400 bytes: refused before anything is built. Run under a 1 GB
    address-space cap, so a regression fails with MemoryError instead of eating the machine."""
    (tmp_path / "g.yaml").write_text("lr: 0.001\n")
    (tmp_path / "n.yaml").write_text(LAUGHS + "lr: 0.002\n")
    guard = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
             "from scriptdiff.cli import main; sys.exit(main(sys.argv[1:]))")
    p = subprocess.run([sys.executable, "-c", guard, "diff", str(tmp_path / "g.yaml"), str(tmp_path / "n.yaml"),
                        "--no-cache", "-f", "json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr == (f"scriptdiff: {tmp_path / 'n.yaml'}: not valid YAML: line 1: aliases expand beyond 100,176 nodes "
                        f"(a billion-laughs file?); not compared (1 setting(s) of the other side could not be "
                        f"compared: lr)\n")


def test_aliases_within_the_budget_and_merge_keys_still_expand():
    from scriptdiff.inputs.yamlload import YAMLError, load

    data, lines = load("base: &b {x: 1, y: [1, 2]}\nd: {<<: *b, z: 3}\nl: [*b, *b]\n")
    assert data == {"base": {"x": 1, "y": [1, 2]}, "d": {"x": 1, "y": [1, 2], "z": 3},
                    "l": [{"x": 1, "y": [1, 2]}, {"x": 1, "y": [1, 2]}]}
    assert lines[("d", "z")] == 2 and lines[("l",)] == 3
    with pytest.raises(YAMLError, match="an anchor contains an alias to itself"):
        load("a: &a [1, *a]\n")


# ------------------------------------------------------------------ 3. huge values in reports

def _big_pair(tmp_path, n=1_000_000):
    body = "1," * (n - 1)
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    (tmp_path / "g" / "cfg.json").write_text('{"data": [' + body + "1]}\n")
    (tmp_path / "n" / "cfg.json").write_text('{"data": [' + body + "2]}\n")
    return str(tmp_path / "g" / "cfg.json"), str(tmp_path / "n" / "cfg.json")


def test_a_large_json_list_is_cut_in_text_and_json_and_whole_with_full_values(tmp_path, cli):
    """600 KB here (above budget.JSON_EAGER: the C-decoder path); 40 MB in
    benchmarks/bench_hostile_loaders.py."""
    n_items = 300_000
    g, n = _big_pair(tmp_path, n_items)
    code, out, _ = cli("diff", g, n, "--no-cache", "--max-bytes", "2000000")
    assert code == 1 and len(out) < 3000
    head = "[" + ", ".join(["1"] * 20) + ", … (299,980 more items)]"
    assert f"    GPU: {head}  at {g}:1" in out.splitlines()
    assert f"    NPU: {head}  at {n}:1" in out.splitlines()
    assert "… (599,711 more characters)" in out  # the one-line source (600,011 characters), cut

    code, out, _ = cli("diff", g, n, "--no-cache", "--max-bytes", "2000000", "-f", "json")
    (f,) = json.loads(out)["findings"]
    assert (f["rule"], f["key"], f["gpu"]["value"], f["gpu"]["value_truncated"]) == \
        ("SD220", "data", [1] * 20, {"total_items": n_items})
    assert f["npu"]["source_truncated"] == {"total_characters": 600_011} and len(f["npu"]["source"]) == 300
    # the message names the values briefly at the source (compare.show), so it needs no cut
    assert "message_truncated" not in f and "(299,980 more items)" in f["message"] and len(f["message"]) < 400
    assert len(out) < 6000

    code, out, _ = cli("diff", g, n, "--no-cache", "--max-bytes", "2000000", "-f", "json", "--full-values")
    (f,) = json.loads(out)["findings"]
    assert len(f["npu"]["value"]) == n_items and f["npu"]["value"][-1] == 2
    assert "value_truncated" not in f["npu"] and "message_truncated" not in f


def test_large_json_lines_are_found_on_demand():
    from scriptdiff.budget import JSON_EAGER as EAGER_LIMIT
    from scriptdiff.inputs.jsonload import LazyLines, load_json

    text = '{\n "big": [' + "1," * EAGER_LIMIT + '1],\n "opt": {\n  "lr": 0.1,\n  "betas": [0.9,\n 0.95]}\n}\n'
    data, lines = load_json(text)
    assert isinstance(lines, LazyLines) and data["opt"] == {"lr": 0.1, "betas": [0.9, 0.95]}
    assert (lines[("big",)], lines[("opt",)], lines[("opt", "lr")], lines[("opt", "betas", 1)]) == (2, 3, 4, 6)
    assert lines.get(("nope",)) is None and ("opt", "lr") in lines


def test_every_writer_cuts_values(tmp_path, cli):
    g, n = _big_pair(tmp_path, 5000)
    for fmt in ("markdown", "github", "sarif"):
        code, out, _ = cli("diff", g, n, "--no-cache", "-f", fmt)
        assert code == 1 and "… (4,980 more items)" in out, fmt
        assert "1, " * 150 not in out and "1," * 300 not in out, fmt  # neither the value nor the source line


# ------------------------------------------------------------------ 4. a poisoned cache

def _cached_pair(tmp_path, monkeypatch, cli):
    monkeypatch.setenv("SCRIPTDIFF_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "g.yaml").write_text("lr: 0.001\n")
    (tmp_path / "n.yaml").write_text("lr: 0.002\n")
    args = ("diff", str(tmp_path / "g.yaml"), str(tmp_path / "n.yaml"), "-f", "json")
    engine._MEMO.clear()
    code, out, _ = cli(*args)
    assert code == 1
    entries = sorted((tmp_path / "cache").rglob("*.json"))
    assert len(entries) == 2  # one extract per side (YAML has no structural diff)
    return args, entries, out


def _findings(out):
    return [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"]) for f in json.loads(out)["findings"]]


def _forge(path: Path, payload: bytes, key: str | None = None):
    k = key or path.stem
    header = json.dumps({"scriptdiff_cache": 1, "key": k, "digest": cache.digest(k, payload)}).encode()
    path.write_bytes(header + b"\n" + payload)


EMPTY = {"facts": [], "errors": [], "masked": [], "frameworks": [], "references": [], "findings": [], "unread": [],
         "understood": True, "dialects": [], "notes": [], "sourced": [], "command_line": None, "launches": [],
         "probes": [], "hides": [], "unknowns": []}


@pytest.mark.parametrize("poison", ["nested", "fifo", "dev-zero", "wrong-types", "empty-plain", "empty-bad-digest",
                                    "copied", "other-secret", "folder-is-fifo", "folder-is-file"])
def test_poisoned_cache_entries_are_recomputed(tmp_path, monkeypatch, cli, no_hang, poison):
    args, entries, clean = _cached_pair(tmp_path, monkeypatch, cli)
    expected = [("SD202", "lr", 0.001, 0.002)]
    assert _findings(clean) == expected
    for e in entries:
        if poison == "nested":  # a valid digest, so the depth check is what refuses it
            _forge(e, ('{"facts": ' + DEEP + "}").encode())
        elif poison == "fifo":
            e.unlink()
            os.mkfifo(e)
        elif poison == "dev-zero":
            e.unlink()
            e.symlink_to("/dev/zero")
        elif poison == "wrong-types":
            _forge(e, json.dumps({**EMPTY, "facts": [["lr", 1.0, "hyperparameters", None, "1", "", "explicit",
                                                      None, 20, None, {}]]}).encode())
        elif poison == "empty-plain":  # the old format: what hid real findings and exited 0
            e.write_text(json.dumps(EMPTY))
        elif poison == "empty-bad-digest":
            e.write_text(json.dumps({"scriptdiff_cache": 1, "key": e.stem, "digest": "0" * 64}) + "\n"
                         + json.dumps(EMPTY))
        elif poison == "copied":  # a genuine entry, under the other side's key
            pass
        elif poison == "other-secret":  # well-formed and empty, signed by someone else's key
            monkeypatch.setenv("SCRIPTDIFF_CACHE_SECRET", "an attacker's secret")
            _forge(e, json.dumps(EMPTY).encode())
            monkeypatch.setenv("SCRIPTDIFF_CACHE_SECRET", "scriptdiff test runs")
    if poison == "copied":
        a, b = entries
        a_bytes = a.read_bytes()
        a.write_bytes(b.read_bytes())
        b.write_bytes(a_bytes)
    if poison.startswith("folder-is"):
        folder = tmp_path / "poisoned-folder"
        os.mkfifo(folder) if poison == "folder-is-fifo" else folder.write_text("x")
        monkeypatch.setenv("SCRIPTDIFF_CACHE_DIR", str(folder))
    engine._MEMO.clear()
    code, out, err = cli(*args)
    assert (code, _findings(out), err) == (1, expected, "")
    if not poison.startswith("folder-is"):  # the entries were rewritten and now hit
        for e in entries:
            assert cache.get(e.stem) is not None


def test_entries_are_bound_to_the_per_user_key_file(tmp_path, monkeypatch):
    monkeypatch.delenv("SCRIPTDIFF_CACHE_SECRET")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SCRIPTDIFF_CACHE_DIR", str(tmp_path / "cache"))
    k = "ab" + "1" * 38
    cache.put(k, {"x": 1})
    key_file = tmp_path / "config" / "scriptdiff" / "cache.key"
    assert key_file.stat().st_mode & 0o777 == 0o600 and len(key_file.read_text().strip()) == 64
    assert cache.get(k) == {"x": 1}
    cache._user_secret.cache_clear()
    key_file.write_text("f" * 64 + "\n")  # another key: the entry no longer verifies
    assert cache.get(k) is None
    cache._user_secret.cache_clear()


def test_a_validation_failure_names_the_field():
    with pytest.raises(cache.ShapeError, match=r"^extract\.facts\[0\]\.line: str where int/NoneType belongs$"):
        cache.load_extract({**EMPTY, "facts": [["lr", 1.0, "hyperparameters", None, "1", "", "explicit", None, 20,
                                                None, {}]]})
    with pytest.raises(cache.ShapeError, match=r"^pair: not a mapping of errors, findings, masked$"):
        cache.load_pair({"findings": []})


# ------------------------------------------------------------------ 5. terminal escapes

def test_escape_sequences_in_scanned_files_never_reach_text_output(tmp_path, cli):
    """A comment (title, clear screen, red) in a launch script's source line, and a value
    holding ESC (YAML's \\e), in every text format, the hparams table and the JSON."""
    for side in ("g", "n"):
        (tmp_path / side).mkdir()
    (tmp_path / "g" / "run.sh").write_text("python train.py --lr 0.001\n")
    (tmp_path / "n" / "run.sh").write_text("python train.py --lr 0.002  # \x1b]0;pwned\x07\x1b[2J\x1b[31m\n")
    (tmp_path / "g" / "c.yaml").write_text("name: plain\n")
    (tmp_path / "n" / "c.yaml").write_text('name: "x\\e[2Jy"\n')
    g, n = str(tmp_path / "g"), str(tmp_path / "n")
    comment = "# \\x1b]0;pwned\\x07\\x1b[2J\\x1b[31m"
    for fmt in ("text", "markdown", "github"):
        code, out, err = cli("diff", g, n, "-f", fmt)
        assert code == 1
        assert "\x1b" not in out and "\x07" not in out and "\x1b" not in err, fmt
        assert "x\\x1b[2Jy" in out, fmt  # markdown: the value in a code span, as written
    code, out, _ = cli("diff", g, n)  # text shows the source lines
    assert f"          1 | python train.py --lr 0.002  {comment}" in out.splitlines()
    assert "    NPU: x\\x1b[2Jy  at " + str(tmp_path / "n" / "c.yaml") + ":1" in out.splitlines()
    code, out, _ = cli("hparams", f"{g}/run.sh", f"{g}/c.yaml", "vs", f"{n}/run.sh", f"{n}/c.yaml")
    assert code == 1 and "\x1b" not in out and "x\\x1b[2Jy" in out
    code, out, _ = cli("diff", g, n, "-f", "json")
    assert "\x1b" not in out and "\\u001b]0;pwned\\u0007" in out  # JSON keeps the data, escaped
    assert {f["npu"]["value"] for f in json.loads(out)["findings"]} == {0.002, "x\x1b[2Jy"}


def test_safe_escapes_controls_but_keeps_text():
    """Tabs stay; a line break from an input is shown, never taken (issue 32: no forged line)."""
    from scriptdiff.report.values import safe

    assert safe("a\tb\nc") == "a\tb\\nc"
    assert safe("\x1b[31mred\r\x9b2J\u202eevil") == "\\x1b[31mred\\r\\x9b2J\\u202eevil"

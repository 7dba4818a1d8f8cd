"""Issue 39, programs by shape: a command line a Python launcher writes as strings is read as
options (lang/python/cmdtext.py), each at the line of the string part that writes it; the
strings are not compared as code. A runner named for the NPU (`submit_npu`) with the same
arguments is the GPU runner's NPU version. Made-up names."""
from __future__ import annotations

from conftest import script_pair

LAUNCHER = '''import os
from orbitkit.jobs import submit{suffix}

MODEL = "tiny-7b"
STEPS = 500


def main():
    data_args = (
        f"--model-path /models/{{MODEL}} "
        "--seq-len 4096 "
    )
    {name} = (
        "--lr {lr} "
        f"--train-steps {{STEPS}} "
        "--use-ema "
    )
    all_args = f"{{data_args}} {{{name}}}"
    submit{suffix}(all_args{extra})


if __name__ == "__main__":
    main()
'''


def make(lr="1e-5", name="optim_args", suffix="", extra=""):
    return LAUNCHER.format(lr=lr, name=name, suffix=suffix, extra=extra)


def rows(rep):
    return sorted(((f.rule, str(f.severity), f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                   f.gpu.line if f.gpu else None, f.npu.line if f.npu else None) for f in rep.findings), key=repr)


def test_the_options_a_launcher_writes_are_compared_under_their_keys(tmp_path):
    rep = script_pair(tmp_path, make(), make(lr="3e-5"), name="launch.py")
    assert rows(rep) == [("SD202", "error", "lr", 1e-05, 3e-05, 14, 14)]


def test_the_same_options_held_by_other_names_and_a_runner_named_for_the_npu_are_the_port(tmp_path):
    rep = script_pair(tmp_path, make(), make(name="train_args", suffix="_npu"), name="launch.py")
    assert [r for r in rows(rep) if r[1] != "info"] == []
    assert ("SD023", "info", "port:device-named-call", "submit(all_args)", "submit_npu(all_args)", 19, 19) in rows(rep)
    assert ("SD031", 19, 19) in {(m.rule, m.gpu.line, m.npu.line) for m in rep.masked if m.gpu and m.npu}
    # another runner (not the same name with the NPU's word) is a difference
    other = script_pair(tmp_path / "o", make(), make(suffix="_v2"), name="launch.py")
    assert [r for r in rows(other) if r[1] != "info"] == [
        ("SD102", "warning", "code:launch.py:main", "submit(all_args)",
         "submit_v2(all_args)", 19, 19)]


def test_an_option_on_one_side_only_and_a_placeholder_not_known_are_said(tmp_path):
    npu = make().replace('        "--use-ema "\n', '        "--use-ema "\n        "--grad-clip 0.5 "\n')
    rep = script_pair(tmp_path, make(), npu, name="launch.py")
    assert rows(rep) == [("SD208", "error", "clip_grad", None, 0.5, None, 17)]
    # a placeholder the file does not define stays unknown: said as depending on it, never a value
    gpu = make().replace("{STEPS}", "{os.environ['STEPS']}")
    rep = script_pair(tmp_path / "u", gpu, make(), name="launch.py")
    [f] = [f for f in rep.findings if f.key == "train_iters"]
    assert (f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) == ("$STEPS", 500, 15, 15)


def test_one_option_in_a_string_is_not_a_command_line(tmp_path):
    """A file with no string of two options or more writes no command line: its strings are code."""
    gpu = 'FLAG = "--fast"\n\n\ndef run(cmd):\n    return cmd + FLAG\n'
    rep = script_pair(tmp_path, gpu, gpu.replace("--fast", "--slow"), name="flags.py")
    assert [(f.rule, f.key, f.gpu.line, f.npu.line) for f in rep.findings] == [("SD102", "code:flags.py:<module>", 1, 1)]


def test_a_token_in_the_command_line_is_never_written(tmp_path, cli):
    """`--hf-token hf_...` in a launcher's string: the option compared, its value and its line's
    excerpt withheld in every format."""
    py = 'ARGS = (\n    "--lr 1e-5 "\n    "--hf-token {tok} "\n)\n\n\ndef main(run):\n    run(ARGS)\n'
    gtok, ntok = "hf_" + "q7Rk2LmZ9vXw4TyB8nHc3DpF6gJs", "hf_" + "u1Ea5WoQ0iKz7MbN2xVr9CtY4lPh"
    for side, tok in (("gpu", gtok), ("npu", ntok)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "launch.py").write_text(py.format(tok=tok))
    for fmt in ("text", "json", "sarif", "markdown"):
        code, out, err = cli("diff", str(tmp_path / "gpu"), str(tmp_path / "npu"), "--no-cache", "-f", fmt)
        assert code == 1 and "hf_token" in out and gtok not in out + err and ntok not in out + err, fmt

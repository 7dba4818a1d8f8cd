"""A launch flag the program does not define (scriptdiff/run/launchargs.py, lang/python/cmdline.py).

Reproduction 1 of issue 25: `as_filed(tmp)` is the bundled example as the issue found it:
train.py sets SEED = 42 / 1234 and defines no --seed, --use-flash-attn, --min-lr,
--global-batch-size, --bf16 or --deepspeed, which its launch scripts pass (the example now
defines the options it is given and seeds from its constant only; this rebuilds the old state
from it, so the two cannot drift apart). parse_args stops such a run ("unrecognized
arguments"): each flag is an SD161 error of its own, sets nothing, and the program's own values
are compared (the seed drift, the attention kernel its code asks for).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scriptdiff import api
from scriptdiff.run.launchargs import lookup
from scriptdiff.model import Options
from test_scopes import entry_points

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "fixtures" / "example"
# what the example's train.py gained so that it defines the options its launch scripts pass
DEFINED = """    # set by the launch script; the schedule and the attention kernel are fixed in the code below
    parser.add_argument("--global-batch-size", type=int, default=64)
    parser.add_argument("--min-lr", type=float, default=0.0)
    parser.add_argument("--use-flash-attn", action="store_true")
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--deepspeed", default=None, help="DeepSpeed config (JSON)")
"""


# what each masked port edit keeps (issue 43: SD023, SD027) is tests/test_fidelity.py's; not these tests
PORT_NOTES = ["SD023", "SD027"]


def as_filed(tmp_path: Path) -> Path:
    """fixtures/example/{gpu,npu} as issue 25 found them: train.py without the options above,
    the launch scripts passing --seed 1234 after --min-lr."""
    out = tmp_path / "as_filed"
    for side in ("gpu", "npu"):
        (out / side).mkdir(parents=True)
        shutil.copy(EX / side / "ds_config.json", out / side)
        train = (EX / side / "train.py").read_text()
        assert DEFINED in train
        (out / side / "train.py").write_text(train.replace(DEFINED, ""))
        launch = (EX / side / "pretrain.sh").read_text().splitlines(keepends=True)
        at = next(i for i, line in enumerate(launch) if "--min-lr" in line) + 1
        (out / side / "pretrain.sh").write_text("".join(launch[:at] + ["    --seed 1234 \\\n"] + launch[at:]))
    return out


@pytest.fixture
def UF(tmp_path) -> Path:
    return as_filed(tmp_path)


def opts(**kw) -> Options:
    return Options(use_cache=False, **{"ignore": PORT_NOTES, **kw})


def rows(report) -> set[tuple]:
    """(rule, key, GPU value, NPU value, GPU file, GPU line, NPU file, NPU line) of each finding."""
    out = set()
    for f in report.findings:
        g, n = f.gpu, f.npu
        out.add((f.rule, f.key, g.value if g else None, n.value if n else None,
                 g.path.replace(":", "/").rsplit("/", 1)[-1] if g and g.path else None, g.line if g else None,
                 n.path.replace(":", "/").rsplit("/", 1)[-1] if n and n.path else None, n.line if n else None))
    return out


UNDEFINED = {
    ("SD161", "flag:--global-batch-size", "--global-batch-size 64", "--global-batch-size 64",
     "pretrain.sh", 8, "pretrain.sh", 9),
    ("SD161", "flag:--min-lr", "--min-lr 1e-6", "--min-lr 1e-06", "pretrain.sh", 10, "pretrain.sh", 11),
    ("SD161", "flag:--seed", "--seed 1234", "--seed 1234", "pretrain.sh", 11, "pretrain.sh", 12),
    ("SD161", "flag:--use-flash-attn", "--use-flash-attn", None, "pretrain.sh", 12, None, None),
    ("SD161", "flag:--bf16", "--bf16", "--bf16", "pretrain.sh", 13, "pretrain.sh", 13),
    ("SD161", "flag:--deepspeed", "--deepspeed ds_config.json", "--deepspeed ds_config.json",
     "pretrain.sh", 14, "pretrain.sh", 14),
}
# what the programs themselves set, compared once the flags set nothing
OWN = {
    ("SD207", "seed", 42, 1234, "train.py", 19, "train.py", 21),
    ("SD201", "use_flash_attn", True, False, "train.py", 78, "train.py", 80),
    ("SD206", "adam_beta2", 0.95, 0.999, "train.py", 94, "train.py", 96),
    ("SD302", "env:source set_env.sh", None, "/usr/local/Ascend/ascend-toolkit/set_env.sh", None, None,
     "pretrain.sh", 3),
}


def test_the_flags_train_py_does_not_define_are_findings_and_its_own_values_are_compared(cli, UF):
    report = api.diff(str(UF / "gpu"), str(UF / "npu"), opts())
    assert rows(report) == UNDEFINED | OWN
    assert report.exit_code() == 1
    seed = next(f for f in report.findings if f.key == "flag:--seed")
    assert seed.severity == "error" and seed.check == "script"
    assert seed.message == ('train.py defines no option --seed on GPU and NPU: argparse parse_args (GPU train.py:56, '
                            'NPU train.py:58) stops the run with "unrecognized arguments"; the option sets nothing, '
                            "and the program's own value is compared")
    assert seed.gpu.source == "--seed 1234 \\"
    # the launch scripts' accounts say what was checked against what
    notes = {a.path.rsplit("/", 2)[-2]: a.notes for a in report.inputs}
    assert notes == {"gpu": ["line 6: the options passed to train.py were checked against its parser "
                             "(argparse at train.py:43)"],
                     "npu": ["line 7: the options passed to train.py were checked against its parser "
                             "(argparse at train.py:45)"]}
    code, out, _err = cli("diff", str(UF / "gpu"), str(UF / "npu"), "--no-cache", "--ignore", ",".join(PORT_NOTES))
    assert code == 1 and "9 error(s), 0 warning(s), 1 info" in out


@pytest.mark.skipif(not (shutil.which("git") and shutil.which("diff") and Path("/proc/self/cmdline").exists()),
                    reason="needs git, diff and /proc (the calling git's revisions)")
def test_every_entry_point_gives_the_undefined_flags(tmp_path, cli, monkeypatch, UF):
    """As test_scopes runs the bundled example, the example as filed through every entry point:
    folders, check, the launch scripts, --git, REV:gpu REV:npu, review, the pre-commit file
    list, git's external diff and difftool."""
    (tmp_path / "ep").mkdir()
    found = entry_points(tmp_path / "ep", cli, monkeypatch, UF)
    expected = {(r[0], r[1], repr(r[2]), repr(r[3]), r[4], r[5], r[6], r[7]) for r in UNDEFINED | OWN}
    for name, got in found.items():
        if name not in ("external diff: train.py", "two programs"):  # the programs alone: no launch script
            assert got == expected, name
    # the program alone is compared as code: the attention kernel and the seed its code sets
    assert {r[:2] for r in found["two programs"] if r[0].startswith("SD2")} == {
        ("SD201", "use_flash_attn"), ("SD206", "adam_beta2"), ("SD207", "seed")}


# --- programs written for the case ---------------------------------------------------------------

ARGPARSE = """import argparse

SEED = {seed}


def parse_args():
    parser = argparse.ArgumentParser({ctor})
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--lr-warmup-iters", type=int, default=100)
    parser.add_argument("--micro-batch-size", type=int, default=4)
    return parser.{parse}()


def main():
    args = parse_args()
    torch.manual_seed(SEED)
"""


def pair(tmp_path: Path, gpu_flags: str, npu_flags: str, program: str = ARGPARSE, seed=(42, 42), **fmt) -> tuple[Path, Path]:
    g, n = tmp_path / "gpu", tmp_path / "npu"
    for d, flags, s in ((g, gpu_flags, seed[0]), (n, npu_flags, seed[1])):
        d.mkdir(parents=True)
        (d / "run.sh").write_text(f"torchrun --nproc_per_node 8 train.py {flags}\n")
        text = program.format(seed=s, **{"ctor": "", "parse": "parse_args", **fmt}) if program is ARGPARSE else program
        (d / "train.py").write_text(text)
    return g / "run.sh", n / "run.sh"


def found(g: Path, n: Path, **kw) -> tuple[set, int]:
    report = api.diff(str(g), str(n), opts(**kw))
    return rows(report), report.exit_code()


def test_parse_known_args_ignores_the_flag_a_warning_and_the_constant_counts(tmp_path):
    g, n = pair(tmp_path, "--lr 1e-4", "--lr 1e-4 --seed 1234", seed=(42, 42), parse="parse_known_args")
    assert found(g, n) == ({("SD162", "flag:--seed", None, "--seed 1234", None, None, "run.sh", 1)}, 1)
    # the seed the NPU launch script believes it sets is not the program's: 42 on both sides
    g, n = pair(tmp_path / "b", "--lr 1e-4 --seed 1234", "--lr 1e-4 --seed 1234", seed=(42, 7),
                parse="parse_known_args")
    assert found(g, n) == ({("SD162", "flag:--seed", "--seed 1234", "--seed 1234", "run.sh", 1, "run.sh", 1),
                            ("SD207", "seed", 42, 7, "train.py", 3, "train.py", 3)}, 1)


def test_parse_args_stops_on_the_flag(tmp_path):
    g, n = pair(tmp_path, "--lr 1e-4", "--lr 1e-4 --use-flash-attn")
    got, code = found(g, n)
    assert (got, code) == ({("SD161", "flag:--use-flash-attn", None, "--use-flash-attn", None, None, "run.sh", 1)}, 1)


def test_a_faithful_port_whose_flags_are_all_defined_is_silent(tmp_path, cli):
    g, n = pair(tmp_path, "--lr 1e-4 --micro-batch-size 2", "--lr 1.0e-4 --micro-batch-size 2")
    assert found(g, n) == (set(), 0)
    code, out, _err = cli("diff", str(g), str(n), "--no-cache", "-f", "json")
    doc = json.loads(out)
    assert code == 0 and doc["findings"] == []
    assert [a["notes"] for a in doc["inputs"]] == [["line 1: the options passed to train.py were checked against "
                                                    "its parser (argparse at train.py:7)"]] * 2


def test_a_defined_flag_still_outranks_the_parser_default(tmp_path):
    g, n = pair(tmp_path, "--lr 1e-4", "--lr 2e-4")
    assert found(g, n) == ({("SD202", "lr", 0.0001, 0.0002, "run.sh", 1, "run.sh", 1)}, 1)


def test_abbreviations_are_argparse_s(tmp_path):
    # a unique prefix of a long option is that option (allow_abbrev is True by default)
    g, n = pair(tmp_path, "--lr 1e-4 --lr-warm 50", "--lr 1e-4 --lr-warm 50")
    assert found(g, n) == (set(), 0)
    # ... and sets that option: --micro 2 is --micro-batch-size 2, against the GPU program's default
    # a prefix of two options is refused: "ambiguous option", whatever the parse call
    g, n = pair(tmp_path / "b", "--lr 1e-4", "--lr 1e-4 --micro 2 --l 3", parse="parse_known_args")
    got, code = found(g, n)
    assert got == {("SD161", "flag:--l", None, "--l 3", None, None, "run.sh", 1),
                   ("SD203", "micro_batch_size", 4, 2, "train.py", 10, "run.sh", 1)} and code == 1
    msg = next(f.message for f in api.diff(str(g), str(n), opts()).findings if f.rule == "SD161")
    assert msg.startswith("--l is an abbreviation of several options of train.py on NPU (--lr, --lr-warmup-iters): "
                          "argparse parse_known_args (train.py:11) stops the run with \"ambiguous option\"")
    # allow_abbrev=False: a prefix is no option
    g, n = pair(tmp_path / "c", "--lr 1e-4", "--lr 1e-4 --lr-warm 50", ctor="allow_abbrev=False")
    assert found(g, n)[0] == {("SD161", "flag:--lr-warm", None, "--lr-warm 50", None, None, "run.sh", 1)}


def test_dest_store_false_and_boolean_optional_action(tmp_path):
    program = """import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--learning-rate", dest="lr", type=float, default=1e-5)
parser.add_argument("--no-bias", dest="bias", action="store_false")
parser.add_argument("--flash", action=argparse.BooleanOptionalAction, default=True)
group = parser.add_argument_group("data")
group.add_argument("--data", default="x")
args = parser.parse_args()
"""
    g, n = pair(tmp_path, "--learning-rate 1e-4 --no-bias --flash --data a", "--learning-rate 1e-4 --no-bias "
                "--no-flash --data a", program=program)
    got, _code = found(g, n)
    assert not any(r[0] in ("SD161", "SD162") for r in got), got


def test_hf_argument_parser_over_the_file_s_dataclasses(tmp_path):
    program = """from dataclasses import dataclass, field
from transformers import HfArgumentParser


@dataclass
class Args:
    learning_rate: float = 1e-5
    use_flash_attn: bool = True
    seed: int = field(default=42, metadata={"help": "seed"})


parser = HfArgumentParser((Args,))
(args,) = parser.parse_args_into_dataclasses()
"""
    # --learning-rate (dashes) and --no_use_flash_attn (a bool that defaults to True) are defined
    g, n = pair(tmp_path, "--learning_rate 1e-4 --no_use_flash_attn", "--learning-rate 1e-4 --no_use_flash_attn "
                "--warmup_steps 10", program=program)
    got, code = found(g, n)
    assert (got, code) == ({("SD161", "flag:--warmup_steps", None, "--warmup_steps 10", None, None, "run.sh", 1)}, 1)
    msg = next(f.message for f in api.diff(str(g), str(n), opts()).findings)
    assert "HfArgumentParser parse_args_into_dataclasses (train.py:13) stops the run with \"Some specified " \
           "arguments are not used by the HfArgumentParser\"" in msg
    # return_remaining_strings=True: left over, ignored
    g, n = pair(tmp_path / "b", "--learning_rate 1e-4", "--learning_rate 1e-4 --warmup_steps 10",
                program=program.replace("(args,) = parser.parse_args_into_dataclasses()",
                                        "args, _rest = parser.parse_args_into_dataclasses(return_remaining_strings=True)"))
    assert found(g, n)[0] == {("SD162", "flag:--warmup_steps", None, "--warmup_steps 10", None, None, "run.sh", 1)}


OUT_OF_VIEW = {
    "TrainingArguments": ("""from transformers import HfArgumentParser, TrainingArguments
parser = HfArgumentParser((TrainingArguments,))
(args,) = parser.parse_args_into_dataclasses()
""", "TrainingArguments is defined outside train.py (transformers)"),
    "deepspeed": ("""import argparse
import deepspeed
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1e-5)
parser = deepspeed.add_config_arguments(parser)
args = parser.parse_args()
""", "it hands its parser to deepspeed.add_config_arguments, out of view (train.py:5)"),
    "megatron": ("""from megatron.training import pretrain
from megatron.training.arguments import core_transformer_config_from_args


def add_args(parser):
    parser.add_argument("--my-flag", type=int, default=1)
    return parser


if __name__ == "__main__":
    pretrain(datasets_provider, model_provider, extra_args_provider=add_args)
""", "train.py shows no command-line parser"),
    "rest passed on": ("""import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1e-5)
args, rest = parser.parse_known_args()
main(args, rest)
""", "it hands the options it does not know (rest) on (train.py:4)"),
    "options in a loop": ("""import argparse
parser = argparse.ArgumentParser()
for name in ("lr", "seed"):
    parser.add_argument(f"--{name}", type=float)
args = parser.parse_args()
""", "an option's name is computed at run time (train.py:4)"),
    "subcommands": ("""import argparse
parser = argparse.ArgumentParser()
sub = parser.add_subparsers()
args = parser.parse_args()
""", "it has subcommands (train.py:3)"),
    "sys.argv rewritten": ("""import argparse
import sys
sys.argv = [a for a in sys.argv if not a.startswith("--local")]
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1e-5)
args = parser.parse_args()
""", "it rewrites sys.argv (train.py:3)"),
    "parser from a module": ("""from myproject.args import get_parser
args = get_parser().parse_args()
""", "it parses with a parser built outside train.py (train.py:2)"),
    # ms-swift's swift/cli/sft.py: a parser that peeks at one option, then the real one runs
    "a peek before the real parser": ("""def try_init_unsloth():
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument('--tuner_backend', type=str, default='peft')
    args, _ = parser.parse_known_args()


if __name__ == '__main__':
    try_init_unsloth()
    from swift.llm import sft_main
    sft_main()
""", "it takes 0 of the 2 options passed and leaves the rest to code out of view"),
    "a parse in a function never called": ("""import argparse


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-5)
    return parser.parse_args()


if __name__ == "__main__":
    from trainer import main
    main()
""", "its parser's parse call is not in train.py, or in a function it never calls"),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_VIEW))
def test_a_parser_not_whole_in_view_is_not_judged_and_the_flag_counts(tmp_path, case):
    program, why = OUT_OF_VIEW[case]
    g, n = pair(tmp_path, "--lr 1e-4 --seed 1", "--lr 1e-4 --seed 2", program=program)
    report = api.diff(str(g), str(n), opts())
    # nothing new: today's behaviour, the launch flag counts
    assert rows(report) == {("SD207", "seed", 1, 2, "run.sh", 1, "run.sh", 1)}
    assert [a.notes for a in report.inputs] == [[f"line 1: the options passed to train.py were not checked against "
                                                 f"its parser: {why}"]] * 2


def test_click_and_typer_commands(tmp_path):
    click_program = """import click


@click.command()
@click.option("--lr", type=float, default=1e-5)
@click.option("--flash/--no-flash", default=True)
def main(lr, flash):
    pass


if __name__ == "__main__":
    main()
"""
    g, n = pair(tmp_path, "--lr 1e-4 --no-flash", "--lr 1e-4 --no-flash --seed 3", program=click_program)
    got, code = found(g, n)
    assert (got, code) == ({("SD161", "flag:--seed", None, "--seed 3", None, None, "run.sh", 1)}, 1)
    assert "click (train.py:4) stops the run with \"No such option\"" in api.diff(str(g), str(n), opts()).findings[0].message
    # click takes no abbreviation
    g, n = pair(tmp_path / "b", "--lr 1e-4", "--lr 1e-4 --fla", program=click_program)
    assert found(g, n)[0] == {("SD161", "flag:--fla", None, "--fla", None, None, "run.sh", 1)}
    typer_program = """import typer


def main(lr: float = 1e-5, use_flash: bool = False, steps: int = typer.Option(10, "--train-steps")):
    pass


if __name__ == "__main__":
    typer.run(main)
"""
    g, n = pair(tmp_path / "c", "--lr 1e-4 --use-flash --train-steps 5", "--lr 1e-4 --no-use-flash --train-steps 5 "
                "--steps 5", program=typer_program)
    assert found(g, n)[0] >= {("SD161", "flag:--steps", None, "--steps 5", None, None, "run.sh", 1)}
    assert not any(r[0] == "SD161" and r[1] != "flag:--steps" for r in found(g, n)[0])


def test_a_secret_passed_to_a_program_that_does_not_take_it_is_withheld(tmp_path):
    token = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"
    g, n = pair(tmp_path, "--lr 1e-4", f"--lr 1e-4 --hf-token {token}")
    report = api.diff(str(g), str(n), opts())
    f = next(f for f in report.findings if f.rule == "SD161")
    assert token not in f.npu.value and token not in f.npu.source and "<withheld" in f.npu.value
    assert token not in json.dumps(report.to_json())


def test_a_config_named_by_an_undefined_flag_sets_nothing(tmp_path):
    program = """import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1e-5)
args, _ = parser.parse_known_args()
"""
    g, n = pair(tmp_path, "--lr 1e-4 --deepspeed ds.json", "--lr 1e-4 --deepspeed ds.json", program=program)
    (g.parent / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0}\n')
    (n.parent / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0}\n')
    # the program never reads ds.json: its micro batch size is no setting of the run
    assert found(g, n) == ({("SD162", "flag:--deepspeed", "--deepspeed ds.json", "--deepspeed ds.json", "run.sh", 1,
                             "run.sh", 1)}, 1)
    # defined: the config is the program's, and its difference is found
    (g.parent / "train.py").write_text(program.replace('default=1e-5)\n', 'default=1e-5)\nparser.add_argument('
                                                       '"--deepspeed")\n'))
    (n.parent / "train.py").write_text((g.parent / "train.py").read_text())
    assert found(g, n) == ({("SD203", "micro_batch_size", 2, 4, "ds.json", 1, "ds.json", 1)}, 1)


@pytest.mark.parametrize("name,expect", [("lr", ("exact", ["--lr"])), ("lr-w", ("prefix", ["--lr-warmup"])),
                                         ("lr-", ("ambiguous", ["--lr-decay", "--lr-warmup"])),
                                         ("seed", ("unknown", [])), ("learn", ("prefix", ["--learn-rate"]))])
def test_lookup_is_argparse_s(name, expect):
    cmd = {"abbrev": True, "options": [[["--lr"], "lr", 1], [["--lr-warmup"], "lr_warmup", 2],
                                       [["--lr-decay"], "lr_decay", 3], [["--learn_rate", "--learn-rate"], "x", 4]]}
    assert lookup(cmd, name) == expect
    assert lookup({**cmd, "abbrev": False}, name) == (expect if expect[0] == "exact" else ("unknown", []))


def test_the_command_line_and_the_launches_survive_the_cache(tmp_path):
    from scriptdiff.inputs import cache
    from scriptdiff.run.engine import extract
    from scriptdiff.model import SideContext
    from scriptdiff.inputs.sources import read_path

    g, _n = pair(tmp_path, "--lr 1e-4 --seed 3", "--lr 1e-4")
    ctx = SideContext(side="gpu", options=opts())
    program, launch = extract(read_path(g.parent / "train.py"), ctx), extract(read_path(g), ctx)
    assert program.command_line == {
        "kind": "argparse", "complete": True, "why": None, "line": 7, "parse": "parse_args", "parse_line": 11,
        "stops": True, "abbrev": True, "refusal": "unrecognized arguments",
        "options": [[["-h", "--help"], "help", 7], [["--lr"], "lr", 8], [["--lr-warmup-iters"], "lr_warmup_iters", 9],
                    [["--micro-batch-size"], "micro_batch_size", 10]]}
    assert launch.launches == [["train.py", 1, 0, [["lr", 1, "1e-4", "torchrun --nproc_per_node 8 train.py --lr 1e-4 --seed 3"],
                                                    ["seed", 1, "3", "torchrun --nproc_per_node 8 train.py --lr 1e-4 --seed 3"]]]]
    for ex in (program, launch):
        back = cache.load_extract(json.loads(json.dumps(cache.dump_extract(ex))))
        assert (back.command_line, back.launches) == (ex.command_line, ex.launches)
    bad = cache.dump_extract(program)
    bad["command_line"][9][1][0] = "--lr"  # option strings must be a list
    with pytest.raises(cache.ShapeError, match=r"^extract\.command_line\.options\[1\]\.strings: not a list$"):
        cache.load_extract(bad)

"""The one tokenizer of command-line options (scriptdiff/inputs/flags.py): every reader of a
command line (a program's options, a launcher's, an installer's, a wrapper's, git's) and of a
parser's declared option strings splits a word here."""
from __future__ import annotations

import pytest

from scriptdiff.inputs import flags
from scriptdiff.inputs.flags import END, Flag, Item


@pytest.mark.parametrize("word,want", [
    ("--lr", Flag("--lr", 2, "lr", None)),
    ("--lr=1e-4", Flag("--lr=1e-4", 2, "lr", "1e-4")),
    ("--lr=", Flag("--lr=", 2, "lr", "")),
    ("--url=a=b", Flag("--url=a=b", 2, "url", "a=b")),
    ("--lr-warmup-iters", Flag("--lr-warmup-iters", 2, "lr-warmup-iters", None)),
    ("-k", Flag("-k", 1, "k", None)),
    ("-k=v", Flag("-k=v", 1, "k", "v")),
    ("-rreq.txt", Flag("-rreq.txt", 1, "rreq.txt", None)),
    ("-1", Flag("-1", 1, "1", None)),
    ("---x", Flag("---x", 2, "-x", None)),
    ("-", None),  # standard input: an operand
    ("--", None),  # END
    ("train.py", None),
    ("a.b=c", None),
    ("", None),
])
def test_a_word_split(word, want):
    assert flags.split(word) == want


def test_what_a_flag_says():
    f = flags.split("--lr-warmup=0.1")
    assert (f.long, f.dest, f.option, f.value_at, f.text[f.value_at:]) == (True, "lr_warmup", "--lr-warmup", 12, "0.1")
    g = flags.split("--bf16")
    assert (g.option, g.value_at) == ("--bf16", 6)
    assert not flags.split("-e").long


def test_a_short_option_written_with_its_value():
    assert flags.split("-rreq.txt").joined({"r", "c"}) == Flag("-rreq.txt", 1, "r", "req.txt")
    assert flags.split("-rreq.txt").joined({"r"}).value_at == 2
    for word in ("-U", "-r", "-r=x.txt", "--requirement", "-Uq"):
        f = flags.split(word)
        assert f.joined({"r"}) is f


def test_dashed_words():
    assert [flags.dashed(w) for w in ("--x", "-x", "--", "-", "x", "")] == [True, True, True, False, False, False]


def test_scanning_a_command_line():
    words = ["--nproc_per_node", "8", "--standalone", "--rdzv=c10d", "-m", "pkg.train", "--", "--lr", "1"]
    got = list(flags.scan(words, 0, lambda f, nxt: f.name in ("nproc_per_node", "m")))
    assert got == [
        Item(0, flags.split("--nproc_per_node"), 1),
        Item(2, flags.split("--standalone")),
        Item(3, flags.split("--rdzv=c10d")),
        Item(4, flags.split("-m"), 5),
        Item(6, None, None, True),
        Item(7, None), Item(8, None),  # after END every word is an operand
    ]


def test_scanning_asks_only_for_a_value_it_can_take():
    asked = []

    def takes(f, nxt):
        asked.append((f.name, nxt))
        return True

    got = list(flags.scan(["x", "--a=1", "--b", "--c"], 1, takes))
    assert got == [Item(1, flags.split("--a=1")), Item(2, flags.split("--b"), 3)]
    assert asked == [("b", "--c")]  # --a has its value, --c has no next word
    assert list(flags.scan(["--c"], 0, takes)) == [Item(0, flags.split("--c"))]


def test_where_the_operands_start():
    assert flags.first_operand(["python", "-u", "-O", "train.py", "--lr", "1"], 1) == 3
    assert flags.first_operand(["python", "-u", "-m", "pip", "install"], 1, stop=("-m",)) == 2
    assert flags.first_operand(["python", "-"], 1) == 1
    assert flags.first_operand(["python", "-u"], 1) == 2


def test_the_dest_argparse_gives():
    assert flags.dest(["-l", "--lr-warmup", "--warm"]) == "lr_warmup"
    assert flags.dest(["-l"]) == "l"
    assert flags.dest(["lr"]) == "lr"
    assert flags.dest([]) is None


def test_negations():
    assert [flags.negative(n) for n in ("no_bf16", "no-bf16", "nobf16", "bf16")] == ["bf16", "bf16", None, None]
    assert (flags.negated("--bf16"), flags.negated("-b")) == ("--no-bf16", None)


@pytest.mark.parametrize("name,abbrev,want", [
    ("lr", True, ("exact", ["--lr"])),
    ("lr-warm", True, ("prefix", ["--lr-warmup"])),
    ("lr_w", True, ("prefix", ["--lr_warmup"])),  # --lr_warmup and --lr-warmup: one option
    ("l", True, ("ambiguous", ["--lr", "--lr-warmup", "--lr_warmup"])),
    ("lr-warm", False, ("unknown", [])),
    ("seed", True, ("unknown", [])),
])
def test_how_a_parser_finds_an_option(name, abbrev, want):
    strings = {"--lr": "lr", "--lr-warmup": "lr_warmup", "--lr_warmup": "lr_warmup", "-s": "seed"}
    assert flags.lookup(name, strings, abbrev) == want


def test_end_is_two_dashes():
    assert END == "--"


# ------------------------------------------------------------------ the readers that use it
def _shell(text: str):
    from scriptdiff.inputs.sources import Source
    from scriptdiff.lang import shell
    from scriptdiff.model import SideContext
    return shell.extract(Source(name="run.sh", data=text.encode()), SideContext("gpu"))


def test_python_reading_its_program_from_standard_input_starts_no_program_file():
    ex = _shell("python -u - <<'EOF'\nimport torch\nEOF\ntorchrun --nproc_per_node=2 -- train.py --lr=3e-4 -rdzv x\n")
    assert [(f.key, f.value) for f in ex.facts if f.key in ("lr", "world_size")] == [("world_size", 2), ("lr", 3e-4)]
    assert [launch[0] for launch in ex.launches] == ["train.py"]


def test_installer_and_wrapper_options_through_the_tokenizer():
    ex = _shell("pip install -rreq.txt --constraint=c.txt -U torch==2.1.0 -- -weird\n"
                "env -u HOME LR=1 deepspeed --num_gpus 4 train.py --lr 2e-4\n")
    assert sorted((f.key, f.value) for f in ex.facts) == [
        ("config:constraint", "c.txt"), ("config:requirement", "req.txt"), ("env:LR", "1"), ("lr", 2e-4),
        ("pkg:torch", "2.1.0"), ("pkglist", False), ("world_size", 4)]
    # after `--` a word is a package, whatever it looks like
    assert [e.message for e in ex.errors] == ["line 1: '-weird' is not a package pip can install; not compared"]

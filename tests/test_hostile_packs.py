"""A user's rule pack is hostile input too (issue 40): its expressions run in linear time (RE2),
a pack file that is not a regular file is refused before it is opened, the packs' size and
node count are bounded (budget.PACK_BYTES, PACK_NODES), merging a large pack reads each
pack's line table once, and what `rules` and `rule CODE` print of a pack is made safe.

Each refusal is one line naming the pack (and its line) and the reason, exit 2; nothing hangs
(no test measures time: a hang fails the suite by never ending)."""
from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from scriptdiff import api, budget
from scriptdiff.ruleset import packregex, packschema, rulepack, secret_shapes
from scriptdiff.ruleset.rules import load

from conftest import run_cli


@pytest.fixture(autouse=True)
def shipped_only_after():
    """Each test starts and ends with the shipped packs only (the rule set is the process's)."""
    api.use_rules([])
    yield
    api.use_rules([])


def team(tmp_path: Path, text: str, name: str = "team.yaml") -> tuple[str, Path]:
    folder = tmp_path / "team"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return str(folder), folder / name


# --- expressions: RE2, linear in the text ----------------------------------------------------

EVIL = """\
secret_values:
  patterns:
    - name: evil
      regex: '(x+x+)+y'
      examples: ["xxy"]
      not: ["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]
"""


def test_a_backtracking_expression_is_run_in_linear_time_and_withholds_what_it_finds(tmp_path):
    """`(x+x+)+y` against 40 x's ran past 60 s under Python's re: RE2 answers at once, the
    pack loads and its `not` entry (the 40 x's) is found not to match."""
    folder, _ = team(tmp_path, EVIL)
    code, out, err = run_cli("rules", "--rules", folder)
    assert (code, err) == (0, "")
    rx = packregex.compile("(x+x+)+y")
    assert rx.search("x" * 40) is None and rx.search("x" * 5000 + "!") is None
    assert rx.search("xxxy").span() == (0, 4)
    # the expression withholds what it finds in a run's output
    (tmp_path / "g.sh").write_text("torchrun train.py --lr 1 --tag xxxxy\n")
    (tmp_path / "n.sh").write_text("torchrun train.py --lr 2 --tag xxxxy\n")
    code, out, err = run_cli("diff", str(tmp_path / "g.sh"), str(tmp_path / "n.sh"), "--rules", folder)
    assert code == 1 and "xxxxy" not in out + err


@pytest.mark.parametrize("regex,why", [
    ("(?<![0-9])x+y", "invalid perl operator: (?<!"),
    ("x+(?=y)", "invalid perl operator: (?="),
    ("(x)\\1y", "invalid escape sequence: \\1"),
])
def test_an_expression_re2_cannot_run_is_refused_at_its_line(tmp_path, regex, why):
    folder, path = team(tmp_path, EVIL.replace("'(x+x+)+y'", f"'{regex}'"))
    code, out, err = run_cli("rules", "--rules", folder)
    assert (code, out) == (2, "")
    assert err == (f"scriptdiff: invalid rule pack: {path}:4: secret_values.patterns[0].regex: not an expression "
                   f"RE2 runs ({why}): pack expressions run in time linear in the text, so look-around ((?=, (?!, "
                   f"(?<=, (?<!) and back-references (\\1) are not available; write the context as a group of its "
                   f"own instead (docs/rule-packs.md)\n")


def test_a_vocabulary_from_name_pattern_is_run_by_re2_too(tmp_path):
    folder, path = team(tmp_path, """\
        vocabulary:
          orbit_stage:
            category: distributed
            type: int
            from_name: {kind: deepspeed, pattern: "(?<!x)stage([0-3])"}
        """)
    code, out, err = run_cli("rules", "--rules", folder)
    assert code == 2
    assert err.startswith(f"scriptdiff: invalid rule pack: {path}:5: vocabulary.orbit_stage.from_name.pattern: not "
                          f"an expression RE2 runs (invalid perl operator: (?<!)")


def test_the_shipped_expressions_find_what_they_found_with_look_around():
    """The two shipped expressions that used look-around, rewritten for RE2, find the same."""
    from scriptdiff.ruleset.secrets import redact_text
    from scriptdiff.ruleset.vocabulary import settings_in_name

    assert settings_in_name("deepspeed", "ds_z3_config.json") == [("zero_stage", 3)]
    assert settings_in_name("deepspeed", "zero2") == [("zero_stage", 2)]
    assert settings_in_name("deepspeed", "stage31.json") == []
    token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
    assert token not in redact_text(f"TOKEN={token}") and token not in redact_text(f"x {token} y")
    shipped = next(p["regex"] for p in load().section("secret_values")["patterns"] if p["name"] == "telegram-token")
    rx = secret_shapes.compile_pattern(shipped)
    assert list(secret_shapes.spans(rx, f"{token} {token}")) == [(0, 44), (45, 89)]  # the token, not the space
    assert list(secret_shapes.spans(rx, "x" + token)) == [(1, 45)]
    assert list(secret_shapes.spans(rx, "1234" + token)) == []  # 13 digits: no bot token (as before)


# --- files that are not packs --------------------------------------------------------------------

def _kernel_file() -> str:
    return "/proc/kmsg" if os.path.exists("/proc/kmsg") else "/proc/self/status"


def test_a_pack_that_is_a_link_to_proc_kmsg_is_refused_unopened(tmp_path):
    """Reading /proc/kmsg blocks until the kernel logs: `--rules` hung before it read a byte."""
    (tmp_path / "team").mkdir()
    link = tmp_path / "team" / "k.yaml"
    os.symlink(_kernel_file(), link)
    code, out, err = run_cli("rules", "--rules", str(tmp_path / "team"))
    assert (code, out) == (2, "")
    assert err == (f"scriptdiff: invalid rule pack: {link}:1: cannot read rule pack: is a kernel interface on the "
                   f"proc pseudo-filesystem, not a regular file (reading it may block) (only regular files are "
                   f"read: save its content to a file and give that file)\n")


def test_check_refuses_a_pack_its_configuration_names_that_is_a_kernel_file(tmp_path, monkeypatch):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    (tmp_path / "gpu" / "train.py").write_text("lr = 1\n")
    (tmp_path / "npu" / "train.py").write_text("lr = 1\n")
    os.symlink(_kernel_file(), tmp_path / "team.yaml")
    (tmp_path / "scriptdiff.toml").write_text('rules = ["team.yaml"]\n[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n')
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("check")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("scriptdiff: invalid rule pack: team.yaml:1: cannot read rule "
                                                   "pack: is a kernel interface on the proc")


# --- size and entries --------------------------------------------------------------------------

def test_a_pack_larger_than_the_bound_is_refused_before_it_is_read(tmp_path):
    """A 12.5 MB pack of 200,000 keys took past 60 s and 930 MB: it is refused by its size."""
    folder = tmp_path / "team"
    folder.mkdir()
    path = folder / "big.yaml"
    with open(path, "w") as fh:
        fh.write("vocabulary:\n")
        for i in range(200_000):
            fh.write(f"  key_{i:07d}: {{category: optimizer, type: float, aliases: [k{i:07d}]}}\n")
    size = path.stat().st_size
    assert size > budget.PACK_BYTES
    code, out, err = run_cli("rules", "--rules", str(folder))
    assert (code, out) == (2, "")
    assert err == (f"scriptdiff: invalid rule pack: {path}:1: cannot read rule pack: larger than the "
                   f"{budget.PACK_BYTES:,} bytes the packs of --rules may still hold together (at most "
                   f"{budget.PACK_BYTES:,} in all); not read\n")


def test_the_packs_together_are_bounded_in_bytes_and_nodes(tmp_path, monkeypatch):
    folder = tmp_path / "team"
    folder.mkdir()
    body = "".join(f"  key_{i:05d}: {{category: optimizer, type: float}}\n" for i in range(40))
    (folder / "a.yaml").write_text("vocabulary:\n" + body)
    (folder / "b.yaml").write_text("vocabulary:\n" + body.replace("key_", "other_"))
    a_bytes = (folder / "a.yaml").stat().st_size
    monkeypatch.setattr(budget, "PACK_BYTES", a_bytes + 10)  # a fits, a and b together do not
    code, _, err = run_cli("rules", "--rules", str(folder))
    assert code == 2 and err == (f"scriptdiff: invalid rule pack: {folder / 'b.yaml'}:1: cannot read rule pack: "
                                 f"larger than the 10 bytes the packs of --rules may still hold together (at most "
                                 f"{a_bytes + 10:,} in all); not read\n")
    monkeypatch.undo()
    monkeypatch.setattr(budget, "PACK_NODES", 300)  # a holds 40 keys of 6 nodes and its 3: b does not fit
    code, _, err = run_cli("rules", "--rules", str(folder))
    assert code == 2 and err == (f"scriptdiff: invalid rule pack: {folder / 'b.yaml'}:1: not valid YAML: more than "
                                 f"the 57 nodes (keys, values and list items, aliases expanded) left of the 300 the "
                                 f"packs of --rules may hold together\n")
    monkeypatch.setattr(budget, "PACK_NODES", 100_000)
    code, out, err = run_cli("rules", "--rules", str(folder))
    assert (code, err) == (0, "")


def test_an_alias_bomb_pack_is_refused_by_the_node_bound(tmp_path):
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 6)]
    folder, path = team(tmp_path, "\n".join(lines) + "\n")
    code, out, err = run_cli("rules", "--rules", folder)
    assert code == 2 and err == (f"scriptdiff: invalid rule pack: {path}:1: not valid YAML: more than the "
                                 f"{budget.PACK_NODES:,} nodes (keys, values and list items, aliases expanded) left "
                                 f"of the {budget.PACK_NODES:,} the packs of --rules may hold together\n")


class _CountedTable(dict):
    reads = 0

    def items(self):
        type(self).reads += 1
        return super().items()


def test_merging_a_pack_reads_its_line_table_once_per_depth_not_once_per_key(tmp_path, monkeypatch):
    """Merging a section graft the incoming positions of each key: the table was read once
    per key (a pack of 200,000 keys was quadratic)."""
    keys = 2_000
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "big.yaml").write_text(
        "vocabulary:\n" + "".join(f"  key_{i:05d}: {{category: optimizer, type: float}}\n" for i in range(keys)))
    real = packschema.Positions.__init__

    def counted(self, pack="", lines=None):
        real(self, pack, lines)
        self.table = _CountedTable(self.table)

    monkeypatch.setattr(packschema.Positions, "__init__", counted)
    _CountedTable.reads = 0
    rs = rulepack.load_packs(sorted(rulepack.rules_dir().glob("*.yaml")), user=[tmp_path / "team" / "big.yaml"])
    assert "key_01999" in rs.section("vocabulary")
    assert rs.where(("vocabulary", "key_01999", "type")) == f"{tmp_path / 'team' / 'big.yaml'}:{keys + 1}"
    assert _CountedTable.reads < 200  # a few per pack and depth, never one per key (2,000 keys)


# --- what `rules` and `rule CODE` print of a pack ---------------------------------------------

FORGED = """\
vocabulary:
  orbit_kernel: {category: orbit_kernels, type: str, aliases: [kernel_impl]}
categories:
  orbit_kernels: {rule: SDX101, title: orbit kernels}
launchers:
  entries:
    - {name: orbit, commands: [orbit], subcommands: [fit], program: subcommand}
rules:
  - code: SDX101
    name: "forged\\e[2J"
    check: hyperparameters
    severity: warning
    summary: "ok\\nSD999  hparams  error  forged: a line of its own\\e]0;pwned\\a"
    doc: "first\\nsecond \\e[31mred"
    examples:
      - {lang: shell, gpu: "orbit fit --kernel-impl fused\\n", npu: "orbit fit --kernel-impl eager\\n", fires: true, note: "n\\rforged\\e[2J"}
      - {lang: shell, gpu: "orbit fit --kernel-impl fused\\n", npu: "orbit fit --kernel-impl fused\\n", fires: false}
"""

def test_a_packs_summary_name_and_note_never_start_a_line_nor_reach_the_terminal(tmp_path):
    folder, path = team(tmp_path, FORGED)
    api.use_rules([folder])
    r = api.rule("SDX101")
    assert "\n" in r.summary and "\x1b" in r.summary  # the pack really holds them
    api.use_rules([])
    code, out, err = run_cli("rules", "--rules", folder)
    assert (code, err) == (0, "")
    assert "\x1b" not in out and "\x07" not in out
    line = next(ln for ln in out.splitlines() if ln.startswith("SDX101"))
    assert line == (f"SDX101  hyperparameters warning  forged\\x1b[2J: ok\\nSD999  hparams  error  forged: a line "
                    f"of its own\\x1b]0;pwned\\x07  [yours: {path}]")
    assert not any(ln.startswith("SD999") for ln in out.splitlines())
    code, out, err = run_cli("rules", "--rules", folder, "--format", "markdown")
    assert "\x1b" not in out and ("| `forged\\x1b[2J` | ok SD999 hparams error forged: a line of its "
                                  "own\\x1b]0;pwned\\x07 | yours: ") in out
    code, out, err = run_cli("rule", "SDX101", "--rules", folder)
    assert (code, err) == (0, "")
    assert out.splitlines()[:6] == [
        f"SDX101 forged\\x1b[2J  [hyperparameters, warning]  ({path})", "",
        "ok\\nSD999  hparams  error  forged: a line of its own\\x1b]0;pwned\\x07", "",
        "first", "second \\x1b[31mred"]
    assert "Example 1 (shell, fires): n\\rforged\\x1b[2J" in out.splitlines()
    assert "\x1b" not in out and "\r" not in out
    code, out, err = run_cli("rules", "--rules", folder, "--format", "json")
    assert json.loads(out)[-1]["summary"] == "ok\nSD999  hparams  error  forged: a line of its own\x1b]0;pwned\x07"
    assert "\x1b" not in out  # JSON escapes it

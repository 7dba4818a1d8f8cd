"""A word tree-sitter-bash cuts in two: after an expansion and a piece holding `/`, it ends
the word at a bare `$` and reads the name and the rest as another word (`$ROOT/data/$NAME/x`
was `$ROOT/data/$` followed by a command named `NAME/x`). The reader braces the name and reads
the word whole; `fix` still edits the script's own bytes. Made-up names throughout."""
from __future__ import annotations

from scriptdiff import api
from scriptdiff.inputs.sources import read_path
from scriptdiff.model import Options, SideContext
from scriptdiff.run.engine import extract
from scriptdiff.run.pipeline import diff_files

SCRIPT = ("export ORBIT_SET={name}\nexport ORBIT_ROOT=/mnt/orbit\n"
          "export ORBIT_TRAIN=$ORBIT_ROOT/data/$ORBIT_SET/train.parquet\n"
          "torchrun fit_orbit.py --data-path $ORBIT_ROOT/data/$ORBIT_SET/train.parquet --lr {lr}\n")


def write(tmp_path, gpu, npu):
    out = []
    for side, text in (("gpu", gpu), ("npu", npu)):
        p = tmp_path / side / "run.sh"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        out.append(str(p))
    return out


def test_the_word_is_read_whole(tmp_path):
    g, _n = write(tmp_path, SCRIPT.format(name="alpha", lr="1e-4"), SCRIPT.format(name="alpha", lr="1e-4"))
    facts = {f.key: f.value for f in extract(read_path(g), SideContext("gpu")).facts}
    assert facts["env:ORBIT_TRAIN"] == "/mnt/orbit/data/alpha/train.parquet"
    assert facts["data_path"] == "/mnt/orbit/data/alpha/train.parquet"
    assert "lr" in facts  # the rest of the command is still its options


def test_a_dataset_named_in_the_cut_part_is_compared(tmp_path):
    g, n = write(tmp_path, SCRIPT.format(name="alpha", lr="1e-4"), SCRIPT.format(name="beta", lr="1e-4"))
    rep = diff_files([g], [n], Options(use_cache=False))
    loud = sorted((f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line)
                  for f in rep.findings if f.severity != "info")
    # the path's line is that of its first piece ($ORBIT_ROOT); the variables differ as exported
    assert loud == [("SD212", "data_path", "/mnt/orbit/data/alpha/train.parquet", "/mnt/orbit/data/beta/train.parquet",
                     2, 2),
                    ("SD301", "env:ORBIT_SET", "alpha", "beta", 1, 1),
                    ("SD301", "env:ORBIT_TRAIN", "/mnt/orbit/data/alpha/train.parquet",
                     "/mnt/orbit/data/beta/train.parquet", 3, 3)]
    g2, n2 = write(tmp_path / "same", SCRIPT.format(name="alpha", lr="1e-4"), SCRIPT.format(name="alpha", lr="1e-4"))
    assert diff_files([g2], [n2], Options(use_cache=False)).findings == []


def test_fix_edits_the_scripts_own_bytes_after_a_braced_name(tmp_path):
    g, n = write(tmp_path, SCRIPT.format(name="alpha", lr="1e-4"), SCRIPT.format(name="alpha", lr="2e-4"))
    result = api.fix(str(tmp_path / "gpu"), str(tmp_path / "npu"), Options(use_cache=False))
    assert [d.fixed for d in result.decisions if d.finding.key == "lr"] == [True]
    assert (tmp_path / "npu" / "run.sh").read_text() == SCRIPT.format(name="alpha", lr="1e-4")

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


# ------------------------------------------------- a config the script writes itself (here-document)

WRITES = ('ORBIT_ROOT=/mnt/orbit\nARGS="$ORBIT_ROOT/fit-config.json"\ncat <<EOF > $ARGS\n{{\n'
          '    "model_name_or_path": "$ORBIT_ROOT/models/{model}",\n    "learning_rate": {lr},\n'
          '    "hub_token": "hf_{tok}"\n}}\nEOF\n'
          'deepspeed --num_gpus=8 fit_orbit.py --train_args_file $ARGS\n')


def test_a_config_written_by_a_here_document_and_named_by_the_launch_is_read(tmp_path):
    g, n = write(tmp_path, WRITES.format(model="kestrel-7b", lr="1e-4", tok="A1b2C3d4E5f6G7h8I9j0K1l2"),
                 WRITES.format(model="kestrel-13b", lr="2e-4", tok="A1b2C3d4E5f6G7h8I9j0K1l2"))
    rep = diff_files([g], [n], Options(use_cache=False))
    loud = sorted((f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line)
                  for f in rep.findings if f.severity != "info")
    assert loud == [("SD202", "lr", 0.0001, 0.0002, 6, 6),
                    ("SD212", "load", "/mnt/orbit/models/kestrel-7b", "/mnt/orbit/models/kestrel-13b", 5, 5)]
    assert "A1b2C3d4E5f6G7h8I9j0K1l2" not in str([(f.gpu, f.npu, f.message) for f in rep.findings])
    same = WRITES.format(model="kestrel-7b", lr="1e-4", tok="x")
    g2, n2 = write(tmp_path / "same", same, same.replace("--num_gpus=8", "--num_gpus 8"))
    assert diff_files([g2], [n2], Options(use_cache=False)).findings == []


def test_a_here_document_the_launch_does_not_name_is_not_read_as_its_config(tmp_path):
    text = WRITES.format(model="kestrel-7b", lr="LR", tok="x").replace("--train_args_file $ARGS", "--seed 1")
    g, n = write(tmp_path, text.replace('"learning_rate": LR', '"learning_rate": 1e-4'),
                 text.replace('"learning_rate": LR', '"learning_rate": 2e-4'))
    assert [f.key for f in diff_files([g], [n], Options(use_cache=False)).findings] == []


# ------------------------------------------------- runs of a loop paired by what tells them apart

LOOPS = ('for model in alpha beta; do\n  for method in {methods}; do\n'
         '    torchrun fit_orbit.py --orbit_model $model --orbit_method $method --lr {lr}\n  done\ndone\n')


def test_runs_of_a_loop_are_paired_by_their_loop_values_when_one_side_runs_fewer(tmp_path):
    g, n = write(tmp_path, LOOPS.format(methods="grad diff npo", lr="1e-4"), LOOPS.format(methods="grad npo", lr="1e-4"))
    rep = diff_files([g], [n], Options(use_cache=False))
    assert [(f.rule, f.key, f.gpu.value, f.npu.value) for f in rep.findings] == [("SD223", "invocations", 6, 4)]
    assert rep.findings[0].message == ("the GPU script starts 6 program(s) and the NPU script 4: invocations were "
                                       "paired by orbit_method, orbit_model (what tells them apart on both sides), "
                                       "the ones without a counterpart compared with nothing")
    # a learning rate that differs in the runs of one model is found in those runs only
    npu = ("for method in grad npo; do\n  torchrun fit_orbit.py --orbit_model alpha --orbit_method $method --lr 1e-4\n"
           "done\nfor method in grad npo; do\n"
           "  torchrun fit_orbit.py --orbit_model beta --orbit_method $method --lr 2e-4\ndone\n")
    g2, n2 = write(tmp_path / "d", LOOPS.format(methods="grad diff npo", lr="1e-4"), npu)
    rep = diff_files([g2], [n2], Options(use_cache=False))
    assert sorted((f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in rep.findings) == [
        ("SD202", "lr", 0.0001, 0.0002, 3, 5),  # both runs of beta: the same lines, said once
        ("SD223", "invocations", 6, 4, None, None)]


def test_a_setting_that_differs_in_every_run_of_a_loop_is_one_finding(tmp_path):
    text = ('for model in alpha beta gamma; do\n'
            '  torchrun fit_orbit.py --orbit_model $model --orbit_tag ${{model}}{suffix} --lr 1e-4\ndone\n')
    g, n = write(tmp_path, text.format(suffix=""), text.format(suffix="_npu"))
    rep = diff_files([g], [n], Options(use_cache=False))
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in rep.findings] == [
        ("SD220", "orbit_tag", "alpha", "alpha_npu", 1, 1)]  # the loop word, where $model gets it
    f = rep.findings[0]
    assert f.message.endswith("; the same setting differs in 2 more run(s) of the loop, written at these lines")
    assert f.extra["more_runs"] == 2 and f.extra["runs"] == [["'beta'", "'beta_npu'"], ["'gamma'", "'gamma_npu'"]]

"""absl's and TensorFlow's flags: a `flags.DEFINE_<type>(name, default, help)` is an option whose
default is the run's value unless the launch line sets it, as an argparse `add_argument` is."""
from pathlib import Path

from scriptdiff.model import Options
from scriptdiff.run.folders import diff_trees

from test_python_diff import pair_of, summary

PROGRAM = '''from absl import app, flags

flags.DEFINE_float("learning_rate", {lr}, "step size")
flags.DEFINE_integer("orbit_rings", 3, "how many rings")
flags.DEFINE_string("kestrel_dir", "/data/kestrel", "where the data is")
FLAGS = flags.FLAGS


def main(_):
    print(FLAGS.learning_rate, FLAGS.orbit_rings)


if __name__ == "__main__":
    app.run(main)
'''


def loud(r):
    return [summary(f) for f in r.findings if f.severity != "info"]


def test_a_flags_default_is_the_runs_setting(tmp_path):
    r = pair_of(tmp_path, PROGRAM.format(lr="1e-3"), PROGRAM.format(lr="2e-3"))[2]
    assert loud(r) == [("SD202", "lr", 1e-3, 2e-3, 3, 3)]


def test_the_same_default_written_otherwise_is_equal(tmp_path):
    r = pair_of(tmp_path, PROGRAM.format(lr="1e-3"), PROGRAM.format(lr="0.001"))[2]
    assert loud(r) == []


def test_a_tf_flags_keyword_definition_is_read_the_same_way(tmp_path):
    gpu = 'import tensorflow as tf\ntf.app.flags.DEFINE_float(name="learning_rate", default=1e-3, help="lr")\n'
    npu = 'import tensorflow as tf\ntf.app.flags.DEFINE_float(name="learning_rate", default=5e-4, help="lr")\n'
    r = pair_of(tmp_path, gpu, npu)[2]
    assert loud(r) == [("SD202", "lr", 1e-3, 5e-4, 2, 2)]


def _folders(tmp_path, gpu_lr, npu_lr, gpu_line, npu_line):
    for side, lr, line in (("gpu", gpu_lr, gpu_line), ("npu", npu_lr, npu_line)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "train.py").write_text(PROGRAM.format(lr=lr), encoding="utf-8")
        (tmp_path / side / "run.sh").write_text(line, encoding="utf-8")
    return diff_trees(str(tmp_path / "gpu"), str(tmp_path / "npu"), Options(use_cache=False))


def test_the_launch_line_sets_the_flag_over_its_default(tmp_path):
    # both sides launch with the same learning rate: the defaults, which differ, are not used
    r = _folders(tmp_path, "1e-3", "2e-3", "python train.py --learning_rate=0.01 --orbit_rings 4\n",
                 "python train.py --learning_rate=0.01 --orbit_rings 4\n")
    assert loud(r) == []


def test_a_side_that_does_not_set_the_flag_runs_with_its_default(tmp_path):
    r = _folders(tmp_path, "1e-3", "1e-3", "python train.py --learning_rate=0.01\n", "python train.py\n")
    assert loud(r) == [("SD202", "lr", 0.01, 1e-3, 1, 3)]
    assert [(Path(f.gpu.path).name, Path(f.npu.path).name) for f in r.findings if f.key == "lr"] == [("run.sh", "train.py")]


def test_a_define_outside_a_flags_module_is_not_a_flag(tmp_path):
    gpu = 'import orbit\norbit.DEFINE_float("learning_rate", 1e-3, "lr")\n'
    npu = 'import orbit\norbit.DEFINE_float("learning_rate", 2e-3, "lr")\n'
    r = pair_of(tmp_path, gpu, npu)[2]
    assert [f.key for f in r.findings if f.key == "lr"] == []

"""Issue 39: a TensorFlow 1 script ported with the NPU's TF adapter: the session config's
NpuOptimizer and the rewrites it turns off are the port, its precision mode is the run's
precision, a value passed through a function named for the NPU is the adapter's, and a flag
defined on one side only is configuration (rules/devices.yaml `python.tf_session`)."""
from __future__ import annotations

from test_python_diff import pair_of

GPU = '''import tensorflow as tf

tf.flags.DEFINE_float("learning_rate", 1e-3, "lr")
FLAGS = tf.flags.FLAGS


def fit_orbit(loss):
    config = tf.ConfigProto(allow_soft_placement=True)
    opt = tf.train.AdamOptimizer(FLAGS.learning_rate).minimize(loss)
    with tf.Session(config=config) as sess:
        sess.run(opt)
'''

NPU = '''import tensorflow as tf
from orbit_npu_adapter import *

tf.flags.DEFINE_float("learning_rate", 1e-3, "lr")
tf.flags.DEFINE_string("store_dir", None, "where the platform copies results")
FLAGS = tf.flags.FLAGS


def fit_orbit(loss):
    config = tf.ConfigProto(allow_soft_placement=True)
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("{mode}")
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    opt = tf.train.AdamOptimizer(FLAGS.learning_rate).minimize(loss)
    with tf.Session(config={wrap}(config)) as sess:
        sess.run(opt)
'''


def rows(r):
    return [(f.rule, f.key, f.gpu and f.gpu.line, f.npu and f.npu.line, f.npu and f.npu.value) for f in r.findings
            if f.severity != "info"]


def test_a_session_config_that_keeps_the_graphs_dtypes_is_the_port(tmp_path):
    r = pair_of(tmp_path, GPU, NPU.format(mode="must_keep_origin_dtype", wrap="npu_config_proto"), "fit.py")[2]
    assert rows(r) == []
    assert sorted(m.rule for m in r.masked if m.rule in ("SD020", "SD031")) == ["SD020"] * 5 + ["SD031"]
    assert [(f.rule, f.message) for f in r.findings if f.npu and f.npu.line == 5] == [
        ("SD103", 'configuration on NPU only: option "store_dir" (its uses are compared by value)')]


def test_a_mixed_precision_mode_is_the_runs_precision_on_the_npu_only(tmp_path):
    r = pair_of(tmp_path, GPU, NPU.format(mode="allow_mix_precision", wrap="npu_config_proto"), "fit.py")[2]
    assert rows(r) == [("SD205", "params_dtype", None, 14, "allow_mix_precision")]


def test_a_wrapper_named_for_no_device_is_a_difference(tmp_path):
    r = pair_of(tmp_path, GPU, NPU.format(mode="must_keep_origin_dtype", wrap="orbit_proto"), "fit.py")[2]
    assert [x[:4] for x in rows(r)] == [("SD102", "code:fit.py:fit_orbit", 10, 17)]


def test_a_flag_with_a_value_defined_on_one_side_only_stays_a_difference(tmp_path):
    npu = NPU.format(mode="must_keep_origin_dtype", wrap="npu_config_proto").replace(
        'tf.flags.DEFINE_string("store_dir", None, "where the platform copies results")',
        'tf.flags.DEFINE_float("drop_rate", 0.25, "dropout")')
    r = pair_of(tmp_path, GPU, npu, "fit.py")[2]
    assert rows(r) == [("SD102", "code:fit.py:<module>", None, 5, 'tf.flags.DEFINE_float("drop_rate", 0.25, "dropout")')]

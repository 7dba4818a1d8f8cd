"""The optional extras of `scriptdiff curves`: --plot (matplotlib) and TensorBoard event files
(tensorboard). Each test is skipped, with the install line, where its extra is missing."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_curves import gen  # fixtures/curves/gen.py, loaded once

from scriptdiff import api
from scriptdiff.curves.readers import read_side
from scriptdiff.curves.verdict import LONG, compare_runs


@pytest.fixture(scope="module")
def long_pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("plot")
    return gen.write(str(d), "megatron", "long")


def test_plot_png_exists_decodes_and_has_the_expected_size(long_pair, tmp_path, cli):
    pytest.importorskip("matplotlib", reason="matplotlib not installed: pip install 'scriptdiff[plot]'")
    from matplotlib.image import imread

    png = tmp_path / "curves.png"
    code, _out, err = cli("curves", *long_pair, "--plot", str(png), "--no-chart")
    assert code == 1
    assert err == f"scriptdiff: plot 1000x1200 -> {png}\n"  # loss, lr, grad norm: three panels of 400 px
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = imread(str(png))
    assert img.shape[:2] == (1200, 1000)
    assert img[..., :3].std() > 0.05  # something was drawn, not a blank canvas


def test_plot_svg(long_pair, tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib not installed: pip install 'scriptdiff[plot]'")
    report = api.curves(*long_pair)
    svg = tmp_path / "curves.svg"
    assert api.curves_view(report, "plot", path=str(svg)) == (1000, 1200)
    text = svg.read_text()
    assert "<svg" in text and "diverges at step 1392" in text


def test_plot_without_matplotlib_is_one_line(long_pair, tmp_path, monkeypatch, cli):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _out, err = cli("curves", *long_pair, "--plot", str(tmp_path / "c.png"), "--no-chart")
    assert (code, err) == (2, "scriptdiff: --plot needs matplotlib: pip install 'scriptdiff[plot]'\n")
    assert not (tmp_path / "c.png").exists()


def _events(folder: Path, recs: list[dict]) -> None:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(folder))
    for r in recs:
        vals = [Summary.Value(tag="train/loss", simple_value=r["loss"]),
                Summary.Value(tag="train/grad_norm", simple_value=r["grad_norm"]),
                Summary.Value(tag="train/learning_rate", simple_value=r["lr"])]
        w.add_event(Event(step=r["step"], wall_time=1.7e9 + r["step"], summary=Summary(value=vals)))
    w.close()


def test_tensorboard_event_files(tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard not installed: pip install 'scriptdiff[tensorboard]'")
    for side in ("gpu", "npu"):
        (tmp_path / side).mkdir()
        _events(tmp_path / side, gen.curve("long", side))
    g, n = read_side([str(tmp_path / "gpu")], "gpu"), read_side([str(tmp_path / "npu")], "npu")
    [rec] = g.recognised
    assert (rec.reader, rec.records, rec.first_step, rec.last_step, rec.metrics) == (
        "TensorBoard event file", 3000, 1, 3000, ["grad_norm", "loss", "lr"])
    res = compare_runs(g, n)
    assert res.verdict == LONG and res.loss.divergence == 1392  # float32 scalars: the same step as the text log


def test_tensorboard_missing_is_said_not_guessed(tmp_path, monkeypatch):
    (tmp_path / "events.out.tfevents.1.host").write_bytes(b"\x18\x00\x00\x00\x00\x00\x00\x00\xa3\x7fK\x22"
                                                          b"\t\x00\x00\x00\x00\x00\x00\x00\x00\x1a\rbrain.Event:2")
    monkeypatch.setitem(sys.modules, "tensorboard.compat.proto.event_pb2", None)
    run = read_side([str(tmp_path)], "gpu")
    assert [(e.message, e.fatal) for e in run.errors] == [
        ("a TensorBoard event file: install 'scriptdiff[tensorboard]' to read it; not read", True)]


def _plotted(logs_dir, kind):
    from scriptdiff.curves.plot import figure

    g = read_side([str(logs_dir / "megatron" / kind / "gpu")], "gpu")
    n = read_side([str(logs_dir / "megatron" / kind / "npu")], "npu")
    res = compare_runs(g, n)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig, _rows = figure(res)
    FigureCanvasAgg(fig).draw()
    return res, fig


@pytest.fixture(scope="module")
def fixture_logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("plots")
    for kind in ("long", "anomaly"):
        gen.write(str(d), "megatron", kind)
    return d


def test_the_plot_clips_nothing_and_shows_the_first_steps(fixture_logs):
    """Issue 28: the warm-up above a cut-off was clipped, hiding what the first-step verdict
    judges. Every panel's y range holds every point it draws, and the loss has a panel of its
    first steps with the judged points shaded."""
    pytest.importorskip("matplotlib", reason="matplotlib not installed: pip install 'scriptdiff[plot]'")
    import numpy as np

    res, fig = _plotted(fixture_logs, "long")
    for ax in fig.axes:
        for line in ax.get_lines():
            y = np.asarray(line.get_ydata(), dtype=float)
            if line.get_transform() != ax.transData or not np.isfinite(y).any():
                continue  # markers above the panel, vertical lines
            lo, hi = ax.get_ylim()
            assert lo <= np.nanmin(y) and np.nanmax(y) <= hi, ax.get_title(loc="left")
    first = fig.axes[0]
    assert first.get_title(loc="left") == "first 50 points (first 10 judged, shaded)"
    assert first.get_xlim()[1] < 60 and first.get_ylim()[1] >= float(res.series["loss"].g[0])  # step 1's 10.9
    assert fig.axes[1].get_yscale() == "log"  # 10.9 down to 2.2 on one axis, nothing cut


def test_the_plot_marks_events_and_keeps_the_legend_off_the_divergence_label(fixture_logs):
    pytest.importorskip("matplotlib", reason="matplotlib not installed: pip install 'scriptdiff[plot]'")
    from scriptdiff.curves.plot import EVENTS

    res, fig = _plotted(fixture_logs, "anomaly")
    whole = fig.axes[1]
    marks = {}
    for line in whole.get_lines():
        if line.get_linestyle() == "None":
            marks[line.get_marker()] = sorted(float(v) for v in line.get_xdata())
    assert marks == {EVENTS["nan/inf"][0]: [1700.0], EVENTS["skipped"][0]: [300.0, 800.0, 1300.0],
                     EVENTS["overflow"][0]: [300.0, 800.0, 1300.0], EVENTS["spikes"][0]: [400.0, 900.0, 1500.0,
                                                                                          2100.0, 2600.0]}
    render = fig.canvas.get_renderer()  # the Agg canvas _plotted drew on
    legend = fig.legends[0].get_window_extent(render)
    labels = [t for ax in fig.axes for t in ax.texts if t.get_text().startswith("diverges at")]
    assert labels  # loss_scale halves at step 300 on the NPU: a divergence, labelled
    for t in labels:
        assert not legend.overlaps(t.get_window_extent(render))
    from matplotlib.text import Text

    for ax in fig.axes:  # nor over a panel's titles
        for t in ax.get_children():
            if isinstance(t, Text) and t.get_text().startswith(("first 50", "verdict:", "lr:", "grad_norm:")):
                assert not legend.overlaps(t.get_window_extent(render)), t.get_text()


def test_plot_error_panel_is_scaled_past_a_spike(tmp_path):
    """Issue 41: a 3% drift from step 500 and a 60% spike at 650: the whole run's relative-error
    panel of the loss tops out at a few percent (the drift shows), the spike is drawn at the top,
    marked and counted."""
    pytest.importorskip("matplotlib", reason="matplotlib not installed: pip install 'scriptdiff[plot]'")
    from test_curves_verdicts import spike_and_drift

    from scriptdiff.curves.plot import figure

    g, n = spike_and_drift(tmp_path)
    res = compare_runs(read_side([str(g)], "gpu"), read_side([str(n)], "npu"))
    fig, _rows = figure(res)
    err = fig.axes[3]  # the loss: first steps, whole run, then their error panels
    lo, hi = err.get_ylim()
    assert lo == 0 and 3 < hi < 6
    notes = [t.get_text() for t in err.texts]
    assert len(notes) == 1 and notes[0].endswith("(clipped, ▲)") and " above " in notes[0]

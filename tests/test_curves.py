"""scriptdiff curves: every reader, every kind of mismatch, alignment, resampling, bounded
memory, the CLI (text, JSON, markdown, exit codes, bad input), REV:path and `check`'s
seventh verdict. Logs come from fixtures/curves/gen.py (deterministic, standard library)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from scriptdiff import api
from scriptdiff.project.checkrun import load_config, run_checks
from scriptdiff.curves.metrics import Settings
from scriptdiff.curves.readers import read_side
from scriptdiff.curves.series import Track
from scriptdiff.curves.verdict import ANOMALY, DOWNSTREAM, EQUAL, FIRST, LONG, compare_runs
from scriptdiff.model import Options

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("curves_gen", ROOT / "fixtures" / "curves" / "gen.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("curves")
    for fmt in gen.FORMATS:
        for kind in gen.KINDS:
            gen.write(str(d), fmt, kind)
    return d


def compared(logs, fmt, kind, **settings):
    g = read_side([str(logs / fmt / kind / "gpu")], "gpu")
    n = read_side([str(logs / fmt / kind / "npu")], "npu")
    return compare_runs(g, n, Settings(**settings))


# --- readers: chosen by content, each saying what it recognised ------------------------------

READERS = {  # format -> [(reader, records, first step, last step, metrics)]
    "megatron": [("Megatron-LM/MindSpeed iteration lines", 3000, 1, 3000,
                  ["consumed_samples", "elapsed_ms", "global_batch_size", "grad_norm", "loss", "loss_scale", "lr",
                   "nan_iterations", "skipped"]),
                 ("Megatron-LM/MindSpeed validation lines", 6, 500, 3000, ["eval_loss", "eval_ppl"])],
    "trainer_state": [("HF Trainer trainer_state.json log_history", 306, 10, 3000,
                       ["epoch", "eval_accuracy", "eval_loss", "eval_runtime", "eval_samples_per_second", "grad_norm",
                        "loss", "lr"])],
    "hf_console": [("HF Trainer printed metric dicts", 306, 1, 300,
                    ["epoch", "eval_accuracy", "eval_loss", "eval_runtime", "grad_norm", "loss", "lr"])],
    "llamafactory": [("LLaMA-Factory trainer_log.jsonl", 600, 5, 3000, ["epoch", "loss", "lr", "percentage",
                                                                         "total_steps"])],
    "verl": [("verl/OpenRLHF step:N console metrics", 3000, 1, 3000,
              ["actor/grad_norm", "actor/lr", "actor/pg_loss", "critic/score/mean", "perf/throughput",
               "timing_s/gen"])],
    "deepspeed": [("DeepSpeed step lines", 600, 10, 3000, ["loss", "lr", "skipped_total"])],
    "wandb_csv": [("W&B CSV export", 3000, 1, 3000, ["grad_norm", "loss", "lr"])],
    "wandb_jsonl": [("W&B JSONL export", 3000, 1, 3000, ["_runtime", "grad_norm", "loss", "lr"])],
}


@pytest.mark.parametrize("fmt", sorted(READERS))
def test_each_reader_says_what_it_recognised(logs, fmt):
    run = read_side([str(logs / fmt / "equal" / "gpu")], "gpu")
    got = [(r.reader, r.records, r.first_step, r.last_step, r.metrics) for r in run.recognised]
    assert got == READERS[fmt]
    assert run.errors == [] and run.skipped_files == []


def test_the_hf_console_says_its_steps_are_counted(logs):
    run = read_side([str(logs / "hf_console" / "equal" / "gpu")], "gpu")
    assert run.recognised[0].note == "no step is printed: records numbered in order"
    assert run.tracks["loss"].points == 300  # the end-of-training summary dict is not a step


def test_deepspeed_overflow_lines_are_recognised_and_counted(logs):
    run = read_side([str(logs / "deepspeed" / "anomaly" / "npu")], "npu")
    assert [(r.reader, r.records) for r in run.recognised] == [("DeepSpeed step lines", 600),
                                                                ("DeepSpeed/apex overflow lines", 3)]
    assert run.overflow_lines == 3


# --- the four kinds, with their numbers --------------------------------------------------------

# format -> kind -> (verdict, first persistent divergence, mre first N %, mre whole run %)
EXPECTED = {
    "megatron": {"equal": (EQUAL, None, 0.3, 0.35), "first": (FIRST, 1, 5.76, 0.57),
                 "long": (LONG, 1392, 0.31, 2.01), "anomaly": (ANOMALY, None, 0.22, 0.43),
                 "downstream": (DOWNSTREAM, None, 0.29, 0.34)},
    "trainer_state": {"equal": (EQUAL, None, 0.28, 0.36), "first": (FIRST, None, 4.27, 0.58),
                      "long": (LONG, 1400, 0.4, 2.01), "anomaly": (ANOMALY, None, 0.47, 1.31),
                      "downstream": (DOWNSTREAM, None, 0.3, 0.32)},
    "hf_console": {"equal": (EQUAL, None, 0.28, 0.36), "first": (FIRST, None, 4.27, 0.58),
                   "long": (LONG, 140, 0.4, 2.01), "anomaly": (ANOMALY, None, 0.47, 1.31),
                   "downstream": (DOWNSTREAM, None, 0.3, 0.32)},
}


@pytest.mark.parametrize("fmt,kind", [(f, k) for f in EXPECTED for k in gen.KINDS])
def test_verdict_divergence_and_numbers(logs, fmt, kind):
    res = compared(logs, fmt, kind)
    verdict, divergence, mre_first, mre_all = EXPECTED[fmt][kind]
    assert res.verdict == verdict
    assert res.loss.divergence == divergence
    assert (round(100 * res.loss.mre_first, 2), round(100 * res.loss.mre_all, 2)) == (mre_first, mre_all)


@pytest.mark.parametrize("fmt", ["llamafactory", "verl", "deepspeed", "wandb_csv", "wandb_jsonl"])
def test_every_reader_tells_the_kinds_apart(logs, fmt):
    got = {kind: compared(logs, fmt, kind).verdict for kind in gen.KINDS}
    # no evaluation metric in these formats: the downstream pair has equal losses and is equal
    assert got == {"equal": EQUAL, "first": FIRST, "long": LONG, "anomaly": ANOMALY, "downstream": EQUAL}


def test_anomaly_counts_per_side(logs):
    res = compared(logs, "megatron", "anomaly")
    assert res.counts["gpu"].to_json() == {"nonfinite": 0, "nan_iterations": 0, "skipped": 0, "overflow": 0,
                                           "spikes": 0, "spike_at": [], "nonfinite_at": [], "nan_at": [],
                                           "skipped_at": [], "overflow_at": []}
    assert res.counts["npu"].to_json() == {"nonfinite": 0, "nan_iterations": 1, "skipped": 3, "overflow": 3,
                                           "spikes": 5, "spike_at": list(gen.SPIKES), "nonfinite_at": [],
                                           "nan_at": [gen.NAN_AT], "skipped_at": list(gen.OVERFLOWS),
                                           "overflow_at": list(gen.OVERFLOWS)}


def test_curve_findings_name_their_steps_and_log_lines(logs):
    """Issue 28: "GPU: 2.33904 at train.log" named neither step nor line. Each side is now
    the log line of the step its value is from (its text the excerpt, the reader `via`), and
    the message names the steps of each kind of event, a count, and their lines."""
    def lines_of(path, *steps):  # the line of each step's iteration record, read here
        text = Path(path).read_text().splitlines()
        return [next(k for k, t in enumerate(text, 1) if f"iteration {s:8d}/" in t) for s in steps]

    d = logs / "megatron" / "anomaly"
    report = api.curves(str(d / "gpu"), str(d / "npu"))
    f = next(f for f in report.findings if f.rule == "SD703")
    npu_log = str(d / "npu" / "train.log")
    sk, sp = lines_of(npu_log, *gen.OVERFLOWS), lines_of(npu_log, *gen.SPIKES)
    [nan] = lines_of(npu_log, gen.NAN_AT)
    assert f.message == (
        "overflow, NaN or spikes: the NPU run has more nan/inf, skipped, overflow, spikes than the GPU run "
        f"(nan/inf 0 vs 1: NPU at step 1700 (train.log:{nan}); "
        f"skipped 0 vs 3: NPU at steps 300, 800, 1300 (train.log:{sk[0]}, {sk[1]}, {sk[2]}); "
        f"overflow 0 vs 3: NPU at steps 300, 800, 1300 (train.log:{sk[0]}, {sk[1]}, {sk[2]}); "
        f"spikes 0 vs 5: NPU at steps 400, 900, 1500, 2100, 2600 (train.log:{', '.join(map(str, sp))}))")
    assert (f.npu.path, f.npu.line, f.npu.via) == (npu_log, nan, "Megatron-LM/MindSpeed iteration lines")
    assert "iteration     1700/    3000 |" in f.npu.source and "number of nan iterations:   1 |" in f.npu.source
    d = logs / "megatron" / "long"
    f = next(f for f in api.curves(str(d / "gpu"), str(d / "npu")).findings if f.rule == "SD702")
    [g] = lines_of(str(d / "gpu" / "train.log"), 1392)
    assert (f.gpu.line, f.gpu.value, f.npu.line) == (g, 2.33904, g)
    assert "first persistent divergence at step 1392;" in f.message
    assert f.message.endswith("beyond the tolerance at 1634 of 3000 points: steps 5, 29, 58, 67, 139 and 1629 more "
                              f"(train.log:{', '.join(map(str, lines_of(str(d / 'npu' / 'train.log'), 5, 29, 58, 67, 139)))})")
    # a JSON document has no lines: the file is named, and the reader
    d = logs / "trainer_state" / "first"
    f = next(f for f in api.curves(str(d / "gpu"), str(d / "npu")).findings if f.rule == "SD701")
    assert (f.gpu.path, f.gpu.line, f.gpu.source) == (str(d / "gpu" / "trainer_state.json"), None,
                                                      "HF Trainer trainer_state.json log_history")
    assert "beyond the tolerance at 10 of the first 10 points: steps 10, 20, 30, 40, 50 and 5 more " \
           "(trainer_state.json)" in f.message


def test_long_term_evidence(logs):
    res = compared(logs, "megatron", "long")
    loss = res.series["loss"]
    assert loss.first_beyond == 5  # one noisy point: not a divergence
    assert loss.max_rel == (2780.0, pytest.approx(0.0530, abs=5e-4))
    assert loss.worst_window[:2] == (2797.0, 2846.0)
    assert res.evidence[-2:] == ["first persistent divergence at step 1392",
                                 "anomalies GPU/NPU: nan/inf 0/0, skipped 0/0, overflow 0/0, spikes 0/0"]
    assert res.axis.reason == "aligned by step (consumed samples per step equal: 256)"


def test_a_tighter_tolerance_turns_noise_into_a_difference(logs):
    assert compared(logs, "megatron", "equal").verdict == EQUAL
    assert compared(logs, "megatron", "equal", rtol=0.001).verdict == FIRST


# --- alignment and resampling -------------------------------------------------------------------

def test_different_logging_intervals_are_resampled(tmp_path):
    (tmp_path / "g.log").write_text(gen.megatron(gen.curve("long", "gpu")))
    (tmp_path / "n.log").write_text(gen.megatron(gen.curve("long", "npu"), every=10))
    res = compare_runs(read_side([str(tmp_path / "g.log")], "gpu"), read_side([str(tmp_path / "n.log")], "npu"))
    loss = res.series["loss"]
    assert loss.note == "resampled: GPU logs every 1, NPU every 10; GPU averaged over NPU's logging intervals"
    assert loss.points == 300
    assert res.verdict == LONG and loss.divergence == 1410


@pytest.mark.parametrize("steps", [1, 2, 1200])
def test_short_series_are_compared_not_crashed_on(tmp_path, steps):
    """A series of one or two points (a short run; an evaluation metric logged twice in 1200
    steps) has a moving window of its length: it was an argmax over an empty window."""
    for kind, want in (("equal", []), ("first", [("SD701", "curve:loss")])):
        (tmp_path / "g.log").write_text(gen.megatron(gen.curve(kind, "gpu", steps=steps)))
        (tmp_path / "n.log").write_text(gen.megatron(gen.curve(kind, "npu", steps=steps)))
        report = api.curves(str(tmp_path / "g.log"), str(tmp_path / "n.log"), Options(use_cache=False))
        got = [(f.rule, f.key) for f in report.findings if f.severity == "error"]
        assert (got, report.errors) == (want, []), kind


def test_different_batch_sizes_align_by_consumed_samples(tmp_path):
    gpu = gen.curve("equal", "gpu")
    # the NPU run takes batches twice as large: its step t has consumed what the GPU's 2t had
    npu = [dict(r, step=r["step"] // 2, samples=r["samples"]) for r in gen.curve("equal", "npu") if r["step"] % 2 == 0]
    (tmp_path / "g.log").write_text(gen.megatron(gpu))
    (tmp_path / "n.log").write_text(gen.megatron(npu))
    g, n = read_side([str(tmp_path / "g.log")], "gpu"), read_side([str(tmp_path / "n.log")], "npu")
    res = compare_runs(g, n)
    assert res.axis.name == "consumed samples"
    assert res.axis.reason == ("aligned by consumed samples: 256 per step on GPU, 512 on NPU "
                               "(the batch sizes differ)")
    assert res.verdict == EQUAL
    assert compare_runs(g, n, Settings(align="step")).verdict == FIRST  # by step, they are not the same run


def test_a_track_keeps_bounded_memory_and_exact_counts():
    t = Track(cap=64)
    for i in range(1000):
        t.add(float(i), float("nan") if i == 500 else float(i))
    s, v = t.arrays()
    assert t.stride == 16 and len(t.steps) < 64 and t.points == 1000 and t.nan == 1
    assert s[0] == 0 and v[0] == pytest.approx(7.5)  # the first 16 points averaged


def test_the_line_index_stays_bounded_and_answers_for_any_step():
    from scriptdiff.budget import CURVE_BUFFER as CHUNK
    from scriptdiff.curves.series import LineIndex

    ix = LineIndex(cap=2048)
    mark = ix.appenders("a.log")
    for step in range(1, 1001):
        mark(float(step), step + 10, step * 100)
    mark(500.0, 2000, 0, True)  # an evaluation record at a training step
    assert ix.where(1.0) == ("a.log", 11, 100, True) and ix.stride == 1
    assert ix.where(500.0) == ("a.log", 510, 50000, True) and ix.where(500.0, True) == ("a.log", 2000, 0, True)
    assert ix.where(0.5) is None
    more = ix.appenders("b.log")
    for step in range(1001, 1001 + 2 * CHUNK):  # folded and halved past the cap
        more(float(step), step, 0)
        ix.due()
    assert ix.stride == 128 and len(ix._ks[0]) < 2048
    hits = [ix.where(float(s)) for s in range(2001, 2001 + 128)]
    assert sum(h[3] for h in hits) == 1  # one record in 128 kept: the others answer with the one before
    assert all(h[0] == "b.log" and h[1] <= s for h, s in zip(hits, range(2001, 2001 + 128)))


def test_a_long_run_is_decimated_and_still_judged(logs):
    g = read_side([str(logs / "megatron" / "long" / "gpu")], "gpu", cap=512)
    n = read_side([str(logs / "megatron" / "long" / "npu")], "npu", cap=512)
    res = compare_runs(g, n)
    assert g.tracks["loss"].stride == 8
    assert res.verdict == LONG
    assert res.series["loss"].note == "a long run: every 8 logged points averaged into one"
    assert res.series["loss"].divergence == 1401  # 1392 exact: averaging moves it by less than a bucket


def test_resumed_runs_continue_across_files_and_a_repeated_step_keeps_its_last_value(tmp_path):
    recs = gen.curve("equal", "gpu", steps=200)
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "part1.log").write_text(gen.megatron(recs[:120]))
    (tmp_path / "g" / "part2.log").write_text(gen.megatron(recs[100:]))  # resumed from step 100
    run = read_side([str(tmp_path / "g")], "gpu")
    s, v = run.tracks["loss"].arrays()
    assert list(s[:3]) == [1, 2, 3] and len(s) == 200 and s[-1] == 200


def test_progress_is_told_every_byte(logs):
    class Count:
        total = done = closed = 0

        def start(self, n):
            self.total = n

        def advance(self, n):
            self.done += n

        def close(self):
            self.closed += 1

    c = Count()
    api.curves(str(logs / "megatron" / "long" / "gpu"), str(logs / "megatron" / "long" / "npu"), progress=c)
    size = sum(p.stat().st_size for p in (logs / "megatron" / "long").rglob("*.log"))
    assert (c.total, c.done, c.closed) == (size, size, 1)


# --- the command ----------------------------------------------------------------------------------

def test_cli_text_shows_reads_verdict_table_and_chart(logs, cli):
    code, out, _ = cli("curves", str(logs / "megatron" / "long" / "gpu"), str(logs / "megatron" / "long" / "npu"),
                       "--color", "never")
    assert code == 1
    assert "verdict: long-term difference" in out
    assert "GPU read " in out and ": Megatron-LM/MindSpeed iteration lines: 3000 record(s), steps 1-3000: " in out
    assert "loss: GPU • NPU × (both ◆, ↑ above 2.778)" in out  # the warm-up above the scale
    assert "▲ diverges at step 1392" in out
    assert "error   SD702 curve:loss  long-term difference: loss matches early" in out
    code, out, _ = cli("curves", str(logs / "megatron" / "long" / "gpu"), str(logs / "megatron" / "long" / "npu"),
                       "--color", "never", "--no-chart")
    assert "loss: GPU •" not in out and "verdict: long-term difference" in out


def test_cli_equal_runs_exit_zero(logs, cli):
    code, out, _ = cli("curves", str(logs / "megatron" / "equal" / "gpu"), str(logs / "megatron" / "equal" / "npu"),
                       "--color", "never")
    assert code == 0
    assert "verdict: equal" in out and "0 error(s), 0 warning(s), 0 info" in out


@pytest.mark.parametrize("kind,rule,key,severity", [
    ("first", "SD701", "curve:loss", "error"), ("long", "SD702", "curve:loss", "error"),
    ("anomaly", "SD703", "curve:loss", "error"), ("downstream", "SD704", "curve:eval_accuracy", "warning")])
def test_cli_json_findings_and_additive_curves_section(logs, cli, kind, rule, key, severity):
    code, out, _ = cli("curves", str(logs / "trainer_state" / kind / "gpu"), str(logs / "trainer_state" / kind / "npu"),
                       "-f", "json")
    doc = json.loads(out)
    assert code == 1 and doc["schema"] == 1
    assert [(f["rule"], f["key"], f["severity"], f["check"]) for f in doc["findings"]][0] == (rule, key, severity,
                                                                                              "process")
    assert doc["curves"]["verdict"] == EXPECTED["trainer_state"][kind][0]
    assert doc["curves"]["read"]["gpu"][0]["reader"] == "HF Trainer trainer_state.json log_history"
    assert set(doc) >= {"schema", "tool", "gpu", "npu", "findings", "masked", "errors", "curves"}


def test_downstream_finding_gives_both_final_values(logs):
    report = api.curves(str(logs / "trainer_state" / "downstream" / "gpu"),
                        str(logs / "trainer_state" / "downstream" / "npu"))
    f = next(f for f in report.findings if f.key == "curve:eval_accuracy")
    assert f.gpu.path.endswith("downstream/gpu/trainer_state.json")
    assert f.npu.value == pytest.approx(f.gpu.value * 0.96, rel=3e-3)
    assert f.message.startswith("equal losses, different downstream metrics: loss matches (mean relative error "
                                "0.32%) but eval_accuracy differs")


def test_select_ignore_and_baseline_apply(logs, cli, tmp_path):
    g, n = str(logs / "megatron" / "long" / "gpu"), str(logs / "megatron" / "long" / "npu")
    assert cli("curves", g, n, "--ignore", "SD702")[0] == 0
    base = tmp_path / "base.json"
    assert cli("baseline", g, n, "-o", str(base))[0] in (0, 1)  # the diff baseline is not about curves
    report = api.curves(g, n)
    base.write_text(json.dumps(api.baseline(report)))
    assert cli("curves", g, n, "--baseline", str(base))[0] == 0


def test_markdown_embeds_the_plot_relative_to_the_markdown_file(logs, cli, tmp_path, monkeypatch):
    """Issue 28: an absolute path is a picture no PR comment can show. On standard output the
    link is relative to the working directory; in `-o FILE.md`, relative to that file."""
    pytest.importorskip("matplotlib", reason="matplotlib not installed: pip install 'scriptdiff[plot]'")
    png = tmp_path / "c.png"
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path)
    g, n = str(logs / "megatron" / "long" / "gpu"), str(logs / "megatron" / "long" / "npu")
    code, out, err = cli("curves", g, n, "-f", "markdown", "--plot", str(png), "-o", "docs/report.md")
    assert code == 1
    assert "![training curves: GPU vs NPU](c.png)" in out and str(png) not in out
    assert "**Verdict: long-term difference** (aligned by step (consumed samples per step equal: 256))" in out
    assert "| `loss` | 3000 | 0.31% | 2.01% | 4.20% | 5.30% (2780) | 5 | 1392 |" in out
    assert f"scriptdiff: plot 1000x1200 -> {png}" in err and png.is_file()
    written = (tmp_path / "docs" / "report.md").read_text()
    assert "![training curves: GPU vs NPU](../c.png)" in written and "| `loss` | 3000 |" in written
    code, out, _err = cli("curves", g, n, "-f", "markdown")  # no plot: the section, no picture
    assert "**Verdict: long-term difference**" in out and "![" not in out


# --- bad input: one line, never a traceback -------------------------------------------------------

def test_missing_side_is_one_line_and_exit_2(logs, cli, tmp_path):
    code, out, err = cli("curves", str(tmp_path / "nope.log"), str(logs / "megatron" / "equal" / "npu"))
    assert code == 2
    assert f"{tmp_path / 'nope.log'}: no such file or directory" in out + err
    assert "Traceback" not in out + err


def test_a_side_without_curves_is_exit_2(cli, tmp_path, logs):
    (tmp_path / "notes.txt").write_text("nothing to see here\n")
    code, out, err = cli("curves", str(tmp_path / "notes.txt"), str(logs / "megatron" / "equal" / "npu"), "-f", "json")
    assert code == 2
    assert json.loads(out)["errors"] == [{"path": str(tmp_path / "notes.txt"), "message":
                                          f"no training curves recognised ({tmp_path / 'notes.txt'} "
                                          f"(no training metrics recognised))"}]


def test_a_broken_trainer_state_is_one_line(cli, tmp_path, logs):
    (tmp_path / "trainer_state.json").write_text('{"log_history": [{"step": 1, "loss": 2.0}, ')
    code, out, err = cli("curves", str(tmp_path / "trainer_state.json"), str(logs / "trainer_state" / "equal" / "npu"),
                         "-f", "json")
    assert code == 2
    [e] = json.loads(out)["errors"][:1]
    assert e["path"] == str(tmp_path / "trainer_state.json") and e["message"].startswith("not valid JSON: ")


def test_a_bad_jsonl_line_is_skipped_and_said(tmp_path):
    (tmp_path / "m.jsonl").write_text('{"_step": 1, "loss": 2.0}\n{"_step": 2, "loss": \n{"_step": 3, "loss": 1.9}\n')
    run = read_side([str(tmp_path / "m.jsonl")], "gpu")
    assert run.tracks["loss"].points == 2
    assert [(e.message, e.fatal) for e in run.errors] == [("line 2: not a JSON object; the line was skipped", False)]


def test_bad_options_are_usage_errors(cli, logs):
    g, n = str(logs / "megatron" / "equal" / "gpu"), str(logs / "megatron" / "equal" / "npu")
    assert cli("curves", g, n, "--rtol", "0")[0:3:2] == (2, "scriptdiff: --rtol must be a positive fraction (0.01 = 1%)\n")
    code, _out, err = cli("curves", g, n, "--plot", "x.gif")
    assert (code, err) == (2, "scriptdiff: --plot x.gif: the file name must end in .png or .svg\n")
    code, _out, err = cli("curves", g, n, "--chart", "nope")
    assert code == 2 and err.startswith("scriptdiff: --chart nope: not a series both sides logged (eval_loss, ")


# --- git ------------------------------------------------------------------------------------------

def test_rev_path_sides(tmp_path, monkeypatch, logs):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.log").write_text((logs / "megatron" / "long" / "gpu" / "train.log").read_text())
    run = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    run("-c", "user.name=t", "-c", "user.email=t@t", "add", "train.log")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "gpu run")
    (repo / "train.log").write_text((logs / "megatron" / "long" / "npu" / "train.log").read_text())
    monkeypatch.chdir(repo)
    report = api.curves("HEAD:train.log", "train.log")
    assert [(f.rule, f.gpu.path) for f in report.findings if f.severity == "error"] == [("SD702", "HEAD:train.log")]
    assert report.details["curves"].series["loss"].divergence == 1392


# --- check: the seventh verdict ---------------------------------------------------------------------

def check_logs(tmp_path, gpu: str, npu: str):
    """`scriptdiff check` with only `logs` configured, one path per side."""
    cfg = tmp_path / "scriptdiff.toml"
    cfg.write_text(f'[gpu]\nlogs = ["{gpu}"]\n[npu]\nlogs = ["{npu}"]\n')
    return run_checks(load_config(str(cfg)), Options(use_cache=False))


def test_check_gains_process_data_when_logs_are_configured(tmp_path, logs):
    report = check_logs(tmp_path, f"{logs}/megatron/long/gpu/train.log", f"{logs}/megatron/long/npu/train.log")
    assert report.verdicts["process"] == ("differences", "1 error(s)")  # streamed, whatever --max-bytes says
    [f] = [f for f in report.findings if f.check == "process"]
    assert (f.rule, f.key) == ("SD702", "curve:loss")
    report = check_logs(tmp_path, f"{logs}/megatron/equal/gpu/train.log", f"{logs}/megatron/equal/npu/train.log")
    assert report.verdicts["process"] == ("pass", "no differences")


def test_check_without_logs_has_no_process_verdict(tmp_path):
    cfg = tmp_path / "scriptdiff.toml"
    cfg.write_text('[gpu]\nscripts = ["gpu"]\n[npu]\nscripts = ["npu"]\n')
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    report = run_checks(load_config(str(cfg)), Options(use_cache=False))
    assert "process" not in report.verdicts
    assert not [f for f in report.findings if f.check == "process"]


def test_check_logs_without_curves_are_not_checked_never_a_pass(tmp_path, logs):
    (tmp_path / "args.log").write_text(gen.ARGS)
    report = check_logs(tmp_path, f"{tmp_path}/args.log", f"{logs}/megatron/equal/npu/train.log")
    verdict, reason = report.verdicts["process"]
    assert verdict == "not checked" and reason.startswith("not understood: ")
    [f] = [f for f in report.findings if f.check == "process"]
    assert f.rule == "SD154" and "no training curves recognised" in f.message


def test_diff_reads_trainer_state_as_curves_not_as_a_config(logs, cli):
    code, out, _ = cli("diff", str(logs / "trainer_state" / "long" / "gpu"), str(logs / "trainer_state" / "long" / "npu"),
                       "-f", "json")
    doc = json.loads(out)
    assert code == 1
    assert [(f["rule"], f["key"], f["check"]) for f in doc["findings"]] == [("SD702", "curve:loss", "process")]
    assert [(a["kind"], a["status"]) for a in doc["inputs"]] == [("trainer_state", "understood")] * 2
    code, out, _ = cli("diff", str(logs / "trainer_state" / "equal" / "gpu"),
                       str(logs / "trainer_state" / "equal" / "npu"), "-f", "json")
    assert (code, json.loads(out)["findings"]) == (0, [])


def test_check_with_trainer_state_logs(tmp_path, logs):
    report = check_logs(tmp_path, f"{logs}/trainer_state/first/gpu", f"{logs}/trainer_state/first/npu")
    assert report.verdicts["process"] == ("differences", "1 error(s)")
    assert report.verdicts["hyperparameters"] == ("pass", "no differences")  # log_history is not a config
    assert [(f.rule, f.key) for f in report.findings if f.check == "process"] == [("SD701", "curve:loss")]


def test_errors_csv_has_every_aligned_point(logs, cli, tmp_path):
    out = tmp_path / "errors.csv"
    code, _o, err = cli("curves", str(logs / "llamafactory" / "first" / "gpu"), str(logs / "llamafactory" / "first" / "npu"),
                        "--errors", str(out), "--no-chart")
    assert code == 1 and err == f"scriptdiff: 1200 point(s) -> {out}\n"  # loss and lr, 600 each (epoch: bookkeeping)
    lines = out.read_text().splitlines()
    assert lines[0] == "series,step,gpu,npu,abs_err,rel_err"
    series, step, g, n, ab, rel = lines[1 + [l.split(",")[0] for l in lines[1:]].index("loss")].split(",")
    assert (series, step) == ("loss", "5")
    assert float(ab) == pytest.approx(abs(float(n) - float(g))) and float(rel) == pytest.approx(float(ab) / float(g))


def test_hostile_shapes_stay_one_line(tmp_path, logs):
    (tmp_path / "noline.log").write_bytes(b"{'loss': " + b"9" * (3 << 20) + b"}")  # no newline, 3 MiB: read in pieces
    run = read_side([str(tmp_path / "noline.log")], "gpu")
    assert run.empty and run.errors == [] and run.skipped_files == [f"{tmp_path / 'noline.log'} (no training metrics "
                                                                    f"recognised)"]
    (tmp_path / "big.csv").write_text("step,loss\n1,2.0\n2," + "1" * 200_000 + "\n3,1.9\n")
    run = read_side([str(tmp_path / "big.csv")], "gpu")
    assert run.tracks["loss"].points == 1
    assert [e.message for e in run.errors] == [
        "line 3: field larger than field limit (131072); the rest of the file was not read"]


def test_suppressions_read_a_cited_log_only_when_it_holds_a_marker(logs, tmp_path, monkeypatch):
    """A curve finding cites its log line, and inline suppressions look at the lines findings
    cite: a log is scanned a chunk at a time for the marker, never read whole for nothing
    (a 500 MB log doubled the peak memory). A marker on the cited line still suppresses."""
    import scriptdiff.run.suppress as sup

    read = []
    real = sup.read_path
    monkeypatch.setattr(sup, "read_path", lambda p, *a, **k: read.append(p) or real(p, *a, **k))
    g, n = logs / "megatron" / "long" / "gpu", logs / "megatron" / "long" / "npu"
    report = api.curves(str(g), str(n))
    f = next(f for f in report.findings if f.rule == "SD702")
    assert read == [] and f.npu.line
    (tmp_path / "npu").mkdir()
    lines = (n / "train.log").read_text().splitlines(keepends=True)
    lines[f.npu.line - 1] = lines[f.npu.line - 1].rstrip("\n") + "  # scriptdiff: ignore[SD702]\n"
    (tmp_path / "npu" / "train.log").write_text("".join(lines))
    report = api.curves(str(g), str(tmp_path / "npu"))
    assert [x.rule for x in report.findings if x.severity == "error"] == []
    assert read == [str(tmp_path / "npu" / "train.log")]

"""Protocol Buffers text configs (`pipeline.config`, `.pbtxt`, `.prototxt`): lang/pbtxt.py reads
each scalar field as a fact at its line, keyed as a YAML config's would be; a launch script
follows the config it names; a file that does not parse is one error and the run fails."""
from __future__ import annotations

import json

from scriptdiff.inputs.sources import Source
from scriptdiff.lang.pbtxt import parse
from scriptdiff.ruleset.registry import detect_kind

PIPELINE = """# a made-up detector pipeline
model_config {
    model_name: 'box_net'
    layers_config {
        conv { layer: 1  filters: 32 }
        conv { layer: 2  filters: 64 }
    }
}
train_config {
    batch_size: {batch}
    max_iterations: 120000
    optimizer {
        momentum_optimizer {
            learning_rate: 0.01  # the base rate
        }
    }
    use_moving_average: false
}
"""


def config(batch: int = 8, edits: dict | None = None) -> str:
    text = PIPELINE.replace("{batch}", str(batch))
    for old, new in (edits or {}).items():
        assert old in text
        text = text.replace(old, new)
    return text


def write(tmp_path, name, gpu, npu):
    (tmp_path / "gpu").mkdir(exist_ok=True)
    (tmp_path / "npu").mkdir(exist_ok=True)
    (tmp_path / "gpu" / name).write_text(gpu)
    (tmp_path / "npu" / name).write_text(npu)
    return str(tmp_path / "gpu" / name), str(tmp_path / "npu" / name)


def rows(out: str) -> list:
    return [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"], f["gpu"]["line"], f["npu"]["line"])
            for f in json.loads(out)["findings"]]


def test_the_bundled_faithful_copy_is_silent(cli):
    code, out, _err = cli("diff", "fixtures/pbtxt/gpu", "fixtures/pbtxt/npu", "--format", "json", "--no-cache")
    assert (code, rows(out)) == (0, [])
    assert [i["kind"] for i in json.loads(out)["inputs"]] == ["pbtxt", "pbtxt"]


def test_parse_keeps_lines_and_repeated_fields():
    data, lines = parse(config())
    assert data["model_config"]["layers_config"]["conv"] == [{"layer": 1, "filters": 32}, {"layer": 2, "filters": 64}]
    assert data["train_config"]["use_moving_average"] is False
    assert lines[("train_config", "batch_size")] == 10
    assert lines[("model_config", "layers_config", "conv", 1, "filters")] == 6


def test_detected_by_suffix_and_by_content():
    assert detect_kind(Source("configs/pipeline.config", config().encode())) == "pbtxt"
    assert detect_kind(Source("net.prototxt", b'layer { name: "data" }\n')) == "pbtxt"
    assert detect_kind(Source("web.config", b'<configuration>\n<a x="1"/>\n</configuration>\n')) != "pbtxt"


def test_a_faithful_copy_is_silent_and_a_changed_field_is_its_setting(tmp_path, cli):
    g, n = write(tmp_path, "pipeline.config", config(), config().replace("# the base rate", "# ported"))
    code, out, _err = cli("diff", g, n, "--format", "json", "--no-cache")
    assert (code, rows(out)) == (0, [])
    g, n = write(tmp_path, "pipeline.config", config(), config(batch=4, edits={"filters: 64": "filters: 48"}))
    code, out, _err = cli("diff", g, n, "--format", "json", "--no-cache")
    assert code == 1
    assert rows(out) == [
        ("SD220", "model_config.layers_config.conv[1].filters", 64, 48, 6, 6),
        ("SD203", "micro_batch_size", 8, 4, 10, 10)]


def test_a_launch_script_follows_the_config_it_names(tmp_path, cli):
    launch = "python train.py --pipeline_config=pipeline.config\n"
    g, n = write(tmp_path, "run.sh", launch, launch)
    write(tmp_path, "pipeline.config", config(), config(edits={"max_iterations: 120000": "max_iterations: 60000"}))
    code, out, _err = cli("diff", g, n, "--format", "json", "--no-cache")
    assert code == 1
    assert rows(out) == [("SD202", "train_iters", 120000, 60000, 11, 11)]


def test_a_config_that_does_not_parse_is_one_error_and_the_run_fails(tmp_path, cli):
    g, n = write(tmp_path, "pipeline.config", config(), config().rstrip().rstrip("}"))
    code, out, err = cli("diff", g, n, "--format", "json", "--no-cache")
    doc = json.loads(out)
    assert code == 2
    assert [e["path"] for e in doc["errors"]] == [n]
    assert doc["errors"][0]["message"].startswith("not valid protobuf text: a message is not closed with '}'")
    assert "Traceback" not in err

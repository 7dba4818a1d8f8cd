"""Issue 39: a config restructured writes the same settings under another path. A section of
settings one side sets under another path than the other (grouped by file and section, at least
three names shared) is one info finding for its equal settings (SD232) and one finding per
setting whose value differs, with both sides; made-up configs throughout."""
from __future__ import annotations

from test_keys_anywhere import loud, pair, rows

GPU = """\
kestrel_pool:
  grid: 8
  dim: 4096
  heads: 32
  scale: 6.0
lr: 1.0e-4
"""
NPU = """\
model:
  orbit_adapter:
    grid: 8
    dim: 4096
    heads: 32
    scale: {scale}
lr: 1.0e-4
"""


def test_a_section_written_under_another_path_is_one_info_and_its_differences(tmp_path):
    rep = pair(tmp_path, "orbit.yaml", GPU, NPU.format(scale=3.0))
    assert rows(rep) == [
        ("SD220", "kestrel_pool.scale", 6.0, 3.0, 5, 6),
        ("SD232", "section:kestrel_pool", "kestrel_pool", "model.orbit_adapter", 2, 3),
    ]
    info = next(f for f in rep.findings if f.rule == "SD232")
    assert info.severity == "info" and info.extra["equal"] == ["dim", "grid", "heads"]
    assert next(f for f in rep.findings if f.rule == "SD220").message == (
        "kestrel_pool.scale on GPU is 6.0 and model.orbit_adapter.scale on NPU 3.0: one setting, its section written "
        "under another path")
    # the same values: one info, nothing loud
    same = pair(tmp_path / "same", "orbit.yaml", GPU, NPU.format(scale=6.0))
    assert loud(same) == [] and [r[0] for r in rows(same)] == ["SD232"]


def test_sections_sharing_too_few_names_stay_settings_of_one_side(tmp_path):
    npu = "model:\n  orbit_adapter:\n    width: 8\n    depth: 4096\n    heads: 32\n    scale: 6.0\nlr: 1.0e-4\n"
    rep = pair(tmp_path, "orbit.yaml", GPU, npu)
    assert [r[0] for r in rows(rep)] == ["SD220"] * 8  # four on each side, each set on one side only
    assert not any(f.rule == "SD232" for f in rep.findings)

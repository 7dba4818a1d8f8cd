"""The registries of file kinds and checks (rules/kinds.yaml, scriptdiff/ruleset/registry.py)."""
from __future__ import annotations

import importlib
import shutil

import pytest

from scriptdiff.ruleset import registry
from scriptdiff.ruleset.rulepack import RuleError, load_packs, rules_dir
from scriptdiff.inputs.sources import Source


@pytest.mark.parametrize("name,text,kind", [
    ("train.py", "x = 1\n", "python"),
    ("run", "#!/usr/bin/env python3\nx = 1\n", "python"),
    ("run", "#!/bin/bash\nexport A=1\n", "shell"),
    ("pretrain.sh", "torchrun x.py\n", "shell"),
    ("environment.yml", "name: x\ndependencies:\n  - pip\n", "conda"),
    ("config.yaml", "lr: 1\n", "yaml"),
    ("snap.json", '{"scriptdiff_snapshot": 1}', "snapshot"),
    ("pip.json", '[{"name": "torch", "version": "2.1.0"}]', "pipjson"),
    ("ds.json", '{"train_batch_size": 8}', "json"),  # HF's trainer_state.json has train_batch_size too
    ("ds_config.json", '{"zero_optimization": {"stage": 2}}', "deepspeed"),
    ("llama3_8b.toml", "[optimizer]\nlr = 3e-4\n", "toml"),
    ("setup.cfg", "[metadata]\nname = x\n", "text"),
    ("train.log", "iteration 1\n", "log"),
    ("stdout", "------------------------ arguments ------------------------\n", "log"),
    ("packages.txt", "torch==2.1.0\nnumpy==1.26.0\n", "requirements"),
    ("notes.txt", "hello\n", "text"),
    ("nb.ipynb", "{}", "notebook"),
])
def test_detect(name, text, kind):
    assert registry.detect_kind(Source(name=name, data=text.encode())) == kind


def test_every_kind_has_its_reader_and_every_check_its_hooks():
    for k in registry.kinds().values():
        mod = k.module()
        assert callable(mod.extract), k.name
        assert callable(getattr(mod, "diff_pair", None)) == k.structural or not k.structural, k.name
        if k.sniff:
            assert callable(registry._function(k.sniff)), k.name
    for c in registry.checks().values():
        for hook in ("classify", "derive", "derive_pair"):
            if getattr(c, hook):
                assert callable(c.hook(hook)), (c.name, hook)
        for m in c.needs:
            importlib.import_module(f"scriptdiff.{m}")
    assert registry.check_names()[:6] == ("hyperparameters", "script", "environment", "libraries", "dataset",
                                          "weights")


def test_kind_by_name_only_when_the_name_decides():
    assert registry.kind_by_name("train.pyi").name == "python"
    assert registry.kind_by_name("train.py") is None  # python or a dict-style config (pyconfig): content decides
    assert registry.kind_by_name("config.json") is None  # json, snapshot, manifest... need the content
    assert registry.kind_by_name("README") is None


def _packs(tmp_path, extra: dict[str, str]):
    d = tmp_path / "rules"
    shutil.copytree(rules_dir(), d)
    for name, text in extra.items():
        (d / name).write_text(text, encoding="utf-8")
    return load_packs(sorted(d.glob("*.yaml")))


def test_a_new_kind_lives_in_its_own_pack(tmp_path):
    rs = _packs(tmp_path, {"ini.yaml": "kinds:\n  ini:\n    reader: lang.text\n    suffixes: [.ini]\n"
                                       "    priority: 5\n    structural: true\n"})
    assert rs.section("kinds")["ini"]["reader"] == "lang.text"
    assert rs.section_origin["kinds.ini"] == "rules/ini.yaml"


@pytest.mark.parametrize("text,needle", [
    ("kinds:\n  python:\n    reader: lang.python\n", "kinds.python: defined twice (also in rules/extra.yaml:2)"),
    ("kinds:\n  ini:\n    reader: lang.text\n    checks: [vibes]\n", "rules/extra.yaml:4: kinds.ini.checks: unknown check(s) vibes"),
    ("kinds:\n  ini:\n    reader: lang.text\n    sniff: not a function\n", "rules/extra.yaml:4: kinds.ini.sniff: expected \"module:function\""),
    ("kinds:\n  ini:\n    reader: lang.text\n    suffixes: [INI]\n", "rules/extra.yaml:4: kinds.ini.suffixes[0]: expected a lower-case ending with its dot (.py) (got 'INI')"),
    ("kinds:\n  ini:\n    reader: lang.text\n    colour: blue\n", "rules/extra.yaml:4: kinds.ini: unknown field(s) colour"),
    ("checks:\n  curves:\n    title: process data\n", "rules/extra.yaml:2: checks.curves: needs an order and a title"),
    ("dialects:\n  x:\n    kinds: [yaml]\n    paths: {a.b: not_a_key}\n", "rules/extra.yaml:4: dialects.x.paths.a.b: 'a.b' -> 'not_a_key' is not a vocabulary key"),
])
def test_bad_registry_entries_name_their_pack(tmp_path, text, needle):
    with pytest.raises(RuleError) as e:
        _packs(tmp_path, {"extra.yaml": text})
    assert needle in str(e.value)
    assert "rules/extra.yaml" in str(e.value)  # a duplicate names both packs


def test_classifiers_come_from_the_registry_not_from_import_order():
    cl = registry.classifiers()
    assert cl["hyperparameters"].__module__ == "scriptdiff.checks.hparams"
    assert cl["environment"].__module__ == "scriptdiff.checks.envvars"
    assert "script" not in cl


# --- the kind owns its format: references, the keys it can set, its page lexer -------------------

@pytest.mark.parametrize("key,ref,kind", [
    ("deepspeed", "ds_z3.json", "deepspeed"),
    ("deepspeed_config", "configs/ds.JSON", "deepspeed"),
    ("config", "ds.json", "json"),  # the file's content decides what it is once read
    ("config_file", "accelerate.yaml", "yaml"),
    ("config-file", "a.yml", "yaml"),
    ("job.config_file", "train_configs/llama3_8b.toml", "toml"),  # torchtitan's dotted flag
    ("trainer.deepspeed", "ds.json", "deepspeed"),  # a Hydra key, by its last part
    ("deepspeed", "ds.yaml", None),  # DeepSpeed reads JSON only
    ("config", "train.ini", None),  # INI is text: nothing follows it
    ("lr", "x.json", None),
    ("config", True, None),
])
def test_referenced_kind(key, ref, kind):
    got = registry.referenced_kind(key, ref)
    assert (got.name if got else None) == kind


def test_reference_suffixes_are_the_referenced_kinds_suffixes():
    assert registry.reference_suffixes() == (".config", ".json", ".pbtxt", ".prototxt", ".toml", ".yaml", ".yml")


@pytest.mark.parametrize("kind,key,can", [
    ("deepspeed", "lr", True),  # optimizer.params.lr
    ("deepspeed", "micro_batch_size", True),  # train_micro_batch_size_per_gpu
    ("deepspeed", "zero_stage", True),
    ("deepspeed", "adam_beta2", True),
    ("deepspeed", "params_dtype", True),  # bf16.enabled
    ("deepspeed", "zero_optimization.overlap_comm", True),  # its own section, not in the vocabulary
    ("deepspeed", "train_iters", False),  # the same category as lr, but no DeepSpeed spelling
    ("deepspeed", "use_flash_attn", False),
    ("deepspeed", "overwrite_cache", False),
    ("deepspeed", "tensor_model_parallel_size", False),
    ("json", "train_iters", True),
    ("yaml", "overwrite_cache", True),
    ("toml", "use_flash_attn", True),
])
def test_kind_can_set(kind, key, can):
    assert registry.kind_can_set(kind, key) is can
    assert registry.kind_can_set(registry.kind(kind), key) is can


def test_kind_can_set_by_category_and_pattern(tmp_path):
    rs = _packs(tmp_path, {"ini.yaml": "kinds:\n  ini:\n    reader: lang.text\n    suffixes: [.ini]\n"
                                       "    sets: {categories: [lr], keys: ['train.*']}\n"})
    k = registry._build(rs.section("kinds")["ini"], registry.Kind, "ini")
    assert [registry.kind_can_set(k, key) for key in ("train_iters", "lr", "train.foo", "seed", "use_flash_attn")] \
        == [True, True, True, False, False]


def test_text_claims_no_suffix_another_kind_claims():
    text = set(registry.kind("text").suffixes)
    others = {s for k in registry.kinds().values() if k.name != "text" for s in k.suffixes}
    assert text == {".cfg", ".ini"} and not text & others


def test_an_ini_config_is_compared_as_text_never_silently(tmp_path):
    """.cfg/.ini stay text (rules/kinds.yaml): a changed value is a line difference."""
    from scriptdiff.api import diff
    from scriptdiff.model import Options

    for side, lr in (("gpu", "1e-4"), ("npu", "2e-4")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "train.ini").write_text(f"[train]\nlr = {lr}\nseed = 1\n")
    r = diff(str(tmp_path / "gpu" / "train.ini"), str(tmp_path / "npu" / "train.ini"), Options(use_cache=False))
    assert [(f.rule, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in r.findings] == [
        ("SD108", "lr = 1e-4", "lr = 2e-4", 2, 2)]
    assert r.exit_code() == 1


def test_every_lexer_a_kind_names_exists():
    pytest.importorskip("pygments")
    named = {k.name: k.lexer for k in registry.kinds().values() if k.lexer}
    assert named["toml"] == "configs:TOMLLexer" and named["deepspeed"] == "data:JsonLexer"
    for name, spec in named.items():
        mod, _, cls = spec.partition(":")
        assert callable(getattr(importlib.import_module(f"pygments.lexers.{mod}"), cls)), name


@pytest.mark.parametrize("text,needle", [
    ("    lexer: nosuch:IniLexer\n", "rules/extra.yaml:4: kinds.ini.lexer: pygments has no lexer IniLexer in "
                                     "pygments.lexers.nosuch (it is in configs)"),
    ("    lexer: IniLexer\n", "rules/extra.yaml:4: kinds.ini.lexer: 'IniLexer' must be \"module:Class\""),
    ("    lexer: configs:IniLexr\n", "rules/extra.yaml:4: kinds.ini.lexer: pygments has no lexer IniLexr"),
    ("    referenced: [config-file]\n", "rules/extra.yaml:4: kinds.ini.referenced[0]: expected an option name in "
                                      "lower case with underscores (config_file) (got 'config-file')"),
    ("    sets: {categories: [vibes]}\n", "rules/extra.yaml:4: kinds.ini.sets.categories: unknown vocabulary "
                                        "categor(ies) vibes"),
    ("    sets: {spelled: [torchtitan]}\n", "rules/extra.yaml:4: kinds.ini.sets.spelled: torchtitan is not a "
                                          "vocabulary framework column"),
    ("    sets: everything\n", "rules/extra.yaml:4: kinds.ini.sets: expected 'any' or a mapping of categories, "
                              "spelled, keys"),
])
def test_bad_kind_format_fields_name_their_pack_line(tmp_path, text, needle):
    if "lexer" in text and "must be" not in needle:
        pytest.importorskip("pygments")
    with pytest.raises(RuleError) as e:
        _packs(tmp_path, {"extra.yaml": "# an INI kind\nkinds:\n  ini:\n" + text + "    reader: lang.text\n"
                                        "    suffixes: [.ini]\n"})
    assert needle in str(e.value)


def test_no_module_keeps_its_own_reference_or_lexer_list():
    """Reference names and suffixes and page lexers are the kinds' data (rules/kinds.yaml):
    derived from the registry, not listed again in a module or in the launcher table."""
    from pathlib import Path

    import scriptdiff
    from scriptdiff.report import html
    from scriptdiff.ruleset.rules import load

    assert not hasattr(html, "_LEXERS")
    assert "references" not in load().section("launchers")
    pkg = Path(scriptdiff.__file__).parent
    for p in pkg.rglob("*.py"):
        text = p.read_text(encoding="utf-8")
        for name in ("_LEXERS", "REFERENCE_KEYS", "CONFIG_SUFFIXES", "reference_flags", "config_suffixes"):
            assert name not in text, (p.name, name)
        if p.name != "rule_validators.py":  # its error message shows the format
            assert "Lexer\"" not in text and "Lexer')" not in text, p.name

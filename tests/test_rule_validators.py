"""Section validators: every one is registered, and a malformed section stops loading with an
error that names the pack. Each case loads a temporary copy of rules/ with one file changed."""
import inspect
import shutil

import pytest

from scriptdiff import rule_validators, rulepack
from scriptdiff.rulepack import RuleError, load_packs, rules_dir


def test_every_check_function_is_registered():
    checks = [fn for name, fn in inspect.getmembers(rule_validators, inspect.isfunction)
              if name.startswith("check_") and fn.__module__ == rule_validators.__name__]
    assert checks
    missing = [fn.__name__ for fn in checks if fn not in rulepack.VALIDATORS]
    assert missing == []


def load_with(tmp_path, pack: str, old: str, new: str):
    """Load a copy of rules/ in which `old` is replaced by `new` in rules/<pack>."""
    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    path = folder / pack
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return load_packs(sorted(folder.glob("*.yaml")))


def test_unchanged_copy_loads(tmp_path):
    rs = load_with(tmp_path, "secrets.yaml", "secrets:", "secrets:")
    assert rs.section("value_ports")["params_dtype"]["torch.bfloat16"] == "bf16"
    assert rs.section("value_ports")["use_flash_attn"]["fa2"] is True


@pytest.mark.parametrize("pack,old,new,needle", [
    # a python mask naming a rule that does not exist
    ("python.yaml", "gpu: torch.cuda.amp, rule: SD009}", "gpu: torch.cuda.amp, rule: SD999}", "'SD999'"),
    # a file-stem rename without {base}
    ("pairing.yaml", '{gpu: "{base}_gpu", npu: "{base}_npu"}', '{gpu: "train_gpu", npu: "{base}_npu"}', "{base}"),
    # value ports: a key outside the vocabulary, an unquoted `no` (a YAML boolean), a table of lists
    ("vocabulary.yaml", "value_ports:\n  params_dtype:", "value_ports:\n  no_such_key:", "not a vocabulary key"),
    ("vocabulary.yaml", '    "no": fp32', "    no: fp32", "lower-case string"),
    ("vocabulary.yaml", "    fa2: true", "    fa2: [true]", "a string, a boolean or a number"),
    ("vocabulary.yaml", "    torch.half: fp16", "    Torch.Half: fp16", "lower-case string"),
    # categories: a severity in two places (the category's disagrees with SD201's error; even one that
    # agrees is a second place), a rule that is missing, a mask or of another check, no 'other'
    ("vocabulary.yaml", "attention:   {rule: SD201,", "attention:   {rule: SD201, severity: warning,",
     "category 'attention' gives a severity ('warning'); a category only names its rule, whose severity (error"),
    ("vocabulary.yaml", "attention:   {rule: SD201,", "attention:   {rule: SD201, severity: error,",
     "gives a severity ('error')"),
    ("vocabulary.yaml", "attention:   {rule: SD201,", "attention:   {rule: SD299,", "must name a known rule code"),
    ("vocabulary.yaml", "attention:   {rule: SD201,", "attention:   {rule: SD015,", "SD015 is not a finding of the hyp"),
    ("vocabulary.yaml", "attention:   {rule: SD201,", "attention:   {rule: SD301,", "SD301 is not a finding of the hyp"),
    ("vocabulary.yaml", "  other:       {rule: SD220, title: other setting}\n", "", "categories need 'other'"),
    # secrets: an unknown list, a lower-case word, a suffix of two words
    ("secrets.yaml", "  not_secret:", "  allow:", "unknown field"),
    ("secrets.yaml", "words: [SECRET,", "words: [secret,", "upper-case words"),
    ("secrets.yaml", "suffixes: [TOKEN,", "suffixes: [HF_TOKEN,", "one word"),
])
def test_malformed_section_names_the_pack(tmp_path, pack, old, new, needle):
    with pytest.raises(RuleError) as e:
        load_with(tmp_path, pack, old, new)
    assert str(e.value).startswith(f"rules/{pack}:")
    assert needle in str(e.value)


def test_secrets_need_both_lists(tmp_path):
    with pytest.raises(RuleError, match=r"^rules/secrets.yaml:1: secrets needs non-empty"):
        load_with(tmp_path, "secrets.yaml", "  suffixes: [TOKEN, KEY, SECRET, PASSWORD, PASSWD, AUTH, API, ACCESS]\n", "")


@pytest.mark.parametrize("old,new,needle", [
    # a row out of order, a version that does not parse, a row citing no table, an undated table
    ('    - {torch_npu: "2.12.0",', '    - {torch_npu: "2.1.0",', "ascend_versions.torch_npu[62] is out of order"),
    ('cann: "8.0.RC3", source: pta-compat}', 'cann: "8.0.RC3-latest", source: pta-compat}',
     "'8.0.RC3-latest' is not a CANN version"),
    ('{torch_npu: "2.4.0", torch: "2.4.0"', '{torch_npu: "2.4.0 final", torch: "2.4.0"', "is not a PEP 440 version"),
    ('hdk: "25.2.0", source: deployer-mirror}', 'hdk: "25.2.0", source: nowhere}', "source 'nowhere' is not one of"),
    ('      date: "2024-09-14"\n', '', "needs a date"),
    ('      commit: 006ca00290d3a8d5bdd635c61c446f743660ac84\n', '', "names its repo, path and commit"),
    ('mindspeed: "2.3.0_core_r0.12.1"', 'mindspeed: "2.3.0_core_r0.11.0"', "is not in ascend_versions.mindspeed"),
])
def test_malformed_ascend_versions_name_the_pack(tmp_path, old, new, needle):
    with pytest.raises(RuleError) as e:
        load_with(tmp_path, "ascend_versions.yaml", old, new)
    assert str(e.value).startswith("rules/ascend_versions.yaml:1: ")
    assert needle in str(e.value)

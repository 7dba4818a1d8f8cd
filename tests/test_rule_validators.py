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

"""Secret-looking names (rules/secrets.yaml, scriptdiff.ruleset.secrets) and the value ports of
rules/vocabulary.yaml (vocabulary.convert)."""
import pytest

from scriptdiff.ruleset.vocabulary import convert
from scriptdiff.lang.config import facts_for
from scriptdiff.model import Extract
from scriptdiff.ruleset.secrets import is_secret_name, words_of

SECRET = [
    "HF_TOKEN", "hub_token", "hubToken", "WANDB_API_KEY", "api_key", "MY_PASSWORD", "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID", "PRIVATE_KEY", "GITHUB_PAT", "DB_PASSWD", "AUTH_HEADER", "AUTHORIZATION", "BASIC_AUTH",
    "OPENAI_APIKEY", "HCCL_ACCESSKEY", "HCCL_KEY", "CLIENT_SECRET", "MY_CREDENTIALS", "TORCH_CREDENTIALS_FILE",
    "NCCL_AUTH_PASSWD", "wandb.api_key", "api-key", "SESSION_COOKIE", "MY_SECRET_EOS_TOKEN",
    # credentials under allowlisted prefixes that lacked a listed word (issue 12)
    "HF_PAT", "HF_CREDS", "HF_PASSPHRASE", "HF_BEARER", "NVIDIA_NGC_API", "DS_ACCESS", "ACCELERATE_LOGIN",
]
NOT_SECRET = [
    "num_key_value_heads", "pad_token_id", "max_tokens", "key_dim", "tokenizer_name_or_path", "max_new_tokens",
    "TOKENIZERS_PARALLELISM", "moe_token_dispatcher_type", "tokenizer_type", "KEYBOARD", "NCCL_IB_HCA",
    "CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "HF_TOKEN_PATH", "hub_private_repo", "eos_token",
    "pad_token", "prompt_key", "reward_fn_key", "COMPAT", "AUTHOR", "", "__", "OPENAI_API_BASE", "access_pattern",
]


@pytest.mark.parametrize("name", SECRET)
def test_secret_names(name):
    assert is_secret_name(name) is True


@pytest.mark.parametrize("name", NOT_SECRET)
def test_names_that_carry_settings_are_not_secret(name):
    assert is_secret_name(name) is False


def test_words_split_at_non_alphanumerics():
    assert words_of("actor.optim-lr[0]") == ("ACTOR", "OPTIM", "LR", "0")


class _Src:
    name = "cfg.yaml"
    origin = None


def _keys(path, value):
    return [f.key for f in facts_for(path, value, "hf", _Src(), 1, ["x"], Extract())]


def test_config_reader_drops_credentials_keeps_settings():
    assert _keys(("hub_token",), "hf_abc") == []
    assert _keys(("wandb", "api_key"), "abc") == []
    assert _keys(("credentials", "user"), "me") == []  # any segment of the path
    assert _keys(("pad_token_id",), 0) == ["pad_token_id"]
    assert _keys(("data", "prompt_key"), "prompt") == ["data.prompt_key"]


@pytest.mark.parametrize("key,raw,value", [
    ("params_dtype", "torch.bfloat16", "bf16"), ("params_dtype", "'float16'", "fp16"), ("params_dtype", "no", "fp32"),
    ("params_dtype", "None", "fp32"), ("params_dtype", "Half", "fp16"), ("params_dtype", "int8", "int8"),
    ("params_dtype", True, "true"),
    ("use_flash_attn", "flash_attention_2", True), ("use_flash_attn", "sdpa", False), ("use_flash_attn", "FA2", True),
    ("use_flash_attn", True, True), ("use_flash_attn", False, False), ("use_flash_attn", "auto", "auto"),
    ("use_flash_attn", "xformers", "xformers"), ("use_flash_attn", '"true"', True),
])
def test_value_ports(key, raw, value):
    assert convert(key, raw) == (key, value)


# ----------------------------------------------------------------- names and values (issue 12)
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from scriptdiff.ruleset.secrets import (is_secret, is_secret_value, redact_text, secret_words,  # noqa: E402
                                withheld)

TOKENS = [
    "https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/org/repo.git",  # a token as a URL user name
    "https://user:pa55word@example.com/x",
    "https://gitlab.example.com/api/v4/projects?private_token=glpat1234567890",
    "https://example.com/file?token=abc123",
    "Bearer eyJhbGciOiJIUzI1NiJ9.abc.def",
    "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3",
    "ghp_" + "A" * 36,
    "github_pat_" + "11ABCDEFG0" * 4,
    "sk-" + "proj" + "x1Y2z3" * 6,
    "AKIA" + "IOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8a7Lk2Pm",  # long, high-entropy
]
PLAIN = ["meta-llama/Llama-2-7b-hf", "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", "/data/ckpt/llama_7b/iter_0001000",
         "0123456789abcdef0123456789abcdef01234567", "https://huggingface.co/datasets/org/name", "1e-4", "bf16",
         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdef", "git@github.com:org/repo.git", "cosine_with_restarts"]


@pytest.mark.parametrize("value", TOKENS)
def test_secret_values_whatever_the_name(value):
    assert is_secret_value(value) is True
    assert is_secret("PLAIN_SETTING", value) is True


@pytest.mark.parametrize("value", PLAIN)
def test_settings_values_are_not_secret(value):
    assert is_secret_value(value) is False


def test_numbers_and_booleans_are_never_withheld():
    assert is_secret("HF_TOKEN", True) is False and is_secret("HF_TOKEN", 3) is False
    assert is_secret("HF_TOKEN", "x") is True


def test_withheld_marker_tells_a_change_without_the_value():
    a, b = withheld("hf_one"), withheld("hf_two")
    assert a.startswith("<withheld: secret-looking value ") and a.endswith(">") and "hf_one" not in a
    assert a != b and a == withheld("hf_one")


def test_redact_text_keeps_names_and_drops_values():
    tok = "hf_" + "Q" * 24
    assert redact_text(f"torchrun t.py --hf-token={tok} --lr 1") == "torchrun t.py --hf-token=<withheld> --lr 1"
    assert redact_text("curl -H 'Authorization: Bearer abc123def456'") == "curl -H 'Authorization: Bearer <withheld>'"
    assert secret_words("ACCELERATE_LOGIN=me DS_ACCESS=q1 lr=3") == {"me", "q1"}
    assert secret_words('sorted(x, key="name") hub_token="abcd"', code=True) == {"abcd"}


def test_collect_withholds_secret_values_under_allowlisted_names():
    from scriptdiff.project.collect import collect_env
    env = {"HF_HOME": "/data/hf", "HF_ENDPOINT": "https://hf_" + "z" * 30 + "@hub.example.com",
           "HF_CREDS": "abc", "NVIDIA_NGC_API": "nvapi-" + "k" * 30, "CUDA_VISIBLE_DEVICES": "0,1"}
    out, held = collect_env(env)
    assert sorted(out) == ["CUDA_VISIBLE_DEVICES", "HF_HOME"] and held == 3


SCRIPT = """#!/bin/bash
export HF_CREDS={creds}
export HF_HOME=/data/hf
export HF_ENDPOINT=https://{tok}@hub.example.com
torchrun --nproc_per_node 8 train.py --hf-token {tok} --lr 1e-4 --data https://x.example.com/d?private_token={tok}
"""


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_secrets_never_reach_a_report_and_a_changed_token_is_reported(tmp_path, fmt):
    gtok, ntok = "hf_" + "G1h2" * 8, "hf_" + "N9m8" * 8
    (tmp_path / "g.sh").write_text(SCRIPT.format(tok=gtok, creds="gcreds-one"), encoding="utf-8")
    (tmp_path / "n.sh").write_text(SCRIPT.format(tok=ntok, creds="ncreds-two"), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "scriptdiff", "diff", "--no-cache", "--show-masked", "-f", fmt,
                        "g.sh", "n.sh"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    for secret in (gtok, ntok, "gcreds-one", "ncreds-two", gtok[:12], ntok[:12]):
        assert secret not in out
    assert r.returncode == 1
    if fmt == "json":
        found = {f["key"]: f for f in json.loads(r.stdout)["findings"]}
        assert {k for k in found} >= {"hf_token", "env:HF_CREDS", "env:HF_ENDPOINT", "data_path"}
        for k, raw in (("hf_token", (gtok, ntok)), ("env:HF_CREDS", ("gcreds-one", "ncreds-two")),
                       ("env:HF_ENDPOINT", (f"https://{gtok}@hub.example.com", f"https://{ntok}@hub.example.com"))):
            assert (found[k]["gpu"]["value"], found[k]["npu"]["value"]) == (withheld(raw[0]), withheld(raw[1]))
        assert "--hf-token <withheld>" in found["hf_token"]["gpu"]["source"]


@pytest.mark.parametrize("old,new,needle", [
    ('{prefix: "hf_", min: 20,', '{prefix: "hf_", min: 2,',
     "secret_values.token_prefixes[0].min: expected a whole number from 8 (got 2)"),
    ('{prefix: "hf_", min: 20, chars: alnum', '{prefix: "hf_", min: 20, chars: digits',
     "secret_values.token_prefixes[0].chars: expected one of alnum, word (got 'digits')"),
    ('example: "hf_AbCdEfGhIjKlMnOpQrStUvWx12"}', 'example: "hf_short"}',
     "secret_values.token_prefixes[0].example: the prefix 'hf_' does not find its example 'hf_short' "
     "(alnum characters, at least 20 after the prefix)"),
    ("regex: 'eyJ[A-Za-z0-9_-]{8,}", "regex: '(eyJ[A-Za-z0-9_-]{8,}",
     "secret_values.patterns[0].regex: not a regular expression: missing ), unterminated subpattern at position 0"),
    ('not: ["eyJhbGciOiJIUzI1NiJ9", "eyJ.eyJ.x"]', 'not: ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx.sig"]',
     "secret_values.patterns[0].not[0]: the pattern 'jwt' finds 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx.sig', listed under not"),
    ("schemes: [BEARER, BASIC]", "schemes: [bearer]", "secret_values.schemes[0]: expected an upper-case word"),
    ("entropy: {min_length: 32, min_bits: 4.2}", "entropy: {min_length: 32}",
     "secret_values.entropy: needs min_length (16 or more) and min_bits (3 to 6)"),
    ("  query_names:", "  query_keys:", "secret_values: unknown field(s) query_keys"),
])
def test_secret_value_rules_are_validated(tmp_path, old, new, needle):
    import shutil

    from scriptdiff.ruleset.rulepack import RuleError, load_packs, rules_dir
    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    path = folder / "secrets.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    changed = text.replace(old, new, 1)
    line = changed[:changed.index(new)].count("\n") + 1  # the line the error names: the changed one
    with pytest.raises(RuleError) as e:
        load_packs(sorted(folder.glob("*.yaml")))
    assert str(e.value).startswith(f"rules/secrets.yaml:{line}: {needle}")


@pytest.mark.parametrize("old,new,at,needle", [
    ("regex: 'eyJ[A-Za-z0-9_-]{8,}", "regex: 'eyK[A-Za-z0-9_-]{8,}", '      examples: ["eyJhbGci',
     "secret_values.patterns[0].examples[0]: the pattern 'jwt' does not find its example 'eyJhbGciOiJIUzI1NiIsInR5cCI6"),
    ("- name: slack-webhook", "- name: jwt", "- name: jwt        # the path",
     "secret_values.patterns[1].name: the pattern 'jwt' is named twice"),
])
def test_secret_patterns_are_checked_against_their_examples(tmp_path, old, new, at, needle):
    """The error names the node that is wrong (the example a pattern misses, the second name)."""
    import shutil

    from scriptdiff.ruleset.rulepack import RuleError, load_packs, rules_dir
    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    path = folder / "secrets.yaml"
    changed = path.read_text(encoding="utf-8").replace(old, new, 1)
    path.write_text(changed, encoding="utf-8")
    line = changed[:changed.index(at)].count("\n") + 1
    with pytest.raises(RuleError) as e:
        load_packs(sorted(folder.glob("*.yaml")))
    assert str(e.value).startswith(f"rules/secrets.yaml:{line}: {needle}")


def test_a_token_under_an_innocent_config_key_is_withheld_and_still_compared(tmp_path):
    from scriptdiff.run.pipeline import diff_files
    from scriptdiff.model import Options

    tok1, tok2 = "hf_" + "Qw7" * 10, "hf_" + "Er4" * 10
    (tmp_path / "g.yaml").write_text(f"learning_rate: 1e-4\nhub_url: https://{tok1}@huggingface.co/x\n")
    (tmp_path / "n.yaml").write_text(f"learning_rate: 1e-4\nhub_url: https://{tok2}@huggingface.co/x\n")
    rep = diff_files([str(tmp_path / "g.yaml")], [str(tmp_path / "n.yaml")], Options(use_cache=False))
    text = json.dumps(rep.to_json())
    assert tok1 not in text and tok2 not in text
    assert [(f.key, f.gpu.value.startswith("<withheld"), f.gpu.value != f.npu.value) for f in rep.findings] == [
        ("hub_url", True, True)]


def test_key_colon_value_is_a_named_value():
    """`hub_token: VALUE` (YAML, JSON) names its value as `hub_token=VALUE` does; in code only
    a quoted value counts (`hub_token: str` is an annotation)."""
    assert secret_words("hub_token: abcd1234") == {"abcd1234"}
    assert secret_words('{"hub_token": "abcd1234", "lr": 1}') == {"abcd1234"}
    assert secret_words("hub_token: str = None", code=True) == set()
    assert secret_words('cfg = {"hub_token": "abcd1234"}', code=True) == {"abcd1234"}
    assert secret_words("pad_token: <pad>") == set() and secret_words("key: value", code=True) == set()


@pytest.mark.parametrize("text, shown", [
    ("--Hub-ToKeN abcdefgh123 --lr 1e-4", "--Hub-ToKeN <withheld> --lr 1e-4"),  # any case, ASCII
    ("HF_TOKEN=abcdefgh123 # 学习率", "HF_TOKEN=<withheld> # 学习率"),  # a line that is not ASCII
    ("--opt-1 1 --opt-2 2 --lr 1e-4", "--opt-1 1 --opt-2 2 --lr 1e-4"),  # no secret-looking word
])
def test_named_values_are_found_in_any_case_and_script(text, shown):
    assert redact_text(text) == shown
    assert redact_text(text) == shown  # the second reading of a line (remembered) says the same


def test_remembered_spans_are_the_callers_own():
    from scriptdiff.ruleset.secrets import secret_spans
    first = secret_spans("--hub-token abcdefgh123")
    first.append((0, 1))
    assert secret_spans("--hub-token abcdefgh123") == [(12, 23)]

"""Secret-looking names (rules/secrets.yaml, scriptdiff.secrets) and the value ports of
rules/vocabulary.yaml (checks.hparams.convert)."""
import pytest

from scriptdiff.checks.hparams import convert
from scriptdiff.lang.config import facts_for
from scriptdiff.model import Extract
from scriptdiff.secrets import is_secret_name, words_of

SECRET = [
    "HF_TOKEN", "hub_token", "hubToken", "WANDB_API_KEY", "api_key", "MY_PASSWORD", "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID", "PRIVATE_KEY", "GITHUB_PAT", "DB_PASSWD", "AUTH_HEADER", "AUTHORIZATION", "BASIC_AUTH",
    "OPENAI_APIKEY", "HCCL_ACCESSKEY", "HCCL_KEY", "CLIENT_SECRET", "MY_CREDENTIALS", "TORCH_CREDENTIALS_FILE",
    "NCCL_AUTH_PASSWD", "wandb.api_key", "api-key", "SESSION_COOKIE", "MY_SECRET_EOS_TOKEN",
]
NOT_SECRET = [
    "num_key_value_heads", "pad_token_id", "max_tokens", "key_dim", "tokenizer_name_or_path", "max_new_tokens",
    "TOKENIZERS_PARALLELISM", "moe_token_dispatcher_type", "tokenizer_type", "KEYBOARD", "NCCL_IB_HCA",
    "CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "HF_TOKEN_PATH", "hub_private_repo", "eos_token",
    "pad_token", "prompt_key", "reward_fn_key", "COMPAT", "AUTHOR", "", "__",
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

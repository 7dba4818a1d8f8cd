"""Issue 40, "Secrets": what `fix` shows, what the cache keeps, what a team's pack may change,
what `collect` writes, and the other way, a structured value under a key-like name.

- `fix --diff` prints the edited files' context lines: every secret part of them is withheld
  (a fingerprinted marker, so a changed line still shows as changed), and so are the edits'
  words in `fix` and `fix -f json`;
- the cache keeps the provenance of every fact (the words of a launch option as written, for
  `fix`): no secret is written there;
- a user's pack may add secret-looking names and shapes, never exempt one: `not_secret` and
  `not_secret_in_code` are refused at their line, for `check` (which loads the packs the
  repository's own pyproject names) as for `--rules`;
- percent-encoded credentials (`https%3A%2F%2Fuser%3Apass%40host`) are found as decoded;
- a dotted tensor path under a name ending in `key` is a setting, compared and shown.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scriptdiff import api
from scriptdiff.model import Options
from scriptdiff.ruleset.secrets import is_secret, is_secret_value, redact_text, secret_spans, withheld

# fifteen shapes planted in the context lines of a launch script `fix` edits (none is a rule's example)
HF = "hf_Q9wErTyUiOpAsDfGhJkLzXcVbN"
GHP = "ghp_Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"
SK = "sk-proj-Mm4Nn5Bb6Vv7Cc8Xx9Zz0Ll1Kk2"
JWT = ("eyJhbGciOiJIUzI1NiJ9Qx.eyJzdWIiOiJtZSIsIm4iOjF9.s1Gn4tUrE_9f8e7d6c5b4a3")
PASSWORD = "Pw0rdHunter22"
AMZ_CRED = "AKIAZZYYXXWWVVUU1234"
AMZ_SIG = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
AWS_SECRET = "wJalrXUtnFEMIxK7MDENGxbPxRfiCYzzKEYq"
SLACK = "T0ZZZZZZZ/B0YYYYYYY/qwertyuiopasdfghjklzxcvb"
HUB = "Hb7mW2qLx9Tz"
WANDB = "Wd3kJ8vN2pQs"
BEARER = "Br4vK9xLq2Mn7Zp"
SAS = "sv2024Qx9Kp7Lm3"
GLPAT = "glpat-Rr5Tt6Yy7Uu8Ii9Oo0Pp"
DB_PASS = "Db9pAsSw0rdQ"
PLANTED = [HF, GHP, SK, JWT, PASSWORD, AMZ_CRED, AMZ_SIG, AWS_SECRET, SLACK, HUB, WANDB, BEARER, SAS, GLPAT,
           DB_PASS]

SCRIPT = f"""#!/bin/bash
export HF_TOKEN={HF} GH_PAT_VALUE={GHP} OPENAI_KEY_VALUE={SK} ID_JWT={JWT}
export DB_URL=https://trainer:{PASSWORD}@db.example.com/runs AWS_SECRET_ACCESS_KEY={AWS_SECRET}
export S3_URL="https://b.s3.amazonaws.com/k?X-Amz-Credential={AMZ_CRED}&X-Amz-Signature={AMZ_SIG}"
export SLACK_HOOK=https://hooks.slack.com/services/{SLACK} WANDB_API_KEY={WANDB} GITLAB={GLPAT}
export AUTH_HEADER="Authorization: Bearer {BEARER}" BLOB="https://acct.blob.core.windows.net/c?sp=r&sig={SAS}"
export DB_PASSWORD={DB_PASS}
torchrun --nproc_per_node 8 train.py --hub-token {HUB} \\
  --lr {{lr}} \\
  --batch_size 32
"""


def _cli(args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scriptdiff", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def _pair(tmp: Path, text: str, name: str = "train.sh") -> tuple[Path, Path]:
    for side, lr in (("gpu", "1e-4"), ("npu", "2e-4")):
        (tmp / side).mkdir(exist_ok=True)
        (tmp / side / name).write_text(text.replace("{lr}", lr), encoding="utf-8")
    return tmp / "gpu" / name, tmp / "npu" / name


def test_the_planted_shapes_are_each_secret():
    text = SCRIPT.replace("{lr}", "1")
    shown = redact_text(text)
    assert [s for s in PLANTED if s in shown] == []


@pytest.mark.parametrize("how", [["--diff"], ["--diff", "-f", "json"], [], ["-f", "json"]],
                         ids=["diff", "diff-json", "write", "write-json"])
def test_fix_shows_no_secret_of_the_files_it_edits(tmp_path, how):
    g, n = _pair(tmp_path, SCRIPT)
    r = _cli(["fix", *how, "--no-cache", str(g), str(n)], tmp_path)
    out = r.stdout + r.stderr
    assert [s for s in PLANTED if s in out] == []
    assert r.returncode == (1 if how[:1] == ["--diff"] else 0), out
    if how == ["--diff"]:
        lines = r.stdout.splitlines()
        assert "-  --lr 2e-4 \\" in lines and "+  --lr 1e-4 \\" in lines
        assert f" torchrun --nproc_per_node 8 train.py --hub-token {withheld(HUB)} \\" in lines  # context
        assert f" export DB_PASSWORD={withheld(DB_PASS)}" in lines
    if how == []:
        assert "  --lr 1e-4 \\" in n.read_text(encoding="utf-8")
        assert HUB in n.read_text(encoding="utf-8")  # the file itself keeps what it holds


def test_fix_diff_of_python_withholds_named_values_in_code(tmp_path):
    text = ('import os\nfrom transformers import TrainingArguments\nos.environ["HF_TOKEN"] = "Zq8Wx7Ec6Rv5"\n'
            'hub_token = "Tb5Yn6Um7Ik8"\nargs = TrainingArguments(output_dir="o", learning_rate={lr}, hub_token=hub_token)\n')
    g, n = _pair(tmp_path, text, "train.py")
    r = _cli(["fix", "--diff", "--no-cache", str(g), str(n)], tmp_path)
    assert "Zq8Wx7Ec6Rv5" not in r.stdout + r.stderr and "Tb5Yn6Um7Ik8" not in r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert r.returncode == 1 and lines[4:] == [
        f' os.environ["HF_TOKEN"] = "{withheld("Zq8Wx7Ec6Rv5")}"', f' hub_token = "{withheld("Tb5Yn6Um7Ik8")}"',
        '-args = TrainingArguments(output_dir="o", learning_rate=2e-4, hub_token=hub_token)',
        '+args = TrainingArguments(output_dir="o", learning_rate=1e-4, hub_token=hub_token)']


def test_an_edit_over_a_secret_is_shown_withheld():
    from scriptdiff.fix import Edit, FileChange, FixResult
    from scriptdiff.inputs.sources import Source

    old = f"python t.py --hub-token {HUB} --lr 2\n"
    src = Source(name="n/run.sh", data=old.encode())
    new = "python t.py --lr 1\n"
    res = FixResult(gpu="g", npu="n", files={"n/run.sh": FileChange(src, old, new)})
    e = Edit("n/run.sh", 12, len(old) - 1, "--lr 1")
    assert res.edit_shown(e) == (1, "--hub-token <withheld> --lr 2", "--lr 1")
    assert HUB not in res.unified() and "-python t.py --hub-token " + withheld(HUB) + " --lr 2" in res.unified()


# ------------------------------------------------------------------ the cache

def test_the_cache_keeps_no_secret_of_a_facts_provenance(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SCRIPTDIFF_CACHE_DIR", str(cache))
    sig = "Sg5Hj6Kl7Zx8"
    line = (f"torchrun train.py --lr {{lr}} --hub-token {HF} --wandb-key={SK} "
            f"--data \"https://b.s3.amazonaws.com/k?X-Amz-Credential={AMZ_CRED}&sig={sig}\" --batch_size 32\n")
    g, n = _pair(tmp_path, line)

    def run():
        res = api.fix(str(g), str(n), Options(), write=False)
        return [(d.finding.rule, d.finding.key, d.fixed, d.why) for d in res.decisions], res.unified()

    first = run()
    stored = "".join(p.read_text(encoding="utf-8", errors="replace") for p in cache.iterdir())
    assert '"value_text"' in stored and '"flag_text"' in stored  # the provenance is kept...
    assert [s for s in (HF, SK, AMZ_CRED, sig) if s in stored] == []  # ...without its secrets
    assert withheld(HF) in stored
    assert run() == first  # read back from the cache: the same fixes, the same diff
    assert ("SD202", "lr", True, None) in first[0] and "+torchrun train.py --lr 1e-4 " in first[1]


# ------------------------------------------------------------------ packs add, never exempt

PACK = """# a team's pack
secrets:
  words: [ORBIT]
  suffixes: [TOKEN]
  not_secret: [HF_TOKEN]
"""


def _repo_with_pack(tmp: Path, pack: str) -> None:
    (tmp / "team").mkdir()
    (tmp / "team" / "pack.yaml").write_text(pack, encoding="utf-8")
    (tmp / "pyproject.toml").write_text('[tool.scriptdiff]\nrules = ["team"]\n', encoding="utf-8")
    for side, tok in (("gpu", "Ht1Ky2Lm3Nb4"), ("npu", "Ht1Ky2Lm3Nb5")):
        (tmp / side).mkdir()
        (tmp / side / "run.sh").write_text(f"export HF_TOKEN={tok}\ntorchrun train.py --lr 1e-4\n", encoding="utf-8")


@pytest.mark.parametrize("field", ["not_secret", "not_secret_in_code"])
@pytest.mark.parametrize("how", ["check", "rules"])
def test_a_pack_may_exempt_no_secret_name(tmp_path, field, how):
    _repo_with_pack(tmp_path, PACK.replace("not_secret", field))
    args = ["check"] if how == "check" else ["diff", "--rules", "team", "gpu/run.sh", "npu/run.sh"]
    r = _cli(args, tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"scriptdiff: invalid rule pack: team/pack.yaml:5: secrets.{field}: a user's pack may add "
                        f"secret-looking names and shapes, never exempt one from withholding (the exemptions are "
                        f"rules/secrets.yaml's)\n")


def test_a_pack_adds_secret_names_and_shapes(tmp_path):
    pack = ("secrets:\n  words: [ORBIT]\n  suffixes: [HANDLE]\nsecret_values:\n  token_prefixes:\n"
            "    - {prefix: 'orb_', min: 12, chars: alnum, example: 'orb_abcdefghijkl'}\n")
    _repo_with_pack(tmp_path, pack)
    for side, (handle, tok) in (("gpu", ("Hd1Hd2Hd3Hd4", "orb_Aa1Bb2Cc3Dd4")), ("npu", ("Hd1Hd2Hd3Hd5", "orb_Aa1Bb2Cc3Dd5"))):
        (tmp_path / side / "run.sh").write_text(
            f"export ORBIT_HANDLE={handle}\nexport RUN_ID={tok}\ntorchrun train.py --lr 1e-4\n", encoding="utf-8")
    r = _cli(["diff", "--rules", "team", "gpu/run.sh", "npu/run.sh"], tmp_path)
    assert r.returncode == 1
    for s in ("Hd1Hd2Hd3Hd4", "Hd1Hd2Hd3Hd5", "orb_Aa1Bb2Cc3Dd4", "orb_Aa1Bb2Cc3Dd5"):
        assert s not in r.stdout + r.stderr
    # RUN_ID names a run (SD307, info), its value withheld all the same
    assert "SD301 env:ORBIT_HANDLE" in r.stdout and "SD307 env:RUN_ID" in r.stdout


# ------------------------------------------------------------------ percent-encoded credentials

ENCODED = [
    ("https%3A%2F%2Fuser%3AQz7pAss99%40host.example.com%2Fsimple", "user%3AQz7pAss99"),
    ("x=https%253A%252F%252Fuser%253AQz7pAss99%2540host", "user%253AQz7pAss99"),
    ("HF_TOKEN%3DQz7pAss99xy", "Qz7pAss99xy"),
    ("https://proxy.example.com/?next=https%3A%2F%2Fh.example.com%2Fx%3Fsig%3DQz7pAss99xy", "Qz7pAss99xy"),
]


@pytest.mark.parametrize("text,secret", ENCODED, ids=["userinfo", "twice", "named", "sig-in-a-query"])
def test_percent_encoded_credentials_are_found(text, secret):
    assert is_secret_value(text) is True
    assert {text[a:b] for a, b in secret_spans(text)} == {secret}
    assert "Qz7pAss99" not in redact_text(text)


def test_collect_writes_no_percent_encoded_credential(tmp_path):
    from scriptdiff.project.collect import collect, dumps

    site = tmp_path / "usr/lib/python3.10/site-packages/foo-1.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Name: foo\nVersion: 1.0\n")
    url = "file:///cache/https%3A%2F%2Fbuilder%3AQz7pAss99%40pypi.example.com%2Ffoo.tar.gz"
    (site / "direct_url.json").write_text(json.dumps({"url": url}))
    env = {"CONDA_PREFIX": "/opt/conda/envs/https%3A%2F%2Fme%3AQz7pAss98%40h", "PIP_INDEX_URL":
           "https%3A%2F%2Fme%3AQz7pAss97%40pypi.example.com%2Fsimple", "CUDA_VISIBLE_DEVICES": "0"}
    snap = collect(root=str(tmp_path), environ=env)
    text = dumps(snap)
    assert "Qz7pAss9" not in text
    assert snap["distributions"][0]["source"]["url"] == \
        f"file:///cache/https%3A%2F%2F{withheld('builder%3AQz7pAss99')}%40pypi.example.com%2Ffoo.tar.gz"


# ------------------------------------------------------------------ the other way: structured values

TENSOR = "model.language_model.embed_tokens.weight"


@pytest.mark.parametrize("value,secret", [
    (TENSOR, False), ("blocks.0.attn.key", False), ("lm_head.weight", False),
    ("Qz7pAss99xy", True), ("layers.0", True), ("my.Secret.Value", True), (f"{TENSOR}.{HF}", True),
])
def test_a_dotted_path_under_a_key_name_is_a_setting(value, secret):
    assert is_secret("embedding_key", value) is secret
    assert bool(secret_spans(f"--embedding_key {value}")) is secret


@pytest.mark.parametrize("name,text", [
    ("run.sh", "python train.py --embedding_key {v} --lr 1\n"),
    ("run.sh", "python train.py --embedding_key={v} --lr 1\n"),
    ("train.yaml", "embedding_key: {v}\nlr: 1\n"),
    ("train.py", "def main(embedding_key=\"{v}\"):\n    pass\n"),
], ids=["flag", "flag-eq", "yaml", "python"])
def test_a_tensor_path_under_a_key_name_is_compared_and_shown(tmp_path, name, text):
    for side, v in (("gpu", TENSOR), ("npu", "model.embed_tokens.weight")):
        (tmp_path / side).mkdir()
        (tmp_path / side / name).write_text(text.format(v=v), encoding="utf-8")
    rep = api.diff(str(tmp_path / "gpu" / name), str(tmp_path / "npu" / name), Options(use_cache=False))
    assert [(f.gpu.value, f.npu.value) for f in rep.findings] == [(TENSOR, "model.embed_tokens.weight")]
    assert all("withheld" not in (f.gpu.source or "") for f in rep.findings)


def test_a_librarys_class_named_in_a_message_is_no_credentials_holder():
    """`tensorflow.Session: argument config differs` (a finding about a call of a class whose name
    holds a secret-looking word) is shown whole; a value after a setting's name is still withheld."""
    from scriptdiff.ruleset.secrets import secret_spans
    assert secret_spans("tensorflow.Session: argument config differs") == []
    assert secret_spans("orbit.sessions.Session: argument auth differs") == []
    assert secret_spans("cfg.session_token: abcdefgh1234") == [(19, 31)]
    assert secret_spans("SESSION: abcdefgh1234") == [(9, 21)]

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

def _cli(args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scriptdiff", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)



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
    assert "SD301 env:ORBIT_HANDLE" in r.stdout and "SD301 env:RUN_ID" in r.stdout

"""The recipes of DEVELOPERS.md, performed: each one on a copy of this checkout, writing only
the files its recipe names, then the project's own checks run in that copy (the registry,
the architecture, the packs' validation and every rule's examples) and the command on a pair
that shows the new piece at work. A recipe that needs a file it does not name fails here.

- Add a file kind: `scriptdiff/lang/<kind>.py`, `rules/<kind>.yaml`, `tests/test_<kind>.py`.
- Add a rule: its entry in a rules/*.yaml catalogue (and, for a hyperparameter rule, the
  vocabulary category that names it and the key of that category), with its examples.
- Add a device test: `rules/devices.yaml` and a test.
- Add a numerics sink or an inert call: `rules/relevance.yaml` and a test.
- Add your own rules: a pack in a folder of the team's, nothing of the checkout.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ["tests/test_registry.py", "tests/test_architecture.py", "tests/test_rule_validators.py",
          "tests/test_rule_examples.py", "tests/test_device_rules.py"]


@pytest.fixture
def checkout(tmp_path):
    """A copy of the package, its packs and its tests (what the recipes touch and check)."""
    dest = tmp_path / "checkout"
    for part in ("scriptdiff", "rules", "tests", "fixtures"):
        shutil.copytree(ROOT / part, dest / part, ignore=shutil.ignore_patterns("__pycache__", "corpus", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    shutil.copy(ROOT / "README.md", dest / "README.md")
    shutil.copytree(ROOT / "docs", dest / "docs", ignore=shutil.ignore_patterns("*.png"))  # docs/library.md's example runs
    return dest


def _env(checkout: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout), SCRIPTDIFF_CACHE_DIR=str(checkout / ".cache"), NO_COLOR="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run(checkout: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scriptdiff", *args], capture_output=True, text=True,
                          env=_env(checkout), cwd=cwd or checkout, timeout=300)


def checks_pass(checkout: Path, *extra: str) -> None:
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *CHECKS, *extra],
                       capture_output=True, text=True, env=_env(checkout), cwd=checkout, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]


def write(base: Path, rel: str, text: str) -> Path:
    p = base / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def _pair(tmp: Path, name: str, gpu: str, npu: str) -> tuple[str, str]:
    return str(write(tmp, f"gpu/{name}", gpu)), str(write(tmp, f"npu/{name}", npu))


# ------------------------------------------------------------------ Add a file kind

KV_READER = '''\
"""`key = value` files (one setting a line, `#` comments), each key read as a config key."""
from __future__ import annotations

from ..model import Extract, InputError
from ..ruleset.registry import dialects_for
from .config import facts_for

KIND = "kv"


def extract(src, ctx) -> Extract:
    ex = Extract()
    lines = src.text.splitlines()
    for n, line in enumerate(lines, 1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        key, eq, value = body.partition("=")
        if not eq or not key.strip():
            ex.errors.append(InputError(src.name, f"line {n}: not `name = value`; not compared", fatal=True))
            return ex
        ex.facts += facts_for((key.strip(),), value.strip(), "yaml", src, n, lines, ex, dialects=dialects_for(KIND))
    return ex
'''
KV_PACK = """\
# `key = value` files: a format of the recipe's own
kinds:
  kv:
    reader: lang.kv
    suffixes: [.kv]
    cached: true
    checks: [hyperparameters]
    comments: hash
    relevant: true
    input: configs
    example: train.kv
"""
KV_TEST = '''\
from scriptdiff.inputs.sources import Source
from scriptdiff.ruleset.registry import detect


def test_a_kv_file_is_its_kind():
    assert detect(Source("train.kv", b"lr = 1e-4\\n")).name == "kv"
'''


def test_the_add_a_kind_recipe_needs_only_the_files_it_names(checkout, tmp_path):
    write(checkout, "scriptdiff/lang/kv.py", KV_READER)
    write(checkout, "rules/kv.yaml", KV_PACK)
    write(checkout, "tests/test_kv.py", KV_TEST)
    checks_pass(checkout, "tests/test_kv.py")
    g, n = _pair(tmp_path, "train.kv", "lr = 1e-4\nseed = 42\n", "lr = 2e-4\nseed = 42\n")
    r = run(checkout, "diff", "-f", "json", g, n)
    assert r.returncode == 1, r.stderr
    import json
    (f,) = json.loads(r.stdout)["findings"]
    assert (f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"], f["gpu"]["line"], f["npu"]["line"]) == \
        ("SD202", "lr", 0.0001, 0.0002, 1, 1)
    g, n = _pair(tmp_path / "same", "train.kv", "lr = 1e-4\n", "lr = 1.0e-04  # the same value\n")
    assert run(checkout, "diff", g, n).returncode == 0
    g, n = _pair(tmp_path / "broken", "train.kv", "lr = 1e-4\n", "lr 1e-4\n")
    r = run(checkout, "diff", g, n)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"scriptdiff: {n}: line 1: not `name = value`; not compared "
                                              "(1 setting(s) of the other side could not be compared: lr)"]


def test_without_its_pack_the_kind_is_not_known(checkout, tmp_path):
    """The negative case: the reader alone is not a kind (the pack declares it)."""
    write(checkout, "scriptdiff/lang/kv.py", KV_READER)
    g, n = _pair(tmp_path, "train.kv", "lr = 1e-4\n", "lr = 2e-4\n")
    r = run(checkout, "diff", "-f", "json", g, n)
    import json
    assert [f["rule"] for f in json.loads(r.stdout)["findings"]] != ["SD202"]


# ------------------------------------------------------------------ Add a rule

def test_the_add_a_rule_recipe_needs_only_its_pack_entries(checkout, tmp_path):
    rules = yaml.safe_load((checkout / "rules/hparams.yaml").read_text(encoding="utf-8"))
    used = {r["code"] for p in (checkout / "rules").glob("*.yaml")
            for r in (yaml.safe_load(p.read_text(encoding="utf-8")) or {}).get("rules") or []}
    assert "SD298" not in used and rules["rules"]
    hp = checkout / "rules/hparams.yaml"
    hp.write_text(hp.read_text(encoding="utf-8").rstrip("\n") + "\n" + textwrap.indent(textwrap.dedent("""\
        - code: SD298
          name: distillation-temperature-differs
          check: hyperparameters
          severity: error
          summary: The distillation temperature differs between GPU and NPU.
          doc: The temperature softens the teacher's distribution; another one is another loss.
          examples:
            - {lang: shell, gpu: "torchrun distill.py --kd-temperature 2.0\\n", npu: "torchrun distill.py --kd-temperature 4.0\\n", fires: true}
            - {lang: shell, gpu: "torchrun distill.py --kd-temperature 2.0\\n", npu: "torchrun distill.py --kd-temperature 2.0\\n", fires: false}
        """), "  "), encoding="utf-8")
    voc = checkout / "rules/vocabulary.yaml"
    text = voc.read_text(encoding="utf-8")
    text = text.replace("  other:       {rule: SD220, title: other setting, naming: true}\n",
                        "  other:       {rule: SD220, title: other setting, naming: true}\n"
                        "  distill:     {rule: SD298, title: distillation}\n", 1)
    text = text.replace("\n  lr:                 {", "\n  kd_temperature:     {category: distill, type: float, "
                                                    "aliases: [distill_temperature]}\n  lr:                 {", 1)
    voc.write_text(text, encoding="utf-8")
    checks_pass(checkout)
    g, n = _pair(tmp_path, "run.sh", "torchrun distill.py --distill-temperature 2.0\n",
                 "torchrun distill.py --distill-temperature 4\n")
    r = run(checkout, "diff", "--select", "SD298", "-f", "json", g, n)
    import json
    out = json.loads(r.stdout)
    assert [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"]) for f in out["findings"]] == \
        [("SD298", "kd_temperature", 2.0, 4.0)]
    assert r.returncode == 1


# ------------------------------------------------------------------ Add a device test

def test_the_add_a_device_test_recipe_needs_only_rules_devices(checkout, tmp_path):
    dev = checkout / "rules/devices.yaml"
    text = dev.read_text(encoding="utf-8")
    anchor = "    attributes:\n"  # the entry goes last in the `calls` list, just before this key
    entry = textwrap.indent(textwrap.dedent("""\
        - idiom: orbit.on_ascend()
          family: npu
          match: [orbit.hw.on_ascend]
          example: |
            from orbit.hw import on_ascend
            if on_ascend():
                x = 1
          expect: {gpu: false, npu: true}
        """), "      ")
    assert anchor in text
    dev.write_text(text.replace(anchor, entry + anchor, 1), encoding="utf-8")
    checks_pass(checkout)
    script = ("from orbit.hw import on_ascend\n"
              "import torch\n"
              "if on_ascend():\n"
              "    lr = 2e-4\n"
              "else:\n"
              "    lr = 1e-4\n"
              "opt = torch.optim.AdamW(params, lr=lr)\n")
    f = write(tmp_path, "train.py", script)
    r = run(checkout, "diff", "-f", "json", str(f))
    import json
    found = [(x["rule"], x["key"], x["gpu"]["value"], x["npu"]["value"], x["gpu"]["line"], x["npu"]["line"])
             for x in json.loads(r.stdout)["findings"]]
    assert found == [("SD202", "lr", 0.0001, 0.0002, 6, 4)]
    same = write(tmp_path / "same", "train.py", script.replace("lr = 2e-4", "lr = 1e-4"))
    assert run(checkout, "diff", str(same)).returncode == 0


# ------------------------------------------------------------------ Add a numerics sink or an inert call

def test_the_add_an_inert_call_recipe_needs_only_rules_relevance(checkout, tmp_path):
    """A tracker the packs do not name: a difference that only goes to it stays as it was (a call
    nothing in the file defines may change anything); named inert, it is info."""
    gpu = ("from orbitkit.report import note\n\n\n"
           "def fit(net, opt, batches, steps):\n"
           "    for batch in batches:\n"
           "        loss = net(batch).mean()\n"
           "        loss.backward()\n"
           "        opt.step()\n"
           "        opt.zero_grad()\n"
           "    frac = steps / 100.0\n"
           "    note(frac)\n"
           "    return loss\n")
    g, n = _pair(tmp_path, "fit.py", gpu, gpu.replace("steps / 100.0", "steps / 200.0"))
    import json

    def found():
        r = run(checkout, "diff", "-f", "json", g, n)
        return r.returncode, [(f["rule"], f["severity"], f["message"], f.get("extra", {}).get("reaches"))
                              for f in json.loads(r.stdout)["findings"]]

    assert found() == (1, [("SD102", "warning", "statement differs", None)])
    rel = checkout / "rules/relevance.yaml"
    text = rel.read_text(encoding="utf-8")
    anchor = '"*.log_hyperparams", "wandb.*",'
    assert anchor in text
    rel.write_text(text.replace(anchor, anchor + ' "orbitkit.report.*",', 1), encoding="utf-8")
    checks_pass(checkout)
    assert found() == (0, [("SD103", "info", "statement differs; reaches nothing training computes (logging)",
                            {"sink": None, "only": ["logging"]})])


# ------------------------------------------------------------------ Add your own rules

def test_a_teams_pack_touches_nothing_of_the_checkout(checkout, tmp_path):
    before = {p: p.read_bytes() for p in (checkout / "rules").glob("*.yaml")}
    pack = write(tmp_path, "team/orbit.yaml", """\
        launchers:
          entries:
            - name: orbit
              commands: [orbit]
              subcommands: [fit]
              program: subcommand
        vocabulary:
          global_batch_size: {aliases: [global_batch]}
        """)
    r = run(checkout, "rules", "--test", str(pack.parent))
    assert r.returncode == 0, r.stdout + r.stderr
    g, n = _pair(tmp_path, "run.sh", "orbit fit --global-batch 256 train.yaml\n",
                 "orbit fit --global-batch 512 train.yaml\n")
    r = run(checkout, "diff", "--rules", str(pack.parent), "--select", "SD203", "-f", "json", g, n)
    import json
    assert [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"]) for f in json.loads(r.stdout)["findings"]] \
        == [("SD203", "global_batch_size", 256, 512)]
    assert {p: p.read_bytes() for p in (checkout / "rules").glob("*.yaml")} == before

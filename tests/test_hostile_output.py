"""Issue 32, "Secrets" and "Forged lines and invalid output": no secret in any writer, no line
an input can forge, valid JSON and SARIF whatever the file names.

Secrets: a token anywhere in a value (after `,` `:` `;` `/`, a newline or a tab, in a URL's
path, query, fragment or user information, a webhook, a JWT, after `Bearer`, `--token=x`,
`--hub-token x`, past 3,000 characters) is withheld by every writer, while the finding stays
(rule, key, line, a fingerprinted marker that compares as changed); named values in Python
(os.environ and its friends) and in a one-line JSON config are withheld from every excerpt and
message; `collect` writes no secret in any field (conda, direct_url sources).

Forged lines: a newline or another control character in a file name, a tensor name, a
dtype, a TensorBoard tag, a CSV header, a YAML, shell or Python value, a snapshot field or an
error line is shown escaped; a file name that is not UTF-8 gives valid JSON and SARIF and no
raw byte on the terminal; markdown shows names and values as written, never as HTML.
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest

from scriptdiff import api
from scriptdiff.model import Options
from scriptdiff.report import FORMATS, render
from scriptdiff.report.values import safe
from scriptdiff.ruleset.secrets import is_secret_value, redact_text, secret_words, withheld

GHP = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWx12"
WORD = "q7Zr4kLm9Tx2"  # no shape of its own: withheld because of where it is written
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
SLACK = "T01234567/B01234567/abcdefghijklmnopqrstuvwx"
TELEGRAM = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

# (the value as written, the secret in it): every row of the issue's list
SHAPES = [
    (f"a,{GHP}", GHP), (f"a:{GHP}", GHP), (f"a;{GHP}", GHP), (f"a/{GHP}", GHP), (f"a\n{GHP}", GHP),
    (f"a\t{GHP}", GHP),
    (f"https://huggingface.co/{HF}/resolve/main/config.json", HF),
    (f"https://app.example.com/callback#access_token={WORD}&state=1", WORD),
    (f"https://hooks.slack.com/services/{SLACK}", SLACK),
    (f"https://api.telegram.org/bot{TELEGRAM}/sendMessage", TELEGRAM),
    (JWT, JWT),
    (f"x Bearer {WORD}", WORD),
    (f"--token={WORD} --lr 1", WORD),
    (f"--hub-token {WORD} --lr 1", WORD),
    ("a" * 3000 + f",{GHP}", GHP),
    (" ".join(["a"] * 2500) + f" {GHP}", GHP),
    (f"https://gitlab.example.com/api/v4/x?private_token={WORD}", WORD),
    (f"https://gitlab.example.com/api/v4/x?job_token={WORD}", WORD),
    (f"https://oauth2:{WORD}@gitlab.example.com/org/repo.git", "oauth2:" + WORD),
]
IDS = ["comma", "colon", "semicolon", "slash", "newline", "tab", "hf-in-url-path", "fragment-access-token",
       "slack-webhook", "telegram-bot", "jwt", "bearer-inside", "token-flag-eq", "hub-token-flag", "after-3000",
       "after-2500-words", "private-token", "job-token", "userinfo"]


def _cli(args, cwd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scriptdiff", *args], cwd=cwd, capture_output=True, timeout=120,
                          **kw)


def _all_outputs(report) -> dict[str, str]:
    return {fmt: render(report, fmt, full_values=True) for fmt in FORMATS}


# ------------------------------------------------------------------ secrets: value shapes

@pytest.mark.parametrize("text,secret", SHAPES, ids=IDS)
def test_a_token_anywhere_in_a_value_is_secret(text, secret):
    assert is_secret_value(text) is True
    assert secret not in redact_text(text)
    assert any(secret in w for w in secret_words(text))


def _shape_examples():
    from scriptdiff.ruleset.rules import load

    sv = load().section("secret_values")
    return [e["example"] for e in sv["token_prefixes"] if "example" in e] + \
        [x for p in sv["patterns"] for x in p["examples"]]


@pytest.mark.parametrize("example", _shape_examples())
def test_every_token_shape_example_of_the_rules_is_withheld_inside_a_value(example):
    """rules/secrets.yaml's examples (the validator checks each is found when the packs load):
    after a comma, in a URL path and as a flag's value, each is withheld."""
    for text in (f"a,{example}", f"https://x.example.com/{example}/y", f"--data {example} --lr 1"):
        assert is_secret_value(text) is True
        shown = redact_text(text)
        assert "<withheld>" in shown and example[-8:] not in shown, text


@pytest.mark.parametrize("text", ["a,b/c:d;e", "/data/hf_cache_directory_for_llama_models/x",
                                  "https://huggingface.co/meta-llama/Llama-2-7b-hf", "--lr 1 --seed 42",
                                  "authentication is basic", "https://x.example.com/a?page=2#section-3", "ssh_key_dim=4",
                                  "0123456789abcdef0123456789abcdef01234567"])
def test_settings_that_hold_no_token_are_shown(text):
    assert is_secret_value(text) is False
    assert redact_text(text) == text


@pytest.mark.parametrize("text,secret", SHAPES, ids=IDS)
def test_every_writer_withholds_a_token_in_a_shell_value_and_keeps_the_finding(tmp_path, text, secret):
    (tmp_path / "g.sh").write_text(f'export X="{text}"\ntorchrun t.py --lr 1\n', encoding="utf-8")
    (tmp_path / "n.sh").write_text('export X="b"\ntorchrun t.py --lr 1\n', encoding="utf-8")
    report = api.diff(str(tmp_path / "g.sh"), str(tmp_path / "n.sh"), Options(use_cache=False, keep_texts=True))
    assert [(f.rule, f.key, f.gpu.value, f.gpu.line, f.gpu.source, f.npu.value, f.npu.line) for f in report.findings] \
        == [("SD301", "env:X", withheld(text), 1, "export X=<withheld>", "b", 1)]
    assert report.findings[0].message == f"X is {withheld(text)} on GPU and b on NPU"
    for fmt, out in _all_outputs(report).items():
        assert secret not in out, fmt
        assert secret[-12:] not in out, fmt  # nor a part of it


@pytest.mark.parametrize("text,secret", SHAPES, ids=IDS)
def test_every_writer_withholds_a_token_in_a_yaml_value(tmp_path, text, secret):
    (tmp_path / "g.yaml").write_text(f"lr: 1\nrun_name: {json.dumps(text)}\n", encoding="utf-8")
    (tmp_path / "n.yaml").write_text("lr: 2\nrun_name: b\n", encoding="utf-8")
    report = api.diff(str(tmp_path / "g.yaml"), str(tmp_path / "n.yaml"), Options(use_cache=False, keep_texts=True))
    assert [(f.rule, f.key, f.gpu.value, f.gpu.line, f.npu.value) for f in report.findings] == [
        ("SD202", "lr", 1.0, 1, 2.0), ("SD221", "run_name", withheld(text), 2, "b")]
    for fmt, out in _all_outputs(report).items():
        assert secret not in out, fmt


def test_a_token_after_3000_characters_is_never_shown_in_part(tmp_path):
    """A launch line without spaces is cut around the option a fact came from: never inside a
    secret (the cut moves to the secret's edge, and the secret is withheld whole)."""
    (tmp_path / "g.sh").write_text(f'torchrun t.py --data "{"a" * 3000},{GHP}" --lr 1\n', encoding="utf-8")
    (tmp_path / "n.sh").write_text("torchrun t.py --data b --lr 2\n", encoding="utf-8")
    report = api.diff(str(tmp_path / "g.sh"), str(tmp_path / "n.sh"), Options(use_cache=False, keep_texts=True))
    lr = next(f for f in report.findings if f.key == "lr")
    assert lr.gpu.source == '... <withheld>" --lr 1'
    for fmt, out in _all_outputs(report).items():
        assert "abcdefghijklmnopqrstuvwxyz" not in out, fmt


# ------------------------------------------------------------------ secrets: named values in code and configs

PY_FORMS = [
    ('os.environ["WANDB_API_KEY"] = "{v}"', 'os.environ["WANDB_API_KEY"] is \'<withheld>\' on GPU and \'<withheld>\' on NPU',
     'os.environ["WANDB_API_KEY"] = "<withheld>"'),
    ('os.environ.update(HF_TOKEN="{v}", X="1")', "os.environ.update: argument HF_TOKEN differs",
     'os.environ.update(HF_TOKEN="<withheld>", X="1")'),
    ('os.environ.update({{"OPENAI_API_KEY": "{v}"}})', "os.environ.update: argument 1 differs",
     'os.environ.update({"OPENAI_API_KEY": "<withheld>"})'),
    ('os.environ.setdefault("HF_CREDS", "{v}")', "os.environ.setdefault: argument 2 differs",
     'os.environ.setdefault("HF_CREDS", "<withheld>")'),
    ('os.putenv("DB_PASSWORD", "{v}")', "os.putenv: argument 2 differs", 'os.putenv("DB_PASSWORD", "<withheld>")'),
    ('os.environ["HF_TOKEN"] = "hf_{v}{v}"', 'os.environ["HF_TOKEN"] is \'<withheld>\' on GPU and \'<withheld>\' on NPU',
     'os.environ["HF_TOKEN"] = "<withheld>"'),
]


@pytest.mark.parametrize("form,message,source", PY_FORMS, ids=["subscript", "update-kw", "update-dict", "setdefault",
                                                              "putenv", "hf-token-message"])
def test_python_environment_writes_are_withheld_in_values_sources_and_messages(tmp_path, form, message, source):
    g, n = "plainsecretGPU1", "plainsecretNPU2"
    (tmp_path / "g.py").write_text(f"import os\n{form.format(v=g)}\n", encoding="utf-8")
    (tmp_path / "n.py").write_text(f"import os\n{form.format(v=n)}\n", encoding="utf-8")
    report = api.diff(str(tmp_path / "g.py"), str(tmp_path / "n.py"), Options(use_cache=False, keep_texts=True))
    assert [(f.rule, f.key, f.message, f.gpu.line, f.gpu.source, f.npu.line, f.npu.source) for f in report.findings] \
        == [("SD102", "code:g.py:<module>", message, 2, source, 2, source)]
    f = report.findings[0]
    assert f.gpu.value.startswith("<withheld: secret-looking value ") and f.gpu.value != f.npu.value
    for fmt, out in _all_outputs(report).items():
        assert g not in out and n not in out, fmt


@pytest.mark.parametrize("line,found", [
    ('os.environ["WANDB_API_KEY"] = "x1y2z3"', {"x1y2z3"}), ("os.environ.setdefault('HF_CREDS', 'c1')", {"c1"}),
    ('os.putenv("DB_PASSWORD", "pw1")', {"pw1"}), ('os.environ.update({"OPENAI_API_KEY": "k1"})', {"k1"}),
    ('cmd = "train --hub-token abc123 --lr 1"', {"abc123"}), ('args = ["--hub-token", "abc"]', {"abc"}),
    ('parser.add_argument("--hub-token", type=str)', set()), ("hub_token: str = None", set()),
    ("login(token=args.hub_token)", set()), ("sorted(x, key=len)", set()), ('os.environ["HF_HOME"] = "/data"', set()),
])
def test_values_written_after_secret_names_in_python_lines(line, found):
    """In Python only a quoted value after a secret-looking name is one (a name passes a
    variable, an annotation names a type); a flag inside a string is text."""
    assert secret_words(line, code=True) == found


def test_a_one_line_json_config_withholds_hub_token_in_the_lr_excerpt(tmp_path):
    (tmp_path / "g.json").write_text('{"lr":1e-4,"hub_token":"abcd1234secretvalue","seed":1}\n', encoding="utf-8")
    (tmp_path / "n.json").write_text('{"lr":2e-4,"hub_token":"abcd1234secretvalue","seed":1}\n', encoding="utf-8")
    report = api.diff(str(tmp_path / "g.json"), str(tmp_path / "n.json"), Options(use_cache=False, keep_texts=True))
    assert [(f.rule, f.key, f.gpu.value, f.gpu.source, f.npu.value, f.npu.source) for f in report.findings] == [
        ("SD202", "lr", 1e-4, '{"lr":1e-4,"hub_token":"<withheld>","seed":1}',
         2e-4, '{"lr":2e-4,"hub_token":"<withheld>","seed":1}')]
    for fmt, out in _all_outputs(report).items():
        assert "abcd1234secretvalue" not in out, fmt


def test_requirement_urls_with_credentials_are_withheld(tmp_path):
    (tmp_path / "g.txt").write_text(f"foo @ git+https://user:{WORD}@github.com/org/foo.git@v1\n"
                                    f"bar @ https://x.example.com/bar.whl?private_token={WORD}\n", encoding="utf-8")
    (tmp_path / "n.txt").write_text("foo @ git+https://user:zz9yy8xx7ww6@github.com/org/foo.git@v2\n"
                                    "bar @ https://x.example.com/bar2.whl?private_token=zz9yy8xx7ww6\n", encoding="utf-8")
    report = api.env([str(tmp_path / "g.txt")], [str(tmp_path / "n.txt")], Options(use_cache=False, keep_texts=True))
    assert sorted((f.rule, f.key, f.gpu.line) for f in report.findings) == [("SD403", "pkg:bar", 2), ("SD403", "pkg:foo", 1)]
    for fmt, out in _all_outputs(report).items():
        assert WORD not in out and "zz9yy8xx7ww6" not in out, fmt


def test_a_token_in_a_csv_header_reaches_no_writer_and_no_curves_view(tmp_path):
    for side, base in (("g", 2.5), ("n", 2.6)):
        (tmp_path / f"{side}.csv").write_text(f'step,loss,"x/{GHP}"\n'
                                              + "".join(f"{i},{base - i / 10},{base}\n" for i in range(1, 6)))
    report = api.curves(str(tmp_path / "g.csv"), str(tmp_path / "n.csv"), Options(use_cache=False))
    for fmt, out in _all_outputs(report).items():
        assert GHP not in out, fmt
    assert GHP not in api.curves_view(report, "markdown")
    assert GHP not in "\n".join(api.curves_view(report, "chart", series=None))


def test_a_flag_and_its_token_in_one_quoted_word_is_withheld_from_keys_and_messages(tmp_path):
    """`--data $'--hub-token TOKEN --lr 1'`: the launch reader takes the word for a flag whose
    name holds the token (found by the fuzzer). The key and the message get the token's
    fingerprinted marker: a changed token is still two findings, and no side shows it."""
    (tmp_path / "g.sh").write_text("torchrun t.py --data $'--hub-token chu43tzgnpivuf --lr 1' --lr 1\n")
    (tmp_path / "n.sh").write_text("torchrun t.py --data $'--hub-token h78cam9detfy5p --lr 1' --lr 1\n")
    report = api.diff(str(tmp_path / "g.sh"), str(tmp_path / "n.sh"), Options(use_cache=False, keep_texts=True))
    g, n = withheld("chu43tzgnpivuf"), withheld("h78cam9detfy5p")
    assert [(f.rule, f.key, f.gpu is None, f.npu is None) for f in report.findings] == [
        ("SD220", f"hub_token {g} __lr 1", False, True), ("SD220", f"hub_token {n} __lr 1", True, False)]
    assert report.findings[0].gpu.source == "torchrun t.py --data $'--hub-token <withheld> --lr 1' --lr 1"
    for fmt, out in _all_outputs(report).items():
        assert "chu43tzgnpivuf" not in out and "h78cam9detfy5p" not in out, fmt


def test_the_html_page_withholds_a_secret_found_on_one_line_on_every_line(tmp_path):
    """A snapshot's conda name `--hub-token X --lr 1` is found as a flag's value; the page
    withholds X in the prefix line too (`/opt/conda/envs/--hub-token X`), where nothing
    names it (found by the fuzzer)."""
    def snap(v):
        return json.dumps({"scriptdiff_snapshot": 1, "platform": "gpu", "python": {"version": "3.10.14"},
                           "conda": {"name": v, "prefix": f"/opt/conda/envs/{v}"}, "versions": {},
                           "distributions": [], "env": {}, "env_withheld": 0}, indent=2)
    (tmp_path / "g.json").write_text(snap("train"))
    (tmp_path / "n.json").write_text(snap("--hub-token 7vkhi5hxphryw4 --lr 1"))
    report = api.env([str(tmp_path / "g.json")], [str(tmp_path / "n.json")], Options(use_cache=False, keep_texts=True))
    for fmt, out in _all_outputs(report).items():
        assert "7vkhi5hxphryw4" not in out, fmt
    assert redact_text("/opt/conda/envs/--hub-token 7vkhi5hxphryw4") == "/opt/conda/envs/--hub-token <withheld>"


# ------------------------------------------------------------------ secrets: collect, one rule for every field

def test_collect_withholds_secrets_in_every_field(tmp_path):
    from scriptdiff.project.collect import collect, dumps

    site = tmp_path / "usr/lib/python3.10/site-packages/foo-1.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Name: foo\nVersion: 1.0\n")
    (site / "direct_url.json").write_text(json.dumps({
        "url": f"https://gitlab.example.com/foo.git?private_token=glpat-{WORD}abcd&job_token={WORD}",
        "vcs_info": {"vcs": "git", "commit_id": "a" * 40, "requested_revision": GHP}}))
    snap = collect(root=str(tmp_path), environ={"CONDA_DEFAULT_ENV": GHP, "CONDA_PREFIX": f"/opt/conda/envs/{HF}",
                                                "CUDA_VISIBLE_DEVICES": "0"})
    assert snap["conda"] == {"name": withheld(GHP), "prefix": f"/opt/conda/envs/{withheld(HF)}"}
    assert snap["env"] == {"CUDA_VISIBLE_DEVICES": "0"} and snap["env_withheld"] == 2
    assert snap["distributions"] == [{"name": "foo", "version": "1.0", "source": {
        "url": f"https://gitlab.example.com/foo.git?private_token={withheld('glpat-' + WORD + 'abcd')}"
               f"&job_token={withheld(WORD)}",
        "vcs": "git", "commit": "a" * 40, "requested_revision": withheld(GHP)}}]
    text = dumps(snap)
    assert GHP not in text and HF not in text and WORD not in text


def test_a_snapshot_read_by_env_shows_no_secret(tmp_path):
    def snap(conda, url):
        return json.dumps({"scriptdiff_snapshot": 1, "platform": "gpu", "python": {"version": "3.10.14"},
                           "conda": {"name": conda, "prefix": f"/opt/conda/envs/{conda}"}, "versions": {},
                           "distributions": [{"name": "foo", "version": "1.0", "source": {"url": url}}],
                           "env": {"HF_ENDPOINT": url}, "env_withheld": 0})
    (tmp_path / "g.json").write_text(snap(GHP, f"https://oauth2:{WORD}@example.com/x"))
    (tmp_path / "n.json").write_text(snap("train", "https://example.com/x?private_token=zz9yy8xx7ww6"))
    report = api.env([str(tmp_path / "g.json")], [str(tmp_path / "n.json")], Options(use_cache=False, keep_texts=True))
    assert "env:HF_ENDPOINT" in {f.key for f in report.findings}
    for fmt, out in _all_outputs(report).items():
        assert GHP not in out and WORD not in out and "zz9yy8xx7ww6" not in out, fmt


# ------------------------------------------------------------------ forged lines

FORGED = "::error file=x.py,line=1::FORGED"


def _forged(out: str) -> list[str]:
    """Lines that GitHub's runner would read as the forged command (it trims leading spaces)."""
    return [line for line in out.replace("\r", "\n").split("\n") if line.lstrip().startswith(FORGED)]


def test_the_issues_forged_workflow_command_is_escaped_in_every_writer(tmp_path):
    (tmp_path / "a.yaml").write_text('lr: 1\nrun_name: "a\\n::error file=x.py,line=1::FORGED"\n')
    (tmp_path / "b.yaml").write_text("lr: 1\nrun_name: b\n")
    for fmt in FORMATS:
        r = _cli(["diff", "--no-cache", "-f", fmt, "a.yaml", "b.yaml"], tmp_path)
        out = r.stdout.decode("utf-8")
        assert r.returncode == 0 and _forged(out) == [], fmt
    text = _cli(["diff", "--no-cache", "a.yaml", "b.yaml"], tmp_path).stdout.decode()
    assert ("info    SD221 run_name  logging, paths, placement and throughput: run_name is "
            "a\\n::error file=x.py,line=1::FORGED on GPU and b on NPU") in text.splitlines()
    github = _cli(["diff", "--no-cache", "-f", "github", "a.yaml", "b.yaml"], tmp_path).stdout.decode().splitlines()
    assert github[0] == ("::notice file=b.yaml,line=2,title=SD221 run_name::logging, paths, placement and throughput: "
                         "run_name is a\\n::error file=x.py,line=1::FORGED on GPU and b on NPU%0A"
                         "GPU: a\\n::error file=x.py,line=1::FORGED%0ANPU: b [GPU at a.yaml:2]")


@pytest.mark.parametrize("char,shown", [("\n", "\\n"), ("\r", "\\r"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"),
                                        ("\x85", "\\x85"), ("\x1b", "\\x1b"), ("\x9b", "\\x9b"), ("\u202e", "\\u202e"),
                                        ("\x0b", "\\x0b"), ("\udc9b", "\\x9b")])
def test_safe_escapes_every_line_break_and_control_character(char, shown):
    assert safe(f"a{char}b\tc") == f"a{shown}b\tc"


@pytest.mark.parametrize("char", ["\n", "\r", "\u2028", "\x85", "\x1b", "\x9b"])
def test_a_control_character_in_a_value_reaches_no_writer_raw(tmp_path, char):
    (tmp_path / "a.yaml").write_text(f"lr: 1\nrun_name: {json.dumps('a' + char + FORGED)}\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("lr: 1\nrun_name: b\n")
    report = api.diff(str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), Options(use_cache=False, keep_texts=True))
    assert [(f.rule, f.key, f.gpu.value, f.gpu.line) for f in report.findings] == [
        ("SD221", "run_name", "a" + char + FORGED, 2)]
    for fmt, out in _all_outputs(report).items():
        assert _forged(out) == [], fmt
        if char != "\n":  # a writer's own lines are its own
            assert char not in out, fmt


def test_a_newline_in_a_shell_value_forges_no_line(tmp_path):
    (tmp_path / "a.sh").write_text('torchrun t.py --lr 1 --run-name "a\n::error file=x.py,line=1::FORGED"\n')
    (tmp_path / "b.sh").write_text("torchrun t.py --lr 1 --run-name b\n")
    report = api.diff(str(tmp_path / "a.sh"), str(tmp_path / "b.sh"), Options(use_cache=False, keep_texts=True))
    assert [(f.rule, f.key, f.gpu.value, f.npu.value) for f in report.findings] == [
        ("SD221", "run_name", "a\n" + FORGED, "b")]
    outs = _all_outputs(report)
    for fmt, out in outs.items():
        assert _forged(out) == [], fmt
    assert any(line.endswith("run_name is a\\n::error file=x.py,line=1::FORGED on GPU and b on NPU")
               for line in outs["text"].splitlines())


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_newline_in_a_file_name_forges_no_line(tmp_path, fmt):
    name = "c\n::error file=x.py,line=1::FORGED.yaml"
    (tmp_path / name).write_text("lr: 1\n")
    (tmp_path / "d.yaml").write_text("lr: 2\n")
    (tmp_path / ("e\n" + FORGED + ".yaml")).write_text("lr: 1\n  - : [\n")
    r = _cli(["diff", "--no-cache", "-f", fmt, name, "d.yaml"], tmp_path)
    assert r.returncode == 1 and _forged(r.stdout.decode()) == []
    if fmt == "text":
        assert r.stdout.decode().splitlines()[0] == \
            "scriptdiff: GPU c\\n::error file=x.py,line=1::FORGED.yaml  vs  NPU d.yaml"
    r = _cli(["diff", "--no-cache", "-f", fmt, "e\n" + FORGED + ".yaml", "d.yaml"], tmp_path)
    err = r.stderr.decode()
    assert _forged(err) == [] and _forged(r.stdout.decode()) == []
    assert err.splitlines()[0] == ("scriptdiff: e\\n::error file=x.py,line=1::FORGED.yaml: not valid YAML: line 2: "
                                   "mapping values are not allowed in this context; not compared (1 setting(s) of the "
                                   "other side could not be compared: lr)")


def _safetensors(tensors: list[tuple[str, str]]) -> bytes:
    header, data = {}, b""
    for name, dtype in tensors:
        header[name] = {"dtype": dtype, "shape": [1], "data_offsets": [len(data), len(data) + 4]}
        data += struct.pack("<f", 1.0)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def test_a_newline_in_a_tensor_name_and_a_dtype_forges_no_line(tmp_path):
    (tmp_path / "g.safetensors").write_bytes(_safetensors([("a", "F32"), ("b", "F32")]))
    (tmp_path / "n.safetensors").write_bytes(_safetensors([("a\n" + FORGED, "F32"), ("b", "F16\n" + FORGED)]))
    report = api.weights(str(tmp_path / "g.safetensors"), str(tmp_path / "n.safetensors"), Options(use_cache=False))
    assert sorted((f.rule, f.key) for f in report.findings) == [
        ("SD601", "weights:a"), ("SD602", "weights:a\n" + FORGED), ("SD604", "weights:b")]
    outs = _all_outputs(report)
    for fmt, out in outs.items():
        assert _forged(out) == [], fmt
    assert "error   SD602 weights:a\\n::error file=x.py,line=1::FORGED  tensor a\\n::error file=x.py,line=1::FORGED " \
           "(F32[1]) is in the NPU checkpoint only; missing on GPU" in outs["text"].splitlines()


def test_a_newline_in_a_csv_header_and_a_tensorboard_tag_forges_no_line(tmp_path):
    head = 'step,"loss\n::error file=x.py,line=1::FORGED"\n'
    (tmp_path / "g.csv").write_text(head + "".join(f"{i},{2.5 - i / 10}\n" for i in range(1, 6)))
    (tmp_path / "n.csv").write_text(head + "".join(f"{i},{2.6 - i / 10}\n" for i in range(1, 6)))
    report = api.curves(str(tmp_path / "g.csv"), str(tmp_path / "n.csv"), Options(use_cache=False))
    assert [(f.rule, f.key) for f in report.findings] == [("SD707", "curve:loss")]
    for fmt, out in _all_outputs(report).items():
        assert _forged(out) == [], fmt
    assert _forged(api.curves_view(report, "markdown")) == []
    pytest.importorskip("tensorboard")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz"))
    from classes_bounds import tensorboard_run

    tag = "loss\n" + FORGED
    for side, base in (("gpu", 2.5), ("npu", 2.6)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "events.out.tfevents.1.host").write_bytes(
            tensorboard_run([{tag: base - i / 10, "loss": base - i / 10} for i in range(5)]))
    report = api.curves(str(tmp_path / "gpu"), str(tmp_path / "npu"), Options(use_cache=False))
    report.overview += api.curves_view(report, "chart", width=40, series=[tag])
    for fmt, out in _all_outputs(report).items():
        assert _forged(out) == [], fmt
    assert any("loss\\n::error" in line for line in render(report, "text").splitlines())


def test_a_newline_in_a_snapshot_field_forges_no_line(tmp_path):
    def snap(v):
        return json.dumps({"scriptdiff_snapshot": 1, "platform": "gpu", "python": {"version": "3.10" + v},
                           "os": {"name": "Ubuntu" + v}, "versions": {},
                           "distributions": [{"name": "torch", "version": "2.1.0" + v}], "env": {}, "env_withheld": 0})
    (tmp_path / "g.json").write_text(snap(""))
    (tmp_path / "n.json").write_text(snap("\n" + FORGED))
    report = api.env([str(tmp_path / "g.json")], [str(tmp_path / "n.json")], Options(use_cache=False))
    assert {"version:python", "version:os", "pkg:torch"} <= {f.key for f in report.findings}
    for fmt, out in _all_outputs(report).items():
        assert _forged(out) == [], fmt


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_file_name_that_is_not_utf8_gives_valid_output_and_no_raw_byte(tmp_path, fmt):
    name = b"g\x9b2J.yaml"
    with open(os.path.join(os.fsencode(tmp_path), name), "wb") as fh:
        fh.write(b"lr: 1\n")
    (tmp_path / "d.yaml").write_text("lr: 2\n")
    r = _cli(["diff", "--no-cache", "-f", fmt, os.fsdecode(name), "d.yaml"], tmp_path)
    assert r.returncode == 1
    assert b"\x9b" not in r.stdout and b"\x9b" not in r.stderr
    out = r.stdout.decode("utf-8")  # strict: valid UTF-8
    if fmt == "json":
        doc = json.loads(out)
        assert [(f["key"], f["gpu"]["path"]) for f in doc["findings"]] == [("lr", "g\\x9b2J.yaml")]
    elif fmt == "sarif":
        doc = json.loads(out)
        uris = [loc["physicalLocation"]["artifactLocation"]["uri"]
                for res in doc["runs"][0]["results"] for loc in res["locations"] + res["relatedLocations"]]
        assert uris == ["d.yaml", "g%9B2J.yaml"]
    elif fmt == "text":
        assert out.splitlines()[0] == "scriptdiff: GPU g\\x9b2J.yaml  vs  NPU d.yaml"


def test_markdown_shows_names_and_values_as_written_never_as_html(tmp_path, monkeypatch):
    """In plain text, HTML and image syntax is escaped; in a code span (where GitHub reads no
    markup) it is shown as written, inside a fence longer than any run of backticks in it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.yaml").write_text('lr: 1\nrun_name: "<img src=x onerror=alert(1)> ![](http://evil.example/x.png)"\n'
                                     'tag: "a``b <b>"\n')
    (tmp_path / "n.yaml").write_text("lr: 1\nrun_name: b\ntag: c\n")
    md = render(api.diff("g.yaml", "n.yaml", Options(use_cache=False)), "markdown")
    rows = [line for line in md.splitlines() if line.startswith("| 🔵") or line.startswith("| 🟡")]
    assert rows == [  # the warning, then the info row folded under its <details> (issue 30)
        "| 🟡 warning | SD220 | `tag` | ``` a``b <b> ``` at g.yaml:3 | `c` at n.yaml:3 | "
        "other setting: tag is a\\`\\`b \\<b\\> on GPU and c on NPU |",
        "| 🔵 info | SD221 | `run_name` | `<img src=x onerror=alert(1)> ![](http://evil.example/x.png)` at g.yaml:2 | "
        "`b` at n.yaml:2 | logging, paths, placement and throughput: run_name is \\<img src=x onerror=alert(1)\\> "
        "!\\[\\](http://evil.example/x.png) on GPU and b on NPU |"]
    outside = md.replace("`<img src=x onerror=alert(1)> ![](http://evil.example/x.png)`", "").replace("``` a``b <b> ```", "")
    for tag in ("<details><summary>", "</summary>", "</details>"):  # the writer's own fold, no input's
        outside = outside.replace(tag, "")
    assert [c for i, c in enumerate(outside) if c in "<[`" and outside[i - 1] != "\\" and c != "`"] == []


def test_the_fuzzers_forged_line_check_can_fail():
    """fuzz/classes_secrets.py plants a payload and lists what no output may hold: the forged
    command at the start of a line (after spaces) and each raw control character."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz"))
    import classes_secrets

    bad = classes_secrets.forbidden("\n" + FORGED + "\x1b[2J\u2028")
    assert any(s in "report\n    ::error file=x.py,line=1::FORGED" for s in bad)
    assert any(s in "report\r::error file=x.py,line=1::FORGED" for s in bad)
    assert any(s in "a\x1b[2J" for s in bad) and any(s in "a\u2028b" for s in bad)
    assert not any(s in "a\\n::error file=x.py,line=1::FORGED \\x1b[2J \\u2028\nnext line\n" for s in bad)

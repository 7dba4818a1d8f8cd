"""Tables derived from the rule packs are views of the loaded rule set (`rules.derived`,
`RuleSet.view`): built once per RuleSet, so a user's pack (`--rules DIR`) changes them within
the same process, going back to the shipped packs brings the shipped tables back, and nothing
is reset by walking the loaded modules."""
from __future__ import annotations

import pickle

import pytest

from test_user_packs import ORBIT, pack  # the in-house `orbit` trainer's pack (its launcher, a spelling, rules)
from scriptdiff import api
from scriptdiff.lang.shell import launchers
from scriptdiff.ruleset import rules, vocabulary
from scriptdiff.ruleset.rulepack import RuleError, RuleSet
from scriptdiff.ruleset.rules import derived

@pytest.fixture(autouse=True)
def shipped_only_after():
    api.use_rules([])
    yield
    api.use_rules([])


def test_a_user_pack_changes_the_derived_tables_and_going_back_restores_them(tmp_path):
    shipped = launchers.table()
    assert shipped.find("orbit") is None
    assert vocabulary.spelling_index()["aliases"].get("global_batch") is None
    api.use_rules([pack(tmp_path / "team")])
    orbit = launchers.table().find("orbit")
    assert (orbit.name, orbit.program, orbit.subcommands) == ("orbit", "subcommand", frozenset({"fit", "eval"}))
    assert vocabulary.spelling_index()["aliases"]["global_batch"] == "global_batch_size"
    assert rules.code("orbit-kernels-port") == "SDX001"
    api.use_rules([])
    assert launchers.table() is shipped  # the shipped rule set's own view, built once
    assert vocabulary.spelling_index()["aliases"].get("global_batch") is None
    with pytest.raises(RuleError, match="^rules/: no rule is named 'orbit-kernels-port'$"):
        rules.code("orbit-kernels-port")


def test_a_pack_edited_and_given_again_is_another_rule_set(tmp_path):
    team = pack(tmp_path / "team")
    api.use_rules([team])
    assert launchers.table().find("orbit").subcommands == frozenset({"fit", "eval"})
    pack(tmp_path / "team", ORBIT.replace("subcommands: [fit, eval]", "subcommands: [fit, eval, tune]"))
    api.use_rules([team])
    assert launchers.table().find("orbit").subcommands == frozenset({"fit", "eval", "tune"})


def test_a_view_is_built_once_per_rule_set(tmp_path):
    built: list[RuleSet] = []

    @derived
    def team_rules(rs: RuleSet) -> list[str]:
        built.append(rs)
        return sorted(r.code for r in rs.rules.values() if r.user)

    assert team_rules() == [] and team_rules() == [] and len(built) == 1
    api.use_rules([pack(tmp_path / "team")])
    assert team_rules() == ["SDX001", "SDX101"] and team_rules() == ["SDX001", "SDX101"] and len(built) == 2
    api.use_rules([])
    assert team_rules() == [] and len(built) == 2  # the shipped set's view was kept with it
    assert built[0] is rules.load() and built[1] is not built[0]
    given = RuleSet(rules={}, sections={}, section_origin={})  # a rule set given, not the one in use
    assert team_rules(given) == [] and built[-1] is given and len(built) == 3


def test_a_rule_set_is_sent_to_a_reader_process_without_its_views():
    rs = rules.load()
    launchers.table()  # a view built on it
    assert rs._views
    copy = pickle.loads(pickle.dumps(rs))
    assert copy._views == {} and copy.rules == rs.rules and copy.sections == rs.sections
    assert launchers.table(copy).find("torchrun").name == "torchrun"


# a team's trainer logs its loss as `my loss` (a Megatron-style line) and a step field of its own
CURVES = """\
curve_metrics:
  names: {"my loss": loss, train/tok_per_gpu: tokens_per_gpu}
  not_compared: [tokens_per_gpu]
  step_fields: [opt_step]
"""


def test_a_pack_names_a_logged_metric_and_its_step_field(tmp_path):
    from scriptdiff.curves.readers import read_side
    from scriptdiff.curves.series import canonical, is_timing, metrics

    log = tmp_path / "train.log"
    log.write_text("".join(f" iteration {i}/ 3 | my loss: {5.0 - i:.1f} | grad norm: 1.0 |\n" for i in (1, 2, 3)))
    jsonl = tmp_path / "metrics.jsonl"
    jsonl.write_text("".join(f'{{"opt_step": {i}, "train/tok_per_gpu": 100.0}}\n' for i in (1, 2)))
    assert (canonical("my loss"), is_timing("tokens_per_gpu")) == ("my loss", False)
    assert sorted(read_side([str(log)], "gpu").tracks) == ["grad_norm", "my loss"]
    assert sorted(read_side([str(jsonl)], "gpu").tracks) == []
    shipped_steps = metrics().step_fields
    api.use_rules([pack(tmp_path / "team", CURVES)])
    assert (canonical("my loss"), canonical("MY LOSS"), canonical("train/tok_per_gpu")) == ("loss", "loss", "tokens_per_gpu")
    assert is_timing("tokens_per_gpu") and metrics().step_fields == shipped_steps + ("opt_step",)
    assert sorted(read_side([str(log)], "gpu").tracks) == ["grad_norm", "loss"]
    assert sorted(read_side([str(jsonl)], "gpu").tracks) == ["tokens_per_gpu"]
    api.use_rules([])
    assert (canonical("my loss"), is_timing("tokens_per_gpu")) == ("my loss", False)
    assert sorted(read_side([str(log)], "gpu").tracks) == ["grad_norm", "my loss"]


# a team's package lists: deps-*.txt files, and its own NPU plugin saying a list is the NPU's
LIBRARIES = """\
library_checks:
  platform_markers: {npu: [orbit-npu]}
  list_names: ["deps-*.txt"]
"""


def test_a_pack_names_package_lists_and_a_platform_marker(tmp_path):
    from scriptdiff.checks.libraries import looks_like_package_list, side_platform
    from scriptdiff.model import Fact

    real = {"orbit-npu": Fact(key="pkg:orbit-npu", value="1.0")}
    assert (looks_like_package_list("", "deps-gpu.txt"), side_platform(real)) == (False, None)
    assert (looks_like_package_list("", "requirements.txt"), side_platform({**real, "mindspeed": real["orbit-npu"]})) \
        == (True, "npu")
    api.use_rules([pack(tmp_path / "team", LIBRARIES)])
    assert (looks_like_package_list("", "deps-gpu.txt"), side_platform(real)) == (True, "npu")
    assert looks_like_package_list("", "requirements.txt")  # the shipped names stay (lists extend)
    api.use_rules([])
    assert (looks_like_package_list("", "deps-gpu.txt"), side_platform(real)) == (False, None)


# a team's own name for the NPU: `accelerator: davinci` is the Ascend device
DEVICES = """\
devices:
  families: {npu: [davinci]}
"""


def test_a_device_name_is_written_once_and_every_device_table_follows_it(tmp_path):
    from scriptdiff.model import Options
    from scriptdiff.ruleset.devices import family_of, may_branch

    for side, value in (("gpu", "cuda"), ("npu", "davinci")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "cfg.yaml").write_text(f"train:\n  accelerator: {value}\n", encoding="utf-8")
    g, n = str(tmp_path / "gpu" / "cfg.yaml"), str(tmp_path / "npu" / "cfg.yaml")

    def outcome():
        rep = api.diff(g, n, Options(use_cache=False))
        return [(f.rule, f.key, f.gpu.value, f.npu.value) for f in rep.findings], [m.rule for m in rep.masked]

    assert (family_of("davinci:0"), may_branch(b"DEVICE=davinci")) == (None, False)
    assert outcome() == ([("SD220", "train.accelerator", "cuda", "davinci")], [])
    api.use_rules([pack(tmp_path / "team", DEVICES)])
    assert (family_of("davinci:0"), may_branch(b"DEVICE=davinci")) == ("npu", True)
    assert outcome() == ([], ["SD015"])  # the device-setting port (rules/aliases.yaml device_port: npu)
    api.use_rules([])
    assert outcome() == ([("SD220", "train.accelerator", "cuda", "davinci")], [])


def test_a_pack_adds_a_secret_name_and_may_exempt_none(tmp_path):
    """Issue 40: a pack a repository names could make CI print its secrets, so a user's pack
    may add secret-looking names (the view follows it) and exempt none (refused at its line)."""
    from scriptdiff.ruleset.rulepack import RuleError
    from scriptdiff.ruleset.secrets import secret_spans

    code = 'lookup(cache_key="abc123def")\n'
    assert secret_spans(code, code=True) == [(18, 27)] and secret_spans('key="abc123def"\n', code=True) == []
    with pytest.raises(RuleError) as e:
        api.use_rules([pack(tmp_path / "team", "secrets:\n  not_secret_in_code: [CACHE_KEY]\n")])
    assert str(e.value).endswith("orbit.yaml:2: secrets.not_secret_in_code: a user's pack may add secret-looking "
                                 "names and shapes, never exempt one from withholding (the exemptions are "
                                 "rules/secrets.yaml's)")
    api.use_rules([])
    assert secret_spans(code, code=True) == [(18, 27)]
    cfg = 'lookup(orbit_handle="abc123def")\n'
    assert secret_spans(cfg, code=True) == []
    api.use_rules([pack(tmp_path / "team2", "secrets:\n  words: [HANDLE]\n  suffixes: [HANDLE]\n")])
    assert secret_spans(cfg, code=True) == [(21, 30)]
    api.use_rules([])
    assert secret_spans(cfg, code=True) == []


def test_a_pack_adds_keys_hparams_lists_first_and_settings_naming_tokenizer_files(tmp_path):
    from scriptdiff.checks.dataset import tokenizer_refs
    from scriptdiff.model import Fact

    (tmp_path / "tok.model").write_text("x", encoding="utf-8")
    facts = [Fact(key="spm_model", value="tok.model"), Fact(key="vocab_file", value="tok.model")]
    shipped = api.HPARAM_KEYS
    assert shipped[:2] == ("lr", "global_batch_size") and len(shipped) == 18 and "zero_stage" not in shipped
    assert [f.key for _p, f in tokenizer_refs(facts, str(tmp_path))] == ["vocab_file"]
    api.use_rules([pack(tmp_path / "team", "hparams_table: [zero_stage]\ntokenizer_settings: [spm_model]\n")])
    assert api.HPARAM_KEYS == shipped + ("zero_stage",)
    assert [f.key for _p, f in tokenizer_refs(facts, str(tmp_path))] == ["spm_model", "vocab_file"]
    api.use_rules([])
    assert api.HPARAM_KEYS == shipped

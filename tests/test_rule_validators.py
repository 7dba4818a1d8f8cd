"""Section validators: every one is registered, and a malformed section stops loading with an
error that names the pack. Each case loads a temporary copy of rules/ with one file changed."""
import inspect
import shutil

import pytest

from scriptdiff.ruleset import rule_validators, rulepack
from scriptdiff.ruleset.rulepack import RuleError, load_packs, rules_dir


def test_every_check_function_is_registered():
    checks = [fn for name, fn in inspect.getmembers(rule_validators, inspect.isfunction)
              if name.startswith("check_") and fn.__module__ == rule_validators.__name__]
    assert checks
    missing = [fn.__name__ for fn in checks if fn not in rulepack.VALIDATORS]
    assert missing == []


def test_every_family_of_sections_registers_its_check_functions():
    """The sections live in families of modules (rule_validators.FAMILIES), each check_* of
    each registered and reachable by its name from rule_validators (docs and packs cite it so)."""
    assert [m.__name__.rsplit(".", 1)[-1] for m in rule_validators.FAMILIES] == [
        "validators_settings", "validators_code", "validators_setup", "validators_process"]
    for module in (rule_validators, *rule_validators.FAMILIES):
        checks = [fn for name, fn in inspect.getmembers(module, inspect.isfunction)
                  if name.startswith("check_") and fn.__module__ == module.__name__]
        assert checks, module.__name__
        assert [fn.__name__ for fn in checks if fn not in rulepack.VALIDATORS] == []
        assert [fn.__name__ for fn in checks if getattr(rule_validators, fn.__name__, None) is not fn] == []
    assert len(rulepack.VALIDATORS) == len({fn.__name__ for fn in rulepack.VALIDATORS})


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


def line_of(pack: str, old: str, new: str, at: str) -> int:
    """The line of `at` in rules/<pack> once `old` is replaced by `new` (it must be there once)."""
    text = (rules_dir() / pack).read_text(encoding="utf-8").replace(old, new, 1)
    assert text.count(at) == 1, at
    return text[:text.index(at)].count("\n") + 1


@pytest.mark.parametrize("pack,old,new,at,needle", [
    # a helper named for a move to the device, known by its words and verbs: both are needed
    ("devices.yaml", "moves: {words: [device], verbs: [to,", "moves: {words: [device], verbz: [to,", "verbz",
     "devices.python.plumbing.moves: unknown field(s) verbz (known: words, verbs)"),
    # a python mask naming a rule that does not exist
    ("python.yaml", "gpu: torch.cuda.amp, rule: SD009}", "gpu: torch.cuda.amp, rule: SD999}", "rule: SD999}",
     "python.qualified_renames[0].rule: 'SD999' is not a mask rule code"),
    # a file-stem rename without {base}
    ("pairing.yaml", '{gpu: "{base}_gpu", npu: "{base}_npu"}', '{gpu: "train_gpu", npu: "{base}_npu"}', "train_gpu",
     "pairing.name_renames[1].gpu: expected a file name pattern with {base} once (got 'train_gpu')"),
    # value ports: a key outside the vocabulary, an unquoted `no` (a YAML boolean), a table of lists
    ("vocabulary.yaml", "value_ports:\n  params_dtype:", "value_ports:\n  no_such_key:", "no_such_key",
     "value_ports.no_such_key: 'no_such_key' is not a vocabulary key"),
    ("vocabulary.yaml", '    "no": fp32', "    no: fp32", "    no: fp32",
     "value_ports.params_dtype.False: expected a lower-case string (quote yes/no/true/false/null) as the key"),
    ("vocabulary.yaml", "    fa2: true", "    fa2: [true]", "fa2: [true]",
     "value_ports.use_flash_attn.fa2: expected a string, a boolean or a number (got [True])"),
    ("vocabulary.yaml", "    torch.half: fp16", "    Torch.Half: fp16", "Torch.Half",
     "value_ports.params_dtype.Torch.Half: expected a lower-case string"),
    # categories: a severity in two places (even one that agrees with the rule's is a second
    # place), a rule that is missing, a mask or of another check, no 'other'
    ("vocabulary.yaml", "attention:   {rule: SD201,", "attention:   {rule: SD201, severity: warning,",
     "attention:   {rule: SD201, severity", "categories.attention.severity: a category only names its rule"),
    ("vocabulary.yaml", "attention:   {rule: SD201,", "attention:   {rule: SD201, severity: error,",
     "attention:   {rule: SD201, severity", "categories.attention.severity: a category only names its rule"),
    ("vocabulary.yaml", "attention:   {rule: SD201,", "attention:   {rule: SD299,", "{rule: SD299",
     "categories.attention.rule: 'SD299' is not a known rule code"),
    ("vocabulary.yaml", "attention:   {rule: SD201,", "attention:   {rule: SD015,", "{rule: SD015",
     "categories.attention.rule: SD015 is not a finding of the hyperparameters check"),
    ("vocabulary.yaml", "attention:   {rule: SD201,", "attention:   {rule: SD301,", "{rule: SD301",
     "categories.attention.rule: SD301 is not a finding of the hyperparameters check"),
    ("vocabulary.yaml", "  other:       {rule: SD220, title: other setting, naming: true}\n", "", "categories:\n  attention",
     "categories: categories need 'other', the category of a key outside the vocabulary"),
    # issue 41: a key whose GPU word fix copies is a vocabulary key whose words encode its value
    ("fix.yaml", "fix_copies:\n  params_dtype:", "fix_copies:\n  lr:", "  lr: {why",
     "fix_copies.lr: 'lr' has no value_ports: its values are copied already"),
    ("fix.yaml", "fix_copies:\n  params_dtype:", "fix_copies:\n  no_such_key:", "no_such_key",
     "fix_copies.no_such_key: 'no_such_key' is not a vocabulary key"),
    # secrets: an unknown list, a lower-case word, a suffix of two words
    ("secrets.yaml", "  not_secret:", "  allow:", "  allow:", "secrets: unknown field(s) allow"),
    ("secrets.yaml", "words: [SECRET,", "words: [secret,", "words: [secret,",
     "secrets.words[0]: expected upper-case words joined by _ (got 'secret')"),
    ("secrets.yaml", "suffixes: [TOKEN,", "suffixes: [HF_TOKEN,", "suffixes: [HF_TOKEN,",
     "secrets.suffixes[0]: expected one word in upper case (no _) (got 'HF_TOKEN')"),
    # issue 27: section words, a config's name, a release's version, code keywords, env defaults
    ("aliases.yaml", "section_words: [enable, enabled, name, names, type]", "section_words: [enable, lr]",
     "section_words: [enable, lr]", "generic_names.section_words[1]: 'lr' is a spelling of a vocabulary key"),
    ("vocabulary.yaml", 'pattern: "(?:^|[^a-z0-9])(?:zero|stage|z)[_-]?([0-3])(?:[^0-9]|$)"', 'pattern: "zero[0-3]"',
     'pattern: "zero[0-3]"', "vocabulary.zero_stage.from_name.pattern: needs exactly one group (the value)"),
    ("vocabulary.yaml", "from_name: {kind: deepspeed,", "from_name: {kind: nothing,", "from_name: {kind: nothing,",
     "vocabulary.zero_stage.from_name.kind: 'nothing' is not a known kind"),
    ("vocabulary.yaml", "release: core_r0.8.0, version: 0.8.0,", "release: core_r0.8.0, version: r8,", "version: r8",
     "vocabulary.use_mcore_models.default_changed.megatron.version: 'r8' is not a PEP 440 version"),
    ("python.yaml", "names: {dtype: null,", "names: {dtype: no_such_key,", "names: {dtype: no_such_key,",
     "python.generic_keywords.names.dtype: key 'no_such_key' is not in the vocabulary"),
    ("signatures.yaml", "env_defaults: {rank: RANK,", "env_defaults: {ranks: RANK,", "env_defaults: {ranks: RANK,",
     "call_signatures.torch.distributed.init_process_group.env_defaults.ranks: env_defaults: 'ranks' is not one of "
     "its params"),
    # dumps: a form recognised two ways, a stands_for naming no form, a dependency on no key
    ("dumps.yaml", "        calls: [npu_rms_norm]\n", "        calls: [npu_rms_norm]\n        modules: [X]\n",
     "      npu_rms_norm:\n        title", "dump_ports.rms_norm.forms.npu_rms_norm: give one of calls, "
                                                   "modules, not several"),
    ("dumps.yaml", "      npu_rms_norm: [module, eager]", "      npu_rms_norm: [module, eagre]",
     "[module, eagre]", "dump_ports.rms_norm.stands_for.npu_rms_norm[1]: 'eagre' is not a form of rms_norm"),
    ("dumps.yaml", "    keys: [norm_epsilon, normalization, use_fused_rmsnorm]",
     "    keys: [norm_epsilon, rms_eps, use_fused_rmsnorm]", "rms_eps",
     "dump_depends[3].keys[1]: 'rms_eps' is not a vocabulary key (rules/vocabulary.yaml)"),
    ("dumps.yaml", "    phase: after_backward", "    phase: optimizer", "phase: optimizer",
     "dump_depends[4].phase: expected one of forward, backward, after_backward (got 'optimizer')"),
    # dump evidence: a key the vocabulary lacks, a fused form that is a sequence, an eager form no port has
    ("dumps.yaml", "    key: params_dtype\n", "    key: param_dtype\n", "key: param_dtype",
     "dump_evidence.precision.key: 'param_dtype' is not a vocabulary key (rules/vocabulary.yaml)"),
    ("dumps.yaml", "    fused: [fused, npu_fusion_attention]", "    fused: [fused, eager]", "fused: [fused, eager]",
     "dump_evidence.attention.fused[1]: 'eager' is not a form of attention recognised by its calls"),
    ("dumps.yaml", "    eager: eager\n", "    eager: eagre\n", "eager: eagre",
     "dump_evidence.attention.eager: 'eagre' is not a form of attention recognised by a sequence"),
    # a dialect's raw default: one value, never a vocabulary key's spelling (its default is the vocabulary's)
    ("verl.yaml", "      algorithm.kl_ctrl.kl_coef: 0.001\n", "      algorithm.kl_ctrl.kl_coef: [0.001]\n",
     "kl_coef: [0.001]", "dialects.verl.raw_defaults.algorithm.kl_ctrl.kl_coef: [0.001] is not a single value"),
    ("verl.yaml", "      algorithm.kl_ctrl.kl_coef: 0.001\n", "      data.train_batch_size: 1024\n",
     "data.train_batch_size: 1024", "dialects.verl.raw_defaults.data.train_batch_size: 'data.train_batch_size' is "
                                    "a vocabulary key's spelling"),
])
def test_malformed_section_names_the_pack_and_line(tmp_path, pack, old, new, at, needle):
    with pytest.raises(RuleError) as e:
        load_with(tmp_path, pack, old, new)
    assert str(e.value).startswith(f"rules/{pack}:{line_of(pack, old, new, at)}: {needle}")


def test_secrets_need_both_lists(tmp_path):
    gone = "  suffixes: [TOKEN, KEY, SECRET, PASSWORD, PASSWD, AUTH, API, ACCESS]\n"
    line = line_of("secrets.yaml", gone, "", "secrets:\n")
    with pytest.raises(RuleError) as e:
        load_with(tmp_path, "secrets.yaml", gone, "")
    assert str(e.value) == f"rules/secrets.yaml:{line}: secrets: needs non-empty 'words' and 'suffixes' lists"


@pytest.mark.parametrize("old,new,at,needle", [
    # a row out of order, a version that does not parse, a row citing no table, an undated table
    ('    - {torch_npu: "2.12.0",', '    - {torch_npu: "2.1.0",', 'torch: "2.12.0", cann: "9.1.0"',
     "ascend_versions.torch_npu[62]: out of order"),
    ('cann: "8.0.RC3", source: pta-compat}', 'cann: "8.0.RC3-latest", source: pta-compat}', "8.0.RC3-latest",
     "ascend_versions.torch_npu[31].cann: '8.0.RC3-latest' is not a CANN version"),
    ('{torch_npu: "2.4.0", torch: "2.4.0"', '{torch_npu: "2.4.0 final", torch: "2.4.0"', "2.4.0 final",
     "ascend_versions.torch_npu[42].torch_npu: '2.4.0 final' is not a PEP 440 version"),
    ('hdk: "25.2.0", source: deployer-mirror}', 'hdk: "25.2.0", source: nowhere}', "source: nowhere",
     "ascend_versions.hdk[1].source: source 'nowhere' is not one of"),
    ('      date: "2024-09-14"\n', '', "  pta-readme-2024-09:",
     "ascend_versions.tables.pta-readme-2024-09: needs a date"),
    ('      commit: 006ca00290d3a8d5bdd635c61c446f743660ac84\n', '', "  pta-readme-2024-09:",
     "ascend_versions.tables.pta-readme-2024-09: a table dated by its commit names its repo, path and commit"),
    ('mindspeed: "2.3.0_core_r0.12.1"', 'mindspeed: "2.3.0_core_r0.11.0"', "2.3.0_core_r0.11.0",
     "ascend_versions.mindspeed_llm[2].mindspeed: MindSpeed branch '2.3.0_core_r0.11.0' is not in "
     "ascend_versions.mindspeed"),
])
def test_malformed_ascend_versions_name_the_pack_and_line(tmp_path, old, new, at, needle):
    with pytest.raises(RuleError) as e:
        load_with(tmp_path, "ascend_versions.yaml", old, new)
    line = line_of("ascend_versions.yaml", old, new, at)
    assert str(e.value).startswith(f"rules/ascend_versions.yaml:{line}: {needle}")


# the tables moved out of package code into the packs (issue 38): each refused at its line
@pytest.mark.parametrize("pack,old,new,at,message", [
    # a spelling mapped onto another spelling, no primary loss, a step field that is no name
    ("curves.yaml", "    train_loss: loss\n", "    train_loss: lm_loss\n", "train_loss: lm_loss",
     "curve_metrics.names.train_loss: 'lm_loss' is itself a spelling of 'loss': map 'train_loss' onto that metric"),
    ("curves.yaml", "  primary: [loss, actor/pg_loss, actor/loss, critic/score/mean, critic/rewards/mean]",
     "  primary: []", "primary: []", "curve_metrics.primary: expected a non-empty list of names"),
    ("curves.yaml", "step_fields: [current_steps,", "step_fields: [7,", "step_fields: [7,",
     "curve_metrics.step_fields[0]: expected a name (a non-empty string) (got 7)"),
    # a package list's name that is no pattern, a platform marker for a third platform
    ("libraries.yaml", 'list_names: ["*requirement*.txt",', "list_names: [7,", "list_names: [7,",
     "library_checks.list_names[0]: expected a name (a non-empty string) (got 7)"),
    ("libraries.yaml", "    gpu: [flash-attn]\n", "    tpu: [flash-attn]\n", "tpu: [flash-attn]",
     "library_checks.platform_markers: unknown field(s) tpu (known: gpu, npu)"),
    # device names are written in their family only: the device port names families, and the
    # devices a tensor may be on besides the accelerator are the device tests' own list
    ("aliases.yaml", "  gpu: [cuda]\n", "  gpu: [cuda, nvidia]\n", "gpu: [cuda, nvidia]",
     "device_port.gpu[1]: 'nvidia' is not a device family (cuda, npu, other)"),
    ("python.yaml", "to_device: {methods: [cuda, npu], rule: SD016}",
     "to_device: {methods: [cuda, npu], not_devices: [cpu, meta], rule: SD016}", "not_devices: [cpu, meta]",
     "python.device_refactors.to_device.not_devices: the devices that are no device move are rules/devices.yaml "
     "`devices.python.tensor_devices`"),
    # the keys `hparams` lists first are vocabulary keys
    ("hparams.yaml", "hparams_table: [lr, global_batch_size,", "hparams_table: [lr, global_batch,",
     "hparams_table: [lr, global_batch,", "hparams_table[1]: 'global_batch' is not a vocabulary key"),
    # the `check` input a kind's files are (scriptdiff init) is one a check takes
    ("kinds.yaml", "    input: launch\n", "    input: launcher\n", "input: launcher",
     "kinds.shell.input: 'launcher' is not a check input (configs, dataset, dumps, environment, launch, logs, "
     "packages, scripts, weights)"),
])
def test_a_moved_table_is_refused_at_its_line(tmp_path, pack, old, new, at, message):
    with pytest.raises(RuleError) as e:
        load_with(tmp_path, pack, old, new)
    assert str(e.value) == f"rules/{pack}:{line_of(pack, old, new, at)}: {message}"


@pytest.mark.parametrize("old,new,at,needle", [
    # issue 39: a sink documented by no URL, a call both a sink and inert, a sink without its reason
    ("      source: https://pytorch.org/docs/stable/optim.html\n", "      source: the optimizer docs\n",
     "source: the optimizer docs", "numerics_relevance.sinks.optimizer.source: 'the optimizer docs' is not a URL"),
    ('      calls: [print, "pprint.*",', '      calls: ["*.step", "pprint.*",', 'calls: ["*.step", "pprint.*",',
     "numerics_relevance.inert.logging.calls[0]: '*.step' is also a call of the sink 'optimizer'"),
    ("      reason: what is differentiated, and how gradients are computed from it\n", "", "    loss:\n",
     "numerics_relevance.sinks.loss: needs a reason"),
    # a rewritten region's step sink that is no sink, a setting that is no vocabulary key
    ("  step_sinks: [loss, optimizer]", "  step_sinks: [loss, optimiser]", "step_sinks: [loss, optimiser]",
     "rewritten_regions.step_sinks[1]: 'optimiser' is not a sink of numerics_relevance"),
    ("    key: gradient_accumulation_steps\n", "    key: accumulation\n", "    key: accumulation",
     "rewritten_regions.accumulation.key: key 'accumulation' is not in the vocabulary"),
])
def test_malformed_relevance_names_the_pack_and_line(tmp_path, old, new, at, needle):
    with pytest.raises(RuleError) as e:
        load_with(tmp_path, "relevance.yaml", old, new)
    assert str(e.value).startswith(f"rules/relevance.yaml:{line_of('relevance.yaml', old, new, at)}: {needle}")

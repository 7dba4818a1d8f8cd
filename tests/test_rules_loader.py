import pytest

from scriptdiff.ruleset.rules import RuleError, parse_pack

GOOD = """
rules:
  - code: SD999
    name: x
    check: script
    severity: info
    summary: s
    doc: d
    examples:
      - {lang: text, gpu: a, npu: b, fires: true}
      - {lang: text, gpu: a, npu: a, fires: false}
"""


def test_good_pack_loads():
    rules, sections = parse_pack(GOOD, "rules/x.yaml")
    assert [r.code for r in rules] == ["SD999"]
    assert sections == {}


@pytest.mark.parametrize("bad,needle", [
    (GOOD.replace("SD999", "X1"), "rules/x.yaml:3: rule code 'X1'"),
    (GOOD.replace("severity: info", "severity: fatal"), "severity must be one of"),
    (GOOD.replace("check: script", "check: vibes"), "check 'vibes'"),
    (GOOD.replace("fires: false", "fires: true"), "one that does not"),
    (GOOD.replace("    doc: d\n", ""), "'doc'"),
    ("rules: [\n", "not valid YAML"),
])
def test_bad_pack_names_file_and_line(bad, needle):
    with pytest.raises(RuleError) as e:
        parse_pack(bad, "rules/x.yaml")
    assert needle in str(e.value)
    assert str(e.value).startswith("rules/x.yaml:")


# --- the validated packs kept beside the code (rules._snapshot) ------------------------------

@pytest.fixture
def fresh_rules(tmp_path, monkeypatch):
    """rules._load with an empty snapshot folder and an empty cache, counting pack parses."""
    from scriptdiff.ruleset import rules

    monkeypatch.setattr(rules, "_SNAPSHOT_DIR", tmp_path / "__pycache__")
    monkeypatch.setenv("SCRIPTDIFF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    parsed = []
    real = rules.load_packs
    monkeypatch.setattr(rules, "load_packs", lambda paths, **kw: parsed.append(1) or real(paths, **kw))
    rules._load.cache_clear()
    yield rules, parsed
    rules._load.cache_clear()


def test_a_first_load_writes_the_snapshot_and_the_next_reads_only_it(fresh_rules, monkeypatch):
    rules, parsed = fresh_rules
    first = rules._load()
    assert parsed == [1]
    snaps = list(rules._SNAPSHOT_DIR.glob("ruleset.*.marshal"))
    assert [p.name for p in snaps] == [f"ruleset.{rules.cache.key('ruleset')}.marshal"]
    rules._load.cache_clear()
    monkeypatch.setattr(rules.cache, "get", lambda *a, **k: pytest.fail("the cache was read"))
    again = rules._load()
    assert parsed == [1]  # not parsed again
    assert again.rules == first.rules and again.sections == first.sections


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", b"\xe9" * 10])
def test_a_damaged_snapshot_is_passed_over(fresh_rules, damage):
    rules, parsed = fresh_rules
    first = rules._load()
    snap = next(rules._SNAPSHOT_DIR.glob("ruleset.*.marshal"))
    snap.write_bytes(damage)
    rules._load.cache_clear()
    again = rules._load()  # from the cache entry, which then writes a sound snapshot again
    assert again.rules == first.rules and parsed == [1]
    assert rules._snapshot(rules.cache.key("ruleset")) is not None


def test_no_snapshot_where_python_writes_no_bytecode_and_old_ones_go(fresh_rules, monkeypatch):
    rules, parsed = fresh_rules
    monkeypatch.setattr("sys.dont_write_bytecode", True)
    rules._load()
    assert not rules._SNAPSHOT_DIR.exists()
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    rules._SNAPSHOT_DIR.mkdir()
    (rules._SNAPSHOT_DIR / "ruleset.0123.marshal").write_bytes(b"old")
    rules._load.cache_clear()
    rules._load()  # from the cache: the snapshot is written, the older one removed
    assert [p.name for p in rules._SNAPSHOT_DIR.iterdir()] == [f"ruleset.{rules.cache.key('ruleset')}.marshal"]

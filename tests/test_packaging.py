"""The wheel ships every subpackage and every rule pack (pyproject lists packages by hand,
because the rule packs live in rules/ at the top of the repository)."""
from __future__ import annotations

import sys
from pathlib import Path

from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_subpackage_is_listed():
    listed = set(_config()["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "scriptdiff").rglob("__init__.py")}
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"


def test_rule_packs_ship_inside_the_wheel():
    cfg = _config()
    assert cfg["package-dir"]["scriptdiff.rulepacks"] == "rules"
    assert cfg["package-data"]["scriptdiff.rulepacks"] == ["*.yaml"]
    assert (ROOT / "rules" / "__init__.py").is_file()
    packs = sorted(p.name for p in Path(ROOT / "rules").glob("*"))
    assert all(name.endswith(".yaml") or name in ("__init__.py", "__pycache__") for name in packs), packs

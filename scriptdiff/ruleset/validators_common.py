"""Names the schemas of several families of rule-pack sections share (scriptdiff/ruleset/
rule_validators.py and the validators_* modules it registers)."""
from __future__ import annotations

from ..model import SEVERITIES
from .packschema import Enum, Name

TYPES = ("bool", "dtype", "float", "int", "list", "str")  # a vocabulary key's value types
FRAMEWORKS = ("megatron", "hf", "deepspeed")  # the vocabulary's framework columns
SEVERITY = Enum(*SEVERITIES)
CODE = Name("a rule code (SD123)")


def is_lower(x: str) -> bool:
    return x == x.lower()

"""Ascend version strings that are not PEP 440: CANN toolkit and Ascend HDK (driver) versions.

8.0.RC1 < 8.0.RC3 < 8.0.RC3.20 < 8.0.0.beta1 < 8.0.0 < 8.1.RC1: for CANN each RC is a
release of its own, a numbered patch release follows the RCs of its major.minor, an extra
number (6.3.RC3.1) is a later build of a release, and alpha/beta markers (8.0.RC3.beta1,
9.0.0-beta.2, 8.0.0.alpha002) and T builds (9.1.T1) are pre-releases. Imports nothing of the
package: the rule-pack validator and the checks both parse with it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_CANN = re.compile(r"^(\d+)\.(\d+)\.(?:(rc|t)(\d+)|(\d+))((?:\.\d+)*)"
                   r"(?:[.\-_]?(alpha|beta)[.\-_]?(\d*))?$", re.IGNORECASE)
_STAGE = {"t": 0, "rc": 1, "": 2}


@dataclass(frozen=True)
class CannVersion:
    """A CANN (or Ascend HDK) version: 8.0.RC3, 8.0.0.beta1, 6.3.RC3.1, 9.0.0-beta.2, 9.1.T1."""

    major: int
    minor: int
    stage: str  # "rc", "t" (a test build) or "" (a numbered patch release)
    number: int
    extra: tuple[int, ...]
    pre: str  # "alpha", "beta" or ""
    pre_number: int

    @property
    def release(self) -> str:
        """The release this build belongs to, written as the tables write it (no pre marker)."""
        third = f"{self.stage.upper()}{self.number}" if self.stage else str(self.number)
        return f"{self.major}.{self.minor}.{third}" + "".join(f".{x}" for x in self.extra)

    @property
    def prerelease(self) -> bool:
        return bool(self.pre) or self.stage == "t"

    def key(self) -> tuple:
        pre = {"alpha": 0, "beta": 1}.get(self.pre, 2)
        return (self.major, self.minor, _STAGE[self.stage], self.number, self.extra, pre, self.pre_number)


def parse_cann(text) -> CannVersion | None:
    """A CANN or HDK version string, or None when it is not one."""
    m = _CANN.match(str(text or "").strip())
    if not m:
        return None
    stage = (m.group(3) or "").lower()
    number = int(m.group(4) if stage else m.group(5))
    extra = tuple(int(x) for x in m.group(6).split(".") if x)
    return CannVersion(int(m.group(1)), int(m.group(2)), stage, number, extra, (m.group(7) or "").lower(),
                       int(m.group(8) or 0))


def cann_key(text) -> tuple:
    p = parse_cann(text)
    return p.key() if p else (-1,)

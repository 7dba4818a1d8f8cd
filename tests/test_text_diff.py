"""The plain-text fallback's line diff (lang/text.py): above budget.PRECISE_DIFF_LINES lines it is
anchored on lines unique to each side (issue 40: difflib alone took 90 s on a long file whose
changed lines repeat); its opcodes still cover both sides, and what they call equal is equal."""
from __future__ import annotations

import random

import pytest

from scriptdiff import budget
from scriptdiff.lang import text


def _check_cover(g, n, ops):
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (i, j), ops
        if tag == "equal":
            assert g[i1:i2] == n[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(g), len(n))


@pytest.mark.parametrize("seed", range(20))
def test_long_sides_are_covered_and_equal_means_equal(seed, monkeypatch):
    monkeypatch.setattr(budget, "PRECISE_DIFF_LINES", 30)  # the anchored path on small lists
    rng = random.Random(seed)
    g = [rng.choice(["x", "y", f"u{rng.randrange(500)}", "    return a.cuda()"]) for _ in range(rng.randrange(40, 400))]
    n = [ln.replace("cuda", "npu") if rng.random() < 0.5 else ln for ln in g]
    for _ in range(rng.randrange(0, 6)):
        at = rng.randrange(len(n) + 1)
        n[at:at + rng.randrange(3)] = [f"new{rng.randrange(99)}"] * rng.randrange(3)
    _check_cover(g, n, text.opcodes(g, n, whole=True))


def test_a_long_file_with_repeated_changed_lines_gives_one_block_per_change(monkeypatch):
    monkeypatch.setattr(budget, "PRECISE_DIFF_LINES", 50)
    g, n = [], []
    for i in range(300):
        g += [f"def f{i}(x):", f"    y = x * {i}", "    return y.cuda()"]
        n += [f"def f{i}(x):", f"    y = x * {i}", "    return y.npu()" if i != 7 else "    return y.cuda()"]
    ops = [o for o in text.opcodes(g, n) if o[0] != "equal"]
    assert len(ops) == 299 and all(tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1 for tag, i1, i2, j1, j2 in ops)
    assert 7 * 3 + 2 not in [o[1] for o in ops]  # the one line left as it was is not a difference


def test_short_sides_are_difflibs_own():
    import difflib
    g = ["a", "b", "c", "d", "e"]
    n = ["a", "c", "b", "d", "f"]
    assert text.opcodes(g, n, whole=True) == difflib.SequenceMatcher(a=g, b=n, autojunk=False).get_opcodes()

"""Folder mode: what the cheap pass (identical files skipped by size and hash) saves.

Run: python benchmarks/bench_tree.py [files] [runs]
Builds two trees of N text-like files (a copy of a 300-line file each) where 1% differ,
then times `diff_trees` on them against a baseline in the same run: the same tree where
every file differs (all parsed and diffed). Prints medians and the ratio to the baseline.
Python files are used when the Python module is in the build, else .txt files.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _timing import med, row, time_fn  # noqa: E402


def build(root: Path, n: int, differ_every: int, ext: str) -> None:
    body = "".join(f"value_{i} = {i} * 2  # line {i}\n" for i in range(300))
    for side in ("gpu", "npu"):
        for i in range(n):
            p = root / side / f"pkg{i % 10}" / f"mod{i}{ext}"
            p.parent.mkdir(parents=True, exist_ok=True)
            text = body
            if side == "npu" and i % differ_every == 0:
                text = body.replace("value_7 = 7", "value_7 = 8")
            p.write_text(text)


def main() -> None:
    import importlib.util

    from scriptdiff.engine import Options
    from scriptdiff.tree import diff_trees

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    ext = ".py" if importlib.util.find_spec("scriptdiff.lang.python") else ".txt"
    with tempfile.TemporaryDirectory() as d:
        few, every = Path(d, "few"), Path(d, "all")
        build(few, n, 100, ext)
        build(every, n, 1, ext)
        opts = Options(use_cache=False)
        base = time_fn(lambda: diff_trees(str(every / "gpu"), str(every / "npu"), opts), runs)
        print(f"{n} files per side ({ext}), median of {runs} runs")
        print(row("every file differs (baseline: all diffed)", base))
        print(row("1% differ (identical files skipped)", time_fn(
            lambda: diff_trees(str(few / "gpu"), str(few / "npu"), opts), runs), med(base)))


if __name__ == "__main__":
    main()

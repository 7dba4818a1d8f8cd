"""Tree mode on a generated ~1,000-file repository pair, against `git diff --no-index --numstat`.

Run: python benchmarks/bench_tree.py [runs]
Prints medians for: the git baseline; scriptdiff with a cold cache (fresh cache folder
each run); warm, the same run replayed (commands/runmemo.py); the same with an `-o` report
written (replayed, the file written again); warm with the per-file cache
only (SCRIPTDIFF_NO_RUN_MEMO=1: every file read again); warm with one module edited before
each run (one pair parsed, the rest from the cache); and --no-cache. Then two floors: a fresh
interpreter importing libcst, and one importing it and parsing the changed Python files. Ratios
are against the git baseline measured in the same run.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import PY, bench_env, med, row, time_cmd  # noqa: E402
from gen_tree import generate, missed  # noqa: E402


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        info = generate(root)
        print(f"generated: { {k: v for k, v in info.items() if k != 'planted'} }")
        g, n = str(root / "gpu"), str(root / "npu")
        # a benchmark measures nothing unless the differences it planted are all found
        out = subprocess.run([PY, "-m", "scriptdiff", "diff", g, n, "--format", "json", "--no-cache"],
                             capture_output=True, text=True, env=bench_env({}))
        lost = missed(json.loads(out.stdout), info["planted"])
        print(f"planted semantic edits: {len(info['planted'])}, found: {len(info['planted']) - len(lost)}"
              f" (exit {out.returncode})")
        if lost or out.returncode != 1:
            sys.exit(f"the planted differences were not all found: {lost}")
        git = time_cmd(["git", "diff", "--no-index", "--numstat", g, n], runs)
        base = med(git)
        print(row("git diff --no-index --numstat (baseline)", git))
        cache = root / "cache"
        cmd = [PY, "-m", "scriptdiff", "diff", g, n, "--format", "json"]

        cold = []
        for _ in range(runs):
            shutil.rmtree(cache, ignore_errors=True)
            cold += time_cmd(cmd, 1, warmup=0, env=bench_env({"SCRIPTDIFF_CACHE_DIR": str(cache)}))
        print(row("scriptdiff diff DIR DIR (cold cache)", cold, base))
        # the cold runs just created the cache folder beside gpu/ and npu/: a run that ends
        # under 2 s after a change to what it looked at is not stored for a replay (racy time
        # stamps, commands/runmemo.py); wait that out, as a user's next run would (the folder of the
        # -o report below is made before it: making it changes the folder that holds gpu/ and npu/)
        report = root / "report" / "r.sarif"  # what CI writes: its report with -o, the JSON on standard output
        report.parent.mkdir()
        time.sleep(2.1)
        env = bench_env({"SCRIPTDIFF_CACHE_DIR": str(cache)})
        warm = time_cmd(cmd, runs, warmup=1, env=env)
        print(row("scriptdiff diff DIR DIR (warm: the run replayed)", warm, base))
        written = time_cmd(cmd + ["-o", str(report)], runs, warmup=2, env=env)
        if json.loads(report.read_text(encoding="utf-8")).get("version") != "2.1.0":
            sys.exit("the -o report was not written")
        print(row("scriptdiff diff DIR DIR -o r.sarif (warm: replayed, the file written again)", written, base))
        files = time_cmd(cmd, runs, warmup=0, env=dict(env, SCRIPTDIFF_NO_RUN_MEMO="1"))
        print(row("scriptdiff diff DIR DIR (warm: per-file cache)", files, base))
        edited = _one_edit(cmd, env, Path(n), runs)
        print(row("scriptdiff diff DIR DIR (warm: one file edited)", edited, base))
        nocache = time_cmd(cmd + ["--no-cache"], runs, env=bench_env({"SCRIPTDIFF_CACHE_DIR": str(cache)}))
        print(row("scriptdiff diff DIR DIR --no-cache", nocache, base))
        _floors(root, runs, base)


FLOOR = """import sys, libcst
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        libcst.parse_module(f.read())
"""


def _floors(root: Path, runs: int, base: float) -> None:
    """What no run that reads its changed Python pairs with libcst can go under: a fresh
    interpreter that imports libcst (the one-edit run's floor), and one that also parses every
    changed Python file of the tree (the cold run's, in one process; two cores halve the parse
    at best, never the import)."""
    changed = []
    for g in sorted((root / "gpu").rglob("*.py")):
        n = root / "npu" / g.relative_to(root / "gpu")
        if n.is_file() and n.read_bytes() != g.read_bytes():
            changed += [str(g), str(n)]
    imp = time_cmd([PY, "-c", "import libcst"], runs)
    print(row("floor: a fresh interpreter importing libcst", imp, base))
    parse = time_cmd([PY, "-c", FLOOR, *changed], runs)
    print(row(f"floor: ... and parsing the {len(changed)} changed Python files", parse, base))


def _one_edit(cmd: list[str], env: dict, npu: Path, runs: int) -> list[float]:
    """Each run after a new edit of one NPU module (a line of code with a value no run has seen:
    that file's reading and its pair are cache misses, every other file a hit), as a user's next
    run after saving a file is; the file is put back afterwards."""
    target = sorted(npu.rglob("*.py"))[len(list(npu.rglob("*.py"))) // 2]
    original = target.read_bytes()
    out = []
    try:
        for i in range(runs + 1):
            target.write_bytes(original + f"\nEDITED_{i} = {i + 1}\n".encode())
            t = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            if i:  # the first edit's run is a warm-up
                out.append(time.perf_counter() - t)
    finally:
        target.write_bytes(original)
    return out


if __name__ == "__main__":
    main()

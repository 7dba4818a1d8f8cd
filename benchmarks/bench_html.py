"""The html review page: its size, the cost of writing it, and its time to first render in
headless Chromium, for the bundled example and a generated ~1,000-file folder (gen_tree.py).

Run: python benchmarks/bench_html.py [runs]
For each input: the page's size; `scriptdiff diff ... --format text` against the same run
with `--output html=FILE` (median wall clock and peak RSS, /usr/bin/time -v, warm cache);
and in the browser (chromium --headless --dump-dom, a fresh profile per run), the page's own
figures: when its script finished (lazy set-up done: the file panels near the viewport are
laid out as they come into view) and the first contentful paint (performance paint timing),
both from navigation start. --virtual-time-budget only makes Chromium wait for the
page's idle callbacks before it dumps the DOM (without it the paint figure is sometimes not
written yet); the figures agree with runs without it.
"""
from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import PY, bench_env  # noqa: E402
from gen_tree import generate  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], runs: int) -> tuple[float, int]:
    """Median wall clock (s) and median peak RSS (kB) of `cmd` under /usr/bin/time -v."""
    walls, rss = [], []
    subprocess.run(cmd, capture_output=True, env=bench_env())  # warm the cache
    for _ in range(runs):
        p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=bench_env())
        wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", p.stderr)
        h, m, s = wall.groups()
        walls.append(int(h or 0) * 3600 + int(m) * 60 + float(s))
        rss.append(int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)))
    return statistics.median(walls), int(statistics.median(rss))


def browser(exe: str, page: Path, runs: int) -> tuple[float, float]:
    script, paint = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as prof:
            dom = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={prof}",
                                  "--window-size=1300,1000", "--virtual-time-budget=2000", "--dump-dom",
                                  page.as_uri()],
                                 capture_output=True, text=True, timeout=120).stdout
        body = re.search(r"<body[^>]*>", dom).group(0)
        script.append(float(re.search(r'data-script-done-ms="([\d.]+)"', body).group(1)))
        paint.append(float(re.search(r'data-first-paint-ms="([\d.]+)"', body).group(1)))
    return statistics.median(script), statistics.median(paint)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    exe = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    with tempfile.TemporaryDirectory() as d:
        tree = Path(d) / "tree"
        info = generate(tree)
        cases = [("fixtures/example", ROOT / "fixtures/example/gpu", ROOT / "fixtures/example/npu"),
                 (f"generated folder ({info['python']} .py + {info['configs']} configs per side)",
                  tree / "gpu", tree / "npu")]
        for label, g, n in cases:
            page = Path(d) / "review.html"
            base = [PY, "-m", "scriptdiff", "diff", str(g), str(n), "--format", "text"]
            t_text, rss_text = timed(base, runs)
            t_html, rss_html = timed(base + ["--output", f"html={page}"], runs)
            print(f"{label}")
            print(f"  page size            {page.stat().st_size / 1024:8.1f} KiB")
            print(f"  diff, text only      {t_text * 1000:8.0f} ms  peak RSS {rss_text / 1024:6.1f} MiB")
            print(f"  diff + html page     {t_html * 1000:8.0f} ms  peak RSS {rss_html / 1024:6.1f} MiB")
            if exe is None:
                print("  browser: no headless Chromium found (scripts/install-browser.sh); not measured")
                continue
            script, paint = browser(exe, page, runs)
            print(f"  script done          {script:8.0f} ms  (median of {runs}, from navigation start)")
            print(f"  first contentful paint {paint:6.0f} ms")


if __name__ == "__main__":
    main()

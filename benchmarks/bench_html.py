"""The html review page: its size, the cost of writing it, and its time to first render in
headless Chromium, for the bundled example and a generated ~1,000-file folder (gen_tree.py).

Run: python benchmarks/bench_html.py [runs]
For each input: the page's size; `scriptdiff diff ... --format text` against the same run
with `--output html=FILE` (median wall clock and peak RSS, /usr/bin/time -v, warm cache);
the writer alone, in process; and in the browser (chromium --headless --dump-dom, a fresh
profile per run) the page's own figures, both from navigation start: when its script
finished (the file panels are laid out later, as they come into view) and the first
contentful paint (performance paint timing). --virtual-time-budget only makes Chromium wait
for the page's idle callbacks before it dumps the DOM (without it the paint figure is
sometimes not written yet); a load that still dumps too early is repeated, and counted.
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
from _timing import PY, bench_env, time_fn  # noqa: E402
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


def browser(exe: str, page: Path, runs: int) -> tuple[float, float, int]:
    """Medians of the page's script-done and first-paint figures; and how many loads were
    repeated because Chromium dumped the DOM before the paint figure was written."""
    script, paint, again = [], [], 0
    while len(paint) < runs:
        with tempfile.TemporaryDirectory() as prof:
            dom = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={prof}",
                                  "--window-size=1300,1000", "--virtual-time-budget=2000", "--dump-dom",
                                  page.as_uri()], capture_output=True, text=True, timeout=120).stdout
        body = re.search(r"<body[^>]*>", dom).group(0)
        fp = re.search(r'data-first-paint-ms="([\d.]+)"', body)
        if fp is None:
            again += 1
            if again > 3 * runs:
                sys.exit("the page never wrote its first-paint figure")
            continue
        script.append(float(re.search(r'data-script-done-ms="([\d.]+)"', body).group(1)))
        paint.append(float(fp.group(1)))
    return statistics.median(script), statistics.median(paint), again


def render_time(g: Path, n: Path, runs: int) -> float:
    """Median time of api.render(report, "html") alone, the report computed once."""
    from scriptdiff import api
    from scriptdiff.model import Options

    report = api.diff(str(g), str(n), Options(keep_texts=True))
    return statistics.median(time_fn(lambda: api.render(report, "html"), runs))


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
            print(f"  writing the page     {render_time(g, n, runs) * 1000:8.0f} ms  (in process, api.render)")
            if exe is None:
                print("  browser: no headless Chromium found (scripts/install-browser.sh); not measured")
                continue
            script, paint, again = browser(exe, page, runs)
            print(f"  script done          {script:8.0f} ms  (median of {runs}, from navigation start"
                  f"{f'; {again} load(s) repeated' if again else ''})")
            print(f"  first contentful paint {paint:6.0f} ms")


if __name__ == "__main__":
    main()

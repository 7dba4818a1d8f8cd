"""Start-up cost: `scriptdiff --help`, `--version` and a small `diff`, against `python -c pass`.

Run: python benchmarks/bench_startup.py [runs]
Prints medians of whole-process wall times and the ratio to the `python -c pass` baseline
measured in the same run (the machine is shared and noisy: compare ratios, not absolutes).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import PY, med, row, time_cmd  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    env_cmd = [PY, "-m", "scriptdiff"]
    with tempfile.TemporaryDirectory() as d:
        g, n = Path(d, "g.py"), Path(d, "n.py")
        g.write_text("import torch\nmodel = Net().cuda()\nopt = torch.optim.AdamW(model.parameters(), lr=1e-4)\n")
        n.write_text("import torch\nimport torch_npu\nmodel = Net().npu()\nopt = torch.optim.AdamW(model.parameters(), lr=2e-4)\n")
        base = time_cmd([PY, "-c", "pass"], runs)
        b = med(base)
        print(row("python -c pass (baseline)", base))
        print(row("python -c 'import scriptdiff'", time_cmd([PY, "-c", "import scriptdiff"], runs), b))
        print(row("scriptdiff --version", time_cmd(env_cmd + ["--version"], runs), b))
        print(row("scriptdiff --help", time_cmd(env_cmd + ["--help"], runs), b))
        print(row("scriptdiff diff g.py n.py (2 small files)", time_cmd(env_cmd + ["diff", str(g), str(n), "--no-cache"], runs), b))


if __name__ == "__main__":
    main()

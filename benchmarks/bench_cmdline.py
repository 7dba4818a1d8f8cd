"""Benchmark: reading a program's command-line parser (lang/python/cmdline.py) against parsing it.

Generates a training program of --options argparse options spread over helper functions and
argument groups (the shape of diffusers' and Open-Sora-Plan's training scripts), then times, in
this process, the median of --runs runs of:

  parse         libcst parse and node positions of the program (lang/python/parse.py), the
                work every Python input costs anyway: the baseline;
  command_line  the parser read from the parsed program (every option, the parse call).

and prints the ratio. Then it runs `scriptdiff diff` on a launch-script pair that starts the
program, the NPU script passing one option the program does not define, and checks that this
planted option, and only it, is reported (SD161).

Run: PYTHONPATH=. python benchmarks/bench_cmdline.py [--options 400] [--runs 7]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import time_fn  # noqa: E402


def make_program(options: int) -> str:
    lines = ["import argparse", "import torch", "", ""]
    per = 50
    for g in range(0, options, per):
        lines.append(f"def add_group_{g // per}(parser):")
        lines.append(f"    group = parser.add_argument_group('group {g // per}')")
        for i in range(g, min(g + per, options)):
            if i % 4 == 0:
                lines.append(f"    group.add_argument('--flag-{i}', action='store_true', help='switch {i}')")
            else:
                lines.append(f"    group.add_argument('--option-{i}', type=float, default={i}.5,\n"
                             f"                       help='a setting of the run, number {i}')")
        lines += ["", ""]
    lines.append("def parse_args():")
    lines.append("    parser = argparse.ArgumentParser(description='generated')")
    for g in range(0, options, per):
        lines.append(f"    add_group_{g // per}(parser)")
    lines += ["    return parser.parse_args()", "", "",
              "def main():", "    args = parse_args()",
              "    opt = torch.optim.AdamW([], lr=args.option_1, weight_decay=0.1)", "", "",
              "if __name__ == '__main__':", "    main()", ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--options", type=int, default=400)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()

    from scriptdiff import api
    from scriptdiff.lang.python.cmdline import command_line
    from scriptdiff.lang.python.parse import parse
    from scriptdiff.model import Options

    text = make_program(a.options)
    p = parse("train.py", text)
    cmd = command_line(p)
    assert cmd is not None and cmd["complete"] and len(cmd["options"]) == a.options + 1, cmd and cmd["why"]
    t_parse = statistics.median(time_fn(lambda: parse("train.py", text), runs=a.runs))
    t_cmd = statistics.median(time_fn(lambda: command_line(p), runs=a.runs))
    print(f"program: {len(text.splitlines()):,} lines, {a.options} options")
    print(f"parse         {t_parse * 1000:9.1f} ms  (baseline)")
    print(f"command_line  {t_cmd * 1000:9.1f} ms  ({100 * t_cmd / t_parse:.1f}% of the parse)")

    with tempfile.TemporaryDirectory() as tmp:
        for side, extra in (("gpu", ""), ("npu", " --option-x 3")):
            d = Path(tmp) / side
            d.mkdir()
            (d / "train.py").write_text(text)
            (d / "run.sh").write_text(f"torchrun --nproc_per_node 8 train.py --option-1 2e-4 --flag-4{extra}\n")
        report = api.diff(str(Path(tmp) / "gpu/run.sh"), str(Path(tmp) / "npu/run.sh"), Options(use_cache=False))
        found = [(f.rule, f.key) for f in report.findings]
    ok = found == [("SD161", "flag:--option-x")]
    print(f"planted undefined option found: {'yes' if ok else 'NO'} ({found})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

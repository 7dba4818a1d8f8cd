"""Re-create the corpus pairs from pinned commits (tests/corpus/labels.yaml).

The pairs are not committed: they are third-party files, read from git at the commit the
manifest pins. Sources are looked up, per repository `owner/name`, in each root of
$SCRIPTDIFF_CORPUS_SOURCES (os.pathsep-separated; default /work/.mirror) as
`<root>/<owner>+<name>/repo` (a bare mirror), `<root>/<owner>+<name>` or
`<root>/<name>` (a clone or a bare git directory).

    python tests/corpus/extract.py [--out DIR]     (default: tests/corpus/pairs)

writes DIR/<id>/{gpu,npu}/<file name> and prints what could not be extracted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
LABELS = HERE / "labels.yaml"
DEFAULT_OUT = HERE / "pairs"
DEFAULT_SOURCES = "/work/.mirror"


def load_labels(path: Path = LABELS) -> dict:
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def source_roots() -> list[Path]:
    raw = os.environ.get("SCRIPTDIFF_CORPUS_SOURCES", DEFAULT_SOURCES)
    return [Path(p) for p in raw.split(os.pathsep) if p]


def find_git_dir(repo: str, roots: list[Path] | None = None) -> Path | None:
    """The git directory holding `owner/name`, or None."""
    owner, name = repo.split("/", 1)
    for root in roots if roots is not None else source_roots():
        for cand in (root / f"{owner}+{name}" / "repo", root / f"{owner}+{name}", root / name):
            if (cand / ".git").is_dir():
                return cand / ".git"
            if (cand / "HEAD").is_file() and (cand / "objects").is_dir():
                return cand
    return None


def sources_missing(labels: dict) -> str | None:
    """Why the corpus cannot be re-created here (no local copy of any of its repositories), or None."""
    repos = {p["sources"][s]["repo"] for p in labels["pairs"] for s in ("gpu", "npu")}
    if any(find_git_dir(r) for r in repos):
        return None
    return ("corpus sources not available: no local copy of its repositories in "
            f"{os.environ.get('SCRIPTDIFF_CORPUS_SOURCES', DEFAULT_SOURCES)} "
            "(set SCRIPTDIFF_CORPUS_SOURCES; see tests/corpus/README.md)")


def measured(tmp_path_factory, name: str, measure, table, variable: str) -> dict:
    """A corpus test's figures: the pairs re-created in a temporary folder and measured, the
    table printed (pytest -s), the figures saved as JSON where $variable says; the test is
    skipped, saying why, without the sources."""
    import pytest

    missing = sources_missing(load_labels())
    if missing:
        pytest.skip(missing)
    result = measure(tmp_path_factory.mktemp(name))
    print("\n" + table(result))
    dest = os.environ.get(variable)
    if dest:
        Path(dest).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return result


def read_blob(git_dir: Path, commit: str, path: str) -> bytes | None:
    r = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
                       capture_output=True, check=False)
    return r.stdout if r.returncode == 0 else None


def side_file(out: Path, pair_id: str, side: str, path: str) -> Path:
    return out / pair_id / side / Path(path).name


def extract(out: Path = DEFAULT_OUT, labels: dict | None = None,
            roots: list[Path] | None = None) -> dict[str, str]:
    """Extract every pair; returns {pair id: problem} for the pairs that could not be made."""
    labels = labels or load_labels()
    problems: dict[str, str] = {}
    dirs: dict[str, Path | None] = {}
    for pair in labels["pairs"]:
        for side in ("gpu", "npu"):
            src = pair["sources"][side]
            target = side_file(out, pair["id"], side, src["path"])
            if target.is_file():
                continue
            if src["repo"] not in dirs:
                dirs[src["repo"]] = find_git_dir(src["repo"], roots)
            git_dir = dirs[src["repo"]]
            if git_dir is None:
                problems[pair["id"]] = f"no local copy of {src['repo']} (set SCRIPTDIFF_CORPUS_SOURCES)"
                break
            # the file, then the files it references that the pair reads with it (`with`: a
            # launch script's accelerate config), each beside it under its base name
            for path in [src["path"]] + list(src.get("with", ())):
                data = read_blob(git_dir, src["commit"], path)
                if data is None:
                    problems[pair["id"]] = f"{src['repo']}@{src['commit'][:12]}:{path} not found"
                    break
                dest = side_file(out, pair["id"], side, path)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)
            if pair["id"] in problems:
                break
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    problems = extract(args.out)
    total = len(load_labels()["pairs"])
    for pid, why in sorted(problems.items()):
        print(f"skipped {pid}: {why}", file=sys.stderr)
    print(f"{total - len(problems)} of {total} pairs in {args.out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

"""The development corpus of real GPU/NPU ports (issue 13): recall, noise and accounting.

Pairs come from public repositories pinned in tests/corpus/labels.yaml and are re-created
by tests/corpus/extract.py (from $SCRIPTDIFF_CORPUS_SOURCES, default /work/.mirror); when
no local copy is there the tests are skipped with a message saying so. Labels were written
by reading both files, never from scriptdiff's output (tests/corpus/README.md).

Matching rule. Each pair is compared with `pipeline.diff_files([gpu], [npu],
Options(use_cache=False))`; an entry with `mode: one-file` (one file that runs on both
devices: its GPU and NPU sources are the same file) with `api.diff(file)`, its GPU run
against its NPU run. Only findings of severity warning or error count.
  * A labelled difference is found *under its key* when a finding's key equals the label's
    key: the canonical vocabulary key, or, for a label marked `canonical: false`, its raw
    dotted key (normalised: lower case, `-` -> `_`, leading `-`, `+`, `~` dropped).
    `env:` keys compare as written.
  * It is found *overall* when it is found under its key, or a finding's key equals the
    label's raw spelling (`raw:`, normalised the same way), or a finding sits on the
    labelled line of that side's file (gpu_line or npu_line).
  * A code label (`key: code`, Python structural changes) is found, both under its key
    and overall, when a finding of check `script` has a GPU line within gpu_line..gpu_end
    or an NPU line within npu_line..npu_end (the lines of the other places a grouped finding
    names, `extra["also"]`, count as its lines; a finding for a whole region, SD109 or SD110,
    covers the lines of its `extra["region"]` span on each side: it points the reader there).
Noise: warning/error findings on pairs labelled `faithful: true`.
Accounting: every input of a pair appears in `report.inputs`; one that is not understood
must say what (`unread`); pairs with such an input are listed as "flagged".

Figures are printed as a table (pytest -s) and, when $SCRIPTDIFF_CORPUS_JSON names a
file, written there as JSON. The assertions are floors measured when the corpus was built
(recall may only go up, noise only down) plus invariants; TARGET_RECALL is issue 13's goal
and its test is an expected failure until the readers reach it.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "corpus"))
import extract as corpus_extract  # noqa: E402

# Measured on the corpus when it was built (see tests/corpus/README.md); raise the floors,
# lower the ceiling, as the readers improve. Never lower a floor to make a change pass.
RECALL_OVERALL_FLOOR = 0.98  # measured 0.984 (184 of 187, issue 27); 0.981 (152 of 155) before its 19 pairs
RECALL_CANONICAL_FLOOR = 0.96  # measured 0.963 (180 of 187, issue 27); 0.829 on the same labels before it
NOISE_CEILING = 0  # measured 0 (bucket sizes are cosmetic, SD221 info)
TARGET_RECALL = 0.95  # issue 13: labelled differences found under the canonical key
# issue 27: on the repositories it added (labels.yaml `added: 27`), recall under the canonical
# key >= 0.9 and no loud finding on a faithful port; measured 0.938 (30 of 32), noise 0
ISSUE_27_RECALL = 0.9
# issue 39: 1,169 pairs from 340 repositories gathered and labelled before the tool ran on them
# (tests/corpus/README.md: 157, then twenty-four more sets of 9 to 77); their figures are their own group, measured when
# the last set joined. Floors and a ceiling to hold, not goals met: issue 39 asks noise <= 0.1
# per faithful port. The sets FTN/FTO/FTP joined at 0.828 must recall and 1.19 loud findings per faithful port,
# FTQ/FTR/FTS at 0.933 and 1.39, FTT/FTU/FTV/FTW at 0.863 and 1.28, FTX/FTY/FTZ/FUA at 0.779 and 1.60,
# FUB/FUC/FUD/FUE at 0.791 and 2.45, FUF/FUG/FUH/FUI at 0.750 and 1.87 (their "after" figures); the whole
# corpus of 1,151 entries before those two joins read 0.902 must recall / 0.762 canonical / 527 loud findings on
# its faithful ports with that build (548 with the build before).
FIRST_SIGHT = 39
FIRST_SIGHT_RECALL_OVERALL = 0.87  # measured 0.877 (1,425 of 1,624) when the last sets (FUB-FUI) joined
FIRST_SIGHT_RECALL_CANONICAL = 0.72  # measured 0.721 (1,171 of 1,624)
# measured 626 loud findings on 653 faithful ports when FUB-FUI joined; 628 once paddle's device name was read
# as a device test (1345944): a faithful port's NPU branch (arange(start=0, end=n) in fp32, then cast) is now
# compared argument by argument with the GPU's arange(n), where before the undecided branch was one finding
FIRST_SIGHT_NOISE_CEILING = 628

COUNTED = ("warning", "error")
KNOWN_STATUS = ("understood", "identical", "not understood", "failed")


def norm(key: str) -> str:
    key = str(key)
    if key.startswith("env:"):
        return key
    return key.lstrip("-+~").replace("-", "_").lower()


def _in(line, lo, hi) -> bool:
    return line is not None and lo is not None and lo <= line <= (hi if hi is not None else lo)


def label_found(label: dict, findings: list) -> tuple[bool, bool]:
    """(found under its key, found overall) by the matching rule in the module doc."""
    if label["key"] == "code":
        def places(f):  # (GPU line, NPU line) of the finding and of the other places it groups
            return [(f.gpu.line if f.gpu else None, f.npu.line if f.npu else None)] + \
                [tuple(x) for x in (f.extra or {}).get("also", [])]
        def covers(f):  # a region finding's span on a side meets the label's lines there
            span = (f.extra or {}).get("region") or {}
            return any(span.get(side) and label.get(f"{side}_line") is not None
                       and span[side][0] <= (label.get(f"{side}_end") or label[f"{side}_line"])
                       and label[f"{side}_line"] <= span[side][1] for side in ("gpu", "npu"))
        hit = any(f.check == "script" and (covers(f) or any(
            _in(gl, label.get("gpu_line"), label.get("gpu_end")) or _in(nl, label.get("npu_line"), label.get("npu_end"))
            for gl, nl in places(f))) for f in findings)
        return hit, hit
    key = norm(label["key"])
    by_key = any(norm(f.key) == key for f in findings)
    raw = norm(label["raw"]) if label.get("raw") else None
    overall = by_key or any(
        (raw is not None and norm(f.key) == raw)
        or (f.gpu is not None and label.get("gpu_line") and f.gpu.line == label["gpu_line"])
        or (f.npu is not None and label.get("npu_line") and f.npu.line == label["npu_line"])
        for f in findings)
    return by_key, overall


def _measure(out: Path) -> dict:
    from scriptdiff import api  # lazy: only when the corpus is there
    from scriptdiff.run import pipeline  # lazy: only when the corpus is there
    from scriptdiff.model import Options

    labels = corpus_extract.load_labels()
    problems = corpus_extract.extract(out, labels)
    pairs = []
    for pair in labels["pairs"]:
        row = {"id": pair["id"], "framework": pair["framework"], "faithful": bool(pair["faithful"]),
               "labels": len(pair["differences"]), "skipped": problems.get(pair["id"])}
        pairs.append(row)
        if row["skipped"]:
            continue
        files = {s: corpus_extract.side_file(out, pair["id"], s, pair["sources"][s]["path"])
                 for s in ("gpu", "npu")}
        row["files"] = {s: str(p) for s, p in files.items()}
        try:
            if pair.get("mode") == "one-file":  # its GPU run against its NPU run (scriptdiff/run/onefile.py)
                report = api.diff(str(files["gpu"]), None, Options(use_cache=False))
            else:
                report = pipeline.diff_files([str(files["gpu"])], [str(files["npu"])], Options(use_cache=False))
        except Exception:  # a crash is a finding of this test, reported with the pair's id
            row["crash"] = traceback.format_exc(limit=3)
            continue
        counted = [f for f in report.findings if f.severity in COUNTED]
        found = [label_found(lab, counted) for lab in pair["differences"]]
        row["found_key"] = sum(k for k, _ in found)
        row["found_overall"] = sum(o for _, o in found)
        row["missed"] = [f"{lab['key']}" + (f" ({lab['raw']})" if lab.get("raw") else "")
                         for lab, (k, _) in zip(pair["differences"], found) if not k]
        row["warnings"] = len(counted)
        row["noise"] = len(counted) if pair["faithful"] else 0
        row["noise_keys"] = sorted({f.key for f in counted}) if pair["faithful"] else []
        row["inputs"] = [i.to_json() for i in report.inputs]
        row["errors"] = [f"{e.path}: {e.message}" for e in report.errors]
        row["flagged"] = [f"{i.side}:{Path(i.path).name}: {i.status}" + (f" ({'; '.join(i.unread)})" if i.unread else "")
                          for i in report.inputs if i.status in ("not understood", "failed")]
        row["devices"] = device_tests(report)
    every = [r for r in pairs if not r["skipped"] and "crash" not in r]
    # the floors below were measured on the development corpus; the repositories measured at
    # first sight (FIRST_SIGHT) are a group of their own, with their own figures
    held = _first_sight_ids(labels)
    mine = [r for r in pairs if r["id"] not in held]
    read = [r for r in every if r["id"] not in held]
    n_labels = sum(r["labels"] for r in read)
    totals = {
        "pairs": len(mine), "read": len(read), "skipped": sum(bool(r["skipped"]) for r in mine),
        "crashed": sum("crash" in r for r in pairs),
        "faithful": sum(r["faithful"] for r in mine), "labels": n_labels,
        "found_key": sum(r["found_key"] for r in read), "found_overall": sum(r["found_overall"] for r in read),
        "noise": sum(r["noise"] for r in read),
        "pairs_flagged": sum(bool(r["flagged"]) for r in read),
    }
    dev = {"decided": 0, "undecided": 0, "idioms": {}}
    for r in read:
        for d in r.get("devices", {}).values():
            dev["decided"] += d["decided"]
            dev["undecided"] += d["undecided"]
            for k, v in d["idioms"].items():
                dev["idioms"][k] = dev["idioms"].get(k, 0) + v
    totals["devices"] = dev
    totals["recall_canonical"] = totals["found_key"] / n_labels if n_labels else 0.0
    totals["recall_overall"] = totals["found_overall"] / n_labels if n_labels else 0.0
    return {"totals": totals, "pairs": pairs, "groups": _groups(labels, every)}


def _first_sight_ids(labels: dict) -> set:
    """The pairs that read a repository added at first sight (labels.yaml `added: FIRST_SIGHT`)."""
    added = {r for r, v in labels["repos"].items() if v.get("added") == FIRST_SIGHT}
    return {p["id"] for p in labels["pairs"] if any(p["sources"][s]["repo"] in added for s in ("gpu", "npu"))}


def _groups(labels: dict, read: list) -> dict:
    """The figures of the pairs that read a repository added by a given issue (`added:` in
    labels.yaml `repos`), so a later issue's new repositories are measured on their own."""
    added = {r: v.get("added") for r, v in labels["repos"].items() if v.get("added")}
    by_id = {p["id"]: p for p in labels["pairs"]}
    out: dict = {}
    for issue in sorted(set(added.values())):
        rows = [r for r in read if any(added.get(by_id[r["id"]]["sources"][s]["repo"]) == issue
                                       for s in ("gpu", "npu"))]
        n = sum(r["labels"] for r in rows)
        out[issue] = {
            "pairs": len(rows), "labels": n, "faithful": sum(r["faithful"] for r in rows),
            "repos": sorted(r for r, v in added.items() if v == issue),
            "found_key": sum(r["found_key"] for r in rows), "found_overall": sum(r["found_overall"] for r in rows),
            "recall_canonical": sum(r["found_key"] for r in rows) / n if n else 0.0,
            "recall_overall": sum(r["found_overall"] for r in rows) / n if n else 0.0,
            "noise": sum(r["noise"] for r in rows),
        }
    return out


def device_tests(report) -> dict:
    """What the inputs' accounts say about device tests: {side: {"decided": n, "undecided": n,
    "idioms": {idiom: n}}} (docs/devices.md)."""
    import re

    out: dict = {}
    for i in report.inputs:
        for note in i.notes:
            if not note.startswith("device tests read for the"):
                continue
            d = out.setdefault(i.side, {"decided": 0, "undecided": 0, "idioms": {}})
            m = re.match(r"device tests read for the \w+: (\d+) decided(?: \(by (.+?)\))?(?:, (\d+) not decided.*)?$", note)
            d["decided"] += int(m.group(1))
            d["undecided"] += int(m.group(3) or 0)
            for idiom, n in re.findall(r"(.+?) (\d+)(?:, |$)", m.group(2) or ""):  # an idiom may hold ", "
                d["idioms"][idiom] = d["idioms"].get(idiom, 0) + int(n)
    return out


def _table(result: dict) -> str:
    lines = [f"{'pair':44} {'fw':28} {'F':1} {'lab':>3} {'key':>3} {'all':>3} {'w/e':>3} flagged / missed"]
    for r in result["pairs"]:
        if r["skipped"] or "crash" in r:
            lines.append(f"{r['id']:44} {r['framework'][:28]:28} {'SKIPPED: ' + r['skipped'] if r['skipped'] else 'CRASH'}")
            continue
        extra = "; ".join(r["flagged"]) or ""
        if r["missed"]:
            extra += (" | " if extra else "") + "missed: " + ", ".join(r["missed"])
        if r["noise_keys"]:
            extra += (" | " if extra else "") + "noise: " + ", ".join(r["noise_keys"])
        lines.append(f"{r['id']:44} {r['framework'][:28]:28} {'F' if r['faithful'] else ' '} "
                     f"{r['labels']:3} {r['found_key']:3} {r['found_overall']:3} {r['warnings']:3} {extra}")
    t = result["totals"]
    dev = t["devices"]
    lines.append(f"device tests (both sides): {dev['decided']} decided, {dev['undecided']} left as written; by idiom: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(dev["idioms"].items(), key=lambda kv: (-kv[1], kv[0]))))
    lines.append(f"pairs {t['pairs']} (read {t['read']}, skipped {t['skipped']}, faithful {t['faithful']}); "
                 f"labels {t['labels']}: recall overall {t['recall_overall']:.3f}, under the canonical key "
                 f"{t['recall_canonical']:.3f}; noise on faithful ports {t['noise']}; "
                 f"pairs whose accounting flags an input {t['pairs_flagged']}")
    for issue, g in result.get("groups", {}).items():
        lines.append(f"repositories added by issue {issue} ({', '.join(g['repos'])}): pairs {g['pairs']}, "
                     f"labels {g['labels']}: recall overall {g['recall_overall']:.3f}, under the canonical key "
                     f"{g['recall_canonical']:.3f}; noise on faithful ports {g['noise']}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict:
    return corpus_extract.measured(tmp_path_factory, "corpus", _measure, _table, "SCRIPTDIFF_CORPUS_JSON")


def test_labels_are_well_formed():
    labels = corpus_extract.load_labels()
    ids = [p["id"] for p in labels["pairs"]]
    assert len(ids) == len(set(ids)) and len(ids) >= 40
    for p in labels["pairs"]:
        for s in ("gpu", "npu"):
            src = p["sources"][s]
            assert len(src["commit"]) == 40 and src["repo"] in labels["repos"], (p["id"], s)
        assert p["faithful"] == (not p["differences"]), p["id"]
        assert p.get("mode", "pair") in ("pair", "one-file"), p["id"]
        if p.get("mode") == "one-file":  # one file, its two runs: the same source on both sides
            assert p["sources"]["gpu"] == p["sources"]["npu"], p["id"]
        for lab in p["differences"]:
            assert lab.get("gpu_line") or lab.get("npu_line"), (p["id"], lab)
            if lab["key"] != "code":
                assert "gpu" in lab and "npu" in lab and lab["gpu"] != lab["npu"], (p["id"], lab)


def test_every_pair_is_read_without_crash(corpus):
    skipped = {r["id"]: r["skipped"] for r in corpus["pairs"] if r["skipped"]}
    if skipped:
        pytest.skip(f"{len(skipped)} pair(s) have no local source: {sorted(skipped.items())[:3]}")
    assert [r["id"] for r in corpus["pairs"] if "crash" in r] == []
    for r in corpus["pairs"]:
        assert not any("Traceback" in e for e in r["errors"]), r["id"]


def test_labelled_lines_exist(corpus):
    labels = {p["id"]: p for p in corpus_extract.load_labels()["pairs"]}
    for r in corpus["pairs"]:
        if r["skipped"]:
            continue
        for lab in labels[r["id"]]["differences"]:
            for s in ("gpu", "npu"):
                end = lab.get(f"{s}_end") or lab.get(f"{s}_line")
                if end:
                    n = len(Path(r["files"][s]).read_text(encoding="utf-8", errors="replace").splitlines())
                    assert end <= n, (r["id"], s, lab)


def test_every_pair_is_accounted(corpus):
    for r in corpus["pairs"]:
        if r["skipped"] or "crash" in r:
            continue
        names = {(i["side"], Path(i["path"]).name) for i in r["inputs"]}
        for s in ("gpu", "npu"):
            assert (s, Path(r["files"][s]).name) in names, (r["id"], s)
        for i in r["inputs"]:
            assert i["status"] in KNOWN_STATUS, (r["id"], i)
            if i["status"] == "not understood":
                assert i["unread"], (r["id"], i)  # says what was not understood


def test_recall_and_noise_floors(corpus):
    t = corpus["totals"]
    assert t["recall_overall"] >= RECALL_OVERALL_FLOOR
    assert t["recall_canonical"] >= RECALL_CANONICAL_FLOOR
    assert t["noise"] <= NOISE_CEILING


def test_issue_27_target_on_its_new_repositories(corpus):
    g = corpus["groups"]["27"] if "27" in corpus["groups"] else corpus["groups"][27]
    assert len(g["repos"]) >= 5
    assert g["recall_canonical"] >= ISSUE_27_RECALL
    assert g["noise"] == 0
    assert corpus["totals"]["recall_canonical"] >= ISSUE_27_RECALL


def test_issue_13_target(corpus):
    t = corpus["totals"]
    assert t["recall_canonical"] >= TARGET_RECALL
    assert t["noise"] == 0
    assert t["pairs_flagged"] == 0 or all(
        i["unread"] for r in corpus["pairs"] if not r["skipped"] for i in r["inputs"] if i["status"] == "not understood")


def test_issue_39_first_sight_repositories_hold_their_figures(corpus):
    g = corpus["groups"].get(FIRST_SIGHT) or corpus["groups"][str(FIRST_SIGHT)]
    assert (g["pairs"], len(g["repos"])) == (1169, 340)
    assert g["recall_overall"] >= FIRST_SIGHT_RECALL_OVERALL
    assert g["recall_canonical"] >= FIRST_SIGHT_RECALL_CANONICAL
    assert g["noise"] <= FIRST_SIGHT_NOISE_CEILING

"""How the programs two launch scripts start are paired (one scope each, compared invocation
against invocation): the processes of one job folded into one run (a rank loop), the ways of a
choice the script makes at run time kept as one, a job's coordinator set aside (run/pipeline.py
asks these in that order), and what is left paired by the values that tell a side's runs apart.
When the counts still differ, one finding (SD223) says how many each side starts."""
from __future__ import annotations

import difflib

from ..model import ORIGIN_DERIVED, Fact, Finding, Side
from ..inputs.sources import Source
from ..ruleset.devices import plumbing_role
from ..ruleset.registry import derivations
from ..ruleset.rules import code
from ..ruleset.vocabulary import category
from .compare import FactTable
from .finding import finding


def label(srcs: list[Source]) -> str:
    return srcs[0].name if len(srcs) == 1 else (f"{len(srcs)} files" if srcs else "(measured inputs)")


def invocation_count(unit, ng: int, nn: int, by: list[str] | None = None) -> Finding:
    rule = code("invocation-count-differs")
    g = Side(value=ng, path=label(unit.gpu), line=None, source="program invocations")
    n = Side(value=nn, path=label(unit.npu), line=None, source="program invocations")
    how = (f"invocations were paired by {', '.join(by)} (what tells them apart on both sides), the ones "
           f"without a counterpart compared with nothing" if by else
           "invocations were compared in order, the extra ones against nothing")
    return finding(rule, key="invocations", gpu=g, npu=n,
                   message=f"the GPU script starts {ng} program(s) and the NPU script {nn}: {how}")


def own_settings(t: FactTable) -> dict:
    """A run's own settings (those its invocation sets, not the script's shared ones): key -> value,
    with the rank its environment gives it (`export RANK_ID=$i` before it: env:RANK_ID)."""
    own = {k: repr(f.value) for k, fs in t.facts.items() for f in fs if f.meta.get("invocation") is not None}
    for fs in t.facts.values():
        for f in fs:
            for name, value in f.meta.get("rank_env") or ():
                own.setdefault(f"env:{name}", repr(value))
    return own


def one_job(tables: list[FactTable]) -> list[FactTable]:
    """A side whose programs differ only by which process each is (a loop that starts one per
    device in the background with its `--device_id=$i --rank_id=$i`, `export RANK_ID=$i`, and
    cosmetic settings such as its own log folder: the rank-table launch that an `mpirun -n 8` or a
    `torchrun --nproc_per_node 8` does in one line): one run, the first, with its world size the
    number of processes where it states none. Any other side as it is."""
    if len(tables) < 2:
        return tables
    runs = [own_settings(t) for t in tables]
    if ranks_of_one_job(runs):
        return [as_job(tables)]
    # each process started one of a few ways (`if [ -f $CKPT ]; then python x.py --ckpt=$CKPT &
    # else python x.py & fi` in the loop): one job per way, when every way is started once per rank
    ways: dict[tuple, list[int]] = {}
    for i, r in enumerate(runs):
        ways.setdefault(tuple(sorted((k, v) for k, v in r.items()
                                     if not (names_a_rank(k) or category(k).name == "cosmetic"))), []).append(i)
    if len(ways) < 2 or len({len(ix) for ix in ways.values()}) != 1 or len(next(iter(ways.values()))) < 2:
        return tables
    if not all(ranks_of_one_job([runs[i] for i in ix]) for ix in ways.values()):
        return tables
    return [as_job([tables[i] for i in ix]) for ix in ways.values()]


def choice_of(t: FactTable) -> tuple | None:
    """(group, branch, condition, line) of the run a table holds when the script starts it in one
    clause of an `if` it cannot decide (lang/shell/evaluator.undecided_if), else None."""
    for fs in t.facts.values():
        for f in fs:
            c = f.meta.get("choice")
            if c is not None and f.meta.get("invocation") is not None:
                return tuple(c)
    return None


def one_way(mine: list[FactTable], other: list[FactTable]) -> tuple[list[FactTable], list[str]]:
    """A side that starts one of several programs depending on how it is run (`if [ $# == 1 ];
    then python train.py --data=$1; fi; if [ $# == 2 ]; then python train.py --data=$1
    --ckpt=$2; fi`): each such choice kept as the one way (the programs one branch starts) that
    shares the most settings with a run of the other side (then the one with the fewest
    settings of its own, then the first), with a note naming the ways not compared."""
    groups: dict[str, dict[str, list[tuple[int, tuple]]]] = {}
    for i, t in enumerate(mine):
        c = choice_of(t)
        if c is not None:
            groups.setdefault(c[0], {}).setdefault(c[1], []).append((i, c))
    refs = [own_settings(t) for t in other]

    def match(i: int) -> tuple[int, int]:  # settings shared with a run of the other side, fewest of its own
        own = own_settings(mine[i])
        return max(((sum(1 for k, v in own.items() if r.get(k) == v), -sum(1 for k in own if k not in r))
                    for r in refs), default=(0, 0))

    drop, notes = set(), []
    for ways in groups.values():
        if len(ways) < 2:
            continue
        order = list(ways.values())
        best = max(range(len(order)), key=lambda w: (max(match(i) for i, _c in order[w]), -w))
        kept = order[best][0][1]
        others = [members[0][1] for w, members in enumerate(order) if w != best]
        drop |= {i for w, members in enumerate(order) if w != best for i, _c in members}
        notes.append(f"line {kept[3]}: starts one of {len(order)} ways depending on how the script is run; "
                     f"the one under `{kept[2]}` was compared, not "
                     + ", ".join(f"the one at line {c[3]} (under `{c[2]}`)" for c in others))
    return [t for i, t in enumerate(mine) if i not in drop], notes


def ranks_of_one_job(runs: list[dict]) -> bool:
    """Runs whose own settings differ only by which process each is (and cosmetic ones), each
    told apart by a setting that names its rank."""
    for k in set().union(*runs):
        if len({r.get(k) for r in runs}) > 1 and not (names_a_rank(k) or category(k).name == "cosmetic"):
            return False
    # the same program started again and again, told apart by nothing, is not a job's ranks
    return any(names_a_rank(k) and len({r.get(k) for r in runs}) == len(runs) for k in runs[0])


def as_job(tables: list[FactTable]) -> FactTable:
    """One run for a job's processes: the first, with its world size the number of processes
    where it states none."""
    first = tables[0]
    if "world_size" not in first.keys():
        ref = next(f for fs in first.facts.values() for f in fs if f.meta.get("invocation") is not None)
        first.add(Fact(key="world_size", value=len(tables), origin=ORIGIN_DERIVED, rank=0, source="derived",
                       path=ref.path, via=f"{len(tables)} processes started, one per rank"))
        for derive in derivations("derive"):  # what follows from it (the data parallel size)
            derive(first)
    return first


def names_a_rank(key: str) -> bool:
    """A setting whose name says which process it is (`rank_id`, `device_id`, `env:LOCAL_RANK`)."""
    return plumbing_role(key.split(":", 1)[-1]) == "rank"


def paired_runs(gtables: list[FactTable], ntables: list[FactTable]
                 ) -> tuple[list[FactTable], list[FactTable], list[str]]:
    """Two sides that start different numbers of programs (a loop over models and methods, one
    method dropped on the NPU): each invocation is paired with the one of the other side that has
    the same values of the settings that tell a side's invocations apart and that both sides
    share values of (the loop's variables: `model`, `trainer`), in order (difflib); pairs in order
    where none do. Returns the paired tables and the keys they were paired by."""
    gs, ns = [own_settings(t) for t in gtables], [own_settings(t) for t in ntables]
    by, shared = [], {}
    for k in sorted(set().union(*gs, *ns)):
        if not category(k).naming:  # a learning rate may be the very difference: never a run's name
            continue
        gv, nv = {d.get(k) for d in gs}, {d.get(k) for d in ns}
        if (len(gv) > 1 or len(nv) > 1) and (gv & nv) - {None}:
            by.append(k)
            shared[k] = gv & nv
    if not by:
        return gtables, ntables, []

    def sig(d: dict) -> tuple:  # a value only one side has (written another way) tells nothing apart
        return tuple(d.get(k) if d.get(k) in shared[k] else None for k in by)

    sm = difflib.SequenceMatcher(None, [sig(d) for d in gs], [sig(d) for d in ns], autojunk=False)
    pairs = [(a, b) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag in ("equal", "replace")
             for a, b in zip(range(i1, i2), range(j1, j2))]
    return [gtables[a] for a, _b in pairs], [ntables[b] for _a, b in pairs], by

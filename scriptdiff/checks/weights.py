"""Check 6, initial weights: both sides must start from the same tensors.

A checkpoint (safetensors file, sharded safetensors folder, PyTorch .bin/.pt, Megatron
mp_rank_*/model_optim_rng.pt; opened by checkpoints.py, which says how and within which
bounds) becomes one fact per tensor, key `weights:<tensor name>`, value {shape, dtype,
hash}; the hash is blake3 over the tensor's raw little-endian bytes, so the same tensor
hashes the same whichever file format or shard holds it. A fingerprint (`scriptdiff weights
fingerprint`) is these facts as JSON, made where the checkpoint lives.

Two checkpoints compared (`pair_extracts`) give facts only for the tensors that are not
the same on both sides (the identical ones are counted): a checkpoint of 600,000 tiny
tensors does not become 1.2 million facts to find one difference.

When both checkpoints are at hand, tensors whose bytes differ are also compared by value,
one tensor at a time and chunk by chunk (max |a-b|, relative L2 ||a-b||/||a||, cosine,
float64 accumulation), so memory follows a few chunks, never the checkpoint. At most
budget.STAT_TENSORS differing tensors are measured by value in one run (the others are
still compared by hash; the message says their values were not measured).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .. import __version__, budget
from ..run.finding import finding
from . import structure
from ..inputs.jsonload import loads as load_json_data
from ..model import Extract, Fact, Finding, InputError, RANK_SCRIPT, Report
from ..ruleset.rules import RuleSet, code
from ..inputs.sources import SourceError, read_text
from . import parts
from .checkpoints import MARKER, SCHEMA, Checkpoint, open_side, parse_fingerprint
from .checkpoints import (  # noqa: F401  (the readers' names, kept here: callers say weights.open_checkpoint)
    open_checkpoint,
    refusal,
    torch_tensors,
)
from .fanout import Cluster, Fanout, FanoutError
from . import manifest
from .hashing import ALGORITHM
from .safetensors_io import Reader, TensorRef, WeightsError, gc_paused, hash_tensor, tensor_stats

PREFIX = "weights:"


# ---------------------------------------------------------------- fingerprints

def fingerprint(ck: Checkpoint, progress=None, fanout: Fanout | None = None) -> dict:
    """{marker, algorithm, source, format, tensors: name -> {dtype, shape, hash, file, bytes}}.

    `progress`, when given, is called with the byte count of each tensor hashed (with a Ray
    fan-out: with 1 for each part done). `fanout`: the tensors hashed in parts on a Ray cluster."""
    if fanout is not None and fanout.distributed and ck.tensors:
        return assemble(ck, _fan_out(ck, progress, fanout))
    return assemble(ck, hash_refs(ck.tensors, progress))


def hash_refs(refs: list[TensorRef], progress=None) -> dict[str, dict]:
    """Fingerprint entries of tensors (name -> dtype, shape, hash, file, bytes)."""
    tensors = {}
    advance = Batched(progress) if progress else None
    with Reader() as reader, gc_paused():
        for ref in refs:
            tensors[ref.name] = {"dtype": ref.dtype, "shape": list(ref.shape), "hash": hash_tensor(reader, ref),
                                 "file": ref.display, "bytes": ref.nbytes}
            if advance:
                advance(ref.nbytes)
    if advance:
        advance.flush()
    return tensors


def hash_part(refs: list[TensorRef]) -> dict[str, dict]:
    """One part's work where it runs (a Ray task)."""
    return hash_refs(refs)


def assemble(ck: Checkpoint, tensors: dict[str, dict]) -> dict:
    """The fingerprint of hashed tensors: the one construction a serial run, merged parts and
    a Ray run share, so the three are the same bytes."""
    return {MARKER: SCHEMA, "tool": {"name": "scriptdiff", "version": __version__}, "algorithm": ALGORITHM,
            "source": ck.root, "format": ck.kind, "tensors": dict(sorted(tensors.items()))}


def listing(ck: Checkpoint) -> str:
    """The identity of a checkpoint's tensor list (parts.digest): names, files, types, sizes."""
    return parts.digest([ck.root, [[r.name, r.display, r.dtype, list(r.shape), r.nbytes] for r in ck.tensors]])


def _split(ck: Checkpoint, n: int) -> list[list[TensorRef]]:
    return [[ck.tensors[j] for j in r] for r in parts.split([r.nbytes for r in ck.tensors], n)]


def _fan_out(ck: Checkpoint, progress, fanout: Fanout) -> dict[str, dict]:
    if any(r.loader is not None for r in ck.tensors):
        raise WeightsError(f"{ck.root}: --executor ray reads safetensors checkpoints (a PyTorch checkpoint is "
                           f"loaded and hashed on one machine)")
    try:
        with Cluster(fanout) as cluster:
            chunks = _split(ck, cluster.parts(len(ck.tensors)))
            results = cluster.run(hash_part, chunks, progress)
    except FanoutError as e:
        raise WeightsError(f"{ck.root}: {e}") from None
    tensors: dict[str, dict] = {}
    for k, ((result, failed), refs) in enumerate(zip(results, chunks), 1):
        if failed is not None:
            files = sorted({r.display for r in refs})
            shown = ", ".join(files[:5]) + (f" (and {len(files) - 5} more)" if len(files) > 5 else "")
            raise WeightsError(f"{ck.root}: part {k} of {len(chunks)} {failed}; its {len(refs)} tensor(s) in "
                               f"{shown} were not hashed; nothing compared")
        tensors.update(result)
    return tensors


def shard_refs(ck: Checkpoint, shard: tuple[int, int]) -> list[TensorRef]:
    """The tensors of part I of N."""
    return _split(ck, shard[1])[shard[0] - 1]


def fingerprint_shard(ck: Checkpoint, shard: tuple[int, int], progress=None) -> dict:
    """Part I of N of a checkpoint's fingerprint (`--shard I/N`): a part file for `merge`."""
    i, n = shard
    refs = shard_refs(ck, shard)
    whole = assemble(ck, {})
    doc = parts.header("weights", i, n, listing(ck), {k: whole[k] for k in ("tool", "algorithm", "source", "format")})
    doc["tensors"] = dict(sorted(hash_refs(refs, progress).items()))
    return doc


def part_text(doc: dict) -> str:
    return parts.dumps(doc, "tensors")


def merge(texts: list[tuple[str, str]]) -> dict:
    """The fingerprint of a complete set of part files ((name, text) each), byte for byte the
    one a serial run writes; parts.PartsError when they do not belong together."""
    docs = [(name, parts.load(text, name, "weights", MARKER)) for name, text in texts]
    parts.check_set(docs, "tensors")
    tensors: dict[str, dict] = {}
    for name, doc in docs:
        body = doc.get("tensors")
        if not isinstance(body, dict):
            raise parts.PartsError(f"{name}: part has no \"tensors\" object")
        for t, e in body.items():
            if (not isinstance(e, dict) or not isinstance(e.get("dtype"), str) or not isinstance(e.get("hash"), str)
                    or not isinstance(e.get("shape"), list) or not all(isinstance(d, int) for d in e["shape"])):
                raise parts.PartsError(f"{name}: part entry {t!r} needs dtype, shape (list of ints) and hash")
        tensors.update(body)
    first = docs[0][1]
    out = {MARKER: SCHEMA, "tool": first.get("tool"), "algorithm": first.get("algorithm", ALGORITHM),
           "source": first.get("source"), "format": first.get("format"), "tensors": dict(sorted(tensors.items()))}
    return out


class Batched:
    """A progress callback called at most every PROGRESS_BYTES bytes or PROGRESS_TENSORS
    tensors: per-tensor updates of a progress bar cost more than hashing a tiny tensor."""

    PROGRESS_BYTES = 64 * 1024 * 1024
    PROGRESS_TENSORS = 4096

    def __init__(self, progress):
        self.progress = progress
        self.bytes = 0
        self.count = 0

    def __call__(self, nbytes: int) -> None:
        self.bytes += nbytes
        self.count += 1
        if self.bytes >= self.PROGRESS_BYTES or self.count >= self.PROGRESS_TENSORS:
            self.flush()

    def flush(self) -> None:
        if self.bytes:
            self.progress(self.bytes)
        self.bytes = self.count = 0


def dumps(fp: dict) -> str:
    """A weights fingerprint as `weights fingerprint` writes it: a tensor a line (manifest.dumps)."""
    return manifest.dumps(fp, "tensors")


# ---------------------------------------------------------------- renames

class Renamer:
    """NPU tensor names -> GPU names: exact pairs from a file, then regex substitutions."""

    def __init__(self, subs: list[str] | None = None, exact: dict[str, str] | None = None):
        self.exact = dict(exact or {})
        self.subs = []
        for s in subs or []:
            if "=" not in s:
                raise ValueError(f"--map expects PATTERN=REPLACEMENT, got {s!r}")
            pat, rep = s.split("=", 1)
            try:
                self.subs.append((re.compile(pat), rep))
            except re.error as e:
                raise ValueError(f"--map {s!r}: bad pattern: {e}") from None

    def __call__(self, name: str) -> str:
        if name in self.exact:
            return self.exact[name]
        for pat, rep in self.subs:
            name = pat.sub(rep, name)
        return name

    @classmethod
    def from_file(cls, path: str, subs: list[str] | None = None) -> "Renamer":
        try:
            text = read_text(path)
        except SourceError as e:
            raise ValueError(str(e)) from None
        try:
            data = load_json_data(text, path)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise ValueError(f"{path}: not a readable JSON name map: {str(e).splitlines()[0]}") from None
        if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise ValueError(f"{path}: a name map is a JSON object of NPU name -> GPU name")
        return cls(subs, data)


# ---------------------------------------------------------------- facts

def facts(entries: dict[str, dict], root: str, via: str | None = None, rename=None,
          errors: list[InputError] | None = None, skip: set[str] | frozenset = frozenset()) -> list[Fact]:
    """One fact per tensor; `skip`: (renamed) tensor names to leave out (equal on both sides)."""
    out = []
    seen: dict[str, str] = {}
    for name, e in entries.items():
        key_name = rename(name) if rename else name
        if key_name in seen and errors is not None:
            errors.append(InputError(root, f"tensors {seen[key_name]!r} and {name!r} both map to {key_name!r}; "
                                           f"the second is compared"))
        seen[key_name] = name
        if key_name in skip:
            continue
        f = e.get("file")
        single = not f or os.path.basename(root.rstrip("/")) == f  # a one-file checkpoint: root is the file
        out.append(Fact(key=PREFIX + key_name, value={"shape": list(e["shape"]), "dtype": e["dtype"], "hash": e["hash"]},
                        check="weights", path=root if single else f"{root.rstrip('/')}/{f}", line=None,
                        source=name, via=(via if key_name == name else f"{via + '; ' if via else ''}renamed from {name}"),
                        rank=RANK_SCRIPT))
    return out


def extract(src, ctx):
    """A weights fingerprint read through the shared engine."""
    try:
        data = parse_fingerprint(src.text, src.name)
    except WeightsError as e:
        return Extract(errors=[InputError(src.name, str(e).split(": ", 1)[-1], fatal=True)])
    where = str(data.get("source") or src.name)
    return Extract(facts=facts(data["tensors"], where, via=f"fingerprint {src.name}")
                   + structure.measures(data["tensors"], where))


# ---------------------------------------------------------------- classification

def _fmt(v: dict) -> str:
    return f"{v.get('dtype')}{list(v.get('shape', []))}"


def classify_weights(key: str, g: Fact | None, n: Fact | None, rs: RuleSet):
    if key.startswith(structure.PREFIX):  # the model's measures, derived from its tensors
        return structure.classify(key, g, n, rs)
    name = key[len(PREFIX):]

    if n is None:
        return finding("tensor-missing-on-npu", key=key, gpu=g, npu=n,
                       message=f"tensor {name} ({_fmt(g.value)}) is in the GPU checkpoint only; missing on NPU")
    if g is None:
        return finding("tensor-extra-on-npu", key=key, gpu=g, npu=n,
                       message=f"tensor {name} ({_fmt(n.value)}) is in the NPU checkpoint only; missing on GPU")
    gv, nv = g.value, n.value
    if list(gv.get("shape", [])) != list(nv.get("shape", [])):
        return finding("tensor-shape-differs", key=key, gpu=g, npu=n,
                       message=f"tensor {name} has shape {gv.get('shape')} on GPU and {nv.get('shape')} on NPU"
                       + ("" if gv.get("dtype") == nv.get("dtype") else f" (dtype {gv.get('dtype')} vs {nv.get('dtype')})"))
    if gv.get("dtype") != nv.get("dtype"):
        return finding("tensor-dtype-differs", key=key, gpu=g, npu=n,
                       message=f"tensor {name} is {gv.get('dtype')} on GPU and {nv.get('dtype')} on NPU "
                               f"(same shape {gv.get('shape')})")
    if gv.get("hash") != nv.get("hash"):
        return finding("tensor-values-differ", key=key, gpu=g, npu=n,
                       message=f"tensor {name} ({_fmt(gv)}) has different values on GPU and NPU")
    return None


def describe_stats(st: dict) -> str:
    if not st:
        return ""
    parts = ["max |diff| " + ("n/a (overflow)" if st.get("max_abs_diff") is None else f"{st['max_abs_diff']:.3g}")]
    why = "sums of squares overflowed float64" if st.get("overflow") else "GPU tensor is zero"
    parts.append("rel L2 " + (f"n/a ({why})" if st.get("rel_l2") is None else f"{st['rel_l2']:.3g}"))
    parts.append("cosine " + ("n/a" if st.get("cosine") is None else f"{st['cosine']:.6f}"))
    parts.append(f"{st['differing_elements']} of {st['elements']} elements differ")
    if st.get("nonfinite_mismatches"):
        parts.append(f"{st['nonfinite_mismatches']} NaN/inf mismatches")
    return "; ".join(parts)


# ---------------------------------------------------------------- the comparison

@dataclass
class Summary:
    gpu_tensors: int = 0
    npu_tensors: int = 0
    identical: int = 0
    gpu_bytes: int = 0  # what was compared, said even when nothing differs
    npu_bytes: int = 0
    by_rule: dict = field(default_factory=dict)
    worst: list = field(default_factory=list)  # value findings, worst first


def side_facts(ck: Checkpoint, rename=None, progress=None, skip=frozenset(), hashed: bool = False
               ) -> tuple[list[Fact], list[InputError]]:
    """Hash a checkpoint's tensors (a fingerprint already has them) and make its facts."""
    errors: list[InputError] = []
    if ck.has_data and not hashed:
        try:
            ck.entries = fingerprint(ck, progress)["tensors"]
        except WeightsError as e:
            msg = str(e)
            where, _, reason = msg.partition(": ")
            return [], [InputError(where or ck.root, reason or msg, fatal=True)]
        except OSError as e:
            return [], [InputError(ck.root, f"cannot read: {e.strerror or e}", fatal=True)]
    via = f"fingerprint {ck.root}" if not ck.has_data else None
    with gc_paused():
        out = facts(ck.entries, ck.source or ck.root, via=via, rename=rename, errors=errors, skip=skip)
    return out + structure.measures(ck.entries, ck.source or ck.root), errors


def _hash_side(ck: Checkpoint, progress=None, fanout: Fanout | None = None) -> list[InputError]:
    """Fill ck.entries (hashing a checkpoint's tensors); the errors that stop this side."""
    if not ck.has_data:
        return []
    try:
        ck.entries = fingerprint(ck, progress, fanout)["tensors"]
    except WeightsError as e:
        msg = str(e)
        where, _, reason = msg.partition(": ")
        return [InputError(where or ck.root, reason or msg, fatal=True)]
    except OSError as e:
        return [InputError(ck.root, f"cannot read: {e.strerror or e}", fatal=True)]
    return []


def pair_extracts(gck: Checkpoint, nck: Checkpoint, rename=None, progress=None, fanout: Fanout | None = None
                  ) -> tuple[Extract, Extract]:
    """Both sides hashed, as Extracts holding facts only for the tensors that differ or are
    on one side only: a tensor with the same name, dtype, shape and hash on both sides can
    give no finding, so it is counted (gck.identical, nck.identical) rather than made into a
    fact on each side. `rename` maps NPU names onto GPU names. `progress`: a callable given
    each tensor's bytes, or with a Ray `fanout` an object counting parts (fingerprint())."""
    gerr, nerr = _hash_side(gck, progress, fanout), _hash_side(nck, progress, fanout)
    if gerr or nerr:
        return Extract(errors=gerr), Extract(errors=nerr)
    same: set[str] = set()
    with gc_paused():
        npu: dict[str, dict] = {}
        for name, e in nck.entries.items():
            npu[rename(name) if rename else name] = e
        for name, e in gck.entries.items():
            o = npu.get(name)
            if (o is not None and o.get("hash") == e.get("hash") and o.get("dtype") == e.get("dtype")
                    and list(o.get("shape", ())) == list(e.get("shape", ()))):
                same.add(name)
        del npu
    gck.identical = nck.identical = len(same)
    out = []
    for ck, ren in ((gck, None), (nck, rename)):
        f, errs = side_facts(ck, ren, skip=same, hashed=True)
        out.append(Extract(facts=f, errors=errs))
    return out[0], out[1]


def checkpoint_extract(ck: Checkpoint, rename=None, progress=None) -> Extract:
    """An opened checkpoint (or fingerprint) as an Extract: its tensors hashed, one fact each.

    `rename` maps this side's tensor names onto the other side's (NPU -> GPU);
    `progress` is called with the byte count of each tensor hashed."""
    facts, errors = side_facts(ck, rename, progress)
    return Extract(facts=facts, errors=errors)


def check_extract(path: str, rename=None, progress=None) -> Extract:
    """The stable hook (`scriptdiff check`, `scriptdiff weights`): one side's checkpoint file or
    folder, or its fingerprint, as an Extract of `weights:<tensor>` facts.

    `progress`: an object with start(total_bytes), advance(nbytes) and close(), or None;
    it is started with the bytes to hash and closed when they are hashed."""
    ck, errors = open_side(path)
    if ck is None:
        return Extract(errors=errors)
    if progress is None:
        return checkpoint_extract(ck, rename)
    progress.start(sum(r.nbytes for r in ck.tensors))
    try:
        return checkpoint_extract(ck, rename, progress.advance)
    finally:
        progress.close()


def stats_rules() -> tuple[str, str]:
    """The rules whose findings are measured by value (dtype and values differ)."""
    return code("tensor-dtype-differs"), code("tensor-values-differ")


def summarize(report: Report, gck: Checkpoint, nck: Checkpoint) -> Summary:
    """Counts for the text overview, from a finished comparison: tensors per side, tensors
    equal on both sides (report.tables), findings per rule, the measured ones worst first."""
    summary = Summary(gpu_tensors=len(gck.entries), npu_tensors=len(nck.entries),
                      gpu_bytes=_bytes(gck), npu_bytes=_bytes(nck))
    if gck.identical is not None:  # pair_extracts counted them and left them out of the tables
        summary.identical = gck.identical
    elif report.tables is not None:
        gt, nt = report.tables
        summary.identical = sum(1 for k in gt.keys("weights") & nt.keys("weights")
                                if gt.get(k).value == nt.get(k).value)
    for f in report.findings:
        summary.by_rule[f.rule] = summary.by_rule.get(f.rule, 0) + 1
    measured = stats_rules()
    summary.worst = sorted((f for f in report.findings if f.rule in measured), key=_badness)
    return summary


def _bytes(ck: Checkpoint) -> int:
    if ck.tensors:
        return sum(r.nbytes for r in ck.tensors)
    return sum(e.get("bytes") or 0 for e in ck.entries.values() if isinstance(e, dict))


def _badness(f: Finding) -> tuple:
    rel = f.extra.get("rel_l2")
    cos = f.extra.get("cosine")
    if "rel_l2" not in f.extra:
        return (1, 0.0, f.key)  # no statistics: after the measured ones
    return (0, -(rel if rel is not None else float("inf")), -(1 - cos if cos is not None else 2.0), f.key)


def add_stats(findings: list[Finding], gck: Checkpoint, nck: Checkpoint, rename=None) -> None:
    """Measure the differing tensors of findings (dtype or values differ) when both checkpoints
    hold data: max |diff|, relative L2, cosine go into Finding.extra and the message."""
    if not (gck.has_data and nck.has_data):
        return
    dtype_rule, values_rule = stats_rules()
    gref = {r.name: r for r in gck.tensors}
    nref = {(rename(r.name) if rename else r.name): r for r in nck.tensors}
    measured = 0
    with Reader() as rg, Reader() as rn:
        for f in findings:
            if f.rule not in (dtype_rule, values_rule):
                continue
            name = f.key[len(PREFIX):]
            g, n = gref.get(name), nref.get(name)
            if g is None or n is None:
                continue
            measured += 1
            if measured > budget.STAT_TENSORS:  # the rest stay findings by hash, said to be unmeasured
                f.message += (f" (values not measured: more than {budget.STAT_TENSORS:,} differing tensors "
                              f"are measured in one run)")
                continue
            st = tensor_stats(rg, g, rn, n)
            if st:
                f.extra.update(st)
                f.message += ": " + describe_stats(st)
            elif f.rule == values_rule:
                f.message += f" (values not compared: dtype {g.dtype} is not one scriptdiff converts)"


# --- the text view of a big comparison ---------------------------------------------------

def shortened(report: Report, summary: Summary, top: int) -> Report:
    """The text view for big checkpoints: the overview (counts, the worst tensors) under the
    header, then at most `top` findings per rule; the exit status is the full report's."""
    measured = stats_rules()
    kept, left = [], 0
    per_rule: dict[str, int] = {}
    worst_keys = {f.key for f in summary.worst[:top]}
    for f in report.findings:
        if f.rule in measured:
            if f.key in worst_keys:
                kept.append(f)
            else:
                left += 1
            continue
        per_rule[f.rule] = per_rule.get(f.rule, 0) + 1
        if per_rule[f.rule] <= top:
            kept.append(f)
        else:
            left += 1
    overview = summary_lines(summary, top)
    if left:
        overview.append(f"({left} more finding(s) not shown; --all or --format json lists them)")
    return Report(gpu=report.gpu, npu=report.npu, findings=kept, masked=report.masked, errors=report.errors,
                  compared=report.compared, check_order=report.check_order, overview=overview)


# rule name -> how the overview counts its findings (text view)
NAMES = {"tensor-missing-on-npu": "missing on NPU", "tensor-extra-on-npu": "extra on NPU",
         "tensor-shape-differs": "shape differs", "tensor-dtype-differs": "dtype differs",
         "tensor-values-differ": "values differ"}


def _size(n: int) -> str:
    """1,234 bytes, 1.2 MB: how sizes read in a summary."""
    if n < 1000:
        return f"{n:,} bytes"
    for unit in ("KB", "MB", "GB", "TB"):
        n /= 1000
        if n < 1000 or unit == "TB":
            return f"{n:,.1f} {unit}"
    return f"{n}"


def summary_lines(summary: Summary, top: int) -> list[str]:
    """The overview: tensor counts, findings per kind, the worst tensors measured."""
    words = {code(name): w for name, w in NAMES.items()}
    size = ""  # a clean comparison says what it compared, not only "0 error(s)"
    if not summary.by_rule and (summary.gpu_bytes or summary.npu_bytes):
        size = (f"; compared {_size(summary.gpu_bytes)} on each side" if summary.gpu_bytes == summary.npu_bytes
                else f"; compared {_size(summary.gpu_bytes)} on GPU, {_size(summary.npu_bytes)} on NPU")
    lines = [f"weights: GPU {summary.gpu_tensors} tensor(s), NPU {summary.npu_tensors}; "
             f"{summary.identical} identical"
             + "".join(f", {n} {words.get(rule, rule)}" for rule, n in sorted(summary.by_rule.items())) + size]
    shown = [f for f in summary.worst[:top] if "rel_l2" in f.extra]
    if shown:
        lines.append(f"worst tensors (by relative L2, GPU as reference; {len(shown)} of {len(summary.worst)}):")
        for f in shown:
            x = f.extra
            rel = ("n/a (overflow)" if x.get("overflow") else "n/a") if x.get("rel_l2") is None else f"{x['rel_l2']:.3g}"
            cos = "n/a" if x.get("cosine") is None else f"{x['cosine']:.6f}"
            mx = "n/a" if x.get("max_abs_diff") is None else f"{x['max_abs_diff']:.3g}"
            lines.append(f"  {f.key[len(PREFIX):]}  rel L2 {rel}  max |diff| {mx}  cosine {cos}")
    return lines

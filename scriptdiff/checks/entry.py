"""`scriptdiff data` and `scriptdiff weights` end to end (api.data*, api.weights*, api.executor).

Each request is checked first (a URL that carries credentials, a `--shard` beside a Ray
fan-out, a pair given once: UsageError, one line), then both sides are measured in place
(dataset.py: manifests; weights.py: checkpoints, opened before anything is hashed so that a
missing side fails fast), and the differences go through the pipeline like any other
(suppressions, baseline, --select/--ignore, exit codes). A fingerprint or a manifest is
written whole, or one `--shard I/N` part of it (parts.py), which `merge` puts together into
the bytes a serial run writes. How the bytes are hashed travels in one `Hashing`.
"""
from __future__ import annotations

from ..inputs.sources import SourceError, read_path
from ..inputs.storage import begin, check_urls, store_for
from ..model import Extract, InputError, Options, Report, SideContext, UsageError
from . import dataset
from .fanout import EXECUTORS, Fanout, FanoutError
from .hashing import Hashing
from .parts import PartsError, parse_shard

# A fingerprint imports neither the pipeline nor the readers of scripts and checkpoints: what
# compares (run, extract) and what opens a checkpoint (weights) are imported where used, so that
# `data fingerprint` costs its hashing and little more (issue 42).


def executor(name: str = "serial", address: str | None = None, parts: int | None = None) -> Fanout:
    """How fingerprints are hashed: "serial" (this machine) or "ray" (in parts on a cluster)."""
    if name not in EXECUTORS:
        raise UsageError(f"--executor {name!r}: expected one of {', '.join(EXECUTORS)}")
    if parts is not None and parts < 1:
        raise UsageError("--parts must be at least 1")
    if name == "serial" and (address or parts):
        raise UsageError(f"{'--ray-address' if address else '--parts'} applies to --executor ray only")
    return Fanout(name, address, parts)


def hashing(sample: bool, workers: int | None, progress, fanout) -> Hashing:
    """How a fingerprint hashes: all bytes or a sample, the workers, progress and fan-out."""
    from .hashing import SampleSpec  # lazy: keeps a fingerprint light
    return Hashing(SampleSpec() if sample else None, workers, progress, fanout)


def manifest_text(manifest: dict) -> str:
    """A dataset manifest (or a `--shard` part of one) as the JSON text `data fingerprint` writes."""
    from .parts import MARKER as PART  # lazy: keeps a fingerprint light
    return dataset.part_text(manifest) if PART in manifest else dataset.dumps(manifest)


def fingerprint_text(fingerprint: dict) -> str:
    """A weights fingerprint (or a `--shard` part of one) as the JSON text `weights fingerprint` writes."""
    from . import weights as weights_mod  # lazy: keeps a fingerprint light
    from .parts import MARKER as PART  # lazy: keeps a fingerprint light
    return weights_mod.part_text(fingerprint) if PART in fingerprint else weights_mod.dumps(fingerprint)


def _urls(*paths) -> None:
    """A URL that carries credentials is refused before any report names it; the store is
    then seen as it is now (storage.begin: no size, version or silence of an earlier run)."""
    try:
        check_urls([p for p in paths if isinstance(p, str)])
    except SourceError as e:
        raise UsageError(str(e)) from None
    begin()


def _shard(shard, fanout) -> tuple[int, int] | None:
    if shard is None:
        return None
    if fanout is not None and fanout.distributed:
        raise UsageError("--shard runs one part here and --executor ray runs every part on a cluster: give one of them")
    try:
        return parse_shard(shard) if isinstance(shard, str) else (int(shard[0]), int(shard[1]))
    except ValueError as e:
        raise UsageError(str(e)) from None


def _part_texts(paths: list[str]) -> list[tuple[str, str]]:
    out = []
    for p in paths:
        try:
            out.append((p, store_for(p).read_text(p)))
        except SourceError as e:
            raise UsageError(str(e)) from None
    return out


# --- dataset -----------------------------------------------------------------------------------

def data(gpu: str, npu: str, options: Options | None, hashing: Hashing, tokenizers: tuple[str, str] | None = None,
         scripts: tuple[str, str] | None = None) -> Report:
    """Two datasets (folders, files or object-store prefixes fingerprinted now, or manifests),
    file by file; `tokenizers` / `scripts`: (GPU, NPU) tokenizer paths, or launch scripts
    naming them."""
    _urls(gpu, npu)
    for what, pair in (("--tokenizer", tokenizers), ("--script", scripts)):
        if pair is not None and len(pair) != 2:
            raise UsageError(f"{what}: when comparing, give it twice (GPU, then NPU)")
    if hashing.workers is not None and hashing.workers < 1:
        raise UsageError("--workers must be at least 1")
    report = Report(gpu=gpu, npu=npu)
    sides = []
    for i, path in enumerate((gpu, npu)):
        toks = [tokenizers[i]] if tokenizers else []
        scr = _read_scripts([scripts[i]]) if scripts else []
        sides.append(dataset.side_extract(path, hashing, toks, scr))
    (gm, gex), (nm, nex) = sides
    if gm is None or nm is None:  # a side that could not be read at all: nothing compared (exit 2)
        report.errors.extend(gex.errors + nex.errors)
        return report.sorted()
    dataset.pair_single_files(gpu, npu, gm, nm, nex)
    from ..run.pipeline import Inputs, run  # lazy: keeps a fingerprint light
    return report.absorb(run(Inputs(measured=([gex], [nex])), options))


def data_fingerprint(paths: list[str], hashing: Hashing, tokenizers: list[str] | None = None,
                     scripts: list[str] | None = None, exclude: set[str] | None = None,
                     shard: "str | tuple[int, int] | None" = None) -> tuple[dict, list[InputError]]:
    """The manifest of the files under the paths and the input errors met; with `shard`
    ("I/N") part I of N only."""
    if not paths:
        raise UsageError("data fingerprint needs at least one PATH")
    if hashing.workers is not None and hashing.workers < 1:
        raise UsageError("--workers must be at least 1")
    _urls(*paths)
    part = _shard(shard, hashing.fanout)
    if part is not None and (tokenizers or scripts):
        raise UsageError("--tokenizer and --script go to `data merge`, which writes the whole manifest, "
                         "not to one --shard")
    if part is not None:
        return dataset.fingerprint_shard(paths, part, hashing.sample, hashing.workers, hashing.progress, exclude or set())
    try:
        manifest, errors = dataset.fingerprint(paths, sample=hashing.sample, workers=hashing.workers,
                                               progress=hashing.progress, exclude=exclude or set(),
                                               fanout=hashing.fanout)
    except FanoutError as e:
        raise UsageError(str(e)) from None
    _add_tokenizers(manifest, errors, tokenizers, scripts)
    return manifest, errors


def _add_tokenizers(manifest: dict, errors: list, tokenizers, scripts) -> None:
    if tokenizers or scripts:
        entries, terrs, root = dataset.tokenizer_files(list(tokenizers or []), _read_scripts(list(scripts or [])))
        errors.extend(terrs)
        manifest["tokenizer"] = dict(sorted(entries.items()))
        manifest["tokenizer_root"] = root


def data_merge(parts: list[str], tokenizers: list[str] | None = None, scripts: list[str] | None = None
               ) -> tuple[dict, list[InputError]]:
    """The manifest of a complete set of `--shard I/N` part files and the errors the parts met."""
    try:
        manifest, errors = dataset.merge(_part_texts(parts))
    except PartsError as e:
        raise UsageError(str(e)) from None
    _add_tokenizers(manifest, errors, tokenizers, scripts)
    return manifest, errors


def _read_scripts(paths: list[str]) -> list[tuple[str, Extract]]:
    """(path, Extract) of each launch script or config naming tokenizer files."""
    from ..run.engine import extract  # lazy: keeps a fingerprint light
    out = []
    for script in paths:
        try:
            src = read_path(script)
        except SourceError as e:
            out.append((script, Extract(errors=[InputError(script, str(e).split(": ", 1)[-1])])))
            continue
        out.append((script, extract(src, SideContext("gpu"))))
    return out


# --- weights -----------------------------------------------------------------------------------

def weights(gpu: str, npu: str, options: Options | None = None, rename: "weights_mod.Renamer | None" = None,
            progress=None, fanout=None) -> Report:
    """Two checkpoints (or fingerprints) tensor by tensor; the differing tensors measured when
    both are at hand, `report.details["weights"]` the counts and the worst tensors."""
    from ..run.pipeline import Inputs, run  # lazy: keeps a fingerprint light
    from . import weights as weights_mod  # lazy: keeps a fingerprint light
    _urls(gpu, npu)
    report = Report(gpu=gpu, npu=npu)
    # both sides opened (headers only) before anything is hashed: a missing side fails fast
    gck, gerr = weights_mod.open_side(gpu)
    nck, nerr = weights_mod.open_side(npu)
    report.errors.extend(gerr + nerr)
    if gck is None or nck is None:
        return report.sorted()
    distributed = fanout is not None and fanout.distributed
    if progress is not None and not distributed:
        progress.start(sum(r.nbytes for ck in (gck, nck) for r in ck.tensors))
    try:
        advance = progress if distributed else (progress.advance if progress is not None else None)
        gex, nex = weights_mod.pair_extracts(gck, nck, rename, advance, fanout)  # facts only where the sides differ
    finally:
        if progress is not None:
            progress.close()
    if any(e.fatal for e in gex.errors + nex.errors):  # a side that could not be hashed: exit 2
        report.errors.extend(gex.errors + nex.errors)
        return report.sorted()
    report.absorb(run(Inputs(measured=([gex], [nex])), options))
    weights_mod.add_stats(report.findings, gck, nck, rename)
    report.details["weights"] = weights_mod.summarize(report, gck, nck)
    return report.sorted()


def weights_fingerprint(path: str, progress=None, shard: "str | tuple[int, int] | None" = None,
                        fanout=None) -> dict:
    """Name, dtype, shape and hash of every tensor of a checkpoint; with `shard` part I of N only."""
    from . import weights as weights_mod  # lazy: keeps a fingerprint light
    from .safetensors_io import WeightsError  # lazy: keeps a fingerprint light
    _urls(path)
    part = _shard(shard, fanout)
    try:
        ck = weights_mod.open_checkpoint(path)
        if not ck.has_data:
            raise UsageError(f"{path}: is already a weights fingerprint")
        if fanout is not None and fanout.distributed:
            return weights_mod.fingerprint(ck, progress, fanout)  # progress counts parts
        refs = weights_mod.shard_refs(ck, part) if part is not None else ck.tensors
        if progress is not None:
            progress.start(sum(r.nbytes for r in refs))
        try:
            advance = progress.advance if progress is not None else None
            if part is not None:
                return weights_mod.fingerprint_shard(ck, part, advance)
            return weights_mod.fingerprint(ck, advance)
        finally:
            if progress is not None:
                progress.close()
    except WeightsError as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror or e}") from None


def weights_merge(parts: list[str]) -> dict:
    """The fingerprint of a complete set of `--shard I/N` part files."""
    from . import weights as weights_mod  # lazy: keeps a fingerprint light
    try:
        return weights_mod.merge(_part_texts(parts))
    except PartsError as e:
        raise UsageError(str(e)) from None

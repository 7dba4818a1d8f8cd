"""What is compared with what, for every entry point: from a request to `pipeline.Inputs`.

Every entry point (two paths, two folders, git revisions, a patch with its root, a `check`
configuration, a pre-commit file list, git's external diff) ends here before the pipeline,
so the same files give the same scopes whichever way they are fed:

  units      the one rule for what is a run: a pair of launch scripts (kinds marked `entry`)
             is a run, read with the program it starts and the configs it references, and
             every other pair of differing files is a scope of its own unless a run already
             read it (`units`)
  sides      each side resolves its references within itself (`SideScope`): a side on disk
             beside its files and under its root (references.DiskResolver), a side read from
             a git revision in that revision (gitsrc.RevisionResolver, never the work tree), a
             side rebuilt from a patch in the patched texts laid over its root (`Overlay`), and
             the two sides of git's external diff against the revisions git names where they
             can be told (`git_diff_sides`); where they cannot, neither side follows its
             references and the report says so in a note
  inputs     the pairs, units, roots and resolvers put together (`inputs`)
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from ..inputs import flags, gitsrc
from ..model import InputError, Report
from .pipeline import Inputs, Unit
from ..inputs.references import DiskResolver, Resolution
from ..ruleset.registry import detect
from ..inputs.sources import Source, SourceError, read_path


@dataclass
class SideScope:
    """One side of a comparison: the folder its relative references fall back to, where they
    are found (a references.Resolver; None: on disk), and a note for the report when its
    references could not be followed at all."""

    root: str | None = None
    resolver: object | None = None
    note: str | None = None


def units(pairs: list[tuple[Source, Source]], same: list[tuple[Source, Source]] = ()) -> list[Unit]:
    """The units of paired files: each pair of launch scripts (kinds marked `entry`, differing
    or identical: their programs may differ) is a run, read with the program it starts and the
    configs it references; every other pair of differing files is a scope of its own, which the
    pipeline skips when a run already read both of its files."""
    entries = [(g, n) for g, n in list(pairs) + list(same) if detect(g).entry]
    return ([Unit([g], [n], run=True) for g, n in entries]
            + [Unit([g], [n], run=False) for g, n in pairs if not detect(g).entry]
            + [Unit([g], [n], run=False) for g, n in same if detect(g).versions])  # a version file, even identical


def inputs(c, sides: tuple[SideScope, SideScope] = (SideScope(), SideScope()), *, findings=None,
           unit_list: list[Unit] | None = None, measured=None, report: Report | None = None) -> Inputs:
    """The pipeline's Inputs for collected files `c` (tree.Collected: each side's sources, the
    differing pairs, the identical pairs read for their settings, the unpaired findings, the
    identical accounts), under the units rule unless `unit_list` is given. A side's note (its
    references could not be followed) goes into `report` as a note, once."""
    _notes(sides, report)
    g, n = sides
    return Inputs(list(c.gpu), list(c.npu), list(c.pairs),
                  units=units(c.pairs, c.same) if unit_list is None else unit_list,
                  findings=list(c.findings if findings is None else findings), measured=measured,
                  roots=(g.root, n.root), resolvers=(g.resolver, n.resolver),
                  accounts=list(c.identical) + list(c.refused))


def files(gpu: list[Source], npu: list[Source], pairs: list[tuple[Source, Source]],
          sides: tuple[SideScope, SideScope] = (SideScope(), SideScope()), report: Report | None = None) -> Inputs:
    """The Inputs of files given as such (two paths, REV:path, git's external diff): all of a
    side's files are one run, as one training run's files are, `pairs` compared as code."""
    _notes(sides, report)
    g, n = sides
    return Inputs(list(gpu), list(npu), list(pairs), roots=(g.root, n.root), resolvers=(g.resolver, n.resolver))


def _notes(sides, report: Report | None) -> None:
    """A side whose references could not be followed says so in the report, once."""
    if report is None:
        return
    for side, label in zip(sides, (report.gpu, report.npu)):
        if side.note and not any(e.message == side.note for e in report.errors):
            report.errors.append(InputError(label, side.note, level="note"))


def disk(root: str | None = None) -> SideScope:
    """A side on disk: references beside its files, then under `root` (references.py)."""
    return SideScope(root=root, resolver=DiskResolver(root))


def revision(repo_dir: str, rev: str, root: str = "", prefix: str | None = None,
             paths: dict[str, str] | None = None) -> SideScope:
    """A side read from git revision `rev`: its references are found in that revision."""
    return SideScope(root=None, resolver=gitsrc.RevisionResolver(repo_dir, rev, prefix=prefix, root=root,
                                                                 paths=paths))


class Unfollowed:
    """A side whose references cannot be followed anywhere: each is said once, not guessed."""

    def __init__(self, why: str):
        self.why = why

    def resolve(self, ref: str, referrer: Source, root: str | None = None) -> Resolution:
        return Resolution(None, why=self.why)


class Overlay(DiskResolver):
    """A side rebuilt from a patch: its files on disk under the root, except the patched ones,
    which read as the patch makes them on this side (`texts`: real path -> bytes)."""

    def __init__(self, root: str | None, texts: dict[str, bytes]):
        super().__init__(root)
        self.texts = dict(texts)

    def read(self, res: Resolution, name: str) -> Source:
        real = os.path.realpath(res.path)
        if real in self.texts:
            return Source(name=name, data=self.texts[real], origin=res.path)
        return super().read(res, name)


# --- git's external diff ----------------------------------------------------------------------

NULL_HEX = "0" * 40


def blob_hex(data: bytes) -> str:
    """The id git gives these bytes as a blob (`git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class GitDiffSide:
    path: str  # the path in the repository
    file: str  # the file git passed (a temporary copy, the work tree's file, or /dev/null)
    hex: str  # the blob id git passed ("" when not known: computed from the bytes)
    name: str  # the name shown (a/path, b/path)


@dataclass
class GitDiffScope:
    sources: list[Source] = field(default_factory=list)
    sides: tuple[SideScope, SideScope] = (SideScope(), SideScope())
    errors: list[InputError] = field(default_factory=list)


def git_diff_sides(old: GitDiffSide, new: GitDiffSide, env: dict | None = None, cwd: str = ".") -> GitDiffScope:
    """Both sides of one file of `git diff` as an external diff or a difftool, each with the
    revision its references are found in: the revision (or index, or work tree) that holds
    the blob git passed, among those the calling `git diff` names (its command line, when the
    system shows it), the index and HEAD. When a side's revision cannot be told, neither side
    follows its references (one note says why), rather than take them from the work tree,
    which is one side's checkout."""
    env = os.environ if env is None else env
    out = GitDiffScope()
    for s in (old, new):
        if s.file == os.devnull:
            out.sources.append(Source(name=s.name, data=b""))
            continue
        try:
            src = read_path(s.file, s.name)
        except SourceError as e:
            out.errors.append(InputError(s.name, str(e).split(": ", 1)[-1], fatal=True))
            return out
        out.sources.append(Source(name=s.name, data=src.data))
    try:
        repo = gitsrc.open_repo(cwd)
        top = repo.working_tree_dir
    except gitsrc.GitError as e:
        why = f"{e}: the configs and programs the files reference were not read on either side"
        out.sides = (SideScope(resolver=Unfollowed(why), note=why), SideScope(resolver=Unfollowed(why)))
        return out
    named, cached = _named_revisions(repo, env)
    found = []
    for i, (s, src) in enumerate(zip((old, new), out.sources)):
        if s.file == os.devnull:
            found.append(("nothing", None))
            continue
        if top and os.path.realpath(os.path.join(top, s.path)) == os.path.realpath(os.path.join(top, s.file)) \
                and os.path.isfile(os.path.join(top, s.file)):
            found.append(("the work tree", None))  # git passed the work tree's own file
            out.sources[i] = Source(name=s.name, data=src.data, origin=os.path.join(top, s.path))
            continue
        want = s.hex if s.hex and s.hex != NULL_HEX else blob_hex(src.data)
        order = named if i == 0 else list(reversed(named))
        order = order + ([] if cached else ["the index"]) + ["HEAD"]
        found.append((next((rev for rev in order if _blob_at(repo, rev, s.path) == want), None), want))
    if any(rev is None for rev, _w in found):
        which = " and ".join(side for side, (rev, _w) in zip(("OLD", "NEW"), found) if rev is None)
        why = (f"could not tell which revision git compares on the {which} side ({', '.join(named + ['the index', 'HEAD'])}"
               f" hold other versions of {new.path}): the configs and programs the files reference were not read "
               f"on either side; compare the trees with `scriptdiff diff --git REV1 REV2` to include them")
        out.sides = (SideScope(resolver=Unfollowed(why), note=why), SideScope(resolver=Unfollowed(why)))
        return out
    sides = []
    for s, src, (rev, _w) in zip((old, new), out.sources, found):
        prefix = s.name[:len(s.name) - len(s.path)]
        if rev == "the work tree":
            sides.append(SideScope(root=top, resolver=DiskResolver(top)))
        elif rev == "the index":
            sides.append(SideScope(resolver=gitsrc.IndexResolver(top, prefix, paths={src.name: s.path})))
        elif rev == "nothing":
            sides.append(SideScope(resolver=Unfollowed("the file does not exist on this side")))
        else:
            sides.append(SideScope(resolver=gitsrc.RevisionResolver(top, rev, prefix=prefix,
                                                                    paths={src.name: s.path})))
    out.sides = (sides[0], sides[1])
    return out


def _blob_at(repo, rev: str, path: str) -> str | None:
    """The object name of `path` in revision `rev` (or in "the index"), or None."""
    try:
        found = gitsrc.blob_at(repo, rev, path)
    except gitsrc.GitError:  # an unknown revision, an unreadable index: not this one
        return None
    return found.hexsha if found is not None else None


# options of `git diff` / `git difftool` that take a separate value (their value is no revision)
_VALUED = {"-x", "--extcmd", "-t", "--tool", "-O", "-S", "-G", "--output", "--diff-filter", "--relative",
           "--src-prefix", "--dst-prefix", "--line-prefix", "-U", "--unified", "--inter-hunk-context"}


def _named_revisions(repo, env) -> tuple[list[str], bool]:
    """The revisions the calling `git diff` (or `git difftool`) names, in order, and whether it
    compares the index (`--cached`): from its command line, which Linux shows under /proc;
    ([], False) where it cannot be read. `A..B` names A and B; `A...B` their merge base and B."""
    args = _calling_git(env)
    revs: list[str] = []
    if args is None:
        return revs, False
    cached = any(a in ("--cached", "--staged") for a in args)
    for item in flags.scan(args, 0, lambda f, _next: f.text in _VALUED):
        if item.end:
            break
        if item.flag is not None:
            continue
        a = args[item.at]
        parts = [a]
        if "..." in a:
            x, _, y = a.partition("...")
            try:
                parts = [gitsrc.merge_base(repo, x or "HEAD", y or "HEAD") or x, y or "HEAD"]
            except gitsrc.GitError:
                parts = [x, y]
        elif ".." in a:
            x, _, y = a.partition("..")
            parts = [x or "HEAD", y or "HEAD"]
        for p in parts:
            try:
                gitsrc.commit(repo, p)
            except gitsrc.GitError:
                continue
            revs.append(p)
    return revs, cached


def _calling_git(env) -> list[str] | None:
    """The arguments after `diff`/`difftool` of the nearest `git` process above this one."""
    pid = os.getppid()
    for _ in range(6):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a.decode("utf-8", "replace") for a in fh.read().split(b"\0") if a]
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read().decode("ascii", "replace")
        except OSError:
            return None
        if argv and os.path.basename(argv[0]) == "git":
            sub = next((i for i, a in enumerate(argv[1:], 1) if a in ("diff", "difftool")), None)
            if sub is not None:
                return argv[sub + 1:]
        try:
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (IndexError, ValueError):
            return None
        if pid <= 1:
            return None
    return None

"""A training program's options as facts: `--k v`, `--k=v`, `--flag`, `--no-flag`, Hydra
`a.b=c` / `+a.b=c` / `++a.b=c`, and config files named by an option or a positional word.

Each option becomes a hyperparameter fact under its canonical key (scriptdiff/ruleset/vocabulary.py), spelled
for the framework its options suggest (Megatron or Hugging Face, from the hints in
rules/shell.yaml `launchers.hints`); a config file becomes a `config:<key>` reference fact
that the engine follows.
"""
from __future__ import annotations

import os
import re

from ...inputs import flags as options
from ...model import RANK_SCRIPT, Fact, Masked, Side
from ...inputs.references import resolve
from ...ruleset.registry import dialects_for, reference_suffixes, referenced_kind
from ...ruleset.rules import code
from ...ruleset.secrets import is_secret, withheld
from ...ruleset.vocabulary import canonical_flag, convert, dialect_path, meaning_key, path_key, to_number
from .launchers import LauncherTable
from .record import Record
from .words import Seg, Word, tail_word, via_text

HYDRA_RE = re.compile(r"^(\+\+|\+|~)?([A-Za-z_][\w\-]*(?:\.[\w\-]+)*)=(.*)$", re.S)  # one token


class ProgramReader:
    """Turns a program's words (after the launcher) into hyperparameter and reference facts."""

    def __init__(self, rec: Record, table: LauncherTable):
        self.rec = rec
        self.table = table

    def read(self, script: str, words: list[Word], framework: str | None = None) -> list[list]:
        """The options of program `script` (a path or module name), as facts; `framework`: the
        one its launcher names (megatron sft: megatron), else guessed from the options. Returns
        the options passed, each [name as written, line, value shown, source], for the check
        against the program's own parser (scriptdiff/run/launchargs.py); each fact an option made
        carries its name in meta["flag"]."""
        base = os.path.basename(script)
        flags = []
        hydra = []
        i = 0
        while i < len(words):
            w = words[i]
            tok = w.text
            if tok in ("\\", "") and not _explicit_empty(w):
                i += 1
                continue
            opt = options.split(tok)
            if opt is not None and opt.long:
                name = opt.name
                if opt.value is not None:
                    vw = tail_word(w, opt.value_at)
                    flags.append((name, [vw], w))
                    i += 1
                    continue
                vals = []
                j = i + 1
                while j < len(words) and not _is_option(words[j].text):
                    if words[j].text not in ("\\", "") or _explicit_empty(words[j]):
                        if HYDRA_RE.match(words[j].text) and "." in words[j].text.split("=", 1)[0]:
                            break
                        if vals and words[j].text.lower().endswith(reference_suffixes()):
                            break  # a config file after an option's value is the program's own (orbit fit --x 1 a.yaml)
                        vals.append(words[j])
                    j += 1
                flags.append((name, vals, w))
                i = j
                continue
            m = HYDRA_RE.match(tok)
            if w.unknown and not options.dashed(tok):  # `train.py $cmd`: what it holds is not known
                self.rec.unknown_words([w], f"what it holds is passed to {base} and was not compared")
            elif m and not options.dashed(tok):
                hydra.append((m.group(2), m.group(3), w))
            elif tok.lower().endswith(reference_suffixes()) and not options.dashed(tok):
                self.reference("config", w)  # a positional config: `llamafactory-cli train x.yaml`
            i += 1
        names = {n.replace("-", "_") for n, _, _ in flags}
        named = base.startswith(self.table.megatron_scripts)  # pretrain_gpt.py: a Megatron program by its name
        megatron = named or len(names & self.table.megatron_hints) >= 2 or any("-" in n for n, _, _ in flags)
        hf = len(names & self.table.hf_hints) >= 1 and not base.startswith(self.table.megatron_scripts[:1])
        # whose spellings the options are read in (`prefer`), and whose defaults apply: only a
        # framework the program is known to be of (the launcher says, or a Megatron program's
        # name); a program the options merely look like is compared as written, and a setting
        # one side leaves out has no value on that side, never a framework default invented
        # (the program's own defaults count when it is in view: its code is read)
        if named:
            self.rec.known.add("megatron")
        if framework in ("megatron", "hf"):  # the launcher says: swift sft is hf, megatron sft is megatron
            self.rec.frameworks.add(framework)
            self.rec.known.add(framework)
            prefer = framework
        elif megatron and not (hf and not any("-" in n for n, _, _ in flags)):
            self.rec.frameworks.add("megatron")
            self.rec.guessed.add("megatron")  # a guess unless the name says (rec.known)
            prefer = "megatron"
        elif hf:
            self.rec.frameworks.add("hf")
            self.rec.guessed.add("hf")
            prefer = "hf"
        else:
            prefer = "megatron"
        passed = []
        for i, (name, vals, w) in enumerate(flags):
            first = len(self.rec.facts)
            self.flag(name, vals, w, prefer)
            made = self.rec.facts[first:]
            for f in made:
                f.meta["flag"] = name
            _placed(made, i, w, vals)
            raw = " ".join(v.text for v in vals)
            secret = bool(raw) and is_secret(name, raw)  # --hf-token hf_...: never shown
            if secret:
                self.rec.withhold(raw)
            shown = withheld(raw) if secret else raw
            line = w.line or (vals[0].line if vals else 0)
            source = made[0].source if made and made[0].line == line else self.rec.src_line(line, f"--{name}")
            passed.append([name, line, shown, source])
        for i, (path, val, w) in enumerate(hydra, len(flags)):
            first = len(self.rec.facts)
            self.hydra(path, val, w)
            _placed(self.rec.facts[first:], i, w, [tail_word(w, len(w.text) - len(val))])
        return passed

    def flag(self, name: str, vals: list[Word], w: Word, prefer: str) -> None:
        dest = name.replace("-", "_")
        if vals:
            vw = Word([s for v in vals for s in (v.segs + [Seg(" ", v.line)])][:-1]) if len(vals) > 1 else vals[0]
            raw = vw.text
        else:
            vw = w
            raw = True
        if referenced_kind(dest, raw) is not None:  # --deepspeed ds.json, --job.config_file x.toml
            self.reference(dest, vw, flag_word=w)
            return
        ctx = self.rec.ctx
        if dest in self.table.npu_only_flags and ctx is not None and ctx.side == "npu":
            line = vw.line or w.line
            self.rec.masked.append(Masked(rule=code("npu-only-launch-flag"), gpu=None, npu=Side(
                value=raw, path=self.rec.src.name, line=line, source=self.rec.src_line(line, f"--{name}"))))
            return
        if dest in ("bf16", "fp16"):
            on = raw is True or str(raw).lower() in ("true", "1", "yes")
            if on:
                self.add_hparam("params_dtype", dest, vw, f"--{name}", flag_word=w)
            return
        key = canonical_flag(dest, prefer) or meaning_key(dest, raw)  # --batch-per-device 8: micro_batch_size
        off = options.negative(dest)  # --no-x: x off
        if key is None and off is not None:
            pos = canonical_flag(off, prefer)
            if raw is True:
                self.add_hparam(pos or off, False, w, f"--{name}", flag_word=w)
                return
            if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):  # ms-swift: --no_x true
                self.add_hparam(pos or off, raw.strip().lower() == "false", vw, f"--{name}", flag_word=w)
                return
        self.add_hparam(key or dest, raw, vw, f"--{name}", flag_word=w)

    def hydra(self, path: str, val: str, w: Word) -> None:
        hit = dialect_path(path, dialects_for("shell").values())  # a command line's: the shell kind's dialects
        sectioned = False
        if hit is not None:
            key = hit[0]
        else:  # the path's last segments (vocabulary.path_key); a section's setting is compared as such
            key, sectioned = path_key(path, "hydra", value=_hydra_value(val)) or (path, False)
        dialect = hit[1] if hit is not None else None
        vw = tail_word(w, len(w.text) - len(val))
        if dialect:
            self.rec.dialect(dialect, vw.line or w.line)
        if referenced_kind(path, val) is not None:
            self.reference(path, vw)
            return
        self.add_hparam(key, _hydra_value(val), vw, path, flag_word=w, dialect=dialect, sectioned=sectioned)

    def add_hparam(self, key: str, raw, vw: Word, flag_text: str, flag_word: Word | None = None,
                   dialect: str | None = None, sectioned: bool = False) -> None:
        if key in ("mixed_precision", "torch_dtype"):
            key = "params_dtype"
        if isinstance(raw, str) and is_secret(flag_text.lstrip("-+~"), raw):  # --hf-token hf_...: never shown
            self.rec.withhold(raw)
            self.rec.facts.append(self.make_fact(key, withheld(raw), vw, flag_word=flag_word, key_text=flag_text))
            return
        conv = convert(key, raw)
        if conv is None:
            return
        key, value = conv
        fact = self.make_fact(key, value, vw, flag_word=flag_word, key_text=flag_text)
        fact.meta["written_key"] = flag_text.lstrip("-+~")  # the report shows the user's spelling
        if sectioned:
            fact.meta["sectioned"] = True
        if dialect:  # the report names the dialect that mapped the key: "verl (Hydra overrides)"
            fact.via = dialect + (f", {fact.via}" if fact.via else "")
        self.rec.facts.append(fact)

    def make_fact(self, key, value, vw: Word, flag_word: Word | None = None, key_text: str = "") -> Fact:
        via = via_text(vw.via)
        line = vw.line or (flag_word.line if flag_word else 0)
        meta = {}
        if vw.via:  # the variables the value came through: an exported one is passed on here
            meta["through"] = tuple(n.strip("${}") for n in vw.via)
        if vw.unresolved:
            meta["unresolved"] = list(vw.unresolved)
        if vw.unknown:  # set in a way not evaluated: not compared (lang/shell/__init__.py says so)
            meta["unknown"] = list(vw.unknown)
            meta["used_at"] = flag_word.line if flag_word is not None else line
        ctx = self.rec.ctx
        if key == "distributed_backend" and ctx is not None and ctx.side == "npu" \
                and str(value).lower() == "nccl":
            meta["mask"] = code("distributed-backend-port")
        return Fact(key=key, value=value, path=self.rec.src.name, line=line, source=self.rec.src_line(line, key_text),
                    rank=RANK_SCRIPT, via=via, meta=meta)

    def reference(self, key: str, vw: Word, flag_word: Word | None = None, dialect: str | None = None) -> None:
        """A config file the program (or its launcher) is given; `dialect`: the framework the
        file is known to be written for (accelerate launch --config_file: an accelerate config)."""
        path = vw.text
        line = vw.line
        exists = False
        if vw.unknown:  # a path not known: nothing to look for; the fact says why (not compared)
            meta = {"reference": True, "exists": False, "written": path, "force": True, "unknown": list(vw.unknown),
                    "used_at": flag_word.line if flag_word is not None else line}
        else:
            self.rec.references.append((path, line, key))
            exists = self._ref_exists(path)
            meta = {"reference": True, "exists": exists, "written": path, "force": True}
        if dialect:
            meta["dialect"] = dialect
        self.rec.facts.append(Fact(key=f"config:{key}", value=os.path.basename(path), path=self.rec.src.name,
                                   line=line, source=self.rec.src_line(line, path), rank=RANK_SCRIPT,
                                   via=("$" + vw.via[-1]) if vw.via else None, meta=meta))

    def _ref_exists(self, ref: str) -> bool:
        return resolve(ref, self.rec.src.origin, self.rec.ctx.root).path is not None


def _placed(facts: list[Fact], index: int, flag: Word, values: list[Word]) -> None:
    """Where an option of the command is written, for `scriptdiff fix` (docs/fix.md): its place
    among the program's options, the byte spans of the flag word and of its value (where the
    value is written in one piece, in the command or in the variable it came through) and the
    variables it came through."""
    if not facts:
        return
    value = values[0] if len(values) == 1 else None
    fspan, vspan = flag.span, value.span if value is not None else None
    where = {"word": index, "flag": list(fspan) if fspan else None, "flag_text": flag.text,
             "value": list(vspan) if vspan else None, "value_text": value.text if value is not None else None,
             "values": len(values), "via": list(dict.fromkeys(v for w in values for v in w.via))}
    for f in facts:
        f.meta["shell"] = where


def _explicit_empty(w: Word) -> bool:
    """`--flag ""`: an argument written empty (quoted), not one that expanded to nothing."""
    return w.text == "" and any(s.quoted for s in w.segs)


def _is_option(tok: str) -> bool:
    """An option or END where an option's values are read: -1, -1e-3 are values."""
    return options.dashed(tok) and not isinstance(to_number(tok), (int, float))


def _hydra_value(val: str):
    v = val.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    if v.startswith("[") and v.endswith("]"):
        inner = v[1:-1].strip()
        return [to_number(x.strip().strip("'\"")) for x in inner.split(",")] if inner else []
    return v

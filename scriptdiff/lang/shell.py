"""Launch scripts (bash): tree-sitter-bash, evaluated in order, never executed.

What is read:
- assignments in order (`VAR=...`, `export`, `declare`/`local`/`readonly`), `${VAR}`,
  `"$VAR"`, `${VAR:-default}` / `${VAR-d}` / `${VAR:=d}`, arrays `ARGS=(...)` / `ARGS+=(...)`
  with `"${ARGS[@]}"`, multi-line strings holding flags, `$((...))` on known values. A
  variable the script does not set is *unresolved*: kept as its text (`$DATA`) and said so,
  never guessed. Command substitutions `$(...)` are unresolved too.
- launcher commands: torchrun, `python -m torch.distributed.run|launch`, deepspeed,
  `accelerate launch`, msrun, plain `python x.py`, and Hydra-style `python -m pkg key=value`.
  The launcher's own options give world_size (nproc_per_node x nnodes, --num_gpus x
  --num_nodes, --num_processes, --worker_num) and master_port/master_addr (info); the
  training script's options become hyperparameter facts: `--k v`, `--k=v`, `--flag`,
  `--no-flag`, Hydra `a.b=c` / `+a.b=c` / `++a.b=c`.
- exported environment variables (and `VAR=x cmd` prefixes of a launcher) become
  environment facts keyed by scriptdiff.envmap; `source .../set_env.sh` is an NPU tuning fact.
- comments holding flags (`# --seed 42`) mark that flag as *commented out* on this side.
- config files named by the script (--deepspeed ds.json, --config x.yaml, --config_file,
  --deepspeed_config) are references the engine follows.

A script that tree-sitter parses only partly is still analysed: the parsed statements give
facts and one errors entry names the lines that did not parse.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..model import RANK_SCRIPT, Fact, InputError

STATEMENTS = {"variable_assignment", "declaration_command", "command", "pipeline", "list", "subshell",
              "if_statement", "for_statement", "c_style_for_statement", "while_statement", "case_statement",
              "function_definition", "redirected_statement", "compound_statement", "comment", "unset_command",
              "negated_command", "test_command"}
LAUNCHERS = {"torchrun", "deepspeed", "accelerate", "msrun", "python", "python3", "mpirun", "llamafactory-cli"}
DIST_MODULES = {"torch.distributed.run", "torch.distributed.launch"}
# launcher options that take no value (everything else starting with - takes the next word)
LAUNCHER_FLAGS = {
    "standalone", "no_python", "no-python", "module", "m", "run_path", "run-path", "multi_gpu", "use_deepspeed",
    "use_fsdp", "use_megatron_lm", "cpu", "no_local_rank", "no-local-rank", "force_multi", "bind_cores_to_rank",
    "autotune", "elastic_training", "debug", "quiet", "q", "tee", "enable_each_rank_log", "use_env",
    "join", "sim_level", "dynamo_backend",
}
REFERENCE_FLAGS = {"deepspeed", "deepspeed_config", "config", "config_file", "config_path", "ds_config",
                   "deepspeed_config_file", "yaml_cfg", "cfg"}
CONFIG_SUFFIXES = (".json", ".yaml", ".yml")
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL")
MEGATRON_HINTS = {"tensor_model_parallel_size", "pipeline_model_parallel_size", "micro_batch_size",
                  "global_batch_size", "num_layers", "seq_length", "lr_decay_style", "use_mcore_models",
                  "train_iters", "distributed_backend", "use_flash_attn", "num_attention_heads"}
HF_HINTS = {"per_device_train_batch_size", "learning_rate", "gradient_accumulation_steps", "num_train_epochs",
            "output_dir", "model_name_or_path", "do_train", "lr_scheduler_type", "warmup_ratio", "cutoff_len"}
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # one token: an environment variable name
HYDRA_RE = re.compile(r"^(\+\+|\+|~)?([A-Za-z_][\w\-]*(?:\.[\w\-]+)*)=(.*)$", re.S)  # one token


@lru_cache(maxsize=1)
def _parser():
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


# ------------------------------------------------------------------ values with provenance

@dataclass
class Seg:
    """A piece of text with the line it was written on and how it got here."""

    text: str
    line: int
    via: tuple = ()  # variable names it came through, outermost last
    unresolved: tuple = ()  # names that could not be resolved
    quoted: bool = False


@dataclass
class Word:
    segs: list = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segs)

    @property
    def line(self) -> int:
        for s in self.segs:
            if s.text.strip():
                return s.line
        return self.segs[0].line if self.segs else 0

    @property
    def via(self) -> tuple:
        out: list = []
        for s in self.segs:
            for v in s.via:
                if v not in out:
                    out.append(v)
        return tuple(out)

    @property
    def unresolved(self) -> tuple:
        out: list = []
        for s in self.segs:
            for v in s.unresolved:
                if v not in out:
                    out.append(v)
        return tuple(out)


@dataclass
class Var:
    kind: str  # scalar | array
    segs: list = field(default_factory=list)  # scalar
    words: list = field(default_factory=list)  # array
    line: int = 0
    exported: bool = False
    default_via: str | None = None


class Evaluator:
    def __init__(self, src, ctx):
        self.src = src
        self.ctx = ctx
        self.text = src.text
        self.data = self.text.encode("utf-8")
        self.lines = self.text.splitlines()
        self.vars: dict[str, Var] = {}
        self.facts: list[Fact] = []
        self.errors: list[InputError] = []
        self.references: list[tuple[str, int | None, str]] = []
        self.frameworks: set[str] = set()
        self.commented: dict[str, int] = {}  # flag -> line, from comments
        self.launches = 0
        self.functions: dict[str, object] = {}
        self.depth = 0

    # ----------------------------------------------------------- node helpers
    def t(self, node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def line_of(self, node) -> int:
        return node.start_point[0] + 1

    def src_line(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    # ----------------------------------------------------------- expansion
    def lookup(self, name: str) -> Var | None:
        return self.vars.get(name)

    def var_segs(self, name: str, node_line: int, quoted: bool) -> list[Seg]:
        var = self.lookup(name)
        if var is None:
            return [Seg(f"${name}", node_line, (), (name,), quoted)]
        if var.kind == "array":  # $ARR is its first element
            segs = var.words[0].segs if var.words else []
        else:
            segs = var.segs
        return [Seg(s.text, s.line, s.via + (name,), s.unresolved, s.quoted or quoted) for s in segs]

    def expansion(self, node, quoted: bool) -> list[list[Seg]] | list[Seg]:
        """${...}: returns a list of Seg (scalar) or a list of words (array [@])."""
        line = self.line_of(node)
        kids = [c for c in node.children if c.type not in ("${", "}")]
        if not kids:
            return [Seg(self.t(node), line, (), ("?",), quoted)]
        first = kids[0]
        if first.type == "#" and len(kids) > 1:  # ${#VAR}: length
            name = self.t(kids[1])
            v = self.lookup(name)
            if v is None:
                return [Seg(self.t(node), line, (), (name,), quoted)]
            n = len(v.words) if v.kind == "array" else len("".join(s.text for s in v.segs))
            return [Seg(str(n), line, (name,), (), quoted)]
        if first.type == "subscript":
            name_node = first.child_by_field_name("name")
            idx_node = first.child_by_field_name("index")
            name = self.t(name_node) if name_node else self.t(first)
            idx = self.t(idx_node) if idx_node else "0"
            v = self.lookup(name)
            if v is None:
                return [Seg(self.t(node), line, (), (name,), quoted)]
            words = v.words if v.kind == "array" else [Word(list(v.segs))]
            if idx in ("@", "*"):
                return [[Seg(s.text, s.line, s.via + (name,), s.unresolved, True) for s in w.segs] for w in words]
            try:
                w = words[int(idx)]
            except (ValueError, IndexError):
                return [Seg(self.t(node), line, (), (f"{name}[{idx}]",), quoted)]
            return [Seg(s.text, s.line, s.via + (name,), s.unresolved, quoted) for s in w.segs]
        if first.type in ("variable_name", "special_variable_name"):
            name = self.t(first)
            rest = kids[1:]
            op = self.t(rest[0]) if rest else ""
            v = self.lookup(name)
            if not rest:
                return self.var_segs(name, line, quoted)
            if op in (":-", "-", ":=", "="):
                empty = v is None or (v.kind == "scalar" and not "".join(s.text for s in v.segs))
                use_default = v is None if op in ("-", "=") else empty
                if not use_default:
                    return self.var_segs(name, line, quoted)
                segs: list[Seg] = []
                for c in rest[1:]:
                    segs.extend(self.concat_segs(c, quoted=True))
                shown = self.t(node)
                segs = [Seg(s.text, s.line, s.via + (shown if len(shown) < 40 else f"${{{name}{op}...}}",),
                            s.unresolved, quoted) for s in segs]
                if op in (":=", "="):
                    self.vars[name] = Var("scalar", segs=segs, line=line)
                return segs
            if op in (":+", "+"):
                if v is None:
                    return []
                segs = []
                for c in rest[1:]:
                    segs.extend(self.concat_segs(c, quoted=True))
                return segs
            return [Seg(self.t(node), line, (), (name,), quoted)]  # other operators: not evaluated
        return [Seg(self.t(node), line, (), (self.t(first),), quoted)]

    def concat_segs(self, node, quoted: bool = False) -> list[Seg]:
        """All of a node as one run of segments (no word splitting; arrays joined by spaces)."""
        out: list[Seg] = []
        for w in self.words(node, quoted=quoted, split=False):
            if out:
                out.append(Seg(" ", w.line, (), (), True))
            out.extend(w.segs)
        return out

    def string_segs(self, node) -> list:
        """A double-quoted string: segments, or words where "${ARR[@]}" expands to several."""
        parts: list = [[]]
        kids = list(node.children)
        prev_end = kids[0].end_byte if kids and kids[0].type == '"' else node.start_byte
        prev_row = node.start_point[0] + 1

        def literal(text: str, row: int) -> None:
            text = text.replace("\\\n", "\n").replace('\\"', '"').replace("\\$", "$").replace("\\`", "`")
            for i, piece in enumerate(text.split("\n")):
                if i:
                    parts[-1].append(Seg("\n", row + i - 1, (), (), True))
                if piece:
                    parts[-1].append(Seg(piece, row + i, (), (), True))

        for c in kids:
            if c.start_byte > prev_end:  # text tree-sitter leaves between children (newlines)
                gap = self.data[prev_end:c.start_byte].decode("utf-8", "replace")
                literal(gap, prev_row)
            prev_end = max(prev_end, c.end_byte)
            prev_row = c.end_point[0] + 1
            if c.type == '"':
                continue
            if c.type == "string_content":
                literal(self.t(c), c.start_point[0] + 1)
            elif c.type == "expansion":
                r = self.expansion(c, quoted=True)
                if r and isinstance(r[0], list):  # "${ARR[@]}": several words
                    for j, wsegs in enumerate(r):
                        if j:
                            parts.append([])
                        parts[-1].extend(wsegs)
                else:
                    parts[-1].extend(r)
            elif c.type == "simple_expansion":
                parts[-1].extend(self.simple(c, quoted=True))
            else:
                for w in self.words(c, quoted=True, split=False):
                    parts[-1].extend(w.segs)
        return parts

    def simple(self, node, quoted: bool) -> list[Seg]:
        name = self.t(node)[1:]
        if not NAME_RE.match(name):  # $1, $@, $*, $#, $$ ...
            return [Seg(self.t(node), self.line_of(node), (), (name,), quoted)]
        return self.var_segs(name, self.line_of(node), quoted)

    def arith(self, node):
        """$((...)) on known values; None when a value is unknown or not a number."""
        t = node.type
        if t in ("arithmetic_expansion", "parenthesized_expression", "expansion_arithmetic"):
            kids = [c for c in node.children if c.type not in ("$((", "))", "((", "(", ")", "$[", "]")]
            return self.arith(kids[0]) if len(kids) == 1 else None
        if t == "number":
            try:
                return int(self.t(node), 0)
            except ValueError:
                return None
        if t in ("variable_name", "simple_expansion", "expansion", "word"):
            if t == "word" and self.t(node).lstrip("-").isdigit():
                return int(self.t(node))
            name = self.t(node).lstrip("$").strip("{}")
            v = self.lookup(name)
            if v is None or v.kind != "scalar":
                self._arith_unresolved.add(name)
                return None
            val = "".join(s.text for s in v.segs).strip()
            self._arith_via.add(name)
            try:
                return int(val, 0)
            except ValueError:
                if any(s.unresolved for s in v.segs):
                    self._arith_unresolved.update(u for s in v.segs for u in s.unresolved)
                return None
        if t == "binary_expression":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            op = node.child_by_field_name("operator")
            opt = self.t(op) if op is not None else self.t(node.children[1])
            a, b = self.arith(left), self.arith(right)
            if a is None or b is None:
                return None
            try:
                return {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else None, "%": a % b if b else None,
                        "**": a ** b if 0 <= b < 64 else None}.get(opt)
            except (ZeroDivisionError, OverflowError):
                return None
        if t == "unary_expression" and node.child_count == 2:
            v = self.arith(node.children[1])
            return -v if v is not None and self.t(node.children[0]) == "-" else v
        return None

    def words(self, node, quoted: bool = False, split: bool = True) -> list[Word]:
        """The words a node expands to (bash word splitting for unquoted expansions)."""
        t = node.type
        line = self.line_of(node)
        if t in ("word", "number"):
            text = self.t(node)
            if "\\" in text:
                text = re.sub(r"\\(.)", r"\1", text)  # one token's escapes
            return [Word([Seg(text, line, (), (), quoted)])]
        if t == "raw_string":
            text = self.t(node)[1:-1]
            return [Word([Seg(piece, line + i, (), (), True) for i, piece in enumerate(text.split("\n")) if piece]
                         or [Seg("", line, (), (), True)])]
        if t == "ansi_c_string":
            return [Word([Seg(self.t(node)[2:-1], line, (), (), True)])]
        if t == "string":
            parts = self.string_segs(node)
            return [Word(p or [Seg("", line, (), (), True)]) for p in parts]
        if t in ("simple_expansion", "expansion"):
            r = self.simple(node, quoted) if t == "simple_expansion" else self.expansion(node, quoted)
            if r and isinstance(r[0], list):
                ws = [Word(x) for x in r]
                if split and not quoted:
                    out = []
                    for w in ws:
                        out.extend(split_words(w.segs))
                    return out
                return ws
            if split and not quoted:
                return split_words(r)
            return [Word(r)]
        if t == "arithmetic_expansion":
            self._arith_unresolved = set()
            self._arith_via = set()
            v = self.arith(node)
            if v is None:
                return [Word([Seg(self.t(node), line, tuple(self._arith_via), tuple(self._arith_unresolved) or ("$((...))",),
                                  quoted)])]
            return [Word([Seg(str(v), line, tuple(sorted(self._arith_via)), (), quoted)])]
        if t in ("command_substitution", "process_substitution"):
            return [Word([Seg(self.t(node), line, (), (self.t(node),), quoted)])]
        if t == "concatenation":
            acc: list[Word] = []
            for c in node.children:
                ws = self.words(c, quoted=quoted, split=split)
                if not ws:
                    continue
                if not acc:
                    acc = ws
                else:
                    acc[-1] = Word(acc[-1].segs + ws[0].segs)
                    acc.extend(ws[1:])
            return acc
        if t == "array":
            out = []
            for c in node.children:
                if c.type in ("(", ")", "comment"):
                    continue
                out.extend(self.words(c, quoted=False, split=True))
            return out
        return [Word([Seg(self.t(node), line, (), (), quoted)])]

    # ----------------------------------------------------------- statements
    def run(self, root) -> None:
        self.collect_comments(root)
        self.block(root.children)

    def block(self, nodes) -> None:
        nodes = list(nodes)
        i = 0
        while i < len(nodes):
            node = nodes[i]
            # `cmd \` + commented line + `--more flags`: bash ends the command at the comment; the
            # lines after it would run as a command named --flag. Read them as the author meant.
            if node.type == "command" and self.is_launcher(node):
                extra = []
                j = i + 1
                while j < len(nodes) and nodes[j].type in ("command", "comment"):
                    n2 = nodes[j]
                    if n2.type == "command":
                        nm = n2.child_by_field_name("name")
                        if nm is None or not self.t(nm).startswith("-"):
                            break
                        extra.append(n2)
                    j += 1
                if extra:
                    self.errors.append(InputError(self.src.name, (
                        f"line {self.line_of(extra[0])}: a comment line inside a continued command ends that "
                        f"command in bash; the flags after it were read as part of the launcher command")))
                    self.command(node, extra)
                    i = j
                    continue
            self.statement(node)
            i += 1

    def statement(self, node) -> None:
        t = node.type
        if t == "variable_assignment":
            self.assign(node)
        elif t == "declaration_command":
            self.declaration(node)
        elif t == "command":
            self.command(node)
        elif t == "unset_command":
            for c in node.children[1:]:
                self.vars.pop(self.t(c), None)
        elif t == "function_definition":  # evaluated where it is called
            nm = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            if nm is not None and body is not None:
                self.functions[self.t(nm)] = body
        elif t == "comment":
            return
        elif t == "ERROR":  # a region that did not parse: its well-formed statements still count
            self.block(c for c in node.children if c.type in STATEMENTS and not c.has_error)
        elif t == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is not None:
                self.statement(body)
        else:  # pipeline, list, subshell, if/for/while/case, compound statements: in order
            self.block(c for c in node.children if c.is_named)

    def assign(self, node, exported: bool = False) -> str | None:
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name_node is None:
            return None
        name = self.t(name_node)
        if name_node.type == "subscript":
            return None
        line = self.line_of(node)
        append = any(c.type == "+=" for c in node.children)
        old = self.vars.get(name)
        if value is not None and value.type == "array":
            ws = self.words(value)
            if append and old is not None and old.kind == "array":
                ws = old.words + ws
            self.vars[name] = Var("array", words=ws, line=line, exported=exported)
        else:
            segs = self.concat_segs(value, quoted=True) if value is not None else []
            if append and old is not None and old.kind == "scalar":
                segs = old.segs + segs
            self.vars[name] = Var("scalar", segs=segs, line=line, exported=exported or bool(old and old.exported))
        if exported or (old and old.exported):
            self.env_fact(name, node)
        return name

    def declaration(self, node) -> None:
        kw = self.t(node.children[0]) if node.children else ""
        exported = kw == "export" or any(self.t(c) in ("-x", "-gx", "-xg") for c in node.children[1:])
        for c in node.children[1:]:
            if c.type == "variable_assignment":
                self.assign(c, exported=exported)
            elif c.type == "variable_name" and exported:
                name = self.t(c)
                v = self.vars.get(name)
                if v is not None:
                    v.exported = True
                    self.env_fact(name, c)

    # ----------------------------------------------------------- environment
    def env_fact(self, name: str, node, value_segs=None) -> None:
        from ..envmap import canonical

        v = self.vars.get(name)
        segs = value_segs if value_segs is not None else (v.segs if v and v.kind == "scalar" else [])
        value = "".join(s.text for s in segs)
        unresolved = tuple(u for s in segs for u in s.unresolved)
        key, role = canonical(name)
        line = self.line_of(node)
        source = self.src_line(line)
        if any(w in name.upper() for w in SECRET_WORDS) or name.upper().endswith("_KEY"):
            value = "redacted:" + hashlib.blake2b(value.encode(), digest_size=6).hexdigest()
            source = f"export {name}=<redacted>"
        meta = {"name": name, "role": role}
        if key != f"env:{name}":
            meta["mask"] = "SD010"
        if unresolved:
            meta["unresolved"] = list(unresolved)
        via = None
        vias = [x for s in segs for x in s.via]
        if vias:
            via = "$" + vias[-1]
        f = Fact(key=key, value=value, check="environment", path=self.src.name, line=line, source=source,
                 rank=RANK_SCRIPT, via=via, meta=meta)
        self.facts.append(f)

    # ----------------------------------------------------------- commands
    def cmd_words(self, node, extra=()) -> tuple[list[Word], list]:
        """The command's words after expansion, and its prefix assignments."""
        words: list[Word] = []
        prefix = []
        for c in list(node.children) + [x for e in extra for x in e.children]:
            if c.type == "variable_assignment":
                prefix.append(c)
            elif c.type in ("command_name",):
                words.extend(self.words(c.children[0]) if c.children else [])
            elif c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect", "comment"):
                continue
            elif c.is_named:
                words.extend(self.words(c))
        return words, prefix

    def is_launcher(self, node) -> bool:
        nm = node.child_by_field_name("name")
        if nm is None:
            return False
        base = os.path.basename(self.t(nm).strip("'\""))
        return base in LAUNCHERS or base.startswith("python")

    def command(self, node, extra=()) -> None:
        words, prefix = self.cmd_words(node, extra)
        if not words:
            for p in prefix:
                self.assign(p)
            return
        name = os.path.basename(words[0].text)
        if words[0].text in self.functions and self.depth < 8:
            self.depth += 1
            try:
                self.statement(self.functions[words[0].text])
            finally:
                self.depth -= 1
            return
        if name in ("source", ".") and len(words) > 1:
            self.sourced(words[1], node)
            return
        if name == "export":  # export written as a plain command (rare)
            return
        if not (name in LAUNCHERS or re.fullmatch(r"python[\d.]*", name)):
            return
        for p in prefix:  # VAR=x torchrun ...: environment of the launcher
            pname = p.child_by_field_name("name")
            pval = p.child_by_field_name("value")
            if pname is not None:
                segs = self.concat_segs(pval, quoted=True) if pval is not None else []
                self.env_fact(self.t(pname), p, segs)
        self.launch(words, node)

    def sourced(self, word: Word, node) -> None:
        path = word.text
        base = os.path.basename(path)
        role = "npu_tuning" if ("ascend" in path.lower() or base in ("set_env.sh", "setenv.sh")
                                or "cann" in path.lower()) else "plain"
        line = self.line_of(node)
        self.facts.append(Fact(key=f"env:source {base}", value=path, check="environment", path=self.src.name,
                               line=line, source=self.src_line(line), rank=RANK_SCRIPT,
                               meta={"name": f"source {base}", "role": role, "sourced": True}))

    def launch(self, words: list[Word], node) -> None:
        texts = [w.text for w in words]
        name = os.path.basename(texts[0])
        i = 1
        launcher = name
        ws_parts: dict[str, Word] = {}
        if name == "accelerate":
            if len(texts) < 2 or texts[1] != "launch":
                return
            i = 2
        if name == "llamafactory-cli":  # llamafactory-cli train config.yaml [key=value ...]
            if len(texts) < 2 or texts[1] not in ("train", "sft", "pt", "rm", "ppo", "dpo", "kto"):
                return
            self.frameworks.add("hf")
            self.script_args(texts[1], words[2:], words[1])
            self.launches += 1
            return
        if name.startswith("python") or name == "mpirun":
            # python [-u] [-m module] script args
            while i < len(texts) and texts[i].startswith("-") and texts[i] not in ("-m",):
                i += 1
            if i < len(texts) and texts[i] == "-m" and i + 1 < len(texts):
                mod = texts[i + 1]
                if mod in DIST_MODULES:
                    launcher = "torchrun"
                    i += 2
                else:
                    self.script_args(mod, words[i + 2:], words[i + 1], module=True)
                    self.launches += 1
                    return
            elif name == "mpirun":
                return
        if launcher != name or name in ("torchrun", "deepspeed", "accelerate", "msrun"):
            # launcher options up to the script
            while i < len(texts):
                tok = texts[i]
                if not tok.startswith("-") or tok == "--":
                    if tok == "--":
                        i += 1
                    break
                opt, eq, val = tok.lstrip("-").partition("=")
                optn = opt.replace("-", "_")
                if eq:
                    ws_parts[optn] = tail_word(words[i], len(tok) - len(val))
                    i += 1
                    continue
                if opt in LAUNCHER_FLAGS or optn in LAUNCHER_FLAGS or i + 1 >= len(texts) \
                        or texts[i + 1].startswith("-") or texts[i + 1].endswith(".py"):
                    ws_parts[optn] = Word([Seg("true", words[i].line)])
                    i += 1
                    continue
                ws_parts[optn] = words[i + 1]
                i += 2
            self.launcher_facts(launcher, ws_parts, node)
            if ws_parts.get("module") is not None and i < len(texts):
                self.script_args(texts[i], words[i + 1:], words[i], module=True)
                self.launches += 1
                return
        if i >= len(texts):
            return
        self.script_args(texts[i], words[i + 1:], words[i])
        self.launches += 1

    def launcher_facts(self, launcher: str, opts: dict[str, Word], node) -> None:
        def num(w: Word | None):
            if w is None:
                return None
            try:
                return int(w.text)
            except ValueError:
                return None

        line = self.line_of(node)
        parts = []
        total = None
        if launcher in ("torchrun",):
            nproc = opts.get("nproc_per_node")
            nnodes = opts.get("nnodes")
            if nproc is not None:
                parts = [nproc] + ([nnodes] if nnodes is not None else [])
                a, b = num(nproc), num(nnodes) if nnodes is not None else 1
                if nnodes is not None and b is None and ":" in nnodes.text:  # elastic min:max
                    b = None
                total = a * b if a is not None and b is not None else None
                formula = "nproc_per_node * nnodes"
        elif launcher == "deepspeed":
            ng = opts.get("num_gpus")
            nn = opts.get("num_nodes")
            inc = opts.get("include")
            if ng is not None:
                parts = [ng] + ([nn] if nn is not None else [])
                a, b = num(ng), num(nn) if nn is not None else 1
                total = a * b if a is not None and b is not None else None
                formula = "num_gpus * num_nodes"
            elif inc is not None and "@" not in inc.text and ":" in inc.text:
                parts = [inc]
                total = len(inc.text.split(":", 1)[1].split(","))
                formula = "devices in --include"
        elif launcher == "accelerate":
            np_ = opts.get("num_processes")
            if np_ is not None:
                parts = [np_]
                total = num(np_)
                formula = "num_processes"
        elif launcher == "msrun":
            wn = opts.get("worker_num")
            if wn is not None:
                parts = [wn]
                total = num(wn)
                formula = "worker_num"
        if parts:
            unresolved = [u for w in parts for u in w.unresolved]
            value = total if total is not None else " * ".join(w.text for w in parts)
            meta = {"unresolved": unresolved} if unresolved else {}
            fline = parts[0].line or line
            self.facts.append(Fact(key="world_size", value=value, path=self.src.name, line=fline,
                                   source=self.src_line(fline), rank=RANK_SCRIPT,
                                   via=formula + (f" ({_via(parts[0].via)})" if parts[0].via else ""), meta=meta))
        for k in ("master_port", "master_addr", "main_process_port", "main_process_ip"):
            w = opts.get(k)
            if w is not None:
                key = {"main_process_port": "master_port", "main_process_ip": "master_addr"}.get(k, k)
                from ..checks.hparams import convert

                self.facts.append(self.make_fact(key, convert(key, w.text)[1], w, key_text=f"--{k}"))
        for k in ("mixed_precision",):
            w = opts.get(k)
            if w is not None:
                self.add_hparam("mixed_precision", w.text, w, f"--{k}")
        for k in ("config_file", "deepspeed_config_file"):
            w = opts.get(k)
            if w is not None:
                self.reference(k, w)

    # ----------------------------------------------------------- training-script options
    def script_args(self, script: str, words: list[Word], script_word: Word, module: bool = False) -> None:
        base = os.path.basename(script)
        flags = []
        hydra = []
        i = 0
        while i < len(words):
            w = words[i]
            tok = w.text
            if tok in ("\\", ""):
                i += 1
                continue
            if tok.startswith("--") and len(tok) > 2:
                name, eq, val = tok[2:].partition("=")
                if eq:
                    vw = tail_word(w, len(tok) - len(val))
                    flags.append((name, [vw], w))
                    i += 1
                    continue
                vals = []
                j = i + 1
                while j < len(words) and not _is_option(words[j].text):
                    if words[j].text not in ("\\", ""):
                        if HYDRA_RE.match(words[j].text) and "." in words[j].text.split("=", 1)[0]:
                            break
                        vals.append(words[j])
                    j += 1
                flags.append((name, vals, w))
                i = j
                continue
            m = HYDRA_RE.match(tok)
            if m and not tok.startswith("-"):
                hydra.append((m.group(2), m.group(3), w))
            elif tok.lower().endswith(CONFIG_SUFFIXES) and not tok.startswith("-"):
                self.reference("config", w)  # a positional config: `llamafactory-cli train x.yaml`
            i += 1
        names = {n.replace("-", "_") for n, _, _ in flags}
        megatron = base.startswith(("pretrain_", "posttrain_", "finetune_")) or len(names & MEGATRON_HINTS) >= 2 \
            or any("-" in n for n, _, _ in flags)
        hf = len(names & HF_HINTS) >= 1 and not base.startswith("pretrain_")
        if megatron and not (hf and not any("-" in n for n, _, _ in flags)):
            self.frameworks.add("megatron")
            prefer = "megatron"
        elif hf:
            self.frameworks.add("hf")
            prefer = "hf"
        else:
            prefer = "megatron"
        for name, vals, w in flags:
            self.flag(name, vals, w, prefer)
        for path, val, w in hydra:
            self.hydra(path, val, w)

    def flag(self, name: str, vals: list[Word], w: Word, prefer: str) -> None:
        from ..checks.hparams import canonical_flag

        dest = name.replace("-", "_")
        if vals:
            vw = Word([s for v in vals for s in (v.segs + [Seg(" ", v.line)])][:-1]) if len(vals) > 1 else vals[0]
            raw = vw.text
        else:
            vw = w
            raw = True
        if dest in REFERENCE_FLAGS and isinstance(raw, str) and raw.lower().endswith(CONFIG_SUFFIXES):
            self.reference(dest, vw, flag_word=w)
            return
        if dest in ("bf16", "fp16"):
            on = raw is True or str(raw).lower() in ("true", "1", "yes")
            if on:
                self.add_hparam("params_dtype", dest, vw, f"--{name}", flag_word=w)
            return
        key = canonical_flag(dest, prefer)
        if key is None and dest.startswith("no_"):
            pos = canonical_flag(dest[3:], prefer)
            if raw is True:
                self.add_hparam(pos or dest[3:], False, w, f"--{name}", flag_word=w)
                return
        self.add_hparam(key or dest, raw, vw, f"--{name}", flag_word=w)

    def hydra(self, path: str, val: str, w: Word) -> None:
        from ..checks.hparams import canonical_path

        key = canonical_path(path, "hydra") or path
        vw = tail_word(w, len(w.text) - len(val))
        if path.rsplit(".", 1)[-1] in REFERENCE_FLAGS and val.lower().endswith(CONFIG_SUFFIXES):
            self.reference(path, vw)
            return
        self.add_hparam(key, _hydra_value(val), vw, path, flag_word=w)

    def add_hparam(self, key: str, raw, vw: Word, flag_text: str, flag_word: Word | None = None) -> None:
        from ..checks.hparams import convert

        if key in ("mixed_precision", "torch_dtype"):
            key = "params_dtype"
        conv = convert(key, raw)
        if conv is None:
            return
        key, value = conv
        self.facts.append(self.make_fact(key, value, vw, flag_word=flag_word, key_text=flag_text))

    def make_fact(self, key, value, vw: Word, flag_word: Word | None = None, key_text: str = "") -> Fact:
        via = _via(vw.via)
        line = vw.line or (flag_word.line if flag_word else 0)
        meta = {}
        if vw.unresolved:
            meta["unresolved"] = list(vw.unresolved)
        if key == "distributed_backend" and self.ctx is not None and getattr(self.ctx, "side", "") == "npu" \
                and str(value).lower() == "nccl":
            meta["mask"] = "SD011"
        return Fact(key=key, value=value, path=self.src.name, line=line, source=self.src_line(line),
                    rank=RANK_SCRIPT, via=via, meta=meta)

    def reference(self, key: str, vw: Word, flag_word: Word | None = None) -> None:
        path = vw.text
        line = vw.line
        self.references.append((path, line, key))
        exists = self._ref_exists(path)
        self.facts.append(Fact(key=f"config:{key}", value=os.path.basename(path), path=self.src.name, line=line,
                               source=self.src_line(line), rank=RANK_SCRIPT,
                               via=("$" + vw.via[-1]) if vw.via else None,
                               meta={"reference": True, "exists": exists, "written": path, "force": True}))

    def _ref_exists(self, ref: str) -> bool:
        if not self.src.origin:
            return False
        base = os.path.dirname(self.src.origin)
        p = ref if os.path.isabs(ref) else os.path.join(base, ref)
        return os.path.isfile(p) or os.path.isfile(os.path.join(base, os.path.basename(ref)))

    # ----------------------------------------------------------- comments
    def collect_comments(self, root) -> None:
        """Flags in comments (`# --seed 42`, `#--use-flash-attn \\`): commented out on this side."""
        stack = [root]
        while stack:
            n = stack.pop()
            if n.type == "comment":
                self.comment_flags(self.t(n).lstrip("#"), self.line_of(n))
            elif n.type in ("string", "raw_string"):
                # multi-line strings holding flags: a line starting with # is a comment there
                for i, ln in enumerate(self.t(n).split("\n")):
                    s = ln.strip().lstrip("'\"")
                    if s.startswith("#"):
                        self.comment_flags(s.lstrip("#"), n.start_point[0] + 1 + i)
            stack.extend(n.children)

    def comment_flags(self, text: str, line: int) -> None:
        from ..checks.hparams import canonical_flag

        toks = text.replace("\\", " ").split()
        for j, tok in enumerate(toks):
            if tok.startswith("--") and len(tok) > 2:
                name = tok[2:].split("=", 1)[0]
                dest = name.replace("-", "_")
                if dest in ("bf16", "fp16"):
                    key = "params_dtype"
                else:
                    key = canonical_flag(dest) or canonical_flag(dest, "hf") or dest
                self.commented.setdefault(key, line)

    def commented_facts(self) -> list[Fact]:
        have = {f.key for f in self.facts}
        out = []
        for key, line in sorted(self.commented.items()):
            if key in have:
                continue
            out.append(Fact(key=key, value=None, path=self.src.name, line=line, source=self.src_line(line),
                            rank=-1, note=f"commented out at line {line}", meta={"commented": True}))
        return out


def tail_word(w: Word, start: int) -> Word:
    """The part of a word from character `start` on, keeping each piece's line and variables."""
    out = []
    pos = 0
    for sg in w.segs:
        end = pos + len(sg.text)
        if end > start:
            cut = max(0, start - pos)
            out.append(Seg(sg.text[cut:], sg.line, sg.via, sg.unresolved, sg.quoted))
        pos = end
    return Word(out or [Seg("", w.line)])


def _via(names: tuple) -> str | None:
    """'$LR', or '$LR in $ARGS' when the value came through a variable inside another."""
    if not names:
        return None
    shown = [n if n.startswith("${") else "$" + n for n in names]
    return shown[0] + "".join(f" in {x}" for x in shown[1:])


def _is_option(tok: str) -> bool:
    if not tok.startswith("-") or tok == "-":
        return False
    from ..compare import to_number

    return not isinstance(to_number(tok), (int, float))  # -1, -1e-3 are values


def _hydra_value(val: str):
    v = val.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    if v.startswith("[") and v.endswith("]"):
        from ..compare import to_number

        inner = v[1:-1].strip()
        return [to_number(x.strip().strip("'\"")) for x in inner.split(",")] if inner else []
    return v


def split_words(segs: list[Seg]) -> list[Word]:
    """Bash word splitting (IFS = blank, tab, newline) of an unquoted expansion's segments.

    Lines that start with # inside the value are comments; a lone backslash is a leftover
    line continuation and is dropped."""
    words: list[Word] = []
    cur: list[Seg] = []
    line_start = True
    skip_line = False
    for s in segs:
        buf = ""
        for ch in s.text:
            if ch == "\n":
                skip_line = False
            if skip_line:
                if ch == "\n":
                    line_start = True
                continue
            if ch in " \t\n":
                if buf:
                    cur.append(Seg(buf, s.line, s.via, s.unresolved, s.quoted))
                    buf = ""
                if cur:
                    w = Word(cur)
                    if w.text != "\\":
                        words.append(w)
                    cur = []
                if ch == "\n":
                    line_start = True
                continue
            if ch == "#" and line_start and not buf and not cur and len(segs) > 0 and _multiline(segs):
                skip_line = True
                continue
            line_start = False
            buf += ch
        if buf:
            cur.append(Seg(buf, s.line, s.via, s.unresolved, s.quoted))
    if cur:
        w = Word(cur)
        if w.text != "\\":
            words.append(w)
    return words


def _multiline(segs: list[Seg]) -> bool:
    return any("\n" in s.text for s in segs)


def extract(src, ctx):
    from ..model import Extract

    ex = Extract()
    try:
        parser = _parser()
    except Exception as e:  # tree-sitter missing or broken: text comparison still runs
        ex.errors.append(InputError(src.name, f"cannot parse shell (tree-sitter-bash unavailable: {e})"))
        return ex
    ev = Evaluator(src, ctx)
    tree = parser.parse(ev.data)
    root = tree.root_node
    if root.has_error:
        bad = _error_lines(root)
        where = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in bad[:5]) + (" ..." if len(bad) > 5 else "")
        ex.errors.append(InputError(src.name, f"shell syntax error at line(s) {where}; those lines were not "
                                              f"analysed, the rest of the script was"))
    ev.run(root)
    if ev.launches == 0:
        ex.errors.append(InputError(src.name, "no launcher command (torchrun, deepspeed, accelerate launch, msrun, "
                                              "python) found; only environment exports were read"))
    ex.facts = ev.facts + ev.commented_facts()
    ex.errors.extend(ev.errors)
    ex.references = ev.references
    ex.frameworks = ev.frameworks
    return ex


def _error_lines(root) -> list[tuple[int, int]]:
    """Line ranges that did not parse: inside an ERROR node, whatever is not a whole statement."""
    lines: set[int] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if n.is_missing:
            lines.add(n.start_point[0] + 1)
            continue
        if n.type == "ERROR":
            for c in n.children:
                if c.type in STATEMENTS and not c.has_error:
                    continue
                if c.has_error and c.type != "ERROR" and c.child_count:
                    stack.append(c)
                lines.update(range(c.start_point[0] + 1, c.end_point[0] + 2))
            if not n.children:
                lines.add(n.start_point[0] + 1)
            continue
        if n.has_error:
            stack.extend(n.children)
    out: list[tuple[int, int]] = []
    for ln in sorted(lines):
        if out and ln == out[-1][1] + 1:
            out[-1] = (out[-1][0], ln)
        else:
            out.append((ln, ln))
    return out

"""The statements of a launch script, evaluated in order (never executed).

Assignments (`VAR=...`, `+=`, arrays), `export` / `declare` / `local` / `readonly`, `unset`,
functions (evaluated where they are called), control structures in order, and commands: a
launcher command goes to the LaunchReader, with its `VAR=x` prefixes as environment; a
command that a comment line cut in two is rejoined. The variables live here; expansion is
the Expander's job. A value over an evaluation budget (scriptdiff/budget.py) becomes one
"too large to evaluate" segment, said once in the input's account; a command whose words
are over it is not read; the rest of the script is.

A launch is read whatever carries it (rules/shell.yaml `launchers.commands`): a command held
in a variable or an array (`$CMD`, `"${ARGS[@]}"`: its words are the command's), a string
run by `eval $cmd` or `bash -c "$cmd"` (its value is parsed again with tree-sitter-bash and
evaluated, each word keeping the line and variables it came from), a wrapper (`nohup`,
`env A=1`, `time`, `numactl ...`) before the launcher, and a fragment `source ./args.sh` /
`. args.sh` names (found as a referenced config is, within the side, and evaluated in place:
its variables and exports are the script's, its facts name it and its lines). `echo $cmd`
prints a command and runs nothing.
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache

from ... import budget
from ...budget import TOO_LARGE_TEXT, TooLarge
from ...inputs import flags
from ...model import InputError
from ...inputs.references import DiskResolver, source_identity
from ...inputs.sources import SourceError
from .comments import commented_flags
from . import install
from .env import env_fact, sourced_fact
from .launch import LaunchReader
from .launchers import table
from .record import Record
from .specialise import Devices, branches, case_body
from .words import Expander, Origin, Seg, Var, Word, split_words, tail_word


@lru_cache(maxsize=1)
def parser():
    """The tree-sitter-bash parser (ImportError or OSError when it is not installed)."""
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))

STATEMENTS = {"variable_assignment", "declaration_command", "command", "pipeline", "list", "subshell",
              "if_statement", "for_statement", "c_style_for_statement", "while_statement", "case_statement",
              "function_definition", "redirected_statement", "compound_statement", "comment", "unset_command",
              "negated_command", "test_command"}


class Evaluator:
    """Walks a script's statements in order, keeping its variables, and records facts on `rec`."""

    def __init__(self, rec: Record, data: bytes):
        self.rec = rec
        self.vars: dict[str, Var] = {}
        self.x = Expander(data, self.vars)
        self.table = table()
        self.launcher = LaunchReader(rec, self.table)
        self.installer = install.InstallReader(rec)
        self.functions: dict[str, tuple] = {}  # name -> (body node, the text it is in: Expander.state)
        self.depth = 0
        # the script and the fragments being read, innermost last: one that sources any of them is not read again
        self.sourcing: list[str] = [source_identity(rec.src)] if getattr(rec.src, "origin", None) else []
        # device tests decided for this side's device (specialise.py)
        rec.devices = self.devices = Devices(self.x, getattr(rec.ctx, "side", "gpu"))
        self.devices.at = rec.at

    def run(self, root) -> None:
        self.block(root.children)

    def block(self, nodes) -> None:
        x = self.x
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
                        if nm is None or not flags.dashed(x.t(nm)):
                            break
                        extra.append(n2)
                    j += 1
                if extra:
                    self.rec.errors.append(InputError(self.rec.src.name, (
                        f"{self.rec.at(x.line_of(extra[0]))}: a comment line inside a continued command ends "
                        f"that command in bash; the flags after it were read as part of the launcher command")))
                    self.command(node, extra)
                    i = j
                    continue
            try:
                self.statement(node)
            except TooLarge as e:  # a command's words (an assignment marks its variable itself)
                self.rec.over_budget(f"the command at {self.rec.at(x.line_of(node))}", e, x.line_of(node))
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
                self.vars.pop(self.x.t(c), None)
        elif t == "function_definition":  # evaluated where it is called
            nm = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            if nm is not None and body is not None:
                self.functions[self.x.t(nm)] = (body, self.x.state)
        elif t == "comment":
            return
        elif t == "ERROR":  # a region that did not parse: its well-formed statements still count
            self.block(c for c in node.children if c.type in STATEMENTS and not c.has_error)
        elif t == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is not None:
                self.statement(body)
        elif t in ("if_statement", "case_statement", "list") and self.device_branch(node):
            return
        else:  # pipeline, list, subshell, if/for/while/case, compound statements: in order
            self.block(c for c in node.children if c.is_named)

    # ----------------------------------------------------------- device tests
    def device_branch(self, node) -> bool:
        """for_device, and a defect there is no lost script: the statement is read as written."""
        try:
            return self.for_device(node)
        except RecursionError:
            raise
        except Exception as e:  # never a traceback: said once, the rest of the script still read
            self.rec.errors.append(InputError(self.rec.src.name, f"{self.rec.at(self.x.line_of(node))}: device test "
                                                                 f"not read ({type(e).__name__}); read as written"))
            return False

    def for_device(self, node) -> bool:
        """A branch on the device, decided for this side: the live branch run, the others set
        aside (True); a statement that is no device test, or one that cannot be decided: False."""
        d = self.devices
        if node.type == "if_statement":
            clauses = branches(node)
            live = -1
            for i, (cond, _body, _clause) in enumerate(clauses):
                if cond is None:
                    live = i
                    break
                v = d.condition(cond)
                if v is None or not d.hits:
                    d.record(cond[-1] if cond else node, v)
                    for c, b, _cl in clauses:  # as written: every branch in order, the conditions no tests of their own
                        d.quiet += 1
                        try:
                            self.block(c or [])
                        finally:
                            d.quiet -= 1
                        self.block(b)
                    return True
                d.record(cond[-1], v)
                if v:
                    live = i
                    break
            for i, (cond, body, clause) in enumerate(clauses):
                if i != live:
                    d.set_aside([clause] if i else (cond or [])[:1] + body)
            if live >= 0:
                self.block(clauses[live][1])
            return True
        if node.type == "case_statement":
            got = d.case(node)
            if got is None:
                d.record(node, None)
                return False
            live, items = got
            d.record(node, True)
            d.set_aside([it for i, it in enumerate(items) if i != live])
            if live >= 0:
                self.block(case_body(items[live]))
            return True
        kids = [c for c in node.children if c.is_named]  # a && b, a || b
        ops = [c.type for c in node.children if not c.is_named and c.type in ("&&", "||")]
        if len(kids) != 2 or len(ops) != 1 or d.quiet:
            return False
        d.hits = []
        v = d.test(kids[0])
        if v is None or not d.hits:
            d.record(kids[0], v)
            return False
        d.record(kids[0], v)
        if v == (ops[0] == "&&"):
            self.statement(kids[1])
        else:
            d.set_aside([kids[1]])
        return True

    # ----------------------------------------------------------- assignments
    def assign(self, node, exported: bool = False) -> str | None:
        x = self.x
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name_node is None:
            return None
        name = x.t(name_node)
        if name_node.type == "subscript":
            return None
        line = x.line_of(node)
        append = any(c.type == "+=" for c in node.children)
        old = self.vars.get(name)
        array = value is not None and value.type == "array"
        try:
            if array:
                ws = x.words(value)
                if append and old is not None and old.kind == "array":
                    ws = old.words + ws
                x.meter.value(sum(len(sg.text) for w in ws for sg in w.segs), len(ws))
                too_large = any(sg.text == TOO_LARGE_TEXT for w in ws for sg in w.segs)
            else:
                segs = x.concat_segs(value, quoted=True) if value is not None else []
                if append and old is not None and old.kind == "scalar":
                    segs = old.segs + segs
                x.charge(segs)
                too_large = any(sg.text == TOO_LARGE_TEXT for sg in segs)
        except TooLarge as e:
            self.rec.over_budget(f"${name}", e, line)
            too_large = True
        if too_large:  # built from a value too large to evaluate: one marker, never a doubling of it
            marker = [Seg(TOO_LARGE_TEXT, line, (), (name,), True)]
            ws, segs = [Word(marker)], marker
        if array:
            self.vars[name] = Var("array", words=ws, line=line, exported=exported)
        else:
            self.vars[name] = Var("scalar", segs=segs, line=line, exported=exported or bool(old and old.exported))
        if exported or (old and old.exported):
            self.export(name, node)
        return name

    def declaration(self, node) -> None:
        x = self.x
        kw = x.t(node.children[0]) if node.children else ""
        exported = kw == "export" or any(x.t(c) in ("-x", "-gx", "-xg") for c in node.children[1:])
        for c in node.children[1:]:
            if c.type == "variable_assignment":
                self.assign(c, exported=exported)
            elif c.type == "variable_name" and exported:
                name = x.t(c)
                v = self.vars.get(name)
                if v is not None:
                    v.exported = True
                    self.export(name, c)

    def export(self, name: str, node) -> None:
        """The environment fact of exported variable `name`, with its current value."""
        v = self.vars.get(name)
        env_fact(self.rec, name, self.x.line_of(node), v.segs if v and v.kind == "scalar" else [])

    # ----------------------------------------------------------- commands
    def cmd_words(self, node, extra=()) -> tuple[list[Word], list]:
        """The command's words after expansion, and its prefix assignments."""
        x = self.x
        words: list[Word] = []
        prefix = []
        for c in list(node.children) + [n for e in extra for n in e.children]:
            if c.type == "variable_assignment":
                prefix.append(c)
            elif c.type in ("command_name",):
                words.extend(x.words(c.children[0]) if c.children else [])
            elif c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect", "comment"):
                continue
            elif c.is_named:
                words.extend(x.words(c))
        return words, prefix

    def is_launcher(self, node) -> bool:
        nm = node.child_by_field_name("name")
        if nm is None:
            return False
        return self.table.looks_like(os.path.basename(self.x.t(nm).strip("'\"")))

    def command(self, node, extra=()) -> None:
        x = self.x
        words, prefix = self.cmd_words(node, extra)
        if not words:
            for p in prefix:
                self.assign(p)
            return
        env = []  # VAR=x prefixes: (name, value segments, line)
        for p in prefix:
            pname = p.child_by_field_name("name")
            pval = p.child_by_field_name("value")
            if pname is not None:
                env.append((x.t(pname), x.concat_segs(pval, quoted=True) if pval is not None else [], x.line_of(p)))
        self.run_words(words, x.line_of(node), env)

    def run_words(self, words: list[Word], line: int, env: list) -> None:
        """A command, from its words on: a function call, a fragment sourced, a command string
        read again, a wrapper's command, a launcher, or something else (an unknown launcher is
        said when it passes training-like options)."""
        t = self.table
        name = os.path.basename(words[0].text)
        if words[0].text in self.functions and self.depth < budget.SHELL_DEPTH:
            body, state = self.functions[words[0].text]
            self.depth += 1
            try:
                with self.x.reading(*state):
                    self.statement(body)
            finally:
                self.depth -= 1
            return
        if name in t.sourcing and len(words) > 1:
            self.source(words[1], line)
            return
        if name == "export" or name in t.printers:  # export as a plain command (rare); echo $cmd prints it
            return
        if name in t.evaluators:  # eval $cmd: the words, joined, are shell read again
            self.evaluate(words[1:], line)
            return
        if name in t.shells and len(words) > 2 and words[1].text == "-c":  # bash -c "$cmd"
            self.evaluate(words[2:3], line)
            return
        if name in t.wrappers:  # nohup / env A=1 / numactl ... torchrun: the command after it
            rest, more = self.unwrap(name, words[1:])
            if rest and self.depth < budget.SHELL_DEPTH:
                self.depth += 1
                try:
                    self.run_words(rest, line, env + more)
                finally:
                    self.depth -= 1
            return
        entry = t.find(name)
        hit = install.match(words, interpreter=entry is not None and entry.program == "interpreter")
        if hit is not None:  # pip install -r requirements_gpu.txt, conda create ... python=3.10
            self.installer.read(hit[0], hit[1], line)
            return
        if entry is None:
            texts = [w.text for w in words]
            wraps = any(tx == flags.END and i + 1 < len(texts) and t.looks_like(os.path.basename(texts[i + 1]))
                        for i, tx in enumerate(texts))  # ray job submit ... -- python3 -m ...
            self.rec.unknown_command(words, line, wraps)
            return
        # the launcher's environment: the script's exported variables, then its `VAR=x` prefixes
        envw = {k: Word(list(v.segs)) for k, v in self.vars.items() if v.exported and v.kind == "scalar"}
        # prefixes the launcher reads as its options (NPROC_PER_NODE=8 swift sft) give world_size and
        # master_port facts, not environment facts as well
        consumed = {n for n in entry.environment if n.lower() in entry.world_size or n.lower() in t.shared_facts}
        for pname, segs, pline in env:  # VAR=x torchrun ...: environment of the launcher
            if pname not in consumed:
                env_fact(self.rec, pname, pline, segs)
            envw[pname] = Word(segs or [Seg("", pline)])
        self.launcher.launch(words, line, envw)

    def unwrap(self, name: str, words: list[Word]) -> tuple[list[Word], list]:
        """The command a wrapper runs (its own options and positional words skipped) and the
        environment it gives it (`env A=1 B=2 cmd`: A and B)."""
        valued, positional = self.table.wrappers[name]
        env = []
        i = len(words)
        for item in flags.scan([w.text for w in words], 0, lambda f, _next: f.name in valued):
            if item.flag is not None:
                continue
            tx = words[item.at].text
            if not item.end and name == "env" and "=" in tx and tx.split("=", 1)[0].isidentifier():
                env.append((tx.split("=", 1)[0], tail_word(words[item.at], len(tx.split("=", 1)[0]) + 1).segs,
                            words[item.at].line))
                continue
            i = item.at + 1 if item.end else item.at
            break
        i += positional
        return words[i:], env

    def evaluate(self, words: list[Word], line: int) -> None:
        """`eval WORDS` / `bash -c STRING`: the words joined by blanks (split as bash splits an
        unquoted value; a `#` line of a multi-line value is a comment) are parsed again with
        tree-sitter-bash and evaluated here, each word keeping the line and variables it came
        from. A string that does not parse is read as far as it does, and said."""
        parts = [sw for w in words for sw in split_words(w.segs)]
        if not parts or self.depth >= budget.SHELL_DEPTH \
                or any(sg.text == TOO_LARGE_TEXT for w in parts for sg in w.segs):
            return
        data, origin = Origin.of(parts)
        try:
            tree = parser().parse(data)
        except Exception as e:  # tree-sitter unavailable: said once by the reader already
            self.rec.errors.append(InputError(self.rec.src.name, f"{self.rec.at(line)}: the command string was not "
                                                                 f"read ({type(e).__name__})"))
            return
        if tree.root_node.has_error:
            self.rec.errors.append(InputError(self.rec.src.name, (
                f"{self.rec.at(line)}: the command string it runs is not valid shell "
                f"({data.decode('utf-8', 'replace')[:60]}); the statements that parsed were read")))
        self.depth += 1
        try:
            with self.x.reading(data, self.x.base, origin):
                self.block(c for c in tree.root_node.children if c.type != "ERROR" or c.children)
        finally:
            self.depth -= 1

    def source(self, word: Word, line: int) -> None:
        """`source FILE` / `. FILE`: a fragment of the script. A relative path is found as a
        referenced config is, within this side (its resolver: beside the script, the repository
        root, the working directory inside it) and evaluated in place; an absolute path (the
        CANN set_env.sh), a path built from an unknown variable, or one found nowhere is only
        recorded as sourced (an environment fact), and the account says why."""
        path = word.text
        rec = self.rec
        if not path or word.unresolved or os.path.isabs(path) or path.startswith("~") \
                or self.depth >= budget.SHELL_DEPTH or len(self.sourcing) > budget.SHELL_DEPTH:
            sourced_fact(rec, path, line)
            return
        src = self.fragment(path, line)
        if src is None:
            sourced_fact(rec, path, line)
            return
        ident = rec.sourced[-1][2]
        if ident in self.sourcing:  # a fragment that sources itself: read once
            return
        try:
            tree = parser().parse(src.data)
        except Exception:  # tree-sitter unavailable: the script itself said so
            return
        base = rec.add_file(src)
        root = tree.root_node
        if root.has_error:
            rec.errors.append(InputError(src.name, "shell syntax error in a sourced fragment; the statements that "
                                                   "parsed were read"))
        for key, ln in commented_flags(root, src.data).items():
            rec.commented.setdefault(key, ln + base)
        self.sourcing.append(ident)
        self.depth += 1
        try:
            with self.x.reading(src.data, base, None):
                self.block(root.children)
        finally:
            self.depth -= 1
            self.sourcing.pop()

    def fragment(self, path: str, line: int):
        """The fragment `path` as this side's resolver finds it (a Source), or None; what was
        found is kept (Record.sourced) so a cached reading is used only while it holds."""
        rec = self.rec
        ctx = rec.ctx
        resolver = getattr(ctx, "resolver", None) or DiskResolver(getattr(ctx, "root", None))
        res = resolver.resolve(path, rec.src, getattr(ctx, "root", None))
        where = rec.at(line)
        if res.path is None:
            rec.sourced.append((path, line, "", ""))
            if res.why:
                rec.notes.append(f"{where}: sourced {path} not read: {res.why}")
            elif res.tried:
                tried = ", ".join(res.tried[:4]) + (" ..." if len(res.tried) > 4 else "")
                rec.notes.append(f"{where}: sourced {path} was not found (tried {tried}): what it sets is unresolved")
            return None
        parent = rec.src.name.replace("\\", "/").rsplit("/", 1)[0] if "/" in rec.src.name else ""
        name = f"{parent}/{os.path.basename(path)}" if parent else os.path.basename(path)
        try:
            src = resolver.read(res, name)
        except SourceError as e:
            rec.sourced.append((path, line, "", ""))
            rec.notes.append(f"{where}: sourced {path} not read: {str(e).split(': ', 1)[-1]}")
            return None
        limit = getattr(getattr(ctx, "options", None), "max_bytes", None)
        ident = resolver.identity(res)
        rec.sourced.append((path, line, ident, hashlib.sha1(src.data).hexdigest()))
        if limit is not None and len(src.data) > limit or src.is_binary():
            rec.notes.append(f"{where}: sourced {path} not read (binary, or larger than --max-bytes)")
            return None
        rec.notes.append(f"{where}: sourced {path} read in place ({res.how}: {res.path})")
        return src

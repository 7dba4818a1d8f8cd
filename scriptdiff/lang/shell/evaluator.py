"""The statements of a launch script, evaluated in order (never executed).

Assignments (`VAR=...`, `+=`, arrays), `export` / `declare` / `local` / `readonly`, `unset`,
functions (evaluated where they are called), `source`, control structures in order, and
commands: a launcher command goes to the LaunchReader, with its `VAR=x` prefixes as
environment; a command that a comment line cut in two is rejoined. The variables live here;
expansion is the Expander's job. A value over an evaluation budget (scriptdiff/budget.py)
becomes one "too large to evaluate" segment, said once in the input's account; a command
whose words are over it is not read; the rest of the script is.
"""
from __future__ import annotations

import os

from ...budget import TOO_LARGE_TEXT, TooLarge
from ...model import InputError
from .env import env_fact, sourced_fact
from .launch import LaunchReader
from .launchers import table
from .record import Record
from .specialise import Devices, branches, case_body
from .words import Expander, Seg, Var, Word

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
        self.functions: dict[str, object] = {}
        self.depth = 0
        # device tests decided for this side's device (specialise.py)
        rec.devices = self.devices = Devices(self.x, getattr(rec.ctx, "side", "gpu"))

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
                        if nm is None or not x.t(nm).startswith("-"):
                            break
                        extra.append(n2)
                    j += 1
                if extra:
                    self.rec.errors.append(InputError(self.rec.src.name, (
                        f"line {x.line_of(extra[0])}: a comment line inside a continued command ends that "
                        f"command in bash; the flags after it were read as part of the launcher command")))
                    self.command(node, extra)
                    i = j
                    continue
            try:
                self.statement(node)
            except TooLarge as e:  # a command's words (an assignment marks its variable itself)
                self.rec.over_budget(f"the command at line {x.line_of(node)}", e, x.line_of(node))
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
                self.functions[self.x.t(nm)] = body
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
            self.rec.errors.append(InputError(self.rec.src.name, f"line {self.x.line_of(node)}: device test not read "
                                                                 f"({type(e).__name__}); read as written"))
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
        name = os.path.basename(words[0].text)
        if words[0].text in self.functions and self.depth < 8:
            self.depth += 1
            try:
                self.statement(self.functions[words[0].text])
            finally:
                self.depth -= 1
            return
        if name in ("source", ".") and len(words) > 1:
            sourced_fact(self.rec, words[1].text, x.line_of(node))
            return
        if name == "export":  # export written as a plain command (rare)
            return
        if self.table.find(name) is None:
            texts = [w.text for w in words]
            wraps = any(t == "--" and i + 1 < len(texts) and self.table.looks_like(os.path.basename(texts[i + 1]))
                        for i, t in enumerate(texts))  # ray job submit ... -- python3 -m ...
            self.rec.unknown_command(words, x.line_of(node), wraps)
            return
        # the launcher's environment: the script's exported variables, then its `VAR=x` prefixes
        env = {k: Word(list(v.segs)) for k, v in self.vars.items() if v.exported and v.kind == "scalar"}
        entry = self.table.find(name)
        # prefixes the launcher reads as its options (NPROC_PER_NODE=8 swift sft) give world_size and
        # master_port facts, not environment facts as well
        consumed = {n for n in entry.environment if n.lower() in entry.world_size or n.lower() in self.table.shared_facts}
        for p in prefix:  # VAR=x torchrun ...: environment of the launcher
            pname = p.child_by_field_name("name")
            pval = p.child_by_field_name("value")
            if pname is not None:
                segs = x.concat_segs(pval, quoted=True) if pval is not None else []
                if x.t(pname) not in consumed:
                    env_fact(self.rec, x.t(pname), x.line_of(p), segs)
                env[x.t(pname)] = Word(segs or [Seg("", x.line_of(p))])
        self.launcher.launch(words, x.line_of(node), env)

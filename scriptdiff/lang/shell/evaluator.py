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

from ... import budget
from ...budget import TOO_LARGE_TEXT, TooLarge
from ...inputs import flags
from ...model import InputError
from ...inputs.references import DiskResolver, source_identity
from ...inputs.sources import SourceError
from ...ruleset.devices import plumbing_role
from .builtins import array_fields, assigned, printf, read_fields, read_names, set_by
from .comments import commented_flags
from . import install
from .env import env_fact, sourced_fact
from .grammar import parser
from .launch import LaunchReader
from .launchers import table
from .record import Record
from .specialise import Devices, branches, case_body
from .words import NAME_RE, Expander, Origin, Seg, Var, Word, split_words, tail_word



def _split_dollars(root, data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each variable name that tree-sitter-bash cut off its word: after an
    expansion and a piece with a `/` (`$ROOT/data/$NAME/x`, `data/$1/$1`) it ends the word at a
    bare `$`, and the name and the rest become another word (a command name, an argument)."""
    out, stack = [], [root]
    while stack:
        n = stack.pop()
        if n.type == "$" and n.parent is not None and n.parent.type == "concatenation" \
                and n.next_sibling is None:
            a = n.end_byte
            b = a
            while b < len(data) and (chr(data[b]).isalnum() or data[b] == 0x5F) and data[b] < 0x80:
                b += 1
            if b > a and chr(data[a]).isdigit():  # $1/$2: a positional parameter is one digit
                out.append((a, a + 1))
            elif b > a:
                out.append((a, b))
        stack.extend(n.children)
    return out


class Repair:
    """The bytes a script is read from, with each name tree-sitter-bash cut off its word braced
    (`$NAME` read as `${NAME}`, which it parses whole): `inserted` are the original offsets
    before which one byte was added; `original(x)` maps an offset of the read bytes back."""

    def __init__(self, data: bytes):
        self.source = data
        self.inserted: list[int] = []

    def parse(self, p):
        data, tree = self.source, p.parse(self.source)
        for _ in range(4):
            cuts = _split_dollars(tree.root_node, data)
            if not cuts:
                break
            for a, b in cuts:
                self.inserted += [self.original(a), self.original(b)]
            self.inserted.sort()
            data = self.apply()
            tree = p.parse(data)
        return tree, data

    def apply(self) -> bytes:
        out, last = [], 0
        for k, i in enumerate(self.inserted):
            out.append(self.source[last:i])
            out.append(b"{" if k % 2 == 0 else b"}")
            last = i
        out.append(self.source[last:])
        return b"".join(out)

    def original(self, x: int) -> int:
        """The original offset of offset `x` of the read bytes."""
        shift = 0
        for k, i in enumerate(self.inserted):
            if i + k < x:
                shift += 1
        return x - shift


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
        self.loop_runs = 0  # loop bodies run so far (budget.SHELL_LOOP_RUNS for the whole script)
        # (what, bound, its word, why the counter is unknown) while reading a `for ((i = 0; i < N;
        # i++))` not unrolled: a launch in it may be one process per rank (c_for_loop)
        self.rank_loop: tuple | None = None
        self.depth = 0
        # the script and the fragments being read, innermost last: one that sources any of them is not read again
        self.sourcing: list[str] = [source_identity(rec.src)] if getattr(rec.src, "origin", None) else []
        self.x.script = os.path.basename(rec.src.name.replace("\\", "/"))  # $0: `$(dirname "$0")` is its folder
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
            if body is not None and body.type == "command":  # read X <<EOF ...: its input
                self.command(body, redirects=[c for c in node.children if c is not body])
            elif body is not None:
                self.statement(body)
        elif t in ("if_statement", "case_statement", "list") and self.device_branch(node):
            return
        elif t == "compound_statement" and node.children and node.children[0].type == "((":
            self.x.arith_value(node)  # (( A = B * 2 )): arithmetic that sets its variables
        elif t == "for_statement":
            self.for_loop(node)
        elif t == "c_style_for_statement":
            self.c_for_loop(node)
        elif t == "while_statement":
            self.opaque_loop(node, f"a `{self.x.t(node.children[0])}` loop whose runs are not evaluated")
        else:  # pipeline, list, subshell, if/for/while/case, compound statements: in order
            self.block(c for c in node.children if c.is_named)

    def called_script(self, words, line: int) -> None:
        """`bash stages/pretrain.sh "$DATA" "$LLM" 2048`: a script this one runs with positional
        arguments. Found within this side (as a sourced fragment is), it is read with its $1... bound
        to them. Not in view, what it does with them is its own; the arguments are this script's
        decision: each is a setting keyed by the called script's name and its position
        (`pretrain.sh $2`), compared with the other side's call of a script of that name
        (`stages_npu/pretrain.sh`, the port's copy, is the same name). The account says so."""
        base = os.path.basename(words[1].text)
        args = words[2:]
        self.rec.calls += 1
        if self.source(words[1], line, args=args):  # in view: read with its arguments, as it runs
            return
        first = len(self.rec.facts)
        for i, w in enumerate(args, 1):
            if w.unknown:
                self.rec.unknown_words([w], f"argument {i} of {base} was not compared")
                continue
            self.launcher.program.add_hparam(f"{base} ${i}", w.text, w, f"{base} ${i}")
        if len(self.rec.facts) > first:  # one invocation, paired with the other side's as a launch is
            for f in self.rec.facts[first:]:
                f.meta["invocation"] = self.rec.invocations
            self.rec.invocations += 1
        self.rec.notes.append(f"{self.rec.at(line)}: runs {base}, which is not in view; its {len(args)} argument(s) "
                              f"were compared by position")

    def undecided_if(self, node, clauses: list) -> None:
        """An `if` that is no device test, read as written: every clause in order, the conditions
        no tests of their own. A launch in one of its clauses is one way of a choice the script
        makes at run time; its facts say which (meta["choice"]: group, branch, condition, line).
        The clauses of one `if` are one group; so are `if` statements that test one word for
        equality with different literals (`if [ $# == 1 ]` ... `if [ $# == 2 ]`), whose bodies
        never both run."""
        outer = self.rec.choice
        line = self.x.line_of(node)
        self.rec.ifs_read += 1
        serial = self.rec.ifs_read
        d = self.devices
        try:
            for i, (cond, body, _clause) in enumerate(clauses):
                d.quiet += 1
                try:
                    self.block(cond or [])
                finally:
                    d.quiet -= 1
                test = _equality(self.x, cond) if len(clauses) == 1 else None
                shown = self.x.t(cond[0]) if cond else "else"
                # a loop's runs each make the choice again: one group per run
                self.rec.choice = (f"test:{test[0]}:{self.loop_runs}", test[1], shown) if test else \
                    (f"if:{line}:{serial}", str(i), shown)
                self.block(body)
                self.rec.choice = outer
        finally:
            self.rec.choice = outer

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
                    self.undecided_if(node, clauses)
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

    def command(self, node, extra=(), redirects=()) -> None:
        x = self.x
        words, prefix = self.cmd_words(node, extra)
        if not words:
            for p in prefix:
                self.assign(p)
            return
        if words[0].text == "read":  # read X <<< WORD: its input is known; from elsewhere it is not
            self.read(words, x.line_of(node), [c for c in node.children if c.type.endswith("redirect")]
                      + list(redirects), prefix)
            return
        if words[0].text in ("cat", "tee") and redirects:  # cat <<EOF > file.json: a file the script writes
            self.written_file(words, [c for c in node.children if c.type.endswith("redirect")] + list(redirects))
        env = []  # VAR=x prefixes: (name, value segments, line)
        for p in prefix:
            pname = p.child_by_field_name("name")
            pval = p.child_by_field_name("value")
            if pname is not None:
                env.append((x.t(pname), x.concat_segs(pval, quoted=True) if pval is not None else [], x.line_of(p)))
        self.run_words(words, x.line_of(node), env)

    def run_words(self, words: list[Word], line: int, env: list, ranks: tuple | None = None) -> None:
        """A command, from its words on: a function call, a fragment sourced, a command string
        read again, a wrapper's or runner's command, a launcher, a Python wrapper's command
        after `--`, an unknown runner's command, or something else (an unknown launcher is said
        when it passes training-like options). `ranks`: (runner, option, its value) where a
        runner starts one process per rank (`mpirun -np 8 python x.py`: the world size)."""
        t = self.table
        name = os.path.basename(words[0].text)
        if words[0].text in self.functions and self.depth < budget.SHELL_DEPTH:
            body, state = self.functions[words[0].text]
            self.depth += 1
            saved, self.x.positional = self.x.positional, list(words[1:])  # $1 ... are its arguments
            try:
                with self.x.reading(*state):
                    self.statement(body)
            finally:
                self.depth -= 1
                self.x.positional = saved
            return
        if self.builtin(words, line):
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
        if name in t.shells and len(words) > 1 and not flags.dashed(words[1].text) and not words[1].unknown:
            self.called_script(words, line)  # bash stages/pretrain.sh "$DATA" "$LLM" 2048
            return
        if name.endswith(".py") and not flags.dashed(name):  # ./train.py: python runs it (its #!)
            words = [Word([Seg("python", words[0].line)])] + list(words)
            name = "python"
        unwrapped = self.unwrap(name, words[1:]) if name in t.wrappers else None
        if unwrapped is not None:  # nohup / env A=1 / uv run / srun -N 2 / mpirun -np 8 ...: the command after it
            rest, more, count = unwrapped
            if rest and self.depth < budget.SHELL_DEPTH:
                self.inner(rest, line, env + more, (name, *count) if count else ranks)
            elif not rest and name in t.wrappers and t.wrappers[name].subcommands:
                self.rec.unknown_command(words, line, wraps=True)  # `pixi run TASK`: what it runs is not in view
            return
        entry = t.find(name)
        if entry is not None and entry.program == "interpreter":  # python wrapper.py --x y -- python train.py ...
            wrapped = self.wrapped_command(words)
            if wrapped is not None:
                script, at = wrapped
                script = words[script].text
                own = sum(1 for w in words[wrapped[0] + 1:at - 1] if flags.dashed(w.text))
                self.rec.notes.append(f"{self.rec.at(line)}: {os.path.basename(script)} runs the command after `--` "
                                      f"({words[at].text}), read as the launch; its own {own} option(s) are the "
                                      f"wrapper's, not compared as the run's")
                self.inner(words[at:], line, env, ranks)
                return
        hit = install.match(words, interpreter=entry is not None and entry.program == "interpreter")
        if hit is not None:  # pip install -r requirements_gpu.txt, conda create ... python=3.10
            self.installer.read(hit[0], hit[1], line)
            return
        if entry is None:
            texts = [w.text for w in words]
            at = self.runner_command(words)
            if at is not None:  # myrunner --queue x python train.py ...: its command is the launch
                launches = self.rec.launches
                self.inner(words[at:], line, env, ranks)
                if self.rec.launches > launches:  # what it does with its own words is not known: said
                    own = " ".join(texts[:at]) if at <= 3 else f"{texts[0]} ..."
                    n = sum(1 for w in texts[1:at] if flags.dashed(w))
                    self.rec.unread.append(f"{self.rec.at(line)}: `{own}` is not a known runner: the command after it "
                                           f"({words[at].text} ...) was read as the launch; its own {n} option(s) "
                                           f"were not compared")
                    return
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
        if ranks is None and self.rank_loop is not None:  # one process per run of the loop, N runs
            what, bound, word, why = self.rank_loop
            ranks = (what, bound, word)
            first = len(self.rec.facts)
            self.launcher.launch(words, line, envw, ranks)
            for f in self.rec.facts[first:]:
                if f.key == "world_size" and f.via and f.via.startswith(bound):
                    f.meta["rank_loop"] = why  # kept only where what $i sets is which process it is
            return
        first = len(self.rec.facts)
        self.launcher.launch(words, line, envw, ranks)
        # which process this run is, as its environment says it (`export DEVICE_ID=$i` in a loop
        # before each launch): kept with its facts, so runs told apart by it read as one job's ranks
        told = tuple(sorted((k, w.text) for k, w in envw.items() if plumbing_role(k) == "rank" and not w.unknown))
        if told:
            for f in self.rec.facts[first:]:
                if f.meta.get("invocation") is not None:
                    f.meta["rank_env"] = told

    def inner(self, words: list[Word], line: int, env: list, ranks: tuple | None) -> None:
        """The command a wrapper, a runner or a Python wrapper runs, read as a command of its own."""
        if self.depth >= budget.SHELL_DEPTH:
            return
        self.depth += 1
        try:
            self.run_words(words, line, env, ranks)
        finally:
            self.depth -= 1

    def starts(self, word: str) -> bool:
        """A word that starts a command a runner may run: a launcher's, a wrapper's or a runner's
        command word, or a Python script (python runs it)."""
        t = self.table
        base = os.path.basename(word)
        return t.find(base) is not None or base in t.wrappers or (word.endswith(".py") and not flags.dashed(word))

    def wrapped_command(self, words: list[Word]) -> tuple[int, int] | None:
        """(where the wrapper's script or module is, where the command it runs starts) for a
        Python wrapper: `python wrap.py [its options] -- CMD` or `python -m pkg.wrap ... -- CMD`,
        CMD a launcher, runner or script (`starts`); None when the words after `--` are the
        program's own."""
        texts = [w.text for w in words]
        i = flags.first_operand(texts, 1, stop=("-m",))
        if i + 1 < len(texts) and texts[i] == "-m" and self.table.runner(texts[i + 1]) is None:
            i += 1  # python -m pkg.submit ... -- CMD (python -m torch.distributed.run is a launcher)
        elif i >= len(texts) or not texts[i].endswith(".py"):
            return None
        if flags.END in texts[i + 1:]:
            sep = texts.index(flags.END, i + 1)
            if sep + 1 < len(texts) and self.starts(texts[sep + 1]):
                return i, sep + 1
        return None

    def runner_command(self, words: list[Word]) -> int | None:
        """Where an unknown runner's command starts: the first word that is a launcher's, a
        wrapper's or a runner's command word; None when no word is, when the command only
        names programs (`pkill -f python`: rules/shell.yaml `inspect`), or when it hands its
        command over after `--` (`kubectl exec POD -- CMD`, `docker exec`: run somewhere else,
        with what that place gives it), which stays not understood as a whole."""
        t = self.table
        texts = [w.text for w in words]
        if flags.END in texts[1:] or os.path.basename(texts[0]) in t.inspectors | t.printers:
            return None
        return next((i for i in range(1, len(texts)) if not flags.dashed(texts[i])
                     and (t.find(os.path.basename(texts[i])) is not None or os.path.basename(texts[i]) in t.wrappers)),
                    None)

    # ----------------------------------------------------------- builtins that set variables
    def put(self, name: str, segs: list[Seg], line: int) -> None:
        """Scalar `name` set to `segs` (an exported variable's environment fact follows it)."""
        old = self.vars.get(name)
        self.vars[name] = Var("scalar", segs=segs, line=line, exported=bool(old and old.exported))
        if old is not None and old.exported:
            env_fact(self.rec, name, line, segs)

    def unknown(self, name: str, why: str, line: int, array: bool = False) -> None:
        """`name` set in a way that is not evaluated: its value is unknown (words.Seg.unknown),
        and `why` (with the place) is what the account says of a setting made from it."""
        seg = Seg(f"${name}", line, (), (name,), unknown=(f"{self.rec.at(line)}: {why}",))
        old = self.vars.get(name)
        if array:
            self.vars[name] = Var("array", words=[Word([seg])], line=line, exported=bool(old and old.exported))
        else:
            self.put(name, [seg], line)

    def builtin(self, words: list[Word], line: int) -> bool:
        """`set`, `shift`, `printf -v`, `let`, `read`, `mapfile`, `getopts`: what they set (True),
        or False for any other command."""
        name = words[0].text
        x = self.x
        texts = [w.text for w in words]
        if name == "set":  # set -- a b: the positional parameters; set -euo pipefail: options only
            rest = texts[1:]
            i = 0
            while i < len(rest) and rest[i].startswith(("-", "+")) and rest[i] != "--":
                i += 2 if rest[i] in ("-o", "+o") else 1
            if i < len(rest) and rest[i] == "--":
                x.positional = list(words[1 + i + 1:])
            elif i < len(rest):
                x.positional = list(words[1 + i:])
            return True
        if name == "shift":
            n = int(texts[1]) if len(texts) > 1 and texts[1].isdigit() else 1
            if x.positional is not None:
                x.positional = x.positional[n:]
            return True
        if name == "printf" and len(texts) > 2 and texts[1] == "-v":
            self.printf_v(words, line)
            return True
        if name == "let":
            for w in words[1:]:
                self.arith_text(w.text, line)
            return True
        if name == "read":
            self.read(words, line, [], [])
            return True
        if name in ("mapfile", "readarray", "getopts"):
            for target in assigned_names_of(name, texts[1:]):
                self.unknown(target, f"${target} is set by `{name}` from input that is not read", line,
                             array=name != "getopts")
            return True
        return False

    def printf_v(self, words: list[Word], line: int) -> None:
        """`printf -v NAME FORMAT ARGS...`: NAME set to the formatted text where every word is
        known (a lone `%s` passes its argument on as it is, variables and all); else unknown."""
        target = words[2].text
        rest = words[3:]
        if rest and rest[0].text == "--":
            rest = rest[1:]
        if not rest or not NAME_RE.match(target):
            return
        fmt, args = rest[0], rest[1:]
        if fmt.text == "%s" and len(args) == 1:
            self.put(target, list(args[0].segs), line)
            return
        if any(w.unresolved or w.unknown for w in rest):
            self.unknown(target, f"${target} is formatted by `printf -v` from a value that is not known", line)
            return
        out = printf(fmt.text, [w.text for w in args])
        if out is None:
            self.unknown(target, f"${target} is formatted by `printf -v {fmt.text}`, which is not evaluated", line)
            return
        via = tuple(dict.fromkeys(v for w in args for v in w.via))
        self.put(target, [Seg(out, line, via)], line)

    def written_file(self, words: list[Word], redirects: list) -> None:
        """`cat <<EOF > PATH` (or `cat > PATH <<EOF`, `tee PATH <<EOF`): the script writes the
        here-document to PATH, expanded as bash expands it (not when its delimiter is quoted).
        Recorded as (PATH as evaluated, the text, its first line); a launch that names PATH reads
        it as the config it is (lang/shell/__init__.py, written_configs)."""
        x = self.x
        body, path = None, None
        for r in redirects:
            if r.type == "heredoc_redirect":
                body = next((c for c in r.children if c.type == "heredoc_body"), None)
                quoted = any(c.type == "heredoc_start" and x.t(c)[:1] in ("'", '"') for c in r.children)
                for c in r.children:  # the `> PATH` written after `<<EOF` belongs to the heredoc's node
                    if c.type == "file_redirect":
                        path = self.redirect_target(c)
            elif r.type == "file_redirect":
                path = self.redirect_target(r) or path
        if path is None and words[0].text == "tee" and len(words) > 1:
            path = words[-1].text
        if body is None or not path:
            return
        segs = [Seg(x.t(body), x.line_of(body))] if quoted else self.heredoc_segs(body)
        text = "".join(sg.text for sg in segs)
        if any(sg.unknown for sg in segs):
            return  # built from values not known: not read as a config
        self.rec.written[path] = (text, x.line_of(body))

    def heredoc_segs(self, body) -> list[Seg]:
        """A here-document's text as bash expands it: the text between its expansions as
        written, each expansion (`$X`, `${X:-d}`, `$(...)`, `$((...))`) evaluated."""
        x = self.x
        out, pos = [], body.start_byte
        for c in body.children:
            if c.type in ("simple_expansion", "expansion", "command_substitution", "arithmetic_expansion"):
                if c.start_byte > pos:
                    out.append(Seg(x.data[pos:c.start_byte].decode("utf-8", "replace"), x.line_of(body)))
                out.extend(x.concat_segs(c, quoted=True))
                pos = c.end_byte
        if body.end_byte > pos:
            out.append(Seg(x.data[pos:body.end_byte].decode("utf-8", "replace"), x.line_of(body)))
        return out

    def redirect_target(self, r) -> str | None:
        """The file of `> PATH` / `>> PATH` (its words evaluated), or None."""
        dest = r.child_by_field_name("destination")
        if dest is None:
            return None
        ws = self.x.words(dest)
        return ws[0].text if len(ws) == 1 else None

    def read(self, words: list[Word], line: int, redirects: list, prefix: list) -> None:
        """`read [-r] [-d DELIM] [-a ARR] NAME...`: from a here-string (`<<< WORD`) or a
        here-document (expanded as bash expands it, unless its delimiter is quoted), the fields of
        its first line, or of all of it up to DELIM (`read -r -d '' cmd <<EOF`: the whole
        document; IFS from a `IFS=x` prefix); from anything else (standard input, a file, a pipe)
        the names are unknown."""
        x = self.x
        texts = [w.text for w in words[1:]]
        names, array, opts = read_names(texts)
        names = names or ([] if array else ["REPLY"])
        delim = "\n"
        if "-d" in texts and texts.index("-d") + 1 < len(texts):
            delim = texts[texts.index("-d") + 1][:1]
        segs = None
        for r in redirects:
            if r.type == "herestring_redirect":
                kids = [c for c in r.children if c.is_named]
                segs = x.concat_segs(kids[-1], quoted=True) if kids else None
            elif r.type == "heredoc_redirect":
                body = next((c for c in r.children if c.type == "heredoc_body"), None)
                quoted = any(c.type == "heredoc_start" and x.t(c)[:1] in ("'", '"') for c in r.children)
                if body is not None and quoted:
                    segs = [Seg(x.t(body), x.line_of(body))]
                elif body is not None:  # bash joins the lines a backslash ends, then expands
                    segs = [piece for sg in self.heredoc_segs(body)
                            for piece in (_joined_lines(sg) if not sg.via and not sg.unresolved else [sg])]
        ifs = " \t\n"
        for p in prefix:
            pname, pval = p.child_by_field_name("name"), p.child_by_field_name("value")
            if pname is not None and x.t(pname) == "IFS":
                ifs = "".join(sg.text for sg in x.concat_segs(pval, quoted=True)) if pval is not None else ""
        plain = not opts - {"-r", "-s", "-e", "-d"}
        known = segs is not None and plain and not any(sg.unresolved or sg.unknown for sg in segs)
        targets = names + ([array] if array else [])
        if not known:
            if segs is not None and len(names) == 1 and not array and plain and delim == "\n":
                self.put(names[0], segs, line)  # read X <<< "$1": the word as it is (unresolved)
                return
            for n in targets:
                if NAME_RE.match(n):
                    self.unknown(n, f"${n} is set by `read` from input that is not read", line, array=n == array)
            return
        text = "".join(sg.text for sg in segs)
        via = tuple(dict.fromkeys(v for sg in segs for v in sg.via))
        if array:
            self.vars[array] = Var("array", words=[Word([Seg(f, line, via)])
                                                   for f in array_fields(text, ifs, "-r" in opts)], line=line)
            return
        values = read_fields(text, len(names), ifs, "-r" in opts, delim)
        if len(names) == 1 and values and NAME_RE.match(names[0]) and delim != "\n" and values[0] in text:
            # all of a document in one name (`read -r -d '' cmd <<EOF`): each of its lines keeps its own line
            self.put(names[0], _trimmed(segs, text.index(values[0]), len(values[0])), line)
            return
        for n, value in zip(names, values):
            if NAME_RE.match(n):
                self.put(n, [Seg(value, line, via)], line)

    def arith_text(self, text: str, line: int) -> None:
        """`let EXPR`: the expression parsed as `(( EXPR ))` and evaluated (its assignments set)."""
        data = f"(( {text} ))".encode("utf-8")
        try:
            tree = parser().parse(data)
        except Exception:  # tree-sitter unavailable: said once by the reader already
            return
        node = tree.root_node.children[0] if tree.root_node.children else None
        if node is None or tree.root_node.has_error:
            for n in assigned_names_of("let", [text]):
                self.unknown(n, f"${n} is set by `let {text}`, which is not evaluated", line)
            return
        with self.x.reading(data, self.x.base, Origin([0], [(0, len(data), line, ())])):
            self.x.arith_value(node)

    # ----------------------------------------------------------- loops
    def for_loop(self, node) -> None:
        """`for X in WORDS; do ...; done`: the body once for each word, X set to it, when the
        words are known and few enough (budget.SHELL_LOOP_ITERATIONS) and the body has no
        `break`/`continue`; otherwise a loop whose runs are not known (`opaque_loop`)."""
        x = self.x
        var = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        if var is None or body is None:
            return
        values = node.children_by_field_name("value")
        name = x.t(var)
        words = [w for v in values for w in x.words(v)] if values else (
            list(x.positional) if x.positional is not None else None)
        known = words is not None and not any(_expands(v, x.t) for v in values) \
            and not any(w.unresolved or w.unknown for w in words)
        plain = known and len(words) <= min(budget.SHELL_LOOP_ITERATIONS, budget.SHELL_LOOP_RUNS - self.loop_runs) \
            and not _jumps(body, x.t)
        if not plain:
            self.opaque_loop(node, "a `for` loop over words that are not known" if not known
                             else f"a `for` loop not unrolled (break or continue in it, or more than "
                                  f"{budget.SHELL_LOOP_ITERATIONS} runs)")
            return
        line = x.line_of(var)
        self.loop_runs += len(words)
        for w in words:
            self.put(name, list(w.segs), line)
            self.block(c for c in body.children if c.is_named)

    def c_for_loop(self, node) -> None:
        """`for ((i = 0; i < N; i++))`: unrolled when its arithmetic is known, the body leaves its
        variables alone and it ends within budget.SHELL_LOOP_ITERATIONS runs; else `opaque_loop`."""
        x = self.x
        init = node.child_by_field_name("initializer")
        cond = node.child_by_field_name("condition")
        update = node.child_by_field_name("update")
        body = node.child_by_field_name("body")
        if body is None:
            return
        steps = [n for n in (init, cond, update) if n is not None]
        names = set().union(*(assigned(n, x.t) for n in steps)) if steps else set()
        saved = {n: self.vars.get(n) for n in names}
        runs = 0
        ok = cond is not None and not (assigned(body, x.t) & names) and not _jumps(body, x.t)
        if ok:  # count the runs on the arithmetic alone, then put the variables back
            if init is not None:
                x.arith_value(init)
            while True:
                v = x.arith_value(cond)[0]
                if v is None or runs > min(budget.SHELL_LOOP_ITERATIONS, budget.SHELL_LOOP_RUNS - self.loop_runs):
                    ok = False
                    break
                if not v:
                    break
                runs += 1
                if update is not None:
                    x.arith_value(update)
        for n, v in saved.items():
            if v is None:
                self.vars.pop(n, None)
            else:
                self.vars[n] = v
        if not ok:
            why = (f"a `for ((...))` loop not unrolled (its arithmetic not known, break or continue in it, or more "
                   f"than {budget.SHELL_LOOP_ITERATIONS} runs)")
            counted = _counted(init, cond, update, x.t)
            saved_loop = self.rank_loop
            if counted is not None and not _jumps(body, x.t):  # i = 0; i < N; i++: N runs, N not known
                var, bound = counted
                if bound.type == "word" and not x.t(bound).isdigit():  # i<RANK_SIZE: the variable's value
                    v = self.vars.get(x.t(bound))
                    words = [Word(list(v.segs))] if v is not None and v.kind == "scalar" else []
                else:  # i<$N, i<${N}, i<8
                    words = x.words(bound)
                if len(words) == 1:
                    self.rank_loop = ("for ((...))", x.t(bound).lstrip("$").strip("{}()"), words[0],
                                      f"{self.rec.at(x.line_of(node))}: ${var} is set in {why}")
            try:
                self.opaque_loop(node, why)
            finally:
                self.rank_loop = saved_loop
            return
        if init is not None:
            x.arith_value(init)
        self.loop_runs += runs
        for _ in range(runs):
            self.block(c for c in body.children if c.is_named)
            if update is not None:
                x.arith_value(update)
        x.arith_value(cond)  # the last test (it may set variables too)

    def opaque_loop(self, node, why: str) -> None:
        """A loop whose runs are not known (`while`, `until`, `for` over words not known): what
        it sets is unknown after it, and inside it until the body sets it; its body is read once
        (a launch in it is read with those values). `why` says what kind of loop it is."""
        x = self.x
        line = x.line_of(node)
        names = assigned(node, x.t)
        before = dict(self.vars)
        for n in sorted(names):
            self.unknown(n, f"${n} is set in {why}", line, array=bool(before.get(n) and before[n].kind == "array"))
        body = node.child_by_field_name("body")
        self.block(list(node.children_by_field_name("condition")) + (
            [c for c in body.children if c.is_named] if body is not None else []))
        changed = {n for n, v in self.vars.items() if before.get(n) is not v} | names
        for n in sorted(changed):
            v = self.vars.get(n)
            if v is None or n.startswith("_"):
                continue
            if v.exported and _constant(v) and before.get(n) is None:
                # `export STATIC=1` in the body: the environment of every run the loop starts, said
                # by the body's own export; after the loop it is unknown (the loop may not run)
                self.vars[n] = Var("scalar", segs=[Seg(f"${n}", line, (), (n,), unknown=(
                    f"{self.rec.at(line)}: ${n} is set in {why}",))], line=line, exported=True)
                continue
            self.unknown(n, f"${n} is set in {why}", line, array=v.kind == "array")

    def unwrap(self, name: str, words: list[Word]) -> tuple[list[Word], list, tuple] | None:
        """The command a wrapper or runner runs (its own options and positional words skipped),
        the environment it gives it (`env A=1 B=2 cmd`, `mpirun -x A=1`), and (option, value) of
        the number of processes it starts, or () (rules/shell.yaml `launchers.commands.wrappers`).
        None when it is not run as a runner (`uv pip install`: no `run`)."""
        w = self.table.wrappers[name]
        k = 0
        if w.subcommands:
            if not words or words[0].text not in w.subcommands:
                return None
            k = 1
        env = []
        opts: dict[str, Word] = {}
        while k < len(words):
            tx = words[k].text
            if tx == flags.END:
                k += 1
                break
            f = flags.split(tx)
            if f is None:
                if name == "env" and "=" in tx and tx.split("=", 1)[0].isidentifier():
                    env.append(self._env_word(words[k]))
                    k += 1
                    continue
                break
            if f.name not in w.valued and f.name not in w.pairs:
                f = f.joined(w.valued)  # -N2, -n8: the letter and its value (-np is an option of its own)
            if f.value is None and (f.name in w.pairs or f.option in w.pairs):
                k += 3
                continue
            if f.value is not None:
                opts[f.name] = tail_word(words[k], f.value_at)
                k += 1
            elif f.name in w.valued and k + 1 < len(words):
                opts[f.name] = words[k + 1]
                k += 2
            else:
                k += 1
            if f.name in w.module:  # uv run -m pkg.train --lr ...: the module's own options follow
                break
        k += w.positional
        rest = words[k:]
        for o in w.environment:  # mpirun -x NAME=value
            v = opts.get(o)
            if v is not None and "=" in v.text and v.text.split("=", 1)[0].isidentifier():
                env.append(self._env_word(v))
        module = next((opts[o] for o in w.module if o in opts), None)
        if module is not None:  # uv run -m pkg.train ...: python -m pkg.train ...
            rest = [Word([Seg("python", module.line)]), Word([Seg("-m", module.line)]), module] + rest
        count = next(((o, opts[o]) for o in w.processes if o in opts), None)
        return rest, env, count or ()

    @staticmethod
    def _env_word(w: Word) -> tuple:
        """(name, value segments, line) of a `NAME=value` word."""
        name = w.text.split("=", 1)[0]
        return name, tail_word(w, len(name) + 1).segs, w.line

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

    def source(self, word: Word, line: int, args: list | None = None) -> bool:
        """`source FILE` / `. FILE`: a fragment of the script. A relative path is found as a
        referenced config is, within this side (its resolver: beside the script, the repository
        root, the working directory inside it) and evaluated in place; an absolute path (the
        CANN set_env.sh), a path built from an unknown variable, or one found nowhere is only
        recorded as sourced (an environment fact), and the account says why.

        With `args` (`bash FILE ARGS`: called_script), FILE is read the same way as a script of
        its own: its $1... are `args`, and what it assigns stays its own; one found nowhere is not
        recorded (False: the caller compares the arguments instead)."""
        path = word.text
        rec = self.rec
        if not path or word.unresolved or os.path.isabs(path) or path.startswith("~") \
                or self.depth >= budget.SHELL_DEPTH or len(self.sourcing) > budget.SHELL_DEPTH:
            if args is None:
                sourced_fact(rec, path, line)
            return False
        src = self.fragment(path, line, called=args is not None)
        if src is None:
            if args is None:
                sourced_fact(rec, path, line)
            return False
        ident = rec.sourced[-1][2]
        if ident in self.sourcing:  # a fragment that sources itself: read once
            return True
        fix = Repair(src.data)
        try:
            tree, data = fix.parse(parser())
        except Exception:  # tree-sitter unavailable: the script itself said so
            return
        base = rec.add_file(src)
        if fix.inserted:  # spans of this fragment's read bytes are not its file's: `fix` leaves it
            rec.repaired.add(src.name)
        root = tree.root_node
        if root.has_error:
            rec.errors.append(InputError(src.name, "shell syntax error in a sourced fragment; the statements that "
                                                   "parsed were read"))
        for key, ln in commented_flags(root, data).items():
            rec.commented.setdefault(key, ln + base)
        self.sourcing.append(ident)
        self.depth += 1
        saved = (self.x.positional, dict(self.vars))
        if args is not None:
            self.x.positional = list(args)
        try:
            with self.x.reading(data, base, None):
                self.block(root.children)
        finally:
            self.depth -= 1
            self.sourcing.pop()
            if args is not None:  # a script of its own: its $1... and its variables end with it
                self.x.positional = saved[0]
                self.vars.clear()
                self.vars.update(saved[1])
        return True

    def fragment(self, path: str, line: int, called: bool = False):
        """The fragment `path` as this side's resolver finds it (a Source), or None; what was
        found is kept (Record.sourced) so a cached reading is used only while it holds.
        `called`: a script run with `bash FILE ARGS`, whose caller says itself when it is not found."""
        rec = self.rec
        ctx = rec.ctx
        resolver = getattr(ctx, "resolver", None) or DiskResolver(getattr(ctx, "root", None))
        res = resolver.resolve(path, rec.src, getattr(ctx, "root", None))
        where = rec.at(line)
        if res.path is None:
            rec.sourced.append((path, line, "", ""))
            if called:
                return None
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
        rec.notes.append(f"{where}: {'ran' if called else 'sourced'} {path} read in place ({res.how}: {res.path})")
        return src


def _expands(node, text) -> bool:
    """A word bash expands into other words the evaluator does not make: a brace expansion
    (`{1..8}`, `a{b,c}`) or a file name pattern (`*.yaml`) written unquoted."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("string", "raw_string", "ansi_c_string"):
            continue
        if n.type == "brace_expression" or (n.type == "word" and (any(c in text(n) for c in "*?[")
                                                                   or text(n) in ("{", "}"))):
            return True
        stack.extend(n.children)
    return False


def _jumps(body, text) -> bool:
    """A loop body that leaves a run early (`break`, `continue`) somewhere in it. A jump taken
    only when a command fails (`cd "$dir" || exit`) is not: the run that goes on is the one
    read, every command of it succeeding."""
    stack = [body]
    while stack:
        n = stack.pop()
        if n.type == "command":
            nm = n.child_by_field_name("name")
            if nm is not None and text(nm) in ("break", "continue", "return", "exit") and not _on_failure(n):
                return True
        stack.extend(n.children)
    return False


def _on_failure(cmd) -> bool:
    """`cmd` is the right side of `||`: run only when the command before it fails."""
    par, prev = cmd.parent, cmd.prev_sibling
    return par is not None and par.type == "list" and prev is not None and prev.type == "||"


def assigned_names_of(cmd: str, words: list[str]) -> list[str]:
    """The variables command `cmd` with operands `words` sets (builtins.set_by)."""
    return [n for n in set_by(cmd, words) if NAME_RE.match(n)]


def _joined_lines(sg: Seg) -> list[Seg]:
    """A here-document's literal text as bash reads it, one segment per line it is written on: a
    backslash before a newline joins the two lines (both dropped), every other line keeps its
    newline."""
    out = []
    pieces = sg.text.split("\n")
    for k, piece in enumerate(pieces):
        last = k == len(pieces) - 1
        joined = not last and piece.endswith("\\")
        text = piece[:-1] if joined else piece + ("" if last else "\n")
        if text:
            out.append(sg.moved(text=text, line=sg.line + k, span=None))
    return out


def _trimmed(segs: list[Seg], start: int, length: int) -> list[Seg]:
    """The segments covering text[start:start + length] of their joined text, cut to it."""
    out, pos = [], 0
    for sg in segs:
        a, b = max(start, pos), min(start + length, pos + len(sg.text))
        if a < b:
            out.append(sg.moved(text=sg.text[a - pos:b - pos], span=None) if (a, b) != (pos, pos + len(sg.text)) else sg)
        pos += len(sg.text)
    return out


def _counted(init, cond, update, t) -> tuple | None:
    """(the counter, the bound node) of `for ((i = 0; i < N; i++))` (`i += 1`, `++i` too), else None."""
    if init is None or cond is None or update is None or init.type != "variable_assignment":
        return None
    name = init.child_by_field_name("name")
    value = init.child_by_field_name("value")
    if name is None or value is None or t(value).strip() != "0":
        return None
    var = t(name)
    if cond.type != "binary_expression":
        return None
    left, op, right = (cond.child_by_field_name(f) for f in ("left", "operator", "right"))
    if left is None or op is None or right is None or t(op) != "<" or t(left).strip().lstrip("$").strip("{}") != var:
        return None
    if "".join(t(update).split()) not in (f"{var}++", f"++{var}", f"{var}+=1", f"{var}={var}+1"):
        return None
    return var, right


def _constant(v) -> bool:
    """A scalar written as literal text only: no variable, command or unknown in it."""
    return v.kind == "scalar" and bool(v.segs) and all(not s.via and not s.unresolved and not s.unknown for s in v.segs)


def _equality(x, cond) -> tuple[str, str] | None:
    """`[ $# == 1 ]`, `[ "$MODE" = "train" ]`, `[ $N -eq 2 ]`: (the word tested, the literal),
    else None."""
    if not cond or len(cond) != 1 or cond[0].type != "test_command":
        return None
    kids = [c for c in cond[0].children if c.is_named]
    if len(kids) != 1 or kids[0].type != "binary_expression":
        return None
    parts = kids[0].children
    if len(parts) != 3 or x.t(parts[1]) not in ("==", "=", "-eq"):
        return None
    lhs, rhs = parts[0], parts[2]
    if rhs.type not in ("number", "word", "string", "raw_string") or any(
            c.type in ("simple_expansion", "expansion", "command_substitution") for c in rhs.children):
        return None
    return x.t(lhs).strip('"'), x.t(rhs).strip('"\'')

"""A launch script read as the program one device runs (docs/devices.md).

Launch scripts that serve both devices branch on the machine: `if command -v npu-smi`,
`if [ -d /usr/local/Ascend ]`, `[ -n "$ASCEND_HOME_PATH" ]`, `case $DEVICE in npu) ...`,
`python -c "import torch_npu"`. What is recognised is data (rules/devices.yaml
`devices.shell`: tools, paths and variables that exist on one device only, variables that
hold the run's device, and the Python modules of `devices.python.modules`). The evaluator
(evaluator.py) asks `Devices.condition` about each `if`/`elif` condition, each `&&`/`||`
list and each `case` subject: a decided test runs the live branch only and sets the others
aside (SD019 masks, one per statement, with its line); a test that cannot be decided is
walked as before (every branch in order) and the input's account says so. Nothing is run.
"""
from __future__ import annotations

import fnmatch
from collections import Counter

from ...inputs import flags
from ...ruleset.devices import family_of, side_family, table
from ...ruleset.rules import RuleSet, derived

LOOKUPS = ("command", "which", "type", "hash")  # how a script asks whether a tool is installed
FILE_TESTS = ("-d", "-e", "-f", "-x", "-L", "-h", "-r", "-s", "-c", "-b")


@derived
def _tables(rs: RuleSet) -> dict:
    sh = table(rs).get("shell") or {}
    out = {"commands": {}, "paths": [], "variables": {}, "holders": set(), "idioms": {}}
    for part in ("commands", "paths", "variables", "holders", "python_imports"):
        out["idioms"][part] = (sh.get(part) or {}).get("idiom", part)
    for fam in ("cuda", "npu", "other"):
        for name in (sh.get("commands") or {}).get(fam) or []:
            out["commands"][name] = fam
        for pat in (sh.get("paths") or {}).get(fam) or []:
            out["paths"].append((pat, fam))
        for name in (sh.get("variables") or {}).get(fam) or []:
            out["variables"][name] = fam
    out["holders"] = {h.upper() for h in (sh.get("holders") or {}).get("match") or []}
    out["modules"] = {}
    for e in (table(rs).get("python") or {}).get("modules") or []:
        for m in e.get("match") or []:
            out["modules"][m] = e["family"]
    return out


class Devices:
    """Decides a script's device tests for one side (see the module doc)."""

    def __init__(self, x, side: str):
        self.x = x
        self.family = side_family(side)
        self.side = side
        self.t = _tables()
        self.hits: list = []
        self.tests = 0  # device tests decided
        self.decided: Counter = Counter()  # idiom -> decided tests it was met in
        self.undecided: list = []  # (line, text)
        self.aside: list = []  # lines of the statements set aside
        self.quiet = 0  # > 0 while walking the condition of an if read as written
        self.at = None  # how a line is named (record.Record.at: a sourced fragment's by its file)

    # ------------------------------------------------------------------ answers
    def answer(self, family: str | None, idiom: str):
        if family is None:
            return None
        self.hits.append(idiom)
        return family == self.family

    def record(self, node, value) -> None:
        """Count a decided test, or note one left as written."""
        if value is None:
            if self.hits:
                self.undecided.append((self.x.line_of(node), " ".join(self.x.t(node).split())[:60]))
        elif self.hits:
            self.tests += 1
            for i in dict.fromkeys(self.hits):
                self.decided[i] += 1

    def set_aside(self, nodes) -> None:
        """Statements this device does not run: each line listed (compound ones with their insides)."""
        for n in nodes:
            if not n.is_named or n.type == "comment":
                continue
            line = self.x.line_of(n)
            if line not in self.aside:
                self.aside.append(line)
            if n.type in _COMPOUND:
                self.set_aside([c for c in n.children if c.is_named and c.type not in _WORDS])

    # ------------------------------------------------------------------ conditions
    def condition(self, nodes) -> bool | None:
        """The truth of an `if`/`elif` condition (its last command decides) on this device."""
        nodes = [n for n in nodes if n.is_named and n.type != "comment"]
        if not nodes:
            return None
        self.hits = []
        return self.test(nodes[-1])

    def test(self, node) -> bool | None:
        t = node.type
        if t == "redirected_statement":
            body = node.child_by_field_name("body")
            return self.test(body) if body is not None else None
        if t == "negated_command":
            inner = [c for c in node.children if c.is_named]
            v = self.test(inner[0]) if inner else None
            return None if v is None else not v
        if t == "list":
            kids = [c for c in node.children if c.is_named]
            ops = [c.type for c in node.children if not c.is_named and c.type in ("&&", "||")]
            if len(kids) != 2 or len(ops) != 1:
                return None
            left = self.test(kids[0])
            if ops[0] == "&&":
                if left is False:
                    return False
                right = self.test(kids[1])
                return right if left is True else (False if right is False else None)
            if left is True:
                return True
            right = self.test(kids[1])
            return right if left is False else (True if right is True else None)
        if t == "test_command":
            inner = [c for c in node.children if c.is_named]
            return self.expression(inner[0]) if len(inner) == 1 else None
        if t == "command":
            return self.command(node)
        if t == "subshell":
            inner = [c for c in node.children if c.is_named]
            return self.test(inner[-1]) if inner else None
        return None

    def command(self, node) -> bool | None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return None
        name = self.x.t(name_node).strip("'\"").rsplit("/", 1)[-1]
        arg_nodes = node.children_by_field_name("argument")  # (tree-sitter nodes are compared by field, not identity)
        args_text = [self.x.t(c).strip("'\"") for c in arg_nodes]
        if name in LOOKUPS:
            tools = [a for a in args_text if not flags.dashed(a)]
            if len(tools) == 1:
                return self.answer(self.t["commands"].get(tools[0]), self.t["idioms"]["commands"])
            return None
        if name in self.t["commands"] and len(args_text) <= 2:  # `if npu-smi info >/dev/null`
            return self.answer(self.t["commands"][name], self.t["idioms"]["commands"])
        if name == "test":
            return self.test_words(arg_nodes)
        if name.startswith("python") and "-c" in args_text:
            i = args_text.index("-c")
            code = args_text[i + 1] if i + 1 < len(args_text) else ""
            mod = code.strip().split()
            if len(mod) == 2 and mod[0] == "import":
                top = mod[1].split(".")[0].rstrip(";")
                fam = self.t["modules"].get(top)
                return self.answer(fam, self.t["idioms"]["python_imports"])
        return None

    def test_words(self, nodes) -> bool | None:
        """`test OP WORD`, `test WORD OP WORD` written as a command."""
        texts = [self.x.t(n) for n in nodes]
        if len(texts) == 2:
            return self.unary(texts[0], nodes[1])
        if len(texts) == 3 and texts[1] in ("=", "==", "!="):
            return self.binary(nodes[0], texts[1], nodes[2])
        return None

    def expression(self, node) -> bool | None:
        t = node.type
        if t == "unary_expression":
            op = node.child_by_field_name("operator")
            kids = [c for i, c in enumerate(node.children) if c.is_named and node.field_name_for_child(i) != "operator"]
            if len(kids) != 1:
                return None
            if op is None or self.x.t(op) == "!":  # [ ! -d /usr/local/Ascend ]
                v = self.expression(kids[0])
                return None if v is None else not v
            return self.unary(self.x.t(op), kids[0])
        if t == "binary_expression":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            op = node.child_by_field_name("operator")
            if left is None or right is None or op is None:
                return None
            o = self.x.t(op)
            if o in ("&&", "||", "-a", "-o"):
                a = self.expression(left)
                if (o in ("&&", "-a") and a is False) or (o in ("||", "-o") and a is True):
                    return a
                b = self.expression(right)
                if a is not None:
                    return b
                return False if o in ("&&", "-a") and b is False else (True if o in ("||", "-o") and b is True
                                                                       else None)
            return self.binary(left, o, right)
        if t == "parenthesized_expression":
            inner = [c for c in node.children if c.is_named]
            return self.expression(inner[0]) if len(inner) == 1 else None
        return None

    def unary(self, op: str, operand) -> bool | None:
        if op in FILE_TESTS or op in ("-n", "-z"):
            sub = _substitution(operand)
            if sub is not None:  # [ -x "$(command -v npu-smi)" ], [ -n "$(which nvidia-smi)" ]
                v = self.test(sub)
                return None if v is None else (not v if op == "-z" else v)
        if op in FILE_TESTS:
            words = self.x.words(operand)
            if len(words) != 1 or words[0].unresolved:
                return None
            path = words[0].text.rstrip("/")
            for pat, fam in self.t["paths"]:
                if path == pat.rstrip("/") or fnmatch.fnmatchcase(path, pat):
                    return self.answer(fam, self.t["idioms"]["paths"])
            return None
        if op in ("-n", "-z"):
            words = self.x.words(operand)
            names = [n for w in words for n in w.unresolved] if words else []
            if self.device_word(operand) is not None:  # [ -n "$DEVICE" ]: it holds the run's device
                self.hits.append(self.t["idioms"]["holders"])
                return op == "-n"
            if len(words) == 1 and len(names) == 1 and words[0].text == f"${names[0]}":
                fam = self.t["variables"].get(names[0])  # set by the device's own setup only
                v = self.answer(fam, self.t["idioms"]["variables"])
                return None if v is None else (not v if op == "-z" else v)
            return None
        return None

    def binary(self, left, op: str, right) -> bool | None:
        if op not in ("=", "==", "!="):
            return None
        a, b = self.device_word(left), self.device_word(right)
        if (a is None) == (b is None):
            return None
        held, other = (a, right) if a is not None else (b, left)
        words = self.x.words(other)
        if len(words) != 1 or words[0].unresolved:
            return None
        pattern = words[0].text
        same = _matches(held, pattern)
        if same is None:
            return None
        self.hits.append(self.t["idioms"]["holders"])
        return same if op != "!=" else not same

    def device_word(self, node) -> str | None:
        """This side's device name when `node` expands a variable that holds the device."""
        words = self.x.words(node)
        if len(words) != 1:
            return None
        w = words[0]
        names = {n.upper() for n in set(w.via) | set(w.unresolved)}  # $device_name holds it as $DEVICE_NAME does
        if names & self.t["holders"] and (w.unresolved or w.text.strip("'\"") == w.text):
            return "npu" if self.family == "npu" else "cuda"
        return None

    # ------------------------------------------------------------------ case
    def case(self, node):
        """(index of the live case_item or -1, the items) when the subject holds the device."""
        value = node.child_by_field_name("value")
        items = [c for c in node.children if c.type == "case_item"]
        if value is None or not items:
            return None
        self.hits = []
        held = self.device_word(value)
        if held is None:
            return None
        for i, item in enumerate(items):
            term = item.child_by_field_name("termination")
            if term is not None and self.x.t(term) in (";&", ";;&"):
                self.undecided.append((self.x.line_of(node), f"case {self.x.t(value)}: a fall-through"))
                return None
            pats = [self.x.t(c).strip("'\"") for i2, c in enumerate(item.children)
                    if item.field_name_for_child(i2) == "value"]
            got = [_matches(held, p) for p in pats]
            if any(g is True for g in got):
                self.hits.append(self.t["idioms"]["holders"])
                return i, items
            if any(g is None for g in got):
                self.undecided.append((self.x.line_of(item), f"case pattern {'|'.join(pats)}"))
                return None
        self.hits.append(self.t["idioms"]["holders"])
        return -1, items

    def note(self) -> str | None:
        if not self.tests and not self.undecided:
            return None
        dev = "NPU" if self.side == "npu" else "GPU"
        n = self.tests
        out = f"device tests read for the {dev}: {n} decided" + (
            f" (by {', '.join(f'{k} {v}' for k, v in sorted(self.decided.items()))})" if n else "")
        if self.undecided:
            at = self.at or (lambda ln: f"line {ln}")
            shown = "; ".join(f"{at(ln)}: {txt}" for ln, txt in self.undecided[:4])
            out += f", {len(self.undecided)} not decided, read as written ({shown})"
        return out


_COMPOUND = ("if_statement", "elif_clause", "else_clause", "case_statement", "case_item", "for_statement",
             "c_style_for_statement", "while_statement", "do_group", "compound_statement", "subshell", "list",
             "redirected_statement", "function_definition")
# parts of a compound statement that are no statements of their own
_WORDS = ("word", "string", "raw_string", "simple_expansion", "expansion", "concatenation", "number",
          "extglob_pattern", "variable_name", "file_redirect", "heredoc_redirect", "herestring_redirect",
          "test_operator", "command_substitution")


def branches(node) -> list[tuple[list | None, list, object]]:
    """The clauses of an if_statement: (condition nodes or None for `else`, body nodes, clause node)."""
    out: list = []

    def split(clause, head: str):
        cond, body, seen_then = [], [], head == "else"
        for c in clause.children:
            if not seen_then:
                if c.type == "then":
                    seen_then = True
                elif c.is_named and c.type != "comment":
                    cond.append(c)
                continue
            if c.type in ("elif_clause", "else_clause"):
                continue
            if c.is_named:
                body.append(c)
        return (None if head == "else" else cond), body

    cond, body = split(node, "if")
    out.append((cond, body, node))
    for c in node.children:
        if c.type == "elif_clause":
            out.append((*split(c, "elif"), c))
        elif c.type == "else_clause":
            out.append((*split(c, "else"), c))
    return out


def case_body(item) -> list:
    """The statements of a case_item (its patterns left out)."""
    return [c for i, c in enumerate(item.children) if c.is_named and item.field_name_for_child(i) != "value"
            and c.type != "comment"]


def _matches(device: str, pattern: str) -> bool | None:
    """Whether a case pattern or a compared word names `device` (by family: gpu is cuda)."""
    p = pattern.lower()
    if p == "*":
        return True
    if any(ch in p for ch in "*?["):
        return fnmatch.fnmatchcase(device, p) or any(fnmatch.fnmatchcase(n, p) for n in _names(device))
    fam = family_of(p)
    if fam is None:
        return None if p.startswith("$") else False
    return fam == family_of(device)


def _names(device: str) -> list[str]:
    fam = family_of(device)
    return list((table().get("families") or {}).get(fam) or [])


def _substitution(node):
    """The command inside `"$(cmd)"` / `$(cmd)` / backquotes, when the node is only that."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "command_substitution":
            inner = [c for c in n.children if c.is_named]
            return inner[0] if len(inner) == 1 else None
        if n.type in ("string", "concatenation"):
            named = [c for c in n.children if c.is_named and c.type != "string_content"]
            if len(named) == 1:
                stack.append(named[0])
    return None

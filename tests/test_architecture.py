"""The shape of the package, checked: imports run one way, rule codes live in rules/.

- The import graph of scriptdiff (every import, function-local ones included) has no cycle.
- A function-local import of the package's own modules exists only to keep `scriptdiff
  --help` fast, and says so on its line.
- Package code never writes a rule code as a value; it names the rule (`code("name")`),
  and every name it uses is a rule in rules/.
- The rooms (ROOMS, bottom up: model, budget, inputs/, ruleset/, run/, lang/, checks/, fix/,
  curves/, dumps/, report/, project/, api, commands/, cli): a room imports only rooms below it,
  so the room graph has no cycle and no arrow runs up; the top level keeps at most 12 modules.
- Severities are ordered and spelled in one place, model.Severity: no other module writes a
  collection of severity names (an order, a subset, a map keyed by severity) or an order in text.
- Within a room: model and budget import nothing of the package, sources only the bounds
  (budget: every bound is there, and it imports nothing); the rule packs'
  loader imports neither the vocabulary nor the registry; the finding factory imports neither
  the vocabulary nor compare; the engine (files read) never imports the pipeline (the staged run).
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from scriptdiff.ruleset.rules import load

PKG = Path(__file__).resolve().parent.parent / "scriptdiff"
LAZY_NOTES = ("# lazy: keeps --help fast", "# lazy: keeps a fingerprint light")
CODE = re.compile(r"^SD\d{3}$")


def modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def imports(name: str, path: Path, known: dict) -> list[tuple[str, int, bool]]:
    """(imported package module, line, function-local) for each import of the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    out = []

    def visit(node, local: bool):
        for child in ast.iter_child_nodes(node):
            here = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            targets = []
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[:len(base) - (child.level - 1)]
                    mod = ".".join(base + ([child.module] if child.module else []))
                else:
                    mod = child.module or ""
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in child.names]
            for t in targets:
                if t == "scriptdiff" or t.startswith("scriptdiff."):
                    while t not in known and "." in t:
                        t = t.rsplit(".", 1)[0]
                    if t != name:
                        out.append((t, child.lineno, here))
            visit(child, here)

    visit(tree, False)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {t for t, _line, _local in imports(name, path, known)} for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return found


def test_the_import_graph_has_no_cycle():
    assert cycles(graph()) == []


def test_a_cycle_would_be_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_function_local_imports_of_the_package_only_keep_help_fast():
    known = modules()
    bad = []
    for name, path in known.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for target, line, local in imports(name, path, known):
            if local and not any(note in lines[line - 1] for note in LAZY_NOTES):
                bad.append(f"{path.relative_to(PKG.parent)}:{line} imports {target}")
    assert bad == []


# The rooms of the house, bottom up: a room imports only the rooms below it (the package's face,
# `scriptdiff`, holds the version and may be imported from anywhere). The run (pipeline, engine,
# compare, the finding factory) reaches the readers, checks and writers only through the kind
# and check registries (rules/kinds.yaml names their modules), never by an import.
ROOMS = ["severity", "model", "budget", "inputs", "ruleset", "run", "lang", "checks", "fix", "curves", "dumps", "report",
         "project", "api", "commands", "cli", "__main__"]
ROOM_FORBIDS = {"fix": {"checks"}}  # not implied by the order: fix/ (the editors) never imports checks/


def _layer(name: str) -> str:
    """A module's room: its folder under the package, or its own name at the top level."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def room_graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for src, targets in graph().items():
        for t in targets:
            a, b = _layer(src), _layer(t)
            if a != b and b != "scriptdiff":
                edges.setdefault(a, set()).add(b)
    return edges


def test_every_module_is_in_a_room_of_the_house():
    assert sorted({_layer(m) for m in modules()} - set(ROOMS) - {"scriptdiff"}) == []


def test_the_rooms_have_no_cycle_and_no_upward_import():
    edges = room_graph()
    assert cycles(edges) == []
    up = sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs
                if ROOMS.index(b) > ROOMS.index(a) or b in ROOM_FORBIDS.get(a, ()))
    assert up == []


def test_the_top_level_keeps_the_entry_points_and_little_else():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= 12, top


def test_imports_run_one_way():
    # within a room, what each module must not import (the rooms' order covers the rest)
    forbidden = {
        "scriptdiff.severity": {"*"},
        "scriptdiff.model": {"*"},
        "scriptdiff.budget": {"*"},
        "scriptdiff.inputs.sources": {"*"},
        "scriptdiff.inputs.filekind": {"*"},
        # where datasets and checkpoints live (disk, object storage): only sources and budget below it
        "scriptdiff.inputs.storage": {"scriptdiff.inputs.store", "scriptdiff.inputs.cache", "scriptdiff.model"},
        "scriptdiff.inputs.store": {"scriptdiff.model"},
        "scriptdiff.ruleset.rulepack": {"scriptdiff.ruleset.rules", "scriptdiff.ruleset.vocabulary",
                                        "scriptdiff.ruleset.registry"},
        "scriptdiff.ruleset.rules": {"scriptdiff.ruleset.vocabulary", "scriptdiff.ruleset.registry"},
        "scriptdiff.run.finding": {"scriptdiff.ruleset.vocabulary", "scriptdiff.run.compare", "scriptdiff.run.engine",
                                   "scriptdiff.run.pipeline"},
        "scriptdiff.ruleset.vocabulary": {"scriptdiff.ruleset.registry"},
        "scriptdiff.run.compare": {"scriptdiff.run.engine", "scriptdiff.run.pipeline", "scriptdiff.ruleset.registry"},
        # package lists as every reader states them: below the readers and the checks
        "scriptdiff.ruleset.packages": {"scriptdiff.ruleset.registry"},
        "scriptdiff.run.engine": {"scriptdiff.run.pipeline"},
    }
    allowed_below_model = {"scriptdiff", "scriptdiff.severity"}  # the package itself (its __version__); Severity
    # the bounds (budget imports nothing); what a file is by stat() (filekind imports only budget)
    may_import = {"scriptdiff.inputs.sources": {"scriptdiff.budget", "scriptdiff.inputs.filekind"},
                  "scriptdiff.inputs.filekind": {"scriptdiff.budget"}}
    # the CLI layer talks to the library only through the API (and the model, the writers)
    # (and the cache's storage: a replayed diff reads its entry without importing the library)
    # (and the bounds: budget.py holds the replay's too)
    # (and checks.entry, what api's fingerprint and merge functions are: a fingerprint imports
    # its hashing, not the library's face, issue 42)
    # (and, for one plain file's fingerprint, only the manifest's bytes, the whole-file hash and
    # the file's kind: commands/quickprint.py)
    cli_may_use = {"api", "model", "severity", "report", "commands", "cli", "scriptdiff.ruleset.rulepack", "scriptdiff",
                   "scriptdiff.inputs.store", "budget", "scriptdiff.checks.entry", "scriptdiff.checks.manifest",
                   "scriptdiff.checks.wholehash", "scriptdiff.inputs.filekind"}
    bad = []
    for src, targets in graph().items():
        if _layer(src) in ("commands", "cli"):
            bad += [f"{src} -> {t}" for t in targets if _layer(t) not in cli_may_use and t not in cli_may_use]
            continue
        rule = forbidden.get(src, set())
        for t in targets:
            if t in allowed_below_model or t in may_import.get(src, ()):
                continue
            if "*" in rule or t in rule:
                bad.append(f"{src} -> {t}")
    assert bad == []


def _value_strings(path: Path) -> list[tuple[int, str]]:
    """String literals that are not docstrings: (line, value)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_no_rule_code_is_written_in_package_code():
    bad = [f"{p.relative_to(PKG.parent)}:{line}: {v!r}" for p in modules().values()
           for line, v in _value_strings(p) if CODE.match(v)]
    assert bad == []


def _named_rules(arg: ast.expr) -> list[str]:
    """The rule names a call's first argument spells: a string, or either string of `a if c else b`."""
    if isinstance(arg, ast.IfExp):
        return _named_rules(arg.body) + _named_rules(arg.orelse)
    return [arg.value] if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else []


def test_every_rule_name_the_code_uses_exists():
    names = {r.name for r in load().rules.values()}
    used, made = set(), set()
    for p in modules().values():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
                if node.func.id == "code":
                    used.update(_named_rules(node.args[0]))
                elif node.func.id in ("finding", "reclassified"):  # the finding factory takes a name too
                    made.update(_named_rules(node.args[0 if node.func.id == "finding" else 1]))
    assert used and made, "the package names its rules with code(...) and finding(...)"
    assert (used | made) - names == set()
    masks = {r.name for r in load().rules.values() if r.kind == "mask"}
    assert made & masks == set(), "a mask is never a finding"


def test_every_finding_is_made_by_the_factory():
    """One severity per code: only scriptdiff/run/finding.py builds a Finding (from its rule), and
    cache.py reads stored ones back; nothing else constructs one or sets a severity (a Rule of
    the catalogue, parsed in rulepack.py, is where a severity is written)."""
    made, set_here = [], []
    for name, p in modules().items():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) \
                    and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) == "Finding":
                made.append(name)
            if isinstance(node, ast.Call) and any(k.arg == "severity" for k in node.keywords) \
                    and not (isinstance(node.func, ast.Name) and node.func.id == "Rule"):  # the catalogue's own
                set_here.append(f"{name}:{node.lineno}")
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                set_here += [f"{name}:{node.lineno}" for t in targets for e in ast.walk(t)
                             if isinstance(e, ast.Attribute) and e.attr == "severity"]
    assert sorted(set(made)) == ["scriptdiff.inputs.cache", "scriptdiff.run.finding"]
    assert [x for x in set_here if not x.startswith(("scriptdiff.inputs.cache:", "scriptdiff.run.finding:"))] == []


def test_the_lazy_note_is_a_comment_not_a_string():
    # the note must be a real comment on the import line, as the test above reads it
    for p in modules().values():
        for tok in tokenize.generate_tokens(io.StringIO(p.read_text(encoding="utf-8")).readline):
            if tok.type == tokenize.STRING:
                assert not any(note in tok.string for note in LAZY_NOTES), p


def test_the_readme_library_example_runs(capsys, monkeypatch):
    root = PKG.parent
    text = (root / "docs" / "library.md").read_text(encoding="utf-8")  # moved from the README (issue 41)
    block = text.split("# As a library", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(root)
    exec(compile(block, "docs/library.md", "exec"), {})
    # what the README says it prints: the sample block after the code (tests/test_doc_samples.py runs it too)
    said = text.split("# As a library", 1)[1].split("<!-- sample: python -->\n```\n", 1)[1].split("```", 1)[0]
    printed = said.splitlines()
    assert printed == ["SD201 use_flash_attn True -> False", "SD207 seed 42 -> 1234",
                       "SD206 adam_beta2 0.95 -> 0.999", "exit status: 1"]
    assert capsys.readouterr().out.splitlines() == printed


def test_only_the_cli_layer_prints():
    printing = []
    for name, p in modules().items():
        if _layer(name) in ("cli", "commands", "report"):
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name) and f.id == "print":
                printing.append(f"{p.relative_to(PKG.parent)}:{node.lineno} print()")
            if (isinstance(f, ast.Attribute) and f.attr == "write" and isinstance(f.value, ast.Attribute)
                    and f.value.attr in ("stdout", "stderr")):
                printing.append(f"{p.relative_to(PKG.parent)}:{node.lineno} sys.{f.value.attr}.write")
    assert printing == []


SEVERITY_NAMES = {"error", "warning", "info"}
SEVERITY_ORDER_TEXT = re.compile(r"\berror\b\W{1,6}\bwarning\b\W{1,6}\binfo\b")  # a page's script: ['error','warning','info']


def severity_spellings(source: str) -> list[str]:
    """Where a module writes severities itself: a tuple, list or set, a call's arguments or a
    dict's keys that are all severity names (two or more), or a string (not a docstring) that
    lists them in order."""
    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items, what = node.elts, "order"
        elif isinstance(node, ast.Call):
            items, what = node.args, "order"
        elif isinstance(node, ast.Dict):
            items, what = node.keys, "map"
        else:
            items, what = [], ""
        names = [x.value for x in items if isinstance(x, ast.Constant) and isinstance(x.value, str)]
        if len(items) >= 2 and len(names) == len(items) and set(names) <= SEVERITY_NAMES:
            out.append((node.lineno, f"{what} {', '.join(names)}"))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                and SEVERITY_ORDER_TEXT.search(node.value):
            out.append((node.lineno, f"text {SEVERITY_ORDER_TEXT.search(node.value).group(0)}"))
    return [f"{line}: {what}" for line, what in sorted(out)]


def test_only_the_severity_type_orders_or_spells_severities():
    bad = [f"{p.relative_to(PKG.parent)}:{where}" for name, p in modules().items() if name != "scriptdiff.severity"
           for where in severity_spellings(p.read_text(encoding="utf-8"))]
    assert bad == []


def test_a_severity_order_or_map_would_be_found():
    source = """\"\"\"error, warning, info: a docstring may say them.\"\"\"
STYLE = {"error": "red", "warning": "yellow", "info": "cyan"}
RANK = {"info": 0, "warning": 1, "error": 2}
if f.severity in ("error", "warning"):
    pass
for s in ["error", "warning", "info"]:
    pass
SEVERITY = Enum("error", "warning", "info")
JS = "var SEVS=['error','warning','info'];"
fine = ("error", "note")  # an input error's level: not a severity order
label = {"error": "x"}  # one name: not an order
"""
    assert severity_spellings(source) == ["2: map error, warning, info", "3: map info, warning, error",
                                          "4: order error, warning", "6: order error, warning, info",
                                          "8: order error, warning, info", "9: text error','warning','info"]


def _memoised(maxsizes: tuple) -> list[str]:
    """module:function of every function memoised by functools.lru_cache with one of `maxsizes`
    (None: unbounded, as functools.cache)."""
    out = []
    for name, p in sorted(modules().items()):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for d in node.decorator_list:
                f = d.func if isinstance(d, ast.Call) else d
                called = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if called == "cache":
                    size = None
                elif called == "lru_cache" and isinstance(d, ast.Call):
                    size = next((k.value.value for k in d.keywords if k.arg == "maxsize"),
                                d.args[0].value if d.args and isinstance(d.args[0], ast.Constant) else 128)
                else:
                    continue
                if size in maxsizes:
                    out.append(f"{name}:{node.name}")
    return out


def test_tables_derived_from_the_rules_are_views_not_singletons():
    """A table derived from the rule packs is a view of its RuleSet (rules.derived, RuleSet.view):
    a user's pack changes it in the same process (tests/test_rule_views.py). The singletons
    left are the process's own: the code's salt, the user packs' salt, the tree-sitter parser.
    Nothing clears caches by walking the loaded modules: the one cache_clear is the user packs'
    salt, read again when the packs are set."""
    assert _memoised((1, None)) == ["scriptdiff.inputs.store:salt", "scriptdiff.inputs.store:user_salt",
                                    "scriptdiff.lang.shell.grammar:parser"]
    clears = [f"{name}:{node.lineno}" for name, p in sorted(modules().items())
              for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
              if isinstance(node, ast.Attribute) and node.attr == "cache_clear"]
    assert [c.split(":")[0] for c in clears] == ["scriptdiff.inputs.store"]
    assert not any("sys.modules" in p.read_text(encoding="utf-8") and "cache_clear" in p.read_text(encoding="utf-8")
                   for p in modules().values())


GIT_MODULE = "scriptdiff.inputs.gitsrc"


# what starts a process from a command string (subprocess's, os's)
STARTERS = {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput", "system", "popen",
            "execv", "execvp", "execl", "execlp", "spawnv", "spawnvp", "spawnl", "spawnlp", "posix_spawn",
            "posix_spawnp", "create_subprocess_exec", "create_subprocess_shell"}


def runs_git(tree: ast.AST) -> list[int]:
    """Lines of the calls that start a program named git: any call given an argument vector
    (a list or tuple) that starts with "git", and a process starter given a command string
    that does."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        first = node.args[0]
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if isinstance(first, (ast.List, ast.Tuple)) and first.elts:
            first = first.elts[0]
        elif callee not in STARTERS:
            continue
        if isinstance(first, ast.Constant) and isinstance(first.value, str) \
                and (first.value == "git" or first.value.startswith("git ")):
            lines.append(node.lineno)
    return lines


def third_party_imports(tree: ast.AST) -> list[tuple[str, int]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name.split(".")[0], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.append((node.module.split(".")[0], node.lineno))
    return out


def test_git_is_read_only_through_gitpython_in_the_git_module():
    """GitPython is the one way git is read (issue 41): only inputs/gitsrc.py imports it, no
    other module starts git (by subprocess, os, or a runner of its own), and the git module
    itself starts no process but through GitPython's `Git.execute`."""
    imports_gitpython, starts_git = [], []
    for name, p in modules().items():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        imported = third_party_imports(tree)
        if name == GIT_MODULE:
            assert [m for m, _ in imported if m in ("subprocess", "multiprocessing", "pty")] == []
            assert ("git", ) in {(m,) for m, _ in imported}
            continue
        imports_gitpython += [f"{name}:{line}" for m, line in imported if m == "git"]
        starts_git += [f"{name}:{line}" for line in runs_git(tree)]
    assert imports_gitpython == [] and starts_git == []


def test_a_git_process_would_be_found():
    tree = ast.parse("import subprocess, os\nsubprocess.run(['git', 'status'])\nos.system('git log')\n"
                     "subprocess.Popen(('git', '-C', d, 'show'))\nrun(['npu-smi', 'info'])\nraw.get('git')\n"
                     "raise E('git is not installed')\n")
    assert runs_git(tree) == [2, 3, 4]


def test_help_does_not_import_gitpython():
    import subprocess
    import sys

    code = ("import contextlib, io, sys\nfrom scriptdiff.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['--help'])\n"
            "print(sorted(m for m in ('git', 'libcst', 'rich') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PKG.parent)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"

"""Command lines a Python file writes as text (issue 39: programs by shape).

A Python launcher often builds its program's options as strings and hands them to a runner:

    rollout_args = (
        "--rollout-batch-size 32 "
        f"--global-batch-size {GBS} "
        "--use-kl-loss "
    )
    run_training(train_args=ckpt_args + rollout_args)

Statement by statement, two such files differ in strings; what differs is options. Here a string
bound to a name whose text, split as shell words, starts with a long option is one *fragment*
of a command line, when the file holds at least one fragment of two options or more (the file
builds a command line; one `--x` alone elsewhere is not taken as one). Every fragment of the
file, in the order of the text, is read as the options of one program by the launch-script
reader (lang/shell: `--k v`, `--k=v`, `--flag`, vocabulary keys, typed values), each option at
the line of the string part that writes it. An f-string's placeholder is the value the evaluator
knows (a module constant), else an unset variable of its name: its options say they depend on
it, never a value invented. Each fragment's string is then compared as those options, not as
code (its value is owned by facts: lang/python/nodediff.py). Nothing is run.
"""
from __future__ import annotations

import libcst as cst

from ...inputs import flags
from ...inputs.sources import Source
from ...model import SideContext
from ...ruleset.secrets import redact_text
from .evaluate import env_read, value
from .parse import Parsed, dotted, node_index

_TEXT = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def _leaves(node) -> list:
    """The string literals an implicit concatenation is made of, in the order of the text (a
    walk, not a recursion: a chain of thousands of parts is one deep tree)."""
    out, stack = [], [node]
    while stack:
        x = stack.pop()
        if type(x) is cst.ConcatenatedString:
            stack += [x.right, x.left]
        else:
            out.append(x)
    return out


def _placeholder(p: Parsed, expr, parts_of: frozenset = frozenset()) -> str:
    if type(expr) is cst.Name and expr.value in parts_of:  # another fragment, read on its own
        return ""
    try:
        v = value(p, expr)
    except Exception:  # NotLiteral, and anything a hostile value raises: not known
        v = None
    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
        return str(v)
    var = env_read(p, expr)  # os.environ["STEPS"]: the run's environment, as a shell reads it
    name = var if isinstance(var, str) and var.isidentifier() else (dotted(expr) or "value").replace(".", "_")
    return "${" + name + "}"


def _text(p: Parsed, leaf, parts_of: frozenset = frozenset()) -> str | None:
    if type(leaf) is cst.SimpleString:
        try:
            v = leaf.evaluated_value
        except Exception:
            return None
        return v if isinstance(v, str) else None
    if type(leaf) is cst.FormattedString:
        out = []
        for part in leaf.parts:
            if type(part) is cst.FormattedStringText:
                out.append(part.value)
            elif type(part) is cst.FormattedStringExpression and part.format_spec is None and part.conversion is None:
                out.append(_placeholder(p, part.expression, parts_of))
            else:
                return None
        return "".join(out)
    return None


def _words(text: str) -> list[str] | None:
    import shlex  # lazy: keeps --help fast

    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote: not a command line
        return None


def _options(words: list[str]) -> int:
    """How many long options the words hold, 0 when the first word is not one."""
    first = flags.split(words[0]) if words else None
    if first is None or not first.long or not first.name:
        return 0
    return sum(1 for w in words if (f := flags.split(w)) is not None and f.long and f.name)


def _parts(p: Parsed, a: cst.Assign, parts_of: frozenset = frozenset()) -> list[tuple[int, str]]:
    parts = []
    for leaf in _leaves(a.value):
        t = _text(p, leaf, parts_of)
        if t is None:
            return []
        parts.append((p.line_of(leaf, 0), t.replace("\r", " ").replace("\n", " ")))
    return parts


def _made_of(node, names: frozenset) -> bool:
    """A string of names only, blanks between them, one of them a fragment (`f"{ckpt_args} "
    f"{rollout_args} "`): the command line put together."""
    seen = False
    for leaf in _leaves(node):
        if type(leaf) is cst.SimpleString:
            try:
                if str(leaf.evaluated_value).strip():
                    return False
            except Exception:
                return False
            continue
        if type(leaf) is not cst.FormattedString:
            return False
        for part in leaf.parts:
            if type(part) is cst.FormattedStringText:
                if part.value.strip():
                    return False
            elif type(part) is cst.FormattedStringExpression and type(part.expression) is cst.Name:
                seen = seen or part.expression.value in names
            else:
                return False
    return seen


def fragments(p: Parsed) -> tuple[list[tuple[cst.Assign, list[tuple[int, str]]]], list[cst.Assign]]:
    """Each fragment of a command line the file writes: its assignment and its parts, each
    (line, text), and the strings made only of fragments (`f"{ckpt_args} {rollout_args}"`:
    their options are read in those). Empty when no fragment holds two options."""
    found, most, texts = [], 0, []
    for a in node_index(p).assigns:
        if type(a.value) not in _TEXT or len(a.targets) != 1 or type(a.targets[0].target) not in (cst.Name,
                                                                                                 cst.Attribute):
            continue
        texts.append(a)
        parts = _parts(p, a)
        words = _words(" ".join(t for _l, t in parts)) if parts else None
        n = _options(words) if words else 0
        if n:
            found.append((a, parts))
            most = max(most, n)
    if most < 2:
        return [], []
    names = frozenset(a.targets[0].target.value for a, _parts in found if type(a.targets[0].target) is cst.Name)
    taken = {id(a) for a, _parts in found}
    made_of = [a for a in texts if id(a) not in taken and _made_of(a.value, names)]
    found.sort(key=lambda x: p.line_of(x[0], 0))
    return found, made_of


def read(p: Parsed, side: str) -> list:
    """The options of the command line the file writes, as facts at their lines (module doc);
    each fragment's value is owned by them."""
    got, made_of = fragments(p)
    if not got:
        return []
    from .. import shell  # lazy: keeps --help fast

    base = p.name.replace("\\", "/").rsplit("/", 1)[-1]
    text, lines = [f"python {base} \\"], [None]  # each run of parts that ends a word: a line of its own
    for _a, parts in got:
        run, at = "", None
        for line, t in parts:
            run, at = run + t, at or line
            if run.endswith((" ", "\t")):
                text.append(run.strip() + " \\")
                lines.append(at)
                run, at = "", None
        if run.strip():
            text.append(run.strip() + " \\")
            lines.append(at)
    text[-1] = text[-1][:-2]
    lines[0] = lines[1] if len(lines) > 1 else None
    src = Source(name=p.name, data=("\n".join(text) + "\n").encode("utf-8"))
    ex = shell.extract(src, SideContext(side if side in ("gpu", "npu") else "gpu"))
    out = []
    for f in ex.facts:
        if f.check != "hyperparameters" or f.key.startswith("config:") or not f.meta.get("flag"):
            continue  # the launcher's own settings and the references are the runner's, not written here
        at = lines[f.line - 1] if f.line and 0 < f.line <= len(lines) else None
        f.line = at
        f.source = redact_text(p.text_at(at), code=False) if at else ""  # a token in the string: withheld
        f.meta = {k: v for k, v in f.meta.items() if k in ("flag", "written_key", "unresolved")}
        f.meta["origin"] = {"computed": "an option of a command line the file writes as a string"}  # `fix` says so
        out.append(f)
    for a in [a for a, _parts in got] + made_of:  # compared as options, whatever the name holding them
        p.owned[id(a.value)] = "command line"
        p.owned[id(a.targets[0].target)] = "command line"
    return out

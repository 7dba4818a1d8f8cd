"""Values, not spellings: an assignment whose right-hand sides differ in text but compute the
same value is not a difference.

`lr_actor = 0.0003` on GPU and `lr_actor = args.lr_actor` on NPU (an argparse option whose
default is 0.0003) is the same value, moved into the configuration. Both sides are
evaluated through module constants, argparse and dataclass defaults, module-level config
dicts, `os.environ.get(name, default)` and simple arithmetic (`int(3e6)`,
`MAX_EP_LEN * 4`) by the evaluator (evaluate/), without running anything. Equal values are no
difference: an info "now configurable" when one side reads the value from an option or the
environment, nothing otherwise. Different values are reported once, with both values and
where each came from.

The plumbing of such a move (`parser.add_argument(...)`, `args = parser.parse_args()`, a
module constant on one side only, `rank = int(os.environ["RANK"])`) cannot change numerics by
itself: what reads it is compared through its value. It is an info, not a warning.
"""
from __future__ import annotations

import libcst as cst

from ...model import Severity, Side
from ...ruleset.devices import ids_count, visible_variable
from ...ruleset.rules import code
from ...ruleset.vocabulary import category, is_cosmetic, lookup
from .classify import Classifier, severity_rule
from .evaluate import Kind, NotLiteral, QName, Values, constant, env_read, value
from .evaluate.kinds import named
from .evaluate.plumbing import Role, of_value
from .facts import typed
from .pair import PairState, one_line
from .parse import Parsed, St, dotted, node_index, qualified_name

_PLUMBING_CALLS = ("add_argument", "parse_args", "parse_known_args", "ArgumentParser", "add_argument_group",
                   "set_defaults")


def _inert_flag(call: cst.Call) -> bool:
    """A `DEFINE_*(name, default, help)` whose default is None, or whose name says it cannot change
    numerics (a place, a cadence: rules/aliases.yaml `cosmetic_names`, `cosmetic_words`)."""
    args = [a for a in call.args if a.keyword is None]
    if not args or type(args[0].value) is not cst.SimpleString:
        return False
    default = args[1].value if len(args) > 1 else None
    flag = args[0].value.evaluated_value
    return (type(default) is cst.Name and default.value == "None") or (isinstance(flag, str) and is_cosmetic(flag))


def _evaluate(p: Parsed, node):
    """(value, what it was read through) or None when the value is not known statically."""
    used: list = []
    try:
        v = value(p, node, used)
    except Exception:  # NotLiteral, and whatever a hostile value raises
        return None
    if isinstance(v, QName) and v.kind is not Kind.DTYPE:  # a name the imports resolve: not a value to compare
        return None
    return v, [name for name, _node in used]


def _dtype_key(p: Parsed, target: str) -> str | None:
    """The setting a dtype held in `target` is: the key its name spells (`dtype`, `compute_dtype`),
    else the precision its uses set (`model.to(dt)`, `autocast(dtype=dt)`: params_dtype;
    `from_pretrained(torch_dtype=dt)`: load_dtype); None when neither says."""
    key = lookup(target)
    if key is not None and category(key).rule == category("params_dtype").rule:
        return key
    found = None
    for c in p.state.calls if p.state is not None else ():
        for a in c.args:
            if type(a.value) is not cst.Name or a.value.value != target:
                continue
            kw = a.keyword.value if a.keyword is not None else None
            last = (dotted(c.func) or "").rsplit(".", 1)[-1]
            if kw == "torch_dtype" and last == "from_pretrained":
                return "load_dtype"
            if (last == "to" and kw in (None, "dtype")) or (last == "autocast" and kw == "dtype"):
                found = "params_dtype"
    return found


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _assign(st: St):
    """(target node, value node) of a statement that is one plain assignment, else None."""
    if st.kind != "simple" or len(st.node.body) != 1:
        return None
    small = st.node.body[0]
    if type(small) is cst.Assign and len(small.targets) == 1:
        return small.targets[0].target, small.value
    if type(small) is cst.AnnAssign and small.value is not None:
        return small.target, small.value
    return None


def _configurable(via: list) -> list:
    """What of a value's origins a user can change without editing the code: an option, a
    dataclass field, an environment variable (a module constant or dict is code)."""
    return [v for v in via if v.startswith("--") or v.startswith("$") or ("." in v and "[" not in v)]


class ValueChecks:
    """Compares assignments by value, and classifies the plumbing of a moved value."""

    def __init__(self, state: PairState, classifier: Classifier):
        self.s = state
        self.cls = classifier

    def visible_entry(self, target) -> bool:
        """`os.environ["CUDA_VISIBLE_DEVICES"]` (or its NPU twin): the devices a process sees."""
        if type(target) is not cst.Subscript or len(target.slice) != 1 or type(target.slice[0].slice) is not cst.Index:
            return False
        key = constant(target.slice[0].slice.value)
        return qualified_name(self.s.g, target.value) == "os.environ" and isinstance(key, str) \
            and visible_variable(key)

    def assign(self, gs: St, ns: St, scope: str) -> bool:
        """True when the pair's difference was decided here (reported or not)."""
        s = self.s
        ga, na = _assign(gs), _assign(ns)
        if ga is None or na is None or s.gn(ga[0]) != s.nn(na[0]):
            return False
        gv, nv = _evaluate(s.g, ga[1]), _evaluate(s.n, na[1])
        if gv is None or nv is None:
            return False
        gside = Side(value=gv[0], path=s.g.name, line=gs.line, source=s.g.text_at(gs.line))
        nside = Side(value=nv[0], path=s.n.name, line=ns.line, source=s.n.text_at(ns.line))
        target = one_line(s.g.code(ga[0]), 60)
        index = named(dotted(ga[0])) == "device"  # device = 0 against device = "npu:0": an index is a device
        roles = [of_value(v[0]) if isinstance(v[0], str) else Role("device", True)
                 if index and type(v[0]) is int else None for v in (gv, nv)]
        if roles[0] is not None and roles[0] == roles[1] and gv[0] != nv[0]:  # "cuda" against "npu:0": one device
            s.add_masked(code("device-plumbing"), gside, nside)
            return True
        if self.visible_entry(ga[0]) and ids_count(gv[0]) is not None and ids_count(gv[0]) == ids_count(nv[0]):
            s.add_masked(code("device-plumbing"), gside, nside)  # os.environ[VISIBLE] = "0" against "1": as many
            return True
        if _same(gv[0], nv[0]):
            gc, nc = _configurable(gv[1]), _configurable(nv[1])
            if gc != nc:
                what = " and ".join(f"on {w} through {', '.join(c)}" for w, c in (("GPU", gc), ("NPU", nc)) if c)
                s.add_finding(severity_rule(Severity.INFO), scope, gside, nside,
                              f"{target}: now configurable {what} (same default {gv[0]!r})")
            return True
        where = "; ".join(f"{w}: through {', '.join(v[1])}" for w, v in (("GPU", gv), ("NPU", nv)) if v[1])
        msg = f"{target} is {gv[0]!r} on GPU and {nv[0]!r} on NPU" + (f" ({where})" if where else "")
        name = dotted(ga[0])
        if isinstance(gv[0], QName) or isinstance(nv[0], QName):  # dtype = torch.float16 if npu else ...
            key = _dtype_key(s.g, name) if name and "." not in name else None
            if key is None:
                return False  # compared as code
            gside.value, nside.value = typed(key, gv[0]), typed(key, nv[0])
            s.add_hparam(key, gside, nside, f"{msg}: the precision it sets")
            return True
        key = lookup(name.rsplit(".", 1)[-1]) if name else None
        if key is not None:  # n_layer = 12 against n_layer = args.n_layer: the hyperparameter num_layers
            s.add_hparam(key, gside, nside, msg)
            return True
        sev, extra = self.cls.grade_statements(self.cls.classify(None, [gs, ns], scope), gs, ns)
        s.add_finding(severity_rule(sev), scope, gside, nside, msg, extra)
        return True

    def names(self, side: str) -> set:
        """The names the *other* side reads or binds: a constant it also uses is not plumbing."""
        other = self.s.n if side == "gpu" else self.s.g
        if other.names is None:
            other.names = {node.value for node in node_index(other).names}
        return other.names

    def plumbing(self, st: St, p: Parsed, side: str, scope: str) -> bool:
        """A statement on one side only that only declares configuration: an info finding. A
        function of the file that takes no argument and returns a value known statically
        (`def get_backend(): return "gloo"`) is one too: its calls are compared by their value."""
        if type(st.node) is cst.FunctionDef and scope == "<module>" and st.node.name.value not in self.names(side) \
                and not any(prm.default is None for prm in st.node.params.params):
            try:
                v = Values(p).call_function(st.node, cst.Call(func=cst.Name(st.node.name.value)), [], 0)
            except NotLiteral:
                return False
            if isinstance(v, (QName, bytes)) or v is not None and not isinstance(v, (str, int, float, bool, list)):
                return False
            sd = Side(value=f"{st.node.name.value}()", path=p.name, line=st.line, source=p.text_at(st.line))
            self.s.add_finding(severity_rule(Severity.INFO), st.node.name.value, sd if side == "gpu" else None,
                               sd if side == "npu" else None,
                               f"function on {'GPU' if side == 'gpu' else 'NPU'} only: {st.node.name.value}() returns "
                               f"{v!r} (its calls are compared by value)")
            return True
        if st.kind != "simple":
            return False
        what = None
        for small in st.node.body:
            value = small.value if type(small) in (cst.Assign, cst.AnnAssign, cst.Expr) else None
            if type(small) is cst.Assign and scope == "<module>" and len(small.targets) == 1 \
                    and type(small.targets[0].target) is cst.Name and _evaluate(p, small.value) is not None \
                    and small.targets[0].target.value not in self.names(side):
                what = what or f"constant {small.targets[0].target.value}"
                continue
            env = env_read(self.s.g if side == "gpu" else self.s.n, value)
            if type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name \
                    and env is not None:  # rank = int(os.environ["RANK"]): what reads it is compared
                what = what or f"${env} read into {small.targets[0].target.value}"
                continue
            if type(value) is cst.Call:
                callee = dotted(value.func) or ""
                name = callee.rsplit(".", 1)[-1]
                # TensorFlow's and absl's flags (`tf.flags.DEFINE_string("obs_dir", None, ...)`): options
                # too, when they set nothing (no default) or name no numerics; a flag's default is
                # read as a setting (facts.py), and any other one-sided flag stays a difference
                flag = name.startswith("DEFINE_") and "flags" in callee.split(".") and _inert_flag(value)
                if name in _PLUMBING_CALLS or flag:
                    what = what or ("option " + one_line(p.code(value.args[0].value), 40)
                                    if (name == "add_argument" or flag) and value.args else f"{name}()")
                    continue
            return False
        if what is None:
            return False
        sd = Side(value=one_line(st.raw), path=p.name, line=st.line, source=p.text_at(st.line))
        where = "GPU" if side == "gpu" else "NPU"
        self.s.add_finding(severity_rule(Severity.INFO), scope, sd if side == "gpu" else None,
                           sd if side == "npu" else None,
                           f"configuration on {where} only: {what} (its uses are compared by value)")
        return True

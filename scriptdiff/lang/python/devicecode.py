"""Code for one device only, in a pair compared after specialisation (docs/devices.md).

What one side alone has is usually a difference ("statement on GPU only"); three kinds of
it are the port itself or need their own words, and are handled here for the aligner:

- the definition or import of a device test that only one side needs (`IS_NPU =
  is_torch_npu_available()`, `def get_device()`) is set aside (SD019);
- NPU-only tuning on the NPU side (`torch.npu.config.allow_internal_format = False`,
  `torch.npu.set_compile_mode(jit_compile=False)`: rules/devices.yaml `npu_tuning`) is the
  expected port (SD020), and so is an `if` on the NPU side only that holds nothing but the
  adapter's imports and such tuning (`if torch.__version__ >= "1.8": import torch_npu`);
- a CUDA-only switch (`torch.backends.cudnn.deterministic = True`, TF32) does nothing on an
  NPU, so it is classified by what it does on the GPU: a determinism switch on the GPU path
  only is SD106 (warning) naming the NPU way, any other CUDA-only switch there SD107 (info);
  a TF32 switch turned on in the GPU program is SD107 with its numerics note wherever the
  NPU side has it or not (`tf32_notes`), unless the NPU side turns on its HF32 counterpart.
"""
from __future__ import annotations

import fnmatch

import libcst as cst

from ...model import Side
from ...ruleset.devices import table
from ...ruleset.rules import code
from .pair import PairState, one_line
from .parse import Parsed, St, canon_qn, expected_import, import_items, qualified_name
from .evaluate.plumbing import plumbing_table
from .evaluate import constant, switch, tuning


_qualified = qualified_name


def _first_string(node) -> str | None:
    """The first string literal in a value (`tf.compat.as_bytes("allow_mix_precision")`, b"..."):
    what it names, or None."""
    stack = [node]
    while stack:
        n = stack.pop(0)
        if type(n) is cst.SimpleString:
            v = n.evaluated_value
            return v.decode("utf-8", "replace") if isinstance(v, bytes) else v
        stack.extend(n.children)
    return None


def _subscripted(target, key: str) -> bool:
    """`x[KEY]` or `x[KEY].attr`: an assignment target that indexes by the string KEY."""
    while type(target) is cst.Attribute:
        target = target.value
    if type(target) is not cst.Subscript or len(target.slice) != 1:
        return False
    index = target.slice[0].slice
    return type(index) is cst.Index and type(index.value) is cst.SimpleString \
        and index.value.evaluated_value == key


def _literal(node):
    v = constant(node)
    return v if isinstance(v, (bool, str)) else None  # a switch's True, or fp32_precision's "tf32"


def assignments(p: Parsed, st: St) -> list[tuple[str, object, cst.CSTNode]]:
    """(qualified target, literal value (a bool or a string) or None, node) of each `a.b.c = v`
    in a simple statement."""
    out = []
    if st.kind != "simple":
        return out
    for small in st.node.body:
        if type(small) is cst.Assign and len(small.targets) == 1:
            qn = _qualified(p, small.targets[0].target)
            if qn is not None:
                out.append((qn, _literal(small.value), small))
    return out


class DeviceChecks:
    """The device-only statements of one pair (see the module doc)."""

    def __init__(self, state: PairState):
        self.s = state
        self.same_file = state.g.lines == state.n.lines  # one file read once per device
        self.pending: dict = {}  # (determinism, scope, NPU test line) -> [(statement, switch, value, entry)]

    def one_sided(self, st: St, side: str, scope: str) -> bool:
        """A statement on one side only that is handled here (masked or reported): True."""
        p = self.s.g if side == "gpu" else self.s.n
        here = Side(path=p.name, line=st.line, source=p.text_at(st.line))
        gside, nside = (here, None) if side == "gpu" else (None, here)
        if p.spec is not None and id(st.node) in p.spec.plumbing:
            self.s.add_masked(code("device-branch"), gside, nside)
            return True
        if side == "npu" and self.npu_tuning(p, st):
            self.s.add_masked(code("npu-only-tuning"), None, nside)
            return True
        if side == "npu" and self.tf_session(p, st, nside):
            return True
        if side == "npu" and self.npu_setup_block(p, st):  # if torch.__version__ >= "1.8": import torch_npu
            for x in _walk([st]):
                if x is not st:
                    rule = code("npu-only-tuning") if x.kind == "simple" else None
                    if x.kind == "import":
                        rule = next((expected_import(qn, "npu") for small in x.node.body
                                     for _b, qn in import_items(small)), None) or code("adapter-import")
                    self.s.add_masked(rule, None, Side(path=p.name, line=x.line, source=p.text_at(x.line)))
            return True
        if self.device_seed(p, st):  # torch_npu.npu.manual_seed_all(seed) beside torch.manual_seed(seed)
            self.s.add_masked(code("device-plumbing"), gside, nside)
            return True
        if side == "npu" and st.kind == "simple":
            # a CUDA-only switch the NPU program sets (`torch.backends.cudnn.deterministic = True`):
            # it does nothing on the NPU, so nothing differs there
            found = [(qn, v, switch(qn)) for qn, v, _n in assignments(p, st)]
            if found and all(sw is not None for *_r, sw in found) and len(found) == len(st.node.body):
                said = ", ".join(f"{qn} = {v}" for qn, v, _sw in found)
                s = self.s
                s.add_finding(code("cuda-only-switch"), scope, None,
                              Side(value=said, path=p.name, line=st.line, source=p.text_at(st.line)),
                              f"{said}: set on the NPU path only, a CUDA-only switch: it does nothing on the NPU")
                return True
        if side == "gpu":
            # the switches themselves, or an `if args.allow_tf32 and torch.cuda.is_available():` that
            # holds nothing else (the NPU took no branch of it)
            sts = [st] if st.kind == "simple" else [x for x in _walk([st]) if x is not st] \
                if type(st.node) is cst.If else []
            found = [(x, qn, v, switch(qn)) for x in sts for qn, v, _n in assignments(p, x)]
            if found and all(sw is not None for *_r, sw in found) and \
                    len({id(x) for x, *_r in found}) == sum(1 for x in sts if x.kind == "simple"):
                for x, qn, v, sw in found:
                    self.gpu_only_switch(x, qn, v, sw, scope)
                return True
        return False

    def tf_session(self, p: Parsed, st: St, nside: Side) -> bool:
        """A statement on the NPU only that configures TensorFlow's NpuOptimizer (rules/devices.yaml
        `python.tf_session`): masked as NPU tuning, its precision mode compared as the run's
        precision. True when every part of it is such configuration."""
        t = (table().get("python") or {}).get("tf_session")
        if not t or st.kind != "simple":
            return False
        precision = None
        for small in st.node.body:
            if type(small) is not cst.Assign or len(small.targets) != 1:
                return False
            target, value = p.code(small.targets[0].target), p.code(small.value)
            if _subscripted(small.targets[0].target, t["precision"]):  # parameter_map["precision_mode"].s
                precision = _first_string(small.value)
                if precision is None:
                    return False
            elif not (any(fnmatch.fnmatchcase(target, x) for x in t["targets"])
                      or any(fnmatch.fnmatchcase(value, x) for x in t["values"])):
                return False
        if precision is not None and precision not in (t.get("keeps") or ()):
            s = self.s
            shown = Side(value=precision, path=p.name, line=st.line, source=p.text_at(st.line))
            s.add_hparam("params_dtype", None, shown,
                         f"compute dtype: NpuOptimizer {t['precision']} {precision} on NPU only: float16 where the "
                         f"NPU's operators allow it, where the GPU's TensorFlow computes in the graph's own dtypes")
            return True
        self.s.add_masked(code("npu-only-tuning"), None, nside)
        return True

    @staticmethod
    def device_seed(p: Parsed, st: St) -> bool:
        """A device generator seeded (rules/devices.yaml `device_seeds.device`) with the very
        argument this side gives `torch.manual_seed` somewhere in the file, which seeds every
        device's generator already: a statement of such calls only."""
        seeds = plumbing_table().seeds
        if st.kind != "simple" or not seeds:
            return False
        calls = [small.value for small in st.node.body if type(small) is cst.Expr and type(small.value) is cst.Call]
        if not calls or len(calls) != len(st.node.body):
            return False
        given = None
        for c in calls:
            qn = _qualified(p, c.func)
            if qn is None or qn not in seeds["device"] and canon_qn(qn, None) not in seeds["device"] \
                    or len(c.args) != 1:
                return False
            if given is None:
                given = {p.code(x.args[0].value) for x in _calls_of(p, seeds["all"])}
            if p.code(c.args[0].value) not in given:
                return False
        return True

    def npu_tuning(self, p: Parsed, st: St) -> bool:
        if st.kind != "simple":
            return False
        for small in st.node.body:
            if type(small) is cst.Assign and len(small.targets) == 1:
                qn = _qualified(p, small.targets[0].target)
            elif type(small) is cst.Expr and type(small.value) is cst.Call:
                qn = _qualified(p, small.value.func)
            else:
                return False
            if qn is None or not tuning(qn):
                return False
        return True

    def npu_setup_block(self, p: Parsed, st: St) -> bool:
        """An `if` (without else) on the NPU side only whose body only imports the NPU adapter or
        tunes the NPU: the port's set-up, whatever it tests (`if torch.__version__ >= "1.8":`)."""
        if type(st.node) is not cst.If or st.node.orelse is not None or not st.clauses:
            return False
        body = st.clauses[0][2]
        if not body:
            return False
        for x in body:
            if x.kind == "import":
                if not all(expected_import(qn, "npu") for small in x.node.body for _b, qn in import_items(small)):
                    return False
            elif not self.npu_tuning(p, x):
                return False
        return True

    def gpu_only_switch(self, st: St, qn: str, value, sw: dict, scope: str) -> None:
        """Noted here, said by `finish`: the switches of one block are one decision, one finding."""
        if sw.get("tf32"):
            return  # said by finish, whichever sides set it
        s = self.s
        at = None
        if self.same_file and s.n.spec is not None and st.line in s.n.spec.skipped:
            at = s.n.spec.skipped[st.line]  # the NPU's branch that skips it
        determinism = "determinism" in sw and value is sw["determinism"]
        self.pending.setdefault((determinism, scope, at), []).append((st, qn, value, sw))

    def npu_deterministic(self) -> bool:
        return any(f.key == "deterministic" and f.value is True and f.line is not None for f in self.s.n.facts)

    def finish(self) -> None:
        """The CUDA-only switches noted during the alignment, and the TF32 notes (module doc)."""
        s = self.s
        answered = self.npu_deterministic()
        for (determinism, scope, at), found in self.pending.items():
            first = found[0][0]
            said = ", ".join(f"{qn} = {value}" for _st, qn, value, _sw in found)
            gside = Side(value=said, path=s.g.name, line=first.line, source=s.g.text_at(first.line))
            nside = Side(value=None, path=s.n.name, line=at, source=s.n.text_at(at)) if at is not None else None
            where = f"; the NPU takes the branch at line {at} instead" if at is not None else ""
            sw = found[0][3]
            if determinism and not answered:
                s.add_finding(code("determinism-switch-gpu-only"), scope, gside, nside,
                              f"{said}: set on the GPU path only ({sw.get('note', 'a CUDA-only switch')}), so "
                              f"the NPU run is not made deterministic by it{where}; the NPU way is "
                              f"{sw.get('npu_way', 'not known')} ({sw.get('source', 'rules/devices.yaml')})")
                continue
            why = "the NPU side sets torch.use_deterministic_algorithms(True)" if determinism \
                else "; ".join(dict.fromkeys(x[3].get("note", "it does nothing on the NPU") for x in found))
            s.add_finding(code("cuda-only-switch"), scope, gside, nside,
                          f"{said}: set on the GPU path only, a CUDA-only switch: {why}{where}")
        self.tf32_notes()

    def tf32_notes(self) -> None:
        """SD107 for each TF32 switch turned on in the GPU program (see the module doc)."""
        s = self.s
        hf32 = {qn.rsplit(".", 2)[-2] for st in _walk(s.n.body) for qn, v, _n in assignments(s.n, st)
                if v is True and qn.endswith(".allow_hf32")}
        for st, scope in _walk_scoped(s.g.body, "<module>"):
            for qn, v, _n in assignments(s.g, st):
                sw = switch(qn)
                if not sw or not sw.get("tf32") or not _turns_on(v, sw["tf32"]):
                    continue
                kinds = {"matmul"} if ".matmul." in qn else {"conv"} if ".cudnn." in qn else {"matmul", "conv"}
                if kinds <= hf32:
                    continue
                gside = Side(value=one_line(st.raw), path=s.g.name, line=st.line, source=s.g.text_at(st.line))
                s.add_finding(code("cuda-only-switch"), scope, gside, None,
                              f"{qn} = {v!r} turns TF32 on in the GPU run and does nothing on the NPU: "
                              f"{sw.get('note', '')}")


def _turns_on(v, on) -> bool:
    """Whether the value `v` assigned to a TF32 switch is the one that turns it on (`on`: True,
    or the string "tf32" of PyTorch 2.9's fp32_precision)."""
    return v is True if on is True else isinstance(v, str) and v.lower() == str(on).lower()


def _calls_of(p: Parsed, names) -> list[cst.Call]:
    """The one-argument calls in `p` of the functions `names` (qualified)."""
    out = []
    for st in _walk(p.body):
        if st.kind != "simple":
            continue
        for small in st.node.body:
            v = small.value if type(small) in (cst.Expr, cst.Assign) else None
            if type(v) is cst.Call and len(v.args) == 1 and _qualified(p, v.func) in names:
                out.append(v)
    return out


def _walk(sts: list[St]):
    for st, _scope in _walk_scoped(sts, "<module>"):
        yield st


def _walk_scoped(sts: list[St], scope: str):
    for st in sts:
        yield st, scope
        inner = scope
        if st.name is not None:
            inner = st.name if scope == "<module>" else f"{scope}.{st.name}"
        for _label, _node, body in st.clauses:
            yield from _walk_scoped(body, inner)

"""Hyperparameter facts read from Python code.

argparse `add_argument(..., default=)`, TrainingArguments-like config constructors,
`from_pretrained(attn_implementation=, torch_dtype=)`, optimizer constructors, GradScaler,
autocast, clip_grad_norm_, seeds and determinism switches: which calls and keywords are read
is the `fact_calls` table in rules/python.yaml; keys and types come from the vocabulary.
Values are the evaluator's (evaluate/: literals, arithmetic on literals, module level
constants (`LR = 1e-4`), `args.<dest>` references to an argparse default, this device's value
of a device test), read without running anything and metered (scriptdiff/budget.py): a value
too large to evaluate is said in the input's account (Parsed.too_large), not built.

Every argument read this way is *owned* by the hyperparameter comparison: the structural
diff sees it as a placeholder, so a changed lr is reported once, as a hyperparameter.
"""
from __future__ import annotations

import libcst as cst

from ... import budget
from ...model import ORIGIN_DEFAULT, RANK_CODE, RANK_DEFAULT, Fact
from ...ruleset.secrets import is_secret, redact_text, withheld
from ...ruleset.vocabulary import (convert, fits, key_type, lookup, may_mean, meaning_key, name_key, names_component,
                                   nested_key, norm_name, normalize, run_wide_keys, section_name, spelling_index,
                                   value_ports)
from .evaluate import NotLiteral, QName, Values, add_argument, family_entry, flag_define, fields, is_dataclass, module_consts
from . import cmdtext
from .focus import fact_callee_names
from .regions import read_settings
from ...ruleset.devices import family_of, table as device_table
from ...ruleset.registry import kinds
from ...ruleset.rules import RuleSet, derived
from .evaluate.program import program
from .parse import Norm, Parsed, canon_qn, dotted, library_roots, match_name, node_index, qualified_name, rules


def norm_dtype(v):
    if v is None:
        return None
    s = str(v).strip()
    for canon, names in (rules().raw.get("dtype_names") or {}).items():
        if s in names or s.rsplit(".", 1)[-1] in names:
            return canon
    return s


def typed(key: str, v):
    t = key_type(key)
    if t == "dtype" or key == "params_dtype":
        d = norm_dtype(v)
        if key in value_ports() and isinstance(v, (str, int)) and not isinstance(v, bool) \
                and d not in (rules().raw.get("dtype_names") or {}):
            d = convert(key, v)[1]  # Lightning precision="bf16-mixed", precision=16
        return d
    if isinstance(v, QName):
        v = str(v)
    return normalize(v, t)


@derived
def code_names(rs: RuleSet) -> dict:
    """rules/python.yaml generic_keywords.names: keyword -> key (None: never a setting)."""
    return dict((rules(rs).raw.get("generic_keywords") or {}).get("names") or {})


@derived
def mapping_types(rs: RuleSet) -> frozenset:
    """rules/python.yaml generic_keywords.mapping_types: mapping types built from one dict literal."""
    return frozenset((rules(rs).raw.get("generic_keywords") or {}).get("mapping_types") or ())


@derived
def generic_skip(rs: RuleSet) -> tuple:
    """Calls whose keywords are never settings: generic_keywords.skip, and the scheduler calls
    that ask for devices (rules/devices.yaml resource_requests: `num_gpus=1` of `ray.remote` is
    an actor's share of the machine, not the run's world size)."""
    requests = (((device_table(rs).get("python") or {}).get("plumbing") or {}).get("resource_requests") or {})
    return tuple((rules(rs).raw.get("generic_keywords") or {}).get("skip") or ()) + tuple(requests.get("calls") or ())


def _spoken_for(dest: str) -> bool:
    """An option another table reads in its own way: a switch whose value names a key
    (`--bf16`: params_dtype, rules/python.yaml value_maps / hf_extra), a keyword the code reader
    keys itself (generic_keywords.names), or a reference to a file of a known kind (`--deepspeed
    ds.json`): not a setting under its own name."""
    r = rules().raw
    return dest in (r.get("value_maps") or {}) or dest in (r.get("hf_extra") or {}) or dest in code_names() \
        or any(dest in (k.referenced or ()) for k in kinds().values())


def python_spelled(qn: str) -> bool:
    """A callee whose keywords the vocabulary's `python` column spells (an optimizer's eps=)."""
    return match_name(qn.rsplit(".", 1)[-1], (rules().raw.get("generic_keywords") or {}).get("python_spellings") or ())


class Reader:
    def __init__(self, p: Parsed, side: str):
        self.p = p
        self.side = side
        self.nm = Norm(p)
        self.argdests: dict[str, str] = {}
        self.const_keys: dict[str, str] = {}  # module constant -> the key it is a setting of
        self.values = Values(p, account=True)  # the evaluator's value face, metered once for this reader
        self.bound: dict[int, str] = {}  # id(call) -> the name its result is assigned to (`optimizer = ...`)
        self.matched: set[int] = set()  # ids of the calls the fact table names

    def bind(self, f: Fact, call) -> Fact:
        """The name the call's result is bound to, on a fact read from the call: what a call of
        code not read that is bound to the same name on the other side may set (built_elsewhere)."""
        name = self.bound.get(id(call))
        if name is not None:
            f.meta["bound"] = name
        return f

    def argref(self, node) -> str | None:
        """`args.lr` where lr is an argparse dest read as a fact: its key."""
        if type(node) is cst.Attribute and type(node.value) is cst.Name:
            return self.argdests.get(node.attr.value)
        return None

    # --------------------------------------------------------------------- facts
    def fact(self, key: str, value, node, used: list, callee: str, written: str | None = None,
             index: int | None = None) -> Fact:
        p = self.p
        if written is None and type(node) is cst.Arg and node.keyword is not None:
            written = node.keyword.value  # from_pretrained(..., use_flash_attention_2=True)
        via = None
        line = p.line_of(node)
        if used:
            name, cnode = used[-1]
            written_at = node.value if type(node) is cst.Arg else node
            if type(written_at) in (cst.Name, cst.Attribute, cst.Subscript, cst.IfExp) or (
                    type(written_at) is cst.Call and any(n.endswith("()") for n, _c in used)):
                # lr=LR: where LR is set, lr=lr(): where it returns it; lr=LR * 2 stays where it is computed
                line = p.line_of(cnode, line)
            via = name
            for _n, c in used:
                p.owned[id(c)] = key
        value, source = typed(key, value), p.text_at(line)
        known = set()
        if isinstance(value, str) and is_secret(key, value):  # a credential passed as a setting: never shown
            value, known = withheld(value), {value}
        source = redact_text(source, known, code=True)  # and none shown in the line of another setting
        meta = {"callee": callee, "written_key": written} if written else {"callee": callee}
        meta["origin"] = self.values.origin(node.value if type(node) is cst.Arg else node, index) if not known \
            else {"computed": "a secret-looking value"}
        if callee != "argparse":  # an option is the flag's setting; a call's is that call's (compare.slot)
            meta["slot"] = f"{callee.rsplit('.', 1)[-1]}.{written or key}"
        return Fact(key=key, value=value, check="hyperparameters", path=p.name, line=line,
                    source=source, rank=RANK_CODE, via=via, meta=meta)

    def default(self, key: str, value, callee: str, node) -> Fact:
        f = Fact(key=key, value=typed(key, value), check="hyperparameters", path=self.p.name, line=None,
                 source="default", origin=ORIGIN_DEFAULT, rank=RANK_DEFAULT, via=f"{callee} default",
                 meta={"callee": callee, "call_line": self.p.line_of(node), "call": self.p.position(node)})
        return self.bind(f, node)

    def read_arg(self, keys, arg, call, callee: str, vmap: dict | None = None, written: str | None = None) -> bool:
        """Facts from one argument; marks it owned. keys: a key or a list (tuple argument)."""
        p = self.p
        ref = self.argref(arg.value)
        if ref is not None and ref == keys:
            # the value is the argparse fact itself; the call is not a fact of its own, so a
            # call removed on one side is still a structural difference
            p.owned[id(arg.value)] = keys
            return True
        # an option read under another key (torch.cuda.manual_seed_all(args.seed): device_seed)
        # is that key's fact too, with the option's default
        used: list = []
        try:
            v = self.values.evaluate(arg.value, used)
        except (NotLiteral, Exception):
            return False
        if isinstance(keys, list):
            if not isinstance(v, list) or len(v) != len(keys):
                return False
            for i, (k, x) in enumerate(zip(keys, v)):
                p.facts.append(self.bind(self.fact(k, x, arg, used, callee, index=i), call))
                p.facts[-1].meta["call"] = p.position(call)
            p.owned[id(arg.value)] = "+".join(keys)
        else:
            if vmap is not None:
                if v in vmap:
                    v = vmap[v]
                elif isinstance(v, str) and v in {str(k): 1 for k in vmap}:
                    v = {str(k): x for k, x in vmap.items()}[v]
            p.facts.append(self.bind(self.fact(keys, v, arg, used, callee, written), call))
            p.facts[-1].meta["call"] = p.position(call)
            p.owned[id(arg.value)] = keys
        p.fact_calls.add(id(call))
        return True

    def argparse(self, call, defined=None) -> None:
        """An option's default as a setting: an `add_argument`, or a flag definition as
        `flag_define` reads it (`defined`)."""
        p = self.p
        _strings, kws, dest = defined or add_argument(call)
        if dest is None:
            return
        key = lookup(dest)
        if key is None and "default" in kws:
            key = self.meant(dest, kws["default"].value)  # --batch-per-device (default 8): micro_batch_size
        option = key is None  # an option no vocabulary names: a setting under its own name
        if option:
            if not dest.isidentifier() or _spoken_for(dest):
                return
            key = dest
        if "default" in kws:
            if self.read_arg(key, kws["default"], call, "argparse", written=dest):
                self.argdests[dest] = key
                if option:  # compared where both sides define it (one side's own option: said by the code diff)
                    p.facts[-1].meta["option"] = True
                    p.fact_calls.discard(id(call))
            return
        act = kws.get("action")
        if act is not None and type(act.value) is cst.SimpleString and act.value.evaluated_value in ("store_true", "store_false"):
            v = act.value.evaluated_value == "store_false"
            p.facts.append(self.fact(key, v, act, [], "argparse", written=dest))
            p.facts[-1].meta["origin"] = {"computed": f"the default of `action={act.value.value}` follows from "
                                                      f"the action"}
            p.owned[id(act.value)] = key
            if option:
                p.facts[-1].meta["option"] = True
            else:
                p.fact_calls.add(id(call))
            self.argdests[dest] = key

    def call(self, call) -> None:
        p = self.p
        raw = self.nm.callee(call)
        if raw is None and type(call.func) is cst.Attribute:  # torch.Generator().manual_seed(0): a method of a value
            raw = "?." + call.func.attr.value
        if raw is None:
            return
        qn = canon_qn(raw, None)
        last = qn.rsplit(".", 1)[-1]
        entry = None
        for e in rules().raw.get("fact_calls", []):
            if match_name(qn, e["match"]) or match_name(raw, e["match"]):
                entry = e
                break
        if entry is None:
            return
        self.matched.add(id(call))
        if entry.get("framework"):
            p.frameworks.add(entry["framework"])
        for key, v in (entry.get("present") or {}).items():  # torch.compile(model): compiled, by being called
            p.facts.append(self.bind(self.fact(key, v, call, [], qn), call))
            p.facts[-1].meta["call"] = p.position(call)
            p.fact_calls.add(id(call))
            p.present_calls.add(id(call))  # against no such call, compared as the fact, not again as code
        args = entry.get("args") or {}
        positional = entry.get("positional") or (entry.get("positional_by_name") or {}).get(last) or []
        vmaps = rules().raw.get("value_maps") or {}
        seen: set = set()
        pos = 0
        dtype_flags = {}
        for a in call.args:
            if a.star:
                pos = 10**6
                continue
            if a.keyword is None:
                kwname = positional[pos] if pos < len(positional) else None
                pos += 1
                if kwname is None or kwname not in args:
                    continue
                seen.add(kwname)
                self.read_arg(args[kwname], a, call, qn, vmaps.get(kwname))
                continue
            kw = a.keyword.value
            if kw in args:
                seen.add(kw)
                self.read_arg(args[kw], a, call, qn, vmaps.get(kw))
            elif entry.get("spellings") == "hf":
                if kw in ("bf16", "fp16"):
                    dtype_flags[kw] = a
                    continue
                key = spelling_index()["hf"].get(kw) or (rules().raw.get("hf_extra") or {}).get(kw) or (
                    spelling_index()["python"].get(kw) if python_spelled(qn) else None)
                if key is not None:
                    self.read_arg(key, a, call, qn, vmaps.get(kw))
        if dtype_flags:
            self.mixed_precision(dtype_flags, call, qn)
        for kw, dv in (entry.get("defaults") or {}).items():
            if kw in seen:
                continue
            keys = args.get(kw)
            if isinstance(keys, list):
                for k, x in zip(keys, dv):
                    p.facts.append(self.default(k, x, qn, call))
            elif keys:
                p.facts.append(self.default(keys, dv, qn, call))
        if entry.get("defaults_unknown") and not (entry.get("defaults") or {}):
            # a project's own helper (`autocast(enabled=amp)` from its utils): what it does with
            # a keyword left out is not known, so the setting is unknown here, not absent
            left = [kw for kw in args if kw not in seen]
            if left and not any(a.star for a in call.args):
                keys = [k for kw in left for k in (args[kw] if isinstance(args[kw], list) else [args[kw]])]
                p.unknowns[f"line {p.line_of(call)}: {qn} is called without "
                           f"{', '.join(f'{kw}=' for kw in left)}, its default not known"] = keys

    def dataclass_fields(self, node: cst.ClassDef) -> None:
        """`@dataclass class Args: learning_rate: float = field(default=2e-5)` (HfArgumentParser style)."""
        if not is_dataclass(node):
            return
        for _small, name, value, _kws in fields(node):
            if value is None:
                continue
            key = lookup(name, ("hf", "python", "megatron", "aliases")) or self.meant(name, value)
            if key is None:
                continue
            used: list = []
            try:
                v = self.values.evaluate(value, used)
            except NotLiteral:
                continue
            f = self.fact(key, v, value, used, f"{node.name.value}.{name}", written=name)
            f.meta.pop("slot", None)  # a dataclass field is an option (HfArgumentParser): the flag's setting
            self.p.facts.append(f)
            self.p.owned[id(value)] = key
            self.argdests.setdefault(name, key)

    # ------------------------------------------------- configs written as code (issue 27)
    def module_settings(self) -> None:
        """Module-level assignments whose target names a setting (`train_steps = 300`,
        `_C.SOLVER.BASE_LR = 1e-4`) and the keys of module-level dict literals
        (`CONFIG = {"lr": 1e-4}`): facts under the keys they spell (rules/python.yaml
        `generic_keywords`; vocabulary.name_key, nested_key)."""
        dead = self.p.spec.dead_calls if self.p.spec is not None else ()
        for st in self.p.body:
            if st.kind != "simple":
                continue
            for small in st.node.body:
                if type(small) is cst.Assign and len(small.targets) == 1:
                    target, value = small.targets[0].target, small.value
                elif type(small) is cst.AnnAssign and small.value is not None:
                    target, value = small.target, small.value
                else:
                    continue
                if type(value) is cst.Call and id(value) in dead:
                    continue
                name = dotted(target)
                if name is None or self.nm.qualified(target) is not None:
                    continue  # torch.backends.cudnn.benchmark = True: a library's switch, not a config
                parts = name.split(".")
                literal = self.mapping_literal(value)
                if literal is not None:
                    self.dict_settings(literal, parts)
                    continue
                if len(parts) == 1:
                    hit = (self.code_key(parts[0], value), False)
                else:
                    hit = self.nested(parts[1:], value) or (None, False)
                    if hit[0] is not None and code_names().get(norm_name(parts[-1]), hit[0]) is None:
                        hit = (None, False)
                if hit[0] is None:
                    continue
                if self.setting(hit[0], value, ".".join(parts[1:]) or parts[0], name, "module level",
                                sectioned=hit[1]) and len(parts) == 1:
                    self.const_keys[parts[0]] = hit[0]

    def function_settings(self) -> None:
        """Constants a function sets at its top level (`def main(): batch_size = 32; lr = 1e-3`,
        a test's `total_step = 50`): a literal (a number, a string, True/False) assigned once to a
        name that spells a setting is that setting's fact, as a module-level one is, its slot the
        function's name. Module-level functions and the methods of module-level classes."""
        for fn, body in _function_bodies(self.p.body):
            once: dict[str, int] = {}
            for st in body:
                if st.kind == "simple":
                    for small in st.node.body:
                        for t in _assigned_names(small):
                            once[t] = once.get(t, 0) + 1
            for st in body:
                if st.kind != "simple":
                    continue
                for small in st.node.body:
                    if type(small) is not cst.Assign or len(small.targets) != 1 \
                            or type(small.targets[0].target) is not cst.Name or not _literal(small.value):
                        continue
                    name = small.targets[0].target.value
                    if once.get(name) != 1:
                        continue
                    key = self.code_key(name, small.value)
                    if key is not None:
                        self.setting(key, small.value, f"{fn}.{name}", name, "function level")

    def dict_settings(self, node: cst.Dict, path: list[str], depth: int = 0) -> None:
        """The string keys of a module-level dict literal, nested dicts walked (up to budget.DICT_DEPTH levels)."""
        if depth > budget.DICT_DEPTH:
            return
        spec = self.p.spec
        keys = [el.key.evaluated_value for el in node.elements
                if type(el) is cst.DictElement and type(el.key) is cst.SimpleString]
        if spec is not None and keys and len(keys) == len(node.elements) and all(family_of(k) for k in keys):
            # {"cuda": {...}, "npu": {...}}: a table by device, whose entry for this device is what runs
            hit = family_entry(node, spec.family)
            if hit is not None and type(hit[1]) is cst.Dict:
                self.dict_settings(hit[1], path, depth + 1)
            return
        for el in node.elements:
            if type(el) is not cst.DictElement or type(el.key) is not cst.SimpleString:
                continue
            k = el.key.evaluated_value
            if not isinstance(k, str) or not k:
                continue
            literal = self.mapping_literal(el.value)
            if literal is not None:
                self.dict_settings(literal, path + [k], depth + 1)
                continue
            hit = self.nested(path[1:] + [k], el.value) if len(path) > 1 else (self.code_key(k, el.value), False)
            if hit is None or hit[0] is None or code_names().get(norm_name(k), hit[0]) is None:
                continue
            self.setting(hit[0], el.value, ".".join(path[1:] + [k]), f"{'.'.join(path)}[{k!r}]", "module level",
                         sectioned=hit[1])

    def mapping_literal(self, value) -> cst.Dict | None:
        """The dict literal a value is: itself, or the one argument of a mapping type built from
        it (`EasyDict({...})`: generic_keywords.mapping_types); None for any other value."""
        if type(value) is cst.Dict:
            return value
        if type(value) is not cst.Call or len(value.args) != 1 or value.args[0].keyword is not None \
                or value.args[0].star or type(value.args[0].value) is not cst.Dict:
            return None
        f = value.func
        qn = qualified_name(self.p, f)
        if qn is None and type(f) is cst.Name and f.value not in self.p.aliases and f.value not in program(self.p).funcs:
            qn = f.value  # a builtin (dict) the file does not rebind
        return value.args[0].value if qn in mapping_types() else None

    def code_key(self, name: str, value=None) -> str | None:
        """The key a keyword or a module-level name spells in code (generic_keywords.names first),
        else, given its value's node, the key it means (vocabulary.meaning_key)."""
        names = code_names()
        n = norm_name(name)
        if n in names:
            return names[n]
        key = name_key(name)
        if key is None and value is not None:
            key = self.meant(name, value)
        return key

    def nested(self, segments: list[str], value) -> tuple[str, bool] | None:
        """vocabulary.nested_key of a nested name in code (`_C.TRAIN.EPOCH`, a dict's keys), its
        last segment's meaning read with the value's node evaluated when no spelling names it."""
        hit = nested_key(segments)
        if hit is None and segments and may_mean(segments[-1]):
            v = self.meaning_value(value)
            if v is not None:
                hit = nested_key(segments, value=v)
        return hit

    def meant(self, name: str, node) -> str | None:
        """The key a name no spelling maps means by its words and its value's shape
        (vocabulary.meaning_key: `batch_per_device=8` is micro_batch_size); the value is
        evaluated only for a name whose words may mean a key."""
        if not may_mean(name):
            return None
        v = self.meaning_value(node)
        return meaning_key(name, v) if v is not None else None

    def meaning_value(self, node):
        """The value of a node as a meaning reads it (a string, a number, a bool), None when unknown."""
        try:
            v = self.values.evaluate(node, [])
        except (NotLiteral, Exception):
            return None
        if isinstance(v, QName):
            return str(v)
        return v if isinstance(v, (str, int, float, bool)) else None

    def keywords(self, call: cst.Call) -> None:
        """Every keyword of a call (whatever the callee) whose name spells a setting, not already
        read by the fact table: a fact under that key, its callee named in `meta["callee"]`, its
        slot `Callee.keyword` (TrainerConfig(global_batch_size=16): global_batch_size)."""
        raw = self.nm.callee(call)
        qn = canon_qn(raw, None) if raw is not None else (dotted(call.func) or "")
        if not qn or match_name(qn, generic_skip()):
            return
        last = qn.rsplit(".", 1)[-1]
        sig = rules().signatures.get(qn)  # a known signature binds positionals: DataLoader(ds, 8) is batch_size=8
        params = sig[0][:sig[0].index("*")] if sig is not None and "*" in sig[0] else (sig[0] if sig else [])
        pos = 0
        for a in call.args:
            if a.star:
                break
            kw = a.keyword.value if a.keyword is not None else (params[pos] if pos < len(params) else None)
            if a.keyword is None:
                pos += 1
            if kw is None or id(a.value) in self.p.owned:
                continue
            key = self.code_key(kw)
            if key is None and python_spelled(qn):
                key = spelling_index()["python"].get(kw)
            written = kw
            if key is None:  # TrainSetup(epoch=3): num_train_epochs; LossOptions(mode="chunk"): loss_mode
                key = self.meant(kw, a.value)
                if key is None:
                    key = self.meant(section_name(last, kw), a.value)
                    written = f"{last}.{kw}"
            if key is None or (key in run_wide_keys() and names_component(last)):
                continue  # VaeConfig(dtype=...): the VAE's dtype, not the training precision
            self.setting(key, a.value, f"{last}.{kw}", written, qn, arg=a, call=call)

    def setting(self, key: str, value, slot: str, written: str, callee: str, sectioned: bool = False,
                arg=None, call=None) -> bool:
        """One setting read by its name: a fact when its value is known and fits the key."""
        if id(value) in self.p.owned:  # LR = 3e-4 read by AdamW(lr=LR) already
            return False
        used: list = []
        try:
            v = self.values.evaluate(value, used)
        except (NotLiteral, Exception):
            return False
        if v is None or isinstance(v, (bytes, dict)) or (isinstance(v, QName) and key_type(key) != "dtype"
                                                          and key not in ("params_dtype", "load_dtype")):
            return False
        if used and self.const_keys.get(used[0][0]) == key:
            self.p.owned[id(value)] = key  # read from a module constant that is this setting already
            return False
        if not fits(key, v):
            return False
        f = self.fact(key, v, arg if arg is not None else value, used, callee, written)
        if f.value is None:
            return False
        f.meta["slot"] = slot
        if sectioned:
            f.meta["sectioned"] = True
        self.p.facts.append(f)
        self.p.owned[id(value)] = key
        if call is not None:
            self.bind(f, call)
            self.p.fact_calls.add(id(call))
        return True

    def mixed_precision(self, flags: dict, call, qn: str) -> None:
        vals = {}
        for kw, a in flags.items():
            try:
                vals[kw] = bool(self.values.evaluate(a.value, []))
            except NotLiteral:
                return
        dtype = "bf16" if vals.get("bf16") else ("fp16" if vals.get("fp16") else "fp32")
        a = flags.get(dtype) or next(iter(flags.values()))
        self.p.facts.append(self.fact("params_dtype", dtype, a, [], qn))
        self.p.facts[-1].meta["origin"] = {"computed": f"set by the {' and '.join(sorted(flags))} switches together"}
        for a in flags.values():
            self.p.owned[id(a.value)] = "params_dtype"
        self.p.fact_calls.add(id(call))


def read_facts(p: Parsed, side: str) -> None:
    """Fill p.facts, p.owned, p.fact_calls, p.frameworks."""
    if p.module is None:
        return
    module_consts(p)
    r = Reader(p, side)
    calls = p.state.calls
    if p.spec is not None and p.spec.dead_calls:  # code this side's device does not run gives no facts
        dead = p.spec.dead_calls
        calls = [c for c in calls if id(c) not in dead]
    for c in calls:
        f = c.func
        if type(f) is cst.Attribute and f.attr.value == "add_argument":
            try:
                r.argparse(c)
            except Exception:
                continue
        elif type(f) is cst.Attribute and f.attr.value.startswith("DEFINE_"):
            try:
                defined = flag_define(c)
                if defined is not None:
                    r.argparse(c, defined)
            except Exception:
                continue
    for st in p.body:
        if st.kind == "compound" and type(st.node) is cst.ClassDef:
            try:
                r.dataclass_fields(st.node)
            except Exception:
                continue
    for a in node_index(p).assigns:  # what each call's result is bound to
        if type(a.value) is cst.Call and len(a.targets) == 1:
            name = _bound_name(a.targets[0].target)
            if name is not None:
                r.bound[id(a.value)] = name
    exact, suffixes = fact_callee_names()
    for c in calls:
        f = c.func
        name = f.attr.value if type(f) is cst.Attribute else (f.value if type(f) is cst.Name else None)
        if name is None or name == "add_argument":
            continue
        if name not in exact and not name.endswith(suffixes):
            continue
        try:
            r.call(c)
        except Exception:
            continue
    try:
        built_elsewhere(r, calls)
    except RecursionError:
        raise
    except Exception:
        pass
    try:  # configs written as code: module-level settings, then every call's keywords
        r.module_settings()
    except Exception:
        pass
    try:  # constants a function sets
        r.function_settings()
    except RecursionError:
        raise
    except Exception:
        pass
    for c in calls:
        if any(a.keyword is not None for a in c.args):
            try:
                r.keywords(c)
            except Exception:
                continue
    try:  # what a loop applies without a call that names it (regions.py)
        read_settings(r)
    except Exception:
        pass
    try:  # a command line the file writes as text (cmdtext.py)
        p.facts.extend(cmdtext.read(p, side))
    except RecursionError:
        raise
    except Exception:
        pass


def _bound_name(target) -> str | None:
    """`optimizer = ...`, `self.optimizer = ...`: the name bound (its last part), else None."""
    if type(target) is cst.Name:
        return target.value
    if type(target) is cst.Attribute:
        return target.attr.value
    return None


def built_elsewhere(r: Reader, calls: list) -> None:
    """An object built by a function this file does not hold (`optimizer = build_optimizer(
    params, args)`, imported from a module of the project): what it sets is not read, so a
    setting the other side reads from a call bound to the same name (`optimizer =
    torch.optim.Adam(...)`: its betas, its eps) is unknown here, not absent; one the other side
    reads from a call of the same function is an argument given on one side only, still compared. Each is one phrase
    of the file's `unknowns`, said only when the other side sets such a setting. A call the
    fact table reads, a call of a function of this file, a builtin, a call whose keywords are
    never settings (generic_keywords.skip), a call given the name it binds (`model =
    prepare(model)`: made from itself) and one binding a name that a call the fact table reads
    binds too are not such a producer."""
    p = r.p
    live = {id(c) for c in calls}
    read_here = {r.bound[i] for i in r.matched if i in r.bound}  # names a call the fact table reads binds
    for a in node_index(p).assigns:
        call = a.value
        name = r.bound.get(id(call))
        if name is None or id(call) in r.matched or id(call) not in live or name in read_here:
            continue
        if any(_bound_name(x.value) == name for x in call.args):  # `model = prepare(model)`: made from itself
            continue
        q = r.nm.qualified(call.func)
        if q is None or "." not in q:  # a builtin, or a function of this file: read here or not a producer
            continue
        qn = canon_qn(q, None)
        if (not q.startswith(".") and q.split(".", 1)[0] in library_roots()) or match_name(qn, generic_skip()):
            continue  # a library the rules know (its defaults are data), the standard library, or no setting
        phrase = f"line {p.line_of(call)}: `{name}` is built by {qn}, whose settings are not read"
        p.unknowns.setdefault(phrase, [f"bound:{name}:{qn}"])


def _function_bodies(body: list, depth: int = 0):
    """(name, top-level statements) of each module-level function and each method of a
    module-level class."""
    for st in body:
        if st.kind != "compound" or not st.clauses:
            continue
        t = type(st.node)
        if t is cst.FunctionDef:
            yield st.name or st.node.name.value, st.clauses[0][2]
        elif t is cst.ClassDef and depth == 0:
            for name, inner in _function_bodies(st.clauses[0][2], depth + 1):
                yield f"{st.node.name.value}.{name}", inner


def _assigned_names(small) -> list[str]:
    """The plain names a small statement binds (`a = b = 1`, `a += 1`, `a: int = 1`)."""
    t = type(small)
    if t is cst.Assign:
        return [x.target.value for x in small.targets if type(x.target) is cst.Name]
    if t in (cst.AugAssign, cst.AnnAssign) and type(small.target) is cst.Name:
        return [small.target.value]
    return []


def _literal(node) -> bool:
    """A number, a string, True/False or a negated number, as written."""
    t = type(node)
    if t in (cst.Integer, cst.Float, cst.SimpleString):
        return True
    if t is cst.Name:
        return node.value in ("True", "False")
    return t is cst.UnaryOperation and type(node.operator) is cst.Minus and type(node.expression) in (cst.Integer, cst.Float)

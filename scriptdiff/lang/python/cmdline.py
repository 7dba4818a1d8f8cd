"""The command line a program accepts, read from its parser on the libcst tree (never run).

A launch script passes options to the program it starts (`torchrun train.py --lr 1e-4 --seed
1234`); whether the program takes them is its parser's business. This module reads the parser
a program builds in its own file:

- argparse: each `add_argument` (its option strings, `dest=`, `action=`; the `--no-x` of
  `argparse.BooleanOptionalAction`), groups included; `allow_abbrev` (True by default: a
  unique prefix of a long option is that option); `parse_args` (an option it does not know
  stops the run: "unrecognized arguments") or `parse_known_args` (it is left over, ignored);
- `HfArgumentParser` over dataclasses of the file: each field is `--name` (and `--name-with-
  dashes`), a bool field that defaults to True also `--no_name`; `parse_args_into_dataclasses()`
  stops on an option it does not use, unless `return_remaining_strings=True`;
- click (`@click.command()` with `@click.option(...)`) and typer (`typer.run(main)` or one
  `@app.command()`: each parameter an option, `--x/--no-x` for a bool); both stop on an
  option they do not know, and neither takes abbreviations.

The parser is *complete* only when every option it accepts is written in this file. It is not
when part of it is built elsewhere or at run time: a dataclass or parent parser from another
module (transformers' `TrainingArguments`), the parser handed to a function out of view
(`deepspeed.add_config_arguments(parser)`), option strings computed at run time, subcommands,
the options it does not know passed on (`args, rest = parse_known_args()` with `rest` used),
`sys.argv` rewritten, or parse calls on a parser built elsewhere (Megatron's `pretrain()`
parses its own hundreds of flags). Then `why` says what is out of view, and nothing is judged.

`command_line(p)` is None when the file shows no parser at all, else a plain dict (cached with
the file's extract): kind, complete, why, line, parse (the parse call), stops (an unknown
option stops the run), refusal (what the program says then), abbrev, options
([[option strings], dest, line], each a list).
"""
from __future__ import annotations

from collections import Counter

import libcst as cst

from ...inputs import flags
from .evaluate import constant, fields, is_dataclass
from .parse import Parsed, dotted, node_index, qualified_name

ARGPARSE = ("argparse.ArgumentParser",)
HF = ("transformers.HfArgumentParser", "transformers.hf_argparser.HfArgumentParser")
# parse calls that read the command line, and those that read a file or a dict instead
PARSE = {"parse_args": True, "parse_intermixed_args": True, "parse_known_args": False,
         "parse_known_intermixed_args": False, "parse_args_into_dataclasses": True}
NOT_ARGV = ("parse_json_file", "parse_yaml_file", "parse_dict")
GROUPS = ("add_argument_group", "add_mutually_exclusive_group")
ARGV_EDITS = ("append", "extend", "insert", "remove", "pop", "clear")
CLICK_OPTIONS = {"click.version_option": ["--version"], "click.help_option": ["--help"],
                 "click.password_option": ["--password"], "click.confirmation_option": ["--yes"]}
CLICK_PLAIN = ("click.pass_context", "click.pass_obj", "click.argument")
REFUSAL = {"argparse": "unrecognized arguments", "hf": "Some specified arguments are not used by the HfArgumentParser",
           "click": "No such option", "typer": "No such option"}


class _Incomplete(Exception):
    """Part of the parser is out of view: the reason."""


class _Scan:
    """What the parser reading needs beyond the calls, from the statements the parse already
    built (Parsed.body, nested blocks included; never another walk of the tree): assignments,
    functions and the calls each holds, classes, writes to sys.argv, and how often a name is
    used (counted among the file's tokens)."""

    def __init__(self, p: Parsed):
        self.p = p
        self.targets: dict[int, list] = {}  # id(assigned value) -> its targets
        self.defs: dict[str, cst.FunctionDef | None] = {}
        self.classes: dict[str, cst.ClassDef | None] = {}
        self.argv_line: int | None = None
        self.none_params: set[str] = set()  # parameters that default to None (`def main(args=None)`)
        self._spans: list[tuple[int, int, str]] = []  # (start, end token, name) of each function
        self._tokens = getattr(p.state, "tokens", None)
        self._names: Counter | None = None
        self._block(p.body)
        for c in p.state.calls:  # sys.argv.append(...), sys.argv.pop(0), ...
            if type(c.func) is cst.Attribute and c.func.attr.value in ARGV_EDITS:
                self._argv(c.func.value, c)

    def _block(self, body) -> None:
        for st in body:
            node = st.node
            if st.kind != "compound":
                for small in node.body:
                    t = type(small)
                    if t is cst.Assign:
                        self.targets[id(small.value)] = [x.target for x in small.targets]
                        for x in small.targets:
                            self._argv(x.target, small)
                    elif t is cst.AnnAssign and small.value is not None:
                        self.targets[id(small.value)] = [small.target]
                    elif t in (cst.AugAssign, cst.Del):
                        self._argv(small.target, small)
                continue
            if type(node) is cst.FunctionDef:
                name = node.name.value
                self.defs[name] = node if name not in self.defs else None  # defined twice: not followed
                for prm in list(node.params.params) + list(node.params.kwonly_params):
                    if type(prm.default) is cst.Name and prm.default.value == "None":
                        self.none_params.add(prm.name.value)
                st_ = self.p.state
                self._spans.append((st_.start_tok.get(id(node), 0), st_.end_tok.get(id(node), 0), name))
            elif type(node) is cst.ClassDef:
                name = node.name.value
                self.classes[name] = node if name not in self.classes else None
            for _label, _clause, inner in st.clauses:
                self._block(inner)

    def _argv(self, target, node) -> None:
        while type(target) is cst.Subscript:
            target = target.value
        if self.argv_line is None and qualified_name(self.p, target) == "sys.argv":
            self.argv_line = self.p.line_of(node) or 0

    def enclosing(self, call: cst.CSTNode) -> str | None:
        """The innermost function the call is written in, None at module level."""
        at = self.p.state.start_tok.get(id(call))
        inside = [(a, name) for a, b, name in self._spans if at is not None and a <= at < b]
        return max(inside)[1] if inside else None

    def uses(self, name: str) -> int:
        """How often `name` is written in the file (its definition included)."""
        if self._tokens is not None:
            return self._tokens.count(name)
        if self._names is None:  # the public API's positions: no tokens, count the Name nodes once
            self._names = Counter(node.value for node in node_index(self.p).names)
        return self._names[name]


def command_line(p: Parsed) -> dict | None:
    """The command line the program `p` accepts (see the module's docstring), or None when
    the file shows no parser."""
    if p.module is None or p.state is None:
        return None
    imported = set(p.aliases.values())
    if not any(q.split(".")[0] in ("argparse", "transformers", "click", "typer") for q in imported) \
            and not any(type(c.func) is cst.Attribute and c.func.attr.value in PARSE for c in p.state.calls):
        return None
    dead = p.spec.dead_calls if p.spec is not None else ()
    calls = [c for c in p.state.calls if id(c) not in dead]
    scan = _Scan(p)
    reader = _Reader(p, calls, scan)
    try:
        out = reader.read()
    except _Incomplete as e:
        out = {"kind": reader.kind or "argparse", "complete": False, "why": str(e), "line": reader.line,
               "parse": reader.parse, "parse_line": reader.parse_line, "stops": reader.stops,
               "abbrev": reader.abbrev, "options": []}
    if out is not None:
        out["refusal"] = REFUSAL.get(out["kind"], "")
    return out


class _Reader:
    def __init__(self, p: Parsed, calls: list[cst.Call], scan: _Scan):
        self.p, self.calls, self.scan = p, calls, scan
        self.name = p.name.replace("\\", "/").rsplit("/", 1)[-1]
        self.kind: str | None = None
        self.line: int | None = None
        self.parse: str | None = None
        self.stops = True
        self.abbrev = True
        self.options: list[list] = []
        self.parse_line: int | None = None

    def qn(self, node) -> str | None:
        return qualified_name(self.p, node)

    def at(self, node) -> str:
        return f"{self.name}:{self.p.line_of(node, 0)}"

    def result(self) -> dict:
        return {"kind": self.kind, "complete": True, "why": None, "line": self.line, "parse": self.parse,
                "parse_line": self.parse_line or self.line, "stops": self.stops, "abbrev": self.abbrev,
                "options": self.options}

    # ------------------------------------------------------------------------------ which
    def read(self) -> dict | None:
        builds = [c for c in self.calls if self.qn(c.func) in ARGPARSE + HF]
        parses = [c for c in self.calls if type(c.func) is cst.Attribute and c.func.attr.value in PARSE]
        clicks = self._click_commands()
        typers = self._typer_commands()
        if not builds and not clicks and not typers:
            if parses:
                self.parse = parses[0].func.attr.value
                self.line = self.p.line_of(parses[0])
                raise _Incomplete(f"it parses with a parser built outside {self.name} ({self.at(parses[0])})")
            return None
        if len(builds) + len(clicks) + len(typers) > 1:
            raise _Incomplete(f"it builds {len(builds) + len(clicks) + len(typers)} command-line parsers")
        if clicks:
            return self._click(clicks[0])
        if typers:
            return self._typer(*typers[0])
        return self._argparse(builds[0], parses)

    # --------------------------------------------------------------------------- argparse
    def _argparse(self, build: cst.Call, parses: list[cst.Call]) -> dict:
        self.kind = "hf" if self.qn(build.func) in HF else "argparse"
        self.line = self.p.line_of(build)
        kws = {a.keyword.value: a.value for a in build.args if a.keyword is not None}
        if "parents" in kws and not (type(kws["parents"]) in (cst.List, cst.Tuple) and not kws["parents"].elements):
            raise _Incomplete(f"its parser takes options from parent parsers ({self.at(build)})")
        if "prefix_chars" in kws:
            raise _Incomplete(f"its parser uses other prefix characters ({self.at(build)})")
        if any(a.star for a in build.args):
            raise _Incomplete(f"its parser is built from arguments given at run time ({self.at(build)})")
        if "allow_abbrev" in kws:
            v = constant(kws["allow_abbrev"])
            if not isinstance(v, bool):
                raise _Incomplete(f"whether its parser takes abbreviations is decided at run time ({self.at(build)})")
            self.abbrev = v
        if constant(kws.get("add_help")) is not False:
            self.options.append([["-h", "--help"], "help", self.line])
        if self.kind == "hf":
            positional = [a.value for a in build.args if a.keyword is None]
            types = positional[0] if positional else kws.get("dataclass_types")
            if types is None:
                raise _Incomplete(f"its HfArgumentParser names no dataclass ({self.at(build)})")
            for cls in self._dataclasses(types):
                self._fields(cls, set())
        names = self._parser_names(build)
        for c in self.calls:
            f = c.func
            if type(f) is cst.Attribute and f.attr.value == "add_subparsers":
                raise _Incomplete(f"it has subcommands ({self.at(c)})")
            if type(f) is cst.Attribute and f.attr.value == "add_argument":
                self._add_argument(c)
        self._parses(parses, names)
        if self.scan.argv_line is not None:
            raise _Incomplete(f"it rewrites sys.argv ({self.name}:{self.scan.argv_line})")
        return self.result()

    def _parser_names(self, build: cst.Call) -> set[str]:
        """The names the parser and its groups are bound to, and the parameters of the file's
        functions it is handed to; handed to a function out of view, it is incomplete."""
        names = {t.value for t in self.scan.targets.get(id(build), []) if type(t) is cst.Name}
        for c in self.calls:
            if type(c.func) is cst.Attribute and c.func.attr.value in GROUPS:
                names |= {t.value for t in self.scan.targets.get(id(c), []) if type(t) is cst.Name}
        for _ in range(8):  # handed on from function to function
            grown = False
            for c in self.calls:
                for i, a in enumerate(c.args):
                    if type(a.value) is not cst.Name or a.value.value not in names:
                        continue
                    callee = c.func.value if type(c.func) is cst.Name else None
                    fn = self.scan.defs.get(callee) if callee else None
                    if type(c.func) is cst.Attribute and dotted(c.func.value) in names:
                        continue  # parser.set_defaults(x=parser)...: its own method
                    if fn is None:
                        raise _Incomplete(f"it hands its parser to {dotted(c.func) or 'a call'}, out of view "
                                          f"({self.at(c)})")
                    params = list(fn.params.params)
                    if a.keyword is not None:
                        param = a.keyword.value
                    elif not a.star and i < len(params):
                        param = params[i].name.value
                    else:
                        raise _Incomplete(f"it hands its parser on at {self.at(c)}")
                    if param not in names:
                        names.add(param)
                        grown = True
            if not grown:
                break
        return names

    def _names(self, c: cst.Call) -> list[str]:
        """The positional strings of an add_argument or click.option call: its option names."""
        strings = []
        for a in c.args:
            if a.star:
                raise _Incomplete(f"an option is built at run time ({self.at(c)})")
            if a.keyword is not None:
                continue
            s = constant(a.value)
            if not isinstance(s, str):
                raise _Incomplete(f"an option's name is computed at run time ({self.at(c)})")
            strings.append(s)
        return strings

    def _add_argument(self, c: cst.Call) -> None:
        strings = self._names(c)
        if not strings or not flags.dashed(strings[0]):
            return  # a positional argument
        kws = {a.keyword.value: a.value for a in c.args if a.keyword is not None}
        dest = kws.get("dest")
        dest = dest.evaluated_value if type(dest) is cst.SimpleString else None
        if not isinstance(dest, str):
            dest = flags.dest(strings)
        act = kws.get("action")
        if act is not None and (self.qn(act) or "").endswith("BooleanOptionalAction"):
            strings += [flags.negated(s) for s in strings if s.startswith(flags.END)]
        self.options.append([strings, dest, self.p.line_of(c)])

    def _parses(self, parses: list[cst.Call], names: set[str]) -> None:
        reading = []
        for c in parses:
            method = c.func.attr.value
            kws = {a.keyword.value: a.value for a in c.args if a.keyword is not None}
            given = [a.value for a in c.args if a.keyword is None] or [kws[k] for k in ("args",) if k in kws]
            if given and not _is_argv(self.p, given[0]) and not (type(given[0]) is cst.Name and
                                                                 given[0].value in self.scan.none_params):
                raise _Incomplete(f"it parses a list the program builds, not its command line ({self.at(c)})")
            stops = PARSE[method]
            rest = kws.get("return_remaining_strings")
            if method == "parse_args_into_dataclasses" and constant(rest) is True:
                stops = False
            elif method == "parse_args_into_dataclasses" and rest is not None and type(rest) is not cst.Name:
                raise _Incomplete(f"whether it keeps the options it does not use is decided at run time ({self.at(c)})")
            fn = self.scan.enclosing(c)
            if fn is not None and not self._called(fn):  # in a function the file never calls
                continue
            if not stops:
                self._leftover(c)
            reading.append((c, stops))
        if not reading:
            others = [c for c in self.calls if type(c.func) is cst.Attribute and c.func.attr.value in NOT_ARGV]
            if others:
                raise _Incomplete(f"it reads its settings with {others[0].func.attr.value} ({self.at(others[0])})")
            raise _Incomplete(f"its parser's parse call is not in {self.name}, or in a function it never calls")
        self.stops = any(stops for _c, stops in reading)
        first = next((c for c, stops in reading if stops == self.stops))
        self.parse = first.func.attr.value + ("(return_remaining_strings=True)" if not self.stops and
                                              first.func.attr.value == "parse_args_into_dataclasses" else "")
        self.parse_line = self.p.line_of(first)

    def _called(self, fn: str) -> bool:
        """Whether the file calls function `fn` (`fn()`, `self.fn()`) or hands it on (`main(fn)`,
        `extra_args_provider=fn`); a use of any other kind is not looked for, and then the parse
        in it does not count (nothing is judged)."""
        for c in self.p.state.calls:
            f = c.func
            if (type(f) is cst.Name and f.value == fn) or (type(f) is cst.Attribute and f.attr.value == fn and
                                                            type(f.value) is cst.Name and f.value.value in ("self", "cls")):
                return True
            if any(type(a.value) is cst.Name and a.value.value == fn for a in c.args):
                return True
        return False

    def _leftover(self, c: cst.Call) -> None:
        """`args, rest = parser.parse_known_args()`: the options it does not know are ignored,
        unless `rest` is used (passed on to another parser, out of view)."""
        for t in self.scan.targets.get(id(c), []):
            if type(t) in (cst.Tuple, cst.List) and t.elements:
                last = t.elements[-1].value
                if type(last) is cst.Name and not last.value.startswith("_") and self.scan.uses(last.value) > 1:
                    raise _Incomplete(f"it hands the options it does not know ({last.value}) on ({self.at(c)})")

    # ----------------------------------------------------------------- HfArgumentParser
    def _dataclasses(self, node) -> list[cst.ClassDef]:
        if type(node) in (cst.Tuple, cst.List):
            return [c for el in node.elements for c in self._dataclasses(el.value)]
        if type(node) is cst.Name:
            cls = self.scan.classes.get(node.value)
            if cls is not None and is_dataclass(cls):
                return [cls]
            where = self.p.aliases.get(node.value)
            raise _Incomplete(f"{node.value} is defined outside {self.name}"
                              + (f" ({where.rsplit('.', 1)[0]})" if where and "." in where else ""))
        raise _Incomplete(f"its HfArgumentParser's dataclasses are chosen at run time ({self.at(node)})")

    def _fields(self, cls: cst.ClassDef, seen: set[str]) -> None:
        if cls.name.value in seen:
            return
        seen.add(cls.name.value)
        for base in cls.bases:
            if type(base.value) is not cst.Name:
                raise _Incomplete(f"{cls.name.value} extends a class outside {self.name}")
            bcls = self.scan.classes.get(base.value.value)
            if bcls is None or not is_dataclass(bcls):
                raise _Incomplete(f"{cls.name.value} extends {base.value.value}, defined outside {self.name}")
            self._fields(bcls, seen)
        for small, name, value, kws in fields(cls):
            ann = dotted(small.annotation.annotation) or ""
            if ann.rsplit(".", 1)[-1] == "ClassVar" or (type(small.annotation.annotation) is cst.Subscript and
                                                        (dotted(small.annotation.annotation.value) or "")
                                                        .rsplit(".", 1)[-1] == "ClassVar"):
                continue
            if constant(kws.get("init")) is False:
                continue
            strings = [f"--{name}"] + ([f"--{name.replace('_', '-')}"] if "_" in name else [])
            strings += _aliases(kws.get("metadata"))
            if _is_bool(small.annotation.annotation) and constant(value) is True:
                strings += [f"--no_{name}"] + ([f"--no-{name.replace('_', '-')}"] if "_" in name else [])
            self.options.append([strings, name, self.p.line_of(small)])

    # ------------------------------------------------------------------------- click
    def _click_commands(self) -> list[cst.FunctionDef]:
        out = []
        for fn in self.scan.defs.values():
            if fn is None:
                continue
            for d in fn.decorators:
                q = self.qn(d.decorator.func if type(d.decorator) is cst.Call else d.decorator) or ""
                if q in ("click.command", "click.group"):
                    out.append(fn)
        return out

    def _click(self, fn: cst.FunctionDef) -> dict:
        self.kind, self.line, self.parse, self.abbrev = "click", self.p.line_of(fn.decorators[0]), "click", False
        help_names = ["--help"]
        for d in fn.decorators:
            call = d.decorator if type(d.decorator) is cst.Call else None
            q = self.qn(call.func if call else d.decorator) or ""
            kws = {a.keyword.value: a.value for a in call.args if a.keyword is not None} if call else {}
            if q == "click.group":
                raise _Incomplete(f"it has subcommands ({self.at(fn)})")
            if q == "click.command":
                help_names = self._context(kws.get("context_settings"), fn) or help_names
            elif q == "click.option" and call is not None:
                strings, dest = [], None
                for s in self._names(call):
                    for part in s.split("/"):
                        part = part.strip()
                        if flags.dashed(part):
                            strings.append(part)
                        elif part.isidentifier():
                            dest = part
                dest = dest or flags.dest(strings) or ""
                self.options.append([strings, dest, self.p.line_of(call)])
            elif q in CLICK_OPTIONS:
                given = [a.value.evaluated_value for a in (call.args if call else ()) if a.keyword is None and
                         type(a.value) is cst.SimpleString and flags.dashed(str(a.value.evaluated_value))]
                self.options.append([given or CLICK_OPTIONS[q], q.rsplit(".", 1)[-1], self.p.line_of(d)])
            elif q not in CLICK_PLAIN:
                raise _Incomplete(f"decorator {dotted(call.func if call else d.decorator) or '?'} of {fn.name.value} "
                                  f"may add options out of view ({self.at(d)})")
        self.options.append([help_names, "help", self.line])
        return self.result()

    def _context(self, settings, at) -> list[str] | None:
        """click's context_settings: the help option's names; options it lets through are out of view."""
        if settings is None:
            return None
        if type(settings) is cst.Call and dotted(settings.func) == "dict":
            items = {a.keyword.value: a.value for a in settings.args if a.keyword is not None}
        elif type(settings) is cst.Dict:
            items = {el.key.evaluated_value: el.value for el in settings.elements
                     if type(el) is cst.DictElement and type(el.key) is cst.SimpleString}
        else:
            raise _Incomplete(f"its context settings are built at run time ({self.at(at)})")
        for k in ("ignore_unknown_options", "allow_extra_args"):
            if k in items:
                raise _Incomplete(f"it lets options it does not define through ({k}, {self.at(at)})")
        names = items.get("help_option_names")
        if type(names) in (cst.List, cst.Tuple):
            return [el.value.evaluated_value for el in names.elements if type(el.value) is cst.SimpleString]
        return None

    # ------------------------------------------------------------------------- typer
    def _typer_commands(self) -> list[tuple[cst.FunctionDef, cst.CSTNode]]:
        out = []
        for c in self.calls:
            if self.qn(c.func) == "typer.run" and c.args and type(c.args[0].value) is cst.Name:
                fn = self.scan.defs.get(c.args[0].value.value)
                if fn is None:
                    raise _Incomplete(f"typer runs {c.args[0].value.value}, defined outside {self.name}")
                out.append((fn, c))
        apps = {t.value for c in self.calls if self.qn(c.func) == "typer.Typer"
                for t in self.scan.targets.get(id(c), []) if type(t) is cst.Name}
        commands = []
        for fn in self.scan.defs.values():
            for d in (fn.decorators if fn is not None else ()):
                call = d.decorator if type(d.decorator) is cst.Call else None
                target = call.func if call else d.decorator
                if type(target) is cst.Attribute and dotted(target.value) in apps:
                    if target.attr.value == "callback":
                        raise _Incomplete(f"its typer app has a callback ({self.at(d)})")
                    if target.attr.value == "command":
                        commands.append((fn, d))
        if len(commands) > 1:
            raise _Incomplete(f"its typer app has {len(commands)} commands")
        return out + commands

    def _typer(self, fn: cst.FunctionDef, at) -> dict:
        self.kind, self.line, self.parse, self.abbrev = "typer", self.p.line_of(fn), "typer", False
        if fn.params.star_kwarg is not None or isinstance(fn.params.star_arg, cst.Param):
            raise _Incomplete(f"{fn.name.value} takes *args or **kwargs ({self.at(fn)})")
        for prm in list(fn.params.params) + list(fn.params.kwonly_params):
            name = prm.name.value
            ann = prm.annotation.annotation if prm.annotation is not None else None
            opt = None
            for node in ([prm.default] if prm.default is not None else []) + _annotated(ann):
                if type(node) is cst.Call and (self.qn(node.func) or "") in ("typer.Option", "typer.Argument"):
                    opt = node
            if opt is not None and self.qn(opt.func) == "typer.Argument":
                continue
            if opt is None and prm.default is None:
                continue  # a required parameter is an argument
            strings = []
            for a in (opt.args if opt is not None else ()):
                s = a.value.evaluated_value if a.keyword is None and type(a.value) is cst.SimpleString else None
                if isinstance(s, str) and flags.dashed(s):
                    strings += [x.strip() for x in s.split("/") if x.strip()]
            if not strings:
                flag = flags.END + name.replace("_", "-")
                strings = [flag] + ([flags.negated(flag)] if _is_bool(_plain_type(ann)) else [])
            self.options.append([strings, name, self.p.line_of(prm)])
        self.options.append([["--help"], "help", self.line])
        return self.result()


def _is_argv(p: Parsed, node) -> bool:
    """`None` or `sys.argv[1:]`: the command line itself."""
    if constant(node) is None:
        return True
    return type(node) is cst.Subscript and qualified_name(p, node.value) == "sys.argv"


def _is_bool(ann) -> bool:
    """bool, Optional[bool], `bool | None`."""
    if ann is None:
        return False
    if type(ann) is cst.Name:
        return ann.value == "bool"
    if type(ann) is cst.Subscript and (dotted(ann.value) or "").rsplit(".", 1)[-1] == "Optional":
        return len(ann.slice) == 1 and type(ann.slice[0].slice) is cst.Index and _is_bool(ann.slice[0].slice.value)
    if type(ann) is cst.BinaryOperation and type(ann.operator) is cst.BitOr:
        return {_is_bool(ann.left), _is_bool(ann.right)} == {True, False} and "None" in (
            getattr(ann.left, "value", None), getattr(ann.right, "value", None))
    return False


def _annotated(ann) -> list:
    """The metadata of `Annotated[T, typer.Option(...)]`."""
    if type(ann) is cst.Subscript and (dotted(ann.value) or "").rsplit(".", 1)[-1] == "Annotated":
        return [el.slice.value for el in ann.slice[1:] if type(el.slice) is cst.Index]
    return []


def _plain_type(ann):
    if type(ann) is cst.Subscript and (dotted(ann.value) or "").rsplit(".", 1)[-1] == "Annotated" and ann.slice \
            and type(ann.slice[0].slice) is cst.Index:
        return ann.slice[0].slice.value
    return ann


def _aliases(metadata) -> list[str]:
    """HfArgumentParser: `field(metadata={"aliases": ["--lr"]})`."""
    if type(metadata) is not cst.Dict:
        return []
    for el in metadata.elements:
        if type(el) is cst.DictElement and type(el.key) is cst.SimpleString and el.key.evaluated_value == "aliases":
            v = el.value
            if type(v) is cst.SimpleString:
                return [v.evaluated_value]
            if type(v) in (cst.List, cst.Tuple):
                return [x.value.evaluated_value for x in v.elements if type(x.value) is cst.SimpleString]
            raise _Incomplete("a field's aliases are computed at run time")
    return []

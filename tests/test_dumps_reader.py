"""The compiled reader of dump.json (dumps/reader.py typed_runs) gives the very calls json's
decoder gives, one at a time: the same slots, values, malformed fields and errors, on
well-formed dumps and on every shape it must hand back to json (issue 42)."""
from __future__ import annotations

import json
import random

import pytest

from scriptdiff import budget
from scriptdiff.dumps import reader
from scriptdiff.dumps.reader import DumpError, Header, Scalar, Tensor, calls, locate, typed_runs


def T(dtype="torch.float32", shape=(2, 4), **stats):
    return {"type": "torch.Tensor", "dtype": dtype, "shape": list(shape), "Max": 1.0, "Min": -1.0, "Mean": 0.1,
            "Norm": 2.0, "requires_grad": False, **stats}


def leaf(v):
    if isinstance(v, Tensor):
        return ("T", v.dtype, v.shape, tuple(repr(x) for x in v.stats), v.md5, v.data_name, v.bad)
    if isinstance(v, Scalar):
        return ("S", v.type, repr(v.value))
    return v


def seen(c):
    return (c.name, c.api, c.op, c.module, c.direction, c.token, c.index, c.phase,
            tuple((k, leaf(v)) for k, v in c.slots.items()), c.dropped, tuple(c.malformed), c.form)


def read(folder, typed: bool):
    (rank,) = locate(str(folder))
    h = Header()
    try:
        return [seen(c) for c in calls(rank, h, typed=typed)], h.calls
    except DumpError as e:
        return str(e), h.calls


def write(folder, data_text: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dump.json").write_text('{"task": "statistics", "level": "L1", "framework": "pytorch",\n'
                                      ' "dump_data_dir": null, "data": {\n' + data_text + '\n}}\n')
    return folder


def member(name: str, rec) -> str:
    return json.dumps(name) + ": " + (rec if isinstance(rec, str) else json.dumps(rec, indent=1))


def surveyed(folder, typed: bool):
    """What survey gets: every call decoded, none made (counted_runs)."""
    (rank,) = locate(str(folder))
    h = Header()
    try:
        return len(list(calls(rank, h, build=False, typed=typed))), h.calls
    except DumpError as e:
        return str(e), h.calls


def same_both_ways(folder):
    typed, plain = read(folder, True), read(folder, False)
    assert typed == plain
    assert surveyed(folder, True) == surveyed(folder, False) == (
        (len(plain[0]) if isinstance(plain[0], list) else plain[0]), plain[1])
    return typed


@pytest.fixture
def small_runs(monkeypatch):
    """Runs of a few calls and a small buffer: runs end at every kind of place."""
    monkeypatch.setattr(budget, "DUMP_RUN", 700)
    monkeypatch.setattr(budget, "JSON_CHUNK", 512)


WELL_FORMED = [
    ("Functional.linear.0.forward", {"input_args": [T(), T(shape=(4, 4))], "input_kwargs": {}, "output": [T()]}),
    ("Functional.linear.0.backward", {"input": [T()], "output": [T(), None]}),
    ("Module.layers.0.attn.Linear.forward.0", {"input_args": [T()], "input_kwargs": {"bias": T(shape=(4,))},
                                                "output": [T(md5="0a1b", data_name="x.pt")]}),
    ("Torch.softmax.0.forward", {"input_args": [T(), {"type": "int", "value": -1}], "input_kwargs":
                                 {"dtype": {"type": "torch.dtype", "value": "torch.float32"}}, "output": [T()]}),
    ("Tensor.view.0.forward", {"input_args": [T(), {"type": "torch.Size", "value": [2, 4]},
                                              {"type": "slice", "value": [None, 3, None]}],
                               "input_kwargs": {}, "output": [T(Max=3, Min=-0.0, Mean=1e-300, Norm=None)]}),
    ("Functional.dropout.0.forward", {"input_args": [[T(), T()], {"type": "float", "value": 0.1}],
                                      "input_kwargs": {"training": {"type": "bool", "value": True}},
                                      "output": [T(dtype=None)]}),
    ("Functional.pad.0.forward", {"input_args": [T(), {"type": "dict", "value": {"a": 1}}], "input_kwargs": {},
                                  "output": []}),
    ("Module.layers.0.mlp.Linear.parameters_grad", {"weight": [T()], "bias": [T(shape=(4,))]}),
    ("Functional.empty_like.0.forward", {"input_args": [], "input_kwargs": {}, "output": None}),
    ("Torch.sum.0.forward", {"input_args": [{"dtype": "torch.int64", "shape": []}], "input_kwargs": {},
                             "output": [{"type": "torch.Tensor", "dtype": "torch.int64", "shape": [], "Max": 12345678901234567890123,
                                         "Min": 1, "Mean": 2.5, "Norm": 3}]}),
    ("Torch.unicode.0.forward", {"input_args": [{"type": "str", "value": "é{}[]\"\\ \u2028 \ud83d\ude00"}],
                                 "input_kwargs": {}, "output": [T()]}),
]


def test_well_formed_dumps_are_read_the_same_by_both_readers(tmp_path, small_runs):
    rnd = random.Random(5)
    for trial in range(12):
        members = [member(f"{n}.{trial}.{i}" if i else n, r) for i, (n, r) in enumerate(rnd.sample(WELL_FORMED, 8))]
        members += [member(f"Functional.linear.{i}.forward", {"input_args": [T()], "output": [T()]})
                    for i in range(1, rnd.randrange(2, 30))]
        rnd.shuffle(members)
        got = same_both_ways(write(tmp_path / str(trial), ",\n".join(members)))
        assert got[1] == len(members)


def test_the_typed_reader_takes_well_formed_runs():
    """Not a vacuous comparison: a well-formed run is the compiled reader's, not json's."""
    run = typed_runs()
    text = "{" + ",".join(member(n, r) for n, r in WELL_FORMED) + "}"
    made = run(text)
    assert [n for n, _c in made] == [n for n, _r in WELL_FORMED]
    assert [seen(c)[8] for _n, c in made] == [seen(reader.make_call(n, json.loads(json.dumps(r)), 0, 0))[8]
                                              for n, r in WELL_FORMED]


@pytest.mark.parametrize("odd", [
    '"Functional.a.0.forward": {}, "Functional.a.0.forward": {"input_args": [%s], "output": []}' % json.dumps(T()),
    '"Functional.a.0.forward": {"output": [%s]}, "Functional.a.0.forward": {"output": [%s]}' % (json.dumps(T()), json.dumps(T())),
    '"Functional.a.0.forward": {"input_args": [], "output": []}, "Functional.a.0.forward": {"output": []}',
    '"Functional.a.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": NaN, "Min": Infinity}]}',
    '"Functional.a.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1e400}]}',
    '"Functional.a.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [-1, true], "Max": "1.5", "Min": true}]}',
    '"Functional.a.0.forward": {"output": [{"type": "torch.Tensor", "dtype": 5, "shape": [2], "md5": 7, "data_name": 3}]}',
    '"Functional.a.0.forward": {"output": [{"type": 5, "value": 1}, {"value": 2}, 3, "s", {"x": {"type": "int", "value": 1}}]}',
    '"Functional.a.0.forward": {"input_args": 3, "input_kwargs": "x", "output": [[[[%s]]]]}' % json.dumps(T()),
    '"Functional.a.0.forward": [1, 2], "Functional.b.0.forward": null, "Functional.c.0.forward": 7',
    '"Functional.a.0.forward": {"output": [{"type": "str", "value": "\\ud800"}], "is_recompute": false}',
    '"Functional.a.0.forward": {"input_kwargs": {"k": %s, "k": %s}, "output": []}' % (json.dumps(T()), json.dumps(T(shape=(3,)))),
    '"Functional.a.0.forward": {"output": [{"type": "int", "value": 123456789012345678901234567890123}]}',
    '"Functional.a.0.forward": {"output": [{"type": "dict", "value": {"}": "{", "]": [1, {"a": "["}]}}]}',
    '"Functional.a.0.forward": {"output": [%s]}, "Functional.a.0.forward": {}' % json.dumps(T()),
])
def test_what_the_typed_reader_cannot_take_is_read_as_json_reads_it(tmp_path, small_runs, odd):
    well = [member(f"Functional.linear.{i}.forward", {"input_args": [T()], "output": [T()]}) for i in range(12)]
    for at in (0, 5, 12):
        got = same_both_ways(write(tmp_path / str(at), ",\n".join(well[:at] + [odd] + well[at:])))
        assert isinstance(got[0], list)


def test_the_slots_budget_is_kept_by_both_readers(tmp_path, small_runs, monkeypatch):
    monkeypatch.setattr(budget, "DUMP_SLOTS", 3)
    text = ",\n".join(member(f"Functional.cat.{i}.forward", {"input_args": [T()] * i, "output": [T()]}) for i in range(6))
    got = same_both_ways(write(tmp_path / "d", text))
    assert [c[9] for c in got[0]] == [0, 0, 0, 1, 2, 3]


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.97])
def test_a_damaged_dump_fails_the_same_way_at_the_same_call(tmp_path, small_runs, cut):
    text = ",\n".join(member(f"Functional.linear.{i}.forward", {"input_args": [T()], "output": [T()]})
                      for i in range(20))
    folder = write(tmp_path / "d", text)
    whole = (folder / "dump.json").read_text()
    (folder / "dump.json").write_text(whole[:int(len(whole) * cut)])
    typed, plain = read(folder, True), read(folder, False)
    assert typed == plain
    assert surveyed(folder, True) == surveyed(folder, False) == typed
    assert isinstance(typed[0], str) and typed[0].startswith(str(folder / "dump.json"))


# --- jsonload.Stream: runs of members, batches of strings ------------------------------------------

TRICKY = {f"A.op.{i}.forward": {"input_args": [{"Max": i * 1.5e-3, "s": "a},]\"{" * (i % 3)}],
                                "output": [None, True, -2, {"k": "\\\"}"}]} for i in range(60)}


def test_runs_give_the_members_items_gives_whatever_the_decoder_takes():
    import io

    from scriptdiff.inputs.jsonload import Stream

    doc = {"data": TRICKY, "after": [1, "}"]}
    for chunk in (5, 64, 4096):
        for indent in (None, 1):
            for size in (40, 300, 100_000):
                for refuse in (0, 2, 3):  # a decoder that takes every run, or refuses some
                    offered = []

                    def decode(text, refuse=refuse, offered=offered):
                        offered.append(text)
                        try:  # (a run whose brackets balance only by those in its strings does not parse)
                            got = json.loads(text)
                        except ValueError:
                            return None
                        return None if refuse and len(offered) % refuse == 0 else list(got.items())

                    s = Stream(io.BytesIO(json.dumps(doc, indent=indent).encode()), 10_000, chunk)
                    got, after = [], None
                    for key in s.members():
                        if key == "data":
                            for k, v in s.runs(decode, size):
                                got += v if k is None else [(k, v)]
                        else:
                            after = s.value()
                    assert (got, after) == (list(TRICKY.items()), [1, "}"]), (chunk, indent, size, refuse)
                    if chunk == 4096 and size == 100_000:
                        assert len(offered) >= 1


def test_a_list_of_strings_is_read_whole_across_buffers():
    import io

    from scriptdiff.inputs.jsonload import Stream

    names = ['a"b', "c\\", '\\"', "}", "]", ",", "é\u2028", "", "x" * 40] * 9 + [{"k": '"'}, 3, "end"]
    for chunk in (3, 7, 64, 4096):
        for indent in (None, 1):
            s = Stream(io.BytesIO(json.dumps({"l": names, "n": 1}, indent=indent).encode()), 10_000, chunk)
            got = {}
            for key in s.members():
                got[key] = list(s.elements()) if key == "l" else s.value()
            assert got == {"l": names, "n": 1}, (chunk, indent)


def test_members_whose_strings_unbalance_every_run_are_looked_at_once_per_stretch(monkeypatch):
    """A stretch with no run in it is read member by member, not looked at again for each."""
    import io

    from scriptdiff.inputs.jsonload import Stream

    data = {f"A.op.{i}.forward": {"output": [{"type": "str", "value": "{"}]} for i in range(2000)}
    text = json.dumps({"data": data})
    looks = []
    real = Stream._run
    monkeypatch.setattr(Stream, "_run", lambda self, size: looks.append(1) or real(self, size))
    s = Stream(io.BytesIO(text.encode()), 10_000, 4096)
    got = []
    for key in s.members():
        for k, v in s.runs(lambda t: pytest.fail("no run balances"), 1000):
            got.append((k, v))
    assert got == list(data.items())
    assert len(looks) <= len(text) // 1000 + 2


@pytest.mark.parametrize("field", ["1" * 5000, "[" * 3000 + "]" * 3000])
def test_what_json_refuses_in_a_field_nobody_reads_is_refused_by_both_readers(tmp_path, field):
    """msgspec skips a field the reader does not read (requires_grad); json decodes it, and
    refuses an integer of more digits than int() converts and a nesting past the interpreter's."""
    well = [member(f"Functional.linear.{i}.forward", {"input_args": [T()], "output": [T()]}) for i in range(12)]
    odd = '"Functional.a.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "x", "shape": [1], ' \
          '"requires_grad": %s}]}' % field
    got = same_both_ways(write(tmp_path / "d", ",\n".join(well[:5] + [odd] + well[5:])))
    assert isinstance(got[0], str) and "dump.json" in got[0]
    assert got[1] == 5  # the calls before it


def test_two_threads_reading_dumps_at_once_get_what_one_reading_alone_gets(tmp_path):
    """The compiled reader counts a run's calls per thread: two readers never mix their counts
    (the interpreter switches threads as often as it can, inside the decoding too)."""
    import sys
    import threading

    folders = []
    for k in range(2):
        text = ",\n".join(member(f"Functional.linear.{i}.forward", {"input_args": [T()] * (k + 1), "output": [T()]})
                          for i in range(3000))
        folders.append(write(tmp_path / str(k), text))
    alone = [(read(f, True), surveyed(f, True)) for f in folders]
    got: dict = {}
    threads = [threading.Thread(target=lambda k=k: got.__setitem__(k, [(read(folders[k], True), surveyed(folders[k], True))
                                                                       for _ in range(3)]))
               for k in range(2)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert got == {k: [alone[k]] * 3 for k in range(2)}

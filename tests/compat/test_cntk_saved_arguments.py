"""How a model's arguments are saved and loaded as CNTK 2.7 does it, checked against what CNTK
2.7 wrote and read (``tests/fixtures/cntk_saved_arguments``: ``make_models.py`` with CNTK,
``write_models.py`` with Stadyn): an untyped ``@C.Function`` is saved with its arguments as
placeholders of unknown shape, and loaded waits for operands again, its arguments in CNTK's
order; an input declared sparse stays sparse in the file."""

import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cntk_saved_arguments"
READ = json.loads((FIXTURES / "cntk_read.json").read_text())


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MODELS = _module("models")


def _seen(path, kind) -> dict:
    """What a program sees of the model file at ``path``, rounded as ``models.seen`` is in
    ``cntk_read.json``."""
    return json.loads(json.dumps(MODELS.seen(C, C.load_model(str(path)), kind)))


def _leaves(path) -> list:
    """The leaves a CNTK v2 file lists, uids left out: kind, name, shape, data type, sparse,
    dynamic axes."""
    from stadyn import serialize
    model = serialize.read_legacy_model(str(path))
    out = []
    for net in [model.networks["main"]] + [f.body for f in model.networks["main"].functions
                                            if f.body is not None]:
        for v in net.variables.values():
            out.append((v.kind, v.shape, v.dtype, v.meta.get("is_sparse"),
                        tuple(v.meta.get("dynamic_axes") or ())))
    return sorted(out, key=repr)


@pytest.mark.parametrize("kind", ["untyped", "sparse", "broadcast", "never", "gather_never",
                                  "gather_seq", "tuple", "tuple_applied"])
def test_a_model_file_written_by_cntk_loads_as_cntk_sees_it(kind):
    # untyped: CNTK's placeholders of unknown shape were "used before computed"; sparse: the
    # input was dense; broadcast: the arguments were listed in the order the file reads them
    # (inp, history), so the loaded model applied to (labels, i2) broadcast over i2's sequences
    # (a wrong value, inAxis's shape) where CNTK 2.7 lists history first; never: (Stadyn could
    # not write it); tuple: the second output of CNTK's Tuple block, saved as a placeholder
    # named Block<n>_Output_1, was read as a third argument (TypeError applied to two)
    assert _seen(FIXTURES / f"{kind}.model", kind) == READ["cntk"][kind]


@pytest.mark.parametrize("kind", ["untyped", "sparse", "never", "gather_never", "gather_seq",
                                  "tuple_applied"])
def test_a_model_saved_by_stadyn_is_the_file_cntk_writes(kind, tmp_path):
    # CNTK 2.7 read the committed <kind>_stadyn.model as it reads its own file (never: an
    # untyped Function not applied was refused, ValueError; gather_never, gather_seq: written
    # as a Stadyn model file, with a warning, whose arguments were typed by the sequences of
    # one number built for the untyped table and the types it was applied to, listed indices
    # first: ShapeError applied to a table without dynamic axes; tuple_applied: no Tuple block
    # was written, so CNTK 2.7 and Stadyn listed the arguments (x, w) and applied the model
    # to (W, x) as times(W, x) + gather(x, W))
    assert READ["stadyn"][kind] == READ["cntk"][kind]
    path = tmp_path / f"{kind}.model"
    MODELS.MODELS[kind](C).save(str(path))                     # (as write_models.py does)
    assert _leaves(path) == _leaves(FIXTURES / f"{kind}_stadyn.model")
    assert _leaves(path) == _leaves(FIXTURES / f"{kind}.model")
    assert _seen(path, kind) == READ["cntk"][kind]


def test_an_untyped_function_loaded_waits_for_each_application():
    g = C.load_model(str(FIXTURES / "untyped.model"))
    first = g(C.sequence.input_variable(3), C.sequence.input_variable(2))
    second = g(C.input_variable(3), C.input_variable(2))       # (no sequences this time)
    assert (first.shape, second.shape) == ((2,), (2,))
    assert [a.shape for a in g.arguments] == [(-2,), (-2,)]


def test_an_untyped_function_loads_from_the_file_bytes_as_from_the_file():
    # CNTK 2.7 sees the same of load_model(bytes) as of the file (checked with CNTK 2.7:
    # models.seen(C, C.load_model(open(f, 'rb').read()), 'untyped') == cntk_read.json's)
    data = (FIXTURES / "untyped.model").read_bytes()
    seen = json.loads(json.dumps(MODELS.seen(C, C.load_model(data), "untyped")))
    assert seen == READ["cntk"]["untyped"]


def test_a_model_saved_by_stadyn_with_arguments_in_an_order_of_their_own_loads_as_cntk_sees_it(
        tmp_path):
    # CNTK 2.7 read the committed broadcast_stadyn.model as it reads its own file
    assert READ["stadyn"]["broadcast"] == READ["cntk"]["broadcast"]
    path = tmp_path / "broadcast.model"
    MODELS.MODELS["broadcast"](C).save(str(path))
    assert _seen(path, "broadcast") == READ["cntk"]["broadcast"]


def _block_placeholder_names(path) -> list:
    from stadyn import serialize
    main = serialize.read_legacy_model(str(path)).networks["main"]
    return [sorted(v.meta.get("name") for v in f.body.variables.values()
                   if v.kind == "placeholder") for f in main.functions if f.body is not None]


def test_a_block_over_an_untyped_argument_reads_a_placeholder_named_after_it(tmp_path):
    # CNTK 2.7 names sequence.last's and broadcast_as's inner placeholders 'inp' and
    # 'history' (the arguments they stand for; a computed operand's stays ''); ours were ''
    path = tmp_path / "broadcast.model"
    MODELS.MODELS["broadcast"](C).save(str(path))
    assert _block_placeholder_names(path) == \
        _block_placeholder_names(FIXTURES / "broadcast.model") == [["inp"], ["", "history"]]


def test_a_sparse_input_stays_sparse_in_a_stadyn_model_file(tmp_path):
    """A stabilized Recurrence over an LSTM (a Stadyn model file, with a warning, before
    cntkwrite27 wrote the self-stabilized LSTM as a CNTK v2 file; now that file, no warning)
    keeps its input's sparsity too, so a criterion typed
    ``Sequence[SparseTensor[9]]`` applies the loaded model as CNTK 2.7 applies its own file of
    this model (``stabilized.json``, written by ``make_stabilized.py`` with CNTK 2.7; the
    Language Understanding example's evaluate step)."""
    from stadyn.compat.cntk.layers.typing import Sequence, SparseTensor
    wanted = json.loads((FIXTURES / "stabilized.json").read_text())
    L = C.layers
    with L.default_options(enable_self_stabilization=True):   # (as make_stabilized.py)
        model = L.Sequential([L.Embedding(5), L.Stabilizer(), L.Recurrence(L.LSTM(4)),
                              L.Dense(3)])
    model.update_signature(Sequence[SparseTensor[9]])
    path = tmp_path / "model.cmf"
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)       # (a CNTK v2 file now)
        model.save(str(path))
    loaded = C.Function.load(str(path))
    assert [a.is_sparse for a in loaded.arguments] == wanted["arguments_sparse"]
    assert str(loaded(C.sequence.input_variable(9, is_sparse=True))) == wanted["applied"]


def test_untyped_gather_arguments_load_in_cntks_order():
    # gather(table, indices) is stored Gather(indices, table); CNTK 2.7 lists the loaded
    # arguments in Python's order (gather.json, written with gather.model by make_gather.py;
    # before, Stadyn listed them swapped)
    wanted = json.loads((FIXTURES / "gather.json").read_text())["arguments"]
    assert [a.name for a in C.load_model(str(FIXTURES / "gather.model")).arguments] == wanted


def test_untyped_gather_applied_to_a_batch_axis_table_refused_as_cntk():
    # CNTK 2.7 (gather.model loaded, applied to a table with the batch axis) applies it -- a
    # Gather of shape (1, 3) over [t, i] -- and raises RuntimeError "Gather operation's right
    # operand doesn't expect to have dynamic axis" when it is evaluated (its network's
    # validation); Stadyn refuses at eval too, with that type and those words (before: when it
    # was applied; before that, UnsupportedModelError in its own words)
    pick = C.load_model(str(FIXTURES / "gather.model"))
    table, indices = C.input_variable((4, 3), name="t"), C.input_variable(1, name="i")
    applied = pick(table, indices)
    assert (applied.shape, applied.root_function.op_name, [a.name for a in applied.arguments]) \
        == ((1, 3), "Gather", ["t", "i"])
    with pytest.raises(RuntimeError, match="^Gather operation's right operand doesn't expect "
                                           "to have dynamic axis .*gather.model"):
        applied.eval({table: np.ones((1, 4, 3), np.float32), indices: np.array([[1]],
                                                                              np.float32)})


def test_untyped_gather_given_batch_axis_types_refused_at_eval_as_cntk():
    # CNTK 2.7: gather.model's update_signature(4, 2) gives table (4,) and indices (2,), each
    # with the batch axis, the output (2,), and only eval raises RuntimeError "Gather
    # operation's right operand doesn't expect to have dynamic axis"; Stadyn raised
    # ModelRefusedAtRunError in update_signature
    m = C.load_model(str(FIXTURES / "gather.model"))
    m.update_signature(4, 2)
    assert [(a.name, a.shape, len(a.dynamic_axes)) for a in m.arguments] == \
        [("table", (4,), 1), ("indices", (2,), 1)]
    assert (m.output.shape, m.root_function.op_name) == ((2,), "Gather")
    with pytest.raises(RuntimeError, match="^Gather operation's right operand doesn't expect "
                                           "to have dynamic axis"):
        m.eval({m.arguments[0]: np.arange(4, dtype=np.float32).reshape(1, 4),
                m.arguments[1]: np.array([[1, 3]], np.float32)})


def test_an_untyped_function_saved_after_applying_applies_to_other_shapes(tmp_path):
    # h(w, x) = times(x, w) + gather(w, x) applied to a (3, 3) table, saved and loaded: CNTK
    # 2.7's file (tuple_applied.model) applies to a (5, 5) table too, and so does Stadyn's now;
    # Stadyn wrote a Reshape of times' output to the (1, 3) its Plus broadcast from when
    # applied, which refused the (5,) of a (5, 5) table (UnsupportedModelError).  CNTK 2.7
    # read the regenerated tuple_applied_stadyn.model as before (cntk_read.json) and computed
    # these values from it
    path = tmp_path / "h.model"
    MODELS.MODELS["tuple_applied"](C).save(str(path))
    table = np.arange(25, dtype=np.float32).reshape(5, 5)
    xv = np.array([[4, 3, 2, 1, 0]], np.float32)
    wanted = (xv @ table)[:, None, :] + table[xv.astype(int)]          # times + gather
    for f in (path, FIXTURES / "tuple_applied.model"):
        x = C.input_variable(5, name="x")
        z = C.load_model(str(f))(C.constant(table), x)
        np.testing.assert_allclose(z.eval({x: xv}), wanted)


@pytest.mark.parametrize("name", ["untyped.model", "untyped_stadyn.model"])
def test_an_untyped_loaded_functions_applications_share_its_parameters(name):
    # CNTK 2.7 (load_model(untyped.model) applied to two pairs of inputs): both applications
    # list [Parameter773 (3, 2), Parameter774 (2,)], the same parameters -- W set through the
    # first is the second's (its value [[2, 2], ..]).  Before rmB38 each application decoded
    # the file into parameters of its own (the same uids): the second kept the file's W
    # ([-0.802, -0.797], ..) and a learner over the first never changed the second
    g = C.load_model(str(FIXTURES / name))
    a1, b1 = C.input_variable(3, name="a1"), C.input_variable(2, name="b1")
    a2, b2 = C.input_variable(3, name="a2"), C.input_variable(2, name="b2")
    first, second = g(a1, b1), g(a2, b2)
    assert [p.uid for p in first.parameters] == [p.uid for p in second.parameters]
    w, bias = first.parameters
    w.value = np.full((3, 2), 2.0, np.float32)
    assert all(p is q or p == q for p, q in zip(first.parameters, second.parameters))
    av, bv = np.array([[1, 2, 3]], np.float32), np.array([[0.5, -1]], np.float32)
    wanted = av @ np.full((3, 2), 2.0, np.float32) + bias.value + bv       # Dense(2)(a) + b
    np.testing.assert_allclose(second.eval({a2: av, b2: bv}), wanted, rtol=1e-6)


@pytest.mark.parametrize("name", ["untyped.model", "untyped_stadyn.model"])
def test_an_untyped_loaded_function_lists_its_parameters_before_it_is_applied(name):
    # CNTK 2.7: load_model(untyped.model).parameters [Parameter773 (3, 2), Parameter774 (2,)]
    # before any application, the ones its applications read (the file's values); Stadyn
    # raised ValueError ("its parameters are known once it is applied") before rmB38
    from stadyn import serialize
    g = C.load_model(str(FIXTURES / name))
    before = g.parameters
    stored = serialize.read_legacy_model(str(FIXTURES / name)).parameters
    assert [(p.uid, p.shape) for p in before] == [
        (uid, tuple(p.value.shape)) for uid, p in stored.items() if p.kind == "parameter"]
    for p in before:
        np.testing.assert_array_equal(p.value, stored[p.uid].value)
    applied = g(C.input_variable(3), C.input_variable(2))
    assert all(p == q for p, q in zip(before, applied.parameters))


PLACEHOLDERS = json.loads((FIXTURES / "placeholders.json").read_text())


@pytest.mark.parametrize("name", sorted(PLACEHOLDERS))
def test_a_loaded_files_arguments_and_placeholders_are_listed_as_cntk(name):
    # CNTK 2.7 (placeholders.json, its list_placeholders.py): gather(table, indices), stored
    # Gather(indices, table), loaded untyped lists the arguments [table, indices] and the
    # placeholders [indices, table], as its walk of the stored operands meets them; on
    # 91ee42a2 Stadyn listed the placeholders [table, indices]
    m = C.load_model(str(FIXTURES / name))
    assert {"arguments": [a.name for a in m.arguments],
            "placeholders": [p.name for p in m.placeholders]} == PLACEHOLDERS[name]


def test_declare_args_of_a_loaded_file_binds_its_placeholders_in_cntks_order():
    # CNTK 2.7's declare_args zips its arguments with `placeholders` (functions.py:357):
    # gather.model's [indices, table], so declare_args(A (2,), B (4,), no dynamic axes) reads
    # B as the table and gives gather(B, A) = [[40, 20]] for A [[3, 1]], B [10, 20, 30, 40]
    # (CNTK 2.7, run on this input); on 91ee42a2 Stadyn bound A to the table (refused)
    m = C.load_model(str(FIXTURES / "gather.model"))
    a = C.input_variable(2, name="A")
    b = C.input_variable(4, name="B", dynamic_axes=[])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        m.declare_args(a, b)
    assert [(v.name, v.shape) for v in m.arguments] == [("B", (4,)), ("A", (2,))]
    out = m.eval({a: np.array([[3, 1]], np.float32), b: np.array([10, 20, 30, 40], np.float32)})
    np.testing.assert_array_equal(out, [[40.0, 20.0]])

"""A Variable the program holds keeps its value through ``forward(clear_no_need_grad=True)``
and ``backward(clear_buffer=True)``; the intermediates it dropped are freed
(``graph/_held_values.py``).

The pattern is nnabla-examples' DARTS (``darts_train.py``, ``darts_search.py``) and capsulenet
(``train.py``): ``loss.forward(clear_no_need_grad=True)``, then the training error from
``pred.d``; ``loss.backward(clear_buffer=True)``, then ``pred.d`` again.  NNabla 1.39 reads
whatever its memory pool left in the freed buffer there (``tests/fixtures/nnabla_freed_values/
measure.py`` shows when that is the value and when it is not); Stadyn read zeros.  The
expected values are a NumPy forward of the same network.
"""

import copy
import gc
import sys
import threading
import types
import weakref

import numpy as np
import pytest
import torch

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
from stadyn.graph import StaticPlan, Subgraph
from stadyn.graph._held_values import _TABLED, OWN_REFERENCES, references_beyond_stadyn

BATCH, WIDTH, DEPTH, CLASSES = 4, 8, 3, 5


def _mlp(x):
    """``DEPTH`` affine + ReLU layers and an affine to ``CLASSES`` scores, each layer's
    output dropped as the loop goes on (the way nnabla-examples write their networks)."""
    h = x
    for i in range(DEPTH):
        h = F.relu(PF.affine(h, WIDTH, name=f"l{i}"))
    return PF.affine(h, CLASSES, name="out")


def _numpy_scores(x):
    params = nn.get_parameters()
    h = x.astype(np.float64)
    for i in range(DEPTH):
        h = np.maximum(h @ params[f"l{i}/affine/W"].d + params[f"l{i}/affine/b"].d, 0)
    return h @ params["out/affine/W"].d + params["out/affine/b"].d


def _error(scores, labels):
    """darts' ``categorical_error``: the share of rows whose largest score is not the label."""
    return float((scores.argmax(1) != labels.ravel()).mean())


@pytest.fixture
def data():
    nn.clear_parameters()
    rng = np.random.RandomState(0)
    x = rng.randn(BATCH, WIDTH).astype(np.float32)
    labels = rng.randint(0, CLASSES, (BATCH, 1))
    yield x, labels
    nn.clear_parameters()


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_the_prediction_a_program_holds_reads_its_values_through_the_clearing_step(data,
                                                                                   dynamic):
    x_np, labels = data
    with nn.auto_forward(dynamic):
        x = nn.Variable.from_numpy_array(x_np)
        t = nn.Variable.from_numpy_array(labels)
        pred = _mlp(x)
        loss = F.mean(F.softmax_cross_entropy(pred, t))
    expected = _numpy_scores(x_np)
    for _ in range(2):
        loss.forward(clear_no_need_grad=True)
        np.testing.assert_allclose(pred.d, expected, rtol=1e-5, atol=1e-6)
        loss.backward(clear_buffer=True)
        np.testing.assert_allclose(pred.d, expected, rtol=1e-5, atol=1e-6)
    assert _error(pred.d, labels) == _error(expected, labels)
    if not dynamic:
        assert isinstance(loss._plan, StaticPlan)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_held_in_a_list_a_dict_or_an_attribute_keeps_the_value(data, dynamic):
    x_np, labels = data

    class Outputs:
        pass

    with nn.auto_forward(dynamic):
        x = nn.Variable.from_numpy_array(x_np)
        a = PF.affine(x, WIDTH, name="l0")
        h = F.relu(a)
        scores = PF.affine(h, CLASSES, name="out")
        loss = F.mean(F.softmax_cross_entropy(scores, nn.Variable.from_numpy_array(labels)))
    params = nn.get_parameters()
    a_np = x_np @ params["l0/affine/W"].d + params["l0/affine/b"].d
    held = Outputs()
    held.scores = scores
    listed, named = [a], {"h": h}
    del a, h, scores
    loss.forward(clear_no_need_grad=True)
    loss.backward(clear_buffer=True)
    np.testing.assert_allclose(listed[0].d, a_np, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(named["h"].d, np.maximum(a_np, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(held.scores.d, np.maximum(a_np, 0) @ params["out/affine/W"].d
                               + params["out/affine/b"].d, rtol=1e-5, atol=1e-6)


def _dropped_network(x, t):
    """The intermediates of this network are named only inside this function: once it has
    returned, the program holds none of them."""
    a = PF.affine(x, WIDTH, name="l0")
    h = F.relu(a)
    return F.mean(F.softmax_cross_entropy(PF.affine(h, CLASSES, name="out"), t))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_the_intermediates_a_program_dropped_are_freed(data, dynamic):
    """The affine output no backward reads is freed as the forward runs (static); after the
    clearing backward every dropped intermediate's value is gone, and its tensor with it."""
    x_np, labels = data
    with nn.auto_forward(dynamic):
        loss = _dropped_network(nn.Variable.from_numpy_array(x_np),
                                nn.Variable.from_numpy_array(labels))
    scores = weakref.ref(loss.parent.inputs[0].parent.inputs[0])
    h = weakref.ref(scores().parent.inputs[0])
    a = weakref.ref(h().parent.inputs[0])
    loss.forward(clear_no_need_grad=True)
    if not dynamic:      # ReLU's backward reads its output, no backward reads the affine's
        assert a()._data is None and scores()._data is None and h()._data is not None
    tensors = [weakref.ref(v()._data) for v in (a, h, scores) if v()._data is not None]
    loss.backward(clear_buffer=True)
    assert [v()._data for v in (a, h, scores)] == [None, None, None]
    assert [t() for t in tensors] == [None] * len(tensors)
    assert loss._data is not None


def test_a_plan_built_while_the_program_held_a_variable_is_not_shared_by_one_that_did_not(data):
    """Graphs of one structure share a plan (``_plan_reuse.py``) only where they keep the
    same values: the second graph's prediction, dropped, is not kept for it."""
    x_np, labels = data
    x = nn.Variable.from_numpy_array(x_np)
    t = nn.Variable.from_numpy_array(labels)
    pred = _mlp(x)
    loss = F.mean(F.softmax_cross_entropy(pred, t))
    loss.forward(clear_no_need_grad=True)
    loss.backward(clear_buffer=True)
    other = F.mean(F.softmax_cross_entropy(_mlp(x), t))
    dropped = weakref.ref(other.parent.inputs[0].parent.inputs[0])
    other.forward(clear_no_need_grad=True)
    assert dropped()._data is None           # no backward reads it: freed as the forward ran
    other.backward(clear_buffer=True)
    np.testing.assert_allclose(pred.d, _numpy_scores(x_np), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_looking_for_what_the_program_holds_keeps_nothing_alive(data, dynamic):
    """Counting references keeps nothing alive: a graph the program deletes is freed as
    before (the stack search it replaced read each function's ``frame.f_locals``, before
    Python 3.13 a copy the frame keeps)."""
    x_np, labels = data
    with nn.auto_forward(dynamic):
        pred = _mlp(nn.Variable.from_numpy_array(x_np))
        loss = F.mean(F.softmax_cross_entropy(pred, nn.Variable.from_numpy_array(labels)))
    loss.forward(clear_no_need_grad=True)
    loss.backward(clear_buffer=True)
    gone = weakref.ref(pred)
    del pred, loss
    gc.collect()
    assert gone() is None


# -- any reference the program holds counts (graph/_held_values.py counts references) ---------

def _hold_in_a_module(pred):
    module = types.ModuleType("elsewhere")       # a global of another module
    module.pred = pred
    return lambda: module.pred


def _hold_in_a_closure(pred):
    def make(v):
        return lambda: v
    return make(pred)


def _hold_two_steps_inside_an_object(pred):
    class Trainer:
        pass
    trainer = Trainer()
    trainer.outputs = {"pred": pred}
    return lambda: trainer.outputs["pred"]


def _hold_in_a_list_in_a_list(pred):
    nested = [[pred]]
    return lambda: nested[0][0]


def _hold_in_a_suspended_generator(pred):
    def wait(v):
        while True:
            yield v
    it = wait(pred)
    next(it)
    return lambda: next(it)


def _hold_in_a_long_history(pred):
    history = [0.0] * 1000
    history.append(pred)
    return lambda: history[-1]


def _hold_in_another_thread(pred):
    box, ready, done = [pred], threading.Event(), threading.Event()
    read = []

    def logger():
        v = box.pop()
        ready.set()
        done.wait()
        read.append(v)

    thread = threading.Thread(target=logger)
    thread.start()
    ready.wait()

    def get():
        done.set()
        thread.join()
        return read[0]
    return get


@pytest.mark.parametrize("hold", [_hold_in_a_module, _hold_in_a_closure,
                                  _hold_two_steps_inside_an_object, _hold_in_a_list_in_a_list,
                                  _hold_in_a_suspended_generator, _hold_in_a_long_history,
                                  _hold_in_another_thread],
                         ids=lambda f: f.__name__[len("_hold_"):])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_a_prediction_held_anywhere_keeps_its_value(data, dynamic, hold):
    """However the program holds it (no frame of the caller names it), the prediction reads
    its values after the clearing forward and backward, static and dynamic alike."""
    x_np, labels = data
    with nn.auto_forward(dynamic):
        pred = _mlp(nn.Variable.from_numpy_array(x_np))
        loss = F.mean(F.softmax_cross_entropy(pred, nn.Variable.from_numpy_array(labels)))
    get = hold(pred)
    del pred
    expected = _numpy_scores(x_np)
    loss.forward(clear_no_need_grad=True)
    if hold is not _hold_in_another_thread:      # (its getter ends the thread)
        np.testing.assert_allclose(get().d, expected, rtol=1e-5, atol=1e-6)
    loss.backward(clear_buffer=True)
    np.testing.assert_allclose(get().d, expected, rtol=1e-5, atol=1e-6)


def test_the_dict_of_locals_a_function_took_is_left_as_it_was(data):
    """Nothing of the program is read or changed: a dict from ``locals()`` keeps its names
    through a clearing forward (Python 3.11-3.12 hand out the frame's own dict)."""
    x_np, labels = data
    pred = _mlp(nn.Variable.from_numpy_array(x_np))
    loss = F.mean(F.softmax_cross_entropy(pred, nn.Variable.from_numpy_array(labels)))
    epoch, lr = 3, 0.1
    ctx = locals()
    loss.forward(clear_no_need_grad=True)
    loss.backward(clear_buffer=True)
    assert "epoch {epoch} lr {lr}".format(**ctx) == f"epoch {epoch} lr {lr}"
    assert ctx["pred"] is pred


def test_a_tracer_changes_nothing(data):
    """Under a line tracer (a debugger, coverage) a graph the program deletes is freed as
    without one (the stack search left a traced function's variables copied in its frame)."""
    x_np, labels = data

    def step():
        pred = _mlp(nn.Variable.from_numpy_array(x_np))
        loss = F.mean(F.softmax_cross_entropy(pred, nn.Variable.from_numpy_array(labels)))
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        gone = weakref.ref(pred)
        del pred, loss
        gc.collect()
        return gone() is None

    def tracer(frame, event, arg):
        return tracer if frame.f_code is step.__code__ else None

    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        traced = step()
    finally:
        sys.settrace(before)
    assert (traced, step()) == (True, True)


def _intermediates_beyond_stadyn(loss):
    """What the program holds of each intermediate of ``loss`` (its root left out)."""
    found = references_beyond_stadyn(Subgraph([loss]).nodes)
    found.pop(id(loss))
    return sorted(set(found.values()))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_stadyn_counts_every_reference_of_its_own(data, dynamic):
    """Of a graph the program dropped every intermediate of, no reference is left over after
    any run: a clearing and a plain forward (two plans), their backwards, a new batch size
    (trial runs) and dynamic mode's autograd backward; a held one is counted once."""
    x_np, labels = data
    with nn.auto_forward(dynamic):
        x = nn.Variable.from_numpy_array(x_np, need_grad=True)
        t = nn.Variable.from_numpy_array(labels)
        loss = _dropped_network(x, t)
    seen = [_intermediates_beyond_stadyn(loss)]
    if dynamic:
        loss.backward(clear_buffer=True)
        seen.append(_intermediates_beyond_stadyn(loss))
    for run in (lambda: loss.forward(clear_no_need_grad=True),
                lambda: loss.backward(clear_buffer=True), loss.forward, loss.backward,
                lambda: loss.backward(clear_buffer=True),
                lambda: setattr(x, "data", torch.ones(BATCH + 2, WIDTH)),
                lambda: setattr(t, "data", torch.zeros(BATCH + 2, 1, dtype=torch.int64)),
                lambda: loss.forward(clear_no_need_grad=True),
                lambda: loss.backward(clear_buffer=True)):
        run()
        seen.append(_intermediates_beyond_stadyn(loss))
    assert seen == [[0]] * len(seen)
    held = loss.parent.inputs[0]
    assert references_beyond_stadyn(Subgraph([loss]).nodes)[id(held)] == 1


def test_the_check_holds_two_references_itself():
    """The loop's name and ``sys.getrefcount``'s argument (measured at import; CPython
    3.10-3.13 hold both)."""
    assert OWN_REFERENCES == 2


def test_freed_plans_leave_no_count_behind(data):
    """The count of the plans' references ends with the plans."""
    x_np, labels = data
    gc.collect()
    before = len(_TABLED)
    loss = _dropped_network(nn.Variable.from_numpy_array(x_np),
                            nn.Variable.from_numpy_array(labels))
    loss.forward(clear_no_need_grad=True)
    loss.backward(clear_buffer=True)
    loss.forward()
    assert len(_TABLED) > before
    del loss
    gc.collect()
    assert len(_TABLED) == before


def test_a_container_two_functions_share_is_counted_once():
    """A copy of a function node shares its ``inputs`` and ``args``: counted twice, the
    program's own reference would be taken for Stadyn's and its value freed."""
    import stadyn as sd
    import stadyn.functions as SF
    h = SF.relu(sd.Variable((2,)))
    y = SF.sum(h)
    twin = copy.copy(y.parent)
    assert twin.inputs is y.parent.inputs
    assert references_beyond_stadyn([h.parent, y.parent, twin])[id(h)] == 1     # the name h


def test_a_plan_replayed_under_new_gradient_marks_keeps_what_the_program_holds():
    """An eagerly run graph whose marks changed after its forward (``w.need_grad = True``) is
    run again as a new plan before its clearing backward; the old plan is still cached.  Had
    the two plans shared one ``fill`` list, its references would have been counted for both,
    the program's own reference to ``h`` taken for Stadyn's, and ``h`` freed (a reviewer's
    probe of nnheld: ``h._data`` was None)."""
    import stadyn as sd
    import stadyn.functions as SF
    from stadyn.graph import OpSpec, apply
    spec = OpSpec.from_function(lambda t: t * 2, 1, name="twice_untraced", traceable=False)
    x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
    w = sd.Variable.from_numpy_array(np.array([3.0, 4.0]), need_grad=False)
    h = apply(spec, (SF.tanh(x),), {})          # the program holds h
    y = SF.sum(SF.sin(h) * w)
    y.forward()
    w.need_grad = True
    y.backward(clear_buffer=True)
    expected = 2 * np.tanh([1.0, 2.0])
    np.testing.assert_allclose(h.d, expected, rtol=1e-6)
    np.testing.assert_allclose(w.g, np.sin(expected), rtol=1e-6)

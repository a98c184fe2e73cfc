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

import gc
import weakref

import numpy as np
import pytest

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
from stadyn.graph import StaticPlan

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
    """The search reads each function's variables (``frame.f_locals``, before Python 3.13 a
    copy the frame keeps): a graph the program deletes is freed as before."""
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

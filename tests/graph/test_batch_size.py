"""Static graphs across batch sizes: intermediates' shapes after a cached plan replays another
batch (NNabla 1.39 sets them up on every forward), and a new graph built on inputs already
fed a batch (CNTK 2.7's dynamic axes are free when a graph is built)."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.compat.cntk as C
import stadyn.functions as F
import stadyn.parametric_functions as PF
from stadyn.graph import OpSpec, apply

pytestmark = pytest.mark.usefixtures("fresh_parameters")

FLAGS = [{}, {"clear_no_need_grad": True}, {"clear_buffer": True}]


def _feed(x, batch):
    x.reset_shape((batch, 3), force=True)
    x.d = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3) / 10


@pytest.mark.parametrize("flags", FLAGS, ids=["keep_all", "clear_no_need_grad", "clear_buffer"])
def test_an_intermediate_has_the_batch_a_cached_plan_just_ran(flags):
    """4, 5, then 4 again: the third forward replays the plan cached for 4 and ``h`` reports
    (4, 5), as NNabla 1.39 does for each of these flags (the old code kept (5, 5); compat case
    ``nnabla:an_intermediate_has_the_batch_just_run``)."""
    x = sd.Variable((4, 3))
    h = F.tanh(PF.affine(x, 5))
    y = F.sum(h)
    for batch in (4, 5, 4, 5):
        _feed(x, batch)
        y.forward(**flags)
        assert (h.shape, h.size, len(h)) == ((batch, 5), batch * 5, batch)
        w, b = sd.get_parameters()["affine/W"].d, sd.get_parameters()["affine/b"].d
        assert float(y.d) == pytest.approx(np.tanh(x.d @ w + b).sum(), rel=1e-5)


def test_a_backward_after_the_switch_gives_gradients_of_the_batch_run():
    x = sd.Variable((4, 3), need_grad=True)
    h = F.tanh(PF.affine(x, 5))
    y = F.sum(h)
    for batch in (4, 5, 4):
        _feed(x, batch)
        x.need_grad = True
        y.forward(clear_no_need_grad=True)
        x.grad = None
        y.backward()
        assert h.shape == (batch, 5) and x.g.shape == (batch, 3)


def test_two_roots_sharing_an_intermediate_each_restore_their_batch():
    x = sd.Variable((4, 3))
    h = F.tanh(PF.affine(x, 5))
    a, b = F.sum(h), F.mean(h)
    _feed(x, 4)
    a.forward(clear_buffer=True)
    _feed(x, 5)
    b.forward(clear_buffer=True)                 # another root's plan, built for 5
    assert h.shape == (5, 5)
    _feed(x, 4)
    a.forward(clear_buffer=True)                 # the cached plan for 4
    assert h.shape == (4, 5)


def test_an_eager_plan_restores_the_batch_too():
    twice = OpSpec.from_function(lambda t: t * 2, 1, name="twice", traceable=False)
    x = sd.Variable((4, 3))
    h = apply(twice, (F.tanh(x),), {})
    y = F.sum(h)
    for batch in (4, 5, 4):
        _feed(x, batch)
        y.forward(clear_buffer=True)
        assert h.shape == (batch, 3)
        assert float(y.d) == pytest.approx(2 * np.tanh(x.d).sum(), rel=1e-5)


def _ce_reference(x, t, w, b):
    z = x @ w + b
    m = z.max(-1, keepdims=True)
    return (np.log(np.exp(z - m).sum(-1)) + m[..., 0]) - (t * z).sum(-1)


@pytest.mark.parametrize("sequences", [False, True], ids=["batch", "sequences"])
def test_a_cntk_graph_built_after_a_minibatch_on_a_new_input_builds_and_runs(sequences):
    """A Trainer trains on 5 samples (sequences of 5 steps); then a new metric is built on the
    model's output and a new label input, and evaluated on one sample: CNTK 2.7 builds and
    runs it (the axes are free); the old code failed in cross_entropy_with_softmax's shape
    inference ("the target has shape (1, 1, 3) ... output's shape (5, 5, 3)")."""
    inp = C.sequence.input_variable if sequences else C.input_variable
    x, y = inp(4), inp(3)
    z = C.layers.Dense(3)(x)
    loss = C.cross_entropy_with_softmax(z, y)
    trainer = C.Trainer(z, (loss, C.classification_error(z, y)), [C.sgd(z.parameters, lr=0.1)])
    rng = np.random.RandomState(0)
    step = (5,) if sequences else ()
    xs = [rng.rand(*step, 4).astype(np.float32) for _ in range(5)]
    ys = [np.eye(3, dtype=np.float32)[rng.randint(0, 3, step or None)] for _ in range(5)]
    trainer.train_minibatch({x: xs, y: ys})
    label = inp(3)
    metric = C.cross_entropy_with_softmax(z, label)          # the old code raised here
    got = metric.eval({x: xs[:1], label: ys[:1]})
    w, b = (p.value for p in z.parameters)
    want = _ce_reference(xs[0], ys[0], w, b)
    np.testing.assert_allclose(np.asarray(got).reshape(-1), np.reshape(want, -1), rtol=1e-5)
    trainer.train_minibatch({x: xs, y: ys})                  # the training graph still runs


def test_a_native_sequence_input_never_fed_takes_the_batch_of_a_fed_one():
    x, t = sd.sequence.input_variable(3), sd.sequence.input_variable(2)
    x.d = [np.ones((4, 3)), np.ones((2, 3))]
    h = PF.affine(x, 2, base_axis=2)
    err = F.cross_entropy_with_softmax(h, t)                 # the old code raised here
    assert err.shape[:2] == (2, 4) and t.shape == (2, 4, 2)
    targets = [np.eye(2, dtype=np.float32)[[0, 1, 1, 0]], np.eye(2, dtype=np.float32)[[1, 0]]]
    t.d = targets
    err.forward()
    w, b = sd.get_parameters()["affine/W"].d, sd.get_parameters()["affine/b"].d
    np.testing.assert_allclose(err.d[0].reshape(-1),
                               _ce_reference(np.ones((4, 3)), targets[0], w, b), rtol=1e-5)


def test_an_nnabla_variable_keeps_its_shape_and_the_error_stays():
    """Fixed-shape Variables (NNabla's) are never resized: the op's error names both shapes."""
    x = sd.Variable((5, 3))
    x.d = np.ones((5, 3))
    t = sd.Variable((1, 4))
    with pytest.raises(sd.ShapeError, match=r"\(5, 4\).*\(1, 4\)"):
        F.cross_entropy_with_softmax(PF.affine(x, 4), t)
    assert t.shape == (1, 4)


def test_a_free_input_that_was_fed_is_not_resized():
    x, t = C.input_variable(3), C.input_variable(4)
    xv, tv = x.variable, t.variable
    xv.data = torch.ones(5, 3)
    tv.d = np.eye(4, dtype=np.float32)[:1]                   # fed one sample
    with pytest.raises(sd.ShapeError, match="target has shape"):
        F.cross_entropy_with_softmax(PF.affine(xv, 4), tv)
    assert tv.shape == (1, 4)


def test_an_input_an_op_cannot_resize_is_left_as_it_was_and_the_error_stays():
    """The never-fed label goes through a reshape to a fixed (1, 4): it cannot take the batch
    of 5, so nothing changes and the op's own error is raised."""
    x, t = C.input_variable(3).variable, C.input_variable(4).variable
    x.data = torch.ones(5, 3)
    fixed = F.reshape(t, (1, 4))
    with pytest.raises(sd.ShapeError, match=r"cross_entropy_with_softmax.*\(5, 4\).*\(1, 4\)"):
        F.cross_entropy_with_softmax(PF.affine(x, 4), fixed)
    assert t.shape == (1, 4) and fixed.shape == (1, 4)

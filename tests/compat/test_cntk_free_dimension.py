"""CNTK 2.7's ``FreeDimension`` (-3) in an input's shape: each minibatch gives that axis' length.

Expectations: NumPy, hand-computed values, and CNTK 2.7's own files and outputs
(``tests/fixtures/cntk_free_dimension``: ``make_models.py`` wrote them; ``probe.py`` is the
program-by-program comparison of the two frameworks the behaviour was taken from).
"""

import os
import subprocess

import numpy as np
import pytest
import peers
import torch

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_free_dimension")
REFS = dict(np.load(os.path.join(FIXTURES, "refs.npz")))
CNTK_PYTHON = peers.CNTK_PYTHON
F = C.FreeDimension


def _rows(*shape):
    return np.random.RandomState(sum(shape)).randn(*shape).astype(np.float32)


def test_an_input_with_a_free_dimension_shows_it_as_minus_3():
    x = C.input_variable((F, 3), name="x")
    assert repr(x) == "Input('x', [#], [* x 3])"
    assert x.shape == (-3, 3) and (x + 1).shape == (-3, 3)
    assert C.reduce_sum(x, axis=0).shape == (1, 3)        # summed away (CNTK 2.7's shapes)
    assert C.reduce_sum(x, axis=1).shape == (-3, 1)
    assert C.times(x, C.parameter((3, 2))).shape == (-3, 2)
    assert C.slice(x, 0, 0, 2).shape == (2, 3)        # (a static range: CNTK 2.7's shape)
    bare = C.input_variable((F, 3), dynamic_axes=[], name="bare")     # (no batch axis)
    assert repr(bare) == "Input('bare', [], [* x 3])" and bare.shape == (-3, 3)
    assert (bare * 2).eval({bare: np.ones((4, 3), np.float32)}).shape == (4, 3)


def test_eval_takes_two_lengths_in_a_row():
    # a static plan is made anew for the second length, not replayed on the first's shapes
    x = C.input_variable((F, 3), name="x")
    f = C.reduce_sum(x * 2, axis=0)
    for n in (4, 2, 4):
        a = _rows(2, n, 3)
        np.testing.assert_allclose(f.eval({x: a}), 2 * a.sum(axis=1, keepdims=True),
                                   rtol=1e-6)


def test_one_sample_without_the_batch_axis_is_one_sample():
    x = C.input_variable((F, 3), name="x")
    a = _rows(5, 3)
    np.testing.assert_allclose((x * 1).eval({x: a}), a[None])
    np.testing.assert_allclose((x * 1).eval({x: [a, a]}), np.stack([a, a]))


def test_samples_of_different_lengths_are_refused_in_cntks_words():
    x = C.input_variable((F, 3), name="x")
    with pytest.raises(ValueError, match=r"^Value::Create: The shape '\[2 x 3\]' of sequence "
                                         r"#1 is not compatible with the sample shape "
                                         r"'\[\* x 3\]'\."):
        (x * 1).eval({x: [_rows(4, 3), _rows(2, 3)]})
    with pytest.raises(ValueError, match=r"The trailing dimensions of the Value shape "
                                         r"'\[2 x 4 x 2\]' do not match .* shape '\[\* x 3\]'"):
        (x * 1).eval({x: _rows(2, 4, 2)})


def test_dense_over_the_free_axis_is_refused_in_cntks_words():
    x = C.input_variable((F, 3), name="x")
    with pytest.raises(ValueError, match=re_escape(
            "Times: right operand 'Parameter('W', [], [? x 4])' shape '[? x 3 x 4]' dimension "
            "cannot be inferred from a left operand 'Placeholder('x', [#], [* x 3])' shape "
            "'[* x 3]' free dimension.")):
        C.layers.Dense(4)(x)
    d = C.layers.Dense(4, map_rank=1)       # applied to each row: the weight is 3 x 4
    y = d(x)
    assert y.shape == (-3, 4) and d.W.shape == (3, 4)
    a = _rows(2, 5, 3)
    np.testing.assert_allclose(y.eval({x: a}), a @ d.W.value + d.b.value, rtol=1e-5, atol=1e-6)


def re_escape(text):
    import re
    return "^" + re.escape(text)


def test_convolution_over_images_of_two_sizes():
    x = C.input_variable((1, F, F), name="x")
    conv = C.layers.Convolution((3, 3), 2, pad=False, init=C.glorot_uniform(seed=1))
    y = C.layers.MaxPooling((2, 2), strides=2)(conv(x))
    assert y.shape == (2, -3, -3) and conv.W.shape == (2, 1, 3, 3)
    w = torch.from_numpy(conv.W.value)
    for h, v in ((6, 8), (10, 6)):
        a = _rows(1, 1, h, v)
        expected = torch.nn.functional.max_pool2d(
            torch.nn.functional.conv2d(torch.from_numpy(a), w) + torch.from_numpy(
                conv.b.value).reshape(1, 2, 1, 1), 2, 2).numpy()
        got = y.eval({x: a})
        assert got.shape == (1, 2, (h - 2) // 2, (v - 2) // 2)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_gradients_follow_each_length():
    x = C.input_variable((F, 3), needs_gradient=True, name="x")
    f = C.reduce_sum(x * x)
    for shape in ((1, 4, 3), (2, 2, 3)):
        a = _rows(*shape)
        np.testing.assert_allclose(f.grad({x: a}), 2 * a, rtol=1e-6)


def test_a_trainer_steps_on_minibatches_of_two_lengths():
    x = C.input_variable((F, 3), name="x")
    t = C.input_variable(1, name="t")
    w = C.parameter((3, 1), init=0.5)
    m = C.reshape(C.reduce_mean(C.times(x, w), axis=0), (1,))
    loss = C.squared_error(m, t)
    trainer = C.Trainer(m, (loss, None), [C.sgd(m.parameters,
                                                 C.learning_parameter_schedule(0.1))])
    value = np.full((3, 1), 0.5)
    for n in (3, 5):
        a, target = _rows(2, n, 3), np.ones((2, 1), np.float32)
        trainer.train_minibatch({x: a, t: target})
        means = a.mean(axis=1)                               # (2, 3)
        err = means @ value - target                         # (2, 1)
        # CNTK's squared_error sums over the sample; sgd's rate is per sample of the batch
        expected_loss = float((err ** 2).sum() / 2)
        value = value - 0.1 * (2 * means.T @ err) / 2
        assert trainer.previous_minibatch_loss_average == pytest.approx(expected_loss, rel=1e-5)
        np.testing.assert_allclose(w.value, value, rtol=1e-5)


@pytest.mark.parametrize("name", ["rows", "fcn"])
def test_stadyn_reads_cntks_file_and_computes_its_values_at_two_lengths(name):
    z = C.load_model(os.path.join(FIXTURES, name + ".model"))
    arg = z.arguments[0]
    assert -3 in arg.shape
    for k in (0, 1):
        np.testing.assert_allclose(z.eval({arg: REFS[f"{name}_in{k}"]}), REFS[f"{name}_out{k}"],
                                   rtol=1e-5, atol=1e-5)


def _written(name, tmp_path):
    """The graph ``name`` made anew with the compat (the fixture file's parameters) and saved
    by Stadyn."""
    cntks = C.load_model(os.path.join(FIXTURES, name + ".model"))
    value = cntks.parameters[0].value
    if name == "rows":
        x = C.input_variable((F, 3), name="x")
        z = C.reduce_sum(C.times(x, C.parameter(init=value)), axis=0)
    else:
        x = C.input_variable((1, F, F), name="img")
        z = C.pooling(C.convolution(C.parameter(init=value), x,
                                    auto_padding=[False, True, True]),
                      C.MAX_POOLING, (2, 2), (2, 2))
    z.eval({x: REFS[f"{name}_in0"]})           # (fed: the file still says -3)
    path = str(tmp_path / (name + ".model"))
    z.save(path)
    return path


@pytest.mark.parametrize("name", ["rows", "fcn"])
def test_stadyn_reads_its_own_file_back(name, tmp_path):
    z = C.load_model(_written(name, tmp_path))
    arg = z.arguments[0]
    assert -3 in arg.shape
    for k in (0, 1):
        np.testing.assert_allclose(z.eval({arg: REFS[f"{name}_in{k}"]}), REFS[f"{name}_out{k}"],
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
@pytest.mark.parametrize("name", ["rows", "fcn"])
def test_cntk_reads_stadyns_file_with_its_free_dimension(name, tmp_path):
    out = str(tmp_path / "cntk.npz")
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    subprocess.run([CNTK_PYTHON, "-W", "ignore", os.path.join(FIXTURES, "make_models.py"),
                    _written(name, tmp_path), name, out], check=True, env=env, cwd=FIXTURES,
                   capture_output=True)
    got = dict(np.load(out))
    assert -3 in got["shape"].tolist()
    for k in (0, 1):
        np.testing.assert_allclose(got[f"{name}_out{k}"], REFS[f"{name}_out{k}"], rtol=1e-5,
                                   atol=1e-5)


@pytest.mark.parametrize("make", [
    lambda: C.sequence.input_variable((F, 2), name="x"),
    lambda: C.input_variable((F, 2), name="x", dynamic_axes=[C.Axis.default_batch_axis(),
                                                            C.Axis.default_dynamic_axis()])])
def test_a_free_dimension_in_a_sequence_inputs_steps_takes_each_minibatchs_length(make):
    # CNTK 2.7 (compat case free_dimension__in_a_sequence_inputs_steps): one length per
    # minibatch; Stadyn refused the input
    x = make()
    assert repr(x) == "Input('x', [#, *], [* x 2])" and x.shape == (-3, 2)
    f = C.sequence.reduce_sum(x * 1)
    for n in (3, 5):
        seqs = [_rows(2, n, 2), _rows(4, n, 2) + 1]
        for got, seq in zip(f.eval({x: seqs}), seqs):
            np.testing.assert_allclose(got, seq.sum(axis=0), rtol=1e-5)
    with pytest.raises(ValueError, match=re_escape(
            "Value::Create: The shape '[2 x 4 x 2]' of sequence #1 is not compatible with the "
            "sample shape '[* x 2]'.")):
        f.eval({x: [_rows(2, 3, 2), _rows(2, 4, 2)]})


@pytest.mark.parametrize("make", [
    lambda: C.layers.AveragePooling((2, 2), strides=2, pad=True),
    lambda: C.layers.Convolution((4, 4), 1, strides=2, pad=True),
    lambda: C.layers.MaxPooling((3, 3), strides=3, pad=True)])
def test_a_window_whose_padding_depends_on_the_length_is_refused(make):
    # CNTK 2.7 pads an even window every 2 by each image's size (7 x 7 average-pooled 2 x 2
    # every 2 gives 4 x 4 there); a static graph fixes the padding when built: refused (without
    # the check it gave 3 x 3)
    x = C.input_variable((1, F, F), name="x")
    with pytest.raises(ValueError, match=r"auto-padded over a free dimension \(-3\)"):
        make()(x)
    with pytest.raises(ValueError, match=r"auto-padded over a free dimension \(-3\)"):
        C.pooling(x, C.AVG_POOLING, (2, 2), (2, 2), auto_padding=[False, True, True])


def test_a_window_the_same_at_every_length_runs_at_each():
    x = C.input_variable((1, F, F), name="x")
    y = C.layers.MaxPooling((3, 3), strides=2, pad=True)(x)   # (1 before, windows ceil(n/2))
    for n in (6, 7):
        a = _rows(1, 1, n, n)
        expected = torch.nn.functional.max_pool2d(torch.from_numpy(a), 3, 2, padding=1)
        got = y.eval({x: a})
        assert got.shape == (1, 1, (n + 1) // 2, (n + 1) // 2)
        np.testing.assert_allclose(got, expected.numpy()[..., :(n + 1) // 2, :(n + 1) // 2])


def test_hardmax_over_a_sample_with_a_free_dimension_is_computed_at_each_length():
    # (one graph for every length: its one-hot size is no longer the length it was built with)
    x = C.input_variable((F, 3), name="x")
    y = C.hardmax(x)
    assert y.shape == (-3, 3)
    rng = np.random.RandomState(3)
    for n in (2, 5):
        a = rng.randn(2, n, 3).astype(np.float32)
        expected = np.zeros((2, n * 3), np.float32)
        expected[np.arange(2), a.reshape(2, -1).argmax(axis=1)] = 1.0   # first largest
        np.testing.assert_array_equal(y.eval({x: a}), expected.reshape(2, n, 3))
    with pytest.raises(ValueError, match="two free dimensions"):
        C.hardmax(C.input_variable((F, F), name="z"))


def test_a_crop_to_a_free_referent_is_cut_at_each_runs_length():
    # CNTK 2.7 crops to the referent's length of each run (not the length the graph was
    # built with); a crop of an input to itself is the input at every length (NumPy: x)
    img = C.input_variable((1, F, 3), name="img")
    c = C.crop_manual(img, img, 0, 0)
    assert c.shape == (1, -3, 3)
    for rows in (4, 2, 5):
        data = np.arange(2 * rows * 3, dtype=np.float32).reshape(2, 1, rows, 3)
        np.testing.assert_array_equal(c.eval({img: data}), data)

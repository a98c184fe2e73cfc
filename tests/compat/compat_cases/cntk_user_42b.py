"""A CNTK 2.7 user's own programs (round 42, second part), from CNTK 2.7's own Python tests
(``cntk/tests/variables_test.py``, ``function_test.py``, ``cntk/layers/tests``): small
mismatches each of them ran into -- a constant with an inferred axis, a placeholder given a
name where its shape goes; each run unchanged on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_returned = functools.partial(outcome, convert=as_returned, raised=as_raised)


@cntk_case(names=["cntk.constant", "cntk.Constant", "cntk.Constant.shape",
                  "cntk.InferredDimension"])
def user42b_constant_with_an_inferred_axis(C, r):
    """``C.constant(2, shape=(-1, 4))`` is made (CNTK 2.7 shows ``(-1, 4)``), its ``value``
    refused with a ValueError (the class ``C.Constant`` likewise) until an op infers the
    axis: ``c + x`` with ``x`` of shape (3, 4) fixes it to (3, 4), filled with 2 (the sum
    evaluated); a free axis (-3) is refused as the constant is made (CNTK 2.7's
    ValueError)."""
    res = {}
    c = C.constant(2, shape=(C.InferredDimension, 4))
    r.touch("cntk.Constant.shape")     # (a property: the tracer does not see it read)
    res["shape"] = list(c.shape)
    res["is_constant"] = bool(c.is_constant)
    res["value before"] = _returned(lambda: np.asarray(c.value).tolist())
    x = C.input_variable((3, 4))
    y = c + x
    res["sum shape"] = list(y.shape)
    res["shape after"] = list(c.shape)
    res["sum"] = np.asarray(y.eval({x: r.randn(2, 3, 4).astype(np.float32)}))
    res["value after"] = np.asarray(c.value)
    res["named"] = list(C.constant(2.5, shape=(4, -1), name="k").shape)
    res["class"] = list(C.Constant(1.0, (-1, 2)).shape)
    res["free axis"] = _returned(lambda: list(C.constant(2, shape=(C.FreeDimension, 4)).shape))
    return res


@cntk_case(names=["cntk.placeholder", "cntk.relu"])
def user42b_placeholder_given_a_name_first(C, r):
    """``C.placeholder("placeholder")`` (the name where the shape goes: CNTK 2.7's own
    ``function_test.py``) makes an unnamed placeholder of one inferred axis, ``[?]``, for any
    string; bound to an input of 3 it takes its shape, and evaluates."""
    res = {}
    for s in ["placeholder", "a", ""]:
        p = C.placeholder(s)
        res[repr(s)] = {"shape": list(p.shape), "name": p.name,
                        "axes": [a.name for a in p.dynamic_axes]}
    p = C.placeholder("placeholder")
    x = C.input_variable(3)
    f = C.relu(p)
    res["bound shape"] = list(f.replace_placeholders({p: x}).shape)
    res["eval"] = np.asarray(C.relu(C.placeholder("x"))(x).eval({x: r.randn(2, 3).astype(
        np.float32)}))
    return res


def _step_of(C, n):
    """A Python step of ``n`` states, each multiplied by the input (as in CNTK 2.7's own
    ``test_recurrence_step_fun``)."""
    names = ", ".join("prev%d" % i for i in range(n))
    text = "def step_f(%s, x):\n    return %s\n" % (
        names, ", ".join("prev%d * x" % i for i in range(n)))
    scope = {}
    exec(text, scope)
    return scope["step_f"]


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.RecurrenceFrom", "cntk.layers.Fold"])
def user42b_recurrence_of_too_many_states(C, r):
    """CNTK 2.7's ``test_recurrence_step_fun``: ``Recurrence`` (and ``RecurrenceFrom``,
    ``Fold``) of a Python step of 1 to 10 states is made; of 11 states CNTK 2.7 refuses it
    as it is made (ValueError: its ``RecurrenceFrom`` supports up to 10)."""
    res = {}
    for n in [1, 2, 10, 11]:
        for layer in [C.layers.Recurrence, C.layers.RecurrenceFrom, C.layers.Fold]:
            res["%s %d" % (layer.__name__, n)] = _returned(
                lambda: type(layer(_step_of(C, n))).__name__ != "")
    return res


@cntk_case(names=["cntk.layers.Convolution", "cntk.layers.Dense"])
def user42b_layer_block_by_its_name(C, r):
    """CNTK 2.7's ``test_layers_convolution_*``: ``model = Convolution(..., name='foo')``
    then ``model.foo.W``: the layer's block, found by its own name, and its parameter --
    before the layer is applied (an inferred input axis, -1), and after (the same
    parameter); ``Dense`` likewise; an unnamed layer has no ``foo`` (AttributeError)."""
    res = {}
    for key, make in [("conv", lambda: C.layers.Convolution((3, 3), 2, name="foo")),
                      ("dense", lambda: C.layers.Dense(2, name="foo"))]:
        m = make()
        res[key + " W before"] = list(m.foo.W.shape)
        res[key + " b before"] = list(m.foo.b.shape)
        res[key + " block shape before"] = list(m.foo.shape)
        m(C.input_variable((1, 5, 5)))
        res[key + " W after"] = list(m.foo.W.shape)
        res[key + " same W"] = bool(np.array_equal(m.foo.W.value, m.W.value))
    res["unnamed"] = _returned(lambda: list(C.layers.Dense(2).foo.W.shape))
    return res

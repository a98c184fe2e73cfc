"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 with layers not applied yet and
their recurrences (cntklayers35): an Elman step ``Recurrence(lambda h, x: d(splice(h, x)))``
whose state is the shape of the layer ``d`` it applies, ``clone`` of a layer not applied yet."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _values(np, shape, base):
    """Fixed parameter values (no random draw): ``base`` plus a ramp, of ``shape``."""
    n = int(np.prod(shape))
    return (base + np.arange(n, dtype=np.float32).reshape(shape) / (2.0 * n) - 0.25) \
        .astype(np.float32)


def _elman(C, r, np, make):
    """Results of the recurrent model ``make(x)`` over two sequences of dim 4: its parameters'
    names and shapes, its output per sequence (eval), and the gradients of a weighted sum of it
    w.r.t. the input and every parameter, each parameter set to fixed values first (by its
    shape, so that both sides set the same one)."""
    x = C.sequence.input_variable(4, name="x", needs_gradient=True)
    y = make(x)
    params = list(y.parameters)
    for p in params:
        p.value = _values(np, p.shape, 0.05 * sum(p.shape))
    seqs = [r.randn(3, 4), r.randn(2, 4)]
    res = {"parameters": sorted([p.name, list(p.shape)] for p in params),
           "shape": list(y.shape)}
    for k, v in enumerate(y.eval({x: seqs})):
        res["eval %d" % k] = v
    # the gradients of sum over steps of y . w (w fixed) w.r.t. the input and the parameters
    w = C.constant(np.linspace(-1, 1, y.shape[0]).astype(np.float32))
    loss = C.sequence.reduce_sum(C.reduce_sum(C.element_times(y, w)))
    grads = loss.grad({x: seqs}, wrt=[x] + params)
    for k, g in enumerate(grads[x]):
        res["grad x %d" % k] = g
    for p in params:
        res["grad %s %s" % (p.name, "x".join(str(d) for d in p.shape))] = grads[p]
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.ops.splice"],
           note="an Elman step, lambda h, x: d(C.splice(h, x)) with d = Dense(3) made outside "
                "it: CNTK 2.7 infers the state's shape through the loop as d's output, (3,), "
                "and d's weight as (7, 3); Stadyn recorded the step on a state shaped like the "
                "input step (4,), which built d's weight as (8, 3), then refused the state of "
                "(3,) (StadynError: parameter 'W' has shape (8, 3) but this input needs "
                "(7, 3))")
def elman_recurrence__dense_of_spliced_state(C, r, np):
    d = C.layers.Dense(3)
    return _elman(C, r, np, lambda x: C.layers.Recurrence(lambda h, v: d(C.splice(h, v)))(x))


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.ops.splice",
                  "cntk.ops.tanh"],
           note="the Elman step with d = Dense(3, activation=tanh), run backwards "
                "(go_backwards=True): as CNTK 2.7, state (3,), weight (7, 3)")
def elman_recurrence__tanh_backwards(C, r, np):
    d = C.layers.Dense(3, activation=C.tanh)
    return _elman(C, r, np, lambda x: C.layers.Recurrence(
        lambda h, v: d(C.splice(h, v)), go_backwards=True)(x))


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.layers.Sequential",
                  "cntk.ops.splice"],
           note="the Elman recurrence inside Sequential, before a Dense(2): the model applied "
                "once, as CNTK 2.7 (its step's weight (7, 3), the last Dense's (3, 2))")
def elman_recurrence__in_sequential(C, r, np):
    d = C.layers.Dense(3)
    model = C.layers.Sequential([C.layers.Recurrence(lambda h, v: d(C.splice(h, v))),
                                 C.layers.Dense(2)])
    return _elman(C, r, np, model)

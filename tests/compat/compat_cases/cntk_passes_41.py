"""Gradients CNTK 2.7 computes into one matrix for two parameters, and a second backward of one
forward state: the cases record CNTK's values where Stadyn deliberately differs.

* ``W + reshape(V)`` as a weight: CNTK 2.7 gives ``W`` and ``V`` one gradient matrix (``V``'s
  is the reshaped gradient of the sum, which is ``W``'s), and its learner adds the L2 term to
  the gradient in place (``Learner.cpp:160-165``, ``LearnerBase::PreProcess``: ``ScaleAndAdd``
  of ``l2 * actualMBSize * parameter`` into the gradient matrix), parameter after parameter in
  the learner's order (``Learner.cpp:270``, ``LearnerBase::Update``).  So the parameter the
  learner takes second steps by its gradient plus the L2 terms of both: with ``sgd([W, V])``
  ``V`` moves by ``lr * (g + l2 * (W + V))``, with ``sgd([V, W])`` ``W`` does.  Measured
  against this rule (torch gradients, one shared matrix, in-place decay in the learner's order)
  CNTK's parameters agree to 2e-7 after one, two and three minibatches.  Stadyn gives each
  parameter a gradient of its own (NNabla 1.39's ``weight_decay`` is per parameter, and the
  plan's buffer fix of ``nnabla_passes_41`` made sure of it): each moves by its own L2 only.
  The rows the sharing changes are ``known``; matching them would need CNTK's rule of which
  gradients its memory sharing merges.
* A second ``Function.backward`` of one ``forward`` state: CNTK 2.7 reads matrices its memory
  sharing reused in the first: for a weight read twice the second gives another gradient
  (0.79 apart at most from the first here, no error), on other graphs it raises RuntimeError
  ("incorrect Value() matrix shape ... memory sharing"), on a weight read once it gives the
  same gradient.  Stadyn returns the first backward's gradient again, every time (a state
  keeps its values; docs/cntk-names.md).
"""

import numpy as np
from compat_harness import cntk_case

_N = 16


def _shared_gradient_training(C, r, order):
    x = C.input_variable(_N)
    xv = r.randn(4, _N)
    w = C.parameter(init=r.randn(_N, _N) * 0.1)
    v = C.parameter(init=r.randn(_N * _N) * 0.1)
    loss = C.reduce_sum(C.tanh(C.times(x, C.reshape(v, (_N, _N)) + w)))
    learner = C.sgd([w, v] if order == "WV" else [v, w], C.learning_parameter_schedule(0.5),
                    l2_regularization_weight=0.1)
    trainer = C.Trainer(loss, (loss, None), [learner])
    out = {}
    for step in (1, 2):
        trainer.train_minibatch({x: xv})
        out["W after %d" % step] = np.array(w.value)
        out["V after %d" % step] = np.array(v.value)
    return out


_SHARED = ("CNTK 2.7 decays one gradient matrix shared by W and V in place, parameter after "
           "parameter (Learner.cpp:160-165, 270): the second parameter's step adds both L2 "
           "terms; Stadyn keeps a gradient per parameter (each adds its own)")


@cntk_case(names=["cntk.learners.sgd"],
           note="sgd([W, V]): V, second, steps by the L2 terms of both",
           known={"V after 1": _SHARED, "W after 2": _SHARED, "V after 2": _SHARED})
def passes41__l2_of_parameters_sharing_a_gradient_w_first(C, r):
    """Two minibatches of ``reduce_sum(tanh(times(x, reshape(V) + W)))`` with ``sgd([W, V],
    lr 0.5, l2 0.1)``: ``W`` after the first matches (its own L2 only)."""
    return _shared_gradient_training(C, r, "WV")


@cntk_case(names=["cntk.learners.sgd"],
           note="sgd([V, W]): W, second, steps by the L2 terms of both",
           known={"W after 1": _SHARED, "W after 2": _SHARED, "V after 2": _SHARED})
def passes41__l2_of_parameters_sharing_a_gradient_v_first(C, r):
    """The same with ``sgd([V, W])``: ``V`` after the first matches."""
    return _shared_gradient_training(C, r, "VW")


_SECOND = ("CNTK 2.7's second backward of one state reads matrices its memory sharing reused "
           "during the first (here, run alone, it gives another gradient with no error; after "
           "other work in the process, or on other graphs, it raises RuntimeError 'incorrect "
           "Value() matrix shape'); Stadyn's state keeps its "
           "values and returns the first backward's gradient again (docs/cntk-names.md)")


@cntk_case(names=["cntk.Function.backward"],
           note="a weight read twice: tanh(times(tanh(times(x, w)), w))",
           known={"second backward w": _SECOND})
def passes41__second_backward_of_one_forward_state(C, r):
    """``forward`` kept for backward, then two ``backward`` calls with the same state and
    seed: the first gives ``w``'s gradient; the second is recorded as whether it gave the
    first's gradient again (CNTK 2.7 gives another, or raises RuntimeError after other work in
    the process: both are "another gradient")."""
    r.touch("cntk.Function.backward")
    x = C.input_variable(_N)
    w = C.parameter(init=r.randn(_N, _N) * 0.1)
    f = C.reduce_sum(C.tanh(C.times(C.tanh(C.times(x, w)), w)))
    state, out = f.forward({x: r.randn(4, _N)}, [f.output], set([f.output]))
    seed = {f.output: np.ones_like(out[f.output])}
    first = np.asarray(f.backward(state, seed, set([w]))[w])
    try:
        second = np.asarray(f.backward(state, seed, set([w]))[w])
        again = "the first's gradient" if np.array_equal(second, first) else "another gradient"
    except RuntimeError:
        # What CNTK 2.7 does here depends on what its memory pools hold from earlier work in
        # the process: run alone it gives another gradient, after the other cases it raised
        # (the final CI's fresh run); both are recorded as one outcome.
        again = "another gradient"
    return {"first backward w": first, "second backward w": again}

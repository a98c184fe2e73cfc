"""CNTK 2.7's sparse data (session 37): what a minibatch's sparse data stores, as its learners
see it, and the forms of sparse data a Trainer takes.

* A zero a CTF file stores (``3:0``) is an entry of CNTK's sparse data (TextParser.cpp:860-861
  append every ``index:value``), as a SciPy matrix's stored zero is: the row-sparse gradient
  of the weight it multiplies has a block for its row, and the learners update it (momentum
  carried on, AdaGrad's average multiplier over it).
"""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_first = functools.partial(outcome, convert=as_returned,
                           raised=functools.partial(as_raised, first_line=True))

# (stored entries, target) of each minibatch of one sample: step 1 stores a zero at row 3
_STEPS = ([(3, 1.0)], [1.0, 2.0]), ([(1, 1.0), (3, 0.0)], [3.0, 1.0])
_LEARNERS = ("sgd", "momentum_sgd", "nesterov", "adagrad", "adadelta")


def _learner(C, name, params):
    lr = C.learning_parameter_schedule(0.1)
    if name in ("momentum_sgd", "nesterov"):
        return getattr(C, name)(params, lr, C.momentum_schedule(0.9))
    return getattr(C, name)(params, lr)


def _embedding_trained(C, np, name, feed):
    """``E`` of ``times(x, E)`` after each of the minibatches ``_STEPS`` (from a CTF file,
    SciPy matrices, or SciPy matrices without the stored zero)."""
    import scipy.sparse as sp
    x = C.input_variable(5, is_sparse=True)
    y = C.input_variable(2)
    E = C.parameter((5, 2), init=(np.arange(10, dtype=np.float32).reshape(5, 2) / 10))
    z = C.times(x, E)
    trainer = C.Trainer(z, (C.reduce_sum(z * y), None), [_learner(C, name, [E])])
    out = []
    if feed == "ctf":
        with open("stored.ctf", "w") as f:
            for k, (entries, target) in enumerate(_STEPS):
                f.write("%d |x %s |y %s\n" % (k, " ".join("%d:%g" % e for e in entries),
                                             " ".join("%g" % v for v in target)))
        source = C.io.MinibatchSource(C.io.CTFDeserializer("stored.ctf", C.io.StreamDefs(
            x=C.io.StreamDef(field="x", shape=5, is_sparse=True),
            y=C.io.StreamDef(field="y", shape=2))), randomize=False, max_sweeps=1)
        for _ in _STEPS:
            mb = source.next_minibatch(1)
            trainer.train_minibatch({x: mb[source.streams.x], y: mb[source.streams.y]})
            out.append(E.value)
        return out
    for entries, target in _STEPS:
        if feed == "csr_without_zero":
            entries = [e for e in entries if e[1] != 0]
        m = sp.csr_matrix((np.float32([v for _, v in entries]), [k for k, _ in entries],
                           [0, len(entries)]), shape=(1, 5))
        trainer.train_minibatch({x: m, y: np.float32([target])})
        out.append(E.value)
    return out


@cntk_case(name="sparse_37__ctf_stored_zero",
           names=["cntk.io.CTFDeserializer", "cntk.Trainer",
                  "cntk.learners.momentum_sgd", "cntk.learners.nesterov",
                  "cntk.learners.adagrad", "cntk.learners.adadelta", "cntk.learners.sgd"],
           note="a CTF file's stored zero (3:0) touches its row of the row-sparse gradient, "
                "as a SciPy matrix's: momentum, Nesterov and AdaGrad differ from the data "
                "without it")
def ctf_stored_zero(C, r, np):
    res = {}
    for name in _LEARNERS:
        for feed in ("ctf", "csr", "csr_without_zero"):
            for step, value in enumerate(_embedding_trained(C, np, name, feed)):
                res["%s_%s_%d" % (name, feed, step)] = value
    r.touch("cntk.io.MinibatchSource.next_minibatch", "cntk.Parameter.value")
    return res

"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (Functions, placeholders and
layers, eighth round): layers CNTK builds on a sparse input but refuses to run."""

import numpy as np

from compat_harness import cntk_case

_TENSOR_OP = "TensorOp: Tensor operations are currently not supported for sparse matrices"


def _error(exc):
    """The built-in exception type ``exc`` is (Stadyn's errors subclass CNTK's)."""
    return next(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins")


@cntk_case(names=["cntk.layers.LayerNormalization", "cntk.layers.Stabilizer"],
           note="CNTK 2.7 builds LayerNormalization and Stabilizer on a sparse input and "
                "refuses them at the first eval (RuntimeError 'TensorOp: Tensor operations are "
                "currently not supported for sparse matrices'); Stadyn ran them")
def layers__sparse_input_refused_when_run(C, r):
    r.touch("cntk.layers.LayerNormalization", "cntk.layers.Stabilizer",
            "cntk.layers.BatchNormalization", "cntk.layers.Dropout", "cntk.layers.Dense",
            "cntk.layers.Embedding")
    import scipy.sparse as sp
    xs = C.input_variable(5, is_sparse=True, name="xs")
    data = sp.csr_matrix(np.eye(5, dtype=np.float32)[:2])
    res = {}
    for label, make in [("LayerNormalization", lambda: C.layers.LayerNormalization()),
                        ("LayerNormalization named", lambda: C.layers.LayerNormalization(
                            name="n")),
                        ("Stabilizer", lambda: C.layers.Stabilizer()),
                        ("BatchNormalization", lambda: C.layers.BatchNormalization()),
                        ("Dropout", lambda: C.layers.Dropout(0.5)),
                        ("Dense", lambda: C.layers.Dense(2, init=1.0)),
                        ("Embedding", lambda: C.layers.Embedding(2, init=1.0))]:
        z = make()(xs)          # built, in both
        try:
            out = np.asarray(z.eval({xs: data}), np.float32).shape
        except Exception as e:      # (compared by its built-in type and CNTK's reason)
            out = ["raises " + _error(e), _TENSOR_OP in str(e)]
        res[label] = {"str": str(z), "run": out}
    return res

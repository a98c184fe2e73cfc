"""Cases for places of ``stadyn.compat.cntk`` that mutation testing (``tools/mutants.py``) found
no case checking: each one is named for what it pins down.

Parses under Python 3.6 (CNTK 2.7's interpreter).
"""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_ops import op_case

# A batched operand of *lower* sample rank on the left gets axes of size 1 after its batch axis
# (cntk_ops has the right-hand case, plus__broadcast).
op_case("plus__broadcast_left", lambda C, x, y: C.plus(x, y), [(3,), (2, 3)],
        names=["cntk.ops.plus"])
op_case("element_times__broadcast_left_rank3", lambda C, x, y: C.element_times(x, y),
        [(3,), (2, 2, 3)], names=["cntk.ops.element_times"])


# Every op keeps the ``name`` it is given (``Function.name``): names are how users find nodes.
_NAMED = [
    ("plus", lambda C, x, y, n: C.plus(x, y, name=n)),
    ("minus", lambda C, x, y, n: C.minus(x, y, name=n)),
    ("element_times", lambda C, x, y, n: C.element_times(x, y, name=n)),
    ("element_divide", lambda C, x, y, n: C.element_divide(x, y, name=n)),
    ("times", lambda C, x, y, n: C.times(x, C.constant(np.ones((3, 2), np.float32)), name=n)),
    ("sigmoid", lambda C, x, y, n: C.sigmoid(x, name=n)),
    ("tanh", lambda C, x, y, n: C.tanh(x, name=n)),
    ("relu", lambda C, x, y, n: C.relu(x, name=n)),
    ("exp", lambda C, x, y, n: C.exp(x, name=n)),
    ("log", lambda C, x, y, n: C.log(x, name=n)),
    ("sqrt", lambda C, x, y, n: C.sqrt(x, name=n)),
    ("abs", lambda C, x, y, n: C.abs(x, name=n)),
    ("negate", lambda C, x, y, n: C.negate(x, name=n)),
    ("softmax", lambda C, x, y, n: C.softmax(x, name=n)),
    ("log_softmax", lambda C, x, y, n: C.log_softmax(x, name=n)),
    ("reduce_sum", lambda C, x, y, n: C.reduce_sum(x, name=n)),
    ("reduce_mean", lambda C, x, y, n: C.reduce_mean(x, name=n)),
    ("reduce_max", lambda C, x, y, n: C.reduce_max(x, name=n)),
    ("splice", lambda C, x, y, n: C.splice(x, y, name=n)),
    ("reshape", lambda C, x, y, n: C.reshape(x, (3, 1), name=n)),
    ("clip", lambda C, x, y, n: C.clip(x, 0.0, 1.0, name=n)),
    ("dropout", lambda C, x, y, n: C.dropout(x, 0.5, name=n)),
    ("alias", lambda C, x, y, n: C.alias(x, name=n)),
    ("cross_entropy_with_softmax", lambda C, x, y, n: C.cross_entropy_with_softmax(
        x, y, name=n)),
    ("classification_error", lambda C, x, y, n: C.classification_error(x, y, name=n)),
    ("squared_error", lambda C, x, y, n: C.squared_error(x, y, name=n)),
]


@cntk_case(names=["cntk.ops." + op for op, _ in _NAMED if op != "squared_error"]
           + ["cntk.losses.squared_error", "cntk.Function.name", "cntk.Function.find_by_name"])
def ops_keep_their_names(C, r):
    x = C.input_variable(3)
    y = C.input_variable(3)
    r.touch("cntk.Function.name", "cntk.Function.find_by_name")
    res = {}
    for op, make in _NAMED:
        f = make(C, x, y, "my_" + op)
        found = f.find_by_name("my_" + op)
        res[op] = [f.name, found is not None and found.name]
    return res


# reshape of part of a sample: begin_axis / end_axis (negative ones count from the end)
op_case("reshape__begin_axis", lambda C, x: C.reshape(x, (2, 2), begin_axis=1), [(3, 4)],
        names=["cntk.ops.reshape"])
op_case("reshape__negative_axes", lambda C, x: C.reshape(x, (6,), begin_axis=-3, end_axis=-1),
        [(2, 3, 2)], names=["cntk.ops.reshape"],
        note="CNTK 2.7 reshapes axes [-3, -1) of a (2, 3, 2) sample, the first two, to (6, 2)")

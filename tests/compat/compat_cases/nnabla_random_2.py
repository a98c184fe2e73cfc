"""NNabla 1.39's random numbers, continued: what ``nnabla_random`` left.

A random function with a seed of its own gets its generator when it is set up
(src/nbla/function/generic/rand.cpp, dropout.cpp: ``rgen_ = std::mt19937(seed_)``), so two
graphs built alike, each with such a function, draw the same numbers, each from its own stream.
Stadyn's graphs of one structure replay one plan (``graph/_plan_reuse.py``), whose program held
the first graph's generator: the second graph went on drawing the first one's stream.
"""

import numpy as np

from compat_harness import nnabla_case

FN = "nnabla.functions."
EXACT = dict(rtol=0.0, atol=0.0)


@nnabla_case(names=[FN + "rand", FN + "dropout"], **EXACT,
             note="two static graphs built alike with F.rand(seed=7) and F.dropout(seed=3): "
                  "each function draws its own stream from the start, interleaved forwards")
def rand__own_seed_per_graph(nn, F, r):
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(3, 8).astype(np.float32))
    a = F.rand(-1.0, 1.0, shape=(2, 5), seed=7)
    b = F.rand(-1.0, 1.0, shape=(2, 5), seed=7)
    da = F.dropout(x, 0.5, seed=3)
    db = F.dropout(x, 0.5, seed=3)
    for k in range(2):
        for name, v in (("a", a), ("b", b), ("da", da), ("db", db)):
            v.forward()
            res["%s%d" % (name, k)] = v.d.copy()
    return res

"""Review D of the cntkfid30 merge, mended: a clone keyed by a loss block's (or a Dense
block's) ``block_root.output``, a key inside the block, which CNTK 2.7 ignores."""

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


@cntk_case(names=["cntk.Function.clone", "cntk.Function.block_root"],
           note="l.clone(share, {l.root_function.block_root.output: C.constant(3)}) for "
                "cross_entropy_with_softmax / classification_error over a Dense: CNTK 2.7 "
                "finds no such key in the graph outside the block and ignores it ([0.7797648 "
                "2.1041355 1.433288 1.1074531]); Stadyn replaced the whole loss ([3.]): the "
                "block root's output was the loss's own output.  Same for the Dense block's "
                "block_root.output ([0.75 ...] in Stadyn)")
def clone__a_key_inside_a_loss_block_is_ignored(C, r):
    r.touch("cntk.Function.clone", "cntk.Function.block_root", "cntk.Function.root_function",
            "cntk.Function.output", "cntk.Function.eval",
            "cntk.Variable.owner", "cntk.Function.op_name")
    x = C.input_variable(3, name="x")
    y = C.input_variable(3, name="y")
    X = (np.arange(12).reshape(4, 3) % 5).astype(np.float32) / 4
    Y = np.eye(3, dtype=np.float32)[[0, 2, 1, 1]]
    z = C.layers.Dense(3, init=C.glorot_uniform(seed=2), name="d")(x)

    def ev(c):
        return c.eval({a: (X if a.name == "x" else Y) for a in c.arguments})

    res = {}
    for lf in (C.cross_entropy_with_softmax, C.classification_error):
        n = lf.__name__
        l = lf(z, y)
        k = l.root_function.block_root.output
        res[n + " owner"] = outcome(lambda: k.owner.op_name)
        res[n + " plain"] = outcome(lambda: ev(l))
        res[n + " keyed"] = outcome(
            lambda: ev(l.clone(C.CloneMethod.share, {k: C.constant(np.full(k.shape, 3.0,
                                                                            np.float32))})))
    kd = z.root_function.block_root.output
    res["dense owner"] = outcome(lambda: kd.owner.op_name)
    res["dense keyed"] = outcome(lambda: ev(C.squared_error(z, y).clone(
        C.CloneMethod.share, {kd: C.constant(np.full(3, 0.5, np.float32))})))
    return res


@cntk_case(names=["cntk.classification_error"],
           note="classification_error(z, y, axis=0) of sequences (lengths 2 and 3): CNTK 2.7 "
                "gives the error per step ([[1, 0], [1, 1, 1]] for save.py's errax_float32_seq "
                "of review D); Stadyn gave one mean per sequence ([0.667, 1.0])")
def classification_error__along_an_axis_of_sequences(C, r):
    r.touch("cntk.Function.eval")
    res = {}
    for dt in (np.float32, np.float64):
        x = C.sequence.input_variable(4, name="x", dtype=dt)
        y = C.sequence.input_variable(3, name="y", dtype=dt)
        with C.default_options(dtype=dt):
            z = C.layers.Dense(3, init=C.glorot_uniform(seed=1), name="d")(x)
        rs = np.random.RandomState(7)
        X = [rs.rand(2, 4).astype(dt), rs.rand(3, 4).astype(dt)]
        Y = [np.eye(3, dtype=dt)[[0, 2]], np.eye(3, dtype=dt)[[1, 1, 0]]]
        zz = [rs.rand(2, 3).astype(dt), rs.rand(3, 3).astype(dt)]
        for label, m, data in (
                ("dense", C.classification_error(z, y, axis=0), {x: X, y: Y}),
                ("raw", C.classification_error(x[:3] * 1, y, axis=0), {x: [np.concatenate(
                    [a, np.zeros((len(a), 1), dt)], 1) for a in zz], y: Y})):
            tag = "%s %s" % (label, dt.__name__)
            res[tag] = outcome(lambda: [np.asarray(a) for a in m.eval(data)])
            res[tag + " shape"] = list(m.shape)
    return res

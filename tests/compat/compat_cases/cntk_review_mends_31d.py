"""Review D of the cntkfid30 merge, mended: a clone keyed by a loss block's (or a Dense
block's) ``block_root.output``, a key inside the block, which CNTK 2.7 ignores."""

import numpy as np

from compat_harness import cntk_case, outcome


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

"""Review A's findings on CNTK's ``CosDistance`` (mendA33): a zero vector's cosine is 0 in CNTK
2.7, whose inverse norm is clamped at 1/1e-30 (``AssignElementInverseOf``,
CPUMatrixImpl.h:2213-2232; EPS_IN_INVERSE, CommonMatrix.h:33; CosDistanceNode::ForwardProp,
LinearAlgebraNodes.h:1453-1467), not 0/0; its gradients; the same through a model file (v2
and v1), whose readers compute it too."""

import os

from compat_harness import cntk_case


def _zero_rows(np):
    # a zero x, a zero y, both zero, a NaN, an ordinary pair
    x = np.array([[0, 0, 0], [1, 2, 0], [0, 0, 0], [np.nan, 1, 0], [1, 2, 3]], np.float32)
    y = np.array([[1, 1, 0], [0, 0, 0], [0, 0, 0], [1, 1, 0], [2, -1, 5]], np.float32)
    return x, y


@cntk_case(names=["cntk.losses.cosine_distance", "cntk.ops.functions.load_model",
                  "cntk.debugging.save_as_legacy_model"],
           note="a zero vector's cosine is 0 (CNTK's inverse norm is 1/1e-30 there); Stadyn "
                "gave NaN (0/0) in C.cosine_distance and in both model-file readers.  The "
                "gradients: NaN for the zero vector's own (0 times the inverse norm squared, "
                "an infinity), 0 for the other's; a NaN gives NaN")
def cosine_distance__zero_vector(C, r, np):
    res = {}
    x = C.input_variable(3, needs_gradient=True)
    y = C.input_variable(3, needs_gradient=True)
    f = C.cosine_distance(x, y)
    a, b = _zero_rows(np)
    res["eval"] = f.eval({x: a, y: b})
    value, grads = r.cntk_forward_backward(f, {x: a, y: b}, [x, y])
    res["forward"], res["grad x"], res["grad y"] = value, grads[0], grads[1]
    f.save("cos.model")
    g = C.load_model("cos.model")
    res["v2 file"] = g.eval({g.arguments[0]: a, g.arguments[1]: b})
    C.debugging.save_as_legacy_model(f, "cos.dnn")
    h = C.load_model("cos.dnn")
    feed = dict((v, a if v.name == x.name else b) for v in h.arguments)
    res["v1 file"] = h.eval(feed) if len(feed) == 2 else None
    res["v1 files"] = sorted(os.listdir("."))
    return res


@cntk_case(names=["cntk.losses.cosine_distance"],
           note="zero vectors in sequences: 0, as CNTK 2.7")
def cosine_distance__zero_vector_sequences(C, r, np):
    res = {}
    s = C.sequence.input_variable(2)
    f = C.cosine_distance(s, C.sequence.input_variable(2))
    seqs = [np.array([[0, 0], [1, 1]], np.float32), np.array([[3, 4]], np.float32)]
    other = [np.array([[1, 0], [0, 0]], np.float32), np.array([[0, 0]], np.float32)]
    for i, v in enumerate(f.eval({f.arguments[0]: seqs, f.arguments[1]: other})):
        res["sequence %d" % i] = v
    return res

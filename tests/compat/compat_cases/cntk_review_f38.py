"""Variations on the round-38 CNTK 2.7 user programs (review of cntkuser38): ``unpack_batch``
over values with free axes of their own and over sequences, ``Convolution(sequential=True)``
dilated along the sequence axis, and ``pow``'s gradient where its base or exponent is another
op's output; each run unchanged on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


# -- unpack_batch keeps its operand's free axes and refuses a sequence --------------------------

@cntk_case(names=["cntk.ops.unpack_batch", "cntk.sequence.unpack", "cntk.ops.reduce_sum"],
           rtol=1e-5, atol=1e-6,
           note="unpack_batch of an input with a FreeDimension ((-3, 3)) and of "
                "sequence.unpack's padded steps shows both free axes, (-3, -3, 3), kept by "
                "ops over them (before rmF38 Stadyn showed (-3, 1, 3): the batch only); "
                "unpack_batch of a sequence is CNTK 2.7's RuntimeError ('UnpackBatch: only "
                "support input with batch axis and no sequence axis.') when it is made "
                "(before rmF38 Stadyn made it, shown (-3, 2, 3)); the values of both")
def rmF38_unpack_batch_free_axes(C, r):
    x = C.input_variable((-3, 3), name="x")
    u = C.unpack_batch(x)
    s = C.sequence.input_variable(3, name="s")
    v = C.unpack_batch(C.sequence.unpack(s, 0, no_mask_output=True))
    res = {"free input": list(u.shape), "unpacked steps": list(v.shape),
           "unpacked steps, ops over them": list(C.reduce_sum(v * 2, axis=2).shape),
           "of a sequence": outcome(lambda: list(C.unpack_batch(s).shape))}
    res["free input values"] = u.eval({x: r.randn(2, 4, 3)})
    res["unpacked steps values"] = v.eval({s: [r.randn(3, 3), r.randn(1, 3)]})
    res["shapes after a run"] = [list(u.shape), list(v.shape)]
    return res


# -- Convolution(sequential=True) dilated along the sequence axis ---------------------------------

@cntk_case(names=["cntk.layers.Convolution"], rtol=1e-4, atol=1e-5,
           note="CNTK 2.7's Convolution(sequential=True) splices filter_shape[0] steps into "
                "a window and convolves it unpadded (cntk/layers/layers.py, convolve): a "
                "dilation above 1 along the sequence axis leaves no output there, its reshape's "
                "ValueError when the layer is applied (before rmF38 Stadyn computed a dilated "
                "convolution along the sequence); a filter of 1 step takes any dilation there, "
                "and dilation 1 is computed (values compared; dilating a spatial axis is CNTK "
                "2.7's RuntimeError on a CPU only, 'Dilated convolution on CPU is not yet "
                "implemented', and not run here)")
def rmF38_sequential_convolution_dilation(C, r):
    res = {}
    for name, filt, dil, shape in [("(3,) dilation 2", (3,), 2, (2,)),
                                   ("(3, 3) dilation (2, 1)", (3, 3), (2, 1), (1, 6)),
                                   ("(2, 3) dilation (3, 1)", (2, 3), (3, 1), (1, 6)),
                                   ("(1, 3) dilation (2, 1)", (1, 3), (2, 1), (1, 5))]:
        x = C.sequence.input_variable(shape)
        res[name] = outcome(lambda: list(C.layers.Convolution(
            filt, 2, sequential=True, pad=True, dilation=dil)(x).shape))
    x = C.sequence.input_variable((1, 6), name="img")
    conv = C.layers.Convolution((3, 3), 2, sequential=True, pad=True, dilation=(1, 1))
    y = conv(x)
    conv.W.value = r.param_value("W", conv.W.shape)
    conv.b.value = r.param_value("b", conv.b.shape)
    res["dilation 1 values"] = y.eval({x: [r.randn(3, 1, 6), r.randn(2, 1, 6)]})
    return res


# -- pow's gradient where another op computed its base or exponent -------------------------------

@cntk_case(names=["cntk.ops.pow", "cntk.Function.grad", "cntk.Function.forward",
                  "cntk.Function.backward"],
           rtol=1e-4, atol=1e-5,
           note="pow's gradient against CNTK 2.7 where its base or exponent is an op's output: "
                "where that op keeps its own output for its gradient (exp, sigmoid) or the "
                "base is the input itself or a constant, both give the derivative; where it "
                "does not (x + 1, 2 * x, x * x, a times minus a label), CNTK 2.7 reads a "
                "reused buffer, whose content depends on the whole process's buffer plan: "
                "pow(x + 1, 1.5).grad gave 1.5 with this case run alone and the derivative "
                "(1.837...) in a whole regeneration (test_references_match_a_fresh_run), so "
                "those gradients are not compared; Stadyn gives the derivative (see "
                "docs/cntk-names.md, 'pow')")
def rmF38_pow_gradient_released_base(C, r):
    r.touch("cntk.Function.grad", "cntk.Function.forward", "cntk.Function.backward")
    x = C.input_variable(3, name="x", needs_gradient=True)
    X = np.array([[0.5, 2.0, 3.0], [1.0, 1.5, 0.25]], np.float32)

    def seeded(f, g):
        state, out = f.forward({x: X}, [f.output], set([f.output]))
        return f.backward(state, {f.output: np.full_like(out[f.output], g)}, set([x]))[x]

    res = {"kept base, gradients": [C.pow(C.exp(x), 2).grad({x: X}),
                                    C.pow(C.sigmoid(x), 3).grad({x: X}),
                                    C.pow(x, 1.5).grad({x: X}),
                                    C.pow(2.0, x + 1).grad({x: X}),
                                    seeded(C.pow(C.exp(x), 1.5), 4.0)]}
    res["values"] = [C.pow(x + 1, 1.5).eval({x: X}), C.pow(x * x, 2).eval({x: X})]
    return res


# -- classification_error(topN > 1) and cosine_distance of operands without the batch axis -------

@cntk_case(names=["cntk.losses.cosine_distance", "cntk.metrics.classification_error",
                  "cntk.ops.constant"],
           rtol=1e-5, atol=1e-6,
           note="CNTK 2.7 builds classification_error(..., topN=2) of a constant output or "
                "target (a scalar, shape ()) and refuses every run, RuntimeError 'Expected "
                "MBLayout in Input 0' (the target; 1, the output); before rmF38 Stadyn gave "
                "0.0 for two constants (shape (1,)) and a ShapeError (ValueError) as it was "
                "made for one.  cosine_distance: a batched operand beside a constant is "
                "refused when run (RuntimeError, 'SetDims: MBLayout must be set first'), two "
                "constants of one column ((3,), (1, 3)) are computed, of several ((2, 3), "
                "(3, 1)) refused (RuntimeError, 'Resize: Cannot resize the matrix because it "
                "is a view.'), of shapes that broadcast ((3,), (2, 3)) refused (ValueError, "
                "'InnerProduct: ...'); before rmF38 Stadyn computed them all; batched "
                "operands' values compared beside")
def rmF38_constants_without_batch_axis(C, r):
    def k(*shape):
        return C.constant(r.randn(*shape), name="k")

    x = C.input_variable(3, name="x")
    X = r.randn(2, 3)
    hot = C.input_variable(3, name="hot")
    H = np.eye(3, dtype=np.float32)[[2, 0]]
    res = {}
    for name, make, feed in [
            ("topN 2, two constants", lambda: C.classification_error(k(3), k(3), topN=2), {}),
            ("topN 3, two matrices", lambda: C.classification_error(k(2, 3), k(2, 3), topN=3),
             {}),
            ("topN 2, constant output", lambda: C.classification_error(k(3), hot, topN=2),
             {hot: H}),
            ("topN 2, constant target", lambda: C.classification_error(x, k(3), topN=2),
             {x: X}),
            ("cosine, input and constant", lambda: C.cosine_distance(x, k(3)), {x: X}),
            ("cosine, constant and input", lambda: C.cosine_distance(k(3), x), {x: X}),
            ("cosine, (3,)", lambda: C.cosine_distance(k(3), k(3)), {}),
            ("cosine, (1, 3)", lambda: C.cosine_distance(k(1, 3), k(1, 3)), {}),
            ("cosine, (2, 3)", lambda: C.cosine_distance(k(2, 3), k(2, 3)), {}),
            ("cosine, (3, 1)", lambda: C.cosine_distance(k(3, 1), k(3, 1)), {}),
            ("cosine, (3,) and (2, 3)", lambda: C.cosine_distance(k(3), k(2, 3)), {})]:
        f = make()
        res[name] = [list(f.shape), outcome(lambda: f.eval(feed))]
    res["batched"] = [C.classification_error(x, hot, topN=2).eval({x: X, hot: H}),
                      C.cosine_distance(x, hot).eval({x: X, hot: H})]
    return res


# -- Convolution(sequential=True) and SequentialConvolution: options CNTK 2.7 takes or refuses -----

@cntk_case(names=["cntk.layers.Convolution", "cntk.layers.SequentialConvolution"],
           rtol=1e-4, atol=1e-5,
           note="CNTK 2.7 pads sharing to the filter's rank before its 'if not sharing' "
                "check (cntk/layers/layers.py, Convolution and SequentialConvolution), so "
                "sharing=False is taken and the kernel shared: the values of sharing=True "
                "(before rmF38 Stadyn's NotImplementedError); a sharing or strides list of "
                "another length than the filter's is its ValueError; a stride along the "
                "sequence axis of Convolution(sequential=True) is its NotImplementedError as "
                "the layer is made (CNTK's layer is built on placeholders; before rmF38 "
                "Stadyn's when applied), and the layer applied to an input without a "
                "sequence axis its RuntimeError (PastValue; before rmF38 Stadyn's ValueError)")
def rmF38_sequential_convolution_options(C, r):
    s = C.sequence.input_variable(2, name="s")
    S = [r.randn(4, 2), r.randn(2, 2)]
    res = {}
    for name, make in [("Convolution", lambda sh: C.layers.Convolution(
                            (3,), 2, sequential=True, pad=True, sharing=sh)),
                       ("SequentialConvolution", lambda sh: C.layers.SequentialConvolution(
                           (3,), 2, pad=True, sharing=sh))]:
        outs = []
        for sharing in (True, False):
            y = make(sharing)(s)
            for p in sorted(y.parameters, key=lambda p: p.name):
                p.value = r.param_value(name + p.name, p.shape)
            outs.append(outcome(lambda: y.eval({s: S})))
        res[name + ", sharing True, False"] = outs
    res["sharing of 2 for a filter of 1"] = outcome(
        lambda: C.layers.Convolution((3,), 2, sequential=True, sharing=[True, True])(s).shape)
    res["made with a stride along the sequence"] = outcome(
        lambda: type(C.layers.Convolution((3,), 2, sequential=True, strides=2)).__name__)
    x = C.input_variable((2, 5), name="x")
    res["input without a sequence axis"] = outcome(
        lambda: C.layers.Convolution((3,), 2, sequential=True, pad=True)(x).shape)
    return res

"""NNabla 1.39 behaviours this session's reviews found Stadyn missing, and one it already has
a case guard for:

* ``F.relu`` and ``F.leaky_relu`` (``alpha >= 0``) take their backward's mask from the output
  ``y``, as NNabla's C++ kernels do (``ReLU::backward_impl`` reads ``outputs[0]``'s data,
  ``LeakyReLU``'s its ``sign`` array from the output where ``alpha >= 0``): a written ``y.d``
  changes the gradient; Stadyn took the mask from ``x``.  Static (one and two forwards) and
  dynamic; ``F.leaky_relu`` with a negative ``alpha`` reads ``x``, as NNabla's.
* ``BatchNormalizationFoldingModifier(opposite=True)`` with a batch normalisation before the
  last affine: by its second modifier the output is read by the first round's Sink as well as
  the new one, so NNabla counts it as forked and drops that batch normalisation without
  folding it, changing no parameter (Stadyn before 6da4e351 folded it into the affine and
  wrote its W and b in place; nnconv2's ``function_references`` fixed it: guarded here).
"""

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."

# name -> (the function it touches, how it is called on the (2, 3) input ``a``)
_OPS = {
    "relu": ("relu", lambda F, a: F.relu(a)),
    "leaky_relu 0.1": ("leaky_relu", lambda F, a: F.leaky_relu(a, 0.1)),
    "leaky_relu 0": ("leaky_relu", lambda F, a: F.leaky_relu(a, 0.0)),
    "leaky_relu -0.2": ("leaky_relu", lambda F, a: F.leaky_relu(a, -0.2)),
}


def _grads(nn, F, make, dynamic, forwards, write):
    nn.set_auto_forward(dynamic)
    try:
        a = nn.Variable.from_numpy_array(
            (np.arange(6, dtype=np.float32).reshape(2, 3) - 2) / 6, need_grad=True)
        y = make(F, a)
        loss = F.sum(F.mul2(y, y))
        if not dynamic:
            for _ in range(forwards):
                loss.forward()
        if write:
            y.d = 0.5
        a.grad.zero()
        loss.backward()
        return {"a.g": a.g.copy(), "y.d": y.d.copy()}
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=sorted(set(_F + n for n, _ in _OPS.values())) + ["nnabla.Variable.d"],
             note="a = (arange(6) - 2) / 6, loss = sum(y * y); y.d = 0.5 written (or not) "
                  "after one or two static forwards, or in dynamic mode: a.g's mask is y's")
def relu_leaky_relu__backward_reads_written_output(nn, F, r):
    r.touch(*[_F + n for n, _ in _OPS.values()])
    r.touch("nnabla.Variable.d")
    res = {}
    for key, (_, make) in _OPS.items():
        for dynamic, forwards in ((False, 1), (False, 2), (True, 1)):
            for write in (True, False):
                tag = "%s %s %s" % ("dynamic" if dynamic else "static x%d" % forwards, key,
                                    "y.d = 0.5" if write else "as computed")
                for k, v in _grads(nn, F, make, dynamic, forwards, write).items():
                    res[tag + " " + k] = v
    return res


_GC = "nnabla.experimental.graph_converters."


def _set_params(nn, r):
    for name, p in sorted(nn.get_parameters(grad_only=False).items()):
        value = r.param_value(name, p.shape)
        if name.endswith("/var"):
            value = np.abs(value) + 0.5
        p.d = value


def _bn_then_affine(nn, F, PF, x):
    h = PF.convolution(x * 1.0, 4, (3, 3), name="c1")
    h = PF.batch_normalization(h, batch_stat=False, name="b1")
    return PF.affine(h, 3, name="fc")


def _bn_conv_bn_affine(nn, F, PF, x):
    h = PF.batch_normalization(x * 1.0, batch_stat=False, name="b0")
    h = PF.convolution(h, 4, (3, 3), name="c1")
    h = PF.batch_normalization(h, batch_stat=False, name="b1")
    return PF.affine(h, 3, name="fc")


@nnabla_case(names=[_GC + "GraphConverter", _GC + "BatchNormalizationFoldingModifier",
                    _GC + "BatchNormalizationFoldingOppositeModifierInner.modify"],
             rtol=1e-4, atol=1e-4,
             note="conv -> BN -> affine and BN -> conv -> BN -> affine, opposite=True: the "
                  "BN before the last affine is dropped, not folded (the output counts as "
                  "forked: two Sinks read it); the parameters after, the graph and its value")
def graph_converters__opposite_folding_before_the_last_function(nn, F, PF, r):
    GC = r.module("nnabla.experimental.graph_converters")
    r.touch(_GC + "GraphConverter", _GC + "BatchNormalizationFoldingModifier",
            _GC + "BatchNormalizationFoldingOppositeModifierInner.modify")
    res = {}
    for tag, build in (("conv-BN-affine", _bn_then_affine),
                       ("BN-conv-BN-affine", _bn_conv_bn_affine)):
        nn.clear_parameters()
        x = nn.Variable.from_numpy_array(r.randn(2, 3, 6, 6))
        y = build(nn, F, PF, x)
        _set_params(nn, r)
        y.forward()
        res[tag + " original"] = y.d.copy()
        z = GC.GraphConverter([GC.BatchNormalizationFoldingModifier(opposite=True)]).convert(y)
        z.forward()
        types = []
        z.visit(lambda f: types.append(f.info.type_name))
        res[tag + " types"] = types
        res[tag + " value"] = z.d.copy()
        for k, p in sorted(nn.get_parameters(grad_only=False).items()):
            res[tag + " after " + k] = p.d.copy()
    return res

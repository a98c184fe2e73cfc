"""``nnabla.functions`` whose output shape depends on values: ``nonzero``, ``unique``,
``bool_gather`` (and ``bool_scatter``), ``pack_padded_sequence`` / ``pad_packed_sequence``.
Each case runs in both modes: a static graph built on Variables holding data (NNabla's
setup reads them, so does Stadyn's build), ``forward()``/``backward()``, and the same under
``nn.auto_forward()``.
"""

import numpy as np

from compat_harness import nnabla_case


def _both(nn, build, arrays, grads=(), weights=None, static_as_dynamic=False):
    """``{mode: results}`` of ``build(*variables)`` in a static graph and with auto_forward:
    every output's value and shape, and the gradients of ``sum(out0 * w)``.
    ``static_as_dynamic``: the static results come from auto_forward (on the real side, for a
    function NNabla refuses in a static graph)."""
    res = {}
    for mode in ("static", "dynamic"):
        xs = [nn.Variable.from_numpy_array(a, need_grad=i in grads)
              for i, a in enumerate(arrays)]
        if mode == "dynamic" or static_as_dynamic:
            with nn.auto_forward():
                out = build(*xs)
        else:
            out = build(*xs)
        outs = out if isinstance(out, tuple) else (out,)
        if mode == "static" and not static_as_dynamic:
            for o in outs:
                o.forward()
        for k, o in enumerate(outs):
            res["%s out%d" % (mode, k)] = o.d.copy()
            res["%s shape%d" % (mode, k)] = list(o.shape)
        if grads:
            for i in grads:
                xs[i].g = 0
            outs[0].backward(weights(outs[0].d))
            for i in grads:
                res["%s grad%d" % (mode, i)] = xs[i].g.copy()
    return res


@nnabla_case(names=["nnabla.functions.nonzero"],
             note="the indices are uint64, as NNabla's (compat nnabla _index_dtypes)")
def nonzero(nn, F, r):
    x = r.randn(2, 3, 4) * r.randint(0, 2, (2, 3, 4)).astype(np.float32)
    res = _both(nn, lambda v: F.nonzero(v), [x])
    res["values"] = res["static out0"].astype(np.int64)
    res["values dynamic"] = res["dynamic out0"].astype(np.int64)
    return res


def _repeats(r, shape, values):
    return np.array(values, np.float32)[r.randint(0, len(values), shape)]


@nnabla_case(names=["nnabla.functions.unique"],
             note="NNabla 1.39 needs an axis even with flatten=True (axis=None raises), and "
                  "runs unique only under auto_forward (both refuse it in a static graph: "
                  "nnabla_refusals.unique__dynamic_only): the 'static' results are dynamic "
                  "ones on both sides")
def unique(nn, F, r):
    x = _repeats(r, (3, 5), [2.5, -1.0, 0.0, 7.0])
    m = np.array([[2, 1, 2], [0, 1, 3], [2, 1, 2], [0, 0, 0]], np.float32)
    res = {}
    for key, build, arrays in [
            ("flat", lambda v: F.unique(v, axis=0), [x]),
            ("flat all", lambda v: F.unique(v, axis=1, sorted=False, with_index=True,
                                            with_inverse=True, with_counts=True), [x]),
            ("rows", lambda v: F.unique(v, flatten=False, axis=0, with_index=True,
                                        with_inverse=True, with_counts=True), [m]),
            ("columns unsorted", lambda v: F.unique(v, flatten=False, axis=1, sorted=False,
                                                    with_inverse=True), [m.T.copy()])]:
        for k, v in _both(nn, build, arrays, static_as_dynamic=True).items():
            res[key + " " + k] = v
    return res


@nnabla_case(names=["nnabla.functions.bool_gather", "nnabla.functions.bool_scatter"])
def bool_gather(nn, F, r):
    x = r.randn(3, 4, 2)
    mask = r.randint(0, 2, (3, 4)).astype(np.float32)

    def gather_scatter(v, m):
        return F.bool_scatter(F.bool_gather(v, m) * 2.0, m)

    res = {}
    for key, build in [("gather", lambda v, m: F.bool_gather(v, m)),
                       ("round trip", gather_scatter)]:
        for k, v in _both(nn, build, [x, mask], grads=(0,), weights=r.weights_like).items():
            res[key + " " + k] = v
    return res


@nnabla_case(names=["nnabla.functions.bool_scatter"])
def bool_scatter(nn, F, r):
    mask = np.array([[1, 0, 1], [0, 1, 1]], np.float32)
    res = _both(nn, lambda v, m: F.bool_scatter(v, m), [r.randn(4, 2), mask], grads=(0,),
                weights=r.weights_like)
    return res


@nnabla_case(names=["nnabla.functions.pack_padded_sequence",
                    "nnabla.functions.pad_packed_sequence"],
             note="pad_packed_sequence's padding_value: NNabla 1.39 pads with zeros whatever "
                  "it says.  NNabla's static graph sizes pad_packed_sequence from batch sizes "
                  "not computed yet (zeros: an empty result) and must be rebuilt per "
                  "iteration; Stadyn's static round trip is compared with NNabla's dynamic one")
def pack_padded_sequence(nn, F, r):
    x = r.randn(5, 3, 2)
    lengths = np.array([5, 3, 2], np.int64)
    res = {}
    for key, build, arrays, real_dynamic in [
            ("pack", lambda v, n: F.pack_padded_sequence(v, n), [x, lengths], False),
            ("pack batch_first", lambda v, n: F.pack_padded_sequence(v, n, batch_first=True),
             [np.ascontiguousarray(x.transpose(1, 0, 2)), lengths], False),
            ("unpack", lambda v, s: F.pad_packed_sequence(v, s, batch_first=True),
             [r.randn(10, 2), np.array([3, 3, 2, 1, 1], np.int32)], False),
            ("round trip", lambda v, n: F.pad_packed_sequence(
                *F.pack_padded_sequence(v, n), total_length=7, padding_value=-1.0),
             [x, lengths], True),
            ("round trip batch_first", lambda v, n: F.pad_packed_sequence(
                *F.pack_padded_sequence(v, n), batch_first=True), [x, lengths], True)]:
        for k, v in _both(nn, build, arrays, grads=(0,), weights=r.weights_like,
                          static_as_dynamic=r.real and real_dynamic).items():
            res[key + " " + k] = v
    return res


@nnabla_case(names=["nnabla.functions.bool_scatter"],
             note="NNabla also writes the result into output's own buffer; Stadyn returns it "
                  "(output is not compared after the call)")
def bool_scatter__output(nn, F, r):
    mask = np.array([[1, 0, 1], [0, 1, 1]], np.float32)
    res = _both(nn, lambda v, m, o: F.bool_scatter(v, m, o),
                [r.randn(4, 2), mask, r.randn(2, 3, 2)], grads=(0, 2), weights=r.weights_like)
    return res

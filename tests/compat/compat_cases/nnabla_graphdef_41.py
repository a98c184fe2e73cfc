"""NNabla 1.39's ``nn.graph_def`` (graphdef41): networks holding a Broadcast called at another
batch size, and proto graphs recorded from ``nn.ProtoVariable`` inputs, run unchanged on NNabla
1.39 and on ``stadyn.compat.nnabla``.
"""

from compat_harness import nnabla_case

GD = "nnabla.graph_def."


def _outcome(call):
    """The call's outputs' values after a forward, or the type and last line it raised."""
    try:
        out = call()
        outs = out if isinstance(out, tuple) else (out,)
        for o in outs:
            o.forward()
        return [o.d.copy() for o in outs]
    except (RuntimeError, ValueError) as e:
        return [type(e).__name__, "raised"]


@nnabla_case(names=[GD + "create_graph_from_variable", GD + "load"])
def graphdef41_broadcast_of_data_at_another_batch(nn, F, PF, S, r):
    """A Broadcast of a statistic over the batch (``F.sum(h, axis=0, keepdims=True)``, of
    batch 1) to the network's batch shape, times ``h``: NNabla 1.39's graph_def broadcasts it
    to the network's batch size whatever the call's, so a call at batch 1 gives the network's
    batch (2, 6) and one at batch 4 fails in ``Mul2``'s setup (RuntimeError).  Stadyn built
    the network at the call's batch size: (1, 6) and (4, 6), numbers where NNabla raises."""
    GDm = r.module("nnabla.graph_def")
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    with nn.parameter_scope("bd"):
        h = PF.affine(x, 6, name="fc")
    r.set_params(nn.get_parameters())
    y = F.mul2(F.broadcast(F.sum(h, axis=0, keepdims=True), (2, 6)), h)
    g = GDm.create_graph_from_variable("net", y, names={"x": x})
    res = {}
    for batch in (2, 1, 4):
        xb = nn.Variable.from_numpy_array(r.randn(batch, 3))
        res["call_%d" % batch] = _outcome(lambda: g(xb))
    g.save("bd.nnp")
    loaded = GDm.load("bd.nnp")
    for batch in (2, 1, 4):
        xb = nn.Variable.from_numpy_array(r.randn(batch, 3))
        res["load_call_%d" % batch] = _outcome(lambda: loaded(xb))
    return res

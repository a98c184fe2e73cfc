"""What nnabla-examples' WGAN-GP (``image-generation/wgan/train.py``) needs: ``Variable.apply``
to mark its losses persistent as it builds them, and its gradient penalty, which takes
``nn.grad`` of the critic's output w.r.t. the mixed images ``eps * x_real + (1 - eps) *
x_fake``, an op output set ``need_grad = True`` after the critic was built on it, and whose
inputs need no gradient while the critic trains (``x_fake.need_grad = False``)."""

import numpy as np

from compat_harness import nnabla_case

B = 3


def _critic(nn, F, PF, x):
    with nn.parameter_scope("critic"):
        h = PF.convolution(x, 3, (3, 3), name="c1")
        h = F.leaky_relu(F.average_pooling(h, (2, 2)), 0.01)
        return PF.affine(h, 1, name="fc")


@nnabla_case(names=["nnabla.Variable.apply"])
def examples_variable_apply(nn, F, r):
    """``apply(**properties)`` sets them and returns the Variable itself; a name that is no
    property of a Variable is an AttributeError."""
    r.touch("nnabla.Variable.apply")
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    y = F.relu(x)
    z = F.sum(y).apply(persistent=True, name="z")
    res = {"returns itself": z.apply() is z, "persistent": z.persistent, "name": z.name,
           "need_grad": y.apply(need_grad=True).need_grad}
    try:
        z.apply(no_such_property=1)
        res["unknown name"] = "no error"
    except AttributeError:
        res["unknown name"] = "AttributeError"
    return res


@nnabla_case(names=["nnabla.grad", "nnabla.Variable.need_grad"], rtol=1e-4, atol=1e-6)
def examples_gradient_penalty_wrt_a_need_grad_intermediate(nn, F, PF, r):
    """WGAN-GP's critic step: the mixed images' inputs need no gradient, the program sets
    ``need_grad = True`` on them after building the critic, and the penalty on the norm of
    ``nn.grad`` w.r.t. them reaches the critic's parameters (static graph, as the program runs,
    with ``forward(clear_no_need_grad=True)`` and ``backward(clear_buffer=True)``)."""
    r.touch("nnabla.Variable.need_grad")
    x_real = nn.Variable.from_numpy_array(r.randn(B, 1, 6, 6))
    x_fake = nn.Variable.from_numpy_array(r.randn(B, 1, 6, 6))
    eps = nn.Variable.from_numpy_array(r.rand(B, 1, 1, 1).astype(np.float32))
    x_rmix = eps * x_real + (1.0 - eps) * x_fake
    p_rmix = _critic(nn, F, PF, x_rmix)
    res = {"need_grad before": x_rmix.need_grad}
    x_rmix.need_grad = True
    grads = nn.grad([p_rmix], [x_rmix])
    norms = [F.sum(g ** 2.0, [1, 2, 3]) ** 0.5 for g in grads]
    gp = sum([F.mean((n - 1.0) ** 2.0) for n in norms])
    loss = F.mean(p_rmix) + 10.0 * gp
    params = nn.get_parameters()
    res["params"] = r.set_params(params)
    for k in range(2):
        for p in params.values():
            p.grad.zero()
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        res["loss %d" % k] = loss.d.copy()
        for name, p in sorted(params.items()):
            res["%s grad %d" % (name, k)] = p.g.copy()
            p.d = p.d - 0.1 * p.g
    return res


@nnabla_case(names=["nnabla.grad", "nnabla.Variable.need_grad", "nnabla.auto_forward"],
             rtol=1e-4, atol=1e-6)
def examples_gradient_penalty_dynamic(nn, F, PF, r):
    """The same penalty computed eagerly (``nn.auto_forward()``), ``need_grad = True`` set on
    the mixed images before the critic runs on them."""
    r.touch("nnabla.Variable.need_grad")
    res = {}
    with nn.auto_forward():
        x_real = nn.Variable.from_numpy_array(r.randn(B, 1, 6, 6))
        x_fake = nn.Variable.from_numpy_array(r.randn(B, 1, 6, 6))
        x_rmix = 0.25 * x_real + 0.75 * x_fake
        x_rmix.need_grad = True
        p = _critic(nn, F, PF, x_rmix)
        params = nn.get_parameters()
        res["params"] = r.set_params(params)
        p = _critic(nn, F, PF, x_rmix)          # again, on the parameters just set
        g, = nn.grad([p], [x_rmix])
        gp = F.mean((F.sum(g ** 2.0, [1, 2, 3]) ** 0.5 - 1.0) ** 2.0)
        for q in params.values():
            q.grad.zero()
        gp.backward()
    res["gp"] = gp.d.copy()
    res["grad wrt the mixed images"] = g.d.copy()
    for name, q in sorted(params.items()):
        res[name + " grad"] = q.g.copy()
    return res


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward",
                    "nnabla.Variable.g"])
def examples_backward_to_a_need_grad_intermediate(nn, F, r):
    """``backward`` writes the gradient of an op output set ``need_grad = True`` whose inputs
    need none (and nothing beyond it), also where no parameter needs a gradient: for new input
    shapes too, and eagerly."""
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward", "nnabla.Variable.g")
    x = nn.Variable.from_numpy_array(r.randn(3))
    y = x * 2.0
    res = {"need_grad before": y.need_grad}
    y.need_grad = True
    z = F.sum(y * y)
    z.forward()
    z.backward()
    res["y.g"] = y.g.copy()
    res["x.g"] = x.g.copy()
    for n in (5, 4, 5):                 # new input shapes (Stadyn runs them eagerly first)
        x.reset_shape((n,), force=True)
        x.d = r.randn(n)
        z.forward()
        z.backward()
        res["y.g for %d" % n] = y.g.copy()
    with nn.auto_forward():
        u = x * 3.0
        u.need_grad = True
        w = F.sum(u * u)
    w.backward()
    res["dynamic u.g"] = u.g.copy()
    return res

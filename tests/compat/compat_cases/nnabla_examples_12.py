"""What nnabla-examples' ``responsible_ai/representer_point`` (``compute_score.py``) needs: its
backtracking line search keeps the parameters' values and gradients with
``F.identity(p.data)`` / ``F.identity(p.grad)`` and then writes each parameter with
``p.data.copy_from(p_data_org - t * p_grad_org)`` for smaller and smaller steps ``t``.  In
NNabla 1.39 a function applied to NdArrays (the imperative mode) gives its output new memory,
``F.reshape`` with ``inplace=True`` (its default) alone sharing its input's; Stadyn's
``F.identity``, ``F.slice``, ``F.transpose``, ``F.broadcast``, ``F.split`` and
``F.reshape(..., inplace=False)`` gave views of the input, so the kept "original" values moved
with the parameter and each step was taken from the last one."""

from compat_harness import nnabla_case


@nnabla_case(names=["nnabla.functions.identity", "nnabla.NdArray.copy_from",
                    "nnabla.Variable.data", "nnabla.Variable.grad"])
def imperative_output_in_new_memory(nn, F, r):
    """Line search steps from kept copies (as compute_score.py's), and which imperative
    outputs see a later write into their input."""
    r.touch("nnabla.NdArray.copy_from", "nnabla.Variable.data", "nnabla.Variable.grad")
    res = {}
    p = nn.Variable.from_numpy_array(r.randn(2, 3))
    p.grad.copy_from(nn.NdArray.from_numpy_array(r.randn(2, 3)))
    data_org, grad_org = F.identity(p.data), F.identity(p.grad)
    for i, t in enumerate((1.0, 0.5, 0.25)):
        p.data.copy_from(data_org - t * grad_org)
        res["step %d" % i] = p.d.copy()
    p.grad.zero()
    res["kept data"] = data_org.data.copy()
    res["kept grad"] = grad_org.data.copy()

    cases = [
        ("identity", lambda x: F.identity(x)),
        ("reshape", lambda x: F.reshape(x, (6,))),
        ("reshape inplace=False", lambda x: F.reshape(x, (6,), inplace=False)),
        ("slice", lambda x: F.slice(x, (0, 0), (1, 3))),
        ("transpose", lambda x: F.transpose(x, (1, 0))),
        ("broadcast", lambda x: F.broadcast(F.reshape(x, (1, 2, 3), inplace=False), (2, 2, 3))),
        ("split", lambda x: F.split(x, axis=0)[0]),
        ("mul_scalar", lambda x: F.mul_scalar(x, 1.0)),
    ]
    for name, fn in cases:
        x = nn.NdArray.from_numpy_array(r.randn(2, 3))
        y = fn(x)
        x.data[...] = -100.0
        res[name] = y.data.copy()
    return res

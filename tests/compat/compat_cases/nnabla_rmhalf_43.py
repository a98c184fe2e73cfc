"""NNabla 1.39's ``nn.grad`` details mended in rmnnhalf43: which of two graph Variables of one
registered parameter the gradient is taken through."""

from compat_harness import nnabla_case

_FORMS = ("h*F", "F*h", "h+2F", "2F+h", "F(slice)")


def _form(F, name, h, f, P):
    if name == "h*F":
        return F.sum(h * f)
    if name == "F*h":
        return F.sum(f * h)
    if name == "h+2F":
        return F.sum(h) + F.sum(2 * f)
    if name == "2F+h":
        return F.sum(2 * f) + F.sum(h)
    return F.sum(F.affine(F.tanh(h), F.slice(P, (0, 0), (3, 3))))


@nnabla_case(names=["nnabla.grad", "nnabla.get_parameters", "nnabla.functions.affine",
                    "nnabla.parametric_functions.affine", "nnabla.functions.slice"],
             rtol=1e-6, atol=1e-6)
def nn_grad__parameter_read_by_pf_and_f(nn, F, PF, r):
    """``nn.grad([y], [W])`` where the registered ``W`` is read both by ``PF.affine``'s graph
    and by a program's ``F.affine(x, W)``: NNabla 1.39 binds ``W`` to the one of its two graph
    Variables its depth-first search from ``y`` meets last and expands only the functions
    below the bound Variables, so one path counts (``F.sum(h) + F.sum(2 * F.affine(x, W))``:
    the ``F.affine`` path, twice the column sums of ``x``; swapped: ``h``'s path, once);
    Stadyn added both paths (three times).  With ``b`` asked for too (``nn.grad([y], [W,
    b])``), ``PF.affine(x, W, b)`` is below ``b`` and both paths count."""
    res = {}
    x_np = r.randn(2, 4)
    w_np = r.randn(4, 3)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        for name in _FORMS:
            nn.clear_parameters()
            with nn.auto_forward(dynamic):
                x = nn.Variable.from_numpy_array(x_np)
                h = PF.affine(x, 3, name="fc", w_init=w_np.copy())
                P = nn.get_parameters()["fc/affine/W"]
                y = _form(F, name, h, F.affine(x, P), P)
                alone, = nn.grad([y], [P])
                g, b = nn.grad([y], [P, nn.get_parameters()["fc/affine/b"]])
            for v in (alone, g, b):
                v.forward()
            res[mode + name] = alone.d.copy()
            res[mode + name + " with b"] = [g.d.copy(), b.d.copy()]
        nn.clear_parameters()
        with nn.auto_forward(dynamic):
            x = nn.Variable.from_numpy_array(x_np)
            h1 = PF.affine(x, 3, name="fc", w_init=w_np.copy())
            h2 = PF.affine(x * 2, 3, name="fc")
            g, = nn.grad([F.sum(h1) + F.sum(h2 * 3)], [nn.get_parameters()["fc/affine/W"]])
        g.forward()
        res[mode + "shared W"] = g.d.copy()
    nn.clear_parameters()
    return res

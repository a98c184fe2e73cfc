"""NNabla 1.39's spectral norm writes its ``u`` again in the backward (nnsn35).

``SpectralNorm`` keeps the ``u`` its forward started from and its backward runs the forward
again from it, writing the iteration's result into ``u`` once more
(src/nbla/function/generic/spectral_norm.cpp:294-311), function by function in the backward's
order (src/nbla/computation_graph/variable.cpp:870-930: the last call made runs first).  Where
one ``u`` is normalised by several calls, ``u`` after the backward is the first call's result,
not the last one's that the forward left.  Each case records ``u`` after the forward and after
the backward: several calls, ``test=True`` calls mixed in (they write nothing), a backward
with ``clear_buffer``, a forward run twice, ``w`` taking no gradient (no rewrite), and a
dynamic graph (``auto_forward``: NNabla writes ``u`` again there too).
"""

from compat_harness import nnabla_case

FN = "nnabla.functions."

_TEST_GRAD = (
    "NNabla 1.39's SpectralNorm keeps the u its forward started from (u_orig_) only when "
    "test is False (spectral_norm.cpp:255-263; made at setup, line 220); a test=True "
    "call's backward recomputes from the never-written u_orig_ (spectral_norm.cpp:304-308), "
    "here a NaN gradient for w; Stadyn differentiates that call at the u it read")


def _graph(nn, F, r, tests, n, deep_first=True):
    """``n`` calls on one ``u``; the loss sums them, each but the last scaled first
    (``deep_first``: their branches of higher rank, so NNabla's backward runs the last call's
    spectral norm before the others) or each but the first (the first call's branch the
    shallow one)."""
    w = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
    u = nn.Variable.from_numpy_array(r.randn(3))
    ys = [F.spectral_norm(w, u, dim=0, itr=1, test=(i in tests)) for i in range(n)]
    scaled = range(n - 1) if deep_first else range(1, n)
    terms = [F.sum(y * (i + 2)) if i in scaled else F.sum(y) for i, y in enumerate(ys)]
    loss = terms[0]
    for t in terms[1:]:
        loss = loss + t
    return w, u, loss


def _rows(nn, F, r, tests, n, deep_first=True):
    w, u, loss = _graph(nn, F, r, tests, n, deep_first)
    loss.forward()
    res = {"u forward": u.d.copy()}
    w.grad.zero()
    loss.backward()
    res["u backward"] = u.d.copy()
    res["grad w"] = w.g.copy()
    return res


@nnabla_case(names=[FN + "spectral_norm"])
def sn_u__calls_on_one_u(nn, F, PF, S, r):
    """One, two and three calls on one ``u`` in one graph: after the backward ``u`` is the
    result of the call NNabla's backward runs last (the second and third calls' starts are the
    earlier calls' results), the first call's where the others' branches are shallower."""
    res = {}
    for n in (1, 2, 3):
        for deep_first in (True, False):
            for k, v in _rows(nn, F, r, (), n, deep_first).items():
                res["%d calls%s: %s" % (n, "" if deep_first else ", first shallow", k)] = v
    return res


@nnabla_case(names=[FN + "spectral_norm"],
             known=dict.fromkeys(["test first: grad w", "test last: grad w",
                                  "test middle: grad w"], _TEST_GRAD))
def sn_u__test_calls_mixed_in(nn, F, PF, S, r):
    """``test=True`` calls write ``u`` neither in the forward nor in the backward; the calls
    around them do."""
    res = {}
    for name, tests, n in (("test first", (0,), 2), ("test last", (1,), 2),
                           ("test middle", (1,), 3)):
        for k, v in _rows(nn, F, r, tests, n).items():
            res["%s: %s" % (name, k)] = v
    return res


@nnabla_case(names=[FN + "spectral_norm"])
def sn_u__clear_buffer_and_repeats(nn, F, PF, S, r):
    """A backward with ``clear_buffer=True`` after a forward with ``clear_no_need_grad``; a
    forward run twice before one backward (the second forward's starts are kept); two
    backwards after one forward (each writes from the same starts)."""
    w, u, loss = _graph(nn, F, r, (), 2)
    loss.forward(clear_no_need_grad=True)
    res = {"clear: u forward": u.d.copy()}
    loss.backward(clear_buffer=True)
    res["clear: u backward"] = u.d.copy()
    w, u, loss = _graph(nn, F, r, (), 2)
    loss.forward()
    loss.forward()
    res["twice: u forward"] = u.d.copy()
    loss.backward()
    res["twice: u backward"] = u.d.copy()
    loss.backward()
    res["twice: u second backward"] = u.d.copy()
    return res


@nnabla_case(names=[FN + "spectral_norm", "nnabla.auto_forward"])
def sn_u__fixed_w_and_dynamic(nn, F, PF, S, r):
    """``w`` with ``need_grad=False`` (NNabla's backward returns before its forward again:
    ``propagate_down[0]`` false: ``u`` keeps the last call's result), and a dynamic graph
    (NNabla writes ``u`` again there too)."""
    w = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=False)
    u = nn.Variable.from_numpy_array(r.randn(3))
    x = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
    loss = F.sum(F.spectral_norm(w, u) * x * 2) + F.sum(F.spectral_norm(w, u) * x)
    loss.forward()
    res = {"fixed w: u forward": u.d.copy()}
    loss.backward()
    res["fixed w: u backward"] = u.d.copy()
    res["fixed w: grad x"] = x.g.copy()
    with nn.auto_forward():
        w = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
        u = nn.Variable.from_numpy_array(r.randn(3))
        loss = F.sum(F.spectral_norm(w, u) * 2) + F.sum(F.spectral_norm(w, u))
        res["dynamic: u forward"] = u.d.copy()
        loss.backward()
        res["dynamic: u backward"] = u.d.copy()
        res["dynamic: grad w"] = w.g.copy()
    return res

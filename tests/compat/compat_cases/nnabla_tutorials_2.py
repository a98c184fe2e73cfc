"""What NNabla 1.39's debugging tutorial (``tutorial/debugging.ipynb``) prints, where Stadyn
printed otherwise (``tests/examples/test_nnabla_tutorials.py`` runs the tutorial itself):

* ``Function.info.args`` of a convolution, a pooling and batch normalization are NNabla's
  resolved arguments: ``stride``/``dilation`` ``[1, 1]`` and ``pad`` ``[0, 0]`` where not
  given (a pooling's ``stride`` its ``kernel``), batch normalization's ``axes, decay_rate,
  eps, batch_stat, no_scale, no_bias`` with the floats as NNabla's float32
  (``0.8999999761581421``), where Stadyn showed ``None`` and its own fields
  (``output_stat``, ``time_constant``);
* ``Function.rank`` grows by 1 once ``forward()`` or ``nn.forward_all`` has run the function,
  static or dynamic (the functions of the Variables forwarded only), already while it runs
  (``NanInfTracer``'s ``(rank: 3)``);
* the inputs ``visit`` hands over print as NNabla's Variables, parameters included
  (``<Variable((16, 3, 3, 3), need_grad=True) at 0x..>``, where Stadyn printed its own
  ``<Variable 'conv/W', shape=...>``);
* ``pprint(summary=True)`` prints its statistics as NNabla does, ``[0.5, 2.0]``, where NumPy 2
  made Stadyn print ``[np.float32(0.5), np.float32(2.0)]``.
"""

import contextlib
import io
import re

from compat_harness import nnabla_case

FUNC = "nnabla.function.Function."


@nnabla_case(names=[FUNC + "info"])
def function_info_args__resolved(nn, F, PF, r):
    """``info.args`` of the functions the debugging tutorial's ResNet prints, and their
    variants: defaults resolved, batch normalization's fields."""
    r.touch(FUNC + "info")

    def v(*shape):
        return nn.Variable(shape)

    made = {
        "conv2d": F.convolution(v(2, 3, 5, 5), v(4, 3, 3, 3)),
        "conv2d pad": F.convolution(v(2, 3, 5, 5), v(4, 3, 3, 3), pad=(1, 1), stride=(2, 1)),
        "conv1d": F.convolution(v(2, 3, 5), v(4, 3, 3)),
        "deconv2d": F.deconvolution(v(2, 3, 5, 5), v(3, 4, 3, 3)),
        "max_pooling": F.max_pooling(v(2, 3, 6, 6), (2, 2)),
        "max_pooling 3x3 s1": F.max_pooling(v(2, 3, 6, 6), (3, 3), stride=(1, 1)),
        "average_pooling": F.average_pooling(v(2, 3, 6, 6), (2, 2)),
        "sum_pooling": F.sum_pooling(v(2, 3, 6, 6), (3, 2)),
        "bn": F.batch_normalization(v(2, 3, 1, 1), v(1, 3, 1, 1), v(1, 3, 1, 1),
                                    v(1, 3, 1, 1), v(1, 3, 1, 1)),
        "bn no beta": F.batch_normalization(v(2, 3, 1, 1), None, v(1, 3, 1, 1),
                                            v(1, 3, 1, 1), v(1, 3, 1, 1), decay_rate=0.8,
                                            eps=1e-3),
        "PF bn no_scale": PF.batch_normalization(v(2, 3, 4, 4), no_scale=True, name="bn1"),
        "PF bn test": PF.batch_normalization(v(2, 3, 4, 4), batch_stat=False, name="bn2"),
        "PF conv": PF.convolution(v(2, 3, 5, 5), 4, (3, 3), pad=(1, 1), name="c"),
    }
    return {k: [y.parent.info.type_name, [[a, y.parent.info.args[a]]
                                          for a in y.parent.info.args]]
            for k, y in made.items()}


@nnabla_case(names=[FUNC + "rank", "nnabla.forward_all"])
def function_rank__after_forward(nn, F, PF, r):
    """``rank`` of each function before and after ``forward()`` (static: the forwarded
    Variable's functions only; dynamic too); a Variable's rank stays its parent's + 1 as made."""
    r.touch(FUNC + "rank")
    res = {}

    def ranks(y):
        seen = []
        y.visit(lambda f: seen.append([f.info.type_name, f.rank]))
        return seen

    x = nn.Variable.from_numpy_array(r.randn(2, 3, 4, 4))
    h = F.relu(PF.batch_normalization(PF.convolution(x, 2, (3, 3), name="c"), name="b"))
    y = F.sin(h)
    z = PF.affine(y, 3, name="p")
    res["made"] = ranks(z)
    h.forward()
    res["after h.forward"] = ranks(z)
    z.forward()
    res["after z.forward"] = ranks(z)
    z.forward()
    res["after two forwards"] = ranks(z)
    z.backward()
    res["after backward"] = ranks(z)
    res["variable ranks"] = [x.rank, h.rank, y.rank, z.rank]
    w = F.tanh(z)
    res["made on a forwarded graph"] = ranks(w)
    p = F.relu(x)
    q, s = F.sin(p), F.cos(p)
    nn.forward_all([q, s])
    res["after forward_all"] = [ranks(q), ranks(s)]
    with nn.auto_forward():
        a = F.relu(x)
        b = F.sin(a)
    res["dynamic"] = ranks(b)
    b.forward()
    res["dynamic after forward"] = ranks(b)
    # NanInfTracer names the function with the rank it has while the forward runs it
    insp = r.module("nnabla.utils.inspection")
    nit = insp.NanInfTracer(trace_inf=True, trace_nan=True, need_details=False)
    bad = F.sin(F.log(F.relu(nn.Variable.from_numpy_array(r.randn(3))) - 9.0))
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            with nit.trace():
                bad.forward(function_post_hook=nit.forward_post_hook)
        res["nan trace"] = "no error"
    except ValueError as e:                  # Stadyn names the user's line too
        res["nan trace"] = re.sub(r", created at [^ ]+ has", " has", str(e))
    return res


def _unaddressed(text):
    return re.sub(r" at 0x[0-9a-f]+", "", text)


@nnabla_case(names=["nnabla.Variable.visit"])
def visit__inputs_print_as_variables(nn, F, PF, r):
    """The tutorial's ``PrintFunc``: each function's type, inputs, outputs and arguments as
    ``visit`` hands them over (addresses dropped)."""
    r.touch("nnabla.Variable.visit")
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 6, 6))
    h = PF.convolution(x, 4, (3, 3), pad=(1, 1), with_bias=False, name="first-conv")
    h = F.relu(PF.batch_normalization(h, name="first-bn"))
    y = PF.affine(F.max_pooling(h, (2, 2)), 5, name="pred")
    out = io.StringIO()

    def print_func(f):
        print("==========")
        print(f.info.type_name)
        print(f.inputs)
        print(f.outputs)
        print(f.info.args)

    with contextlib.redirect_stdout(out):
        y.visit(print_func)
    return {"printed": _unaddressed(out.getvalue()).splitlines()}


@nnabla_case(names=["nnabla.utils.inspection.pprint"])
def pprint__summary_as_nnabla_prints(nn, F, r):
    """``pprint(summary=True, forward=True, backward=True)`` of a graph whose statistics are
    exact in float32: the printout, character for character."""
    insp = r.module("nnabla.utils.inspection")
    x = nn.Variable.from_numpy_array(r.randint(-4, 5, (2, 4)).astype("float32"),
                                     need_grad=True)
    y = F.relu(x) * 2.0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        insp.pprint(y, summary=True, forward=True, backward=True)
    return {"printed": out.getvalue().splitlines()}

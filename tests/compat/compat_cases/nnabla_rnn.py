"""NNabla's recurrent functions (``F.lstm``, ``F.gru``, ``F.rnn``) and parametric functions
(``PF.lstm_cell``, ``PF.lstm``, ``PF.gru``, ``PF.rnn``): every output and the gradients of
``sum(out_k * w_k)`` over the outputs w.r.t. every input (and parameter, set from its name)."""

from compat_harness import nnabla_case

T, B, I, H = 4, 2, 3, 2


def _outputs(nn, F, r, ys, wrt):
    """Forward ``ys`` (a tuple), then backward of ``sum_k sum(y_k * w_k)``; results per
    output and per input of ``wrt`` (a dict name -> Variable)."""
    loss = None
    for y in ys:
        term = F.sum(y * nn.Variable.from_numpy_array(r.weights_like(y.d)))
        loss = term if loss is None else loss + term
    loss.forward()
    res = {}
    for k, y in enumerate(ys):
        res["out%d" % k] = y.d.copy()
    for v in wrt.values():
        v.g = 0
    loss.backward()
    for name, v in sorted(wrt.items()):
        res["grad " + name] = v.g.copy()
    return res


def fn_rnn_case(name, op, layers=1, directions=1, bias=True, **attrs):
    """A case for ``F.<op>`` with NNabla's weight shapes for ``layers`` and ``directions``."""
    gates = {"lstm": 4, "gru": 3, "rnn": None}[op]
    bias_gates = {"lstm": 4, "gru": 4, "rnn": None}[op]

    def fn(nn, F, r):
        V = nn.Variable.from_numpy_array
        xs = {"x": V(r.randn(T, B, I), need_grad=True),
              "h": V(r.randn(layers, directions, B, H), need_grad=True)}
        xs["w0"] = V(r.randn(*((directions,) + ((gates,) if gates else ()) + (H, I + H)))
                     * 0.5, need_grad=True)
        if op == "lstm":
            xs["c"] = V(r.randn(layers, directions, B, H), need_grad=True)
        w = None
        if layers > 1:
            w = V(r.randn(*((layers - 1, directions) + ((gates,) if gates else ())
                            + (H, directions * H + H))) * 0.5, need_grad=True)
            xs["w"] = w
        b = None
        if bias:
            b = V(r.randn(*((layers, directions) + ((bias_gates,) if bias_gates else ())
                            + (H,))) * 0.5, need_grad=True)
            xs["b"] = b
        kw = dict(attrs, num_layers=layers, bidirectional=directions == 2)
        if op == "lstm":
            ys = F.lstm(xs["x"], xs["h"], xs["c"], xs["w0"], w, b, **kw)
        else:
            ys = getattr(F, op)(xs["x"], xs["h"], xs["w0"], w, b, **kw)
        return _outputs(nn, F, r, ys, xs)

    fn.__name__ = name
    nnabla_case(name=name, names=["nnabla.functions." + op], rtol=1e-4, atol=1e-5,
                note="fused kernels sum in another order: 1e-4")(fn)


fn_rnn_case("lstm", "lstm")
fn_rnn_case("lstm__two_layers_bidirectional", "lstm", layers=2, directions=2)
fn_rnn_case("lstm__no_bias", "lstm", bias=False)
fn_rnn_case("gru", "gru")
fn_rnn_case("gru__two_layers_bidirectional", "gru", layers=2, directions=2)
fn_rnn_case("rnn", "rnn")
fn_rnn_case("rnn__relu_two_layers", "rnn", layers=2, nonlinearity="relu")
fn_rnn_case("rnn__bidirectional", "rnn", directions=2)


P = "nnabla.parametric_functions."


def pf_rnn_case(name, build, names, states=1, layers=1, directions=1):
    """A case for a recurrent PF: its parameters (set from their names) and the outputs and
    gradients, with ``states`` state inputs ``(layers, directions, B, H)``."""
    def fn(nn, F, PF, r):
        V = nn.Variable.from_numpy_array
        xs = {"x": V(r.randn(T, B, I), need_grad=True)}
        for k in range(states):
            xs["s%d" % k] = V(r.randn(layers, directions, B, H), need_grad=True)
        ys = build(PF, *[xs[k] for k in sorted(xs)])
        params = nn.get_parameters(grad_only=False)
        res = {"params": r.set_params(params)}
        wrt = dict(xs)
        wrt.update(params)
        res.update(_outputs(nn, F, r, ys, wrt))
        return res
    fn.__name__ = name
    nnabla_case(name=name, names=[P + n for n in names], rtol=1e-4, atol=1e-5,
                note="fused kernels sum in another order: 1e-4")(fn)


pf_rnn_case("PF_lstm", lambda PF, s0, s1, x: PF.lstm(x, s0, s1), ["lstm"], states=2)
pf_rnn_case("PF_lstm__two_layers_bidirectional",
            lambda PF, s0, s1, x: PF.lstm(x, s0, s1, bidirectional=True), ["lstm"], states=2,
            layers=2, directions=2)
pf_rnn_case("PF_gru", lambda PF, s0, x: PF.gru(x, s0), ["gru"])
pf_rnn_case("PF_rnn", lambda PF, s0, x: PF.rnn(x, s0, nonlinearity="relu"), ["rnn"])
pf_rnn_case("PF_rnn__no_bias", lambda PF, s0, x: PF.rnn(x, s0, with_bias=False), ["rnn"],
            layers=2)


@nnabla_case(names=[P + "lstm_cell"], rtol=1e-5)
def PF_lstm_cell(nn, F, PF, r):
    V = nn.Variable.from_numpy_array
    x, h, c = (V(r.randn(B, I), need_grad=True), V(r.randn(B, H), need_grad=True),
               V(r.randn(B, H), need_grad=True))
    ys = PF.lstm_cell(x, h, c, H)
    params = nn.get_parameters(grad_only=False)
    res = {"params": r.set_params(params)}
    wrt = {"x": x, "h": h, "c": c}
    wrt.update(params)
    res.update(_outputs(nn, F, r, ys, wrt))
    return res


@nnabla_case(names=[P + "lstm_cell"], rtol=1e-5)
def PF_lstm_cell__name(nn, F, PF, r):
    """``name`` opens a scope above the cell's own ``lstm`` (``cell/lstm/affine/W``)."""
    V = nn.Variable.from_numpy_array
    x, h, c = (V(r.randn(B, I), need_grad=True), V(r.randn(B, H), need_grad=True),
               V(r.randn(B, H), need_grad=True))
    ys = PF.lstm_cell(x, h, c, H, name="cell")
    params = nn.get_parameters(grad_only=False)
    res = {"params": r.set_params(params)}
    wrt = {"x": x, "h": h, "c": c}
    wrt.update(params)
    res.update(_outputs(nn, F, r, ys, wrt))
    return res


def _lstm_cell_run(nn, F, PF, r, cell, steps):
    """``steps`` calls of ``cell`` on seeded inputs, then the outputs, the states, the
    gradients w.r.t. the inputs and the parameters (set from their names)."""
    V = nn.Variable.from_numpy_array
    xs = dict(("x%d" % t, V(r.randn(B, I), need_grad=True)) for t in range(steps))
    hs = [cell(xs["x%d" % t]) for t in range(steps)]
    params = nn.get_parameters(grad_only=False)
    res = {"params": r.set_params(params), "h is last": hs[-1] is cell.h,
           "sizes": [cell.batch_size, cell.state_size]}
    wrt = dict(xs)
    wrt.update(params)
    res.update(_outputs(nn, F, r, hs[-1:], wrt))
    res["c"] = cell.c.d.copy()
    return res


@nnabla_case(names=[P + "LSTMCell", P + "LSTMCell.reset_state"], rtol=1e-5)
def PF_LSTMCell(nn, F, PF, r):
    """Three steps from zero states; then ``reset_state`` zeroes ``h`` and ``c`` (the last
    step's outputs), and a forward of the unrolled graph computes them again."""
    cell = PF.LSTMCell(B, H, name="cell")
    res = {"initial h": cell.h.d.copy(), "initial c": cell.c.d.copy()}
    res.update(_lstm_cell_run(nn, F, PF, r, cell, 3))
    last = cell.h
    cell.reset_state()
    r.touch("nnabla.parametric_functions.LSTMCell.reset_state")
    res["reset h"], res["reset c"] = cell.h.d.copy(), cell.c.d.copy()
    last.forward()
    res["forward again"] = last.d.copy()
    return res


@nnabla_case(names=[P + "LSTMCell"], rtol=1e-5)
def PF_LSTMCell__given_states_fixed(nn, F, PF, r):
    """States given at construction, no name (scope ``lstm``), fixed parameters, initialisers."""
    V = nn.Variable.from_numpy_array
    h, c = V(r.randn(B, H), need_grad=True), V(r.randn(B, H), need_grad=True)
    cell = PF.LSTMCell(B, H, h=h, c=c)
    res = {"same h": cell.h is h, "same c": cell.c is c}
    x = V(r.randn(B, I), need_grad=True)
    y = cell(x, w_init=nn.initializer.ConstantInitializer(0.25),
             b_init=nn.initializer.ConstantInitializer(-0.5), fix_parameters=True)
    params = nn.get_parameters(grad_only=False)
    for k, v in params.items():
        res["initial " + k] = v.d.copy()
    res["params"] = r.set_params(params)
    res.update(_outputs(nn, F, r, (y,), {"x": x, "h": h, "c": c}))
    return res


@nnabla_case(names=[P + "LSTMCell", "nnabla.auto_forward"], rtol=1e-5)
def PF_LSTMCell__auto_forward(nn, F, PF, r):
    """With ``auto_forward``, ``reset_state`` zeroes the states the next call reads."""
    x = nn.Variable.from_numpy_array(r.randn(B, I))
    with nn.auto_forward():
        cell = PF.LSTMCell(B, H, name="c4")
        cell(x)
        res = {"params": r.set_params(nn.get_parameters(grad_only=False))}
        cell.reset_state()
        first = cell(x)
        second = cell(x)
        res["first"], res["second"] = first.d.copy(), second.d.copy()
        cell.reset_state()
        res["reset first"] = first.d.copy()
        res["after reset"] = cell(x).d.copy()
    return res

"""A self-stabilised recurrent cell (``RNNStep``, ``LSTM``, ``GRU``) applied inside a user's
``Recurrence`` step function (stab35): CNTK 2.7 lists the cell's ``alpha`` among the model's
parameters, and setting it changes what the model computes, as with ``Recurrence(cell)``."""

from compat_harness import cntk_case


def _cells(C):
    """``(kind, cell, step function)`` for each cell kind, the cell applied inside the step."""
    out = []
    for kind, make in (("rnnstep", C.layers.RNNStep), ("lstm", C.layers.LSTM),
                       ("gru", C.layers.GRU)):
        cell = make(4, enable_self_stabilization=True)
        if kind == "lstm":
            step = (lambda cell: lambda h, c, x: cell(h, c, x))(cell)
        else:
            step = (lambda cell: lambda h, x: cell(h, x))(cell)
        out.append((kind, cell, step))
    return out


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.RNNStep", "cntk.layers.LSTM",
                  "cntk.layers.GRU"],
           note="a stabilised cell applied inside a Python step function: its alpha is a "
                "parameter of the model, in CNTK 2.7's place and of its initial value "
                "(0.9953786, log(expm1(4)) / 4), and setting it changes the outputs (Stadyn "
                "listed an unnamed scalar of value 0 in its place, the stabiliser's scale "
                "hoisted out of the loop, and setting it changed nothing)",
           known={k + " inputs": "CNTK 2.7 shows the cell applied inside the step as one "
                  "block (an LSTM of inputs b, W, H, the stabiliser's 3 constants, alpha, then "
                  "the PastValue and x), so the Function's inputs list the parameters before "
                  "the initial state and x; Stadyn's view of a Python step shows a "
                  "self-stabilised cell op by op (_step_views.mark_step_inside leaves it "
                  "unmarked, no block), whose walk meets x first, so it passes the arguments "
                  "through a Tuple (_recurrent_views.FunctionStepView) and lists the initial "
                  "state and x first" for k in ("lstm",)})
def recurrence__stabilized_cell_in_step_function(C, r, np):
    res = {}
    x = C.sequence.input_variable(3)
    data = r.randn(2, 5, 3).astype(np.float32)
    for kind, cell, step in _cells(C):
        z = C.layers.Recurrence(step)(x)
        if len(z.outputs) > 1:
            z = z.outputs[0]
            z = C.combine([z])
        res[kind + " parameters"] = [[p.name, list(p.shape)] for p in z.parameters]
        res[kind + " inputs"] = [[p.name, list(p.shape)] for p in z.inputs]
        res[kind + " scalar values"] = [float(p.value) for p in z.parameters if p.shape == ()]
        res[kind + " set"] = r.set_params(z.parameters)
        for p in z.parameters:
            if p.shape == ():
                p.value = np.array(0.3, dtype=np.float32)
        res[kind + " out"] = np.asarray(z.eval({z.arguments[0]: data}))
    return res

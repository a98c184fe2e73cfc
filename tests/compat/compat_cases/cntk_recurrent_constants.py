"""What CNTK 2.7's graph of a recurrent layer lists: its constants and inputs (a GRU's ``1 - z``
constant, the two constants of the ``Sequence::Slice`` that takes a Fold's last step, the
initial state's Constant in ``default_options``' type), and a double-precision model's
values and gradients."""

import numpy as np

from compat_harness import cntk_case

_LISTED = ["cntk.Function.inputs", "cntk.Function.constants", "cntk.Function.parameters",
           "cntk.Function.arguments", "cntk.Function.root_function"]


def _kind(v):
    return "P" if v.is_parameter else "C" if v.is_constant else "I" if v.is_input else "O"


def _listing(variables):
    return ["%s%s%s" % (_kind(v), v.name, list(v.shape)) for v in variables]


def _constants(f):
    return [[list(c.shape), np.dtype(c.dtype).name, np.asarray(c.value).ravel().tolist()]
            for c in f.constants]


def _view(f):
    return {"inputs": _listing(f.inputs), "constants": _constants(f),
            "arguments": len(f.arguments),
            "dtypes": [np.dtype(o.dtype).name for o in f.outputs]}


@cntk_case(names=_LISTED + ["cntk.layers.GRU", "cntk.layers.Fold", "cntk.layers.Recurrence",
                            "cntk.layers.RecurrenceFrom", "cntk.layers.RNNStep",
                            "cntk.layers.LSTM"],
           note="Stadyn runs a GRU (and an RNNStep, an LSTM) along a sequence as one op, and "
                "a Fold's last step by an op of its own, and so listed neither the GRU's "
                "1 (of 1 - z) nor the Fold's slice constants 0 and 1 among inputs and "
                "constants.  (The root function's inputs are left out: CNTK's Recurrence and "
                "Fold are composites whose root is a Combine, initial_states_are_constants)")
def recurrent_layers_list_cntks_constants(C, r):
    r.touch(*_LISTED)
    x = C.sequence.input_variable(3)
    h = C.input_variable(2)
    made = [
        ("Recurrence(GRU)", lambda: C.layers.Recurrence(C.layers.GRU(2))(x)),
        ("Fold(GRU)", lambda: C.layers.Fold(C.layers.GRU(2))(x)),
        ("Fold(RNNStep) backwards",
         lambda: C.layers.Fold(C.layers.RNNStep(2), go_backwards=True)(x)),
        ("Fold(LSTM) full state",
         lambda: C.layers.Fold(C.layers.LSTM(2), return_full_state=True)(x)),
        ("Fold(function)", lambda: C.layers.Fold(lambda s, v: s + v)(x)),
        ("RecurrenceFrom(GRU)", lambda: C.layers.RecurrenceFrom(C.layers.GRU(2))(h, x)),
        ("Recurrence(LSTM, 0.5)",
         lambda: C.layers.Recurrence(C.layers.LSTM(2), initial_state=0.5)(x)),
        ("Dense after Recurrence(GRU)", lambda: C.layers.Sequential(
            [C.layers.Recurrence(C.layers.GRU(2)), C.layers.Dense(1)])(x)),
        ("GRU step", lambda: C.layers.GRU(2)(h, C.input_variable(3))),
    ]
    res = {}
    for key, make in made:
        f = make()
        res[key] = _view(f)
    return res


@cntk_case(names=["cntk.layers.default_options", "cntk.Function.eval", "cntk.Function.grad"],
           note="under default_options(dtype=np.float64) Stadyn made a Recurrence's and a "
                "Fold's initial-state Constant float32 (CNTK 2.7: the options' float64)")
def double_precision_recurrences(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.grad")
    res = {}
    xs = [r.randn(2, 3).astype(np.float64), r.randn(3, 3).astype(np.float64)]
    with C.default_options(dtype=np.float64):
        x = C.sequence.input_variable(3, needs_gradient=True)
        made = [("Recurrence(GRU, 0.25)",
                 C.layers.Recurrence(C.layers.GRU(2), initial_state=0.25)),
                ("Fold(LSTM)", C.layers.Fold(C.layers.LSTM(2))),
                ("Recurrence(RNNStep) backwards",
                 C.layers.Recurrence(C.layers.RNNStep(2), go_backwards=True))]
        for key, layer in made:
            f = layer(x)
            res[key] = _view(f)
            res[key + " parameters"] = r.set_params(f.parameters)
            out = f.eval({x: xs})
            res[key + " eval"] = [np.asarray(o) for o in out]
            grads = f.grad({x: xs}, wrt=[x] + list(f.parameters))
            res[key + " grad x"] = [np.asarray(g) for g in grads[x]]
            for p in f.parameters:
                res["%s grad %s" % (key, p.name)] = np.asarray(grads[p])
    return res


@cntk_case(names=_LISTED + ["cntk.layers.Stabilizer"],
           note="CNTK 2.7's stabilizer is softplus(alpha, steepness k), log_add_exp(0, k * "
                "alpha) / k, whose scalar constants 0, k, k its walk lists right before alpha; "
                "Stadyn computes it without constants and listed none, for a Stabilizer layer "
                "and for a recurrent cell's self-stabilizers")
def stabilizers_list_their_softplus_constants(C, r):
    r.touch(*_LISTED)
    x = C.input_variable(3)
    s = C.sequence.input_variable(3)
    made = [
        ("Stabilizer", lambda: C.layers.Stabilizer()(x)),
        ("named, steepness 2", lambda: C.layers.Stabilizer(steepness=2, name="s")(x)),
        ("Stabilizer >> Dense",
         lambda: C.layers.Sequential([C.layers.Stabilizer(), C.layers.Dense(2)])(x)),
        ("not stabilizing",
         lambda: C.layers.Stabilizer(enable_self_stabilization=False)(x)),
        ("LSTM", lambda: C.layers.Recurrence(
            C.layers.LSTM(2, enable_self_stabilization=True))(s)),
        ("LSTM peepholes", lambda: C.layers.Recurrence(
            C.layers.LSTM(2, use_peepholes=True, enable_self_stabilization=True))(s)),
        ("LSTM projection", lambda: C.layers.Recurrence(
            C.layers.LSTM(2, cell_shape=3, enable_self_stabilization=True))(s)),
        ("GRU", lambda: C.layers.Recurrence(
            C.layers.GRU(2, enable_self_stabilization=True))(s)),
        ("RNNStep", lambda: C.layers.Recurrence(
            C.layers.RNNStep(2, enable_self_stabilization=True))(s)),
        ("tagger", lambda: C.layers.Sequential([
            C.layers.Embedding(4), C.layers.Stabilizer(),
            (C.layers.Recurrence(C.layers.GRU(3)),
             C.layers.Recurrence(C.layers.RNNStep(2), go_backwards=True)),
            C.splice, C.layers.Dense(2)])(s)),
    ]
    res = {}
    for key, make in made:
        res[key] = _view(make())
    return res

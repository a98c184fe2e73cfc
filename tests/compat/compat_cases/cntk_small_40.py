"""Small places where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7, or might (cntksmall40):
a layer's declared parameter used as a dict key before the layer is applied; the keyword
operands of the associative ops (``arg1``/``arg2``, not ``left``/``right``)."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Convolution", "cntk.layers.Embedding",
                  "cntk.layers.LSTM", "cntk.layers.GRU", "cntk.layers.Recurrence",
                  "cntk.layers.BatchNormalization", "cntk.layers.LayerNormalization"],
           note="A layer's parameter taken before the layer is applied (d.W) is the one its "
                "application uses in CNTK 2.7: a dict keyed by it finds d.W and "
                "z.parameters[i] after d(x), and they are equal and hash alike. Stadyn's "
                "declared parameter hashed as itself and compared equal to no Variable: the "
                "lookups gave None (SILENT), d.W == z.parameters[0] False")
def declared_parameter__as_dict_key(C, r, np):
    def check(make, name, x, wrapper=None):
        def run():
            layer = make()
            p = getattr(layer, name)
            keyed = {p: 1}
            by_index = {q: i for i, q in enumerate(layer.parameters)}
            z = (wrapper(layer) if wrapper else layer)(x())
            after = getattr(layer, name)
            return {"again before": {p: 1}.get(p), "by declared": keyed.get(p),
                    "by after": keyed.get(after),
                    "by z.parameters": [keyed.get(q) for q in z.parameters],
                    "equal": bool(p == after), "hash equal": hash(p) == hash(after),
                    "index by z.parameters": [by_index.get(q) for q in z.parameters],
                    "distinct": len(set([p, after] + list(z.parameters)))}
        return run

    def dense():
        return C.input_variable(3)

    def image():
        return C.input_variable((1, 5, 5))

    def sequence():
        return C.sequence.input_variable(3)

    L = C.layers
    return {
        "Dense W": _outcome(check(lambda: L.Dense(2), "W", dense)),
        "Dense b": _outcome(check(lambda: L.Dense(2), "b", dense)),
        "Convolution W": _outcome(check(lambda: L.Convolution((3, 3), 2), "W", image)),
        "Convolution b": _outcome(check(lambda: L.Convolution((3, 3), 2), "b", image)),
        "Embedding E": _outcome(check(lambda: L.Embedding(4), "E", dense)),
        "LSTM W": _outcome(check(lambda: L.LSTM(2), "W", sequence, L.Recurrence)),
        "LSTM H": _outcome(check(lambda: L.LSTM(2), "H", sequence, L.Recurrence)),
        "GRU W": _outcome(check(lambda: L.GRU(2), "W", sequence, L.Recurrence)),
        "BatchNormalization scale": _outcome(check(lambda: L.BatchNormalization(), "scale",
                                                   image)),
        "LayerNormalization scale": _outcome(check(lambda: L.LayerNormalization(), "scale",
                                                   dense)),
    }


@cntk_case(names=["cntk.ops.plus", "cntk.ops.element_times", "cntk.ops.element_max",
                  "cntk.ops.element_min", "cntk.ops.log_add_exp", "cntk.ops.minus",
                  "cntk.ops.element_divide"],
           note="keyword operands: CNTK 2.7's associative ops (plus, element_times, "
                "element_max, element_min, log_add_exp) take arg1/arg2 (their "
                "associative_multi_arg decorator), so left=/right= is a TypeError (missing "
                "arg1 and arg2), while minus and element_divide take left/right and refuse "
                "arg1/arg2 (TypeError); Stadyn matched already (this case keeps it so)")
def keyword_operands__associative_ops_take_arg1_arg2(C, r, np):
    a, b = C.input_variable(2, name="a"), C.input_variable(2, name="b")
    data = {a: np.array([[1, 2]], np.float32), b: np.array([[3, 5]], np.float32)}
    res = {}
    for op in ("plus", "element_times", "element_max", "element_min", "log_add_exp"):
        f = getattr(C, op)
        res[op + " left/right"] = _outcome(lambda: f(right=b, left=a))
        res[op + " a, right"] = _outcome(lambda: f(a, right=b))
        res[op + " arg1/arg2"] = _outcome(lambda: f(arg2=b, arg1=a).eval(data))
    for op in ("minus", "element_divide"):
        f = getattr(C, op)
        res[op + " left/right"] = _outcome(lambda: f(right=b, left=a).eval(data))
        res[op + " arg1/arg2"] = _outcome(lambda: f(arg2=b, arg1=a))
    return res

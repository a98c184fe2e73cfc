"""Small places where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (cntksmall40): a
layer's declared parameter used as a dict key before the layer is applied, ..."""

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

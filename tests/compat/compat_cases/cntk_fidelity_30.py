"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (thirtieth round): ``copy`` and
``pickle`` of layers not applied yet and of axes; the blocks CNTK 2.7 makes of its losses."""

from compat_harness import cntk_case
from compat_cases.cntk_fidelity_23 import _said


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.LSTM", "cntk.layers.Recurrence",
                  "cntk.layers.Embedding", "cntk.layers.Sequential", "cntk.layers.identity",
                  "cntk.layers.Label", "cntk.layers.Dropout", "cntk.axis.Axis"],
           note="copy.deepcopy and pickle.dumps of a layer not applied yet (Dense, LSTM, a "
                "Recurrence, identity, ...) and of an Axis (static, the batch axis, all axes, "
                "a new dynamic one) and of an input's dynamic_axes: CNTK 2.7 raises TypeError "
                "\"can't pickle SwigPyObject objects\" (they wrap C++ objects); copy.copy "
                "gives another object, an Axis equal to the original, a layer not.  Stadyn "
                "deep-copied and pickled the layers and the axes")
def layers__deepcopy_and_pickle_refused(C, r, np):
    import copy
    import pickle
    x = C.input_variable(3, name="x")
    made = [("Dense", lambda: C.layers.Dense(2)), ("LSTM", lambda: C.layers.LSTM(2)),
            ("Recurrence", lambda: C.layers.Recurrence(C.layers.LSTM(2))),
            ("Embedding", lambda: C.layers.Embedding(3)),
            ("Sequential", lambda: C.layers.Sequential([C.layers.Dense(2), C.relu])),
            ("identity", lambda: C.layers.identity), ("Label", lambda: C.layers.Label("l")),
            ("Dropout", lambda: C.layers.Dropout(0.5)), ("Axis(0)", lambda: C.Axis(0)),
            ("batch axis", lambda: C.Axis.default_batch_axis()),
            ("all axes", lambda: C.Axis.all_axes()),
            ("new dynamic axis", lambda: C.Axis.new_unique_dynamic_axis("q")),
            ("dynamic axes", lambda: x.dynamic_axes)]
    res = {}
    for label, make in made:
        o = make()
        res[label + " deepcopy"] = _said(lambda: copy.deepcopy(o))
        res[label + " pickle"] = _said(lambda: pickle.dumps(o))
        c = copy.copy(o)
        res[label + " copy"] = [c is o, c == o]
    d = C.layers.Dense(2, init=0.5)
    c = copy.copy(d)
    res["copied Dense applied"] = c(x).eval({x: np.array([[1.0, 2.0, 3.0]], np.float32)})
    return res

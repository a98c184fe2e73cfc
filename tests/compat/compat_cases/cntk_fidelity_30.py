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


def _kind(v):
    return ("input" if v.is_input else "placeholder" if v.is_placeholder else
            "parameter" if v.is_parameter else "constant" if v.is_constant else "output")


@cntk_case(names=["cntk.sequence.first", "cntk.sequence.last"],
           known={"last float32 block root inputs": "the block root (GatherPacked) shows the "
                                                    "block's two constants among its inputs, "
                                                    "where CNTK 2.7's reads a placeholder and "
                                                    "a PackedIndex (compat/cntk/sequence.py: "
                                                    "Stadyn's one op sequence_last shows the "
                                                    "constants, no ops inside the block)"},
           note="sequence.first and sequence.last are CNTK 2.7's Sequence::Slice block, which "
                "holds two scalar constants, 0 and 1 (float32, listed before the sequence "
                "among the block's inputs, in its walks and constants; a float64 graph's are "
                "float64 once it has run).  Stadyn's block showed the sequence alone")
def sequence__slice_constants(C, r, np):
    r.touch("cntk.sequence.input_variable", "cntk.Function.root_function",
            "cntk.Function.inputs", "cntk.Function.constants", "cntk.Function.eval",
            "cntk.Function.block_root", "cntk.logging.graph.depth_first_search")
    res = {}
    for dt in (np.float32, np.float64):
        s = C.sequence.input_variable(3, name="s", dtype=dt)
        data = [r.randn(2, 3).astype(dt), r.randn(1, 3).astype(dt)]
        for label, fn in (("first", C.sequence.first), ("last", C.sequence.last)):
            title = label + " " + dt.__name__
            z = fn(s)
            root = z.root_function
            res[title + " inputs"] = [[_kind(i), list(i.shape), np.dtype(i.dtype).name]
                                      for i in root.inputs]
            res[title + " constants"] = [[c.value.tolist(), np.dtype(c.dtype).name]
                                         for c in z.constants]
            res[title + " walk"] = [
                getattr(n, "op_name", None) or _kind(n)
                for n in C.logging.graph.depth_first_search(z, lambda n: True, depth=0)]
            res[title + " block root"] = root.block_root.op_name
            res[title + " eval"] = z.eval({s: data})
            res[title + " inputs after a run"] = [[_kind(i), np.dtype(i.dtype).name]
                                                  for i in root.inputs]
    z = C.sequence.last(C.sequence.input_variable(2, name="t"))
    res["last float32 block root inputs"] = [_kind(i) for i in z.root_function.block_root.inputs]
    return res

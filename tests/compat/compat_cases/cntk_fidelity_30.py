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


def _uid_kind(uid):
    return "".join(c for c in uid if not c.isdigit())


_INSIDE = ("the block's inside is the loss's one Stadyn op, shown as the block root's op "
           "(ReduceElements, Minus) over the block's placeholders: CNTK 2.7's holds the ops "
           "Function.cpp builds (ElementTimes of a Minus, ReduceElements LogSum and "
           "TransposeTimes, Hardmax) and the root's output has a uid of its own "
           "(compat/cntk/_ops_losses.py, _loss_block)")


@cntk_case(names=["cntk.losses.squared_error", "cntk.losses.cross_entropy_with_softmax",
                  "cntk.metrics.classification_error", "cntk.losses.binary_cross_entropy"],
           known={"squared_error inside": _INSIDE,
                  "cross_entropy_with_softmax inside": _INSIDE,
                  "cross_entropy_with_softmax axis 0 inside": _INSIDE,
                  "classification_error inside": _INSIDE,
                  "classification_error top 2": "Stadyn's top-N error shows two "
                                                "ClassificationError ops (the count summed "
                                                "over the minibatch) and no Constant N, CNTK "
                                                "2.7's is one op over (prediction, labels, "
                                                "Constant N) (compat/cntk/_ops_losses.py)"},
           note="squared_error, cross_entropy_with_softmax and classification_error (top 1) "
                "are blocks in CNTK 2.7 (Function.cpp: AsBlock of their ops over "
                "placeholders), as binary_cross_entropy: the output's uid is "
                "Block<n>_Output_0, the root is_block, of the loss's op_name, named as the "
                "loss, its block_root the op the loss ends with (ReduceElements, Minus); "
                "classification_error with topN > 1 is one primitive op.  Stadyn's were "
                "primitive ops (SquaredError<n>_Output_0)")
def losses__blocks_and_output_names(C, r, np):
    r.touch("cntk.Function.outputs", "cntk.Function.root_function", "cntk.Function.is_block",
            "cntk.Function.block_root", "cntk.Function.uid", "cntk.Function.op_name",
            "cntk.Function.name", "cntk.Function.inputs", "cntk.Function.eval",
            "cntk.logging.graph.depth_first_search", "cntk.logging.graph.get_node_outputs")
    x, y = C.input_variable(3, name="x"), C.input_variable(3, name="y")
    data = {x: r.rand(2, 3), y: r.onehot(2, 3)}
    res = {}
    for title, make in [
            ("squared_error", lambda: C.squared_error(x, y)),
            ("squared_error named", lambda: C.squared_error(x, y, name="loss")),
            ("cross_entropy_with_softmax", lambda: C.cross_entropy_with_softmax(x, y)),
            ("cross_entropy_with_softmax axis 0",
             lambda: C.cross_entropy_with_softmax(x, y, axis=0, name="ce")),
            ("classification_error", lambda: C.classification_error(x, y)),
            ("classification_error named", lambda: C.classification_error(x, y, name="err")),
            ("binary_cross_entropy", lambda: C.binary_cross_entropy(C.sigmoid(x), y))]:
        z = make()
        root = z.root_function
        res[title] = [z.name, [_uid_kind(o.uid) for o in z.outputs],
                      [o.name for o in z.outputs], root.op_name, root.is_block,
                      _uid_kind(root.uid), root.name,
                      [o.owner.root_function.op_name for o in z.outputs],
                      [_uid_kind(o.uid) for o in C.logging.graph.get_node_outputs(z)]]
        res[title + " block root"] = root.block_root.op_name
        res[title + " walk"] = [
            getattr(n, "op_name", None) or n.name
            for n in C.logging.graph.depth_first_search(z, lambda n: True, depth=0)]
        res[title + " eval"] = z.eval(data)
        if title.endswith("named"):
            continue
        inner = root.block_root
        res[title + " inside"] = [
            _uid_kind(inner.output.uid),
            [getattr(n, "op_name", None) or _uid_kind(n.uid)
             for n in C.logging.graph.depth_first_search(z, lambda n: True, depth=1)]]
    z = C.classification_error(x, y, topN=2)
    res["classification_error top 2"] = [
        z.root_function.op_name, z.root_function.is_block,
        _uid_kind(z.output.uid),
        [getattr(n, "op_name", None) or _uid_kind(n.uid)
         for n in C.logging.graph.depth_first_search(z, lambda n: True, depth=1)]]
    res["classification_error top 2 eval"] = z.eval(data)
    return res


_STEP_KEY = ("Stadyn runs the recurrence as one op: a node of its step (a PastValue of an "
             "LSTM's state, an op of a Python step) is a view no run computes, so a clone "
             "keyed by it raises NotImplementedError (compat/cntk/_function_rebuild.py, "
             "_refuse_view); CNTK 2.7 substitutes it inside the loop.  It was ignored "
             "silently before")


@cntk_case(names=["cntk.Function.clone", "cntk.layers.Recurrence"],
           known={"LSTM PastValue 0": _STEP_KEY, "LSTM PastValue 1": _STEP_KEY,
                  "tanh(x + h) Plus": _STEP_KEY, "tanh(x + h) PastValue": _STEP_KEY},
           note="a node met by the walk (depth 0) inside a recurrence's step given as a clone's "
                "substitution key: CNTK 2.7 substitutes it (the delayed h or c of a "
                "Recurrence(LSTM) replaced by a constant 0.25: the loop reads 0.25 there; the "
                "Plus of tanh(x + h) by sqrt(abs(Plus)): the output is tanh of it over the "
                "original loop); each result is what it computes then, or the error raised")
def clone__substitution_inside_a_recurrence_step(C, r, np):
    r.touch("cntk.sequence.input_variable", "cntk.Function.eval", "cntk.Function.arguments",
            "cntk.Function.clone", "cntk.Function.outputs", "cntk.ops.constant",
            "cntk.ops.sqrt", "cntk.ops.abs", "cntk.ops.tanh", "cntk.layers.LSTM",
            "cntk.logging.graph.depth_first_search")
    s = C.sequence.input_variable(2, name="s")
    data = [r.randn(3, 2), r.randn(2, 2)]
    res = {}

    def outcome(make):
        try:
            c = make()
            return c.eval({c.arguments[0]: data})
        except Exception as exc:  # noqa: BLE001 - the type is what is compared
            return [type(exc).__name__]
    z = C.layers.Recurrence(C.layers.LSTM(2, init=0.5))(s)
    res["LSTM"] = z.eval({s: data})
    past = [n for n in C.logging.graph.depth_first_search(z, lambda n: True, depth=0)
            if getattr(n, "op_name", None) == "PastValue"]
    for k, n in enumerate(past):
        res["LSTM PastValue %d" % k] = outcome(lambda: z.clone(
            C.CloneMethod.share, {n.output: C.constant(np.full(2, 0.25, np.float32))}))
    z = C.layers.Recurrence(lambda h, x: C.tanh(x + h))(s)
    res["tanh(x + h)"] = z.eval({s: data})
    for n in C.logging.graph.depth_first_search(z, lambda n: True, depth=0):
        if getattr(n, "op_name", None) in ("Plus", "PastValue"):
            res["tanh(x + h) " + n.op_name] = outcome(lambda: z.clone(
                C.CloneMethod.share, {n.output: C.sqrt(C.abs(n.output))}))
    return res

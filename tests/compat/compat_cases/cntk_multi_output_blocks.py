"""A block of several outputs (an ``LSTM``'s ``h`` and ``c``) and what CNTK 2.7 counts as a
``Function`` before it is applied (a layer, an untyped ``@C.Function``, a call waiting for
its placeholders' shapes), with the walks of those (``get_node_outputs``, ``plot``)."""

import re

from compat_harness import cntk_case


def _uid_kind(uid):
    """A uid without its numbers (``Block12_Output_0``: ``Block_Output_``)."""
    return "".join(c for c in uid if not c.isdigit())


def _output(o):
    return [o.name, list(o.shape), _uid_kind(o.uid), o.owner.root_function.op_name]


def _block_outputs(C, z):
    """What a Function of a step applied to values shows of its outputs, its root and the
    walks of it."""
    root = z.root_function
    inner = root.block_root
    return {
        "composite": [z.name, z.op_name, z.is_composite, len(z.outputs)],
        "outputs": [_output(o) for o in z.outputs],
        "owners are the root": [o.owner.uid == root.uid for o in z.outputs],
        "outputs' uids": sorted(set(o.uid.rpartition("_Output_")[0] for o in z.outputs)) ==
        [root.uid],
        "root": [root.op_name, root.name, root.is_block, _uid_kind(root.uid),
                 [_output(o) for o in root.outputs],
                 [[i.name, list(i.shape)] for i in root.inputs]],
        "block root": [inner.op_name, _uid_kind(inner.uid),
                       [_uid_kind(o.uid) for o in inner.outputs],
                       [i.owner.op_name for i in inner.inputs]],
        "node outputs": [_output(o) for o in C.logging.graph.get_node_outputs(z)],
        "walk": [getattr(n, "op_name", n.name)
                 for n in C.logging.graph.depth_first_search(z, lambda n: True)],
        "arguments": [a.name for a in z.arguments],
        "parameters": [p.name for p in z.parameters],
        "text": str(z),
        "root text": str(root),
    }


@cntk_case(names=["cntk.layers.LSTM", "cntk.layers.GRU"],
           known={"GRU block root": "a one-output block's root shows the block's output as "
                                    "its own (Block<n>_Output_0), where CNTK 2.7's inner op "
                                    "has an output of its own (Plus<n>_Output_0): Stadyn's "
                                    "block and its root share one Variable "
                                    "(compat/cntk/_function.py, Function.outputs)"},
           note="an LSTM applied to values is one block of two outputs (h, c; Block<n>_Output_0 "
                "and _1, both named as the layer), the owner of each, whose block_root is a "
                "Combine of the cell's ElementTimes and Plus (a projected one's Times and "
                "Plus); the walks meet the block once, get_node_outputs lists both outputs; a "
                "GRU's block has one.  Stadyn gave a Combine of the cell's two ops")
def lstm__block_of_two_outputs(C, r):
    r.touch("cntk.input_variable", "cntk.Function.outputs", "cntk.Function.root_function",
            "cntk.Function.block_root", "cntk.Function.uid", "cntk.Function.op_name",
            "cntk.Function.is_block", "cntk.Function.inputs", "cntk.Function.eval",
            "cntk.Function.name", "cntk.Function.arguments", "cntk.Function.parameters",
            "cntk.logging.graph.get_node_outputs", "cntk.logging.graph.depth_first_search",
            "cntk.logging.graph.find_by_name", "cntk.Function.output")
    h, c = C.input_variable(3, name="h"), C.input_variable(3, name="c")
    c4 = C.input_variable(4, name="c4")
    x = C.input_variable(2, name="x")
    data = {h: r.randn(2, 3), c: r.randn(2, 3), c4: r.randn(2, 4), x: r.randn(2, 2)}
    res = {}
    for title, make, args in [
            ("LSTM named", lambda: C.layers.LSTM(3, init=0.5, name="cell"), (h, c, x)),
            ("projected LSTM", lambda: C.layers.LSTM(3, cell_shape=4, init=0.5), (h, c4, x)),
            ("GRU", lambda: C.layers.GRU(3, init=0.5), (h, x))]:
        z = make()(*args)
        for key, value in _block_outputs(C, z).items():
            res[title + " " + key] = value
        found = C.logging.graph.find_by_name(z, "cell")
        res[title + " found"] = None if found is None else [found.op_name,
                                                            found.uid == z.root_function.uid]
        try:
            z.output
            res[title + " one output"] = True
        except RuntimeError:
            res[title + " one output"] = False
        got = z.eval({a: data[a] for a in args})
        res[title + " eval"] = [got[o] for o in z.outputs] if isinstance(got, dict) else got
    return res


@cntk_case(names=["cntk.layers.LSTM"],
           note="the outputs of an LSTM applied to values are one block's after a clone too "
                "(h and c of Block<n>, the block over the clone's arguments)")
def lstm__block_of_two_outputs_cloned(C, r):
    r.touch("cntk.input_variable", "cntk.Function.clone", "cntk.Function.outputs",
            "cntk.Function.root_function", "cntk.Function.arguments", "cntk.Function.eval",
            "cntk.Function.inputs")
    h, c = C.input_variable(3, name="h"), C.input_variable(3, name="c")
    x = C.input_variable(2, name="x")
    z = C.layers.LSTM(3, init=0.5)(h, c, x * 2.0)
    y = C.input_variable(2, name="y")
    copy = z.clone(C.CloneMethod.share, {x: y})
    root = copy.root_function
    data = {"h": r.randn(2, 3), "c": r.randn(2, 3), "y": r.randn(2, 2)}
    got = copy.eval({a: data[a.name] for a in copy.arguments})
    return {"outputs": [_output(o) for o in copy.outputs],
            "root": [root.op_name, root.is_block, [_uid_kind(o.uid) for o in root.outputs],
                     [i.name for i in root.inputs]],
            "arguments": [a.name for a in copy.arguments],
            "eval": [got[o] for o in copy.outputs]}


@cntk_case(names=["cntk.Function", "cntk.layers.Dense", "cntk.layers.Sequential",
                  "cntk.logging.graph.get_node_outputs", "cntk.logging.graph.plot"],
           note="a layer not applied yet, an untyped @C.Function and a call waiting for its "
                "placeholders' shapes are Functions in CNTK 2.7 (isinstance(f, C.Function); "
                "ResNetBlock is a Python function); get_node_outputs and plot of them (and of a "
                "walk's root) list the functions of their walk (an LSTM's block: two "
                "outputs).  Stadyn said False and raised TypeError")
def function__waiting_functions(C, r):
    r.touch("cntk.placeholder", "cntk.ops.plus", "cntk.ops.relu", "cntk.layers.LSTM",
            "cntk.layers.Recurrence", "cntk.layers.GRU", "cntk.layers.Label",
            "cntk.layers.identity", "cntk.layers.Embedding", "cntk.layers.MaxPooling",
            "cntk.layers.Dropout", "cntk.layers.BatchNormalization", "cntk.layers.ResNetBlock",
            "cntk.Function.root_function", "cntk.logging.graph.depth_first_search")
    p = C.placeholder(name="p")

    def f(a, b):
        return a + b
    f = C.Function(f)
    dense = C.layers.Dense(3, name="d")
    seq = C.layers.Sequential([C.layers.Dense(3), C.relu])
    made = [("untyped Function", f), ("Dense", dense), ("Sequential", seq),
            ("LSTM", C.layers.LSTM(3)), ("Recurrence", C.layers.Recurrence(C.layers.GRU(2))),
            ("Dense on a placeholder", C.layers.Dense(3)(p)), ("plus on a placeholder",
                                                              C.plus(p, 1)),
            ("relu of a layer", C.relu(C.layers.Dense(2))), ("Dense root", dense.root_function),
            ("untyped Function applied", f(p, p)), ("Label", C.layers.Label("l")),
            ("identity", C.layers.identity), ("Embedding", C.layers.Embedding(3)),
            ("MaxPooling", C.layers.MaxPooling((2, 2))), ("Dropout", C.layers.Dropout(0.5)),
            ("BatchNormalization", C.layers.BatchNormalization()),
            ("ResNetBlock", C.layers.ResNetBlock(C.layers.Dense(2)))]
    res = {"isinstance": [[title, isinstance(o, C.Function)] for title, o in made]}
    walked = [("Dense", dense), ("Dense root", dense.root_function), ("Sequential", seq),
              ("Sequential root", seq.root_function),
              ("Dense on a placeholder", C.layers.Dense(3)(p)),
              ("its root", C.layers.Dense(3)(p).root_function), ("untyped Function", f),
              ("plus on a placeholder", C.plus(p, 1)), ("LSTM", C.layers.LSTM(3)),
              ("a walk's root", C.logging.graph.depth_first_search(dense, lambda n: True)[0]),
              ("a Sequential's walk's root",
               C.logging.graph.depth_first_search(seq, lambda n: True)[0])]
    for title, o in walked:
        res[title + " node outputs"] = [_output(v)
                                        for v in C.logging.graph.get_node_outputs(o)]
        res[title + " plot"] = re.sub(r"\d+", "", C.logging.graph.plot(o))
    for title, o in [("plus on a placeholder", C.plus(p, 1)), ("untyped Function", f),
                     ("Dense on a placeholder", C.layers.Dense(3)(p))]:
        res[title + " walk"] = [getattr(n, "op_name", n.name)
                                for n in C.logging.graph.depth_first_search(o, lambda n: True)]
    return res


def _kind(v):
    return ("input" if v.is_input else "placeholder" if v.is_placeholder else
            "parameter" if v.is_parameter else "constant" if v.is_constant else "output")


def _function(n):
    return [n.op_name, n.name, n.is_block,
            [[_kind(i), i.name, list(i.shape),
              i.owner.root_function.op_name if i.is_output else None] for i in n.inputs]]


_FOLD = ("a Fold's walk meets its Sequence::Slice block over the step's output (CNTK 2.7); "
         "Stadyn's Fold shows the slice as the Combine's input but no block of it, so its "
         "walk goes from the Combine to the leaves (compat/cntk/_recurrent_views.py: no StepView "
         "for a Fold)")
_FULL_STATE = ("a Recurrence with return_full_state is in CNTK 2.7 the step's LSTM block itself "
               "(two outputs, over its PastValues); Stadyn's is a Combine of its recurrence "
               "op's two outputs (compat/cntk/_recurrent.py: StatesLayer combines them)")


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.LSTM"],
           known={"Fold walk": _FOLD, "Fold nodes": _FOLD, "full state root": _FULL_STATE,
                  "full state walk": _FULL_STATE, "full state nodes": _FULL_STATE,
                  "full state output owners": _FULL_STATE},
           note="a Recurrence of an LSTM with peepholes, with self-stabilisation, backwards "
                "and named: CNTK 2.7's walk at depth 0 meets the LSTM block of two outputs "
                "over a PastValue (FutureValue) of each and the sequence, whatever the cell "
                "computes inside; a named one's root is a NoOp")
def recurrence__lstm_step_shapes(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.Function.root_function",
            "cntk.Function.outputs", "cntk.Function.eval", "cntk.Function.inputs",
            "cntk.logging.graph.depth_first_search", "cntk.logging.graph.get_node_outputs")
    s = C.sequence.input_variable(2, name="s")
    data = [r.randn(3, 2), r.randn(2, 2)]
    res = {}
    for title, make in [
            ("peepholes", lambda: C.layers.Recurrence(C.layers.LSTM(3, use_peepholes=True,
                                                                    init=0.5))),
            ("stabilized", lambda: C.layers.Recurrence(C.layers.LSTM(
                3, enable_self_stabilization=True, init=0.5))),
            ("backwards", lambda: C.layers.Recurrence(C.layers.LSTM(3, init=0.5),
                                                      go_backwards=True)),
            ("named", lambda: C.layers.Recurrence(C.layers.LSTM(3, init=0.5, name="cell"),
                                                  name="rec")),
            ("Fold", lambda: C.layers.Fold(C.layers.LSTM(3, init=0.5))),
            ("full state", lambda: C.layers.Recurrence(C.layers.LSTM(3, init=0.5),
                                                       return_full_state=True))]:
        z = make()(s)
        res[title + " root"] = _function(z.root_function)
        res[title + " walk"] = [
            _function(n) if type(n).__name__ == "Function" else [_kind(n), n.name,
                                                                 list(n.shape)]
            for n in C.logging.graph.depth_first_search(z, lambda n: True, depth=0)]
        res[title + " nodes"] = [o.owner.op_name for o in C.logging.graph.get_node_outputs(z)]
        res[title + " output owners"] = [o.owner.op_name for o in z.outputs]
        got = z.eval({s: data})
        res[title + " eval"] = [got[o] for o in z.outputs] if isinstance(got, dict) else got
    return res


@cntk_case(names=["cntk.layers.Recurrence"],
           note="a Recurrence of a Python step function: CNTK 2.7's walk at depth 0 goes "
                "through the step's ops over a PastValue (FutureValue backwards) of the state "
                "and the sequence, through a Tuple block of two outputs where the step's graph "
                "meets its arguments in another order than the function takes them (x + h), "
                "a layer the step applies a block; each output's owner the step's last op.  "
                "Stadyn's walk went from the Combine to the leaves")
def recurrence__python_step_views(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.Function.root_function",
            "cntk.Function.outputs", "cntk.Function.eval", "cntk.Function.inputs",
            "cntk.Function.parameters", "cntk.Function.constants", "cntk.ops.tanh",
            "cntk.ops.times", "cntk.ops.plus", "cntk.layers.Dense", "cntk.parameter",
            "cntk.logging.graph.depth_first_search", "cntk.logging.graph.get_node_outputs")
    s = C.sequence.input_variable(2, name="s")
    dense = C.layers.Dense(2, init=0.5)
    H = C.parameter((2, 2), init=0.1, name="H")
    data = [r.randn(3, 2), r.randn(2, 2)]
    res = {}
    for title, make in [
            ("h + x", lambda: C.layers.Recurrence(lambda h, x: h + x)),
            ("x + h", lambda: C.layers.Recurrence(lambda h, x: C.tanh(x + h))),
            ("a Dense inside", lambda: C.layers.Recurrence(
                lambda h, x: dense(x) + C.times(h, H))),
            ("backwards", lambda: C.layers.Recurrence(lambda h, x: C.tanh(x + h),
                                                      go_backwards=True)),
            ("plus", lambda: C.layers.Recurrence(C.plus))]:
        z = make()(s)
        res[title + " walk"] = [
            _function(n) if type(n).__name__ == "Function" else [_kind(n), n.name,
                                                                 list(n.shape)]
            for n in C.logging.graph.depth_first_search(z, lambda n: True, depth=0)]
        res[title + " nodes"] = [o.owner.op_name for o in C.logging.graph.get_node_outputs(z)]
        res[title + " output owners"] = [o.owner.op_name for o in z.outputs]
        res[title + " parameters"] = [p.name for p in z.parameters]
        res[title + " constants"] = [list(c.shape) for c in z.constants]
        res[title + " eval"] = z.eval({s: data})
    return res

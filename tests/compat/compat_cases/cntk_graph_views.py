"""Where ``stadyn.compat.cntk``'s graph views did otherwise than CNTK 2.7's: the root of a
``Sequential`` nested in another (CNTK makes no function of an unnamed one, a ``NoOp`` alias
of a named one's output); the inside of the recurrent step blocks (``LSTM``, ``GRU``,
``RNNStep``) and of a ``Convolution`` block, which Stadyn computes by fused ops."""

from compat_harness import cntk_case
from compat_outcomes import outcome


def _kind(v):
    return ("input" if v.is_input else "placeholder" if v.is_placeholder else
            "parameter" if v.is_parameter else "constant" if v.is_constant else "output")


def _uid_kind(uid):
    """A uid without its numbers (``Block12_Output_0``: ``Block_Output_``)."""
    return "".join(c for c in uid if not c.isdigit())


def _shown_root(f):
    """What a root function shows: its op, name, whether a block, its uid's kind, and each
    input's name, shape, kind, uid kind and the op of the function that made it."""
    return {"op": f.op_name, "name": f.name, "block": f.is_block, "uid": _uid_kind(f.uid),
            "inputs": [[i.name, list(i.shape), _kind(i), _uid_kind(i.uid),
                        i.owner.root_function.op_name if i.is_output else None]
                       for i in f.inputs]}


@cntk_case(names=["cntk.layers.Sequential"],
           note="a Sequential whose last step is a Sequential: CNTK 2.7 makes no function of "
                "an unnamed one (its steps are applied in turn), so the root is the inner "
                "one's last op (ReLU, Tanh) or block (Dense); a named one is an alias of its "
                "steps' output (NoOp, also over an op: Sequential([Dense, relu], name='s') "
                "applied).  Stadyn showed the inner Sequential as a 'Composite' block before "
                "it was applied, and the ReLU itself named 's' once applied")
def sequential__nested_roots(C, r):
    r.touch("cntk.layers.Dense", "cntk.ops.relu", "cntk.ops.tanh", "cntk.input_variable",
            "cntk.Function.op_name", "cntk.Function.inputs", "cntk.Function.name",
            "cntk.Function.is_block", "cntk.Function.uid", "cntk.Function.outputs")
    S, D = C.layers.Sequential, C.layers.Dense
    made = [("[Dense, [Dense, relu]]", lambda: S([D(3), S([D(2), C.relu])])),
            ("[Dense, [Dense, Dense]]", lambda: S([D(3), S([D(2), D(2)])])),
            ("[[Dense]]", lambda: S([S([D(2)])])),
            ("[relu, [relu, tanh]]", lambda: S([C.relu, S([C.relu, C.tanh])])),
            ("[[Dense, [relu]]]", lambda: S([S([D(2), S([C.relu])])])),
            ("[Dense, [[Dense]]]", lambda: S([D(3), S([S([D(2)])])])),
            ("[Dense, [Dense] named]", lambda: S([D(3), S([D(2)], name="inner")])),
            ("[Dense, [Dense, relu] named]", lambda: S([D(3), S([D(2), C.relu], name="s")])),
            ("[Dense, relu] named", lambda: S([D(2), C.relu], name="s")),
            ("[relu] named", lambda: S([C.relu], name="s"))]
    res = {}
    for title, make in made:
        m = make()          # (held: CNTK 2.7's inner functions expire with their layer)
        res[title] = outcome(lambda: _shown_root(m.root_function))
        z = make()(C.input_variable(4, name="x"))
        res[title + ", applied"] = outcome(lambda: [_shown_root(z.root_function), z.name,
                                                    str(z), [o.name for o in z.outputs]])
    return res


def _leaf(v):
    """A leaf's kind, an input and a block's placeholder both as an argument (Stadyn's blocks
    read their actual arguments inside)."""
    kind = _kind(v)
    return "argument" if kind in ("input", "placeholder") else kind


def _function(n):
    """A function by its op, name, whether a block, uid kind and its inputs' kinds, names,
    shapes (and the op of the function that made each output among them)."""
    return [n.op_name, n.name, n.is_block, _uid_kind(n.uid),
            [[_leaf(i), i.name, list(i.shape),
              i.owner.root_function.op_name if i.is_output else None] for i in n.inputs]]


def _walked(C, f):
    """The functions and leaves CNTK's depth-first search meets through every block."""
    return [_function(n) if type(n).__name__ == "Function" else
            [_leaf(n), n.name, list(n.shape)]
            for n in C.logging.graph.depth_first_search(f, lambda n: True, depth=-1)]


@cntk_case(names=["cntk.layers.Convolution"],
           note="a Convolution block's inside: CNTK 2.7 shows Plus(Convolution(W, x), b) "
                "(ReLU over it with an activation; Convolution(W, x) alone without a bias), "
                "b of shape (maps, 1, 1); Stadyn computes one convolution with its bias and "
                "showed Convolution(x, W, Reshape(b))")
def convolution__block_inside(C, r):
    r.touch("cntk.input_variable", "cntk.Function.root_function", "cntk.Function.op_name",
            "cntk.Function.inputs", "cntk.Function.is_block", "cntk.Function.uid",
            "cntk.Function.eval", "cntk.ops.relu", "cntk.logging.graph.depth_first_search")
    img = C.input_variable((1, 4, 4), name="img")
    data = r.randn(2, 1, 4, 4)
    res = {}
    for title, layer in [("bias", lambda: C.layers.Convolution((3, 3), 2, init=0.5)),
                         ("bias, relu", lambda: C.layers.Convolution(
                             (3, 3), 2, activation=C.relu, init=0.5, init_bias=-1.0)),
                         ("no bias", lambda: C.layers.Convolution((2, 2), 3, bias=False,
                                                                  init=0.5))]:
        z = layer()(img)
        res[title + " root"] = _function(z.root_function.block_root)
        res[title + " walked"] = _walked(C, z)
        res[title + " eval"] = z.eval({img: data})
    return res


@cntk_case(names=["cntk.layers.LSTM", "cntk.layers.GRU", "cntk.layers.RNNStep"],
           note="a recurrent step applied to values: inside its block CNTK 2.7 shows "
                "StableSigmoid, ElementTimes, Plus(b, Times(x, W)) (LSTM, GRU), the GRU's "
                "Minus(1, z) over a Constant and ElementTimes(h, r), the RNNStep's "
                "Plus(Plus(Times(x, W), Times(h, H)), b); Stadyn showed its own ops (Sigmoid, "
                "RSubScalar, uids Mul<n>, Add<n>), Plus(Times(x, W), b), and the RNNStep's bias "
                "added to x W.  'LSTM inside' walks a combine of the inputs of the block_root "
                "where there is one (CNTK), of the root's where there is none (Stadyn)")
def recurrent_steps__block_inside(C, r):
    r.touch("cntk.input_variable", "cntk.Function.root_function", "cntk.Function.op_name",
            "cntk.Function.inputs", "cntk.Function.is_block", "cntk.Function.uid",
            "cntk.Function.eval", "cntk.logging.graph.depth_first_search")
    h, c = C.input_variable(3, name="h"), C.input_variable(3, name="c")
    x = C.input_variable(2, name="x")
    data = {h: r.randn(2, 3), c: r.randn(2, 3), x: r.randn(2, 2)}
    res = {}
    for title, make, args in [("LSTM", lambda: C.layers.LSTM(3, init=0.5), (h, c, x)),
                              ("GRU", lambda: C.layers.GRU(3, init=0.5), (h, x)),
                              ("RNNStep", lambda: C.layers.RNNStep(3, init=0.5), (h, x))]:
        z = make()(*args)
        root = z.root_function
        res[title + " root"] = _function(root)
        res[title + " walked"] = _walked(C, z)
        inner = root.block_root if root.is_block else root
        if title == "LSTM":         # (the Combine inside CNTK's block, Stadyn's root: a new
            inner = C.combine(list(inner.inputs))     # one over the same outputs for both)
        res[title + " inside"] = _walked(C, inner)
        got = z.eval({a: data[a] for a in args})
        res[title + " eval"] = [got[o] for o in z.outputs] if isinstance(got, dict) else got
    return res


def _walked_at(C, f, depth):
    return [_function(n) if type(n).__name__ == "Function" else
            [_leaf(n), n.name, list(n.shape)]
            for n in C.logging.graph.depth_first_search(f, lambda n: True, depth=depth)]


@cntk_case(names=["cntk.layers.Recurrence"],
           note="a Recurrence of a GRU or RNNStep (Stadyn runs it as one fused op): CNTK 2.7's "
                "root is a Combine (uid Combine<n>) of the step block's output; the block reads "
                "a PastValue (FutureValue backwards) of its own output and the initial state's "
                "Constant, and the sequence.  Stadyn showed the Combine twice (uid Block<n>) "
                "over one node of its own (CntkGruSequence at depth 1)")
def recurrence__fused_step_graph(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.layers.GRU", "cntk.layers.RNNStep",
            "cntk.Function.root_function", "cntk.Function.op_name", "cntk.Function.inputs",
            "cntk.Function.uid", "cntk.Function.eval", "cntk.logging.graph.depth_first_search",
            "cntk.logging.graph.get_node_outputs", "cntk.Function.parameters")
    s = C.sequence.input_variable(2, name="s")
    data = [r.randn(3, 2), r.randn(2, 2)]
    res = {}
    for title, make in [
            ("GRU", lambda: C.layers.Recurrence(C.layers.GRU(3, init=0.5))),
            ("GRU backwards", lambda: C.layers.Recurrence(C.layers.GRU(3, init=0.5),
                                                          go_backwards=True)),
            ("RNNStep", lambda: C.layers.Recurrence(C.layers.RNNStep(3, activation=C.tanh,
                                                                     init=0.5)))]:
        z = make()(s)
        res[title + " root"] = _function(z.root_function)
        res[title + " walked"] = _walked_at(C, z, 0)
        res[title + " nodes"] = [o.owner.op_name
                                 for o in C.logging.graph.get_node_outputs(z)]
        res[title + " parameters"] = [[p.name, list(p.shape)] for p in z.parameters]
        res[title + " eval"] = z.eval({s: data})
    return res


@cntk_case(names=["cntk.layers.Recurrence"],
           note="a Recurrence of an LSTM (also projected: cell_shape) or of a Python step "
                "function: CNTK 2.7's root Combine reads the step's output; at depth 0 the "
                "walk meets the LSTM block, of two outputs, over two PastValues of them and "
                "the sequence (a Python step's ops over a Tuple block of the PastValue and "
                "the sequence); each output's owner is the step's block or op.  Stadyn showed "
                "one node of its own under the Combine, owning the output")
def recurrence__two_state_step_graph(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.layers.LSTM", "cntk.Function.root_function",
            "cntk.Function.op_name", "cntk.Function.inputs", "cntk.Function.outputs",
            "cntk.Function.eval", "cntk.logging.graph.depth_first_search",
            "cntk.logging.graph.get_node_outputs", "cntk.Function.parameters")
    s = C.sequence.input_variable(2, name="s")
    W = C.parameter((2, 3), init=0.5, name="W")
    cell = C.layers.LSTM(3, init=0.5)
    data = [r.randn(3, 2), r.randn(2, 2)]

    def step(h, x):
        return C.tanh(C.times(x, W) + h)

    def step_over_lstm(h, c, x):
        return cell(h, c, x * 2.0)

    res = {}
    for title, make in [
            ("LSTM", lambda: C.layers.Recurrence(C.layers.LSTM(3, init=0.5))),
            ("projected LSTM", lambda: C.layers.Recurrence(C.layers.LSTM(3, cell_shape=4,
                                                                         init=0.5))),
            ("Python step", lambda: C.layers.Recurrence(step)),
            ("Python step over an LSTM", lambda: C.layers.Recurrence(step_over_lstm))]:
        z = make()(s)
        res[title + " root"] = _function(z.root_function)
        res[title + " walked"] = _walked_at(C, z, 0)
        res[title + " nodes"] = [o.owner.op_name
                                 for o in C.logging.graph.get_node_outputs(z)]
        res[title + " output owners"] = [o.owner.op_name for o in z.outputs]
        res[title + " parameters"] = sorted([p.name, list(p.shape)] for p in z.parameters)
        res[title + " eval"] = z.eval({s: data})
    return res

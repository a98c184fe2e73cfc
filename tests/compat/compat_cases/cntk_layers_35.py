"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 with layers not applied yet and
their recurrences (cntklayers35): an Elman step ``Recurrence(lambda h, x: d(splice(h, x)))``
whose state is the shape of the layer ``d`` it applies, ``clone`` of a layer not applied yet."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _values(np, shape, base):
    """Fixed parameter values (no random draw): ``base`` plus a ramp, of ``shape``."""
    n = int(np.prod(shape))
    return (base + np.arange(n, dtype=np.float32).reshape(shape) / (2.0 * n) - 0.25) \
        .astype(np.float32)


def _elman(C, r, np, make):
    """Results of the recurrent model ``make(x)`` over two sequences of dim 4: its parameters'
    names and shapes, its output per sequence (eval), and the gradients of a weighted sum of it
    w.r.t. the input and every parameter, each parameter set to fixed values first (by its
    shape, so that both sides set the same one)."""
    x = C.sequence.input_variable(4, name="x", needs_gradient=True)
    y = make(x)
    params = list(y.parameters)
    for p in params:
        p.value = _values(np, p.shape, 0.05 * sum(p.shape))
    seqs = [r.randn(3, 4), r.randn(2, 4)]
    res = {"parameters": sorted([p.name, list(p.shape)] for p in params),
           "shape": list(y.shape)}
    for k, v in enumerate(y.eval({x: seqs})):
        res["eval %d" % k] = v
    # the gradients of sum over steps of y . w (w fixed) w.r.t. the input and the parameters
    w = C.constant(np.linspace(-1, 1, y.shape[0]).astype(np.float32))
    loss = C.sequence.reduce_sum(C.reduce_sum(C.element_times(y, w)))
    grads = loss.grad({x: seqs}, wrt=[x] + params)
    for k, g in enumerate(grads[x]):
        res["grad x %d" % k] = g
    for p in params:
        res["grad %s %s" % (p.name, "x".join(str(d) for d in p.shape))] = grads[p]
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.ops.splice"],
           note="an Elman step, lambda h, x: d(C.splice(h, x)) with d = Dense(3) made outside "
                "it: CNTK 2.7 infers the state's shape through the loop as d's output, (3,), "
                "and d's weight as (7, 3); Stadyn recorded the step on a state shaped like the "
                "input step (4,), which built d's weight as (8, 3), then refused the state of "
                "(3,) (StadynError: parameter 'W' has shape (8, 3) but this input needs "
                "(7, 3))")
def elman_recurrence__dense_of_spliced_state(C, r, np):
    d = C.layers.Dense(3)
    return _elman(C, r, np, lambda x: C.layers.Recurrence(lambda h, v: d(C.splice(h, v)))(x))


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.ops.splice",
                  "cntk.ops.tanh"],
           note="the Elman step with d = Dense(3, activation=tanh), run backwards "
                "(go_backwards=True): as CNTK 2.7, state (3,), weight (7, 3)")
def elman_recurrence__tanh_backwards(C, r, np):
    d = C.layers.Dense(3, activation=C.tanh)
    return _elman(C, r, np, lambda x: C.layers.Recurrence(
        lambda h, v: d(C.splice(h, v)), go_backwards=True)(x))


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.layers.Sequential",
                  "cntk.ops.splice"],
           note="the Elman recurrence inside Sequential, before a Dense(2): the model applied "
                "once, as CNTK 2.7 (its step's weight (7, 3), the last Dense's (3, 2))")
def elman_recurrence__in_sequential(C, r, np):
    d = C.layers.Dense(3)
    model = C.layers.Sequential([C.layers.Recurrence(lambda h, v: d(C.splice(h, v))),
                                 C.layers.Dense(2)])
    return _elman(C, r, np, model)


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.layers.Sequential",
                  "cntk.ops.splice", "cntk.ops.tanh"],
           note="the Elman step over a layer already built (d applied to an input of (7,) "
                "first; the recurrence applied a second time), over a Sequential of Dense "
                "layers made outside the step, or a Sequential made inside it of a Dense made "
                "outside: CNTK 2.7 runs each (state (3,)); Stadyn applied a built layer as it "
                "was to the state it guessed (the input step's, (4,)) and a Sequential could "
                "not be copied (SWIG objects refuse deepcopy), so the state's shape was not "
                "found (ShapeError: W has shape (7, 3) but this input needs (8, 3))")
def elman_recurrence__built_and_composite_layers(C, r, np):
    L = C.layers
    res = {}
    d = L.Dense(3)
    d(C.input_variable(7))
    for k, v in _elman(C, r, np, lambda x: L.Recurrence(lambda h, v: d(C.splice(h, v)))(x)) \
            .items():
        res["built before: " + k] = v
    e = L.Dense(3)
    rec = L.Recurrence(lambda h, v: e(C.splice(h, v)))
    rec(C.sequence.input_variable(4))
    for k, v in _elman(C, r, np, rec).items():
        res["applied twice: " + k] = v
    s = L.Sequential([L.Dense(5), L.Dense(3)])
    for k, v in _elman(C, r, np, lambda x: L.Recurrence(lambda h, v: s(C.splice(h, v)))(x)) \
            .items():
        res["Sequential outside: " + k] = v
    f = L.Dense(3)
    for k, v in _elman(C, r, np, lambda x: L.Recurrence(
            lambda h, v: L.Sequential([f, C.tanh])(C.splice(h, v)))(x)).items():
        res["Sequential inside: " + k] = v
    return res


def _described(g):
    """A Function's shape, its arguments' shapes and names, its parameters' names and shapes."""
    return {"shape": list(g.shape),
            "arguments": [[a.name, list(a.shape)] for a in g.arguments],
            "parameters": [[p.name, list(p.shape)] for p in g.parameters]}


@cntk_case(names=["cntk.Function.clone", "cntk.ops.functions.CloneMethod", "cntk.layers.Dense"],
           note="clone of a layer not applied yet: CNTK 2.7 clones the layer's Function over "
                "its placeholder (share: the same parameters, applied later to the clone's "
                "input they take its shape for the layer too; clone: new ones, the layer's "
                "still of unknown shape; freeze: a ValueError, a parameter of unknown shape "
                "has no value to freeze); Stadyn had no clone on a layer not applied yet "
                "(AttributeError)")
def clone__layer_not_applied_yet(C, r, np):
    r.touch("cntk.input_variable", "cntk.Function.eval", "cntk.Function.arguments",
            "cntk.Function.clone", "cntk.Function.parameters", "cntk.Function.shape")
    res = {}
    data = np.array([[1.0, 2.0]], np.float32)
    for method in ["share", "clone"]:
        d = C.layers.Dense(3, init=0.5)
        g = d.clone(getattr(C.CloneMethod, method))
        out = _described(g)
        out["parameters shared"] = [p.uid == q.uid for p, q in zip(g.parameters, d.parameters)]
        x = C.input_variable(2)
        y = g(x)
        out["applied"] = _described(y)
        out["applied eval"] = y.eval({x: data})
        out["layer after"] = [[p.name, list(p.shape)] for p in d.parameters]
        out["layer applied to (5,)"] = _outcome(lambda: list(d(C.input_variable(5)).shape))
        res[method] = out
    res["freeze"] = _outcome(lambda: _described(
        C.layers.Dense(3).clone(C.CloneMethod.freeze)))
    return res


@cntk_case(names=["cntk.Function.clone", "cntk.ops.functions.CloneMethod", "cntk.layers.Dense",
                  "cntk.ops.placeholder"],
           note="clone onto placeholders: an unapplied Dense's placeholder replaced by one of "
                "no shape stays unknown (-2,), by one of (4,) makes its weight (4, 3), shared "
                "with the layer, as CNTK 2.7 (Stadyn had no clone on a layer not applied yet); "
                "a Function of an input of (2,) cloned onto a placeholder of no shape, then "
                "applied to an input of (3,)",
           known={"function": "CNTK 2.7's clone of plus(x, 1) * 2 with x replaced by a "
                  "placeholder of no shape leaves the placeholder and the clone's shape "
                  "unknown, (-2,), until it is bound; Stadyn gives the placeholder the shape "
                  "of the input it replaces, (2,) (_function_rebuild._bound_placeholder: its "
                  "clone builds the graph at once, on shapes, so that it lists the clone's "
                  "parameters and constants, as CNTK 2.7's, transfer_learning_program's "
                  "clone(freeze, {input: placeholder()}))"})
def clone__onto_shapeless_placeholder(C, r, np):
    r.touch("cntk.input_variable", "cntk.Function.eval", "cntk.Function.arguments",
            "cntk.Function.clone", "cntk.Function.parameters", "cntk.Function.shape")
    res = {}
    x = C.input_variable(2, name="x")
    f = C.plus(x, 1) * 2
    g = f.clone(C.CloneMethod.share, {x: C.placeholder()})
    res["function"] = _described(g)
    x3 = C.input_variable(3)
    applied = g(x3)
    res["function applied"] = _described(applied)
    res["function applied eval"] = applied.eval({x3: np.array([[1, 2, 3]], np.float32)})
    d = C.layers.Dense(3, init=0.25)
    h = d.clone(C.CloneMethod.share, {d.arguments[0]: C.placeholder()})
    res["dense"] = _described(h)
    x2 = C.input_variable(2)
    res["dense applied"] = _described(h(x2))
    res["dense applied eval"] = h(x2).eval({x2: np.array([[1, 2]], np.float32)})
    e = C.layers.Dense(3, init=0.25)
    k = e.clone(C.CloneMethod.share, {e.arguments[0]: C.placeholder(4)})
    res["dense onto (4,)"] = _described(k)
    res["dense onto (4,): the layer's"] = [[p.name, list(p.shape)] for p in e.parameters]
    return res


@cntk_case(names=["cntk.Function.clone", "cntk.ops.functions.CloneMethod", "cntk.layers.Dense",
                  "cntk.layers.Sequential", "cntk.Parameter.value"],
           note="clone(clone) of a Sequential not applied yet, then applied: CNTK 2.7 clones "
                "it (new parameters); Stadyn raised TypeError (can't pickle SwigPyObject "
                "objects: its steps refuse a deep copy).  clone(clone) of a Dense whose b was "
                "given a value before the application: CNTK 2.7's clone copies the value; "
                "Stadyn's clone had the initial one (0, silently)")
def clone__sequential_and_set_values(C, r, np):
    r.touch("cntk.input_variable", "cntk.Function.eval", "cntk.Function.parameters",
            "cntk.Function.clone", "cntk.Parameter.value")
    L = C.layers
    res = {}
    data = np.array([[1.0, -2.0, 0.5]], np.float32)
    s = L.Sequential([L.Dense(3, init=0.5), L.Dense(2, init=0.25)])
    x = C.input_variable(3)
    y = s.clone(C.CloneMethod.clone)(x)
    res["Sequential cloned, applied"] = _described(y)
    res["Sequential cloned, eval"] = y.eval({x: data})
    res["Sequential after"] = [[p.name, list(p.shape)] for p in s.parameters]
    for method in ["clone", "share"]:
        d = L.Dense(2, init=0.5)
        d.b.value = np.array([1.0, -3.0], np.float32)
        x = C.input_variable(3)
        res["Dense, b set, %s eval" % method] = \
            d.clone(getattr(C.CloneMethod, method))(x).eval({x: data})
    return res


def _node(n):
    """A walk's node: ``[kind, name]`` (a function by its op), a variable's shape too."""
    if getattr(n, "is_parameter", False) or getattr(n, "is_constant", False) or \
            getattr(n, "is_placeholder", False) or getattr(n, "is_input", False):
        kind = "Parameter" if n.is_parameter else "Constant" if n.is_constant else \
            "Placeholder" if n.is_placeholder else "Input"
        return [kind, n.name, list(n.shape)]
    return ["Function " + n.op_name, n.name]


@cntk_case(names=["cntk.logging.graph.depth_first_search", "cntk.logging.graph.find_all_with_name",
                  "cntk.logging.graph.find_by_name", "cntk.layers.Dense", "cntk.layers.Sequential",
                  "cntk.layers.For"],
           note="walks of layers not applied yet into their blocks (depth 1, 2, -1): CNTK 2.7 "
                "walks a block's placeholder's argument, then its ops (Dense: Plus, Times) "
                "and parameters, of unknown shapes; Stadyn refused any depth but 0 "
                "(ValueError: its blocks hold nothing until it is applied); the layer "
                "walked is applied as before; at depth 0 its root function's shape is (-2,) (it "
                "raised an AttributeError)",
           known={"Dense depth 1 function shapes": "the ops inside the blocks of a layer not "
                  "applied yet have unknown shapes, (-2,), in CNTK 2.7; Stadyn walks those of "
                  "a copy of the layer applied to a stand-in input of (7,) "
                  "(_unapplied_walks), whose Plus and Times have the layer's output shape "
                  "(3,)"})
def unapplied_layer_walks__into_blocks(C, r, np):
    G = C.logging.graph
    L = C.layers
    makers = [("Dense", lambda: L.Dense(3, name="d")),
              ("Dense relu", lambda: L.Dense(3, activation=C.relu, name="d")),
              ("Sequential", lambda: L.Sequential([L.Dense(4, name="a"), L.Dense(3, name="b")],
                                                  name="s")),
              ("For", lambda: L.For(range(2), lambda i: L.Dense(3)))]
    res = {}
    for label, make in makers:
        for depth in [1, 2, -1]:
            key = "%s depth %d" % (label, depth)
            res[key + " search"] = _outcome(lambda: [_node(n) for n in G.depth_first_search(
                make(), lambda n: True, depth=depth)])
            res[key + " W"] = _outcome(lambda: [_node(n) for n in G.find_all_with_name(
                make(), "W", depth=depth)])
            for name in ["b", "a"]:
                res[key + " by name " + name] = _outcome(
                    lambda: _node(G.find_by_name(make(), name, depth=depth)),
                    catch=(ValueError, AttributeError))
    for depth in [0, 1]:
        res["Dense depth %d function shapes" % depth] = [
            list(n.shape) for n in G.depth_first_search(
                L.Dense(3), lambda n: hasattr(n, "op_name"), depth=depth)]
    d = L.Dense(3)
    G.depth_first_search(d, lambda n: True, depth=-1)
    x = C.input_variable(2)
    res["Dense walked, then applied"] = [[p.name, list(p.shape)] for p in d(x).parameters]
    return res


@cntk_case(names=["cntk.layers.For", "cntk.layers.Sequential", "cntk.layers.Dense",
                  "cntk.Function.parameters", "cntk.Parameter.value"],
           note="parameters of For and Sequential layers before they are applied: listed as "
                "CNTK 2.7 lists them (order, names, shapes of -1); a value set on one of a "
                "known shape (b) before the application is the applied parameter's, as "
                "CNTK 2.7's (Stadyn had no setter: AttributeError); one of an axis the input "
                "decides (W) or another shape is refused (RuntimeError, as CNTK 2.7)",
           known={"same objects": "CNTK 2.7's parameters before the application are the "
                  "applied ones (the same uids, their shapes inferred in place); Stadyn's are "
                  "stand-ins (_layers_declared._DeclaredParameter) for the parameters its "
                  "application makes, new objects"})
def for_layers__parameters_before_application(C, r, np):
    r.touch("cntk.input_variable", "cntk.Function.eval", "cntk.Function.parameters",
            "cntk.Parameter.value")
    L = C.layers
    makers = [("For", lambda: L.For(range(3), lambda i: L.Dense(4, init=0.5))),
              ("Sequential of For", lambda: L.Sequential([
                  L.For(range(3), lambda i: L.Dense(4, init=0.5))])),
              ("Sequential, For of lists", lambda: L.Sequential([
                  L.Dense(2, init=0.5),
                  L.For(range(2), lambda i: [L.Dense(4, init=0.5), L.Dense(5, init=0.5)])]))]
    res = {}
    for label, make in makers:
        m = make()
        before = list(m.parameters)
        res[label] = [[p.name, list(p.shape)] for p in before]
        for k, p in enumerate(before):
            if p.name == "b":
                p.value = np.arange(p.shape[0], dtype=np.float32) * 0.1 + k
        x = C.input_variable(2)
        y = m(x)
        res[label + " applied"] = [[p.name, list(p.shape)] for p in y.parameters]
        res[label + " b applied"] = [p.value for p in y.parameters if p.name == "b"]
        res[label + " eval"] = y.eval({x: np.array([[1.0, -2.0]], np.float32)})
        res.setdefault("same objects", {})[label] = [
            p.uid == q.uid for p, q in zip(before, y.parameters)]
    d = L.Dense(3)
    res["W set"] = _outcome(lambda: setattr(d.W, "value", np.ones((2, 3), np.float32)))
    res["b set, another shape"] = _outcome(
        lambda: setattr(d.b, "value", np.ones(4, np.float32)))
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.RecurrenceFrom",
                  "cntk.layers.Dense", "cntk.layers.Label"],
           note="a Python step that makes its layer inside it (lambda h, x: Dense(3)(splice(h, "
                "x))): CNTK 2.7 refuses it as the recurrence is made (TypeError 'Parameter "
                "cannot be created inside Recurrence Python step function.', "
                "sequence.py's _santize_step_function running the step as a @Function body); "
                "Stadyn ran it, a new Dense at each recording of the step.  A step applying a "
                "Label (no parameter) is made")
def elman_recurrence__layer_made_inside_the_step_refused(C, r, np):
    L = C.layers
    raised = functools.partial(_outcome, raised=functools.partial(as_raised, first_line=True))

    def step(h, v):
        return L.Dense(3)(C.splice(h, v))
    res = {"Recurrence, lambda": raised(lambda: L.Recurrence(
               lambda h, v: L.Dense(3)(C.splice(h, v))) and None),
           "Recurrence, def": raised(lambda: L.Recurrence(step) and None),
           "Fold": raised(lambda: L.Fold(step) and None),
           "RecurrenceFrom": raised(lambda: L.RecurrenceFrom(step) and None),
           "Recurrence, Label": raised(lambda: L.Recurrence(
               lambda h, v: L.Label("l")(h) + v) and None)}
    return res

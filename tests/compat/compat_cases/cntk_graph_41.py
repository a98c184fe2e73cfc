"""Where ``stadyn.compat.cntk``'s graph building did otherwise than CNTK 2.7 (cntkgraph41):
user functions in a clone (CNTK makes each again by its ``clone(cloned_inputs)``) and the
shapes of the Values handed to a user function made with ``as_numpy=False``."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _user_functions(C):
    """Three user functions: Scaled (its __init__ takes k after the input, no clone: CNTK's
    default clone, type(self)(*cloned_inputs, name=self.name), cannot make it), Tenfold (a
    clone of ten times its k, named name + '_c') and Numbered (a clone that is no
    UserFunction)."""
    UserFunction = C.ops.functions.UserFunction

    class Scaled(UserFunction):
        def __init__(self, arg, k, name="Scaled"):
            super(Scaled, self).__init__([arg], name=name)
            self.k = k

        def forward(self, argument, device=None, outputs_to_retain=None):
            return None, argument * self.k

        def backward(self, state, root_gradients):
            return root_gradients * self.k

        def infer_outputs(self):
            return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype,
                                      self.inputs[0].dynamic_axes)]

    class Tenfold(Scaled):
        def clone(self, cloned_inputs):
            return Tenfold(cloned_inputs[0], self.k * 10, name=self.name + "_c")

    class Numbered(Scaled):
        def clone(self, cloned_inputs):
            return 5

    class Plain(Scaled):
        def __init__(self, arg, name="Plain"):
            super(Plain, self).__init__(arg, 2.0, name=name)

    return Scaled, Tenfold, Numbered, Plain


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function",
                  "cntk.Function.clone", "cntk.ops.functions.CloneMethod", "cntk.ops.plus",
                  "cntk.Function.eval", "cntk.ops.functions.UserFunction.clone"],
           note="a graph holding a user function cloned (freeze, share, clone; substituted or "
                "not): CNTK 2.7 makes every user function again by its clone(cloned_inputs), "
                "whose default is type(self)(*cloned_inputs, name=self.name) -- a class whose "
                "__init__ takes another argument makes every clone raise RuntimeError ('SWIG "
                "director method error.'), so does a clone that raises; one returning no "
                "UserFunction is RuntimeError ('SWIG director type mismatch'); the clone's "
                "own instance runs (its k, its name). Stadyn kept the same instance in every "
                "clone: no error, the original's k and name")
def user_function__cloned_by_its_clone(C, r, np):
    r.touch("cntk.Function.clone", "cntk.Function.eval",
            "cntk.ops.functions.UserFunction.clone")    # (the graph's clone calls it)
    Scaled, Tenfold, Numbered, Plain = _user_functions(C)
    one = np.ones((1, 3), np.float32)
    res = {}
    for method in ("freeze", "share", "clone"):
        def cloned(make, substituted, method=method):
            def run():
                x = C.input_variable(3)
                g = C.plus(C.user_function(make(x)), 1)
                if not substituted:
                    return list(g.clone(getattr(C.CloneMethod, method)).shape)
                y = C.input_variable(3)
                c = g.clone(getattr(C.CloneMethod, method), {x: y})
                names = sorted(f.name for f in C.logging.graph.depth_first_search(
                    c, lambda f: isinstance(f, C.Function)))
                return {"eval": c.eval({y: one}), "names": names}
            return run
        for substituted in (False, True):
            key = method + (" substituted" if substituted else "")
            res["Scaled " + key] = _outcome(cloned(lambda x: Scaled(x, 3.0, name="s"),
                                                   substituted))
            res["Tenfold " + key] = _outcome(cloned(lambda x: Tenfold(x, 3.0, name="t"),
                                                    substituted))
            res["Numbered " + key] = _outcome(cloned(lambda x: Numbered(x, 3.0),
                                                     substituted))
            res["Plain " + key] = _outcome(cloned(lambda x: Plain(x, name="p"), substituted))
    return res


def _probed(s):
    """What a case compares of an NDShape (CNTK's or Stadyn's): each method's result or
    the type it raised."""
    got = {}
    for key, f in [("dimensions", lambda: list(s.dimensions())), ("rank", lambda: s.rank()),
                   ("total_size", lambda: s.total_size()), ("is_scalar", lambda: s.is_scalar()),
                   ("is_unknown", lambda: s.is_unknown()),
                   ("has_inferred_dimension", lambda: s.has_inferred_dimension()),
                   ("has_free_dimension", lambda: s.has_free_dimension()),
                   ("has_unbound_dimension", lambda: s.has_unbound_dimension()),
                   ("as_string", lambda: s.as_string()), ("[0]", lambda: s[0]),
                   ("[-1]", lambda: s[-1]), ("[-2]", lambda: s[-2]), ("[9]", lambda: s[9]),
                   ("[-9]", lambda: s[-9]), ("sub_shape(1)", lambda: list(s.sub_shape(1))),
                   ("sub_shape(0, 1)", lambda: list(s.sub_shape(0, 1))),
                   ("sub_shape()", lambda: list(s.sub_shape())),
                   ("sub_shape(2, 1)", lambda: list(s.sub_shape(2, 1))),
                   ("list", lambda: list(s)), ("len", lambda: len(s)), ("==", lambda: s == s),
                   ("hash", lambda: type(hash(s)).__name__), ("bool", lambda: bool(s)),
                   ("is a tuple", lambda: isinstance(s, tuple))]:
        got[key] = _outcome(f)
    return got


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function",
                  "cntk.Function.grad"],
           note="the shape() of the Values CNTK 2.7 hands a user function made with "
                "as_numpy=False (forward's argument, backward's root gradients): SWIG's "
                "NDShape, not a tuple -- dimensions() in NumPy's order (the batch axis "
                "first), rank(), total_size(), as_string() '[2 x 3]', indexing from either "
                "end whose index past the rank is RuntimeError (so list() raises), "
                "sub_shape over CNTK's reversed axes (a tuple), no len (TypeError), == "
                "NameError (the binding's NDShape_eq is missing), hashable, truthy; inputs of "
                "(3,) x 2 samples, (1,), (2, 1, 4), () x 3. Stadyn's shape() was the tuple")
def user_function__handed_value_shape(C, r, np):
    r.touch("cntk.Function.grad")
    UserFunction = C.ops.functions.UserFunction
    seen = []

    class Probe(UserFunction):
        def __init__(self, arg, name="Probe"):
            super(Probe, self).__init__([arg], name=name, as_numpy=False)

        def forward(self, argument, device=None, outputs_to_retain=None):
            seen.append(["forward", _probed(argument.shape())])
            return None, argument.deep_clone()

        def backward(self, state, root_gradients):
            seen.append(["backward", _probed(root_gradients.shape())])
            return root_gradients.deep_clone()

        def infer_outputs(self):
            return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype,
                                      self.inputs[0].dynamic_axes)]

    res = {}
    for shape, n in [((3,), 2), ((1,), 1), ((2, 1, 4), 1), ((), 3)]:
        del seen[:]
        x = C.input_variable(shape, needs_gradient=True)
        f = C.user_function(Probe(x))
        grad = f.grad({x: np.ones((n,) + shape, np.float32)})
        res["%s x %d" % (shape, n)] = {"seen": list(seen), "grad": grad}
    return res


@cntk_case(names=["cntk.ops.minus", "cntk.ops.relu", "cntk.ops.plus", "cntk.ops.times",
                  "cntk.ops.splice", "cntk.ops.reduce_sum", "cntk.ops.reshape",
                  "cntk.ops.dropout", "cntk.ops.alias", "cntk.ops.element_times",
                  "cntk.losses.cross_entropy_with_softmax", "cntk.ops.sequence.reduce_sum",
                  "cntk.ops.as_block", "cntk.ops.placeholder", "cntk.ops.input_variable",
                  "cntk.ops.sequence.input_variable", "cntk.ops.parameter",
                  "cntk.ops.constant", "cntk.ops.combine", "cntk.ops.output_variable",
                  "cntk.ops.sum", "cntk.losses.binary_cross_entropy"],
           note="an op's name that is no str: CNTK 2.7 (SWIG, the name a std::wstring) refuses "
                "None with ValueError ('invalid null reference') and anything else -- a "
                "number, bytes, an operand given past the op's own (minus(a, b, a), relu(a, "
                "a)) -- with NotImplementedError ('Wrong number or type of arguments'), a "
                "NumPy str taken; waiting on a placeholder too; the n-ary plus and "
                "element_times take a third operand. Stadyn named the op str(name), or left "
                "it unnamed for None")
def name__that_is_no_str(C, r, np):
    a, b = C.input_variable(3, name="a"), C.input_variable(3, name="b")
    s = C.sequence.input_variable(3)
    res = {}
    made = [
        ("minus(a, b, a)", lambda: C.minus(a, b, a)),
        ("minus name=5", lambda: C.minus(a, b, name=5)),
        ("relu(a, a)", lambda: C.relu(a, a)),
        ("relu name=None", lambda: C.relu(a, name=None)),
        ("relu name=b'r'", lambda: C.relu(a, name=b"r")),
        ("relu name=np.str_", lambda: C.relu(a, name=np.str_("r"))),
        ("plus name=None", lambda: C.plus(a, b, name=None)),
        ("plus(a, b, a)", lambda: C.plus(a, b, a)),
        ("element_times(a, b, 5)", lambda: C.element_times(a, b, 5)),
        ("times name=None", lambda: C.times(a, C.parameter((3, 2)), name=None)),
        ("splice name=None", lambda: C.splice(a, b, name=None)),
        ("splice name=5", lambda: C.splice(a, b, name=5)),
        ("reduce_sum name=None", lambda: C.reduce_sum(a, name=None)),
        ("reduce_sum name=5", lambda: C.reduce_sum(a, name=5)),
        ("reshape name=5", lambda: C.reshape(a, (3,), name=5)),
        ("dropout name=5", lambda: C.dropout(a, 0.5, name=5)),
        ("alias name=5", lambda: C.alias(a, name=5)),
        ("sum name=5", lambda: C.sum([a, b], name=5)),
        ("cross_entropy_with_softmax name=5",
         lambda: C.cross_entropy_with_softmax(a, b, name=5)),
        ("binary_cross_entropy name=None",
         lambda: C.binary_cross_entropy(a, b, name=None)),
        ("sequence.reduce_sum name=5", lambda: C.sequence.reduce_sum(s, name=5)),
        ("relu(placeholder, 5)", lambda: C.relu(C.placeholder(), 5)),
        ("relu(placeholder, None)", lambda: C.relu(C.placeholder(), None)),
        ("as_block instance name 5",
         lambda: (lambda p: C.as_block(C.relu(p), [(p, a)], "op", 5))(C.placeholder())),
        ("as_block op name None",
         lambda: (lambda p: C.as_block(C.relu(p), [(p, a)], None, "n"))(C.placeholder())),
    ]
    for label, value in [("None", None), ("5", 5), ("b'x'", b"x")]:
        made += [
            ("input_variable name=" + label, lambda v=value: C.input_variable(3, name=v)),
            ("sequence.input_variable name=" + label,
             lambda v=value: C.sequence.input_variable(3, name=v)),
            ("placeholder name=" + label, lambda v=value: C.placeholder(name=v)),
            ("parameter name=" + label, lambda v=value: C.parameter(3, name=v)),
            ("constant name=" + label, lambda v=value: C.constant(3, name=v)),
            ("combine name=" + label, lambda v=value: C.combine([a], name=v)),
            ("output_variable name=" + label,
             lambda v=value: C.output_variable((2,), np.float32, [], name=v)),
        ]
    for label, f in made:
        res[label] = _outcome(lambda: f().name)
    return res


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Embedding", "cntk.layers.Sequential",
                  "cntk.layers.Recurrence", "cntk.layers.LSTM", "cntk.layers.GRU",
                  "cntk.layers.Convolution", "cntk.layers.MaxPooling",
                  "cntk.layers.BatchNormalization", "cntk.layers.Dropout", "cntk.layers.For",
                  "cntk.layers.Stabilizer", "cntk.layers.LayerNormalization",
                  "cntk.layers.Fold", "cntk.layers.RecurrenceFrom"],
           note="a layer's name that is no str: CNTK 2.7 names a block layer (Dense, LSTM, "
                "the convolutions, ...) by as_block, which refuses None (ValueError) and "
                "anything else (NotImplementedError), and a composite one (Sequential, For, "
                "Recurrence, RecurrenceFrom, Fold) by alias where a name is given: None taken "
                "as no name, anything else NotImplementedError. Stadyn took every name")
def name__of_a_layer_that_is_no_str(C, r, np):
    L = C.layers
    made = {"Dense": lambda v: L.Dense(3, name=v), "Embedding": lambda v: L.Embedding(3, name=v),
            "Sequential": lambda v: L.Sequential([L.Dense(2)], name=v),
            "Recurrence": lambda v: L.Recurrence(L.LSTM(2), name=v),
            "LSTM": lambda v: L.LSTM(2, name=v),
            "Convolution": lambda v: L.Convolution((3, 3), 2, name=v),
            "MaxPooling": lambda v: L.MaxPooling((2, 2), name=v),
            "BatchNormalization": lambda v: L.BatchNormalization(name=v),
            "Dropout": lambda v: L.Dropout(0.5, name=v),
            "For": lambda v: L.For(range(2), lambda: L.Dense(2), name=v),
            "Stabilizer": lambda v: L.Stabilizer(name=v),
            "LayerNormalization": lambda v: L.LayerNormalization(name=v),
            "Fold": lambda v: L.Fold(L.GRU(2), name=v),
            "RecurrenceFrom": lambda v: L.RecurrenceFrom(L.GRU(2), name=v)}
    res = {}
    for layer, make in made.items():
        for label, value in [("None", None), ("5", 5)]:
            res[layer + " name=" + label] = _outcome(lambda: make(value) is not None)
    return res


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function",
                  "cntk.ops.placeholder", "cntk.Function.replace_placeholders",
                  "cntk.Function.placeholders"],
           note="a user function over a placeholder: CNTK 2.7 builds it at once, on the "
                "placeholder's shape ((2,), its placeholders ['p']; (-2,) for one without a "
                "shape, also under plus) and runs it once the placeholder is bound (a call, "
                "replace_placeholders). Stadyn refused it (ShapelessPlaceholderError: its "
                "placeholders wait for their shapes until bound); its op waits with them now")
def user_function__over_a_placeholder(C, r, np):
    r.touch("cntk.Function.replace_placeholders", "cntk.Function.placeholders")
    UserFunction = C.ops.functions.UserFunction

    class Twice(UserFunction):
        def __init__(self, arg, name="Twice"):
            super(Twice, self).__init__([arg], name=name)

        def forward(self, argument, device=None, outputs_to_retain=None):
            return None, 2 * argument

        def backward(self, state, root_gradients):
            return 2 * root_gradients

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]

    x = C.input_variable(2)
    one = np.arange(4, dtype=np.float32).reshape(2, 2)
    p = C.placeholder(2, name="p")
    f = C.user_function(Twice(p))
    g = C.plus(C.user_function(Twice(C.placeholder(name="r"))), 1)
    res = {"shaped": _outcome(lambda: list(f.shape)),
           "shaped placeholders": _outcome(lambda: [v.name for v in f.placeholders]),
           "shaped called": _outcome(lambda: f(x).eval({x: one})),
           "shapeless": _outcome(lambda: list(C.user_function(Twice(C.placeholder())).shape)),
           "shapeless under plus": _outcome(lambda: list(g.shape))}
    res["replaced"] = _outcome(lambda: g.replace_placeholders({g.placeholders[0]: x}).eval(
        {x: one}))
    return res


@cntk_case(names=["cntk.Axis.new_unique_dynamic_axis", "cntk.axis.Axis",
                  "cntk.ops.sequence.input_variable"],
           note="Axis.new_unique_dynamic_axis(name): CNTK 2.7 (Common.cpp:818) gives name "
                "unless a dynamic axis of that name was made before (by it or Axis(name)), "
                "else name followed by the first number that makes it new: 'g41a', 'g41a1', "
                "'g41a2'; so two such axes differ, and sequences on them are not added "
                "(RuntimeError); a name that is no str is refused (None ValueError, 5 "
                "NotImplementedError), a second argument TypeError. Stadyn gave 'g41a' each "
                "time, the axes equal, and added the sequences (SILENT)")
def axis__new_unique_dynamic_axis(C, r, np):
    r.touch("cntk.Axis.new_unique_dynamic_axis")
    new = C.Axis.new_unique_dynamic_axis
    a, b = new("g41a"), new("g41a")
    C.Axis("g41w")
    res = {"names": [a.name, b.name, new("g41a").name],
           "after Axis(name)": [new("g41w").name, new("g41w").name],
           "a number taken first": [new("g41b1").name, new("g41b").name, new("g41b").name],
           "equal": bool(a == b), "ordered": a.is_ordered,
           "sequence axis": a.is_sequence_axis}
    x = C.sequence.input_variable(2, sequence_axis=a)
    y = C.sequence.input_variable(2, sequence_axis=b)
    res["x + y"] = _outcome(lambda: list((x + y).shape))
    res["x + x"] = _outcome(lambda: list((x + x).shape))
    res["name None"] = _outcome(lambda: new(None).name)
    res["name 5"] = _outcome(lambda: new(5).name)
    res["two arguments"] = _outcome(lambda: new("g41c", False).name)
    return res

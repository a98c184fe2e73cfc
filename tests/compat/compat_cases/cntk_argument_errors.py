"""How CNTK 2.7 maps the values given to a Function's arguments, and its errors, type and
words: ``@C.Function`` of untyped arguments given types (``update_signature``, None leaving an
argument a placeholder) or applied, a typed or composed Function applied, ``eval`` by names,
``declare_args``.  Stadyn's waiting ``@C.Function`` checked its arguments its own way (a
KeyError for a name given twice, a ValueError for a None type)."""

import re

import numpy as np

from compat_harness import cntk_case

# (each type says its dtype: in a run of every case, CNTK 2.7's typing keeps a default dtype
# an earlier case set)
F32 = np.float32


def _said(call):
    """The call's result, or the built-in type of the error it raised and its first line."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - the type and the words are what is compared
        kind = next(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins")
        return [kind, str(exc).splitlines()[0] if str(exc) else ""]


def _untyped(C):
    @C.Function
    def f(a, b):
        return a + b
    return f


def _args(f):
    return [[v.name, list(v.shape), bool(v.is_placeholder)] for v in f.arguments]


@cntk_case(names=["cntk.Function.update_signature", "cntk.Function.argument_map"],
           note="CNTK 2.7's words for types given to an untyped @Function: a name it has not "
                "(TypeError 'got an unexpected keyword argument'), a name given by position "
                "too (SyntaxError 'got multiple values'), too few or many (TypeError 'CNTK "
                "Function expected 2 arguments, got 1'), a type that is no int, tuple or "
                "Tensor[...] (TypeError); None leaves that argument a placeholder, the "
                "Function applies to Variables after.  Stadyn said 'f has no argument named', "
                "a KeyError, a ValueError for None")
def update_signature_of_an_untyped_function(C, r):
    r.touch("cntk.Function.update_signature", "cntk.Function.argument_map",
            "cntk.Function.arguments")
    Tensor, Sequence = C.layers.typing.Tensor, C.layers.typing.Sequence
    res = {}
    for title, args, kwargs in [("3, c=2", (3,), {"c": 2}), ("3, a=2", (3,), {"a": 2}),
                                ("3", (3,), {}), ("3, 2, 1", (3, 2, 1), {}),
                                ("None, 2", (None, 2), {}), ("None, None", (None, None), {}),
                                ("b=2, a=2", (), {"b": 2, "a": 2}), ("'x', 2", ("x", 2), {}),
                                ("[2], 2", ([2], 2), {}), ("2.5, 2", (2.5, 2), {}),
                                ("Tensor[2], (2,)", (Tensor[F32, 2], (2,)), {}),
                                ("Sequence[Tensor[2]] twice",
                                 (Sequence[Tensor[F32, 2]], Sequence[Tensor[F32, 2]]), {})]:
        f = _untyped(C)
        res[title] = _said(lambda: (f.update_signature(*args, **kwargs), _args(f))[1])
    f = _untyped(C)
    f.update_signature(None, 2)
    x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
    res["None, 2: str"] = str(f)
    res["None, 2: applied"] = _args(f(x, y))
    res["None, 2: applied to a wrong type"] = _said(lambda: f(x, C.input_variable(3)))
    f.update_signature(2, None)
    res["None, 2 then 2, None"] = _args(f)
    res["None, 2 then 2, None: eval"] = f(np.ones((1, 2), np.float32),
                                          np.full((1, 2), 2.0, np.float32))
    g = _untyped(C)
    g.update_signature(2, 2)
    res["again, other types"] = _said(lambda: g.update_signature(3, 3))
    p, q = C.placeholder(name="p"), C.placeholder(name="q")
    h = p * q
    res["op on placeholders: None, 2"] = _said(lambda: (h.update_signature(None, 2),
                                                        _args(h))[1])
    res["op on placeholders: None, 2, applied"] = _said(lambda: _args(h(
        C.input_variable(2, name="v"), C.input_variable(2, name="w"))))
    res["op on placeholders: 2, c=2"] = _said(lambda: (C.relu(C.placeholder(name="p"))
                                                       .update_signature(2, c=2)))
    return res


@cntk_case(names=["cntk.Function.__call__", "cntk.Function.declare_args"],
           note="applying a Function (untyped @Function, typed, composed) with a name it has "
                "not, a name given twice, too few or too many values: CNTK 2.7's TypeError / "
                "SyntaxError words; a Variable whose type is not a typed argument's is its "
                "TypeError ('argument a's type Tensor[2] is incompatible with ...'), Stadyn "
                "applied it; declare_args of an untyped @Function (Stadyn had none)")
def applying_functions_to_the_wrong_arguments(C, r):
    r.touch("cntk.Function.__call__", "cntk.Function.declare_args")
    Tensor = C.layers.typing.Tensor
    x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
    one = np.ones((1, 2), np.float32)

    @C.Function.with_signature(Tensor[F32, 2], Tensor[F32, 2])
    def t(a, b):
        return a * b

    z = C.plus(x, y)
    res = {}
    for title, args, kwargs in [("x, c=x", (x,), {"c": x}), ("x, a=x", (x,), {"a": x}),
                                ("x", (x,), {}), ("x, y, x", (x, y, x), {}),
                                ("b=x, a=y", (), {"b": x, "a": y})]:
        res["untyped " + title] = _said(lambda: _args(_untyped(C)(*args, **kwargs)))
        res["typed " + title] = _said(lambda: _args(t(*args, **kwargs)))
    for title, args, kwargs in [("x, q=x", (x,), {"q": x}), ("x, x=y", (x,), {"x": y}),
                                ("one", (one,), {}), ("one, y=one, x=one", (one,),
                                                      {"y": one, "x": one})]:
        res["composed " + title] = _said(lambda: np.asarray(z(*args, **kwargs)).tolist()
                                         if not hasattr(z(*args, **kwargs), "arguments")
                                         else _args(z(*args, **kwargs)))
    res["typed on Tensor[3]"] = _said(lambda: t(C.input_variable(3), y).shape)
    res["typed on a sequence"] = _said(lambda: t(C.sequence.input_variable(2), y).shape)
    res["typed on a placeholder"] = _said(lambda: t(C.placeholder(), y).shape)
    res["typed on Tensor[3, 2]"] = _said(lambda: list(t(C.input_variable((3, 2)), y).shape))
    res["typed on a Variable and data"] = _said(lambda: t(x, one))
    typing = C.layers.typing

    @C.Function.with_signature(typing.SequenceOver[C.Axis("ax")][Tensor[F32, 2]])
    def on_ax(a):
        return a * 2

    @C.Function.with_signature(typing.SparseTensor[F32, 2])
    def sparse(a):
        return a * 2

    @C.Function.with_signature(Tensor[np.float64, 2])
    def wide(a):
        return a * 2
    res["named axis on the default one"] = _said(lambda: list(on_ax(
        C.sequence.input_variable(2)).shape))
    res["named axis on its own"] = _said(lambda: list(on_ax(
        C.sequence.input_variable(2, sequence_axis=C.Axis("ax"))).shape))
    res["sparse on dense"] = _said(lambda: list(sparse(C.input_variable(2)).shape))
    res["sparse on sparse without a batch axis"] = _said(lambda: list(sparse(
        C.input_variable(2, dynamic_axes=[], is_sparse=True)).shape))
    res["float64 on float32"] = _said(lambda: list(wide(C.input_variable(2)).shape))
    p1, p2 = C.placeholder(name="p1"), C.placeholder(name="p2")
    part = C.layers.Dense(2, init=1.0)(p1) + p2
    part.replace_placeholders({p1: C.input_variable(3, name="x3")})   # (p2 waits)
    res["part built: arguments"] = _args(part)
    res["part built: the waiting one"] = _said(lambda: _args(part(y)))
    res["part built: both"] = _said(lambda: _args(part(C.input_variable(3, name="u"), y)))
    for title, types in [("2", (2,)), ("2, 2", (2, 2)), ("2, 2, 2", (2, 2, 2))]:
        f = _untyped(C)
        res["declare_args " + title] = _said(
            lambda: (f.declare_args(*types), [list(v.shape) for v in f.arguments])[1])
    return res


@cntk_case(names=["cntk.Function.eval"],
           note="eval given a dict by argument names: a name no argument has, and one two "
                "arguments have, are CNTK 2.7's ValueErrors (its words name the arguments); "
                "data not in a dict for a Function of two arguments too")
def eval_by_names_it_does_not_have(C, r):
    r.touch("cntk.Function.eval")
    x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
    z = C.plus(x, y)
    data = r.randn(1, 2).astype(np.float32)
    twice = C.input_variable(2, name="x") * C.input_variable(2, name="x")
    return {"by names": z.eval({"x": data, "y": data}),
            "a name it has not": _said(lambda: z.eval({"x": data, "y": data, "q": data})),
            "a name two arguments have": _said(lambda: twice.eval({"x": data})),
            "data, two arguments": _said(lambda: z.eval(data))}


@cntk_case(names=["cntk.Function.__call__"],
           note="a Function applied to Variables checks every argument that is no placeholder "
                "(an input_variable's too, not only one given its type), as CNTK 2.7's "
                "_replace_args_type_check: another shape, dtype, sparsity, a sequence for a "
                "non-sequence or the other way, a placeholder of unknown shape are its "
                "TypeError; more leading axes and no dynamic axes are taken.  Stadyn checked "
                "only the arguments given types and applied the others")
def plain_input_arguments_type_checked(C, r):
    r.touch("cntk.Function.__call__", "cntk.input_variable", "cntk.sequence.input_variable")
    f = C.plus(C.input_variable(2, name="x2"), 1)
    g = C.plus(C.sequence.input_variable(2, name="s"), 1)
    given = {"Tensor[3]": (f, lambda: C.input_variable(3)),
             "float64": (f, lambda: C.input_variable(2, dtype=np.float64)),
             "a sequence": (f, lambda: C.sequence.input_variable(2)),
             "sparse": (f, lambda: C.input_variable(2, is_sparse=True)),
             "Tensor[1, 2]": (f, lambda: C.input_variable((1, 2))),
             "a placeholder": (f, lambda: C.placeholder()),
             "no dynamic axes": (f, lambda: C.input_variable(2, dynamic_axes=[])),
             "times of 2": (f, lambda: C.times(C.input_variable(3), C.parameter((3, 2)))),
             "times of 4": (f, lambda: C.times(C.input_variable(3), C.parameter((3, 4)))),
             "sequence given a non-sequence": (g, lambda: C.input_variable(2)),
             "sequence given Sequence[Tensor[3]]": (g, lambda: C.sequence.input_variable(3))}
    return {title: _said(lambda: [list(z.shape) for z in [fn(make())]][0])
            for title, (fn, make) in given.items()}


@cntk_case(names=["cntk.Function.update_signature", "cntk.Function.replace_placeholders"],
           note="an untyped @Function given a sequence and a value without one (update_"
                "signature) is CNTK 2.7's RuntimeError 'Operation 'Plus': Operand ... has "
                "dynamic axes, that do not match' (its ops were made over placeholders, "
                "reconciling nothing; Stadyn broadcast the value over the sequence); "
                "sequence.broadcast_as makes it one.  Typing inputs typed already names "
                "one of them (which one is CNTK's hash map's order: masked)")
def typing_a_sequence_and_a_batch_refused(C, r):
    r.touch("cntk.Function.update_signature", "cntk.Function.replace_placeholders",
            "cntk.sequence.broadcast_as")
    Tensor, Sequence = C.layers.typing.Tensor, C.layers.typing.Sequence
    seq = Sequence[Tensor[F32, 2]]

    def untyped(op):
        @C.Function
        def f(a, b):
            return op(a, b)
        return f

    def typed(op, *types):
        f = untyped(op)
        f.update_signature(*types)
        return str(f)
    res = {"a + b, sequence first": _said(lambda: typed(lambda a, b: a + b, seq, 2)),
           "a + b, sequence second": _said(lambda: typed(lambda a, b: a + b, 2, seq)),
           "a * b": _said(lambda: typed(lambda a, b: a * b, seq, 2)),
           "relu(a) - b": _said(lambda: typed(lambda a, b: C.relu(a) - b, seq, 2)),
           "broadcast_as": _said(lambda: typed(
               lambda a, b: a + C.sequence.broadcast_as(b, a), seq, 2))}
    for count in (2, 3):
        xs = [C.input_variable(2, name="v%d" % k) for k in range(count)]
        z = xs[0]
        for x in xs[1:]:
            z = z + x
        # (which of the inputs CNTK names depends on its hash map's order, which moves with
        # the process's uids: a full regeneration named v1 where one of this case alone names
        # v2; the input's number is masked, the error and the kind of operand it names kept)
        said = _named(_said(lambda: z.update_signature(*([2] * count))))
        res["typed again, %d" % count] = [said[0], re.sub(r"'v\d'", "'v#'", said[1])]
    f = untyped(lambda a, b: a + b)
    f.update_signature(2, 2)
    res["@Function typed again"] = _named(_said(lambda: f.update_signature(2, 2)))
    return res


def _named(said):
    """The error's type and the placeholder it names (the Function's uids, counted per
    process, left out)."""
    return [said[0], said[1].split(" specified for replacement")[0]]

"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (Functions and layers, ninth
round): a layer not applied yet as a Function (its declared parameters, inputs, root and
op name)."""

import re

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import builtin_type, outcome


def _reason(exc):
    """What a refusal is compared by: its built-in type and the first line of CNTK's reason."""
    return ["raises " + builtin_type(exc), str(exc).split("\n")[0]]


def _listed(vs):
    """Variables as ``[name, shape, kind]`` (their uids are numbered differently)."""
    out = []
    for v in vs:
        kind = ("placeholder" if v.is_placeholder else "parameter" if v.is_parameter else
                "constant" if v.is_constant else "output" if v.is_output else "input")
        out.append([v.name, list(v.shape), kind])
    return out


def _numbered(text):
    """``text`` with CNTK's numbered uids (``Plus184_Output_0``) unnumbered."""
    return re.sub(r"([A-Za-z:]+)\d+(_Output_\d+)", r"\1#\2", text)


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Embedding", "cntk.layers.Sequential",
                  "cntk.Function.parameters", "cntk.Function.inputs",
                  "cntk.Function.root_function", "cntk.Function.op_name"],
           note="CNTK 2.7 makes a layer a Function over placeholders when it is made: before "
                "it is applied its parameters are listed with -1 for each axis the input "
                "decides (Dense(3): W (-1, 3), b (3,)), its inputs are those then its "
                "placeholder, its op_name is CompositeFunctionOpName, its root_function the "
                "block of its kind (NoOp for a named Sequential), a named layer's output is "
                "named so; Stadyn listed no parameters and had no inputs or root_function")
def layers__unapplied_as_functions(C, r):
    r.touch("cntk.Function.parameters", "cntk.Function.inputs", "cntk.Function.root_function",
            "cntk.Function.op_name", "cntk.Function.output", "cntk.Function.name",
            "cntk.Function.is_block", "cntk.layers.Label", "cntk.layers.Activation",
            "cntk.layers.MaxPooling", "cntk.layers.Dropout")
    made = [
        ("Dense", lambda: C.layers.Dense(3)),
        ("Dense named", lambda: C.layers.Dense(3, name="fc")),
        ("Dense no bias, input_rank 2", lambda: C.layers.Dense((3, 2), bias=False,
                                                               input_rank=2)),
        ("Embedding", lambda: C.layers.Embedding(5)),
        ("Embedding of weights", lambda: C.layers.Embedding(
            weights=np.ones((4, 2), np.float32))),
        ("Activation", lambda: C.layers.Activation(C.relu)),
        ("MaxPooling", lambda: C.layers.MaxPooling((2, 2))),
        ("Dropout", lambda: C.layers.Dropout(0.5)),
        ("Label", lambda: C.layers.Label("lab")),
        ("Sequential", lambda: C.layers.Sequential([C.layers.Dense(4), C.layers.Dense(2)])),
        ("Sequential named", lambda: C.layers.Sequential(
            [C.layers.Dense(4), C.layers.Dense(2)], name="s")),
        ("Sequential of one", lambda: C.layers.Sequential([C.layers.Dense(2)])),
        ("Sequential with an op", lambda: C.layers.Sequential(
            [C.layers.Dense(4), C.relu, C.layers.Dense(2)])),
    ]
    res = {}
    for label, make in made:
        d = make()
        rf = d.root_function
        res[label] = {
            "parameters": _listed(d.parameters),
            "dtypes": [np.dtype(p.dtype).name for p in d.parameters],
            "inputs": _listed(d.inputs),
            "op_name": d.op_name, "name": d.name, "output name": d.output.name,
            "root": [rf.op_name, rf.name, rf.is_block, rf.is_composite],
            "root inputs": _listed(rf.inputs),
        }
    # applied afterwards: the parameters are those of the inferred shapes
    d = C.layers.Dense(3, name="fc")
    before = _listed(d.parameters)
    z = d(C.input_variable(5, name="x"))
    res["applied"] = [before, _listed(d.parameters), _listed(z.parameters), z.op_name,
                      z.root_function.op_name]
    return res


@cntk_case(names=["cntk.placeholder", "cntk.combine", "cntk.Function.root_function"],
           note="CNTK 2.7's repr of a Function is its C++ AsString: 'Composite(Plus): "
                "Input('x', [#], [3]) -> Output('Plus5_Output_0', [#], [3])' ('<op>: ...' for "
                "a primitive root), its str the typed form 'Plus(x: Tensor[3]) -> Tensor[3]'; "
                "Stadyn's repr was its str (uid numbers are left out of the comparison)")
def function__repr_and_str(C, r):
    r.touch("cntk.Function.root_function", "cntk.combine", "cntk.layers.Dense",
            "cntk.sequence.input_variable")
    x = C.input_variable(3, name="x")
    s = C.sequence.input_variable(2, name="s")
    w = C.parameter((3,), init=1.0, name="w")
    p = C.placeholder(name="p")
    made = [
        ("relu + x", lambda: C.relu(x) + x),
        ("named relu", lambda: C.relu(x, name="r")),
        ("root of named relu", lambda: C.relu(x, name="r").root_function),
        ("Dense applied", lambda: C.layers.Dense(2, name="d")(x)),
        ("combine", lambda: C.combine([C.relu(x), C.sigmoid(x)])),
        ("sequence * 2", lambda: s * 2),
        ("parameter * x", lambda: w * x),
        ("placeholder + 1", lambda: p + 1),
        ("named on a placeholder", lambda: C.plus(p, 1, name="f")),
        ("Dense on a placeholder", lambda: C.layers.Dense(2)(p)),
        ("times of two inputs", lambda: C.times(x, C.input_variable((3, 2), name="y"))),
    ]
    res = {}
    for label, make in made:
        f = make()
        res[label] = [_numbered(repr(f)), str(f)]
    return res


@cntk_case(names=["cntk.Function", "cntk.parameter", "cntk.layers.identity"],
           note="CNTK 2.7 runs a @Function body with parameters refused (TypeError "
                "'parameters cannot be created inside a @Function def': C.parameter, "
                "C.Parameter, and the layers that make parameters when made, Dense, "
                "LayerNormalization, Convolution, LSTM; a layer made outside may be applied "
                "inside), and C.layers.identity is a Function, Combine over a placeholder "
                "'keep'; Stadyn made the parameters and its identity was a Python function")
def function__parameters_refused_in_its_body_and_identity(C, r):
    r.touch("cntk.Parameter", "cntk.layers.Dense", "cntk.layers.LayerNormalization",
            "cntk.layers.Convolution", "cntk.layers.LSTM", "cntk.layers.Activation",
            "cntk.layers.Embedding", "cntk.Function.with_signature", "cntk.combine")

    def inside(make):
        def made():
            @C.Function
            def f(a):
                return make(a)
            return str(f)
        return outcome(made, raised=_reason)

    outside = C.layers.Dense(2)
    made = [
        ("parameter", lambda a: a * C.parameter((3,), init=1)),
        ("Parameter", lambda a: a * C.Parameter((3,), init=1)),
        ("constant", lambda a: a * C.constant(np.ones(3, np.float32))),
        ("Dense", lambda a: C.layers.Dense(2)(a)),
        ("Activation", lambda a: C.layers.Activation(C.relu)(a)),
        ("Dropout", lambda a: C.layers.Dropout(0.5)(a)),
        ("Embedding of weights", lambda a: C.layers.Embedding(
            weights=np.ones((3, 2), np.float32))(a)),
        ("LayerNormalization", lambda a: C.layers.LayerNormalization()(a)),
        ("Convolution", lambda a: C.layers.Convolution((3,), 2)(a)),
        ("Recurrence of an LSTM", lambda a: C.layers.Recurrence(C.layers.LSTM(2))(a)),
        ("Dense made outside", lambda a: outside(a)),
    ]
    res = {label: inside(make) for label, make in made}

    def typed():
        @C.Function.with_signature(C.layers.Tensor[3])
        def g(a):
            return a * C.parameter((3,), init=1)
        return str(g)
    res["typed"] = outcome(typed, raised=_reason)
    res["after"] = list(C.parameter((2,), init=1).shape)    # (refused inside only)
    i = C.layers.identity
    x = C.input_variable(3, name="x")
    y = i(x)
    res["identity"] = [str(i), i.op_name, i.is_composite, [a.name for a in i.arguments],
                       list(i.shape), str(y), y.root_function.op_name,
                       y.eval({x: np.arange(3, dtype=np.float32).reshape(1, 3)})]
    res["Dense with identity"] = str(C.layers.Dense(2, activation=C.layers.identity)(x))
    return res


# (label, table shape, indices shape, axis)
_GATHERS = [("1", (4, 3), (2,), 1), ("1 of rank 2, 2-d indices", (4, 3), (2, 5), 1),
            ("2 of rank 3, 2-d indices", (2, 4, 3), (2, 5), 2),
            ("-1 of rank 4", (3, 4, 2, 3), (2, 3), -1), ("3 of rank 4", (3, 4, 2, 3), (2, 3), 3),
            ("-3 of rank 3 (the first)", (2, 4, 3), (2, 5), -3),
            ("1 of rank 3, 3-d indices", (2, 4, 3), (2, 3, 2), 1),
            ("Axis(1)", (2, 4, 3), (3,), "A1"), ("2 of rank 3, 1-d indices", (2, 4, 3), (5,), 2)]


@cntk_case(names=["cntk.ops.gather", "cntk.Function.block_root", "cntk.Function.attributes"],
           note="CNTK 2.7's gather along an axis other than the first is a GatherOp block whose "
                "root is a TransposeAxes with attributes axis1 (the output's last axis in C++'s "
                "order) and axis2 (the given axis, counted from the output's rank where "
                "negative); Stadyn showed its own transpose's {'axes': ...}")
def gather__block_root_attributes(C, r):
    r.touch("cntk.Function.root_function", "cntk.Function.eval", "cntk.Function.grad",
            "cntk.Function.op_name", "cntk.logging.get_node_outputs",
            "cntk.Function.block_root", "cntk.Function.attributes")
    res = {}
    for label, tshape, ishape, axis in _GATHERS:
        if axis == "A1":
            axis = C.Axis(1)
        table = C.parameter(tshape, init=r.randn(*tshape).astype(np.float32), name="table")
        i = C.input_variable(ishape, name="i")
        g = C.gather(table, i, axis=axis)
        rf = g.root_function
        root = rf.block_root
        size = tshape[(axis if isinstance(axis, int) else axis.static_axis_index()) %
                      len(tshape)]
        feed = {i: r.randint(0, size, (2,) + ishape).astype(np.float32)}
        res[label] = {
            "block": [g.op_name, rf.op_name, rf.is_block, rf.attributes, _listed(rf.inputs)],
            "root": [root.op_name, root.attributes],
            "nodes": [[n.name, list(n.shape)] for n in C.logging.get_node_outputs(g)],
            "value": g.eval(feed), "grad": g.grad(feed, wrt=[table])}
    return res

"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 after the seventeenth round of
fixes (a reviewer's findings): the dynamic axes of an op waiting on placeholders made without
dynamic axes, and the sequence ops refusing such an operand as they are called; a float64
graph's cloned constants listed and saved after a run; a bool operand's Constant; and the
element-wise shape clash found when placeholders are bound."""

import os
import tempfile
import warnings

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


def _refusal(fn, *clauses):
    """What ``fn()`` raised (its built-in type) and which of ``clauses`` its message holds
    (CNTK's words; Stadyn adds the op and the user's line)."""
    try:
        got = fn()
    except Exception as e:          # (the built-in type and CNTK's words are compared)
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return {"raises": kind, "says": [c for c in clauses if c in str(e)]}
    return {"returns": got is not None}


_SENTINEL = "Axis::OperandSequenceAxis() sentinel cannot be resolved if the operand"
_NO_SEQUENCE = "has no sequence axis or > 1 ordered dynamic axes."
_ORDERED = ("A sequence function can only be applied on operands with at least one dynamic "
            "axis and whose first dynamic axis is ordered")
_LAYOUT = "must have at least one dynamic axis."
_TWO_AXES = "with #dynamic axes != 2 (1 sequence axis and 1 batch axis) is not supported."


@cntk_case(names=["cntk.placeholder", "cntk.Function.dynamic_axes",
                  "cntk.sequence.reduce_sum", "cntk.sequence.last"],
           note="an op on a placeholder made with dynamic_axes=[] (and a shape): CNTK 2.7 "
                "knows its dynamic axes at once (reduce_sum(p * 2): none; "
                "sequence.input_variable(2) + p: the sequence's two; beside a shapeless "
                "placeholder: unknown, one), and its sequence ops refuse such an operand as "
                "they are called (ValueError 'Axis::OperandSequenceAxis() sentinel cannot be "
                "resolved ...', 'A sequence function can only be applied ...'; past_value a "
                "RuntimeError); the output prints them ([], [#, *], [#]).  Stadyn raised "
                "AttributeError for the Function's dynamic_axes, gave its output one (printed "
                "[???]), and took the sequence ops")
def placeholder__no_dynamic_axes_waiting(C, r):
    r.touch("cntk.Function.dynamic_axes", "cntk.ops.reduce_sum", "cntk.ops.relu",
            "cntk.Function.output",
            "cntk.Variable.dynamic_axes", "cntk.sequence.input_variable", "cntk.input_variable",
            "cntk.sequence.reduce_max", "cntk.sequence.first", "cntk.sequence.softmax",
            "cntk.sequence.slice", "cntk.sequence.is_first", "cntk.sequence.past_value")
    p = C.placeholder((2,), dynamic_axes=[], name="p")
    q = C.placeholder(name="q")
    res = {}
    f = C.reduce_sum(p * 2)
    res["reduce_sum(p * 2)"] = [len(f.dynamic_axes), len(f.output.dynamic_axes), list(f.shape)]
    g = C.sequence.input_variable(2) + p
    res["sequence + p"] = [len(g.dynamic_axes), len(g.output.dynamic_axes)]
    res["input + p"] = len((C.input_variable(2) + p).dynamic_axes)
    res["p + shapeless"] = [len((p + q).dynamic_axes), len((p + q).output.dynamic_axes)]
    res["shapeless"] = len(C.relu(q).dynamic_axes)
    res["inferred axis"] = len(C.relu(C.placeholder((C.InferredDimension, 2))).dynamic_axes)
    res["outputs printed"] = ["".join(c for c in repr(h.output) if not c.isdigit())
                              for h in (f, g, C.input_variable(2) + p, C.relu(q))]
    calls = [("sequence.reduce_sum(p)", lambda: C.sequence.reduce_sum(p)),
             ("sequence.reduce_sum(p * 2)", lambda: C.sequence.reduce_sum(p * 2)),
             ("sequence.reduce_max(p)", lambda: C.sequence.reduce_max(p)),
             ("sequence.softmax(p)", lambda: C.sequence.softmax(p)),
             ("sequence.last(p)", lambda: C.sequence.last(p)),
             ("sequence.last(relu(p))", lambda: C.sequence.last(C.relu(p))),
             ("sequence.first(p)", lambda: C.sequence.first(p)),
             ("sequence.slice(p, 0, 1)", lambda: C.sequence.slice(p, 0, 1)),
             ("sequence.is_first(p)", lambda: C.sequence.is_first(p)),
             ("sequence.past_value(p)", lambda: C.sequence.past_value(p)),
             ("sequence.reduce_sum(p * 2 + q)", lambda: C.sequence.reduce_sum(p * 2 + q))]
    for title, fn in calls:
        res[title] = _refusal(fn, _SENTINEL, _NO_SEQUENCE, _ORDERED, _LAYOUT, _TWO_AXES)
    return res


def _saved(g, path):
    """Whether ``g.save(path)`` wrote the file (Stadyn's warning that it wrote its own format
    where CNTK's has no form for an op is not what is compared)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g.save(path)
    return os.path.exists(path)


@cntk_case(names=["cntk.Function.constants", "cntk.Function.save"],
           note="a float64 graph holding a float32 constant (x64 + C.constant(2.0), and p + 2 "
                "with p bound to a float64 input) after a run: CNTK 2.7 lists the float64 "
                "clone of the constant in constants and inputs, and saves the graph.  Stadyn "
                "raised TypeError ('len() of a 0-d Variable') from the walks and from save")
def float64_run__constants_listed_and_saved(C, r):
    r.touch("cntk.Function.constants", "cntk.Function.save", "cntk.input_variable",
            "cntk.ops.constant", "cntk.Function.eval",
            "cntk.Function.inputs", "cntk.Function.root_function",
            "cntk.Function.replace_placeholders", "cntk.Variable.dtype")
    folder = tempfile.mkdtemp()
    res = {}
    x = C.input_variable(2, dtype=np.float64)
    p = C.placeholder()
    for title, make in [("constant", lambda: x + C.constant(2.0)),
                        ("number on a placeholder",
                         lambda: (p + 2).replace_placeholders({p: x}))]:
        g = make()
        out = g.eval({x: np.array([[1, 2]], np.float64)})
        path = os.path.join(folder, title.replace(" ", "_"))
        res[title] = {
            "value": np.asarray(out).tolist(),
            "constants": outcome(lambda: [np.dtype(c.dtype).name for c in g.constants]),
            "inputs": outcome(lambda: len(g.inputs)),
            "root inputs": outcome(lambda: len(g.root_function.inputs)),
            "saved": outcome(lambda: _saved(g, path))}
    return res


@cntk_case(names=["cntk.ops.minus", "cntk.ops.element_times"],
           note="a bool operand of a binary op on a placeholder without a shape (p - True, "
                "True - p, p + False): CNTK 2.7 makes a float32 Constant of it (1.0, 0.0) as "
                "the op is called, listed in the Function's constants and inputs.  Stadyn "
                "made none until the graph was built")
def binary__bool_operand_constant(C, r):
    r.touch("cntk.Function.constants", "cntk.Function.inputs", "cntk.Function.eval",
            "cntk.Function.replace_placeholders", "cntk.input_variable",
            "cntk.Variable.is_constant", "cntk.Variable.value")
    res = {}
    for title, make in [("p - True", lambda p: p - True), ("True - p", lambda p: True - p),
                        ("minus(p, True)", lambda p: C.minus(p, True)),
                        ("p + False", lambda p: p + False),
                        ("element_times(p, True)", lambda p: C.element_times(p, True))]:
        p = C.placeholder()
        g = make(p)
        entry = {"constants": [[np.dtype(c.dtype).name, list(c.shape),
                                np.asarray(c.value).tolist()] for c in g.constants],
                 "inputs are constants": [i.is_constant for i in g.inputs]}
        x = C.input_variable(2)
        h = g.replace_placeholders({p: x})
        entry["value"] = np.asarray(h.eval({x: np.array([[1, 2]], np.float32)})).tolist()
        res[title] = entry
    return res


@cntk_case(names=["cntk.ops.plus"],
           note="an element-wise op on a placeholder with an inferred axis or none "
                "(placeholder((InferredDimension, 3)) + ones(3)) bound to an input whose shape "
                "does not broadcast with the other operand ((2, 4)): CNTK 2.7 refuses the "
                "binding with a RuntimeError naming Plus and the two shapes, as for operands "
                "of known shapes.  Stadyn raised torch's broadcast text (a ValueError)")
def replace_placeholders__elementwise_shape_clash(C, r):
    r.touch("cntk.Function.replace_placeholders", "cntk.input_variable", "cntk.placeholder")
    res = {}
    for title, shape in [("inferred axis", (C.InferredDimension, 3)), ("no shape", None)]:
        p = C.placeholder(shape) if shape is not None else C.placeholder()
        g = C.plus(p, np.ones(3, np.float32))
        x = C.input_variable((2, 4))
        res[title] = _refusal(lambda: g.replace_placeholders({p: x}), "Plus",
                              "(2, 4)", "[2 x 4]", "(3,)", "[3]")
        res[title]["says"] = ["Plus" in res[title]["says"],
                              bool({"(2, 4)", "[2 x 4]"} & set(res[title]["says"])),
                              bool({"(3,)", "[3]"} & set(res[title]["says"]))]
    res["known shapes"] = _refusal(lambda: C.input_variable((2, 4)) + np.ones(3, np.float32),
                                   "Plus")
    return res

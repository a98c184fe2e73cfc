"""``cntk.debugging``'s listings and the names CNTK's modules hand out because they import them:
``dump_signature`` and ``dump_function`` printed for a Dense/relu net, a graph with a Constant and
a named Parameter, sequence inputs (the default and a named sequence axis), a graph of more than
26 unnamed nodes (two-letter names); ``CloneMethod``, ``UserFunction``, ``output_variable``,
``user_function`` from ``cntk.debugging``, ``MinibatchData`` and ``use_default_device`` from
``cntk.eval``, ``cpu`` from ``cntk.logging.progress_print``: the same objects as ``cntk``'s.
Uids (``Input115``) count every input the process made, so their numbers are masked."""

import contextlib
import io
import re

import numpy as np

from compat_harness import cntk_case


def _printed(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args)
    return [re.sub(r"\bInput\d+ +", "Input<n> ", ln) for ln in out.getvalue().splitlines()]


@cntk_case(names=["cntk.debugging.dump_function", "cntk.debugging.dump_signature"],
           known={"function": "Stadyn's Dense block holds one Affine node (the native "
                              "stadyn/layers/_layers.py Dense that compat/cntk/_layers.py wraps) "
                              "where CNTK 2.7's holds Times then Plus, and its relu's output is "
                              "the block's own output, so the lines inside the Dense blocks "
                              "differ"})
def dump_dense(C, r):
    """A Dense/relu net: signature, blocks opened (``dump_function`` lists at every depth)."""
    x = C.input_variable(3, name="x")
    z = C.layers.Dense(2, activation=C.relu)(C.layers.Dense(4)(x))
    return {"signature": _printed(C.debugging.dump_signature, z),
            "signature tag": _printed(C.debugging.dump_signature, z, "tag"),
            "function": _printed(C.debugging.dump_function, z)}


@cntk_case(names=["cntk.debugging.dump_function"])
def dump_constant_parameter(C, r):
    """A Constant (unnamed: a letter), a named Parameter and a named function."""
    c = C.constant(np.ones((2,), np.float32))
    p = C.parameter((2,), name="bias", init=0.5)
    y = C.input_variable(2)
    f = C.plus(C.element_times(y, c, name="prod"), p)
    return {"function": _printed(C.debugging.dump_function, f, "tag")}


@cntk_case(names=["cntk.debugging.dump_function"])
def dump_sequence_axes(C, r):
    """Sequence inputs: the default sequence axis and a named one get ``n*``, ``o*`` (a line
    ``Axis <name> == n*`` when first met)."""
    s = C.sequence.input_variable(3, name="s")
    q = C.sequence.input_variable(3, sequence_axis=C.Axis("myAxis"))
    return {"default axis": _printed(C.debugging.dump_function, C.splice(s, s * 2)),
            "named axis": _printed(C.debugging.dump_function, C.tanh(q) * q),
            "both": _printed(C.debugging.dump_function,
                             C.combine([C.sigmoid(s), C.relu(q)]))}


@cntk_case(names=["cntk.debugging.dump_function"])
def dump_many_nodes(C, r):
    """More than 26 unnamed nodes: names go on ``ba``, ``bb``, ..."""
    x = C.input_variable(2, name="x")
    y = x
    for k in range(15):
        y = C.negate(y) if k % 2 else C.tanh(y)
        y = C.plus(y, x)
    return {"function": _printed(C.debugging.dump_function, y)}


@cntk_case(names=["cntk.debugging.CloneMethod", "cntk.debugging.UserFunction",
                  "cntk.debugging.output_variable", "cntk.debugging.user_function",
                  "cntk.eval.MinibatchData", "cntk.eval.use_default_device",
                  "cntk.logging.progress_print.cpu"])
def imported_names(C, r):
    """The names CNTK's modules hand out because they import them: the same objects."""
    d, e, pp = C.debugging, C.eval, C.logging.progress_print
    return {"debugging": [d.CloneMethod is C.CloneMethod,
                          d.UserFunction is C.ops.functions.UserFunction,
                          d.output_variable is C.output_variable,
                          d.user_function is C.user_function],
            "eval": [e.MinibatchData is C.io.MinibatchData,
                     e.use_default_device is C.use_default_device],
            "progress_print": [pp.cpu is C.cpu, pp.cpu().type() == C.cpu().type()],
            "clone": d.CloneMethod.share.value}

"""CNTK user functions as CNTK 2.7 names and shows them: ``user_function(My(x, name='foo'))``
is an unnamed composite (``as_composite`` of the function) printed ``UserFunction(...)``, its
output unnamed (``UserDefinedFunction<n>_Output_0``), the function itself named ``foo`` with op
name ``UserFunction`` in the graph and ``module.class`` on the instance; an error raised in a
user function's ``forward`` reaches the caller with the user's exception named (CNTK 2.7
prints the user's traceback and raises ``RuntimeError('SWIG director method error.')``).
Uids count every node the process made, so their numbers are masked."""

import contextlib
import io
import re

import numpy as np

from compat_harness import cntk_case


def _masked(text):
    return re.sub(r"(UserDefinedFunction|Tanh|Input|CompositeFunction)\d+", r"\1#", str(text))


def _sigmoid_class(C):
    class MySig(C.ops.functions.UserFunction):
        def __init__(self, arg, name="MySig", fail=False):
            super(MySig, self).__init__([arg], name=name)
            self.fail = fail

        def forward(self, argument, device=None, outputs_to_retain=None):
            if self.fail:
                raise KeyError("no such entry in forward")
            s = 1.0 / (1.0 + np.exp(-argument))
            return s, s

        def backward(self, state, root_gradients):
            return root_gradients * state * (1.0 - state)

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]
    return MySig


@cntk_case(names=["cntk.user_function", "cntk.ops.functions.UserFunction"],
           note="a named user function: the composite, its root, its output, a Tanh after it, "
                "find_by_name and the walk of cntk.logging.graph")
def user_function_names(C, r):
    MySig = _sigmoid_class(C)
    x = C.input_variable(2, name="x", needs_gradient=True)
    m = MySig(x, name="foo")
    f = C.user_function(m)
    t = C.tanh(f)
    found = t.find_by_name("foo")
    plain = C.user_function(MySig(x))
    data = r.randn(3, 2)
    r.touch("cntk.Function.name", "cntk.Function.op_name", "cntk.Function.root_function",
            "cntk.Function.find_by_name", "cntk.logging.graph.depth_first_search")
    return {"composite": [f.name, _masked(str(f)), _masked(repr(f)), f.op_name],
            "root": [f.root_function.name, f.root_function.op_name, f.owner.name,
                     _masked(str(f.root_function))],
            "instance": [m.name, m.op_name.rpartition(".")[2], m.uid == f.root_function.uid],
            "output": [f.output.name, _masked(repr(f.output)),
                       f.output.uid == f.root_function.uid + "_Output_0"],
            "tanh": [_masked(str(t)), _masked(str(t.root_function)),
                     _masked(repr(t.root_function.inputs[0]))],
            "found": [_masked(str(found)), found.uid == f.root_function.uid],
            "walk": [_masked(n) for n in C.logging.graph.depth_first_search(
                t, lambda n: True)],
            "default name": [plain.name, plain.root_function.name, _masked(str(plain))],
            "eval": t.eval({x: data}), "grad": t.grad({x: data}, wrt=[x])}


@cntk_case(names=["cntk.user_function"],
           note="a KeyError raised in forward: the user's exception type and message reach "
                "the caller (in the error or, as CNTK 2.7 prints it, on stderr)",
           known={"error type": "CNTK 2.7 prints the user's traceback and raises "
                                "RuntimeError('SWIG director method error.'); Stadyn raises "
                                "the user's exception itself (a KeyError)"})
def user_function_forward_error(C, r):
    MySig = _sigmoid_class(C)
    x = C.input_variable(2)
    f = C.user_function(MySig(x, fail=True))
    err = io.StringIO()
    kind = "none"
    with contextlib.redirect_stderr(err):
        try:
            f.eval({x: r.randn(2, 2)})
        except Exception as e:      # (what reached the caller, with what was printed)
            kind = type(e).__name__
            err.write("%s: %s" % (kind, e))
    seen = err.getvalue()
    return {"error type": kind,
            "user's exception named": ["KeyError" in seen, "no such entry in forward" in seen],
            "not a shape error": ["cannot apply to inputs" not in seen]}

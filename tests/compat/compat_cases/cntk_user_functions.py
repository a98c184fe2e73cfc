"""CNTK user functions as CNTK 2.7 names and shows them: ``user_function(My(x, name='foo'))``
is an unnamed composite (``as_composite`` of the function) printed ``UserFunction(...)``, its
output unnamed (``UserDefinedFunction<n>_Output_0``), the function itself named ``foo`` with op
name ``UserFunction`` in the graph and ``module.class`` on the instance; an error raised in a
user function's ``forward`` reaches the caller with the user's exception named (CNTK 2.7
prints the user's traceback and raises ``RuntimeError('SWIG director method error.')``).
Uids count every node the process made, so their numbers are masked."""

import contextlib
import io
import os
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


@cntk_case(names=["cntk.user_function", "cntk.ops.functions.UserFunction",
                  "cntk.ops.functions.UserFunction.op_name"],
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
    r.touch("cntk.ops.functions.UserFunction.op_name",
            "cntk.Function.name", "cntk.Function.op_name", "cntk.Function.root_function",
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


def _scale_class(C):
    class Scale(C.ops.functions.UserFunction):
        """``inputs[1] * inputs[0]``, the output declared on ``inputs[1]``'s axes."""

        def __init__(self, a, b, name="Scale"):
            super(Scale, self).__init__([a, b], name=name)

        def forward(self, arguments, device=None, outputs_to_retain=None):
            return arguments, arguments[1] * arguments[0]

        def backward(self, state, root_gradients, variables):
            a, b = state
            if self.inputs[1] in variables:
                variables[self.inputs[1]] = root_gradients * a
            if self.inputs[0] in variables:
                variables[self.inputs[0]] = np.asarray(
                    (root_gradients * b).sum(), np.float32).reshape(np.shape(a))

        def infer_outputs(self):
            x = self.inputs[1]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]
    return Scale


@cntk_case(names=["cntk.user_function", "cntk.output_variable"],
           note="a user function whose first input has no batch axis (a scalar Constant, a "
                "scalar Parameter) and whose second has: the output on the second's axes "
                "(Stadyn took the batch size from the first input: an IndexError on a scalar)")
def user_function_unbatched_first_input(C, r):
    Scale = _scale_class(C)
    x = C.input_variable(2, needs_gradient=True)
    c = C.constant(3.0)
    w = C.parameter((), init=0.5)
    by_constant = C.user_function(Scale(c, x))
    by_parameter = C.user_function(Scale(w, x))
    data = r.randn(3, 2)
    r.touch("cntk.Function.eval", "cntk.Function.grad")
    return {"shapes": [list(by_constant.shape), list(by_parameter.shape)],
            "axes": [str(by_constant.output.dynamic_axes),
                     str(by_parameter.output.dynamic_axes)],
            "constant": (by_constant + 1).eval({x: data}),
            "constant grad": by_constant.grad({x: data}, wrt=[x]),
            "parameter": C.tanh(by_parameter).eval({x: data}),
            "parameter grads": list(by_parameter.grad({x: data}, wrt=[x, w]).values())}


def _square_class(C):
    class Square(C.ops.functions.UserFunction):
        """Squares each step; records what forward and backward were given."""

        def __init__(self, a, seen, name="Square"):
            super(Square, self).__init__([a], name=name)
            self.seen = seen

        def forward(self, argument, device=None, outputs_to_retain=None):
            self.seen.append(["forward", type(argument).__name__,
                              [list(np.shape(a)) for a in argument]])
            return argument, [a * a for a in argument]

        def backward(self, state, root_gradients):
            self.seen.append(["backward", type(root_gradients).__name__,
                              [list(np.shape(g)) for g in root_gradients]])
            return [2 * a * g for a, g in zip(state, root_gradients)]

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]
    return Square


@cntk_case(names=["cntk.user_function", "cntk.output_variable"],
           note="a user function over a sequence input, its output declared on the input's "
                "dynamic axes: a sequence (forward and backward given a list of per-sequence "
                "arrays, eval giving one), read by sequence ops after it, gradients reaching "
                "the input (Stadyn lost the sequence axis and passed padded arrays)")
def user_function_sequence_output(C, r):
    Square = _square_class(C)
    seen = []
    s = C.sequence.input_variable(2, needs_gradient=True)
    f = C.user_function(Square(s, seen))
    total = C.sequence.reduce_sum(f)
    data = [r.randn(3, 2), r.randn(1, 2)]
    declared = C.output_variable(2, s.dtype, s.dynamic_axes)
    r.touch("cntk.Function.eval", "cntk.Function.grad", "cntk.sequence.reduce_sum")
    return {"shape": list(f.shape), "axes": str(f.output.dynamic_axes),
            "declared axes": str(declared.dynamic_axes), "str": str(f),
            "eval": f.eval({s: data}), "sum": total.eval({s: data}),
            "grad": f.grad({s: data}, wrt=[s]),
            "sum grad": total.grad({s: data}, wrt=[s]),
            "seen": sorted(set(repr(e) for e in seen))}    # (what each pass was given)


@cntk_case(names=["cntk.user_function", "cntk.output_variable"],
           note="a sequence on a named axis times a batch input, the output declared on the "
                "sequence's axes, and a user function giving each sequence's last step on the "
                "batch axis alone")
def user_function_sequence_axes(C, r):
    class ScaleSteps(C.ops.functions.UserFunction):
        """Each sequence's steps times its sample of the batch input."""

        def __init__(self, a, b, name="ScaleSteps"):
            super(ScaleSteps, self).__init__([a, b], name=name)

        def forward(self, arguments, device=None, outputs_to_retain=None):
            a, seqs = arguments
            return arguments, [s * a[i] for i, s in enumerate(seqs)]

        def backward(self, state, root_gradients, variables):
            a, seqs = state
            if self.inputs[1] in variables:
                variables[self.inputs[1]] = [g * a[i] for i, g in enumerate(root_gradients)]
            if self.inputs[0] in variables:
                variables[self.inputs[0]] = np.stack(
                    [(g * s).sum(0) for g, s in zip(root_gradients, seqs)])

        def infer_outputs(self):
            x = self.inputs[1]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]

    class Last(C.ops.functions.UserFunction):
        def __init__(self, a, name="Last"):
            super(Last, self).__init__([a], name=name)

        def forward(self, argument, device=None, outputs_to_retain=None):
            return [len(a) for a in argument], np.stack([a[-1] for a in argument])

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, [C.Axis.default_batch_axis()])]

    q = C.sequence.input_variable(2, sequence_axis=C.Axis("words"), needs_gradient=True)
    b = C.input_variable(2)
    scaled = C.user_function(ScaleSteps(b, q))
    last = C.user_function(Last(q))
    data = [r.randn(2, 2), r.randn(4, 2)]
    other = r.randn(2, 2)
    r.touch("cntk.Function.eval")
    return {"scaled axes": str(scaled.output.dynamic_axes),
            "scaled": scaled.eval({q: data, b: other}),
            # (no gradients: CNTK 2.7's backprop through a user function whose inputs' or
            # output's dynamic axes differ fails, 'InputValue operation found to have
            # incorrect Value() matrix shape 2 x 8 during backprop; expected shape is 2 x 2')
            "last axes": str(last.output.dynamic_axes), "last shape": list(last.shape),
            "last": last.eval({q: data})}


def _doubled_class(C):
    """A user function whose ``infer_outputs`` computes with its input's shape (twice the
    input's length: the input repeated); made a name of this module, where a load finds it."""
    class Doubled(C.ops.functions.UserFunction):
        seen = []

        def __init__(self, a, name="Doubled"):
            super(Doubled, self).__init__([a], name=name)

        def forward(self, argument, device=None, outputs_to_retain=None):
            return None, np.concatenate([argument, argument], axis=-1)

        def backward(self, state, root_gradients):
            n = root_gradients.shape[-1] // 2
            return root_gradients[..., :n] + root_gradients[..., n:]

        def infer_outputs(self):
            x = self.inputs[0]
            Doubled.seen.append([list(x.shape), str(x.dynamic_axes)])
            return [C.output_variable((x.shape[0] * 2,), x.dtype, x.dynamic_axes)]

        def serialize(self):
            return {}

        @staticmethod
        def deserialize(inputs, name, state):
            return Doubled(inputs[0], name=name)
    globals()["Doubled"] = Doubled
    return Doubled


@cntk_case(names=["cntk.user_function", "cntk.output_variable", "cntk.load_model",
                  "cntk.ops.functions.UserFunction.deserialize"],
           note="a saved user function over a batch input (no sequence axis) whose "
                "infer_outputs computes with the input's shape: rebuilt on load, it sees the "
                "sample shape and the batch axis, as when it was made (Stadyn's rebuild saw "
                "the shape with the batch axis and no dynamic axes: the loaded output's shape "
                "was () and a times after it refused)")
def user_function_shape_after_load(C, r):
    Doubled = _doubled_class(C)
    Doubled.seen[:] = []
    x = C.input_variable(3, name="x")
    w = C.constant(r.randn(6, 2).astype(np.float32))
    z = C.user_function(Doubled(x)) * 1.0
    a = r.randn(2, 3).astype(np.float32)
    with r.tempdir() as folder:
        path = os.path.join(folder, "doubled.model")
        z.save(path)
        loaded = C.load_model(path)
        then = C.times(loaded, w)
        out = then.eval({loaded.arguments[0]: a})
    r.touch("cntk.Function.eval", "cntk.Function.save",
            "cntk.ops.functions.UserFunction.deserialize")
    # (what infer_outputs was given, once each: CNTK 2.7 calls it more often than Stadyn)
    return {"seen": sorted(set(repr(e) for e in Doubled.seen)), "shape": list(loaded.shape),
            "axes": str(loaded.output.dynamic_axes), "times after": out,
            "original": C.times(z, w).eval({x: a})}


@cntk_case(names=["cntk.output_variable", "cntk.Variable.is_output", "cntk.Variable.owner",
                  "cntk.Variable.uid"],
           note="what output_variable makes is shown as CNTK 2.7 shows it: Output('Output<n>', "
                "...), is_output True, is_placeholder False, no owner (Stadyn showed "
                "Placeholder('Placeholder<n>', ...), a placeholder)")
def output_variable_shown(C, r):
    x = C.input_variable(2)
    made = [C.output_variable(2, x.dtype, x.dynamic_axes),
            C.output_variable((3, 4), x.dtype, [], name="foo"),
            C.output_variable(2, x.dtype, [C.Axis.default_batch_axis()])]
    r.touch("cntk.Variable.is_output", "cntk.Variable.is_placeholder", "cntk.Variable.owner",
            "cntk.Variable.uid")
    return {"shown": [re.sub(r"Output\d+", "Output#", repr(o)) for o in made],
            "uid": [re.sub(r"\d+", "#", o.uid) for o in made],
            "kinds": [[o.is_output, o.is_placeholder, o.owner is None] for o in made],
            "dtype": [str(o.dtype) for o in made]}

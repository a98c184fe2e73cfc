"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (rmcntkfn42, review of cntkfn42):
``leaky_relu``, ``elu`` and ``selu`` were single primitive ops, where CNTK 2.7 makes blocks
``LeakyReLU``, ``ELU``, ``SELU`` of ``Select(x < 0, ..., x)`` (Function.cpp ``LeakyReLU``,
``SELU``; cntk/ops/__init__.py ``elu``): not blocks, and SILENT wrong gradients at ``x == 0``
(leaky_relu: alpha, CNTK 1; elu with alpha 2: 2, CNTK 1; selu: scale * alpha 1.758, CNTK
scale 1.0507)."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _activations(C):
    return [("leaky_relu", lambda x: C.leaky_relu(x, name="n")),
            ("leaky_relu 0.3", lambda x: C.leaky_relu(x, 0.3, name="n")),
            ("elu", lambda x: C.elu(x, name="n")),
            ("elu 2", lambda x: C.elu(x, 2.0, name="n")),
            ("selu", lambda x: C.selu(x, name="n")),
            ("selu 2 0.5", lambda x: C.selu(x, 2.0, 0.5, name="n"))]


@cntk_case(names=["cntk.ops.leaky_relu", "cntk.ops.elu", "cntk.ops.selu",
                  "cntk.Function.is_block", "cntk.Function.block_root", "cntk.Function.grad",
                  "cntk.Function.inputs", "cntk.Function.clone"],
           note="leaky_relu (alpha 0.01, 0.3), elu (alpha 1, 2), selu (default, scale 2 "
                "alpha 0.5) named 'n' over x (3,): the root's op_name, is_block, name, its "
                "block_root's op and its inputs' kinds; the value and the gradient at x = -1, "
                "0, 2 and -0.5, 0, 3 (at 0: 1, scale for selu, whatever alpha), float32 and "
                "float64; a clone still the block; each in an untyped @C.Function called on "
                "(2,) and (4,) inputs")
def activation_blocks__select_at_zero(C, r, np):
    for n in ("cntk.Function.is_block", "cntk.Function.block_root", "cntk.Function.grad",
              "cntk.Function.inputs", "cntk.Function.clone"):
        r.touch(n)
    out = {}
    data = np.array([[-1.0, 0.0, 2.0], [-0.5, 0.0, 3.0]])
    for label, make in _activations(C):
        for dtype in (np.float32, np.float64):
            x = C.input_variable(3, dtype=dtype, name="x", needs_gradient=True)
            z = make(x)
            root = z.root_function
            inner = root.block_root
            key = label + " " + np.dtype(dtype).name
            out[key] = [root.op_name, root.is_block, root.name, inner.op_name,
                        ["input" if v.is_input else "constant" if v.is_constant else
                         "output" for v in root.inputs],
                        z.clone(C.CloneMethod.clone).root_function.op_name,
                        z.clone(C.CloneMethod.clone).root_function.is_block]
            out[key + " value"] = z.eval({x: data.astype(dtype)})
            out[key + " grad"] = z.grad({x: data.astype(dtype)}, wrt=[x])
        f = C.Function(lambda a, make=make: make(a))
        for n in (2, 4):
            xn = C.input_variable(n)
            zn = f(xn)
            v = np.linspace(-1, 1, n).reshape(1, n).astype(np.float32)
            out[label + " called %d" % n] = [list(zn.shape), zn.eval({xn: v}),
                                             zn.root_function.op_name]
    return out


@cntk_case(names=["cntk.ops.times_transpose", "cntk.ops.parameter"],
           note="times_transpose over a parameter of an inferred first axis (?, 4) as the right "
                "operand, with itself and with an input (3, 4) on the left: CNTK 2.7 refuses "
                "it as it is made (ValueError: TransposeTimes' output axis cannot be "
                "inferred); with the inferred parameter on the left it is made (-1, 3)")
def times_transpose__inferred_output_axis_refused(C, r, np):
    q = C.parameter((C.InferredDimension, 4), init=1.0)
    return {"itself": _outcome(lambda: C.times_transpose(q, q).shape),
            "input left": _outcome(lambda: C.times_transpose(C.input_variable((3, 4)),
                                                             q).shape),
            "left inferred": _outcome(lambda: C.times_transpose(
                C.parameter((C.InferredDimension, 4)), C.input_variable((3, 4))).shape)}

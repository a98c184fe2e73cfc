"""CNTK 2.7: a value computed from a placeholder with a sequence axis, read by a Function other
than the one ``replace_placeholders`` was called on (a value of a loop's body read from outside
the loop, or one over a placeholder replaced by a sequence input), runs over the substitute's
steps."""

import numpy as np

from compat_harness import cntk_case


def _outputs(res, prefix, values):
    """Each sequence of one output under ``"prefix k"``."""
    for k, seq in enumerate(values):
        res["%s %d" % (prefix, k)] = np.asarray(seq)


@cntk_case(names=["cntk.Function.replace_placeholders", "cntk.ops.placeholder",
                  "cntk.ops.combine", "cntk.Function.grad"],
           note="a value of a loop's body (a = h * 3, inside step's loop) read by a Function "
                "outside the loop (other = a * 2) runs over the loop's steps, alone, in a "
                "combine with the loop's output, and in its gradient (Stadyn gave one step of "
                "zeros: other kept the placeholder's stand-in sequence of one step)")
def replace_placeholders__loop_body_read_outside(C, r):
    r.touch("cntk.Function.replace_placeholders", "cntk.Function.grad")
    x, h = C.placeholder(name="x"), C.placeholder(name="h")
    w = C.parameter(init=(r.randn(2, 3) * 0.5).astype(np.float32), name="w")
    a = h * 3.0
    step = C.tanh(C.times(x, w) + a * 0.1)
    other = a * 2.0
    step.replace_placeholders({h: C.sequence.past_value(step).output})
    res = {"other arguments": [v.name for v in other.arguments]}
    s = C.sequence.input_variable(2)
    data = [r.randn(3, 2).astype(np.float32), r.randn(2, 2).astype(np.float32)]
    _outputs(res, "other", other(s).eval({s: data}))
    both = C.combine([step, other])(s)
    values = both.eval({s: data})
    for name, out in (("step", both.outputs[0]), ("other", both.outputs[1])):
        _outputs(res, "combine %s" % name, values[out])
    _outputs(res, "other's gradient", [other(s).grad({s: data}, wrt=[w])])
    return res


@cntk_case(names=["cntk.Function.replace_placeholders", "cntk.ops.placeholder"],
           note="the same with a placeholder of a given shape on the sequence axis and a "
                "sequence input read by the loop (other evaluated itself, on x)")
def replace_placeholders__loop_body_read_outside_shaped(C, r):
    r.touch("cntk.Function.replace_placeholders")
    x = C.sequence.input_variable(2, name="x")
    h = C.placeholder(3, dynamic_axes=[C.Axis.default_batch_axis(),
                                       C.Axis.default_dynamic_axis()], name="h")
    w = C.parameter(init=(r.randn(2, 3) * 0.5).astype(np.float32), name="w")
    a = h * 3.0
    step = C.tanh(C.times(x, w) + a * 0.1)
    other = C.sequence.reduce_sum(a * 2.0)
    later = a - 1.0
    step.replace_placeholders({h: C.sequence.past_value(step).output})
    data = [r.randn(4, 2).astype(np.float32), r.randn(1, 2).astype(np.float32),
            r.randn(3, 2).astype(np.float32)]
    res = {"other arguments": [v.name for v in other.arguments]}
    _outputs(res, "other", other.eval({x: data}))
    _outputs(res, "later", later.eval({x: data}))
    _outputs(res, "other's gradient", [other.grad({x: data}, wrt=[w])])
    return res


@cntk_case(names=["cntk.Function.replace_placeholders"],
           note="a placeholder on the sequence axis replaced by a sequence input (no loop): a "
                "Function made from it before (b = a + 1 over a = h * 3, replace_placeholders "
                "called on a) runs over the input's steps (Stadyn gave the first step only)")
def replace_placeholders__sequence_placeholder_read_elsewhere(C, r):
    r.touch("cntk.Function.replace_placeholders")
    x = C.sequence.input_variable(3, name="x")
    h = C.placeholder(3, dynamic_axes=[C.Axis.default_batch_axis(),
                                       C.Axis.default_dynamic_axis()], name="h")
    a = h * 3.0
    b = a + 1.0
    a.replace_placeholders({h: x})
    data = [r.randn(3, 3).astype(np.float32), r.randn(2, 3).astype(np.float32)]
    res = {"b arguments": [v.name for v in b.arguments]}
    _outputs(res, "a", a.eval({x: data}))
    _outputs(res, "b", b.eval({x: data}))
    return res


def _refusal(call):
    """The error's type and its text up to the Function it names (whose uids differ)."""
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the refusal is what is compared
        return [type(e).__name__, str(e).split(" in the Function")[0]]
    return "accepted"


@cntk_case(names=["cntk.Function.replace_placeholders", "cntk.layers.ForwardDeclaration"],
           note="a placeholder that the Function (and what is put in) does not read: CNTK 2.7's "
                "ValueError 'Placeholder ... specified for replacement not found in the "
                "Function' (Stadyn replaced it anyway), also a ForwardDeclaration resolved to "
                "a value that does not use it")
def replace_placeholders__placeholder_not_in_the_function(C, r):
    r.touch("cntk.Function.replace_placeholders")

    def unrelated():
        x, p = C.sequence.input_variable(2), C.placeholder(name="p")
        (x * 2.0).replace_placeholders({p: x})

    def declared():
        fd = C.layers.ForwardDeclaration(name="fwd")
        fd.resolve_to(C.plus(C.input_variable(2), 1.0, name="pl"))
    def waiting():          # a Function over a placeholder without a shape, and another one
        x, p, q = C.sequence.input_variable(2), C.placeholder(name="p"), C.placeholder(name="q")
        (p * 2.0).replace_placeholders({p: x, q: x})
    return {"unrelated": _refusal(unrelated), "forward declaration": _refusal(declared),
            "waiting": _refusal(waiting)}


@cntk_case(names=["cntk.layers.ForwardDeclaration", "cntk.sequence.past_value"],
           note="a ForwardDeclaration resolved to a vector (past_value(fd) + x, x of 2 per "
                "step): the loop takes the vector's shape, also for sequences of unequal "
                "lengths and through a scaled delay (Stadyn refused: 'step shape () and its "
                "substitute (2,)'; its declaration held a scalar step)")
def forward_declaration__resolved_to_a_vector(C, r):
    r.touch("cntk.layers.ForwardDeclaration")
    res = {}
    for name, make in (("sum", lambda pv, x: pv + x),
                       ("scaled", lambda pv, x: pv * 0.5 + x)):
        x = C.sequence.input_variable(2)
        fd = C.layers.ForwardDeclaration()
        out = make(C.sequence.past_value(fd), x)
        fd.resolve_to(out)
        res[name + " shape"] = list(out.shape)
        data = [r.randn(3, 2).astype(np.float32), r.randn(1, 2).astype(np.float32),
                r.randn(2, 2).astype(np.float32)]
        _outputs(res, name, out.eval({x: data}))
        _outputs(res, name + " last", [C.sequence.last(out).eval({x: data})])
    return res

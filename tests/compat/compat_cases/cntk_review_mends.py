"""CNTK 2.7 behaviours a review found Stadyn missing: negatives of unequal sequences, the
widths a mirrored pad takes, the type of a squared error of NumPy arrays."""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import builtin_type, outcome


# the call's result, or the built-in type of the error it raised (what is compared)
_outcome = functools.partial(outcome, raised=builtin_type)


@cntk_case(names=["cntk.losses.cosine_distance_with_negative_samples",
                  "cntk.sequence.input_variable"],
           note="steps are counted time-major over the padded minibatch; a negative that falls "
                "on padding scores 0 (Stadyn's 0/0 reached the step index and crashed)")
def cosine_distance_with_negative_samples__unequal_sequences(C, r):
    a, b = C.sequence.input_variable(3), C.sequence.input_variable(3)
    f = C.cosine_distance_with_negative_samples(a, b, 1, 2)
    res = {}
    for lens in [(4, 2), (2, 4)]:
        out = f.eval({a: [r.randn(n, 3) for n in lens], b: [r.randn(n, 3) for n in lens]})
        res["out_%d_%d" % lens] = [np.asarray(o) for o in out]
    return res


@cntk_case(names=["cntk.losses.cosine_distance_with_negative_samples"],
           note="the gradient through unequal sequences: a padded step's norm is taken of 0 + 1, "
                "so the square root's gradient stays finite (sqrt at 0 gave NaN in every "
                "element of W's gradient)")
def cosine_distance_with_negative_samples__unequal_sequences_gradient(C, r):
    a, b = C.sequence.input_variable(3), C.sequence.input_variable(3)
    w = C.parameter((3, 3), init=(np.eye(3) + 0.1).astype(np.float32))
    f = C.cosine_distance_with_negative_samples(C.times(a, w), b, 1, 2)
    res = {}
    for lens in [(2, 4), (3, 1)]:
        feed = {a: [r.rand(n, 3).astype(np.float32) for n in lens],
                b: [r.rand(n, 3).astype(np.float32) for n in lens]}
        res["grad_w_%d_%d" % lens] = np.asarray(f.grad(feed, wrt=[w]))
    return res


@cntk_case(names=["cntk.ops.pad"],
           note="REFLECT_PAD takes a head and foot of at most the axis length - 1, "
                "SYMMETRIC_PAD of at most the length; CNTK 2.7 refuses longer ones when the op "
                "is built (Stadyn reflected periodically or gave a wrong width)")
def pad__mirror_widths(C, r):
    data = r.randn(2, 3)
    res = {}
    for mode_name in ("REFLECT_PAD", "SYMMETRIC_PAD"):
        mode = getattr(C.ops, mode_name)
        for head, foot in [(2, 2), (1, 3), (3, 3), (4, 0), (0, 4), (5, 4)]:
            v = C.input_variable(3)
            res["%s_%d_%d" % (mode_name, head, foot)] = _outcome(
                lambda: C.pad(v, [(head, foot)], mode=mode).eval({v: data}))
    one = C.input_variable(1)
    res["reflect_length_1"] = _outcome(
        lambda: C.pad(one, [(1, 1)], mode=C.ops.REFLECT_PAD).eval({one: data[:, :1]}))
    return res


@cntk_case(names=["cntk.losses.squared_error"])
def squared_error__numpy_float64(C, r):
    """Of float64 NumPy arrays the squared error computes in float64."""
    out = C.squared_error(np.array([1.0, 2.0]), np.array([0.0, 0.5])).eval()
    return {"out": np.asarray(out), "dtype": str(np.asarray(out).dtype)}


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.RecurrenceFrom",
                  "cntk.Function.find_by_name", "cntk.Function.root_function",
                  "cntk.Function.parameters", "cntk.Function.op_name"],
           note="a recurrence is no block in CNTK 2.7: its root function is a Combine (a NoOp "
                "when named) of the step's output, with no parameters of its own, so a learner "
                "of find_by_name('rec').parameters trains nothing (Stadyn listed the step's)")
def recurrence_root_function_parameters(C, r):
    r.touch("cntk.Function.find_by_name", "cntk.Function.root_function",
            "cntk.Function.parameters", "cntk.Function.op_name")
    s, h0 = C.sequence.input_variable(3), C.input_variable(2)

    def roots(f):
        root = f.root_function
        return [root.op_name, root.name, len(root.inputs), len(root.parameters),
                len(root.constants), len(f.parameters)]
    res = {}
    for name in ("", "rec"):
        res["recurrence_" + name] = roots(C.layers.Recurrence(C.layers.LSTM(4), name=name)(s))
        res["fold_" + name] = roots(C.layers.Fold(C.layers.GRU(3), name=name)(s))
        res["from_" + name] = roots(C.layers.RecurrenceFrom(C.layers.GRU(2), name=name)(h0, s))
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4), name="rec"),
                             C.layers.Fold(C.layers.RNNStep(3), name="fold"),
                             C.layers.Dense(2, name="out")])(s)
    for name in ("rec", "fold", "out"):
        f = z.find_by_name(name)
        res["find_" + name] = [f.op_name, sorted([p.name, list(p.shape)] for p in f.parameters)]
    return res


@cntk_case(names=["cntk.Function.replace_placeholders", "cntk.placeholder", "cntk.Trainer",
                  "cntk.Function.parameters", "cntk.Function.arguments"],
           note="CNTK replaces placeholders in place: the layer applied to the placeholder "
                "(h) reads the substitute too, and the model trains (Stadyn's Trainer raised "
                "AttributeError, h kept its old parameters and arguments)")
def replace_placeholders__shapeless_placeholder_model(C, r):
    r.touch("cntk.Function.parameters", "cntk.Function.arguments",
            "cntk.Function.replace_placeholders")
    x, y = C.input_variable(3, name="x"), C.input_variable(2, name="y")
    p1 = C.placeholder(name="p1")
    h = C.layers.Dense(2, init=C.glorot_uniform(seed=1), name="head")(p1)
    s = C.plus(h, 1.0)
    s.replace_placeholders({p1: C.layers.Dense(4, init=C.glorot_uniform(seed=2))(x)})
    shapes = lambda ps: sorted(list(p.shape) for p in ps)  # noqa: E731
    res = {"s_params": shapes(s.parameters), "h_params": shapes(h.parameters),
           "h_args": [a.name for a in h.arguments]}
    r.set_params(s.parameters)
    trainer = C.Trainer(s, C.squared_error(s, y), [C.sgd(h.parameters,
                                                         C.learning_parameter_schedule(0.1))])
    trainer.train_minibatch({x: r.randn(2, 3), y: r.randn(2, 2)})
    for p in s.parameters:
        res["trained_%s" % "x".join(str(d) for d in p.shape)] = np.asarray(p.value)
    res["out"] = s.eval({x: r.randn(2, 3)})

    p2, p3 = C.placeholder(name="p2"), C.placeholder(name="p3")
    g = C.layers.Dense(2, init=C.glorot_uniform(seed=1))(p2)
    t = C.plus(g, p3)
    t.replace_placeholders({p2: C.layers.Dense(4, init=C.glorot_uniform(seed=2))(x)})
    res["one_bound_args"] = [a.name for a in t.arguments]
    res["one_bound_placeholders"] = [p.name for p in t.placeholders]
    t.replace_placeholders({p3: y})
    res["both_bound_args"] = [a.name for a in t.arguments]
    res["both_bound_params"] = shapes(t.parameters)
    return res


@cntk_case(names=["cntk.as_block", "cntk.placeholder", "cntk.layers.Sequential"])
def as_block__of_a_shapeless_placeholder_model(C, r):
    """``as_block`` of layers applied to a placeholder without a shape, bound to an input."""
    x = C.input_variable(3, name="x")
    ph = C.placeholder(name="ph")
    body = C.layers.Sequential([C.layers.Dense(4, init=C.glorot_uniform(seed=1)),
                                C.layers.Dense(2, init=C.glorot_uniform(seed=2))])(ph)
    b = C.as_block(body, [(ph, x)], "MyBlock", "blk")
    r.set_params(b.parameters)
    return {"name": b.name, "args": [a.name for a in b.arguments],
            "params": sorted(list(p.shape) for p in b.parameters),
            "root": [b.root_function.op_name, b.root_function.name],
            "out": b.eval({x: r.randn(2, 3)})}


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.RecurrenceFrom",
                  "cntk.Function.root_function", "cntk.Function.is_block",
                  "cntk.Function.is_primitive", "cntk.Function.op_name"],
           note="a recurrence's root function is a Combine (a NoOp when named), no block: "
                "is_block is False and block_root a ValueError (Stadyn said True and gave "
                "the recurrence's own op)")
def recurrence_root_is_no_block(C, r):
    r.touch("cntk.Function.root_function", "cntk.Function.is_block",
            "cntk.Function.is_primitive", "cntk.Function.op_name")
    s, h0 = C.sequence.input_variable(3), C.input_variable(2)
    made = {"GRU": C.layers.Recurrence(C.layers.GRU(2))(s),
            "named": C.layers.Recurrence(C.layers.GRU(2), name="rec")(s),
            "LSTM backwards": C.layers.Recurrence(C.layers.LSTM(2), go_backwards=True)(s),
            "Fold": C.layers.Fold(C.layers.GRU(2))(s),
            "Fold named": C.layers.Fold(C.layers.RNNStep(2), name="fo")(s),
            "RecurrenceFrom": C.layers.RecurrenceFrom(C.layers.GRU(2))(h0, s),
            "function step": C.layers.Recurrence(C.plus)(s)}
    res = {}
    for key in sorted(made):
        rf = made[key].root_function
        try:
            root = rf.block_root.op_name
        except (ValueError, RuntimeError) as error:
            root = type(error).__name__
        res[key] = [rf.op_name, rf.is_block, rf.is_primitive, rf.is_composite, root]
    return res

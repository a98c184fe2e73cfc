"""``cntk.sequence``'s ops that make a new sequence axis (``where``, ``gather``, ``scatter``),
``delay``, ``to_sequence`` / ``to_sequence_like`` and ``reconcile_dynamic_axes`` over
sequences, on minibatches of ragged sequences (lengths 3, 1, 5): values and the gradients of
``sum(out * w)`` w.r.t. the input (``run_sequence`` in cntk_sequence.py).

The conditions are computed from the input and always take each sequence's first step (CNTK
2.7 fails on a sequence that a condition empties).
"""

import os

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_sequence import seq_case


def _condition(C, x):
    """1 where a step's values sum above 0, and at every first step."""
    return C.greater(C.reduce_sum(x, axis=0) + C.sequence.is_first(x) * 100.0, 0.0)


def _counts(C, x):
    """A count per step: 1 where the sum is positive, plus 1 at each first step (so 2 there
    when both)."""
    return C.greater(C.reduce_sum(x, axis=0), 0.0) + C.sequence.is_first(x)


_NAMES = ["cntk.ops.greater", "cntk.ops.reduce_sum", "cntk.sequence.is_first"]
seq_case("where", lambda C, x: C.sequence.where(_condition(C, x)),
         names=["cntk.sequence.where"] + _NAMES,
         note="the positions do not depend on x's values: the gradient is 0")
seq_case("where__counts", lambda C, x: C.sequence.where(_counts(C, x)),
         names=["cntk.sequence.where"] + _NAMES, note="a count of 2 repeats a position")
seq_case("where__fractions",
         lambda C, x: C.sequence.where(C.sigmoid(C.reduce_sum(x, axis=0)) * 1.5),
         names=["cntk.sequence.where", "cntk.ops.sigmoid", "cntk.ops.reduce_sum"],
         note="fractional counts accumulate (each step is taken as often as the running sum, "
              "rounded up, grows)")
seq_case("gather", lambda C, x: C.sequence.gather(x, _condition(C, x)),
         names=["cntk.sequence.gather"] + _NAMES)
seq_case("gather__counts", lambda C, x: C.sequence.gather(x, _counts(C, x)),
         names=["cntk.sequence.gather"] + _NAMES)
seq_case("scatter", lambda C, x: C.sequence.scatter(
    C.tanh(C.sequence.gather(x, _condition(C, x))), _condition(C, x)),
         names=["cntk.sequence.scatter", "cntk.sequence.gather", "cntk.ops.tanh"] + _NAMES)
seq_case("delay", lambda C, x: C.sequence.delay(x))
seq_case("delay__future_initial_state",
         lambda C, x: C.sequence.delay(x, initial_state=0.5, time_step=-2),
         names=["cntk.sequence.delay"])
seq_case("delay__zero", lambda C, x: C.sequence.delay(x, time_step=0) * 2.0,
         names=["cntk.sequence.delay"])
seq_case("to_sequence_like",
         lambda C, x: C.to_sequence_like(C.sequence.unpack(x, 0.0, no_mask_output=True) * 3.0, x),
         names=["cntk.ops.to_sequence_like", "cntk.sequence.unpack"])


def _lengths(C, x):
    """Each sequence's length, one number per sequence."""
    return C.stop_gradient(C.sequence.reduce_sum(C.sequence.is_first(x) * 0.0 + 1.0))


seq_case("to_sequence",
         lambda C, x: C.tanh(C.to_sequence(C.sequence.unpack(x, 0.0, no_mask_output=True),
                                           _lengths(C, x))),
         names=["cntk.ops.to_sequence", "cntk.sequence.unpack", "cntk.sequence.reduce_sum",
                "cntk.sequence.is_first", "cntk.ops.tanh", "cntk.ops.stop_gradient"],
         note="CNTK does not differentiate the lengths (stop_gradient)")
seq_case("to_sequence__all_steps",
         lambda C, x: C.to_sequence(C.sequence.unpack(x, 0.5, no_mask_output=True)),
         names=["cntk.ops.to_sequence", "cntk.sequence.unpack"],
         note="without lengths every sequence is the padded length (5) long")
seq_case("reconcile_dynamic_axes",
         lambda C, x: x * C.reconcile_dynamic_axes(C.sequence.last(x), x),
         names=["cntk.ops.reconcile_dynamic_axes", "cntk.sequence.last"])


# -- named sequence axes ------------------------------------------------------------------------
_FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                         "legacy")


def _axes(v):
    return [[a.name, bool(a.is_ordered), bool(a.is_sequence_axis), bool(a.is_batch_axis)]
            for a in v.dynamic_axes]


@cntk_case(names=["cntk.variables.VariableMixin.dynamic_axes", "cntk.sequence.input_variable",
                  "cntk.Axis.new_unique_dynamic_axis", "cntk.load_model"],
           note="inputs declared on named sequence axes (Sequence2Sequence.py's inputAxis and "
                "labelAxis): the axes CNTK reports for them and for what is computed from "
                "them, after Function.save / load_model, and in a model file CNTK 2.7 wrote "
                "(tests/fixtures/legacy/make_cntk_seq_reshape.py)")
def sequence_axis_names(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.arguments", "cntk.Function.save",
            "cntk.Function.output", "cntk.Axis.name", "cntk.Axis.is_ordered",
            "cntk.Axis.is_sequence_axis", "cntk.Axis.is_batch_axis",
            "cntk.variables.VariableMixin.dynamic_axes", "cntk.Axis.new_unique_dynamic_axis")
    x = C.sequence.input_variable(3, sequence_axis=C.Axis("myAxis"), name="x")
    y = C.input_variable(2, dynamic_axes=[C.Axis.default_batch_axis(), C.Axis("other")],
                         name="y")
    u = C.sequence.input_variable(2, sequence_axis=C.Axis.new_unique_dynamic_axis("uniq"),
                                  name="u")
    f = C.tanh(C.sequence.past_value(x)) * 2.0
    res = {"x": _axes(x), "y": _axes(y), "u": _axes(u), "f": _axes(f.output),
           "f argument": _axes(f.arguments[0]), "last": _axes(C.sequence.last(x).output),
           "default": _axes(C.sequence.input_variable(1)),
           "same axis": x.dynamic_axes[1] == C.Axis("myAxis")}
    data = [r.randn(n, 3) for n in (3, 1, 5)]
    with r.tempdir() as folder:
        path = os.path.join(folder, "axes.model")
        f.save(path)
        g = C.load_model(path)
    res["loaded argument"] = _axes(g.arguments[0])
    res["loaded output"] = _axes(g.output)
    res["loaded"] = np.concatenate(g.eval({g.arguments[0]: data}), 0)
    h = C.load_model(os.path.join(_FIXTURES, "cntk_seq_axes.model"))
    args = dict((a.name, a) for a in h.arguments)
    res["file arguments"] = [[k, _axes(args[k])] for k in sorted(args)]
    res["file output"] = _axes(h.output)
    out = h.eval({args["x"]: data, args["y"]: [r.randn(n, 3) for n in (2, 4, 1)]})
    res["file values"] = np.concatenate(out, 0)
    res["file lengths"] = [len(v) for v in out]
    return res


# -- the axes where / gather / to_sequence make, and unpack's free steps -----------------------
def _axis_names(v, sources):
    """``v``'s dynamic axes by name, a source's uid in a name written ``<name of source>`` (uids
    are numbered differently by the two frameworks)."""
    names = []
    for a in v.dynamic_axes:
        name = a.name
        for label, s in sources:
            name = name.replace(s.uid, "<%s>" % label)
        names.append([name, bool(a.is_ordered)])
    return names


@cntk_case(names=["cntk.sequence.where", "cntk.sequence.gather", "cntk.ops.to_sequence",
                  "cntk.sequence.unpack", "cntk.sequence.slice",
                  "cntk.variables.VariableMixin.dynamic_axes",
                  "cntk.variables.VariableMixin.shape"],
           note="the sequence axes that where, gather (also with new_sequence_axis_typeinfo), "
                "sequence.slice (derived from the input's axis, a named one too) and "
                "to_sequence (also with sequence_axis_name_prefix) make, named after the "
                "uid of their condition or value (written <name> here), and those of values "
                "computed from them; the shapes of sequence.unpack's value and mask and of "
                "what is computed from them element by element, whose step axis CNTK shows "
                "as a free dimension (-3), and of reductions and slices along it, which "
                "CNTK shows with their size (before cntkrec39 Stadyn showed the slice's "
                "range of the length the graph was built with, 1); values on a ragged "
                "minibatch")
def sequence_new_axis_names(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.output", "cntk.Function.outputs",
            "cntk.Axis.name", "cntk.Axis.is_ordered", "cntk.Variable.uid",
            "cntk.variables.VariableMixin.dynamic_axes", "cntk.variables.VariableMixin.shape")
    x = C.sequence.input_variable(3, name="x")
    n = C.sequence.input_variable(1, name="n")
    plain = C.input_variable((4, 3), name="plain")
    cond = C.greater(C.reduce_sum(x, axis=0) + C.sequence.is_first(x) * 100.0, 0.0)
    value, mask = C.sequence.unpack(x, 0.0).outputs
    padded = C.sequence.unpack(C.tanh(x), 0.5, no_mask_output=True)
    twice = padded * 2.0
    sources = [("cond", cond.output), ("n", n), ("padded", padded.output), ("value", value),
               ("twice", twice.output), ("plain", plain)]
    made = {"where": C.sequence.where(cond), "where n": C.sequence.where(n),
            "gather": C.sequence.gather(x, cond),
            "gather 1 2": C.sequence.gather(x, cond, new_sequence_axis_typeinfo=(1, 2)),
            "gather 2 -1": C.sequence.gather(x, cond, new_sequence_axis_typeinfo=(2, -1)),
            "gather 1 0": C.sequence.gather(x, cond, new_sequence_axis_typeinfo=(1, 0)),
            "to_sequence": C.to_sequence(padded),
            "to_sequence twice": C.to_sequence(twice),
            "to_sequence plain": C.to_sequence(plain),
            "to_sequence prefix": C.to_sequence(padded, sequence_axis_name_prefix="myAxis")}
    named_x = C.sequence.input_variable(3, sequence_axis=C.Axis("myAxis"), name="named_x")
    made.update({"slice 0 -1": C.sequence.slice(x, 0, -1), "slice 1 3": C.sequence.slice(x, 1, 3),
                 "slice -2 0": C.sequence.slice(x, -2, 0),
                 "slice named 2 -1": C.sequence.slice(named_x, 2, -1),
                 "gather named 2 1": C.sequence.gather(named_x, C.sequence.is_last(named_x),
                                                       new_sequence_axis_typeinfo=(2, 1))})
    made["tanh of gather"] = C.tanh(made["gather"])
    made["gather plus gather"] = made["gather"] + made["gather"]
    res = {}
    for k in sorted(made):
        res["axes " + k] = _axis_names(made[k].output, sources)
        res["shape " + k] = list(made[k].output.shape)
    b = C.input_variable(3, name="b")
    shaped = {"value": value, "mask": mask, "padded": padded, "twice": twice,
              "tanh": C.tanh(value), "plus b": value + b, "mask times 2": mask * 2.0,
              "softmax": C.softmax(value), "reduce over steps": C.reduce_sum(value, axis=0),
              "slice of steps": C.slice(value, 0, 0, 2),
              "to_sequence of it": C.to_sequence(value)}
    for k in sorted(shaped):
        v = shaped[k].output if hasattr(shaped[k], "output") else shaped[k]
        res["unpacked shape " + k] = list(v.shape)
        res["unpacked axes " + k] = _axis_names(v, sources)
    seqs = [r.randn(k, 3) for k in (3, 1, 5)]
    res["gather values"] = np.concatenate(made["gather 2 -1"].eval({x: seqs}), 0)
    res["twice values"] = np.asarray(twice.eval({x: seqs}), np.float32)
    return res


@cntk_case(names=["cntk.sequence.unpack", "cntk.ops.times", "cntk.ops.reshape",
                  "cntk.ops.expand_dims", "cntk.ops.slice", "cntk.ops.reduce_sum",
                  "cntk.ops.reduce_mean", "cntk.ops.reduce_max", "cntk.ops.argmax",
                  "cntk.ops.splice", "cntk.ops.transpose", "cntk.ops.swapaxes", "cntk.ops.pad",
                  "cntk.ops.one_hot", "cntk.ops.softmax", "cntk.variables.VariableMixin.shape"],
           note="which ops keep sequence.unpack's steps, CNTK's free dimension (-3), in .shape "
                "(times, reshapes of the axes after it or of it with all after it into -1, "
                "expand_dims, slices and pads of other axes, reductions over other axes, "
                "splices, transposes, a softmax over the whole sample) and which do not (a "
                "reshape of every axis into a shape without -1, reductions over it), and their "
                "values on ragged sequences "
                "(lengths 3, 1, 4): the steps keep the size they have when run")
def unpacked_free_dimension_through_ops(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.output",
            "cntk.variables.VariableMixin.shape")
    x = C.sequence.input_variable(4, name="x")
    u = C.sequence.unpack(x, 0.0, no_mask_output=True)
    w = C.constant(r.randn(4, 3))
    made = {"times": C.times(u, w), "tanh of times": C.tanh(C.times(u, w)),
            "reshape after steps": C.reshape(u, (2, 2), begin_axis=1),
            "reshape new axis": C.reshape(u, (1, 4), begin_axis=1, end_axis=2),
            "reshape into -1": C.reshape(u, (-1,)),
            "reshape all": C.reshape(u, (4, 1)),
            "expand_dims": C.expand_dims(u, 0),
            "slice of samples": C.slice(u, 1, 1, 3),
            "sum over samples": C.reduce_sum(u, axis=1),
            "sum over steps": C.reduce_sum(u, axis=0), "sum of all": C.reduce_sum(u),
            "mean": C.reduce_mean(u, axis=1), "max": C.reduce_max(u, axis=1),
            "argmax": C.argmax(u, axis=1),
            "splice samples": C.splice(u, u, axis=1), "splice steps": C.splice(u, u, axis=0),
            "transpose": C.transpose(u, (1, 0)), "swapaxes": C.swapaxes(u, 0, 1),
            "pad": C.pad(u, [(0, 0), (1, 1)]),
            "one_hot": C.one_hot(C.argmax(u, axis=1), 4),
            "softmax of sample": C.softmax(u)}
    seqs = [r.randn(k, 4) for k in (3, 1, 4)]
    res = {}
    for k in sorted(made):
        res["shape " + k] = list(made[k].output.shape)
        if k != "reshape all":          # CNTK's value of it is not one of a reshape
            res["value " + k] = np.asarray(made[k].eval({x: seqs}), np.float32)
    return res

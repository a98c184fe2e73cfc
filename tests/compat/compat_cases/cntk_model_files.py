"""CNTK 2.7-written model files (``tests/fixtures/legacy/make_cntk_seq_more.py``) over sequences,
loaded by ``cntk.load_model``: batch normalisation of each step (evaluated, then trained on from
the file's running statistics), and the ops that leave the sequence axis or make a new one
(``sequence.unpack``, ``to_sequence``, ``sequence.where``, ``sequence.gather``) with the names
of their outputs and dynamic axes.  Fed ragged minibatches (``_flat`` joins the sequences).
"""

import os

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_sequence import _flat

_FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                         "legacy")


def _bn_feed(r, z, lengths):
    args = dict((a.name, a) for a in z.arguments)
    return {args["img"]: [r.randn(n, 2, 3, 3) * 3.0 + 2.0 for n in lengths],
            args["vec"]: [r.randn(n, 4) * 2.0 - 1.0 for n in lengths]}


def _for(f, feed):
    """``feed`` (keyed by another Function's arguments) keyed by ``f``'s, by name."""
    args = dict((a.name, a) for a in f.arguments)
    return dict((args[a.name], v) for a, v in feed.items())


# what the cases reading outputs' names and axes touch
_AXES_NAMES = ("cntk.Function.eval", "cntk.Function.arguments", "cntk.Function.outputs",
               "cntk.Variable.dynamic_axes", "cntk.Variable.owner", "cntk.Axis.name",
               "cntk.Function.op_name", "cntk.Function.save")


def _saved_again(C, r, z):
    """``z`` saved by ``Function.save`` and loaded again."""
    with r.tempdir() as folder:
        path = os.path.join(folder, "again.model")
        z.save(path)
        return C.load_model(path)


def _record(res, label, k, value):
    """``value`` as ``<label> <k>``, and its sequences' lengths as ``<label> lengths <k>``."""
    res["%s %d" % (label, k)] = _flat(value)
    if isinstance(value, list):
        res["%s lengths %d" % (label, k)] = [len(v) for v in value]


def _constants(z):
    """The running statistics and counts, by name and size (the two counts are equal)."""
    found = sorted(z.constants, key=lambda c: (c.name, int(np.prod(c.shape))))
    return [np.asarray(c.value, np.float32) for c in found]


@cntk_case(names=["cntk.load_model", "cntk.Function.save"],
           note="a model file written by CNTK 2.7 whose batch normalisations (per channel of "
                "each step's image, per element of each step's vector) run on every step of "
                "two sequences, with the running statistics and counts the file holds; "
                "evaluated on ragged minibatches of two sizes, then saved and loaded again "
                "(each framework its own file)")
def sequence_batch_norm_model_file(C, r):
    z = C.load_model(os.path.join(_FIXTURES, "cntk_seq_bn.model"))
    r.touch("cntk.Function.eval", "cntk.Function.arguments", "cntk.Function.outputs",
            "cntk.Function.constants", "cntk.Constant.value", "cntk.Function.save")
    res = {"arguments": sorted([a.name, list(a.shape)] for a in z.arguments),
           "outputs": [[o.name, list(o.shape)] for o in z.outputs]}
    for k, c in enumerate(_constants(z)):
        res["constant %d" % k] = c
    again = _saved_again(C, r, z)
    for k, lengths in enumerate([(3, 1, 5), (2, 2)]):
        feed = _bn_feed(r, z, lengths)
        for label, f in (("loaded", z), ("saved again", again)):
            out = f.eval(_for(f, feed))
            for o in f.outputs:
                _record(res, "%s %s" % (label, o.name), k, out[o])
    return res


@cntk_case(names=["cntk.load_model", "cntk.Trainer.train_minibatch"],
           note="the CNTK 2.7-written cntk_seq_bn.model trained by a Trainer on ragged "
                "minibatches: batch statistics over the sequences' steps (padded ones left "
                "out), the running statistics and counts moved on from the file's by CNTK's "
                "rule (time constant 64 steps); losses, parameters, statistics and an "
                "evaluation after")
def sequence_batch_norm_model_file_trains(C, r):
    z = C.load_model(os.path.join(_FIXTURES, "cntk_seq_bn.model"))
    r.touch("cntk.Function.outputs", "cntk.Function.arguments", "cntk.Function.parameters",
            "cntk.Function.constants", "cntk.Trainer.previous_minibatch_loss_average",
            "cntk.Parameter.value", "cntk.Constant.value", "cntk.Trainer.train_minibatch")
    image, vector = z.outputs
    t_image = C.sequence.input_variable((2, 3, 3), name="t_image")
    t_vector = C.sequence.input_variable(4, name="t_vector")
    loss = C.squared_error(image, t_image) + C.squared_error(vector, t_vector)
    trainer = C.Trainer(z, (loss, None),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.05))])
    res = {"losses": []}
    for step in range(4):
        lengths = [(3, 1, 5), (2, 2)][step % 2]
        feed = _bn_feed(r, z, lengths)
        feed[t_image] = [r.randn(n, 2, 3, 3) * 0.5 for n in lengths]
        feed[t_vector] = [r.randn(n, 4) * 0.5 for n in lengths]
        trainer.train_minibatch(feed)
        res["losses"].append(trainer.previous_minibatch_loss_average)
    for k, p in enumerate(sorted(z.parameters, key=lambda p: (p.name, int(np.prod(p.shape))))):
        res["parameter %d" % k] = p.value
    for k, c in enumerate(_constants(z)):
        res["constant %d" % k] = c
    out = z.eval(_bn_feed(r, z, (2, 3)))
    for o in z.outputs:
        res["after %s" % o.name] = _flat(out[o])
    return res


def _axes_feed(r, lengths):
    """Sequences of 3 whose first step sums above 0 (CNTK 2.7 fails on a sequence that
    ``where``'s condition empties)."""
    seqs = [r.randn(n, 3) for n in lengths]
    for s in seqs:
        s[0] = np.abs(s[0]) + 0.1
    return seqs


@cntk_case(names=["cntk.load_model", "cntk.Function.save"],
           note="a model file written by CNTK 2.7 whose outputs are sequence.unpack's value "
                "and mask, a padded unpack, to_sequence of it with lengths from the input, "
                "sequence.where and sequence.gather: the outputs' names, uids, op names and "
                "dynamic axes (the axes the ops made are named after the values they came "
                "from), also once saved and loaded again (each framework its own file), their "
                "shapes (the unpacked steps a free dimension, -3), and their values on ragged "
                "minibatches of two sizes")
def sequence_new_axes_model_file(C, r):
    z = C.load_model(os.path.join(_FIXTURES, "cntk_seq_new_axes.model"))
    r.touch(*_AXES_NAMES)
    r.touch("cntk.Variable.uid", "cntk.variables.VariableMixin.shape")
    res = {"outputs": [[o.name, o.uid, o.owner.op_name, [a.name for a in o.dynamic_axes]]
                       for o in z.outputs],
           "shapes": [list(o.shape) for o in z.outputs]}
    again = _saved_again(C, r, z)
    res["saved again"] = [[o.name, [a.name for a in o.dynamic_axes]] for o in again.outputs]
    res["saved again shapes"] = [list(o.shape) for o in again.outputs]
    for k, lengths in enumerate([(3, 1, 5), (2, 4)]):
        out = z.eval({z.arguments[0]: _axes_feed(r, lengths)})
        for o in z.outputs:
            _record(res, o.name, k, out[o])
    return res


@cntk_case(names=["cntk.load_model", "cntk.Function.save"],
           note="a model file written by CNTK 2.7 (make_cntk_seq_marks.py) with "
                "sequence.is_first and is_last (blocks whose body reconciles a constant 0 with "
                "the sequence and shifts it by one step) and values computed from them: "
                "x times each mark, element_select of the first mark, the sum of x at each "
                "last step, the last mark of tanh(x) + 1; the outputs' names, op names and "
                "axes and their values on ragged minibatches of two sizes, also once saved "
                "and loaded again (each framework its own file)")
def sequence_marks_model_file(C, r):
    z = C.load_model(os.path.join(_FIXTURES, "cntk_seq_marks.model"))
    r.touch(*_AXES_NAMES)
    res = {"outputs": [[o.name, o.owner.op_name, list(o.shape),
                        [a.name for a in o.dynamic_axes]] for o in z.outputs]}
    again = _saved_again(C, r, z)
    for k, lengths in enumerate([(3, 1, 5), (2, 4)]):
        seqs = [r.randn(n, 3) for n in lengths]
        for label, f in (("loaded", z), ("saved again", again)):
            out = f.eval({f.arguments[0]: seqs})
            for o in f.outputs:
                _record(res, "%s %s" % (label, o.name), k, out[o])
    return res

"""What CNTK 2.7 shows of a graph where Stadyn's differed: the graph after runs with
sequence-begin flags (CNTK's does not change; a Trainer made afterwards trains), the root
function of a ``combine`` (a Combine function, of one output too) and of a saved and loaded
``top_k`` (TopK, one function of both outputs), and composite uids."""

import os
import re
import warnings

import numpy as np

from compat_harness import cntk_case

_GRAPH_NAMES = ["cntk.Function.inputs", "cntk.Function.constants", "cntk.Function.arguments",
                "cntk.Function.parameters", "cntk.Function.root_function", "cntk.Function.eval"]
_ROOT_NAMES = ["cntk.Function.root_function", "cntk.Function.name", "cntk.Function.op_name",
               "cntk.Function.uid", "cntk.Function.is_primitive", "cntk.Function.is_composite",
               "cntk.Function.is_block", "cntk.Function.inputs", "cntk.Function.outputs",
               "cntk.variables.VariableMixin.owner"]


def _uid(v):
    return re.sub(r"\d+", "#", v.uid)


def _listing(variables):
    return [[v.name, list(v.shape), v.is_parameter, v.is_constant, v.is_input] for v in variables]


def _view(z):
    return {"inputs": _listing(z.inputs), "constants": _listing(z.constants),
            "arguments": [a.name for a in z.arguments], "parameters": len(z.parameters),
            "root inputs": [_uid(v) for v in z.root_function.inputs]}


@cntk_case(names=_GRAPH_NAMES + ["cntk.Trainer.train_minibatch", "cntk.Function.clone",
                                 "cntk.Function.save", "cntk.ops.functions.load_model"],
           note="a run with a False sequence-begin flag leaves CNTK 2.7's graph as it was. "
                "Stadyn splices its carried states in where the recurrence reads its initial "
                "states, and its walks showed the splice's leaves as three more inputs and "
                "constants; a Trainer made afterwards took them for inputs to feed (no data "
                "for input 1 of 5)")
def sequence_begin_flags_leave_the_graph_as_it_was(C, r):
    r.touch(*(_GRAPH_NAMES + ["cntk.Trainer.train_minibatch", "cntk.Function.clone",
                              "cntk.Function.save"]))
    x = C.sequence.input_variable(3, name="x")
    y = C.sequence.input_variable(2, name="y")
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4)), C.layers.Dense(2)])(x)
    res = {"parameters": r.set_params(z.parameters), "fresh": _view(z)}
    xs = [r.randn(3, 3), r.randn(3, 3)]
    ys = [r.onehot(3, 2), r.onehot(3, 2)]
    res["eval"] = np.stack(z.eval({x: xs}))
    res["eval going on"] = np.stack(z.eval(({x: xs}, [False, True])))
    res["after flags"] = _view(z)
    res["as it was"] = _view(z) == res["fresh"]
    res["clone"] = _view(z.clone(C.CloneMethod.share))
    with r.tempdir() as folder:
        path = os.path.join(folder, "z.model")
        z.save(path)
        res["loaded"] = _view(C.load_model(path))
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.5))])
    losses = []
    for flags in ([True, True], [False, False]):
        trainer.train_minibatch(({x: xs, y: ys}, flags))
        losses.append(float(trainer.previous_minibatch_loss_average))
    res["losses"] = losses
    res["trained"] = r.param_values(z.parameters)
    return res


def _root(f):
    rf = f.root_function
    return {"function": [f.name, f.op_name, _uid(f), f.is_composite],
            "root": [rf.name, rf.op_name, _uid(rf), rf.is_primitive, rf.is_composite,
                     rf.is_block],
            "root outputs": [o.name for o in rf.outputs],
            "root inputs": [_uid(i) for i in rf.inputs],
            "root of root": [rf.root_function.op_name, rf.root_function.name],
            "owners": [[o.name, _uid(o), o.owner.op_name, o.owner.name] for o in f.outputs],
            "arguments": [a.name for a in f.arguments]}


@cntk_case(names=_ROOT_NAMES + ["cntk.ops.combine", "cntk.logging.get_node_outputs",
                                "cntk.logging.depth_first_search",
                                "cntk.logging.graph.find_all_with_name",
                                "cntk.Function.find_all_with_name"],
           note="CNTK 2.7's combine makes a Combine function (of one output too): the "
                "composite's root_function is it (op_name Combine, uid Combine<n>, the name "
                "given to combine, its inputs the outputs it combines, which keep their "
                "names). Stadyn gave the composite itself as the root of several outputs, the "
                "first output's op for one, and combine(..., name=) renamed the first output; "
                "a composite's uid was CompositeFunction<its root's uid>. The walks visit the "
                "Combine first (get_node_outputs, depth_first_search, find_all_with_name: "
                "Stadyn's did so for several outputs only, and never found it by name)")
def combine_root_function(C, r):
    r.touch(*(_ROOT_NAMES + ["cntk.Function.find_all_with_name"]))
    x = C.input_variable(5, name="x")
    a = C.plus(x, 1.0, name="a")
    b = C.tanh(x, name="b")
    d1 = C.layers.Dense(2, name="d1")(x)
    d2 = C.layers.Dense(3, name="d2")(x)
    res = {}
    made = {"two": C.combine([a, b]), "one": C.combine([a]), "named": C.combine([a, b], name="cc"),
            "blocks": C.combine([d1, d2]), "plus": a}
    for k in sorted(made):
        f = made[k]
        for part, value in _root(f).items():
            res[k + " " + part] = value
        res[k + " node outputs"] = [_uid(o) for o in C.logging.get_node_outputs(f)]
        res[k + " search"] = [[n.name, _uid(n)] for n in
                              C.logging.depth_first_search(f, lambda n: True)]
        res[k + " by name"] = [_uid(n) for n in f.find_all_with_name("cc")] + \
            [_uid(n) for n in C.logging.find_all_with_name(f, "cc")]
    res["values"] = [made["named"].eval({x: r.randn(2, 5)})[o] for o in made["named"].outputs]
    return res


@cntk_case(names=_ROOT_NAMES + ["cntk.ops.top_k", "cntk.Function.save",
                                "cntk.ops.functions.load_model"],
           note="a top_k saved and loaded is, as before, one TopK function of both outputs, "
                "named as top_k was; a combine saved and loaded has a Combine root (named as "
                "it was; of one output, or of one function's outputs, too). Stadyn's load "
                "wrapped the loaded TopK in a combine (root CompositeFunctionOpName, name '') "
                "and the indices' owner was a Cast; a combine of one output came back as "
                "its output's function")
def top_k_saved_and_loaded_keeps_its_root(C, r):
    r.touch(*(_ROOT_NAMES + ["cntk.Function.save"]))
    x = C.input_variable(5, name="x")
    res = {}
    made = {"top_k": C.top_k(x, 2, name="tk"),
            "combine": C.combine([C.plus(x, 1.0, name="a"), C.tanh(x, name="b")]),
            "combine named": C.combine([C.plus(x, 2.0, name="c"), C.tanh(x, name="t")],
                                       name="cc"),
            "combine of one": C.combine([C.minus(x, 1.0, name="m")]),
            "combine of top_k": C.combine(list(C.top_k(x, 3, name="tk3").outputs)),
            "dense": C.layers.Dense(2, name="d")(x)}
    res["parameters"] = r.set_params(made["dense"].parameters)
    data = r.randn(2, 5)
    with r.tempdir() as folder:
        for k in sorted(made):
            path = os.path.join(folder, k + ".model")
            made[k].save(path)
            loaded = C.load_model(path)
            for part, value in _root(loaded).items():
                res[k + " " + part] = value
            values = loaded.eval({loaded.arguments[0]: data})
            res[k + " values"] = [values[o] for o in loaded.outputs] \
                if isinstance(values, dict) else values
    return res


_MEMBER_NAMES = ["cntk.Function.signature", "cntk.Function.update_signature",
                 "cntk.Function.declare_args", "cntk.Trainer.total_number_of_units_seen",
                 "cntk.Trainer.print_node_timing", "cntk.variables.VariableMixin.has_batch_axis",
                 "cntk.variables.VariableMixin.has_sequence_axis"]


@cntk_case(names=_MEMBER_NAMES + ["cntk.train.DataUnit"],
           note="members of CNTK 2.7's Function, Trainer and Variable Stadyn lacked: "
                "signature (the arguments as a tuple), update_signature (placeholders replaced "
                "in place by inputs of the given shapes or types, named as they were; a "
                "@Function of untyped arguments built on them), declare_args (the betas' "
                "spelling, deprecated), the Trainer's total_number_of_units_seen (samples, "
                "minibatches, minibatches ending a sweep) and print_node_timing, and "
                "has_batch_axis / has_sequence_axis (a placeholder: False, True)")
def function_trainer_and_variable_members(C, r):
    r.touch(*_MEMBER_NAMES)
    res = {}
    x = C.input_variable(3, name="x")
    z = C.layers.Dense(2, name="d")(x)
    res["signature"] = [type(z.signature).__name__] + [[a.name, list(a.shape)]
                                                      for a in z.signature]

    @C.Function
    def f(a, b):
        return a * 2 + b
    res["untyped"] = [[a.name, list(a.shape), a.is_placeholder] for a in f.signature]
    f.update_signature(3, b=(3,))
    res["typed"] = [[a.name, list(a.shape), a.is_input] for a in f.signature]
    res["typed value"] = f(r.randn(2, 3), r.randn(2, 3))
    try:
        f.update_signature(3)
        res["too few types"] = "no error"
    except TypeError:
        res["too few types"] = "TypeError"
    g = C.plus(C.placeholder(2, name="p"), 1.0)
    g.update_signature(C.layers.typing.Tensor[2])
    res["placeholder typed"] = [[a.name, list(a.shape), a.is_input] for a in g.arguments]
    h = C.element_times(C.placeholder(4, name="q"), 3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # (asked for, as CNTK warns)
        h.declare_args(4)
    res["declared"] = [[a.name, list(a.shape), a.is_input] for a in h.arguments]
    res["declared value"] = h.eval(r.randn(2, 4))

    y = C.input_variable(2)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    data = {x: r.randn(2, 3), y: r.onehot(2, 2)}
    units = []
    for end in (False, True, False, True, True):
        trainer.train_minibatch(data, is_sweep_end=end)
        units.append([trainer.total_number_of_units_seen(u) for u in
                      (C.DataUnit.sample, C.DataUnit.minibatch, C.DataUnit.sweep)])
    trainer.test_minibatch(data)
    units.append([trainer.total_number_of_units_seen(C.DataUnit.sample)])
    res["units seen"] = units
    res["print_node_timing"] = repr(trainer.print_node_timing())

    s = C.sequence.input_variable(2)
    res["axes"] = [[v.has_batch_axis(), v.has_sequence_axis()] for v in (
        x, s, C.parameter((2,)), C.constant(1.0), (x + 1).output, C.sequence.last(s).output,
        C.placeholder(), C.placeholder(3))]
    return res


@cntk_case(names=_GRAPH_NAMES + ["cntk.Function.placeholders", "cntk.layers.Recurrence",
                                 "cntk.layers.Fold", "cntk.layers.Delay",
                                 "cntk.ops.sequence.past_value", "cntk.ops.sequence.future_value"],
           note="a Recurrence's (and Fold's, Delay's) initial state is a Constant of shape "
                "(1,) made with the layer (one for every state and application), a delay's "
                "a scalar one; CNTK's walk meets it after the step's parameters.  The root's "
                "inputs are left out: CNTK's Recurrence is a composite whose root is a Combine")
def initial_states_are_constants(C, r):
    r.touch(*(_GRAPH_NAMES + ["cntk.Function.placeholders"]))
    x = C.sequence.input_variable(3, name="x")

    def view(z):
        out = _view(z)
        del out["root inputs"]
        out["placeholders"] = len(z.placeholders)
        out["values"] = [float(c.value.ravel()[0]) for c in z.constants]
        return out
    res = {}
    for key, layer in [("LSTM", C.layers.Recurrence(C.layers.LSTM(4))),
                       ("GRU", C.layers.Recurrence(C.layers.GRU(4))),
                       ("RNNStep backwards", C.layers.Recurrence(C.layers.RNNStep(4),
                                                                 go_backwards=True)),
                       ("initial 0.5", C.layers.Recurrence(C.layers.RNNStep(4),
                                                           initial_state=0.5)),
                       ("Fold", C.layers.Fold(C.layers.RNNStep(4))),
                       ("LSTM full state", C.layers.Recurrence(C.layers.LSTM(4),
                                                               return_full_state=True)),
                       ("function step", C.layers.Recurrence(lambda h, u: h * 0.5 + u))]:
        res[key] = view(layer(x))
    rnn = C.layers.Recurrence(C.layers.RNNStep(3))
    res["applied twice"] = view(rnn(x) + rnn(C.sequence.past_value(x)))
    delay = C.layers.Delay(1, initial_state=0.25)
    res["Delay twice"] = view(delay(x) + delay(x * 2.0))
    res["past_value"] = view(C.sequence.past_value(x))
    res["future_value 2"] = view(C.sequence.future_value(x, initial_state=2.0, time_step=2))
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.RNNStep(4)), C.layers.Dense(2)])(x)
    res["Sequential"] = view(z)
    r.set_params(z.parameters)
    res["eval"] = np.stack(z.eval({x: [r.randn(3, 3), r.randn(3, 3)]}))
    return res

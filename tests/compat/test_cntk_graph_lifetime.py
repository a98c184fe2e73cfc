"""A CNTK model's graph goes when the program drops it: what the compat layer keeps per
Variable (``compat/cntk/_graph.py``: blocks, names, op names) must not hold it.

A run makes each of its roots refer to every other (through the run's plan), so a registry
entry keyed by a graph's output that refers strongly to another root of a run of it (a block's
argument whose states a recurrence carries) keeps its key alive for ever.  CNTK frees such a
model once the program holds nothing of it; the expectation here is that all of them go."""

import gc
import weakref

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn.compat.cntk._adapt import unwrap

pytestmark = pytest.mark.usefixtures("fresh_parameters")


def _sequences():
    return [np.ones((2, 3), np.float32), np.full((2, 3), 0.5, np.float32)]


def _evaluated():
    """A recurrence followed by blocks (``sequence.last``, ``Dense``), evaluated, and the
    recurrence evaluated twice, the second time going on from the first (a False
    sequence-begin flag: CNTK 2.7 refuses ``sequence.last`` over a sequence that goes on, so
    the model itself is evaluated over whole sequences)."""
    x = C.sequence.input_variable(3)
    steps = C.layers.Recurrence(C.layers.LSTM(4))(x)
    z = C.layers.Dense(2)(C.sequence.last(steps))
    z.eval({x: _sequences()})
    steps.eval({x: _sequences()})
    steps.eval(({x: _sequences()}, [False, True]))
    return z


def _trained():
    """A recurrence followed by a Dense block, trained two minibatches by a Trainer."""
    x, y = C.sequence.input_variable(3), C.sequence.input_variable(2)
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.GRU(4)), C.layers.Dense(2)])(x)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), None),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    labels = [np.eye(2, dtype=np.float32)[[0, 1]], np.eye(2, dtype=np.float32)[[1, 0]]]
    trainer.train_minibatch({x: _sequences(), y: labels})
    trainer.train_minibatch(({x: _sequences(), y: labels}, [False, False]))
    return z


def _top_k():
    """``top_k``'s values and indices (two outputs of one CNTK function, the first keeping
    the second) evaluated together."""
    x = C.input_variable(5)
    z = C.top_k(C.layers.Dense(5)(x), 2)
    z.eval({x: np.ones((2, 5), np.float32)})
    C.combine([z.outputs[1], z.outputs[0]]).eval({x: np.ones((1, 5), np.float32)})
    return z


def _step_value():
    """A value inside a recurrence's step, read as a sequence (``model.<name>``) and
    evaluated with the model."""
    x = C.sequence.input_variable(1)
    z = C.layers.Recurrence(lambda h, u: C.layers.Label("doubled")(h * 2.0) + u)(x)
    C.combine([z, z.doubled]).eval({x: [np.ones((3, 1), np.float32)]})
    return z


def _shapeless_loop():
    """A loop closed by replace_placeholders through placeholders without a shape before the
    input is bound (LightRNN's lightlstm's pattern), then applied and evaluated; the waiting
    Function is the model kept: its loop lives on the placeholder it replaces
    (``_deferred_loops.bind_loop``; a registry of loops would hold it for ever)."""
    x, h = C.placeholder(name="x"), C.placeholder(name="h")
    step = C.tanh(C.times(x, C.parameter((2, 3))) + C.times(h, C.parameter((3, 3))))
    step.replace_placeholders({h: C.sequence.past_value(step).output})
    s = C.sequence.input_variable(2)
    step(s).eval({s: [np.ones((3, 2), np.float32)]})
    return step


@pytest.mark.parametrize("build", [_evaluated, _trained, lambda: _greedy(), _top_k, _step_value,
                                   _shapeless_loop],
                         ids=["eval", "trainer", "closed loop", "top_k", "step value",
                              "loop through shapeless placeholders"])
def test_models_built_in_a_loop_and_dropped_are_freed(build):
    kept = []
    for _ in range(4):
        model = build()
        kept.append(weakref.ref(unwrap(model)))
        del model
    gc.collect()
    assert sum(ref() is not None for ref in kept) == 0



def _greedy():
    """A graph loop closed by a clone (CNTK 599A's greedy decoder): the Dense block's output,
    inside the loop, is rewired onto the recurrence the loop runs as."""
    x = C.sequence.input_variable(2)
    hook = C.alias(x)
    model = C.layers.Dense(2)(C.layers.Recurrence(C.layers.GRU(3))(
        C.sequence.past_value(hook) + x))
    greedy = model.clone(C.CloneMethod.share, {hook.output: C.hardmax(model).output})
    return greedy


def test_a_block_inside_a_closed_loop_keeps_its_arguments_when_the_program_drops_them():
    greedy = _greedy()
    gc.collect()
    assert [a.shape for a in greedy.arguments] == [(2,)]
    assert len(greedy.parameters) == 6          # Dense's W, b; GRU's b, W, H, H1
    out = greedy.eval({greedy.arguments[0]: [np.ones((3, 2), np.float32)]})
    assert [s.shape for s in out] == [(3, 2)]


def test_a_walk_of_dense_blocks_keeps_no_value_the_trainer_frees():
    """The Times CNTK 2.7 shows inside a Dense block (``_graph_views.shown_product``) is a node
    of Stadyn's graph over the Dense's input; made by a walk (and by the Trainer), it took that
    input as the program's, so the Trainer's clearing backward kept the hidden layer's value
    (graph/_held_values.py).  Expected: the value the program dropped is freed, as without a
    walk, and the view still shows the Times over it."""
    x, y = C.input_variable(3), C.input_variable(2)
    hidden = C.layers.Dense(4, activation=C.relu)(x)
    z = C.layers.Dense(2)(hidden)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), None),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    walked = C.logging.graph.depth_first_search(z, lambda n: True, depth=-1)
    assert [getattr(n, "op_name", None) for n in walked].count("Times") == 2
    dropped = weakref.ref(unwrap(hidden))
    del hidden, walked
    data = {x: np.ones((2, 3), np.float32), y: np.eye(2, dtype=np.float32)}
    trainer.train_minibatch(data)
    assert dropped() is not None and dropped()._data is None
    times = z.root_function.block_root.inputs[0].owner
    assert times.op_name == "Times" and unwrap(times.inputs[0]) is dropped()

"""A CNTK model's parameters, and what the compat layer records of its Functions, go when the
program drops the model.

CNTK 2.7's parameters are reference counted: a layer, or a model built and dropped in a loop,
frees its weights once nothing refers to them.  Stadyn's process-wide parameter registry holds
NNabla's parameters for good; CNTK's go to a registry that holds them weakly
(``compat/cntk/_parameters.py``), unless the program made a registry of its own current.
The expectation is CNTK's documented ownership: after the last reference goes and a
collection, every weak reference is dead."""

import gc
import weakref

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.cntk as C
from stadyn.compat.cntk import _graph as G
from stadyn.compat.cntk._adapt import unwrap


def _refs(values):
    return [weakref.ref(unwrap(v)) for v in values]


def _lstm():
    """An LSTM layer applied by a Recurrence and evaluated (its W, H and b made)."""
    x = C.sequence.input_variable(3)
    cell = C.layers.LSTM(4)
    z = C.layers.Recurrence(cell)(x)
    z.eval({x: [np.ones((2, 3), np.float32)]})
    return _refs(cell.parameters) + _refs([z])


def _dense_trained():
    """A Dense model trained one minibatch by a Trainer."""
    x, y = C.input_variable(3), C.input_variable(2)
    z = C.layers.Dense(2)(x)
    trainer = C.Trainer(z, (C.squared_error(z, y), None),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    trainer.train_minibatch({x: np.ones((2, 3), np.float32), y: np.ones((2, 2), np.float32)})
    return _refs(z.parameters)


def _parameter():
    """A ``C.parameter`` in an expression."""
    p = C.parameter((2,), init=1.0, name="p")
    x = C.input_variable(2)
    (x * p).eval({x: np.ones((1, 2), np.float32)})
    return _refs([p])


def _cloned():
    """A GRU model and its clone (parameters copied)."""
    x = C.sequence.input_variable(3)
    z = C.layers.Recurrence(C.layers.GRU(2))(x)
    copy = z.clone(C.CloneMethod.clone)
    return _refs(z.parameters) + _refs(copy.parameters)


@pytest.mark.parametrize("build", [_lstm, _dense_trained, _parameter, _cloned],
                         ids=["LSTM", "trained Dense", "parameter", "clone"])
def test_parameters_of_dropped_models_are_freed(build):
    kept = []
    for _ in range(3):
        kept.extend(build())
    gc.collect()
    assert kept and sum(ref() is not None for ref in kept) == 0


def test_a_registry_the_program_makes_current_gets_the_parameters():
    reg = sd.ParameterRegistry()
    with sd.parameter_registry(reg):
        z = C.layers.Dense(2)(C.input_variable(3))
        p = C.parameter((3,), name="q")
    assert sorted(reg) == ["dense/W", "dense/b", "q/q"]
    assert [reg.get("dense/W"), reg.get("q/q")] == [unwrap(z.W), unwrap(p)]


def test_live_layers_keep_distinct_names():
    x = C.input_variable(3)
    a, b = C.layers.Dense(2)(x), C.layers.Dense(2)(x)
    names = [unwrap(p).name for p in a.parameters + b.parameters]
    assert len(set(names)) == 4
    assert [p.name for p in a.parameters] == ["W", "b"]


def test_an_input_run_with_its_function_frees_both():
    """A Python function's arguments are recorded in its signature's order; an input run
    together with the Function (``combine([z, x]).eval``) refers to it through the run."""
    kept = []
    for _ in range(3):
        x, y = C.input_variable(3, needs_gradient=True), C.input_variable(3)

        @C.Function
        def f(a, b):
            return a * 2 + b
        z = f(x, y)
        feed = {x: np.ones((1, 3), np.float32), y: np.ones((1, 3), np.float32)}
        C.combine([z, x]).eval(feed)
        kept.extend(_refs([z, x]))
    del x, y, z, f, feed
    gc.collect()
    assert sum(ref() is not None for ref in kept) == 0


def test_combines_of_a_kept_output_are_freed():
    """Each ``combine`` of an output the program keeps is a Combine function of its own;
    dropped, it goes (none is kept with the output)."""
    a = C.layers.Dense(2)(C.input_variable(3))
    names = []
    for k in range(4):
        c = C.combine([a, a + k], name="combined%d" % k)
        names.append(c.name)
    del c
    gc.collect()
    assert names == ["combined0", "combined1", "combined2", "combined3"]
    assert not [o for o in gc.get_objects() if isinstance(o, G.Combine)
                and o.name.startswith("combined")]

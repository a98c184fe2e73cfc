"""A CNTK layer or ``@C.Function`` keeps none of the graphs it is applied into (CNTK's is a graph
of its own over placeholders; applying it clones that into the caller's graph): a dropped
graph is collected, and ``parameters`` keeps CNTK's order afterwards."""

import gc
import weakref

import numpy as np
import pytest

import stadyn.compat.cntk as C

pytestmark = pytest.mark.usefixtures("fresh_parameters")


def _collected(make):
    """Whether the graph ``make()`` returns (a CNTK Function) is collected once dropped."""
    ref = weakref.ref(make().variable)
    gc.collect()
    return ref() is None


def test_a_layers_dropped_graph_is_collected():
    dense = C.layers.Dense(3)
    x = C.input_variable(4)
    assert _collected(lambda: dense(x))
    assert [p.shape for p in dense.parameters] == [(4, 3), (3,)]


def test_a_sequentials_dropped_graph_is_collected_and_its_parameters_keep_their_order():
    model = C.layers.Sequential([C.layers.Dense(5), C.layers.LayerNormalization(),
                                 C.layers.Recurrence(C.layers.LSTM(2)), C.layers.Dense(3)])
    x = C.sequence.input_variable(4)
    z = model(x)
    order = [(p.name, p.shape) for p in model.parameters]   # walked while z lives
    del z
    gc.collect()
    assert [(p.name, p.shape) for p in model.parameters] == order
    assert _collected(lambda: model(x))
    assert [(p.name, p.shape) for p in model.parameters] == order


def test_a_functions_dropped_graph_is_collected_and_its_parameters_stay():
    dense = C.layers.Dense(2)

    @C.Function
    def model(a):
        return dense(a) + 1.0
    x = C.input_variable(3)
    assert _collected(lambda: model(x))
    assert [p.shape for p in model.parameters] == [(3, 2), (2,)]
    z = model(x)                    # a graph still kept computes as before
    assert z.eval({x: np.ones((1, 3), np.float32)}).shape == (1, 2)

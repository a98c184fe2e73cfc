"""BrainScript's raw node constructor ``new ComputationNode [ operation = ... ; inputs = ... ]``
(CNTK.core.bs's own form, which configs copy: Image/FCN's shared.bs), against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import build_network
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed


def test_new_computation_node_is_the_named_operation():
    a = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]], np.float32)
    b = np.array([[1.0, 1.0, -5.0], [-2.0, 0.25, 4.0]], np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        nodes = build_network("""{ a = Input {3} ; b = Input {3}
            MyPlus (x, y, tag = '') = new ComputationNode [ operation = 'Plus' ; inputs = (x : y) ]
            MyReLU (x, tag = '') = new ComputationNode [ operation = 'RectifiedLinear'
                                                         inputs = x ]
            s = MyPlus (a, b, tag = 'output') ; r = MyReLU (s) }""", lib).nodes
        feed(nodes["a"], a)
        feed(nodes["b"], b)
        nodes["r"].forward()
        np.testing.assert_array_equal(nodes["r"].d, np.maximum(a + b, 0))
        assert lib.operation_of(nodes["r"]) == "RectifiedLinear"
        assert lib.tagged["output"] == [nodes["s"]]    # the function's tag argument


def test_new_computation_node_row_stack_takes_its_inputs_as_one_array():
    # CNTK.core.bs: RowStack (inputs, tag = '') = new ComputationNode [ operation = 'RowStack' ;
    # inputs = _AsNodes (inputs) ]
    a = np.array([[1.0, -2.0, 3.0]], np.float32)
    b = np.array([[0.5, 4.0]], np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        nodes = build_network("""{ a = Input {3} ; b = Input {2}
            r = new ComputationNode [ operation = 'RowStack' ; inputs = (a : b) ] }""",
                              StadynLibrary()).nodes
        feed(nodes["a"], a)
        feed(nodes["b"], b)
        nodes["r"].forward()
        np.testing.assert_array_equal(nodes["r"].d, np.concatenate([a, b], axis=1))


@pytest.mark.parametrize("text, message", [
    # a node type Stadyn lacks (CNTK's SequenceWithSoftmax, ComputationNetworkBuilder.cpp:112)
    ("c = new ComputationNode [ operation = 'SequenceWithSoftmax' ; inputs = (x : x : x) ]",
     "operation 'SequenceWithSoftmax' is not supported: Stadyn has no node of that type"),
    # one cntk.exe lacks too (compiled out: ComputationNetworkBuilder.cpp:70-71, 154)
    ("c = new ComputationNode [ operation = 'GMMLogLikelihood' ; inputs = (x : x : x : x) ]",
     "Attempted to instantiate undefined operation GMMLogLikelihood"),
    # the C++ node's own settings are not translated to the library's arguments
    ("c = new ComputationNode [ operation = 'Pooling' ; inputs = x ; pool = 'max' ]",
     "operation 'Pooling' is not supported: its settings pool"),
    ("c = new ComputationNode [ inputs = x ]", r"takes a record \[ operation"),
    # the wrong number of inputs, at the record's line as for a call
    ("c = new ComputationNode [ operation = 'Plus' ; inputs = (x : x : x) ]",
     "operation 'Plus' takes 2 inputs, got 3"),
    ("c = new ComputationNode [ operation = 'Sigmoid' ; inputs = (x : x) ]",
     "operation 'Sigmoid' takes 1 input, got 2"),
    ("c = new ComputationNode [ operation = 'Plus' ; inputs = x ]",
     "Plus: missing a required argument: 'y'"),
    ("F (a, tag = '') = new ComputationNode [ operation = 'Times' ; inputs = a ]\nc = F (x)",
     "Times: missing a required argument"),
    # a layer (CNTK.core.bs's macro) is no node type
    ("c = new ComputationNode [ operation = 'DenseLayer' ; inputs = x ]",
     "operation 'DenseLayer' is not a node type: it is a layer"),
    # a library function that makes no node
    ("c = new ComputationNode [ operation = '_IsNone' ; inputs = x ]",
     "operation '_IsNone' is not a node type"),
])
def test_unsupported_computation_nodes_are_named_at_their_line(text, message):
    with pytest.raises(ConfigError, match=message) as err:
        build_network("{ x = Input {3}\n" + text + " }", StadynLibrary())
    assert err.value.line == 2

"""``x.name = ''`` on an NNabla Variable leaves it without a graph name: a leaf of a graph then
keeps its role (an input), as before the assignment, instead of becoming a parameter (a leaf
with a graph name is one, ``Subgraph.role``)."""

import numpy as np

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
from stadyn.graph import Subgraph


def test_empty_name_keeps_a_leaf_an_input():
    x = nn.Variable.from_numpy_array(np.ones(3, np.float32))
    x.name = ""
    y = F.tanh(x)
    assert x.name == "" and x.graph_name is None
    assert Subgraph([y]).role(x) == "input"


def test_name_copied_from_an_unnamed_variable_keeps_an_input():
    v1 = nn.Variable.from_numpy_array(np.ones(3, np.float32))
    v2 = nn.Variable.from_numpy_array(np.ones(3, np.float32))
    v2.name = v1.name                   # '' as NNabla shows it
    assert Subgraph([F.tanh(v2)]).role(v2) == "input"


def test_a_name_still_names_the_graph_leaf():
    x = nn.Variable.from_numpy_array(np.ones(3, np.float32))
    x.name = "w"
    assert x.graph_name == "w"

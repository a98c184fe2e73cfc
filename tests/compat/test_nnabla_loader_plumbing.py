"""The errors of NNabla's loader plumbing where Stadyn has no counterpart (what NNabla does
with the same calls is in ``compat_cases/nnabla_loading.py``): each names what to do instead."""

from __future__ import annotations

import io
import os
import zipfile
from types import SimpleNamespace

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.solvers as S
from stadyn import ModelFileError
from stadyn.compat.nnabla.utils import load as L

STATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                      "nnabla_solver_states")


def test_a_proto_variable_in_a_function_records_it_and_reflected_operators_are_refused():
    """A function or operator given a ProtoVariable records itself (it raised TypeError while
    Stadyn had no proto graphs; what NNabla 1.39 records: cases nnabla_graphdef_41); NNabla's
    ProtoVariable has no reflected operators, so ``2.0 * v`` is Python's TypeError."""
    with nn.graph_def.graph() as g:
        v = nn.ProtoVariable((2, 3), name="x")
        outs = [F.relu(v), F.add2(v, v), v * 2.0, -v]
        for use in (lambda: 2.0 * v, lambda: 1.0 - v):
            with pytest.raises(TypeError, match="unsupported operand"):
                use()
    assert [o.name for o in outs] == ["ReLU_out", "Add2_out", "MulScalar_out", "MulScalar_out_1"]
    assert list(g.default_graph().functions) == ["ReLU", "Add2", "MulScalar", "MulScalar_1"]


def test_restore_optimizer_state_refuses_a_dict_of_file_fields():
    fields = {"name": "optimizer", "network_name": "net", "solver": {"type": "Adam"}}
    with pytest.raises(TypeError, match="dict of an optimizer's file fields, with no "
                                        "solver; pass info.optimizers"):
        L.restore_optimizer_state(fields)


def test_load_names_an_optimizer_solver_stadyn_lacks(tmp_path):
    path = tmp_path / "eve.nntxt"
    path.write_text('network { name: "n" batch_size: 1 '
                    'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
                    'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
                    'function { name: "t" type: "Tanh" input: "x" output: "y" } } '
                    'optimizer { name: "o" network_name: "n" solver { type: "Eve" } }')
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ValueError, match=r"eve.nntxt: optimizer 'o': solver 'Eve' is not "
                                             r"supported \(Stadyn's NNabla solvers"):
            L.load([str(path)], prepare_data_iterator=False)


def test_load_files_refuses_a_scope_dict():
    ctx = SimpleNamespace(parameter_scope=nn.get_current_parameter_scope())
    with pytest.raises(TypeError, match="stadyn.ParameterRegistry"):
        L.load_files(ctx, L.get_initial_file_loader(), os.path.join(STATES, "adam_h5.nnp"))


def test_load_files_into_a_registry_and_a_damaged_state_member_names_it(tmp_path):
    registry = sd.ParameterRegistry()
    ctx = SimpleNamespace(parameter_scope=registry)
    with nn.parameter_scope("elsewhere"):
        L.load_files(ctx, L.get_initial_file_loader(), os.path.join(STATES, "adam_h5.nnp"))
    assert [k for k, _ in registry.items()] == ["fc/affine/W", "fc/affine/b"]
    bad = str(tmp_path / "bad.nnp")
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("optimizer.protobuf.optimizer", b"\xff\xff\xff")
    with pytest.raises(ModelFileError, match="bad.nnp:optimizer.protobuf.optimizer"):
        L.load_files(SimpleNamespace(), L.get_initial_file_loader(), bad)


def test_a_checkpoint_for_other_parameters_is_refused_before_anything_is_set():
    with sd.parameter_registry(sd.ParameterRegistry()):
        w = nn.Variable.from_numpy_array(np.zeros((3, 1)), need_grad=True)
        solver = S.Adam(0.01)
        solver.set_parameters({"other/W": w})
        ctx = SimpleNamespace()
        L.load_files(ctx, L.get_initial_file_loader(), os.path.join(STATES, "adam_h5.nnp"))
        checkpoint = ctx.optimizer_states_checkpoint["optimizer"]
        assert isinstance(checkpoint[1], io.BytesIO)
        with pytest.raises(ModelFileError, match="optimizer_Adam.h5"):
            L.restore_optimizer_state(SimpleNamespace(solver=solver, proto=None,
                                                      solver_checkpoint=checkpoint))
        assert solver.get_states()["other/W"].t == 0

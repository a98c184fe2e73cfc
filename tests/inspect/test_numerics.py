"""check_numerics names the op that made a NaN or an infinity, its scope and the user's line, in
both modes and both passes; every op error names the line that created the op."""

import inspect
import os

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
import stadyn.solvers as S
from stadyn.train import Trainer

HERE = os.path.relpath(__file__)


def _line() -> int:
    """The line number of the caller's next line."""
    return inspect.currentframe().f_back.f_lineno + 1


@pytest.fixture(params=[False, True], ids=["static", "dynamic"])
def dynamic(request):
    with sd.parameter_registry(sd.ParameterRegistry()), sd.auto_forward(request.param):
        yield request.param


def test_log_of_zero_names_the_log_op_its_scope_and_the_line(dynamic):
    x = sd.Variable.from_numpy_array(np.array([[1.0, 0.5, 2.0]], np.float32))
    # In dynamic mode the op raises as it is made; in static mode, at forward().
    with sd.check_numerics(), pytest.raises(sd.NumericsError) as err:
        with sd.parameter_scope("net"):
            h = PF.affine(x, 3, name="fc")
            line = _line()
            z = F.log(F.relu(h - 100.0))          # relu gives 0: log(0) = -inf
        F.sum(z).forward()
    e = err.value
    assert (e.op, e.scope, e.location, e.phase) == ("log", "net", f"{HERE}:{line}", "forward")
    assert str(e).startswith(f"log in scope 'net', created at {HERE}:{line}: its output holds "
                             "-inf (3 of 3 values)")
    assert isinstance(e, FloatingPointError)


def test_a_gradient_that_becomes_infinite_names_the_op_in_the_backward_pass(dynamic):
    with sd.check_numerics():
        x = sd.Variable.from_numpy_array(np.zeros((1, 3), np.float32))
        with sd.parameter_scope("net"):
            h = PF.affine(x, 3, name="fc")        # zero input, zero bias: h = 0
            line = _line()
            z = F.sqrt(h * h)                     # d sqrt(u)/du at 0 is inf
        loss = F.sum(z)
        loss.forward()
        assert float(loss.d) == 0.0               # the forward pass is finite
        with pytest.raises(sd.NumericsError) as err:
            loss.backward()
    e = err.value
    assert (e.op, e.scope, e.location, e.phase) == ("sqrt", "net", f"{HERE}:{line}", "backward")
    assert "the gradient it gives its input 0 holds inf" in str(e)


def test_checking_only_at_backward_time_still_finds_the_op(dynamic):
    """In dynamic mode ops run as they are made: a check that starts afterwards replays the
    graph to find the op (the static replay path does the same)."""
    x = sd.Variable.from_numpy_array(np.zeros((1, 3), np.float32))
    with sd.parameter_scope("net"):
        h = PF.affine(x, 3, name="fc")
        z = F.sqrt(h * h)
    loss = F.sum(z)
    loss.forward()
    with sd.check_numerics(), pytest.raises(sd.NumericsError) as err:
        loss.backward()
    assert err.value.op == "sqrt" and err.value.phase == "backward"


def test_without_the_check_a_nan_passes_silently(dynamic):
    x = sd.Variable.from_numpy_array(np.array([0.0], np.float32))
    y = F.log(x)
    y.forward()
    assert np.isneginf(y.d).all()


def test_the_first_op_is_named_not_the_ones_its_nan_flows_into(dynamic):
    x = sd.Variable.from_numpy_array(np.array([-1.0, 4.0], np.float32))
    with sd.check_numerics(), pytest.raises(sd.NumericsError) as err:
        line = _line()
        y = F.sqrt(x)                             # NaN here ...
        z = F.sum(F.exp(y) * 2.0)                 # ... flows on through exp, mul, sum
        z.forward()
    assert err.value.op == "sqrt" and err.value.location == f"{HERE}:{line}"
    assert "holds NaN (1 of 2 values)" in str(err.value)


def test_trainer_check_numerics_names_the_op():
    with sd.parameter_registry(sd.ParameterRegistry()):
        x, t = sd.Variable((4, 3)), sd.Variable((4, 1))
        with sd.parameter_scope("net"):
            z = PF.affine(x, 2, name="fc")
            line = _line()
            penalty = F.log(F.abs(z) * 0.0)
        loss = F.mean(F.softmax_cross_entropy(z, t)) + F.mean(penalty)
        solver = S.Sgd(0.1)
        solver.set_parameters(sd.get_parameters())
        trainer = Trainer(z, (loss, None), [solver], check_numerics=True)
        with pytest.raises(sd.NumericsError) as err:
            trainer.train_minibatch({x: np.ones((4, 3)), t: np.zeros((4, 1))})
        assert (err.value.op, err.value.location) == ("log", f"{HERE}:{line}")
        with pytest.raises(sd.StadynError, match="compiled program cannot"):
            Trainer(z, (loss, None), [solver], check_numerics=True, compile="program")


def test_a_shape_error_in_a_resized_static_graph_names_the_line():
    with sd.parameter_registry(sd.ParameterRegistry()):
        a, b = sd.Variable((2, 3)), sd.Variable((2, 3))
        with sd.parameter_scope("block"):
            line = _line()
            y = F.add2(a, b)
        a.data = torch.zeros(4, 3)                # b stays (2, 3)
        with pytest.raises(sd.ShapeError) as err:
            y.forward()
    message = str(err.value)
    assert message.startswith("add2 in scope 'block': cannot apply to inputs")
    assert message.endswith(f" (created at {HERE}:{line})")


def test_a_dynamic_op_error_names_the_line():
    with sd.auto_forward():
        a = sd.Variable.from_numpy_array(np.zeros((2, 3)))
        b = sd.Variable.from_numpy_array(np.zeros((4, 5)))
        with pytest.raises(sd.ShapeError) as err:
            line = _line()
            F.add2(a, b)
    assert str(err.value).startswith("add2: cannot apply to inputs [input (2, 3), input (4, 5)]")
    assert str(err.value).endswith(f" (created at {HERE}:{line})")


def test_nodes_made_through_the_cntk_layer_record_the_users_line():
    import stadyn.compat.cntk as C
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = C.input_variable(3)
        line = _line()
        z = C.layers.Dense(2)(x)
    assert z.variable.parent.where == f"{HERE}:{line}"



@pytest.mark.parametrize("when", ["dynamic", "static build", "static run", "shape refresh"])
def test_a_failure_that_is_not_about_the_inputs_reaches_the_user_as_it_is(monkeypatch, when):
    """A module an op's kernel imports that fails to import (a user's stand-in module without a
    spec, which torch's lazy ``find_spec`` once met inside ``relu``) is the ImportError itself,
    not a ShapeError saying the op cannot apply to its inputs: in the dynamic mode, in a static
    build's shape inference, in a plan's run, and in the shape refresh of a resized input."""
    from stadyn.ops import CATALOG
    spec = CATALOG["relu"]
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        raise ImportError("no module named 'standin'")
    x = sd.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    if when == "dynamic":
        monkeypatch.setattr(spec, "impl", failing)
        with sd.auto_forward(), pytest.raises(ImportError, match="standin"):
            F.relu(x)
    elif when == "static build":
        monkeypatch.setattr(spec, "impl", failing)
        # (an earlier relu of (2, 3) in this process left its shapes in the op's cache, which
        # a build reads instead of inferring: this build must infer)
        monkeypatch.setattr(spec, "inferred", {})
        with pytest.raises(ImportError, match="standin"):
            F.relu(x)
    elif when == "static run":
        x.need_grad = True          # a backward may follow: lowered on its first run, not eager
        y = F.relu(x)                                   # built before the kernel breaks
        monkeypatch.setattr(spec, "impl", failing)
        with pytest.raises(ImportError, match="standin"), \
                pytest.warns(RuntimeWarning, match="tracing failed"):   # then runs eagerly
            y.forward()
    else:
        import torch
        from stadyn.graph import Subgraph, refresh_shapes
        y = F.relu(x)
        x.data = torch.zeros(5, 7)                      # shapes re-inferred for a new size
        monkeypatch.setattr(spec, "impl", failing)
        with pytest.raises(ImportError, match="standin"):
            refresh_shapes(Subgraph([y]).nodes, [x])
    assert calls

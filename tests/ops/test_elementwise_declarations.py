"""The ops declared ``elementwise`` are: inputs broadcast against each other, and each output
element computed from the inputs' elements at its position alone.  CNTK's first inference pass
(``graph/_first_pass.py``) relies on the declaration to give an operand of unknown shape the
other operands' shape, so a wrong mark there changes a CNTK model's inferred shapes."""

import itertools

import numpy as np
import pytest
import torch

from stadyn.ops import CATALOG

ELEMENTWISE = sorted(name for name, spec in CATALOG.items() if spec.elementwise)
SHAPES = [(2, 1, 3), (1, 4, 1), (2, 4, 1)]


def _operands(name, count, rng):
    """Operands of the broadcast shapes above, in each op's domain (positive bases and
    divisors; a boolean-like condition for ``where``)."""
    out = []
    for k in range(count):
        if name == "where" and k == 0:
            values = (rng.random(SHAPES[k]) > 0.5).astype(np.float32)
        else:
            values = rng.uniform(0.5, 2.0, SHAPES[k]).astype(np.float32)
            if name in ("equal", "not_equal", "less_equal", "greater_equal"):
                values = np.round(values)           # ties, so equality is exercised
        out.append(torch.from_numpy(values))
    return out


def test_the_marked_ops_are_the_binary_and_ternary_broadcasting_ones():
    # CNTK's binary elementwise ops and the ones NNabla adds beside them
    assert {"add2", "sub2", "mul2", "div2", "pow2", "maximum2", "minimum2", "mod2", "atan2",
            "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
            "logical_and", "where"} <= set(ELEMENTWISE)
    for name in ("affine", "batch_matmul", "add_scalar", "sum", "concatenate"):
        assert not CATALOG[name].elementwise, name


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_marked_op_broadcasts_and_computes_each_element_alone(name):
    spec = CATALOG[name]
    count = len(spec.inputs)
    assert count in (2, 3) and not spec.inputs[0].startswith("*")
    operands = _operands(name, count, np.random.default_rng(0))
    out = spec.impl(*operands)
    expected_shape = np.broadcast_shapes(*SHAPES[:count])
    assert tuple(out.shape) == expected_shape
    broadcast = [o.expand(expected_shape) for o in operands]
    for index in itertools.product(*map(range, expected_shape)):
        alone = spec.impl(*[b[index].reshape(1) for b in broadcast])
        assert alone.reshape(()).item() == pytest.approx(out[index].item(), rel=1e-6), index

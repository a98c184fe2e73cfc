"""A ``kernel_op`` operator's schema declares its results new tensors, and the graph passes
take them so: ``reuse_dead_inputs`` runs a ReLU in place over a result that nothing else
reads.  A kernel that returned a view of its input therefore had that ReLU write into the
input, which the program read again: ``relu(flat(h)) + h.sum()`` of ``[[-1, 2, -3], [4, -5,
6]]`` gave 12 where eager torch gives 3 (SILENT).  A kernel must return memory of its own;
one that does not raises RuntimeError naming the operator on its call, as torch's
``custom_op`` does for the same contract."""

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from stadyn.graph import reuse_dead_inputs
from stadyn.ops._kernel_op import kernel_op

_FLAT_VIEW = kernel_op("stadyn_kernels::test_fresh_flat_view", "(Tensor x) -> Tensor",
                       lambda x: x.view(-1), lambda x: x.new_empty(x.numel()))
_FLAT_COPY = kernel_op("stadyn_kernels::test_fresh_flat_copy", "(Tensor x) -> Tensor",
                       lambda x: x.reshape(-1).clone(), lambda x: x.new_empty(x.numel()))
_SAME = kernel_op("stadyn_kernels::test_fresh_same", "(Tensor x) -> Tensor",
                  lambda x: x, lambda x: torch.empty_like(x))
_IN_LIST = kernel_op("stadyn_kernels::test_fresh_in_list", "(Tensor[] xs) -> Tensor",
                     lambda xs: xs[1][1:], lambda xs: xs[1].new_empty(xs[1].shape[0] - 1))
_TWO_HALVES = kernel_op("stadyn_kernels::test_fresh_two_halves", "(Tensor x) -> (Tensor, Tensor)",
                        lambda x: (lambda y: (y[:2], y[2:]))(x * 2.0),
                        lambda x: (x.new_empty(2), x.new_empty(x.shape[0] - 2)))
_EMPTY = kernel_op("stadyn_kernels::test_fresh_empty", "(Tensor x) -> (Tensor, Tensor)",
                   lambda x: (x.new_empty(0), x.new_empty(0)),
                   lambda x: (x.new_empty(0), x.new_empty(0)))

_X = torch.tensor([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]])


def _program(flat):
    def f(x):
        h = x * 1.0
        return torch.relu(flat(h)) + h.sum()
    gm = make_fx(f, tracing_mode="fake")(torch.ones(2, 3))
    assert reuse_dead_inputs(gm) == 1           # the ReLU runs in place over flat's result
    return gm


def test_a_kernel_returning_a_view_of_its_input_raises_instead_of_a_wrong_value():
    gm = _program(_FLAT_VIEW)
    with pytest.raises(RuntimeError, match="test_fresh_flat_view .*shares memory"):
        gm(_X)


def test_a_kernel_returning_new_memory_runs_in_place_and_matches_eager_torch():
    gm = _program(_FLAT_COPY)
    expected = torch.relu(_X.reshape(-1)) + _X.sum()        # [3, 5, 3, 7, 3, 9]
    torch.testing.assert_close(gm(_X), expected, rtol=0, atol=0)


@pytest.mark.parametrize("call", [lambda: _SAME(_X), lambda: _IN_LIST([_X[0], _X[1]]),
                                  lambda: _TWO_HALVES(torch.ones(5))],
                         ids=["its_input", "a_list_items_view", "two_results_over_one_tensor"])
def test_eager_calls_of_kernels_sharing_memory_raise(call):
    with pytest.raises(RuntimeError, match="declares its results new tensors"):
        call()


def test_results_of_no_bytes_are_not_taken_for_shared_memory():
    assert [tuple(t.shape) for t in _EMPTY(torch.ones(3))] == [(0,), (0,)]

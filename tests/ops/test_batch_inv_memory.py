"""``batch_inv(rule="nnabla")`` sums its panel products one at a time: the tensors alive at once
stay a handful however deep the sum (not one per inner index, which for a 1024 x 1024 matrix was
some 670 MB more than the inverse itself)."""

import weakref

import torch

from stadyn.ops import _linalg


class _Counted(torch.Tensor):
    """A tensor that counts how many of its kind are alive, and the most that ever were."""

    alive = 0
    most = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        if isinstance(out, _Counted) and not getattr(out, "_counted", False):
            out._counted = True
            cls.alive += 1
            cls.most = max(cls.most, cls.alive)
            weakref.finalize(out, cls._gone)
        return out

    @classmethod
    def _gone(cls):
        cls.alive -= 1


def test_ordered_sum_keeps_few_tensors_alive():
    torch.manual_seed(0)
    depth = 64
    lhs = torch.randn(1, 7, depth)
    rhs = torch.randn(1, depth, 8)
    split = _linalg._left_over(7, 8, False, "cpu")
    expected = _linalg._ordered_sum(lhs, rhs, split)
    _Counted.alive = _Counted.most = 0
    got = _linalg._ordered_sum(lhs.as_subclass(_Counted), rhs.as_subclass(_Counted), split)
    assert torch.equal(got.as_subclass(torch.Tensor), expected)
    # the running sum, four partial sums, their total, a product and its slices
    assert _Counted.most <= 12, _Counted.most
    # the same sum as a matrix product in float64, to the float32 rounding of 64 terms
    ref = (lhs.double() @ rhs.double()).float()
    assert torch.allclose(expected, ref, atol=1e-4)

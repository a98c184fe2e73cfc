"""1-bit SGD's quantizer (``stadyn.distributed._quantized``) keeps every tensor it makes on the
gradients' device: run on ``meta`` tensors (no data, any device's rules) on the CPU, and on CUDA
against the CPU's values where a GPU is present."""

from __future__ import annotations

import pytest
import torch

from stadyn.distributed import QuantizedAllReduce
from stadyn.distributed._quantized import _pack, _unpack

BITS = (1, 2, 4, 8, 16)


@pytest.mark.parametrize("bits", BITS)
def test_packing_stays_on_the_codes_device(bits):
    codes = torch.zeros(10, dtype=torch.int32, device="meta")
    packed = _pack(codes, bits)
    assert packed.device.type == "meta" and packed.dtype == torch.uint8
    assert packed.numel() == -(-10 * bits // 8)
    unpacked = _unpack(packed, bits, 10)
    assert unpacked.device.type == "meta" and unpacked.shape == (10,)


@pytest.mark.parametrize("bits", BITS)
def test_quantize_stays_on_the_values_device(bits):
    codes, values, residual = QuantizedAllReduce(bits).quantize(
        torch.zeros(4, 3, device="meta"), torch.zeros(4, 3, device="meta"))
    assert {t.device.type for t in (codes, values, residual)} == {"meta"}
    assert codes.shape == values.shape == residual.shape == (4, 3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("bits", BITS)
def test_cuda_packing_and_quantizing_equal_the_cpus(bits):
    g = torch.Generator().manual_seed(bits)
    values = torch.randn(5, 7, generator=g)
    q = QuantizedAllReduce(bits)
    on_cpu = q.quantize(values)
    on_gpu = q.quantize(values.cuda())
    for a, b in zip(on_cpu, on_gpu):
        assert b.is_cuda
        torch.testing.assert_close(b.cpu(), a)
    codes = on_cpu[0].reshape(-1)
    packed = _pack(codes.cuda(), bits)
    assert packed.is_cuda
    torch.testing.assert_close(packed.cpu(), _pack(codes, bits))
    torch.testing.assert_close(_unpack(packed, bits, codes.numel()).cpu(), codes)


def _two_identical_workers(monkeypatch, devices: set):
    """A world of two workers that hold the same gradients, in one process: each all-gather
    gives every worker this one's tensor (``devices`` collects the devices it is given)."""
    import stadyn.distributed._quantized as Q

    def all_gather(out, t, group=None):
        devices.add(t.device)
        for o in out:
            devices.add(o.device)
            o.copy_(t)

    monkeypatch.setattr(Q.C, "run", lambda what, fn, *a, **k: all_gather(*a, **k))
    monkeypatch.setattr(QuantizedAllReduce, "size", property(lambda self: 2))
    monkeypatch.setattr(QuantizedAllReduce, "rank", property(lambda self: 0))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("bits", (1, 2, 16))
def test_cuda_all_reduce_exchanges_on_the_gpu_and_equals_the_cpus(bits, monkeypatch):
    devices: set = set()
    _two_identical_workers(monkeypatch, devices)
    grads = [torch.randn(5, 7, generator=torch.Generator().manual_seed(1)), torch.randn(3)]
    on_cpu = [g.clone() for g in grads]
    QuantizedAllReduce(bits).all_reduce(on_cpu)
    on_gpu = [g.cuda() for g in grads]
    devices.clear()
    QuantizedAllReduce(bits).all_reduce(on_gpu)
    assert {d.type for d in devices} == {"cuda"}
    for a, b in zip(on_cpu, on_gpu):
        torch.testing.assert_close(b.cpu(), a)

"""A CUDA device index is honoured: ``sd.context('cuda:1')`` and ``stadyn demo --device cuda:1``
used to run on GPU 0.  No GPU is needed: torch is told it has two (or one) and the tests look at
the device the context resolves to, and at the error for a GPU that is not there."""

from __future__ import annotations

import pytest
import torch

import stadyn as sd


@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


@pytest.mark.parametrize("args, kwargs", [
    (("cuda:1",), {}), (("cuda", 1), {}), (("cudnn:1",), {}), (("cuda:1",), {"device_id": 1}),
    (("gpu",), {"device_id": "1"}),
])
def test_the_device_index_is_honoured(two_gpus, args, kwargs):
    ctx = sd.context(*args, **kwargs)
    assert ctx.device == torch.device("cuda", 1)
    assert (ctx.backend, ctx.device_id) == ("cuda", 1)


def test_cuda_without_an_index_is_gpu_0(two_gpus):
    assert sd.context("cuda").device == torch.device("cuda", 0)


def test_a_gpu_the_machine_does_not_have_is_an_error_naming_those_it_has(two_gpus):
    with pytest.raises(sd.StadynError, match=r"'cuda:2' with device 2: this machine has 2 CUDA "
                                             r"device\(s\) \(cuda:0 to cuda:1\)"):
        _ = sd.context("cuda:2")
    with pytest.raises(sd.StadynError, match="has 2 CUDA device"):
        _ = sd.context("cuda", 5)


@pytest.mark.parametrize("args, kwargs, message", [
    (("cuda:1",), {"device_id": 0}, "name different devices"),
    (("cuda:x",), {}, "the device index must be a whole number"),
    (("cuda",), {"device_id": -1}, "the device index must be >= 0"),
])
def test_contradictory_or_bad_indices_are_refused(two_gpus, args, kwargs, message):
    with pytest.raises(sd.StadynError, match=message):
        _ = sd.context(*args, **kwargs)


def test_demo_runs_on_the_gpu_its_device_names(two_gpus, monkeypatch):
    from stadyn.cli import demo

    seen = []

    class Stop(Exception):
        pass

    def train(mode, train, epochs, batch_size, seed, log, ctx=None):
        seen.append(ctx.device)
        raise Stop
    monkeypatch.setattr(demo, "TrainingRun", train)       # the demo's modes, a step of each in turn
    lines = []
    with pytest.raises(Stop):
        demo.run_demo(epochs=1, train_limit=8, plot=False, log=lines.append, device="cuda:1")
    assert seen == [torch.device("cuda", 1)]
    assert "cuda:1" in lines[0]


def test_demo_on_a_missing_gpu_stops_before_training(monkeypatch):
    from stadyn.cli import demo
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(demo, "train_digits_cnn", lambda *a, **k: pytest.fail("trained"))
    monkeypatch.setattr(demo, "TrainingRun", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(sd.StadynError, match=r"'cuda:1' with device 1: this machine has 1 CUDA "
                                             r"device\(s\) \(cuda:0\)"):
        demo.run_demo(epochs=1, train_limit=8, plot=False, log=lambda line: None,
                      device="cuda:1")

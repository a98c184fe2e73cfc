"""``sd.seed`` and ``nnabla.random.seed`` seed torch as ``torch.manual_seed`` does
(``stadyn._random.seed_torch``), without queueing accelerator seeding a CPU-only torch can
never run."""

import pytest
import torch

import stadyn as sd
from stadyn import _random
from stadyn.compat.nnabla import random as nn_random

SEEDERS = {
    "sd.seed": sd.seed,
    "nnabla.random.seed": nn_random.seed,
    "nnabla.random.set_function_seed": nn_random.set_function_seed,
    "seed_torch": _random.seed_torch,
}

no_accelerator = pytest.mark.skipif(torch.accelerator.current_accelerator() is not None,
                                    reason="this torch is built with an accelerator")


@pytest.fixture(autouse=True)
def torch_generator_kept():
    state = torch.get_rng_state()
    kept = (_random.prng.get_state(), _random._next_auto_seed[0], nn_random.pseed)
    yield
    torch.set_rng_state(state)
    _random.prng.set_state(kept[0])
    _random._next_auto_seed[0] = kept[1]
    nn_random.pseed = kept[2]


# (sd.seed and nnabla.random.seed also seed a NumPy generator, which takes 0 .. 2**32 - 1)
@pytest.mark.parametrize("name, value", [(name, v) for name in SEEDERS for v in (0, 5, 313)]
                         + [(name, v) for name in ("nnabla.random.set_function_seed",
                                                   "seed_torch") for v in (2 ** 63 + 5, -1)])
def test_seeding_draws_what_torch_manual_seed_draws(name, value):
    torch.manual_seed(value)
    expected = (torch.rand(4), torch.randn(3), torch.randint(0, 1000, (3,)))
    torch.manual_seed(value + 1 if value >= 0 else 7)   # (elsewhere)
    SEEDERS[name](value)
    got = (torch.rand(4), torch.randn(3), torch.randint(0, 1000, (3,)))
    assert all(torch.equal(a, b) for a, b in zip(got, expected))
    assert torch.initial_seed() == value % 2 ** 64


def test_a_seed_torch_cannot_take_fails_as_torch_manual_seed_does():
    with pytest.raises(ValueError) as theirs:
        torch.manual_seed(2 ** 64)
    with pytest.raises(ValueError) as ours:
        _random.seed_torch(2 ** 64)
    assert str(ours.value) == str(theirs.value)


@no_accelerator
@pytest.mark.parametrize("name", SEEDERS)
def test_without_an_accelerator_no_lazy_accelerator_seeding_is_queued(name, monkeypatch):
    """torch.manual_seed queues CUDA/XPU/MTIA seeding with the caller's stack
    (traceback.format_stack, ms per call in a deep stack); on a CPU-only build it can never
    run, so seeding does not go through it."""
    def refused(*args, **kwargs):
        raise AssertionError("torch.manual_seed called on a build without an accelerator")
    monkeypatch.setattr(torch, "manual_seed", refused)
    SEEDERS[name](11)
    a = torch.rand(3)
    torch.default_generator.manual_seed(11)
    assert torch.equal(a, torch.rand(3))


@pytest.mark.parametrize("name", SEEDERS)
def test_with_an_accelerator_in_the_build_torch_manual_seed_seeds_it(name, monkeypatch):
    """With an accelerator built in (here pretended: this CI's torch is CPU-only), seeding is
    torch.manual_seed itself, which seeds the device now or at its initialization."""
    calls = []
    monkeypatch.setattr(torch.accelerator, "current_accelerator",
                        lambda check_available=False: torch.device("cuda"))
    monkeypatch.setattr(torch, "manual_seed", calls.append)
    SEEDERS[name](9)
    assert calls == [9]

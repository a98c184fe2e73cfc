"""Seeds of the random ops: a plain seed follows NNabla's rule (a fresh generator per dynamic
call, the stream going on in a static graph); a :class:`stadyn.ops.RandomStream` keeps one
stream per node whatever runs it -- a dynamic call, a static plan, a re-traced plan for another
batch size, or an eagerly run plan (CNTK's rule: every evaluation of a random Function draws
new values, and Functions made with the same seed start alike)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.ops import RandomStream


def _zeros(*shape):
    return sd.Variable.from_numpy_array(np.zeros(shape, np.float32))


def _first_draws(seed, n):
    g = torch.Generator()
    g.manual_seed(seed)
    return torch.rand(n, generator=g).numpy()


def test_a_stream_draws_torch_generators_values_in_order_in_both_modes():
    expected = _first_draws(11, 12)
    s = RandomStream(11)
    with sd.auto_forward():
        a = F.rand_like(_zeros(4), seed=s).d
        b = F.rand_like(_zeros(4), seed=s).d
    y = F.rand_like(_zeros(4), seed=s)          # static: the same stream goes on
    y.forward()
    np.testing.assert_array_equal(np.concatenate([a, b, y.d]), expected)


def test_a_static_plan_retraced_for_another_batch_size_continues_the_stream():
    expected = _first_draws(5, 2 + 3 + 2)
    x = sd.Variable((2,))
    y = F.rand_like(x, seed=RandomStream(5))
    x.d = np.zeros(2, np.float32)
    y.forward()
    first = y.d.copy()
    x.data = torch.zeros(3)
    y.forward()
    second = y.d.copy()
    x.data = torch.zeros(2)
    y.forward()
    np.testing.assert_array_equal(np.concatenate([first, second, y.d]), expected)


class _Same:
    """A CNTK user function (Python, untraceable): its graph runs as an eager plan."""

    def forward_arrays(self, arrays, for_backward):
        return None, arrays[0]

    def backward_arrays(self, state, gradient):
        return [gradient]

    def output_shape(self, shapes):
        return shapes[0], None


def test_an_eagerly_run_graph_draws_new_values_on_every_forward():
    y = F.cntk_user_function(F.rand_like(_zeros(3), seed=RandomStream(9)), function=_Same())
    y.forward()
    first = y.d.copy()
    y.forward()
    np.testing.assert_array_equal(np.concatenate([first, y.d]), _first_draws(9, 6))
    z = F.cntk_user_function(F.rand_like(_zeros(3), seed=9), function=_Same())
    z.forward()                                 # a plain seed in an eager plan: NNabla's rule
    np.testing.assert_array_equal(z.d, _first_draws(9, 3))


def test_a_plain_seed_draws_on_in_a_static_graph_however_it_runs():
    # NNabla's function keeps its generator from forward to forward (and CNTK 2.7's random
    # Functions draw new values on every eval): a static graph run op by op (function hooks),
    # or eagerly (an op that cannot be traced), draws on as its plan does, where it seeded the
    # op afresh on every run
    want = _first_draws(9, 6)
    plan = F.rand_like(_zeros(3), seed=9)
    hooked = F.rand_like(_zeros(3), seed=9)
    eager = F.cntk_user_function(F.rand_like(_zeros(3), seed=9), function=_Same())
    for y in (plan, hooked, eager):
        runs = []
        for _ in range(2):
            y.forward(function_pre_hook=(lambda f: None) if y is hooked else None)
            runs.append(y.d.copy())
        np.testing.assert_array_equal(np.concatenate(runs), want)
    with sd.auto_forward():     # a dynamic-mode call is a function of its own: drawn anew
        np.testing.assert_array_equal(F.rand_like(_zeros(3), seed=9).d, want[:3])


def test_a_stream_is_an_int_for_files_and_refuses_a_negative_seed():
    s = RandomStream(3)
    assert isinstance(s, int) and s == 3 and repr(int(s)) == "3"
    with pytest.raises(ValueError, match="must be >= 0"):
        RandomStream(-1)


def test_a_pickled_stream_keeps_its_offset_and_its_last_save():
    # made at offset 30 and never saved: CNTK's rngOffset shown and a copy's start are 30
    s = RandomStream(3, offset=30)
    back = pickle.loads(pickle.dumps(s))
    assert (back.saved_offset(), back.restarted().position(), back.position()) == (30, 30, 30)
    # drawn on to 31 and saved there, then drawn on: the save's place survives the round trip
    cpu = torch.device("cpu")
    torch.rand(1, generator=s.generator(cpu))
    s.mark_saved(31)
    torch.rand(2, generator=s.generator(cpu))
    back = pickle.loads(pickle.dumps(s))
    assert (back.saved_offset(), back.restarted().position(), back.position()) == (31, 31, 33)
    assert torch.equal(torch.rand(4, generator=back.generator(cpu)),
                       torch.rand(4, generator=s.generator(cpu)))

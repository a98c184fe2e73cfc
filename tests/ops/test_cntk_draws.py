"""CNTK 2.7's own random numbers (``stadyn.ops.CNTKStream``, ``stadyn._mt19937``'s draws)
against what CNTK 2.7 drew on the CPU (``tests/fixtures/cntk_random_values``, written by its
``make_values.py``): the values to the bit, float32 and float64, and CNTK's count of them (its
``rngOffset``); and the stream's engine going on where it stood in a static graph, a Stadyn
model file and a pickle."""

from __future__ import annotations

import os
import pickle
import threading

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn._cpp_normal import normal_doubles
from stadyn._mt19937 import MT19937_64
from stadyn.ops import CNTKStream, RandomStream
from stadyn.ops._cntk_distributions import mask_doubles, uniform_doubles
from stadyn.ops._cntk_draws import cntk_draw, cntk_sample

CNTK = np.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_random_values",
                            "values.npz"))


def _zeros(shape, double: bool = False):
    x = sd.Variable.from_numpy_array(np.zeros(shape, np.float32))
    return F.cast(x, "float64") if double else x


def _drawn(make):
    with sd.auto_forward():
        return make().d


def _bits(values) -> np.ndarray:
    return np.packbits(np.asarray(values) != 0)


def test_uniform_rounds_its_bounds_to_float32_and_draws_in_double_as_cntk():
    s = CNTKStream(14)
    got = _drawn(lambda: F.rand_like(_zeros(8000), -3.0, 0.7, seed=s))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, CNTK["uniform_f32"])
    assert s.position() == 8000


def test_normal_draws_pairs_and_counts_an_odd_draw_rounded_up_to_even_as_cntk():
    s = CNTKStream(9)
    a = _drawn(lambda: F.randn_like(_zeros(4001), 0.5, 1.5, seed=s))
    b = _drawn(lambda: F.randn_like(_zeros(4001), 0.5, 1.5, seed=s))
    np.testing.assert_array_equal(a, CNTK["normal_f32_a"])
    np.testing.assert_array_equal(b, CNTK["normal_f32_b"])
    assert s.position() == 2 * 4002


@pytest.mark.parametrize("key, make", [
    ("normal_f64", lambda s: F.randn_like(_zeros(4000, double=True), 0.0, 1.0, seed=s)),
    ("gumbel_f64", lambda s: F.gumbel_like(_zeros(3000, double=True), 0.5, 2.0, seed=s)),
    ("gumbel_f32", lambda s: F.gumbel_like(_zeros(8000), 0.5, 2.0, seed=s)),
], ids=["normal_f64", "gumbel_f64", "gumbel_f32"])
def test_normal_and_gumbel_values_are_cntks_to_the_bit(key, make):
    seed = 9 if key.startswith("normal") else 13
    got = _drawn(lambda: make(CNTKStream(seed)))
    assert got.dtype == CNTK[key].dtype
    np.testing.assert_array_equal(got, CNTK[key])


def test_bernoulli_is_cntks_mask():
    got = _drawn(lambda: F.bernoulli_like(_zeros(65536), 0.3, seed=CNTKStream(12)))
    np.testing.assert_array_equal(_bits(got), CNTK["bernoulli_f32"])


def test_dropout_draws_cntks_masks_and_scales_by_its_float32_factor():
    s = CNTKStream(11)
    ones = sd.Variable.from_numpy_array(np.ones((64, 1024), np.float32))
    a = _drawn(lambda: F.dropout(ones, 0.3, seed=s))
    b = _drawn(lambda: F.dropout(ones, 0.3, seed=s))
    np.testing.assert_array_equal(_bits(a), CNTK["dropout_a"])
    np.testing.assert_array_equal(_bits(b), CNTK["dropout_b"])
    assert set(np.unique(a).tolist()) == {0.0, float(CNTK["dropout_kept_value"])}
    assert s.position() == 2 * 64 * 1024


def test_random_sample_draws_cntks_classes_and_counts_its_tries():
    s = CNTKStream(15)
    w = sd.Variable.from_numpy_array(np.arange(1, 201, dtype=np.float32))
    rows = _drawn(lambda: F.random_sample(w, 150, False, seed=s))
    np.testing.assert_array_equal(rows.argmax(axis=1), CNTK["sample_distinct"])
    assert s.position() == int(CNTK["sample_distinct_tries"]) > 150    # CNTK's rngOffset


def test_a_static_graph_draws_on_from_the_stream_on_each_forward():
    x = _zeros((3, 4))
    y = F.randn_like(x, seed=CNTKStream(9))
    y.forward()
    first = y.d.copy()
    y.forward()
    want = _drawn(lambda: F.randn_like(_zeros((2, 3, 4)), seed=CNTKStream(9)))
    np.testing.assert_array_equal(np.stack([first, y.d]), want)


def _normals_after(stream: CNTKStream, n: int) -> np.ndarray:
    return _drawn(lambda: F.randn_like(_zeros(n), seed=stream))


def test_a_stadyn_model_file_keeps_the_engine_where_it_stood(tmp_path):
    """A normal draw leaves the engine where CNTK's count does not say (its tries vary): the
    Stadyn file keeps the engine itself, so the loaded graph draws on exactly."""
    x = _zeros(5)
    y = F.randn_like(x, seed=CNTKStream(9))
    y.forward()
    path = os.path.join(tmp_path, "normal.stadyn")
    sd.save(path, {"y": y}, {"x": x})
    y.forward()
    loaded = sd.load(path)(x=np.zeros(5, np.float32))["y"]
    np.testing.assert_array_equal(loaded, y.d)


def test_a_pickled_stream_draws_on_where_it_stood_and_keeps_its_save():
    s = CNTKStream(9, offset=4)
    _normals_after(s, 7)
    s.mark_saved()
    copy = pickle.loads(pickle.dumps(s))
    assert (copy.position(), copy.saved_offset()) == (s.position(), s.saved_offset()) == (12, 12)
    np.testing.assert_array_equal(_normals_after(copy, 6), _normals_after(s, 6))


def test_a_copy_starts_from_its_seed_moved_on_by_the_offset_of_the_last_save():
    """CNTK 2.7's clone seeds a new engine and discards the saved count of values, which after
    a normal draw is not where the original's engine stands."""
    s = CNTKStream(9)
    _normals_after(s, 5)
    s.mark_saved()
    assert s.saved_offset() == 6
    rng = MT19937_64(9)
    rng.discard(6)
    want = np.float32(normal_doubles(rng, 4))
    np.testing.assert_array_equal(_normals_after(s.restarted(), 4), want)
    assert s.restarted().saved_offset() == 6


def test_a_restored_state_of_another_kind_or_seed_is_refused():
    s = CNTKStream(3)
    assert isinstance(RandomStream.restored(3, s.state()), CNTKStream)
    with pytest.raises(ValueError, match="not the state of a CNTK stream seeded 3"):
        CNTKStream.restored(3, RandomStream(3).state())
    with pytest.raises(ValueError, match="not the state of a CNTK stream seeded 4"):
        RandomStream.restored(4, s.state())             # (seed 3's)
    with pytest.raises(ValueError, match="offset must be >= 0"):
        CNTKStream(3, offset=-1)


def test_the_engine_gives_back_discards_and_restores_its_numbers():
    r = MT19937_64(5)
    first = r.take(700)
    r.give_back(first[650:])
    assert int(r()) == int(first[650])
    rest = r.take(49)
    np.testing.assert_array_equal(rest, first[651:])
    skipped = MT19937_64(5)
    skipped.discard(700)
    restored = MT19937_64.from_state(r.state())
    assert r() == skipped() == restored()
    with pytest.raises(ValueError, match="not the state"):
        MT19937_64.from_state(np.zeros(3, np.uint64))


def test_a_time_major_stream_draws_time_step_by_time_step_and_keeps_the_flag():
    """Of a sequence operand ``(batch, time, ...)`` CNTK draws its minibatch's columns
    ``t * sequences + s`` (compat_cases' ``random_values_of_sequences_are_cntks`` compares with
    CNTK 2.7)."""
    s = CNTKStream(7, time_major=True)
    got = _drawn(lambda: F.rand_like(_zeros((2, 3, 4)), seed=s))
    flat = _drawn(lambda: F.rand_like(_zeros((3, 2, 4)), seed=CNTKStream(7)))
    np.testing.assert_array_equal(got, flat.transpose(1, 0, 2))
    assert RandomStream.restored(7, s.state()).time_major
    assert pickle.loads(pickle.dumps(s)).time_major and s.restarted().time_major


def test_a_uniform_draw_drops_the_number_boost_refuses_and_gives_back_those_drawn_ahead():
    """``2**64 - 1 / 2**64`` rounds to 1.0 in double, which Boost's ``[0, 1)`` refuses: it
    draws the next number instead, so the value after a refused number is the next one's."""
    r = MT19937_64(5)
    first = r.take(4)
    r.give_back(np.concatenate([first[:1], np.array([2**64 - 1], np.uint64), first[1:]]))
    got = uniform_doubles(r, 4, 0.0, 1.0)
    np.testing.assert_array_equal(got, first.astype(np.float64) * 2.0 ** -64)
    assert int(r()) == int(MT19937_64(5).take(5)[-1])     # the engine stands after first


def test_two_threads_drawing_from_one_stream_get_the_serial_draws_numbers():
    s, k, size = CNTKStream(5), 100, 1000
    got: list = []
    start = threading.Barrier(2)

    def work():
        start.wait()
        for _ in range(k):
            got.append(cntk_draw("uniform", 0.0, 1.0, (size,), torch.float32, s).numpy())

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    serial = cntk_draw("uniform", 0.0, 1.0, (2 * k * size,), torch.float32, CNTKStream(5))
    np.testing.assert_array_equal(np.sort(np.concatenate(got)), np.sort(serial.numpy()))
    assert s.position() == 2 * k * size


def test_a_shape_pass_on_meta_tensors_draws_nothing():
    """A recurrence's step is built on meta tensors (compat_cases'
    ``random_values_in_recurrent_steps_are_cntks`` compares with CNTK 2.7)."""
    s = CNTKStream(3)
    out = cntk_draw("uniform", 0.0, 1.0, (2, 3), torch.float32, s, "meta")
    picks = cntk_sample(torch.ones(5, device="meta"), 2, True, s)
    assert (out.device.type, tuple(out.shape), picks.device.type, tuple(picks.shape)) == \
        ("meta", (2, 3), "meta", (2,))
    np.testing.assert_array_equal(
        cntk_draw("uniform", 0.0, 1.0, (4,), torch.float32, s).numpy(),
        cntk_draw("uniform", 0.0, 1.0, (4,), torch.float32, CNTKStream(3)).numpy())
    assert s.position() == 4


@pytest.mark.parametrize("rate", [0.3, 0.5, float(np.float32(0.6)), 0.0, 1.0, 1e-30, -0.5])
def test_a_mask_compared_on_the_engines_numbers_is_the_mask_of_their_doubles(rate):
    """The mask compares the engine's numbers with a threshold; the reference converts them
    (``double(u) / 2**64 <= rate``, a value of 1.0 refused) around that threshold."""
    near = int(rate * 2.0 ** 64) if 0 <= rate < 1 else 2**62
    numbers = [near + d for d in range(-2**11, 2**11 + 1, 7)] + \
        [2**64 - 2**10 - 1, 2**64 - 2**10, 2**64 - 1, 0, 1]
    numbers = np.array([n for n in numbers if 0 <= n < 2**64], np.uint64)
    r = MT19937_64(3)
    tail = r.take(8)
    r.give_back(np.concatenate([numbers, tail]))
    got = mask_doubles(r, len(numbers) - 2 + 8, rate)
    v = np.concatenate([numbers, tail]).astype(np.float64) * 2.0 ** -64
    v = v[v < 1.0]
    np.testing.assert_array_equal(got, np.where(v <= rate, 0.0, 1.0))


@pytest.mark.parametrize("name", ["uniform", "normal"])
def test_a_cntk_file_saved_ten_million_values_on_draws_on_as_cntk_loads_it(name):
    """CNTK 2.7 saved ``uniform_like``/``normal_like`` after 10,017,007 values; loaded, its
    engine discards its ``rngOffset`` (``normal_like``'s rounded up to even) and draws these:
    the jump (``MT19937_64.discard``) lands where CNTK's stepping does."""
    import stadyn.compat.cntk as C
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_random_values",
                        f"far_{name}.model")
    g = C.load_model(path)
    assert g.root_function.attributes["rngOffset"] == int(CNTK[f"far_{name}_offset"])
    got = g.eval({g.arguments[0]: np.zeros((2, 1001), np.float32)})
    np.testing.assert_array_equal(got, CNTK[f"far_{name}"])


def test_distinct_classes_beyond_those_of_positive_weight_are_refused_not_sampled_forever():
    """CNTK 2.7 validates only ``num_samples < classes`` and then samples forever; Stadyn
    raises at once (run in a thread: the sampling of 2f8d9b80 never returned)."""
    import stadyn.compat.cntk as C
    raised: list = []

    def run():
        try:
            C.random_sample(np.array([1, 0, 0, 2, 0], np.float32), 3, False, seed=1).eval()
        except Exception as e:     # noqa: BLE001 (what it raised is what the test reads)
            raised.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout=20)
    assert raised and "3 distinct classes" in str(raised[0]), raised

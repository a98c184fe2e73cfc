"""NNabla-style data iterators: wrapping epochs, callbacks, shuffling, stop_exhausted."""

import numpy as np
import pytest

from stadyn.io._data_iterator import data_iterator_simple
from stadyn.io._digits import data_iterator_digits, load_digits_source, split_indices


def _iterator(n, batch, **kw):
    return data_iterator_simple(lambda i: (np.array([i]), np.array([i % 3])), n, batch, **kw)


@pytest.mark.parametrize("use_thread", [False, True])
def test_epochs_take_112_111_111_112_calls_for_1797_samples_at_batch_16(use_thread):
    it = _iterator(1797, 16, shuffle=True, use_thread=use_thread)
    calls, counts = 0, []
    it.register_epoch_end_callback(lambda epoch: counts.append(calls))
    for epoch in range(7):                       # the tutorial's loop
        calls = 0
        while it.epoch == epoch:
            it.next()
            calls += 1
    # The callback runs inside the call that consumed the epoch's last sample, before the loop
    # counted that call: the tutorial prints 112, 111, 111, 112, ...
    assert counts == [112, 111, 111, 112, 111, 111, 112]


def test_batches_wrap_across_epochs_in_order_without_shuffle():
    it = _iterator(5, 2, use_thread=False)
    seen = [it.next()[0].ravel().tolist() for _ in range(5)]
    assert seen == [[0, 1], [2, 3], [4, 0], [1, 2], [3, 4]]
    assert it.epoch == 2 and it.position == 0


def test_each_epoch_is_a_permutation_and_the_seed_fixes_the_order():
    def epoch_orders(seed):
        it = _iterator(10, 5, shuffle=True, rng=np.random.RandomState(seed), use_thread=False)
        return [np.concatenate([it.next()[0].ravel() for _ in range(2)]) for _ in range(3)]
    a, b, c = epoch_orders(1), epoch_orders(1), epoch_orders(2)
    for order in a:
        assert sorted(order.tolist()) == list(range(10))
    assert all((x == y).all() for x, y in zip(a, b))
    assert not all((x == y).all() for x, y in zip(a, c))
    assert not (a[0] == a[1]).all()                  # reshuffled every epoch


def test_threaded_and_synchronous_iterators_give_the_same_batches():
    a = _iterator(37, 8, shuffle=True, rng=np.random.RandomState(3), use_thread=True)
    b = _iterator(37, 8, shuffle=True, rng=np.random.RandomState(3), use_thread=False)
    for _ in range(20):
        xa, ya = a.next()
        xb, yb = b.next()
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
    assert a.epoch == b.epoch
    a.close()


def test_begin_and_end_callbacks_get_the_epoch_number():
    events = []
    it = _iterator(4, 3, use_thread=False)
    it.register_epoch_end_callback(lambda e: events.append(("end", e)))
    it.register_epoch_begin_callback(lambda e: events.append(("begin", e)))
    for _ in range(3):
        it.next()
    assert events == [("end", 0), ("begin", 1), ("end", 1), ("begin", 2)]


def test_stop_exhausted_returns_the_whole_batches_of_one_epoch_then_stops():
    # NNabla 1.39 (tests/compat: nnabla:data_iterator_stop_exhausted): 5 samples in batches of
    # 2 give [0, 1], [2, 3] and then StopIteration -- the short last batch is not returned --
    # and the iterator stays exhausted.
    it = _iterator(5, 2, stop_exhausted=True, use_thread=False)
    assert [b[0].ravel().tolist() for b in it] == [[0, 1], [2, 3]]
    assert it.epoch == 0
    assert list(it) == []
    threaded = _iterator(8, 4, stop_exhausted=True, use_thread=True)
    assert [b[0].ravel().tolist() for b in threaded] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(StopIteration):
        threaded.next()


def test_without_memory_cache_load_func_is_called_per_sample():
    calls = []

    def load(i):
        calls.append(i)
        return (np.array([i]),)
    it = data_iterator_simple(load, 6, 3, with_memory_cache=False, use_thread=False)
    calls.clear()
    it.next()
    assert calls == [0, 1, 2]


def test_digits_batches_have_the_tutorials_shapes_and_values():
    digits = load_digits_source()
    assert len(digits) == 1797 and digits.images.max() == 16
    x, t = data_iterator_digits(digits, 16, shuffle=False, use_thread=False).next()
    assert x.shape == (16, 1, 8, 8) and t.shape == (16, 1) and t.dtype == np.int32
    np.testing.assert_array_equal(x[:, 0], digits.images[:16])
    np.testing.assert_array_equal(t[:, 0], digits.target[:16])
    train, test = split_indices(1797, 0.2, 0)
    assert len(test) == 359 and len(set(train) & set(test)) == 0

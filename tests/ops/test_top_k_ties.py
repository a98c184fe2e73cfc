"""Among equal values, the native ``top_k_data`` with ``ties="lowest"`` takes the lowest index
first (a stable sort's first k), against NumPy's stable ``argsort``; ``torch.topk`` leaves the
order of ties to its kernel and gave ``[[2, 4], [1, 2]]`` for the first two rows below and k = 2.

Its default (``ties="nnabla"``) and CNTK's ``top_k`` (``"cntk"``) give what NNabla 1.39 and
CNTK 2.7 give on ties (the same on the first two rows; with more ties each its own heap's
order): the compat cases ``tests/compat/compat_cases/nnabla_top_k_ties.py`` and
``cntk_top_k_ties.py`` compare them with the frameworks' outputs; here the replay of the heaps
(``stadyn.ops._top_k_order.heap_top_k``) is checked to reduce to the sorted order where the
k + 1 largest values differ.
"""

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F

DATA = np.array([[0, 1, 9, 2, 2], [3, 3, 3, 1, 0], [2, 7, 2, 7, 2], [4, 4, 4, 4, 4]],
                np.float32)


def _numpy_top_k(data, k, largest):
    key = -data if largest else data
    index = np.argsort(key, axis=-1, kind="stable")[:, :k]
    return np.take_along_axis(data, index, axis=-1), index


@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_native_top_k_data_takes_the_lowest_index_among_ties(k, largest):
    with sd.auto_forward():
        values, index = F.top_k_data(sd.Variable.from_numpy_array(DATA), k, largest=largest,
                                     with_index=True, ties="lowest")
    want_values, want_index = _numpy_top_k(DATA, k, largest)
    assert index.d.tolist() == want_index.tolist()
    assert values.d.tolist() == want_values.tolist()


@pytest.mark.parametrize("ties", ["nnabla", "cntk"])
def test_the_heaps_give_the_sorted_order_where_the_first_values_differ(ties):
    """Without a tie among the k + 1 largest values the heaps' result is the sorted top k
    (top_k_index sorts such samples on the device and replays the heap only for the others)."""
    from stadyn.ops._top_k_order import heap_top_k
    rng = np.random.RandomState(0)
    for _ in range(200):
        n = rng.randint(2, 12)
        k = rng.randint(1, n + 1)
        row = rng.randint(-4, 5, n).astype(float)
        ordered = np.sort(row)[::-1][:k + 1]
        if len(set(ordered.tolist())) < len(ordered):
            continue
        assert heap_top_k(row, k, ties=ties) == np.argsort(-row, kind="stable")[:k].tolist()


def test_a_traced_graph_replays_the_heap_at_run_time():
    """The rows with ties are replayed on the host inside a static plan too (a torch operator,
    stadyn_kernels::top_k_index), as in auto_forward."""
    rows = np.array([[0, 1, 9, 2, 2, 2], [2, 7, 2, 7, 2, 7], [5, 4, 3, 2, 1, 0]], np.float32)
    x = sd.Variable(rows.shape)
    values, index = F.top_k_data(x, 4, with_index=True)
    for data in (rows, rows[::-1].copy()):
        x.d = data
        index.forward()
        with sd.auto_forward():
            _, eager = F.top_k_data(sd.Variable.from_numpy_array(data), 4, with_index=True)
        assert index.d.tolist() == eager.d.tolist()


def test_rows_without_ties_read_back_one_boolean_only():
    # the common case (no row's k + 1 first values tie, no NaN) takes the sorted positions and
    # reads one boolean back from the device; the rows to replay are looked for (nonzero, a
    # second read) only where some row ties -- the same positions either way
    from torch.utils._python_dispatch import TorchDispatchMode

    import torch
    from stadyn.ops._top_k_order import _top_k_index_impl, heap_top_k

    class _Calls(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.__name__)
            return func(*args, **(kwargs or {}))

    distinct = torch.tensor([[0.0, 1.0, 9.0, 2.0, 3.0], [5.0, 4.0, 3.0, 1.0, 0.0]])
    tied = torch.tensor([[0.0, 1.0, 9.0, 2.0, 2.0], [5.0, 4.0, 3.0, 1.0, 0.0]])
    for key, replayed in ((distinct, False), (tied, True)):
        with _Calls() as calls:
            got = _top_k_index_impl(key, 3, True, "nnabla").tolist()   # (the op's body)
        assert any(n.startswith("nonzero") for n in calls.names) == replayed
        assert got == [heap_top_k(row, 3) for row in key.tolist()]

"""What nnabla-examples' fourth batch of programs needs (``tests/examples/nnabla_examples_4.py``):
PointNet (``3d-object-classification/pointnet``) indexes a Variable, ``conv_h1[:, :, 0, :]``;
NNabla 1.39 builds such ``x[key]`` in the graph (a ``slice`` and a ``reshape``, or a
``gather_nd`` for index arrays and masks), gradients flowing back through it."""

import functools

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import builtin_type, outcome

# the built-in type of the exception ``fn()`` raises, or None
_error = functools.partial(outcome, convert=lambda _: None, raised=builtin_type)


# keys of basic indexing (slices, ints, ..., None) and of advanced indexing (index lists, a mask)
_KEYS = [
    ("[:, :, 0, :]", lambda x: x[:, :, 0, :]),
    ("[1]", lambda x: x[1]),
    ("[-1, 1:3]", lambda x: x[-1, 1:3]),
    ("[None, ..., -1]", lambda x: x[None, ..., -1]),
    ("[..., ::-2, 1]", lambda x: x[..., ::-2, 1]),
    ("[:, None, 2:0:-1, :, :, None]", lambda x: x[:, None, 2:0:-1, :, :, None]),
    ("[()]", lambda x: x[()]),
    ("[[1, 0], [2, 0]]", lambda x: x[[1, 0], [2, 0]]),
    ("[[1, 0, 1]]", lambda x: x[[1, 0, 1]]),
    ("[mask]", lambda x: x[np.array([[True, False, True], [False, True, True]])]),
]


@nnabla_case(names=["nnabla.Variable.forward", "nnabla.Variable.backward"])
def examples_variable_indexing(nn, F, PF, r):
    """``x[key]`` of a (2, 3, 4, 2) Variable for basic and advanced keys: the value, its shape,
    and the gradient of ``sum(x[key] * w)`` w.r.t. ``x``."""
    r.touch("nnabla.Variable.forward", "nnabla.Variable.backward")
    res = {}
    for label, index in _KEYS:
        x = nn.Variable.from_numpy_array(r.randn(2, 3, 4, 2).astype(np.float32),
                                         need_grad=True)
        y = index(x)
        w = nn.Variable.from_numpy_array(r.weights_like(np.zeros(y.shape, np.float32)))
        z = F.sum(y * w)
        z.forward()
        x.grad.zero()
        z.backward()
        res[label] = y.d.copy()
        res[label + " shape"] = list(y.shape)
        res[label + " grad"] = x.g.copy()
    return res


@nnabla_case(names=["nnabla.Variable.forward", "nnabla.Variable.backward"])
def examples_pointnet_indexing_in_training(nn, F, PF, r):
    """PointNet's use: a convolution's output indexed at one width position
    (``conv_h1[:, :, 0, :]``), then multiplied by a learned transform; the parameters'
    gradients flow through the index."""
    r.touch("nnabla.Variable.forward", "nnabla.Variable.backward")
    x = nn.Variable.from_numpy_array(r.randn(2, 1, 5, 3).astype(np.float32))
    h = PF.convolution(x, 4, (1, 3), with_bias=False, name="conv")
    h = F.transpose(h, (0, 2, 3, 1))
    t = nn.Variable.from_numpy_array(r.randn(2, 4, 4).astype(np.float32), need_grad=True)
    y = F.batch_matmul(h[:, :, 0, :], t)
    loss = F.sum(y ** 2)
    res = {"params": r.set_params(nn.get_parameters())}
    loss.forward()
    for p in nn.get_parameters().values():
        p.grad.zero()
    t.grad.zero()
    loss.backward()
    res["y"] = y.d.copy()
    res["W grad"] = nn.get_parameters()["conv/conv/W"].g.copy()
    res["t grad"] = t.g.copy()
    return res


@nnabla_case(names=["nnabla.Variable.from_numpy_array"])
def examples_variable_indexing_refusals(nn, F, PF, r):
    """What NNabla refuses: an integer out of the axis, more indices than axes, two ``...``,
    integers mixed with an index list, a NumPy integer scalar as the key, a float key."""
    r.touch("nnabla.Variable.from_numpy_array")
    x = nn.Variable.from_numpy_array(r.randn(2, 3).astype(np.float32))
    return {
        "x[2]": _error(lambda: x[2]),
        "x[-3]": _error(lambda: x[-3]),
        "x[0, 0, 0]": _error(lambda: x[0, 0, 0]),
        "x[..., ...]": _error(lambda: x[..., ...]),
        "x[1, [0, 1]]": _error(lambda: x[1, [0, 1]]),
        "x[np.int64(0)]": _error(lambda: x[np.int64(0)]),
        "x[0.5]": _error(lambda: x[0.5]),
    }


def _ordered_source(DS, shuffle):
    """A data source written as nnabla-examples' ENAS writes its CIFAR-10 one: ``reset``
    draws a new permutation from its own generator when it shuffles."""

    class Source(DS.DataSource):
        def __init__(self):
            super(Source, self).__init__(shuffle=shuffle)
            self._size = 6
            self._variables = ("x",)
            self.rng = np.random.RandomState(5)
            self.reset()

        def _get_data(self, position):
            return (np.array([self._indexes[position]], np.float32),)

        def reset(self):
            self._indexes = (self.rng.permutation(self._size) if self._shuffle
                             else np.arange(self._size))
            super(Source, self).reset()

    return Source()


@nnabla_case(names=["nnabla.utils.data_iterator.data_iterator",
                    "nnabla.utils.data_source.DataSource"])
def examples_data_iterator_private_reset(nn, r):
    """``DataIterator._reset()`` (ENAS rewinds its validation data with ``vdata._reset()``):
    the source's ``reset()`` (position 0, a new permutation when it shuffles); a batch the
    reading thread already fetched is still the next one returned; the epoch count stays."""
    import time
    DI = r.module("nnabla.utils.data_iterator")
    DS = r.module("nnabla.utils.data_source")
    res = {}
    for shuffle in (False, True):
        for thread in (False, True):
            it = DI.data_iterator(_ordered_source(DS, shuffle), 4, use_thread=thread,
                                  with_memory_cache=False)
            batches, where = [], []
            for step in range(5):
                if step == 2:
                    time.sleep(0.2)         # (the reading thread has fetched its batch)
                    it._reset()
                batches.append(it.next()[0][:, 0].astype(int).tolist())
                time.sleep(0.05)
                where.append([it.epoch, it.position])
            it.close()
            res["shuffle %s thread %s" % (shuffle, thread)] = {"batches": batches,
                                                              "where": where}
    return res


@nnabla_case(names=["nnabla.parameter.pop_parameter"])
def examples_pop_parameter(nn, F, PF, r):
    """``nn.parameter.pop_parameter(key)`` (ENAS keeps only its controller's parameters this
    way before saving): the parameter removed and returned, by a path or inside a scope; None
    for a missing key; a scope's key removes the scope and returns its nested dict."""
    P = r.module("nnabla.parameter")
    x = nn.Variable.from_numpy_array(r.randn(2, 3).astype(np.float32))
    PF.affine(x, 4, name="keep")
    PF.affine(x, 4, name="drop")
    PF.convolution(F.reshape(x, (1, 1, 2, 3)), 2, (1, 1), name="conv")
    res = {"params": r.set_params(nn.get_parameters())}
    popped = P.pop_parameter("drop/affine/W")
    res["popped value"] = popped.d.copy()
    res["popped is a Variable"] = isinstance(popped, nn.Variable)
    res["missing"] = repr(P.pop_parameter("drop/affine/W"))
    with nn.parameter_scope("drop"):
        res["in scope"] = P.pop_parameter("affine/b").d.copy()
    scope = P.pop_parameter("conv")
    res["scope keys"] = [[k, sorted(v.keys())] for k, v in scope.items()]
    res["scope W"] = scope["conv"]["W"].d.copy()
    res["left"] = sorted(nn.get_parameters().keys())
    return res


@nnabla_case(names=["nnabla.Variable.from_numpy_array"])
def examples_variable_iterated_and_as_numpy(nn, F, PF, r):
    """With ``x[i]``, a Variable iterates as NNabla's (``list(x)``: ``x[0]``, ``x[1]``, ...,
    ended by the ``IndexError`` of ``x[len]``), while NumPy still sees it as one object
    (NNabla's Variable has no ``len()``): ``np.asarray(x)`` is a 0-d object array."""
    r.touch("nnabla.Variable.from_numpy_array")
    x = nn.Variable.from_numpy_array(r.randn(2, 3).astype(np.float32))
    y = nn.Variable.from_numpy_array(r.randn(2, 3).astype(np.float32))
    rows = list(x)
    for row in rows:
        row.forward()
    return {
        "rows": [row.d.copy() for row in rows],
        "row shapes": [list(row.shape) for row in rows],
        "asarray": [list(np.asarray(x).shape), str(np.asarray(x).dtype)],
        "array of two": [list(np.array([x, y]).shape), str(np.array([x, y]).dtype)],
    }

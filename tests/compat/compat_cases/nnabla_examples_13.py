"""What nnabla-examples' ``image-classification/imagenet`` (``infer.py`` and its ``models``)
needs: MobileNet v3's head pools its last maps with a fixed ``F.average_pooling`` kernel of
7 x 7 (for 224 x 224 pictures).  On a smaller picture the kernel overhangs the maps; NNabla
1.39 counts the windows as ``(W + 2P - K) / S + 1`` in C++'s ``int`` division, which truncates
toward zero (``src/nbla/function/utils/base_pooling.cpp:59``), so a kernel overhanging by less
than a stride gives one window over what is there (the mean of the 2 x 2 maps, divided by 4).
Stadyn floored the division and stopped with a ShapeError ("Output size is too small")."""

import numpy as np

from compat_harness import nnabla_case

FN = "nnabla.functions."


@nnabla_case(names=[FN + "average_pooling", FN + "max_pooling", FN + "sum_pooling"])
def pooling__kernel_overhanging_the_input(nn, F, r):
    """Kernels larger than the (padded) maps, by less than a stride: shapes, values and
    gradients of the three poolings, static graphs."""
    res = {}
    settings = [
        ("k7", dict(kernel=(7, 7))),
        ("k3 s2", dict(kernel=(3, 3), stride=(2, 2))),
        ("k7 pad1", dict(kernel=(7, 7), pad=(1, 1))),
        ("k3x7 s1x7", dict(kernel=(3, 7), stride=(1, 7))),
    ]
    functions = [("average", F.average_pooling), ("max", F.max_pooling),
                 ("sum", F.sum_pooling)]
    for setting, kwargs in settings:
        for name, fn in functions:
            x = nn.Variable.from_numpy_array(r.randn(2, 3, 4, 2).astype(np.float32),
                                             need_grad=True)
            y = fn(x, **kwargs)
            y.forward()
            x.grad.zero()
            y.backward(r.randn(*y.shape).astype(np.float32))
            key = "%s %s" % (name, setting)
            res[key + " shape"] = np.array(y.shape)
            res[key] = y.d.copy()
            res[key + " grad"] = x.g.copy()
        x = nn.Variable.from_numpy_array(r.randn(1, 2, 4, 2).astype(np.float32))
        y = F.average_pooling(x, including_pad=False, **kwargs)
        y.forward()
        res["average %s including_pad=False" % setting] = y.d.copy()
    return res

"""NNabla 1.39's random numbers on the CPU, bit for bit.

NNabla's random functions draw from a ``std::mt19937`` through libstdc++'s distributions
(src/nbla/function/generic/dropout.cpp, rand.cpp, randn.cpp, randint.cpp): with ``seed=-1``
the global generator (src/nbla/random_manager.cpp; ``nn.seed(n)`` makes it
``std::mt19937(n)``), every function drawing the next numbers of it in the order called; with
a seed of its own a generator seeded when the function is set up (a dynamic call draws the same
numbers each time, a static graph the next numbers on each ``forward()``).  ``F.dropout``'s
mask is ``bernoulli_distribution(1 - p)`` (two numbers per element), ``F.rand``
``uniform_real_distribution<float>`` (one), ``F.randn`` ``normal_distribution<float>``
(Marsaglia's polar method, a new distribution per forward: an odd count drops its kept value),
``F.randint`` ``uniform_int_distribution<int>`` (GCC 6's rejection).  Stadyn drew them from
torch's generator, so every value differed; now the values are compared exactly.
"""

import numpy as np

from compat_harness import nnabla_case

FN = "nnabla.functions."
EXACT = dict(rtol=0.0, atol=0.0)


@nnabla_case(names=[FN + "dropout", "nnabla.seed"], **EXACT,
             note="masks and outputs of F.dropout after nn.seed(k): several ratios and shapes, "
                  "calls in a row drawing on from one global generator, the gradient through "
                  "the mask")
def dropout__masks(nn, F, r):
    res = {}
    for k, (p, shape) in enumerate([(0.5, (4, 7)), (0.3, (2, 3, 5, 5)), (0.1, (64,)),
                                    (0.9, (3, 11))]):
        nn.seed(k + 1)
        x = nn.Variable.from_numpy_array(r.randn(*shape).astype(np.float32), need_grad=True)
        with nn.auto_forward():
            y1 = F.dropout(x, p)
            y2 = F.dropout(x, p)
        x.grad.zero()
        y2.backward(r.randn(*shape).astype(np.float32))
        res["y1_%d" % k], res["y2_%d" % k], res["g_%d" % k] = y1.d.copy(), y2.d.copy(), x.g.copy()
    return res


@nnabla_case(names=[FN + "dropout"], **EXACT,
             note="a static graph's dropout draws the next mask on each forward(): from the "
                  "global generator (seed=-1), and from its own (seed=7) where a dynamic call "
                  "draws the same mask each time")
def dropout__static_replays(nn, F, r):
    res = {}
    nn.seed(5)
    x = nn.Variable.from_numpy_array(r.randn(6, 9).astype(np.float32))
    y = F.dropout(x, 0.4)
    z = F.dropout(x, 0.25, seed=7)
    for k in range(3):
        y.forward()
        z.forward()
        res["y%d" % k], res["z%d" % k] = y.d.copy(), z.d.copy()
    with nn.auto_forward():
        res["own_a"] = F.dropout(x, 0.25, seed=7).d.copy()
        res["own_b"] = F.dropout(x, 0.25, seed=7).d.copy()
    return res


@nnabla_case(names=[FN + "rand", FN + "randn", FN + "randint", "nnabla.seed"], **EXACT,
             note="F.rand, F.randn (odd and even counts, so a forward's kept normal value is "
                  "dropped) and F.randint after nn.seed(11), one global stream in call order, "
                  "and a function's own seed")
def rand__randn_randint(nn, F, r):
    res = {}
    nn.seed(11)
    with nn.auto_forward():
        res["rand"] = F.rand(-1.5, 2.0, shape=(3, 5)).d.copy()
        res["randn_odd"] = F.randn(0.5, 2.0, shape=(7,)).d.copy()
        res["randn_even"] = F.randn(shape=(2, 4)).d.copy()
        res["randint"] = F.randint(-3, 9, shape=(4, 6)).d.copy()
        res["randint_wide"] = F.randint(0, 2 ** 30 + 7, shape=(10,)).d.copy()
        res["rand_own"] = F.rand(shape=(5,), seed=42).d.copy()
        res["randn_own"] = F.randn(shape=(5,), seed=42).d.copy()
        res["randint_own"] = F.randint(0, 100, shape=(5,), seed=42).d.copy()
        res["rand_after"] = F.rand(shape=(4,)).d.copy()
    return res


@nnabla_case(names=[FN + "rand", FN + "randn", FN + "randint"], **EXACT,
             note="static graphs of random functions draw the next numbers on each forward(), "
                  "from the global generator and from a seed of their own")
def rand__static_replays(nn, F, r):
    res = {}
    nn.seed(2)
    a = F.rand(shape=(2, 3))
    b = F.randn(1.0, 0.5, shape=(5,))
    c = F.randint(0, 6, shape=(7,), seed=3)
    d = F.randn(shape=(3,), seed=9)
    for k in range(3):
        for name, v in (("a", a), ("b", b), ("c", c), ("d", d)):
            v.forward()
            res["%s%d" % (name, k)] = v.d.copy()
    return res


@nnabla_case(names=[FN + "random_flip"], **EXACT,
             note="F.random_flip's flips after nn.seed(4): one number per sample and axis, odd "
                  "ones flip; base_axis=2's samples take NNabla's flip rows (its flip_index "
                  "steps over the inner sample loop too); a seed of its own, static replays")
def random_flip__nnabla_flips(nn, F, r):
    res = {}
    nn.seed(4)
    x = nn.Variable.from_numpy_array(r.randn(5, 2, 3, 4).astype(np.float32))
    x2 = nn.Variable.from_numpy_array(r.randn(3, 4, 2, 5).astype(np.float32))
    with nn.auto_forward():
        res["dyn_a"] = F.random_flip(x, axes=(2, 3)).d.copy()
        res["dyn_b"] = F.random_flip(x, axes=(3,)).d.copy()
        res["base2"] = F.random_flip(x2, axes=(2, 3), base_axis=2).d.copy()
        res["own_a"] = F.random_flip(x, axes=(1, 3), seed=6).d.copy()
        res["own_b"] = F.random_flip(x, axes=(1, 3), seed=6).d.copy()
    y = F.random_flip(x, axes=(2, 3))
    z = F.random_flip(x2, axes=(3,), base_axis=2, seed=8)
    for k in range(3):
        y.forward()
        z.forward()
        res["y%d" % k], res["z%d" % k] = y.d.copy(), z.d.copy()
    return res


@nnabla_case(names=[FN + "random_crop"], **EXACT,
             note="F.random_crop's windows after nn.seed(6): per sample one number for each "
                  "axis of shape (uncropped ones too), the offset that number modulo the "
                  "offsets that fit; base_axis=2's samples in NNabla's order; a seed of its "
                  "own, static replays")
def random_crop__nnabla_offsets(nn, F, r):
    res = {}
    nn.seed(6)
    x = nn.Variable.from_numpy_array(r.randn(4, 3, 7, 9).astype(np.float32))
    x2 = nn.Variable.from_numpy_array(r.randn(3, 2, 6, 5).astype(np.float32))
    with nn.auto_forward():
        res["dyn_a"] = F.random_crop(x, shape=(3, 5, 4)).d.copy()
        res["dyn_b"] = F.random_crop(x, shape=(4, 9)).d.copy()
        res["base2"] = F.random_crop(x2, shape=(3, 4), base_axis=2).d.copy()
        res["own_a"] = F.random_crop(x, shape=(2, 2), seed=3).d.copy()
        res["own_b"] = F.random_crop(x, shape=(2, 2), seed=3).d.copy()
    y = F.random_crop(x, shape=(5, 6))
    z = F.random_crop(x2, shape=(2, 4, 3), base_axis=2, seed=2)
    for k in range(3):
        y.forward()
        z.forward()
        res["y%d" % k], res["z%d" % k] = y.d.copy(), z.d.copy()
    return res


@nnabla_case(names=[FN + "random_shift"], **EXACT,
             note="F.random_shift's moves after nn.seed(8): per sample one number w for each "
                  "entry of shifts (zeros too), the move w % (2m + 1) - m; the three border "
                  "modes, base_axis=2, a seed of its own, static replays")
def random_shift__nnabla_moves(nn, F, r):
    res = {}
    nn.seed(8)
    x = nn.Variable.from_numpy_array(r.randn(4, 2, 6, 7).astype(np.float32))
    x2 = nn.Variable.from_numpy_array(r.randn(3, 2, 5, 6).astype(np.float32))
    with nn.auto_forward():
        res["nearest"] = F.random_shift(x, shifts=(0, 2, 3)).d.copy()
        res["reflect"] = F.random_shift(x, shifts=(3, 1), border_mode="reflect").d.copy()
        res["constant"] = F.random_shift(x, shifts=(2, 2), border_mode="constant",
                                         constant_value=-1.0).d.copy()
        res["base2"] = F.random_shift(x2, shifts=(1, 2), base_axis=2).d.copy()
        res["own_a"] = F.random_shift(x, shifts=(2, 2), seed=5).d.copy()
        res["own_b"] = F.random_shift(x, shifts=(2, 2), seed=5).d.copy()
    y = F.random_shift(x, shifts=(1, 1))
    z = F.random_shift(x2, shifts=(2, 1), base_axis=2, seed=4)
    for k in range(3):
        y.forward()
        z.forward()
        res["y%d" % k], res["z%d" % k] = y.d.copy(), z.d.copy()
    return res


@nnabla_case(names=[FN + "random_choice"], **EXACT,
             note="F.random_choice's picks after nn.seed(9): with replacement a "
                  "uniform_real_distribution<double> draw over the float running sums per "
                  "sample, rows in order; without replacement the draws that land on a taken "
                  "member lost and drawn again; the gradients; a seed of its own, static "
                  "replays")
def random_choice__nnabla_picks(nn, F, r):
    res = {}
    nn.seed(9)
    x = nn.Variable.from_numpy_array(r.randn(3, 6).astype(np.float32), need_grad=True)
    w = nn.Variable.from_numpy_array(r.rand(3, 6).astype(np.float32) + 0.1, need_grad=True)
    with nn.auto_forward():
        y1 = F.random_choice(x, w, shape=(4, 5))
        y2 = F.random_choice(x, w, shape=(5,), replace=False)
        y3 = F.random_choice(x, w, shape=(2,), seed=12)
        y4 = F.random_choice(x, w, shape=(2,), seed=12)
    x.grad.zero()
    w.grad.zero()
    y1.backward(r.randn(3, 4, 5).astype(np.float32))
    res.update(y1=y1.d.copy(), y2=y2.d.copy(), own_a=y3.d.copy(), own_b=y4.d.copy(),
               gx=x.g.copy(), gw=w.g.copy())
    s = F.random_choice(x, w, shape=(3,), replace=False, seed=1)
    t = F.random_choice(x, w, shape=(7,))
    for k in range(3):
        s.forward()
        t.forward()
        res["s%d" % k], res["t%d" % k] = s.d.copy(), t.d.copy()
    return res


@nnabla_case(names=[FN + "dropout", FN + "rand"], **EXACT,
             note="F.dropout(x, 0.0) still draws its mask (two numbers an element) from the "
                  "global generator: the F.rand after it draws what NNabla's does")
def dropout__ratio_zero_draws(nn, F, r):
    nn.seed(13)
    x = nn.Variable.from_numpy_array(r.randn(3, 4).astype(np.float32))
    with nn.auto_forward():
        y = F.dropout(x, 0.0)
        u = F.rand(shape=(4,))
    return {"y": y.d.copy(), "u": u.d.copy()}


@nnabla_case(names=[FN + "random_erase"], **EXACT,
             note="F.random_erase after nn.seed(10): NNabla's boxes (area, ratio, probability, "
                  "corner draws per try and image, or per channel with share=False) and "
                  "replacement values (raster order, box ends inclusive); n=2 tries; the "
                  "gradients with ste_fine_grained; a seed of its own, static replays")
def random_erase__nnabla_boxes(nn, F, r):
    res = {}
    nn.seed(10)
    x = nn.Variable.from_numpy_array(r.randn(3, 2, 9, 11).astype(np.float32), need_grad=True)
    with nn.auto_forward():
        y1 = F.random_erase(x, prob=0.7, replacements=(-1.0, 1.0))
        y2 = F.random_erase(x, prob=0.9, n=2, share=False, area_ratios=(0.05, 0.3))
        y3 = F.random_erase(x, prob=1.0, seed=4)
        y4 = F.random_erase(x, prob=1.0, seed=4)
    x.grad.zero()
    y1.backward(r.randn(3, 2, 9, 11).astype(np.float32))
    res.update(y1=y1.d.copy(), y2=y2.d.copy(), own_a=y3.d.copy(), own_b=y4.d.copy(),
               gx=x.g.copy())
    s = F.random_erase(x, prob=0.8, aspect_ratios=(0.5, 2.0))
    for k in range(3):
        s.forward()
        res["s%d" % k] = s.d.copy()
    return res

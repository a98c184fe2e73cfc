"""A static graph run again: a root given twice to ``forward_all``, batches that change between
forwards (the intermediates take each run's batch, their gradients too), and ``nnabla.grad``
of an input that needs no gradient.  (Stadyn's native graph has tests of its own for these in
tests/graph/; here is what NNabla 1.39 does.)"""

import numpy as np

from compat_harness import nnabla_case


@nnabla_case(names=["nnabla.forward_all"],
             note="forward_all([y, y]) then y.backward(): the gradient once, with and without "
                  "clear_no_need_grad (Stadyn gave twice that)")
def forward_all_a_root_given_twice(nn, F, r):
    r.touch("nnabla.Variable.backward")
    res = {}
    for clear in (False, True):
        x = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32), need_grad=True)
        y = F.sum(F.tanh(x * 0.5))
        nn.forward_all([y, y], clear_no_need_grad=clear)
        x.g = 0
        y.backward()
        res["clear_no_need_grad=%s y" % clear] = y.d.copy()
        res["clear_no_need_grad=%s x.g" % clear] = x.g.copy()
    return res


@nnabla_case(names=["nnabla.Variable.reset_shape", "nnabla.Variable.forward"],
             note="batches 4, 5, 4, 5 through one graph: the intermediate's shape and size after "
                  "each forward (the third replays what ran for 4), plain, clear_no_need_grad "
                  "and clear_buffer (Stadyn's cached plan once kept (5, 5))")
def an_intermediate_has_the_batch_just_run(nn, F, PF, r):
    r.touch("nnabla.Variable.reset_shape", "nnabla.Variable.forward")
    res = {}
    for name, flags in (("plain", {}), ("clear_no_need_grad", {"clear_no_need_grad": True}),
                        ("clear_buffer", {"clear_buffer": True})):
        nn.clear_parameters()
        x = nn.Variable((4, 3))
        h = F.tanh(PF.affine(x, 5))
        y = F.sum(h)
        r.set_params(nn.get_parameters())
        for i, batch in enumerate((4, 5, 4, 5)):
            x.reset_shape((batch, 3), force=True)
            x.d = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3) / 10
            y.forward(**flags)
            res["%s %d: h" % (name, i)] = [list(h.shape), h.size]
            res["%s %d: y" % (name, i)] = y.d.copy()
    return res


@nnabla_case(names=["nnabla.Variable.reset_shape", "nnabla.Variable.g"],
             note="an intermediate's gradient after its input went from 3 to 6 values: 6 long "
                  "after the forward, set and then written by the backward (Stadyn kept the old "
                  "batch's array)")
def an_intermediates_gradient_follows_a_new_shape(nn, F, r):
    r.touch("nnabla.Variable.reset_shape", "nnabla.Variable.g")
    x = nn.Variable.from_numpy_array(np.ones(3, np.float32), need_grad=True)
    h = F.tanh(x)
    y = F.sum(h * 3.0)
    y.forward()
    y.backward()
    x.reset_shape((6,), force=True)
    x.d = np.ones(6, np.float32)
    y.forward()
    res = {"h.g shape after the forward": list(h.g.shape)}
    h.g = 7
    res["h.g set"] = h.g.copy()
    y.backward()
    res["h.g after backward"] = h.g.copy()
    res["x.g"] = x.g.copy()
    return res


@nnabla_case(names=["nnabla.grad", "nnabla.set_auto_forward"],
             note="nnabla.grad of sum(x * w) with respect to x (need_grad False) and w: zeros "
                  "for x, rather than an error, in both modes")
def grad_of_an_input_without_need_grad(nn, F, r):
    res = {}
    for mode, dynamic in (("static", False), ("dynamic", True)):
        nn.set_auto_forward(dynamic)
        x = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=False)
        w = nn.Variable.from_numpy_array(np.array([3.0, 4.0], np.float32), need_grad=True)
        dx, dw = nn.grad([F.sum(x * w)], [x, w])
        if not dynamic:
            nn.forward_all([dx, dw])
        res[mode + " dx"] = dx.d.copy()
        res[mode + " dw"] = dw.d.copy()
    nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.functions.dropout", "nnabla.Variable.reset_shape"],
             note="dropout(seed=7) of batches 2, 2, 4, 4, 2, 2 through one graph: a new batch "
                  "sets the function up again, its generator seeded anew, and the next run of "
                  "that batch draws on; back at batch 2 the draws of the first runs repeat "
                  "(Stadyn ran the new batch eagerly, seeding afresh on every run; then replayed "
                  "the batch-2 plan whose generator went on)")
def own_seed_dropout_over_two_batch_sizes(nn, F, r):
    r.touch("nnabla.functions.dropout", "nnabla.Variable.reset_shape")
    x = nn.Variable((2, 8))
    y = F.dropout(x, 0.5, seed=7)
    res = {}
    for i, batch in enumerate((2, 2, 4, 4, 2, 2)):
        x.reset_shape((batch, 8), force=True)
        x.d = np.ones((batch, 8), np.float32)
        y.forward()
        res["run %d, batch %d" % (i, batch)] = y.d.copy()
    return res


@nnabla_case(names=["nnabla.functions.rand", "nnabla.forward_all"],
             note="rand(shape=(2, 3), seed=11) run with sum(x) through forward_all while x takes "
                  "2, 4, 4 rows: rand has no input whose shape changes, so it is never set up "
                  "again and draws on every run (Stadyn's plan for the new shape seeded it "
                  "anew)")
def own_seed_rand_beside_a_reshaped_input(nn, F, r):
    r.touch("nnabla.functions.rand", "nnabla.forward_all", "nnabla.Variable.reset_shape")
    x = nn.Variable((2, 3))
    noise = F.rand(shape=(2, 3), seed=11)
    total = F.sum(x)
    res = {}
    for i, rows in enumerate((2, 4, 4)):
        x.reset_shape((rows, 3), force=True)
        x.d = np.ones((rows, 3), np.float32)
        nn.forward_all([noise, total])
        res["run %d, rand" % i] = noise.d.copy()
        res["run %d, sum" % i] = float(total.d)
    return res

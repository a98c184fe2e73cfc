"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (thirty-first round): the op names
and roots of its ranking, negative-sampling and f-measure losses; ``copy.copy`` of a layer
keeping its uid; its initializers' float64 draws; run-time refusals kept through a rebuild."""

from compat_harness import cntk_case


@cntk_case(names=["cntk.metrics.ndcg_at_1", "cntk.losses.cosine_distance_with_negative_samples",
                  "cntk.losses.fmeasure"],
           note="ndcg_at_1's op is CNTK 2.7's NDCG (Stadyn said NDCG1Eval, the BrainScript "
                "node's name), cosine_distance_with_negative_samples's "
                "CosDistanceWithNegativeSamples (Stadyn: CosineDistanceWithNegativeSamples); "
                "fmeasure is built of CNTK's ops as cntk/losses/__init__.py builds it, so its "
                "root is a Minus (Stadyn: one FMeasure op) and of a 3-D output it sums over "
                "axes 1 and 2 only, one value per class (Stadyn summed every axis)")
def losses__op_names_and_fmeasure_root(C, r, np):
    res = {}
    o, g, q = (C.sequence.input_variable(1) for _ in range(3))
    n = C.ndcg_at_1(o, g, q)
    res["ndcg op"] = [n.op_name, n.root_function.op_name, n.is_block]
    x, y = C.input_variable(3), C.input_variable(3)
    c = C.cosine_distance_with_negative_samples(x, y, 1, 2)
    res["cos op"] = [c.op_name, c.root_function.op_name, c.is_block]
    for shape in [(6,), (2, 3, 3)]:
        out, target = C.input_variable(shape), C.input_variable(shape)
        a = r.rand(2, *shape)
        b = (r.rand(2, *shape) > 0.5).astype(np.float32)
        f = C.losses.fmeasure(out, target, beta=2)
        key = "fmeasure %s" % (shape,)
        res[key + " root"] = [f.root_function.op_name, f.root_function.is_block,
                              list(f.shape), len(f.root_function.inputs)]
        res[key] = f.eval({out: a, target: b})
    return res


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Sequential"],
           note="copy.copy of a layer not applied yet is another handle on the same CNTK "
                "Function: the same uid (Stadyn numbered the copy apart when the layer's uid "
                "had not been asked for before the copy)")
def layers__copy_keeps_uid(C, r, np):
    import copy
    d = C.layers.Dense(2)
    c = copy.copy(d)
    s = C.layers.Sequential([C.layers.Dense(2), C.relu])
    cs = copy.copy(s)
    return {"Dense": [c.uid == d.uid, c is d], "Sequential": [cs.uid == s.uid]}


_INITS = ["glorot_uniform", "glorot_normal", "xavier", "he_uniform", "he_normal", "uniform",
          "normal", "truncated_normal"]


def _init_of(C, kind, seed):
    f = getattr(C.initializer, kind)
    if kind in ("uniform", "normal", "truncated_normal"):
        return f(0.3, seed=seed)
    return f(scale=0.7, seed=seed)


@cntk_case(names=["cntk.initializer." + k for k in _INITS]
           + ["cntk.initializer.bilinear", "cntk.layers.default_options", "cntk.ops.parameter"],
           rtol=0, atol=0,
           note="every initializer's draws of a float32 and a float64 parameter (made directly, "
                "and by Dense and Convolution under default_options(dtype=np.float64)), bit "
                "for bit: CNTK 2.7 draws a double parameter in double "
                "(uniform_real_distribution<double>, the ziggurat's doubles times a double "
                "sigma), where Stadyn drew float32 values and widened them (off by ~6e-8)")
def initializer__float64_draws_bit_for_bit(C, r, np):
    res = {}
    for dt in (np.float32, np.float64):
        for i, kind in enumerate(_INITS):
            p = C.parameter((40, 30), init=_init_of(C, kind, 11 + i), dtype=dt)
            res["%s %s" % (kind, dt.__name__)] = p.value
        p = C.parameter((2, 2, 4, 4), init=C.initializer.bilinear(4, 4), dtype=dt)
        res["bilinear " + dt.__name__] = p.value
        with C.default_options(dtype=dt):
            x = C.input_variable((3, 6, 6), dtype=dt)
            for i, kind in enumerate(_INITS[:5]):     # (layers take the fan-scaled ones)
                d = C.layers.Dense(5, init=_init_of(C, kind, 31 + i))(x)
                res["Dense %s %s" % (kind, dt.__name__)] = d.W.value
                c = C.layers.Convolution((3, 3), 4, init=_init_of(C, kind, 51 + i))(x)
                res["Convolution %s %s" % (kind, dt.__name__)] = c.W.value
    return res

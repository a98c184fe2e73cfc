"""CNTK 2.7's random Functions' values, compared exactly: ``cntk.random``'s draws (float32
and float64, of a shape and ``*_like``), ``dropout``'s and ``layers.Dropout``'s masks,
``random_sample``'s classes, each evaluated again (the stream goes on), and where a saved,
loaded or cloned Function's stream goes on from (CNTK's ``rngOffset``: its count of the values
drawn, a normal draw's rounded up to even, ``random_sample``'s tries).  Stadyn draws CNTK's
numbers (``stadyn.ops.CNTKStream``), to the bit on the CPU."""

import os
import tempfile

import numpy as np

from compat_harness import cntk_case

EXACT = {"rtol": 0.0, "atol": 0.0}


def _dense(v):
    return v.toarray() if hasattr(v, "toarray") else np.asarray(v)   # CNTK: scipy.sparse


def _train(f, x, data):
    """One training forward (dropout draws only while training)."""
    return np.asarray(f.forward({x: data}, keep_for_backward=set(f.outputs))[1][f.output])


@cntk_case(names=["cntk.random.uniform", "cntk.random.normal", "cntk.random.gumbel",
                  "cntk.random.bernoulli"],
           note="the values of CNTK's generator, exactly: each evaluation the next ones",
           **EXACT)
def random_values_are_cntks(C, np):
    out = {}
    draws = {"uniform": lambda **k: C.random.uniform((3, 5), low=-1.5, high=0.7, seed=5, **k),
             "normal": lambda **k: C.random.normal((7,), mean=0.3, scale=1.7, seed=6, **k),
             "gumbel": lambda **k: C.random.gumbel((2, 6), loc=0.1, scale=1.3, seed=7, **k),
             "bernoulli": lambda **k: C.random.bernoulli((40,), mean=0.35, seed=8, **k)}
    for name, make in sorted(draws.items()):
        f = make()
        out[name] = np.stack([f.eval() for _ in range(3)])
        g = make(dtype=np.float64)
        out[name + "_float64"] = np.stack([g.eval() for _ in range(2)])
    return out


@cntk_case(names=["cntk.random.uniform_like", "cntk.random.normal_like",
                  "cntk.random.gumbel_like", "cntk.random.bernoulli_like"],
           note="the values of CNTK's generator, of the operand's shape and batch", **EXACT)
def random_like_values_are_cntks(C, np):
    x = C.input_variable(4)
    data = np.zeros((3, 4), np.float32)
    out = {}
    draws = {"uniform_like": C.random.uniform_like(x, low=2.0, high=2.5, seed=15),
             "normal_like": C.random.normal_like(x, mean=-1.0, scale=0.25, seed=16),
             "gumbel_like": C.random.gumbel_like(x, loc=1.0, scale=0.5, seed=17),
             "bernoulli_like": C.random.bernoulli_like(x, mean=0.6, seed=18)}
    for name, f in sorted(draws.items()):
        out[name] = f.eval({x: data})
        out[name + "_next"] = f.eval({x: data[:1]})     # (another batch size: 4 values)
    return out


@cntk_case(names=["cntk.ops.dropout", "cntk.layers.Dropout"],
           note="CNTK's masks, exactly; the kept values x * float32(1 / (1 - rate))", **EXACT)
def dropout_masks_are_cntks(C, np, r):
    x = C.input_variable(9)
    data = r.randn(4, 9).astype(np.float32)
    d = C.dropout(x, 0.3, seed=21)
    layer = C.layers.Dropout(0.6, seed=22)(x)
    return {"dropout": np.stack([_train(d, x, data) for _ in range(2)]),
            "layer": np.stack([_train(layer, x, data) for _ in range(2)])}


@cntk_case(names=["cntk.ops.random_sample"],
           note="CNTK's classes, exactly, with and without duplicates", **EXACT)
def random_sample_classes_are_cntks(C, np):
    w = np.array([1.0, 0.5, 3.0, 0.0, 2.0, 4.0, 1.5], np.float32)
    out = {}
    for name, dup in (("duplicates", True), ("distinct", False)):
        f = C.random_sample(w, 4, dup, seed=31)
        out[name] = np.stack([_dense(f.eval()).reshape(4, 7).argmax(-1) for _ in range(3)])
    return out


@cntk_case(names=["cntk.Function.save", "cntk.ops.functions.load_model", "cntk.Function.clone"],
           note="a normal draw's rngOffset counts its values rounded up to even, which is not "
                "where its engine stands: the loaded and cloned functions draw from the seed "
                "moved on by that count, as CNTK's do", **EXACT)
def random_offsets_continue_as_cntks(C, np, r):
    r.touch("cntk.Function.save", "cntk.Function.clone")
    out = {}
    d = tempfile.mkdtemp()
    f = C.random.normal((5,), mean=1.0, scale=2.0, seed=5)
    f.eval(), f.eval()
    path = os.path.join(d, "normal.model")
    f.save(path)
    out["normal_offset"] = int(f.root_function.attributes["rngOffset"])
    g = C.load_model(path)
    out["normal_loaded"] = np.stack([g.eval() for _ in range(2)])
    out["normal_clone"] = f.clone(C.CloneMethod.share).eval()
    out["normal_next"] = f.eval()
    x = C.input_variable(3, name="x")
    data = np.zeros((3, 3), np.float32)
    h = C.random.normal_like(x, seed=9)
    h.eval({x: data})
    path = os.path.join(d, "normal_like.model")
    h.save(path)
    out["normal_like_offset"] = int(h.root_function.attributes["rngOffset"])
    loaded = C.load_model(path)
    out["normal_like_loaded"] = loaded.eval({loaded.arguments[0]: data})
    s = C.random_sample(np.arange(1, 9, dtype=np.float32), 5, False, seed=3)
    s.eval(), s.eval()
    path = os.path.join(d, "sample.model")
    s.save(path)
    out["sample_offset"] = int(s.root_function.attributes["rngOffset"])
    out["sample_loaded"] = _dense(C.load_model(path).eval()).reshape(5, 8).argmax(-1)
    return out


@cntk_case(names=["cntk.losses.nce_loss"],
           note="its negatives are CNTK's draws, so the loss is CNTK's for a sampled noise "
                "distribution (float32 sums: rtol 1e-6)", rtol=1e-6, atol=1e-6)
def nce_loss_of_cntks_negatives(C, np):
    x, y = C.input_variable(3), C.input_variable(5)
    W = C.parameter((5, 3), init=np.arange(15, dtype=np.float32).reshape(5, 3) / 10)
    b = C.parameter((5, 1), init=np.arange(5, dtype=np.float32).reshape(5, 1) / 7)
    loss = C.nce_loss(W, b, x, y, np.array([1, 2, 3, 4, 5], np.float32), num_samples=3, seed=1)
    data = {x: np.arange(6, dtype=np.float32).reshape(2, 3) / 5,
            y: np.eye(5, dtype=np.float32)[[1, 3]]}
    return {"loss": np.stack([loss.eval(data) for _ in range(3)])}


@cntk_case(names=["cntk.ops.random_sample_inclusion_frequency", "cntk.losses.nce_loss"],
           note="without duplicates CNTK estimates the tries a set of distinct classes takes "
                "by sampling ten sets with the node's own engine (its rngOffset counts their "
                "tries, with duplicates too), once: the values are CNTK's exactly, and so is the "
                "loss of an nce_loss without duplicates (float32 sums: rtol 1e-6)",
           rtol=1e-6, atol=1e-7)
def inclusion_frequency_is_cntks_estimate(C, np, r):
    r.touch("cntk.Function.save", "cntk.ops.functions.load_model")
    w = np.array([1, 2, 3, 4, 0, 10], np.float32)
    d = tempfile.mkdtemp()
    out = {}
    for dups in (False, True):
        f = C.random_sample_inclusion_frequency(w, 3, dups, seed=1)
        out["values_%s" % dups] = np.stack([f.eval() for _ in range(2)])   # (computed once)
        path = os.path.join(d, "inclusion_%s.model" % dups)
        f.save(path)
        out["offset_%s" % dups] = int(f.root_function.attributes["rngOffset"])
        out["loaded_%s" % dups] = C.load_model(path).eval()     # (estimated again from there)
    row = C.random_sample_inclusion_frequency(w.reshape(1, 6) * 2, 4, False, seed=2)
    out["row"] = row.eval()
    path = os.path.join(d, "row.model")
    row.save(path)
    out["row_offset"] = int(row.root_function.attributes["rngOffset"])
    out["row_loaded"] = C.load_model(path).eval()
    many = np.arange(1, 301, dtype=np.float32) ** 1.5
    out["many"] = C.random_sample_inclusion_frequency(many, 150, False, seed=3).eval()
    x, y = C.input_variable(3), C.input_variable(5)
    W = C.parameter((5, 3), init=np.arange(15, dtype=np.float32).reshape(5, 3) / 10)
    b = C.parameter((5, 1), init=np.arange(5, dtype=np.float32).reshape(5, 1) / 7)
    loss = C.nce_loss(W, b, x, y, np.array([1, 2, 3, 4, 5], np.float32), num_samples=3,
                      allow_duplicates=False, seed=4)
    data = {x: np.arange(6, dtype=np.float32).reshape(2, 3) / 5,
            y: np.eye(5, dtype=np.float32)[[1, 3]]}
    out["nce_without_duplicates"] = np.stack([loss.eval(data) for _ in range(3)])
    return out


@cntk_case(names=["cntk.ops.dropout", "cntk.random.uniform_like", "cntk.layers.Dropout"],
           note="of sequences CNTK draws time step by time step (its minibatch's columns are "
                "t * sequences + s, the padding included)", **EXACT)
def random_values_of_sequences_are_cntks(C, np):
    x = C.sequence.input_variable(3)
    data = [np.ones((3, 3), np.float32), np.ones((2, 3), np.float32)]
    out = {}
    draws = {"dropout": C.dropout(x, 0.5, seed=7),
             "uniform_like": C.random.uniform_like(x, seed=8),
             "layer": C.layers.Dropout(0.4, seed=9)(x)}
    for name, f in sorted(draws.items()):
        for k in range(2):
            got = f.forward({x: data}, keep_for_backward=set(f.outputs))[1][f.output]
            for s, seq in enumerate(got):
                out["%s_%d_%d" % (name, k, s)] = np.asarray(seq)
    return out


@cntk_case(names=["cntk.random.uniform_like", "cntk.layers.Recurrence", "cntk.layers.Fold",
                  "cntk.layers.Dropout"],
           note="a random Function in a recurrence's step draws step by step from where the "
                "last evaluation left its stream: building the recurrence draws nothing",
           **EXACT)
def random_values_in_recurrent_steps_are_cntks(C, np):
    x = C.sequence.input_variable(2)
    data = [np.ones((4, 2), np.float32), np.ones((2, 2), np.float32)]

    @C.Function
    def uniform_step(h, xt):
        return h * 0 + C.random.uniform_like(xt, seed=3)

    @C.Function
    def dropout_step(h, xt):
        return h * 0 + C.layers.Dropout(0.5, seed=4)(xt)

    out = {}
    nets = {"uniform": C.layers.Recurrence(uniform_step)(x),
            "fold": C.layers.Fold(uniform_step)(x),
            "dropout": C.layers.Recurrence(dropout_step)(x)}
    for name, f in sorted(nets.items()):
        for k in range(2):
            got = f.forward({x: data}, keep_for_backward=set(f.outputs))[1][f.output]
            for s, seq in enumerate(got):
                out["%s_%d_%d" % (name, k, s)] = np.asarray(seq)
    return out

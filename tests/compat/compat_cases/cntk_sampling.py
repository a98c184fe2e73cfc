"""``random_sample`` and ``random_sample_inclusion_frequency``: the cases compare shapes, the
one-hot rows, distinctness without duplicates, and how often each class is drawn over many sets
against CNTK's counts, within six standard errors of the difference of two binomial estimates
(``sqrt(2 p (1 - p) / n)``; the classes themselves, CNTK's exactly, are compared in
``cntk_random_values.py``).  With duplicates the
inclusion frequency is exact; without, CNTK's is an estimate from ten samplings with the node's
engine, which Stadyn draws alike (``cntk_random_values.py``'s
``inclusion_frequency_is_cntks_estimate`` compares them exactly), so that case compares only
its properties."""

import math

import numpy as np

from compat_harness import cntk_case

WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0, 0.0, 10.0], np.float32)
P = WEIGHTS / WEIGHTS.sum()
SETS = 1500


def _dense(v):
    return v.toarray() if hasattr(v, "toarray") else np.asarray(v)   # CNTK: scipy.sparse


def _count_tols(n, inclusion):
    return (0.0, 6 * math.sqrt(2 * inclusion * (1 - inclusion) / n))


@cntk_case(names=["cntk.ops.random_sample", "cntk.Function.eval"],
           tols={"frequency": _count_tols(SETS * 2, 0.5)},
           note="class frequencies of 3000 draws with replacement: six standard errors of "
                "the difference at the largest variance (p = 0.5)")
def random_sample(C, r):
    r.touch("cntk.Function.eval")
    f = C.random_sample(WEIGHTS, 2, True, seed=7)
    first = _dense(f.eval())
    counts = np.zeros(len(WEIGHTS))
    for _ in range(SETS):
        counts += _dense(f.eval()).sum(axis=0)
    again = _dense(C.random_sample(WEIGHTS, 2, True, seed=7).eval())
    return {"shape": list(f.shape), "dynamic_axes": len(f.dynamic_axes),
            "value_shape": list(first.shape), "one_hot": bool((first.sum(axis=1) == 1).all()),
            "same_seed_same_values": bool((again == first).all()),
            "never_zero_weight": float(counts[4]),
            "frequency": counts / (SETS * 2)}


@cntk_case(names=["cntk.ops.random_sample", "cntk.Function.eval"],
           tols={"inclusion": _count_tols(SETS, 0.5)},
           note="how often each class is in a set of 3 distinct classes, over 1500 sets: six "
                "standard errors of the difference at the largest variance (p = 0.5)")
def random_sample__no_duplicates(C, r):
    r.touch("cntk.Function.eval")
    f = C.random_sample(WEIGHTS, 3, False, seed=8)
    counts, distinct = np.zeros(len(WEIGHTS)), True
    for _ in range(SETS):
        rows = _dense(f.eval())
        distinct = distinct and len(set(rows.argmax(axis=1).tolist())) == 3
        counts += rows.sum(axis=0)
    return {"distinct": distinct, "inclusion": counts / SETS}


@cntk_case(names=["cntk.ops.random_sample_inclusion_frequency", "cntk.Function.eval"],
           rtol=1e-5)
def random_sample_inclusion_frequency(C, r):
    r.touch("cntk.Function.eval")
    w = np.concatenate([np.full(100, 1000.0), np.full(100, 1.0)]).astype(np.float32)
    with_dups = C.random_sample_inclusion_frequency(WEIGHTS, 3, True)
    without = C.random_sample_inclusion_frequency(WEIGHTS, 3, False, seed=1).eval()
    positive = without[WEIGHTS > 0]
    return {"with_duplicates": with_dups.eval(), "shape": list(with_dups.shape),
            "documented": C.random_sample_inclusion_frequency(w, 150, True).eval()[[0, 110]],
            "without_in_unit_interval": bool(((without >= 0) & (without <= 1)).all()),
            "without_zero_weight": float(without[4]),
            "without_order_follows_weights": [int(i) for i in np.argsort(positive)]}


@cntk_case(names=["cntk.ops.random_sample", "cntk.ops.random_sample_inclusion_frequency"],
           note="without duplicates CNTK 2.7 refuses as many samples as classes (it needs "
                "fewer); one fewer builds and evaluates")
def random_sample__as_many_distinct_samples_as_classes(C, r):
    w = np.ones(5, np.float32)
    result = {}
    for op in ("random_sample", "random_sample_inclusion_frequency"):
        for n in (4, 5):
            try:
                getattr(C, op)(w, n, False, seed=1).eval()
                result[f"{op}_{n}_refused"] = False
            except Exception:  # noqa: BLE001 - the real framework's error type is its own
                result[f"{op}_{n}_refused"] = True
    return result


@cntk_case(names=["cntk.ops.random_sample", "cntk.ops.random_sample_inclusion_frequency",
                  "cntk.Function.eval"])
def random_sample__batched_weights_build_and_fail_to_run(C, r):
    # CNTK 2.7 builds a sampling op of weights with the batch axis (a vector, or a row, per
    # sample), shows its shape, and fails when it runs, naming the weights' node
    r.touch("cntk.Function.eval")
    out = {}
    for key, shape, make in [
            ("sample", 5, lambda w: C.random_sample(w, 3, True, seed=1)),
            ("sample_row", (1, 5), lambda w: C.random_sample(w, 3, False, seed=1)),
            ("inclusion", 5, lambda w: C.random_sample_inclusion_frequency(w, 3, True))]:
        w = C.input_variable(shape, name="w")
        f = make(w)
        said = f"Node '{w.uid}' (InputValue operation): Minibatch data cannot be interpreted " \
            "as a single 2D tensor."
        try:
            f.eval({w: np.ones((2,) + w.shape, np.float32)})
            error = None
        except RuntimeError as e:
            error = said in str(e)
        out[key] = {"shape": list(f.shape), "dynamic_axes": len(f.dynamic_axes),
                    "runtime_error_naming_the_weights": error}
    return out

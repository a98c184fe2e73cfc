"""Differential random testing of ``nnabla.functions`` / ``parametric_functions``: Stadyn's
``stadyn.compat.nnabla`` against the real NNabla 1.39.

    python tools/nnabla_fuzz.py --nnabla /work/peers/nnabla/bin/python [--draws 20] [--seed 0]
        [--only sum,convolution] [--show 3] [--integers]

For every function of ``GENERATORS`` (``nnabla_fuzz_draws*.py``) it draws ``--draws``
random argument sets (shapes, axes negative and tuple, keepdims, pads, strides, groups,
modes, ...; some invalid on purpose) and runs each forward and backward (``y.backward(w)``
for a seeded ``w``; the gradients of every input with ``need_grad``, and every input's data
after the forward, which catches running statistics) in NNabla 1.39 and in Stadyn (static
graph and ``nn.set_auto_forward``); it prints the mismatches grouped by function and argument
pattern (the kinds of the arguments: ``axis=neg-int``, ``keepdims=True``, ...).
``--integers`` adds, for each draw, one whose float inputs are int32 (the values rounded,
no gradients): NNabla 1.39 computes most functions in float32, and the output dtypes that
differ are listed at the end.  An error on one side only is a mismatch too.  Each of
Stadyn's modes is compared with NNabla's same mode (NNabla runs ``unique`` only in the dynamic
one).  The same file is the worker on both sides (``--worker nnabla|stadyn``): the draws
travel as a pickle.  Not run by CI (it needs NNabla); what it finds becomes a case under
``tests/compat/compat_cases/`` (``nnabla_fuzz_found.py``).
"""

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import zlib
from collections import defaultdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from nnabla_fuzz_draws import GENERATORS as _FIRST, In, pattern  # noqa: E402
from nnabla_fuzz_draws_more import GENERATORS as _MORE  # noqa: E402

GENERATORS = {**_FIRST, **_MORE}
SRC = os.path.join(os.path.dirname(HERE), "src")


# ---------------------------------------------------------------- worker ----------------------

def _param_value(index, name, shape):
    rng = np.random.RandomState(zlib.crc32(("%d/%s" % (index, name)).encode()))
    return rng.randn(*shape).astype(np.float32) * 0.5


def run_one(nn, F, PF, index, d, dynamic=False):
    """Run draw ``d``: outputs, input grads, inputs' data after the forward, parameters.

    In dynamic mode the call itself computes (no ``forward()``); parametric functions are
    left out there (their parameters get the draw's values only after the call)."""
    if dynamic and d["pf"]:
        return {"skipped": True}
    nn.clear_parameters()
    xs = [nn.Variable.from_numpy_array(v, need_grad=bool(g))
          for v, g in zip(d["inputs"], d["grads"])]
    args = [xs[a.i] if isinstance(a, In) else a for a in d["args"]]
    mod = PF if d["pf"] else F
    with nn.parameter_scope("fz"):
        y = getattr(mod, d["fn"])(*args, **d["kwargs"])
    params = nn.get_parameters(grad_only=False)
    for name in sorted(params):
        p = params[name]
        p.d = _param_value(index, name, p.shape)
    ys = list(y) if isinstance(y, (tuple, list)) else [y]
    for x in xs:
        x.g = 0
    for p in params.values():
        p.g = 0
    if not dynamic:
        for v in ys:
            v.forward()
    res = {"out%d" % i: np.array(v.d, copy=True) for i, v in enumerate(ys)}
    for i, x in enumerate(xs):
        res["in%d.d" % i] = np.array(x.d, copy=True)
    for name in sorted(params):
        res["param " + name + ".d"] = np.array(params[name].d, copy=True)
    wrng = np.random.RandomState(index)
    floats = [v for v in ys if np.issubdtype(np.asarray(v.d).dtype, np.floating)]
    if floats and (any(d["grads"]) or params):
        if len(floats) == 1:
            floats[0].backward(wrng.randn(*floats[0].shape).astype(np.float32))
        else:
            loss = None
            for v in floats:
                w = nn.Variable.from_numpy_array(wrng.randn(*v.shape).astype(np.float32))
                term = F.sum(F.mul2(v, w))
                loss = term if loss is None else F.add2(loss, term)
            if not dynamic:
                loss.forward()
            loss.backward()
        for i, x in enumerate(xs):
            if d["grads"][i]:
                res["in%d.g" % i] = np.array(x.g, copy=True)
        for name in sorted(params):
            res["param " + name + ".g"] = np.array(params[name].g, copy=True)
    res["params"] = sorted([n, list(p.shape)] for n, p in params.items())
    return res


def worker(side, path_in, path_out, start, dynamic):
    if side == "nnabla":
        import nnabla as nn
        import nnabla.functions as F
        import nnabla.parametric_functions as PF
    else:
        sys.path.insert(0, os.environ.get("NNABLA_FUZZ_SRC", SRC))
        import stadyn.compat.nnabla as nn
        import stadyn.compat.nnabla.functions as F
        import stadyn.compat.nnabla.parametric_functions as PF
    import warnings
    warnings.simplefilter("ignore")
    nn.set_auto_forward(bool(dynamic))
    with open(path_in, "rb") as f:
        draws = pickle.load(f)
    with open(path_out, "ab") as out:
        for index in range(start, len(draws)):
            try:
                res = run_one(nn, F, PF, index, draws[index], bool(dynamic))
            except Exception as e:  # noqa: BLE001 - an error is a result here
                res = {"error": "%s: %s" % (type(e).__name__, str(e).strip().split("\n")[0][:200])}
            pickle.dump((index, res), out, protocol=4)
            out.flush()


def run_side(python, side, draws_path, n, dynamic=False):
    """Every draw's result on one side; a crash of the worker marks its draw and resumes."""
    results = {}
    fd, out_path = tempfile.mkstemp(suffix=".pkl", dir=os.path.dirname(draws_path))
    os.close(fd)
    start = 0
    while start < n:
        subprocess.run([python, os.path.abspath(__file__), "--worker", side, draws_path, out_path,
                        str(start), str(int(dynamic))],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
        with open(out_path, "rb") as f:
            while True:
                try:
                    i, r = pickle.load(f)
                except (EOFError, pickle.UnpicklingError):
                    break
                results[i] = r
        done = max(results) + 1 if results else 0
        if done < n:
            results[max(done, start)] = {"error": "crash"}
            start = max(done, start) + 1
        else:
            start = n
    os.unlink(out_path)
    return results


# ---------------------------------------------------------------- compare ---------------------

# Results where NNabla 1.39 itself is wrong: compared by neither side, counted apart.  (Its
# batch_normalization over several axes, which updates transposed copies of the running
# statistics, is matched by compat.nnabla: the running statistics stay.)
NNABLA_BUGS = [  # (function, result, the draws it applies to, why)
    ("sort", "in0.g", lambda d: True,
     "NNabla 1.39's Sort backward writes x.g[i] = y.g[index[i]] (the inverse permutation's "
     "gradient; right only where the sort permutation is its own inverse); Stadyn passes "
     "y.g[j] back to x[index[j]]"),
    ("global_average_pooling", "out0", lambda d: d["inputs"][0].ndim > 4,
     "NNabla 1.39's GlobalAveragePooling averages shape[2] * shape[3] values per channel, "
     "reading a 5-d input with the wrong strides; Stadyn averages every spatial value"),
    ("global_average_pooling", "in0.g", lambda d: d["inputs"][0].ndim > 4, "(as out0)"),
]
# Draws NNabla 1.39 refuses (or crashes on) only through a bug of its own: Stadyn computes
# what the function means; not compared, counted apart (docs/nnabla-names.md, "NNabla's
# refusals that are its bugs").
def _mixed_sign_axes(d):
    axes = d["kwargs"].get("axis", d["kwargs"].get("axes"))
    return isinstance(axes, (tuple, list)) and min(axes) < 0 <= max(axes)


def _negative_axes(d):
    return min(d["args"][1]) < 0


def _window_past_input(d):
    """A pooling window longer than its (padded) axis with ignore_border=True."""
    kernel = d["args"][1]
    x, kw = d["inputs"][0], d["kwargs"]
    if not kw.get("ignore_border", True):
        return False
    sizes = (x.shape[-len(kernel) - 1:-1] if kw.get("channel_last") else x.shape[-len(kernel):])
    pad = kw.get("pad", (0,) * len(kernel))
    return any(k > s + 2 * p for k, s, p in zip(kernel, sizes, pad))


# (function, the draws it applies to, why); for transpose and the poolings the results too
NNABLA_REFUSAL_BUGS = [
    ("sum", _mixed_sign_axes,
     "NNabla 1.39's reductions sort their axes before making the negative ones positive "
     "(Sum's constructor, then refine_axes in setup_impl), so (0, -1) becomes (2, 0) and the "
     "transpose it builds has too many axes (RuntimeError: Length of axes must be same as "
     "ndim); all-negative or all-non-negative tuples work"),
    ("mean", _mixed_sign_axes, "(as sum)"), ("max", _mixed_sign_axes, "(as sum)"),
    ("min", _mixed_sign_axes, "(as sum)"), ("prod", _mixed_sign_axes, "(as sum)"),
    ("norm", _mixed_sign_axes, "(as sum: Norm reduces with a Sum over the same axes)"),
    ("norm_normalization", _mixed_sign_axes, "(as norm)"),
    ("clip_by_norm", _mixed_sign_axes, "(as sum: its norm is a Sum over the same axes)"),
    ("transpose", _negative_axes,
     "NNabla 1.39's Transpose makes negative axes positive in its member, then reads the "
     "unchanged copy it took before: a negative axis indexes the shape at -1 (garbage shapes, "
     "'memory error in alloc', or a crash: munmap_chunk(): invalid pointer)"),
    ("sum_pooling", _window_past_input,
     "NNabla 1.39 counts (size + 2 * pad - kernel) / stride + 1 windows in C's integer "
     "division, which rounds -1/3 up to 0: a window longer than its axis gives one output that "
     "reads past the input (the process may end: free(): invalid pointer); Stadyn refuses "
     "it, as PyTorch's pooling (Calculated output size: 0)"),
    ("average_pooling", _window_past_input, "(as sum_pooling)"),
    ("max_pooling", _window_past_input, "(as sum_pooling)"),
]
_RESULTS_TOO = ("transpose", "sum_pooling", "average_pooling", "max_pooling")
# Looser tolerances, with the reason: gradients through 1/sqrt(var + eps) with eps = 1e-5 over
# one or two values scale float32 rounding by ~300.
TOLERANCES = {"group_normalization": (1e-3, 1e-3), "instance_normalization": (1e-3, 1e-3),
              "layer_normalization": (1e-3, 1e-3), "batch_normalization": (1e-3, 1e-3),
              # the log of probabilities near 1e-4 (Dirichlet draws over 48 classes)
              "kl_multinomial": (1e-3, 1e-4)}

def compare(ref, got, rtol=1e-4, atol=1e-5, skip=()):
    """``None`` when ``got`` matches ``ref``, else a short reason.  What NNabla 1.39's CPU
    build has not implemented (``not_implemented error``) is no mismatch."""
    if "skipped" in got or "not_implemented" in ref.get("error", ""):
        return None
    if "error" in ref or "error" in got:
        if "error" in ref and "error" in got:
            return None
        if "error" in ref:
            return "Stadyn accepts what NNabla refuses (%s)" % ref["error"][:100]
        return "Stadyn raises %s" % got["error"][:160]
    if ref.get("params") != got.get("params"):
        return "parameters %s != %s" % (got.get("params"), ref.get("params"))
    keys = [k for k in ref if k != "params" and k not in skip]
    missing = [k for k in keys if k not in got]
    if missing:
        return "missing " + ",".join(missing)
    for k in keys:
        a, b = np.asarray(ref[k]), np.asarray(got[k])
        if a.shape != b.shape:
            return "%s shape %s != %s" % (k, b.shape, a.shape)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        if not np.allclose(b64, a64, rtol=rtol, atol=atol, equal_nan=True):
            err = np.nanmax(np.abs(a64 - b64)) if a.size else 0
            return "%s values (max abs err %.3g)" % (k, err)
    return None


def dtype_notes(ref, got):
    if "error" in ref or "error" in got:
        return []
    return ["%s %s->%s" % (k, np.asarray(ref[k]).dtype, np.asarray(got[k]).dtype)
            for k in ref if k in got and k.startswith("out")
            and np.asarray(ref[k]).dtype != np.asarray(got[k]).dtype]


def _with_integers(d):
    """Draw ``d`` with its float inputs as int32 (values rounded after scaling by 3, so
    that they are not all 0 and 1) and no gradients asked; labelled ``<name> int32``."""
    e = dict(d)
    e["inputs"] = [np.round(v * 3).astype(np.int32) if v.dtype.kind == "f" else v
                   for v in d["inputs"]]
    e["grads"] = [False] * len(d["grads"])
    e["label"] = d["label"] + " int32"
    return e


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nnabla", default=os.environ.get("STADYN_NNABLA_PYTHON",
                                                        "/work/peers/nnabla/bin/python"))
    ap.add_argument("--stadyn", default=sys.executable)
    ap.add_argument("--src", default=SRC, help="the Stadyn source tree to test (default: this "
                                              "checkout's src)")
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument("--show", type=int, default=2, help="examples printed per mismatch class")
    ap.add_argument("--no-dynamic", action="store_true")
    ap.add_argument("--integers", action="store_true",
                    help="also each draw with its float inputs as int32 (no gradients)")
    ap.add_argument("--worker", nargs=5, metavar=("SIDE", "IN", "OUT", "START", "DYNAMIC"))
    a = ap.parse_args(argv)
    if a.worker:
        side, pin, pout, start, dyn = a.worker
        worker(side, pin, pout, int(start), int(dyn))
        return 0
    os.environ["NNABLA_FUZZ_SRC"] = os.path.abspath(a.src)
    names = [n for n in GENERATORS if not a.only or n in a.only.split(",")]
    draws = []
    for fi, name in enumerate(names):
        for k in range(a.draws):
            rng = np.random.RandomState([a.seed, fi, k])
            d = GENERATORS[name](rng)
            d["label"] = name
            draws.append(d)
            if a.integers:
                draws.append(_with_integers(d))
    tmp = tempfile.mkdtemp(prefix="nnabla_fuzz_")
    path = os.path.join(tmp, "draws.pkl")
    with open(path, "wb") as f:
        pickle.dump(draws, f, protocol=4)
    # each mode against NNabla's same mode (``unique`` runs only in the dynamic one)
    refs = {"static": run_side(a.nnabla, "nnabla", path, len(draws))}
    sides = [("static", run_side(a.stadyn, "stadyn", path, len(draws)))]
    if not a.no_dynamic:
        refs["dynamic"] = run_side(a.nnabla, "nnabla", path, len(draws), True)
        sides.append(("dynamic", run_side(a.stadyn, "stadyn", path, len(draws), True)))
    ref = refs["static"]
    classes = defaultdict(list)
    dtypes = defaultdict(set)
    bad = set()
    nnabla_errors = not_implemented = bugs = refusal_bugs = 0
    for i, d in enumerate(draws):
        nnabla_errors += "error" in ref[i]
        not_implemented += "not_implemented" in ref[i].get("error", "")
        for mode, got in sides:
            want = refs[mode][i]
            if (("error" in want or d["fn"] in _RESULTS_TOO)
                    and any(fn == d["fn"] and when(d) for fn, when, _ in NNABLA_REFUSAL_BUGS)):
                refusal_bugs += mode == "static"
                continue
            base = d["label"].split(" ")[0]        # without " int32"
            skip = [k for (fn, k, when, _) in NNABLA_BUGS if fn == base and when(d)]
            bugs += len(skip) and mode == "static" and "error" not in want
            why = compare(want, got[i], *TOLERANCES.get(base, (1e-4, 1e-5)),
                          skip=skip)
            if why:
                bad.add(i)
                classes[(d["label"], pattern(d), why.split(" (")[0][:60])].append((i, mode, why))
            for note in dtype_notes(want, got[i]):
                dtypes[d["label"]].add(note)
    kinds = defaultdict(set)
    for (_, _, why), items in classes.items():
        kind = ("Stadyn accepts" if why.startswith("Stadyn accepts") else
                "Stadyn raises" if why.startswith("Stadyn raises") else "results differ")
        kinds[kind].update(i for i, _, _ in items)
    print("nnabla_fuzz: %d functions, %d draws (seed %d), NNabla refused %d (%d not implemented "
          "in NNabla, not compared), %d draws mismatch (%d classes): %s"
          % (len(names), len(draws), a.seed, nnabla_errors, not_implemented, len(bad),
             len(classes), ", ".join("%s %d" % (k, len(v)) for k, v in sorted(kinds.items()))))
    for (label, pat, _), items in sorted(classes.items()):
        modes = sorted({m for _, m, _ in items})
        print("\n[%s] %s  (%d; %s)" % (label, pat, len(items), "/".join(modes)))
        seen = set()
        for i, mode, why in items:
            if i in seen or len(seen) >= a.show:
                continue
            seen.add(i)
            d = draws[i]
            print("   #%d %s%s args=%s kwargs=%s shapes=%s\n      %s" % (
                i, "PF." if d["pf"] else "F.", d["fn"],
                [("x%d" % v.i) if isinstance(v, In) else v for v in d["args"]], d["kwargs"],
                [tuple(x.shape) for x in d["inputs"]], why))
    if bugs:
        print("\n%d draws reach NNabla 1.39's own bugs (not compared there):" % bugs)
        for fn, key, _, why in NNABLA_BUGS:
            print("  %s %s: %s" % (fn, key, why))
    if refusal_bugs:
        print("\n%d draws NNabla 1.39 refuses only through its own bugs (not compared):"
              % refusal_bugs)
        for fn, _, why in NNABLA_REFUSAL_BUGS:
            print("  %s: %s" % (fn, why))
    if dtypes:
        print("\noutput dtypes that differ (not counted):")
        for label, notes in sorted(dtypes.items()):
            print("  %s: %s" % (label, ", ".join(sorted(notes))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

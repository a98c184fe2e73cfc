"""How far the SVD fine-tuning's saved parameters move on one framework when only rounding
changes: run ``nnabla_examples_extra.py``'s ``svd_reference`` once, then its ``svd`` run
(``classification_svd.py``, which factorises the reference's ``fc3`` with NumPy's SVD and
fine-tunes the slim network for 20 steps) several times, each with the reference's parameters
multiplied by ``1 + eps * s`` as the program loads them (``s`` a fixed pattern of signs, one per
seed; the first run unperturbed), and write the digest of each run's ``params_000020.h5`` as
JSON.

    python tests/examples/nnabla_examples_extra_spread.py EXAMPLES WORK OUT.json [--stadyn]
        [--runs=N] [--eps=E]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_extra_spread.py EXAMPLES WORK
tests/examples/refs/nnabla139_examples_extra_spread.json``; EXAMPLES and WORK as for the
driver).  ``eps`` (default 1e-7) is about one float32 rounding step; the two frameworks'
``svd_reference`` runs save its parameters within 6e-8 of each other but for a few ``fc3``
weights (up to 2.5e-6, as far as NNabla's own runs part them when its initial parameters are
perturbed so).  The perturbation is applied by
``nnabla.load_parameters`` (the program calls it once, in ``models.py``'s
``decompose_network_and_set_params``, before the SVD) to the parameters it loaded, so the
program runs unchanged otherwise.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402
import nnabla_examples_extra as driver  # noqa: E402


def perturbing_what_is_loaded(seed, eps):
    """Make ``nnabla.load_parameters`` multiply each parameter it loaded (those under
    ``reference/``, by name order) by ``1 + eps * s``, signs ``s`` drawn from
    ``RandomState(seed)``; seed 0 leaves them as they are."""
    import nnabla as nn
    load = nn.load_parameters

    def perturbed(*args, **kwargs):
        got = load(*args, **kwargs)
        if seed:
            signs = np.random.RandomState(seed)
            params = nn.get_parameters(grad_only=False)
            for name in sorted(params):
                if name.startswith("reference/"):
                    p = params[name]
                    s = signs.choice([-1.0, 1.0], size=p.shape)
                    p.d = (p.d * (1.0 + eps * s)).astype(p.d.dtype)
        return got

    perturbed.original = load
    nn.load_parameters = perturbed


def main(argv):
    examples, work, out_path = argv[:3]
    runs = int(next((a.split("=", 1)[1] for a in argv if a.startswith("--runs=")), 12))
    eps = float(next((a.split("=", 1)[1] for a in argv if a.startswith("--eps=")), 1e-7))
    flags = [a for a in argv[3:] if a == "--stadyn"]
    work = os.path.abspath(work)
    os.makedirs(work, exist_ok=True)
    driver.main([examples, work, os.path.join(work, "reference.json"), *flags,
                 "--only=svd_reference"])
    out = {"eps": eps, "runs": []}
    begin = record.begin
    for seed in range(runs):
        result = os.path.join(work, "result%d.json" % seed)

        def begin_perturbed(args, root, seed=seed):
            got = begin(args, root)
            perturbing_what_is_loaded(seed, eps)
            return got

        record.begin = begin_perturbed
        try:
            driver.main([examples, work, result, *flags, "--only=svd"])
        finally:
            record.begin = begin
            import nnabla as nn
            nn.load_parameters = getattr(nn.load_parameters, "original", nn.load_parameters)
        with open(result) as f:
            run = json.load(f)["svd"]
        final = run["parameters"].get("params_000020.h5", {})
        out["runs"].append({"seed": seed, "error": run["error"], "parameters": final})
        print(seed, final.get("slim/conv1/conv/W", [None])[0], flush=True)
    record.write_results(out, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])

"""How far DeepLab v3+'s monitored values move on one framework when only rounding changes:
run ``nnabla_examples_10.py``'s DeepLab v3+ driver several times, each with the program's
initial parameters multiplied by ``1 + eps * s`` (``s`` a fixed pattern of signs, one per seed;
the first run unperturbed), and write what the monitors were given in each run as JSON.

    python tests/examples/nnabla_examples_10_spread.py EXAMPLES WORK OUT.json [--stadyn]
        [--runs=N] [--eps=E]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_10_spread.py EXAMPLES WORK
tests/examples/refs/nnabla139_examples_10_spread.json``; EXAMPLES and WORK as for the driver).
``eps`` (default 1e-6) is about 8 float32 rounding steps: a change of the size that another
CPU's kernels, another thread count or another summation order make.  The perturbation is
applied when the program makes its solver (``S.Momentum(...)``, after every parameter exists
and before ``set_parameters``), so the program runs unchanged otherwise.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402
import nnabla_examples_10 as driver  # noqa: E402


def perturbing_the_parameters(seed, eps):
    """Make ``nnabla.solvers.Momentum`` first multiply every parameter by ``1 + eps * s``
    (signs ``s`` drawn from ``RandomState(seed)``, in ``nn.get_parameters()`` order); seed 0
    leaves them as they are."""
    import nnabla as nn
    import nnabla.solvers as S
    momentum = S.Momentum

    def perturbed(*args, **kwargs):
        if seed:
            signs = np.random.RandomState(seed)
            for p in nn.get_parameters(grad_only=False).values():
                s = signs.choice([-1.0, 1.0], size=p.shape)
                p.d = (p.d * (1.0 + eps * s)).astype(p.d.dtype)
        return momentum(*args, **kwargs)

    perturbed.original = momentum
    S.Momentum = perturbed


def main(argv):
    examples, work, out_path = argv[:3]
    runs = int(next((a.split("=", 1)[1] for a in argv if a.startswith("--runs=")), 9))
    eps = float(next((a.split("=", 1)[1] for a in argv if a.startswith("--eps=")), 1e-6))
    flags = [a for a in argv[3:] if a == "--stadyn"]
    out = {"eps": eps, "runs": []}
    begin = record.begin
    for seed in range(runs):
        folder = os.path.join(os.path.abspath(work), "run%d" % seed)
        os.makedirs(folder, exist_ok=True)
        result = os.path.join(folder, "result.json")

        def begin_perturbed(args, root, seed=seed):
            got = begin(args, root)
            perturbing_the_parameters(seed, eps)
            return got

        record.begin = begin_perturbed
        try:
            driver.main([examples, folder, result, *flags])
        finally:
            record.begin = begin
            import nnabla.solvers as S
            S.Momentum = getattr(S.Momentum, "original", S.Momentum)
        with open(result) as f:
            run = json.load(f)["deeplabv3plus"]
        out["runs"].append({"seed": seed, "error": run["error"], "monitored": run["monitored"]})
        print(seed, [m for m in run["monitored"] if m[0].startswith("Validation")], flush=True)
    record.write_results(out, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])

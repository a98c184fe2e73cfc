"""Run an eleventh batch of nnabla-examples' programs (sony/nnabla-examples:
``responsible_ai/kernel_shap``), unchanged, and write as JSON the SHAP values it computed.  The
same file runs on NNabla 1.39 (which made ``refs/nnabla139_examples_11.json``) and, with
``--stadyn``, on Stadyn through ``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_11.py EXAMPLES WORK OUT.json [--stadyn]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_11.py EXAMPLES WORK
tests/examples/refs/nnabla139_examples_11.json``).

EXAMPLES holds the program's folder (a checkout or an archive of the repository); WORK is an
empty folder.  The program trains a two-layer perceptron on the Iris data it ships (1,500 Adam
steps, the graph built anew each step), then explains one sample's prediction by kernel SHAP:
the network evaluated on the training data with every subset of the sample's features, and a
weighted least-squares fit.  Only the harness around the program differs from a user's shell:
NumPy's and NNabla's generators are seeded 0 and the parameter initializers 313 (on Stadyn
torch's 0 too); ``np.int``, which the program uses and NumPy 1.24 removed, is ``int`` again;
and its plotting module ``visualize`` (matplotlib) is replaced by one that records the
expected values and SHAP values it is given, which the program then "saves" as this JSON.
"""

import json
import os
import sys
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402

PROGRAMS = ("responsible_ai/kernel_shap",)
KERNEL_SHAP = "responsible_ai/kernel_shap"
OWN_MODULES = ("calculate", "train", "visualize")


def recording_visualize(given):
    """A ``visualize`` module whose ``visualize(...)`` puts what it is given into ``given`` and
    returns a figure whose ``savefig(path)`` writes ``given`` to ``path`` as JSON."""
    module = types.ModuleType("visualize")

    class Figure:
        def savefig(self, path):
            with open(path, "w") as f:
                json.dump(given, f)

    def visualize(expected_values, shap_values, sample, feature_names, class_index, index):
        given["expected_values"] = np.asarray(expected_values).tolist()
        given["shap_values"] = [np.asarray(v).tolist() for v in shap_values]
        given["feature_names"] = list(feature_names)
        return Figure()

    module.visualize = visualize
    return module


def main(argv):
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    np.int = int
    import nnabla as nn
    import nnabla.random
    folder = os.path.join(examples, KERNEL_SHAP)
    results = {}
    for run, program, args, out in record.selected(
            [("kernel_shap", KERNEL_SHAP + "/kernel_shap.py",
              "-i {d}/iris_flower_dataset_validation_delo.csv "
              "-t {d}/iris_flower_dataset_training_delo.csv -os 3 -i2 0 -a 0 -c2 0 "
              "-o {out}/shap.json")], argv, work):
        np.random.seed(0)
        nn.seed(0)
        nnabla.random.set_parameter_seed(313)
        if stadyn:
            import torch
            torch.manual_seed(0)
        nn.clear_parameters()
        given = {}
        sys.modules["visualize"] = recording_visualize(given)
        error, seconds = record.run_beside_its_modules(
            os.path.join(examples, program), args.format(d=folder, out=out).split(), out,
            OWN_MODULES)
        results[run] = {"error": error, "given": given, "files": record.files(out)}
        if stadyn:
            results[run]["seconds"] = round(seconds, 1)
        nn.clear_parameters()
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])

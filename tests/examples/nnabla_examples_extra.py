"""Run nnabla-examples' model-compression programs on MNIST (``compression/mnist/svd`` of
sony/nnabla-examples: ``classification.py`` trains the reference LeNet, ``classification_svd.py``
factorises its ``fc3`` by a truncated SVD into two smaller affine layers and fine-tunes the
result), unchanged, at a tiny size, one after another in this process, and write what their
monitors recorded and a digest of the parameters they saved as JSON.  The same file runs on
NNabla 1.39 (which made ``refs/nnabla139_examples_extra.json``) and, with ``--stadyn``, on
Stadyn through ``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_extra.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python ... WORK
tests/examples/refs/nnabla139_examples_extra.json``; VQ-VAE plots with matplotlib, which NNabla
1.39's environment here lacks: it was put on ``PYTHONPATH``, with ``MPLBACKEND=Agg``).  NNabla
1.39's VQ-VAE numbers vary from run to run (its second epoch's loss by 5%).

EXAMPLES holds ``compression/mnist/svd`` (a checkout or an archive of the repository); WORK is
an empty folder: MNIST's stand-in (``examples/nnabla/mnist_standin.py``) is written to
``WORK/home/nnabla_data``, where the programs' ``mnist_data.py`` finds it through NNabla's
download cache, and each program writes under ``WORK/<run>``.  Only the harness around the
programs differs from a user's shell: NumPy is seeded 0 before each, and a two-line ``six``
stands in where the package is not installed.
"""

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402

PROGRAMS = ("compression/mnist/svd", "image-generation/variational-auto-encoder/vq-vae",
            "image-classification/mnist-collection", "image-classification/cifar10-100", "utils")
N_TRAIN, N_TEST = 300, 200
TINY = "-c cpu -b 16 --max-iter 20 --val-interval 10 --val-iter 2 -m {out} -o {out}"

# (run, program, arguments); {out} is WORK/<run>, {work} is WORK.
RUNS = [
    ("svd_reference", "compression/mnist/svd/classification.py", TINY),
    # fc3 (800 -> 50) of the reference's last parameters, factorised at half its parameters
    ("svd", "compression/mnist/svd/classification_svd.py",
     TINY + " -T {work}/svd_reference/params_000020.h5"),
    # VQ-VAE in dynamic mode (nn.set_auto_forward(True)); main.py reads configs/mnist.yaml from
    # its working folder, the user's configuration: CONFIGS below
    ("vqvae", "image-generation/variational-auto-encoder/vq-vae/main.py", "--data mnist"),
    # "svd" again from the reference's initial parameters, which both frameworks save alike (its
    # params_000000.h5): the fine-tuning on one input, without the rounding of the reference's
    # training that "svd" starts from (see nnabla_examples_extra_spread.py).  Last: a program
    # run before VQ-VAE changes the state of the generators that VQ-VAE draws from.
    ("svd_initial", "compression/mnist/svd/classification_svd.py",
     TINY + " -T {work}/svd_reference/params_000000.h5"),
]
# The configuration files a run reads from its working folder (the repository's own, at a
# tiny size, on the CPU); {out} is WORK/<run>.
CONFIGS = {
    "vqvae": ("configs/mnist.yaml", """\
model:
  in_channels: 1
  num_hidden: 16
  num_res_hidden: 8
  num_res_layers: 1
  embedding_dim: 16
  num_embeddings: 10
  commitment_cost: 0.25
  saved_models_dir: {out}/models/
  checkpoint: {out}/models/epoch_1/
  rng: 313
  decay: 0.99
train:
  batch_size: 32
  num_training_updates: 100
  learning_rate: 1.0e-3
  weight_decay: 1.0e-5
  num_epochs: 2
  save_param_step_interval: 1
  logger_step_interval: 1
  learning_rate_decay_epochs: [1]
  learning_rate_decay_factor: 0.5
  solver: adam
val:
  batch_size: 32
  interval: 1
monitor:
  path: {out}/
  train_loss: Training-loss-mnist
  train_recon: Training-reconstructions-mnist
  val_loss: Validation-loss-mnist
  val_recon: Validation-reconstructions-mnist
dataset:
  name: mnist
  with_memory_cache: False
  with_file_cache: False
  shuffle: True
extension_module: cpu
device_id: '0'
"""),
}


def main(argv):
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    import mnist_standin
    mnist_standin.write_mnist(os.path.join(work, "home", "nnabla_data"), N_TRAIN, N_TEST)
    record.six_if_missing(work)
    # VQ-VAE's data package imports its ImageNet reader, written on NVIDIA DALI and NNabla's CUDA
    # extension, with its MNIST one
    record.stub_if_missing(["nvidia", "nvidia.dali", "nvidia.dali.pipeline", "nvidia.dali.ops",
                            "nvidia.dali.types", "nnabla_ext.cuda", "nnabla_ext.cuda.experimental"],
                           Pipeline=object, dali_iterator=None)
    import nnabla as nn
    results = {}
    for run, program, args, folder in record.selected(RUNS, argv, work):
        if run in CONFIGS:
            name, text = CONFIGS[run]
            os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
            with open(os.path.join(folder, name), "w") as f:
                f.write(text.format(out=folder))
        np.random.seed(0)
        nn.clear_parameters()
        try:
            error, seconds = record.run_beside_its_modules(
                os.path.join(examples, program), args.format(out=folder, work=work).split(),
                folder, ("args", "models", "mnist_data", "trainers", "data", "neu"))
        finally:
            nn.set_auto_forward(False)
        results[run] = record.result(folder, error, seconds, stadyn, digest=True)
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Run a tenth batch of nnabla-examples' programs (sony/nnabla-examples:
``semantic-segmentation/deeplabv3plus``'s training), unchanged, at a tiny size, and write as
JSON the values its monitors were given, the files it wrote and a digest of the parameters
it made.  The same file runs on NNabla 1.39 (which made ``refs/nnabla139_examples_10.json``)
and, with ``--stadyn``, on Stadyn through ``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_10.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_10.py EXAMPLES WORK
tests/examples/refs/nnabla139_examples_10.json``).

EXAMPLES holds the program's folder and ``utils`` (a checkout or an archive of the
repository); WORK is an empty folder.  ``utils`` goes first on ``sys.path``, as installing
nnabla-examples' ``neu`` package (the program imports it) would put it.  The data are a
stand-in of PASCAL VOC's segmentation pictures and labels with the path lists the program
reads (``examples/nnabla/segmentation_standin.py``, 3 classes,
under ``WORK/voc``), and the "pretrained" parameter file the program loads first is an empty
one (``WORK/pretrained.h5``: every parameter is then made by the program's initializers).
Only the harness around the program differs from a user's shell: NumPy, ``random`` (the
program's random scaling, cropping and flipping) and NNabla's generators are seeded 0 before
the run, the parameter initializers' 313 (and on Stadyn torch's 0), and its two
``data_iterator_simple``s load in the calling thread (``use_thread=False``): with their
prefetching threads both drawing from ``random`` at once, which picture NNabla 1.39's first
batch held changed from run to run.  Its monitors average 10
steps, so the driver records the values they are given (``MonitorSeries.add``, counted).
"""

import contextlib
import os
import random
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402

PROGRAMS = ("semantic-segmentation/deeplabv3plus", "utils")
DEEPLAB = "semantic-segmentation/deeplabv3plus"

# (run, program, arguments); {out} is WORK/<run>, {work} is WORK.
RUNS = [
    # DeepLab v3+: an Xception-65 encoder (separable convolutions, batch normalization),
    # atrous spatial pyramid pooling, a decoder upsampling by F.interpolate; labels written
    # as int32 arrays and cast (label.data.cast(np.int32)), a masked softmax cross entropy
    # and top-n error over axis 1; Momentum with weight decay and a warm-up; a checkpoint and
    # two .nnp files of the validation graph; 3 steps on 65 x 65 crops of 2 pictures, a
    # validation pass before the third
    ("deeplabv3plus", DEEPLAB + "/train.py",
     "-c cpu -b 1 --max-iter 3 --val-interval 2 -s 1000 --warmup-epoch 1 --num-class 3 "
     "--train-samples 2 --val-samples 1 --image-width 65 --image-height 65 "
     "--train-dir {work}/voc/train_images.txt --train-label-dir {work}/voc/train_labels.txt "
     "--val-dir {work}/voc/val_images.txt --val-label-dir {work}/voc/val_labels.txt "
     "--pretrained-model-path {work}/pretrained.h5 -m {out} -o {out}"),
]
# the program's own modules, forgotten after the run
OWN_MODULES = ("args", "segmentation_data", "image_preprocess", "model", "xception_65",
               "_checkpoint_nnp_util", "neu")


def loading_in_the_calling_thread():
    """``nnabla.utils.data_iterator.data_iterator_simple`` with ``use_thread=False`` (see
    the module docstring); the program imports the name after this."""
    import nnabla.utils.data_iterator as di
    simple = di.data_iterator_simple

    def unthreaded(*args, **kwargs):
        kwargs["use_thread"] = False
        return simple(*args, **kwargs)

    di.data_iterator_simple = unthreaded


@contextlib.contextmanager
def monitored(given):
    """``given`` gets ``[monitor, step, value]`` of each value a ``MonitorSeries`` is given
    (their files average 10 steps); the monitors themselves are left as they are."""
    from nnabla.monitor import MonitorSeries
    add = MonitorSeries.add

    def counting(self, index, value):
        given.append([self.name, int(index), float("%.6g" % float(np.asarray(value)))])
        return add(self, index, value)

    MonitorSeries.add = counting
    try:
        yield
    finally:
        MonitorSeries.add = add


def main(argv):
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    import segmentation_standin
    segmentation_standin.write_segmentation(os.path.join(work, "voc"), 2, 1, 3)
    import h5py
    h5py.File(os.path.join(work, "pretrained.h5"), "w").close()
    sys.path.insert(0, os.path.join(examples, "utils"))
    import nnabla as nn
    import nnabla.random
    loading_in_the_calling_thread()
    results = {}
    for run, program, args, folder in record.selected(RUNS, argv, work):
        np.random.seed(0)
        random.seed(0)
        nn.seed(0)
        nnabla.random.set_parameter_seed(313)
        if stadyn:
            import torch
            torch.manual_seed(0)
        nn.clear_parameters()
        given = []
        with monitored(given):
            error, seconds = record.run_beside_its_modules(
                os.path.join(examples, program), args.format(out=folder, work=work).split(),
                folder, OWN_MODULES)
        results[run] = record.result(folder, error, seconds, stadyn)
        results[run]["monitored"] = given
        # the parameters as the program made them (its checkpoint before the first step):
        # sum, sum of squares and first 2 values of each (after it the runs part as NNabla's
        # own runs do: see the test)
        results[run]["parameters"] = record.parameter_digest(folder, first=2).get("params_0.h5")
        nn.clear_parameters()
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Run a sixth batch of nnabla-examples' programs (sony/nnabla-examples:
``object-detection/yolov2``'s training pipeline, ``3d-object-part-segmentation/pointnet2``),
unchanged, at a tiny size, one after another in this process, and write as JSON what their
monitors recorded, what they printed of each step, the files they wrote (whether the parameters
in them are finite, and a digest of the converted ones).  The same file runs on NNabla 1.39
(which made ``refs/nnabla139_examples_6.json``) and, with ``--stadyn``, on Stadyn through
``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_6.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 with every run (``STADYN_LONG_EXAMPLES=1
/work/peers/nnabla/bin/python tests/examples/nnabla_examples_6.py EXAMPLES WORK
tests/examples/refs/nnabla139_examples_6.json``); without ``STADYN_LONG_EXAMPLES=1`` (or an
``--only``) the driver leaves out the long ``pointnet2`` run.

It also runs ``3d-object-part-segmentation/pointnet2``'s ``train.py`` (PointNet++ part
segmentation) on a ShapeNet-part stand-in (``examples/nnabla/shapenet_part_standin.py``) under
``WORK/shapenet``, with nnabla-examples' ``utils`` (its ``neu`` package) first on ``sys.path``,
``np.int`` put back for ``neu``'s learning-rate scheduler, and a NumPy ``RandomState()`` made
without a seed seeded from NumPy's global generator (the dataset shuffles with one).

EXAMPLES holds the programs' folders (a checkout or an archive of the repository); WORK is an
empty folder.  The data are stand-ins in the real files (``examples/nnabla/voc_standin.py``):
PASCAL VOC 2007 as darknet's ``voc_label.py`` leaves it (pictures, annotations, YOLO labels,
``2007_train.txt`` / ``2007_test.txt``) under ``WORK/voc`` and Darknet19's pretrained weights
file ``WORK/darknet19_448.conv.23``.  The runs follow the program's training tutorial: convert
the Darknet19 weights to NNabla's ``.h5``, train from them, detect on the test pictures with the
trained parameters (``valid.py``'s ``comp4_det_test_<class>.txt``).  Each program writes under
``WORK/<run>``.  Only the harness around the programs differs from a user's shell: NumPy and
``random`` are seeded 0 before each (and on Stadyn torch's generator), NNabla's parameter
generator ``nnabla.random.prng`` 313 (its seed in a new process); ``nnabla_ext.cuda``, which
the programs import for ``clear_memory_cache()`` alone, is an empty module with that function
where the CUDA extension is not installed (NNabla 1.39's environment here has none); OpenCV is
left out (``--disable-cv2``: PIL prepares the pictures on both, as on a machine without it).
"""

import contextlib
import io
import os
import random
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402

PROGRAMS = ("object-detection/yolov2", "3d-object-part-segmentation/pointnet2", "utils")
YOLO = "object-detection/yolov2"
N_TRAIN, N_TEST = 4, 2

_TRAIN = ("-w {work}/yolov2-convert/darknet19_448.conv.23.h5 -t {work}/voc/2007_train.txt "
          "-o {out} -g -1 --disable-cv2 --size-aug (64,) -b 2 --accum-times 1 --max-batches 2 "
          "--burn-in 1 --learning-rate 0.0001 --save-interval 10")
# (run, program, arguments); {out} is WORK/<run>, {work} is WORK, {examples} EXAMPLES.
RUNS = [
    # Step 2-2 of the tutorial: Darknet's weights file into NNabla's parameters (the network
    # built, its parameters set from the file's floats, nn.save_parameters)
    ("yolov2-convert", YOLO + "/convert_darknet19_448_conv_23_weights_to_nnabla.py",
     "--input {work}/darknet19_448.conv.23 --output {out}/darknet19_448.conv.23.h5"),
    # Step 2-3: YOLO v2 (Darknet19, reorg, the region loss's targets made by a PythonFunction
    # in NumPy) on 64 x 64 pictures, batches of 2, two epochs of the four pictures, momentum
    # SGD with weight decay on the kernels
    ("yolov2-train", YOLO + "/train.py", _TRAIN),
    # the same with the region loss's PythonFunction given the two methods NNabla 1.39 asks
    # of one (the only run here whose program is completed by the driver: see
    # _complete_region_loss_targets)
    ("yolov2-train-completed", YOLO + "/train.py", _TRAIN),
    # Step 4-1: detections of the test pictures (valid.py builds YOLO v2, then loads the
    # parameters it is given: here the converted Darknet19 ones, the layers after them keeping
    # their seeded initial values; the trained ones differ between NNabla and Stadyn by a
    # leaky ReLU's kink, see test_nnabla_examples_6.py)
    ("yolov2-valid", YOLO + "/valid.py",
     "-w {work}/yolov2-convert/darknet19_448.conv.23.h5 -v {work}/voc/2007_test.txt "
     "-o {out} -g -1 --width 64 --height 64 --valid-batchsize 2 "
     "-n {examples}/" + YOLO + "/data/voc.names"),
    # PointNet++ (single-scale grouping) part segmentation: farthest point sampling (512 and
    # 128 centroids, a graph of F.randint, gather_nd, F.max(only_index=True) per point), ball
    # queries (F.sort), feature propagation (k nearest by F.sort(with_index=True)), two epochs
    # of two steps on 128 points, each followed by the validation of the 6 test shapes and a
    # checkpoint
    ("pointnet2", "3d-object-part-segmentation/pointnet2/train.py",
     "--context cpu --data_dir {work}/shapenet --num_points 128 --batch_size 2 --max_epoch 2 "
     "--eval_interval 1 --result_dir {out}"),
]
# runs left out unless $STADYN_LONG_EXAMPLES is 1 (PointNet++ takes about 100 s on Stadyn,
# 90 of them building its two graphs' plans: each holds a 512-step farthest point sampling
# loop, thousands of ops, traced once; NNabla 1.39 takes 25 s)
LONG, LONG_RUNS = "STADYN_LONG_EXAMPLES", ("pointnet2",)
# the programs' own modules, forgotten after each run
OWN_MODULES = ("dataset", "utils", "arg_utils", "train_graph", "region_loss_utils", "yolov2",
               "darknet19", "darknet_parser", "image", "image2", "pointnet2", "loss",
               "running_utils", "neu")
# what train.py prints of each step: s=seen/n, b=batch, ..., lr, mIOU, nGT, recall, loss
STEP = re.compile(r"lr (\S+), mIOU (\S+), nGT (\d+), recall (\d+),proposals -?\d+, "
                  r"loss: (\S+),")


def printed_steps(text):
    """``[[lr, mIOU, nGT, recall, loss], ...]`` of train.py's lines."""
    return [[float(v) for v in m.groups()] for m in STEP.finditer(text)]


def detections(folder):
    """``{class file: [[picture, probability, x1, y1, x2, y2], ...]}`` of valid.py's
    ``comp4_det_test_*.txt`` under ``folder``, in the file's order (the picture as a
    number)."""
    out = {}
    for name in sorted(os.listdir(folder)):
        if not name.startswith("comp4_det_test_"):
            continue
        with open(os.path.join(folder, name)) as f:
            rows = [[float(v) for v in line.split()] for line in f if line.strip()]
        out[name] = rows
    return out


class _SeededWhenUnseeded(np.random.RandomState):
    """``np.random.RandomState()`` without a seed draws its seed from NumPy's global generator
    (which the driver seeds) instead of the operating system: ShapeNet-part's dataset
    (``neu/datasets/shapenet_partanno_segmentation.py``) shuffles with ``RandomState(None)``,
    so NNabla's own runs would differ from one another."""

    def __init__(self, seed=None):
        super().__init__(np.random.randint(2 ** 31) if seed is None else seed)


def _complete_region_loss_targets(examples):
    """Import train.py's ``train_graph`` beforehand and give its ``RegionLossTargets`` (a
    PythonFunction whose backward does nothing: its outputs are targets) the two methods NNabla
    1.39 calls on a PythonFunction and the program lacks, ``grad_depends_output_data`` and
    ``grad_depends_input_data``, both False; train.py then imports that module."""
    sys.path.insert(0, os.path.join(examples, YOLO))
    try:
        import train_graph
    finally:
        sys.path.remove(os.path.join(examples, YOLO))
    train_graph.RegionLossTargets.grad_depends_output_data = lambda self, i, o: False
    train_graph.RegionLossTargets.grad_depends_input_data = lambda self, i, j: False


def main(argv):
    if os.environ.get(LONG) != "1" and not any(a.startswith("--only=") for a in argv):
        argv = list(argv) + ["--only=" + ",".join(r for r, _, _ in RUNS if r not in LONG_RUNS)]
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    import voc_standin
    voc_standin.write_voc(os.path.join(work, "voc"), N_TRAIN, N_TEST)
    voc_standin.write_darknet19_weights(os.path.join(work, "darknet19_448.conv.23"))
    import shapenet_part_standin
    shapenet_part_standin.write_shapenet_part(os.path.join(work, "shapenet"), N_TRAIN, 0, 6)
    record.cuda_extension_if_missing()
    sys.path.insert(0, os.path.join(examples, "utils"))
    np.int = int          # neu/learning_rate_scheduler.py: np.asarray(..., dtype=np.int)
    import nnabla as nn
    import nnabla.random
    results = {}
    for run, program, args, folder in record.selected(RUNS, argv, work):
        np.random.seed(0)
        random.seed(0)
        if stadyn:
            import torch
            torch.manual_seed(0)
        nn.clear_parameters()
        # the parameters' initial values are drawn from nnabla.random.prng, which a fresh
        # process seeds 313: each run starts from that state, whatever ran before it
        nnabla.random.set_parameter_seed(313)
        if run == "yolov2-train-completed":
            _complete_region_loss_targets(examples)
        printed = io.StringIO()
        np.random.RandomState = _SeededWhenUnseeded
        try:
            with contextlib.redirect_stdout(printed):
                error, seconds = record.run_beside_its_modules(
                    os.path.join(examples, program),
                    args.format(out=folder, work=work, examples=examples).split(), folder,
                    OWN_MODULES)
        finally:
            np.random.RandomState = _SeededWhenUnseeded.__mro__[1]
        np.seterr(all="warn")      # (train.py makes NumPy raise on overflow, for itself)
        results[run] = record.result(folder, error, seconds, stadyn,
                                     digest=run == "yolov2-convert")
        results[run]["steps"] = printed_steps(printed.getvalue())
        results[run]["detections"] = detections(folder)
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])

"""More of CNTK's own ``Examples/`` Python programs (of Microsoft/CNTK; not part of this
repository) at a tiny size: the ImageNet family (AlexNet and VGG16/VGG19 with their
distributed learners on one worker; GoogLeNet's InceptionV3_ImageNet.py and
BN_Inception_ImageNet.py, their model modules cut too), TransferLearning_Extended, LightRNN's
train.py and the
deconvolution visualizer (after the program that trains its model, as ``cntk_examples.py``
cuts it), run as ``cntk_examples.py`` runs the others (whose runner, import hook and PNG
writer this file imports) and written as JSON.

    python tests/examples/cntk_examples_more.py EXAMPLES OUT.json [--stadyn] [--only=RUN,..]
        [--update]

The reference ``refs/cntk27_examples_more.json`` is this, run on CNTK 2.7 once per program
(``--only=RUN --update``: each program calls ``Communicator.finalize()``, after which CNTK 2.7
cannot start MPI again in that process; ``--update`` keeps the runs already in OUT)::

    LD_LIBRARY_PATH=.../shimlib .../venv36/bin/python -W ignore \\
        tests/examples/cntk_examples_more.py EXAMPLES refs/cntk27_examples_more.json \\
        --only=alexnet_imagenet_distributed --update

ImageNet stand-in (``Image/DataSets/ImageNet``, where the programs look by default):
``train_map.txt`` and ``val_map.txt`` (absolute path, tab, label) of small PNG pictures, each
class a colour with noise and a bar at a class-given height (again in ``ImageNet/test_data``
with an ``ImageNet1K_mean.xml`` of 96x96, where the GoogLeNet programs look).  Sizes are cut
by literal text (each must be found): the pictures the networks take (224/227 to 64/67), the
classes (1000 to 10), the widths of the layers.  The visualizer's ``PIL`` is
``cntk_examples_standins``'s stand-in (CNTK 2.7's environment has no Pillow), given a
``save``.  Parses under Python 3.6 (CNTK 2.7's interpreter runs it too).
"""

from __future__ import print_function

import io
import json
import os
import shutil
import sys
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cntk_examples  # noqa: E402
from cntk_examples import _CntkIsStadyn, run_program, write_mnist  # noqa: E402
from cntk_examples_standins import _png, image_standins, write_pretrained  # noqa: E402

N_IMAGENET_TRAIN, N_IMAGENET_VAL, N_IMAGENET_CLASSES = 24, 8, 10

# the VGGs: 64x64 pictures (at 32x32 their fifth block's 3x3 convolutions would see 2x2,
# which CNTK 2.7 refuses: cntk_examples_4.py's window_longer_than_its_input_is_refused), layers
# 8/8/16/16/16 wide, Dense(64), 10 classes
_VGG_CUTS = [("image_height = 224", "image_height = 64"),
             ("image_width  = 224", "image_width  = 64"),
             ("num_classes  = 1000", "num_classes  = 10"),
             ("Convolution2D((3,3), 64,", "Convolution2D((3,3), 8,"),
             ("Convolution2D((3,3), 128,", "Convolution2D((3,3), 8,"),
             ("Convolution2D((3,3), 256,", "Convolution2D((3,3), 16,"),
             ("Convolution2D((3,3), 512,", "Convolution2D((3,3), 16,"),
             ("Dense(4096,", "Dense(64,")]

# (run, program under Examples/, argv, [(text, replacement), ...]); one minibatch of 8 a
# "-e 8" epoch, two epochs, the validation set of 8 at the end
RUNS = [
    ("alexnet_imagenet_distributed",
     "Image/Classification/AlexNet/Python/AlexNet_ImageNet_Distributed.py",
     ["-n", "2", "-m", "8", "-e", "8", "-r"],
     [("image_height = 227", "image_height = 67"), ("image_width  = 227", "image_width  = 67"),
      ("num_classes  = 1000", "num_classes  = 10"),
      ("Convolution2D((11,11), 96,", "Convolution2D((11,11), 8,"),
      ("Convolution2D((5,5), 192,", "Convolution2D((5,5), 8,"),
      ("Convolution2D((3,3), 384,", "Convolution2D((3,3), 16,"),
      ("Convolution2D((3,3), 256,", "Convolution2D((3,3), 16,"),
      ("Dense(4096,", "Dense(64,")]),
    ("vgg16_imagenet_distributed", "Image/Classification/VGG/Python/VGG16_ImageNet_Distributed.py",
     ["-n", "2", "-m", "8", "-e", "8", "-r"], _VGG_CUTS),
    ("vgg19_imagenet_distributed", "Image/Classification/VGG/Python/VGG19_ImageNet_Distributed.py",
     ["-n", "2", "-m", "8", "-e", "8", "-r"], _VGG_CUTS),
    # the deconvolution visualizer: loads the model 07_Deconvolution_PY.py saved (which the
    # driver runs first, as cntk_examples.py cuts it) and writes its encoder's and decoder's
    # outputs for five test digits as text (kept) and PNGs (through the PIL stand-in)
    ("deconvolution_visualizer", "Image/GettingStarted/07_Deconvolution_Visualizer.py", [],
     [("from PIL import Image", "from pil_standin import Image")]),
    # TransferLearning_Extended.py: the pretrained ResNet stand-in (cntk_examples_standins) on
    # the Animals folders (a class a folder, unknown pictures at the top of Test/), through
    # TransferLearning.py's functions (its module cut as cntk_examples.py cuts the program)
    ("transfer_learning_extended", "Image/TransferLearning/TransferLearning_Extended.py", [],
     [("image_height = 224", "image_height = 32"), ("image_width = 224", "image_width = 32"),
      ("num_epochs=30", "num_epochs=2"),
      ("try_set_default_device(gpu(0))", "try_set_default_device(C.device.cpu())")]),
    # LightRNN on the test corpus it ships (256 training lines, vocabulary of 1566 in a 40x40
    # table): one LSTM layer of 16, sequences of 8 in minibatches of 4, one epoch, then the
    # reallocation of the table (its Python implementation: the C++ library is not built);
    # -freq past the epoch's minibatches (its progress line divides by whole seconds taken)
    ("lightrnn_train", "Text/LightRNN/LightRNN/train.py",
     ["-datadir", "../test", "-vocab_file", "../test/vocab.txt", "-vocabdir", "../test",
      "-outputdir", "Models", "-vocabsize", "1566", "-embed", "16", "-nhid", "16",
      "-layer", "1", "-seqlength", "8", "-batchsize", "4", "-epochs", "1", "-freq", "100000"],
     []),
]

# the GoogLeNet ImageNet programs (stand-in in ImageNet/test_data, where they look): two epochs
# of one minibatch of 8, the validation set of 8 at the end (testing_parameters, whose 5000
# samples would ask past the end of the sweep); their random crops (and InceptionV3's colour
# jitter and dropout) cut to the center crop they test with, so that each framework's
# numbers are the same; pictures of 139x139 (InceptionV3: its 7-wide convolutions see 7x7,
# narrower CNTK 2.7 refuses) and 96x96 (BN-Inception: its last 3x3 convolutions see 3x3), the
# final pools cut to the 3x3 left, InceptionV3's auxiliary 5x5 convolution to the 1x1 left;
# every convolution 1/16 as wide; BN-Inception's repeated blocks passed by (3b, 4b-4d, 5a: it
# keeps 3a, 3c, 4a, 4e and 5b, one or more of each of its three kinds of block; 34 of its 69
# convolutions, half its time).  (InceptionV3 keeps its eleven: cut as far, its second
# epoch's metric or final error was no longer CNTK 2.7's -- one of 8 pictures, the second
# step is chaotic at this size, see test_cntk_examples_more.GOOGLENET)
_GOOGLENET = "Image/Classification/GoogLeNet/"
_NARROW = ("Convolution(filter_size, num_filters, activation=None",
           "Convolution(filter_size, max(1, num_filters // 16), activation=None")
RUNS += [
    ("inceptionv3_imagenet", _GOOGLENET + "InceptionV3/Python/InceptionV3_ImageNet.py",
     ["-n", "2", "-m", "8", "-e", "8", "-r"],
     [("IMAGE_HEIGHT = 299", "IMAGE_HEIGHT = 139"), ("IMAGE_WIDTH = 299", "IMAGE_WIDTH = 139"),
      ("NUM_CLASSES = 1000", "NUM_CLASSES = 10"), ("drop_rate = 0.2", "drop_rate = 0.0"),
      ("crop_type='randomarea', area_ratio=(0.05, 1.0), aspect_ratio=(0.75, 1.0), "
       "jitter_type='uniratio'", "crop_type='center', side_ratio=0.875"),
      ("C.io.transforms.color(brightness_radius=0.125, contrast_radius=0.5, "
       "saturation_radius=0.5)", "C.io.transforms.scale(width=IMAGE_WIDTH, "
       "height=IMAGE_HEIGHT, channels=NUM_CHANNELS, interpolations='linear')"),
      ("testing_parameters=(5000, 32)", "testing_parameters=(8, 8)")]),
    ("bn_inception_imagenet", _GOOGLENET + "BN-Inception/Python/BN_Inception_ImageNet.py",
     ["-n", "2", "-m", "8", "-e", "8", "-r"],
     [("IMAGE_HEIGHT = 224", "IMAGE_HEIGHT = 96"), ("IMAGE_WIDTH = 224", "IMAGE_WIDTH = 96"),
      ("NUM_CLASSES = 1000", "NUM_CLASSES = 10"),
      ("crop_type='randomside', side_ratio=(0.46666, 0.875), jitter_type='uniratio'",
       "crop_type='center', side_ratio=0.875"),
      ("testing_parameters=(5000,32)", "testing_parameters=(8,8)")]),
]


def _blocks_passed_by(starts):
    """Cuts that pass by the blocks whose lines start so (``inception4b =
    inception_block_with_avgpool(inception4a, ...`` to ``inception4b = (inception4a) # ...``)."""
    return [(start, start.split("=")[0] + "= (" + start.split("(", 1)[1].rstrip(",") + ") #")
            for start in starts]


# modules a program imports from its folder, cut before it runs: {run: (module, cuts)}
HELPERS = {"transfer_learning_extended": ("TransferLearning", [
    ("mb_size = 50", "mb_size = 10"), ("from PIL import Image", "from pil_standin import Image")]),
    "inceptionv3_imagenet": ("InceptionV3", [
        _NARROW, ("AveragePooling(filter_shape=(8,8), pad=False)",
                  "AveragePooling(filter_shape=(3,3), pad=False)"),
        ("conv_bn_relu_layer(auxConv1, 768, (5,5), (1,1), False",
         "conv_bn_relu_layer(auxConv1, 768, (1,1), (1,1), False")]),
    "bn_inception_imagenet": ("BN_Inception", [
        _NARROW, ("AveragePooling(filter_shape=(7,7))(inception5b)",
                  "AveragePooling(filter_shape=(3,3))(inception5b)"),
        *_blocks_passed_by(["inception3b = inception_block_with_avgpool(inception3a,",
                            "inception4b = inception_block_with_avgpool(inception4a,",
                            "inception4c = inception_block_with_avgpool(inception4b,",
                            "inception4d = inception_block_with_avgpool(inception4c,",
                            "inception5a = inception_block_with_avgpool(inception4e,"])])}

# what a program writes beside what it prints, kept in the result (relative to its folder)
WRITES = {"deconvolution_visualizer": ["Output/encoder_output_PY.txt",
                                       "Output/decoder_output_PY.txt"],
          "transfer_learning_extended": ["Output/predictions.txt"]}


def write_imagenet(folder):
    """The ImageNet stand-in: ``train/%03d.png`` and ``val/%03d.png`` of 48x40 (w x h) RGB and
    their map files (absolute path, tab, label of ``N_IMAGENET_CLASSES``)."""
    rs = np.random.RandomState(6)
    palette = rs.randint(0, 256, (N_IMAGENET_CLASSES, 3))
    folder = os.path.abspath(folder)
    for name, n, map_name in (("train", N_IMAGENET_TRAIN, "train_map.txt"),
                              ("val", N_IMAGENET_VAL, "val_map.txt")):
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        with open(os.path.join(folder, map_name), "w") as f:
            for i in range(n):
                label = rs.randint(N_IMAGENET_CLASSES)
                img = palette[label][None, None, :] + rs.normal(0, 30, (40, 48, 3))
                img[label * 3:label * 3 + 6] = 255 - palette[label]
                path = os.path.join(folder, name, "%03d.png" % i)
                _png(path, np.clip(img, 0, 255).astype(np.uint8))
                f.write("%s\t%d\n" % (path, label))


N_ANIMALS_TRAIN, N_ANIMALS_TEST = 6, 2           # pictures a class


def write_animals(folder):
    """What TransferLearning_Extended.py reads (``install_data_and_model.py``'s Animals):
    ``Train/<class>/*.jpg`` and ``Test/<class>/*.jpg`` of two classes (``Sheep``, ``Wolf``)
    and two pictures of no class at the top of ``Test/``; 48x40 PNGs under ``.jpg`` names,
    a class colour with noise and a bar at a class-given height (the unknown ones grey)."""
    rs = np.random.RandomState(7)
    palette = {"Sheep": (220, 220, 200), "Wolf": (90, 80, 70), "": (128, 128, 128)}

    def picture(name, bar):
        img = np.array(palette[name])[None, None, :] + rs.normal(0, 30, (40, 48, 3))
        img[bar:bar + 6] = 255 - np.array(palette[name])
        return np.clip(img, 0, 255).astype(np.uint8)
    for part, n in (("Train", N_ANIMALS_TRAIN), ("Test", N_ANIMALS_TEST)):
        for k, name in enumerate(("Sheep", "Wolf")):
            os.makedirs(os.path.join(folder, part, name), exist_ok=True)
            for i in range(n):
                _png(os.path.join(folder, part, name, "%s_%02d.jpg" % (name.lower(), i)),
                     picture(name, 5 + 20 * k))
    for i in range(2):
        _png(os.path.join(folder, "Test", "unknown_%02d.jpg" % i), picture("", 15))


def write_imagenet_mean(folder, size):
    """``ImageNet1K_mean.xml`` (BN_Inception_ImageNet.py's mean transform) of ``size`` x
    ``size`` RGB: a mid-grey with a gradient, as OpenCV stores a matrix."""
    values = 100 + 0.5 * np.arange(3 * size * size) / (size * size)
    with open(os.path.join(folder, "ImageNet1K_mean.xml"), "w") as f:
        f.write('<?xml version="1.0" ?>\n<opencv_storage>\n  <Channel>3</Channel>\n'
                "  <Row>%d</Row>\n  <Col>%d</Col>\n"
                '  <MeanImg type_id="opencv-matrix">\n    <rows>1</rows>\n'
                "    <cols>%d</cols>\n    <dt>f</dt>\n    <data>%s</data>\n"
                "  </MeanImg>\n</opencv_storage>\n"
                % (size, size, 3 * size * size, " ".join("%e" % v for v in values)))


def write_standins(examples):
    write_imagenet(os.path.join(examples, "Image", "DataSets", "ImageNet"))
    test_data = os.path.join(examples, "Image", "DataSets", "ImageNet", "test_data")
    write_imagenet(test_data)           # (where the GoogLeNet ImageNet programs look)
    write_imagenet_mean(test_data, 96)
    write_mnist(os.path.join(examples, "Image", "DataSets", "MNIST"))
    write_animals(os.path.join(examples, "Image", "DataSets", "Animals"))
    write_pretrained(examples)


def _helper_module(examples, program, name, cuts):
    """The module ``name`` of ``program``'s folder, its text cut as a program's is."""
    path = os.path.join(os.path.dirname(os.path.join(examples, program)), name + ".py")
    with io.open(path, encoding="utf-8-sig") as f:
        source = f.read()
    for old, new in cuts:
        if old not in source:
            raise SystemExit("%s: not in the module: %r" % (path, old))
        source = source.replace(old, new)
    module = types.ModuleType(name)
    module.__file__ = path
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def _pil_with_save():
    """``cntk_examples_standins.image_standins``'s ``pil_standin`` (PIL is not in CNTK 2.7's
    environment), its pictures also saved (a grey picture as an RGB PNG)."""
    modules = image_standins()

    def save(picture, path):
        pixels = np.asarray(picture.pixels, np.uint8)
        if pixels.ndim == 2:
            pixels = np.repeat(pixels[:, :, None], 3, axis=2)
        _png(path, np.ascontiguousarray(pixels))
    modules["pil_standin.Image"].fromarray.save = save
    return {k: v for k, v in modules.items() if k.startswith("pil_standin")}


def run_one(examples, run, program, args, cuts):
    """``run_program`` with what a run needs before it: the model 07_Deconvolution_PY.py
    saves for the visualizer (an error there is the visualizer's), and the PIL stand-in."""
    standins = {}
    if run == "deconvolution_visualizer":
        deconv = [r for r in cntk_examples.RUNS if r[0] == "deconvolution"][0]
        error, _, _, _ = run_program(examples, *deconv)
        if error is not None:
            return "07_Deconvolution_PY.py: " + error, "", {}, 0.0
        os.makedirs(os.path.join(examples, os.path.dirname(program), "Output"), exist_ok=True)
        standins = _pil_with_save()
    if run in HELPERS:
        standins = _pil_with_save()
    if run == "lightrnn_train":               # (it prints "created dir : Models" when it makes it)
        shutil.rmtree(os.path.join(os.path.dirname(os.path.join(examples, program)), "Models"),
                      ignore_errors=True)
    saved = {name: sys.modules.get(name) for name in standins}
    sys.modules.update(standins)
    if run in HELPERS:
        name, helper_cuts = HELPERS[run]
        saved[name] = sys.modules.get(name)
        sys.modules[name] = _helper_module(examples, program, name, helper_cuts)
    try:
        error, stdout, _, seconds = run_program(examples, run, program, args, cuts)
    finally:
        for name, was in saved.items():
            if was is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = was
        for helper in ("lightrnn", "reallocate", "data_reader", "TransferLearning",
                       "InceptionV3", "BN_Inception"):
            sys.modules.pop(helper, None)         # (each program its own helpers)
    folder = os.path.dirname(os.path.join(examples, program))
    written = {}
    for name in WRITES.get(run, ()):
        if os.path.exists(os.path.join(folder, name)):
            with open(os.path.join(folder, name)) as f:
                written[name] = f.read()
    return error, stdout, written, seconds


def main(argv):
    examples, out_path = (os.path.abspath(a) for a in argv[:2])
    stadyn = "--stadyn" in argv
    if stadyn:
        sys.meta_path.insert(0, _CntkIsStadyn())
    write_standins(examples)
    only = [a.split("=", 1)[1].split(",") for a in argv if a.startswith("--only=")]
    results = {}
    if "--update" in argv and os.path.exists(out_path):
        with open(out_path) as f:
            results = json.load(f)
    for run, program, args, cuts in RUNS:
        if only and run not in only[0]:
            continue
        error, stdout, written, seconds = run_one(examples, run, program, args, cuts)
        results[run] = {"error": error, "stdout": stdout}
        if run in WRITES:
            results[run]["files"] = written
        if stadyn:                              # (the reference file has no timings)
            results[run]["seconds"] = seconds
        sys.stderr.write("%s: %s (%.1f s)\n" % (run, "ok" if error is None else error, seconds))
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])

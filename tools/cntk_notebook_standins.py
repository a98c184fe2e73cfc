"""Data stand-ins for CNTK tutorial notebooks that read speech files or a pretrained model
(``tools/cntk_notebooks.py`` calls these; each writes into the folder a notebook runs in).

* ``write_an4_speech``: CNTK 208's AN4 speech files in the formats CNTK's HTK deserializers
  read: one HTK feature archive, the script files that cut it into utterances, a master label
  file of HMM states, the state list with CTC's blank last, and the global statistics.
* ``png``: an RGB PNG writer (the image stand-ins here and in ``cntk_notebooks.py``).
* ``write_transfer_images`` and ``write_resnet_standin``: CNTK 301's flowers and animals
  folders (map files, PNG images under ``.jpg`` names, which CNTK's OpenCV reader and the PIL
  stand-in read by their content) and a small ResNet written by CNTK 2.7 itself with the node
  names 301 looks up.
* ``write_stock_standin``: CNTK 104's pickled stock frame, written by the pandas beside
  CNTK 2.7 (``cntk_stock_standin.py``).
* ``write_superres_standins`` and ``write_superres_image``: CNTK 302A's four pretrained
  super-resolution models, cut, written by CNTK 2.7 (``cntk_superres_standin.py``), and its
  example picture; ``write_bsds_images``: 302B's pictures to cut into training patches.
* ``write_style_transfer``: CNTK 205's VGG16 weights (HDF5, as the downloaded file, widths
  cut) and its content and style pictures.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib

import numpy as np

# -- CNTK 208: AN4 speech (HTK features, scp, MLF, state list) --
AN4_PHONES = ("aa ae ah ao aw ay b ch d dh eh er ey f g hh ih iy jh k l m n ng ow oy p r s sh "
              "t th uh uw v w y z zh ax ix el en").split()          # 43 phones, 3 states each
AN4_STATES = ["sil[2]", "sil[3]", "sil[4]"] + [
    f"{p}_s{k}_1" for p in AN4_PHONES for k in (2, 3, 4)] + ["s_blank"]   # 133, blank at 132
AN4_FEATURE_DIM = 33


def _htk_archive(path: str, frames: np.ndarray) -> None:
    """One big-endian HTK file (kind USER, 10 ms frames) holding every utterance's frames."""
    with open(path, "wb") as f:
        f.write(struct.pack(">iihh", frames.shape[0], 100000, frames.shape[1] * 4, 9))
        f.write(frames.astype(">f4").tobytes())


def write_an4_speech(folder: str, utterances: int = 24) -> None:
    """CNTK 208's ``Tests/EndToEndTests/Speech/Data`` at a tiny size.

    ``Features/000000000.chunk`` holds all utterances' 33-value frames, ``glob_0000.scp`` names
    them (``An4/<n>/<n>/<name>.mfc=Features/000000000.chunk[first,last]``, frames inclusive),
    ``glob_0000.write.scp`` the first three; ``glob_0000.mlf`` gives each utterance's HMM
    states (``start end state`` in 100 ns units; a phone's first state line adds the score,
    phone and word columns an aligner writes, which the readers skip), silence at both ends;
    ``state_ctc.list`` the 132 states and ``s_blank``; ``GlobalStats/mean.363`` and
    ``var.363`` one number a line (208 reads these text files with ``np.fromfile`` as raw
    doubles, on both frameworks alike)."""
    rs = np.random.RandomState(8)
    os.makedirs(os.path.join(folder, "Features"), exist_ok=True)
    os.makedirs(os.path.join(folder, "GlobalStats"), exist_ok=True)
    with open(os.path.join(folder, "state_ctc.list"), "w") as f:
        f.write("\n".join(AN4_STATES))                  # no newline after the last, as AN4's
    centres = rs.normal(0, 1, (len(AN4_STATES), AN4_FEATURE_DIM))
    frames, scp, mlf = [], [], ["#!MLF!#\n"]
    start = 0
    for u in range(utterances):
        name = f"An4/{100 + u}/{100 + u}/cen{u % 8}-utt{u}-b"
        phones = list(rs.choice(len(AN4_PHONES), rs.randint(2, 6)))
        states = [(0, 1, None)] + [(3 + 3 * p + k, rs.randint(1, 4), AN4_PHONES[p] if k == 0
                                    else None) for p in phones for k in range(3)] + [(2, 2, None)]
        mlf.append(f'"{name}.lab"\n')
        t = 0
        for state, duration, phone in states:
            extra = f" {rs.normal(0, 30):.6f} {phone} {rs.normal(0, 50):.6f}" if phone else ""
            mlf.append(f"{t * 100000} {(t + duration) * 100000} {AN4_STATES[state]}{extra}\n")
            frames.append(centres[state] + rs.normal(0, 0.3, (duration, AN4_FEATURE_DIM)))
            t += duration
        mlf.append(".\n")
        scp.append(f"{name}.mfc=Features/000000000.chunk[{start},{start + t - 1}]\n")
        start += t
    _htk_archive(os.path.join(folder, "Features", "000000000.chunk"), np.concatenate(frames))
    with open(os.path.join(folder, "glob_0000.scp"), "w") as f:
        f.writelines(scp)
    with open(os.path.join(folder, "glob_0000.write.scp"), "w") as f:
        f.writelines(scp[:3])
    with open(os.path.join(folder, "glob_0000.mlf"), "w") as f:
        f.writelines(mlf)
    for name, values in (("mean.363", rs.normal(0, 0.2, 363)),
                         ("var.363", rs.uniform(0.5, 2.0, 363))):
        with open(os.path.join(folder, "GlobalStats", name), "w") as f:
            f.writelines("%.8f\n" % v for v in values)


# -- CNTK 301: flowers, animals and the pretrained ResNet --
PIL_STANDIN = '''
"""A stand-in for the few PIL calls CNTK 301, 205, 302A and 302B make (Image.open of the
stand-in's PNGs, size/width/height, resize to the nearest pixel, crop, transpose(ROTATE_90),
new/paste, fromarray, save as PNG, np.asarray of an image), the same on both frameworks."""
import builtins
import struct
import zlib
import numpy as np

ANTIALIAS = 1


BICUBIC = 3
ROTATE_90 = 2


class _Image:
    def __init__(self, rgb):
        self.a = rgb
        self.size = (rgb.shape[1], rgb.shape[0])
        self.width, self.height = self.size

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def resize(self, size, method=None):
        w, h = size
        rows = (np.arange(h) * self.a.shape[0] // h)
        cols = (np.arange(w) * self.a.shape[1] // w)
        return _Image(self.a[rows][:, cols])

    def transpose(self, method):                # ROTATE_90: a quarter turn anticlockwise
        if method != ROTATE_90:
            raise NotImplementedError("pil_standin: transpose(ROTATE_90) only")
        return _Image(np.rot90(self.a).copy())

    def crop(self, box):
        left, top, right, bottom = (int(round(v)) for v in box)
        return _Image(self.a[top:bottom, left:right])

    def save(self, path):                       # a PNG, whatever the name
        h, w, _ = self.a.shape
        raw = b"".join(b"\\0" + self.a[y].astype(np.uint8).tobytes() for y in range(h))

        def chunk(kind, data):
            return (struct.pack(">I", len(data)) + kind + data
                    + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
        with builtins.open(path, "wb") as f:
            f.write(b"\\x89PNG\\r\\n\\x1a\\n"
                    + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                    + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

    def paste(self, img, mask=None):
        self.a = img.a.copy()

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


def open(path):
    with builtins.open(path, "rb") as f:
        data = f.read()
    w, h = struct.unpack(">II", data[16:24])
    raw, pos = b"", 8
    while pos < len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        if data[pos + 4:pos + 8] == b"IDAT":
            raw += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    rows = np.frombuffer(zlib.decompress(raw), np.uint8).reshape(h, 1 + 3 * w)[:, 1:]
    return _Image(rows.reshape(h, w, 3).copy())


def fromarray(rgb, mode=None):
    return _Image(np.asarray(rgb))


def new(mode, size, color):
    return _Image(np.zeros((size[1], size[0], 3), np.uint8) + np.array(color, np.uint8))
'''


def png(path: str, rgb: np.ndarray) -> None:
    """An 8-bit RGB PNG of an ``(h, w, 3)`` uint8 array (filter 0 rows)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\0" + rgb[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _picture(rs, palette, label, size=(40, 48)):
    """A noisy picture of class ``label``: its colour, a bar across at a class-given height."""
    h, w = size
    img = palette[label][None, None, :] + rs.normal(0, 30, (h, w, 3))
    img[(label * 7) % (h - 6):(label * 7) % (h - 6) + 6] = 255 - palette[label]
    return np.clip(img, 0, 255).astype(np.uint8)


def write_transfer_images(folder: str) -> None:
    """CNTK 301's data as it leaves them after their first run (so nothing is downloaded):
    ``Examples/Image/DataSets/Flowers`` with ``extracted/jpg/image_NNNNN.jpg`` (408 pictures
    of the 102 classes) and the map files 301 writes (``6k_img_map.txt`` 204 lines,
    ``1k_img_map.txt`` 60, ``val_map.txt`` 20; absolute path, tab, label), the archive and
    ``.mat`` files present only by name (301 opens them only when the map files are missing);
    ``Animals/Train/{Sheep,Wolf}`` (15 pictures each), ``Animals/Test/{Sheep,Wolf}`` (3 each)
    and three birds in ``Animals/Test``.  The pictures are 48x40 PNGs under ``.jpg`` names
    (OpenCV reads them by content; so does ``pil_standin.py``, written beside them, which the
    notebook's PIL calls go to on both frameworks)."""
    rs = np.random.RandomState(6)
    with open(os.path.join(folder, "pil_standin.py"), "w") as f:
        f.write(PIL_STANDIN)
    root = os.path.abspath(os.path.join(folder, "Examples", "Image", "DataSets"))
    flowers = os.path.join(root, "Flowers")
    jpg = os.path.join(flowers, "extracted", "jpg")
    os.makedirs(jpg, exist_ok=True)
    for name in ("102flowers.tgz", "imagelabels.mat", "setid.mat"):
        open(os.path.join(flowers, name), "w").close()
    palette = rs.randint(0, 256, (102, 3))
    labels = np.concatenate([np.arange(102)] * 4)
    rs.shuffle(labels)
    paths = []
    for i, label in enumerate(labels):
        paths.append(os.path.join(jpg, "image_%05d.jpg" % (i + 1)))
        png(paths[-1], _picture(rs, palette, label))
    for name, part in (("6k_img_map.txt", slice(0, 204)), ("1k_img_map.txt", slice(204, 264)),
                       ("val_map.txt", slice(264, 284))):
        with open(os.path.join(flowers, name), "w") as f:
            f.writelines("%s\t%d\n" % (p, y) for p, y in zip(paths[part], labels[part]))
    animals = os.path.join(root, "Animals")
    for part, count in (("Train", 15), ("Test", 3)):
        for k, kind in enumerate(("Sheep", "Wolf")):
            os.makedirs(os.path.join(animals, part, kind), exist_ok=True)
            for i in range(count):
                png(os.path.join(animals, part, kind, "%s_%d.jpg" % (kind.lower(), i)),
                     _picture(rs, palette, k))
    for i, bird in enumerate(("Bird_in_flight_wings_spread.jpg", "quetzal-bird.jpg",
                              "Weaver_bird.jpg")):
        png(os.path.join(animals, "Test", bird), _picture(rs, palette, 50 + i))
    open(os.path.join(animals, "Animals.zip"), "w").close()


def _written_by_cntk(folder: str, cntk_python: list, env: dict, script: str, shared: str,
                     target: str) -> None:
    """Run ``tools/<script> <path>`` with CNTK 2.7's Python (``cntk_python``, ``env``) once per
    output folder, into ``<out>/<shared>``, and copy what it wrote (a file, or a folder's
    files) to ``folder/<target>``."""
    shared = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(folder))), shared)
    if not os.path.exists(shared):
        tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), script)
        subprocess.run(cntk_python + ["-W", "ignore", tool, shared], check=True,
                       env=dict(os.environ, **env), capture_output=True)
    if os.path.isdir(shared):
        shutil.copytree(shared, os.path.join(folder, target), dirs_exist_ok=True)
        return
    os.makedirs(os.path.dirname(os.path.join(folder, target)), exist_ok=True)
    shutil.copyfile(shared, os.path.join(folder, target))


def write_resnet_standin(folder: str, cntk_python: list, env: dict) -> None:
    """``Examples/Image/PretrainedModels/ResNet_18.model``: the small ResNet of
    ``cntk_resnet_standin.py``, written by CNTK 2.7 (``cntk_python``) once per output folder and
    copied to each framework's folder."""
    _written_by_cntk(folder, cntk_python, env, "cntk_resnet_standin.py",
                     "ResNet_18_standin.model",
                     os.path.join("Examples", "Image", "PretrainedModels", "ResNet_18.model"))


def write_superres_standins(folder: str, cntk_python: list, env: dict) -> None:
    """CNTK 302A's ``data/BerkeleySegmentationDataset/PretrainedModels/{VDSR,DRNN,SRResNet,
    SRGAN}.model``: the cut models of ``cntk_superres_standin.py``, written by CNTK 2.7 once
    per output folder and copied to each framework's folder."""
    _written_by_cntk(folder, cntk_python, env, "cntk_superres_standin.py", "superres_standin",
                     os.path.join("data", "BerkeleySegmentationDataset", "PretrainedModels"))


def write_superres_image(folder: str) -> None:
    """CNTK 302A's example picture, ``data/BerkeleySegmentationDataset/Images/253027.jpg``
    (24x20 here, a PNG under the JPEG's name, as BSDS300's 481x321 picture is named), and the
    PIL stand-in that reads it on both frameworks."""
    rs = np.random.RandomState(302)
    with open(os.path.join(folder, "pil_standin.py"), "w") as f:
        f.write(PIL_STANDIN)
    images = os.path.join(folder, "data", "BerkeleySegmentationDataset", "Images")
    os.makedirs(images, exist_ok=True)
    yy, xx = np.mgrid[0:20, 0:24]
    rgb = np.stack([60 + xx * 6, 40 + yy * 8, 200 - xx * 4], -1).astype(float)
    rgb[(yy - 9) ** 2 + (xx - 13) ** 2 < 30] = (240, 220, 60)
    png(os.path.join(images, "253027.jpg"),
        np.clip(rgb + rs.normal(0, 10, rgb.shape), 0, 255).astype(np.uint8))


def write_bsds_images(folder: str, count: int = 6) -> None:
    """CNTK 302B's ``data/BerkeleySegmentationDataset/Images``: ``count`` pictures of 64x56
    (PNGs under numbered ``.jpg`` names, as BSDS300's 481x321 pictures are named) of discs and
    bars on gradients, and the PIL stand-in that reads them on both frameworks."""
    rs = np.random.RandomState(3022)
    with open(os.path.join(folder, "pil_standin.py"), "w") as f:
        f.write(PIL_STANDIN)
    images = os.path.join(folder, "data", "BerkeleySegmentationDataset", "Images")
    os.makedirs(images, exist_ok=True)
    yy, xx = np.mgrid[0:56, 0:64]
    for n in range(count):
        base = rs.randint(30, 200, 3)
        rgb = base + np.stack([xx, yy, xx + yy], -1) * rs.uniform(-1.5, 1.5, 3)
        cy, cx, r = rs.randint(10, 46), rs.randint(10, 54), rs.randint(5, 12)
        rgb[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = rs.randint(0, 256, 3)
        rgb[:, (xx[0] // 7) % 3 == 0] *= 0.8
        png(os.path.join(images, "%d.jpg" % (100075 + 1000 * n)),
            np.clip(rgb + rs.normal(0, 6, rgb.shape), 0, 255).astype(np.uint8))


def write_stock_standin(folder: str, cntk_python: list, env: dict) -> None:
    """CNTK 104's ``data/Stock/stock_SPY.pkl``: the daily bars of ``cntk_stock_standin.py``,
    pickled by the pandas beside CNTK 2.7 (its ``CNTK_PYTHONPATH``) once per output folder and
    copied to each framework's folder."""
    _written_by_cntk(folder, cntk_python, env, "cntk_stock_standin.py", "stock_SPY_standin.pkl",
                     os.path.join("data", "Stock", "stock_SPY.pkl"))


# -- CNTK 205: VGG16's weights and two pictures --
VGG16_BLOCKS = ((2, 8), (2, 16), (3, 32), (3, 64), (3, 64))   # VGG16's convolutions, widths / 8


def write_style_transfer(folder: str) -> None:
    """What CNTK 205 reads: ``vgg16_weights.bin`` and its two pictures.

    The weights file is HDF5 laid out as the downloaded one (Keras 1's VGG16 file): the
    attribute ``nb_layers`` (37), groups ``layer_<k>`` with the attribute ``nb_params`` and
    float32 datasets ``param_<p>``; each block's convolutions (a zero-padding layer of no
    parameters before each, a pooling layer after the block) hold a kernel ``(out, in, 3, 3)``
    and a bias ``(out,)``, then flatten, three dense layers and two dropouts.  The widths are
    VGG16's divided by 8 (``VGG16_BLOCKS``; dense 1568 -> 32 -> 32 -> 10), the values drawn
    at He's scale so activations keep their size through 13 layers.  ``content.jpg`` and
    ``style.jpg`` are 80x64 PNGs under 205's names (``pil_standin.py`` reads them on both
    frameworks): a disc on a gradient and diagonal colour stripes."""
    import h5py

    rs = np.random.RandomState(205)
    layers, channels = [], 3
    for count, width in VGG16_BLOCKS:
        for _ in range(count):
            layers.append([])                                        # ZeroPadding2D
            layers.append([rs.normal(0, np.sqrt(2.0 / (channels * 9)), (width, channels, 3, 3)),
                           rs.normal(0, 0.01, width)])
            channels = width
        layers.append([])                                            # MaxPooling2D
    layers.append([])                                                # Flatten
    for fan_in, fan_out in ((channels * 7 * 7, 32), (32, 32), (32, 10)):
        layers.append([rs.normal(0, np.sqrt(2.0 / fan_in), (fan_in, fan_out)),
                       np.zeros(fan_out)])
        if fan_out != 10:
            layers.append([])                                        # Dropout
    with h5py.File(os.path.join(folder, "vgg16_weights.bin"), "w") as f:
        f.attrs["nb_layers"] = len(layers)
        for k, params in enumerate(layers):
            g = f.create_group("layer_%d" % k)
            g.attrs["nb_params"] = len(params)
            for p, value in enumerate(params):
                g.create_dataset("param_%d" % p, data=np.asarray(value, np.float32))
    with open(os.path.join(folder, "pil_standin.py"), "w") as f:
        f.write(PIL_STANDIN)
    yy, xx = np.mgrid[0:64, 0:80]
    content = np.stack([xx * 3, yy * 3, 255 - xx * 2], -1).astype(float)
    content[(yy - 30) ** 2 + (xx - 44) ** 2 < 300] = (230, 200, 40)
    stripes = ((xx + yy) // 6) % 3
    style = np.array([(200, 30, 30), (30, 30, 200), (240, 240, 240)])[stripes].astype(float)
    for name, rgb in (("content.jpg", content), ("style.jpg", style)):
        png(os.path.join(folder, name), np.clip(rgb + rs.normal(0, 8, rgb.shape), 0, 255)
            .astype(np.uint8))


# Manual_How_to_use_network_optimizations starts from models the reader trained in CNTK 102
# and 103D ("We assume you have a working version of the code for the above tutorial"): these
# are those tutorials' own steps, cut small, put before the cells that use them.
NETOPT_FEEDFORWARD = '''
import numpy as np
import cntk as C
np.random.seed(0)
input_dim, num_output_classes = 2, 2
num_hidden_layers, hidden_layers_dim = 2, 50

def generate_random_data_sample(sample_size, feature_dim, num_classes):
    Y = np.random.randint(size=(sample_size, 1), low=0, high=num_classes)
    X = (np.random.randn(sample_size, feature_dim) + 3) * (Y + 1)
    X = X.astype(np.float32)
    class_ind = [Y == class_number for class_number in range(num_classes)]
    Y = np.asarray(np.hstack(class_ind), dtype=np.float32)
    return X, Y

input = C.input_variable(input_dim)
label = C.input_variable(num_output_classes)

def create_model(features):
    with C.layers.default_options(init=C.layers.glorot_uniform(seed=1), activation=C.sigmoid):
        h = features
        for _ in range(num_hidden_layers):
            h = C.layers.Dense(hidden_layers_dim)(h)
        return C.layers.Dense(num_output_classes, activation=None)(h)

z = create_model(input)
loss = C.cross_entropy_with_softmax(z, label)
eval_error = C.classification_error(z, label)
learner = C.sgd(z.parameters, C.learning_parameter_schedule(0.5))
trainer = C.Trainer(z, (loss, eval_error), [learner])
for i in range(400):
    features, labels = generate_random_data_sample(25, input_dim, num_output_classes)
    trainer.train_minibatch({input: features, label: labels})
    if i % 100 == 0:
        print("Minibatch: {0}, Loss: {1:.4f}, Error: {2:.2f}%".format(
            i, trainer.previous_minibatch_loss_average,
            trainer.previous_minibatch_evaluation_average * 100))
features, labels = generate_random_data_sample(25, input_dim, num_output_classes)
'''

NETOPT_CONVNET = '''
import os
import time
import numpy as np
import cntk as C
input_dim_model = (1, 28, 28)
input_dim = 28 * 28
num_output_classes = 10
train_file = os.path.join("data", "MNIST", "Train-28x28_cntk_text.txt")
test_file = os.path.join("data", "MNIST", "Test-28x28_cntk_text.txt")

def create_reader(path, is_training, input_dim, num_label_classes):
    ctf = C.io.CTFDeserializer(path, C.io.StreamDefs(
        labels=C.io.StreamDef(field='labels', shape=num_label_classes, is_sparse=False),
        features=C.io.StreamDef(field='features', shape=input_dim, is_sparse=False)))
    return C.io.MinibatchSource(ctf, randomize=is_training,
                                max_sweeps=C.io.INFINITELY_REPEAT if is_training else 1)

x = C.input_variable(input_dim_model)
y = C.input_variable(num_output_classes)

def create_model(features):
    with C.layers.default_options(init=C.glorot_uniform(seed=1), activation=C.relu):
        h = features
        h = C.layers.Convolution2D(filter_shape=(5, 5), num_filters=8, strides=(2, 2),
                                   pad=True, name='first_conv')(h)
        h = C.layers.Convolution2D(filter_shape=(5, 5), num_filters=16, strides=(2, 2),
                                   pad=True, name='second_conv')(h)
        return C.layers.Dense(num_output_classes, activation=None, name='classify')(h)

def train_test(train_reader, test_reader, model_func, num_sweeps_to_train_with=1):
    model = model_func(x / 255)
    loss = C.cross_entropy_with_softmax(model, y)
    label_error = C.classification_error(model, y)
    learner = C.sgd(z.parameters, C.learning_parameter_schedule(0.2))
    trainer = C.Trainer(z, (loss, label_error), [learner])
    minibatch_size = 64
    num_minibatches_to_train = (600 * num_sweeps_to_train_with) / minibatch_size
    input_map = {y: train_reader.streams.labels, x: train_reader.streams.features}
    for i in range(0, int(num_minibatches_to_train)):
        data = train_reader.next_minibatch(minibatch_size, input_map=input_map)
        trainer.train_minibatch(data)
        if i % 3 == 0:
            print("Minibatch: {0}, Loss: {1:.4f}, Error: {2:.2f}%".format(
                i, trainer.previous_minibatch_loss_average,
                trainer.previous_minibatch_evaluation_average * 100))
    test_input_map = {y: test_reader.streams.labels, x: test_reader.streams.features}
    test_result = 0.0
    for i in range(3):
        data = test_reader.next_minibatch(100, input_map=test_input_map)
        test_result = test_result + trainer.test_minibatch(data)
    print("Average test error: {0:.2f}%".format(test_result * 100 / 3))
'''

"""The data stand-ins (and module stand-ins) of the CNTK ``Examples/`` programs
``cntk_examples.py`` added last: UCF11's clips with ``imageio`` and ``PIL`` stand-ins
(Conv3D_UCF11.py), the pretrained ResNet with Grocery and Flowers pictures (FeatureExtraction.py,
TransferLearning.py), AN4's feature archive (HTK_LSTM_Truncated_Distributed.py), and the PNG
writer all the image stand-ins use.  Parses under Python 3.6 (CNTK 2.7's interpreter runs the
driver too)."""

from __future__ import print_function

import importlib.machinery
import os
import shutil
import struct
import types
import zlib

import numpy as np


def _png(path, rgb):
    """An 8-bit RGB PNG of an ``(h, w, 3)`` uint8 array."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\0" + rgb[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


# -- video (UCF11): data and the modules Conv3D_UCF11.py reads it with --
N_CLIPS_TRAIN, N_CLIPS_TEST, CLIP_FRAMES, CLIP_H, CLIP_W = 8, 4, 16, 36, 40


def write_ucf11(folder):
    """UCF11 as ``install_ucf11.py`` leaves it, in stand-in form: ``train_map.csv`` and
    ``test_map.csv`` (clip path relative to the folder, comma, label of 11), and the clips
    (``clips/%02d.npy``: ``CLIP_FRAMES`` RGB frames of ``CLIP_H`` x ``CLIP_W``, uint8), which
    the ``imageio`` stand-in reads as the real one reads a video.  Each class is a colour with
    noise; a clip has exactly the frames the cut program reads (so its random start is 0)."""
    rs = np.random.RandomState(3)
    os.makedirs(os.path.join(folder, "clips"), exist_ok=True)
    palette = rs.randint(0, 256, (11, 3))
    index = 0
    for name, n in (("train", N_CLIPS_TRAIN), ("test", N_CLIPS_TEST)):
        with open(os.path.join(folder, "%s_map.csv" % name), "w") as map_file:
            for _ in range(n):
                label = rs.randint(11)
                clip = np.clip(palette[label] + rs.normal(0, 40, (CLIP_FRAMES, CLIP_H, CLIP_W, 3)),
                               0, 255).astype(np.uint8)
                path = "clips/%02d.npy" % index
                np.save(os.path.join(folder, path), clip)
                map_file.write("%s,%d\n" % (path, label))
                index += 1


def image_standins():
    """``imageio`` (in neither CNTK 2.7's environment nor Stadyn's) whose
    ``get_reader(path, 'ffmpeg')`` reads a stand-in clip (``len`` frames, ``get_data(i)`` the
    i-th ``(h, w, 3)`` uint8 frame), and ``pil_standin`` for ``PIL`` (not in CNTK 2.7's
    environment; Stadyn's Pillow has no ``Image.ANTIALIAS`` any more), which the programs'
    ``from PIL import Image`` is cut to import on both frameworks (leaving Stadyn's own image
    reader the real Pillow), whose ``Image`` does what the programs ask of it: ``fromarray``,
    ``thumbnail`` of a frame smaller than its box (which leaves it as
    it is, as Pillow does), ``crop`` of a box on whole pixels, ``open`` of the stand-ins' PNGs,
    ``resize`` (to the nearest pixel: a stand-in's choice, not ANTIALIAS's filter), ``size``
    and ``np.array``/``np.asarray``."""
    imageio = types.ModuleType("imageio")

    class Reader(object):
        def __init__(self, path):
            self.frames = np.load(path)

        def __len__(self):
            return len(self.frames)

        def get_data(self, i):
            return self.frames[i]

    def get_reader(path, fmt):
        assert fmt == "ffmpeg", fmt
        return Reader(path)
    imageio.get_reader = get_reader

    pil, image = types.ModuleType("pil_standin"), types.ModuleType("pil_standin.Image")

    class Picture(object):
        def __init__(self, pixels):
            self.pixels = pixels

        @property
        def size(self):
            return self.pixels.shape[1], self.pixels.shape[0]

        def thumbnail(self, box, resample=None):
            assert self.size[0] <= box[0] and self.size[1] <= box[1], (self.size, box)

        def crop(self, box):
            left, top, right, bottom = box
            assert all(float(v).is_integer() for v in box), box
            return Picture(self.pixels[int(top):int(bottom), int(left):int(right)])

        def resize(self, size, resample=None):
            rows = np.arange(size[1]) * self.pixels.shape[0] // size[1]
            cols = np.arange(size[0]) * self.pixels.shape[1] // size[0]
            return Picture(self.pixels[rows][:, cols])

        def __array__(self, dtype=None, copy=None):
            return self.pixels if dtype is None else self.pixels.astype(dtype)

    def open_png(path):
        """An 8-bit RGB PNG of filter-0 rows (as ``_png`` writes them)."""
        with open(path, "rb") as f:
            data = f.read()
        w, h = struct.unpack(">II", data[16:24])
        idat, at = b"", 8
        while at < len(data):
            size, = struct.unpack(">I", data[at:at + 4])
            if data[at + 4:at + 8] == b"IDAT":
                idat += data[at + 8:at + 8 + size]
            at += 12 + size
        rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + 3 * w)
        assert not rows[:, 0].any(), path
        return Picture(rows[:, 1:].reshape(h, w, 3).copy())
    image.fromarray, image.open, image.ANTIALIAS = Picture, open_png, 1
    pil.Image = image
    for module in (imageio, pil, image):                  # (torch looks at their specs)
        module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)
    return {"imageio": imageio, "pil_standin": pil, "pil_standin.Image": image}
# -- end of video --


# -- a pretrained ResNet and the pictures it is applied to --
RESNET_STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "refs",
                              "cntk27_resnet_standin.model")
N_GROCERY, N_FLOWERS_TRAIN, N_FLOWERS_TEST = 6, 40, 12


def write_pretrained(examples):
    """What ``install_data_and_model.py`` of FeatureExtraction and TransferLearning download:
    ``PretrainedModels/ResNet18_ImageNet_CNTK.model`` (beside ``Examples/``) as the small
    ResNet ``tools/cntk_resnet_standin.py --size 32`` made with CNTK 2.7 (``refs/``: its input
    ``features`` of ``(3, 32, 32)``, ``z.x`` the pooled features of ``(16, 1, 1)``);
    ``Image/DataSets/Grocery/test.txt`` (``testImages/NN.jpg``, tab, label) and
    ``Image/DataSets/Flowers/6k_img_map.txt`` and ``1k_img_map.txt`` (absolute path, tab, label
    of 102; the program trains on the first, as its comment says).  The pictures are 48x40
    PNGs under ``.jpg`` names, which CNTK's OpenCV and the PIL stand-in read by content: a
    class colour with noise and a bar at a class-given height."""
    models = os.path.join(os.path.dirname(examples), "PretrainedModels")
    os.makedirs(models, exist_ok=True)
    shutil.copyfile(RESNET_STANDIN, os.path.join(models, "ResNet18_ImageNet_CNTK.model"))
    rs = np.random.RandomState(4)
    palette = rs.randint(0, 256, (102, 3))

    def picture(label):
        img = palette[label][None, None, :] + rs.normal(0, 30, (40, 48, 3))
        img[(label * 7) % 34:(label * 7) % 34 + 6] = 255 - palette[label]
        return np.clip(img, 0, 255).astype(np.uint8)
    data = os.path.join(examples, "Image", "DataSets")
    grocery = os.path.join(data, "Grocery")
    os.makedirs(os.path.join(grocery, "testImages"), exist_ok=True)
    with open(os.path.join(grocery, "test.txt"), "w") as f:
        for i in range(N_GROCERY):
            label = rs.randint(17)
            _png(os.path.join(grocery, "testImages", "%02d.jpg" % i), picture(label))
            f.write("testImages/%02d.jpg\t%d\n" % (i, label))
    flowers = os.path.join(data, "Flowers")
    os.makedirs(os.path.join(flowers, "jpg"), exist_ok=True)
    index = 0
    for name, n in (("6k_img_map.txt", N_FLOWERS_TRAIN), ("1k_img_map.txt", N_FLOWERS_TEST)):
        with open(os.path.join(flowers, name), "w") as f:
            for _ in range(n):
                label = rs.randint(6)                  # (a few of the 102 classes)
                path = os.path.join(flowers, "jpg", "image_%05d.jpg" % index)
                _png(path, picture(label))
                f.write("%s\t%d\n" % (path, label))
                index += 1
# -- end of a pretrained ResNet --


# -- speech (AN4): data --
def cut_an4(examples, n=4):
    """AN4 as CNTK ships it (``Speech/AN4/Data``): ``glob_0000.scp`` and ``glob_0000.mlf`` cut
    to their first ``n`` utterances, ``state.list`` as it is, and the feature archive
    ``000000000.chunk`` (which this copy of CNTK lacks) written in HTK's format (big-endian
    header of frame count, 100 ns period, bytes a frame and kind 9, USER; then 33 big-endian
    floats a frame) for the frames the scp names: each HMM state of the labels a point of
    feature space, its frames that point with noise."""
    data = os.path.join(examples, "Speech", "AN4", "Data")
    if not os.path.isdir(data):
        return
    with open(os.path.join(data, "glob_0000.scp")) as f:
        scp = f.readlines()[:n]
    names = [ln.split("=", 1)[0].rsplit(".", 1)[0] for ln in scp]
    frames = 1 + max(int(ln.rsplit(",", 1)[1].rstrip("]\n")) for ln in scp)
    with open(os.path.join(data, "glob_0000.mlf")) as f:
        mlf = f.read().split("\n.\n")
    keep = [u for u in mlf if u.strip() and u.split('"')[1].rsplit(".", 1)[0] in names]
    assert len(keep) == n, (len(keep), n)
    with open(os.path.join(data, "state.list")) as f:
        states = {s: i for i, s in enumerate(f.read().split())}
    rs = np.random.RandomState(5)
    centres = rs.normal(0, 1, (len(states), 33))
    features = rs.normal(0, 0.3, (frames, 33))
    for line, utterance in zip(scp, keep):
        first = int(line.rsplit("[", 1)[1].split(",")[0])
        for row in utterance.split("\n"):
            parts = row.split()
            if len(parts) >= 3 and parts[0].isdigit():
                start, end = int(parts[0]) // 100000, int(parts[1]) // 100000
                features[first + start:first + end] += centres[states[parts[2]]]
    with open(os.path.join(data, "glob_0000.scp"), "w") as f:
        f.writelines(scp)
    with open(os.path.join(data, "glob_0000.mlf"), "w") as f:
        f.write("\n.\n".join(keep if keep[0].startswith("#!MLF!#") else
                             ["#!MLF!#\n" + keep[0]] + keep[1:]) + "\n.\n")
    with open(os.path.join(data, "000000000.chunk"), "wb") as f:
        f.write(struct.pack(">iihh", frames, 100000, 33 * 4, 9))
        f.write(features.astype(">f4").tobytes())
# -- end of speech: data --

"""Stand-ins for CNTK's object-detection examples (``Examples/Image/Detection``: Faster R-CNN,
Fast R-CNN) run by ``cntk_examples.py``: the Grocery data set in the layout
``utils/configs/Grocery_config.py`` reads, the pretrained AlexNet (a small one CNTK 2.7 wrote,
``refs/cntk27_alexnet_standin.model``), and the modules the examples import that neither CNTK
2.7's environment nor Stadyn's has as they need them, given to both frameworks alike:
``easydict``, ``cv2`` (OpenCV: ``imread`` of the stand-in pictures, ``resize``,
``copyMakeBorder``, ``flip``), ``dlib`` (its selective search, a fixed grid), ``yaml``
(PyYAML 6, beside Stadyn, refuses the examples' ``yaml.load(text)`` without a ``Loader``;
CNTK 2.7's environment has none), and the examples' compiled ``utils/cython_modules``
(``cpu_nms``, ``cython_bbox``: built for CPython 3.4-3.6).  Parses under Python 3.6 (CNTK
2.7's interpreter runs the driver too)."""

from __future__ import print_function

import importlib.machinery
import os
import shutil
import struct
import types
import zlib

import numpy as np

from cntk_examples_standins import _png

ALEXNET_STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "refs",
                               "cntk27_alexnet_standin.model")
# the pictures: 160 x 120 (the driver cuts the examples' 850 x 850 to 160 x 160, so each is
# padded by 20 rows above and below and not resized)
PICTURE_W, PICTURE_H = 160, 120
CLASSES = ["__background__", "avocado", "orange", "milk"]
N_TRAIN, N_TEST = 4, 2


def write_grocery_detection(examples):
    """Grocery as the detection examples' ``install_data_and_model.py`` leaves it
    (``Image/DataSets/Grocery``): ``class_map.txt`` (name, tab, index; ``__background__`` 0),
    ``train_img_file.txt`` / ``test_img_file.txt`` (index, tab, picture path relative to the
    folder, tab, 0) and ``train_roi_file.txt`` / ``test_roi_file.txt`` (index, `` |roiAndLabel``,
    then x1 y1 x2 y2 label of each object), the pictures under ``positive/`` and
    ``testImages/`` as ``det_NN.jpg``: 160x120 PNGs (read by content), a noisy grey ground
    with two or three coloured boxes, one colour per class; the pretrained model as
    ``PretrainedModels/AlexNet_ImageNet_Caffe.model`` beside ``Examples/``."""
    models = os.path.join(os.path.dirname(examples), "PretrainedModels")
    os.makedirs(models, exist_ok=True)
    shutil.copyfile(ALEXNET_STANDIN, os.path.join(models, "AlexNet_ImageNet_Caffe.model"))
    grocery = os.path.join(examples, "Image", "DataSets", "Grocery")
    rs = np.random.RandomState(6)
    colours = {1: (40, 160, 40), 2: (250, 150, 20), 3: (240, 240, 240)}
    with open(os.path.join(grocery, "class_map.txt"), "w") as f:
        for i, name in enumerate(CLASSES):
            f.write("%s\t%d\n" % (name, i))
    for split, folder, n in (("train", "positive", N_TRAIN), ("test", "testImages", N_TEST)):
        os.makedirs(os.path.join(grocery, folder), exist_ok=True)
        with open(os.path.join(grocery, "%s_img_file.txt" % split), "w") as images, \
                open(os.path.join(grocery, "%s_roi_file.txt" % split), "w") as rois:
            for i in range(n):
                img = rs.normal(110, 20, (PICTURE_H, PICTURE_W, 3))
                boxes = []
                for k in range(2 + i % 2):
                    label = 1 + (i + k) % 3
                    w, h = rs.randint(30, 46), rs.randint(30, 50)
                    x1 = 4 + k * 52 + rs.randint(0, 4)
                    y1 = rs.randint(5, PICTURE_H - h - 5)
                    img[y1:y1 + h, x1:x1 + w] = colours[label] + rs.normal(0, 10, (h, w, 3))
                    boxes.append((x1, y1, x1 + w - 1, y1 + h - 1, label))
                path = "%s/det_%02d.jpg" % (folder, i)
                _png(os.path.join(grocery, path), np.clip(img, 0, 255).astype(np.uint8))
                images.write("%d\t%s\t0\n" % (i, path))
                rois.write("%d |roiAndLabel %s\n" % (i, " ".join(
                    "%d %d %d %d %d" % b for b in boxes)))


def _module(name, **attributes):
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)   # (torch looks at specs)
    module.__dict__.update(attributes)
    return module


class EasyDict(dict):
    """``easydict.EasyDict``: a dict whose keys are attributes too; dicts put in it become
    EasyDicts."""

    def __init__(self, d=None, **kwargs):
        dict.__init__(self)
        for k, v in dict(d or {}, **kwargs).items():
            self[k] = v

    def __setitem__(self, k, v):
        if isinstance(v, dict) and not isinstance(v, EasyDict):
            v = EasyDict(v)
        dict.__setitem__(self, k, v)

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k)

    def __setattr__(self, k, v):
        self[k] = v


def _read_png(path):
    """An 8-bit RGB PNG of filter-0 rows (as ``_png`` writes them), as ``(h, w, 3)`` uint8."""
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
    return rows[:, 1:].reshape(h, w, 3).copy()


def _cv2():
    """What the examples ask of OpenCV: ``imread`` (BGR, as OpenCV gives it), ``resize`` to
    the nearest pixel (source index ``floor(i * src / dst)``, OpenCV's ``INTER_NEAREST``; also
    for the ``INTER_LINEAR`` of Fast R-CNN's selective search, whose stand-in reads only the
    size),
    ``copyMakeBorder`` with a constant, ``flip`` about the vertical axis, ``cvtColor`` BGR to
    RGB."""
    def imread(path, flags=1):
        return _read_png(path)[:, :, ::-1].copy()

    def resize(img, size, fx=0, fy=0, interpolation=0):
        w, h = size
        if (w, h) == (0, 0):               # by factors (OpenCV rounds the sizes)
            w, h = int(round(img.shape[1] * fx)), int(round(img.shape[0] * fy))
        rows = np.arange(h) * img.shape[0] // h
        cols = np.arange(w) * img.shape[1] // w
        return img[rows][:, cols]

    def copyMakeBorder(img, top, bottom, left, right, border_type, value=None):
        out = np.empty((img.shape[0] + top + bottom, img.shape[1] + left + right) + img.shape[2:],
                       img.dtype)
        out[...] = np.asarray(value if value is not None else 0, img.dtype)
        out[top:top + img.shape[0], left:left + img.shape[1]] = img
        return out

    def flip(img, code):
        assert code == 1, code
        return img[:, ::-1].copy()

    def cvtColor(img, code):
        return img[:, :, ::-1].copy()
    return _module("cv2", imread=imread, resize=resize, copyMakeBorder=copyMakeBorder, flip=flip,
                   cvtColor=cvtColor, INTER_NEAREST=0, INTER_LINEAR=1, BORDER_CONSTANT=0,
                   COLOR_BGR2RGB=4)


def _yaml():
    """``yaml.load`` of the examples' layer parameters: ``'key': value`` lines, a key with no
    value followed by `` - item`` lines (a list); numbers as numbers."""
    def scalar(text):
        text = text.strip().strip("'\"")
        for kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
        return text

    def load(text, Loader=None):
        out, key = {}, None
        for line in text.split("\n"):
            if not line.strip():
                continue
            if line.strip().startswith("- "):
                out[key].append(scalar(line.strip()[2:]))
                continue
            k, _, v = line.partition(":")
            key = scalar(k)
            out[key] = scalar(v) if v.strip() else []
        return out
    return _module("yaml", load=load, safe_load=load)


def _nms_and_overlaps():
    """The examples' compiled ``cpu_nms`` and ``bbox_overlaps``, in NumPy: boxes
    ``(x1, y1, x2, y2)`` on whole pixels (a box's width ``x2 - x1 + 1``)."""
    def bbox_overlaps(boxes, query_boxes):
        b = np.asarray(boxes, np.float64)[:, None, :]
        q = np.asarray(query_boxes, np.float64)[None, :, :]
        iw = np.minimum(b[..., 2], q[..., 2]) - np.maximum(b[..., 0], q[..., 0]) + 1
        ih = np.minimum(b[..., 3], q[..., 3]) - np.maximum(b[..., 1], q[..., 1]) + 1
        inter = np.where((iw > 0) & (ih > 0), iw * ih, 0.0)
        area_b = (b[..., 2] - b[..., 0] + 1) * (b[..., 3] - b[..., 1] + 1)
        area_q = (q[..., 2] - q[..., 0] + 1) * (q[..., 3] - q[..., 1] + 1)
        return np.where(inter > 0, inter / np.maximum(area_b + area_q - inter, 1e-12), 0.0)

    def cpu_nms(dets, thresh):
        """Indices of ``dets`` (x1, y1, x2, y2, score) kept, best score first, each dropping
        the later ones it overlaps by ``thresh`` or more."""
        dets = np.asarray(dets)
        order = dets[:, 4].argsort(kind="mergesort")[::-1]
        suppressed = np.zeros(len(dets), bool)
        overlaps = bbox_overlaps(dets[:, :4], dets[:, :4])
        keep = []
        for i in order:
            if suppressed[i]:
                continue
            keep.append(int(i))
            suppressed |= overlaps[i] >= thresh
        return keep
    return {"utils.cython_modules.cpu_nms": _module("utils.cython_modules.cpu_nms",
                                                    cpu_nms=cpu_nms),
            "utils.cython_modules.cython_bbox": _module("utils.cython_modules.cython_bbox",
                                                        bbox_overlaps=bbox_overlaps)}


def _dlib():
    """dlib's ``find_candidate_object_locations`` (selective search, which Fast R-CNN's
    proposals start from): here the boxes of a fixed grid of three sizes, in dlib's rectangle
    form (``left()``, ``top()``, ``right()``, ``bottom()``); the example fills up to its count
    of proposals with its own grid."""
    class Rectangle(object):
        def __init__(self, box):
            self.box = box

        def left(self):
            return self.box[0]

        def top(self):
            return self.box[1]

        def right(self):
            return self.box[2]

        def bottom(self):
            return self.box[3]

    def find_candidate_object_locations(img, rects, kvals=None, min_size=None,
                                        max_merging_iterations=None):
        h, w = img.shape[:2]
        for size in (min(h, w) // 4, min(h, w) // 3, min(h, w) // 2):
            step = max(1, size // 2)
            for y in range(0, h - size + 1, step):
                for x in range(0, w - size + 1, step):
                    rects.append(Rectangle((x, y, x + size - 1, y + size - 1)))
    return _module("dlib", find_candidate_object_locations=find_candidate_object_locations)


def detection_standins():
    """The modules above, by the names the examples import them as."""
    modules = {"easydict": _module("easydict", EasyDict=EasyDict), "cv2": _cv2(),
               "yaml": _yaml(), "dlib": _dlib()}
    modules.update(_nms_and_overlaps())
    return modules

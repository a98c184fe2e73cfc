"""``cntk.io`` and ``cntk.io.transforms``: readers over small files the case writes (CNTK text
format, images with a map file), their minibatches, sweeps, stream descriptions and the image
transforms."""

import os
import struct

import numpy as np

from compat_harness import cntk_case


def _ctf(folder, r, n=7):
    """A CNTK-text-format file of ``n`` samples: dense 3-value features, one-hot 2-class
    labels.  Returns (path, features, labels)."""
    features = np.round(r.randn(n, 3), 3).astype(np.float32)
    labels = r.onehot(n, 2)
    path = os.path.join(folder, "data.ctf")
    with open(path, "w") as f:
        for i in range(n):
            f.write("|features %s |labels %s\n" % (" ".join("%g" % v for v in features[i]),
                                                  " ".join("%g" % v for v in labels[i])))
    return path, features, labels


def _source(C, path, **kw):
    streams = C.io.StreamDefs(features=C.io.StreamDef(field="features", shape=3),
                              labels=C.io.StreamDef(field="labels", shape=2))
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), **kw)


@cntk_case(names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer", "cntk.io.StreamDef",
                  "cntk.io.StreamDefs", "cntk.io.MinibatchData", "cntk.io.FULL_DATA_SWEEP"])
def ctf_sweeps(C, r):
    """Minibatches of 3 over 7 samples, two sweeps, not randomised: values, sample counts and
    sweep ends."""
    with r.tempdir() as folder:
        path, features, labels = _ctf(folder, r)
        src = _source(C, path, randomize=False, max_sweeps=2)
        res = {"FULL_DATA_SWEEP": C.io.FULL_DATA_SWEEP, "features": features}
        batches = []
        for i in range(6):
            mb = src.next_minibatch(3)
            if not mb:
                batches.append("empty")
                continue
            f, lab = mb[src.streams.features], mb[src.streams.labels]
            r.touch("cntk.io.MinibatchData")
            # Copies, and no reference kept to the minibatch: CNTK 2.7's prefetching thread
            # reuses the matrices behind it and fails ("Resize: Cannot resize the matrix
            # because it is a view") when a view of them is still alive.
            res["features%d" % i] = np.array(f.asarray(), copy=True).reshape(-1, 3)
            res["labels%d" % i] = np.array(lab.asarray(), copy=True).reshape(-1, 2)
            batches.append([f.num_samples, bool(f.end_of_sweep), bool(lab.end_of_sweep)])
            del mb, f, lab
        res["batches"] = batches
        return res


@cntk_case(names=["cntk.io.MinibatchSource", "cntk.io.StreamInformation",
                  "cntk.io.INFINITELY_REPEAT"])
def ctf_input_map(C, r):
    """``next_minibatch(n, input_map)`` keyed by the model's inputs, fed to ``eval``; the
    streams' descriptions."""
    with r.tempdir() as folder:
        path, features, labels = _ctf(folder, r, n=5)
        src = _source(C, path, randomize=False)
        x = C.input_variable(3)
        y = C.input_variable(2)
        f = C.reduce_sum(x * 2.0) + C.reduce_sum(y)
        mb = src.next_minibatch(4, input_map={x: src.streams.features, y: src.streams.labels})
        r.touch("cntk.Function.eval", "cntk.io.MinibatchData", "cntk.io.StreamInformation")
        info = src.streams.features
        return {"INFINITELY_REPEAT": C.io.INFINITELY_REPEAT, "out": f.eval(mb),
                "n": mb[x].num_samples, "stream_name": info.m_name,
                "stream_names": sorted(src.streams.keys())}


@cntk_case(names=["cntk.io.MinibatchSource"],
           note="randomised: the same samples (as a multiset) in each sweep")
def ctf_randomized(C, r):
    with r.tempdir() as folder:
        path, features, labels = _ctf(folder, r, n=6)
        src = _source(C, path, randomize=True, max_sweeps=1)
        seen = []
        while True:
            mb = src.next_minibatch(4)
            if not mb:
                break
            seen.extend(mb[src.streams.features].asarray().reshape(-1, 3).tolist())
        return {"sorted_samples": sorted(seen), "count": len(seen)}


@cntk_case(names=["cntk.io.MinibatchSourceFromData"],
           note="a minibatch ends at the end of a sweep (5 samples, 3 a batch: 3, 2, 3)")
def minibatch_source_from_data(C, r):
    a, b = r.randn(5, 3), r.onehot(5, 2)
    src = C.io.MinibatchSourceFromData(dict(x=a, y=b), max_samples=8)
    res = {"streams": sorted(src.streams.keys()), "name": src.streams.x.name}
    for i in range(4):
        mb = src.next_minibatch(3)
        if not mb:
            res["mb%d" % i] = "empty"
            continue
        res["x%d" % i] = mb[src.streams.x].asarray().reshape(-1, 3)
        res["y%d" % i] = mb[src.streams.y].asarray().reshape(-1, 2)
        res["n%d" % i] = mb[src.streams.x].num_samples
    return res


@cntk_case(names=["cntk.io.StreamInformation"])
def stream_information(C, r):
    src = C.io.MinibatchSourceFromData(dict(x=r.randn(4, 2, 3)))
    info = src.streams.x
    r.touch("cntk.io.StreamInformation")
    return {"name": info.name, "sample_shape": list(info.sample_shape),
            "storage_format": str(info.storage_format)}


# -- images ---------------------------------------------------------------------------------


def _write_bmp(path, rgb):
    """A 24-bit BMP (bottom-up rows, BGR) of an ``(h, w, 3)`` uint8 RGB array."""
    h, w, _ = rgb.shape
    row = (w * 3 + 3) // 4 * 4
    pixels = b"".join(rgb[y, :, ::-1].tobytes() + b"\0" * (row - w * 3)
                      for y in range(h - 1, -1, -1))
    header = struct.pack("<2sIHHI", b"BM", 54 + len(pixels), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(pixels), 2835, 2835, 0, 0)
    with open(path, "wb") as f:
        f.write(header + info + pixels)


def _images(folder, r, n=3, h=6, w=8):
    lines = []
    images = []
    for i in range(n):
        img = r.randint(0, 256, (h, w, 3), dtype=np.uint8)
        path = os.path.join(folder, "img%d.bmp" % i)
        _write_bmp(path, img)
        images.append(img)
        lines.append("%s\t%d\n" % (path, i % 2))
    map_file = os.path.join(folder, "map.txt")
    with open(map_file, "w") as f:
        f.writelines(lines)
    return map_file, images


def _image_batches(C, map_file, transforms, n):
    streams = C.io.StreamDefs(features=C.io.StreamDef(field="image", transforms=transforms),
                              labels=C.io.StreamDef(field="label", shape=2))
    src = C.io.MinibatchSource(C.io.ImageDeserializer(map_file, streams), randomize=False,
                               max_sweeps=1)
    mb = src.next_minibatch(n)
    return mb[src.streams.features].asarray(), mb[src.streams.labels].asarray()


@cntk_case(names=["cntk.io.ImageDeserializer", "cntk.io.transforms.scale"],
           note="images come out as (channels, height, width) float32 in BGR order")
def image_scale(C, r):
    with r.tempdir() as folder:
        map_file, images = _images(folder, r)
        T = C.io.transforms
        feats, labels = _image_batches(C, map_file, [T.scale(width=8, height=6, channels=3)], 3)
        return {"features": feats.reshape(3, 3, 6, 8), "labels": labels.reshape(3, 2),
                "raw_bgr_chw": np.stack([img[:, :, ::-1].transpose(2, 0, 1)
                                         for img in images]).astype(np.float32)}


@cntk_case(names=["cntk.io.transforms.scale"], tols={"features": (0, 1e-3)},
           note="resizing 6x8 to 3x4 with linear interpolation")
def image_scale_resize(C, r):
    with r.tempdir() as folder:
        map_file, _ = _images(folder, r)
        T = C.io.transforms
        feats, _ = _image_batches(C, map_file, [T.scale(width=4, height=3, channels=3,
                                                        interpolations="linear")], 3)
        return {"features": feats.reshape(3, 3, 3, 4)}


@cntk_case(names=["cntk.io.transforms.crop"])
def image_crop_center(C, r):
    with r.tempdir() as folder:
        map_file, _ = _images(folder, r)
        T = C.io.transforms
        feats, _ = _image_batches(C, map_file, [T.crop(crop_type="center", side_ratio=0.5),
                                                T.scale(width=4, height=3, channels=3)], 3)
        return {"features": feats.reshape(3, 3, 3, 4)}


@cntk_case(names=["cntk.io.transforms.crop"],
           note="random crops: compared are the shapes and that every crop is a window of the "
                "image or of its mirror image")
def image_crop_random(C, r):
    with r.tempdir() as folder:
        map_file, images = _images(folder, r, n=2, h=8, w=8)
        T = C.io.transforms
        feats, _ = _image_batches(C, map_file, [T.crop(crop_type="randomside", side_ratio=0.5,
                                                       jitter_type="uniratio")], 2)
        feats = feats.reshape(2, 3, 4, 4)
        found = []
        for img, crop in zip(images, feats):
            bgr = img[:, :, ::-1].transpose(2, 0, 1).astype(np.float32)
            found.append(any(np.array_equal(bgr[:, i:i + 4, j:j + 4], crop)
                             or np.array_equal(bgr[:, i:i + 4, j:j + 4], crop[:, :, ::-1])
                             for i in range(5) for j in range(5)))
        return {"shape": list(feats.shape), "crops_are_windows": found}


def _mean_file(path, mean):
    """An OpenCV FileStorage XML mean file (``MeanImg``: rows 1, cols C*H*W, in HWC order)."""
    c, h, w = mean.shape
    values = " ".join("%g" % v for v in mean.transpose(1, 2, 0).ravel())
    with open(path, "w") as f:
        f.write('<?xml version="1.0" ?>\n<opencv_storage>\n<Channel>%d</Channel>\n<Row>%d</Row>\n'
                '<Col>%d</Col>\n<MeanImg type_id="opencv-matrix">\n<rows>1</rows>\n<cols>%d'
                '</cols>\n<dt>f</dt>\n<data>%s</data></MeanImg>\n</opencv_storage>\n'
                % (c, h, w, c * h * w, values))


@cntk_case(names=["cntk.io.transforms.mean"])
def image_mean(C, r):
    with r.tempdir() as folder:
        map_file, _ = _images(folder, r)
        mean = np.round(r.rand(3, 6, 8, low=0, high=100), 2).astype(np.float32)
        mean_path = os.path.join(folder, "mean.xml")
        _mean_file(mean_path, mean)
        T = C.io.transforms
        feats, _ = _image_batches(C, map_file, [T.scale(width=8, height=6, channels=3),
                                                T.mean(mean_path)], 3)
        return {"features": feats.reshape(3, 3, 6, 8)}


@cntk_case(names=["cntk.io.transforms.color"],
           note="zero radii: colour jitter leaves the image as it is")
def image_color_identity(C, r):
    with r.tempdir() as folder:
        map_file, _ = _images(folder, r)
        T = C.io.transforms
        feats, _ = _image_batches(C, map_file, [T.scale(width=8, height=6, channels=3),
                                                T.color(brightness_radius=0.0,
                                                        contrast_radius=0.0,
                                                        saturation_radius=0.0)], 3)
        return {"features": feats.reshape(3, 3, 6, 8)}


@cntk_case(names=["cntk.io.MinibatchData", "cntk.io.MinibatchSource",
                  "cntk.io.MinibatchData.asarray", "cntk.io.MinibatchData.shape",
                  "cntk.io.MinibatchSource.next_minibatch"],
           note="a deserializer's samples are sequences of one step: (N, 1, 3); "
                "MinibatchSourceFromData gives (N, 3)")
def minibatch_data_shapes(C, r):
    with r.tempdir() as folder:
        path, features, labels = _ctf(folder, r, n=4)
        src = _source(C, path, randomize=False)
        mb = src.next_minibatch(3)
        d = mb[src.streams.features]
        r.touch("cntk.io.MinibatchData", "cntk.io.MinibatchData.asarray",
                "cntk.io.MinibatchData.shape", "cntk.io.MinibatchSource.next_minibatch")
        x = C.input_variable(3)
        y = (x * 2.0).eval({x: d})
        nd = C.io.MinibatchSourceFromData(dict(a=features)).next_minibatch(2)
        return {"asarray": d.asarray(), "shape": list(d.shape), "num_samples": d.num_samples,
                "num_sequences": d.num_sequences, "eval": y,
                "from data": list(list(nd.values())[0].asarray().shape)}


def _write_png(path, pixels):
    """An 8-bit PNG of an ``(h, w)`` grayscale or ``(h, w, 3)`` RGB uint8 array."""
    import zlib
    h, w = pixels.shape[:2]
    color_type = 0 if pixels.ndim == 2 else 2
    raw = b"".join(b"\0" + pixels[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    data = (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(data)


@cntk_case(names=["cntk.io.ImageDeserializer", "cntk.io.transforms.scale"],
           note="CNTK 2.7 decodes every image in colour: a grayscale PNG gives 3 equal channels, "
                "and scale(channels=1) gives the first H*W values of the scaled colour image's "
                "interleaved buffer (for a grayscale and a colour image alike)")
def image_grayscale(C, r):
    with r.tempdir() as folder:
        gray = r.randint(0, 256, (6, 8), dtype=np.uint8)
        color = r.randint(0, 256, (9, 11, 3), dtype=np.uint8)
        _write_png(os.path.join(folder, "g.png"), gray)
        _write_png(os.path.join(folder, "c.png"), color)
        map_file = os.path.join(folder, "map.txt")
        with open(map_file, "w") as f:
            f.write("%s\t0\n%s\t1\n" % (os.path.join(folder, "g.png"),
                                        os.path.join(folder, "c.png")))
        T = C.io.transforms
        res = {}
        for label, transforms in (("3 channels", [T.scale(width=8, height=6, channels=3)]),
                                  ("1 channel", [T.scale(width=5, height=4, channels=1)]),
                                  ("crop 1 channel", [T.crop(crop_type="center", side_ratio=0.5),
                                                      T.scale(width=4, height=4, channels=1)])):
            feats, _ = _image_batches(C, map_file, transforms, 2)
            res[label] = feats
        return res


@cntk_case(names=["cntk.io.transforms.scale"],
           note="bicubic scaling rounds as CNTK 2.7's OpenCV does (fixed-point weights)")
def image_scale_cubic(C, r):
    with r.tempdir() as folder:
        map_file, _ = _images(folder, r, n=2, h=9, w=11)
        T = C.io.transforms
        down, _ = _image_batches(C, map_file, [T.scale(width=7, height=5, channels=3,
                                                       interpolations="cubic")], 2)
        up, _ = _image_batches(C, map_file, [T.scale(width=17, height=13, channels=3,
                                                     interpolations="cubic")], 2)
        return {"down": down, "up": up}


@cntk_case(names=["cntk.io.transforms.crop", "cntk.io.MinibatchSource"],
           note="multiview10 through CNTK 2.7's Python reader: each image once per sweep, "
                "its top-left window")
def image_multiview10(C, r):
    with r.tempdir() as folder:
        map_file, _ = _images(folder, r, n=3, h=9, w=11)
        T = C.io.transforms
        streams = C.io.StreamDefs(features=C.io.StreamDef(field="image", transforms=[
            T.crop(crop_type="multiview10", side_ratio=0.5)]),
            labels=C.io.StreamDef(field="label", shape=2))
        src = C.io.MinibatchSource(C.io.ImageDeserializer(map_file, streams), randomize=False,
                                   max_sweeps=2)
        out, batches = [], []
        while True:
            mb = src.next_minibatch(4)
            if not mb:
                break
            d = mb[src.streams.features]
            out.append(d.asarray())
            batches.append([d.num_samples, bool(d.end_of_sweep)])
        return {"views": np.concatenate(out), "batches": batches}

"""``nnabla.logger``, ``nnabla.monitor`` and ``nnabla.utils.image_utils``: what a training
script logs and the files it leaves (monitor text files, images), and the images it reads.

Timings are masked (only the index and iteration columns of a timer file are compared).
NNabla 1.39's interpreter here has no matplotlib, so the plotting functions' case gives the
plotted points by hand (from the files' documented columns).
"""

import logging
import os
import re

import numpy as np

from compat_harness import nnabla_case

MON = "nnabla.monitor."
IU = "nnabla.utils.image_utils."


class _Capture(logging.Handler):
    """The messages logged to the ``nnabla`` logger while it is attached."""

    def __init__(self):
        logging.Handler.__init__(self, logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def __enter__(self):
        logging.getLogger("nnabla").addHandler(self)
        return self

    def __exit__(self, *exc):
        logging.getLogger("nnabla").removeHandler(self)


def _read(path):
    with open(path) as f:
        return f.read()


def _mask_folder(messages, folder):
    return [m.replace(folder, "<dir>") for m in messages]


# -- logger ---------------------------------------------------------------------------------

@nnabla_case(names=["nnabla.logger.logger", "nnabla.logger.log_console_level",
                    "nnabla.logger.log_console_format"])
def logger(nn, r):
    L = r.module("nnabla.logger")
    log = L.logger
    with _Capture() as cap:
        log.info("loss %d", 3)
        log.debug("hidden at INFO")
        log.warning("careful")
    return {"name": log.name, "level": log.getEffectiveLevel(),
            "console_level": L.log_console_level, "format": L.log_console_format,
            "messages": cap.messages, "is_logger": isinstance(log, logging.Logger),
            "package_binds_logger": isinstance(nn.logger, logging.Logger)}


# -- monitors -------------------------------------------------------------------------------

@nnabla_case(names=[MON + "Monitor", MON + "MonitorSeries"])
def monitor_series(nn, r):
    M = r.module("nnabla.monitor")
    values = r.randn(9)
    with r.tempdir() as folder:
        m = M.Monitor(os.path.join(folder, "run", "logs"))
        every = M.MonitorSeries("Training loss", m, interval=3)
        each = M.MonitorSeries("err", m)
        quiet = M.MonitorSeries("arrays", m, interval=2, verbose=False)
        with _Capture() as cap:
            for i, v in enumerate(values):
                every.add(i, float(v))
                each.add(i, np.float32(v * np.float32(1e-7)))
                quiet.add(i, np.array([v, 2 * v, 100000.0 * v], np.float32))
        files = sorted(os.listdir(m.save_path))
        again = M.MonitorSeries("err", m)         # a new monitor starts its file afresh
        return {"save_path": os.path.relpath(m.save_path, folder), "files": files,
                "loss": _read(os.path.join(m.save_path, "Training-loss.series.txt")),
                "err": _read(os.path.join(m.save_path, "err.series.txt")),
                "arrays": _read(os.path.join(m.save_path, "arrays.series.txt")),
                "messages": cap.messages, "fresh": again is not None and
                _read(os.path.join(m.save_path, "err.series.txt")) == ""}


@nnabla_case(names=[MON + "MonitorSeries"],
             note="without a Monitor nothing is written, the values are only logged")
def monitor_series_without_folder(nn, r):
    M = r.module("nnabla.monitor")
    s = M.MonitorSeries("acc", interval=2)
    with _Capture() as cap:
        for i in range(5):
            s.add(i, 0.25 * i)
    return {"messages": cap.messages}


@nnabla_case(names=[MON + "MonitorTimeElapsed"],
             note="the timings are masked: index and iterations per line, and the log's shape")
def monitor_time_elapsed(nn, r):
    M = r.module("nnabla.monitor")
    with r.tempdir() as folder:
        m = M.Monitor(folder)
        t = M.MonitorTimeElapsed("Training time", m, interval=4)
        with _Capture() as cap:
            for i in range(11):
                t.add(i)
        lines = _read(os.path.join(folder, "Training-time.timer.txt")).splitlines()
        fields = [line.split() for line in lines]
        return {"files": sorted(os.listdir(folder)),
                "columns": [[f[0], f[2]] for f in fields],
                "numbers": [all(float(x) >= 0 for x in (f[1], f[3])) for f in fields],
                "messages": [re.sub(r"\d+\.\d+(e-?\d+)?", "<t>", m_) for m_ in cap.messages]}


def _images(IU_, folder, names):
    return dict((n, IU_.imread(os.path.join(folder, n))) for n in names)


@nnabla_case(names=[MON + "MonitorImage"])
def monitor_image(nn, r):
    M = r.module("nnabla.monitor")
    IU_ = r.module("nnabla.utils.image_utils")
    res = {}
    with r.tempdir() as folder:
        m = M.Monitor(folder)
        for channels in (1, 2, 3, 4):
            name = "fake images %d" % channels
            mi = M.MonitorImage(name, m, interval=3, num_images=2)
            batch = r.randn(2, 2, channels, 5, 4)          # (N, ..., C, H, W)
            with _Capture() as cap:
                for i in range(6):
                    mi.add(i, batch + i)
            sub = os.path.join(folder, name.replace(" ", "-"))
            names = sorted(os.listdir(sub))
            res["files %d" % channels] = names
            res["messages %d" % channels] = _mask_folder(cap.messages, folder)
            for key, img in _images(IU_, sub, names).items():
                res["%d %s" % (channels, key)] = img
        x = nn.Variable.from_numpy_array(r.rand(3, 3, 4, 4))
        mv = M.MonitorImage("var", m, interval=10, num_images=5, verbose=False,
                            normalize_method=lambda a: np.clip(a, 0, 1))
        mv.add(0, x)
        sub = os.path.join(folder, "var")
        res["var files"] = sorted(os.listdir(sub))
        res["var 0"] = IU_.imread(os.path.join(sub, "000000-000.png"))
    return res


@nnabla_case(names=[MON + "MonitorImageTile", MON + "tile_images"])
def monitor_image_tile(nn, r):
    M = r.module("nnabla.monitor")
    IU_ = r.module("nnabla.utils.image_utils")
    res = {"tile 1": M.tile_images(r.rand(3, 1, 2, 3)),
           "tile 3": M.tile_images(r.rand(5, 3, 2, 2), padsize=2, padval=0.5)}
    with r.tempdir() as folder:
        m = M.Monitor(folder)
        for channels in (1, 3):
            mt = M.MonitorImageTile("tile %d" % channels, m, interval=2, num_images=3)
            with _Capture() as cap:
                for i in range(4):
                    mt.add(i, r.randn(4, channels, 3, 3))
            sub = os.path.join(folder, "tile-%d" % channels)
            names = sorted(os.listdir(sub))
            res["files %d" % channels] = names
            res["messages %d" % channels] = _mask_folder(cap.messages, folder)
            for key, img in _images(IU_, sub, names).items():
                res["%d %s" % (channels, key)] = img
        res["is image monitor"] = isinstance(mt, M.MonitorImage)
    return res


def _plot_expected(np):
    return {"series": [[0.0, 0.5], [2.0, 0.25]], "time": [[1.0, 2.0], [3.0, 4.0]],
            "total hours": [[1.0, 3.0 / 3600], [3.0, 9.0 / 3600]]}


@nnabla_case(names=[MON + "plot_series", MON + "plot_time_elapsed"],
             expected=_plot_expected,
             note="by hand: NNabla 1.39's interpreter here has no matplotlib; a series file's "
                  "points are (index, value), a timer file's (index, seconds per interval) or "
                  "with elapsed=True (index, total seconds), here in hours")
def monitor_plots(nn, r):
    M = r.module("nnabla.monitor")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with r.tempdir() as folder:
        series = os.path.join(folder, "loss.series.txt")
        with open(series, "w") as f:
            f.write("0 0.5\n2 0.25\n")
        timer = os.path.join(folder, "t.timer.txt")
        with open(timer, "w") as f:
            f.write("1 2.0 2 3.0\n3 4.0 2 9.0\n")
        plt.figure()
        M.plot_series(series)
        M.plot_time_elapsed(timer)
        M.plot_time_elapsed(timer, elapsed=True, unit="h")
        lines = plt.gca().lines
        res = {"series": lines[0].get_xydata().tolist(), "time": lines[1].get_xydata().tolist(),
               "total hours": lines[2].get_xydata().tolist()}
        plt.close()
    return res


# -- image_utils ----------------------------------------------------------------------------

def _rgb(r, h, w, c=3):
    return (r.rand(h, w, c) * 255).astype(np.uint8)


@nnabla_case(names=[IU + "imread", IU + "imsave", IU + "imwrite", IU + "imload"])
def image_files(nn, r):
    IU_ = r.module("nnabla.utils.image_utils")
    rgb, rgba, grey = _rgb(r, 5, 7), _rgb(r, 4, 3, 4), _rgb(r, 6, 5, 1)[..., 0]
    floats = r.rand(3, 4, 3)
    res = {}
    with r.tempdir() as folder:
        p = lambda n: os.path.join(folder, n)  # noqa: E731
        IU_.imsave(p("rgb.png"), rgb)
        IU_.imwrite(p("rgba.png"), rgba)
        IU_.imsave(p("grey.png"), grey)
        IU_.imsave(p("float.png"), floats)
        IU_.imsave(p("chw.png"), rgb.transpose(2, 0, 1), channel_first=True)
        IU_.imsave(p("single.png"), grey[..., None])
        res["rgb"] = IU_.imread(p("rgb.png"))
        res["rgba"] = IU_.imload(p("rgba.png"))
        res["grey"] = IU_.imread(p("grey.png"))
        res["float"] = IU_.imread(p("float.png"))
        res["chw"] = IU_.imread(p("chw.png"))
        res["single"] = IU_.imread(p("single.png"))
        res["channel_first"] = IU_.imread(p("rgb.png"), channel_first=True)
        res["as grey"] = IU_.imread(p("rgb.png"), grayscale=True)
        res["rgba as rgb"] = IU_.imread(p("rgba.png"), num_channels=3)
        res["grey as rgb"] = IU_.imread(p("grey.png"), num_channels=3)
        res["grey 1"] = IU_.imread(p("grey.png"), grayscale=True, num_channels=1)
        res["sized"] = IU_.imread(p("rgb.png"), size=(3, 4))
        res["sized nearest"] = IU_.imread(p("rgb.png"), size=(9, 2), interpolate="nearest")
        with open(p("rgb.png"), "rb") as f:
            res["from file object"] = IU_.imread(f)
        IU_.imsave(p("rgb.bmp"), rgb)
        res["bmp"] = IU_.imread(p("rgb.bmp"))
    return res


@nnabla_case(names=[IU + "imresize"])
def image_resize(nn, r):
    IU_ = r.module("nnabla.utils.image_utils")
    rgb, grey = _rgb(r, 6, 8), _rgb(r, 5, 4, 1)[..., 0]
    floats = r.rand(4, 6, 3)
    res = {}
    for method in ("nearest", "bilinear", "bicubic", "lanczos", "box", "hamming"):
        res["rgb " + method] = IU_.imresize(rgb, (5, 3), interpolate=method)
        res["grey " + method] = IU_.imresize(grey, (7, 9), interpolate=method)
    res["float"] = IU_.imresize(floats, (3, 2))
    res["channel_first"] = IU_.imresize(rgb.transpose(2, 0, 1), (4, 4), channel_first=True)
    res["single"] = IU_.imresize(grey[..., None], (2, 3))
    return res


@nnabla_case(names=[IU + "rescale_pixel_intensity", IU + "minmax_auto_scale"])
def image_scaling(nn, r):
    IU_ = r.module("nnabla.utils.image_utils")
    x = r.rand(3, 4) * 10 - 2
    ints = _rgb(r, 2, 3)
    return {"to uint8": IU_.rescale_pixel_intensity(x, -2, 8, 0, 255, np.uint8),
            "to float": IU_.rescale_pixel_intensity(ints, 0, 255, 0, 1, np.float32),
            "same type": IU_.rescale_pixel_intensity(x, -2, 8, -1, 1),
            "minmax8": IU_.minmax_auto_scale(x, False),
            "minmax16": IU_.minmax_auto_scale(x, True)}


@nnabla_case(names=[IU + "set_backend", IU + "get_backend", IU + "get_available_backends"],
             note="Stadyn also has OpenCV's backend (NNabla's here has Pillow only): the case "
                  "compares that Pillow's is available and chosen")
def image_backends(nn, r):
    IU_ = r.module("nnabla.utils.image_utils")
    available = IU_.get_available_backends()
    IU_.set_backend("PilBackend")
    chosen = IU_.get_backend()
    return {"pil available": "PilBackend" in available, "chosen": chosen}


# -- learning_rate_scheduler ----------------------------------------------------------------
LR = "nnabla.utils.learning_rate_scheduler."


@nnabla_case(names=[LR + "BaseLearningRateScheduler", LR + "PolynomialScheduler",
                    LR + "CosineScheduler", LR + "ExponentialScheduler", LR + "StepScheduler",
                    LR + "LinearWarmupScheduler"],
             note="rates at iterations before, at and past max_iter (an even power and the "
                  "cosine keep their formula past it)")
def learning_rate_schedulers(nn, r):
    LRm = r.module("nnabla.utils.learning_rate_scheduler")
    iters = [0, 1, 5, 9, 10, 11, 25, 99, 100, 130]
    made = {"polynomial": LRm.PolynomialScheduler(0.1, 100, 2.0),
            "polynomial half": LRm.PolynomialScheduler(0.1, 200, 0.5),
            "cosine": LRm.CosineScheduler(0.3, 100),
            "exponential": LRm.ExponentialScheduler(0.5, 0.9),
            "exponential 10": LRm.ExponentialScheduler(0.5, 0.9, iter_interval=10),
            "step": LRm.StepScheduler(1.0, 0.5, [10, 25, 100]),
            "warmup": LRm.LinearWarmupScheduler(LRm.CosineScheduler(0.2, 100), 10)}
    res = dict((k, [float(s.get_learning_rate(i)) for i in iters]) for k, s in made.items())
    res["bases"] = [isinstance(s, LRm.BaseLearningRateScheduler) for s in made.values()]
    try:
        LRm.BaseLearningRateScheduler().get_learning_rate(0)
        res["base raises"] = False
    except NotImplementedError:
        res["base raises"] = True
    return res

"""Peak memory and time of CNTK's ROI pooling (``stadyn.cntk_semantics.roi_pooling``, what
``C.roipooling`` and a loaded CNTK file's ``ROIPooling`` compute): one forward and backward of
``sum(roi_pooling(x, rois) * g)`` in dynamic mode, on a random ``(B, C, H, W)`` map with ``R``
random regions per image (Fast R-CNN's head: ``spatial_scale`` 1/16, regions of the image's
pixels from a few cells to the whole map).

Each shape runs in a fresh process (so the peak is its own): the peak is the growth of the
process's resident memory (``VmHWM`` of ``/proc/self/status``, reset before the call; Linux)
over what it held before; the time is the median of ``--repeat`` forward + backward passes (the
first, a warm-up, not counted).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/roi_pooling_memory.py \\
        [--shape B R C H W PH PW ...] [--repeat 3] [--dtype float32]

A shape is ``B,R,C,H,W,PH,PW`` (default ``1,64,256,38,38,7,7``).  Works on any checkout whose
``cntk_semantics`` has ``roi_pooling`` (``--before`` measurements ran it on 7f55448b).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        return int(re.search(field + r":\s+(\d+) kB", f.read()).group(1)) * 1024


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _regions(rng, b, r, h, w, scale):
    import numpy as np
    img_h, img_w = h / scale, w / scale
    x1 = rng.uniform(0, img_w * 0.8, (b, r))
    y1 = rng.uniform(0, img_h * 0.8, (b, r))
    x2 = np.minimum(x1 + rng.uniform(16, img_w, (b, r)), img_w - 1)
    y2 = np.minimum(y1 + rng.uniform(16, img_h, (b, r)), img_h - 1)
    return np.stack([x1, y1, x2, y2], -1).astype(np.float32)


def measure(shape, repeat: int, dtype: str) -> dict:
    import numpy as np
    import torch
    import stadyn as sd
    import stadyn.cntk_semantics as S
    b, r, c, h, w, ph, pw = shape
    scale = 1.0 / 16
    rng = np.random.RandomState(0)
    data = rng.randn(b, c, h, w).astype(dtype)
    rois = _regions(rng, b, r, h, w, scale)
    g = torch.from_numpy(rng.randn(b, r, c, ph, pw).astype(dtype))

    def step():
        with sd.auto_forward():
            x = sd.Variable.from_numpy_array(data, need_grad=True, dtype=data.dtype)
            y = S.roi_pooling(x, sd.Variable.from_numpy_array(rois), (ph, pw), scale)
            y.backward(g.numpy())
            return x.g.copy()

    # a small warm-up first: imports and first-call costs are not the op's memory
    tiny = (1, 2, c, h, w, ph, pw)
    if shape != tiny:
        measure_tiny = data[:1], rois[:1, :2]
        with sd.auto_forward():
            x = sd.Variable.from_numpy_array(measure_tiny[0], need_grad=True, dtype=data.dtype)
            S.roi_pooling(x, sd.Variable.from_numpy_array(measure_tiny[1]), (ph, pw),
                          scale).backward(1.0)
    base = _status("VmRSS")
    _reset_peak()
    start = time.perf_counter()
    step()
    first = time.perf_counter() - start
    peak = _status("VmHWM") - base
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {"shape": list(shape), "dtype": dtype, "peak_mb": round(peak / 2**20, 1),
            "first_s": round(first, 3),
            "median_s": round(statistics.median(times), 3) if times else None,
            "torch_threads": torch.get_num_threads()}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", nargs="+", default=["1,64,256,38,38,7,7"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(measure(tuple(int(s) for s in a.child.split(",")), a.repeat, a.dtype)))
        return
    for shape in a.shape:
        run = subprocess.run([sys.executable, __file__, "--child", shape, "--repeat",
                              str(a.repeat), "--dtype", a.dtype], capture_output=True,
                             text=True, env=dict(os.environ))
        if run.returncode != 0:
            print(json.dumps({"shape": shape, "failed": run.returncode,
                              "error": run.stderr.strip().splitlines()[-1:]}))
        else:
            print(run.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()

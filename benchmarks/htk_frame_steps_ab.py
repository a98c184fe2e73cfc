"""A/B of an HTK feature deserializer's frame-mode reads (``read_steps``): one ``pread`` per
frame (as at 186e5b73, copied here) against one per utterance of the minibatch (now), over
one sweep of a ``MinibatchSource`` in frame mode, file order and randomized, in one process.

    PYTHONPATH=src python benchmarks/htk_frame_steps_ab.py --utterances 100 --frames 1000

Features of 40 dimensions, context (2, 2); both give the same minibatches (checked).
"""

import argparse
import os
import tempfile
import time

import numpy as np

from stadyn.io import HTKFeatureDeserializer, MinibatchSource, StreamDef, StreamDefs
from stadyn.io._deserializer import StreamBatch
from stadyn.io._htk_deserializer import _OpenFiles
from stadyn.io._htk_file import decode_frames, write_htk_features


def _per_frame(self, ids, steps, rngs):
    out = {}
    if self._h_files is None:
        self._h_files = _OpenFiles()
    for k, s in enumerate(self._streams):
        rows = np.empty((len(ids), s.dim), dtype=np.float32)
        for j, (i, t) in enumerate(zip(np.asarray(ids).tolist(), np.asarray(steps).tolist())):
            e = self._rows[k][i]
            h = s.header_of(e)
            lo, hi = max(t - s.left, 0), min(t + s.right, e.frames - 1)
            count = hi - lo + 1
            data = os.pread(self._h_files.fd(e.path), count * h.frame_bytes,
                            h.data_offset + (e.first + lo) * h.frame_bytes)
            window = decode_frames(data, h, count)
            index = np.clip(np.arange(t - s.left, t + s.right + 1), lo, hi) - lo
            rows[j] = window[index].reshape(-1)
        out[s.name] = StreamBatch(rows)
    return out


def _sweep(scp, randomize, patched):
    d = HTKFeatureDeserializer(StreamDefs(x=StreamDef(shape=40, scp=scp, context=(2, 2))))
    src = MinibatchSource(d, max_sweeps=1, randomize=randomize, frame_mode=True)
    if patched:
        cls = type(src._composite.deserializers[0])
        saved = cls.read_steps
        cls.read_steps = _per_frame
    try:
        t = time.perf_counter()
        got = []
        while True:
            mb = src.next_minibatch(256)
            if not mb:
                break
            got.append(mb["x"].data.copy())
        return time.perf_counter() - t, np.concatenate(got)
    finally:
        if patched:
            cls.read_steps = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utterances", type=int, default=100)
    parser.add_argument("--frames", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.RandomState(0)
        lines = []
        for u in range(args.utterances):
            path = os.path.join(tmp, "u%d.htk" % u)
            write_htk_features(path, rng.rand(args.frames, 40).astype(np.float32))
            lines.append("u%d=%s[0,%d]\n" % (u, path, args.frames - 1))
        scp = os.path.join(tmp, "f.scp")
        with open(scp, "w") as f:
            f.writelines(lines)
        total = args.utterances * args.frames
        for randomize in (False, True):
            a_time, a = _sweep(scp, randomize, True)
            b_time, b = _sweep(scp, randomize, False)
            assert np.array_equal(a, b)
            print(f"{'randomized' if randomize else 'file order'}: {total} frames; per frame "
                  f"(186e5b73) {a_time:.2f} s ({total / a_time:,.0f} frames/s), per utterance "
                  f"(now) {b_time:.2f} s ({total / b_time:,.0f} frames/s), B/A "
                  f"{b_time / a_time:.2f}")


if __name__ == "__main__":
    main()

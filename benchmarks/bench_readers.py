"""Reader throughput: Stadyn's MinibatchSource against Pillow + torch DataLoader.

Both pipelines do the CNTK CIFAR-10 example's work on CIFAR-shaped 40x40 PNGs: decode, a
random 32x32 crop (side ratio 0.8) flipped with p = 0.5, scale to 32x32 (linear), subtract a
32x32 mean, and deliver float32 (N, 3, 32, 32) images with float32 one-hot labels, shuffled, in
minibatches.

    python benchmarks/bench_readers.py                 # 5,000 images, 64 a batch, 0/1/2 workers
    python benchmarks/bench_readers.py --images 20000 --workers 0 2

The images/s figure is steady state: the clock starts after the first minibatch (worker start-up
is printed apart) and runs for ``--sweeps`` sweeps.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import cv2  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from stadyn.io import (ImageDeserializer, MinibatchSource, StreamDef, StreamDefs,  # noqa: E402
                       write_mean_file)
from stadyn.io import transforms as xforms  # noqa: E402


def make_images(folder: str, count: int) -> tuple[str, str]:
    """CIFAR-like PNGs: smooth colour fields with texture, padded by 4 pixels of 128."""
    rng = np.random.default_rng(0)
    lines = []
    os.makedirs(os.path.join(folder, "train"), exist_ok=True)
    for i in range(count):
        coarse = rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)
        image = cv2.resize(coarse, (32, 32), interpolation=cv2.INTER_CUBIC)
        image = np.clip(image + rng.normal(0, 6, image.shape), 0, 255).astype(np.uint8)
        image = cv2.copyMakeBorder(image, 4, 4, 4, 4, cv2.BORDER_CONSTANT, value=(128, 128, 128))
        path = os.path.join(folder, "train", f"{i:05d}.png")
        cv2.imwrite(path, image)
        lines.append(f"{path}\t{i % 10}\n")
    map_file = os.path.join(folder, "train_map.txt")
    with open(map_file, "w") as f:
        f.writelines(lines)
    mean_file = os.path.join(folder, "mean.xml")
    write_mean_file(mean_file, np.full((32, 32, 3), 120.0, np.float32))
    return map_file, mean_file


# ------------------------------------------------------------------------------ Stadyn


def stadyn_batches(map_file: str, mean_file: str, batch: int, workers: int):
    source = MinibatchSource(ImageDeserializer(map_file, StreamDefs(
        features=StreamDef(field="image", transforms=[
            xforms.crop(crop_type="randomside", side_ratio=0.8, jitter_type="uniratio"),
            xforms.scale(width=32, height=32, channels=3, interpolations="linear"),
            xforms.mean(mean_file)]),
        labels=StreamDef(field="label", shape=10))), num_workers=workers)
    features, labels = source.streams.features, source.streams.labels
    try:
        while True:
            mb = source.next_minibatch(batch)
            yield mb[features].data, mb[labels].data
    finally:
        source.close()


# ----------------------------------------------------------------- Pillow + DataLoader


class PillowCifar(torch.utils.data.Dataset):
    """The same work with Pillow: decode, random crop + flip, resize, mean, CHW, one-hot."""

    def __init__(self, map_file: str, mean_file: str):
        with open(map_file) as f:
            rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
        self.paths = [r[0] for r in rows]
        self.labels = [int(r[1]) for r in rows]
        from stadyn.io import read_mean_file
        self.mean_rgb = read_mean_file(mean_file)[:, :, ::-1].copy()  # the mean file is BGR

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        image = Image.open(self.paths[i]).convert("RGB")
        side = round(min(image.size) * 0.8)
        x = np.random.randint(0, image.size[0] - side + 1)
        y = np.random.randint(0, image.size[1] - side + 1)
        image = image.crop((x, y, x + side, y + side))
        if np.random.rand() < 0.5:
            image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        image = image.resize((32, 32), Image.Resampling.BILINEAR)
        array = np.asarray(image, dtype=np.float32) - self.mean_rgb
        label = np.zeros(10, np.float32)
        label[self.labels[i]] = 1.0
        return torch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1))), label


def dataloader_batches(map_file: str, mean_file: str, batch: int, workers: int):
    loader = torch.utils.data.DataLoader(PillowCifar(map_file, mean_file), batch_size=batch,
                                         shuffle=True, num_workers=workers,
                                         persistent_workers=workers > 0)
    while True:
        for images, labels in loader:
            yield images, labels


# --------------------------------------------------------------------------- measuring


def measure(batches, images: int, sweeps: int, batch: int) -> tuple[float, float]:
    """(seconds to the first minibatch, images per second after it)."""
    start = time.perf_counter()
    first = next(batches)
    startup = time.perf_counter() - start
    assert tuple(first[0].shape[1:]) == (3, 32, 32) and tuple(first[1].shape[1:]) == (10,)
    target = images * sweeps
    seen = 0
    start = time.perf_counter()
    while seen < target:
        seen += len(next(batches)[0])
    rate = seen / (time.perf_counter() - start)
    batches.close()
    return startup, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--sweeps", type=int, default=2)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--repeat", type=int, default=3, help="runs per setting; the best counts")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        map_file, mean_file = make_images(folder, args.images)
        print(f"{args.images} 40x40 PNGs, batch {args.batch}, {args.sweeps} sweeps, "
              f"{os.cpu_count()} CPUs; best of {args.repeat}")
        print(f"{'workers':>7} | {'Stadyn img/s':>12} | {'DataLoader img/s':>16} | {'ratio':>5} | "
              f"first batch s, first run / later (Stadyn; DataLoader)")
        for workers in args.workers:
            ours, theirs = [], []
            for _ in range(args.repeat):  # interleaved, so that a busy moment hits both
                ours.append(measure(stadyn_batches(map_file, mean_file, args.batch, workers),
                                    args.images, args.sweeps, args.batch))
                theirs.append(measure(dataloader_batches(map_file, mean_file, args.batch,
                                                         workers),
                                      args.images, args.sweeps, args.batch))
            ours_rate = max(r for _, r in ours)
            theirs_rate = max(r for _, r in theirs)
            print(f"{workers:>7} | {ours_rate:>12,.0f} | {theirs_rate:>16,.0f} | "
                  f"{ours_rate / theirs_rate:>5.2f} | {ours[0][0]:.2f} / "
                  f"{min(s for s, _ in ours[1:] or ours):.2f}; {theirs[0][0]:.2f} / "
                  f"{min(s for s, _ in theirs[1:] or theirs):.2f}", flush=True)


if __name__ == "__main__":
    main()

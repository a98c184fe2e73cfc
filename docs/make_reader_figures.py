"""Draw the pictures of docs/readers.md: each image transform applied to one sample image.

    python docs/make_reader_figures.py          # writes docs/img/readers_*.png

The sample image is drawn here (no download); every picture is the output of Stadyn's own
transforms, converted back to 8-bit for display.
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

import cv2  # noqa: E402

from stadyn.io import SampleRandom, write_mean_file  # noqa: E402
from stadyn.io import transforms as T  # noqa: E402

CELL = 170  # pixels of one panel cell (the image is fitted inside, nearest-neighbour)
FONT = cv2.FONT_HERSHEY_SIMPLEX


def sample_image() -> np.ndarray:
    """A 120x160 BGR scene: sky gradient, sun, house, tree, grass, and an arrow pointing right
    (so flips show)."""
    h, w = 120, 160
    y = np.linspace(0, 1, h)[:, None]
    image = np.zeros((h, w, 3), np.uint8)
    image[...] = np.stack([235 - 60 * y, 190 - 40 * y, 120 + 0 * y], axis=-1).astype(np.uint8)
    image[85:] = (60, 150, 70)
    cv2.circle(image, (128, 26), 14, (60, 210, 250), -1)
    cv2.rectangle(image, (22, 55), (72, 95), (70, 90, 200), -1)
    cv2.fillPoly(image, [np.array([[16, 57], [47, 32], [78, 57]])], (40, 40, 140))
    cv2.rectangle(image, (41, 72), (53, 95), (40, 60, 90), -1)
    cv2.rectangle(image, (100, 62), (106, 95), (30, 60, 90), -1)
    cv2.circle(image, (103, 55), 13, (40, 120, 40), -1)
    cv2.arrowedLine(image, (85, 108), (150, 108), (255, 255, 255), 3, tipLength=0.35)
    return image


def to_uint8(image: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(image), 0, 255).astype(np.uint8)


def cell(image: np.ndarray, caption: str) -> np.ndarray:
    image = to_uint8(image)
    if image.shape[2] == 1:
        image = np.repeat(image, 3, axis=2)
    h, w = image.shape[:2]
    zoom = min((CELL - 10) / w, (CELL - 10) / h)
    size = (max(1, round(w * zoom)), max(1, round(h * zoom)))
    image = cv2.resize(image, size, interpolation=cv2.INTER_NEAREST)
    out = np.full((CELL + 34, CELL, 3), 255, np.uint8)
    top, left = (CELL - size[1]) // 2, (CELL - size[0]) // 2
    out[top:top + size[1], left:left + size[0]] = image
    for k, line in enumerate(caption.split("\n")):
        scale = 0.38
        (tw, _), _ = cv2.getTextSize(line, FONT, scale, 1)
        cv2.putText(out, line, ((CELL - tw) // 2, CELL + 12 + 14 * k), FONT, scale, (0, 0, 0), 1,
                    cv2.LINE_AA)
    return out


def panel(cells: list[np.ndarray], columns: int) -> np.ndarray:
    rows = []
    for start in range(0, len(cells), columns):
        row = cells[start:start + columns]
        row += [np.full_like(cells[0], 255)] * (columns - len(row))
        rows.append(np.hstack(row))
    return np.vstack(rows)


def save(name: str, image: np.ndarray) -> None:
    path = os.path.join(HERE, "img", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cv2.imwrite(path, image)
    print("wrote", os.path.relpath(path, os.path.join(HERE, "..")))


def main() -> None:
    img = sample_image()
    rng = [SampleRandom(7, 0, k) for k in range(12)]
    random_side = T.crop(crop_type="randomside", side_ratio=(0.5, 0.9), jitter_type="uniratio")
    crops = [cell(img, "original 160x120"),
             cell(T.crop(side_ratio=0.5)(img), "center\nside_ratio=0.5"),
             cell(T.crop(crop_size=(100, 40))(img), "center\ncrop_size=(100, 40)"),
             cell(T.crop(area_ratio=0.5)(img), "center\narea_ratio=0.5")]
    crops += [cell(random_side(img, rng[k]), f"randomside 0.5:0.9\nuniratio, draw {k + 1}")
              for k in range(4)]
    crops += [cell(T.crop(crop_type="randomarea", area_ratio=0.4, aspect_ratio=(0.5, 1.0),
                          jitter_type="uniratio")(img, rng[k]),
                   f"randomarea 0.4\naspect 0.5:1, draw {k + 1}") for k in range(4, 8)]
    save("readers_crop.png", panel(crops, 4))

    views = T.crop(crop_type="multiview10", side_ratio=0.6)
    save("readers_multiview10.png",
         panel([cell(views(img, rng[0], v), f"multiview10 view {v}") for v in range(10)], 5))

    small = img[20:44, 110:146]  # the sun, 36x24, scaled up 4x to show interpolation
    scales = [cell(small, "input 36x24 (detail)")]
    scales += [cell(T.scale(144, 96, 3, name)(small), f"scale 144x96\n{name}")
               for name in ("nearest", "linear", "cubic", "lanczos")]
    scales += [cell(T.scale(64, 64, 3)(img), "scale 64x64\nscale_mode=fill"),
               cell(T.scale(64, 64, 3, scale_mode="crop")(img), "scale 64x64\nscale_mode=crop"),
               cell(T.scale(64, 64, 3, scale_mode="pad", pad_value=0)(img),
                    "scale 64x64 pad\npad_value=0"),
               cell(T.scale(64, 64, 3, scale_mode="pad")(img), "scale 64x64 pad\nreplicate (-1)"),
               cell(T.scale(64, 48, 1)(img), "scale 64x48\nchannels=1")]
    save("readers_scale.png", panel(scales, 5))

    with tempfile.TemporaryDirectory() as folder:
        mean_file = os.path.join(folder, "mean.xml")
        mean_image = cv2.GaussianBlur(img, (0, 0), 12).astype(np.float32)
        write_mean_file(mean_file, mean_image)
        subtracted = T.mean(mean_file)(img)
        colours = [cell(img, "original"), cell(mean_image, "mean image\n(blurred original)"),
                   cell(subtracted + 128, "mean subtracted\n(shown + 128)")]
    colours += [cell(T.color(brightness_radius=0.5)(img, rng[k]), f"brightness 0.5\ndraw {k + 1}")
                for k in range(2)]
    colours += [cell(T.color(contrast_radius=0.6)(img, rng[k]), f"contrast 0.6\ndraw {k + 1}")
                for k in range(2, 4)]
    colours += [cell(T.color(saturation_radius=0.9)(img, rng[k]), f"saturation 0.9\ndraw {k + 1}")
                for k in range(4, 6)]
    colours += [cell(T.color(0.3, 0.3, 0.3)(img, rng[8]), "color(0.3, 0.3, 0.3)")]
    save("readers_mean_color.png", panel(colours, 5))


if __name__ == "__main__":
    main()

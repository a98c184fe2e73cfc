"""Image transforms with CNTK's names and semantics: crop, scale, mean, color.

A transform works on one (H, W, C) image in the decoder's BGR order, uint8 until an arithmetic
transform (mean, color) turns it into float32, exactly as CNTK 2.7 kept 8-bit images 8-bit
through crop and scale. Random choices come from the sample's own :class:`SampleRandom`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from ._cubic import resize_cubic_u8
from ._image import require_cv2
from ._mean_file import read_mean_file
from ._random import SampleRandom

__all__ = ["Transform", "Crop", "Scale", "Mean", "Color", "crop", "scale", "mean", "color",
           "from_config", "pipeline_output_shape", "pipeline_channels"]

Range = tuple[float, float]


def _as_range(value: Any, name: str, low_open: float, high: float, allow_zero: bool) -> Range:
    """A number, a (min, max) pair or a 'min:max' string -> (min, max), validated: in
    ``(low_open, high]`` (``high`` inf: any ``min > low_open``) with ``min <= max``."""
    if isinstance(value, str):
        parts = value.split(":")
        try:
            numbers = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"{name} must be a number or 'min:max', got {value!r}") from None
    elif isinstance(value, (int, float, np.number)):
        numbers = [float(value)]
    else:
        numbers = [float(v) for v in value]
    if len(numbers) == 1:
        numbers *= 2
    if len(numbers) != 2:
        raise ValueError(f"{name} must be one number or a (min, max) pair, got {value!r}")
    lo, hi = numbers
    if allow_zero and lo == 0.0 and hi == 0.0:
        return (0.0, 0.0)
    if not (low_open < lo <= hi <= high):
        where = f"> {low_open:g}" if math.isinf(high) else f"in ({low_open:g}, {high:g}]"
        raise ValueError(f"invalid {name} {value!r}: must be {where} with min <= max")
    return (lo, hi)


def _round(x: float) -> int:
    """std::round for non-negative values: halves go up (Python's round goes to even)."""
    return int(math.floor(x + 0.5))


def _as_hwc(image: np.ndarray) -> np.ndarray:
    return image[:, :, None] if image.ndim == 2 else image


class Transform:
    """Base class of image transforms: :meth:`apply` maps one (H, W, C) image to another."""

    #: the transform keeps the image size (mean, color)
    keeps_size = True

    def apply(self, image: np.ndarray, rng: SampleRandom, view: int = 0) -> np.ndarray:
        raise NotImplementedError

    def output_shape(self, shape: tuple[int, int, int] | None) -> tuple[int, int, int] | None:
        """(H, W, C) after this transform, or None when it varies from sample to sample."""
        return shape if self.keeps_size else None

    def __call__(self, image: np.ndarray, rng: SampleRandom | None = None,
                 view: int = 0) -> np.ndarray:
        return self.apply(np.asarray(image), rng or SampleRandom(0, 0, 0), view)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


_CROP_TYPES = {"center": "center", "randomside": "randomside", "random": "randomside",
               "randomarea": "randomarea", "multiview10": "multiview10"}


class Crop(Transform):
    """CNTK's crop transform; see :func:`crop`."""

    keeps_size = False

    def __init__(self, crop_type: str = "center", crop_size: int | Sequence[int] | str = 0,
                 side_ratio: float | Range | str = 0.0, area_ratio: float | Range | str = 0.0,
                 aspect_ratio: float | Range | str = 1.0, jitter_type: str = "none",
                 hflip: bool | None = None):
        kind = _CROP_TYPES.get(str(crop_type).lower())
        if kind is None:
            raise ValueError(f"invalid crop_type {crop_type!r}: use 'center', 'randomside', "
                             f"'randomarea' or 'multiview10'")
        self.crop_type = kind
        self.crop_size = self._parse_size(crop_size)
        self.side_ratio = _as_range(side_ratio, "side_ratio", 0.0, 1.0, allow_zero=True)
        self.area_ratio = _as_range(area_ratio, "area_ratio", 0.0, 1.0, allow_zero=True)
        # any 0 < min <= max, as cntk.exe's CropTransformer (ImageTransformers.cpp:88-93) and
        # CNTK 2.7's crop(aspect_ratio=...): a ratio a > 1 gives the windows 1 / a gives
        self.aspect_ratio = _as_range(aspect_ratio, "aspect_ratio", 0.0, math.inf,
                                      allow_zero=False)
        if self.side_ratio[1] > 0 and self.area_ratio[1] > 0:
            raise ValueError("side_ratio and area_ratio cannot both be given")
        jitter = str(jitter_type).lower()
        if jitter not in ("none", "uniratio"):
            raise ValueError(f"invalid jitter_type {jitter_type!r}: use 'none' or 'uniratio'")
        self.jitter_type = jitter
        no_size = self.crop_size == (0, 0)
        if kind == "randomside" and no_size and self.side_ratio[1] == 0:
            raise ValueError("crop_type='randomside' needs side_ratio (or crop_size)")
        if kind == "randomarea" and no_size and self.area_ratio[1] == 0:
            raise ValueError("crop_type='randomarea' needs area_ratio (or crop_size)")
        if hflip is None:
            hflip = kind in ("randomside", "randomarea")
        self.hflip = bool(hflip) and kind != "multiview10"

    @staticmethod
    def _parse_size(size: int | Sequence[int] | str) -> tuple[int, int]:
        if isinstance(size, str):
            parts = [int(p) for p in size.split(":")]
        elif isinstance(size, (int, np.integer)):
            parts = [int(size)]
        else:
            parts = [int(p) for p in size]
        if len(parts) == 1:
            parts *= 2
        if len(parts) != 2 or min(parts) < 0:
            raise ValueError(f"crop_size must be >= 0 or a (width, height) pair, got {size!r}")
        return (parts[0], parts[1])

    def _jitter(self, bounds: Range, rng: SampleRandom) -> float:
        lo, hi = bounds
        if self.jitter_type == "none" or lo == hi:
            return lo
        return rng.uniform(lo, hi)

    def crop_window(self, height: int, width: int, rng: SampleRandom) -> tuple[int, int]:
        """(crop width, crop height) for an image of this size, CNTK's rules."""
        cw, ch = self.crop_size
        if cw > 0 and ch > 0:
            return min(width, cw), min(height, ch)
        for _ in range(10):
            cw, ch = width, height
            if self.side_ratio[1] > 0:
                cw = ch = _round(min(height, width) * self._jitter(self.side_ratio, rng))
            elif self.area_ratio[1] > 0:
                cw = ch = _round(math.sqrt(height * width * self._jitter(self.area_ratio, rng)))
            aspect = self._jitter(self.aspect_ratio, rng)
            if aspect != 1.0:
                area = cw * ch
                # ImageTransformers.cpp:232-244: the first way round x = sqrt(area * a)
                times, over = int(math.sqrt(area * aspect)), int(math.sqrt(area / aspect))
                cw, ch = (times, over) if rng.bernoulli() else (over, times)
            cw, ch = max(cw, 1), max(ch, 1)
            if cw <= width and ch <= height:
                return cw, ch
        return width, height

    def crop_rect(self, height: int, width: int, rng: SampleRandom,
                  view: int = 0) -> tuple[int, int, int, int]:
        """(x, y, crop width, crop height) of the window this sample takes."""
        cw, ch = self.crop_window(height, width, rng)
        if self.crop_type == "center":
            return (width - cw) // 2, (height - ch) // 2, cw, ch
        if self.crop_type == "multiview10":
            corner = view % 5
            x = {0: 0, 1: width - cw, 2: 0, 3: width - cw, 4: (width - cw) // 2}[corner]
            y = {0: 0, 1: 0, 2: height - ch, 3: height - ch, 4: (height - ch) // 2}[corner]
            return x, y, cw, ch
        return rng.integers(0, width - cw), rng.integers(0, height - ch), cw, ch

    def apply(self, image: np.ndarray, rng: SampleRandom, view: int = 0) -> np.ndarray:
        height, width = image.shape[:2]
        x, y, cw, ch = self.crop_rect(height, width, rng, view)
        out = image[y:y + ch, x:x + cw]
        flip = (self.hflip and rng.bernoulli()) or (self.crop_type == "multiview10"
                                                     and view % 10 >= 5)
        if flip:
            out = _as_hwc(require_cv2().flip(out, 1))
        return out

    def output_shape(self, shape):
        if shape is not None and self.crop_size[0] > 0 and self.crop_size[1] > 0:
            return min(shape[0], self.crop_size[1]), min(shape[1], self.crop_size[0]), shape[2]
        return None


_INTERPOLATIONS = ("nearest", "linear", "cubic", "lanczos")


class Scale(Transform):
    """CNTK's scale transform; see :func:`scale`."""

    keeps_size = False

    def __init__(self, width: int, height: int, channels: int = 3,
                 interpolations: str = "linear", scale_mode: str = "fill", pad_value: int = -1):
        self.width, self.height, self.channels = int(width), int(height), int(channels)
        if min(self.width, self.height) <= 0 or self.channels not in (1, 3):
            raise ValueError(f"invalid scale size {width}x{height}x{channels}: width and height "
                             f"must be positive, channels 1 or 3")
        names = [s.strip().lower() for s in str(interpolations).split(":") if s.strip()]
        bad = [n for n in names if n not in _INTERPOLATIONS]
        if bad or not names:
            raise ValueError(f"invalid interpolations {interpolations!r}: use "
                             f"{', '.join(_INTERPOLATIONS)} (several separated by ':')")
        self.interpolations = ":".join(names)
        mode = str(scale_mode).lower()
        if mode not in ("fill", "crop", "pad"):
            raise ValueError(f"invalid scale_mode {scale_mode!r}: use 'fill', 'crop' or 'pad'")
        self.scale_mode = mode
        if pad_value != -1 and pad_value < 0:
            raise ValueError("pad_value must be -1 (replicate the border) or >= 0")
        self.pad_value = pad_value
        cv = require_cv2()
        flags = {"nearest": cv.INTER_NEAREST, "linear": cv.INTER_LINEAR,
                 "cubic": cv.INTER_CUBIC, "lanczos": cv.INTER_LANCZOS4}
        self._flags = [flags[n] for n in names]

    def _resize(self, image: np.ndarray, width: int, height: int, flag: int) -> np.ndarray:
        if image.shape[0] == height and image.shape[1] == width:
            return image
        cv = require_cv2()
        if flag == cv.INTER_CUBIC and image.dtype == np.uint8:
            return resize_cubic_u8(_as_hwc(image), width, height)     # CNTK's rounding
        return _as_hwc(cv.resize(image, (width, height), interpolation=flag))

    def _convert_channels(self, image: np.ndarray) -> np.ndarray:
        cv = require_cv2()
        if image.shape[2] == self.channels:
            return image
        if self.channels == 1:
            return _as_hwc(cv.cvtColor(image, cv.COLOR_BGR2GRAY))
        return cv.cvtColor(image, cv.COLOR_GRAY2BGR)

    def apply(self, image: np.ndarray, rng: SampleRandom, view: int = 0) -> np.ndarray:
        return self._apply(self._convert_channels(image), rng)

    def apply_as_cntk(self, image: np.ndarray, rng: SampleRandom, view: int = 0) -> np.ndarray:
        """What CNTK 2.7's image reader gives: it decodes every image in colour and its scale
        does not convert channels, so ``channels=1`` yields the first ``height * width``
        values of the scaled colour image's interleaved (B, G, R) buffer."""
        out = self._apply(image, rng)
        if self.channels == 1 and out.shape[2] == 3:
            out = np.ascontiguousarray(out).reshape(-1)[:self.height * self.width]
            out = out.reshape(self.height, self.width, 1)
        return out

    def _apply(self, image: np.ndarray, rng: SampleRandom) -> np.ndarray:
        flag = self._flags[0] if len(self._flags) == 1 else \
            self._flags[rng.integers(0, len(self._flags) - 1)]
        if self.scale_mode == "fill":
            return self._resize(image, self.width, self.height, flag)
        height, width = image.shape[:2]
        scale_width = width < height if self.scale_mode == "crop" else width > height
        if scale_width:
            tw, th = self.width, _round(height * self.width / width)
        else:
            tw, th = _round(width * self.height / height), self.height
        image = self._resize(image, max(tw, 1), max(th, 1), flag)
        if self.scale_mode == "crop":
            x, y = max(0, (tw - self.width) // 2), max(0, (th - self.height) // 2)
            return image[y:y + self.height, x:x + self.width]
        top, left = max(0, (self.height - th) // 2), max(0, (self.width - tw) // 2)
        bottom, right = self.height - top - th, self.width - left - tw
        cv = require_cv2()
        if self.pad_value == -1:
            out = cv.copyMakeBorder(image, top, bottom, left, right, cv.BORDER_REPLICATE)
        else:
            out = cv.copyMakeBorder(image, top, bottom, left, right, cv.BORDER_CONSTANT,
                                    value=(self.pad_value,) * 4)
        return _as_hwc(out)

    def output_shape(self, shape):
        return (self.height, self.width, self.channels)


class Mean(Transform):
    """CNTK's mean transform; see :func:`mean`."""

    def __init__(self, filename: str):
        self.filename = str(filename)
        self.mean = read_mean_file(filename)
        self._warned = False

    def matches(self, shape: tuple[int, ...]) -> bool:
        """Whether an (H, W, C) image of this shape gets the mean subtracted."""
        if tuple(shape) == self.mean.shape:
            return True
        if not self._warned:
            self._warned = True
            h, w, c = self.mean.shape
            warnings.warn(f"mean file {self.filename!r} is {w}x{h}x{c} but images are "
                          f"{shape[1]}x{shape[0]}x{shape[2]}; the mean is not subtracted "
                          f"(as CNTK did)", stacklevel=3)
        return False

    def apply(self, image: np.ndarray, rng: SampleRandom, view: int = 0) -> np.ndarray:
        if not self.matches(image.shape):
            return image
        return image.astype(np.float32) - self.mean

    def __repr__(self) -> str:
        return f"Mean({self.filename!r})"


class Color(Transform):
    """CNTK's color transform; see :func:`color`."""

    def __init__(self, brightness_radius: float = 0.0, contrast_radius: float = 0.0,
                 saturation_radius: float = 0.0):
        for name, value in (("brightness_radius", brightness_radius),
                            ("contrast_radius", contrast_radius),
                            ("saturation_radius", saturation_radius)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        self.brightness_radius = float(brightness_radius)
        self.contrast_radius = float(contrast_radius)
        self.saturation_radius = float(saturation_radius)

    def apply(self, image: np.ndarray, rng: SampleRandom, view: int = 0) -> np.ndarray:
        b, c, s = self.brightness_radius, self.contrast_radius, self.saturation_radius
        if b == 0 and c == 0 and s == 0:
            return image
        image = image.astype(np.float32)
        if b > 0 or c > 0:
            beta = rng.uniform(-b, b) * float(image.mean()) if b > 0 else 0.0
            alpha = 1.0 + rng.uniform(-c, c) if c > 0 else 1.0
            image = np.clip(image * np.float32(alpha) + np.float32(beta), 0, 255)
        if s > 0 and image.shape[2] == 3:
            ratio = 1.0 + rng.uniform(-s, s)
            cv = require_cv2()
            hsv = cv.cvtColor(image, cv.COLOR_BGR2HSV)
            hsv[:, :, 1] = np.minimum(hsv[:, :, 1] * np.float32(ratio), 1.0)
            image = cv.cvtColor(hsv, cv.COLOR_HSV2BGR)
        return image


def crop(crop_type: str = "center", crop_size: int | Sequence[int] | str = 0,
         side_ratio: float | Range | str = 0.0, area_ratio: float | Range | str = 0.0,
         aspect_ratio: float | Range | str = 1.0, jitter_type: str = "none", *,
         ratio: float | Range | str | None = None, hflip: bool | None = None) -> Crop:
    """Crop transform (``cntk.io.transforms.crop``).

    Args:
        crop_type: 'center', 'randomside', 'randomarea' or 'multiview10' (any case; the 2017
            beta's 'Random' is 'randomside').
        crop_size: window in pixels, an int or (width, height); when given, the ratios are ignored.
        side_ratio: window side = round(min(H, W) * r), a square; r in (0, 1], a number or a
            (min, max) range.
        area_ratio: window side = round(sqrt(H * W * r)); exclusive with ``side_ratio``.
        aspect_ratio: > 0, a number or a (min, max) range (usually in (0, 1]; 4/3 deforms as
            3/4 does, as in CNTK 2.7); the window keeps its area and becomes
            ``int(sqrt(area * a))`` by ``int(sqrt(area / a))`` (w x h) or ``h x w``, each with
            probability 0.5.
        jitter_type: 'none' takes the minimum of each range, 'uniratio' draws uniformly.
        ratio: the 2017-beta name of ``side_ratio``.
        hflip: flip horizontally with p = 0.5; by default on for the random crops.

    Centre crops take ``x = (W - w) // 2``, ``y = (H - h) // 2``; random crops draw x and y
    uniformly; 'multiview10' takes the 4 corners and the centre for views 0-4 and the same
    flipped for views 5-9 (the deserializer then yields each image 10 times).

    Example:
        >>> img = np.arange(6 * 8, dtype=np.uint8).reshape(6, 8, 1)   # H=6, W=8
        >>> crop(side_ratio=0.5)(img)[:, :, 0].tolist()               # 3x3 at x=2, y=1
        [[10, 11, 12], [18, 19, 20], [26, 27, 28]]
        >>> crop(crop_type='Random', ratio=0.8, jitter_type='uniRatio').crop_type
        'randomside'
    """
    if ratio is not None:
        side_ratio = ratio
    return Crop(crop_type, crop_size, side_ratio, area_ratio, aspect_ratio, jitter_type, hflip)


def scale(width: int, height: int, channels: int = 3, interpolations: str = "linear",
          scale_mode: str = "fill", pad_value: int = -1) -> Scale:
    """Scale transform (``cntk.io.transforms.scale``), resampling with OpenCV as CNTK did.

    Args:
        width, height: output size in pixels.
        channels: 1 (grayscale) or 3 (BGR); the image is converted when it differs.
        interpolations: 'nearest' (source pixel floor(x * ratio)), 'linear' (at half-pixel
            centres), 'cubic' or 'lanczos'; several separated by ':' pick one at random.
        scale_mode: 'fill' warps to width x height; 'crop' scales the shorter side and cuts the
            centre; 'pad' scales the longer side and pads the rest.
        pad_value: the pad value of 'pad' mode; -1 replicates the border.

    Example:
        >>> ramp = np.array([[0, 20, 40, 60, 80, 100]], np.uint8)[:, :, None]
        >>> scale(4, 1, 1)(ramp)[0, :, 0].tolist()
        [5, 35, 65, 95]
        >>> scale(4, 1, 1, 'nearest')(ramp)[0, :, 0].tolist()
        [0, 20, 60, 80]
    """
    return Scale(width, height, channels, interpolations, scale_mode, pad_value)


def mean(filename: str) -> Mean:
    """Mean transform (``cntk.io.transforms.mean``): subtract an OpenCV XML mean image.

    The file is read as H x W x C interleaved BGR (:func:`stadyn.io.read_mean_file`). The mean is
    subtracted, without clipping, only from images of exactly its size; others pass unchanged
    with one warning. The result is float32.
    """
    return Mean(filename)


def color(brightness_radius: float = 0.0, contrast_radius: float = 0.0,
          saturation_radius: float = 0.0) -> Color:
    """Color transform (``cntk.io.transforms.color``); each radius is in [0, 1].

    With ``xb, xc, xs`` drawn uniformly from ``[-r, r]``: every value becomes
    ``clip((1 + xc) * p + xb * mean(image), 0, 255)``, then (3 channels) the HSV saturation is
    multiplied by ``1 + xs`` and capped at 1.

    Example:
        >>> out = color(contrast_radius=0.5)(np.full((2, 2, 3), 100, np.uint8))
        >>> out.dtype, bool(50 <= out[0, 0, 0] <= 150)
        (dtype('float32'), True)
    """
    return Color(brightness_radius, contrast_radius, saturation_radius)


_CONFIG_KEYS = {
    "crop": {"croptype": "crop_type", "cropsize": "crop_size", "sideratio": "side_ratio",
             "arearatio": "area_ratio", "aspectratio": "aspect_ratio", "jittertype": "jitter_type",
             "cropratio": "side_ratio", "hflip": "hflip"},
    "scale": {"width": "width", "height": "height", "channels": "channels",
              "interpolations": "interpolations", "scalemode": "scale_mode",
              "padvalue": "pad_value"},
    "mean": {"meanfile": "filename"},
    "color": {"brightnessradius": "brightness_radius", "contrastradius": "contrast_radius",
              "saturationradius": "saturation_radius"},
}


def from_config(config: Mapping[str, Any]) -> Transform | None:
    """A transform from a BrainScript-style record such as ``{type="Crop"; cropType="RandomSide";
    sideRatio=0.8; jitterType="UniRatio"}``; ``{type="Transpose"}`` gives None (Stadyn always
    delivers C, H, W). Keys are case-insensitive.

    Example:
        >>> from_config({'type': 'Crop', 'cropType': 'RandomSide', 'sideRatio': 0.8}).side_ratio
        (0.8, 0.8)
    """
    items = {str(k).lower(): v for k, v in config.items()}
    kind = str(items.pop("type", "")).lower()
    if kind in ("transpose", "cast"):
        return None
    if kind not in _CONFIG_KEYS:
        raise ValueError(f"unknown transform type {kind!r}: use Crop, Scale, Mean, Color or "
                         f"Transpose")
    names = _CONFIG_KEYS[kind]
    unknown = sorted(set(items) - set(names))
    if unknown:
        raise ValueError(f"{kind} transform: unknown keys {unknown}")
    kwargs = {names[k]: v for k, v in items.items()}
    return {"crop": Crop, "scale": Scale, "mean": Mean, "color": Color}[kind](**kwargs)


def pipeline_output_shape(transforms: Sequence[Transform]) -> tuple[int, int, int] | None:
    """(H, W, C) of every output image, when the transforms fix it (a scale, then no crop)."""
    shape: tuple[int, int, int] | None = None
    for t in transforms:
        shape = t.output_shape(shape)
    return shape


def pipeline_channels(transforms: Sequence[Transform]) -> int:
    """Channels to decode: those of the first scale transform, else 3."""
    for t in transforms:
        if isinstance(t, Scale):
            return t.channels
    return 3

"""Image transforms against values worked out by hand (and by independent formulas)."""

from __future__ import annotations

import colorsys
import math
import warnings

import numpy as np
import pytest

from stadyn.io import SampleRandom, read_mean_file, write_mean_file
from stadyn.io import transforms as T


def grid(h: int, w: int) -> np.ndarray:
    """(H, W, 1) uint8 whose pixel (y, x) holds 10 * y + x."""
    return (10 * np.arange(h)[:, None] + np.arange(w)[None, :]).astype(np.uint8)[:, :, None]


def window(image: np.ndarray, x: int, y: int, w: int, h: int) -> np.ndarray:
    return image[y:y + h, x:x + w]


# ------------------------------------------------------------------------------------- crop


def test_center_crop_side_ratio_probed_on_8x6():
    out = T.crop(crop_type="center", side_ratio=0.5)(grid(6, 8))
    # min(8, 6) * 0.5 = 3: the 3x3 square at x = (8 - 3) // 2 = 2, y = (6 - 3) // 2 = 1
    assert out[:, :, 0].tolist() == [[12, 13, 14], [22, 23, 24], [32, 33, 34]]


def test_center_crop_size_and_area():
    img = grid(6, 8)
    assert np.array_equal(T.crop(crop_size=(5, 3))(img), window(img, 1, 1, 5, 3))
    assert np.array_equal(T.crop(crop_size=4)(img), window(img, 2, 1, 4, 4))
    # area 48 * 0.75 = 36 -> a 6x6 square at x = 1, y = 0
    assert np.array_equal(T.crop(area_ratio=0.75)(img), window(img, 1, 0, 6, 6))
    # no ratio and no size: the whole image
    assert np.array_equal(T.crop()(img), img)


def test_crop_rounds_halves_up_like_std_round():
    img = grid(5, 7)
    assert T.crop(side_ratio=0.5)(img).shape[:2] == (3, 3)  # 2.5 -> 3, not banker's 2
    assert T.crop(side_ratio=0.3)(img).shape[:2] == (2, 2)  # 1.5 -> 2


def _locate(img: np.ndarray, out: np.ndarray) -> tuple[int, int, bool]:
    """(x, y, flipped) of the window ``out`` of ``img``."""
    h, w = out.shape[:2]
    for y in range(img.shape[0] - h + 1):
        for x in range(img.shape[1] - w + 1):
            win = window(img, x, y, w, h)
            if np.array_equal(win, out):
                return x, y, False
            if np.array_equal(win[:, ::-1], out):
                return x, y, True
    raise AssertionError("output is not a window of the input")


def test_randomside_crop_positions_and_flips():
    img = grid(8, 10)
    crop = T.crop(crop_type="randomside", side_ratio=0.5)
    seen, flips = set(), 0
    for k in range(400):
        out = crop(img, SampleRandom(5, 0, k))
        assert out.shape == (4, 4, 1)
        x, y, flipped = _locate(img, out)
        seen.add((x, y))
        flips += flipped
    assert seen == {(x, y) for x in range(7) for y in range(5)}  # every position occurs
    assert 140 < flips < 260  # p = 0.5


def test_uniratio_jitter_draws_within_the_range_and_none_takes_the_minimum():
    img = grid(20, 20)
    jitter = T.crop(crop_type="randomside", side_ratio=(0.5, 0.9), jitter_type="uniratio")
    sizes = {jitter(img, SampleRandom(0, 0, k)).shape[0] for k in range(300)}
    assert sizes == set(range(10, 19)) | {18}
    fixed = T.crop(crop_type="randomside", side_ratio="0.5:0.9", jitter_type="none")
    assert {fixed(img, SampleRandom(0, 0, k)).shape[0] for k in range(50)} == {10}


def test_beta_form_of_random_crop():
    beta = T.crop(crop_type="Random", ratio=0.8, jitter_type="uniRatio")
    assert (beta.crop_type, beta.side_ratio, beta.jitter_type, beta.hflip) == \
        ("randomside", (0.8, 0.8), "uniratio", True)
    img = np.zeros((40, 40, 3), np.uint8)
    assert {beta(img, SampleRandom(0, 0, k)).shape for k in range(20)} == {(32, 32, 3)}


def test_aspect_ratio_keeps_area_and_picks_an_orientation():
    img = grid(20, 20)
    crop = T.crop(crop_type="randomside", side_ratio=0.5, aspect_ratio=0.64)
    # 10x10 has area 100: long side int(sqrt(100 / 0.64)) = 12, short int(sqrt(64)) = 8
    shapes = {crop(img, SampleRandom(1, 0, k)).shape[:2] for k in range(100)}
    assert shapes == {(8, 12), (12, 8)}


def test_randomarea_crop():
    img = grid(10, 16)
    out = T.crop(crop_type="randomarea", area_ratio=0.25)(img, SampleRandom(0, 0, 0))
    assert out.shape[:2] == (6, 6)  # round(sqrt(160 * 0.25)) = round(6.32) = 6
    _locate(img, out)


def test_multiview10_corners_centre_and_flips():
    img = grid(6, 8)
    crop = T.crop(crop_type="multiview10", side_ratio=0.5)
    corners = [(0, 0), (5, 0), (0, 3), (5, 3), (2, 1)]
    for view in range(10):
        x, y = corners[view % 5]
        expected = window(img, x, y, 3, 3)
        if view >= 5:
            expected = expected[:, ::-1]
        assert np.array_equal(crop(img, SampleRandom(0, 0, view), view), expected), view


@pytest.mark.parametrize("kwargs", [
    dict(side_ratio=0.5, area_ratio=0.5), dict(side_ratio=1.5), dict(side_ratio=(0.9, 0.5)),
    dict(crop_type="zoom"), dict(jitter_type="unilength"), dict(aspect_ratio=0.0),
    dict(aspect_ratio=-1.0), dict(aspect_ratio=(1.5, 1.2)),
    dict(crop_type="randomside"), dict(crop_type="randomarea", side_ratio=0.5),
])
def test_invalid_crop_arguments(kwargs):
    with pytest.raises(ValueError):
        T.crop(**kwargs)


@pytest.mark.parametrize("aspect", [1.5, (0.75, 1.3333), "0.75:1.3333", 4.0])
def test_an_aspect_ratio_above_one_is_taken_as_cntk_takes_it(aspect):
    # cntk.exe's CropTransformer takes any 0 < min <= max (ImageTransformers.cpp:88-93) and
    # CNTK 2.7's crop(aspect_ratio=...) too (its ImageDeserializer refuses 0 and min > max
    # only): the ImageNet ResNet configs' aspectRatio = 0.75:1.3333.  The window keeps its
    # area: x = int(sqrt(area * a)), y = int(sqrt(area / a)) or the other way round (:232-244);
    # until rmA37 "invalid aspect_ratio ...: must be in (0, 1]"
    crop = T.crop(crop_type="randomside", side_ratio=0.5, aspect_ratio=aspect,
                  jitter_type="uniratio")
    lo, hi = crop.aspect_ratio
    assert hi > 1 and lo > 0
    seen = set()
    for position in range(40):
        w, h = crop.crop_window(100, 100, SampleRandom(3, 0, position))
        a = w / h if w > h else h / w            # 50 x 50 = 2500 kept, ratio within the range
        assert 2500 * 0.9 < w * h <= 2500 and 1 <= a <= max(hi, 1 / lo) * 1.05, (w, h)
        seen.add(w > h)
    assert seen == {True, False}
    # a fixed 4/3 gives the windows 3/4 gives: int(sqrt(2500 * 4/3)) = 57, int(sqrt(1875)) = 43
    fixed = {T.crop(side_ratio=0.5, aspect_ratio=a).crop_window(100, 100, SampleRandom(1, 0, p))
             for a in (4 / 3, 0.75) for p in range(20)}
    assert fixed == {(57, 43), (43, 57)}
    # the BrainScript key (a reader's Crop transform)
    made = T.from_config({"type": "Crop", "cropType": "RandomSide", "sideRatio": "0.08:1",
                          "aspectRatio": "0.75:1.3333", "jitterType": "UniRatio"})
    assert made.aspect_ratio == (0.75, 1.3333)


# ------------------------------------------------------------------------------------ scale

RAMP = np.array([[0, 20, 40, 60, 80, 100]], np.uint8)[:, :, None]


def test_linear_scale_samples_at_half_pixel_centres():
    # output x samples source (x + 0.5) * 1.5 - 0.5 = 0.25, 1.75, 3.25, 4.75
    assert T.scale(4, 1, 1)(RAMP)[0, :, 0].tolist() == [5, 35, 65, 95]
    assert T.scale(4, 1, 1)(RAMP.astype(np.float32))[0, :, 0].tolist() == [5, 35, 65, 95]


def test_nearest_scale_takes_floor_of_x_times_ratio():
    assert T.scale(4, 1, 1, "nearest")(RAMP)[0, :, 0].tolist() == [0, 20, 60, 80]
    up = np.array([[10, 20, 30]], np.uint8)[:, :, None]
    # ratio 3/5: floor(0), floor(0.6), floor(1.2), floor(1.8), floor(2.4)
    assert T.scale(5, 1, 1, "nearest")(up)[0, :, 0].tolist() == [10, 10, 20, 20, 30]


def _resample_reference(row: np.ndarray, out_width: int, taps: range, weight) -> np.ndarray:
    """Separable resampling at half-pixel centres, borders replicated, weights normalized."""
    ratio = len(row) / out_width
    out = []
    for x in range(out_width):
        sx = (x + 0.5) * ratio - 0.5
        ix = math.floor(sx)
        ws = [weight(sx - (ix + k)) for k in taps]
        vs = [row[min(max(ix + k, 0), len(row) - 1)] for k in taps]
        out.append(sum(w * v for w, v in zip(ws, vs)) / sum(ws))
    return np.array(out)


def _cubic(t: float, a: float = -0.75) -> float:
    t = abs(t)
    if t <= 1:
        return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
    if t < 2:
        return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a
    return 0.0


def _lanczos4(t: float) -> float:
    if t == 0:
        return 1.0
    return math.sin(math.pi * t) * math.sin(math.pi * t / 4) / (math.pi ** 2 * t ** 2 / 4)


@pytest.mark.parametrize("name,taps,kernel", [("cubic", range(-1, 3), _cubic),
                                               ("lanczos", range(-3, 5), _lanczos4)])
def test_cubic_and_lanczos_scale_match_their_kernels(name, taps, kernel):
    row = np.array([0, 20, 40, 60, 80, 100, 30, 10], np.float32)
    for width in (5, 3, 11):
        got = T.scale(width, 1, 1, name)(row[None, :, None])[0, :, 0]
        want = _resample_reference(row.tolist(), width, taps, kernel)
        np.testing.assert_allclose(got, want, atol=2e-3)
    # 8-bit images stay 8-bit: the same values, rounded
    got8 = T.scale(4, 1, 1, name)(RAMP)[0, :, 0]
    want8 = _resample_reference(RAMP[0, :, 0].astype(float).tolist(), 4, taps, kernel)
    assert got8.dtype == np.uint8 and np.abs(got8 - np.clip(want8, 0, 255)).max() <= 0.51


def test_scale_modes_crop_and_pad():
    img = grid(4, 8)  # H=4, W=8
    # crop: the shorter side (H) becomes 4, the width round(8 * 4 / 4) = 8, centre 4 columns
    assert np.array_equal(T.scale(4, 4, 1, scale_mode="crop")(img), window(img, 2, 0, 4, 4))
    # pad: the longer side (W) becomes 4, the height round(4 * 4 / 8) = 2, padded 1 row each side
    out = T.scale(4, 4, 1, "nearest", scale_mode="pad", pad_value=0)(img)
    assert out.shape == (4, 4, 1)
    assert out[0].sum() == 0 and out[3].sum() == 0
    assert out[1:3, :, 0].tolist() == [[0, 2, 4, 6], [20, 22, 24, 26]]  # nearest, rows 0 and 2
    replicated = T.scale(4, 4, 1, "nearest", scale_mode="pad")(img)
    assert replicated[0].tolist() == replicated[1].tolist()


def test_scale_converts_channels():
    gray = np.full((2, 2, 1), 77, np.uint8)
    assert T.scale(2, 2, 3)(gray).shape == (2, 2, 3)
    color = np.zeros((2, 2, 3), np.uint8)
    color[..., 2] = 255  # pure red in BGR
    assert T.scale(2, 2, 1)(color)[0, 0, 0] == 76  # 0.299 * 255


@pytest.mark.parametrize("kwargs", [dict(width=0, height=4), dict(width=4, height=4, channels=2),
                                    dict(width=4, height=4, interpolations="area"),
                                    dict(width=4, height=4, scale_mode="stretch")])
def test_invalid_scale_arguments(kwargs):
    with pytest.raises(ValueError):
        T.scale(**kwargs)


# ------------------------------------------------------------------------------------- mean


def test_mean_file_is_read_as_hwc_interleaved_bgr(tmp_path):
    path = tmp_path / "mean.xml"
    path.write_text(
        '<?xml version="1.0" ?>\n<opencv_storage>\n  <Channel>3</Channel>\n  <Row>1</Row>\n'
        '  <Col>2</Col>\n  <MeanImg type_id="opencv-matrix">\n    <rows>1</rows>\n'
        '    <cols>6</cols>\n    <dt>f</dt>\n    <data>1.0e+00 2 3 4 5 6.5</data>\n'
        '  </MeanImg>\n</opencv_storage>\n')
    mean = read_mean_file(path)
    assert mean.shape == (1, 2, 3)
    assert mean[0, 0].tolist() == [1, 2, 3] and mean[0, 1].tolist() == [4, 5, 6.5]
    image = np.array([[[10, 10, 10], [0, 0, 0]]], np.uint8)
    out = T.mean(str(path))(image)
    assert out.dtype == np.float32
    assert out.tolist() == [[[9, 8, 7], [-4, -5, -6.5]]]  # no clipping


def test_mean_writer_writes_what_the_reader_reads(tmp_path):
    mean = np.random.default_rng(0).uniform(0, 255, (4, 5, 3)).astype(np.float32)
    write_mean_file(tmp_path / "m.xml", mean)
    np.testing.assert_allclose(read_mean_file(tmp_path / "m.xml"), mean, rtol=1e-6)
    text = (tmp_path / "m.xml").read_text()
    assert "<Channel>3</Channel>" in text and "<Row>4</Row>" in text and "<Col>5</Col>" in text


def test_mean_of_another_size_is_not_subtracted(tmp_path):
    write_mean_file(tmp_path / "m.xml", np.ones((2, 2, 3), np.float32))
    image = np.full((3, 3, 3), 5, np.uint8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = T.mean(str(tmp_path / "m.xml"))(image)
    assert np.array_equal(out, image)
    assert any("not subtracted" in str(w.message) for w in caught)


# ------------------------------------------------------------------------------------ color


def test_brightness_and_contrast_formula():
    image = np.array([[[10, 100, 250], [0, 50, 200]]], np.uint8)
    rng, copy = SampleRandom(3, 1, 4), SampleRandom(3, 1, 4)
    xb = copy.uniform(-0.4, 0.4)
    xc = copy.uniform(-0.3, 0.3)
    out = T.color(brightness_radius=0.4, contrast_radius=0.3)(image, rng)
    expected = np.clip((1 + xc) * image.astype(np.float64) + xb * image.mean(), 0, 255)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-3)


def test_saturation_scales_hsv_s_and_caps_it_at_one():
    image = np.array([[[40, 120, 200], [90, 90, 90]]], np.uint8)  # BGR
    rng, copy = SampleRandom(0, 0, 2), SampleRandom(0, 0, 2)
    ratio = 1 + copy.uniform(-0.5, 0.5)
    out = T.color(saturation_radius=0.5)(image, rng)
    for x in range(2):
        b, g, r = (float(v) / 255 for v in image[0, x])
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        r2, g2, b2 = colorsys.hsv_to_rgb(h, min(s * ratio, 1.0), v)
        np.testing.assert_allclose(out[0, x], [b2 * 255, g2 * 255, r2 * 255], atol=0.05)
    assert out[0, 1].tolist() == [90, 90, 90]  # a gray pixel has no saturation


def test_color_radius_validation():
    with pytest.raises(ValueError):
        T.color(brightness_radius=1.5)


# ------------------------------------------------------------------------------ from_config


def test_brainscript_style_records():
    crop = T.from_config({"type": "Crop", "cropType": "RandomSide", "sideRatio": "0.5:0.8",
                          "jitterType": "UniRatio"})
    assert (crop.crop_type, crop.side_ratio, crop.jitter_type) == ("randomside", (0.5, 0.8),
                                                                    "uniratio")
    scale = T.from_config({"type": "Scale", "width": 32, "height": 32, "channels": 3,
                           "interpolations": "linear"})
    assert (scale.width, scale.height, scale.channels) == (32, 32, 3)
    assert T.from_config({"type": "Transpose"}) is None
    with pytest.raises(ValueError):
        T.from_config({"type": "Crop", "cropSide": 3})

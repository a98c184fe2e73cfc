"""Map files, path rules, zip archives and the ImageDeserializer."""

from __future__ import annotations

import zipfile

import cv2
import numpy as np
import pytest
from _io_helpers import write_image

from stadyn._errors import DataError
from stadyn.io import ImageDeserializer, StreamDef, StreamDefs, read_map_file
from stadyn.io import transforms as T
from stadyn.io._map_file import parse_map_text, resolve_image_path


def streams(num_classes: int = 3, transforms=()) -> dict:
    return StreamDefs(features=StreamDef(field="image", transforms=list(transforms)),
                      labels=StreamDef(field="label", shape=num_classes))


# ----------------------------------------------------------------------------- parsing


def test_two_and_three_column_lines_blank_lines_and_crlf():
    table = parse_map_text("/a/x.png\t1\r\n\nkey7\t/a/y.png\t2\n  \n", "m.txt", "/maps", "/cwd")
    assert table.paths == ["/a/x.png", "/a/y.png"]
    assert table.labels.tolist() == [1, 2]
    assert table.keys == [None, "key7"]
    assert table.lines.tolist() == [1, 3]


def test_path_rules():
    # '...' is the map file's folder; other relative paths are relative to the working dir
    assert resolve_image_path(".../img/a.png", "/maps", "/cwd") == ("/maps/img/a.png", None)
    assert resolve_image_path("...\\img.png", "/maps", "/cwd") == ("/maps/img.png", None)
    assert resolve_image_path("img/a.png", "/maps", "/cwd") == ("/cwd/img/a.png", None)
    assert resolve_image_path("/abs/a.png", "/maps", "/cwd") == ("/abs/a.png", None)
    # zip: split at the first '@', drop one separator, backslashes become slashes
    assert resolve_image_path("/d/train.zip@/n01/a.JPEG", "/m", "/c") == \
        ("/d/train.zip", "n01/a.JPEG")
    assert resolve_image_path("/d/t.zip@\\n01\\a.JPEG", "/m", "/c") == ("/d/t.zip", "n01/a.JPEG")
    assert resolve_image_path("t.zip@n01/a@b.png", "/m", "/c") == ("/c/t.zip", "n01/a@b.png")
    assert resolve_image_path(".../t.zip@//x.png", "/m", "/c") == ("/m/t.zip", "/x.png")


def test_read_map_file_resolves_relative_to_cwd_when_read(tmp_path, monkeypatch):
    (tmp_path / "map.txt").write_text("rel/a.png\t0\n.../b.png\t1\n")
    monkeypatch.chdir("/")
    entries = read_map_file(tmp_path / "map.txt")
    assert [e.path for e in entries] == ["/rel/a.png", str(tmp_path / "b.png")]
    assert [(e.line, e.label) for e in entries] == [(1, 0), (2, 1)]


@pytest.mark.parametrize("text,line,words", [
    ("a.png\t0\njust-a-path\n", 2, "found 1"),
    ("a.png\t0\nk\ta.png\t1\textra\n", 2, "found 4"),
    ("a.png\tcat\n", 1, "not a non-negative integer"),
    ("a.png\t-1\n", 1, "not a non-negative integer"),
    ("\n\n \t3\n", 3, "empty image path"),
    ("a.zip@\t3\n", 1, "names no member"),
    ("a.png\t0\nb.png\t99999999999999999999\n", 2, "label 99999999999999999999 is too large"),
    ("a.png\t9223372036854775808\n", 1, "too large"),       # int64 max + 1
])
def test_malformed_lines_name_file_and_line(tmp_path, text, line, words):
    path = tmp_path / "bad_map.txt"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        read_map_file(path)
    assert err.value.path == str(path) and err.value.line == line
    assert words in str(err.value) and f"bad_map.txt:{line}:" in str(err.value)


def test_largest_int64_label_is_accepted():
    table = parse_map_text("a.png\t9223372036854775807\n", "m.txt", "/maps", "/cwd")
    assert table.labels.tolist() == [9223372036854775807]


def test_utf8_byte_order_mark_is_not_part_of_the_first_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfimg/0.png\t1\nimg/1.png\t2\n")
    (tmp_path / "bom3.txt").write_bytes(b"\xef\xbb\xbf.../a.png\t1\n")
    (tmp_path / "bom_key.txt").write_bytes(b"\xef\xbb\xbfk0\t.../a.png\t1\n")
    assert [(e.path, e.line) for e in read_map_file(tmp_path / "bom.txt")] == [
        (str(tmp_path / "img" / "0.png"), 1), (str(tmp_path / "img" / "1.png"), 2)]
    assert read_map_file(tmp_path / "bom3.txt")[0].path == str(tmp_path / "a.png")
    assert read_map_file(tmp_path / "bom_key.txt")[0].key == "k0"


def test_map_file_that_is_not_utf8_or_missing(tmp_path):
    (tmp_path / "m.txt").write_bytes(b"a.png\t0\nb\xff.png\t1\n")
    with pytest.raises(DataError, match=r"m.txt:2: not UTF-8"):
        read_map_file(tmp_path / "m.txt")
    with pytest.raises(DataError, match="does not exist"):
        read_map_file(tmp_path / "nope.txt")


# ----------------------------------------------------------------------- ImageDeserializer


def test_images_are_chw_float32_bgr_labels_one_hot(tmp_path):
    pixel = np.zeros((2, 3, 3), np.uint8)
    pixel[..., 0], pixel[..., 1], pixel[..., 2] = 10, 20, 30  # B, G, R
    write_image(str(tmp_path / "a.png"), pixel)
    (tmp_path / "map.txt").write_text(".../a.png\t2\n")
    sample = ImageDeserializer(tmp_path / "map.txt", streams()).read(0)
    assert sample["features"].dtype == np.float32 and sample["features"].shape == (3, 2, 3)
    assert sample["features"][:, 0, 0].tolist() == [10, 20, 30]
    assert sample["labels"].tolist() == [0, 0, 1]
    rgb = ImageDeserializer(tmp_path / "map.txt", streams(), channel_order="rgb").read(0)
    assert rgb["features"][:, 0, 0].tolist() == [30, 20, 10]


def test_scale_then_mean_values(ten_images):
    des = ImageDeserializer(ten_images / "map.txt", streams(5, [
        T.scale(32, 32, 3), T.mean(str(ten_images / "mean.xml"))]))
    image = cv2.imread(str(ten_images / "img" / "03.png"))
    expected = cv2.resize(image, (32, 32), interpolation=cv2.INTER_LINEAR).astype(np.float32) - 100
    np.testing.assert_array_equal(des.read(3)["features"], expected.transpose(2, 0, 1))
    assert des.read(3)["labels"].tolist() == [0, 0, 0, 1, 0]


def test_zip_members_and_archive_kept_open(tmp_path):
    images = {}
    with zipfile.ZipFile(tmp_path / "imgs.zip", "w") as zf:
        for k in range(3):
            img = np.full((4, 4, 3), 40 * k, np.uint8)
            ok, buf = cv2.imencode(".png", img)
            zf.writestr(f"cls/{k}.png", buf.tobytes())
            images[k] = img
    (tmp_path / "map.txt").write_text("".join(f".../imgs.zip@/cls/{k}.png\t{k}\n"
                                              for k in range(3)))
    des = ImageDeserializer(tmp_path / "map.txt", streams())
    for k in (2, 0, 1):
        assert des.read(k)["features"][0, 0, 0] == 40 * k
    assert list(des._h_zips._open) == [str(tmp_path / "imgs.zip")]  # opened once, kept


@pytest.mark.parametrize("content", [b"", b"\n \n\r\n", b"\xef\xbb\xbf"])
def test_map_file_without_lines_is_an_error_when_made(tmp_path, content):
    (tmp_path / "empty_map.txt").write_bytes(content)
    with pytest.raises(DataError) as err:
        ImageDeserializer(tmp_path / "empty_map.txt", streams())
    assert err.value.path == str(tmp_path / "empty_map.txt") and err.value.line is None
    assert str(err.value).startswith(f"{tmp_path / 'empty_map.txt'}: no samples")


def test_folder_of_class_folders(tmp_path):
    for cls, value in (("b_dog", 2), ("a_cat", 1)):
        write_image(str(tmp_path / "data" / cls / "x.png"), np.full((2, 2, 3), value, np.uint8))
    des = ImageDeserializer(tmp_path / "data")
    assert des.class_names == ["a_cat", "b_dog"]
    assert [des.read(i)["labels"].tolist() for i in range(2)] == [[1, 0], [0, 1]]
    assert des.read(1)["features"][0, 0, 0] == 2


def test_multiview10_reads_every_image_once_at_its_top_left(tmp_path):
    # CNTK 2.7's reader (the compat harness's image_multiview10 case holds its numbers)
    image = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
    write_image(str(tmp_path / "a.png"), image)
    (tmp_path / "map.txt").write_text(".../a.png\t0\n")
    des = ImageDeserializer(tmp_path / "map.txt", streams(1, [
        T.crop(crop_type="multiview10", side_ratio=0.5)]))
    assert len(des) == 1
    assert np.array_equal(des.read(0)["features"], image[:2, :2].transpose(2, 0, 1))


# -------------------------------------------------------------------------------- errors


def test_label_outside_the_classes_names_the_line(tmp_path):
    (tmp_path / "map.txt").write_text("a.png\t1\nb.png\t3\n")
    with pytest.raises(DataError) as err:
        ImageDeserializer(tmp_path / "map.txt", streams(3))
    assert (err.value.line, err.value.path) == (2, str(tmp_path / "map.txt"))
    assert "label 3 is outside the 3 classes" in str(err.value)


def _first_error(des: ImageDeserializer, i: int) -> DataError:
    with pytest.raises(DataError) as err:
        des.read(i)
    return err.value


def test_bad_images_name_the_map_line(tmp_path):
    good = write_image(str(tmp_path / "good.png"), np.zeros((4, 4, 3), np.uint8))
    png = open(good, "rb").read()
    write_image(str(tmp_path / "good.jpg"), np.zeros((16, 16, 3), np.uint8))
    jpg = (tmp_path / "good.jpg").read_bytes()
    (tmp_path / "trunc.png").write_bytes(png[:len(png) // 2])
    (tmp_path / "trunc.jpg").write_bytes(jpg[:-20])
    (tmp_path / "junk.png").write_bytes(b"this is not an image at all")
    (tmp_path / "empty.png").write_bytes(b"")
    with zipfile.ZipFile(tmp_path / "z.zip", "w") as zf:
        zf.writestr("in.png", png)
    (tmp_path / "map.txt").write_text(
        ".../good.png\t0\n.../missing.png\t0\n.../trunc.png\t0\n.../trunc.jpg\t0\n"
        ".../junk.png\t0\n.../z.zip@/out.png\t0\n.../nozip.zip@/a.png\t0\n.../empty.png\t0\n")
    des = ImageDeserializer(tmp_path / "map.txt", streams(1))
    assert des.read(0)["features"].shape == (3, 4, 4)
    cases = {1: "does not exist", 2: "truncated", 3: "truncated", 4: "not an image OpenCV",
             5: "has no member 'out.png'", 6: "zip archive", 7: "empty"}
    for i, words in cases.items():
        error = _first_error(des, i)
        assert error.path == str(tmp_path / "map.txt") and error.line == i + 1, i
        assert words in str(error), (i, str(error))


def test_images_of_different_sizes_without_scale(tmp_path):
    write_image(str(tmp_path / "a.png"), np.zeros((4, 4, 3), np.uint8))
    write_image(str(tmp_path / "b.png"), np.zeros((5, 4, 3), np.uint8))
    (tmp_path / "map.txt").write_text(".../a.png\t0\n.../b.png\t0\n")
    des = ImageDeserializer(tmp_path / "map.txt", streams(1))
    with pytest.raises(DataError, match="add a scale transform"):
        des.read_batch([0, 1], [None, None])


def test_stream_definition_errors(tmp_path):
    (tmp_path / "map.txt").write_text("a.png\t0\n")
    with pytest.raises(ValueError, match="fields are"):
        ImageDeserializer(tmp_path / "map.txt", StreamDefs(x=StreamDef(field="pixels")))
    with pytest.raises(ValueError, match="needs shape"):
        ImageDeserializer(tmp_path / "map.txt", StreamDefs(y=StreamDef(field="label")))


def test_cntk_2_0_map_features_and_map_labels(tmp_path):
    write_image(str(tmp_path / "a.png"), np.zeros((6, 6, 3), np.uint8))
    (tmp_path / "map.txt").write_text(".../a.png\t3\n")
    des = ImageDeserializer(tmp_path / "map.txt").map_features(
        "img", [T.scale(4, 4, 3)]).map_labels("lab", 5)
    assert sorted(des.stream_specs()) == ["img", "lab"]
    sample = des.read(0)
    assert sample["img"].shape == (3, 4, 4) and sample["lab"].tolist() == [0, 0, 0, 1, 0]
    with pytest.raises(DataError, match="outside the 2 classes"):
        des.map_labels("lab", 2)

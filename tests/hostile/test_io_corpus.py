"""Every io reader and data tool against the hostile corpus (README.md): each refuses with a
StadynError that names the file (and what it declares), within 30 s and 1 GiB of address space
(tests/hostile/_hostile.py), and leaves no file behind."""

from __future__ import annotations

import os
import struct
import tempfile
import zipfile
import zlib

import numpy as np
import pytest

from stadyn.io import (Base64ImageDeserializer, CBFDeserializer, CTFDeserializer,
                       HTKFeatureDeserializer, HTKMLFDeserializer, ImageDeserializer,
                       IndexedRecordIO, IRHeader, MinibatchSource, RecordIODeserializer,
                       RecordIOReader, StreamDef, StreamDefs, compute_mean, convert_cifar10,
                       dump_rec, make_image_list, make_map_file, pack_image_record, pack_list,
                       read_htk_header, read_idx_file, read_list_file, read_map_file,
                       read_mean_file, transforms)

# -------------------------------------------------------------------- loaders (run in a child)


def read_map(path):
    return len(read_map_file(path))


def read_images(map_path):
    """An ImageDeserializer over a map file, reading every sample."""
    des = ImageDeserializer(map_path, StreamDefs(features=StreamDef(field="image"),
                                                 labels=StreamDef(field="label", shape=2)))
    return [des.read(i)["features"].shape for i in range(len(des))]


def mean_image(map_path, out):
    return compute_mean(map_path, out, progress=False).shape


def pack(lst):
    return pack_list(lst, encoding=".png", progress=False)


def read_ctf(path):
    return len(CTFDeserializer(path, StreamDefs(x=StreamDef(shape=2))))


def ctf_minibatch(path):
    source = MinibatchSource(CTFDeserializer(path, StreamDefs(x=StreamDef(shape=2))))
    return len(source.next_minibatch(1))


def read_records(rec, idx=None):
    des = RecordIODeserializer(rec, idx, StreamDefs(features=StreamDef(field="image"),
                                                    labels=StreamDef(field="label", shape=1)))
    return [des.read(i)["features"].shape for i in range(len(des))]


def scan_records(rec):
    with RecordIOReader(rec) as reader:
        return len(list(reader))


def read_indexed(idx, rec):
    reader = IndexedRecordIO(idx, rec, "r")
    return [len(reader.read_idx(k)) for k in reader.keys]


def rec2img(rec, out, idx=None):
    return dump_rec(rec, out, idx, progress=False)


def cifar10(archive, out):
    return sorted(convert_cifar10(archive, out, progress=False))


def mean_transform(path):
    return transforms.mean(path).mean.shape


def mapfile(folder, out):
    return make_map_file(folder, out)


def im2rec_folder(folder, prefix):
    return make_image_list(folder, prefix, recursive=True, shuffle=False)


def image_folder(folder):
    return len(ImageDeserializer(folder))


def read_base64(path):
    return len(Base64ImageDeserializer(path))


def read_cbf(path):
    return len(CBFDeserializer(path))


def read_scp(path):
    return len(HTKFeatureDeserializer(StreamDefs(x=StreamDef(shape=2, scp=path))))


def _beside(name, text):
    """A companion file the loader needs, in a folder of its own (not the watched one)."""
    path = os.path.join(tempfile.mkdtemp(), name)
    with open(path, "w") as f:
        f.write(text)
    return path


def read_htk_line(path):
    """A script line naming the hostile file as its HTK features."""
    return read_scp(_beside("f.scp", f"u={path}[0,0]\n"))


def read_mlf_file(path):
    states = _beside("states.txt", "a\n")
    return len(HTKMLFDeserializer(states, StreamDefs(y=StreamDef(shape=2, mlf=path))))


def read_state_file(path):
    mlf = _beside("l.mlf", '#!MLF!#\n"u.lab"\n0 1 a\n.\n')
    return len(HTKMLFDeserializer(path, StreamDefs(y=StreamDef(shape=2, mlf=mlf))))


# ---------------------------------------------------------------- FIFOs and devices, by name

# (loader, extra arguments after the hostile path: "OUT" becomes a path in tmp_path)
PATH_LOADERS = {
    "read_map_file": (read_map, ()),
    "ImageDeserializer": (read_images, ()),
    "compute_mean": (mean_image, ("OUT/mean.xml",)),
    "make_image_list(map)": (im2rec_folder, ("OUT/data",)),
    "pack_list": (pack, ()),
    "read_list_file": (read_list_file, ()),
    "CTFDeserializer": (read_ctf, ()),
    "MinibatchSource(CTF)": (ctf_minibatch, ()),
    "RecordIODeserializer": (read_records, ()),
    "RecordIOReader": (scan_records, ()),
    "read_idx_file": (read_idx_file, ()),
    "dump_rec": (rec2img, ("OUT/dump",)),
    "read_mean_file": (read_mean_file, ()),
    "transforms.mean": (mean_transform, ()),
    "convert_cifar10": (cifar10, ("OUT/cifar",)),
    "Base64ImageDeserializer": (read_base64, ()),
    "CBFDeserializer": (read_cbf, ()),
    "HTKFeatureDeserializer(scp)": (read_scp, ()),
    "read_htk_header": (read_htk_header, ()),
    "HTKFeatureDeserializer(htk)": (read_htk_line, ()),
    "HTKMLFDeserializer(mlf)": (read_mlf_file, ()),
    "HTKMLFDeserializer(states)": (read_state_file, ()),
}


def _args(extra, tmp_path):
    os.makedirs(tmp_path / "out", exist_ok=True)
    return [str(tmp_path / "out" / a[4:]) if a.startswith("OUT/") else a for a in extra]


@pytest.mark.parametrize("loader", list(PATH_LOADERS))
def test_a_fifo_is_refused_not_waited_on(loader, fifo, tmp_path, refused):
    function, extra = PATH_LOADERS[loader]
    outcome = refused(function, str(fifo), *_args(extra, tmp_path), names=[str(fifo)],
                      watch=tmp_path)
    assert "is a FIFO (named pipe), not a regular file" in outcome.message


@pytest.mark.parametrize("loader", list(PATH_LOADERS))
def test_a_device_is_refused_not_read_without_end(loader, tmp_path, refused):
    zero = tmp_path / "zero"
    os.symlink("/dev/zero", zero)
    function, extra = PATH_LOADERS[loader]
    outcome = refused(function, str(zero), *_args(extra, tmp_path), names=[str(zero)],
                      watch=tmp_path)
    assert "is a character device, not a regular file" in outcome.message


# Loaders of the images a listing names: (loader, listing kind, extra arguments).
IMAGE_LOADERS = {
    "ImageDeserializer": (read_images, "map", ()),
    "compute_mean": (mean_image, "map", ("OUT/mean.xml",)),
    "pack_list": (pack, "lst", ()),
}


def _image_run(loader, map_file, tmp_path, line):
    """(function, arguments, 'listing:line') to run ``loader`` on the images of ``map_file``;
    pack_list gets the same lines as an im2rec .lst file."""
    function, kind, extra = IMAGE_LOADERS[loader]
    listing = map_file
    if kind == "lst":
        listing = tmp_path / "images.lst"
        listing.write_text("".join(f"{i}\t{e.label}\t{e.location}\n"
                                   for i, e in enumerate(read_map_file(map_file))))
    return function, [str(listing), *_args(extra, tmp_path)], f"{listing}:{line}"


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "fifo.zip"])
@pytest.mark.parametrize("loader", list(IMAGE_LOADERS))
def test_a_map_line_naming_a_fifo_or_a_device_is_refused(loader, target, corpus, fifo, tmp_path,
                                                         refused):
    named = {"fifo": str(fifo), "/dev/zero": "/dev/zero", "fifo.zip": f"{fifo}@/a.png"}[target]
    map_file = tmp_path / "map.txt"
    map_file.write_text(f"{corpus / 'good.png'}\t0\n{named}\t1\n")
    function, args, where = _image_run(loader, map_file, tmp_path, 2)
    outcome = refused(function, *args, names=[where, named.split("@")[0]], watch=tmp_path)
    assert "not a regular file" in outcome.message


# ------------------------------------------------------- small files that declare huge sizes


@pytest.mark.parametrize("loader", list(IMAGE_LOADERS))
def test_a_bzip2_zip_member_of_2_3_gb_is_refused(loader, corpus, tmp_path, refused):
    assert (corpus / "bzip2_bomb.zip").stat().st_size < 2000
    function, args, where = _image_run(loader, corpus / "bzip2_bomb_map.txt", tmp_path, 1)
    outcome = refused(function, *args, names=[where, "bzip2_bomb.zip", "zeros.png"],
                      watch=tmp_path)
    assert "compressed with method 12; only stored and deflated members are read" \
        in outcome.message


def _deflate_bomb(path, size):
    """A zip whose one deflated member inflates to ``size`` zero bytes (about size/1000 bytes
    of file: the same flushed deflate block, repeated)."""
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    one = block.compress(bytes(1 << 20)) + block.flush(zlib.Z_FULL_FLUSH)
    stream = one * (size >> 20) + block.flush()
    name = b"zeros.png"
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, 0, len(stream), size,
                        len(name), 0) + name
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, 0,
                          len(stream), size, len(name), 0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central),
                      len(local) + len(stream), 0)
    path.write_bytes(local + stream + central + end)


@pytest.mark.parametrize("loader", list(IMAGE_LOADERS))
def test_a_deflated_zip_member_of_2_3_gb_is_refused_by_its_declared_size(loader, tmp_path,
                                                                        refused):
    _deflate_bomb(tmp_path / "bomb.zip", 2300 << 20)
    assert (tmp_path / "bomb.zip").stat().st_size < 3 << 20
    with zipfile.ZipFile(tmp_path / "bomb.zip") as zf:
        assert zf.getinfo("zeros.png").file_size == 2300 << 20
    map_file = tmp_path / "map.txt"
    map_file.write_text(".../bomb.zip@/zeros.png\t0\n")
    function, args, where = _image_run(loader, map_file, tmp_path, 1)
    outcome = refused(function, *args, names=[where, "bomb.zip", "declares 2,411,724,800 bytes",
                                              "over the limit of 268,435,456"], watch=tmp_path)
    assert "stadyn.io.set_limits(archive_member_bytes=...)" in outcome.message


@pytest.mark.parametrize("image", ["png", "jpg"])
@pytest.mark.parametrize("loader", list(IMAGE_LOADERS))
def test_an_image_header_declaring_gigapixels_is_refused_before_decoding(loader, image, corpus,
                                                                        tmp_path, refused):
    line, size = {"png": (2, "20000x20000 = 400,000,000"), "jpg": (1, "60000x60000")}[image]
    function, args, where = _image_run(loader, corpus / f"huge_{image}_map.txt", tmp_path, line)
    refused(function, *args, names=[where, f"huge_header.{image}", f"header declares {size}",
                                    "over the limit of 134,217,728"], watch=tmp_path)


@pytest.mark.parametrize("loader", list(IMAGE_LOADERS))
def test_a_truncated_jpeg_with_an_end_marker_is_refused_not_filled_with_gray(loader, corpus,
                                                                            tmp_path, refused):
    function, args, where = _image_run(loader, corpus / "truncated_map.txt", tmp_path, 2)
    refused(function, *args, names=[where, "truncated_eoi.jpg", "JPEG data is truncated or "
                                    "corrupt", "premature end of data segment"], watch=tmp_path)


def test_an_image_record_declaring_gigapixels_is_refused(corpus, tmp_path, refused):
    rec, idx = tmp_path / "big.rec", tmp_path / "big.idx"
    with IndexedRecordIO(idx, rec, "w") as w:
        w.write_idx(0, pack_image_record(IRHeader(0, 0.0, 0, 0),
                                         (corpus / "huge_header.png").read_bytes()))
    refused(read_records, str(rec), str(idx), names=[f"{rec} (record 0)", "20000x20000"],
            watch=tmp_path)


@pytest.mark.parametrize("archive, names", [
    ("cifar_bomb.tar.bz2", ["'cifar-10-batches-py/data_batch_1' declares 1,280,000,000 bytes",
                            "over the limit of 268,435,456"]),
    ("cifar_long.tar.bz2", ["its members declare 1,500,000,000 bytes up to "
                            "'cifar-10-batches-py/readme.html'",
                            "over the limit of 1,073,741,824"]),
    ("cifar_dag.tar.gz", ["data_batch_1: not a CIFAR-10 batch ('data' is list"]),
])
def test_a_small_cifar_archive_cannot_make_a_huge_allocation(archive, names, corpus, tmp_path,
                                                            refused):
    path = corpus / archive
    assert path.stat().st_size < 2000
    refused(cifar10, str(path), str(tmp_path / "out"), names=[str(path), *names], watch=tmp_path)


@pytest.mark.parametrize("loader, args, names", [
    ("read_idx_file", ["huge_offset.idx"], ["huge_offset.idx:1", "offset 9223372036854775808"]),
    ("RecordIODeserializer", ["one.rec", "huge_offset.idx"],
     ["huge_offset.idx:1", "offset 9223372036854775808"]),
    ("IndexedRecordIO", ["huge_offset.idx", "one.rec"], ["huge_offset.idx:1"]),
    ("dump_rec", ["one.rec", "OUT", "huge_offset.idx"], ["huge_offset.idx:1"]),
    ("RecordIOReader", ["huge_length.rec"], ["huge_length.rec (record 0)", "truncated"]),
    ("RecordIODeserializer", ["huge_length.rec"], ["huge_length.rec (record 0)", "truncated"]),
    ("dump_rec", ["huge_length.rec", "OUT/dump"], ["huge_length.rec (record 0)"]),
    ("read_list_file", ["huge_index.lst"], ["huge_index.lst:1", "outside 0..2**64-1"]),
    ("pack_list", ["huge_index.lst"], ["huge_index.lst:1", "outside 0..2**64-1"]),
    ("read_mean_file", ["laughs_mean.xml"], ["laughs_mean.xml", "amplification"]),
    ("transforms.mean", ["laughs_mean.xml"], ["laughs_mean.xml", "amplification"]),
    ("read_map_file", ["nul_path_map.txt"], ["nul_path_map.txt:2", "holds a NUL byte"]),
    ("ImageDeserializer", ["nul_path_map.txt"], ["nul_path_map.txt:2", "holds a NUL byte"]),
])
def test_each_corpus_file_is_refused_with_its_place(loader, args, names, corpus, tmp_path,
                                                   refused):
    functions = {**{k: f for k, (f, _) in PATH_LOADERS.items()}, "IndexedRecordIO": read_indexed}
    os.makedirs(tmp_path / "out", exist_ok=True)
    paths = [str(tmp_path / "out" / a[4:]) if a.startswith("OUT") else str(corpus / a)
             for a in args]
    refused(functions[loader], *paths, names=names, watch=tmp_path)


# ---------------------------------------------------------------------- symbolic-link cycles


def _image_tree(root):
    """root/cat/a.png and root/cat/sub/b.png (1x1 PNGs)."""
    png = (os.path.dirname(__file__) + "/io/good.png")
    os.makedirs(root / "cat" / "sub")
    for path in (root / "cat" / "a.png", root / "cat" / "sub" / "b.png"):
        path.write_bytes(open(png, "rb").read())


FOLDER_LOADERS = {
    "make_map_file": (mapfile, ("OUT/map.txt",)),
    "make_image_list(recursive)": (im2rec_folder, ("OUT/data",)),
    "ImageDeserializer(folder)": (image_folder, ()),
}


@pytest.mark.parametrize("links", ["self", "two to the root"])
@pytest.mark.parametrize("loader", list(FOLDER_LOADERS))
def test_a_symlink_cycle_is_an_error_naming_the_link(loader, links, tmp_path, refused):
    root = tmp_path / "images"
    _image_tree(root)
    if links == "self":
        os.symlink(".", root / "cat" / "sub" / "again")
        link, ancestor = root / "cat" / "sub" / "again", root / "cat" / "sub"
    else:                          # os.walk would go 2**depth ways, until paths are too long
        os.symlink("..", root / "cat" / "sub" / "up1")
        os.symlink("..", root / "cat" / "sub" / "up2")
        link, ancestor = root / "cat" / "sub" / "up1", root / "cat"
    function, extra = FOLDER_LOADERS[loader]
    start = root if loader != "make_image_list(recursive)" else root / "cat"
    outcome = refused(function, str(start), *_args(extra, tmp_path),
                      names=[str(link), "symbolic link cycle"], watch=tmp_path)
    assert outcome.message.endswith(f"this folder is {ancestor} (an ancestor)")


def test_links_to_folders_outside_the_walk_are_still_followed(tmp_path):
    _image_tree(tmp_path / "images")
    os.makedirs(tmp_path / "elsewhere")
    (tmp_path / "elsewhere" / "c.png").write_bytes((tmp_path / "images/cat/a.png").read_bytes())
    os.symlink(tmp_path / "elsewhere", tmp_path / "images" / "cat" / "more")
    assert make_map_file(tmp_path / "images", tmp_path / "map.txt") == ["cat"]
    assert [os.path.relpath(e.path, tmp_path / "images") for e in
            read_map_file(tmp_path / "map.txt")] == ["cat/a.png", "cat/more/c.png",
                                                     "cat/sub/b.png"]


def test_two_paths_to_one_folder_are_an_error_not_a_duplicate_listing(tmp_path):
    _image_tree(tmp_path / "images")
    os.makedirs(tmp_path / "shared")
    os.symlink(tmp_path / "shared", tmp_path / "images" / "cat" / "x")
    os.symlink(tmp_path / "shared", tmp_path / "images" / "cat" / "y")
    from stadyn import DataError
    with pytest.raises(DataError) as err:
        make_map_file(tmp_path / "images", tmp_path / "map.txt")
    assert str(err.value) == (f"{tmp_path / 'images/cat/y'}: a second path to one folder: this "
                              f"folder is {tmp_path / 'images/cat/x'} (already listed)")
    assert not (tmp_path / "map.txt").exists()


# --------------------------------------------------------------- the bounds can be raised


def test_a_user_can_raise_the_pixel_limit_for_a_big_image(tmp_path):
    import cv2

    from stadyn.io import decode_image, get_limits, set_limits
    big = cv2.imencode(".png", np.zeros((300, 200, 3), np.uint8))[1].tobytes()
    old = set_limits(image_pixels=50_000)
    try:
        with pytest.raises(Exception, match=r"declares 200x300 = 60,000 pixels, over the limit "
                                            r"of 50,000"):
            decode_image(big)
        set_limits(image_pixels=60_000)
        assert decode_image(big).shape == (300, 200, 3)
    finally:
        set_limits(**old)
    assert get_limits()["image_pixels"] == 1 << 27

"""The data tools and the ``stadyn data`` sub-commands."""

from __future__ import annotations

import argparse
import io
import os
import pickle
import random
import stat
import tarfile

import cv2
import numpy as np
import pytest
from _io_helpers import fake_cifar, write_image

from stadyn._errors import DataError
from stadyn.cli import data as data_cli
from stadyn.io import (ImageDeserializer, IndexedRecordIO, RecordIODeserializer, StreamDef,
                       StreamDefs, compute_mean, convert_cifar10, dump_rec, make_image_list,
                       make_map_file, pack_list, read_list_file, read_map_file, read_mean_file,
                       unpack_image_record)


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="stadyn")
    data_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(list(argv))
    return args.func(args)


@pytest.fixture
def class_folder(tmp_path):
    rng = np.random.default_rng(2)
    for cls, count in (("cat", 3), ("dog", 2), ("emu", 1)):
        for k in range(count):
            write_image(str(tmp_path / "imgs" / cls / f"{k}.png"),
                        rng.integers(0, 256, (6, 8, 3), dtype=np.uint8))
    (tmp_path / "imgs" / "dog" / "notes.txt").write_text("not an image")
    return tmp_path / "imgs"


def test_map_file_and_labels(tmp_path, class_folder):
    assert run_cli("data", "mapfile", str(class_folder), "--out", str(tmp_path / "map.txt"),
                   "--labels", str(tmp_path / "labels.txt"), "-q") == 0
    assert (tmp_path / "labels.txt").read_text() == "cat\ndog\nemu\n"
    entries = read_map_file(tmp_path / "map.txt")
    assert [(os.path.relpath(e.path, class_folder), e.label) for e in entries] == [
        ("cat/0.png", 0), ("cat/1.png", 0), ("cat/2.png", 0), ("dog/0.png", 1),
        ("dog/1.png", 1), ("emu/0.png", 2)]
    assert (tmp_path / "map.txt").read_text().startswith(str(class_folder / "cat" / "0.png"))
    make_map_file(class_folder, tmp_path / "rel.txt", relative=True)
    assert (tmp_path / "rel.txt").read_text().splitlines()[0] == ".../imgs/cat/0.png\t0"


def test_mean_tool(tmp_path, class_folder):
    make_map_file(class_folder, tmp_path / "map.txt")
    images = [cv2.imread(e.path) for e in read_map_file(tmp_path / "map.txt")]
    assert run_cli("data", "mean", str(tmp_path / "map.txt"), "--out",
                   str(tmp_path / "mean.xml"), "-q") == 0
    mean = read_mean_file(tmp_path / "mean.xml")
    np.testing.assert_allclose(mean, np.mean(images, axis=0), rtol=1e-6)
    small = compute_mean(tmp_path / "map.txt", tmp_path / "m4.xml", width=4, height=3)
    want = np.mean([cv2.resize(im, (4, 3)) for im in images], axis=0)
    np.testing.assert_allclose(small, want, rtol=1e-6)
    write_image(str(class_folder / "emu" / "1.png"), np.zeros((5, 5, 3), np.uint8))
    make_map_file(class_folder, tmp_path / "map.txt")
    with pytest.raises(DataError, match=r"map.txt:7: image is 5x5, the first was 8x6"):
        compute_mean(tmp_path / "map.txt")
    assert run_cli("data", "mean", str(tmp_path / "map.txt"), "--out", "m.xml", "--width", "3") == 1


def test_mean_tool_reports_a_huge_label_as_an_error(tmp_path, class_folder, capsys):
    (tmp_path / "map.txt").write_text(f"{class_folder / 'cat' / '0.png'}\t0\n"
                                      f"{class_folder / 'cat' / '1.png'}\t99999999999999999999\n")
    assert run_cli("data", "mean", str(tmp_path / "map.txt"), "--out",
                   str(tmp_path / "mean.xml"), "-q") == 1
    err = capsys.readouterr().err
    assert err == (f"stadyn data mean: error: {tmp_path / 'map.txt'}:2: label "
                   f"99999999999999999999 is too large (the largest is 9223372036854775807)\n")
    assert not (tmp_path / "mean.xml").exists()


def test_cifar10_conversion(tmp_path):
    batches = fake_cifar(tmp_path / "cifar-10-python.tar.gz")
    out = tmp_path / "CIFAR-10"
    assert run_cli("data", "cifar10", str(tmp_path / "cifar-10-python.tar.gz"), "--out",
                   str(out), "-q") == 0
    train = np.concatenate([batches[f"data_batch_{k}"][0] for k in range(1, 6)])
    train_labels = sum((batches[f"data_batch_{k}"][1] for k in range(1, 6)), [])
    first = cv2.imread(str(out / "train" / "00000.png"))
    assert first.shape == (40, 40, 3)
    assert (first[:4] == 128).all() and (first[:, -4:] == 128).all()
    chw_rgb = train[0].reshape(3, 32, 32)
    assert np.array_equal(first[4:36, 4:36], chw_rgb[::-1].transpose(1, 2, 0))  # BGR on disk
    test0 = cv2.imread(str(out / "test" / "00001.png"))
    assert np.array_equal(test0, batches["test_batch"][0][1].reshape(3, 32, 32)[::-1]
                          .transpose(1, 2, 0))
    lines = (out / "train_map.txt").read_text().splitlines()
    assert len(lines) == 10 and lines[3] == f"{out / 'train' / '00003.png'}\t{train_labels[3]}"
    mean = read_mean_file(out / "CIFAR-10_mean.xml")
    want = train.reshape(-1, 3, 32, 32).mean(axis=0)[::-1].transpose(1, 2, 0)
    np.testing.assert_allclose(mean, want, rtol=1e-6)
    ctf = (out / "Test_cntk_text.txt").read_text().splitlines()
    data, labels = batches["test_batch"]
    one_hot = " ".join("1" if k == labels[0] else "0" for k in range(10))
    assert ctf[0] == f"|labels {one_hot} |features " + " ".join(map(str, data[0].tolist()))
    # the map and the mean serve the seed's reader: 32x32 crops of the padded images
    des = ImageDeserializer(out / "train_map.txt", StreamDefs(
        features=StreamDef(field="image", transforms=[
            ImageDeserializer.crop(crop_type="Random", ratio=0.8, jitter_type="uniRatio"),
            ImageDeserializer.scale(width=32, height=32, channels=3, interpolations="linear"),
            ImageDeserializer.mean(str(out / "CIFAR-10_mean.xml"))]),
        labels=StreamDef(field="label", shape=10)))
    assert des.read(0)["features"].shape == (3, 32, 32)


def test_cifar10_refuses_other_archives_and_pickled_code(tmp_path):
    with tarfile.open(tmp_path / "bad.tar.gz", "w:gz") as tar:
        raw = pickle.dumps(os.system)  # a pickle that would import a function
        info = tarfile.TarInfo("cifar-10-batches-py/data_batch_1")
        info.size = len(raw)
        tar.addfile(info, io.BytesIO(raw))
    with pytest.raises(DataError, match="refusing to load"):
        convert_cifar10(tmp_path / "bad.tar.gz", tmp_path / "out", progress=False)
    (tmp_path / "junk.tar.gz").write_bytes(b"junk")
    assert run_cli("data", "cifar10", str(tmp_path / "junk.tar.gz"), "--out", "o") == 1


def test_im2rec_lists_like_im2rec(tmp_path, class_folder):
    prefix = str(tmp_path / "data")
    assert run_cli("data", "im2rec", str(class_folder), prefix, "--list-only", "--recursive",
                   "-q") == 0
    entries = read_list_file(prefix + ".lst")
    # the order im2rec gives: sorted walk, then random.seed(100); random.shuffle(...)
    walk = [("cat/0.png", 0), ("cat/1.png", 0), ("cat/2.png", 0), ("dog/0.png", 1),
            ("dog/1.png", 1), ("emu/0.png", 2)]
    listed = [(k, path, float(label)) for k, (path, label) in enumerate(walk)]
    random.seed(100)
    random.shuffle(listed)
    assert [(e.index, e.path, e.labels[0]) for e in entries] == listed
    assert (tmp_path / "data.lst").read_text().splitlines()[0] == \
        f"{listed[0][0]}\t{listed[0][2]:f}\t{listed[0][1]}"
    split = make_image_list(class_folder, str(tmp_path / "s"), recursive=True, train_ratio=0.5,
                            test_ratio=0.2, shuffle=False)
    assert [os.path.basename(p) for p in split] == ["s_test.lst", "s_val.lst", "s_train.lst"]
    assert [len(read_list_file(p)) for p in split] == [1, 2, 3]
    flat = make_image_list(class_folder / "cat", str(tmp_path / "flat"), shuffle=False)
    assert [e.labels for e in read_list_file(flat[0])] == [(0.0,)] * 3


def test_im2rec_records_and_rec2img_round_trip(tmp_path, class_folder):
    prefix = str(tmp_path / "data")
    assert run_cli("data", "im2rec", str(class_folder), prefix, "--recursive", "--encoding",
                   ".png", "--no-shuffle", "-q") == 0
    des = RecordIODeserializer(prefix + ".rec", prefix + ".idx", StreamDefs(
        features=StreamDef(field="image"), labels=StreamDef(field="label", shape=3)))
    originals = [cv2.imread(str(class_folder / p)) for p in
                 ("cat/0.png", "cat/1.png", "cat/2.png", "dog/0.png", "dog/1.png", "emu/0.png")]
    for k, image in enumerate(originals):
        assert np.array_equal(des.read(k)["features"], image.transpose(2, 0, 1))
    assert [int(np.argmax(des.read(k)["labels"])) for k in range(6)] == [0, 0, 0, 1, 1, 2]
    raw = IndexedRecordIO(prefix + ".idx", prefix + ".rec")
    header, _ = unpack_image_record(raw.read_idx(4))
    assert (header.flag, header.label, header.id, header.id2) == (0, 1.0, 4, 0)
    raw.close()
    out = tmp_path / "dump"
    assert run_cli("data", "rec2img", prefix + ".rec", "--out", str(out), "-q") == 0
    assert sorted(os.listdir(out))[:2] == ["00000.png", "00001.png"]
    dumped = ImageDeserializer(out / "map.txt")
    assert np.array_equal(dumped.read(5)["features"], originals[5].transpose(2, 0, 1))
    assert dumped.labels.tolist() == [0, 0, 0, 1, 1, 2]
    passed = pack_list(make_image_list(class_folder, str(tmp_path / "p"), recursive=True)[0],
                       root=class_folder, pass_through=True, progress=False)
    first = read_list_file(str(tmp_path / "p.lst"))[0]
    _, data = unpack_image_record(IndexedRecordIO(passed[1], passed[0]).read_idx(first.index))
    assert data == (class_folder / first.path).read_bytes()
    assert dump_rec(passed[0], tmp_path / "dump2", idx=passed[1], progress=False) == 6


def test_im2rec_outputs_all_get_the_umask_mode(tmp_path, class_folder):
    old = os.umask(0o022)
    try:
        assert run_cli("data", "im2rec", str(class_folder), str(tmp_path / "data"),
                       "--recursive", "--encoding", ".png", "-q") == 0
    finally:
        os.umask(old)
    modes = {name: stat.S_IMODE(os.stat(tmp_path / name).st_mode)
             for name in ("data.lst", "data.rec", "data.idx")}
    assert modes == {"data.lst": 0o644, "data.rec": 0o644, "data.idx": 0o644}


def test_im2rec_from_a_map_file_and_bad_input(tmp_path, class_folder):
    make_map_file(class_folder, tmp_path / "map.txt")
    assert run_cli("data", "im2rec", str(tmp_path / "map.txt"), str(tmp_path / "m"),
                   "--no-shuffle", "--quality", "90", "-q") == 0
    entries = read_list_file(tmp_path / "m.lst")
    assert [e.labels[0] for e in entries] == [0, 0, 0, 1, 1, 2]
    assert len(RecordIODeserializer(tmp_path / "m.rec")) == 6
    (tmp_path / "bad.txt").write_text(f"{class_folder / 'cat' / '0.png'}\t0\n/nowhere.png\t1\n")
    assert run_cli("data", "im2rec", str(tmp_path / "bad.txt"), str(tmp_path / "b"),
                   "--no-shuffle", "-q") == 1
    assert not (tmp_path / "b.rec").exists() and not (tmp_path / "b.idx").exists()

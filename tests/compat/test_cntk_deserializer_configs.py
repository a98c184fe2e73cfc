"""CNTK 2.7's built-in deserializers are configurations (``compat/cntk/io/_configs.py``): a bad
file raises when the ``MinibatchSource`` over one is made, not when it is made.  The steps at
which CNTK 2.7 raises are compared by the cases ``ioerr39__ctf``, ``ioerr39__cbf``,
``ioerr39__htk``, ``io_errors__cbf``, ``io_errors__image_map``, ``io_errors__htk`` and
``io_edges__base64_missing``; here what a configuration keeps until then."""

import pytest

import stadyn.compat.cntk as C


def _streams():
    return C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1))


def test_a_file_written_after_the_deserializer_is_read(tmp_path):
    # CNTK 2.7 (run by hand): the file written between CTFDeserializer(...) and
    # MinibatchSource(...) is read, [1.0, 2.0, 3.0] in one minibatch of 3
    path = tmp_path / "late.ctf"
    d = C.io.CTFDeserializer(str(path), _streams())
    path.write_text("|x 1\n|x 2\n|x 3\n")
    src = C.io.MinibatchSource(d, randomize=False, max_sweeps=1)
    mb = src.next_minibatch(3)
    assert mb[src.streams.x].asarray().ravel().tolist() == [1.0, 2.0, 3.0]


def test_settings_are_kept_until_the_file_is_opened(tmp_path):
    path = tmp_path / "late.ctf"
    d = C.io.CTFDeserializer(str(path), _streams())
    d["maxErrors"] = 5
    d["chunkSizeInBytes"] = 8
    path.write_text("|x 1\n|x 2\n|x 3\n")
    made = d.open()
    assert (made.max_errors, made.chunk_bytes) == (5, 8)


def test_a_missing_file_raises_at_every_source_made_over_it(tmp_path):
    d = C.io.CBFDeserializer(str(tmp_path / "absent.cbf"), _streams())
    for _ in range(2):
        with pytest.raises(RuntimeError, match="absent.cbf"):
            C.io.MinibatchSource([d], randomize=False)


def test_bad_arguments_still_raise_at_once(tmp_path):
    # (not the file: the stream has no shape; CNTK 2.7 refuses this at once too, by hand:
    # an AttributeError, "record has no attribute 'dim'")
    with pytest.raises(ValueError, match="needs a shape"):
        C.io.CTFDeserializer(str(tmp_path / "absent.ctf"),
                             C.io.StreamDefs(x=C.io.StreamDef(field="x")))


@pytest.mark.parametrize("make, file, cntk_type", [
    (lambda: C.io.CTFDeserializer("absent.ctf", _streams()), "absent.ctf",
     "CNTKTextFormatDeserializer"),
    (lambda: C.io.CBFDeserializer("absent.cbf", _streams()), "absent.cbf",
     "CNTKBinaryFormatDeserializer"),
    (lambda: C.io.ImageDeserializer("absent.map", C.io.StreamDefs(
        f=C.io.StreamDef(field="image", transforms=[]),
        l=C.io.StreamDef(field="label", shape=2))), "absent.map", "ImageDeserializer"),
    (lambda: C.io.Base64ImageDeserializer("absent.txt", C.io.StreamDefs(
        f=C.io.StreamDef(field="image", transforms=[]),
        l=C.io.StreamDef(field="label", shape=2))), "absent.txt", "Base64ImageDeserializer"),
])
def test_file_and_type_of_a_bad_file_are_read_without_opening_it(make, file, cntk_type):
    # CNTK 2.7 (run by hand, files absent): d['file'] is the path as given, d['type'] the
    # reader's name, and d['maxErrors'] what was set; Stadyn made the deserializer for each
    # and raised the file's error before.
    d = make()
    d["maxErrors"] = 3
    assert (d["file"], d["type"], d["maxErrors"]) == (file, cntk_type, 3)


def test_a_native_source_refuses_an_unopened_configuration_by_name(tmp_path):
    # stadyn.io's MinibatchSource does not open CNTK's configurations: a TypeError naming it
    # (before: it iterated the configuration, d[0], which made the deserializer: a KeyError
    # once the file was written, the file's DataError before)
    import stadyn.io
    path = tmp_path / "late.ctf"
    d = C.io.CTFDeserializer(str(path), _streams())
    path.write_text("|x 1\n|x 2\n|x 3\n")
    for given in (d, [d]):
        with pytest.raises(TypeError, match=r"not a deserializer: <CTFDeserializer of "
                                            r".*late\.ctf' \(not opened yet"):
            stadyn.io.MinibatchSource(given)
    assert stadyn.io.MinibatchSource(d.open(), randomize=False).next_minibatch(3)["x"] \
        .num_samples == 3


def test_the_image_deserializers_transforms_are_reachable_through_its_name():
    # CNTK 2.0's spelling, which CNTK's CIFAR-10 ConvNet script (tests/fixtures/seeds) uses:
    # cntk.io.ImageDeserializer.crop/scale/mean; until this the deferring constructor of
    # ioerr39 (a function) lost them and the script stopped with an AttributeError
    import stadyn.compat.cntk as C
    for name in ("crop", "scale", "mean", "color"):
        assert getattr(C.io.ImageDeserializer, name) is getattr(C.io.transforms, name)
    assert repr(C.io.ImageDeserializer.crop(crop_type="Random", ratio=0.8)) == \
        repr(C.io.transforms.crop(crop_type="Random", ratio=0.8))


def test_an_opened_configuration_is_kept_and_still_takes_settings(tmp_path):
    # (before: every attribute asked of it made the deserializer again, indexing the file
    # each time).  CNTK 2.7's configuration is a dictionary: a key set after the deserializer
    # was asked about reaches the source made after it, as here d["chunkSizeInBytes"] (with
    # chunks of 5 bytes, one line each, randomized in chunks: another order than one chunk)
    path = tmp_path / "late.ctf"
    d = C.io.CTFDeserializer(str(path), _streams())
    path.write_text("".join("|x %d\n" % i for i in range(8)))
    assert len(d) == 8
    made = d.open()
    assert d.open() is made and d.keys() == made.keys()
    d["chunkSizeInBytes"] = 5
    assert made.chunk_bytes == 5 and d["chunkSizeInBytes"] == 5
    src = C.io.MinibatchSource(d, max_sweeps=1)
    read = src._composite.deserializers[0]   # (the source reads a copy of it, made now:
    assert type(read) is type(made) and read.chunk_bytes == 5   # case io41__settings_after_source)
    assert len(src._composite.chunk_sizes()) == 8

"""The randomized order of a BrainScript reader block: CNTK's block randomizer with the window
cntk.exe's reader takes from the block (``brainscript/_reader_windows.py``).

The orders are CNTK 2.7's (tests/fixtures/bs_reader_windows/make_refs.py: its Python
MinibatchSource, the randomizer cntk.exe builds, with the window each reader picks).  At
c4441c04 Stadyn ignored ``randomizationWindow`` and ``sampleBasedRandomizationWindow`` (a warning
said so) and ``chunkSizeInBytes``, and shuffled every block with a window of 128 chunks: an
``ImageDeserializer``'s images (a chunk each) came in another order than cntk.exe's, whose window
for them is one sample (CompositeDataReader.cpp:137-142), and ``randomizationWindow = 3`` over
a text file of several chunks had no effect.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from stadyn import ConfigError
from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._reader_windows import randomization_window
from stadyn.brainscript._readers import make_source

FIXTURE = Path(__file__).parents[1] / "fixtures" / "bs_reader_windows"
REFS = json.loads((FIXTURE / "refs.json").read_text())


def _make_refs():
    spec = importlib.util.spec_from_file_location("bs_reader_windows_make_refs",
                                                  FIXTURE / "make_refs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _order(text, stream, count, size=16):
    """Each sample's first value over ``count`` samples of the block's source."""
    source = make_source(reader_config(parse_config(text)["reader"]))
    ids: list[int] = []
    try:
        while len(ids) < count:
            data = source.next_minibatch(size)[stream].data
            ids += [int(round(float(v))) for v in data.reshape(len(data), -1)[:, 0]]
    finally:
        source.close()
    return ids[:count]


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    png = _make_refs().png
    with open(folder / "map.txt", "w") as f:
        for k in range(REFS["images"]):
            png(str(folder / f"{k}.png"), k)
            f.write(f"{folder / f'{k}.png'}\t{k % 3}\n")
    return folder / "map.txt"


def _image_block(map_file, settings=""):
    return (f'reader = {{ {settings} deserializers = ({{ type = "ImageDeserializer" ; '
            f'file = "{map_file}" ; input = {{ image = {{ transforms = () }} ; '
            'label = { labelDim = 3 } } }) }')


def test_an_image_deserializer_alone_is_shuffled_in_a_window_of_one_sample(images):
    # cntk.exe: randomizationWindow = 1 (samples) for an ImageDeserializer alone
    # (CompositeDataReader.cpp:137-142); at c4441c04 Stadyn's order was CNTK's of 128 chunks
    got = _order(_image_block(images), "image", 2 * REFS["images"])
    assert got == REFS["image_window_1_sample"]
    assert got != REFS["image_window_128_chunks"]


def test_an_image_deserializers_given_window_is_in_samples(images):
    # randomizationWindow = 5 (samples, sampleBasedRandomizationWindow's default true);
    # sampleBasedRandomizationWindow = false: in chunks
    got = _order(_image_block(images, "randomizationWindow = 5 ;"), "image", 2 * REFS["images"])
    assert got == REFS["image_window_5_samples"]
    got = _order(_image_block(images, "randomizationWindow = 128 ; "
                                      "sampleBasedRandomizationWindow = false ;"),
                 "image", 2 * REFS["images"])
    assert got == REFS["image_window_128_chunks"]


def test_the_older_image_reader_is_shuffled_in_a_window_of_one_sample(images):
    # readerType = "ImageReader": always one sample (ImageReader.cpp:52-55), a deserializers
    # list's ImageDeserializer of module ImageReader as one alone
    got = _order(f'reader = {{ readerType = "ImageReader" ; file = "{images}" ; '
                 'randomizationWindow = 7 ; features = { width = 1 ; height = 1 ; channels = 3 } ; '
                 'labels = { labelDim = 3 } }', "features", 2 * REFS["images"])
    assert got == REFS["image_window_1_sample"]
    got = _order(_image_block(images).replace('"ImageDeserializer" ;',
                                              '"ImageDeserializer" ; module = "ImageReader" ;'),
                 "image", 2 * REFS["images"])
    assert got == REFS["image_window_1_sample"]


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    path = tmp_path_factory.mktemp("text") / "count.ctf"
    path.write_text("".join("|x %d.%s\n" % (k, "0" * (7 * k % 10)) for k in range(REFS["lines"])))
    return path


def _text_block(path, settings, reader_type=True):
    chunks = f"chunkSizeInBytes = {REFS['chunk_bytes']} ; {settings}"
    if reader_type:
        return (f'reader = {{ readerType = "CNTKTextFormatReader" ; file = "{path}" ; {chunks} ; '
                'input = { x = { dim = 1 ; format = "dense" } } }')
    return (f'reader = {{ {chunks} ; deserializers = ({{ type = "CNTKTextFormatDeserializer" ; '
            f'file = "{path}" ; input = {{ x = {{ dim = 1 ; format = "dense" }} }} }}) }}')


@pytest.mark.parametrize("reader_type, settings, ref", [
    # readerType = "CNTKTextFormatReader": the window in chunks (TextConfigHelper.cpp:132-137)
    (True, "randomizationWindow = 3", "text_window_3_chunks"),
    (True, "randomizationWindow = 3 ; sampleBasedRandomizationWindow = true",
     "text_window_3_samples"),
    (True, "", "text_window_128_chunks"),
    # a deserializers list: in samples (CompositeDataReader.cpp:146-147); none given: 4 GB of
    # chunks (CompositeDataReader.cpp:149-156)
    (False, "randomizationWindow = 3", "text_window_3_samples"),
    (False, "randomizationWindow = 3 ; sampleBasedRandomizationWindow = false",
     "text_window_3_chunks"),
    (False, "", "text_window_128_chunks"),
], ids=["reader_3", "reader_3_samples", "reader_default", "list_3", "list_3_chunks",
        "list_default"])
def test_a_text_readers_window_is_cntk_exes(text, reader_type, settings, ref):
    got = _order(_text_block(text, settings, reader_type), "x", 2 * REFS["lines"], size=7)
    assert got == REFS[ref]


def test_the_windows_differ_where_the_file_has_several_chunks():
    # (the orders above pin the window down: each window gives another order)
    orders = [REFS[k] for k in ("text_window_3_chunks", "text_window_3_samples",
                                "text_window_128_chunks")]
    assert len({tuple(o) for o in orders}) == 3
    assert sorted(REFS["text_window_3_chunks"][:REFS["lines"]]) == list(range(REFS["lines"]))


def test_a_sample_window_of_no_size_over_a_text_list_is_cntk_exes_error(text):
    reader = reader_config(parse_config(_text_block(
        text, "sampleBasedRandomizationWindow = true", False))["reader"])
    with pytest.raises(ConfigError, match=r"'sampleBasedRandomizationWindow' \(== 'true'\) "
                                          "requires that the 'randomizationWindow' is "
                                          "explicitly specified."):
        make_source(reader)


def test_a_window_of_zero_is_file_order_or_a_window_of_one(text, images):
    # CNTKTextFormatReader: no randomizer (CNTKTextFormatReader.cpp:40-54): file order
    got = _order(_text_block(text, "randomizationWindow = 0"), "x", REFS["lines"])
    assert got == list(range(REFS["lines"]))
    # a deserializers list: cntk.exe's block randomizer of a window of 0 (CompositeDataReader.
    # cpp:146, 167-168) gives each chunk the window 1 gives it (ChunkRandomizer.cpp:82,
    # 100-116; in chunks, :123-124): CNTK 2.7's order with a window of 1 (make_refs.py); at
    # 2d7f4600 Stadyn refused it
    assert _order(_text_block(text, "randomizationWindow = 0", False), "x", 2 * REFS["lines"],
                  size=7) == REFS["text_window_1_sample"]
    assert _order(_text_block(text, "randomizationWindow = 0 ; sampleBasedRandomizationWindow = "
                              "false", False), "x", 2 * REFS["lines"],
                  size=7) == REFS["text_window_1_chunk"]
    assert _order(_image_block(images, "randomizationWindow = 0 ;"), "image",
                  2 * REFS["images"]) == REFS["image_window_1_sample"]
    # (neither the whole data set's order nor the file's)
    assert REFS["text_window_1_sample"] != REFS["text_window_128_chunks"]
    assert REFS["text_window_1_sample"][:REFS["lines"]] != list(range(REFS["lines"]))


def _outer_order(path, outer, reader_type, size=7):
    """The order of a ``train`` block's reader whose window settings are ``outer``'s, in the
    block around the reader (cntk.exe's ``config(key)`` looks there: Config.h:911-929, 1003)."""
    if reader_type:
        reader = (f'reader = {{ readerType = "CNTKTextFormatReader" ; file = "{path}" ; '
                  'input = { x = { dim = 1 ; format = "dense" } } }')
    else:
        reader = ('reader = { deserializers = ({ type = "CNTKTextFormatDeserializer" ; '
                  f'file = "{path}" ; input = {{ x = {{ dim = 1 ; format = "dense" }} }} }}) }}')
    text = f"train = [ {outer} ; {reader} ]"
    block = parse_config(text)["train"]["reader"]
    source = make_source(reader_config(block))
    ids: list[int] = []
    try:
        while len(ids) < 2 * REFS["lines"]:
            data = source.next_minibatch(size)["x"].data
            ids += [int(round(float(v))) for v in data.reshape(len(data), -1)[:, 0]]
    finally:
        source.close()
    return ids[:2 * REFS["lines"]]


def test_a_text_readers_window_settings_in_the_block_around_it_are_cntk_exes(text):
    # readerType = "CNTKTextFormatReader" reads randomizationWindow (config.Exists, parents
    # too: ReaderUtil.cpp:30-33) and chunkSizeInBytes (TextConfigHelper.cpp:127) from the
    # block around the reader; at 40a7d422 both were ignored there (one 32 MB chunk)
    chunks = f"chunkSizeInBytes = {REFS['chunk_bytes']}"
    assert _outer_order(text, f"randomizationWindow = 3 ; {chunks}", True) == \
        REFS["text_window_3_chunks"]
    # a deserializers list: the file's chunks from around it (the deserializer's config looks
    # in its parents), but an enclosing randomizationWindow is not the block's own
    # (ExistsCurrent, CompositeDataReader.cpp:149): 4 GB of chunks, as with none
    assert _outer_order(text, f"randomizationWindow = 3 ; {chunks}", False) == \
        REFS["text_window_128_chunks"]


def test_a_deserializer_blocks_chunk_size_does_not_size_the_lists_default_window(tmp_path):
    # CompositeDataReader.cpp:155 divides 4 GB by the reader's chunkSizeInBytes (32 MB unless
    # the reader block or one around it says): 128 chunks, whatever the text deserializer's own
    # block gives its file (at 40a7d422: 4 GB / 1000 = 4294967 chunks)
    block = ('reader = { deserializers = ({ type = "CNTKTextFormatDeserializer" ; '
             'file = "t.ctf" ; chunkSizeInBytes = 1000\n'
             '    input = { x = { dim = 1 ; format = "dense" } } }) }')
    reader = reader_config(parse_config(block)["reader"])
    assert randomization_window(reader) == {"randomization_window_in_chunks": 128}
    around = parse_config(f"t = [ chunkSizeInBytes = 1000 ; {block} ]")["t"]["reader"]
    assert randomization_window(reader_config(around)) == \
        {"randomization_window_in_chunks": (1 << 32) // 1000}


@pytest.mark.parametrize("reader_type", [True, False], ids=["reader", "list"])
def test_randomize_false_in_the_block_around_the_reader_reads_in_file_order(text, reader_type):
    # cntk.exe's config(L"randomize", true) looks in the blocks around the reader too
    # (CompositeDataReader.cpp:109, ReaderUtil.cpp:14-23; Config.h:911-929, 1003): no
    # randomizer, the file's order each sweep; at 40a7d422 the enclosing 'false' was ignored
    # and the lines came shuffled
    got = _outer_order(text, f"randomize = false ; chunkSizeInBytes = {REFS['chunk_bytes']}",
                       reader_type)
    assert got == 2 * list(range(REFS["lines"]))


def test_a_bad_randomize_around_the_reader_is_named_where_it_is():
    text = ('t = [ randomize = maybe\n  reader = { readerType = "CNTKTextFormatReader" ; '
            'file = "x.ctf" ; input = { x = { dim = 1 ; format = "dense" } } } ]')
    with pytest.raises(ConfigError, match=r":1:19: 'randomize' must be true, false, auto or "
                                          "none, got 'maybe'"):
        reader_config(parse_config(text)["t"]["reader"])

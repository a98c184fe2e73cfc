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

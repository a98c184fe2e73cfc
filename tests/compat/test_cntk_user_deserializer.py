"""``cntk.io.UserDeserializer`` where Stadyn goes past CNTK 2.7 (the cases in
``compat_cases/cntk_user_deserializer.py`` hold it to CNTK where CNTK reads the data): CNTK
2.7 refuses a ``UserDeserializer`` beside other deserializers and sequences in frame mode;
here the first is joined by position and the second cut into frames. Also the base class's
own errors and its ``streams`` record."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn import DataError


class Chunks(C.io.UserDeserializer):
    def __init__(self, chunks, infos):
        super().__init__()
        self.chunks, self.infos = chunks, infos

    def stream_infos(self):
        return self.infos

    def num_chunks(self):
        return len(self.chunks)

    def get_chunk(self, chunk_id):
        return self.chunks[chunk_id]


X = C.io.StreamInformation("x", 0, "dense", np.float32, (1,))


def test_joined_with_a_ctf_deserializer_by_position(tmp_path):
    ctf = tmp_path / "labels.ctf"
    ctf.write_text("".join(f"{i} |label {10 * i}\n" for i in range(5)))
    labels = C.io.CTFDeserializer(str(ctf), C.io.StreamDefs(
        label=C.io.StreamDef(field="label", shape=1)))
    chunks = [{"x": np.arange(3, dtype=np.float32)[:, None]},
              {"x": np.arange(3, 5, dtype=np.float32)[:, None]}]
    src = C.io.MinibatchSource([Chunks(chunks, [X]), labels], randomize=True, max_sweeps=1)
    mb = src.next_minibatch(5)
    x = mb[src.streams.x].asarray().ravel()
    assert sorted(x.tolist()) == [0, 1, 2, 3, 4]
    assert (mb[src.streams.label].asarray().ravel() == 10 * x).all()


def test_frame_mode_refuses_a_sequence_of_several_samples():
    # CNTK 2.7 does not cut a UserDeserializer's sequences into frames: its frame packer
    # refuses them (FramePacker.cpp:20-25; case cntk_io_38 frame_mode__user_deserializer)
    chunks = [{"x": [np.array([[0], [1]], np.float32), np.array([[2], [3], [4]], np.float32)]}]
    src = C.io.MinibatchSource(Chunks(chunks, [X]), randomize=False, max_sweeps=1,
                               frame_mode=True)
    with pytest.raises(RuntimeError, match="non-frame sequence of size 2"):
        src.next_minibatch(4)


def test_streams_record_is_set_once_a_source_reads_the_deserializer():
    d = Chunks([{"x": np.zeros((2, 1), np.float32)}], [X])
    C.io.MinibatchSource(d)
    assert d.streams.x is X


def test_the_base_class_methods_say_what_to_override():
    with pytest.raises(NotImplementedError, match="list of StreamInformation"):
        C.io.MinibatchSource(C.io.UserDeserializer())


def test_a_stream_given_as_flat_rows_is_refused():
    """A (2, 3) stream handed over as rows of 6 values: CNTK 2.7 refuses it ('Dense data
    supported only as single sample per row'), but that error path corrupts its heap and
    aborts its process later, so it is not among the reference cases."""
    info = [C.io.StreamInformation("m", 0, "dense", np.float32, (2, 3))]
    block = np.arange(24, dtype=np.float32).reshape(4, 6)
    with pytest.raises(DataError, match=r"chunk 0, stream 'm': an array of shape \(4, 6\)"):
        src = C.io.MinibatchSource(Chunks([{"m": block}], info), randomize=False, max_sweeps=1)
        src.next_minibatch(4)

"""A CTF deserializer leaves no file open for its life: the first sequence it validates at
construction is read through a handle closed at once (a :class:`MinibatchSource` reads its own
copy of it, so a kept handle stayed open until the object was collected: BrainScript's
``stadyn train`` printed "unclosed file" ResourceWarnings for its train and test files)."""

import gc
import warnings

from stadyn import io


def _write(path, n=6):
    path.write_text("".join(f"|x {i} {i + 1} |y 1 0\n" for i in range(n)))
    return path


def test_a_deserializer_read_by_a_source_leaves_no_file_open(tmp_path):
    path = _write(tmp_path / "data.ctf")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = io.CTFDeserializer(str(path), io.StreamDefs(
            x=io.StreamDef(field="x", shape=2), y=io.StreamDef(field="y", shape=2)))
        source = io.MinibatchSource(d, randomize=False, max_sweeps=1)
        mb = source.next_minibatch(4)
        assert mb["x"].data.reshape(-1, 2)[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
        source.close()
        del source, d, mb
        gc.collect()
    # (only this file's: the collection may also finalize what earlier tests left)
    unclosed = [str(w.message) for w in caught
                if issubclass(w.category, ResourceWarning) and str(path) in str(w.message)]
    assert unclosed == []

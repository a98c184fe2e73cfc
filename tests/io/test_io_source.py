"""MinibatchSource: sweeps, limits, input maps, checkpoints, partitions, workers, sequences."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stadyn._errors import DataError
from stadyn.io import (FULL_DATA_SWEEP, CTFDeserializer, ImageDeserializer, MinibatchSource,
                       MinibatchSourceFromData, NumpyDeserializer, StreamDef, StreamDefs,
                       StreamInformation)
from stadyn.io import transforms as T


def numbers(n: int) -> NumpyDeserializer:
    return NumpyDeserializer({"x": np.arange(n, dtype=np.float32)[:, None],
                              "y": np.arange(n, dtype=np.int64)})


def values(mb) -> list[int]:
    return mb["x"].data[:, 0].astype(int).tolist()


def image_source(folder, **kwargs) -> MinibatchSource:
    des = ImageDeserializer(folder / "map.txt", StreamDefs(
        features=StreamDef(field="image", transforms=[
            T.crop(crop_type="randomside", side_ratio=(0.6, 0.9), jitter_type="uniratio"),
            T.scale(32, 32, 3), T.color(0.2, 0.2, 0.2), T.mean(str(folder / "mean.xml"))]),
        labels=StreamDef(field="label", shape=5)))
    return MinibatchSource(des, **kwargs)


def test_in_order_sweeps_end_of_sweep_and_exhaustion():
    src = MinibatchSource(numbers(5), randomize=False, max_sweeps=2)
    got = [src.next_minibatch(3) for _ in range(4)]
    assert [values(mb) for mb in got] == [[0, 1, 2], [3, 4, 0], [1, 2, 3], [4]]
    assert [mb["x"].end_of_sweep for mb in got] == [False, True, False, True]
    assert [mb["x"].num_samples for mb in got] == [3, 3, 3, 1]
    assert src.next_minibatch(3) == {} and src.next_minibatch(1) == {}


def test_arrays_without_samples_are_an_error_not_a_source_that_ends_at_once():
    with pytest.raises(DataError, match=r"^<arrays>: no samples"):
        NumpyDeserializer({"x": np.zeros((0, 2), np.float32)})
    with pytest.raises(DataError, match="no samples"):
        MinibatchSourceFromData({"x": np.zeros((0, 2), np.float32)})


def test_a_custom_deserializer_without_samples_is_an_error_too():
    from stadyn.io import Deserializer, StreamSpec

    class Nothing(Deserializer):
        path = "my-db"

        def stream_specs(self):
            return {"x": StreamSpec((2,), np.dtype(np.float32))}

        def __len__(self):
            return 0

        def read_batch(self, ids, rngs):
            raise AssertionError("never read")

    with pytest.raises(DataError, match=r"^my-db: no samples"):
        MinibatchSource(Nothing())


def test_max_samples_and_full_data_sweep():
    src = MinibatchSource(numbers(5), randomize=False, max_samples=7)
    assert [len(values(src.next_minibatch(4))) for _ in range(2)] == [4, 3]
    assert src.next_minibatch(4) == {}
    one = MinibatchSource(numbers(5), randomize=False, max_samples=FULL_DATA_SWEEP)
    assert values(one.next_minibatch(100)) == [0, 1, 2, 3, 4] and one.next_minibatch(1) == {}
    assert MinibatchSource(numbers(5)).is_infinite()


def test_randomized_sweeps_are_seeded_permutations():
    src = MinibatchSource(numbers(50), randomization_seed=3, max_sweeps=3)
    sweeps = [values(src.next_minibatch(50)) for _ in range(3)]
    assert all(sorted(s) == list(range(50)) for s in sweeps)
    assert sweeps[0] != sweeps[1] != sweeps[2] and sweeps[0] != list(range(50))
    again = MinibatchSource(numbers(50), randomization_seed=3)
    assert values(again.next_minibatch(50)) == sweeps[0]
    other = MinibatchSource(numbers(50), randomization_seed=4)
    assert values(other.next_minibatch(50)) != sweeps[0]


def test_minibatch_keys_streams_and_input_map():
    src = MinibatchSource(numbers(4), randomize=False)
    mb = src.next_minibatch(2)
    info = src.streams.x
    assert isinstance(info, StreamInformation) and info.shape == (1,) and info.name == "x"
    assert set(mb) == {src.streams.x, src.streams.y}
    assert mb[info] is mb["x"] and "x" in mb and "nope" not in mb
    data = mb["y"]
    assert (data.shape, data.num_sequences, len(data), data.asarray().tolist()) == \
        ((2,), 2, 2, [0, 1])
    assert data.sweep_end is False and data.data.dtype == np.int64
    keyed = src.next_minibatch(2, input_map={"features": src.streams.x, 42: "y"})
    assert set(keyed) == {"features", 42} and keyed[42].data.tolist() == [2, 3]
    # StreamInformation of another source with the same stream names works (CNTK CIFAR example)
    other = MinibatchSource(numbers(4), randomize=False)
    assert other.next_minibatch(1, input_map={"x": src.streams.x})["x"].data.tolist() == [[0]]
    with pytest.raises(KeyError, match="not a stream"):
        src.next_minibatch(1, input_map={"z": "zz"})
    with pytest.raises(KeyError):
        src.stream_info("zz")


def test_checkpoint_restores_exactly(ten_images):
    plain = image_source(ten_images)
    sizes = [3, 4, 7, 2, 5, 6]
    reference = [plain.next_minibatch(n) for n in sizes]
    src = image_source(ten_images)
    for n in sizes[:2]:
        src.next_minibatch(n)
    state = json.loads(json.dumps(src.get_checkpoint_state()))
    src.next_minibatch(5)  # read on, then go back
    src.restore_from_checkpoint(state)
    restored = image_source(ten_images)
    restored.restore_from_checkpoint(state)
    for source in (src, restored):
        for n, want in zip(sizes[2:], reference[2:]):
            got = source.next_minibatch(n)
            assert np.array_equal(got["features"].data, want["features"].data)
            assert np.array_equal(got["labels"].data, want["labels"].data)
            assert got["features"].end_of_sweep == want["features"].end_of_sweep
    with pytest.raises(ValueError, match="samples per sweep"):
        MinibatchSource(numbers(3)).restore_from_checkpoint(state)


def test_partitions_see_every_sample_once_per_sweep():
    n, world = 23, 3
    seen = []
    # partition r reads its every-3rd sample (8, 8 and 7 of them) in its part of the
    # minibatch of 8 (3, 3, 2), as CNTK 2.7 reads (arrays: no chunks to deal out whole)
    sizes = [[3, 3, 2], [3, 3, 2], [2, 2, 2, 1]]
    for rank in range(world):
        src = MinibatchSource(numbers(n), randomization_seed=1, max_sweeps=1)
        mine, counts = [], []
        while True:
            mb = src.next_minibatch(8, num_data_partitions=world, partition_index=rank)
            if not mb:
                break
            counts.append(mb["x"].num_samples)
            mine += values(mb)
        assert counts == sizes[rank]
        seen.append(mine)
    assert sorted(sum(seen, [])) == list(range(n))
    assert all(len(s) in (7, 8) for s in seen)
    ctor = MinibatchSource(numbers(n), randomization_seed=1, num_data_partitions=3,
                           partition_index=2, max_sweeps=1)
    assert values(ctor.next_minibatch(n)) == seen[2]
    with pytest.raises(ValueError):
        MinibatchSource(numbers(3), num_data_partitions=2, partition_index=2)


def test_workers_give_the_same_batches_as_the_main_process(ten_images):
    sizes = [4, 4, 7, 1, 16, 3, 9, 30]
    want = [image_source(ten_images).next_minibatch(n) for n in [sum(sizes)]][0]
    for workers in (1, 2):
        with image_source(ten_images, num_workers=workers, prefetch=2) as src:
            got = [src.next_minibatch(n) for n in sizes]
        for stream in ("features", "labels"):
            joined = np.concatenate([mb[stream].data for mb in got])
            assert np.array_equal(joined, want[stream].data), (workers, stream)


def test_workers_with_partitions_and_restore(ten_images):
    ref = image_source(ten_images)
    want = [ref.next_minibatch(6, num_data_partitions=2, partition_index=1) for _ in range(5)]
    with image_source(ten_images, num_workers=2, num_data_partitions=2, partition_index=1) as src:
        got = [src.next_minibatch(6) for _ in range(3)]
        state = src.get_checkpoint_state()
        src.next_minibatch(6)
        src.restore_from_checkpoint(state)
        got += [src.next_minibatch(6) for _ in range(2)]
    for g, w in zip(got, want):
        assert np.array_equal(g["features"].data, w["features"].data)


def test_sequences_count_samples_and_come_with_masks():
    text = b"".join(b"%d |x %d\n" % (seq, seq * 10 + t) for seq, length in enumerate([3, 1, 2, 4])
                    for t in range(length))
    ctf = CTFDeserializer.from_bytes(text, StreamDefs(x=StreamDef(shape=1)))
    src = MinibatchSource(ctf, randomize=False, max_sweeps=1)
    assert src.streams.x.is_sequence and src.sweep_size == 10
    first = src.next_minibatch(4)["x"]  # 3 + 1 samples
    assert (first.num_samples, first.num_sequences, first.shape) == (4, 2, (2, 3, 1))
    assert first.mask.tolist() == [[True, True, True], [True, False, False]]
    assert [s[:, 0].tolist() for s in first.as_sequences()] == [[0, 1, 2], [10]]
    second = src.next_minibatch(1)["x"]  # a sequence longer than asked still comes whole
    assert (second.num_samples, second.num_sequences) == (2, 1)
    third = src.next_minibatch(100)["x"]
    assert (third.num_samples, third.end_of_sweep) == (4, True)
    assert src.next_minibatch(1) == {}


def test_deserializers_are_joined_by_key(tmp_path, ten_images):
    lines = (ten_images / "map.txt").read_text().splitlines()
    # CTF sequence ids are numbers, as CNTK 2.7 reads them beside an image deserializer
    (tmp_path / "keyed.txt").write_text("".join(f"{i}\t{line}\n" for i, line in enumerate(lines)))
    ctf = b"".join(b"%d |w %d\n" % (i, 100 + i) for i in reversed(range(10)))
    des = ImageDeserializer(tmp_path / "keyed.txt", StreamDefs(
        features=StreamDef(field="image"), labels=StreamDef(field="label", shape=5)))
    src = MinibatchSource([des, CTFDeserializer.from_bytes(ctf, StreamDefs(w=StreamDef(shape=1)))],
                          randomize=False)
    mb = src.next_minibatch(10)
    assert mb["w"].data[:, 0].tolist() == [100 + i for i in range(10)]
    assert np.argmax(mb["labels"].data, axis=1).tolist() == [i % 5 for i in range(10)]
    with pytest.raises(ValueError, match="two deserializers define"):
        MinibatchSource([numbers(3), numbers(3)])


def test_minibatch_source_from_data():
    # CNTK 2.7's MinibatchSourceFromData ends a minibatch at the end of a sweep (the compat
    # harness's minibatch_source_from_data case holds its numbers)
    src = MinibatchSourceFromData({"a": np.eye(3, dtype=np.float32)}, max_samples=5)
    assert src.next_minibatch(4)["a"].data.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert src.next_minibatch(4)["a"].data.tolist() == [[1, 0, 0], [0, 1, 0]]
    assert src.next_minibatch(4) == {}


@pytest.mark.parametrize("size", [None, "64", 2.5, True, float("inf")])
def test_a_minibatch_size_that_is_not_an_int_is_a_clear_type_error(size):
    source = MinibatchSource(NumpyDeserializer({"x": np.zeros((4, 1), np.float32)}))
    with pytest.raises(TypeError) as err:
        source.next_minibatch(size)
    assert str(err.value) == f"minibatch_size_in_samples must be a positive int, got {size!r}"
    assert len(source.next_minibatch(2.0)["x"].data) == 2      # an integral float still works

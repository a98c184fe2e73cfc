"""A ``MinibatchSource(truncation_length=N)`` (CNTK's truncated back-propagation packing)
restored from a checkpoint taken between two minibatches goes on as the uninterrupted source:
the sequences its slots held (partly given out) come back, none lost or repeated."""

import numpy as np

import stadyn.compat.cntk as C

LENGTHS = [7, 3, 9, 5, 4, 6, 8, 2]


def _source(path):
    streams = C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1))
    return C.io.MinibatchSource(C.io.CTFDeserializer(str(path), streams), randomize=False,
                                max_sweeps=2, truncation_length=4)


def _read(src, count=None):
    out = []
    while count is None or len(out) < count:
        mb = src.next_minibatch(8)
        if not mb:
            break
        d = mb[src.streams.x]
        out.append(([s.ravel().tolist() for s in d.as_sequences()], d.end_of_sweep,
                    src._packer.layout.begins))
    return out


def test_a_truncated_source_restored_mid_sweep_goes_on_as_the_uninterrupted_one(tmp_path):
    path = tmp_path / "seq.ctf"
    with open(path, "w") as f:
        for s, n in enumerate(LENGTHS):
            for t in range(n):
                f.write(f"{s} |x {100 * s + t}\n")
    whole = _read(_source(path))
    # every step of both sweeps is given out once, in order within each sequence
    steps = sorted(v for mb, _, _ in whole for seq in mb for v in seq)
    assert steps == sorted(2 * [100 * s + t for s, n in enumerate(LENGTHS) for t in range(n)])
    for cut in (1, 3, 5):
        first = _source(path)
        head = _read(first, cut)
        state = first.get_checkpoint_state()
        first.next_minibatch(8)                 # read on: the restore must undo it
        first.restore_from_checkpoint(state)
        assert head + _read(first) == whole
        fresh = _source(path)                   # a new source restored from the state
        fresh.restore_from_checkpoint(state)
        assert head + _read(fresh) == whole
    assert np.sum([len(mb) for mb, _, _ in whole]) > len(whole)   # pieces of several sequences

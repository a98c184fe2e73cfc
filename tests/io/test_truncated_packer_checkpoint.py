"""``stadyn.io.TruncatedPacker`` (CNTK's truncated back-propagation packing) restored from its
state and its source's, taken between two minibatches, goes on as the uninterrupted packer:
the sequences its slots held (partly given out) come back, none lost or repeated, in one
partition of several too.  (``compat.cntk``'s ``MinibatchSource.restore_from_checkpoint``
empties the slots instead, as CNTK 2.7 does: the harness case ``truncated_checkpoint``.)"""

import numpy as np

from stadyn.io import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs, TruncatedPacker

LENGTHS = [7, 3, 9, 5, 4, 6, 8, 2]


def _packer(path):
    src = MinibatchSource(CTFDeserializer(str(path), StreamDefs(x=StreamDef("x", shape=1))),
                          randomize=False, max_sweeps=2)
    return TruncatedPacker(src, 4)


def _read(packer, count=None, partitions=(1, 0)):
    out = []
    while count is None or len(out) < count:
        mb = packer.next_minibatch(8, None, *partitions)
        if not mb:
            break
        d = next(iter(mb.values()))
        out.append(([np.asarray(s).ravel().tolist() for s in d.as_sequences()],
                    d.end_of_sweep, packer.layout.begins))
    return out


def _state(packer):
    return packer.get_state(), MinibatchSource.get_checkpoint_state(packer.source)


def test_a_truncated_packer_restored_mid_sweep_goes_on_as_the_uninterrupted_one(tmp_path):
    path = tmp_path / "seq.ctf"
    with open(path, "w") as f:
        for s, n in enumerate(LENGTHS):
            for t in range(n):
                f.write(f"{s} |x {100 * s + t}\n")
    for partitions, cuts in (((1, 0), (1, 3, 5)), ((2, 0), (1, 4)), ((2, 1), (2,))):
        whole = _read(_packer(path), partitions=partitions)
        # every step of both sweeps given out once, in order within each sequence
        count, index = partitions
        steps = sorted(v for mb, _, _ in whole for seq in mb for v in seq)
        assert steps == sorted(2 * [100 * s + t for s, n in enumerate(LENGTHS)
                                    if s % count == index for t in range(n)])
        for cut in cuts:
            first = _packer(path)
            head = _read(first, cut, partitions)
            state = _state(first)
            first.next_minibatch(8, None, *partitions)   # read on: the restore must undo it
            first.restore(*state)
            assert head + _read(first, partitions=partitions) == whole
            fresh = _packer(path)                   # a new packer restored from the state
            fresh.restore(*state)
            assert head + _read(fresh, partitions=partitions) == whole
        assert np.sum([len(mb) for mb, _, _ in whole]) > len(whole)   # several per row

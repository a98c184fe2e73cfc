"""Deserializers written in Python (``cntk.io.UserDeserializer``: ``stream_infos``,
``num_chunks``, ``get_chunk``) read by a ``MinibatchSource``: minibatches in chunk order
(values, sample and sequence counts, sweep ends, across sweeps), samples and sequences, dense
and sparse streams, ``max_samples``, randomized sweeps (each sweep's multiset of samples; the
order itself is compared in ``cntk_randomization.py``), checkpoints, bad chunks, and a
training loop over ``Trainer.train_minibatch``."""

import numpy as np

from compat_harness import cntk_case

_METHODS = ["cntk.io.UserDeserializer.stream_infos", "cntk.io.UserDeserializer.num_chunks",
            "cntk.io.UserDeserializer.get_chunk"]


def _deserializer(C, infos, chunks):
    class Chunks(C.io.UserDeserializer):
        """Hands over the chunks it was given (an exception in place of a chunk is raised)."""

        def __init__(self):
            super(Chunks, self).__init__()
            self.infos, self.chunks = infos, chunks

        def stream_infos(self):
            return self.infos

        def num_chunks(self):
            return len(self.chunks)

        def get_chunk(self, chunk_id):
            chunk = self.chunks[chunk_id]
            if isinstance(chunk, Exception):
                raise chunk
            return chunk
    return Chunks()


def _counting_chunks(sizes, dim=2, classes=3):
    """Chunks of ``sizes`` samples numbered on from 0: x = (k, k + 0.5), y one-hot k % 3."""
    chunks, k = [], 0
    for n in sizes:
        ids = np.arange(k, k + n)
        chunks.append({"x": (ids[:, None] + np.arange(dim) * 0.5).astype(np.float32),
                       "y": np.eye(classes, dtype=np.float32)[ids % classes]})
        k += n
    return chunks


def _as_dense(C, data, dim):
    if data.is_sparse:
        seqs = data.as_sequences(C.sequence.input_variable(dim, is_sparse=True))
        return [np.asarray(s.todense() if hasattr(s, "todense") else s, np.float32)
                for s in seqs]
    return [np.asarray(s, np.float32) for s in data.as_sequences()]


def _read(C, src, dims, size, count, tag=""):
    """``count`` minibatches: per stream the steps stacked, the sequence lengths and
    [samples, sequences, sweep end, shape]."""
    res = {}
    for i in range(count):
        mb = src.next_minibatch(size)
        if not mb:
            res["%smb%d" % (tag, i)] = "empty"
            continue
        for name, dim in sorted(dims.items()):
            d = mb[src.streams[name]]
            seqs = _as_dense(C, d, dim)
            res["%s%s%d" % (tag, name, i)] = np.concatenate([s.reshape(-1, dim) for s in seqs])
            res["%s%s_len%d" % (tag, name, i)] = [int(s.reshape(-1, dim).shape[0])
                                                  for s in seqs]
            res["%s%s_mb%d" % (tag, name, i)] = [int(d.num_samples), int(d.num_sequences),
                                                 bool(d.end_of_sweep), list(d.shape)]
            del d
        del mb
    return res


@cntk_case(names=["cntk.io.UserDeserializer", "cntk.io.StreamInformation",
                  "cntk.io.MinibatchSource"] + _METHODS,
           note="samples (arrays of N rows and a csr_matrix), 3 chunks of 3, 2 and 4, not "
                "randomized, two sweeps in minibatches of 4 (one crosses the sweep's end); "
                "the deserializer's streams; frame_mode gives the same")
def user_deserializer(C, r):
    r.touch(*_METHODS)
    import scipy.sparse as sp
    chunks = _counting_chunks([3, 2, 4])
    for c in chunks:
        c["y"] = sp.csr_matrix(c["y"])
    infos = [C.io.StreamInformation("x", 0, "dense", np.float32, (2,)),
             C.io.StreamInformation("y", 1, "sparse", np.float32, (3,))]
    d = _deserializer(C, infos, chunks)
    src = C.io.MinibatchSource(d, randomize=False, max_sweeps=2)
    res = _read(C, src, {"x": 2, "y": 3}, 4, 6)
    res["streams"] = sorted([str(k), list(v.sample_shape), str(v.storage_format)]
                            for k, v in d.streams.items())
    frames = C.io.MinibatchSource(_deserializer(C, infos, chunks), randomize=False,
                                  max_sweeps=1, frame_mode=True)
    res.update(_read(C, frames, {"x": 2}, 5, 3, tag="frame_"))
    return res


@cntk_case(names=["cntk.io.UserDeserializer", "cntk.io.MinibatchSource"] + _METHODS,
           note="sequences (lists of (T, 1) arrays) beside a stream of one row per sequence: "
                "minibatches of 4 samples stop before a sequence that would not fit; two "
                "sweeps, then max_samples=6; a (2, 3) stream given as (N, 2, 3) (as flat "
                "rows (N, 6) CNTK refuses it, but that error path corrupts CNTK's heap: "
                "test_cntk_user_deserializer.py holds Stadyn's refusal)")
def user_deserializer__sequences(C, r):
    r.touch(*_METHODS)
    chunks = [{"x": [np.full((2, 1), 0, np.float32), np.full((3, 1), 1, np.float32)],
               "y": np.array([[0], [1]], np.float32)},
              {"x": [np.full((1, 1), 2, np.float32), np.full((2, 1), 3, np.float32)],
               "y": np.array([[2], [3]], np.float32)}]
    infos = [C.io.StreamInformation("x", 0, "dense", np.float32, (1,)),
             C.io.StreamInformation("y", 1, "dense", np.float32, (1,))]
    src = C.io.MinibatchSource(_deserializer(C, infos, chunks), randomize=False, max_sweeps=2)
    res = _read(C, src, {"x": 1, "y": 1}, 4, 6)
    src = C.io.MinibatchSource(_deserializer(C, infos[:1], [{"x": c["x"]} for c in chunks]),
                               randomize=False, max_samples=6)
    res.update(_read(C, src, {"x": 1}, 4, 3, tag="max6_"))
    block = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    info = [C.io.StreamInformation("m", 0, "dense", np.float32, (2, 3))]
    src = C.io.MinibatchSource(_deserializer(C, info, [{"m": block}]), randomize=False,
                               max_sweeps=1)
    mb = src.next_minibatch(4)
    res["stacked"] = np.array(mb[src.streams.m].asarray(), copy=True).reshape(4, 2, 3)
    del mb
    return res


def _sweeps(C, src, size, per_sweep):
    """Every sample's id until the source ends, each sweep's sorted, the minibatch sizes and
    sweep ends, and whether any sweep came out in file order."""
    ids, sizes, ends = [], [], []
    while True:
        mb = src.next_minibatch(size)
        if not mb:
            break
        d = mb[src.streams.x]
        ids.extend(int(v) for v in np.asarray(d.asarray()).reshape(-1, 2)[:, 0])
        sizes.append(int(d.num_samples))
        ends.append(bool(d.end_of_sweep))
        del d, mb
    sweeps = [ids[k:k + per_sweep] for k in range(0, len(ids), per_sweep)]
    return {"sorted": [sorted(s) for s in sweeps], "sizes": sizes, "ends": ends,
            "in_order": any(s == sorted(s) for s in sweeps)}


@cntk_case(names=["cntk.io.UserDeserializer", "cntk.io.MinibatchSource"] + _METHODS,
           note="randomize=True over 4 chunks (14 samples), three sweeps in minibatches of 5, "
                "with the default window, a window of one chunk and another seed: each sweep "
                "holds every sample once, the sweep ends fall where they do in order "
                "(the order itself: cntk_randomization.py)")
def user_deserializer__randomized(C, r):
    r.touch(*_METHODS)
    infos = [C.io.StreamInformation("x", 0, "dense", np.float32, (2,)),
             C.io.StreamInformation("y", 1, "dense", np.float32, (3,))]
    chunks = _counting_chunks([3, 2, 4, 5])
    res = {}
    for tag, kw in [("default", {}), ("window1", dict(randomization_window_in_chunks=1)),
                    ("seed5", dict(randomization_seed=5))]:
        src = C.io.MinibatchSource(_deserializer(C, infos, chunks), max_sweeps=3, **kw)
        for key, value in _sweeps(C, src, 5, 14).items():
            res["%s_%s" % (tag, key)] = value
    return res


@cntk_case(names=["cntk.io.UserDeserializer", "cntk.io.MinibatchSource.get_checkpoint_state",
                  "cntk.io.MinibatchSource.restore_from_checkpoint"] + _METHODS,
           note="a state taken after two minibatches and restored after three more: the same "
                "three again (in order, and randomized)")
def user_deserializer__checkpoint(C, r):
    r.touch(*_METHODS)
    r.touch("cntk.io.MinibatchSource.get_checkpoint_state",
            "cntk.io.MinibatchSource.restore_from_checkpoint")
    infos = [C.io.StreamInformation("x", 0, "dense", np.float32, (2,)),
             C.io.StreamInformation("y", 1, "dense", np.float32, (3,))]
    res = {}
    for tag, randomize in [("ordered", False), ("randomized", True)]:
        src = C.io.MinibatchSource(_deserializer(C, infos, _counting_chunks([3, 2, 4])),
                                   randomize=randomize)
        for _ in range(2):
            src.next_minibatch(4)
        state = src.get_checkpoint_state()
        first = [np.array(src.next_minibatch(4)[src.streams.x].asarray(), copy=True)
                 for _ in range(3)]
        src.restore_from_checkpoint(state)
        again = [np.array(src.next_minibatch(4)[src.streams.x].asarray(), copy=True)
                 for _ in range(3)]
        res[tag + "_same"] = all(np.array_equal(a, b) for a, b in zip(first, again))
        if not randomize:
            res[tag] = np.concatenate(again).reshape(-1, 2)
    return res


def _bad_chunks():
    f = ("x", (2,))
    g = ("y", (1,))
    z = np.zeros
    return [
        ("counts", [f, g], [{"x": z((2, 2), np.float32), "y": z((3, 1), np.float32)}]),
        ("seq_counts", [f, g], [{"x": [z((2, 2), np.float32)],
                                 "y": [z((1, 1), np.float32)] * 2}]),
        ("float64", [f], [{"x": z((2, 2), np.float64)}]),
        ("int64", [f], [{"x": np.arange(4).reshape(2, 2)}]),
        ("get_chunk_raises", [f], [{"x": z((2, 2), np.float32)}, ValueError("no chunk")]),
        ("no_chunks", [f], []),
        ("no_streams", [], [{"x": z((2, 2), np.float32)}]),
        ("not_a_dict", [f], [z((2, 2), np.float32)]),
        ("unknown_stream", [f], [{"x": z((2, 2), np.float32), "w": z((2, 2), np.float32)}]),
        ("empty_chunk", [f], [{"x": z((0, 2), np.float32)}, {"x": z((2, 2), np.float32)}]),
        ("sparse_for_dense", [f], "csr"),
    ]


@cntk_case(names=["cntk.io.UserDeserializer", "cntk.io.MinibatchSource"] + _METHODS,
           note="chunks CNTK 2.7 refuses (when the source is made or read): streams with "
                "different numbers of sequences, float64 or integer "
                "data for a float32 stream, get_chunk raising, no chunks, no streams, not a "
                "dict, a stream not declared, a chunk of no samples, a csr_matrix for a dense "
                "stream.  Only whether it fails is compared (CNTK crashes outright on a chunk "
                "missing a stream, and reads rows of the wrong size silently; rows of the wrong "
                "rank raise 'Dense data supported only as single sample per row' but corrupt "
                "its heap, so the generator aborted later, now and then: not run here)")
def user_deserializer__bad_chunks(C, r):
    r.touch(*_METHODS)
    import scipy.sparse as sp
    res = {}
    for name, streams, chunks in _bad_chunks():
        if chunks == "csr":
            chunks = [{"x": sp.csr_matrix(np.eye(2, dtype=np.float32))}]
        infos = [C.io.StreamInformation(s, k, "dense", np.float32, shape)
                 for k, (s, shape) in enumerate(streams)]
        try:
            src = C.io.MinibatchSource(_deserializer(C, infos, chunks), randomize=False,
                                       max_sweeps=1)
            for _ in range(3):
                mb = src.next_minibatch(4)
                del mb
            res[name] = "read"
        except Exception:
            res[name] = "failed"
    return res


@cntk_case(names=["cntk.io.UserDeserializer", "cntk.Trainer.train_minibatch",
                  "cntk.io.MinibatchSource.next_minibatch"] + _METHODS,
           note="linear regression trained with sgd over a UserDeserializer's minibatches of "
                "3 (input_map to the model's inputs), two sweeps, not randomized: losses, "
                "samples seen and parameters after every step")
def user_deserializer__train_minibatch(C, r):
    r.touch(*_METHODS)
    r.touch("cntk.Trainer.train_minibatch", "cntk.io.MinibatchSource.next_minibatch")
    feats = r.randn(8, 3)
    target = (feats @ np.array([[0.5], [-1.0], [2.0]], np.float32) + 0.25).astype(np.float32)
    chunks = [{"f": feats[a:b], "t": target[a:b]} for a, b in [(0, 3), (3, 5), (5, 8)]]
    infos = [C.io.StreamInformation("f", 0, "dense", np.float32, (3,)),
             C.io.StreamInformation("t", 1, "dense", np.float32, (1,))]
    src = C.io.MinibatchSource(_deserializer(C, infos, chunks), randomize=False, max_sweeps=2)
    x, y = C.input_variable(3), C.input_variable(1)
    z = C.layers.Dense(1)(x)
    res = {"params": r.set_params(z.parameters)}
    trainer = C.Trainer(z, (C.squared_error(z, y), C.squared_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.05))])
    losses, seen = [], []
    step = 0
    while True:
        mb = src.next_minibatch(3, input_map={x: src.streams.f, y: src.streams.t})
        if not mb:
            break
        trainer.train_minibatch(mb)
        losses.append(float(trainer.previous_minibatch_loss_average))
        seen.append(int(trainer.total_number_of_samples_seen))
        for k, v in r.param_values(z.parameters).items():
            res["step%d_%s" % (step, k)] = v
        step += 1
        del mb
    res["losses"], res["seen"] = losses, seen
    return res


@cntk_case(names=["cntk.io.UserDeserializer", "cntk.io.StreamInformation"] + _METHODS,
           note="defines_mb_size=True on a stream of one row per sequence beside sequences of "
                "3 and 2 steps: minibatches of 2 count that stream (two sequences each, "
                "whatever their length), so does max_samples=3; two streams that define the "
                "minibatch size fail")
def user_deserializer__defines_mb_size(C, r):
    r.touch(*_METHODS)
    chunks = [{"x": [np.full((3, 1), i, np.float32) for i in range(3)],
               "y": np.arange(3, dtype=np.float32)[:, None]},
              {"x": [np.full((2, 1), i, np.float32) for i in range(3, 5)],
               "y": np.arange(3, 5, dtype=np.float32)[:, None]}]
    infos = [C.io.StreamInformation("x", 0, "dense", np.float32, (1,)),
             C.io.StreamInformation("y", 1, "dense", np.float32, (1,), True)]
    src = C.io.MinibatchSource(_deserializer(C, infos, chunks), randomize=False, max_sweeps=1)
    res = _read(C, src, {"x": 1, "y": 1}, 2, 4)
    src = C.io.MinibatchSource(_deserializer(C, infos, chunks), randomize=False, max_samples=3)
    res.update(_read(C, src, {"x": 1, "y": 1}, 2, 3, tag="max3_"))
    both = [C.io.StreamInformation("x", 0, "dense", np.float32, (1,), True),
            C.io.StreamInformation("y", 1, "dense", np.float32, (1,), True)]
    try:
        src = C.io.MinibatchSource(_deserializer(C, both, chunks), randomize=False)
        src.next_minibatch(2)
        res["two_define"] = "read"
    except Exception:
        res["two_define"] = "failed"
    return res

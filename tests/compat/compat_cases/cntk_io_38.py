"""CNTK 2.7's readers as its users drove them (session 38): frame mode over a text file's
sequences (CNTK's frame packer refuses a sequence of several samples: FramePacker.cpp:20-25),
``truncation_length`` over a file of one-line sequences, a SciPy matrix's stored zero through
``MinibatchSourceFromData``, and reading loops: randomization windows, ``max_samples`` /
``max_sweeps`` ends, checkpoints taken mid-sweep, data partitions, ``StreamDef`` edges and
sources over several deserializers.  Every case writes its files in its own working folder.
"""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_result = functools.partial(outcome, convert=as_returned, raised=as_raised)

_ONE_LINE = "0 |x 1\n1 |x 2\n2 |x 3\n"
_TWO_LINES = "0 |x 1\n0 |x 2\n1 |x 3\n"
_LATE = "0 |x 1\n1 |x 2\n1 |x 3\n2 |x 4\n"


def _write(name, text):
    with open(name, "w") as f:
        f.write(text)
    return name


def _ctf_source(C, path, fields=(("x", 1),), **kw):
    streams = C.io.StreamDefs(**dict((name, C.io.StreamDef(field=name, shape=dim))
                                     for name, dim in fields))
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), **kw)


def _values(data):
    """A MinibatchData's sequences as lists of their values (rounded: CNTK pads with what
    its buffers held)."""
    return [np.asarray(s, np.float32).reshape(len(s), -1).round(4).tolist()
            for s in data.as_sequences()]


def _read(C, src, size, stream="x", most=20):
    """What each ``next_minibatch(size)`` gives until the source ends (or what it raises):
    the values, samples, sequences and sweep ends."""
    out = []
    for _ in range(most):
        got = _result(lambda: src.next_minibatch(size))
        if "raises" in got:
            out.append(got)
            break
        mb = got["returns"]
        if not mb:
            break
        d = mb[src.streams[stream]]
        out.append({"values": _values(d), "samples": int(d.num_samples),
                    "sequences": int(d.num_sequences), "sweep_end": bool(d.end_of_sweep)})
        del d, mb
    return out


@cntk_case(name="frame_mode__ctf_sequences",
           names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer",
                  "cntk.io.MinibatchSource.next_minibatch"],
           note="frame_mode=True over a text file: a file of one-line sequences reads as "
                "before; a sequence of two lines is CNTK's RuntimeError ('Detected a non-frame "
                "sequence of size 2 in frame mode.', FramePacker.cpp:20-25) when the minibatch "
                "holding it is read, after the minibatches before it")
def frame_mode_ctf_sequences(C, r):
    res = {}
    for tag, text, size in (("one_line", _ONE_LINE, 2), ("two_lines", _TWO_LINES, 2),
                            ("late", _LATE, 1)):
        path = _write(tag + ".ctf", text)
        res[tag] = _read(C, _ctf_source(C, path, randomize=False, frame_mode=True,
                                        max_sweeps=1), size)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="frame_mode__user_deserializer",
           names=["cntk.io.UserDeserializer", "cntk.io.StreamInformation",
                  "cntk.io.MinibatchSource"],
           note="a UserDeserializer giving sequences of 2 and 3 steps, read with "
                "frame_mode=True: CNTK 2.7 does not cut them into frames, its frame packer "
                "refuses them (RuntimeError); one-row sequences read as samples")
def frame_mode_user_deserializer(C, r):
    info = [C.io.StreamInformation("x", 0, "dense", np.float32, (1,))]

    def make(chunk):
        class Chunks(C.io.UserDeserializer):
            def __init__(self):
                super(Chunks, self).__init__()

            def stream_infos(self):
                return info

            def num_chunks(self):
                return 1

            def get_chunk(self, chunk_id):
                return chunk
        return Chunks()
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    r.touch("cntk.io.UserDeserializer.stream_infos", "cntk.io.UserDeserializer.num_chunks",
            "cntk.io.UserDeserializer.get_chunk")
    res = {}
    for tag, chunk in (("sequences", {"x": [np.float32([[0], [1]]), np.float32([[2], [3], [4]])]}),
                       ("one_row", {"x": [np.float32([[0]]), np.float32([[1]])]})):
        src = C.io.MinibatchSource(make(chunk), randomize=False, max_sweeps=1, frame_mode=True)
        res[tag] = _read(C, src, 4)
    return res


@cntk_case(name="truncation__one_line_sequences",
           names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer"],
           note="truncation_length=2 over a text file whose sequences are all one line (with "
                "and without sequence ids): CNTK 2.7 packs each line as a sequence of one step "
                "(minibatches of 2 samples: one slot of 2 steps holding two sequences)")
def truncation_one_line_sequences(C, r):
    res = {}
    for tag, text in (("ids", _ONE_LINE), ("no_ids", "|x 1\n|x 2\n|x 3\n|x 4\n|x 5\n")):
        path = _write(tag + ".ctf", text)
        for size in (2, 4):
            res["%s_%d" % (tag, size)] = _read(C, _ctf_source(
                C, path, randomize=False, truncation_length=2, max_sweeps=1), size)
    return res


def _embedding_steps(C, feeds, learner):
    """``E`` of ``times(x, E)`` after a step on each minibatch of ``feeds`` (a source's
    sparse ``x`` and dense ``y``)."""
    x = C.input_variable(5, is_sparse=True)
    y = C.input_variable(2)
    E = C.parameter((5, 2), init=(np.arange(10, dtype=np.float32).reshape(5, 2) / 10))
    z = C.times(x, E)
    lr = C.learning_parameter_schedule(0.1)
    learners = {"momentum": lambda: C.momentum_sgd([E], lr, C.momentum_schedule(0.9)),
                "adagrad": lambda: C.adagrad([E], lr)}
    trainer = C.Trainer(z, (C.reduce_sum(z * y), None), [learners[learner]()])
    src = C.io.MinibatchSourceFromData(feeds, max_samples=2)
    out = []
    for _ in range(2):
        mb = src.next_minibatch(1)
        trainer.train_minibatch({x: mb[src.streams.x], y: mb[src.streams.y]})
        out.append(E.value)
    return out


@cntk_case(name="from_data__csr_stored_zero",
           names=["cntk.io.MinibatchSourceFromData", "cntk.Trainer",
                  "cntk.learners.momentum_sgd", "cntk.learners.adagrad"],
           note="MinibatchSourceFromData over a csr_matrix storing a zero (row 3 of the second "
                "sample): CNTK 2.7 keeps it, so the row-sparse gradient of E has a block for "
                "row 3, which momentum and AdaGrad update; the matrix without it differs")
def from_data_csr_stored_zero(C, r):
    import scipy.sparse as sp
    res = {}
    targets = np.float32([[1, 2], [3, 1]])
    for tag, values in (("stored", [1.0, 1.0, 0.0]), ("without", None)):
        if values is None:
            m = sp.csr_matrix((np.float32([1, 1]), [3, 1], [0, 1, 2]), shape=(2, 5))
        else:
            m = sp.csr_matrix((np.float32(values), [3, 1, 3], [0, 1, 3]), shape=(2, 5))
        for learner in ("momentum", "adagrad"):
            for step, value in enumerate(_embedding_steps(C, {"x": m, "y": targets}, learner)):
                res["%s_%s_%d" % (tag, learner, step)] = value
    r.touch("cntk.io.MinibatchSource.next_minibatch", "cntk.Parameter.value")
    return res

"""CNTK 2.7's checked mode (``cntk.debugging.set_checked_mode``) and two edges of
``MinibatchSourceFromData``'s sequences.

Checked mode: while a graph runs, CNTK checks each op's output for NaN (not inf) and the
gradient each op gives its inputs, raising a RuntimeError ``"<uid> <node type> operation
unexpectedly produced NaN values."`` (``... NaN gradients on its input <uid>.``) before any
parameter is updated.  CNTK reads the switch when it builds a Function's network (its first
run, or its first run for a backward), so a Function that ran before the switch was turned on
is not checked, and one built under it stays checked after it is turned off.  Stadyn's
``set_checked_mode`` did nothing.  Uids count every object the process made, so each uid in a
message is replaced by the name the case gave that object (``<sq>``); CNTK's message's first
line is compared (Stadyn adds the user's line after it).

``MinibatchSourceFromData``: a stream of SciPy sparse sequences is sparse (``is_sparse``), and
a minibatch size below the next sequence's length is CNTK's ValueError (``Value::Create:: The
number of sequences must be > 0``: its source takes whole sequences and makes a minibatch of
none), after which the source is where it was; a CTF reader gives such a sequence whole."""

import os

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import builtin_type, outcome

NAN, INF = np.nan, np.inf


def _first_line(exc, uids):
    """The first line of ``exc``'s message with each uid in ``uids`` ({uid: label}) replaced by
    its label."""
    line = str(exc).split("\n")[0]
    for uid in sorted(uids, key=len, reverse=True):
        line = line.replace(uid, uids[uid])
    return line


def _outcome(call, uids):
    """``["ok"]``, or the error's built-in type and :func:`_first_line` of its message."""
    return outcome(call, lambda _: ["ok"], lambda exc: [builtin_type(exc), _first_line(exc, uids)])


def _uids(**named):
    """{uid: '<name>'} of the Functions (their root op's uid) and Variables given."""
    out = {}
    for label, obj in named.items():
        uid = obj.root_function.uid if hasattr(obj, "root_function") else obj.uid
        out[uid] = "<%s>" % label
    return out


_RUN = ["cntk.debugging.set_checked_mode", "cntk.Function.eval", "cntk.Function.grad",
        "cntk.Function.forward", "cntk.Function.backward"]


@cntk_case(names=_RUN,
           note="NaN made by an op (inf - inf, NaN fed through plus, relu: node type "
                "RectifiedLinear) is CNTK's RuntimeError naming the op; inf passes; sqrt of "
                "square at 0 has a NaN gradient from the square (ElementTimes) to its input; "
                "NaNs in a sequence's padding pass; off by default")
def checked_mode__ops(C, r):
    r.touch(*_RUN)
    x = C.input_variable(2, name="x", needs_gradient=True)
    d = {x: np.array([[NAN, 1.0]], np.float32)}
    res = {}
    plus = C.plus(x, 1.0)
    res["off by default"] = _outcome(lambda: plus.eval(d), {})
    C.debugging.set_checked_mode(True)
    try:
        plus = C.plus(x, 1.0)
        res["nan fed"] = _outcome(lambda: plus.eval(d), _uids(plus=plus))
        res["inf fed"] = _outcome(lambda: plus.eval({x: np.array([[INF, 1.0]], np.float32)}),
                                  {})
        e1, e2 = C.exp(x), C.exp(x)
        res["exp overflow"] = _outcome(
            lambda: e1.eval({x: np.array([[1000.0, 1.0]], np.float32)}), {})
        m = C.minus(e1, e2)
        res["inf - inf"] = _outcome(lambda: m.eval({x: np.array([[1000.0, 1.0]], np.float32)}),
                                    _uids(m=m))
        relu = C.relu(x)
        res["relu"] = _outcome(lambda: relu.eval(d), _uids(relu=relu))
        sq = C.square(x)
        rt = C.sqrt(sq)
        zero = {x: np.array([[0.0, 1.0]], np.float32)}
        labels = _uids(sq=sq, rt=rt, x=x)
        res["sqrt square eval"] = _outcome(lambda: rt.eval(zero), labels)
        res["sqrt square grad"] = _outcome(lambda: rt.grad(zero), labels)

        def forward_backward():
            state, _ = rt.forward(zero, [rt.output], set([rt.output]))
            rt.backward(state, {rt.output: np.ones((1, 2), np.float32)}, set([x]))
        res["sqrt square forward backward"] = _outcome(forward_backward, labels)
        s = C.sequence.input_variable(1, name="s")
        padded = C.element_divide(1.0, C.minus(s, 1.0))    # 1/0 in the padding: inf
        roots = C.sqrt(C.minus(s, 1.0))
        seqs = {s: [np.full((3, 1), 2.0, np.float32), np.full((1, 1), 2.0, np.float32)]}
        res["padding"] = [_outcome(lambda: padded.eval(seqs), {}),
                          _outcome(lambda: roots.eval(seqs), {})]
        summed = C.sequence.reduce_sum(C.element_times(s, s))
        nan_step = {s: [np.array([[1.0], [3.0], [2.0]], np.float32),
                        np.array([[NAN]], np.float32)]}
        inner = summed.root_function.inputs[0].owner
        res["nan in a step"] = _outcome(lambda: summed.eval(nan_step), _uids(times=inner))
    finally:
        C.debugging.set_checked_mode(False)
    return res


@cntk_case(names=_RUN,
           note="CNTK reads the switch when it builds a Function's network: at its first run, "
                "and again at its first run for a backward after runs that only evaluated; a "
                "Function run before the switch is unchecked, one built under it stays "
                "checked after the switch is off, a combine of it is a Function of its own")
def checked_mode__read_when_built(C, r):
    r.touch(*_RUN)
    x = C.input_variable(2, name="x", needs_gradient=True)
    d = {x: np.array([[NAN, 1.0]], np.float32)}
    early = C.plus(x, 1.0)
    late = C.plus(x, 2.0)
    res = {"early, before": _outcome(lambda: early.eval(d), {})}
    C.debugging.set_checked_mode(True)
    try:
        labels = _uids(early=early, late=late)
        res["early, after on"] = _outcome(lambda: early.eval(d), labels)
        res["early, grad after on"] = _outcome(lambda: early.grad(d), labels)
        res["early, eval after grad"] = _outcome(lambda: early.eval(d), labels)
        res["late, on"] = _outcome(lambda: late.eval(d), labels)
    finally:
        C.debugging.set_checked_mode(False)
    res["late, after off"] = _outcome(lambda: late.eval(d), labels)
    res["combine of late, after off"] = _outcome(lambda: C.combine([late]).eval(d), labels)
    fresh = C.plus(x, 3.0)
    res["fresh, after off"] = _outcome(lambda: fresh.eval(d), {})
    return res


_TRAIN = ["cntk.debugging.set_checked_mode", "cntk.train.Trainer.train_minibatch",
          "cntk.train.Trainer.test_minibatch"]


@cntk_case(names=_TRAIN,
           note="a NaN made in train_minibatch's forward or backward is CNTK's RuntimeError "
                "before the learner steps: the parameters and the samples seen stay as they "
                "were; test_minibatch checks its own network; a Trainer first run after the "
                "switch is off is not checked")
def checked_mode__trainer(C, r):
    r.touch(*_TRAIN)
    t = C.input_variable(2, name="t")
    w = C.parameter((2,), init=np.array([1.0, 2.0], np.float32), name="w")
    z = C.element_times(t, w)
    sq = C.square(z)
    loss = C.reduce_sum(C.sqrt(sq))
    metric = C.reduce_sum(C.element_times(z, 1.0))
    metric_times = metric.root_function.inputs[0].owner
    labels = _uids(z=z, sq=sq, metric=metric_times)
    res = {}
    C.debugging.set_checked_mode(True)
    try:
        tr = C.Trainer(z, (loss, metric), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
        steps = []
        for name, row in (("nan fed", [NAN, 1.0]), ("nan gradient", [0.0, 1.0]),
                          ("finite", [1.0, 1.0])):
            out = _outcome(lambda: tr.train_minibatch({t: np.array([row], np.float32)}), labels)
            steps.append([name, out, w.value.tolist(), tr.total_number_of_samples_seen])
        res["train"] = steps
        res["test nan"] = _outcome(
            lambda: tr.test_minibatch({t: np.array([[NAN, 1.0]], np.float32)}), labels)
    finally:
        C.debugging.set_checked_mode(False)
    res["train after off"] = _outcome(
        lambda: tr.train_minibatch({t: np.array([[NAN, 1.0]], np.float32)}), labels)
    fresh = C.Trainer(z, (loss, metric), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    res["fresh trainer after off"] = _outcome(
        lambda: fresh.test_minibatch({t: np.array([[NAN, 1.0]], np.float32)}), labels)
    return res


_SOURCE = ["cntk.io.MinibatchSourceFromData", "cntk.io.MinibatchSource.next_minibatch",
           "cntk.io.MinibatchData.is_sparse", "cntk.io.MinibatchData.num_sequences",
           "cntk.io.MinibatchData.num_samples"]


def _counts(src, n):
    """Each stream's (is_sparse, sequences, samples) in the next minibatch of ``n``, or the
    error (type and the message's first sentence)."""
    try:
        mb = src.next_minibatch(n)
    except Exception as exc:  # noqa: BLE001 - the type and CNTK's words are compared
        return [builtin_type(exc), str(exc).split("\n")[0].split(" (")[0]]
    return sorted([name, bool(mb[info].is_sparse), mb[info].num_sequences,
                   mb[info].num_samples] for name, info in src.streams.items() if info in mb)


@cntk_case(names=_SOURCE,
           note="SciPy sparse sequences make a sparse stream (Sequence[tensor]: the shape "
                "from the data; Stadyn refused the unknown shape, and said is_sparse False "
                "for Sequence[Tensor[5]]); a minibatch size below the next sequence's length "
                "is CNTK's ValueError and leaves the source where it was")
def checked_mode__source_from_data_sequences(C, r):
    r.touch(*_SOURCE)
    import scipy.sparse as sp
    Sequence, Tensor = C.layers.typing.Sequence, C.layers.typing.Tensor
    eye = np.eye(5, dtype=np.float32)
    sparse = [sp.csr_matrix(eye[[3, 1, 4]]), sp.csr_matrix(eye[[2, 0]]),
              sp.csr_matrix(eye[[1]])]
    dense = [np.ones((3, 2), np.float32), 2 * np.ones((2, 2), np.float32),
             3 * np.ones((1, 2), np.float32)]
    res = {}
    for label, kind in (("tensor", Sequence[C.layers.typing.tensor]),
                        ("Tensor[5]", Sequence[Tensor[5]])):
        src = C.io.MinibatchSourceFromData({"x": (sparse, kind)})
        res["sparse " + label] = [_counts(src, n) for n in (10, 3, 3)]
    src = C.io.MinibatchSourceFromData({"x": (sparse, Sequence[Tensor[5]]),
                                        "d": (dense, Sequence[Tensor[2]])})
    res["both"] = [_counts(src, n) for n in (2, 1, 3, 2, 3, 3)]
    src = C.io.MinibatchSourceFromData({"d": (dense, Sequence[Tensor[2]])})
    res["dense"] = [_counts(src, n) for n in (2, 4, 2, 1, 2)]
    src = C.io.MinibatchSourceFromData({"rows": sp.csr_matrix(eye[[3, 1, 4]])})
    res["sparse rows"] = [_counts(src, n) for n in (2, 2)]
    with r.tempdir() as folder:
        path = os.path.join(folder, "seq.ctf")
        with open(path, "w") as f:
            f.write("0 |x 3:1\n0 |x 1:1\n0 |x 4:1\n1 |x 2:1\n1 |x 0:1\n2 |x 1:1\n")
        ctf = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
            x=C.io.StreamDef(field="x", shape=5, is_sparse=True))), randomize=False,
            max_sweeps=1)
        res["ctf"] = [_counts(ctf, n) for n in (2, 1, 3)]
    return res


@cntk_case(names=["cntk.debugging.set_checked_mode", "cntk.Function.eval"],
           note="CNTK's Manual_How_to_debug (its cells 24, 28 and 29, quoted): exp(-x^8) * "
                "exp(w^8) at 3 is 0 * inf, NaN; turning checked mode on does not check z, "
                "which ran before, and a z_checked built and run after it raises naming the "
                "ElementTimes")
def checked_mode__manual_how_to_debug(C, r):
    r.touch("cntk.debugging.set_checked_mode", "cntk.Function.eval")
    res = {}
    # -- the manual's cells, as written there --
    C.debugging.set_checked_mode(False)
    w = C.input_variable(1)
    x = C.input_variable(1)
    y = C.layers.Sequential([C.square, C.square, C.square])
    z = C.exp(-y(x))*C.exp(y(w))+1

    w0 = np.array([3.0],dtype=np.float32)
    x0 = np.array([3.0],dtype=np.float32)
    res["z"] = z.eval({w:w0, x:x0})
    try:
        C.debugging.set_checked_mode(True)
        res["z after on"] = z.eval({w:w0, x:x0})
        C.debugging.set_checked_mode(True)
        z_checked = C.exp(-y(x))*C.exp(y(w))+1
        product = z_checked.root_function.inputs[0].owner
        res["z_checked"] = _outcome(lambda: z_checked.eval({w:w0, x:x0}),
                                    _uids(product=product))
    finally:
        C.debugging.set_checked_mode(False)
    return res

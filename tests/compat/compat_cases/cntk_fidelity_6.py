"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (sixth round): ``gather`` along an
axis (CNTK's ``GatherOp`` block, where multi-axis indices land, a reference with dynamic axes
refused when run); tuples where CNTK gives tuples; layers printed before they are applied;
``MinibatchData.data`` a ``Value``; ``is_sparse`` of sparse inputs; ``eye_like``'s CSR output;
``Value.create`` of a list of sequences."""

import os

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import builtin_type, outcome


# (label, table shape, indices shape, axis): the axis as an int, negative, an Axis, none
_GATHERS = [("none", (4, 3), (2,), None), ("0", (4, 3), (2, 5), 0), ("1", (4, 3), (2,), 1),
            ("1 of rank 2, 2-d indices", (4, 3), (2, 5), 1),
            ("2 of rank 3, 2-d indices", (2, 4, 3), (2, 5), 2),
            ("-1 of rank 4", (3, 4, 2, 3), (2, 3), -1), ("3 of rank 4", (3, 4, 2, 3), (2, 3), 3),
            ("-3 of rank 3 (the first)", (2, 4, 3), (2, 5), -3),
            ("1 of rank 3, 3-d indices", (2, 4, 3), (2, 3, 2), 1),
            ("Axis(1)", (2, 4, 3), (3,), "A1"),
            ("Axis(0)", (4, 3), (2,), "A0")]


@cntk_case(names=["cntk.ops.gather", "cntk.Function.root_function", "cntk.Function.is_block",
                  "cntk.Function.block_root", "cntk.Function.op_name", "cntk.Function.grad"],
           note="CNTK 2.7 builds gather with an axis other than 0 as a block GatherOp around a "
                "TransposeAxes, and places the axes of multi-axis indices where its two "
                "transposes put them (Stadyn showed a primitive Gather and put them at the "
                "gathered axis, as NumPy's take does)")
def gather__axis_as_cntk(C, r):
    r.touch("cntk.Function.root_function", "cntk.Function.is_block", "cntk.Function.block_root",
            "cntk.Function.op_name", "cntk.Function.grad", "cntk.Function.eval",
            "cntk.Function.inputs", "cntk.Function.arguments", "cntk.Function.shape",
            "cntk.Function.name")
    res = {}
    for label, tshape, ishape, axis in _GATHERS:
        if axis in ("A0", "A1"):
            axis = C.Axis(int(axis[1]))
        table = C.parameter(tshape, init=r.randn(*tshape).astype(np.float32), name="table")
        i = C.input_variable(ishape, name="i")
        g = C.gather(table, i, axis=axis)
        rf = g.root_function
        size = tshape[0 if axis is None else
                      (axis if isinstance(axis, int) else axis.static_axis_index()) % len(tshape)]
        feed = {i: r.randint(0, size, (2,) + ishape).astype(np.float32)}
        res[label + ": shape"] = list(g.shape)
        res[label + ": op"] = [rf.op_name, rf.is_block,
                               rf.block_root.op_name if rf.is_block else ""]
        res[label + ": inputs"] = [v.name for v in rf.inputs]
        res[label + ": arguments"] = [v.name for v in g.arguments]
        res[label + ": value"] = g.eval(feed)
        res[label + ": grad"] = g.grad(feed, wrt=[table])
    named = C.gather(C.constant(np.ones((2, 3), np.float32)), C.input_variable(2), axis=1,
                     name="picked")
    res["named"] = [named.name, named.root_function.name, named.root_function.op_name]
    return res


@cntk_case(names=["cntk.ops.gather", "cntk.Function.eval"],
           note="CNTK 2.7 builds gather of a reference with dynamic axes (an input) but refuses "
                "it when it runs (RuntimeError: 'Gather operation's right operand doesn't "
                "expect to have dynamic axis'); indices computed from the minibatch are fine "
                "(Stadyn gathered from the input)")
def gather__dynamic_operands(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    res = {}
    ref = C.input_variable((4, 3), name="ref")
    idx = C.input_variable((2,), name="idx")
    score = C.input_variable(4, name="score")
    table = C.constant(r.randn(4, 3).astype(np.float32), name="table")
    ref_data = r.randn(2, 4, 3).astype(np.float32)
    idx_data = r.randint(0, 3, (2, 2)).astype(np.float32)
    score_data = r.randn(2, 4).astype(np.float32)
    feeds = {ref: ref_data, idx: idx_data, score: score_data}
    for label, make in (("input reference", lambda: C.gather(ref, idx)),
                        ("input reference, axis", lambda: C.gather(ref, idx, axis=1)),
                        ("op of an input", lambda: C.gather(ref * 2.0, idx)),
                        ("computed indices", lambda: C.gather(table, C.argmax(score, 0))),
                        ("computed indices, axis", lambda: C.gather(C.transpose(table, (1, 0)),
                                                                    C.argmax(score, 0), axis=1)),
                        ("both", lambda: C.gather(ref, C.argmax(score, 0)))):
        g = make()
        res[label + ": shape"] = list(g.shape)
        res[label] = outcome(lambda: g.eval({a: feeds[a] for a in g.arguments}),
                             raised=builtin_type)
    res["axis out of range"] = outcome(lambda: C.gather(table, idx, axis=2),
                                       convert=lambda _: "built", raised=builtin_type)
    return res


@cntk_case(names=["cntk.Function.arguments", "cntk.Function.parameters",
                  "cntk.Function.constants", "cntk.Function.outputs", "cntk.Function.inputs",
                  "cntk.Function.placeholders", "cntk.Function.block_arguments_mapping",
                  "cntk.Function.find_all_with_name", "cntk.Function.signature",
                  "cntk.learners.Learner.parameters"],
           note="CNTK 2.7 gives tuples for a Function's arguments, parameters, constants, "
                "outputs, inputs, placeholders, block_arguments_mapping and signature and a "
                "learner's parameters, a list for find_all_with_name (Stadyn gave lists)")
def function_collections__tuple_or_list(C, r):
    r.touch("cntk.Function.root_function", "cntk.Function.output", "cntk.Variable.shape",
            "cntk.Variable.dynamic_axes", "cntk.Function.arguments", "cntk.Function.parameters",
            "cntk.Function.constants", "cntk.Function.outputs", "cntk.Function.inputs",
            "cntk.Function.placeholders", "cntk.Function.block_arguments_mapping",
            "cntk.Function.find_all_with_name", "cntk.Function.signature",
            "cntk.learners.Learner.parameters")
    x = C.input_variable(3, name="x")
    z = C.layers.BatchNormalization(name="bn")(C.layers.Dense(2, name="d")(x))
    ph = C.placeholder(name="p")
    p = C.plus(ph, x)
    learner = C.sgd(z.parameters, C.learning_parameter_schedule(0.1))
    d = z.find_by_name("d")
    kinds = {}
    for label, value in (("arguments", z.arguments), ("parameters", z.parameters),
                         ("constants", z.constants), ("outputs", z.outputs),
                         ("inputs", z.inputs), ("root inputs", z.root_function.inputs),
                         ("placeholders", p.placeholders), ("signature", z.signature),
                         ("block_arguments_mapping", d.block_arguments_mapping),
                         ("a mapping's pair", d.block_arguments_mapping[0]),
                         ("find_all_with_name", z.find_all_with_name("d")),
                         ("find_all_with_name of none", z.find_all_with_name("none")),
                         ("learner parameters", learner.parameters),
                         ("shape", z.shape), ("output shape", z.output.shape),
                         ("dynamic_axes", x.dynamic_axes), ("placeholders none", z.placeholders),
                         ("combine outputs", C.combine([z, x * 2]).outputs)):
        kinds[label] = [type(value).__name__, len(value)]
    return {"kinds": kinds}


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Sequential", "cntk.layers.LSTM",
                  "cntk.layers.Recurrence", "cntk.layers.RecurrenceFrom", "cntk.layers.Label",
                  "cntk.layers.For", "cntk.layers.MaxUnpooling", "cntk.layers.AttentionModel"],
           note="CNTK 2.7 prints a layer not applied yet as a Function over placeholders: "
                "'fc: Dense(x: Sequence[tensor]) -> Sequence[tensor]' (Stadyn printed "
                "\"<cntk layer Dense 'fc'>\")")
def layers__printed(C, r):
    L = C.layers
    makers = [("Dense", lambda: L.Dense(2)), ("named Dense", lambda: L.Dense(2, name="fc")),
              ("Convolution", lambda: L.Convolution((3, 3), 4)),
              ("ConvolutionTranspose", lambda: L.ConvolutionTranspose((3, 3), 4)),
              ("MaxPooling", lambda: L.MaxPooling((2, 2))),
              ("GlobalAveragePooling", lambda: L.GlobalAveragePooling()),
              ("MaxUnpooling", lambda: L.MaxUnpooling((2, 2))),
              ("Dropout", lambda: L.Dropout(0.5, name="dr")),
              ("BatchNormalization", lambda: L.BatchNormalization()),
              ("LayerNormalization", lambda: L.LayerNormalization()),
              ("Stabilizer", lambda: L.Stabilizer()), ("Embedding", lambda: L.Embedding(4)),
              ("Activation", lambda: L.Activation(C.relu)), ("Label", lambda: L.Label("l")),
              ("Sequential", lambda: L.Sequential([L.Dense(2), L.Dense(3)])),
              ("Sequential of one", lambda: L.Sequential([L.Dense(2)])),
              ("named Sequential of one", lambda: L.Sequential([L.Dense(2)], name="s")),
              ("Sequential of a Label", lambda: L.Sequential([L.Label("q")])),
              ("empty Sequential", lambda: L.Sequential([])),
              ("Sequential ending in a tuple", lambda: L.Sequential([(L.Dense(2), L.Dense(3))])),
              ("For", lambda: L.For(range(2), lambda: L.Dense(2))),
              (">>", lambda: L.Dense(2) >> L.Dense(3) >> L.Dense(4)),
              ("LSTM", lambda: L.LSTM(4, name="lstm")), ("GRU", lambda: L.GRU(4)),
              ("RNNStep", lambda: L.RNNStep(4)),
              ("Recurrence", lambda: L.Recurrence(L.LSTM(4), name="r")),
              ("RecurrenceFrom LSTM", lambda: L.RecurrenceFrom(L.LSTM(4))),
              ("RecurrenceFrom GRU", lambda: L.RecurrenceFrom(L.GRU(4))),
              ("Fold", lambda: L.Fold(L.GRU(4))), ("Delay", lambda: L.Delay()),
              ("AttentionModel", lambda: L.AttentionModel(4))]
    return {"printed": dict((label, str(make())) for label, make in makers)}


def _minibatch_data(d, variable=None):
    """What a MinibatchData and its ``data`` show."""
    out = {"type of data": type(d.data).__name__, "shape": list(d.shape),
           "data shape": list(d.data.shape), "data is_sparse": d.data.is_sparse,
           "is_sparse": d.is_sparse, "counts": [d.num_samples, d.num_sequences, d.end_of_sweep],
           "asarray": d.asarray(), "data asarray": d.data.asarray()}

    def sequences():
        seqs = d.as_sequences(variable) if variable is not None else d.as_sequences()
        return [np.asarray(s.todense() if hasattr(s, "todense") else s) for s in seqs]
    out["as_sequences"] = outcome(sequences, raised=builtin_type)
    return out


@cntk_case(names=["cntk.io.MinibatchData", "cntk.io.MinibatchSourceFromData",
                  "cntk.io.MinibatchSource", "cntk.io.CTFDeserializer", "cntk.Value",
                  "cntk.io.MinibatchData.data", "cntk.io.MinibatchData.mask"],
           note="CNTK 2.7's MinibatchData.data is a Value (asarray(), shape, is_sparse), and "
                "as_sequences gives each sample of a non-sequence stream of "
                "MinibatchSourceFromData as (*shape); a sparse stream's need the variable "
                "(ValueError without it; Stadyn gives them dense either way). Stadyn's data was "
                "the NumPy array, its samples (1, *shape)")
def minibatch_data__as_cntk(C, r):
    r.touch("cntk.io.MinibatchData", "cntk.Value", "cntk.io.MinibatchData.data",
            "cntk.io.MinibatchData.mask",
            "cntk.io.MinibatchData.as_sequences",
            "cntk.io.MinibatchData.asarray", "cntk.io.MinibatchData.shape",
            "cntk.io.MinibatchData.is_sparse", "cntk.io.MinibatchData.num_samples",
            "cntk.io.MinibatchData.num_sequences", "cntk.io.MinibatchData.end_of_sweep",
            "cntk.Value.asarray", "cntk.Value.shape", "cntk.Value.is_sparse")
    res = {}
    src = C.io.MinibatchSourceFromData(dict(x=r.randn(4, 3).astype(np.float32),
                                            y=r.onehot(4, 2)))
    mb = src.next_minibatch(3)
    res["from data x"] = _minibatch_data(mb[src.streams["x"]])
    res["from data y"] = _minibatch_data(mb[src.streams["y"]])
    res["from data end"] = _minibatch_data(src.next_minibatch(3)[src.streams["x"]])
    with r.tempdir() as folder:
        path = os.path.join(folder, "seq.ctf")
        with open(path, "w") as f:
            f.write("0 |x 1 2 |y 1:1\n0 |x 3 4\n1 |x 5 6 |y 0:1\n2 |x 7 8 |y 2:1\n")
        streams = C.io.StreamDefs(x=C.io.StreamDef("x", 2),
                                  y=C.io.StreamDef("y", 3, is_sparse=True))
        ctf = C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), randomize=False,
                                   max_sweeps=1)
        mb = ctf.next_minibatch(10)
        res["ctf x"] = _minibatch_data(mb[ctf.streams["x"]])
        res["ctf y"] = _minibatch_data(
            mb[ctf.streams["y"]], C.sequence.input_variable(3, is_sparse=True))
    return res


@cntk_case(names=["cntk.variables.VariableMixin.is_sparse", "cntk.ops.input_variable",
                  "cntk.ops.sequence.input_variable", "cntk.Value.one_hot", "cntk.ops.times"],
           note="CNTK 2.7 says is_sparse True for an input made with is_sparse=True (and for a "
                "one-hot Value), prints it as SparseTensor, keeps it through clone; times of "
                "a sparse input fed one-hot Values or SciPy CSR rows. Stadyn said False")
def sparse_inputs__as_cntk(C, r):
    import scipy.sparse as sparse
    r.touch("cntk.variables.VariableMixin.is_sparse", "cntk.Function.eval",
            "cntk.Function.clone", "cntk.Function.arguments", "cntk.Value.is_sparse",
            "cntk.Value.one_hot")
    x = C.input_variable(4, is_sparse=True, name="x")
    s = C.sequence.input_variable(4, is_sparse=True, name="s")
    d = C.input_variable(4, name="d")
    w = C.parameter((4, 2), init=r.randn(4, 2).astype(np.float32), name="w")
    z = C.times(x, w)
    zs = C.times(s, w)
    res = {"is_sparse": [x.is_sparse, s.is_sparse, d.is_sparse, w.is_sparse,
                         z.output.is_sparse, C.Value.one_hot([[1], [3]], 4).is_sparse],
           "printed": [str(z), str(zs)],
           "cloned": [a.is_sparse for a in z.clone(C.CloneMethod.share).arguments]}
    rows = np.eye(4, dtype=np.float32)[[2, 0, 3]]
    res["times one-hot"] = z.eval({x: C.Value.one_hot([[2], [0], [3]], 4)})
    res["times csr"] = z.eval({x: sparse.csr_matrix(rows)})
    res["sequences"] = zs.eval({s: C.Value.one_hot([[1, 2], [3]], 4)})
    return res


@cntk_case(names=["cntk.ops.eye_like"],
           note="CNTK 2.7's eye_like (sparse_output=True, the default) evaluates to a SciPy "
                "csr_matrix; Stadyn gave a dense array")
def eye_like__sparse_output(C, r):
    r.touch("cntk.Function.eval")
    x = C.input_variable(4, name="x")
    data = r.randn(3, 4).astype(np.float32)
    res = {}
    for label, f in (("default", C.eye_like(x)), ("sparse", C.eye_like(x, sparse_output=True)),
                     ("dense", C.eye_like(x, sparse_output=False))):
        out = f.eval({x: data})
        res[label + " type"] = type(out).__name__
        res[label] = np.asarray(out.toarray() if hasattr(out, "toarray") else out)
    return res


@cntk_case(names=["cntk.Value.create", "cntk.Value.as_sequences"],
           note="CNTK 2.7's Value.create reads a list as sequences, each (steps, *shape) or one "
                "sample, padded to the longest: Stadyn stacked the entries as one-step "
                "sequences (sequences of different lengths were a ValueError, equal ones a "
                "(N, 1, T, *shape) value an input refused)")
def value_create__sequences(C, r):
    r.touch("cntk.Value.create", "cntk.Value.as_sequences", "cntk.Value.shape",
            "cntk.Value.asarray", "cntk.Function.eval")
    s = C.sequence.input_variable(3, name="s")
    x = C.input_variable(3, name="x")
    a, b = r.randn(2, 3).astype(np.float32), r.randn(3, 3).astype(np.float32)
    res = {}
    for label, var, data in (("ragged", s, [a, b]), ("equal", s, [a, a]),
                             ("lists", s, [[[1, 2, 3]], [[4, 5, 6], [7, 8, 9]]]),
                             ("samples", x, [a[0], a[1]]), ("array", x, a),
                             ("float64", s, [b.astype(np.float64)])):
        v = C.Value.create(var, data)
        res[label + ": shape"] = list(v.shape)
        res[label + ": value"] = v.asarray()
        if var is s:
            res[label + ": sequences"] = v.as_sequences()
            res[label + ": summed"] = C.sequence.reduce_sum(s).eval({s: v})
        else:
            res[label + ": doubled"] = (x * 2).eval({x: v})
    return res


@cntk_case(names=["cntk.io.MinibatchData.data", "cntk.Trainer.train_minibatch",
                  "cntk.Trainer.test_minibatch"],
           note="a reader stream's .data is a Value of one-step sequences, (N, 1, 2), fed to "
                "inputs without a sequence axis (a StadynError before: the Value was not "
                "taken as the MinibatchData itself is)")
def reader_data_value__trains(C, r):
    import os
    r.touch("cntk.io.MinibatchData.data", "cntk.Trainer.train_minibatch",
            "cntk.Trainer.test_minibatch")
    io = C.io
    with r.tempdir() as folder:
        path = os.path.join(folder, "data.ctf")
        with open(path, "w") as f:
            for i in range(4):
                f.write("|x %d %d |y %d %d\n" % (i, i + 1, 2 * i, 1 - i))
        source = io.MinibatchSource(io.CTFDeserializer(path, io.StreamDefs(
            x=io.StreamDef(field="x", shape=2), y=io.StreamDef(field="y", shape=2))),
            randomize=False)
        x, y = C.input_variable(2), C.input_variable(2)
        m = C.layers.Dense(2)(x)
        params = r.set_params(m.parameters)
        loss = C.squared_error(m, y)
        trainer = C.Trainer(m, (loss, loss),
                            [C.sgd(m.parameters, C.learning_parameter_schedule(0.1))])
        mb = source.next_minibatch(2)
        fx, fy = mb[source.streams.x], mb[source.streams.y]
        trainer.train_minibatch({x: fx.data, y: fy.data})
        trained = trainer.previous_minibatch_loss_average
        tested = trainer.test_minibatch({x: fx.data, y: fy.data})
    return {"params": params, "data shape": list(fx.data.shape), "trained": trained,
            "tested": tested, "W": np.array(m.parameters[0].value)}

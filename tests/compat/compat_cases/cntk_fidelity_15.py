"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (fifteenth round): ``Value`` of
what is not an array; element-wise ops over placeholders with inferred axes whose known axes
clash; ``past_value`` of a shaped placeholder replaced; max unpooling with overlapping windows;
``SequentialConvolution`` whose auto-padding skips first positions (on a step's axes and
along the sequence); ``ConvolutionTranspose`` with ``reduction_rank=0``; the reductions as
blocks; an op on a shapeless placeholder called with arguments it cannot take."""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


_outcome = functools.partial(outcome, convert=np.asarray)


@cntk_case(names=["cntk.Value", "cntk.core.Value"],
           note="CNTK 2.7's Value(batch) takes a NumPy array of int8, int16, float16, float32 or "
                "float64 (RuntimeError 'NumPy array of type int8, int16, float16, float32 or "
                "float64 expected' for int32, int64, uint8, bool), a SciPy CSR matrix or an "
                "NDArrayView; a list of lists, a list of arrays, a tuple, a number or a Value "
                "is NotImplementedError ('Wrong number or type of arguments for overloaded "
                "function new_Value').  Stadyn took them all")
def value__what_it_takes(C, r):
    r.touch("cntk.Value.shape", "cntk.Value.dtype", "cntk.Value.asarray",
            "cntk.NDArrayView.from_dense")
    import scipy.sparse as sp
    a = np.arange(6).reshape(2, 3)
    made = [("list of lists", lambda: [[1.0, 2.0], [3.0, 4.0]]),
            ("list of arrays", lambda: [np.ones(2, np.float32)]),
            ("tuple", lambda: (1.0, 2.0)), ("number", lambda: 3.0),
            ("Value", lambda: C.Value(a.astype(np.float32)))]
    made += [(t, lambda t=t: a.astype(t)) for t in ("int8", "int16", "int32", "int64",
                                                       "uint8", "bool", "float16", "float32",
                                                       "float64")]
    made += [("csr", lambda: sp.csr_matrix(a.astype(np.float32))),
             ("NDArrayView", lambda: C.NDArrayView.from_dense(a.astype(np.float32)))]
    def dense(value):
        a = value.asarray()             # (CNTK's of a CSR matrix is one)
        return a.toarray() if hasattr(a, "toarray") else a
    res = {}
    for label, data in made:
        res[label] = _outcome(lambda: dense(C.Value(data())))
        res[label + " dtype"] = _outcome(lambda: np.dtype(C.Value(data()).dtype).name)
    res["batch= list"] = _outcome(lambda: C.Value(batch=[[1.0, 2.0]]).asarray())
    res["csr is_sparse"] = C.Value(sp.csr_matrix(a.astype(np.float32))).is_sparse
    r.touch("cntk.Value.is_sparse")
    return res


@cntk_case(names=["cntk.ops.plus", "cntk.ops.minus", "cntk.ops.element_times",
                  "cntk.ops.equal", "cntk.ops.transpose", "cntk.placeholder"],
           note="an element-wise op over a placeholder with an inferred axis "
                "(placeholder((InferredDimension, 3))) whose known axes do not broadcast with "
                "the other operand's (transpose of a (2, ?) placeholder: (?, 2); an input of "
                "(2,)): CNTK 2.7 refuses it as it is made (RuntimeError 'Binary elementwise "
                "operation Plus: Left operand ... is not compatible with right operand ...').  "
                "Stadyn made it, of unknown shape (-2,)")
def elementwise__inferred_axes_that_clash(C, r):
    r.touch("cntk.Function.shape", "cntk.input_variable")
    inferred = C.InferredDimension

    def p():
        return C.placeholder((inferred, 3))

    def tq(first=2):
        return C.transpose(C.placeholder((first, inferred)), (1, 0))
    res = {}
    for label, make in (
            ("plus p, transpose q", lambda: C.plus(p(), tq())),
            ("plus transpose q, p", lambda: C.plus(tq(), p())),
            ("minus", lambda: C.minus(p(), tq())),
            ("element_times", lambda: C.element_times(p(), tq())),
            ("equal", lambda: C.equal(p(), tq())),
            ("operator +", lambda: p() + tq()),
            ("plus of a plus", lambda: C.plus(C.plus(p(), 1), tq())),
            ("plus input (2,)", lambda: C.plus(p(), C.input_variable(2))),
            ("plus input (5, 2)", lambda: C.plus(p(), C.input_variable((5, 2)))),
            ("plus placeholder (?, 2)", lambda: C.plus(p(), C.placeholder((inferred, 2)))),
            ("fits: transpose of (3, ?)", lambda: C.plus(p(), tq(3))),
            ("fits: input (3,)", lambda: C.plus(p(), C.input_variable(3))),
            ("fits: input (1,)", lambda: C.plus(p(), C.input_variable(1))),
            ("fits: a number", lambda: C.plus(p(), 2.0))):
        res[label] = _outcome(lambda: make().shape)
    return res


@cntk_case(names=["cntk.sequence.past_value", "cntk.Function.replace_placeholders",
                  "cntk.placeholder"],
           note="past_value of a placeholder made with a shape, the placeholder replaced by a "
                "sequence input, then evaluated: CNTK 2.7 computes it.  Stadyn raised "
                "KeyError in its plan cache (graph/_plan_reuse.py: the placeholder's "
                "replacement was not its op's output)")
def past_value__shaped_placeholder_replaced(C, r):
    r.touch("cntk.Function.eval", "cntk.sequence.input_variable", "cntk.Function.arguments",
            "cntk.Function.replace_placeholders")
    d = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((1, 3), np.float32)]
    p = C.placeholder(shape=(3,))
    f = C.sequence.past_value(p)
    x = C.sequence.input_variable(3)
    g = f.replace_placeholders({p: x})
    res = {"shape": list(g.shape), "arguments": len(g.arguments),
           "eval": g.eval({x: d})}
    p2 = C.placeholder(shape=(3,))
    h = C.sequence.past_value(p2, initial_state=5.0) + p2
    res["past_value + p, replaced by an input run before"] = \
        h.replace_placeholders({p2: x}).eval({x: d})
    return res


@cntk_case(names=["cntk.ops.unpooling", "cntk.layers.MaxUnpooling"],
           note="max unpooling whose windows overlap (strides shorter than the window, "
                "auto-padding): each value goes to its window's first maximum and where "
                "several windows have their maximum at one place, CNTK 2.7 keeps the last "
                "window's value (row-major; CPUMatrix::MaxUnpooling writes window after "
                "window); a tie inside a window goes to its first.  Stadyn refused strides "
                "other than the window and padding (ValueError), put a value at every tied "
                "place of its window, and failed on an input the windows do not tile.  The "
                "gradient w.r.t. the values (of the output times a weight) is CNTK 2.7's: the "
                "max pooling of the output's gradient over each window, the padding never a "
                "maximum (Stadyn's was the gradient at the places the values went, before "
                "cntkwrite10).  "
                "With overlapping windows, Stadyn's unpooling showed its inner masks as "
                "constants: among root_function.inputs, the composite's inputs and constants "
                "(before cntkwrite9)")
def unpooling__overlapping_windows(C, r):
    r.touch("cntk.ops.pooling", "cntk.ops.MAX_POOLING", "cntk.ops.MAX_UNPOOLING",
            "cntk.Function.eval", "cntk.layers.MaxPooling")
    x = C.input_variable((1, 4, 5))
    d = np.array([[[[1, 3, 3, 0, 5], [2, 9, 1, 4, 4], [0, 0, 8, 8, 1], [7, 1, 2, 6, 6]]]],
                 np.float32)
    res = {}
    for win, st, pad in (((2, 2), (1, 1), False), ((3, 3), (1, 1), False),
                         ((2, 2), (1, 1), True), ((3, 3), (2, 2), True),
                         ((1, 3), (1, 1), False), ((2, 2), (2, 2), False),
                         ((1, 2), (1, 1), True)):
        label = "window %s stride %s pad %s" % (win, st, pad)
        pooled = C.pooling(x, C.MAX_POOLING, win, st, auto_padding=[pad])
        v = C.input_variable(pooled.shape, name="v", needs_gradient=True)
        vals = (np.arange(int(np.prod(pooled.shape)), dtype=np.float32) + 1).reshape(
            (1,) + pooled.shape)
        u = C.unpooling(v, x, C.MAX_UNPOOLING, win, st, auto_padding=[pad])
        res[label] = _outcome(lambda: u.eval({v: vals, x: d}))
        # (the gradient w.r.t. the values of sum(u * w): CNTK's max pooling of w)
        w = ((np.arange(20, dtype=np.float32) * 7) % 11 - 5).reshape(1, 4, 5)
        weighted = u * C.constant(w)
        res[label + " gradient"] = _outcome(lambda: weighted.grad({v: vals, x: d}, wrt=[v]))
        res[label + " shown"] = [[i.name for i in u.root_function.inputs],
                                 sorted(i.name for i in u.inputs), len(u.constants)]
    y = C.input_variable((1, 3, 4))
    layer = C.layers.MaxUnpooling((2, 2), (1, 1))(y, x)
    res["layer"] = layer.eval({y: np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4) + 1,
                               x: d})
    return res


@cntk_case(names=["cntk.layers.SequentialConvolution"],
           note="auto-padding on a step's spatial axis where CNTK 2.7's lower pad is negative "
                "(a window of 2 with a stride of 3 over 9 positions, of 3 with a stride of 5 "
                "over 11): CNTK skips the first positions (ConvolveGeometry's lower pad).  "
                "Stadyn's windows started at position 0.  A window longer than the steps is "
                "refused (ValueError, as CNTK's)")
def sequential_convolution__skipped_first_positions(C, r):
    r.touch("cntk.Function.eval", "cntk.sequence.input_variable", "cntk.Parameter.value")

    def run(filter_shape, strides, pad, width, lengths):
        x = C.sequence.input_variable((1, width))
        layer = C.layers.SequentialConvolution(filter_shape, 1, pad=pad, strides=strides,
                                               bias=False)
        y = layer(x)
        w = layer.W
        w.value = (np.arange(int(np.prod(w.shape)), dtype=np.float32) + 1).reshape(w.shape)
        data = [np.arange(n * width, dtype=np.float32).reshape(n, 1, width) * 0.5 + 1
                for n in lengths]
        out = {"shape": list(y.shape)}
        for k, seq in enumerate(y.eval({x: data})):
            out["sequence %d" % k] = np.asarray(seq)
        return out
    res = {}
    for label, args in (("window 2 stride 3 over 9", ((1, 2), (1, 3), True, 9, [2, 1])),
                        ("pad given per axis", ((1, 2), (1, 3), [False, True], 9, [2])),
                        ("window 3 stride 5 over 11", ((1, 3), (1, 5), True, 11, [1])),
                        ("window 2 stride 3 over 8", ((1, 2), (1, 3), True, 8, [1])),
                        ("window 3 stride 4 over 7", ((1, 3), (1, 4), True, 7, [1]))):
        for key, got in run(*args).items():
            res[label + ": " + key] = got
    res["window longer than the steps"] = _outcome(lambda: run((1, 3), (1, 1), True, 2, [2]))
    return res


@cntk_case(names=["cntk.layers.ConvolutionTranspose", "cntk.layers.ConvolutionTranspose2D"],
           note="reduction_rank=0 (the input has no channel axis): CNTK 2.7 adds one of 1 "
                "(W of shape (1, num_filters, *filter_shape)); reduction_rank 2 is "
                "NotImplementedError as the layer is made.  Stadyn raised TypeError (an "
                "unexpected keyword argument) for both")
def convolution_transpose__reduction_rank(C, r):
    r.touch("cntk.Function.eval", "cntk.Parameter.value", "cntk.Function.shape")

    def run(make, shape):
        x = C.input_variable(shape)
        layer = make()
        y = layer(x)
        w = layer.W
        w.value = (np.arange(int(np.prod(w.shape)), dtype=np.float32) % 5 + 1).reshape(w.shape)
        d = (np.arange(int(np.prod(shape)), dtype=np.float32) % 7).reshape((1,) + shape)
        return {"W shape": list(w.shape), "shape": list(y.shape), "out": y.eval({x: d})}
    L = C.layers
    res = {}
    for label, make, shape in (
            ("rank 0", lambda: L.ConvolutionTranspose((2, 2), 3, reduction_rank=0, bias=False),
             (4, 4)),
            ("rank 0, stride 2, pad", lambda: L.ConvolutionTranspose(
                (3, 3), 2, strides=2, pad=True, reduction_rank=0, bias=False), (3, 3)),
            ("rank 0, 2D", lambda: L.ConvolutionTranspose2D((2, 2), 2, reduction_rank=0,
                                                            bias=False), (3, 3)),
            ("rank 1", lambda: L.ConvolutionTranspose((2, 2), 3, reduction_rank=1, bias=False),
             (2, 4, 4))):
        for key, got in run(make, shape).items():
            res[label + ": " + key] = got
    res["rank 2"] = _outcome(lambda: L.ConvolutionTranspose((2, 2), 3, reduction_rank=2))
    return res


@cntk_case(names=["cntk.ops.reduce_sum", "cntk.ops.reduce_mean", "cntk.ops.reduce_max",
                  "cntk.ops.reduce_min", "cntk.ops.reduce_prod", "cntk.ops.reduce_log_sum_exp",
                  "cntk.ops.reduce_l1", "cntk.ops.reduce_l2", "cntk.ops.reduce_sum_square",
                  "cntk.ops.argmax", "cntk.ops.argmin"],
           note="CNTK 2.7 makes a block of each reduction: root_function.is_block True, its "
                "op_name ReduceElements (ReduceL1, ReduceL2, ReduceSumSquare), its name the "
                "one given; block_root the ReduceElements over all static axes, a "
                "MultiAxisReduce along given axes, a Reshape where they are dropped (Sqrt in "
                "ReduceL2); attributes axisVec, reductionKeepDimensions, reductionOpName "
                "along given axes; one node for get_node_outputs.  argmax and argmin are "
                "primitive ReduceElements.  A model of them saved and loaded keeps the blocks "
                "and computes the same.  Stadyn's reductions were primitive functions "
                "(is_block False, block_root a ValueError, Stadyn's own attributes)")
def reductions__blocks(C, r):
    r.touch("cntk.Function.root_function", "cntk.Function.is_block", "cntk.Function.block_root",
            "cntk.Function.op_name", "cntk.Function.name", "cntk.Function.attributes",
            "cntk.Function.block_arguments_mapping", "cntk.logging.get_node_outputs",
            "cntk.Function.save", "cntk.load_model", "cntk.combine", "cntk.Function.eval",
            "cntk.Function.outputs", "cntk.Variable.owner")
    import os
    import tempfile
    x = C.input_variable((2, 3), name="x")
    made = [("reduce_sum", "s", {}), ("reduce_sum", "s0", {"axis": 0}),
            ("reduce_mean", "m1", {"axis": 1}), ("reduce_max", "mx", {}),
            ("reduce_min", "mn01", {"axis": (0, 1)}), ("reduce_prod", "p", {}),
            ("reduce_log_sum_exp", "lse", {}), ("reduce_log_sum_exp", "lse1", {"axis": 1}),
            ("reduce_sum", "s0d", {"axis": 0, "keepdims": False}),
            ("reduce_l1", "l1", {"axis": 1}), ("reduce_l2", "l2", {}),
            ("reduce_sum_square", "ss0", {"axis": 0}), ("argmax", "am0", {"axis": 0}),
            ("argmin", "amin", {})]
    res = {}
    for op, name, kw in made:
        f = getattr(C, op)(x, name=name, **kw)
        rf = f.root_function
        shown = [rf.is_block, rf.op_name, rf.name, len(C.logging.get_node_outputs(f))]
        if rf.is_block:
            root = rf.block_root
            shown += [root.op_name, root.name, len(rf.block_arguments_mapping),
                      rf.block_arguments_mapping[0][1].name]
            if "axis" in kw:        # (CNTK 2.7 cannot show the all-static-axes attribute)
                shown += [sorted(rf.attributes.items()), sorted(root.attributes.items())]
        res[op + " " + name] = shown
    d = (np.arange(12, dtype=np.float32).reshape(2, 2, 3) % 5) - 1.5
    saved = C.combine([getattr(C, op)(x, name=name, **kw) for op, name, kw in made
                       if name not in ("lse1", "s0d", "amin")])
    path = os.path.join(tempfile.mkdtemp(), "reductions.model")
    saved.save(path)
    with open(path, "rb") as f:     # (a CNTK v2 model file: Stadyn's own format otherwise)
        res["file begins"] = list(bytearray(f.read(40)))
    loaded = C.load_model(path)
    values = loaded.eval({loaded.arguments[0]: d})
    for o in loaded.outputs:
        res["loaded " + o.name] = [o.owner.op_name, o.owner.is_block]
        res["loaded " + o.name + " value"] = np.asarray(values[o])
    return res


@cntk_case(names=["cntk.layers.SequentialConvolution", "cntk.sequence.reduce_sum"],
           note="auto-padding along the sequence axis with a stride of 3 or more: CNTK 2.7 "
                "pads the minibatch's axis, as long as its longest sequence T, so the first "
                "((T - 1) mod stride) // 2 steps are skipped, for every sequence of the "
                "minibatch (a shorter one reads zeros past its end).  Stadyn's windows "
                "started at step 0.  The same Function over minibatches of other lengths, "
                "and the gradient w.r.t. the input")
def sequential_convolution__sequence_axis_stride(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.grad", "cntk.sequence.input_variable",
            "cntk.Parameter.value")
    res = {}
    for label, filter_shape, stride in (("window 2 stride 3", (2, 1), 3),
                                        ("window 3 stride 5", (3, 1), 5)):
        x = C.sequence.input_variable((1, 1), needs_gradient=True)
        layer = C.layers.SequentialConvolution(filter_shape, 1, pad=True,
                                               strides=(stride, 1), bias=False)
        y = layer(x)
        layer.W.value = (np.arange(filter_shape[0], dtype=np.float32) + 1).reshape(
            layer.W.shape)
        for lengths in ([9, 7], [4, 10, 2]):
            data = [np.arange(n, dtype=np.float32).reshape(n, 1, 1) * 0.5 + 1
                    for n in lengths]
            out = y.eval({x: data})
            grads = C.sequence.reduce_sum(y * y).grad({x: data}, wrt=[x])
            for k in range(len(lengths)):
                key = "%s %s #%d" % (label, lengths, k)
                res[key] = np.asarray(out[k])
                res[key + " grad"] = np.asarray(grads[k])
    return res


@cntk_case(names=["cntk.ops.transpose", "cntk.ops.reshape", "cntk.ops.plus", "cntk.ops.slice",
                  "cntk.ops.relu", "cntk.ops.times", "cntk.ops.element_times",
                  "cntk.ops.reduce_sum", "cntk.ops.splice", "cntk.placeholder"],
           note="an op on a placeholder without a shape called with arguments it cannot take "
                "(transpose without perm, plus of one operand, an unknown keyword): CNTK 2.7 "
                "raises TypeError as it is called.  Stadyn recorded the call to replay once "
                "the placeholder is bound, of shape (-2,)")
def deferred_ops__arguments_checked_when_called(C, r):
    r.touch("cntk.Function.shape")
    p = C.placeholder
    res = {}
    for label, make in (("transpose without perm", lambda: C.transpose(p())),
                        ("reshape without shape", lambda: C.reshape(p())),
                        ("plus of one operand", lambda: C.plus(p())),
                        ("slice without axis", lambda: C.slice(p(), 0)),
                        ("relu, extra arguments", lambda: C.relu(p(), "a", 3)),
                        ("relu, unknown keyword", lambda: C.relu(p(), nam="a")),
                        ("times of one operand", lambda: C.times(p())),
                        ("transpose with perm", lambda: C.transpose(p(), (1, 0))),
                        ("reduce_sum, axis", lambda: C.reduce_sum(p(), axis=0)),
                        ("splice, axis", lambda: C.splice(p(), p(), axis=0)),
                        ("plus of three, named", lambda: C.plus(p(), p(), p(), name="s")),
                        ("element_times of three, name after", lambda: C.element_times(
                            p(), p(), p(), "t"))):
        res[label] = _outcome(lambda: make().shape)
    return res


@cntk_case(names=["cntk.ops.one_hot"],
           note="CNTK 2.7's OneHotOp truncates a value to its class (2.9 is 2) and makes a "
                "negative value's vector (-0.5 too) and one past the last class all zeros; "
                "Stadyn's static plan gave zeros but its first (eager) evaluation raised "
                "'Class values must be smaller than num_classes'")
def one_hot__values_outside_the_classes(C, r):
    x = C.input_variable(1)
    data = np.array([[-0.5], [-0.0], [-1.0], [-4.0], [2.9], [3.0], [1.7], [7.0]], np.float32)
    f = C.one_hot(x, 3)
    return {"out": f.eval({x: data}), "again": f.eval({x: data[::-1].copy()}),
            "axis 0": C.one_hot(x, 3, axis=0).eval({x: data})}

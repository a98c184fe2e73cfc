"""CNTK 2.7's ops where Stadyn's differed (cntkops36): ``reshape`` of a sparse input, an axis of
None (all of a sample's axes) given to the ops taking one static axis, a top-N
``classification_error`` saved and loaded, a weight multiplied by sparse and dense data, CSR
data with stored zeros, a clone onto a placeholder without a shape."""

import re

import numpy as np

from compat_harness import cntk_case


def _outcome(fn, words=True):
    """``fn()``'s value (a shape as a list), or what it raised: its built-in type and (with
    ``words``) its first line, an unnamed input's or placeholder's number masked."""
    try:
        got = fn()
    except Exception as e:
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        said = re.sub(r"'(Input|Placeholder)\d+'", r"'\1'", str(e).split("\n")[0])
        return ["raises", kind, said] if words else ["raises", kind]
    return list(got) if isinstance(got, tuple) else got


def _dense(v):
    """An eval's value as a NumPy array (a SciPy matrix's or a list's entries too)."""
    if isinstance(v, list):
        return [_dense(a) for a in v]
    return np.asarray(v.todense()) if hasattr(v, "todense") else np.asarray(v)


@cntk_case(names=["cntk.ops.reshape", "cntk.ops.expand_dims", "cntk.ops.times",
                  "cntk.ops.relu", "cntk.CloneMethod"],
           note="a reshape of a sparse input runs where it keeps the sample's last axis (CNTK "
                "holds sparse data as a matrix of that axis' rows and reshapes a sparse matrix "
                "to the same rows and columns only: Matrix.cpp:1882-1891) and gives dense "
                "data (relu of it runs); another is refused when run (RuntimeError, Feature "
                "Not Implemented; compared by type); Stadyn refused every one")
def reshape__of_sparse_input(C, r):
    import scipy.sparse as sp
    r.touch("cntk.ops.input_variable", "cntk.Function.eval", "cntk.Function.grad",
            "cntk.Function.clone", "cntk.ops.parameter", "cntk.ops.alias")
    res = {}
    m = np.zeros((2, 3, 4), np.float32)
    m[0, 0, 1], m[0, 2, 3], m[1, 1, 1] = 2, 3, -1
    data = [sp.csr_matrix(a) for a in m]
    m6 = np.zeros((2, 6), np.float32)
    m6[0, 1], m6[0, 5], m6[1, 4] = 2, 3, -1
    data6 = sp.csr_matrix(m6)
    w = C.parameter((4, 2), init=np.arange(8, dtype=np.float32).reshape(4, 2) / 10, name="W")
    for label, shape, make in (
            ("(12,)", (3, 4), lambda s: C.reshape(s, (12,))),
            ("(2, 6)", (3, 4), lambda s: C.reshape(s, (2, 6))),
            ("(4, 3)", (3, 4), lambda s: C.reshape(s, (4, 3))),
            ("(3, 2, 2)", (3, 4), lambda s: C.reshape(s, (3, 2, 2))),
            ("(3, 4, 1)", (3, 4), lambda s: C.reshape(s, (3, 4, 1))),
            ("(1, 3, 4)", (3, 4), lambda s: C.reshape(s, (1, 3, 4))),
            ("(3, 1, 4)", (3, 4), lambda s: C.reshape(s, (3, 1, 4))),
            ("(3, 4)", (3, 4), lambda s: C.reshape(s, (3, 4))),
            ("(-1, 4)", (3, 4), lambda s: C.reshape(s, (-1, 4))),
            ("(1, -1, 4)", (3, 4), lambda s: C.reshape(s, (1, -1, 4))),
            ("(3, 1) begin 0 end 1", (3, 4), lambda s: C.reshape(s, (3, 1), 0, 1)),
            ("(4, 1) begin 1", (3, 4), lambda s: C.reshape(s, (4, 1), begin_axis=1)),
            ("relu of (1, 3, 4)", (3, 4), lambda s: C.relu(C.reshape(s, (1, 3, 4)))),
            ("of alias (1, 3, 4)", (3, 4), lambda s: C.reshape(C.alias(s), (1, 3, 4))),
            ("of (1, 3, 4), (3, 1, 4)", (3, 4),
             lambda s: C.reshape(C.reshape(s, (1, 3, 4)), (3, 1, 4))),
            ("times of (3, 1, 4)", (3, 4), lambda s: C.times(C.reshape(s, (3, 1, 4)), w)),
            ("expand_dims 0", (3, 4), lambda s: C.expand_dims(s, 0)),
            ("expand_dims -1", (3, 4), lambda s: C.expand_dims(s, -1)),
            ("(1, 6)", (6,), lambda s: C.reshape(s, (1, 6))),
            ("(6, 1)", (6,), lambda s: C.reshape(s, (6, 1))),
            ("(2, 3)", (6,), lambda s: C.reshape(s, (2, 3)))):
        s = C.input_variable(shape, is_sparse=True, name="s")
        f = make(s)
        feed = {s: data if shape == (3, 4) else data6}
        res[label + " | shape"] = list(f.shape)
        got = _outcome(lambda: _dense(f.eval(feed)), words=False)
        res[label + " | eval"] = got
        # built over a dense input, cloned onto a sparse one
        y = C.input_variable(shape, name="y")
        g = make(y).clone(C.CloneMethod.share, {y: s})
        res[label + " | cloned onto sparse"] = _outcome(lambda: _dense(g.eval(feed)),
                                                         words=False)
    s = C.input_variable((3, 4), is_sparse=True, name="s")
    f = C.times(C.reshape(s, (3, 1, 4)), w)
    res["times of (3, 1, 4) | gradient W"] = f.grad({s: data}, wrt=[w])
    q = C.sequence.input_variable((3, 4), is_sparse=True, name="q")
    res["sequence (1, 3, 4)"] = _dense(C.reshape(q, (1, 3, 4)).eval({q: data}))
    return res


def _whole_sample_ops(C, x, i):
    return {"top_k": lambda a, v=x: C.top_k(v, 2, axis=a),
            "one_hot": lambda a, v=i: C.one_hot(v, 3, axis=a),
            "swapaxes axis1": lambda a, v=x: C.swapaxes(v, a, 1),
            "swapaxes axis2": lambda a, v=x: C.swapaxes(v, 0, a),
            "swapaxes both": lambda a, v=x: C.swapaxes(v, a, a),
            "expand_dims": lambda a, v=x: C.expand_dims(v, a)}


@cntk_case(names=["cntk.ops.top_k", "cntk.ops.one_hot", "cntk.ops.swapaxes",
                  "cntk.ops.expand_dims", "cntk.ops.placeholder"],
           note="axis=None (sanitize_axis: Axis.all_static_axes()) given to the ops taking "
                "one static axis is CNTK 2.7's RuntimeError: top_k's and expand_dims' as "
                "called, of a waiting operand too; one_hot's and swapaxes' as the shape is "
                "inferred (a waiting one is built, refused once bound); Stadyn raised "
                "Python's TypeError (int(None)) or a ValueError")
def ops__axis_none_single_static_axis(C, r):
    r.touch("cntk.Function.replace_placeholders", "cntk.Function.shape")
    res = {}
    x = C.input_variable((3, 4))
    i = C.input_variable(2)
    for label, a in (("None", None), ("all_static_axes", C.Axis.all_static_axes())):
        for op, fn in _whole_sample_ops(C, x, i).items():
            res["%s | %s" % (op, label)] = _outcome(lambda: fn(a).shape)
            p = C.placeholder()
            w = _outcome(lambda: fn(a, p))
            if isinstance(w, list):
                res["%s | %s | waiting" % (op, label)] = w
                continue
            res["%s | %s | waiting" % (op, label)] = list(w.shape)
            bound = C.input_variable(2 if op == "one_hot" else (3, 4))
            res["%s | %s | waiting, bound" % (op, label)] = _outcome(
                lambda: w.replace_placeholders({p: bound}).shape, words=False)
    return res


def _leaves(f):
    """``f``'s inputs as (name, shape, constant?, placeholder?), and its constants' values."""
    return [[i.name, list(i.shape), bool(i.is_constant), bool(i.is_placeholder)]
            for i in f.inputs] + [[float(np.asarray(c.value)) for c in f.constants]]


_WAITING = ("CNTK 2.7 clones and saves a classification_error over a placeholder without a "
            "shape as it is (the placeholder kept: loaded, bound, it runs); Stadyn builds an "
            "op over such a placeholder only once it is given one (compat.cntk's Deferred: "
            "no save; clone asks for a substitution with a shape)")


@cntk_case(names=["cntk.metrics.classification_error", "cntk.ops.placeholder"],
           note="a top-N classification_error (N > 1) lists its constant N (float32) last "
                "among its inputs and constants, made, cloned, saved and loaded (Stadyn's "
                "loaded one lost it); top 1's block its 1 first; a waiting one cloned or "
                "saved keeps its placeholder",
           known=dict([("topN=%d waiting %s" % (top, what), _WAITING)
                       for top in (1, 2, 3) for what in ("clone", "saved, loaded",
                                                         "saved, loaded, bound values")]))
def classification_error__topn_saved_and_loaded(C, r):
    r.touch("cntk.Function.inputs", "cntk.Function.constants", "cntk.Function.eval",
            "cntk.Function.arguments", "cntk.Function.replace_placeholders",
            "cntk.Variable.is_placeholder", "cntk.CloneMethod", "cntk.Function.save",
            "cntk.Function.load", "cntk.Function.clone")
    res = {}
    xd, ld = r.randn(4, 3), r.onehot(4, 3)
    for top in (1, 2, 3):
        key = "topN=%d " % top
        lab = C.input_variable(3, name="lab")
        x = C.input_variable(3, name="x")
        f = C.classification_error(x, lab, topN=top)
        res[key + "made"] = _leaves(f)
        res[key + "values"] = f.eval({x: xd, lab: ld})
        f.save("m%d.model" % top)
        g = C.Function.load("m%d.model" % top)
        res[key + "loaded"] = _leaves(g)
        res[key + "loaded arguments"] = [a.name for a in g.arguments]
        res[key + "loaded values"] = g.eval({g.arguments[0]: xd, g.arguments[1]: ld})
        h = g.clone(C.CloneMethod.clone)
        res[key + "loaded, cloned"] = _leaves(h)
        res[key + "cloned"] = _leaves(f.clone(C.CloneMethod.clone))
        p = C.placeholder(name="p")
        w = C.classification_error(p, lab, topN=top)
        res[key + "waiting"] = _leaves(w)
        res[key + "waiting clone"] = _outcome(lambda: _leaves(w.clone(C.CloneMethod.clone)),
                                              words=False)
        b = w.clone(C.CloneMethod.clone, {p: x})
        res[key + "waiting, cloned bound"] = _leaves(b)
        res[key + "waiting, cloned bound values"] = b.eval(
            dict((a, xd if a.name == "x" else ld) for a in b.arguments))

        def saved():
            w.save("w%d.model" % top)
            return C.Function.load("w%d.model" % top)
        s = _outcome(saved, words=False)
        res[key + "waiting saved, loaded"] = s if isinstance(s, list) else _leaves(s)
        if not isinstance(s, list):
            ph = [i for i in s.inputs if i.is_placeholder][0]
            t = s.replace_placeholders({ph: x})
            res[key + "waiting saved, loaded, bound values"] = t.eval(
                dict((a, xd if a.name == "x" else ld) for a in t.arguments))
        else:
            res[key + "waiting saved, loaded, bound values"] = s
    return res


def _learner(C, kind, w):
    lr = C.learning_parameter_schedule(0.1)
    if kind == "sgd":
        return C.sgd([w], lr)
    if kind == "momentum_sgd":
        return C.momentum_sgd([w], lr, C.momentum_schedule(0.9))
    return C.adagrad([w], lr)


@cntk_case(names=["cntk.ops.times", "cntk.learners.sgd", "cntk.learners.momentum_sgd",
                  "cntk.learners.adagrad", "cntk.train.trainer.Trainer"],
           note="a weight multiplied by a sparse input and by a dense one (times(s, W) + "
                "times(y, W)): its value, its gradient (the sum of the two products', dense) "
                "and three updates of each learner agree with CNTK 2.7's")
def sparse_and_dense_products_of_one_weight(C, r):
    import scipy.sparse as sp
    r.touch("cntk.ops.input_variable", "cntk.ops.parameter", "cntk.Function.eval",
            "cntk.Function.grad", "cntk.train.trainer.Trainer.train_minibatch",
            "cntk.learners.learning_parameter_schedule", "cntk.learners.momentum_schedule",
            "cntk.ops.reduce_sum", "cntk.Parameter.value")
    res = {}
    m = np.zeros((3, 4), np.float32)
    m[0, 1], m[1, 3], m[2, 1] = 1, 2, -1
    yd = r.randn(3, 4)
    for kind in ("sgd", "momentum_sgd", "adagrad"):
        s = C.input_variable(4, is_sparse=True, name="s")
        y = C.input_variable(4, name="y")
        w = C.parameter((4, 2), init=np.arange(8, dtype=np.float32).reshape(4, 2) / 10,
                        name="W")
        f = C.times(s, w) + C.times(y, w)
        res[kind + " values"] = f.eval({s: sp.csr_matrix(m), y: yd})
        res[kind + " gradient"] = f.grad({s: sp.csr_matrix(m), y: yd}, wrt=[w])
        t = C.Trainer(f, (C.reduce_sum(f), None), [_learner(C, kind, w)])
        for k in range(3):
            t.train_minibatch({s: sp.csr_matrix(m), y: yd})
            res["%s step %d" % (kind, k)] = w.value
    return res


@cntk_case(names=["cntk.ops.times", "cntk.ops.alias", "cntk.learners.sgd",
                  "cntk.learners.momentum_sgd", "cntk.learners.adagrad",
                  "cntk.train.trainer.Trainer"],
           note="SciPy CSR data storing zeros explicitly, fed to a sparse input: the values "
                "are the dense ones; a stored zero is an entry of CNTK 2.7's block-sparse "
                "gradient, whose rows its learners update: sgd and momentum_sgd move them by "
                "0, adagrad averages its multiplier over them (CPUSparseMatrix.cpp:1358-1395, "
                "a stored zero's 1/sqrt(1e-16)), so no row moves (Stadyn read the touched "
                "rows from the non-zero values: adagrad moved row 1)")
def sparse_inputs__stored_zeros(C, r):
    import scipy.sparse as sp
    r.touch("cntk.ops.input_variable", "cntk.ops.parameter", "cntk.Function.eval",
            "cntk.train.trainer.Trainer.train_minibatch", "cntk.ops.reduce_sum",
            "cntk.learners.learning_parameter_schedule", "cntk.learners.momentum_schedule",
            "cntk.Parameter.value")
    res = {}
    feeds = {
        "zeros stored": sp.csr_matrix((np.float32([0, 2, 0]), [0, 1, 3], [0, 2, 3]),
                                      shape=(2, 4)),
        "none stored": sp.csr_matrix(np.float32([[0, 2, 0, 0], [0, 0, 0, 0]])),
        "zero after": sp.csr_matrix((np.float32([2, 0]), [1, 3], [0, 1, 2]), shape=(2, 4)),
        "zero before, same sample": sp.csr_matrix((np.float32([0, 2]), [0, 1], [0, 2, 2]),
                                                  shape=(2, 4))}
    s = C.input_variable(4, is_sparse=True, name="s")
    for label, z in feeds.items():
        res[label + " | stored"] = int(z.nnz)
        w = C.parameter((4, 2), init=np.arange(8, dtype=np.float32).reshape(4, 2) / 10)
        res[label + " | times"] = C.times(s, w).eval({s: z})
        res[label + " | alias"] = _dense(C.alias(s).eval({s: z}))
        for kind in ("sgd", "momentum_sgd", "adagrad"):
            w = C.parameter((4, 2), init=np.arange(8, dtype=np.float32).reshape(4, 2) / 10)
            f = C.times(s, w)
            t = C.Trainer(f, (C.reduce_sum(f), None), [_learner(C, kind, w)])
            for k in range(2):
                t.train_minibatch({s: z})
                res["%s | %s step %d" % (label, kind, k)] = w.value
            # then a one-hot Value (its stored entries its ones) and the matrix again
            t.train_minibatch({s: C.Value.one_hot([[2], [3]], 4)})
            res["%s | %s after one_hot" % (label, kind)] = w.value
            t.train_minibatch({s: z})
            res["%s | %s again" % (label, kind)] = w.value
    q = C.sequence.input_variable(4, is_sparse=True, name="q")
    ones = np.ones((4, 1), np.float32)
    res["sequence | times"] = [np.asarray(a) for a in C.times(q, ones).eval(
        {q: [feeds["zeros stored"], feeds["zero after"]]})]
    return res


def _dumped(C, f):
    """``dump_function(f)``'s lines, the numbers of uids masked (and runs of spaces made one:
    a uid's digits move the columns after it); and the names column alone (the letters given
    to unnamed nodes)."""
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        C.debugging.dump_function(f)
    lines = [re.sub(r" +", " ", re.sub(r"(Input|Placeholder)\d+", r"\1", ln.rstrip()))
             for ln in out.getvalue().splitlines()]
    return lines, [ln.split()[1] for ln in lines[1:]]


_ONTO = ("Stadyn gives a placeholder without a shape that replaces an input in a clone the "
         "input's shape and batch axis (_function_rebuild._bound_placeholder): the clone is "
         "built at once, of shape (3,), where CNTK 2.7's waits ((-2,), [?]) until the "
         "placeholder is bound (bound, the two agree); a choice, see "
         "clone__onto_shapeless_placeholder's known difference")


@cntk_case(names=["cntk.ops.placeholder", "cntk.CloneMethod", "cntk.debugging.dump_function"],
           note="a Function cloned onto a placeholder without a shape (f.clone(method, {x: "
                "placeholder()})) is CNTK 2.7's Function waiting for the placeholder's "
                "shape: (-2,), its placeholder listed (-2,), built once bound (values agree, "
                "each clone method); dump_function names its unnamed nodes a, c, d, e, as "
                "Stadyn does, its shapes unknown ([?](-2,)) where Stadyn shows (2,), (3,)",
           known=dict([("%s | %s" % (how, what), _ONTO) for how in ("share", "clone", "freeze")
                       for what in ("shape", "inputs", "placeholders", "dump_function")]))
def clone__onto_shapeless_placeholder_by_method(C, r):
    r.touch("cntk.Function.inputs", "cntk.Function.placeholders", "cntk.Function.shape",
            "cntk.Function.replace_placeholders", "cntk.Function.eval", "cntk.Function.clone",
            "cntk.ops.input_variable", "cntk.ops.parameter")
    res = {}
    x = C.input_variable(2, name="x")
    w = C.parameter((2, 3), init=np.arange(6, dtype=np.float32).reshape(2, 3) - 2, name="W")
    f = C.relu(C.times(x, w))
    d = r.randn(2, 2)
    for how in ("share", "clone", "freeze"):
        p = C.placeholder()
        g = f.clone(getattr(C.CloneMethod, how), {x: p})
        res[how + " | shape"] = list(g.shape)
        res[how + " | inputs"] = [[i.name, list(i.shape), bool(i.is_placeholder)]
                                  for i in g.inputs]
        res[how + " | placeholders"] = [list(q.shape) for q in g.placeholders]
        y = C.input_variable(2, name="y")
        b = _outcome(lambda: g.replace_placeholders({g.placeholders[0]: y}), words=False)
        res[how + " | bound shape"] = b if isinstance(b, list) else list(b.shape)
        res[how + " | bound values"] = b if isinstance(b, list) else b.eval({y: d})
        lines, letters = _dumped(C, f.clone(getattr(C.CloneMethod, how), {x: C.placeholder()}))
        res[how + " | dump_function"] = lines
        res[how + " | dump_function's letters"] = letters
    return res


@cntk_case(names=["cntk.ops.slice", "cntk.ops.splice", "cntk.losses.cross_entropy_with_softmax",
                  "cntk.ops.placeholder"],
           note="axis=None (Axis.all_static_axes()): slice is CNTK 2.7's RuntimeError as "
                "called, of a waiting operand too; splice its RuntimeError as the shape is "
                "inferred (a waiting one is built, refused once bound: compared by type); "
                "cross_entropy_with_softmax is over the whole sample (shape (), a sequence's "
                "steps each); Stadyn raised Python's TypeError (int(None)) or a ValueError")
def ops__axis_none_slice_splice_cross_entropy(C, r):
    r.touch("cntk.Function.replace_placeholders", "cntk.Function.eval", "cntk.Function.grad",
            "cntk.ops.input_variable", "cntk.ops.sequence.input_variable")
    res = {}
    x = C.input_variable((3, 4), needs_gradient=True)
    t = C.input_variable((3, 4))
    d = r.randn(2, 3, 4)
    td = np.zeros((2, 3, 4), np.float32)
    td[0, 1, 2], td[1, 2, 0], td[1, 0, 3] = 1, 0.5, 0.5
    sx = C.sequence.input_variable((2, 3), needs_gradient=True)
    st = C.sequence.input_variable((2, 3))
    sd = [r.randn(2, 2, 3), r.randn(1, 2, 3)]
    std = [r.onehot(2, 6).reshape(2, 2, 3), r.onehot(1, 6).reshape(1, 2, 3)]
    for label, a in (("None", None), ("all_static_axes", C.Axis.all_static_axes())):
        res["slice | " + label] = _outcome(lambda: C.slice(x, a, 0, 1).shape)
        res["slice | %s | waiting" % label] = _outcome(
            lambda: C.slice(C.placeholder(), a, 0, 1).shape)
        res["splice | " + label] = _outcome(lambda: C.splice(x, x, axis=a).shape)
        p = C.placeholder()
        w = C.splice(p, x, axis=a)
        res["splice | %s | waiting" % label] = list(w.shape)
        res["splice | %s | waiting, bound" % label] = _outcome(
            lambda: w.replace_placeholders({p: C.input_variable((3, 4))}).shape, words=False)
        f = C.cross_entropy_with_softmax(x, t, axis=a)
        res["cross_entropy | %s | shape" % label] = list(f.shape)
        res["cross_entropy | %s | values" % label] = f.eval({x: d, t: td})
        res["cross_entropy | %s | gradient" % label] = f.grad({x: d, t: td}, wrt=[x])
        p = C.placeholder()
        w = C.cross_entropy_with_softmax(p, t, axis=a)
        res["cross_entropy | %s | waiting" % label] = list(w.shape)
        res["cross_entropy | %s | waiting, bound" % label] = list(
            w.replace_placeholders({p: C.input_variable((3, 4))}).shape)
        g = C.cross_entropy_with_softmax(sx, st, axis=a)
        res["cross_entropy | %s | sequence" % label] = [
            np.asarray(v) for v in g.eval({sx: sd, st: std})]
    return res


_SPLICE_SHOWN = ("a waiting splice of a placeholder and an op over it: CNTK 2.7's signature "
                 "line names it Splice(p: ...), Stadyn's Composite(p: ...) (the nodes' lines "
                 "agree; compat.cntk's _deferred_printed)")
_TOPN_SHOWN = ("a waiting top-N classification_error's output: CNTK 2.7 shows it without "
               "dynamic axes, (b:(-2,)) (its primitive ClassificationError reduces them, "
               "PrimitiveFunction.cpp), Stadyn as unknown, (b:[?](-2,)) (compat.cntk's "
               "_deferred_shapes)")


@cntk_case(names=["cntk.debugging.dump_function", "cntk.ops.placeholder"],
           note="dump_function of an op over a placeholder without a shape (a waiting op) "
                "lists its graph with unknown shapes ([?](-2,)) and letters for its unnamed "
                "nodes, as CNTK 2.7's (Stadyn raised AttributeError: Deferred has no "
                "'waiting_graph')",
           known={"splice of two": _SPLICE_SHOWN, "splice of two | unnamed placeholder":
                  _SPLICE_SHOWN, "classification_error top 2": _TOPN_SHOWN,
                  "classification_error top 2 | unnamed placeholder": _TOPN_SHOWN})
def debugging__dump_of_waiting_ops(C, r):
    r.touch("cntk.ops.parameter", "cntk.ops.constant", "cntk.ops.times", "cntk.ops.plus",
            "cntk.ops.relu", "cntk.ops.reshape", "cntk.ops.splice",
            "cntk.metrics.classification_error", "cntk.ops.input_variable")
    res = {}
    w = C.parameter((2, 3), init=1.0, name="W")
    lab = C.input_variable(3, name="lab")
    for label, make in (
            ("times, plus", lambda p: C.plus(C.times(p, w), C.constant(1.0))),
            ("relu", lambda p: C.relu(p)),
            ("reshape", lambda p: C.reshape(p, (2, 3))),
            ("splice of two", lambda p: C.splice(p, C.relu(p))),
            ("classification_error top 2", lambda p: C.classification_error(p, lab, topN=2))):
        lines, letters = _dumped(C, make(C.placeholder(name="p")))
        res[label] = lines
        res[label + " | letters"] = letters
        res[label + " | unnamed placeholder"] = _dumped(C, make(C.placeholder()))[0]
    return res


_MATRIX_LABEL = ("a label of rank 2, (R, V), of samples of rank 3 (., R, V) along the default "
                 "axis: CNTK 2.7's TransposeTimes of the two gives (., R, R) (the classification "
                 "error's hardmax the whole sample's); Stadyn computes it for samples of rank 2 "
                 "only (_cross_entropy_of_matrices, _classification_error_of_matrices) and "
                 "raises ValueError here")


@cntk_case(names=["cntk.losses.cross_entropy_with_softmax",
                  "cntk.metrics.classification_error", "cntk.ops.constant"],
           note="a label of the scores' last axis alone ((4,) of (3, 4) scores): CNTK 2.7 "
                "broadcasts it over the rows (along the default axis TransposeTimes of it and "
                "each row, the classification error's hardmax the whole sample's: 1 in every "
                "row but the one holding the largest value; along another axis or the whole "
                "sample ElementTimes), a sequence's steps each; an unbatched (4,) constant "
                "along the default axis is its ValueError; a top-N error reads the label's "
                "largest among the topN of the whole flattened sample; over the whole sample an "
                "unbatched (3, 4) constant target is broadcast over the batch, a sparse one "
                "refused when run, a (1, 12) one refused (RuntimeError); Stadyn refused the "
                "label (ValueError), the constant, and ran the sparse and (1, 12) ones",
           known=dict(("rank 3, (3, 4) label | " + what, _MATRIX_LABEL)
                      for what in ("cross_entropy_with_softmax", "classification_error")))
def loss__label_of_the_last_axis(C, r):
    import scipy.sparse as sp
    r.touch("cntk.ops.input_variable", "cntk.ops.sequence.input_variable",
            "cntk.Function.eval", "cntk.Function.grad")
    res = {}
    x = C.input_variable((3, 4), needs_gradient=True)
    y = C.input_variable(4, needs_gradient=True)
    d = r.randn(3, 3, 4)
    t = np.float32([[0, 0, 1, 0], [0.5, 0, 0.5, 0], [0, 1, 0, 0]])
    d[2, 1, 1] = 9.0        # (the largest value of the third sample in the label's class)
    for label, a in (("default", -1), ("axis 0", 0), ("None", None)):
        f = C.cross_entropy_with_softmax(x, y, axis=a)
        res["cross_entropy | %s | shape" % label] = list(f.shape)
        res["cross_entropy | %s | values" % label] = f.eval({x: d, y: t})
        res["cross_entropy | %s | gradients" % label] = [
            g for _, g in sorted(f.grad({x: d, y: t}, wrt=[x, y]).items(),
                                 key=lambda kv: len(kv[0].shape), reverse=True)]
        e = C.classification_error(x, y, axis=a)
        res["classification_error | %s | shape" % label] = list(e.shape)
        res["classification_error | %s | values" % label] = e.eval({x: d, y: t})
    q = C.sequence.input_variable((3, 4))
    qy = C.sequence.input_variable(4)
    feed = {q: [d[0:2], d[2:3]], qy: [t[0:2], t[2:3]]}
    res["sequence | cross_entropy"] = C.cross_entropy_with_softmax(q, qy).eval(feed)
    res["sequence | classification_error"] = C.classification_error(q, qy).eval(feed)
    c4 = C.constant(np.float32([0, 1, 0, 0]))
    res["unbatched (4,) | cross_entropy"] = _outcome(
        lambda: C.cross_entropy_with_softmax(x, c4).eval({x: d}), words=False)
    res["unbatched (4,) | classification_error"] = _outcome(
        lambda: C.classification_error(x, c4).eval({x: d}), words=False)
    c34 = C.constant(np.full((3, 4), 1 / 12.0, np.float32))
    res["None | unbatched (3, 4)"] = C.cross_entropy_with_softmax(x, c34, axis=None).eval(
        {x: d})
    s = C.input_variable((3, 4), is_sparse=True)
    onehot = [sp.csr_matrix(np.eye(12, dtype=np.float32)[5].reshape(3, 4))] * 3
    res["None | sparse target"] = _outcome(
        lambda: C.cross_entropy_with_softmax(x, s, axis=None).eval({x: d, s: onehot}),
        words=False)
    y12 = C.input_variable((1, 12))
    res["None | (1, 12) target"] = _outcome(
        lambda: C.cross_entropy_with_softmax(x, y12, axis=None).shape, words=False)
    res["axis 0 | unbatched (4,)"] = C.cross_entropy_with_softmax(x, c4, axis=0).eval({x: d})
    res["None | unbatched (3, 4) | gradient"] = C.cross_entropy_with_softmax(
        x, c34, axis=None).grad({x: d}, wrt=[x])
    x3 = C.input_variable((2, 3, 4))
    d3 = r.randn(3, 2, 3, 4)
    res["rank 3, (4,) label | cross_entropy"] = C.cross_entropy_with_softmax(x3, y).eval(
        {x3: d3, y: t})
    res["rank 3, (4,) label | classification_error"] = C.classification_error(x3, y).eval(
        {x3: d3, y: t})
    xt, lab = C.input_variable((3, 4)), C.input_variable(4)
    dt, tt = r.randn(6, 3, 4), np.eye(4, dtype=np.float32)[[0, 1, 2, 3, 1, 2]]
    for top in (2, 3, 5):
        res["top %d" % top] = C.classification_error(xt, lab, topN=top).eval(
            {xt: dt, lab: tt})
        res["top %d | negative label" % top] = C.classification_error(xt, lab, topN=top).eval(
            {xt: dt, lab: tt - 5})
    y34 = C.input_variable((3, 4))
    t34 = np.tile(t[:, None], (1, 3, 1))
    for what in ("cross_entropy_with_softmax", "classification_error"):
        res["rank 3, (3, 4) label | " + what] = _outcome(
            lambda: getattr(C, what)(x3, y34).eval({x3: d3, y34: t34}), words=False)
    return res


@cntk_case(names=["cntk.ops.gather", "cntk.ops.placeholder"],
           note="gather along an Axis that is not a static one (all static axes, the batch "
                "axis) is CNTK 2.7's RuntimeError ('Gather operation only supports a single "
                "static axis.') as called, of a waiting operand too; None is its first axis; "
                "Stadyn raised ValueError, and built the waiting one")
def ops__gather_along_a_dynamic_axis(C, r):
    r.touch("cntk.ops.input_variable", "cntk.ops.constant", "cntk.Function.shape",
            "cntk.Axis.all_static_axes", "cntk.Axis.default_batch_axis")
    res = {}
    x = C.input_variable((3, 4))
    i = C.constant(np.float32([0, 2]))
    for label, a in (("None", None), ("all_static_axes", C.Axis.all_static_axes()),
                     ("default_batch_axis", C.Axis.default_batch_axis())):
        res[label] = _outcome(lambda: C.gather(x, i, axis=a).shape)
        res[label + " | waiting"] = _outcome(lambda: C.gather(C.placeholder(), i, axis=a).shape)
    return res

"""CNTK 2.7's ops where Stadyn's differed (cntkops35): NumPy numbers and floats as axes (one
rule, ``cntk.internal.sanitize_axis``, for every op taking an axis), ``Axis.all_static_axes()``
and ``Axis.all_axes()`` given to ``argmax``/``argmin``/``softmax``/``log_softmax``, binary ops
cloned onto a sparse input, a waiting ``classification_error``'s constant."""

import re

import numpy as np

from compat_harness import cntk_case


def _outcome(fn, words=True):
    """``fn()``'s value (a shape as a list), or what it raised: its built-in type and (with
    ``words``) its first line less what Stadyn adds on later lines, an unnamed input's or
    placeholder's number (of the process) masked."""
    try:
        got = fn()
    except Exception as e:
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        words_ = re.sub(r"'(Input|Placeholder)\d+'", r"'\1'", str(e).split("\n")[0])
        return ["raises", kind, words_] if words else ["raises", kind]
    if isinstance(got, tuple):
        return list(got)
    return got


# the axis kinds a user passes: Python's, NumPy's (integers, floats), an Axis
_KINDS = [("1", lambda C: 1), ("True", lambda C: True), ("np.int64(1)", lambda C: np.int64(1)),
          ("np.int32(1)", lambda C: np.int32(1)), ("np.int64(-1)", lambda C: np.int64(-1)),
          ("np.float32(1)", lambda C: np.float32(1)), ("np.float64(1)", lambda C: np.float64(1)),
          ("1.0", lambda C: 1.0), ("Axis(1)", lambda C: C.Axis(1)), ("'1'", lambda C: "1")]


def _ops(C, x, idx, lab, y):
    """Every op of CNTK 2.7 taking an axis, over ``x`` of samples (3, 4, 5), as a function of
    the axis given."""
    return {
        "reduce_sum": lambda a: C.reduce_sum(x, a).shape,
        "reduce_sum [a]": lambda a: C.reduce_sum(x, [a]).shape,
        "reduce_sum keepdims=False": lambda a: C.reduce_sum(x, a, keepdims=False).shape,
        "reduce_mean": lambda a: C.reduce_mean(x, a).shape,
        "reduce_max": lambda a: C.reduce_max(x, a).shape,
        "reduce_min": lambda a: C.reduce_min(x, a).shape,
        "reduce_prod": lambda a: C.reduce_prod(x, a).shape,
        "reduce_log_sum_exp": lambda a: C.reduce_log_sum_exp(x, a).shape,
        "reduce_l1": lambda a: C.reduce_l1(x, a).shape,
        "reduce_l2": lambda a: C.reduce_l2(x, a).shape,
        "reduce_sum_square": lambda a: C.reduce_sum_square(x, a).shape,
        "argmax": lambda a: C.argmax(x, a).shape,
        "argmin": lambda a: C.argmin(x, a).shape,
        "softmax": lambda a: C.softmax(x, a).shape,
        "log_softmax": lambda a: C.log_softmax(x, a).shape,
        "top_k": lambda a: C.top_k(x, 2, axis=a).outputs[0].shape,
        "slice": lambda a: C.slice(x, a, 0, 2).shape,
        "slice [a]": lambda a: C.slice(x, [a], [0], [2]).shape,
        "splice": lambda a: C.splice(x, x, axis=a).shape,
        "swapaxes axis1": lambda a: C.swapaxes(x, a, 2).shape,
        "swapaxes axis2": lambda a: C.swapaxes(x, 0, a).shape,
        "expand_dims": lambda a: C.expand_dims(x, a).shape,
        "squeeze": lambda a: C.squeeze(y, a).shape,
        "squeeze [a]": lambda a: C.squeeze(y, [a]).shape,
        "flatten": lambda a: C.flatten(x, a).shape,
        "reshape begin_axis": lambda a: C.reshape(x, (-1,), begin_axis=a).shape,
        "reshape end_axis": lambda a: C.reshape(x, (-1,), begin_axis=0, end_axis=a).shape,
        "gather": lambda a: C.gather(x, idx, axis=a).shape,
        "one_hot": lambda a: C.one_hot(idx, 3, axis=a).shape,
        "cross_entropy_with_softmax": lambda a: C.cross_entropy_with_softmax(
            x, lab, axis=a).shape,
        "classification_error": lambda a: C.classification_error(x, lab, axis=a).shape,
        "transpose [0, a, 2]": lambda a: C.transpose(x, [0, a, 2]).shape,
    }


@cntk_case(names=["cntk.ops.reduce_sum", "cntk.ops.reduce_mean", "cntk.ops.reduce_max",
                  "cntk.ops.reduce_min", "cntk.ops.reduce_prod", "cntk.ops.reduce_log_sum_exp",
                  "cntk.ops.reduce_l1", "cntk.ops.reduce_l2", "cntk.ops.reduce_sum_square",
                  "cntk.ops.argmax", "cntk.ops.argmin", "cntk.ops.softmax",
                  "cntk.ops.log_softmax", "cntk.ops.top_k", "cntk.ops.slice", "cntk.ops.splice",
                  "cntk.ops.swapaxes", "cntk.ops.expand_dims", "cntk.ops.squeeze",
                  "cntk.ops.flatten", "cntk.ops.reshape", "cntk.ops.gather", "cntk.ops.one_hot",
                  "cntk.losses.cross_entropy_with_softmax",
                  "cntk.metrics.classification_error", "cntk.ops.transpose"],
           note="CNTK 2.7 makes an Axis of each axis argument (sanitize_axis): a NumPy integer "
                "is SWIG's NotImplementedError for new_Axis, a float or a NumPy float (or "
                "anything else not an int or an Axis) its AttributeError, as the op is called, "
                "of a waiting operand too; transpose's permutation its own refusals "
                "(Stadyn took all of them as ints). np.bool_ compares by type only: its "
                "type's name is NumPy's ('numpy.bool_' under CNTK's NumPy, 'numpy.bool' "
                "under NumPy 2)")
def ops__axis_argument_types(C, r):
    x = C.input_variable((3, 4, 5))
    idx = C.input_variable(2)
    lab = C.input_variable((3, 4, 5))
    y = C.input_variable((3, 1, 5))
    ops = _ops(C, x, idx, lab, y)
    res = {}
    for label, make in _KINDS:
        for op, fn in ops.items():
            res["%s | %s" % (op, label)] = _outcome(lambda: fn(make(C)))
    for op, fn in ops.items():
        res["%s | np.bool_(True)" % op] = _outcome(lambda: fn(np.bool_(True)), words=False)
    # as the op is called, of a waiting operand too
    p = C.placeholder()
    for label, a in (("np.int64(0)", np.int64(0)), ("np.float32(0)", np.float32(0))):
        for op, fn in (("reduce_mean", lambda: C.reduce_mean(p, a)),
                       ("argmax", lambda: C.argmax(p, a)),
                       ("softmax", lambda: C.softmax(p, a)),
                       ("slice", lambda: C.slice(p, a, 0, 1)),
                       ("splice", lambda: C.splice(p, p, axis=a)),
                       ("swapaxes", lambda: C.swapaxes(p, a, 1)),
                       ("transpose", lambda: C.transpose(p, [a, 1])),
                       ("cross_entropy_with_softmax",
                        lambda: C.cross_entropy_with_softmax(p, lab, axis=a))):
            got = _outcome(fn)
            res["waiting %s | %s" % (op, label)] = got if isinstance(got, list) else "made"
    # transpose's permutation as CNTK's Python checks it
    for label, perm in (("1", 1), ("Axis(1)", C.Axis(1)), ("[0, 5, 1]", [0, 5, 1]),
                        ("[0, 0, 1]", [0, 0, 1]), ("[2, 0, 1]", [2, 0, 1]),
                        ("(-1, 0, 1)", (-1, 0, 1)), ("[2, np.int32(0), 1]", [2, np.int32(0), 1])):
        res["transpose perm=" + label] = _outcome(lambda: C.transpose(x, perm).shape)
    # the values along an accepted axis (an int, True, an Axis) agree
    d = r.randn(2, 3, 4, 5)
    for label, a in (("1", 1), ("True", True), ("Axis(1)", C.Axis(1))):
        res["reduce_max values | " + label] = C.reduce_max(x, a).eval({x: d})
        res["argmin values | " + label] = C.argmin(x, a).eval({x: d})
    return res


@cntk_case(names=["cntk.ops.argmax", "cntk.ops.argmin", "cntk.ops.softmax",
                  "cntk.ops.log_softmax"],
           note="argmax/argmin along Axis.all_static_axes() are the flat index of the sample "
                "(as with no axis); along all axes or the batch axis CNTK 2.7 builds them and "
                "refuses to run them (ValueError, ReduceElementsNode::NeutralValue), over a "
                "sequence along the batch axis refuses to build them; softmax along all "
                "static axes is softmax with no axis but of an operand of rank 1 (a "
                "placeholder without a shape too: ValueError), along another dynamic axis its "
                "RuntimeError; log_softmax along all axes or all static axes its RuntimeError "
                "(Stadyn asked each for a static axis index: ValueError); log_softmax along "
                "the batch axis is over the samples of the minibatch (refused over a "
                "sequence as made)")
def ops__all_static_axes_and_all_axes(C, r):
    x1 = C.input_variable(3)
    x2 = C.input_variable((3, 4))
    s = C.sequence.input_variable((2, 3))
    res = {}
    for an in ("all_static_axes", "all_axes", "default_batch_axis"):
        for op in ("argmax", "argmin", "softmax", "log_softmax"):
            for label, v in (("rank 1", x1), ("rank 2", x2), ("sequence", s)):
                res["%s | %s | %s" % (op, an, label)] = _outcome(
                    lambda: list(getattr(C, op)(v, getattr(C.Axis, an)()).shape))
            res["%s | %s | placeholder" % (op, an)] = _outcome(
                lambda: list(getattr(C, op)(C.placeholder(), getattr(C.Axis, an)()).shape))
    d = r.randn(2, 3, 4)
    sd = [r.randn(2, 2, 3), r.randn(1, 2, 3)]
    for op in ("argmax", "argmin", "softmax"):
        f = getattr(C, op)(x2, C.Axis.all_static_axes())
        res[op + " all_static_axes values"] = f.eval({x2: d})
        res[op + " all_static_axes values == no axis"] = bool(
            np.allclose(f.eval({x2: d}), getattr(C, op)(x2).eval({x2: d})))
        g = getattr(C, op)(s, C.Axis.all_static_axes())
        res[op + " all_static_axes values of sequences"] = [np.asarray(a) for a in g.eval({s: sd})]
    xg = C.input_variable((3, 4), needs_gradient=True)
    f = C.log_softmax(xg, C.Axis.default_batch_axis())
    res["log_softmax default_batch_axis values"] = f.eval({xg: d})
    res["log_softmax default_batch_axis gradient"] = f.grad({xg: d}, wrt=[xg])
    c = C.constant(r.randn(3, 4))
    res["softmax all_static_axes of a constant"] = C.softmax(c, C.Axis.all_static_axes()).eval()
    for op in ("argmax", "argmin"):
        for an in ("all_axes", "default_batch_axis"):
            f = getattr(C, op)(x2, getattr(C.Axis, an)())
            res["%s | %s | eval" % (op, an)] = _outcome(lambda: f.eval({x2: d}))
    return res


_BINARY = ["less", "equal", "not_equal", "greater", "greater_equal", "less_equal", "plus",
           "minus", "element_times", "element_divide", "element_max", "element_min", "pow",
           "log_add_exp"]


@cntk_case(names=["cntk.ops.%s" % n for n in _BINARY] + [
                  "cntk.ops.element_select", "cntk.ops.relu", "cntk.ops.alias", "cntk.ops.times",
                  "cntk.CloneMethod"],
           note="an op built over dense inputs and cloned (or applied) onto a sparse input "
                "(is_sparse=True) is refused when it runs, as built on it directly: CNTK "
                "2.7's RuntimeError (TensorOp: Tensor operations are currently not supported "
                "for sparse matrices), compared by type (Stadyn's words name the op and "
                "input); Stadyn ran the copies (its refusal was kept for an op made on the "
                "sparse input only; an alias so cloned did not pass the sparse data on); "
                "times takes sparse data")
def ops__binary_ops_cloned_onto_sparse_input(C, r):
    r.touch("cntk.ops.input_variable", "cntk.Function.eval", "cntk.Value.one_hot",
            "cntk.Function.clone")
    res = {}
    ones = r.rand(2, 3)
    for op in _BINARY + ["element_select", "relu of plus", "relu of alias", "times"]:
        x = C.input_variable(3, name="x")
        y = C.input_variable(3, name="y")
        if op == "element_select":
            f = C.element_select(x, y, y)
        elif op == "relu of plus":
            f = C.relu(C.plus(x, y))
        elif op == "relu of alias":
            f = C.plus(C.relu(C.alias(x)), y)
        elif op == "times":
            f = C.plus(C.times(x, C.parameter((3, 3), init=1.0)), y)
        else:
            f = getattr(C, op)(x, y)
        s = C.input_variable(3, is_sparse=True, name="s")
        data = C.Value.one_hot([[1], [2]], 3)
        for how in ("share", "clone", "freeze"):
            g = f.clone(getattr(C.CloneMethod, how), {x: s})
            feed = dict((a, data if a.name == "s" else ones) for a in g.arguments)
            res["%s | %s" % (op, how)] = _outcome(lambda: g.eval(feed), words=False)
        y2 = C.input_variable(3, name="y2")
        # (applied: CNTK's typed arguments refuse a sparse Variable for a dense one)
        res["%s | applied" % op] = _outcome(lambda: f(s, y2), words=False)
        d = f.clone(C.CloneMethod.share, {x: y2})
        res["%s | dense clone" % op] = d.eval(dict((a, ones) for a in d.arguments))
    return res


def _leaves(f):
    """``f``'s inputs as (name, shape, constant?), and the values of its constants."""
    return [[i.name, list(i.shape), bool(i.is_constant)] for i in f.inputs] + [
        [float(np.asarray(c.value)) for c in f.constants]]


@cntk_case(names=["cntk.metrics.classification_error", "cntk.ops.placeholder"],
           note="classification_error over a placeholder without a shape (waiting) lists the "
                "constant its op holds among its inputs and constants at once: top 1's "
                "block its 1 (float32) first, top N's op N last; the same Constant (uid) once "
                "the placeholder is bound; built directly, top N's op lists N last too "
                "(Stadyn listed none while waiting, and none for top N)")
def classification_error__waiting_constant(C, r):
    r.touch("cntk.Function.inputs", "cntk.Function.constants", "cntk.Function.root_function",
            "cntk.Variable.uid", "cntk.Variable.is_constant", "cntk.Function.replace_placeholders")
    res = {}
    lab = C.input_variable(3, name="lab")
    x = C.input_variable(3, name="x")
    for top in (1, 2, 3):
        p = C.placeholder(name="p")
        f = C.classification_error(p, lab, topN=top)
        key = "topN=%d " % top
        res[key + "waiting inputs"] = _leaves(f)
        res[key + "waiting root inputs"] = len(f.root_function.inputs)
        res[key + "waiting constants"] = [float(np.asarray(c.value)) for c in f.constants]
        uid = f.constants[0].uid
        res[key + "same constant in each walk"] = f.constants[0].uid == uid
        g = f.replace_placeholders({p: x})
        res[key + "bound inputs"] = _leaves(g)
        res[key + "bound constant is the waiting one"] = g.constants[0].uid == uid
        w = C.classification_error(C.relu(C.placeholder(name="q")), lab, topN=top)
        res[key + "waiting relu inputs"] = _leaves(w)
        res[key + "direct inputs"] = _leaves(C.classification_error(x, lab, topN=top))
        d = C.classification_error(x, lab, topN=top)
        res[key + "direct values"] = d.eval({x: r.randn(4, 3), lab: r.onehot(4, 3)})
    return res


@cntk_case(names=["cntk.ops.splice", "cntk.ops.reshape", "cntk.ops.sum"],
           note="splice of one operand is CNTK 2.7's combine of it, returned before its axis "
                "is read (a NumPy integer or a float axis taken) and run on a sparse input "
                "(Stadyn refused both: rmE35); sum of one operand likewise a Combine; "
                "reshape reads end_axis before begin_axis (the first refused is end_axis's)",
           known=dict(("%s | %s, its kind" % (op, how), "CNTK 2.7 evaluates a combine (alias) of "
                       "sparse data to a SciPy csr_matrix; Stadyn's eval gives it dense "
                       "(C.alias(s).eval() too): the values agree")
                      for op in ("splice", "sum") for how in ("sparse", "cloned onto sparse")))
def splice__one_operand_axis_and_sparse(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.clone", "cntk.Value.one_hot")
    res = {}
    x = C.input_variable(3, name="x")
    d = r.randn(2, 3)
    for label, a in (("np.int64(0)", np.int64(0)), ("np.float32(0)", np.float32(0)),
                     ("1.0", 1.0), ("'a'", "a")):
        res["splice one | " + label] = _outcome(lambda: C.splice(x, axis=a).eval({x: d}))
        res["splice two | " + label] = _outcome(lambda: C.splice(x, x, axis=a).shape)
    res["reshape begin np.int64 end 1.0"] = _outcome(
        lambda: C.reshape(C.input_variable((3, 4)), (-1,), begin_axis=np.int64(0),
                          end_axis=1.0).shape)
    res["reshape begin 1.0 end np.int64"] = _outcome(
        lambda: C.reshape(C.input_variable((3, 4)), (-1,), begin_axis=1.0,
                          end_axis=np.int64(1)).shape)
    data = C.Value.one_hot([[1], [2]], 3)
    w = r.rand(3, 2)
    for label, make in (("splice", lambda v: C.splice(v)),
                        ("times of splice", lambda v: C.times(C.splice(v), w)),
                        ("relu of splice", lambda v: C.relu(C.splice(v))),
                        ("sum", lambda v: C.sum(v)),
                        ("times of sum", lambda v: C.times(C.sum(v), w))):
        s = C.input_variable(3, is_sparse=True, name="s")
        f = make(s)
        y = C.input_variable(3, name="y")
        g = make(y).clone(C.CloneMethod.share, {y: s})
        for how, h in (("sparse", f), ("cloned onto sparse", g)):
            got = _outcome(lambda: h.eval({h.arguments[0]: data}), words=False)
            if isinstance(got, list):
                res["%s | %s" % (label, how)] = got
            else:       # (its values, and whether CNTK gave them sparse: a SciPy matrix)
                sparse = hasattr(got, "todense")
                res["%s | %s" % (label, how)] = np.asarray(got.todense()) if sparse else got
                res["%s | %s, its kind" % (label, how)] = "sparse" if sparse else "dense"
    return res


@cntk_case(names=["cntk.ops.relu", "cntk.ops.plus", "cntk.ops.splice", "cntk.ops.slice",
                  "cntk.ops.reduce_sum", "cntk.ops.less", "cntk.ops.alias", "cntk.CloneMethod"],
           note="an op built on a sparse input, refused when run, runs once cloned onto a "
                "dense input, and its clone back onto a sparse one is refused again (Stadyn "
                "carried the refusal to every copy: rmE35); compared by type")
def ops__sparse_refusal_cloned_onto_dense(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.clone", "cntk.Value.one_hot")
    res = {}
    data = C.Value.one_hot([[1], [2]], 3)
    d = r.rand(2, 3)
    for label, make in (("relu", lambda v, y: C.relu(v)),
                        ("plus", lambda v, y: C.plus(v, y)),
                        ("splice", lambda v, y: C.splice(v, y)),
                        ("slice", lambda v, y: C.slice(v, 0, 0, 2)),
                        ("reduce_sum", lambda v, y: C.reduce_sum(v)),
                        ("less", lambda v, y: C.less(v, y)),
                        ("relu of alias", lambda v, y: C.relu(C.alias(v))),
                        ("times of alias", lambda v, y: C.times(C.alias(v), C.constant(
                            np.ones((3, 2), np.float32))))):
        s = C.input_variable(3, is_sparse=True, name="s")
        y = C.input_variable(3, name="y")
        f = make(s, y)

        def feed(g):
            return dict((a, data if a.is_sparse else d) for a in g.arguments)
        res["%s | on sparse" % label] = _outcome(lambda: f.eval(feed(f)), words=False)
        for how in ("share", "clone"):
            x = C.input_variable(3, name="x")
            g = f.clone(getattr(C.CloneMethod, how), {s: x})
            s2 = C.input_variable(3, is_sparse=True, name="s2")
            h = g.clone(C.CloneMethod.share, {x: s2})
            res["%s | %s onto dense" % (label, how)] = _outcome(lambda: g.eval(feed(g)))
            res["%s | %s onto dense, back onto sparse" % (label, how)] = _outcome(
                lambda: h.eval(feed(h)), words=False)
    return res

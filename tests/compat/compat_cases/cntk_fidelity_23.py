"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (twenty-third round): the data
types a run takes, minibatch layouts that differ, hardmax and crops over free dimensions,
``str`` of an op joining a sequence with a value of the batch axis alone, renaming a Function,
numbers given as a layer's initial values, an untyped ``@C.Function`` run too early, slice
ranges."""

import re

from compat_harness import cntk_case
from compat_outcomes import builtin_type
from compat_cases.cntk_function_misuse import _outcome


def _said(call):
    """``[error type, its first line]`` (uids' numbers masked), or ``["returns"]``."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the type and words are what is compared
        line = str(exc).strip().splitlines()[0]
        return [builtin_type(exc), _masked(line)]
    return ["returns"]


def _masked(text):
    """``text`` with the numbers of uids (``Input12``, ``Plus5_Output_0``) masked."""
    return re.sub(r"\b([A-Z][A-Za-z]*)\d+", r"\1#", text)


@cntk_case(names=["cntk.Function.eval", "cntk.Function.forward", "cntk.Function.grad",
                  "cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch"],
           note="NumPy data of a type CNTK 2.7 does not convert to the input's (int32, int8, "
                "uint8, uint64, strings; an array, or arrays in a list) is its ValueError "
                "'only integer, bool, float32, float64 and float16 are supported, you gave "
                "int32' in every run (int64, Python's integer, bool and the float types are "
                "converted); an object array is its ValueError too.  Stadyn converted each")
def feeding__data_types_refused(C, r, np):
    r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.Function.grad",
            "cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    x = C.input_variable(2, name="x", needs_gradient=True)
    d = C.input_variable(2, dtype=np.float64, name="d")
    s = C.sequence.input_variable(2, name="s")
    f = x * 1
    res = {}
    for t in ("int32", "int64", "int8", "int16", "uint8", "uint64", "float16", "float64",
              "bool", "U1"):
        res["eval " + t] = _said(lambda: f.eval({x: np.ones((1, 2)).astype(t)}))
    res["float64 input, int32"] = _said(lambda: (d * 1).eval({d: np.ones((1, 2), np.int32)}))
    res["float64 input, float32"] = _said(
        lambda: (d * 1).eval({d: np.ones((1, 2), np.float32)}))
    res["list of int32"] = _said(lambda: f.eval({x: [np.ones(2, np.int32)]}))
    res["list of int64"] = _said(lambda: f.eval({x: [np.ones(2, np.int64)]}))
    res["list of numbers"] = _said(lambda: f.eval({x: [[1, 2]]}))
    res["sequences of int32"] = _said(lambda: (s * 1).eval({s: [np.ones((2, 2), np.int32)]}))
    res["object array"] = _said(lambda: f.eval({x: np.array([[1, 2]], dtype=object)}))
    res["forward"] = _said(lambda: f.forward({x: np.ones((1, 2), np.int32)}))
    res["grad"] = _said(lambda: f.grad({x: np.ones((1, 2), np.int32)}))
    p = C.parameter(2, init=1.0)
    loss = C.reduce_sum(x * p)
    trainer = C.Trainer(loss, (loss, loss), C.sgd(loss.parameters,
                                                  C.learning_parameter_schedule(0.1)))
    res["train int32"] = _said(lambda: trainer.train_minibatch(
        {x: np.ones((1, 2), np.int32)}))
    res["test int32"] = _said(lambda: trainer.test_minibatch({x: np.ones((1, 2), np.int32)}))
    res["train float64"] = _said(lambda: trainer.train_minibatch(
        {x: np.ones((1, 2), np.float64)}))
    res["p after"] = p.value
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch"],
           note="inputs on the same dynamic axes given different numbers of samples, or "
                "sequences of different numbers or lengths: CNTK 2.7's ValueError 'Different "
                "minibatch layouts detected ...'.  Stadyn raised its own error for inputs "
                "without a sequence axis, and trained on sequence inputs of different counts")
def trainer__different_minibatch_layouts(C, r, np):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
    w = C.parameter((2, 2), init=1.0)
    loss = C.reduce_sum(C.times(x, w) * y)
    plain = C.Trainer(loss, (loss, loss), C.sgd(loss.parameters,
                                                C.learning_parameter_schedule(0.1)))
    s, t = C.sequence.input_variable(2, name="s"), C.sequence.input_variable(2, name="t")
    v = C.parameter((2, 2), init=1.0)
    sloss = C.sequence.reduce_sum(C.reduce_sum(C.times(s, v) * t))
    seq = C.Trainer(sloss, (sloss, sloss), C.sgd(sloss.parameters,
                                                 C.learning_parameter_schedule(0.1)))
    one = np.ones((1, 2), np.float32)
    return {
        "plain train": _said(lambda: plain.train_minibatch(
            {x: np.ones((2, 2), np.float32), y: np.ones((3, 2), np.float32)})),
        "plain test": _said(lambda: plain.test_minibatch(
            {x: np.ones((2, 2), np.float32), y: np.ones((3, 2), np.float32)})),
        "sequence lengths": _said(lambda: seq.train_minibatch(
            {s: [np.ones((2, 2), np.float32)], t: [np.ones((3, 2), np.float32)]})),
        "sequence counts": _said(lambda: seq.train_minibatch(
            {s: [np.ones((2, 2), np.float32)] * 2, t: [np.ones((2, 2), np.float32)]})),
        "same layouts": _said(lambda: seq.train_minibatch(
            {s: [np.ones((2, 2), np.float32), one], t: [np.ones((2, 2), np.float32), one]})),
        "one sequence as an array": _said(lambda: seq.train_minibatch(
            {s: np.ones((3, 2), np.float32), t: [np.ones((3, 2), np.float32)]})),
        "an array of two, a list of one": _said(lambda: seq.train_minibatch(
            {s: np.ones((2, 3, 2), np.float32), t: [np.ones((3, 2), np.float32)]})),
        "one-step sequences as samples": _said(lambda: seq.train_minibatch(
            {s: [np.ones(2, np.float32)] * 2, t: [one] * 2})),
        "one-step sequences as samples, test": _said(lambda: seq.test_minibatch(
            {s: [np.ones(2, np.float32)] * 2, t: [one] * 2})),
        "v after": v.value}


@cntk_case(names=["cntk.ops.hardmax"],
           note="hardmax of samples with a free dimension (input_variable((FreeDimension, "
                "3))): CNTK 2.7 computes it per run (1 at the first largest value of each "
                "sample), its shape shown with -3.  Stadyn refused it (ValueError)")
def hardmax__free_dimension(C, r, np):
    r.touch("cntk.Function.eval", "cntk.Function.grad", "cntk.Function.shape")
    f = C.input_variable((C.FreeDimension, 3), needs_gradient=True)
    h = C.hardmax(f)
    g = C.input_variable(C.FreeDimension)
    k = C.hardmax(g)
    data = np.array([[[1, 5, 2], [7, 1, 0], [9, 9, 9]], [[1, 1, 1], [0, 0, 0], [2, 3, 1]]],
                    np.float32)
    return {"shapes": [list(h.shape), list(k.shape)],
            "two": h.eval({f: data[:, :2]}), "three": h.eval({f: data}),
            "nan and ties": h.eval({f: np.array([[[np.nan, 5, 2], [7, 1, np.nan]],
                                                 [[1, 7, 2], [7, 1, 0]]], np.float32)}),
            "one axis": k.eval({g: np.array([[1, 5, 2], [3, 3, 0]], np.float32)}),
            "one axis, 5": k.eval({g: np.array([[1, 5, 2, 6, 6]], np.float32)}),
            "grad": C.reduce_sum(h * f).grad({f: data[:1]})}


@cntk_case(names=["cntk.ops.crop_manual", "cntk.ops.crop_automatic"],
           note="a crop of an input of free spatial dimensions to a referent of a fixed size: "
                "CNTK 2.7 builds it (its shape the referent's) and crops each run.  A window "
                "that does not fit the input, and an automatic crop of inputs with no common "
                "ancestor, CNTK builds and refuses when run (RuntimeError); a negative offset "
                "is its NotImplementedError.  Stadyn refused each when built (ValueError)")
def crop__free_input_and_refusals_when_run(C, r, np):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    img = C.input_variable((1, C.FreeDimension, C.FreeDimension))
    ref = C.input_variable((1, 3, 3))
    five = np.arange(50, dtype=np.float32).reshape(2, 1, 5, 5)
    refs = np.zeros((2, 1, 3, 3), np.float32)
    crop = C.crop_manual(img, ref, 1, 1)
    res = {"free input shape": list(crop.shape),
           "free input 5x5": crop.eval({img: five, ref: refs}),
           "free input 4x6": crop.eval({img: np.arange(24, dtype=np.float32).reshape(
               1, 1, 4, 6), ref: refs[:1]})}
    res["free input 3x3"] = _said(lambda: crop.eval(
        {img: np.ones((1, 1, 3, 3), np.float32), ref: refs[:1]}))
    res["free input 5x3"] = _said(lambda: crop.eval(
        {img: np.ones((1, 1, 5, 3), np.float32), ref: refs[:1]}))
    a, b = C.input_variable((1, 5, 5)), C.input_variable((1, 3, 3))
    auto = C.crop_automatic(a, b)
    res["unconnected shape"] = list(auto.shape)
    res["unconnected run"] = _outcome(lambda: auto.eval({a: five, b: refs}))
    small = C.input_variable((1, 2, 4))
    made = _outcome(lambda: C.crop_manual(small, b, 0, 0))
    res["too small"] = made if isinstance(made, str) else list(made.shape)
    res["too small run"] = _outcome(lambda: made.eval(
        {small: np.zeros((1, 1, 2, 4), np.float32), b: refs[:1]}))
    res["negative offset"] = _outcome(lambda: C.crop_manual(a, b, -1, 0))
    return res


@cntk_case(names=["cntk.Function.__str__", "cntk.Function.__repr__"],
           note="an op of two operands with dynamic axes, one a sequence and one of the "
                "batch axis alone: CNTK 2.7 puts a ReconcileDynamicAxis before the latter, so "
                "its root reads another input than the Function's and str() prints "
                "'Composite(...)'.  Stadyn printed the op's name")
def str__sequence_joined_with_a_batch_value(C, r, np):
    r.touch("cntk.Function.__str__", "cntk.Function.__repr__")
    s = C.sequence.input_variable(2, name="s")
    b = C.input_variable(2, name="b")
    c = C.constant(np.ones(2, np.float32), name="c")
    made = {"s + b": lambda: s + b, "b + s": lambda: b + s, "s + c": lambda: s + c,
            "s + s": lambda: s + s, "b + b": lambda: b + b, "s * b": lambda: s * b,
            "minus": lambda: C.minus(s, b), "pow": lambda: C.pow(s, b),
            "log_add_exp": lambda: C.log_add_exp(s, b), "greater": lambda: C.greater(s, b),
            "equal": lambda: C.equal(b, s), "cosine_distance": lambda: C.cosine_distance(s, b),
            "times_transpose": lambda: C.times_transpose(s, b),
            "named": lambda: C.plus(s, b, name="z"), "s + b + 1": lambda: s + b + 1,
            "s + 1": lambda: s + 1}
    res = {}
    for label, make in made.items():
        f = make()
        res[label] = [str(f), _masked(repr(f))]
    return res


@cntk_case(names=["cntk.Function.name", "cntk.layers.Sequential", "cntk.layers.Dense",
                  "cntk.layers.Convolution", "cntk.layers.ConvolutionTranspose",
                  "cntk.layers.Embedding", "cntk.layers.BatchNormalization",
                  "cntk.layers.LayerNormalization", "cntk.layers.LSTM"],
           note="Function.name set where the Function has a name (given, set before, or an "
                "unnamed Sequential's last layer's): CNTK 2.7's ValueError 'Illegal to set "
                "name of a Function ... with an existing name'; Stadyn renamed it.  A NumPy "
                "scalar other than float64 or a string as a layer's initial value: CNTK's "
                "NotImplementedError (constant_initializer takes a Python number), init=None "
                "for Dense and the convolutions its ValueError; Stadyn took each")
def layers__renaming_and_initial_numbers(C, r, np):
    r.touch("cntk.Function.name")
    L = C.layers

    def renamed(make, new):
        def run():
            f = make()
            f.name = new
            return f.name
        said = _said(run)       # (the Function's repr left out: an unapplied layer renamed
        return said[:1] + [w.split("' with ")[-1] for w in said[1:]]   # shows another uid)

    def named_once():
        d = L.Dense(2)
        d.name = "a"
        return d
    res = {
        "Sequential": renamed(lambda: L.Sequential([L.Dense(2)]), "x"),
        "Sequential, last named": renamed(lambda: L.Sequential([L.Dense(2, name="d")]), "x"),
        "Sequential, named": renamed(lambda: L.Sequential([L.Dense(2)], name="s"), "x"),
        "Sequential, same name": renamed(lambda: L.Sequential([L.Dense(2)], name="s"), "s"),
        "Sequential, empty": renamed(lambda: L.Sequential([L.Dense(2)], name="s"), ""),
        "Dense, named": renamed(lambda: L.Dense(2, name="d"), "x"),
        "applied": renamed(lambda: L.Dense(2)(C.input_variable(3)), "x"),
        "op": renamed(lambda: C.plus(C.input_variable(3), 1), "x"),
        "op, named": renamed(lambda: C.plus(C.input_variable(3), 1, name="a"), "x"),
        "twice": renamed(named_once, "b")}
    numbers = {"float32": np.float32(0.5), "float64": np.float64(0.5), "int64": np.int64(1),
               "bool_": np.bool_(True), "str": "abc", "int": 1, "float": 0.5, "bool": True}
    for label, v in numbers.items():
        res["Dense init " + label] = _outcome(lambda: L.Dense(2, init=v)(
            C.input_variable(3)).W.value)
    made = {"Dense init None": lambda: L.Dense(2, init=None),
            "Dense init_bias None": lambda: L.Dense(2, init_bias=None),
            "Dense init_bias": lambda: L.Dense(2, init_bias=np.float32(0.5)),
            "Convolution init": lambda: L.Convolution((2, 2), 2, init=np.float32(0.5)),
            "Convolution init None": lambda: L.Convolution((2, 2), 2, init=None),
            "ConvolutionTranspose init": lambda: L.ConvolutionTranspose(
                (2, 2), 2, init="abc"),
            "Embedding init": lambda: L.Embedding(2, init=np.float32(0.5)),
            "BatchNormalization init_scale": lambda: L.BatchNormalization(
                init_scale=np.float32(0.5)),
            "LayerNormalization initial_scale": lambda: L.LayerNormalization(
                initial_scale=np.float32(0.5)),
            "LSTM init": lambda: L.LSTM(2, init="abc")}
    for label, make in made.items():
        res[label] = _said(lambda: make())[0]
    return res


@cntk_case(names=["cntk.Function", "cntk.Function.eval", "cntk.Function.forward",
                  "cntk.Function.grad", "cntk.Function.outputs", "cntk.Function.shape"],
           note="an untyped @C.Function run before it has types: CNTK 2.7's words ('Values "
                "for 1 required arguments ..., that the requested output(s) 'Output(...)' "
                "depend on, have not been provided.', 'non-dict argument ...', 'None of the "
                "Function ... arguments have needs_gradient == True' for grad without wrt), "
                "its outputs and shape (unknown) before.  Stadyn's words left the outputs "
                "out, it had no outputs or shape then (AttributeError), and grad without wrt "
                "raised as eval")
def untyped_function_runs__words(C, r, np):
    r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.Function.grad",
            "cntk.Function.outputs", "cntk.Function.shape")
    @C.Function
    def f(a, b):
        return a + b

    @C.Function
    def g(a):
        return C.sigmoid(a)
    d = np.ones((1, 2), np.float32)
    a, b = f.arguments
    return {
        "outputs": [_masked(repr(o)) for o in f.outputs],
        "shape": list(f.shape), "g shape": list(g.shape),
        "eval {}": _said(lambda: f.eval({})),
        "eval one": _said(lambda: f.eval({a: d})),
        "eval both": _said(lambda: f.eval({a: d, b: d})),
        "eval array": _said(lambda: f.eval(d)),
        "forward one": _said(lambda: f.forward({a: d})),
        "grad both": _said(lambda: f.grad({a: d, b: d})),
        "grad both wrt": _said(lambda: f.grad({a: d, b: d}, wrt=[a])),
        "grad one": _said(lambda: f.grad({a: d})),
        "grad one wrt": _said(lambda: f.grad({a: d}, wrt=[a])),
        "g eval array": _said(lambda: g.eval(d)),
        "g grad array": _said(lambda: g.grad(d))}


# (begin, end) along a static axis of 2: counted from the start or the end, empty, past it
_RANGES = ((0, 1), (0, -1), (1, -1), (0, 2), (0, 3), (-1, 2), (-3, 2), (-2, -1), (2, 3),
           (1, 1), (1, 0), (0, 0), (-1, 0), (3, 4), (-3, -2), (0, -2), (0, -3), (-2, 0),
           (2, 1), (1, -2))
_FREE_RUN = ("free 1 -1 at 2", "free 2 0 at 2", "free 0 3 at 2", "free -3 0 at 2",
             "unpacked steps 1 -1 at 2")


@cntk_case(names=["cntk.ops.slice"],
           note="C.slice's ranges along a static axis of 2: those selecting nothing or "
                "elements past its end are CNTK 2.7's RuntimeErrors when built (NarrowTo, "
                "'Slice operation index range'); along a free dimension (an input's, "
                "unpacked steps) CNTK checks them against each run's length (Stadyn clipped "
                "them: an empty array for [1, -1) at 2)")
def slice__ranges_of_a_short_axis(C, r, np):
    r.touch("cntk.Function.eval")
    x = C.input_variable(2)
    data = np.array([[1.0, 2.0]], np.float32)
    res = {}
    for b, e in _RANGES:
        made = _outcome(lambda: C.slice(x, 0, b, e))
        res["%d %d" % (b, e)] = made if isinstance(made, str) else made.eval({x: data})
    f = C.input_variable(C.FreeDimension)
    for label, (b, e) in zip(_FREE_RUN, ((1, -1), (2, 0), (0, 3), (-3, 0))):
        res[label] = _outcome(lambda: C.slice(f, 0, b, e).eval({f: data}))
    res["free 1 -1 at 3"] = C.slice(f, 0, 1, -1).eval({f: np.arange(3, dtype=np.float32)[None]})
    s = C.sequence.input_variable(2)
    steps = C.slice(C.sequence.unpack(s, 0, no_mask_output=True), 0, 1, -1)
    res["unpacked steps 1 -1 at 2"] = _outcome(lambda: steps.eval({s: [np.ones((2, 2))]}))
    res["unpacked steps 1 -1 at 3"] = steps.eval({s: [np.ones((3, 2))]})
    w = C.parameter(1, init=1.0)
    loss = C.reduce_sum(C.slice(f, 0, 1, -1) * w)
    trainer = C.Trainer(loss, (loss, loss), C.sgd([w], C.learning_parameter_schedule(0.1)))
    res["trainer at 2"] = _outcome(lambda: trainer.train_minibatch({f: data}))
    return res


@cntk_case(names=["cntk.Function.forward", "cntk.Function.backward"],
           note="backward(state) of one Function after another Function sharing its nodes ran a "
                "forward: CNTK 2.7 differentiates the forward the state belongs to.  Stadyn's "
                "static plans read the values the other run left in the shared nodes (exp(b) "
                "for exp(a)) after NNabla's held-value reading reached every front end")
def backward__of_a_state_after_another_forward(C, r, np):
    r.touch("cntk.Function.forward", "cntk.Function.backward")
    x = C.input_variable(4, needs_gradient=True)
    y = C.exp(x)
    l1, l2 = C.reduce_sum(y), C.reduce_sum(y * y)
    a = (np.arange(4, dtype=np.float32) / 4).reshape(1, 4)
    b = np.full((1, 4), 2.0, np.float32)
    st, out = l1.forward({x: a}, [l1.output], set([l1.output]))
    l2.forward({x: b})
    g1 = l1.backward(st, {l1.output: np.ones_like(out[l1.output])}, set([x]))[x]
    st, out = l1.forward({x: a}, [l1.output], set([l1.output]))
    st2, out2 = l2.forward({x: b}, [l2.output], set([l2.output]))
    g2 = l1.backward(st, {l1.output: np.ones_like(out[l1.output])}, set([x]))[x]
    g3 = l2.backward(st2, {l2.output: np.ones_like(out2[l2.output])}, set([x]))[x]
    return {"l1 after l2's forward": g1, "l1, l2's state kept": g2, "l2 after l1's backward": g3}

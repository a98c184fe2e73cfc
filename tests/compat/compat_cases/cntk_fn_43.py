"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (cntkfn43): an untyped
``@C.Function`` whose body applies a ``Sequential``, a ``Recurrence`` or a ``Fold`` ran its
body again for every call (CNTK 2.7 runs it once, as it is decorated, and clones that graph)."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _counted(body, runs):
    def f(x):
        runs[0] += 1
        return body(x)
    return f


@cntk_case(names=["cntk.ops.functions.Function", "cntk.layers.Sequential",
                  "cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.Function.eval"],
           note="how many times CNTK 2.7 runs an untyped @C.Function's body (a counter in it) "
                "that applies a layer made outside: a Sequential of a Dense and relu, of a "
                "Dense and a lambda, a Recurrence of a GRU, a Fold of a GRU, a nested untyped "
                "@C.Function, a Sequential whose lambda reads a constant made outside: once as "
                "decorated, not again for two calls on sequence inputs nor the eval (Stadyn ran "
                "the body again per call for all but the nested Function: 3 runs); the values; "
                "a Sequential whose lambda reads the body's argument x (t + x), whose graph a "
                "call cannot clone in Stadyn, still gives CNTK's values (the count left out)")
def function_decorator__layer_bodies_run_once(C, r, np):
    for n in ("cntk.ops.functions.Function", "cntk.Function.eval"):
        r.touch(n)
    L = C.layers
    init = C.glorot_uniform(seed=1)
    two = C.constant(np.full((3,), 2.0, np.float32))

    @C.Function
    def inner(z):
        return C.tanh(z) * 3

    layers = {"sequential relu": L.Sequential([L.Dense(3, init=init), C.relu]),
              "sequential lambda": L.Sequential([L.Dense(3, init=init), lambda t: t * 2]),
              "sequential outside constant": L.Sequential([L.Dense(3, init=init),
                                                           lambda t: t + two]),
              "recurrence": L.Recurrence(L.GRU(3, init=init)),
              "fold": L.Fold(L.GRU(3, init=init)),
              "nested function": inner}
    data = (np.arange(12, dtype=np.float32).reshape(2, 2, 3) - 5) / 6
    out = {}
    for key, layer in sorted(layers.items()):
        runs = [0]
        f = C.Function(_counted(lambda x, layer=layer: C.relu(layer(x)) + 1, runs))
        counts = [runs[0]]
        a = f(C.sequence.input_variable(3))
        counts.append(runs[0])
        f(C.sequence.input_variable(3))
        counts.append(runs[0])
        value = a.eval({a.arguments[0]: data})
        counts.append(runs[0])
        out[key] = [counts, list(a.shape), value]
    dense = L.Dense(3, init=init)

    @C.Function
    def reads_x(x):
        return L.Sequential([dense, lambda t: t + x])(x)
    a = reads_x(C.sequence.input_variable(3))
    out["lambda reading x"] = [list(a.shape), a.eval({a.arguments[0]: data})]
    return out


@cntk_case(names=["cntk.layers.BlockFunction", "cntk.Function.root_function",
                  "cntk.Function.arguments", "cntk.Function.eval"],
           note="@C.layers.BlockFunction('Square', 'name') over x * x, and ('Mul', 'mm') over "
                "a * b + 1: CNTK 2.7 makes a Function (Function(f, make_block=True, ...)): "
                "isinstance Function, str 'name: Square(x: Sequence[tensor]) -> "
                "Sequence[tensor]', its root the block Square named 'name', its name 'name', "
                "its arguments placeholders of unknown shape named x (a, b); applied to inputs "
                "a block with block_root ElementTimes, the values; Stadyn returned a plain "
                "Python function (no root_function, arguments, name)")
def block_function__is_a_function(C, r, np):
    for n in ("cntk.Function.root_function", "cntk.Function.arguments", "cntk.Function.eval"):
        r.touch(n)

    @C.layers.BlockFunction("Square", "name")
    def sq(x):
        return x * x

    @C.layers.BlockFunction("Mul", "mm")
    def mul(a, b):
        return a * b + 1
    root = sq.root_function
    out = {"decorated": [isinstance(sq, C.Function), str(sq), sq.name, root.op_name,
                         root.name, root.is_block,
                         [[a.name, list(a.shape), a.is_placeholder] for a in sq.arguments],
                         [a.name for a in mul.arguments]]}
    x = C.input_variable(3, name="inp")
    y = sq(x)
    yr = y.root_function
    out["applied"] = [yr.op_name, yr.name, yr.is_block, yr.block_root.op_name, list(y.shape),
                      [a.name for a in y.arguments], y.name]
    out["value"] = y.eval({x: np.array([[1, 2, 3]], np.float32)})
    p, q = C.input_variable(2, name="p"), C.input_variable(2, name="q")
    z = mul(p, q)
    out["mul"] = [z.root_function.op_name, z.root_function.name, [a.name for a in z.arguments]]
    out["mul value"] = z.eval({p: np.ones((1, 2), np.float32),
                               q: np.full((1, 2), 2.0, np.float32)})
    return out


def _kind(v):
    return ("placeholder" if v.is_placeholder else "parameter" if v.is_parameter else
            "constant" if v.is_constant else "input" if v.is_input else "output")


def _shown(f):
    r = f.root_function
    out = [r.op_name, r.name, r.is_block, [[i.name, _kind(i), list(i.shape)] for i in r.inputs],
           sorted(r.attributes.items())]
    if r.is_block:
        inner = r.block_root
        out.append([inner.op_name, [[_kind(i), i.owner.op_name if i.is_output else ""]
                                    for i in inner.inputs]])
        out.append([[_kind(p), _kind(a), a.name] for p, a in r.block_arguments_mapping])
    return out


@cntk_case(names=["cntk.ops.hard_sigmoid", "cntk.ops.softplus", "cntk.Function.root_function",
                  "cntk.Function.block_root", "cntk.Function.clone", "cntk.Function.grad"],
           note="hard_sigmoid(x, 0.2, 0.5), softplus(x), softplus(x, steepness=2), named 'nm': "
                "CNTK 2.7 makes blocks -- HardSigmoid (attributes alpha, beta; inputs the "
                "constants alpha, beta, 1, 0 and x; block_root Select(Greater, Select, 0)), "
                "Softplus (LogPlus(x, 0)), the Python block softplus (ElementDivide of the "
                "Softplus block of steepness * x) -- where Stadyn made one op each (no "
                "block, x alone its input); their clones of each method; values and "
                "gradients at the kinks (alpha * x + beta exactly 0 and 1: 0)",
           known={"softplus steepness clone clone": "CNTK 2.7's clone (and freeze) of its Python "
                  "softplus block raises ValueError (one of the arguments of the underlying "
                  "composite has not been mapped): the as_block made in Python keeps a "
                  "placeholder its clone does not map; Stadyn clones it (compat/cntk/"
                  "_ops_act_blocks.py softplus)",
                  "softplus steepness clone freeze": "as 'softplus steepness clone clone'"})
def activation_blocks__hard_sigmoid_softplus(C, r, np):
    for n in ("cntk.Function.root_function", "cntk.Function.block_root", "cntk.Function.clone",
              "cntk.Function.grad"):
        r.touch(n)
    x = C.input_variable(3, needs_gradient=True, name="x")
    made = {"hard_sigmoid": (C.hard_sigmoid(x, 0.2, 0.5, name="nm"),
                             np.array([[-2.5, 2.5, 0.0], [-3.0, 3.0, 1.0]], np.float32)),
            "softplus": (C.softplus(x, name="nm"),
                         np.array([[0.0, 1.0, -1.0], [20.0, -20.0, 0.5]], np.float32)),
            "softplus steepness": (C.softplus(x, steepness=2, name="nm"),
                                   np.array([[0.0, 1.0, -1.0], [20.0, -20.0, 0.5]],
                                            np.float32))}
    out = {}
    for key, (f, data) in sorted(made.items()):
        out[key] = _shown(f) + [str(f)]
        out[key + " value"] = f.eval({x: data})
        out[key + " grad"] = f.grad({x: data}, wrt=[x])
        for method in ("clone", "share", "freeze"):
            out["%s clone %s" % (key, method)] = _outcome(
                lambda: _shown(f.clone(getattr(C.CloneMethod, method))))
    return out


@cntk_case(names=["cntk.Trainer", "cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch",
                  "cntk.Function.eval"],
           note="a list of numbers (0-d samples) fed to an input of shape (1,): CNTK 2.7's "
                "ValueError 'Value::Create: The shape '[]' of sequence #0 is not compatible "
                "with the sample shape '[1]'.' from train_minibatch, test_minibatch and eval "
                "(one number, two, a 0-d array, and a list whose second sample is a number); "
                "Stadyn's Trainer refused with another first line ('The trailing dimensions of "
                "the Value shape '[1]' do not match ... '[1]'', of the stacked list)")
def trainer__refuses_numbers_for_samples(C, r, np):
    for n in ("cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch", "cntk.Function.eval"):
        r.touch(n)
    said = functools.partial(outcome, convert=as_returned,
                             raised=functools.partial(as_raised, first_line=True))
    x, y = C.input_variable(1, name="x"), C.input_variable(1, name="y")
    z = C.layers.Dense(1, init=0.5)(x)
    loss = C.squared_error(z, y)
    tr = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    one = [np.ones(1, np.float32)]
    feeds = {"one number": [np.float32(1.0)], "0-d array": [np.array(1.0, np.float32)],
             "a number second": [np.ones(1, np.float32), np.float32(2.0)]}
    out = {}
    for key, xs in sorted(feeds.items()):
        ys = one * len(xs)
        out[key] = [said(lambda: tr.train_minibatch({x: xs, y: ys})),
                    said(lambda: tr.test_minibatch({x: xs, y: ys})),
                    said(lambda: z.eval({x: xs}))]
    out["weights after"] = z.parameters[0].value
    return out


@cntk_case(names=["cntk.ops.times_transpose", "cntk.ops.parameter", "cntk.Function.eval"],
           note="times_transpose over a parameter whose last axis is inferred (glorot_uniform, "
                "seed 3): as the left operand, (3, ?) and (?,) over an input (3,), CNTK 2.7 "
                "infers that axis from the input's (the one reduced: (3, 3), (3,)) as the op "
                "is made, shows (3, 1) and (1,) and computes; Stadyn waited (shape (-2,)) and "
                "refused the eval (ValueError); as the right operand, (3, ?), (?,) and (2, ?), "
                "CNTK shows (3,), (1,), (2,) and refuses the eval (ValueError: unresolved "
                "shape); the shapes are left out there (Stadyn: (-2,))")
def times_transpose__infers_the_left_parameter(C, r, np):
    r.touch("cntk.Function.eval")
    a = C.input_variable(3, name="a")
    data = np.array([[1, 2, 3]], np.float32)
    out = {}
    for shape in ((3, C.InferredDimension), (C.InferredDimension,)):
        p = C.parameter(shape=shape, init=C.glorot_uniform(seed=3))
        f = C.times_transpose(p, a)
        out["left %s" % (shape,)] = [list(f.shape), list(p.shape), f.eval({a: data})]
    for shape in ((3, C.InferredDimension), (C.InferredDimension,), (2, C.InferredDimension)):
        p = C.parameter(shape=shape, init=C.glorot_uniform(seed=3))
        f = C.times_transpose(a, p)
        out["right %s" % (shape,)] = [list(p.shape), _outcome(lambda: f.eval({a: data}))]
    return out


@cntk_case(names=["cntk.ops.convolution", "cntk.ops.convolution_transpose", "cntk.ops.pooling",
                  "cntk.Function.attributes", "cntk.Function.root_function"],
           note="root_function.attributes of convolution (defaults; strides (2, 1) with "
                "auto_padding [False, True, False]; dilation 2, max_temp_mem_size_in_samples 5), "
                "convolution_transpose (defaults; strides 2 with output_shape (3, 10, 10)) and "
                "pooling (max and average; strides, auto_padding, ceil_out_dim, include_pad): "
                "CNTK 2.7's dicts -- a convolution's options filled to the operand's rank as its "
                "C++ makes the op (strides from the operand's sizes: (2, 1, 1) for the "
                "transpose's default), kernelShape, sharing, lower/upperPad, outputShape; a "
                "pooling's as given -- where Stadyn showed its own ops' ({'axis': 1}, a "
                "slice's start/stop, pooling's kernel/pad/rule)")
def convolution_pooling__cntk_attributes(C, r, np):
    for n in ("cntk.Function.attributes", "cntk.Function.root_function"):
        r.touch(n)
    x = C.input_variable((2, 5, 5), name="x")
    w = C.parameter((3, 2, 3, 3), init=1.0)
    wt = C.parameter((2, 3, 3, 3), init=1.0)

    def shown(f):
        return [f.root_function.op_name, sorted(f.root_function.attributes.items())]
    made = {"conv": lambda: C.convolution(w, x),
            "conv strides": lambda: C.convolution(w, x, strides=(2, 1),
                                                  auto_padding=[False, True, False]),
            "conv dilation": lambda: C.convolution(w, x, dilation=2,
                                                   max_temp_mem_size_in_samples=5),
            "transpose": lambda: C.convolution_transpose(wt, x),
            "transpose output shape": lambda: C.convolution_transpose(
                wt, x, strides=2, output_shape=(3, 10, 10), auto_padding=[False, True, True]),
            "max pooling": lambda: C.pooling(x, C.MAX_POOLING, (3, 2)),
            "average pooling": lambda: C.pooling(x, C.AVG_POOLING, (3, 2), strides=(2, 1),
                                                 auto_padding=[False, True]),
            "pooling ceil": lambda: C.pooling(x, C.MAX_POOLING, (3, 2), strides=2,
                                              auto_padding=[True], ceil_out_dim=True,
                                              include_pad=True)}
    return {key: shown(make()) for key, make in sorted(made.items())}


@cntk_case(names=["cntk.ops.constant", "cntk.Constant", "cntk.Constant.value"],
           note="C.constant(2, shape=(-2, 4)): CNTK 2.7 makes it (its shape (-2, 4): -2 taken "
                "as 2**64 - 2), refuses its value (RuntimeError std::bad_array_new_length), a "
                "Plus with an input (3, 4) (RuntimeError), a times of an input (3,) by it "
                "(ValueError) and relu(c).eval() (RuntimeError); C.constant(shape=(-2, 4)) "
                "and C.Constant(shape=(-2,)) without a value are its RuntimeError at once; "
                "Stadyn raised NumPy's ValueError ('all elements of broadcast shape must be "
                "non-negative') as it was made",
           known={"relu": "CNTK 2.7 builds relu over the constant of shape (-2, 4) (shape "
                  "(-2, 4)) and refuses only its run; Stadyn refuses the op as it is made "
                  "(RuntimeError, as CNTK's run: compat/cntk/_parameter_waits.py)",
                  "times right": "CNTK 2.7 builds times(c, x (4,)) (shape (-2, 4, 4)) and "
                  "refuses only its run; Stadyn refuses it as it is made (RuntimeError)"})
def constant__minus_two_in_its_shape(C, r, np):
    r.touch("cntk.Constant.value")
    c = C.constant(2, shape=(-2, 4))
    return {"shape": list(c.shape), "value": _outcome(lambda: c.value),
            "plus": _outcome(lambda: (c + C.input_variable((3, 4))).shape),
            "times": _outcome(lambda: C.times(C.input_variable(3), c).shape),
            "times right": _outcome(lambda: list(C.times(c, C.input_variable(4)).shape)),
            "relu": _outcome(lambda: list(C.relu(c).shape)),
            "relu eval": _outcome(lambda: C.relu(c).eval()),
            "no value": _outcome(lambda: C.constant(shape=(-2, 4)).shape),
            "Constant no value": _outcome(lambda: C.Constant(shape=(-2,)).shape)}


@cntk_case(names=["cntk.sequence.first", "cntk.sequence.last", "cntk.sequence.reduce_sum",
                  "cntk.sequence.reduce_max", "cntk.sequence.slice", "cntk.Function.eval"],
           note="sequence.first, last, reduce_sum, reduce_max, slice(x, 0, 1) and x * 2 "
                "evaluated on two sequences (3 and 1 steps) with sequence-begin flags [True, "
                "False], before and after a run with [True, True]: CNTK 2.7 refuses the "
                "sequence ops whenever a flag is False (RuntimeError: they need whole "
                "sequences) and computes x * 2; Stadyn computed them all (SILENT)")
def sequence_ops__refused_on_a_false_begin_flag(C, r, np):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(2)
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    made = {"first": C.sequence.first(x), "last": C.sequence.last(x),
            "reduce_sum": C.sequence.reduce_sum(x), "reduce_max": C.sequence.reduce_max(x),
            "slice": C.sequence.slice(x, 0, 1), "times 2": x * 2}
    out = {}
    for key, f in sorted(made.items()):
        out[key] = [_outcome(lambda: f.eval({x: ([data, data[:1]], [True, False])})),
                    _outcome(lambda: f.eval({x: ([data, data[:1]], [True, True])})),
                    _outcome(lambda: f.eval({x: ([data, data[:1]], [True, False])}))]
    return out

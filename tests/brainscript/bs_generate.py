"""Hypothesis strategies that write VALID BrainScript: networks and whole ``.cntk`` configs.

The generators are grammar-based and know what they wrote: a network is drawn as a list of
steps (layers, ops, user macros, lambdas, arrays, records, conditionals) with the shape each
step produces and the parameters it creates, then rendered as text in one of several
equivalent styles (a member per step, ``Sequential`` over a colon array, ``>>`` composition, a
record-returning macro read with ``.out``, ``LayerStack`` over an array literal, ``array[..]``).
So a test can compare what the evaluator built with what the generator meant: the output
shape, the number of parameter tensors and elements, which class each sample falls in.

``examples(n)`` is the number of examples a property test runs: ``n`` in CI, or
``$STADYN_FUZZ_EXAMPLES`` when set (``STADYN_FUZZ_EXAMPLES=2000 pytest tests/brainscript``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from hypothesis import strategies as st

ACTIVATIONS = ("ReLU", "Tanh", "Sigmoid")


def examples(default: int) -> int:
    """``$STADYN_FUZZ_EXAMPLES`` if set, else ``default``."""
    value = os.environ.get("STADYN_FUZZ_EXAMPLES")
    return int(value) if value else default


@dataclass
class Step:
    """One step: a BrainScript expression denoting a one-argument function (``fn``), the
    top-level members it needs, the parameters it creates (elements and tensors) and the
    per-sample shape it produces (Stadyn's row-major order)."""
    fn: str
    shape: tuple[int, ...]
    params: int = 0
    tensors: int = 0
    defs: list[str] = field(default_factory=list)
    kind: str = ""


@dataclass
class GeneratedNetwork:
    text: str                      # the record given to BrainScriptNetworkBuilder
    features: tuple[int, ...]      # per-sample input shape (row-major)
    classes: int
    params: int                    # trainable parameter elements
    tensors: int                   # trainable parameter tensors
    kinds: list[str]               # the steps, for reading a failure


class _Writer:
    """Draws steps and renders them; ``draw`` is hypothesis's."""

    def __init__(self, draw):
        self.draw = draw
        self.defs: list[str] = []
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}{self.count}"

    # ---- numbers written as BrainScript expressions with a known value --------------------
    def int_expr(self, value: int) -> str:
        form = self.draw(st.sampled_from(["plain", "sum", "product", "record", "array", "if"]))
        if form == "sum" and value > 1:
            a = self.draw(st.integers(1, value - 1))
            return f"({a} + {value - a})"
        if form == "product" and value % 2 == 0:
            return f"(2 * {value // 2})"
        if form == "record":
            rec = self.name("hp")
            self.defs.append(f"{rec} = {{ width = {value} ; unused = {value + 1} }}")
            return f"{rec}.width"
        if form == "array":
            arr, k = self.name("sizes"), self.draw(st.integers(0, 2))
            items = [str(value if i == k else value + i + 1) for i in range(3)]
            self.defs.append(f"{arr} = ({' : '.join(items)})")
            return f"{arr}[{k}]"
        if form == "if":
            flag = self.draw(st.booleans())
            return (f"(if {'true' if flag else 'false'} then {value if flag else value + 3} "
                    f"else {value + 3 if flag else value})")
        return str(value)

    def activation_expr(self, act: str) -> str:
        form = self.draw(st.sampled_from(["plain", "if", "member"]))
        other = next(a for a in ACTIVATIONS if a != act)
        if form == "if":
            flag = self.draw(st.booleans())
            cond = self.draw(st.sampled_from(["{a} > {b}", "{a} >= {b}", "{b} < {a}"]))
            a, b = (3, 2) if flag else (2, 3)
            return (f"(if {cond.format(a=a, b=b)} then {act if flag else other} "
                    f"else {other if flag else act})")
        if form == "member":
            m = self.name("act")
            self.defs.append(f"{m} = {act}")
            return m
        return act

    # ---- steps on vectors -----------------------------------------------------------------
    def vector_step(self, d: int, flatten: bool = False) -> Step:
        """A step on a vector of ``d`` elements; with ``flatten`` one that also takes an image
        (a layer with an inferred input dimension flattens it)."""
        kind = self.draw(st.sampled_from(
            ["dense", "linear", "times", "stack"] if flatten else
            ["dense", "dense", "linear", "act", "bn", "scale_macro", "residual", "times",
             "bias", "dropout", "ops", "softmax", "constant", "stack"]))
        if kind in ("dense", "linear"):
            n = self.draw(st.integers(2, 6))
            bias = kind == "dense" or self.draw(st.booleans())
            args = [self.int_expr(n)]
            if kind == "dense" and self.draw(st.booleans()):
                activation = self.activation_expr(self.draw(st.sampled_from(ACTIVATIONS)))
                args.append(f"activation = {activation}")
            if kind == "linear" and not bias:
                args.append("bias = false")
            layer = "DenseLayer" if kind == "dense" else "LinearLayer"
            return Step(f"{layer}{{{', '.join(args)}}}", (n,), d * n + (n if bias else 0),
                        2 if bias else 1, kind=kind)
        if kind == "act":
            return Step(self.activation_expr(self.draw(st.sampled_from(ACTIVATIONS))), (d,),
                        kind=kind)
        if kind == "bn":
            return Step("BatchNormalizationLayer{}", (d,), 2 * d, 2, kind=kind)
        if kind == "scale_macro":
            macro = self.name("Scale")
            self.defs.append(f"{macro}{{f}} = (x => Constant(f) .* x)")
            return Step(f"{macro}{{{self.draw(st.sampled_from(['0.5', '2', '0.25']))}}}",
                        (d,), kind=kind)
        if kind == "residual":
            act = self.activation_expr(self.draw(st.sampled_from(ACTIVATIONS)))
            return Step(f"(x => x + DenseLayer{{{d}, activation = {act}}}(x))", (d,),
                        d * d + d, 2, kind=kind)
        if kind == "times":
            n = self.draw(st.integers(2, 5))
            w = self.name("W")
            self.defs.append(f"{w} = Parameter{{{n}, 0, init = 'gaussian', "
                             f"initValueScale = 0.5}}")
            return Step(f"(x => {w} * x)", (n,), d * n, 1, kind=kind)
        if kind == "bias":
            b = self.name("B")
            self.defs.append(f"{b} = ParameterTensor{{{d}, init = 'fixedValue', value = 0.1}}")
            return Step(f"(x => x + {b})", (d,), d, 1, kind=kind)
        if kind == "dropout":
            return Step("Dropout", (d,), kind=kind)
        if kind == "ops":
            expr = self.draw(st.sampled_from(
                ["x * 0.5", "2 - x", "-x", "x / 4", "x - 1", "1 + x", "Tanh(x) .* x",
                 "Abs(x)", "Sigmoid(x) + Tanh(x)", "Exp(-Abs(x))", "Sqrt(Abs(x) + 1)",
                 "Log(Sigmoid(x))", "Pass(x)", "Reciprocal(Abs(x) + 1)",
                 "Negate(x)", "Plus(x, x)", "Minus(x, 0.5)", "ElementTimes(x, x)"]))
            return Step(f"(x => {expr})", (d,), kind=kind)
        if kind == "softmax":
            return Step(self.draw(st.sampled_from(["Softmax", "LogSoftmax"])), (d,), kind=kind)
        if kind == "constant":
            c = self.name("c")
            self.defs.append(f"{c} = Constant(0.5)")
            return Step(f"(x => {c} .* x + x)", (d,), kind=kind)
        # stack: two or three dense layers from an array literal or an array constructor
        k = self.draw(st.integers(2, 3))
        sizes = [self.draw(st.integers(2, 5)) for _ in range(k)]
        act = self.activation_expr(self.draw(st.sampled_from(ACTIVATIONS)))
        arr = self.name("dims")
        self.defs.append(f"{arr} = ({' : '.join(map(str, sizes))})")
        form = self.draw(st.sampled_from(["LayerStack", "array", "array_literal"]))
        if form == "LayerStack":
            fn = f"LayerStack{{{k}, i => DenseLayer{{{arr}[i], activation = {act}}}}}"
        elif form == "array":
            fn = (f"Sequential(array[0..{k - 1}](i => DenseLayer{{{arr}[i], "
                  f"activation = {act}}}))")
        else:
            fn = "Sequential([| " + " ; ".join(
                f"DenseLayer{{{arr}[{i}], activation = {act}}}" for i in range(k)) + " |])"
        params, din = 0, d
        for n in sizes:
            params += din * n + n
            din = n
        return Step(fn, (sizes[-1],), params, 2 * k, kind=f"stack/{form}")

    # ---- steps on images (C, H, W) ---------------------------------------------------------
    def image_step(self, shape: tuple[int, int, int]) -> Step:
        c, h, w = shape
        kind = self.draw(st.sampled_from(["conv", "conv", "maxpool", "avgpool", "bn", "act"]))
        if kind == "conv":
            out = self.draw(st.integers(1, 4))
            k = self.draw(st.sampled_from([1, 3]) if min(h, w) >= 3 else st.just(1))
            pad = self.draw(st.booleans())
            stride = self.draw(st.sampled_from([1, 1, 2]))
            args = [self.int_expr(out), f"({k}:{k})"]
            if pad:
                args.append("pad = true")
            if stride != 1:
                args.append(f"stride = {stride}")
            if self.draw(st.booleans()):
                activation = self.activation_expr(self.draw(st.sampled_from(ACTIVATIONS)))
                args.append(f"activation = {activation}")
            size = (lambda n: math.ceil(n / stride)) if pad else \
                (lambda n: (n - k) // stride + 1)
            return Step(f"ConvolutionalLayer{{{', '.join(args)}}}", (out, size(h), size(w)),
                        c * out * k * k + out, 2, kind=kind)
        if kind in ("maxpool", "avgpool"):
            k = self.draw(st.sampled_from([2, 3]) if min(h, w) >= 3 else st.just(1))
            stride = self.draw(st.sampled_from([1, 2]))
            layer = "MaxPoolingLayer" if kind == "maxpool" else "AveragePoolingLayer"
            return Step(f"{layer}{{({k}:{k}), stride = {stride}}}",
                        (c, (h - k) // stride + 1, (w - k) // stride + 1), kind=kind)
        if kind == "bn":
            return Step("BatchNormalizationLayer{spatialRank = 2}", shape, 2 * c, 2, kind=kind)
        return Step(self.activation_expr(self.draw(st.sampled_from(ACTIVATIONS))), shape,
                    kind=kind)

    # ---- composition ---------------------------------------------------------------------
    def apply(self, steps: list[Step], arg: str) -> str:
        """Members that apply ``steps`` to ``arg``, in a drawn style; returns the result's
        name."""
        style = self.draw(st.sampled_from(["members", "sequential", "compose", "macro"]))
        fns = [s.fn for s in steps]
        if style == "members" or len(steps) == 1:
            for fn in fns:
                h = self.name("h")
                self.defs.append(f"{h} = {fn}({arg})")
                arg = h
            return arg
        if style == "sequential":
            m = self.name("model")
            self.defs.append(f"{m} = Sequential({' : '.join(fns)})")
        elif style == "compose":
            m = self.name("model")
            self.defs.append(f"{m} = {' >> '.join(fns)}")
        else:   # a macro returning a record; the result is read with .out
            m = self.name("block")
            body = ["h0 = x"] + [f"h{i + 1} = {fn}(h{i})" for i, fn in enumerate(fns)]
            self.defs.append(f"{m}(x) = {{ {' ; '.join(body)} ; out = h{len(fns)} }}")
            r = self.name("r")
            self.defs.append(f"{r} = {m}({arg})")
            return f"{r}.out"
        h = self.name("h")
        self.defs.append(f"{h} = {m}({arg})")
        return h


def _cntk_dims(shape: tuple[int, ...]) -> str:
    return ":".join(str(d) for d in reversed(shape))


@st.composite
def networks(draw, image: bool | None = None, max_steps: int = 5) -> GeneratedNetwork:
    """A valid ``BrainScriptNetworkBuilder`` record: inputs ``features`` and ``labels``, a model
    of drawn steps, ``z``, ``ce``, ``errs`` and the special node lists."""
    g = _Writer(draw)
    classes = draw(st.integers(2, 4))
    image = draw(st.booleans()) if image is None else image
    if image:
        features: tuple[int, ...] = (draw(st.integers(1, 3)), draw(st.integers(4, 7)),
                                     draw(st.integers(4, 7)))
    else:
        features = (draw(st.integers(classes + 1, 8)),)    # never the labels' shape
    g.defs.append(f"features = Input{{{_cntk_dims(features)}}}")
    g.defs.append(f"labels = Input{{{classes}}}")
    shape, steps = features, []
    if image:
        for _ in range(draw(st.integers(1, 3))):
            step = g.image_step(shape)
            steps.append(step)
            shape = step.shape
    for _ in range(draw(st.integers(0 if image else 1, max_steps - len(steps)))):
        d = int(math.prod(shape))
        step = g.vector_step(d, flatten=len(shape) > 1)
        steps.append(step)
        shape = step.shape
    params = sum(s.params for s in steps)
    tensors = sum(s.tensors for s in steps)
    # split the steps into runs, each applied in its own style
    arg, k = "features", 0
    while k < len(steps):
        n = draw(st.integers(1, len(steps) - k))
        arg = g.apply(steps[k:k + n], arg)
        k += n
    d = int(math.prod(shape))
    g.defs.append(f"z = LinearLayer{{{classes}}}({arg})")
    params += d * classes + classes
    tensors += 2
    g.defs += ["ce = CrossEntropyWithSoftmax(labels, z)", "errs = ClassificationError(labels, z)",
               "featureNodes = (features)", "labelNodes = (labels)", "criterionNodes = (ce)",
               "evaluationNodes = (errs)", "outputNodes = (z)"]
    sep = draw(st.sampled_from(["\n    ", " ; ", "\n    # a comment\n    "]))
    text = "{\n    " + sep.join(g.defs) + "\n}"
    return GeneratedNetwork(text, features, classes, params, tensors,
                            [s.kind for s in steps])


# ---------------------------------------------------------------------------------------------
# Whole configs: a train command (network, SGD block, reader) and a test command
# ---------------------------------------------------------------------------------------------
@dataclass
class GeneratedConfig:
    text: str
    network: GeneratedNetwork
    max_epochs: int
    epoch_size: int
    minibatch_sizes: tuple[int, ...]      # per epoch, as CNTK expands the schedule
    lr_per_sample: tuple[float, ...]      # per epoch
    momentum_time_constant: float | None


def _schedule(draw, values: list) -> tuple[str, list]:
    """A CNTK per-epoch schedule ``a*2:b`` for ``values`` (one per epoch) and its expansion."""
    parts, k = [], 0
    while k < len(values):
        run = 1
        while k + run < len(values) and values[k + run] == values[k]:
            run += 1
        parts.append(f"{values[k]}*{run}" if run > 1 or draw(st.booleans()) else f"{values[k]}")
        k += run
    return ":".join(parts), values


@st.composite
def configs(draw, data_samples: int = 24) -> GeneratedConfig:
    """A config with ``command = train:test``: a generated vector network, an SGD block with
    drawn schedules, a CTF reader for ``$dataDir$/train.txt`` and ``test.txt``."""
    net = draw(networks(image=False, max_steps=3))
    max_epochs = draw(st.integers(1, 3))
    epoch_size = draw(st.sampled_from([8, 12, 16, data_samples]))
    mbs = [draw(st.sampled_from([4, 6, 8])) for _ in range(max_epochs)]
    mb_text, _ = _schedule(draw, mbs)
    per_mb = draw(st.booleans())
    lrs = [draw(st.sampled_from([0.1, 0.05, 0.02])) for _ in range(max_epochs)]
    lr_text, _ = _schedule(draw, lrs)
    if per_mb:
        lr_line = f"learningRatesPerMB = {lr_text}"
        lr_per_sample = tuple(lr / mb for lr, mb in zip(lrs, mbs))
    else:
        lr_line = f"learningRatesPerSample = {lr_text}"
        lr_per_sample = tuple(lrs)
    momentum = draw(st.sampled_from([None, 0, 100]))
    sgd = [f"epochSize = {epoch_size}", f"minibatchSize = {mb_text}",
           f"maxEpochs = {max_epochs}", lr_line, "numMBsToShowResult = 1"]
    if momentum is not None:
        sgd.append(f"momentumAsTimeConstant = {momentum}")
    sgd_open, sgd_close = draw(st.sampled_from([("{", "}"), ("[", "]")]))
    d = net.features[0]
    reader = ('readerType = "CNTKTextFormatReader"\n'
              '        file = "$dataDir$/FILE"\n'
              '        randomize = false\n'
              f'        input = {{ features = {{ dim = {d} ; format = "dense" }} ;'
              f' labels = {{ dim = {net.classes} ; format = "dense" }} }}')
    text = f"""command = trainNetwork:testNetwork
precision = "float" ; traceLevel = 1 ; deviceId = "auto"
modelPath = "$outputDir$/Models/generated"

trainNetwork = [
    action = "train"
    BrainScriptNetworkBuilder = {net.text}
    SGD = {sgd_open}
        {chr(10).join('        ' + s for s in sgd).strip()}
    {sgd_close}
    reader = {{
        {reader.replace('FILE', 'train.txt')}
    }}
]

testNetwork = [
    action = "test"
    minibatchSize = 5
    reader = {{
        {reader.replace('FILE', 'test.txt')}
    }}
]
"""
    return GeneratedConfig(text, net, max_epochs, epoch_size, tuple(mbs), lr_per_sample,
                           None if momentum is None else float(momentum))

"""CNTK 2.7's ``cntk.contrib.netopt`` (Manual_How_to_use_network_optimizations): dense layers
factored by a truncated SVD (``factorization``), convolutions binarised (``quantization``).
The references come from CNTK 2.7's own ``netopt`` Python code; its native, Halide-built binary
convolution (``convert_to_native_binary_convolution``) has no library here."""

import importlib

import numpy as np

from compat_harness import cntk_case


def _netopt(C, module):
    return importlib.import_module(C.__name__ + ".contrib.netopt." + module)


def _feed_forward(C, x):
    """CNTK 102's network at a small size: two sigmoid Dense layers of 6, a linear one of 2."""
    with C.layers.default_options(init=C.glorot_uniform(seed=5), activation=C.sigmoid):
        h = x
        for _ in range(2):
            h = C.layers.Dense(6)(h)
        return C.layers.Dense(2, activation=None)(h)


def _features():
    rs = np.random.RandomState(3)
    y = rs.randint(0, 2, 8)
    return ((rs.randn(8, 3) + 3) * (y[:, None] + 1)).astype(np.float32)


def _blocks(C, model):
    return [f for f in C.logging.graph.depth_first_search(
        model, lambda f: type(f) is C.Function and f.is_block, depth=0)]


@cntk_case(names=["cntk.contrib.netopt.factorization.svd_subprojection"],
           note="the notebook's default factoring: U[:, :k] and diag(s[:k]) @ V[:k]")
def netopt_svd_subprojection(C, r):
    nc = _netopt(C, "factorization")
    r.touch("cntk.contrib.netopt.factorization.svd_subprojection")
    W = np.array([[1, 0, 0, 0, 2], [0, 0, 3, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 2, 0]])
    W1, W2 = nc.svd_subprojection(W, 4)
    A = np.arange(12.0).reshape(4, 3) ** 1.5
    A1, A2 = nc.svd_subprojection(A, 2)
    # (an SVD's vectors are defined up to sign: compare the products and magnitudes)
    return {"W1": np.abs(W1), "W2": np.abs(W2), "W1W2": W1 @ W2, "A1A2": A1 @ A2,
            "shapes": [list(A1.shape), list(A2.shape)], "contiguous": A1.flags.c_contiguous}


@cntk_case(names=["cntk.contrib.netopt.factorization.factor_dense"], rtol=1e-4, atol=1e-5,
           note="the notebook's cells 6 and 10: every Dense layer factored at 60% of its "
                "rank; the softmax of the factored model on the same features")
def netopt_factor_dense_all(C, r):
    nc = _netopt(C, "factorization")
    r.touch("cntk.contrib.netopt.factorization.factor_dense")
    x = C.input_variable(3)
    z = _feed_forward(C, x)
    newz = nc.factor_dense(z, projection_function=lambda W: int(min(W.shape) * 0.6))
    blocks = _blocks(C, newz)
    out = C.softmax(newz).eval({x: _features()})
    return {"op names": [b.op_name for b in blocks], "names": [b.name for b in blocks],
            "W1": [list(b.W1.shape) for b in blocks], "W2": [list(b.W2.shape) for b in blocks],
            "parameters": sorted([p.name, list(p.shape)] for p in newz.parameters),
            "arguments": [a == x for a in newz.arguments], "softmax": out,
            "original": C.softmax(z).eval({x: _features()})}


@cntk_case(names=["cntk.contrib.netopt.factorization.factor_dense",
                  "cntk.contrib.netopt.factorization.dense_factored"], rtol=1e-4, atol=1e-5,
           note="the notebook's cell 8: only the square Dense layer factored (filter_function),"
                " a factor_function given; the activations of factored layers are dropped; "
                "a DenseFactored block lists W2, W1, b (CNTK's walk of x @ W1 @ W2 + b; "
                "963552ed: W1, W2, b)")
def netopt_factor_dense_filtered(C, r):
    nc = _netopt(C, "factorization")
    r.touch("cntk.contrib.netopt.factorization.factor_dense")
    x = C.input_variable(3)
    z = _feed_forward(C, x)

    def square(block):
        d1, d2 = block.W.value.shape
        return d1 == d2

    newz = nc.factor_dense(z, projection_function=lambda W: 2, filter_function=square)
    halves = nc.factor_dense(z, factor_function=lambda W, k: (W @ np.eye(W.shape[1], k),
                                                              np.eye(k, W.shape[1])))
    r.touch("cntk.contrib.netopt.factorization.dense_factored")
    with C.layers.default_options(activation=C.tanh):
        layer = nc.dense_factored((2, 3), init={"W1": np.arange(6.0).reshape(3, 2) / 10,
                                                "W2": np.ones((2, 3)) / 4}, init_bias=0.5,
                                  name="mine")
    own = layer(x)
    return {"op names": [b.op_name for b in _blocks(C, newz)],
            "own": own.eval({x: _features()}), "own block": [own.root_function.op_name,
                                                            own.name],
            "own parameters": [p.name for p in own.parameters],
            "softmax": C.softmax(newz).eval({x: _features()}),
            "halves": halves.eval({x: _features()}),
            "halves ops": [b.op_name for b in _blocks(C, halves)]}


@cntk_case(names=["cntk.contrib.netopt.factorization.factor_dense"],
           note="no projection_function and no factor_function: CNTK's ValueError")
def netopt_factor_dense_needs_rank(C, r):
    nc = _netopt(C, "factorization")
    r.touch("cntk.contrib.netopt.factorization.factor_dense")
    z = _feed_forward(C, C.input_variable(3))
    try:
        nc.factor_dense(z)
    except ValueError as e:
        return {"error": str(e)}
    return {"error": None}


@cntk_case(names=["cntk.Function.clone"],
           note="netopt's converter: `clone(share, {dense.output: factored.output})` kept "
                "labelling the substitute as the Dense block it replaced (op_name 'Dense'), "
                "and cloned the input x the substitute reads (CNTK keeps x where the clone "
                "reaches it only through the substitute; `new.eval({x: ...})` was refused)")
def clone_substitute_keeps_its_block(C, r):
    r.touch("cntk.Function.clone")
    x = C.input_variable(3)
    d = C.layers.Dense(4, init=C.glorot_uniform(seed=1), name="first")(x)
    z = C.layers.Dense(2, init=C.glorot_uniform(seed=2), name="second")(d)
    other = C.layers.Dense(4, init=C.glorot_uniform(seed=3), name="other")(x)
    new = z.clone(C.CloneMethod.share, {d.output: other.output})
    both = C.splice(z, x).clone(C.CloneMethod.share, {d.output: other.output})
    data = _features()
    return {"blocks": [[b.op_name, b.name] for b in _blocks(C, new)],
            "value": new.eval({x: data}), "keeps x": [a == x for a in new.arguments],
            "x cloned once": [a == x for a in both.arguments],
            "both": both.eval({both.arguments[0]: data})}


def _conv_model(C, x):
    """CNTK's netopt quantization test's network at a small size: four convolutions (the
    first two without bias; strides 1, 2, 1, 1), then a Dense layer.  The layers binarised
    pad nothing and sum an odd count of +-1 products (3 channels of 3x3), so no output of one
    is an exact tie the next binarises (a sum of 0 in one framework's order, 1e-8 in the
    other's, would binarise to -1 and +1)."""
    with C.layers.default_options(init=C.glorot_uniform(seed=7), activation=C.relu):
        h = C.layers.Convolution2D((3, 3), 3, pad=True, bias=False, name="first_conv")(x)
        h = C.layers.Convolution2D((3, 3), 3, strides=(2, 2), pad=False, bias=False,
                                   name="second_conv")(h)
        h = C.layers.Convolution2D((3, 3), 3, pad=False, name="third_conv")(h)
        h = C.layers.Convolution2D((3, 3), 2, pad=False, name="fourth_conv")(h)
        return C.layers.Dense(3, activation=None, name="classify")(h)


def _images():
    rs = np.random.RandomState(11)
    return (rs.randn(2, 1, 13, 13) * 1.5).astype(np.float32)


def _set_filters(C, model):
    """The binarised layers' new weights (glorot draws) set to fixed values."""
    filters = [p for p in model.parameters if p.name == "filter"]
    for k, p in enumerate(filters):
        n = int(np.prod(p.shape))
        p.value = (np.cos(np.arange(n) * (k + 1.3)) * 0.8).reshape(p.shape).astype(np.float32)
    return filters


@cntk_case(names=["cntk.contrib.netopt.quantization.convert_to_binary_convolution",
                  "cntk.contrib.netopt.quantization.binary_convolution"],
           rtol=1e-4, atol=1e-5,
           note="the notebook's cell 18 (with a filter that works; its `filter` is Python's "
                "built-in): the convolution layers but the first binarised, their bias and "
                "activation kept; values and straight-through gradients")
def netopt_binary_convolution(C, r):
    cq = _netopt(C, "quantization")
    r.touch("cntk.contrib.netopt.quantization.convert_to_binary_convolution",
            "cntk.contrib.netopt.quantization.binary_convolution")
    x = C.input_variable((1, 13, 13))
    z = _conv_model(C, x)
    binz = cq.convert_to_binary_convolution(z, lambda f: f.name != "first_conv")
    every = cq.convert_to_binary_convolution(z)
    filters = _set_filters(C, binz)
    data = _images()
    grads = binz.grad({x: data}, wrt=filters)
    res = {"blocks": [[b.op_name, b.name] for b in _blocks(C, binz)],
           "every": [[b.op_name, b.name] for b in _blocks(C, every)],
           "parameters": [[p.name, list(p.shape)] for p in binz.parameters],
           "arguments": [a == x for a in binz.arguments],
           "value": binz.eval({x: data}), "original": z.eval({x: data})}
    for k, f in enumerate(filters):
        res["grad %d" % k] = grads[f]
    return res


@cntk_case(names=["cntk.contrib.netopt.quantization.binary_convolution"], rtol=1e-4,
           atol=1e-5, note="one binarised convolution, padded, strides 1 and 2: 1-bit weights "
                           "and inputs scaled by their mean magnitudes (a sample's own), "
                           "sign(0) = -1, the padding zeros after binarising")
def netopt_binary_convolution_layer(C, r):
    cq = _netopt(C, "quantization")
    r.touch("cntk.contrib.netopt.quantization.binary_convolution")
    rs = np.random.RandomState(5)
    res = {}
    for channels, size, strides, pad in ((1, 6, 2, True), (2, 5, 1, True), (2, 5, 1, False),
                                         (3, 6, 2, True)):
        x = C.input_variable((channels, size, size))
        f = cq.binary_convolution((3, 3), num_filters=2, channels=channels, pad=pad,
                                  strides=strides)(x)
        W = f.parameters[0]
        W.value = np.cos(np.arange(W.value.size) * 1.3).reshape(W.shape).astype(np.float32)
        data = (rs.randn(2, channels, size, size) * 1.5).astype(np.float32)
        data[0, 0, 0, :2] = 0.0
        key = "%d %d %d %s" % (channels, size, strides, pad)
        res[key] = f.eval({x: data})
        res[key + " grad"] = f.grad({x: data}, wrt=[W])
        res[key + " block"] = [f.root_function.op_name, f.name, W.name, list(W.shape)]
    return res


@cntk_case(names=["cntk.contrib.netopt.quantization.binarize_convolution",
                  "cntk.contrib.netopt.quantization.convert_to_native_binary_convolution"],
           note="the notebook's cell 15: the model binarised (every convolution: the filter "
                "function is not used), the training function called with it, then the native "
                "lowering, a Halide plugin CNTK 2.7 cannot load here; Stadyn has none either: "
                "both raise there (CNTK's 'Plugin not found', Stadyn's NotImplementedError)")
def netopt_binarize_then_lower(C, r):
    cq = _netopt(C, "quantization")
    r.touch("cntk.contrib.netopt.quantization.binarize_convolution",
            "cntk.contrib.netopt.quantization.convert_to_native_binary_convolution")
    x = C.input_variable((1, 13, 13))
    seen = []

    def train(model):
        seen.append(sorted(b.op_name for b in _blocks(C, model)))

    raised = False
    try:
        cq.binarize_convolution(_conv_model(C, x), train, lambda f: f.name != "first_conv")
    except Exception:
        raised = True
    return {"trained": seen, "lowering raised": raised}

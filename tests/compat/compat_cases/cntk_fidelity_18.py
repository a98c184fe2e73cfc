"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (eighteenth round): the
attributes of ``eye_like``'s root function and of a loaded model's blocks; ``lambda_rank``'s
gradient where scores tie in queries of more than 16 documents."""

import os
import tempfile

import numpy as np

from compat_harness import cntk_case


@cntk_case(names=["cntk.eye_like", "cntk.Function.attributes"],
           note="eye_like's root function shows CNTK's attribute OutputSparse (the "
                "sparse_output given, True by default); Stadyn showed none")
def eye_like__attributes(C, r):
    r.touch("cntk.Function.root_function", "cntk.input_variable", "cntk.Function.attributes")
    x = C.input_variable(3)
    return {str(kw): sorted(C.eye_like(x, **kw).root_function.attributes.items())
            for kw in [{}, {"sparse_output": True}, {"sparse_output": False}]}


@cntk_case(names=["cntk.load_model", "cntk.Function.attributes", "cntk.Function.save"],
           note="a model saved and loaded again (each side its own file): the blocks show "
                "the attributes the file gives them (LocalResponseNormalization's depthRadius, "
                "bias, alpha, beta; ReduceL2's axisVec and reductionKeepDimensions), none for "
                "a Dense or a Convolution.  Stadyn showed none for every loaded block")
def loaded_model__block_attributes(C, r):
    r.touch("cntk.input_variable", "cntk.layers.Convolution", "cntk.layers.Dense",
            "cntk.local_response_normalization", "cntk.reduce_l2", "cntk.logging.graph."
            "depth_first_search", "cntk.Function.is_block", "cntk.Function.op_name",
            "cntk.Function.attributes", "cntk.Function.save")
    x = C.input_variable((3, 6, 6))
    h = C.layers.Convolution((3, 3), 2, pad=True)(x)
    h = C.local_response_normalization(h, 2, 1.0, 1e-4, 0.75)
    z = C.reduce_l2(C.layers.Dense(4)(h), axis=0)
    path = os.path.join(tempfile.mkdtemp(), "blocks.model")
    z.save(path)
    loaded = C.load_model(path)
    res = {}
    for fn in C.logging.graph.depth_first_search(loaded, lambda n: isinstance(n, C.Function),
                                                 depth=0):
        if fn.is_block:
            res[fn.op_name] = sorted(fn.attributes.items())
    return res


@cntk_case(names=["cntk.losses.lambda_rank", "cntk.Function.grad", "cntk.Function.eval"],
           note="lambda_rank over queries of more than 16 documents whose scores tie (all 0, "
                "as from zero weights; scores rounded to one decimal) and whose gains repeat: "
                "CNTK 2.7 ranks a query with std::sort, which is not stable, so documents of "
                "equal score and gain take libstdc++'s order, and LambdaRank's gradient each "
                "gets depends on it.  Stadyn ranked them in the listed order (the value agreed, "
                "the gradients did not)")
def lambda_rank__tied_scores_in_long_queries(C, r):
    r.touch("cntk.input_variable", "cntk.Function.grad", "cntk.Function.eval")
    group, gain = C.input_variable(1), C.input_variable(1)
    score = C.input_variable(1, needs_gradient=True)
    f = C.losses.lambda_rank(score, gain, group)
    res = {}
    sizes = [24, 19]
    n = sum(sizes)
    col = lambda v: np.asarray(v, np.float32).reshape(n, 1)  # noqa: E731
    q = col(np.repeat([3, 4], sizes))
    g = col(np.concatenate([np.sort(r.randint(0, 4, (k,)))[::-1] for k in sizes]))
    for title, s in [("zero scores", np.zeros(n)), ("rounded scores", r.randn(n).round(1))]:
        feed = {score: col(s), gain: g, group: q}
        value, (grad,) = r.cntk_forward_backward(f, feed, [score])
        res[title] = {"value": f.eval(feed), "grad": f.grad(feed, wrt=[score]),
                      "train value": value, "train grad": grad}
    unsorted = col(r.randint(0, 4, (n,)))
    res["unsorted gains"] = f.grad({score: col(np.zeros(n)), gain: unsorted, group: q},
                                   wrt=[score])
    return res

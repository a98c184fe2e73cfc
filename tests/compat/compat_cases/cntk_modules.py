"""CNTK 2.7's modules reached by their paths (``cntk.layers.layers``, ``cntk.layers.blocks``,
``cntk.core``, ...: ``compat/cntk/_star_imports.py``, ``tests/compat/test_cntk_modules.py``)."""

from compat_harness import cntk_case


@cntk_case(names=["cntk.layers.layers.PoolingType_Max", "cntk.layers.layers.PoolingType_Average",
                  "cntk.layers.layers.SentinelValueForAutoSelectRandomSeed",
                  "cntk.layers.blocks.InferredDimension", "cntk.core.Value",
                  "cntk.layers.layers.Dense", "cntk.layers.blocks.LSTM"])
def submodules__constants_and_layers(C, r):
    LL, LB = r.module("cntk.layers.layers"), r.module("cntk.layers.blocks")
    Value = r.module("cntk.core").Value
    x = C.input_variable(3)
    d = LL.Dense(2)(x)
    params = r.set_params(d.parameters)
    return {"pooling": [LL.PoolingType_Max, LL.PoolingType_Average],
            "sentinel": str(LL.SentinelValueForAutoSelectRandomSeed),
            "inferred": LB.InferredDimension, "dense": d.eval({x: r.randn(2, 3)}),
            "params": params, "lstm is the layers' LSTM": LB.LSTM is C.layers.LSTM,
            "one hot": Value.one_hot([[1, 0]], 3).shape}

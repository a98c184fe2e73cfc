"""What running more of CNTK's own ``Examples/`` programs on Stadyn found (tests/examples/
cntk_examples.py: BN-Inception, Conv3D_UCF11, FeatureExtraction, TransferLearning;
docs/cntk-examples.md), each compared with CNTK 2.7."""

import numpy as np

from compat_harness import cntk_case


@cntk_case(names=["cntk.initializer.normal", "cntk.initializer.he_normal",
                  "cntk.initializer.glorot_normal", "cntk.normal", "cntk.he_normal",
                  "cntk.glorot_normal"],
           rtol=0, atol=0,
           note="Examples/Image/Classification/GoogLeNet/BN-Inception/Python/BN_Inception.py "
                "initialises every layer with he_normal(): CNTK 2.7 draws a normal parameter "
                "with Boost 1.60's ziggurat on mt19937_64(seed) (CPUMatrix::"
                "SetGaussianRandomValue); Stadyn drew NumPy's normal numbers.  20000 values "
                "take the ziggurat's every path (its layers' rejections, the tail)")
def normal_initializers_draw_cntks_numbers(C, r):
    I = C.initializer
    return {"normal": C.parameter((200, 100), init=I.normal(0.5, seed=7)).value,
            "he_normal": C.parameter((64, 3, 3, 3), init=I.he_normal(seed=3)).value,
            "he_normal_scaled": C.parameter((16, 8), init=C.he_normal(scale=0.5, seed=4)).value,
            "glorot_normal": C.parameter((30, 20), init=I.glorot_normal(seed=11)).value,
            "cntk_normal": C.parameter((5, 7), init=C.normal(2.0, seed=1)).value}


@cntk_case(names=["cntk.layers.Convolution", "cntk.layers.Dense", "cntk.initializer.he_normal",
                  "cntk.layers.BatchNormalization"],
           rtol=0, atol=0, tols={"z": (1e-5, 1e-6)},
           note="BN_Inception.py's conv_bn_relu_layer and its Dense head: he_normal() without "
                "a seed takes CNTK's auto-selected seeds, counted from reset_random_seed(0) as "
                "in a fresh process")
def bn_inception_layers_he_normal(C, r):
    he_normal = C.initializer.he_normal
    C.cntk_py.reset_random_seed(0)
    x = C.input_variable((3, 8, 8))
    conv = C.layers.Convolution((3, 3), 8, activation=None, init=he_normal(), pad=True,
                                bias=False)(x)
    bn = C.layers.BatchNormalization(map_rank=1, normalization_time_constant=4096,
                                     use_cntk_engine=False)(conv)
    pooled = C.layers.AveragePooling(filter_shape=(8, 8))(C.relu(bn))
    z = C.layers.Dense(10, init=he_normal())(pooled)
    W = [p for p in z.parameters if p.name == "W"]
    data = r.randn(2, 3, 8, 8).astype(np.float32)
    return {"conv_W": W[0].value if W[0].shape == (8, 3, 3, 3) else W[1].value,
            "dense_W": W[1].value if W[0].shape == (8, 3, 3, 3) else W[0].value,
            "z": z.eval({x: data})}


@cntk_case(names=["cntk.initializer.truncated_normal", "cntk.truncated_normal"],
           rtol=0, atol=0,
           note="CNTK 2.7 draws a truncated_normal parameter as its normals (Boost's ziggurat "
                "on mt19937_64(seed)), leaving out the values beyond two deviations "
                "(CPUMatrix::SetTruncatedNormalRandomValue); Stadyn drew NumPy's normals")
def truncated_normal_draws_cntks_numbers(C, r):
    return {"wide": C.parameter((100, 100),
                                init=C.initializer.truncated_normal(0.5, seed=9)).value,
            "small": C.parameter((7, 5), init=C.truncated_normal(2.0, seed=2)).value}

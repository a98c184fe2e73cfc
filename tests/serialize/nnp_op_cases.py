"""The op cases of the ``.nnp`` round trips (``test_nnp_ops.py``), read by both sides: NNabla
1.39 builds each case with ``nnabla.functions`` (``make_nnp_op_refs.py``) and Stadyn with
``stadyn.functions``, both under the same name and the same keyword arguments (the catalog
uses NNabla's names and parameters).

A case is ``name: (function, inputs, kwargs)``: ``inputs`` lists each input as ``(shape,
kind)`` -- ``"n"`` standard normal, ``"u"`` uniform in (-0.9, 0.9), ``"p"`` uniform in (0.5,
2), ``"g"`` uniform in (1.1, 3), ``"i<k>"`` integers in [0, k), ``"b"`` 0/1, ``"s"`` sorted
ascending along the last axis, ``"spd"`` symmetric positive definite matrices, ``"w:<v>"``
the constant ``v`` -- drawn once by NNabla's side with a seeded generator and stored with its
outputs, so both sides run on the same numbers.  The first axis of the first input is the
batch axis.  Plain Python and NumPy only: NNabla's venv imports this module too.
"""

# Element-wise functions without parameters (NNabla: one function each, no <type>_param).
_UNARY = {
    "floor": "n", "ceil": "n", "round": "n", "hard_sigmoid": "n", "hard_tanh": "n",
    "softsign": "n", "log_sigmoid": "n", "mish": "n", "tanh_shrink": "n", "sinc": "n",
    "erf": "n", "isnan": "n", "isinf": "n", "sin": "n", "cos": "n", "tan": "u", "asin": "u",
    "acos": "u", "atan": "n", "sinh": "n", "cosh": "n", "asinh": "n", "acosh": "g",
    "atanh": "u", "logical_not": "b", "unlink": "n",
}

CASES = {name: (name, [((2, 3, 4), kind)], {}) for name, kind in _UNARY.items()}

CASES.update({
    # comparisons and logic (NNabla's functions broadcast between inputs of the same rank)
    "greater": ("greater", [((2, 3), "n"), ((2, 3), "n")], {}),
    "greater_equal": ("greater_equal", [((2, 3), "i3"), ((2, 3), "i3")], {}),
    "less": ("less", [((2, 3), "n"), ((1, 3), "n")], {}),
    "less_equal": ("less_equal", [((2, 3), "i3"), ((2, 3), "i3")], {}),
    "equal": ("equal", [((2, 3), "i3"), ((2, 3), "i3")], {}),
    "not_equal": ("not_equal", [((2, 3), "i3"), ((2, 3), "i3")], {}),
    "logical_and": ("logical_and", [((2, 3), "b"), ((2, 3), "b")], {}),
    "logical_or": ("logical_or", [((2, 3), "b"), ((2, 3), "b")], {}),
    "logical_xor": ("logical_xor", [((2, 3), "b"), ((2, 3), "b")], {}),
    "where": ("where", [((2, 3), "b"), ((2, 3), "n"), ((2, 3), "n")], {}),
    "atan2": ("atan2", [((2, 3), "n"), ((2, 3), "n")], {}),
    "add_n": ("add_n", [((2, 3), "n"), ((2, 3), "n"), ((2, 3), "n")], {}),
    "mul_n": ("mul_n", [((2, 3), "n"), ((2, 3), "n"), ((2, 3), "n")], {}),
    "bc_add2": ("bc_add2", [((2, 3), "n"), ((1, 3), "n")], {}),
    "mod2": ("mod2", [((2, 3), "n"), ((2, 3), "p")], {"fmod": True}),
    # element-wise with parameters
    "sign": ("sign", [((2, 3), "i3")], {"alpha": 0.5}),
    "crelu": ("crelu", [((2, 3, 4), "n")], {"axis": 2}),
    "celu": ("celu", [((2, 3, 4), "n")], {"alpha": 0.7, "axis": 1}),
    "reset_nan": ("reset_nan", [((2, 3), "n")], {"val": 3.0}),
    "reset_inf": ("reset_inf", [((2, 3), "n")], {"val": -2.0}),
    "prelu": ("prelu", [((2, 3, 4), "n"), ((3,), "p")], {"base_axis": 1}),
    "kl_multinomial": ("kl_multinomial", [((2, 3), "p"), ((2, 3), "p")], {"base_axis": 1}),
    "fixed_point_quantize": ("fixed_point_quantize", [((2, 3), "n")],
                             {"sign": True, "n": 4, "delta": 0.25}),
    "pow2_quantize": ("pow2_quantize", [((2, 3), "n")], {"n": 4, "m": 2}),
    "prune": ("prune", [((2, 10), "n")], {"rate": 0.5}),
    # linear algebra
    "batch_inv": ("batch_inv", [((2, 3, 3), "spd")], {}),
    "batch_det": ("batch_det", [((2, 3, 3), "n")], {}),
    "batch_logdet": ("batch_logdet", [((2, 3, 3), "spd")], {}),
    "batch_cholesky": ("batch_cholesky", [((2, 3, 3), "spd")], {"upper": True}),
    "matrix_diag": ("matrix_diag", [((2, 3), "n")], {}),
    "matrix_diag_part": ("matrix_diag_part", [((2, 3, 3), "n")], {}),
    "trilu": ("trilu", [((2, 3, 4), "n")], {"k": 1, "upper": False}),
    "eye_like": ("eye_like", [((3, 4), "n")], {"k": -1}),
    "einsum": ("einsum", [((2, 3, 4), "n"), ((2, 4, 5), "n")], {"equation": "bij,bjk->bik"}),
    # shapes, order, indices
    "flip": ("flip", [((2, 3, 4), "n")], {"axes": [0, 2]}),
    "tile": ("tile", [((2, 3), "n")], {"reps": [2, 1, 2]}),
    "shift": ("shift", [((2, 3, 4), "n")], {"shifts": [0, 1, -1], "border_mode": "reflect"}),
    "cumsum": ("cumsum", [((2, 3, 4), "n")], {"axis": 1, "exclusive": True}),
    "cumprod": ("cumprod", [((2, 3, 4), "p")], {"axis": 2, "reverse": True}),
    "sort": ("sort", [((2, 5), "n")], {"axis": 1, "reverse": True}),
    "sort_with_index": ("sort", [((2, 5), "n")], {"axis": 1, "with_index": True}),
    "top_k_data": ("top_k_data", [((2, 6), "n")], {"k": 3, "reduce": False}),
    "top_k_data_reduced": ("top_k_data", [((2, 6), "n")], {"k": 2, "with_index": True}),
    "top_k_grad": ("top_k_grad", [((2, 6), "n")], {"k": 3}),
    "top_n_error": ("top_n_error", [((4, 5), "n"), ((4, 1), "i5")], {"n": 2}),
    "gather": ("gather", [((4, 3), "n"), ((2, 2), "i4")], {"axis": 0}),
    "gather_nd": ("gather_nd", [((4, 3), "n"), ((2, 5), "i3")], {}),
    "searchsorted": ("searchsorted", [((2, 5), "s"), ((2, 3), "n")], {"right": True}),
    "scatter_add": ("scatter_add", [((3, 4), "n"), ((2, 4), "i3"), ((2, 4), "n")],
                    {"axis": 0}),
    "bool_fill": ("bool_fill", [((2, 3), "n"), ((2, 3), "b")], {"value": 7.0}),
    "confusion_matrix": ("confusion_matrix", [((6, 4), "n"), ((6, 1), "i4")], {}),
    "meshgrid": ("meshgrid", [((3,), "n"), ((4,), "n")], {"ij_indexing": True}),
    # normalisation
    "layer_normalization": ("layer_normalization", [((2, 3, 4), "n"), ((1, 3, 4), "n"),
                                                    ((1, 3, 4), "p")], {"eps": 1e-3}),
    "instance_normalization": ("instance_normalization", [((2, 3, 4), "n"), ((1, 3, 1), "n"),
                                                          ((1, 3, 1), "p")], {}),
    "group_normalization": ("group_normalization", [((2, 4, 3), "n"), ((1, 4, 1), "n"),
                                                    ((1, 4, 1), "p")], {"num_groups": 2}),
    "norm": ("norm", [((2, 3, 4), "n")], {"p": 3.0, "axis": [1, 2], "keepdims": True}),
    "norm_normalization": ("norm_normalization", [((2, 3, 4), "n")], {"p": 1.0, "axes": [1]}),
    "weight_standardization": ("weight_standardization", [((3, 4, 2), "n")],
                               {"channel_axis": 0}),
    "weight_normalization": ("weight_normalization", [((3, 4), "n"), ((3,), "p")], {"dim": 0}),
    "clip_grad_by_value": ("clip_grad_by_value", [((2, 3), "n"), ((2, 3), "w:-0.1"),
                                                  ((2, 3), "w:0.1")], {}),
    "clip_grad_by_norm": ("clip_grad_by_norm", [((2, 3), "n")], {"clip_norm": 0.5}),
    # convolution-like and pooling
    "depthwise_convolution": ("depthwise_convolution", [((2, 3, 5, 5), "n"), ((3, 3, 3), "n"),
                                                        ((3,), "n")],
                              {"pad": (1, 1), "stride": (2, 1)}),
    "depthwise_deconvolution": ("depthwise_deconvolution",
                                [((2, 4, 3, 3), "n"), ((4, 2, 2), "n"), ((2,), "n")],
                                {"stride": (2, 2), "divisor": 2}),
    "sum_pooling": ("sum_pooling", [((2, 3, 4, 4), "n")], {"kernel": (2, 2)}),
    "unpooling": ("unpooling", [((2, 3, 2, 2), "n")], {"kernel": (2, 3)}),
    "interpolate": ("interpolate", [((2, 3, 2, 3), "n")],
                    {"output_size": (4, 5), "mode": "linear", "align_corners": True}),
    "interpolate_nearest": ("interpolate", [((2, 3, 2, 3), "n")],
                            {"scale": (2.0, 1.5), "mode": "nearest"}),
    "affine_grid": ("affine_grid", [((2, 2, 3), "u")], {"size": (3, 4)}),
    "warp_by_grid": ("warp_by_grid", [((2, 3, 4, 5), "n"), ((2, 3, 3, 2), "u")],
                     {"align_corners": True}),
    "warp_by_flow": ("warp_by_flow", [((2, 3, 4, 5), "n"), ((2, 2, 4, 5), "u")], {}),
    "patch_correlation": ("patch_correlation", [((2, 4, 5, 3), "n"), ((2, 4, 5, 3), "n")],
                          {"patch": (1, 1), "shift": (1, 1)}),
    "adaptive_separable_convolution": ("adaptive_separable_convolution",
                                       [((2, 3, 6, 6), "n"), ((2, 3, 4, 4), "n"),
                                        ((2, 3, 4, 4), "n")], {}),
    # values made from nothing
    "constant": ("constant", [], {"val": 1.5, "shape": (2, 3)}),
    "arange": ("arange", [], {"start": 1.0, "stop": 4.0, "step": 0.5}),
    "linspace": ("linspace", [], {"start": -1.0, "stop": 1.0, "num": 5}),
})

"""NNabla 1.39 fidelity, eleventh round: what a parametric function makes a parameter from
(``None``, a NumPy array or a callable; anything else is a ``ValueError`` when the parameter is
made).
"""

import numpy as np

from compat_harness import nnabla_case

PFN = "nnabla.parametric_functions."


def _outcome(call):
    try:
        return list(call().shape)
    except ValueError as e:
        return ["ValueError", str(e)]


@nnabla_case(names=[PFN + "affine", PFN + "convolution", PFN + "prelu",
                    PFN + "batch_normalization", PFN + "embed", PFN + "min_max_quantize",
                    PFN + "weight_normalization"],
             note="a list, tuple, NdArray, bool or complex as a *_init, initializer= or a "
                  "value of param_init is NNabla 1.39's ValueError when the parameter is made "
                  "(Stadyn took a list or tuple as an array, a float in param_init as a fill "
                  "value, and refused the others with another error); an existing parameter "
                  "is found without it, as NNabla's")
def pf_initializers_neither_arrays_nor_callable(nn, PF, r):
    x2 = lambda: nn.Variable.from_numpy_array(np.ones((2, 2), np.float32))
    x4 = lambda: nn.Variable.from_numpy_array(np.ones((1, 2, 3, 3), np.float32))
    calls = {
        "affine w list": lambda: PF.affine(x2(), 2, w_init=[[1.0, 2.0], [3.0, 4.0]]),
        "affine w tuple": lambda: PF.affine(x2(), 2, w_init=((1.0, 2.0), (3.0, 4.0))),
        "affine b list": lambda: PF.affine(x2(), 2, b_init=[1.0, 2.0]),
        "affine w list of arrays": lambda: PF.affine(x2(), 2, w_init=[np.ones(2), np.ones(2)]),
        "affine w NdArray": lambda: PF.affine(
            x2(), 2, w_init=nn.NdArray.from_numpy_array(np.ones((2, 2), np.float32))),
        "affine w bool": lambda: PF.affine(x2(), 2, w_init=np.bool_(True)),
        "affine w complex": lambda: PF.affine(x2(), 2, w_init=1j),
        "conv w list": lambda: PF.convolution(x4(), 1, (1, 1), w_init=[[[[1.0]], [[2.0]]]]),
        "prelu slope list": lambda: PF.prelu(x4(), shared=True, slope_init=[0.5]),
        "bn param_init list": lambda: PF.batch_normalization(
            x4(), param_init={"gamma": [[[[1.0]], [[2.0]]]]}),
        "bn param_init float": lambda: PF.batch_normalization(x4(), param_init={"gamma": 2.0}),
        "embed initializer list": lambda: PF.embed(
            nn.Variable.from_numpy_array(np.zeros((2,), np.int32)), 2, 2,
            initializer=[[1.0, 2.0], [3.0, 4.0]]),
        "min_max_quantize qr_min list": lambda: PF.min_max_quantize(x4(), qr_min_init=[-1.0]),
        "weight_normalization g list": lambda: PF.weight_normalization(
            nn.Variable.from_numpy_array(np.ones((3, 2), np.float32)), g_init=[1.0, 2.0]),
    }
    res = {}
    for key, call in calls.items():
        nn.clear_parameters()
        res[key] = _outcome(call)
    nn.clear_parameters()
    with nn.parameter_scope("made"):
        w = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
        y = PF.affine(x2(), 2, w_init=w, b_init=lambda shape: np.full(shape, 0.5, np.float32))
        y.forward()
        res["array and callable"] = y.d.copy()
        res["existing, list"] = _outcome(lambda: PF.affine(x2(), 2, w_init=[[0.0, 0.0]]))
        res["bn param_init array"] = _outcome(lambda: PF.batch_normalization(
            x4(), param_init={"gamma": np.full((1, 2, 1, 1), 2.0, np.float32)}))
    nn.clear_parameters()
    return res

"""``nnabla.functions``' Fourier transforms: ``stft`` and ``istft`` (every window, ``center``,
``pad_mode``, the ``as_istft_backward`` / ``as_stft_backward`` forms, the refused arguments),
outputs and gradients; ``fft`` and ``ifft``, which NNabla 1.39 runs on CUDA only ("FFT forward
not implemented in CPU yet"): on the real side those cases compute the DFT their documentation
defines with NNabla's own ``affine`` over cos/sin matrices, one signal axis at a time (its
gradient is NNabla's, the adjoint transform ``fft``'s backward computes).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_functions import fn_case

_TOLS = {"out": (1e-5, 2e-5), "grad0": (1e-5, 2e-5), "grad1": (1e-5, 2e-5)}


def stft_case(name, shape, *args, **kw):
    fn_case(name, lambda F, x: F.concatenate(*F.stft(x, *args, **kw), axis=1), [shape],
            names=["nnabla.functions.stft"], tols=_TOLS,
            note="y_r and y_i concatenated along the frequency axis (one output to compare)")


def istft_case(name, shape, *args, **kw):
    fn_case(name, lambda F, a, b: F.istft(a, b, *args, **kw), [shape, shape],
            names=["nnabla.functions.istft"], tols=_TOLS)


stft_case("stft", (2, 64), 16, 4, 16)
stft_case("stft__hamming", (2, 64), 16, 4, 16, window_type="hamming")
stft_case("stft__rectangular", (2, 40), 8, 4, 8, window_type="rectangular")
stft_case("stft__none_window", (1, 40), 8, 2, 8, window_type=None)
stft_case("stft__not_center", (3, 50), 12, 5, 16, center=False)
stft_case("stft__constant", (3, 50), 12, 5, 16, pad_mode="constant")
stft_case("stft__odd_fft", (2, 33), 7, 3, 9)
stft_case("stft__as_istft_backward", (2, 64), 16, 4, 16, pad_mode="constant",
          as_istft_backward=True)
stft_case("stft__as_istft_backward_not_center", (2, 44), 16, 4, 16, window_type="hamming",
          center=False, pad_mode="constant", as_istft_backward=True)
istft_case("istft", (2, 9, 17), 16, 4, 16, pad_mode="constant")
istft_case("istft__hamming_window_size", (2, 11, 9), 16, 5, 20, window_type="hamming",
           pad_mode="constant")
istft_case("istft__not_center", (2, 9, 6), 16, 4, 16, window_type="rectangular",
           center=False, pad_mode="constant")
istft_case("istft__as_stft_backward", (2, 9, 17), 16, 4, 16, as_stft_backward=True)
istft_case("istft__as_stft_backward_constant", (2, 9, 17), 12, 4, 16, pad_mode="constant",
           as_stft_backward=True)
istft_case("istft__as_stft_backward_not_center", (2, 9, 6), 16, 4, 16, center=False,
           as_stft_backward=True)


@nnabla_case(names=["nnabla.functions.stft", "nnabla.functions.istft"])
def stft__roundtrip(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 96))
    y_r, y_i = F.stft(x, 16, 4, 16, pad_mode="constant")
    z = F.istft(y_r, y_i, 16, 4, 16, pad_mode="constant")
    z.forward()
    return {"z": z.d.copy(), "error": float(np.abs(z.d - x.d).max() < 1e-4)}


@nnabla_case(names=["nnabla.functions.stft", "nnabla.functions.istft"],
             note="the arguments both refuse, and a word of each message")
def stft__refused(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 64))
    y = nn.Variable.from_numpy_array(r.randn(2, 9, 17))
    calls = {
        "istft reflect": (lambda: F.istft(y, y, 16, 4, 16), "constant"),
        "stft as_istft_backward reflect": (
            lambda: F.stft(x, 16, 4, 16, as_istft_backward=True), "constant"),
        "istft NOLA": (lambda: F.istft(y, y, 12, 4, 16, window_type="hamming", center=False,
                                       pad_mode="constant"), "nola"),
        "istft stride": (lambda: F.istft(y, y, 16, 5, 16, pad_mode="constant"),
                         "multiple of stride"),
        "stft window": (lambda: F.stft(x, 16, 4, 16, window_type="blackman"),
                        "unknown window type"),
        "stft fft_size": (lambda: F.stft(x, 16, 4, 8), "at least as large"),
    }
    res = {}
    for key, (call, word) in sorted(calls.items()):
        try:
            out = call()
            (out[0] if isinstance(out, tuple) else out).forward()
            res[key] = "accepted"
        except Exception as exc:  # noqa: BLE001 - NNabla raises RuntimeError, Stadyn ValueError
            res[key] = word if word in str(exc).lower() else str(exc)
    return res


# -- fft / ifft ---------------------------------------------------------------------------------
def _dft(nn, F, x, ndim, normalized, inverse):
    """NNabla's documented DFT with NNabla's own functions: per signal axis, ``x @ (cos -+ i
    sin)`` as real matrix products of the real and imaginary parts."""
    xr, xi = F.split(x, axis=len(x.shape) - 1)
    nd = len(xr.shape)
    size = 1
    for a in range(nd - ndim, nd):
        n = xr.shape[a]
        ang = 2.0 * np.pi * np.outer(np.arange(n), np.arange(n)) / n
        c = nn.Variable.from_numpy_array(np.cos(ang).astype(np.float32))
        s = nn.Variable.from_numpy_array(((1 if inverse else -1) * np.sin(ang)).astype(
            np.float32))
        perm = [i for i in range(nd) if i != a] + [a]
        back = [int(i) for i in np.argsort(perm)]
        tr, ti = F.transpose(xr, perm), F.transpose(xi, perm)
        yr = F.affine(tr, c, base_axis=nd - 1) - F.affine(ti, s, base_axis=nd - 1)
        yi = F.affine(tr, s, base_axis=nd - 1) + F.affine(ti, c, base_axis=nd - 1)
        xr, xi = F.transpose(yr, back), F.transpose(yi, back)
        size *= n
    scale = 1.0 / np.sqrt(size) if normalized else (1.0 / size if inverse else 1.0)
    return F.stack(xr, xi, axis=nd) * float(scale)


def fft_case(name, shape, ndim, normalized=False):
    inverse = name.startswith("ifft")
    op = "ifft" if inverse else "fft"

    def fn(nn, F, r):
        x = nn.Variable.from_numpy_array(r.randn(*shape), need_grad=True)
        if r.real:
            r.touch("nnabla.functions." + op)
            y = _dft(nn, F, x, ndim, normalized, inverse)
        else:
            y = getattr(F, op)(x, ndim, normalized=normalized)
        y.forward()
        res = {"out": y.d.copy(), "shape": list(y.shape)}
        x.g = 0
        y.backward(r.weights_like(y.d))
        res["grad0"] = x.g.copy()
        return res

    fn.__name__ = name
    nnabla_case(name=name, names=["nnabla.functions." + op], tols=_TOLS,
                note="NNabla 1.39's CPU build has no FFT: its reference is the documented DFT "
                     "written with NNabla's affine, transpose, split and stack")(fn)


fft_case("fft", (3, 8, 2), 1)
fft_case("fft__normalized", (2, 5, 2), 1, normalized=True)
fft_case("fft__2d", (2, 4, 3, 2), 2)
fft_case("fft__3d_normalized", (2, 3, 4, 2, 2), 3, normalized=True)
fft_case("fft__no_batch", (6, 2), 1)
fft_case("ifft", (3, 8, 2), 1)
fft_case("ifft__normalized_2d", (2, 4, 6, 2), 2, normalized=True)
fft_case("ifft__3d", (1, 2, 3, 4, 2), 3)

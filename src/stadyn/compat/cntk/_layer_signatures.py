"""CNTK 2.7's call signatures of the ``cntk.layers`` factories made over Stadyn's layers.

A factory here takes its arguments in CNTK's positional order (which for the convolution layers
is not the native layer's: ``ConvolutionTranspose`` has ``sharing`` after ``strides`` and
``reduction_rank`` after ``output_shape``; ``Convolution2D`` and its kin take all of theirs
positionally), binds them to their names, and shows that signature to ``inspect``.
"""

from __future__ import annotations

import inspect

# CNTK 2.7's positional parameters where they are not the native layer's
_CONV_ND = ("filter_shape", "num_filters", "activation", "init", "pad", "strides", "bias",
            "init_bias", "reduction_rank", "dilation")
_TRANSPOSE_ND = ("filter_shape", "num_filters", "activation", "init", "pad", "strides", "bias",
                 "init_bias", "output_shape", "reduction_rank", "dilation")
POSITIONAL = {
    "Convolution1D": _CONV_ND + ("name",),
    "Convolution2D": _CONV_ND + ("groups", "name"),
    "Convolution3D": _CONV_ND + ("groups", "name"),
    "ConvolutionTranspose": ("filter_shape", "num_filters", "activation", "init", "pad",
                             "strides", "sharing", "bias", "init_bias", "output_shape",
                             "reduction_rank", "dilation", "max_temp_mem_size_in_samples",
                             "name"),
    "ConvolutionTranspose1D": _TRANSPOSE_ND + ("name",),
    "ConvolutionTranspose2D": _TRANSPOSE_ND + ("name",),
    "ConvolutionTranspose3D": _TRANSPOSE_ND + ("name",),
}
# defaults of CNTK's parameters the native signature does not show
_DEFAULTS = {"sharing": True, "reduction_rank": 1, "max_temp_mem_size_in_samples": 0,
             "groups": 1, "dilation": 1, "output_shape": None, "name": ""}


def cntk_signature(title: str, *natives) -> inspect.Signature:
    """CNTK's signature of the layer factory ``title``: its positional parameters (CNTK's
    order), defaults as the native layers ``natives`` give them; parameters CNTK does not
    have (after ``name``) keyword-only.

    Example:
        >>> import stadyn.layers as L
        >>> sig = cntk_signature("ConvolutionTranspose", L.ConvolutionTranspose)
        >>> list(sig.parameters)[9:12]
        ['output_shape', 'reduction_rank', 'dilation']
    """
    shown = {}
    for native in natives:
        params = inspect.signature(native).parameters.values()
        if any(p.kind is p.VAR_POSITIONAL for p in params):
            continue        # a mixin's (*args, sharing, **kwargs): the next one's order
        for p in params:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                shown.setdefault(p.name, p.default)
    names = POSITIONAL.get(title)
    if names is None:
        names = tuple(shown)[:tuple(shown).index("name") + 1] if "name" in shown else \
            tuple(shown)
    params = []
    for n in names:
        default = shown.get(n, _DEFAULTS.get(n, inspect.Parameter.empty))
        if default is inspect.Parameter.empty and n in _DEFAULTS:
            default = _DEFAULTS[n]
        params.append(inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        default=default))
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d)
               for n, d in shown.items() if n not in names and n != "kwargs"]
    return inspect.Signature(params)


def bound(title: str, signature: inspect.Signature, args: tuple, kwargs: dict) -> dict:
    """``args`` and ``kwargs`` of a call of the factory ``title`` as keywords, by CNTK's
    positional order (a TypeError as Python's for too many or doubled arguments)."""
    names = [n for n, p in signature.parameters.items()
             if p.kind is p.POSITIONAL_OR_KEYWORD]
    if len(args) > len(names):
        raise TypeError(f"{title}() takes at most {len(names)} positional arguments "
                        f"({len(args)} given)")
    out = dict(kwargs)
    for n, a in zip(names, args):
        if n in out:
            raise TypeError(f"{title}() got multiple values for argument '{n}'")
        out[n] = a
    return out

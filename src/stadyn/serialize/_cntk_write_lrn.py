"""The CNTK v2 model-file writer's rule for ``local_response_normalization`` (see
:mod:`._cntk_write`): CNTK 2.7's ``LocalResponseNormalization`` block, as CNTK 2.7 writes it
(learnt by saving the op with CNTK 2.7 and decoding the file, kept decoded in
``tests/fixtures/cntk_write_forms/written.json``):

* the block's attributes ``depthRadius`` (size_t), ``bias``, ``alpha``, ``beta`` (doubles);
  its leaves the constants ``beta``, ``bias`` (scalars) and the window's weights (stored shape
  ``(1, 1, k, 1)``, each ``alpha / (2 r + 1)``; ``k`` is ``2 r + 1``, or the channels where
  there are fewer: CNTK 2.7 rounds the kernel down to them), then the operand;
* its body: ``x * x`` reshaped to put a unit axis after the channels, a ``Convolution`` of the
  weights over it with automatic padding (the window's sum over the nearest channels, scaled),
  reshaped back, then ``exp(beta * log(bias + sum))`` and CNTK's ``ElementDivide`` block of
  ``x`` by it.

Stadyn's compat computes the same sum from a padded copy of the squares (CNTK's window is
centred where ``k`` is odd); the writer reads the radius, ``alpha``, ``bias``, ``beta`` from the
catalog ops the compat made (``pad``, ``mul_scalar``, ``add_scalar``, ``pow_scalar``), or, for a
loaded CNTK file's block, from the block's own attributes the caller gives
(``depthRadius``, ``bias``, ``alpha``, ``beta``: the window's size is not enough, CNTK rounds it
down to the channels).

Example:
    >>> sorted(RULES)
    ['cntk:LocalResponseNormalization']
"""

from __future__ import annotations

import numpy as np

from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported
from ._cntk_write_more import convolution_attributes, element_divide, inner_nodes, \
    node_attributes

__all__ = ["RULES"]

_OP = "LocalResponseNormalization"


def _lrn_attributes(out, ins) -> tuple[int, float, float, float]:
    """``(depth radius, bias, alpha, beta)`` of the compat's LRN computing ``out``."""
    nodes = {}
    for node in inner_nodes(out, ins):
        nodes.setdefault(node.spec.name, []).append(node)
    found = {k: len(nodes.get(k, ())) for k in ("pad", "mul_scalar", "add_scalar",
                                                 "pow_scalar", "div2")}
    if out.parent is None or out.parent.spec.name != "div2" or \
            any(found[k] != 1 for k in ("mul_scalar", "add_scalar", "pow_scalar", "div2")) or \
            found["pad"] < 1:
        raise CntkWriteUnsupported(_OP, "a normalisation the writer cannot read")
    pads = {tuple(node_attributes(n)["pad_width"]) for n in nodes["pad"]}
    if len(pads) != 1:
        raise CntkWriteUnsupported(_OP, "a normalisation the writer cannot read")
    radius = int(next(iter(pads))[0])
    scale = float(node_attributes(nodes["mul_scalar"][0])["val"])
    bias = float(node_attributes(nodes["add_scalar"][0])["val"])
    beta = float(node_attributes(nodes["pow_scalar"][0])["val"])
    # (the compat scaled alpha by 1 / (2 r + 1): the alpha given, to 15 digits)
    return radius, bias, float(f"{scale * (2 * radius + 1):.15g}"), beta


def _lrn(w, ins, uids, attrs, out, name):
    if len(uids) != 1:
        raise CntkWriteUnsupported(_OP, f"{len(uids)} inputs shown, CNTK's has 1")
    x = ins[0]
    if w.static_rank(x) != 3:
        raise CntkWriteUnsupported(_OP, "an input other than (channels, height, width)")
    if "depthRadius" in attrs:          # (a loaded file's block: its own attributes)
        radius, bias, alpha, beta = (int(attrs["depthRadius"]), float(attrs["bias"]),
                                     float(attrs["alpha"]), float(attrs["beta"]))
    else:
        radius, bias, alpha, beta = _lrn_attributes(out, ins)
    channels = x.shape[w.lead(x)]
    width = 2 * radius + 1
    kernel = min(width, channels)          # (CNTK 2.7 rounds the window down to the channels)
    weights = np.full((1, kernel, 1, 1), alpha / width, np.float64)

    def body(w_, p, c, n):
        square = w_.function("ElementTimes", [p[0], p[0]]) + "_Output_0"
        split = w_.function("Reshape", [square], {
            "newShape": P.shape((1, -1)), "beginAxis": P.static_axis(2),
            "endAxis": P.static_axis(3)}) + "_Output_0"
        summed = w_.function("Convolution", [c[2], split], convolution_attributes(
            (1, kernel, 1, 1), (1,) * 4, (1,) * 4, (True,) * 4, (0,) * 4,
            (0,) * 4)) + "_Output_0"
        joined = w_.function("Reshape", [summed], {
            "newShape": P.shape((-1,)), "beginAxis": P.static_axis(2),
            "endAxis": P.static_axis(4)}) + "_Output_0"
        shifted = w_.function("Plus", [c[1], joined]) + "_Output_0"
        logged = w_.function("Log", [shifted]) + "_Output_0"
        scaled = w_.function("ElementTimes", [c[0], logged]) + "_Output_0"
        denominator = w_.function("Exp", [scaled]) + "_Output_0"
        return w_.fixed_block("ElementDivide", "", [x, x], [p[0], denominator], (),
                              element_divide) + "_Output_0"

    attributes = {"depthRadius": P.size_t(radius), "bias": P.double(bias),
                  "alpha": P.double(alpha), "beta": P.double(beta)}
    return w.fixed_block(_OP, name, ins[:1], uids[:1], (beta, bias, weights), body, attributes)


RULES = {"cntk:" + _OP: _lrn}

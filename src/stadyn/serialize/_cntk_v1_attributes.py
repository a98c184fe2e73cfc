"""The CNTK 2 attributes CNTK 2.7 gives a function it reads from a ``cntk.exe`` (v1) node,
which it shows (``Function.attributes``) and writes again when it saves the loaded model
(``C.load_model(dnn).save(path)``).

CNTK 2.7 converts a v1 node into a primitive function in ``ConvertFromLegacyModel``
(``Source/CNTKv2LibraryDll/BackCompat.cpp``), taking the node's own fields:

- ``Times`` (BackCompat.cpp:284-296): ``outputRank`` and ``inferInputRankToMap`` as the node
  holds them (a node of before model version 12 has -1, ``NoInferredInputRank``:
  ``LinearAlgebraNodes.h``:417-423; one of a scalar operand is an ``ElementTimes``, no
  attributes);
- ``Convolution`` (BackCompat.cpp:353-391): the node's strides, sharing, automatic padding,
  lower and upper pads, transpose, output shape and ``maxTempMemSizeInSamples`` -- over every
  axis of the kernel, the channel axis too (ResNet20's ``strides`` ``(32, 2, 2)``, no
  ``groups`` nor ``sequential``) --, and the ``kernelShape`` and ``dilation`` CNTK 2.7 shows
  with them;
- ``Pooling`` (BackCompat.cpp:414-427): the pooling type, window, strides, automatic padding,
  pads, ``ceilOutDim`` and ``includePad`` over every axis (``(1, 8, 8)``);
- ``BatchNormalization`` (BackCompat.cpp:447-458): ``spatial``, the time constants,
  ``epsilon``, ``useCuDNNEngine`` the negation of the node's ``useCntkEngine`` -- which the
  network's validation on a CPU device has set, whatever the file holds (``TrainingNodes.h``:
  2873-2892), so false in CNTK 2.7's CPU build, the one Stadyn is compared with (01_OneHidden's
  file holds ``useCntkEngine`` false, CNTK 2.7 shows and saves ``useCuDNNEngine`` false) -- and
  ``disableRegularization``, which a v1 file does not store (the node's default, false:
  ``TrainingNodes.h``:2406-2410);
- ``TransposeTimes`` (BackCompat.cpp:297-301): ``outputRank``; ``ReduceElements``
  (BackCompat.cpp:338-344): ``axisVec`` (the node's one reduction axis) and
  ``reductionOpName`` (CNTK 2.7's ``save_as_legacy_model`` of ``cross_entropy_with_softmax``
  writes its ``ReduceElements`` ``LogSum`` and ``TransposeTimes`` so).

The values are in the form the CNTK v2 reader gives a file's attributes: shapes and bool
vectors in Python's order (the v1 reader's order), shapes as tuples, vectors as lists.

Example:
    >>> from stadyn.serialize import LegacyFunction
    >>> fn = LegacyFunction("t", "Times", ("w", "x"), ("y",),
    ...                     {"output_rank": 1, "infer_input_rank_to_map": 0})
    >>> cntk2_attributes(fn)
    (('inferInputRankToMap', 0), ('outputRank', 1))
"""

from __future__ import annotations

from ._cntk_format import CntkAxis

__all__ = ["cntk2_attributes", "shown_attributes"]


def _times(a: dict) -> dict:
    return {"outputRank": int(a.get("output_rank", 1)),
            "inferInputRankToMap": int(a.get("infer_input_rank_to_map", -1))}


def _geometry(a: dict) -> "dict | None":
    if "kernel_shape" not in a:             # (a node of before model version 5)
        return None
    rank = len(a["kernel_shape"])
    return {"strides": tuple(a["strides"]), "autoPadding": list(a["auto_padding"]),
            "lowerPad": tuple(a["lower_pad"]), "upperPad": tuple(a["upper_pad"]),
            "rank": rank}


def _convolution(a: dict) -> "dict | None":
    found = _geometry(a)
    if found is None or a.get("convolution_2d"):
        return None
    rank = found.pop("rank")
    dilation = tuple(a.get("dilation", (1,)))
    if len(dilation) != rank:
        # (a file's dilation of fewer axes than the kernel: CNTK 2.7 shows ResNet20's stored
        # [1] as (1, 1, 1); another is not taken over)
        if set(dilation) != {1}:
            return None
        dilation = (1,) * rank
    return {**found, "kernelShape": tuple(a["kernel_shape"]),
            "sharing": list(a["sharing"]), "transpose": bool(a.get("transpose", False)),
            "outputShape": tuple(a.get("output_shape", (0,))),
            "dilation": dilation,
            "maxTempMemSizeInSamples": int(a["max_temp_mem_size_in_samples"])}


def _pooling(a: dict) -> "dict | None":
    found = _geometry(a)
    if found is None or a.get("pool_kind") not in (1, 2):
        return None
    found.pop("rank")
    # (v1's PoolKind: 1 max, 2 average; CNTK 2's PoolingType: 0 max, 1 average)
    return {**found, "poolingType": int(a["pool_kind"]) - 1,
            "poolingWindowShape": tuple(a["kernel_shape"]),
            "ceilOutDim": bool(a.get("ceil_out_dim", False)),
            "includePad": bool(a.get("include_pad", False))}


def _batch_normalization(a: dict) -> "dict | None":
    if "use_cntk_engine" not in a:          # (a node of before model version 6)
        return None
    return {"spatial": bool(a["spatial"]),
            "normalizationTimeConstant": float(a["normalization_time_constant"]),
            "blendTimeConstant": float(a["blend_time_constant"]),
            # (the node's useCntkEngine as it stands after CNTK 2.7 validated the loaded
            # network on the CPU, which sets it: TrainingNodes.h:2873-2892 -- whatever the
            # file holds, as CNTK 2.7's CPU build shows and saves it)
            "epsilon": float(a["epsilon"]), "useCuDNNEngine": False,
            "disableRegularization": False}


def _transpose_times(a: dict) -> dict:
    # (BackCompat.cpp:297-301: the node's outputRank alone)
    return {"outputRank": int(a.get("output_rank", 1))}


def _reduce_elements(a: dict) -> "dict | None":
    # (BackCompat.cpp:338-344: axisVec the node's reduction axis, AsAxis of its internal
    # index -- k >= 1 the static axis k - 1 --, and its reductionOpName; no
    # reductionKeepDimensions: CNTK's default, kept.  A reduction over all static axes (index
    # 0) or several is not taken over)
    axes = list(a.get("axes", ()))
    if len(axes) != 1 or int(axes[0]) < 1 or "operation" not in a:
        return None
    k = int(axes[0]) - 1
    return {"axisVec": [CntkAxis(k, f"staticAxisIdx={k}", True)],
            "reductionOpName": str(a["operation"])}


_BY_TYPE = {"Times": _times, "Convolution": _convolution, "Pooling": _pooling,
            "BatchNormalization": _batch_normalization, "TransposeTimes": _transpose_times,
            "ReduceElements": _reduce_elements}


def cntk2_attributes(fn) -> "tuple | None":
    """The attributes CNTK 2.7 gives the function it makes of the v1 node ``fn`` (a
    :class:`~stadyn.serialize.LegacyFunction` of the v1 reader), as ``(name, value)`` pairs by
    name, or None: a node whose attributes Stadyn does not take over (another type, a field
    its model version does not store)."""
    make = _BY_TYPE.get(fn.type)
    found = make(fn.attrs or {}) if make is not None else None
    return None if found is None else tuple(sorted(found.items()))


def shown_attributes(fmt: str, fn) -> "tuple | None":
    """The attributes a file of format ``fmt`` gives the function ``fn`` as CNTK 2.7 shows
    them: a CNTK v2 file's own, a v1 node's as CNTK 2.7 converts them
    (:func:`cntk2_attributes`); None for other formats."""
    if fmt == "cntk-v2":
        return fn.file_attributes()
    return cntk2_attributes(fn) if fmt == "cntk-v1" else None

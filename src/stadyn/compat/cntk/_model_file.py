"""Saving and loading CNTK Functions as Stadyn model files, keeping what CNTK programs look up
after loading: the inputs' names, the outputs, and every named function inside (saved as extra
outputs of the file, ``node:<k>:<name>``, so ``find_by_name`` finds them in the loaded graph),
and the named sequence axes of the inputs and outputs (``axis:<k>:<ordered>:<name>``, the
input or output itself).
``ModelFormat.ONNX`` writes and reads ONNX instead.  ``ModelFormat.CNTKv2`` (the default) writes
a CNTK v2 model file (:func:`stadyn.serialize.save_cntk_v2`) when every op of the graph has a
CNTK form, and the Stadyn model file above, with one warning naming the op, when one has none.

:mod:`._model_save` writes the files and :mod:`._model_load` reads them; this module holds what
both read: :class:`ModelFormat` and the prefixes of the extra outputs' keys."""

from __future__ import annotations

import enum

__all__ = ["ModelFormat"]


class ModelFormat(enum.Enum):
    """The file format of ``Function.save``: CNTK's own (a CNTK v2 model file CNTK 2.7 reads,
    where every op has a CNTK form; else a Stadyn model file, with a warning) or ONNX."""

    CNTKv2 = 0
    ONNX = 1

_OUT, _NODE, _ARG, _AXIS, _SEVERAL, _COMBINE = ("output:", "node:", "arg:", "axis:", "outputs:",
                                               "combine:")
_UNTYPED = "untyped:"
_SPARSE = "sparse:"
_FREE = "free:"
_UNBATCHED = "unbatched:"

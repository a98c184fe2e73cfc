"""What ``copy`` and ``pickle`` do with CNTK 2.7's Python objects, which wrap C++ ones
(SWIG's): ``copy.copy`` gives another handle on the same object; ``copy.deepcopy`` and
``pickle`` are refused with SWIG's TypeError (:class:`SwigHandle`, mixed into the Functions,
Variables, layers not applied yet and axes of ``compat.cntk``)."""

from __future__ import annotations

__all__ = ["SwigHandle", "SWIG_PICKLE_ERROR"]

# what CNTK 2.7's deepcopy and pickle of any of its objects raise (as a TypeError)
SWIG_PICKLE_ERROR = "can't pickle SwigPyObject objects"


class SwigHandle:
    """``copy.copy``: another object holding what this one holds (CNTK 2.7's copy of a
    wrapper, over the same C++ object); ``copy.deepcopy`` and ``pickle``: SWIG's TypeError
    (``Function.save`` and ``load_model`` keep a graph).

    Example:
        >>> import copy, stadyn.compat.cntk as C
        >>> try:
        ...     copy.deepcopy(C.layers.Dense(3))
        ... except TypeError as e:
        ...     print(e)
        can't pickle SwigPyObject objects
        >>> a = C.Axis(1)
        >>> copy.copy(a) == a, copy.copy(a) is a
        (True, False)
    """

    __slots__ = ()

    def __reduce_ex__(self, protocol):
        raise TypeError(SWIG_PICKLE_ERROR)

    def __copy__(self):
        other = object.__new__(type(self))
        for base in type(self).__mro__:
            for slot in getattr(base, "__slots__", ()):
                if slot not in ("__weakref__", "__dict__") and hasattr(self, slot):
                    setattr(other, slot, getattr(self, slot))
        if hasattr(self, "__dict__"):
            other.__dict__.update(self.__dict__)
        return other

"""``cntk.Axis``: a static axis of a sample (by index) or one of CNTK's named axes."""

from __future__ import annotations

from ._renaming import refuse_name
from ._swig_handles import SwigHandle

__all__ = ["Axis"]

_ALL_AXES = 2147483643
_END_STATIC = 2147483644
_ALL_STATIC = 2147483646
_NONE = 2147483647

# the names of the dynamic axes made so far (CNTK 2.7's Axis::UniqueDynamicAxesNames, which
# its Axis(name) constructor registers in: Common.cpp:812), its own axes' from the start
_DYNAMIC_NAMES = {"defaultBatchAxis", "defaultDynamicAxis", "__operandSequenceAxis",
                  "UnknownAxes"}


class Axis(SwigHandle):
    """A static axis ``Axis(i)`` (row-major, per sample; negative counts from the end), or a
    named one: the batch axis, the sequence axis, all static axes, all axes.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> C.Axis(1), C.Axis(1).static_axis_index(), C.Axis.all_static_axes().name
        (Axis('staticAxisIdx=1'), 1, 'AllStaticAxes')
    """

    __slots__ = ("_name", "_index", "_ordered")

    def __init__(self, index_or_name=0, ordered: bool = True):
        if isinstance(index_or_name, Axis):
            self._name, self._index = index_or_name._name, index_or_name._index
            self._ordered = index_or_name._ordered
        elif isinstance(index_or_name, str):
            self._name, self._index, self._ordered = index_or_name, _NONE, bool(ordered)
            _DYNAMIC_NAMES.add(index_or_name)
        else:
            self._index = int(index_or_name)
            self._name, self._ordered = f"staticAxisIdx={self._index}", True

    @property
    def name(self) -> str:
        """``staticAxisIdx=1``, ``defaultBatchAxis``, ``AllStaticAxes``, ..."""
        return self._name

    @property
    def is_static_axis(self) -> bool:
        return self._name.startswith("staticAxisIdx=")

    @property
    def is_ordered(self) -> bool:
        return self._ordered

    def is_dynamic_axis(self) -> bool:
        return self._name in ("defaultBatchAxis", "defaultDynamicAxis") or (
            not self.is_static_axis and self._name not in ("AllAxes", "AllStaticAxes"))

    @property
    def is_batch_axis(self) -> bool:
        return self._name == "defaultBatchAxis"

    @property
    def is_sequence_axis(self) -> bool:
        return self.is_dynamic_axis() and not self.is_batch_axis

    def static_axis_index(self, checked: bool = True) -> int:
        """The index of a static axis (a ValueError for a named axis when ``checked``)."""
        if checked and not self.is_static_axis:
            raise ValueError(f"{self!r} is not a static axis")
        return self._index

    @staticmethod
    def all_axes() -> "Axis":
        """Every axis, the batch axis too."""
        return _named("AllAxes", _ALL_AXES, False)

    @staticmethod
    def all_static_axes() -> "Axis":
        """Every axis of a sample."""
        return _named("AllStaticAxes", _ALL_STATIC, False)

    @staticmethod
    def default_batch_axis() -> "Axis":
        return _named("defaultBatchAxis", _NONE, False)

    @staticmethod
    def default_dynamic_axis() -> "Axis":
        return _named("defaultDynamicAxis", _NONE, True)

    @staticmethod
    def operand_sequence_axis() -> "Axis":
        return _named("__operandSequenceAxis", _NONE, True)

    @staticmethod
    def default_input_variable_dynamic_axes() -> tuple:
        return (Axis.default_batch_axis(), Axis.default_dynamic_axis())

    @staticmethod
    def unknown_dynamic_axes() -> tuple:
        return (_named("UnknownAxes", _NONE, True),)

    @staticmethod
    def end_static_axis() -> "Axis":
        """The position after a sample's last axis (``expand_dims`` at the end)."""
        return Axis(_END_STATIC)

    @staticmethod
    def new_leading_axis() -> "Axis":
        """A new first axis (``splice`` along a new axis)."""
        return Axis(_END_STATIC)

    @staticmethod
    def new_unique_dynamic_axis(name: str) -> "Axis":
        """A new dynamic axis named ``name`` unless an axis of that name was made before, else
        ``name`` followed by the first number that makes it new (``a``, ``a1``, ``a2``), as
        CNTK 2.7's ``NewUniqueDynamicAxisName`` (Common.cpp:818): so two such axes are not
        the same axis, and sequences on them are not added.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> [C.Axis.new_unique_dynamic_axis("u41").name for _ in range(3)]
            ['u41', 'u411', 'u412']
        """
        refuse_name(name, "Axis_new_unique_dynamic_axis")
        unique, k = name, 0
        while unique in _DYNAMIC_NAMES:
            k += 1
            unique = f"{name}{k}"
        return Axis(unique)

    def __eq__(self, other) -> bool:
        """The same axis; ``None`` is none, anything else no Axis is CNTK 2.7's TypeError
        (SWIG's ``Axis_eq`` takes only an Axis: ``C.Axis(0) == 3``)."""
        if other is None:
            return False
        if not isinstance(other, Axis):
            raise TypeError("in method 'Axis_eq', argument 2 of type 'CNTK::Axis const &'")
        return (self._name, self._index) == (other._name, other._index)

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((self._name, self._index))

    def __repr__(self) -> str:
        return f"Axis({self._name!r})"


def _named(name: str, index: int, ordered: bool) -> Axis:
    """One of CNTK's own axes (made without registering its name: those of the dynamic ones
    are from the start, ``AllAxes``' and the like never are)."""
    axis = Axis.__new__(Axis)
    axis._name, axis._index, axis._ordered = name, index, bool(ordered)
    return axis

"""``d[key] = value`` on a deserializer: CNTK 2.7's built-in deserializers are configuration
dictionaries (``cntk_py.Dictionary``) that take any key, which its C++ reader then reads or
not.  :class:`DictSettings` gives Stadyn's image, base64 image, CBF and HTK deserializers that
surface: a key CNTK's reader acts on is applied where Stadyn can (an image deserializer's
``grayscale``) and refused where it cannot (a ValueError naming it), a key that only tunes
CNTK's engine is taken and does nothing, and any other key (which CNTK keeps and never reads)
is kept with a warning.  ``d[key]`` gives a key set so, ``"type"`` and ``"file"`` as CNTK's
dictionary does, and ``None`` for any other key (a lookup of CNTK 2.7's dictionary, case
``io40r__dict_unset_keys``).  The text format reader has its own (``_ctf.py``): it acts on
more keys.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

__all__ = ["DictSettings"]

# keys CNTK 2.7's readers read only to tune their engine (ImageDeserializerBase.cpp:44 and
# Base64ImageDeserializer.cpp:149, BinaryConfigHelper.cpp:53-81, HTKDeserializer.cpp:33-37,
# MLFDeserializer.cpp:321): the values delivered do not change (``precision``: the stream's
# type decides, as CNTK 2.7 gives float32 with "double", case io40__dict_settings)
_NO_EFFECT = ("verbosity", "traceLevel", "precision", "keepDataInMemory", "cacheIndex",
              "sampleBasedRandomizationWindow")
# keys that make another deserializer of it in CNTK: the arguments Stadyn's was made with
_REMADE = {"file": "the file it reads", "input": "its streams",
           "type": "which deserializer it is"}


class DictSettings:
    """CNTK 2.7's dict-style settings of a deserializer (see the module docstring); a class
    names CNTK's ``type`` (:attr:`cntk_type`), the keys it applies (:attr:`applied_keys`: key
    -> the method taking the value) and those CNTK acts on that it refuses
    (:attr:`refused_keys`: key -> what to do instead).

    Example:
        >>> class Reader(DictSettings):
        ...     cntk_type = "ImageDeserializer"
        >>> d = Reader()
        >>> d["verbosity"] = 2
        >>> d["verbosity"], d["type"], d["grayscale"]
        (2, 'ImageDeserializer', None)
    """

    cntk_type: ClassVar[str] = ""
    #: (a source reads a copy: a key set later changes nothing under it, as in CNTK 2.7)
    copied_by_sources = True
    applied_keys: ClassVar[dict[str, str]] = {}
    refused_keys: ClassVar[dict[str, str]] = {}
    #: keys of this reader's besides the common ones that CNTK reads and that change nothing
    quiet_keys: ClassVar[tuple[str, ...]] = ()

    def __setitem__(self, key: str, value: Any) -> None:
        name = type(self).__name__
        if key in self.applied_keys:
            getattr(self, self.applied_keys[key])(value)
        elif key in self.refused_keys or key in _REMADE:
            why = self.refused_keys.get(key) or \
                f"it sets {_REMADE[key]}: make another deserializer"
            raise ValueError(f"{name}: {key!r} is read by CNTK 2.7's reader but is not "
                             f"supported by Stadyn ({why})")
        elif key not in _NO_EFFECT and key not in self.quiet_keys:
            read = sorted({*self.applied_keys, *_NO_EFFECT, *self.quiet_keys})
            warnings.warn(f"{name}: {key!r} is not a setting CNTK 2.7's reader reads (it reads "
                          f"{', '.join(read)}); it is kept and does nothing", stacklevel=2)
        self.__dict__.setdefault("_settings", {})[key] = value

    def __getitem__(self, key: str) -> Any:
        settings = self.__dict__.get("_settings", {})
        if key in settings:
            return settings[key]
        if key == "type":
            return self.cntk_type
        if key == "file" and "_given_file" in self.__dict__:
            return self._given_file
        return None     # (CNTK 2.7's dictionary: a key never set)

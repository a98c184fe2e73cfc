"""The keys of the sequences a :class:`MinibatchSource` reads (CNTK's corpus keys)."""

from __future__ import annotations

from ._frame_mode import FrameComposite
from ._source import MinibatchSource

__all__ = ["sequence_keys"]


def sequence_keys(source: MinibatchSource) -> list[str]:
    """The key of each sequence of one sweep of ``source``, in file order: the first
    deserializer's key of each sequence the deserializers are joined in (a CTF file's sequence
    id, or its line's number counted from 0 where the file gives none; an image map file's
    line, counted from 0; an HTK utterance's name), as cntk.exe's reader keys it (its write
    action's ``%k``).  Global position ``p`` of an unrandomized source reads sequence
    ``p % len(keys)``.

    >>> from stadyn.io import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
    >>> ctf = CTFDeserializer.from_bytes(b'7 |x 1\\n7 |x 2\\n9 |x 3\\n',
    ...                                  StreamDefs(x=StreamDef(shape=1)))
    >>> sequence_keys(MinibatchSource(ctf, randomize=False))
    ['7', '9']
    """
    composite = source._composite
    if isinstance(composite, FrameComposite):
        raise ValueError("a source in frame mode reads frames, not keyed sequences")
    return composite.keys()

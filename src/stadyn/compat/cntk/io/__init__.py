"""``cntk.io``: readers (``cntk.io.transforms`` too)."""

from ....io import (FULL_DATA_SWEEP, INFINITELY_REPEAT, CTFDeserializer, ImageDeserializer,
                    MinibatchData, MinibatchSource, MinibatchSourceFromData, StreamDef,
                    StreamDefs, StreamInformation)
from . import transforms

__all__ = ["MinibatchSource", "MinibatchSourceFromData", "MinibatchData", "ImageDeserializer",
           "CTFDeserializer", "StreamDef", "StreamDefs", "StreamInformation", "FULL_DATA_SWEEP",
           "INFINITELY_REPEAT", "transforms"]

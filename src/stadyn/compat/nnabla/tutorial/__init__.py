"""Helpers NNabla's tutorials import (``from tiny_digits import *``)."""

__all__: list[str] = []

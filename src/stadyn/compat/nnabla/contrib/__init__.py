"""``nnabla.contrib``: NNabla 1.39's deprecated helpers (``nnabla.contrib.context``)."""

__all__: list[str] = []

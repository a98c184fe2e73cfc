"""``nnabla.models``: NNabla's pretrained models (``nnabla.models.imagenet``), read from the
``.nnp`` files a user puts in NNabla's model folder (Stadyn downloads nothing)."""

__all__: list[str] = []

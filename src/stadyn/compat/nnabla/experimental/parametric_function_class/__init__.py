"""``nnabla.experimental.parametric_function_class``: NNabla's layer classes, one module per
kind (``module``, ``affine``, ``convolution``, ``deconvolution``, ``embed``,
``batch_normalization``); ``parametric_function_classes`` gathers them."""

__all__: list[str] = []

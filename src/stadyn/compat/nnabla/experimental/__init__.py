"""``nnabla.experimental`` on Stadyn: the parametric function classes
(``parametric_function_classes``, ``parametric_function_class``), the graph viewer
(``viewers.SimpleGraph``), the graph converters (``graph_converters``: batch-norm folding,
test mode, channel last, ...) and the dynamic loss scaling of mixed-precision training
(``mixed_precision_training.DynamicLossScalingUpdater``)."""

__all__: list[str] = []

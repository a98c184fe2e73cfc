"""``nnabla.experimental`` on Stadyn: the parametric function classes
(``parametric_function_classes``, ``parametric_function_class``), the graph viewer
(``viewers.SimpleGraph``) and the graph converters (``graph_converters``: batch-norm folding,
test mode, channel last, ...)."""

__all__: list[str] = []

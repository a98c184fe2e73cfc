"""``nnabla.experimental`` on Stadyn: the parametric function classes
(``parametric_function_classes``, ``parametric_function_class``) and the graph viewer
(``viewers.SimpleGraph``)."""

__all__: list[str] = []

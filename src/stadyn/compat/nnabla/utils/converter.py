"""``nnabla.utils.converter``: NNabla's model-format converter (``nnabla_cli convert``).  Stadyn
has none under this name: its own readers and writers of NNabla's ``.nnp`` files are
``stadyn.serialize`` (``nnabla.utils.save`` / ``load``).  The module is here so that programs
importing it (NNabla's test utilities do, at their top) load; NNabla's names in it
(``get_category_info``, its table of functions from ``functions.yaml``, ``convert_files``, ...)
are not (``AttributeError``).

Example:
    >>> import stadyn.compat.nnabla.utils.converter as converter
    >>> hasattr(converter, "get_category_info")
    False
"""

__all__: list = []

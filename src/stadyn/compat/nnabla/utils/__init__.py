"""``nnabla.utils`` on Stadyn (its names are in the submodules)."""

__all__: list[str] = []

"""``nnabla.utils`` on Stadyn."""

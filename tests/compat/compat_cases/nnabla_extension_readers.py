"""NNabla 1.39's reader of a file extension (``nnabla.utils.data_source_loader.load``, which
``data_source_implements`` imports): the extension as given, case and all; ``'.dcm'`` read as
an image."""

from compat_harness import nnabla_case
from compat_outcomes import outcome

_EXTS = (".png", ".PNG", ".Jpg", ".jpeg", ".tiff", ".dcm", ".DCM", ".npy", ".NPY", ".csv",
         ".wav", "png", ".txt", "")


@nnabla_case(names=["nnabla.utils.data_source_loader.load",
                    "nnabla.utils.data_source_implements.load"],
             note="each extension's reader (its function's name) or the error")
def load__extension_as_given(nn, r):
    res = {}
    for module in ("data_source_loader", "data_source_implements"):
        M = r.module("nnabla.utils." + module)
        for ext in _EXTS:
            res["%s %r" % (module, ext)] = outcome(lambda: M.load(ext).__name__)
    return res

"""The CNTK v2 writer's rule for a Python user function (``cntk_user_function`` of one
output): the entry CNTK 2.7 writes for one (``UserFunction._serialize``, read back by its
``Function.load``): type ``UserDefinedFunction``, not native, and ``user_defined_state`` holding
the class's ``module`` and ``class``, the ``op_name`` (``module.class``) and the function's
``serialize()`` state as a CNTK dictionary.  CNTK 2.7 imports the module when it loads the
file, so it must be importable there too.
"""

from __future__ import annotations

import numpy as np

from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported

__all__ = ["RULES"]

_VERSION = 24       # (the version CNTK 2.7 writes for functions)


def _value(v, where: str):
    """A ``serialize()`` state value as CNTK's dictionary value (what CNTK's
    ``_py_dict_to_cntk_dict`` gives it)."""
    if isinstance(v, bool):
        return P.boolean(v)
    if isinstance(v, (int, np.integer)):
        return P.integer(int(v))
    if isinstance(v, (float, np.floating)):
        return P.double(float(v))
    if isinstance(v, str):
        return P.text(v)
    if isinstance(v, (list, tuple)):
        return P.vector([_value(x, where) for x in v])
    if isinstance(v, dict):
        return P.dictionary({str(k): _value(x, where) for k, x in v.items()})
    if isinstance(v, np.ndarray):
        return P.array(v)
    raise CntkWriteUnsupported("cntk_user_function", f"{where}'s serialize() state holds a "
                                                     f"{type(v).__name__}")


def _user_function(w, ins, uids, attrs, out, name):
    form = getattr(attrs.get("function"), "saved_form", None)
    if form is None:
        raise CntkWriteUnsupported("cntk_user_function", "a function without a saved form "
                                   "(a CNTK UserFunction's module, class and state)")
    f = form()
    where = f"{f['module']}.{f['class']}"
    uid = f"UserDefinedFunction{next(w.count)}"
    state = {"module": P.text(f["module"]), "class": P.text(f["class"]),
             "op_name": P.text(f.get("op_name") or where),
             "state": _value(f.get("state") or {}, where)}
    entry = {"version": P.size_t(_VERSION), "type": P.text("UserDefinedFunction"),
             "uid": P.text(uid), "name": P.text(f.get("name") or ""),
             "inputs": P.vector([P.text(i) for i in uids]), "native": P.boolean(False),
             "user_defined_state": P.dictionary(state)}
    w.functions.append(entry)
    return uid


RULES = {"cntk_user_function": _user_function}

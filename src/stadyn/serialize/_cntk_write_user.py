"""The CNTK v2 writer's rule for a Python user function (``cntk_user_function`` of one
output): the entry CNTK 2.7 writes for one (``UserFunction._serialize``, read back by its
``Function.load``): type ``UserDefinedFunction``, not native, and ``user_defined_state`` holding
the class's ``module`` and ``class``, the ``op_name`` (``module.class``) and the function's
``serialize()`` state as a CNTK dictionary (typed as CNTK 2.7's Python types it,
:func:`._cntk_write_proto.python_value`, as a Trainer's external state).  CNTK 2.7 imports the
module when it loads the file, so it must be importable there too.
"""

from __future__ import annotations

from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported

__all__ = ["RULES"]

_VERSION = 24       # (the version CNTK 2.7 writes for functions)


def _user_function(w, ins, uids, attrs, out, name):
    form = getattr(attrs.get("function"), "saved_form", None)
    if form is None:
        raise CntkWriteUnsupported("cntk_user_function", "a function without a saved form "
                                   "(a CNTK UserFunction's module, class and state)")
    f = form()
    where = f"{f['module']}.{f['class']}"

    def refuse(v):
        raise CntkWriteUnsupported("cntk_user_function", f"{where}'s serialize() state holds "
                                                         f"{v!r}, which CNTK 2.7 cannot keep")
    uid = f"UserDefinedFunction{next(w.count)}"
    state = {"module": P.text(f["module"]), "class": P.text(f["class"]),
             "op_name": P.text(f.get("op_name") or where),
             "state": P.python_value(f.get("state") or {}, refuse)}
    entry = {"version": P.size_t(_VERSION), "type": P.text("UserDefinedFunction"),
             "uid": P.text(uid), "name": P.text(f.get("name") or ""),
             "inputs": P.vector([P.text(i) for i in uids]), "native": P.boolean(False),
             "user_defined_state": P.dictionary(state)}
    w.functions.append(entry)
    return uid


RULES = {"cntk_user_function": _user_function}

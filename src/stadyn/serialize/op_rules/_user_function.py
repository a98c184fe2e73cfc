"""How Stadyn's model file holds a CNTK user function (``F.cntk_user_function``), as CNTK 2.7
keeps one in its model files (``bindings/python/cntk/ops/functions.py``, ``UserFunction``'s
``_serialize``): not its Python, but the module and class that define it, its name and the
state its ``serialize()`` gives; loading imports the module and rebuilds it with the class's
``deserialize(inputs, name, state)``.

The op's ``function`` attribute is written through its ``saved_form()``: ``{"module",
"class", "op_name", "name", "state", "inputs", "batched"}`` (plain values: the op name CNTK
2.7 keeps, the number of inputs and which carry the batch axis), kept as JSON text.  What
rebuilds the ``function`` from that and the node's inputs is the layer that defines user functions
(``stadyn.compat.cntk``), registered with :func:`register_user_function_loader`; without one
the file says so.

Example:
    >>> from stadyn.serialize import register_user_function_loader
    >>> register_user_function_loader is not None
    True
"""

from __future__ import annotations

import json
from typing import Any, Callable

from ... import functions as F
from ._table import Unmapped, register_rules

__all__ = ["register_user_function_loader"]

_LOADERS: list[Callable] = []


def register_user_function_loader(loader: Callable[[dict, list], Any]) -> None:
    """Register ``loader(form, inputs)``: from a saved form (``{"module", "class", "name",
    "state"}``) and the node's input Variables, the object ``F.cntk_user_function`` takes as
    ``function`` (the last registered is asked)."""
    _LOADERS.append(loader)


def _save(w, attrs):
    fn = attrs.get("function")
    form = getattr(fn, "saved_form", None)
    if form is None:
        raise TypeError(f"attribute 'function' holds a {type(fn).__name__} without a saved "
                        "form (a CNTK UserFunction's module, class and serialize() state)")
    try:
        text = json.dumps(form())
    except (TypeError, ValueError) as exc:
        raise TypeError(f"the user function's serialize() state holds {exc}") from None
    return {"function": w.value(text)}


def _load(r, attrs, inputs):
    if "function" not in attrs:
        r.fail("a user function needs its attribute 'function' (module, class, name, state)")
    try:
        form = json.loads(r.value(attrs["function"], "attribute 'function'"))
    except (TypeError, ValueError):
        r.fail("attribute 'function' must be the user function's module, class, name and "
               "state as JSON text")
    if not (isinstance(form, dict) and isinstance(form.get("module"), str)
            and isinstance(form.get("class"), str)):
        r.fail("attribute 'function' must name the user function's module and class")
    return {"function": _rebuilt(form, list(inputs), r.fail)}


def _rebuilt(form: dict, inputs: list, fail, refused=None):
    """The user function ``form`` names rebuilt over ``inputs`` by the last registered loader;
    ``fail(message)`` (which raises) where none is registered or the rebuild fails, or
    ``refused(message)`` where given and the rebuild fails (a CNTK 2.7 file: CNTK 2.7's
    ``load_model`` raises a RuntimeError, "SWIG director method error.", where the module
    cannot be imported or ``deserialize`` raises)."""
    where = f"{form['module']}.{form['class']}"
    if not _LOADERS:
        fail(f"the user function {where} is rebuilt by stadyn.compat.cntk: import it before "
             "loading")
    try:
        return _LOADERS[-1](form, inputs)
    except Exception as exc:  # noqa: BLE001 - the user's module, class or deserialize
        (refused or fail)(f"the user function {where} cannot be rebuilt "
                          f"({type(exc).__name__}: {exc})")


def _cntk_read(node):
    """A CNTK 2.7 file's Python user function (its module, class, name and state) rebuilt;
    the outputs the file reads (a prefix of the function's)."""
    form = {"module": node.attr("module"), "class": node.attr("class"),
            "op_name": node.attr("op_name", ""), "name": node.attr("name", ""),
            "state": node.attr("state") or {},
            # (which inputs carry the batch axis: the rebuild's infer_outputs sees their
            # sample shapes and dynamic axes, as CNTK 2.7's does)
            "batched": [node.batched(i) for i in range(node.n_inputs)]}
    inputs = [node.var(i) for i in range(node.n_inputs)]
    function = _rebuilt(form, inputs, node.unsupported, node.refused_at_run)
    out = F.cntk_user_function(*inputs, function=function)
    outs = list(out) if isinstance(out, tuple) else [out]
    return outs[0] if node.n_outputs == 1 else outs[:node.n_outputs]


register_rules(F.cntk_user_function,
               onnx_export=Unmapped(F.cntk_user_function.spec.unstorable),
               onnx_import=Unmapped("ONNX has no Python op"),
               model_export=_save, model_import=_load,
               cntk_import={"UserFunction": _cntk_read})

"""NNabla's parameter-scope names that Stadyn's registry offers in another form:
``nn.get_current_parameter_scope()`` and ``nn.no_grad`` (Stadyn's ``stadyn.graph.no_grad``);
``nn.get_parameters`` / ``nn.get_parameter_or_create``, which give the parameters as NNabla's
Variables (``.data`` / ``.grad`` NdArrays: ``_variable.py``); ``nn.load_parameters``, which
returns NNabla's protobuf message and passes over a file of no parameter format (``... is
omitted.``), as NNabla's.

Example:
    >>> import stadyn as sd
    >>> import stadyn.compat.nnabla as nn
    >>> with sd.parameter_registry(sd.ParameterRegistry()), nn.parameter_scope("net"):
    ...     _ = sd.get_parameter_or_create("conv/W", (2,))
    ...     list(nn.get_current_parameter_scope()["conv"])
    ['W']
"""

import os
import tempfile
import zipfile
from collections import OrderedDict

import numpy as np

from ...graph import current_scope, is_no_grad, no_grad
from ... import parametric as _parametric
from ... import serialize as _serialize
from ..._errors import ModelFileError
from ._scope_order import ordered_keys
from ._variable import as_nnabla
from .logger import logger
from ._kept_dtypes import _recording, keep, saved_arrays
from ._written_types import float_for_gradients

__all__ = ["get_current_parameter_scope", "no_grad", "get_parameters", "get_parameter_or_create",
           "load_parameters", "save_parameters"]

# The extensions NNabla 1.39's ``load_parameters`` has a loader for (``get_parameter_file_loader``
# in nnabla/utils/get_file_handle.py, in its order; it tests ``ext in key``, a substring test),
# the extensions its file opener takes (any other that passes the substring test, ``""`` of a
# path without one included, is its ValueError), and Stadyn's own parameter files.
_NNABLA_LOADERS = (".h5", ".protobuf", ".nntxt,.prototxt", ".nnp")
_NNABLA_OPENED = (".h5", ".protobuf", ".nntxt", ".prototxt", ".nnp")
_STADYN_FILES = (".safetensors",)


def load_parameters(path, proto=None, needs_proto=False, extension=".nntxt"):
    """NNabla's ``nn.load_parameters(path)``: the parameters of an ``.h5``, ``.protobuf``,
    ``.nntxt`` or ``.nnp`` file (or a Stadyn ``.safetensors`` one) into the current scope.
    Returns NNabla's protobuf message, an ``NNablaProtoBuf`` (``proto`` when given, the file
    merged into it): a ``.protobuf`` file's content, or with ``needs_proto=True`` an ``.h5``'s
    parameters, as ``proto.parameter`` entries (``variable_name``, ``shape.dim``, ``data``,
    ``need_grad``); empty for an ``.h5`` file otherwise, as NNabla 1.39's.  An ``.nnp``'s
    members are loaded each as the file of its extension (``parameter.h5``,
    ``parameter.protobuf``).  A ``.protobuf`` or ``.nntxt`` sets every parameter the message
    then holds.  A file object is read as ``extension``.

    A path whose extension no NNabla parameter loader takes (``tmp.monitor``, a folder) is
    passed over with NNabla's warning on its ``nnabla`` logger, ``<path> is omitted.``, as NNabla
    1.39 does (nnabla-examples' factorized-layers loads its default ``-t tmp.monitor`` so).  One
    that only its substring test lets in -- a path with no extension, ``.h``, ``.p`` -- is NNabla's
    ``ValueError: Currently, ext == <ext> is not support``.

    Example:
        >>> import os, tempfile
        >>> import stadyn.compat.nnabla as nn
        >>> folder = tempfile.mkdtemp()
        >>> with nn.parameter_scope("fc"):
        ...     nn.parameter.get_parameter_or_create("W", (2,)).d = [1.0, 2.0]
        >>> nn.save_parameters(os.path.join(folder, "params.h5"))
        >>> nn.clear_parameters()
        >>> proto = nn.load_parameters(os.path.join(folder, "params.h5"), needs_proto=True)
        >>> [(p.variable_name, list(p.shape.dim), list(p.data)) for p in proto.parameter]
        [('fc/W', [2], [1.0, 2.0])]
        >>> nn.load_parameters(os.path.join(folder, "tmp.monitor")).parameter  # ("... is omitted.")
        []
    """
    if proto is None:
        proto = _serialize.nnabla_messages()["NNablaProtoBuf"]()
    if isinstance(path, (str, os.PathLike)):
        _, ext = os.path.splitext(os.fspath(path))
    else:
        ext = extension
    if ext in _STADYN_FILES:
        _serialize.load_parameters(path)
        return proto
    if not any(ext in key for key in _NNABLA_LOADERS):
        logger.warning("{} is omitted.".format(os.fspath(path) if isinstance(path, os.PathLike)
                                               else path))
        return proto
    if ext not in _NNABLA_OPENED:
        raise ValueError("Currently, ext == {} is not support".format(ext))
    if hasattr(path, "read"):               # (Stadyn's readers take paths)
        data = path.read()
        with tempfile.TemporaryDirectory() as folder:
            name = os.path.join(folder, "parameters" + ext)
            with open(name, "wb") as f:
                f.write(data if isinstance(data, bytes) else data.encode())
            _load_file(name, ext, proto, needs_proto)
    else:
        _load_file(os.fspath(path), ext, proto, needs_proto)
    return proto


# The extensions NNabla 1.39's ``save_parameters`` has a saver for (``get_parameter_file_savers``,
# tested with ``ext in key``, a substring test, as its loaders are).
_NNABLA_SAVERS = (".h5", ".protobuf")


def save_parameters(path, params=None, extension=None):
    """NNabla's ``nn.save_parameters(path)``: the parameters (default: all of the current scope)
    to ``path``, a ``.protobuf`` file in NNabla's protobuf format (an ``NNablaProtoBuf`` of
    ``parameter`` entries: name, shape, values, ``need_grad``, as NNabla 1.39 writes it) or an
    ``.h5`` in NNabla's h5 layout; a ``.safetensors`` path Stadyn's format
    (:func:`stadyn.save_parameters`).  ``extension`` names a file object's format.  Any other
    suffix is NNabla 1.39's ``AssertionError: Only supported .h5,.protobuf.``, and one only its
    substring test lets in -- no extension, ``.h``, ``.p`` -- its ``ValueError: Currently, ext
    == <ext> is not support`` (nothing is written).

    Example:
        >>> import os, tempfile
        >>> import stadyn.compat.nnabla as nn
        >>> with nn.parameter_scope("fc"):
        ...     nn.parameter.get_parameter_or_create("W", (2,)).d = [1.0, 2.0]
        >>> path = os.path.join(tempfile.mkdtemp(), "params.protobuf")
        >>> nn.save_parameters(path); nn.clear_parameters()
        >>> [p.variable_name for p in nn.load_parameters(path).parameter]
        ['fc/W']
    """
    ext = os.path.splitext(os.fspath(path))[1] if isinstance(path, (str, os.PathLike)) \
        else extension
    if ext not in _STADYN_FILES:
        if ext is None or not any(ext in key for key in _NNABLA_SAVERS):
            raise AssertionError("Only supported {}.".format(",".join(_NNABLA_SAVERS)))
        if ext not in _NNABLA_SAVERS:
            raise ValueError("Currently, ext == {} is not support".format(ext))
    if params is None:
        params = get_parameters(grad_only=False)
    if ext != ".protobuf":
        if hasattr(path, "write"):
            raise TypeError("save_parameters: Stadyn writes a file object as .protobuf only "
                            "(extension='.protobuf'); give a path for other formats")
        _serialize.save_parameters(path, params, arrays=saved_arrays(params))
        return
    proto = _serialize.nnabla_messages()["NNablaProtoBuf"]()
    _add_parameters(proto, ((k, v.d, v.need_grad) for k, v in params.items()))
    data = proto.SerializeToString()
    if hasattr(path, "write"):
        path.write(data)
        return
    with open(path, "wb") as f:
        f.write(data)


def _load_file(path, ext, proto, needs_proto):
    """The parameters of the file ``path`` of NNabla's extension ``ext`` into the scope, and
    into ``proto`` where NNabla's loader of ``ext`` puts them."""
    if ext == ".protobuf":
        with open(path, "rb") as f:
            proto.MergeFromString(f.read())
        _set_from_proto(proto)
    elif ext in (".nntxt", ".prototxt"):
        _add_parameters(proto, ((k, p.value, p.need_grad) for k, p in
                                _serialize.read_legacy_model(path).parameters.items()))
        _set_from_proto(proto)
    elif ext == ".nnp":
        _load_nnp(path, proto, needs_proto)
    else:                                   # .h5
        content = _serialize.read_parameter_file(path)
        if needs_proto:
            _add_parameters(proto, ((k, a, need) for k, (a, need) in content.items()))
        _serialize.load_parameters(path, content=content)
        params = _parametric.get_parameters(grad_only=False)
        for name, (array, _) in content.items():
            if name in params:
                keep(params[name], array)       # NNabla holds the dataset's dtype


def _load_nnp(path, proto, needs_proto):
    """NNabla's ``.nnp`` parameter loader: each member, in the archive's order, loaded as the
    file of its extension would be (``parameter.h5``; ``parameter.protobuf``, merged into
    ``proto`` whatever ``needs_proto`` says; an ``.nntxt``'s parameters).  NNabla merges a text
    member's other sections (networks, executors, ...) into the message too; Stadyn's message
    has no fields for them (:func:`stadyn.serialize.nnabla_messages`)."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelFileError(f"{path}: not a readable .nnp archive ({exc})") from None
    with archive, tempfile.TemporaryDirectory() as folder:
        for k, name in enumerate(archive.namelist()):
            ext = os.path.splitext(name)[1]
            if ext not in (".h5", ".protobuf", ".nntxt", ".prototxt"):
                continue                    # (nnp_version.txt, as NNabla's loaders)
            member = os.path.join(folder, f"member{k}{ext}")
            with open(member, "wb") as f:
                f.write(archive.read(name))
            try:
                _load_file(member, ext, proto, needs_proto)
            except ModelFileError as exc:
                raise ModelFileError(
                    str(exc).replace(member, f"{path}:{name}")) from None


def _add_parameters(proto, items):
    """``(name, array, need_grad)`` items as ``proto.parameter`` entries, as NNabla's loaders
    add them."""
    for name, array, need_grad in items:
        entry = proto.parameter.add()
        entry.variable_name = name
        entry.shape.dim.extend(int(d) for d in np.shape(array))
        entry.data.extend(np.asarray(array, np.float32).ravel().tolist())
        entry.need_grad = bool(need_grad)


def _set_from_proto(proto):
    """NNabla's ``set_parameter_from_proto``: each ``proto.parameter`` into the current scope
    (made, or found, with the entry's ``need_grad``), its values the entry's data."""
    for entry in proto.parameter:
        dims = tuple(int(d) for d in entry.shape.dim)
        var = get_parameter_or_create(entry.variable_name, dims, need_grad=entry.need_grad)
        values = np.reshape(np.asarray(entry.data, np.float64), dims)   # NNabla's: float64
        var.d = values.astype(np.float32)
        keep(var, values)


def get_parameters(params=None, path="", grad_only=True):
    """The parameters under the current scope, keys relative to it, as NNabla 1.39's: in the
    order of its nested scope dicts walked depth-first (a scope where its first parameter was
    made: ``a/W``, ``x``, ``a/b`` made so are listed ``a/W``, ``a/b``, ``x``); ``path`` is put
    before each key (NNabla's recursion passes the scope walked so far in it; it selects
    nothing) and the entries are added to ``params`` when one is given, which is returned
    (cases ``nnabla_user_36.user36_scope_files_loaded_elsewhere``,
    ``user36_get_parameters_order``); a scope is placed where it was entered, empty or not, as
    NNabla makes its dict then (``_scope_order.py``; case
    ``nnabla_static_mix_37.static_mix__scopes_placed_when_entered``).

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla as nn
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     for name in ("a/W", "x", "a/b"):
        ...         _ = nn.get_parameter_or_create(name, (2,))
        ...     list(nn.get_parameters(path="net"))
        ['net/a/W', 'net/a/b', 'net/x']
    """
    out = OrderedDict() if params is None else params
    wanted = _parametric.get_parameters() if grad_only else None
    registry = _parametric.current_registry()
    scope = current_scope()
    head, cut = (scope + "/", len(scope) + 1) if scope else ("", 0)
    for full in ordered_keys(registry):         # (NNabla's order: _scope_order.py)
        if not full.startswith(head):
            continue
        key = full[cut:]
        if wanted is None or key in wanted:
            out["/".join([path, key]) if path else key] = as_nnabla(registry.get(full))
    return out


def _scope_tree():
    """The parameters under the current scope as nested ``OrderedDict``s, one level per scope
    name, in NNabla 1.39's order (:func:`get_parameters`'); a scope's entry is keyed
    ``name + "/"``, apart from a parameter of that name."""
    root = OrderedDict()
    for key, var in get_parameters(grad_only=False).items():
        *scopes, leaf = key.split("/")
        node = root
        for name in scopes:
            node = node.setdefault(name + "/", OrderedDict())
        node[leaf] = var
    return root


#: NNabla 1.39's error for an initializer neither an array nor callable (a float, say).
INITIALIZER_REFUSED = ("`initializer` must be either the :obj:`numpy.ndarray` or an instance "
                       "inherited from `nnabla.initializer.BaseInitializer`.")


class RefusedInitializer:
    """A number given as a parametric function's ``*_init``: NNabla 1.39's ``ValueError`` when
    the parameter is created (an existing parameter is found without it, as NNabla's).

    Example:
        >>> try:
        ...     RefusedInitializer(0.5)((2,))
        ... except ValueError as e:
        ...     print(str(e)[:47])
        `initializer` must be either the :obj:`numpy.nd
    """

    def __init__(self, value):
        self.value = value

    def __call__(self, shape):
        raise ValueError(INITIALIZER_REFUSED)


def get_parameter_or_create(name, shape=None, initializer=None, need_grad=True,
                            as_need_grad=None, dtype=None):
    """The parameter ``name`` of the current scope, registered with ``initializer`` if missing,
    as NNabla 1.39 hands it out: a new Variable on each call, viewing the registered one's value
    and gradient (``a is b`` is False for two calls, but ``a.d = ...`` shows in ``b.d`` and in
    ``nn.get_parameters()``; a backward through it accumulates into the registered gradient).

    * ``need_grad`` is registered: asking for an existing parameter with another one sets the
      registered flag (the values are kept).
    * ``as_need_grad`` (default ``need_grad``; always False inside ``nn.no_grad()``) is the
      returned view's own flag, which leaves the registered one alone: ``need_grad=False,
      as_need_grad=True`` gives a trainable view of a parameter that ``nn.get_parameters()``
      (and so a solver given it) leaves out.  Setting ``need_grad`` on the view later changes
      the view only.
    * The view is named by the last part of ``name`` (``"W"`` for ``"fc/W"``), as NNabla's;
      ``dtype`` is Stadyn's (a new parameter's element type, default float32).
    * A new parameter's ``shape`` may hold floats, truncated to ints as NNabla 1.39 does
      (``map(int, shape)`` before calling the initializer): nnabla-examples' PGGAN asks for
      ``(outmaps, inp.shape[1] / group) + kernel``.  An existing parameter is checked against
      the shape as given: another one is NNabla 1.39's ``ValueError``, in its words.
    * A new parameter's ``initializer`` is ``None`` (zeros), a NumPy array or a callable taking
      the shape (an initializer); anything else, a float included, is NNabla 1.39's
      ``ValueError``.  ``shape`` may be left out for a NumPy array (the array's shape);
      for zeros or an initializer its absence is NNabla's ``AssertionError``.
    * An integer (or bool) array makes a parameter of its type where it needs no gradient
      (``need_grad=False``), as NNabla 1.39's keeps it (``.d`` int32 for an int32 array; its
      functions still read it as float32).  One that needs a gradient is float32 on Stadyn:
      torch computes gradients of floating-point tensors only (NNabla keeps the int32 array
      and writes a float32 gradient beside it); so is an integer parameter asked for again
      with ``need_grad=True``.  The rule is Stadyn's ``get_parameter_or_create``'s, which the
      parametric functions share.  A float64 array (or an initializer's float64 result) gives
      float32, as every floating value a program hands the compat layer does (NNabla keeps
      float64; its functions compute in float32); the array is kept for an ``.h5`` re-save,
      which writes it as NNabla's does (``_kept_dtypes.py``).

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla as nn
        >>> with sd.parameter_registry(sd.ParameterRegistry()), nn.parameter_scope("net"):
        ...     a = nn.parameter.get_parameter_or_create("W", (2,))
        ...     b = nn.parameter.get_parameter_or_create("W", (2,))
        ...     a.d = [1.0, 2.0]
        ...     a is b, b.d.tolist(), nn.get_parameters()["W"].d.tolist()
        (False, [1.0, 2.0], [1.0, 2.0])
    """
    existing = _parametric.get_parameter(name)
    if (existing is None and initializer is not None and not isinstance(initializer, np.ndarray)
            and not callable(initializer)):
        raise ValueError(INITIALIZER_REFUSED)
    if shape is not None and existing is None and not isinstance(initializer, np.ndarray):
        shape = [int(d) for d in shape]
    if shape is None and existing is None and isinstance(initializer, np.ndarray):
        shape = initializer.shape           # NNabla's: the array's shape (parameter.py:243)
    if shape is None and existing is None:
        # NNabla 1.39 asserts a shape for zeros and initializers (parameter.py:237, 250)
        raise AssertionError(f"get_parameter_or_create: parameter '{name}' does not exist, and "
                             "a shape is needed to make it unless the initializer is a NumPy "
                             "array (NNabla 1.39's AssertionError)")
    if shape is None and existing is not None:
        # NNabla 1.39 compares the shape given with the existing one's (``tuple(shape)``,
        # parameter.py:330): none given is that TypeError, not the parameter
        raise TypeError(f"get_parameter_or_create: parameter '{name}' exists and no shape was "
                        "given to check it against ('NoneType' object is not iterable in "
                        "NNabla 1.39): use nn.get_parameters()[name] to read it")
    if shape is not None and existing is not None and tuple(shape) != tuple(existing.shape):
        # NNabla 1.39's ValueError, word for word (a program may print or match it)
        raise ValueError(f'The size of existing parameter "{name}" {tuple(existing.shape)} '
                         f'is different from the size of new parameter {tuple(shape)}.\n'
                         f'To clear all parameters, call nn.clear_parameters().')
    if existing is not None and (need_grad or as_need_grad) and not is_no_grad():
        float_for_gradients(as_nnabla(existing))   # an integer one asked for with a gradient
    given = []                      # (name, the array the initializer gave), NNabla's dtype
    if existing is None and dtype is None:
        if isinstance(initializer, np.ndarray):
            given.append((name, initializer))
        elif callable(initializer):
            initializer = _recording(initializer, name, given)
    _parametric.get_parameter_or_create(name, shape, initializer, need_grad, dtype=dtype,
                                        overwrite_need_grad=True)
    registered = as_nnabla(_parametric.get_parameter(name))
    if given:
        keep(registered, given[0][1])
    if as_need_grad is None:
        as_need_grad = need_grad
    view = registered.get_unlinked_variable(need_grad=bool(as_need_grad) and not is_no_grad())
    view.name = name.rsplit("/", 1)[-1]
    return view


def get_current_parameter_scope():
    """The parameters under the current scope as NNabla shows them: nested ``OrderedDict``s,
    one level per scope name, with the parameter Variables at the leaves, in creation order
    (``{"conv": {"W": ..., "b": ...}}``).  It is a snapshot: Stadyn keeps its parameters in a
    registry keyed by path, so adding to this dict registers nothing (NNabla gives its live
    scope dict).

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla as nn
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = sd.get_parameter_or_create("a/W", (1,))
        ...     scope = nn.get_current_parameter_scope()
        ...     scope["a"]["W"].shape
        (1,)
    """
    def plain(tree):
        return OrderedDict((name.rstrip("/") if name.endswith("/") else name,
                            plain(entry) if name.endswith("/") else entry)
                           for name, entry in tree.items())
    return plain(_scope_tree())


def kept_file_arrays(path):
    """``{name: array}`` of the parameters of the NNabla file ``path`` that NNabla 1.39 holds
    in another dtype than float32 once loaded, in that dtype: what :func:`load_parameters`
    keeps or makes in it (an ``.h5`` dataset's dtype, float16 and integers included; float64
    from a ``.protobuf`` or a text's values), read into a registry of its own.  NNabla's
    ``NnpLoader`` and ``nnabla.utils.load`` hold the same arrays as its ``load_parameters``
    (checked on NNabla 1.39: an ``.nnp`` of float64, float16 or int64 parameters, or of a
    ``parameter.protobuf``, re-saved as ``.h5`` after either gives that dtype, float64 for
    the ``.protobuf``), which Stadyn's build as float32 from
    :func:`stadyn.serialize.read_legacy_model`.

    Example:
        >>> import os, tempfile, numpy as np
        >>> import stadyn.compat.nnabla as nn
        >>> path = os.path.join(tempfile.mkdtemp(), "p.protobuf")
        >>> with nn.parameter_scope("fc"):
        ...     nn.parameter.get_parameter_or_create("W", (2,)).d = [1.0, 2.0]
        >>> nn.save_parameters(path); nn.clear_parameters()
        >>> {k: a.dtype for k, a in kept_file_arrays(path).items()}
        {'fc/W': dtype('float64')}
    """
    if os.path.splitext(os.fspath(path))[1] not in _NNABLA_OPENED:
        return {}                   # (no parameter file NNabla opens: nothing to keep)
    with _parametric.parameter_registry(_parametric.ParameterRegistry()):
        load_parameters(path)
        # kept (float64 beside float32), or made in the dataset's dtype (float16, integers)
        saved = saved_arrays(get_parameters(grad_only=False))
        return {name: array for name, array in saved.items() if array.dtype != np.float32}

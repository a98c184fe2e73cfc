"""NNabla's object-oriented networks ``nn.Module`` and ``nn.Sequential``
(``nnabla.core.module``): each module keeps its own parameters (a
:class:`~stadyn.ParameterRegistry`, where NNabla keeps a per-module scope dict), and every method a
subclass defines runs with that registry current, at the root scope, so the PF layers called
there create and find their parameters in the module.  Submodules assigned as attributes are
listed under ``@name/`` by :meth:`Module.get_parameters`.

Example:
    >>> import stadyn as sd
    >>> import stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.parametric_functions as PF
    >>> class Block(nn.Module):
    ...     def call(self, x):
    ...         return PF.affine(x, 2, name="fc")
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         self.first = Block()
    ...     def call(self, x):
    ...         return self.first(x)
    >>> net = Net()
    >>> _ = net(sd.Variable((4, 3)))
    >>> list(net.get_parameters())
    ['@first/fc/affine/W', '@first/fc/affine/b']
"""

import contextlib
import functools
import re
from collections import OrderedDict

from ...graph import name_scope
from ...parametric import ParameterRegistry, parameter_registry
from ._parameter import get_parameters
from ...serialize import load_parameters as _load, save_parameters as _save
from ._parameter import get_current_parameter_scope
from ._proto_recording import current_recorder

__all__ = ["Module", "Sequential"]


def _in_own_scope(method):
    """``method`` run with its module's registry current, at the root scope, and in its
    module scope of the proto graph being recorded (NNabla 1.39's ``module_scope``: functions
    given ``nn.ProtoVariable`` s are named under ``@name/``; the outermost module's call, if
    it recorded any, is committed as a network named after the module)."""
    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        recorder = current_recorder()
        recorder.begin_module(self)
        done = False
        try:
            with self._own_scope():
                out = method(self, *args, **kwargs)
            done = True
            return out
        finally:
            if recorder.end_module() and done and recorder.dirty:
                from .graph_def import _commit      # (graph_def imports nothing of this)
                _commit(recorder)
    return wrapped


class Module:
    """A network part with its own parameters (NNabla's ``nn.Module``).

    Subclasses define ``call`` (what calling the module does) and usually ``__init__``; each
    method they define runs in the module's own parameter scope (see the module docstring).
    Assigning a Module to an attribute makes it a submodule (named after the attribute);
    setting ``training`` sets it on every submodule too (default True).

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla as nn
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> class Linear(nn.Module):
        ...     def call(self, x):
        ...         return PF.affine(x, 3)
        >>> m = Linear()
        >>> m(sd.Variable((2, 5))).shape, list(m.get_parameters()), m.name
        ((2, 3), ['affine/W', 'affine/b'], 'linear')
    """

    _recursive_attrs = ("training",)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for key, value in list(vars(cls).items()):
            if callable(value) and not isinstance(value, (type, staticmethod, classmethod)):
                setattr(cls, key, _in_own_scope(value))

    @contextlib.contextmanager
    def _own_scope(self):
        with parameter_registry(self._registry), name_scope("", absolute=True):
            yield

    def __repr__(self):
        return self.__class__.__name__

    @property
    def training(self):
        """Whether the module is in training mode (default True); setting it sets every
        submodule's too."""
        return self.__dict__.setdefault("training", True)

    @property
    def _registry(self):
        return self.__dict__.setdefault("_parameter_registry", ParameterRegistry())

    @property
    def parameter_scope(self):
        """This module's own parameters (not its submodules') as NNabla shows its scope: nested
        ``OrderedDict``s by scope name, Variables at the leaves.  A snapshot
        (``get_current_parameter_scope``'s form): use :meth:`set_parameter` to add one."""
        with self._own_scope():
            return get_current_parameter_scope()

    @property
    def submodules(self):
        """The submodules, ``OrderedDict`` name -> Module, in assignment order."""
        return self.__dict__.setdefault("_submodules", OrderedDict())

    def get_parameters(self, recursive=True, grad_only=False, memo=None):
        """The parameters: each submodule's (``recursive``) under ``@name/``, then the module's
        own; a Variable reachable twice is listed once.  ``grad_only`` skips those without
        ``need_grad``.

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> nn.Module().get_parameters()
            OrderedDict()
        """
        seen = set() if memo is None else memo
        params = OrderedDict()
        if recursive:
            for name, module in self.submodules.items():
                for key, var in module.get_parameters(True, grad_only, seen).items():
                    params[f"@{name}/{key}"] = var
        with self._own_scope():
            for key, var in get_parameters(grad_only=grad_only).items():
                if id(var) not in seen:
                    seen.add(id(var))
                    params[key] = var
        return params

    def set_parameter(self, key, param, raise_if_missing=False):
        """Make ``param`` the parameter ``key`` (``@child/...`` keys go to the submodule
        ``child``; a missing one is skipped, or a ``ValueError`` with ``raise_if_missing``).

        Example:
            >>> import stadyn as sd
            >>> import stadyn.compat.nnabla as nn
            >>> m = nn.Module()
            >>> m.set_parameter("w", sd.Variable((2,)))
            >>> list(m.get_parameters())
            ['w']
        """
        if key.startswith("@"):
            child, sep, rest = key[1:].partition("/")
            if not sep or not rest:
                raise ValueError(f"Invalid parameter key {key}. A module parameter scope "
                                 "represented as `@name` must be followed by `/`.")
            if child in self.submodules:
                self.submodules[child].set_parameter(rest, param, raise_if_missing)
            elif raise_if_missing:
                raise ValueError(f"A child module {child} cannot be found in {self}. This error "
                                 "is raised because `raise_if_missing` is specified as True. "
                                 "Please turn off if you allow it.")
            return
        self._registry.set(key, param)

    def set_parameters(self, params, raise_if_missing=False):
        """:meth:`set_parameter` for each item of ``params``."""
        for key, param in params.items():
            self.set_parameter(key, param, raise_if_missing)

    def update_parameter(self):
        """Set the parameters again from :meth:`get_parameters` (NNabla's name)."""
        self.set_parameters(self.get_parameters())

    def zero_grad(self):
        """Set the gradient of every parameter that needs one to zero."""
        for param in self.get_parameters(grad_only=True).values():
            param.g = 0

    def save_parameters(self, path, extension=".h5"):
        """Write :meth:`get_parameters` (with ``@child/`` names) to ``path`` (``.h5``:
        NNabla's format; any other suffix Stadyn's).  ``extension`` is NNabla's argument for
        file objects and is not used here.

        Example:
            >>> import os, tempfile, stadyn.compat.nnabla as nn
            >>> m = nn.Module()
            >>> m.set_parameter("w", nn.Variable((2,)))
            >>> path = os.path.join(tempfile.mkdtemp(), "m.h5")
            >>> m.save_parameters(path)
            >>> other = nn.Module()
            >>> other.load_parameters(path)
            >>> list(other.get_parameters())
            ['w']
        """
        _save(path, self.get_parameters(grad_only=False))

    def load_parameters(self, path, extension=".h5", raise_if_missing=True):
        """Read a file :meth:`save_parameters` wrote and :meth:`set_parameters` from it (a key
        for a missing submodule is a ``ValueError`` unless ``raise_if_missing=False``)."""
        registry = ParameterRegistry()
        with parameter_registry(registry), name_scope("", absolute=True):
            _load(path)
            loaded = get_parameters(grad_only=False)
        self.set_parameters(loaded, raise_if_missing)

    def __len__(self):
        return len(self.submodules)

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self.submodules[name] = value
            value.__dict__["_name"] = name
            value.__dict__["_parent"] = self
            return
        self.__dict__[name] = value
        if name in self._recursive_attrs:
            for module in self.submodules.values():
                setattr(module, name, value)

    def __getattr__(self, name):
        submodules = self.__dict__.get("_submodules", {})
        if name in submodules:
            return submodules[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def name(self):
        """The attribute name it was assigned to, else its class name in snake case."""
        if "_name" in self.__dict__:
            return self.__dict__["_name"]
        return re.sub(r"(?<!^)(?=[A-Z])", "_", type(self).__name__).lower()

    @property
    def parent(self):
        """The module it is an attribute of, or None."""
        return self.__dict__.get("_parent")

    def is_root(self):
        """Whether it has no parent module."""
        return self.parent is None

    def get_path_name(self):
        """``@root/@child/...`` down to this module."""
        if self.is_root():
            return "@" + self.name
        parent = self.parent.get_path_name()
        return f"{parent}/@{self.name}" if parent else "@" + self.name

    def __call__(self, *args, **kwargs):
        return self.call(*args, **kwargs)

    def call(self, *args, **kwargs):
        """What calling the module computes; subclasses define it."""
        raise NotImplementedError("call(*av, **kw) must be implemented.")


class Sequential(Module):
    """Modules called one after the other (NNabla's ``nn.Sequential``): each gets the previous
    one's result (a tuple is spread into arguments).  Give modules (named
    ``<snake_case class>_<index>``) or ``(name, module)`` pairs.

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla as nn
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> class Linear(nn.Module):
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def call(self, x):
        ...         return PF.affine(x, self.n)
        >>> seq = nn.Sequential(Linear(4), ("out", Linear(2)))
        >>> seq(sd.Variable((3, 5))).shape, list(seq.submodules)
        ((3, 2), ['linear_0', 'out'])
    """

    def __init__(self, *args, **kwargs):
        for index, item in enumerate(args):
            name, module = item if isinstance(item, tuple) else (None, item)
            if not isinstance(module, Module):
                raise TypeError(f"The input layer {self.name}/{type(module).__name__} should be "
                                "a instance of nn.Module")
            self.submodules[name if name is not None else f"{module.name}_{index}"] = module

    def call(self, *args, **kwargs):
        result = None
        for module in self.submodules.values():
            result = module(*args, **kwargs)
            args = result if isinstance(result, tuple) else (result,)
        return result

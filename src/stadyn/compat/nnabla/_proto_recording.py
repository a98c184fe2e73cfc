"""Where NNabla 1.39's proto graphs are recorded: the builder an ``F`` function given an
``nn.ProtoVariable`` records itself in (``nnabla.core.graph_def``'s ``ProtoGraphBuilder``).

One :class:`Recorder` is current: the process's default one, or the one a ``with
nn.graph_def.graph():`` block starts (``graph_def.py``).  It names what is recorded as NNabla
names it, in the order the functions are called: a function ``Affine`` (then ``Affine_1``, ...,
under ``@NAME/`` when the graph was given a name), an unnamed input after the first function
reading it (``Affine_in``), an output after its function's type (``ReLU_out``, then
``ReLU_out_1``); and it keeps the network's variables, in that order, until ``graph_def.py``
commits them as a network (the end of the block, ``get_default_graph()``,
``get_default_graph_by_variable()``).

Example:
    >>> r = Recorder(name="net")
    >>> r.function_name("ReLU"), r.function_name("ReLU"), r.variable_name("ReLU_out")
    ('@net/ReLU', '@net/ReLU_1', '@net/ReLU_out')
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["Recorder", "current_recorder", "set_current_recorder", "unique_name"]


def unique_name(names: dict, prefix: str) -> str:
    """``prefix`` the first time, then ``prefix_1``, ``prefix_2``, ... (``names`` counts them),
    as NNabla's ``_get_unique_name``.

    Example:
        >>> seen = {}
        >>> [unique_name(seen, "a") for _ in range(3)]
        ['a', 'a_1', 'a_2']
    """
    if prefix in names:
        name = f"{prefix}_{names[prefix]}"
        names[prefix] += 1
        return name
    names[prefix] = 1
    return prefix


class _FlatModule:
    """NNabla's ``FlatModule``: the scope of functions recorded outside any ``nn.Module``
    call, named after the graph (``model`` unless given), its path ``@NAME`` (none for
    ``model``)."""

    def __init__(self, name: str | None):
        self.name = name or "model"

    def get_path_name(self) -> str:
        return "" if self.name == "model" else "@" + self.name


class Recorder:
    """The proto graph being recorded: the graph's ``name`` (given to its first network),
    ``parameter_scope``, the network names used, the ``graph`` the networks are committed to
    (a ``ProtoGraph``, made by ``graph_def.py``) and the network being recorded (its
    ``variables``, in order, and whether anything was recorded since the last commit).

    Example:
        >>> r = Recorder()
        >>> r.function_name("Affine"), r.dirty
        ('Affine', False)
    """

    def __init__(self, name: str | None = None, parameter_scope: Any = None):
        self.graph_name = name
        self.parameter_scope = parameter_scope
        self.network_names: dict = {}
        self.graph: Any = None
        self.modules: list = []         # the nn.Module calls being recorded, outermost first
        self.start_network()

    def start_network(self) -> None:
        """Forget the network recorded (after a commit): the next function starts a new one."""
        self.function_names: dict = {}
        self.variable_names: dict = {}
        self.variables: "OrderedDict[str, Any]" = OrderedDict()
        self.functions: "OrderedDict[str, list[str]]" = OrderedDict()   # -> output names
        # the nn.Variables of no scope a function was given, as parameters (name -> leaf)
        self.parameters: "OrderedDict[str, Any]" = OrderedDict()
        self.module: Any = None
        self.dirty = False

    def _path(self) -> str:
        if self.module is None:                   # NNabla's FlatModule, made at first use
            self.module = _FlatModule(self.graph_name)
        return self.module.get_path_name()

    def begin_module(self, module: Any) -> None:
        """An ``nn.Module`` method starts: what it records is named under its path
        (``@net/Affine``, ``@net/@inner/ReLU_out``), as NNabla 1.39's ``module_scope``."""
        self.modules.append(module)
        self.module = module

    def end_module(self) -> bool:
        """The ``nn.Module`` method begun last ends; gives whether it was the outermost one
        (NNabla then commits the network, named after that module)."""
        self.modules.pop()
        if self.modules:
            self.module = self.modules[-1]
            return False
        return True

    def _joined(self, name: str) -> str:
        path = self._path()
        return f"{path}/{name}" if path else name

    def function_name(self, type_name: str) -> str:
        """The name of the next function of type ``type_name``."""
        return unique_name(self.function_names, self._joined(type_name))

    def variable_name(self, base: str) -> str:
        """The name of the next unnamed variable called ``base`` (``ReLU_in``, ``ReLU_out``)."""
        return unique_name(self.variable_names, self._joined(base))

    def variable_name_after(self, function: str, index: int) -> str:
        """The name of the parameter NNabla makes of the ``nn.Variable`` that is input
        ``index`` of ``function`` (a function's full name): ``Add2_1`` (``@net/Add2_1``)."""
        return unique_name(self.variable_names, f"{function}_{index}")

    def network_name(self) -> str:
        """The name of the network committed now: the graph's name (once), else its module's
        (``model``, an ``nn.Module``'s name), made unique among the graph's networks."""
        self._path()
        name = self.graph_name or self.module.name
        self.graph_name = None
        return unique_name(self.network_names, name)


_CURRENT: list[Recorder] = [Recorder()]


def current_recorder() -> Recorder:
    """The recorder functions given a ``ProtoVariable`` record in now."""
    return _CURRENT[0]


def set_current_recorder(recorder: Recorder) -> Recorder:
    """Make ``recorder`` current; gives the one it replaces."""
    previous, _CURRENT[0] = _CURRENT[0], recorder
    return previous

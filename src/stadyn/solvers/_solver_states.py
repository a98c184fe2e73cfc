"""Solver state I/O: NNabla's per-parameter ``SolverState``, ``get_states``/``set_states``,
Stadyn's ``state_dict`` and the state files ``save_states``/``load_states`` write and read.

:class:`SolverStates` is a mixin of :class:`stadyn.solvers.Solver`; it works on the solver's
``_params`` and ``_states`` (per parameter: the state tensors by name and the step count
``t``).

Example:
    >>> import stadyn.solvers as S
    >>> S.SolverState().t
    0
"""

from __future__ import annotations

import numbers
import os
import weakref
from collections import OrderedDict
from typing import Any, Mapping

import torch

from .._errors import ModelFileError, ParameterError, StadynError
from .._tensorfile import read_tensor_file, tensor_file_bytes, write_tensor_file
from ..graph import Variable, data_of, on_renew
from ._nnabla_states import (is_nnabla_protobuf_states, read_h5_states, read_protobuf_states,
                             write_h5_states, write_protobuf_states)
from ._param_order import MapOrder

STATE_FILE_FORMAT = "stadyn-solver-states"

__all__ = ["SolverState", "SolverStates", "UnknownParameterError", "STATE_FILE_FORMAT",
           "TextStatesError", "MissingStateError"]


#: Names of protobuf text files, which NNabla 1.39's ``save_states`` refuses (solver.pyx:233)
_TEXT_STATE_SUFFIXES = (".nntxt", ".prototxt")


class TextStatesError(StadynError, AssertionError):
    """:meth:`SolverStates.save_states` to a ``.nntxt`` or ``.prototxt`` name: NNabla 1.39
    refuses it with an ``AssertionError`` (Stadyn wrote its safetensors container there).

    Example: ``solver.save_states("states.nntxt")`` raises it."""


class UnknownParameterError(ParameterError, RuntimeError):
    """``set_states`` named a parameter the solver does not hold: a ``RuntimeError`` as
    NNabla 1.39's (and a ``ValueError``, as Stadyn's parameter errors are)."""


class MissingStateError(StadynError, RuntimeError):
    """An update (or a save) of a parameter whose state lacks one the solver keeps: what
    :meth:`SolverStates.set_states` leaves when given another solver's states (NNabla 1.39
    takes them as the parameter's whole state, and its update then crashes the process with a
    segmentation fault; Stadyn raises this ``RuntimeError`` instead).

    Example: ``momentum.set_states(adam.get_states()); momentum.update()`` raises it (the
    state of each parameter holds Adam's ``mean`` and ``var``, no ``m``)."""


class SolverState:
    """One parameter's solver state, as NNabla's ``get_states()`` gives it: ``pstate`` maps
    each state's name to a :class:`~stadyn.Variable` over the solver's own tensor, ``t`` is
    the number of steps the parameter has taken.

    Example:
        >>> import stadyn.solvers as S
        >>> state = S.SolverState()
        >>> state.pstate, state.t
        ({}, 0)
    """

    def __init__(self, pstate: Mapping[str, Variable] | None = None, t: int = 0):
        self.pstate: dict[str, Variable] = dict(pstate or {})
        self.t = t

    def __repr__(self) -> str:
        return f"SolverState(pstate={sorted(self.pstate)}, t={self.t})"


class SolverStates:
    """The state methods of :class:`~stadyn.solvers.Solver` (a mixin: it uses the
    solver's ``name``, ``hyper``, ``_params``, ``_states``, ``_state_order`` (NNabla's order of
    ``_states``: its ``states_`` map's, a :class:`~stadyn.solvers._param_order.MapOrder`),
    ``_state_names``,
    ``_former_state_names``, ``_former_names``, ``_state_version`` and ``_checked_hyper``).

    ``_state_format`` numbers the meaning of a solver's state tensors (1: as Stadyn first
    wrote them); :meth:`state_dict` and the state files carry it (absent: 1), and
    :meth:`_upgraded_states` turns an older format's tensors into the current meaning."""

    _state_format = 1

    def _upgraded_states(self, states: dict[str, dict[str, Any]], written: int
                         ) -> dict[str, dict[str, Any]]:
        """``states`` (checked tensors per parameter) of format ``written`` in this solver's
        current format (a subclass that changed the meaning of its state overrides this)."""
        return states

    def get_states(self) -> "OrderedDict[str, SolverState]":
        """Per parameter, a :class:`SolverState` (NNabla's): ``pstate`` holds a Variable over
        each state tensor of the solver (NNabla's names: Adam's ``mean`` and ``var``, ...),
        of the parameter's class (an NNabla program's ``nn.Variable``), ``t`` the step count.
        The solver reads what is written into them, also when a write gives one new memory
        (``stadyn.graph.renew_value``: NNabla's ``.data.fill()``), and its updates write into
        them.  The parameters come in the order of NNabla 1.39's ``states_`` map, each
        ``pstate`` in its map's order (Adam's ``['var', 'mean']``), as NNabla lists them."""
        states = OrderedDict()
        for k, v in self._ordered_states().items():
            cls = type(self._params[k]) if k in self._params else Variable
            pstate = {}
            for n in self._held_state_names(v):
                var = pstate[n] = cls.from_tensor(v[n], need_grad=False)
                self._follow_state(var, k, n)
            states[k] = SolverState(pstate, v["t"])
        return states

    def _ordered_states(self) -> "OrderedDict[str, dict[str, Any]]":
        """``_states`` in NNabla's order (its ``states_`` map's: get_states, the state
        files)."""
        return OrderedDict((k, self._states[k]) for k in self._state_order.order())

    def _follow_state(self, var: Variable, name: str, key: str) -> None:
        """Hold the tensor ``var`` is given when its memory is renewed, while this solver's
        state ``name/key`` is ``var``'s (the same memory)."""
        ref = weakref.ref(self)

        def follow(old: torch.Tensor, new: torch.Tensor) -> None:
            solver = ref()
            state = solver._states.get(name) if solver is not None else None
            if state is not None and key in state and state[key].data_ptr() == old.data_ptr():
                state[key] = new
                solver._state_version += 1

        on_renew(data_of(var), (id(self), name, key), follow)

    @staticmethod
    def _held_state_names(state: Mapping[str, Any]) -> list[str]:
        """The names of the state tensors a parameter's state holds, in their order: the
        solver's own, or what :meth:`set_states` gave it (another solver's, as NNabla's)."""
        return [key for key in state if key != "t"]

    def _missing_state(self, name: str, key: str) -> MissingStateError:
        return MissingStateError(
            f"{self.name}: the state of '{name}' has no '{key}' (it holds "
            f"{sorted(self._held_state_names(self._states[name]))}: set_states or load_states gave "
            f"it another solver's states, which NNabla 1.39 takes as the whole state and "
            f"then crashes in its update, a segmentation fault); give it a {self.name}'s "
            f"states ({list(self._state_names)}) or set_parameters again")

    def set_states(self, states: Mapping[str, Any]) -> None:
        """Set per-parameter state: ``{name: SolverState}`` as :meth:`get_states` gives (or
        ``{name: {state: array, "t": steps}}``), in the given order, as NNabla 1.39 does: the
        solver then holds a ``pstate`` Variable's own array (float32, of the state's shape), so
        its updates show in that Variable and writes to it in the solver, as in every solver
        given the same states; other values (NumPy arrays, other dtypes) are copied, and ``t``
        is copied.  A name :meth:`set_parameters` has not set raises NNabla's
        ``RuntimeError`` (``Set weight parameter for NAME first.``) after the states before
        it are set; each state is checked (shape, finite values, a step count) before it is
        set.

        A :class:`SolverState` is the parameter's whole state, as in NNabla 1.39
        (``Solver::set_states`` replaces the parameter's ``SolverState``): another solver's
        (Adam's ``mean`` and ``var`` given to a Momentum) is taken as it is, :meth:`get_states`
        and :meth:`save_states` show its names, an update leaves the names the solver does not
        keep alone (a Momentum's ``m`` given to an Sgd), and one that needs a state it was not
        given raises :class:`MissingStateError` (NNabla's crashes the process).  A mapping
        sets the states it names among the solver's own (others are refused) and keeps the
        rest.

        Example:
            >>> import numpy as np, stadyn as sd, stadyn.solvers as S
            >>> w = sd.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
            >>> momentum, sgd = S.Momentum(0.1, 0.9), S.Sgd(0.1)
            >>> momentum.set_parameters({"w": w}); sgd.set_parameters({"w": w})
            >>> w.g = np.ones(2, np.float32); momentum.update()
            >>> sgd.set_states(momentum.get_states())
            >>> state = sgd.get_states()["w"]
            >>> sorted(state.pstate), state.t
            (['m'], 1)
        """
        if not isinstance(states, Mapping):
            raise StadynError(f"{self.name}.set_states: the states must be a mapping, not "
                              f"{type(states).__name__}")
        given = MapOrder()
        for name, state in states.items():
            shared, state_vars = {}, {}
            if isinstance(state, SolverState):
                for key in state.pstate:
                    given.insert(key)
                state_vars = {k: v for k, v in state.pstate.items() if isinstance(v, Variable)}
                shared = {k: data_of(v) for k, v in state_vars.items()}
                state = {**{k: shared.get(k, v) for k, v in state.pstate.items()},
                         "t": state.t}
            elif not isinstance(state, Mapping):
                raise StadynError(f"{self.name}.set_states: the state of '{name}' is a "
                                  f"{type(state).__name__}, not a SolverState")
            whole = bool(state_vars) or isinstance(states[name], SolverState)
            checked = self._checked_states({name: state}, foreign=whole)[name]
            self._set_state(name, checked, whole, shared, state_vars,
                            order=given if whole else None)

    def _set_state(self, name: str, checked: Mapping[str, Any], whole: bool,
                   shared: Mapping[str, torch.Tensor] | None = None,
                   state_vars: Mapping[str, Variable] | None = None,
                   order: MapOrder | None = None) -> None:
        """Set the checked state of parameter ``name``: ``whole``, it replaces the parameter's
        (NNabla's ``Solver::set_states``: names it does not give are dropped, names the solver
        does not keep are held), else the given states only; a tensor of ``shared`` (over the
        Variable of ``state_vars``) is held itself where its dtype and device fit.

        ``order`` holds the state names given so far in this ``set_states``: NNabla 1.39's
        ``set_states`` (``solver.pyx``) fills one ``pstate`` map with the names of every state
        it is given, in their order, and each parameter's state is a copy of it, so the
        parameter's names are listed in that map's order (RMSpropGraves' ``['g', 'd', 'n']``
        given back becomes ``['n', 'd', 'g']``)."""
        shared, state_vars = shared or {}, state_vars or {}
        mine = self._states[name]
        if whole:
            for key in [k for k in mine if k != "t" and k not in checked]:
                del mine[key]
                self._state_version += 1
            mine["t"] = checked.get("t", 0)
        param = data_of(self._params[name])
        for key, value in checked.items():
            tensor = shared.get(key)
            like = mine.get(key) if key != "t" else None
            dtype, device = (like.dtype, like.device) if like is not None else \
                (torch.float32, param.device)
            if tensor is not None and tensor.dtype == dtype and \
                    tensor.device == device and not tensor.requires_grad:
                mine[key] = tensor               # NNabla's: the array itself
                self._state_version += 1
                self._follow_state(state_vars[key], name, key)
            elif key == "t":
                mine["t"] = value
            elif key not in mine:
                mine[key] = value.to(device=param.device, dtype=torch.float32, copy=True)
                self._state_version += 1
            else:
                mine[key].copy_(value)
        if order is not None:
            listed = [k for k in order.order() if k in mine] + ["t"]
            held = {k: mine.pop(k) for k in listed}
            mine.update(held)

    @property
    def state_version(self) -> int:
        """Counts the times :meth:`set_states` gave a state tensor of its own to the solver
        (a compiled step built over the former tensors rebuilds when it changes)."""
        return self._state_version

    def _checked_states(self, states: Mapping[str, Mapping[str, Any]], foreign: bool = False
                        ) -> dict[str, dict[str, Any]]:
        """``states`` checked against the parameters (known names and states, shapes, finite
        values, step counts), as tensors; nothing is changed.  With ``foreign``, a state
        name this solver does not keep is taken too (another solver's: :meth:`set_states`),
        its values checked but not its shape."""
        if not isinstance(states, Mapping):
            raise StadynError(f"{self.name}: the states must be a mapping, not "
                              f"{type(states).__name__}")
        checked: dict[str, dict[str, Any]] = {}
        for name, state in states.items():
            if name not in self._params:
                raise UnknownParameterError(
                    f"{self.name}: value error in set_states: Set weight parameter for {name} "
                    "first. (call set_parameters with it before setting its state)")
            mine = self._states[name]
            out: dict[str, Any] = {}
            for key, value in state.items():
                where = f"{self.name} state '{name}/{key}'"
                if key == "t":
                    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
                            or value < 0:
                        raise StadynError(f"{where}: a step count must be an integer >= 0, got "
                                          f"{value!r}")
                    out["t"] = int(value)
                    continue
                if key not in mine and not foreign:
                    raise ParameterError(f"{where}: {self.name} keeps no state '{key}' (it keeps "
                                         f"{list(self._state_names)})")
                tensor = torch.as_tensor(value)
                if key in mine and tuple(tensor.shape) != tuple(mine[key].shape):
                    raise ParameterError(f"{where} has shape {tuple(tensor.shape)}, expected "
                                         f"{tuple(mine[key].shape)}")
                if not tensor.dtype.is_floating_point:
                    raise StadynError(f"{where} has dtype {tensor.dtype}, not a float type")
                if not bool(torch.isfinite(tensor).all()):
                    raise StadynError(f"{where} holds a NaN or an infinity")
                out[key] = tensor
            checked[name] = out
        return checked

    def _assign_states(self, checked: Mapping[str, Mapping[str, Any]]) -> None:
        for name, state in checked.items():
            mine = self._states[name]
            for key, value in state.items():
                if key == "t":
                    mine["t"] = value
                else:
                    mine[key].copy_(value)

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: hyperparameters, step counts and state tensors."""
        return {"solver": self.name, "hyper": dict(self.hyper),
                "state_format": self._state_format,
                "t": {k: s["t"] for k, s in self._states.items()},
                "tensors": {f"{k}/{n}": s[n] for k, s in self._states.items()
                            for n in self._held_state_names(s)}}

    def check_state_dict(self, state: Mapping[str, Any]) -> None:
        """Raise the error :meth:`load_state_dict` would raise for ``state``; change nothing.
        (The Trainer checks every part of a checkpoint before it restores any.)"""
        self._checked_state_dict(state)

    def _checked_state_dict(self, state: Mapping[str, Any]
                            ) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
        if not isinstance(state, Mapping):
            raise StadynError(f"{self.name}: a solver state must be a mapping, not "
                              f"{type(state).__name__}")
        if state.get("solver") not in (None, self.name, *self._former_names):
            raise StadynError(f"cannot load {state.get('solver')} state into {self.name}")
        written = state.get("state_format", 1)          # (absent: written before there was one)
        if isinstance(written, bool) or not isinstance(written, int) or \
                not 1 <= written <= self._state_format:
            raise StadynError(f"{self.name}: the state's format {written!r} is not one this "
                              f"Stadyn reads (1 to {self._state_format}: a newer Stadyn's?)")
        hyper = state.get("hyper", {})
        steps = state.get("t", {})
        tensors = state.get("tensors", {})
        for part, value in (("hyper", hyper), ("t", steps), ("tensors", tensors)):
            if not isinstance(value, Mapping):
                raise StadynError(f"{self.name}: the state's '{part}' must be a mapping, not "
                                  f"{type(value).__name__}")
        unknown = sorted(set(hyper) - set(self.hyper))
        if unknown:
            raise StadynError(f"{self.name}: the state has hyperparameters {unknown} this "
                              f"solver does not take (it takes {sorted(self.hyper)})")
        checked_hyper = {key: self._checked_hyper(key, value) for key, value in hyper.items()}
        merged: dict[str, dict[str, Any]] = {}
        for key, tensor in tensors.items():
            name, _, sub = str(key).rpartition("/")
            if sub not in self._state_names:
                sub = self._former_state_names.get(sub, sub)
            merged.setdefault(name, {})[sub] = tensor
        for name, t in steps.items():
            merged.setdefault(name, {})["t"] = t
        return checked_hyper, self._upgraded_states(self._checked_states(merged), written)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`; the hyperparameters pass the constructor's checks and
        the state fits the parameters, or nothing is changed."""
        hyper, states = self._checked_state_dict(state)
        self.hyper.update(hyper)
        self._assign_states(states)

    def save_states(self, path: str | os.PathLike) -> None:
        """Write the state to a safetensors file (Stadyn's container,
        :mod:`stadyn._tensorfile`: written atomically); a path ending in ``.h5`` or
        ``.protobuf`` gets NNabla's HDF5 layout or its protobuf ``Optimizer`` message instead
        (per parameter its states and step count ``t``: what NNabla 1.39's ``save_states``
        writes and its ``load_states`` reads; hyperparameters are not in them)."""
        if os.fspath(path).endswith(".h5"):
            return write_h5_states(path, self._ordered_states())
        if os.fspath(path).endswith(".protobuf"):
            return write_protobuf_states(path, self._ordered_states())
        if os.fspath(path).lower().endswith(_TEXT_STATE_SUFFIXES):
            raise TextStatesError(
                f"{os.fspath(path)}: save_states writes .h5, .protobuf or Stadyn's safetensors "
                "container, not the protobuf text form this name asks for (NNabla 1.39's "
                "save_states: 'Only supported hdf5 or protobuf.', an AssertionError)")
        write_tensor_file(path, **self._state_file())

    def state_file_bytes(self) -> bytes:
        """What :meth:`save_states` writes, as bytes (a model file's ``solver.safetensors``)."""
        return tensor_file_bytes(**self._state_file())

    def _state_file(self) -> dict[str, Any]:
        state = self.state_dict()
        return {"tensors": state["tensors"], "format": STATE_FILE_FORMAT,
                "text": {"solver": state["solver"]},
                "fields": {"hyper": state["hyper"], "t": state["t"],
                           "state_format": state["state_format"]}}

    def load_states(self, path: str | os.PathLike, *, name: str | None = None) -> None:
        """Read a state file written by :meth:`save_states` (``.h5`` and ``.protobuf``:
        NNabla's too, whose states replace each parameter's as :meth:`set_states` of a
        :class:`SolverState`, another solver's included; a ``.protobuf`` that Stadyn wrote as
        its safetensors container before is read as that); everything in it is checked (the
        constructor's rules for the hyperparameters, the parameters' shapes for the state)
        before anything is set.  Errors are :class:`~stadyn.ModelFileError` naming the file
        (``name``, when given, instead of ``path``)."""
        nnabla_file = os.fspath(path).endswith(".h5")
        if os.fspath(path).endswith(".protobuf"):
            with open(path, "rb") as f:
                nnabla_file = is_nnabla_protobuf_states(f.read(9), os.fstat(f.fileno()).st_size)
        if nnabla_file:
            states = read_h5_states(path, name=name) if os.fspath(path).endswith(".h5") else \
                read_protobuf_states(path, name=name)
            try:
                checked = self._checked_states(states, foreign=True)
            except StadynError as exc:
                raise ModelFileError(f"{name or os.fspath(path)}: {exc}") from exc
            given = MapOrder()
            for pname, state in checked.items():    # NNabla's load_states: set_states of
                for key in state:                   # the file's SolverStates
                    if key != "t":
                        given.insert(key)
                self._set_state(pname, state, whole=True, order=given)
            return
        f = read_tensor_file(path, format=STATE_FILE_FORMAT, what="solver state file", name=name)
        try:
            hyper, steps = f.field("hyper", dict), f.field("t", dict)
            written = f.field("state_format", int, optional=True)
        except StadynError as exc:
            raise ModelFileError(f"{f.where}: damaged solver state metadata ({exc})") from exc
        try:
            self.load_state_dict({"solver": f.meta.get("solver"), "hyper": hyper, "t": steps,
                                  "tensors": f.tensors, "state_format": written or 1})
        except StadynError as exc:
            raise ModelFileError(f"{f.where}: {exc}") from exc

"""A decoded NNabla or CNTK network (:mod:`._legacy_ir`) rebuilt as a Stadyn static graph of
catalog ops.

Which function types become which catalog ops is registered against the ops (the op rules'
``nnp_import`` and ``cntk_import`` columns, gathered per format in :mod:`._legacy_tables`);
this module only walks the network: it makes the leaves (the file's parameters and constants
as parameters of a registry under the file's names, data inputs as input Variables with the
batch axis first), expands CNTK blocks (layers) into their bodies, calls each function's rule
in static mode and checks what it returns.  A network holding function types no rule maps is
refused before anything is built, with one :class:`UnsupportedModelError` naming the file, each
unmapped type and its functions.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from typing import Any, Callable, Mapping

import numpy as np
import torch

from .. import functions as F
from .. import sequence as S
from .._errors import ModelFileError, StadynError
from ..graph import (FREE_DIMENSION, Variable, auto_forward, get_current_context,
                     mark_free_dimensions, name_scope)
from ..parametric import ParameterRegistry, parameter_registry
from ._cntk_format import cntk_output_name
from ._cntk_v1_attributes import shown_attributes
from ._cntk_v1_gathers import fold_last_steps_v2, fold_step_gathers
from ._legacy_api import LegacyNode, MappingUnsupported
from ._legacy_ir import LegacyFunction, LegacyModel, LegacyNetwork, LegacyOrigin, LegacyVariable
from ._legacy_import_flat import FlatBuilding, shown_argument_order
from ._legacy_loops import needs_sequences
from ._network import Network
from ._onnx_import import UnsupportedModelError
from ._legacy_tables import FORMATS, legacy_import_table

__all__ = ["build_network", "output_shapes", "ModelRefusedAtRunError"]


class ModelRefusedAtRunError(UnsupportedModelError, RuntimeError):
    """A function of the file its framework builds but refuses when the graph runs (CNTK 2.7's
    RuntimeError, in its words), or a file that computes nothing (CNTK 2.7's ValueError when
    it runs)."""


_MAX_INPUT_BYTES = 1 << 34     # the inputs a file declares, at the batch size asked for


# CNTK functions whose rules build several ops reading the inputs in another order than the
# file's, which is the order CNTK shows (Times is shown otherwise: (x, W), the compat's way)
_SHOWN_IN_FILE_ORDER = frozenset(("Logistic", "EditDistanceError", "LambdaRank", "ROIPooling",
                                  "Clip", "Sequence::Slice", "CosDistanceWithNegativeSamples"))
# CNTK functions CNTK 2.7 shows with their two inputs swapped, as it shows Times: Gather is
# stored (indices, reference), shown (reference, indices)
_SHOWN_SWAPPED = frozenset(("Gather",))
# v1 criteria CNTK 2.7 shows as (prediction, labels, topN) where the file holds (labels,
# prediction, topN): the top-N error's N a constant input its rule reads as a number
_V1_TOP_N = frozenset(("ClassificationError", "ErrorPrediction"))


class _Node(LegacyNode):
    def __init__(self, builder: "_Builder", fn: LegacyFunction, inputs: list[Variable]):
        self._b = builder
        self._vars = inputs
        self.type = fn.type
        self.name = fn.name
        self.attrs = dict(fn.attrs)
        self.n_outputs = len(fn.outputs)
        self.draws = builder.draws
        shape = self.attrs.get("shape")
        if builder.fmt == "nnp" and isinstance(shape, (tuple, list)) and shape and shape[0] == -1:
            # NNabla's batch placeholder: its loaders give every function whose shape field
            # starts with -1 (Reshape, Broadcast, Constant, Rand...) the batch size the network
            # is built with (ProtoFunction.graph_call, nnabla/core/graph_def.py)
            self.attrs["shape"] = type(shape)([builder.batch_size, *shape[1:]])

    @property
    def n_inputs(self) -> int:
        return len(self._vars)

    def var(self, i):
        return self._vars[i]

    def shape(self, i):
        return tuple(self._vars[i].shape)

    def batched(self, i):
        return id(self._vars[i]) in self._b.batched

    def lead(self, i):
        if self._vars[i].sequence_lengths is not None:
            return 2
        return 1 if self.batched(i) else 0

    def producer(self, i):
        origin = self._b.origin_of.get(id(self._vars[i]))
        if origin is None or origin.kind not in ("input", "function", "block"):
            return "", ""
        return origin.uid, "InputValue" if origin.kind == "input" else origin.op_name

    def refuse_when_run(self, value, reason, error=RuntimeError, when=None):
        if not self._b.defer_refusals:
            self.refused_at_run(reason)
        self._b.refused.append((value, error, f"{reason} (function {self.name!r} of "
                                              f"{self._b.where})", *([when] if when else [])))
        return value

    def const(self, i):
        value = self._b.values.get(id(self._vars[i]))
        if value is None:
            self.unsupported(f"input {i} must be a parameter or constant of the file")
        return value


def _reads(fn: LegacyFunction) -> list[str]:
    """The names ``fn`` reads from outside: its inputs, and for a block what its body reads
    that the body does not compute."""
    if fn.body is None:
        return list(fn.inputs)
    inner = {o for f in fn.body.all_functions() for o in f.outputs}
    outside = [n for f in fn.body.functions for n in _reads(f) if n not in inner]
    return list(fn.inputs) + outside


def _collect_variables(net: LegacyNetwork, into: dict) -> None:
    for n in [net, *(f.body for f in net.all_functions() if f.body is not None)]:
        into.update((k, v) for k, v in n.variables.items() if k not in into)


def _is_combine(fn: LegacyFunction) -> bool:
    """CNTK's ``Combine`` (no computation, its outputs are its inputs) and CNTK v1's
    ``DynamicAxis`` node (an axis, no value)."""
    if fn.type == "DynamicAxis" and not fn.inputs:
        return True
    return fn.type == "Combine" and len(fn.inputs) == len(fn.outputs) and fn.body is None


def _new_axis(fn: LegacyFunction) -> str:
    """The name of the sequence axis a CNTK function makes (``Where``'s
    ``whereNodeDynamicAxis_conditionVar_<uid>``, ``ToSequenceOp``'s ``toSequence_<uid>``, in
    their ``newDynamicAxes``; a ``Sequence::Gather`` block's from the ``Where`` in its body;
    a v1 file's ``Where``, and the ``GatherPacked`` its reader folds it into, from the name the
    node stores, ``words_times_1_minus_2`` -- CNTK 2.7's ``LoadLegacyModel`` gives it the
    axes ``DynamicAxesFromInternalDynamicAxisName`` of that name, BackCompat.cpp:191-197,
    Utils.cpp:508-518: the default sequence axis for a name starting ``*``, none for one
    starting ``__noSequenceAxis``); '' for none."""
    v1_name = fn.attrs.get("dynamic_axis_name")
    if isinstance(v1_name, str) and not v1_name.startswith(("*", "__noSequenceAxis")):
        return v1_name
    for f in [fn, *(fn.attrs.get("body") or ())]:
        for axis in f.attrs.get("newDynamicAxes") or ():
            name = getattr(axis, "name", "")
            if getattr(axis, "ordered", False) and name != "defaultDynamicAxis":
                return name
    return ""


def _leaf(value: np.ndarray, need_grad: bool) -> Variable:
    t = torch.as_tensor(np.array(value, order="C")).to(get_current_context().device)
    return Variable.from_tensor(t, need_grad=need_grad)


class _Builder(FlatBuilding):
    def __init__(self, model: LegacyModel, registry: ParameterRegistry, batch_size: int,
                 draws: str = "torch"):
        if draws not in ("torch", "nnabla"):
            raise ValueError(f"draws={draws!r}: 'torch' or 'nnabla'")
        self.draws = draws
        self.model = model
        self.fmt = model.format
        self.framework = FORMATS[self.fmt][1]
        self.table = legacy_import_table(self.fmt)
        self.registry = registry
        self.batch_size = batch_size
        self.env: dict[str, Variable] = {}
        self.batched: set[int] = set()
        self.values: dict[int, np.ndarray] = {}
        self.where = model.path
        self.deferred: dict[str, LegacyFunction] = {}
        # (value, error, reason[, when]) of the functions the framework refuses when they run
        self.refused: list[tuple] = []
        self.defer_refusals = False
        self.variables: dict[str, LegacyVariable] = {}      # those of the network being built
        self.origins: list[tuple[Variable, LegacyOrigin]] = []
        self.reduced: list[Variable] = []     # (Network.reduced)
        self.origin_of: dict[int, LegacyOrigin] = {}
        self.recording = True       # off while a loop's step is built (not the file's values)
        self.loop_values: set[int] = set()      # ids of the values loops give out

    def split_name(self, key: str, name: str) -> tuple[str, str]:
        """(uid, name) of a file's variable or parameter ``key`` whose shown name is ``name``."""
        return key, name

    def record(self, var: Variable, origin: LegacyOrigin) -> None:
        if not self.recording:
            return
        self.origins.append((var, origin))
        self.origin_of[id(var)] = origin

    def own(self, var: Variable, claimed: set[int]) -> Variable:
        """``var``, or an identity of it where ``var`` already stands for another of the file's
        values (a leaf, an argument, another function's or block's output): each named node of
        a CNTK file keeps a Variable of its own, as ``find_by_name`` needs."""
        if var.parent is None or id(var) in claimed or id(var) in self.origin_of:
            out = F.identity(var)
            if id(var) in self.batched:     # (a block's output: batched as the value it is)
                self.batched.add(id(out))
            return out
        return var

    def fail(self, message: str, unsupported: bool = False, at_run: bool = False
             ) -> ModelFileError:
        cls = ModelRefusedAtRunError if at_run else \
            UnsupportedModelError if unsupported else ModelFileError
        return cls(f"{self.where}: {message}")

    # -- leaves ---------------------------------------------------------------------------------
    def parameter(self, name: str) -> Variable:
        p = self.model.parameters[name]
        key = self.registry_name(name)
        existing = self.registry.get(key)
        if isinstance(existing, Variable) and tuple(existing.shape) == tuple(p.value.shape):
            existing.d = p.value
            var = existing
        else:
            var = _leaf(p.value, need_grad=bool(p.need_grad))
            self.registry.set(key, var)
        self.values[id(var)] = p.value
        uid, shown = self.split_name(name, p.name)
        self.record(var, LegacyOrigin(p.kind, uid, shown))
        return var

    def registry_name(self, name: str) -> str:
        return name

    def data_input(self, name: str, lv: LegacyVariable) -> Variable:
        shape = list(lv.shape or ())
        batched, free = True, []
        if self.fmt == "cntk-v1":      # every v1 input has a dynamic axis: the batch
            if any(d < 0 for d in shape):
                raise self.fail(f"input {name!r} has a free or inferred dimension: "
                                f"{tuple(shape)}", unsupported=True)
            # CNTK 2.7's dynamic axes of a v1 input, by its axis name (Utils.cpp:508-518,
            # DynamicAxesFromInternalDynamicAxisName): "*..." its default sequence axis and
            # the batch axis (CNTK 2's v1 writer), "__noSequenceAxis..." the batch axis alone,
            # any other name a sequence axis of that name -- cntk.exe's default "" too, which
            # files before version 8 hold no name for (InputAndParamNodes.h:336-344)
            axis = lv.meta.get("dynamic_axis") or ""
            if not axis.startswith("__noSequenceAxis"):
                var = S.input_variable(shape, dtype=lv.dtype or "float32")
                self.batched.add(id(var))
                uid, shown = self.split_name(name, lv.meta.get("name") or "")
                self.record(var, LegacyOrigin("input", uid, shown, sequence_axis=None
                                              if axis.startswith("*") else axis))
                return var
            shape = [self.batch_size] + shape
        elif self.fmt == "cntk-v2":
            axes = list(lv.meta.get("dynamic_axes") or [])
            label = f"input {lv.meta.get('name') or name!r} ({name})"
            # the batch axis and a sequence axis: CNTK's default one or one of a program's
            # own (C.Axis('inputAxis'), ordered), which the origin records
            sequence = len(axes) == 2 and axes[0] == "defaultBatchAxis" and \
                axes[1] in lv.meta.get("ordered_axes", ["defaultDynamicAxis"])
            if axes and axes != ["defaultBatchAxis"] and not sequence:
                raise self.fail(f"{label} has the dynamic axes {axes}: only the batch axis and "
                                "one ordered sequence axis after it are imported",
                                unsupported=True)
            free = [k for k, d in enumerate(shape) if d == FREE_DIMENSION]
            if any(d < 0 for d in shape) and (sequence or not axes or any(
                    d < 0 and d != FREE_DIMENSION for d in shape)):
                raise self.fail(f"{label} has a free or inferred dimension: {tuple(shape)}"
                                + (" (a free dimension is imported on an input with the "
                                   "batch axis alone)" if free else ""), unsupported=True)
            shape = [1 if d == FREE_DIMENSION else d for d in shape]   # (until fed)
            if sequence:
                var = S.input_variable(shape, dtype=lv.dtype or "float32")
                var.need_grad = bool(lv.meta.get("needs_gradient"))
                self.batched.add(id(var))
                uid, shown = self.split_name(name, lv.meta.get("name") or "")
                named = axes[1] if axes[1] != "defaultDynamicAxis" else None
                self.record(var, LegacyOrigin("input", uid, shown, sequence_axis=named))
                return var
            batched = bool(axes)
            if batched:
                shape = [self.batch_size] + shape
        else:
            shape = [self.batch_size if d == -1 else d for d in shape]
            if any(d < 0 for d in shape):
                raise self.fail(f"input {name!r} has the shape {tuple(lv.shape)}")
        size = int(np.prod(shape)) * np.dtype(lv.dtype or "float32").itemsize
        if size > _MAX_INPUT_BYTES:
            raise self.fail(f"input {name!r} declares {tuple(shape)}: {size} bytes")
        # (an input CNTK made with needs_gradient=True: its gradient can be asked for)
        var = _leaf(np.zeros(shape, dtype=lv.dtype or "float32"),
                    need_grad=bool(lv.meta.get("needs_gradient")))
        if batched:
            self.batched.add(id(var))
        if self.fmt == "cntk-v2" and free:      # (CNTK's FreeDimension: each minibatch's)
            mark_free_dimensions(var, [k + 1 for k in free])
        uid, shown = self.split_name(name, lv.meta.get("name") or "")
        self.record(var, LegacyOrigin("input", uid, shown))
        return var

    def leaf(self, name: str, network: LegacyNetwork) -> Variable:
        if name in self.model.parameters:
            var = self.parameter(name)
        else:
            lv = network.variables.get(name) or self.variables.get(name)
            if lv is None or lv.kind in ("output", "placeholder"):
                raise self.fail(f"network {network.name!r}: {name!r} is used before it is "
                                "computed")
            var = self.data_input(name, lv)
        self.env[name] = var
        return var

    def value(self, name: str, network: LegacyNetwork) -> Variable:
        """The Variable of ``name``: computed, a leaf, or the output of a function deferred
        until a block bound the placeholder it reads."""
        if name in self.env:
            return self.env[name]
        deferred = self.deferred.pop(name, None)
        if deferred is not None:
            self.run(deferred, network)
            return self.env[name]
        return self.leaf(name, network)

    # -- the graph ------------------------------------------------------------------------------
    def needed(self, network: LegacyNetwork, outputs: list[str]) -> list[LegacyFunction]:
        """The functions (a block as one) the ``outputs`` depend on, in the network's order."""
        producer = {o: k for k, f in enumerate(network.functions) for o in f.outputs
                    if not _is_combine(f)}
        producer.update({o: producer[i] for f in network.functions if _is_combine(f)
                         for o, i in zip(f.outputs, f.inputs) if i in producer})
        wanted, todo = set(), [producer[o] for o in outputs if o in producer]
        while todo:
            k = todo.pop()
            if k in wanted:
                continue
            wanted.add(k)
            todo += [producer[i] for i in _reads(network.functions[k]) if i in producer]
        return [f for k, f in enumerate(network.functions) if k in wanted]

    def check_supported(self, network: LegacyNetwork, functions: list[LegacyFunction]) -> None:
        missing: "OrderedDict[str, list[str]]" = OrderedDict()
        for f in LegacyNetwork(network.name, functions).all_functions():
            if f.body is None and f.type not in self.table and not _is_combine(f):
                missing.setdefault(f.type, []).append(f.name)
        if missing:
            listed = "; ".join(
                f"{t} ({'functions' if len(ns) > 1 else 'function'} "
                f"{', '.join(repr(n) for n in ns[:3])}{' ...' if len(ns) > 3 else ''})"
                for t, ns in missing.items())
            raise self.fail(f"network {network.name!r}: {self.framework} functions no Stadyn op "
                            f"maps: {listed}", unsupported=True)

    def functions(self, functions: list[LegacyFunction], network: LegacyNetwork) -> None:
        for fn in functions:
            if fn.outputs and all(o in self.env for o in fn.outputs):
                continue                # computed early for a block that needed it
            if any(n in self.deferred or (n not in self.env and self.variables.get(n) is not None
                                          and self.variables[n].kind == "placeholder")
                   for n in fn.inputs):
                for o in fn.outputs:    # reads a block's argument: wait for the block (a
                    if o not in fn.inputs:  # Combine's outputs are its inputs': theirs stand)
                        self.deferred[o] = fn
                continue
            self.run(fn, network)

    def run(self, fn: LegacyFunction, network: LegacyNetwork) -> None:
        inputs = [self.value(n, network) for n in fn.inputs]
        if fn.body is not None:
            self.block(fn, network)
        elif _is_combine(fn):
            self.env.update(zip(fn.outputs, inputs))    # DynamicAxis: nothing
        else:
            self.call(fn, inputs)

    def block(self, fn: LegacyFunction, network: LegacyNetwork) -> None:
        arguments = []
        for placeholder, outer in shown_argument_order(fn):
            self.env[placeholder] = self.value(outer, network)
            arguments.append(self.env[placeholder])
        self.functions(fn.body.functions, fn.body)
        root = [f for f in fn.body.all_functions() if f.name == fn.meta.get("root")]
        if not root or len(root[0].outputs) < len(fn.outputs):
            raise self.fail(f"block {fn.name!r} ({fn.type}): its root function "
                            f"{fn.meta.get('root')!r} is not in its body")
        claimed = {id(a) for a in arguments}
        for k, (outer, inner) in enumerate(zip(fn.outputs, root[0].outputs)):
            var = self.value(inner, fn.body)
            if self.origin_of.get(id(var)) is None or \
                    self.origin_of[id(var)].kind != "function" or id(var) in claimed:
                var = self.own(var, claimed)    # a block of a block, or one passing a value on
            self.env[outer] = var
            uid, shown = self.split_name(fn.name, fn.meta.get("name") or "")
            self.record(var, LegacyOrigin(
                "block", uid, shown, fn.type, k, tuple(arguments),
                attributes=tuple(sorted((fn.attrs or {}).items()))))

    def constants_as_operands(self, inputs: list[Variable]) -> list[Variable]:
        """``inputs`` with a constant of another float type than the function's other operands
        cast to theirs: CNTK 2.7 keeps a float32 constant of a float64 graph float32 in its
        file (``x + C.constant(2.0)`` of a float64 ``x``) and computes with it as a float64."""
        def constant(v):
            origin = self.origin_of.get(id(v))
            return v.parent is None and origin is not None and origin.kind == "constant"
        floats = {str(v.dtype) for v in inputs if not constant(v) and
                  str(v.dtype) in ("float16", "float32", "float64")}
        if len(floats) != 1:
            return inputs
        dtype = floats.pop()
        return [F.cast(v, dtype) if constant(v) and str(v.dtype) != dtype and
                str(v.dtype) in ("float16", "float32", "float64") else v for v in inputs]

    def call(self, fn: LegacyFunction, inputs: list[Variable],
             file_inputs: "list[Variable] | None" = None) -> None:
        """Build ``fn`` over ``inputs``; ``file_inputs``: all the inputs the file gives a block
        read as one function (its constants too), where they differ from ``inputs``."""
        label = f"function {fn.name!r} ({fn.type})"
        op_name, build = self.table[fn.type]
        if self.fmt == "cntk-v2":
            inputs = self.constants_as_operands(inputs)
        node = _Node(self, fn, inputs)
        try:
            with name_scope(fn.name, absolute=True):
                result = build(node)
        except MappingUnsupported as exc:
            raise self.fail(f"{label}: cannot be mapped: {exc}", unsupported=True,
                            at_run=isinstance(exc, RuntimeError)) from None
        except (StadynError, ValueError, TypeError, IndexError, KeyError, RuntimeError) as exc:
            raise self.fail(f"{label}: {type(exc).__name__}: {exc}") from exc
        results = [result] if isinstance(result, Variable) else list(result)
        if len(results) != len(fn.outputs):
            raise self.fail(f"{label}: the mapping to {op_name} gave {len(results)} outputs, "
                            f"the function has {len(fn.outputs)}")
        batched = any(id(v) in self.batched for v in inputs) and not node.outputs_unbatched
        uid, shown = self.split_name(fn.name, fn.meta.get("name") or "")
        axis = _new_axis(fn)
        for k, (name, var) in enumerate(zip(fn.outputs, results)):
            if shown and self.fmt != "nnp":
                var = self.own(var, {id(v) for v in inputs})
            self.env[name] = var
            if batched:
                self.batched.add(id(var))
            elif node.outputs_unbatched:
                self.reduced.append(var)
            name = cntk_output_name(fn.type, shown, k) if self.fmt == "cntk-v2" else shown
            # (a criterion built of ops reading its inputs reordered: CNTK shows the file's order)
            operands = () if self.fmt != "cntk-v2" else tuple(file_inputs or inputs) \
                if fn.type in _SHOWN_IN_FILE_ORDER else tuple(inputs[::-1]) \
                if fn.type in _SHOWN_SWAPPED and len(inputs) == 2 else ()
            if self.fmt == "cntk-v1" and fn.type in _V1_TOP_N and len(inputs) == 3:
                operands = (inputs[1], inputs[0], inputs[2])
            self.record(var, LegacyOrigin("function", uid, name, fn.type, k,
                                          sequence_axis=(axis or None)
                                          if var.sequence_lengths is not None else None,
                                          operands=operands,
                                          attributes=shown_attributes(self.fmt, fn)))

    def build(self, network: LegacyNetwork, inputs: Mapping[str, str],
              outputs: Mapping[str, str], info: dict[str, Any]) -> Network:
        self.where = f"{self.model.path}"
        if self.fmt == "cntk-v1":       # (a gather of steps: three v1 nodes, one function)
            network = replace(network, functions=fold_step_gathers(network.functions))
        elif self.fmt == "cntk-v2":     # (one step of each sequence, a cntk.exe file's again)
            network = replace(network, functions=fold_last_steps_v2(network.functions))
        _collect_variables(network, self.variables)
        if self.fmt in ("cntk-v2", "cntk-v1") and needs_sequences(network, self.variables):
            return self.build_flat(network, inputs, outputs, info)
        functions = self.needed(network, list(outputs.values()))
        self.check_supported(network, functions)
        known = set(network.variables) | set(self.model.parameters)
        for key, name in list(inputs.items()) + list(outputs.items()):
            if name not in known and not any(name in f.outputs for f in network.functions):
                raise self.fail(f"network {network.name!r} has no variable {name!r}")
        ins = OrderedDict((key, self.value(name, network)) for key, name in inputs.items())
        self.functions(functions, network)
        outs = OrderedDict((key, self.value(name, network)) for key, name in outputs.items())
        self.batched_outputs = [k for k, v in outs.items() if id(v) in self.batched]
        built = Network(ins, outs, self.registry, source=self.model.path, info=info)
        built.origins = self.origins
        built.reduced = self.reduced
        return built


def output_shapes(model: LegacyModel, network: LegacyNetwork, inputs: Mapping[str, str],
                  outputs: Mapping[str, str]) -> "OrderedDict[str, tuple[tuple, str]]":
    """The outputs' shapes and dtypes (``'batch'`` for the batch axis, ``'sequence'`` for a
    sequence's) as :func:`build_network` builds them: CNTK files do not record them."""
    builder = _Builder(model, ParameterRegistry(), 1)
    with auto_forward(False), parameter_registry(builder.registry):
        net = builder.build(network, inputs, outputs, {})
    def shown(k: str, v: Variable) -> tuple:
        if v.sequence_lengths is not None:
            return ("batch", "sequence") + tuple(v.shape[2:])
        return ("batch",) + tuple(v.shape[1:]) if k in builder.batched_outputs else tuple(v.shape)
    return OrderedDict((k, (shown(k, v), np.dtype(v.dtype).name)) for k, v in net.outputs.items())


def build_network(model: LegacyModel, network: LegacyNetwork, inputs: Mapping[str, str],
                  outputs: Mapping[str, str], *, registry: ParameterRegistry | None = None,
                  batch_size: int = 1, info: dict[str, Any] | None = None,
                  parameter_names: Mapping[str, str] | None = None,
                  split_name: Callable[[str, str], tuple[str, str]] | None = None,
                  defer_refusals: bool = False, draws: str = "torch") -> Network:
    """Build ``network`` of ``model`` as a :class:`Network` whose inputs and outputs are the
    network's variables ``inputs``/``outputs`` (key -> variable name), the batch axis sized
    ``batch_size``; parameters go to ``registry`` (a new one by default) named by
    ``parameter_names`` (file name -> registry name; the file's names by default).  The
    network's ``origins`` say which of the file's values each Variable is (``split_name(key,
    shown name) -> (uid, name)`` for a leaf; the key and the name the file shows by default).
    ``draws``: whose numbers the random functions draw (:attr:`LegacyNode.draws`).
    ``defer_refusals``: a function the framework loads but refuses when it runs
    (:meth:`LegacyNode.refuse_when_run`) is built and listed in the network's
    ``refused_at_run`` for the caller to refuse when it runs; by default it is refused here.

    Example:
        >>> import os, tempfile, numpy as np
        >>> from stadyn.serialize import read_legacy_model
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" batch_size: 1 '
        ...                 'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 3 } } '
        ...                 'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 3 } } '
        ...                 'function { name: "f" type: "ReLU" input: "x" output: "y" } }')
        >>> m = read_legacy_model(path)
        >>> net = build_network(m, m.networks["n"], {"x": "x"}, {"y": "y"}, batch_size=2)
        >>> net(x=np.array([[1, -2, 3], [-4, 5, -6]]))["y"]
        array([[1., 0., 3.],
               [0., 5., 0.]], dtype=float32)
    """
    registry = registry if registry is not None else ParameterRegistry()
    builder = _Builder(model, registry, int(batch_size), draws)
    builder.defer_refusals = defer_refusals
    if parameter_names:
        names = dict(parameter_names)
        builder.registry_name = lambda name: names.get(name, name)  # type: ignore[method-assign]
    if split_name is not None:
        builder.split_name = split_name  # type: ignore[method-assign]
    with auto_forward(False), parameter_registry(registry):
        built = builder.build(network, inputs, outputs, dict(info or {}))
    # (both the plain and the sequence path's networks: build_flat builds its own)
    built.refused_at_run = list(builder.refused)
    return built

"""The optimizers of NNabla 1.39's ``load`` (``info.optimizers[name]``): each an object holding
the file's fields (``proto``), a solver of the file's type built with its hyper-parameters through
``nnabla.solvers`` (:mod:`stadyn.compat.nnabla.solvers`), its learning-rate ``scheduler`` and, once
:func:`link_optimizer` has tied it to its network, the network's parameters set on the solver and
the states saved with it restored (``restore_optimizer_state``), as NNabla's ``load`` does.

NNabla's proto3 fields read as zero where the file leaves them out; so do these.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from ....serialize import nnabla_scheduler
from .. import solvers as S
from ..functions import sink
from .communicator_util import current_communicator
from ._load_sections import (data_iterators, entries, link_inputs, network_of,
                             parameter_variables, variable)

__all__ = ["NnpOptimizer", "make_optimizer", "link_optimizer"]

# NNabla's solver type -> (its ``<type>_param`` field, the solver's positional arguments)
SOLVER_ARGUMENTS = {
    "Adagrad": ("adagrad_param", ("lr", "eps")),
    "Adadelta": ("adadelta_param", ("lr", "decay", "eps")),
    "AdaBelief": ("adabelief_param", ("alpha", "beta1", "beta2", "eps", "wd", "amsgrad",
                                      "weight_decouple", "fixed_decay", "rectify")),
    "Adam": ("adam_param", ("alpha", "beta1", "beta2", "eps")),
    "AdamW": ("adamw_param", ("alpha", "beta1", "beta2", "eps", "wd")),
    "Adamax": ("adamax_param", ("alpha", "beta1", "beta2", "eps")),
    "AdaBound": ("adabound_param", ("alpha", "beta1", "beta2", "eps", "final_lr", "gamma")),
    "AMSGRAD": ("amsgrad_param", ("alpha", "beta1", "beta2", "eps")),
    "AMSBound": ("amsbound_param", ("alpha", "beta1", "beta2", "eps", "final_lr", "gamma")),
    "Lars": ("lars_param", ("lr", "momentum", "coefficient", "eps")),
    "Momentum": ("momentum_param", ("lr", "momentum")),
    "Nesterov": ("nesterov_param", ("lr", "momentum")),
    "RMSprop": ("rmsprop_param", ("lr", "decay", "eps")),
    "RMSpropGraves": ("rmsprop_graves_param", ("lr", "decay", "momentum", "eps")),
    "Sgd": ("sgd_param", ("lr",)),
    "SGD": ("sgd_param", ("lr",)),
    "SgdW": ("sgdw_param", ("lr", "momentum", "wd")),
}
_BOOLS = {"amsgrad", "weight_decouple", "fixed_decay", "rectify"}


class NnpOptimizer:
    """An optimizer of a loaded file, with NNabla's attributes: ``name``, ``proto`` (the file's
    fields), ``order``, ``start_iter``/``end_iter``, ``update_interval``, ``comm``, ``solver``,
    ``weight_decay``, ``lr_decay``, ``lr_decay_interval``, ``scheduler``, ``solver_checkpoint``
    (when the file saved its states); after linking ``network``, ``data_iterators`` (dataset name ->
    that dataset's ``data_iterator``), ``dataset_assign``, ``generator_assign``, ``loss_variables``,
    ``parameter_learning_rate_multipliers``, ``parameters`` and ``target``."""

    def __repr__(self) -> str:
        return f"<NnpOptimizer {self.name!r} {type(self.solver).__name__}>"


def _num(fields: dict, key: str, default: float = 0.0) -> float:
    value = fields.get(key)
    return default if value is None else value


def make_optimizer(fields: dict, proto: Any, checkpoint: Any, where: str) -> NnpOptimizer:
    """The optimizer of the file's ``fields`` (an ``optimizer`` section as
    ``read_legacy_model`` keeps it; ``proto`` is what ``optimizer.proto`` shows of it), its
    solver built but no parameters set; ``checkpoint`` is the saved states' entry of
    ``ctx.optimizer_states_checkpoint`` (or None).  An unknown solver type names ``where``.

    Example:
        >>> o = make_optimizer({"name": "o", "solver": {"type": "Momentum", "momentum_param":
        ...     {"lr": 0.1, "momentum": 0.9}}}, None, None, "net.nntxt")
        >>> type(o.solver).__name__, o.solver.learning_rate(), o.update_interval   # (float32)
        ('Momentum', 0.10000000149011612, 1)
    """
    solver = fields.get("solver") or {}
    kind = solver.get("type") or ""
    where = f"{where}: optimizer {fields.get('name', '')!r}"
    if kind not in SOLVER_ARGUMENTS:
        raise ValueError(f"{where}: solver {kind!r} is not supported (Stadyn's NNabla solvers "
                         f"from files: {', '.join(sorted(SOLVER_ARGUMENTS))})")
    field, names = SOLVER_ARGUMENTS[kind]
    param = solver.get(field) or {}
    args = [bool(param.get(n, False)) if n in _BOOLS else float(_num(param, n)) for n in names]
    o = NnpOptimizer()
    o._fields = fields
    o.proto = proto
    o.comm = current_communicator()
    comm_size = o.comm.size if o.comm else 1
    start, end = int(_num(fields, "start_iter")), int(_num(fields, "end_iter"))
    o.start_iter = (start - 1) // comm_size + 1 if start > 0 else 0
    o.end_iter = (end - 1) // comm_size + 1 if end > 0 else 0
    o.name = fields.get("name", "")
    o.order = int(_num(fields, "order"))
    interval = int(_num(fields, "update_interval"))
    o.update_interval = interval if interval > 0 else 1
    o.network = None
    if checkpoint is not None:
        o.solver_checkpoint = checkpoint
    o.solver = getattr(S, "Sgd" if kind == "SGD" else kind)(*args)
    o.weight_decay = float(_num(solver, "weight_decay"))
    lr_decay, lr_interval = _num(solver, "lr_decay"), int(_num(solver, "lr_decay_interval"))
    o.lr_decay = lr_decay if lr_decay > 0.0 else 1.0
    o.lr_decay_interval = lr_interval if lr_interval > 0 else 1
    o.scheduler = nnabla_scheduler(solver, args[0], comm_size, where)
    return o


def link_optimizer(o: NnpOptimizer, networks: Any, datasets: Any, restore: Any) -> None:
    """Tie ``o`` to its network (of ``networks``, what ``load`` built by name) and its datasets'
    iterators (of ``datasets``, ``info.datasets``): its data,
    generator and loss variables, the parameters it trains (learning-rate multiplier > 0; the
    others lose ``need_grad``) set on the solver, the saved states given back with ``restore``
    (``restore_optimizer_state``), the loss gradients set to ``1 / size`` and ``target``.

    Example:
        >>> o = make_optimizer({"name": "o", "network_name": "n", "solver": {"type": "Sgd"}},
        ...                    None, None, "net.nntxt")
        >>> link_optimizer(o, {}, {}, None)
        Traceback (most recent call last):
        ValueError: optimizer 'o': network 'n' is not in the files
    """
    fields = o._fields
    where = f"optimizer {o.name!r}"
    network = o.network = network_of(fields, networks, where)
    o.data_iterators = data_iterators(fields, datasets)
    link_inputs(o, network, fields, where)
    o.loss_variables = [variable(network, e["variable_name"], where)
                        for e in entries(fields, "loss_variable")]
    o.parameter_learning_rate_multipliers = OrderedDict()
    for _, v, rate in parameter_variables(network, fields, where):
        o.parameter_learning_rate_multipliers[v] = rate
    parameters = {}
    for v, rate in o.parameter_learning_rate_multipliers.items():
        if rate > 0.0:
            parameters[v.name] = v.variable_instance
        else:
            v.variable_instance.need_grad = False
    o.solver.set_parameters(parameters)
    o.parameters = OrderedDict(sorted(parameters.items()))
    restore(o)
    for v in o.loss_variables:
        var = v.variable_instance
        var.g = np.full(tuple(var.shape), 1.0 / max(int(np.prod(var.shape)), 1), np.float32)
    if len(o.loss_variables) == 1:
        o.target = o.loss_variables[0].variable_instance
    else:
        o.target = sink(*[v.variable_instance for v in o.loss_variables],
                        one_input_grad=False)

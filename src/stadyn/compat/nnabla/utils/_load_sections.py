"""The executors, monitors, datasets and training configuration of NNabla 1.39's ``load``
(``info.executors``, ``info.monitors``, ``info.datasets``, ``info.training_config``): objects
with the attributes NNabla's have, made from the sections ``read_legacy_model`` keeps as dicts.

As NNabla's, :func:`load` makes the executors and monitors first (``proto``, ``network`` None and
the executor's counts and flags) and ``link_components`` ties them to their networks: the data,
generator (NNabla's initializer for the file's type and multiplier), output, parameter and loss
variables keyed by the network's variables, and the sinks NNabla runs (an executor's
``forward_target`` over its outputs and, with ``need_back_propagation``, ``backward_target``
over its losses; a monitor's ``target`` over its monitored variables).
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from typing import Any

import numpy as np

from ..functions import sink
from ..initializer import (ConstantInitializer, NormalInitializer, RangeInitializer,
                           UniformInitializer)
from ..logger import logger
from ._file_loaders import _Fields
from .create_cache import CreateCache
from .data_iterator import data_iterator_cache, data_iterator_csv_dataset

__all__ = ["NnpExecutor", "NnpMonitor", "NnpDataset", "TrainingConfig", "generator",
           "matching_names", "entries", "network_of", "variable", "assign", "link_inputs",
           "data_iterators", "parameter_variables",
           "make_datasets", "make_training_config"]


def generator(entry: dict, where: str) -> Any:
    """NNabla's initializer for a ``generator_variable`` entry of a file (its ``type`` and
    ``multiplier``: ``Normal`` sigma, ``Uniform`` +-limit, ``Range`` step from 0, ``Constant``
    value).

    Example:
        >>> generator({"type": "Uniform", "multiplier": 0.5}, "executor 'run'")
        UniformInitializer(lim=(-0.5, 0.5))
    """
    kind, m = entry.get("type", ""), float(entry.get("multiplier") or 0.0)
    if kind == "Normal":
        return NormalInitializer(sigma=m)
    if kind == "Uniform":
        return UniformInitializer(lim=(-m, m))
    if kind == "Range":
        return RangeInitializer(start=0, step=m)
    if kind == "Constant":
        return ConstantInitializer(value=m)
    raise ValueError(f"{where}: generator type {kind!r} of variable "
                     f"{entry.get('variable_name')!r} is not supported (Normal, Uniform, Range, "
                     "Constant)")


def matching_names(name: str, names: list[str], where: str) -> list[str]:
    """NNabla's parameter patterns: a name, or one with ``{...}`` standing for ``[n]``.

    Example:
        >>> matching_names("w{i}", ["w[0]", "w[1]", "b"], "executor 'run'")
        ['w[0]', 'w[1]']
    """
    if name in names:
        return [name]
    pattern = re.compile(re.sub(r"{[^}]*}", r"\\[[\\d+]\\]", name))
    found = [n for n in names if re.match(pattern, n)]
    if not found:
        raise ValueError(f"{where}: variable {name!r} is not found")
    return found


def entries(fields: dict, key: str) -> list[dict]:
    """The entries (dicts) of the file's repeated field ``key`` of ``fields``."""
    return [e for e in fields.get(key) or [] if isinstance(e, dict)]


def network_of(fields: dict, networks: Any, where: str) -> Any:
    """The network of ``networks`` that ``fields`` names (``network_name``); a ValueError naming
    ``where`` when the files have none of that name."""
    network = networks.get(fields.get("network_name"))
    if network is None:
        raise ValueError(f"{where}: network {fields.get('network_name')!r} is not in the files")
    return network


def variable(network: Any, name: str, where: str) -> Any:
    """The variable ``name`` of ``network``; a ValueError naming ``where`` when it has none."""
    try:
        return network.variables[name]
    except KeyError:
        raise ValueError(f"{where}: variable {name!r} is not a variable of network "
                         f"{network.name!r}") from None


def assign(network: Any, fields: dict, key: str, value: Any,
           where: str) -> "OrderedDict[Any, Any]":
    """The variables of ``network`` that the entries of ``fields[key]`` name, each mapped to
    ``value(entry)``, in the file's order."""
    return OrderedDict((variable(network, e["variable_name"], where), value(e))
                       for e in entries(fields, key))


def link_inputs(owner: Any, network: Any, fields: dict, where: str) -> None:
    """Set ``owner.dataset_assign`` (variable -> data name) and ``owner.generator_assign``
    (variable -> initializer) of the file's data and generator variables."""
    owner.dataset_assign = assign(network, fields, "data_variable",
                                  lambda e: e.get("data_name", ""), where)
    owner.generator_assign = assign(network, fields, "generator_variable",
                                    lambda e: generator(e, where), where)


def data_iterators(fields: dict, datasets: Any) -> "OrderedDict[str, Any]":
    """Dataset name -> that dataset's ``data_iterator`` (None for one not in ``datasets``), for
    the file's ``dataset_name`` list."""
    return OrderedDict((d, getattr(datasets.get(d), "data_iterator", None))
                       for d in fields.get("dataset_name") or [])


def parameter_variables(network: Any, fields: dict, where: str) -> list[tuple[str, Any, float]]:
    """``(name, variable, learning-rate multiplier)`` of each of ``network``'s parameters and
    variables that the file's ``parameter_variable`` patterns match, in the file's order (a
    parameter before a variable of the same name); the multiplier reads 0 where left out."""
    names = list(network.parameters) + [n for n in network.variables
                                        if n not in network.parameters]
    return [(name, network.parameters.get(name) or network.variables[name],
             float(e.get("learning_rate_multiplier") or 0.0))
            for e in entries(fields, "parameter_variable")
            for name in matching_names(e["variable_name"], names, where)]


def _target(variables: list, where: str, what: str, **kwargs) -> Any:
    instances = [v.variable_instance for v in variables]
    if not instances or any(v is None for v in instances):
        raise ValueError(f"{where}: NNabla's load makes a sink of its {what}, and "
                         + ("it names none" if not instances else
                            "some of them are not computed by the network"))
    return sink(*instances, **kwargs)


class NnpExecutor:
    """An executor of a loaded file, as NNabla's: ``proto`` (the file's fields, by attribute),
    ``num_evaluations``, ``repeat_evaluation_type``, ``need_back_propagation``,
    ``no_image_normalization`` and ``network`` (None until linked).  Linking sets ``network``
    (the entry of ``info.networks``), ``dataset_assign`` (variable -> data name),
    ``generator_assign`` (variable -> initializer), ``output_assign`` (variable -> ``[type,
    data name]``), ``parameters`` (variable -> name, for the file's ``parameter_variable``
    patterns), ``forward_target`` (a sink of the outputs) and, with ``need_back_propagation``,
    ``loss_variables``, ``parameter_learning_rate_multipliers`` and ``backward_target`` (a
    sink of the losses)."""

    def __init__(self, name: str, fields: dict):
        self.name = name
        self._fields = fields
        self.proto = _Fields(fields)
        self.network = None
        self.num_evaluations = int(fields.get("num_evaluations") or 0) or 1
        self.repeat_evaluation_type = fields.get("repeat_evaluation_type", "")
        self.need_back_propagation = bool(fields.get("need_back_propagation", False))
        self.no_image_normalization = bool(fields.get("no_image_normalization", False))

    def __repr__(self) -> str:
        return f"<NnpExecutor {self.name!r}>"

    def _link(self, networks: Any) -> None:
        fields, where = self._fields, f"executor {self.name!r}"
        network = self.network = network_of(fields, networks, where)
        link_inputs(self, network, fields, where)
        # NNabla keeps an output's type (proto3: absent when empty) beside its data name
        self.output_assign = assign(network, fields, "output_variable",
                                    lambda e: [e.get("type", ""), e.get("data_name", "")], where)
        self.parameters = OrderedDict()
        multipliers = OrderedDict()
        for name, v, rate in parameter_variables(network, fields, where):
            if name in network.parameters:
                self.parameters[network.parameters[name]] = name
            if name in network.variables:
                self.parameters[network.variables[name]] = name
            multipliers[v] = rate
        self.forward_target = _target(list(self.output_assign), where, "output variables")
        if self.need_back_propagation:
            self.loss_variables = [variable(network, e["variable_name"], where)
                                   for e in entries(fields, "loss_variable")]
            self.parameter_learning_rate_multipliers = multipliers
            self.backward_target = _target(self.loss_variables, where, "loss variables")


class NnpMonitor:
    """A monitor of a loaded file, as NNabla's: ``proto`` and ``network`` (None until linked);
    linking sets ``network``, ``data_iterators`` (dataset name -> that dataset's
    ``data_iterator``), ``dataset_assign``, ``generator_assign``, ``monitor_variables`` (the
    network's variables, in the file's order) and ``target`` (a sink of them)."""

    def __init__(self, name: str, fields: dict):
        self.name = name
        self._fields = fields
        self.proto = _Fields(fields)
        self.network = None

    def __repr__(self) -> str:
        return f"<NnpMonitor {self.name!r}>"

    def _link(self, networks: Any, datasets: Any) -> None:
        fields, where = self._fields, f"monitor {self.name!r}"
        network = self.network = network_of(fields, networks, where)
        self.data_iterators = data_iterators(fields, datasets)
        link_inputs(self, network, fields, where)
        self.monitor_variables = [variable(network, e["variable_name"], where)
                                  for e in entries(fields, "monitor_variable")]
        self.target = _target(self.monitor_variables, where, "monitor variables")


class NnpDataset:
    """A dataset of a loaded file, as NNabla's: ``uri``, ``cache_dir``, ``normalize`` (not the
    file's ``no_image_normalization``) and ``data_iterator``: with ``prepare_data_iterator``,
    a function making NNabla's iterator over the dataset, otherwise None.

    Which iterator is NNabla 1.39's choice (``load.py``'s ``_create_dataset``, one process):

    * ``create_cache_explicitly`` with a ``cache_dir``: the cache is made when the file is
      loaded, unless the folder holds a ``cache_index.csv`` (``overwrite_cache`` makes it
      anyway): the folder is made if missing, ``Creating cache data for "<uri>"`` is logged and
      ``CreateCache`` (shuffled as the dataset is, from the dataset's ``RandomState(index)``)
      writes it, unscaled.  The iterator reads the cache, from a new ``RandomState(index)``.
    * otherwise, no ``cache_dir``, ``overwrite_cache``, or a folder missing or empty: the CSV
      file's iterator, writing its cache into ``cache_dir`` (the folder made when the file is
      loaded);
    * otherwise the cache folder's iterator."""

    def __init__(self, fields: dict, prepare: bool, index: int):
        self.uri = fields.get("uri", "")
        self.cache_dir = fields.get("cache_dir", "")
        self.normalize = not fields.get("no_image_normalization", False)
        self.data_iterator = None
        if not prepare:
            return
        batch_size = int(fields.get("batch_size") or 0)
        shuffle = bool(fields.get("shuffle", False))
        cache_dir = self.cache_dir or None
        overwrite = bool(fields.get("overwrite_cache", False))
        rng = np.random.RandomState(index)     # NNabla's: one seed per dataset, by position
        if cache_dir is not None and fields.get("create_cache_explicitly", False):
            if overwrite or not os.path.exists(os.path.join(cache_dir, "cache_index.csv")):
                self._create_cache(cache_dir, batch_size, shuffle, rng)
            rng = np.random.RandomState(index)
            cached = True
        else:
            cached = (cache_dir is not None and not overwrite and os.path.isdir(cache_dir)
                      and bool(os.listdir(cache_dir)))
            if cache_dir is not None and not cached:
                os.makedirs(cache_dir, exist_ok=True)
        if cached:
            self.data_iterator = lambda: data_iterator_cache(
                cache_dir, batch_size, shuffle, rng=rng, normalize=self.normalize)
        else:
            self.data_iterator = lambda: data_iterator_csv_dataset(
                self.uri, batch_size, shuffle, rng=rng, normalize=self.normalize,
                cache_dir=cache_dir)

    def _create_cache(self, cache_dir: str, batch_size: int, shuffle: bool, rng) -> None:
        """Write the dataset's cache into ``cache_dir`` now, as NNabla's ``load`` does for
        ``create_cache_explicitly``: a local CSV file through ``CreateCache``, another
        ``uri`` (a URL) through the CSV iterator's file cache."""
        os.makedirs(cache_dir, exist_ok=True)
        shown = self.uri.split("/", 3)[-1] if self.uri.startswith("s3") else self.uri
        logger.log(99, f'Creating cache data for "{shown}"')
        if os.path.exists(self.uri):
            CreateCache(self.uri, rng=rng, shuffle=shuffle).create(cache_dir, normalize=False)
        else:
            with data_iterator_csv_dataset(self.uri, batch_size, shuffle, rng=rng,
                                           normalize=False, cache_dir=cache_dir,
                                           with_memory_cache=False):
                pass

    def __repr__(self) -> str:
        return f"<NnpDataset {self.uri!r}>"


def make_datasets(sections: dict, prepare: bool) -> "OrderedDict[str, NnpDataset]":
    """``info.datasets`` of the file's dataset sections (name -> fields).

    Example:
        >>> d = make_datasets({"train": {"uri": "train.csv", "batch_size": 4}}, False)
        >>> d["train"].uri, d["train"].normalize, d["train"].data_iterator
        ('train.csv', True, None)
    """
    return OrderedDict((name, NnpDataset(fields, prepare, i))
                       for i, (name, fields) in enumerate(sections.items()))


class TrainingConfig:
    """``info.training_config``: ``max_epoch``, ``iter_per_epoch``, ``save_best`` and
    ``monitor_interval`` (10 where the file gives none)."""

    def __init__(self, fields: dict):
        self.max_epoch = int(fields.get("max_epoch") or 0)
        self.iter_per_epoch = int(fields.get("iter_per_epoch") or 0)
        self.save_best = bool(fields.get("save_best", False))
        interval = int(fields.get("monitor_interval") or 0)
        self.monitor_interval = interval if interval > 0 else 10

    def __repr__(self) -> str:
        return f"<TrainingConfig max_epoch={self.max_epoch}>"


def make_training_config(fields: Any) -> TrainingConfig | None:
    """``info.training_config`` of the file's section (None where the files have none).

    Example:
        >>> make_training_config({"max_epoch": 3}).monitor_interval
        10
    """
    return TrainingConfig(fields) if isinstance(fields, dict) else None

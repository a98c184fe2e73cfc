"""``stadyn train`` and ``stadyn forward`` on NNabla files (``nnabla_cli train`` / ``forward``).

A Console-style ``.nnp`` holds networks, an ``optimizer`` (the network it trains, its dataset,
solver, loss and parameter variables), ``monitor`` s, ``executor`` s, ``dataset`` s naming CSV
files (NNabla's format: one sample per row, ``x:image,y:label`` columns of values or file
names; :class:`stadyn.io.CsvDataSource`) and a ``training_config`` (``max_epoch``,
``iter_per_epoch``).  :func:`train_nnp` trains the optimizer's network with the file's solver
for its epochs, evaluates the monitors after each epoch and writes ``results.nnp`` (the file
with the parameters of the best epoch, as ``nnabla_cli train`` chooses it),
``results_current_<max_epoch>.nnp`` (those of the last) and ``monitoring_report.yml``
(NNabla's: epochs numbered from 0, monitors of the evaluated epochs); as ``nnabla_cli train``,
a NaN or infinite cost stops the training (``Cost is Nan``) and a NaN or infinite monitor
value of an evaluated epoch counts as 0.0 (``Validation error is Nan``);
:func:`forward_nnp` runs an executor on a CSV file and writes ``output_result.csv``.

A dataset's ``uri`` is a CSV path: absolute, or relative to the working folder or, failing
that, to the ``.nnp`` file's folder.
"""

from __future__ import annotations

import csv
import math
import os
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from .._errors import StadynError

__all__ = ["train_nnp", "forward_nnp"]


def _listed(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _entries(value: Any) -> list[dict]:
    return [e for e in _listed(value) if isinstance(e, dict)]


def _csv_path(uri: str, nnp: str, what: str) -> str:
    if not isinstance(uri, str) or not uri:
        raise StadynError(f"{nnp}: {what} names no CSV file (uri)")
    candidates = [uri] if os.path.isabs(uri) else [uri, os.path.join(os.path.dirname(
        os.path.abspath(nnp)), uri)]
    for c in candidates:
        if os.path.isfile(c):
            return c
    folders = ", ".join(repr(os.path.dirname(os.path.abspath(c))) for c in candidates)
    raise StadynError(f"{nnp}: {what}'s CSV file {uri!r} was not found (looked in {folders})")


def _feeds(net: Any, variables: tuple, data_map: dict, where: str) -> list[tuple[str, int]]:
    """(network input, column index of the data) for each input of ``net``."""
    out = []
    for name in net.inputs:
        data = data_map.get(name, name)
        if data not in variables:
            raise StadynError(f"{where}: no column for the network input {name!r} (data "
                              f"{data!r}); the CSV's variables are {list(variables)}")
        out.append((name, variables.index(data)))
    return out


def _set_inputs(net: Any, feeds: list, batch: tuple) -> None:
    for name, index in feeds:
        var = net.inputs[name]
        value = np.asarray(batch[index], dtype=np.float32)
        if value.size != math.prod(var.shape):
            raise StadynError(f"input {name!r}: the data holds {value.shape[1:]} per sample, the "
                              f"network wants {tuple(var.shape[1:])}")
        var.d = value.reshape(var.shape)


_SOLVERS = ("Sgd", "Momentum", "Nesterov", "Adam", "Adagrad", "Adadelta", "RMSprop")


def _solver(opt: dict, nnp: str) -> tuple[Any, dict]:
    from .. import solvers as S
    from ..serialize import SOLVER_FIELDS
    spec = opt.get("solver") or {}
    kind = spec.get("type")
    if kind not in _SOLVERS:
        raise StadynError(f"{nnp}: optimizer {opt.get('name')!r} uses the solver {kind!r}; "
                          f"stadyn train runs {', '.join(_SOLVERS)}")
    field = {"Sgd": "sgd_param", "RMSprop": "rmsprop_param"}.get(kind, f"{kind.lower()}_param")
    given = spec.get(field) or {}
    hyper = {k: float(given[k]) for k in SOLVER_FIELDS[kind] if k in given}
    return getattr(S, kind)(**hyper), spec


def _iterator(dataset: dict, nnp: str, rng: np.random.RandomState | None = None):
    """A reader of ``dataset``: shuffled as the file says, drawing from ``rng`` (None: an
    unshuffled reader of its own)."""
    from ..io import data_iterator_csv_dataset
    name = dataset.get("name", "")
    path = _csv_path(dataset.get("uri", ""), nnp, f"dataset {name!r}")
    batch = int(dataset.get("batch_size") or 0)
    if batch < 1:
        raise StadynError(f"{nnp}: dataset {name!r} has no batch_size")
    # NNabla's file cache gives the same order as reading the CSV (only slower), so none
    it = data_iterator_csv_dataset(
        path, batch, shuffle=rng is not None and bool(dataset.get("shuffle", False)),
        rng=rng if rng is not None else np.random.RandomState(0), use_thread=False,
        normalize=not dataset.get("no_image_normalization", False), with_file_cache=False)
    return it, path


def _evaluate(net: Any, outputs: list[str], it: Any, feeds: list, batches: int) -> float:
    """The mean of ``outputs`` over ``batches`` batches of ``it`` (inference phase; 0.0 for
    none)."""
    from ..graph import forward_all, training
    total = 0.0
    for _ in range(batches):
        _set_inputs(net, feeds, it.next())
        with training(False):
            forward_all([net.outputs[o] for o in outputs])
        total += sum(float(np.mean(net.outputs[o].d)) for o in outputs)
    return total / batches if batches > 0 else 0.0


def train_nnp(path: str, outdir: str, epochs: int | None = None,
              log: Callable[[str], None] = print) -> dict:
    """Train the first optimizer of the NNabla file ``path`` (see the module docstring);
    returns ``{"costs": [mean loss per epoch], "rates": [learning rate per iteration],
    "monitors": {name: [value per epoch]}, "result": path of results.nnp, "best_epoch": the
    epoch whose parameters it holds, "current": path of results_current_<max_epoch>.nnp (the
    last epoch's), "completed": False when a NaN cost stopped it}`` (paths None when not
    written).  The rate of each iteration is the file's scheduler's
    (``lr_scheduler_type`` Polynomial, Cosine, Step, Exponential or the older ``lr_decay`` /
    ``lr_decay_interval``, and the Linear warm-up), as ``nnabla_cli train`` sets it; and as it
    saves them, ``results.nnp`` holds the parameters of the last epoch ``nnabla_cli`` evaluates
    (epochs 1 to 5 and every ``monitor_interval``-th, default 10: there a monitor's reader,
    kept for the run and shared by the monitors of one dataset, gives ``size // batch_size``
    batches; a dataset with ``shuffle`` is read in NNabla's order) whose monitor ``valid_error``
    is at most the best so far (any evaluated epoch without ``training_config.save_best``).
    As there, a monitor value of an evaluated epoch that is NaN or infinite is recorded and
    compared as 0.0 (so such an epoch is saved as the best), and a NaN or infinite sum of an
    epoch's losses stops the training before that epoch is evaluated: ``"completed"`` is then
    False, ``results.nnp`` holds the best epoch so far (none is written when the first epoch
    did not finish) and ``results_current_<E>.nnp`` the parameters of epoch E, the last of 1,
    12, 23, ... that finished (``nnabla_cli`` saves the current parameters every 11 epochs or
    3 minutes; Stadyn does not model the clock).

    Example (a one-layer classifier on a 4-row CSV)::

        train_nnp("classifier.nnp", "out", epochs=3)   # writes out/results.nnp
    """
    from .. import functions as F
    from ..graph import training
    from ..parametric import ParameterRegistry, parameter_registry
    from ..serialize import load_nnp, nnabla_scheduler, read_legacy_model, write_with_parameters
    model = read_legacy_model(path)
    if model.format != "nnp":
        raise StadynError(f"{path}: not an NNabla file (stadyn train runs .nnp training "
                          "configurations and BrainScript .cntk configs)")
    extras = model.extras
    optimizers = extras.get("optimizers") or {}
    if not optimizers:
        raise StadynError(f"{path}: holds no optimizer section, so nothing to train (a "
                          "Neural Network Console / nnabla.utils.save training configuration "
                          "has one)")
    opt = next(iter(optimizers.values()))
    datasets = extras.get("datasets") or {}
    names = [str(d) for d in _listed(opt.get("dataset_name"))]
    if not names or names[0] not in datasets:
        raise StadynError(f"{path}: optimizer {opt.get('name')!r} trains on the dataset "
                          f"{names[0] if names else None!r}, which the file does not define")
    dataset = datasets[names[0]]
    config = extras.get("training_config") or {}
    max_epoch = int(epochs if epochs is not None else config.get("max_epoch") or 0)
    if max_epoch < 1:
        raise StadynError(f"{path}: no epochs to run (training_config.max_epoch is "
                          f"{config.get('max_epoch')!r}; pass --epochs)")
    registry = ParameterRegistry()
    net = load_nnp(model, network=opt.get("network_name"),
                   batch_size=int(dataset.get("batch_size") or 0) or None, registry=registry)
    losses = [e.get("variable_name") for e in _entries(opt.get("loss_variable"))] or \
        list(net.outputs)
    missing = [n for n in losses if n not in net.outputs]
    if missing:
        raise StadynError(f"{path}: the loss variable(s) {missing} are not outputs of network "
                          f"{opt.get('network_name')!r} ({list(net.outputs)})")
    solver, spec = _solver(opt, path)
    if int(opt.get("update_interval", 1) or 1) != 1:
        raise StadynError(f"{path}: optimizer {opt.get('name')!r} has update_interval "
                          f"{opt.get('update_interval')}; stadyn train updates every minibatch")
    if _entries(opt.get("generator_variable")):
        raise StadynError(f"{path}: optimizer {opt.get('name')!r} has generator variables, "
                          "which stadyn train does not run")
    listed = _entries(opt.get("parameter_variable"))
    multipliers = {e.get("variable_name"): float(e.get("learning_rate_multiplier", 0.0))
                   for e in listed}
    odd = {k: v for k, v in multipliers.items() if v not in (0.0, 1.0)}
    if odd:
        raise StadynError(f"{path}: learning-rate multipliers other than 0 and 1 are not "
                          f"supported: {odd}")
    trained = OrderedDict((k, v) for k, v in net.parameters.items()
                          if (multipliers.get(k, 0.0) == 1.0 if listed else v.need_grad))
    solver.set_parameters(trained)
    with parameter_registry(registry):
        total = None
        for name in losses:
            term = F.sum(net.outputs[name])
            total = term if total is None else F.add2(total, term)
    monitors = OrderedDict()
    for m in (extras.get("monitors") or {}).values():
        mset = [str(d) for d in _listed(m.get("dataset_name"))]
        if not mset or mset[0] not in datasets:
            continue
        mdata = datasets[mset[0]]
        mnet = load_nnp(model, network=m.get("network_name"),
                        batch_size=int(mdata.get("batch_size") or 0) or None, registry=registry)
        watched = [e.get("variable_name") for e in _entries(m.get("monitor_variable"))
                   if e.get("variable_name") in mnet.outputs] or list(mnet.outputs)
        mmap = {e.get("variable_name"): e.get("data_name") for e in
                _entries(m.get("data_variable"))}
        monitors[m.get("name", "")] = (mnet, watched, mdata, mmap)
    data_map = {e.get("variable_name"): e.get("data_name") for e in
                _entries(opt.get("data_variable"))}
    # nnabla_cli train (nnabla.utils.load): dataset i of the file draws its shuffles from
    # RandomState(i), one generator for all its readers: the optimizer's first, then one
    # reader for the whole run shared by the monitors of that dataset, in the monitors' order
    rngs = {name: np.random.RandomState(i) for i, name in enumerate(datasets)}
    it, csv_path = _iterator(dataset, path, rngs[names[0]])
    readers = OrderedDict()      # monitor name: (its dataset's reader, its feeds)
    # nnabla_cli train: the file's scheduler gives the rate of each iteration (0, 1, ...)
    scheduler = nnabla_scheduler(spec, solver.learning_rate(), 1,
                                 f"{path}: optimizer {opt.get('name')!r}")
    weight_decay = float(spec.get("weight_decay", 0.0) or 0.0)
    report = {"costs": [], "rates": [], "monitors": OrderedDict((k, []) for k in monitors),
              "best_epoch": None}
    # nnabla_cli train: results.nnp holds the parameters of the last epoch it evaluated whose
    # valid_error was at most the best so far (every evaluated epoch without save_best, or
    # while the best is 0); it evaluates epochs 1-5 and every monitor_interval-th
    save_best = bool(config.get("save_best", False))
    interval = int(config.get("monitor_interval") or 0)
    interval = interval if interval > 0 else 10
    best_error, best = None, None

    def evaluated(epoch: int) -> bool:
        return epoch % interval == 0 or epoch <= 5

    def current() -> OrderedDict:
        return OrderedDict((name, (np.array(registry.get(name).d), bool(registry.get(name)
                                                                         .need_grad)))
                           for name in model.parameters if name in registry)
    os.makedirs(outdir, exist_ok=True)
    snapshot = None          # (epoch, parameters) of nnabla_cli's last periodic results_current
    completed = True
    try:
        feeds = _feeds(net, it.variables, data_map, f"{csv_path}")
        shared: dict[str, Any] = {}
        for mname, (mnet, watched, mdata, mmap) in monitors.items():
            dname = str(mdata.get("name", ""))
            if dname not in shared:
                shared[dname] = _iterator(mdata, path, rngs[dname])[0]
            mit = shared[dname]
            readers[mname] = (mit, _feeds(mnet, mit.variables, mmap,
                                          f"{path}: dataset {mdata.get('name')!r}"))
        iters = int(config.get("iter_per_epoch") or 0) or max(1, math.ceil(it.size /
                                                                            it.batch_size))
        step = 0
        for epoch in range(1, max_epoch + 1):
            cost = 0.0
            with parameter_registry(registry), training(True):
                for i in range(iters):
                    solver.set_learning_rate(scheduler.get_learning_rate(step))
                    report["rates"].append(solver.learning_rate())
                    step += 1
                    _set_inputs(net, feeds, it.next())
                    total.forward()
                    solver.zero_grad()
                    total.backward()
                    if weight_decay:
                        solver.weight_decay(weight_decay)
                    solver.update()
                    loss = sum(float(np.mean(net.outputs[n].d)) for n in losses)
                    # nnabla_cli train checks the epoch's sum after each iteration: of the
                    # losses before this one, and this one too at the epoch's last
                    if not math.isfinite(cost + loss if i == iters - 1 else cost):
                        completed = False
                        break
                    cost += loss
            if not completed:
                log("Cost is Nan")
                break
            report["costs"].append(cost / iters)
            line = f"epoch {epoch} of {max_epoch} cost={cost / iters:.6f}"
            with parameter_registry(registry):
                for mname, (mnet, watched, mdata, mmap) in monitors.items():
                    mit, mfeeds = readers[mname]
                    if evaluated(epoch):
                        # nnabla_cli train: size // batch_size batches, its reader going on
                        # from where the last evaluation left it
                        value = _evaluate(mnet, watched, mit, mfeeds, mit.size // mit.batch_size)
                    else:   # an epoch nnabla_cli does not evaluate: one pass, its own reader
                        once, _ = _iterator(mdata, path)
                        try:
                            value = _evaluate(mnet, watched, once, mfeeds,
                                              max(1, math.ceil(once.size / once.batch_size)))
                        finally:
                            once.close()
                    if evaluated(epoch) and not math.isfinite(value):
                        log("Validation error is Nan")
                        value = 0.0      # as nnabla_cli train records and compares it
                    report["monitors"][mname].append(value)
                    line += f" {mname}={value:.6f}"
            log(line)
            if evaluated(epoch):
                valid_error = (report["monitors"]["valid_error"][-1]
                               if "valid_error" in monitors else 0.0)
                if not save_best or not best_error or valid_error <= best_error:
                    best_error, best = valid_error, current()
                    report["best_epoch"] = epoch
            if snapshot is None or epoch - snapshot[0] > 10:
                snapshot = (epoch, current())
    finally:
        it.close()
        for mit in {id(r[0]): r[0] for r in readers.values()}.values():
            mit.close()
    # a finished run writes the last epoch's parameters; one stopped by a NaN cost keeps
    # what nnabla_cli had saved by then (epochs 1, 12, 23, ...; and no results.nnp before
    # an evaluated epoch)
    if completed:
        snapshot = (max_epoch, current())
    final = result = None
    if snapshot is not None:
        final = os.path.join(outdir, f"results_current_{snapshot[0]}.nnp")
        write_with_parameters(path, final, snapshot[1])
    if best is not None or completed:
        result = os.path.join(outdir, "results.nnp")
        write_with_parameters(path, result, best if best is not None else current())
    if report["costs"]:
        with open(os.path.join(outdir, "monitoring_report.yml"), "w", encoding="utf-8") as f:
            for i, c in enumerate(report["costs"]):
                f.write(f"{i}:\n  cost: {c!r}\n")     # nnabla_cli counts epochs from 0 here
                if evaluated(i + 1):
                    for mname, values in report["monitors"].items():
                        f.write(f"  {mname}: {values[i]!r}\n")
    report["completed"] = completed
    report["result"], report["current"] = result, final
    if completed:
        log(f"trained parameters saved in {result} (epoch {report['best_epoch']}) and {final}")
    else:
        log(f"Training Incompleted. Saved: {result or 'no results.nnp'} (epoch "
            f"{report['best_epoch']}), {final or 'no results_current'}")
    return report


def forward_nnp(path: str, dataset: str, outdir: str, executor: str | None = None,
                batch_size: int | None = None) -> str:
    """Run the executor ``executor`` (default the first) of the NNabla file ``path`` on every
    row of the CSV file ``dataset``; writes ``OUTDIR/output_result.csv`` (the CSV's columns,
    then each output flattened: ``y`` or ``y__0, y__1, ...``) and returns its path."""
    from ..graph import forward_all, training
    from ..io import CsvDataSource
    from ..serialize import load_nnp, read_legacy_model
    model = read_legacy_model(path)
    executors = model.extras.get("executors") or {}
    if not executors:
        raise StadynError(f"{path}: holds no executor to run")
    name = executor if executor is not None else next(iter(executors))
    if name not in executors:
        raise StadynError(f"{path}: no executor {name!r}; the executors are {list(executors)}")
    ex = executors[name]
    net = load_nnp(model, name, batch_size=batch_size)
    batch = next(iter(net.inputs.values())).shape[0]
    source = CsvDataSource(dataset, normalize=not ex.get("no_image_normalization", False))
    data_map = {e.get("variable_name"): e.get("data_name") for e in
                _entries(ex.get("data_variable"))}
    feeds = _feeds(net, tuple(source.variables), data_map, dataset)
    with open(dataset, newline="", encoding="utf-8-sig") as f:
        rows = [r for r in csv.reader(f)]
    header, body = rows[0], [r for r in rows[1:] if r]
    rows_out: list[list] = []
    out_names = list(net.outputs)
    n = source.size
    for start in range(0, n, batch):
        samples = [source.next() for _ in range(min(batch, n - start))]
        filled = samples + [samples[-1]] * (batch - len(samples))
        columns = tuple(np.stack([np.asarray(s[i], np.float32) for s in filled])
                        for i in range(len(filled[0])))
        _set_inputs(net, feeds, columns)
        with training(False):
            forward_all(list(net.outputs.values()))
        values = [np.asarray(net.outputs[o].d).reshape(batch, -1) for o in out_names]
        for k in range(len(samples)):
            rows_out.append([float(v) for arr in values for v in arr[k]])
    widths = [int(np.asarray(net.outputs[o].d).reshape(batch, -1).shape[1]) for o in out_names]
    out_header = [o if w == 1 else f"{o}__{i}" for o, w in zip(out_names, widths)
                  for i in range(w)]
    os.makedirs(outdir, exist_ok=True)
    result = os.path.join(outdir, "output_result.csv")
    with open(result, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header + out_header)
        for row, values in zip(body, rows_out):
            w.writerow(row + [repr(v) for v in values])
    return result

"""The learning-rate scheduler NNabla 1.39 makes for an ``optimizer`` section of an NNabla file
(``nnabla.utils.load``, which ``nnabla_cli train`` runs): the solver's ``lr_scheduler_type``
(Polynomial, Cosine, Step, Exponential, or none: the older ``lr_decay`` /
``lr_decay_interval``) and the Linear warm-up around it, with NNabla's defaults where a field is
0 or missing.  Both ``nnabla.utils.load`` (compat) and ``stadyn train FILE.nnp`` use it.
"""

from __future__ import annotations

from typing import Any

from ..schedules import (CosineScheduler, ExponentialScheduler, LinearWarmupScheduler,
                         PolynomialScheduler, StepScheduler)

__all__ = ["nnabla_scheduler"]


def _num(fields: dict, key: str) -> float:
    value = fields.get(key)
    return 0.0 if value is None else value


def nnabla_scheduler(solver: dict, init_lr: float, comm_size: int = 1,
                     where: str = "optimizer") -> Any:
    """NNabla's scheduler for the ``solver`` fields of an optimizer section (a dict as
    ``read_legacy_model`` keeps it) starting from ``init_lr``, over ``comm_size`` workers (the
    file's iteration counts are divided by it, as NNabla's); an unknown type names ``where``.

    Example:
        >>> s = nnabla_scheduler({"lr_scheduler_type": "Step", "step_scheduler_param":
        ...                       {"gamma": 0.5, "iter_steps": [2]}}, 0.1)
        >>> [s.get_learning_rate(i) for i in range(4)]
        [0.1, 0.1, 0.05, 0.05]
    """
    kind = solver.get("lr_scheduler_type") or ""
    lr_decay, interval = _num(solver, "lr_decay"), int(_num(solver, "lr_decay_interval"))
    scheduler = ExponentialScheduler(init_lr, 1.0, 1)
    param = solver.get({"Polynomial": "polynomial_scheduler_param",
                        "Cosine": "cosine_scheduler_param",
                        "Exponential": "exponential_scheduler_param",
                        "Step": "step_scheduler_param"}.get(kind, "")) or {}
    max_iter = int(_num(param, "max_iter")) // comm_size
    if kind == "Polynomial" and _num(param, "power") != 0.0:
        # (a max_iter of 0, as a file without one gives, is NNabla's ZeroDivisionError when a
        # rate is asked for, not when the scheduler is made: stadyn.schedules' too)
        scheduler = PolynomialScheduler(init_lr, max_iter, _num(param, "power"))
    elif kind == "Cosine":
        scheduler = CosineScheduler(init_lr, max_iter)
    elif kind == "Exponential" and _num(param, "gamma") != 1.0:
        step = int(_num(param, "iter_interval"))
        scheduler = ExponentialScheduler(init_lr, _num(param, "gamma"),
                                         step // comm_size if step > comm_size else 1)
    elif kind == "Step" and _num(param, "gamma") != 1.0 and param.get("iter_steps"):
        scheduler = StepScheduler(init_lr, _num(param, "gamma"),
                                  [int(s) // comm_size for s in param["iter_steps"]])
    elif kind == "" and (interval != 0 or lr_decay != 0.0):
        scheduler = ExponentialScheduler(init_lr, lr_decay if lr_decay > 0.0 else 1.0,
                                         interval // comm_size if interval > comm_size else 1)
    elif kind not in ("", "Polynomial", "Cosine", "Exponential", "Step"):
        raise ValueError(f"{where}: learning rate scheduler {kind!r} is not supported")
    warmup = solver.get("linear_warmup_scheduler_param") or {}
    if (solver.get("lr_warmup_scheduler_type") == "Linear"
            and int(_num(warmup, "warmup_iter")) >= comm_size):
        scheduler = LinearWarmupScheduler(scheduler, int(_num(warmup, "warmup_iter")) // comm_size)
    return scheduler

"""The learning-rate schedulers NNabla 1.39's ``load`` builds for a file's optimizer
(``lr_scheduler_type`` Polynomial, Cosine, Step, Exponential, the older ``lr_decay`` /
``lr_decay_interval``, and the ``Linear`` warm-up around any of them), used as ``nnabla_cli
train`` uses them: at each iteration the scheduler's rate is set on the solver before the
update.  Each case compares the scheduler's class and settings, the rates over the iterations
(past ``max_iter`` too) and the parameters after every update of a small regression."""

import os

import numpy as np

from compat_harness import nnabla_case

L_ = "nnabla.utils.load."

_NETWORK = """network { name: "net" batch_size: 2
 variable { name: "x" type: "Buffer" shape { dim: -1 dim: 3 } }
 variable { name: "t" type: "Buffer" shape { dim: -1 dim: 1 } }
 variable { name: "fc/W" type: "Parameter" shape { dim: 3 dim: 1 } }
 variable { name: "fc/b" type: "Parameter" shape { dim: 1 } }
 variable { name: "y" type: "Buffer" shape { dim: -1 dim: 1 } }
 variable { name: "e" type: "Buffer" shape { dim: -1 dim: 1 } }
 variable { name: "loss" type: "Buffer" shape { } }
 function { name: "Fc" type: "Affine" input: "x" input: "fc/W" input: "fc/b" output: "y"
            affine_param { base_axis: 1 } }
 function { name: "Err" type: "SquaredError" input: "y" input: "t" output: "e" }
 function { name: "Mean" type: "Mean" input: "e" output: "loss"
            mean_param { axes: 0 axes: 1 keep_dims: false } }
}
"""

_OPTIMIZER = """optimizer { name: "o" network_name: "net" update_interval: 1
 solver { type: "Momentum" momentum_param { lr: 0.1 momentum: 0.5 } %s }
 data_variable { variable_name: "x" data_name: "x" }
 data_variable { variable_name: "t" data_name: "t" }
 loss_variable { variable_name: "loss" }
 parameter_variable { variable_name: "fc/W" learning_rate_multiplier: 1.0 }
 parameter_variable { variable_name: "fc/b" learning_rate_multiplier: 1.0 }
}
"""

_ATTRS = ("init_lr", "max_iter", "power", "gamma", "iter_interval", "iter_steps", "warmup_iter")


def _describe(s):
    """The scheduler's class and settings (a warm-up's inner scheduler too)."""
    out = [type(s).__name__] + [[a, getattr(s, a)] for a in _ATTRS if hasattr(s, a)]
    if hasattr(s, "scheduler"):
        out.append(_describe(s.scheduler))
    return out


def _rate(s, i):
    try:
        return float(s.get_learning_rate(i))
    except ZeroDivisionError:
        return "ZeroDivisionError"


def _train(nn, L, r, solver_fields, steps=10, rates=16):
    """Load the regression with ``solver_fields`` in its solver section and train it as
    ``nnabla_cli train`` does for ``steps`` iterations."""
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "net.nntxt")
        with open(path, "w") as f:
            f.write(_NETWORK + _OPTIMIZER % solver_fields)
        nn.clear_parameters()
        info = L.load([path], prepare_data_iterator=False)
    o = info.optimizers["o"]
    s = o.scheduler
    res["scheduler"] = _describe(s)
    res["rates"] = [_rate(s, i) for i in range(rates)]
    params = o.parameters
    params["fc/W"].d = np.array([[0.5], [-0.25], [0.125]], np.float32)
    params["fc/b"].d = np.array([0.1], np.float32)
    x, t = [v.variable_instance for v in o.dataset_assign]
    x.d = r.randn(2, 3).astype(np.float32)
    t.d = r.randn(2, 1).astype(np.float32)
    steps_out = []
    for i in range(steps):
        lr = s.get_learning_rate(i)
        o.solver.set_learning_rate(lr)
        o.target.forward()
        o.solver.zero_grad()
        o.target.backward()
        o.solver.update()
        steps_out.append([float(o.solver.learning_rate()), float(o.target.d),
                          params["fc/W"].d.copy(), params["fc/b"].d.copy()])
    res["steps"] = steps_out
    return res


def _scheduler_case(name, note, solver_fields, **variants):
    """A case: the regression trained with ``solver_fields``, and each of ``variants`` (key ->
    ``(solver fields, steps[, rates])``)."""
    def case(nn, r):
        L = r.module("nnabla.utils.load")
        res = _train(nn, L, r, solver_fields)
        for key, args in sorted(variants.items()):
            res[key] = _train(nn, L, r, *args)
        return res
    case.__name__ = name
    return nnabla_case(names=[L_ + "load"], note=note)(case)


_scheduler_case(
    "load_scheduler__polynomial",
    "Polynomial (power 2, max_iter 8; rates past max_iter rise again, as NNabla's formula "
    "gives) and power 0 (NNabla keeps its constant default)",
    'lr_scheduler_type: "Polynomial" polynomial_scheduler_param { max_iter: 8 power: 2.0 }',
    **{"power 0": ('lr_scheduler_type: "Polynomial" '
                   'polynomial_scheduler_param { max_iter: 8 power: 0.0 }', 2)})

_scheduler_case(
    "load_scheduler__cosine",
    "Cosine over max_iter 8 (rising again past it); without its parameters (max_iter 0) "
    "NNabla loads the file and its scheduler divides by zero when asked for a rate",
    'lr_scheduler_type: "Cosine" cosine_scheduler_param { max_iter: 8 }',
    **{"no max_iter": ('lr_scheduler_type: "Cosine"', 0, 2)})

_scheduler_case(
    "load_scheduler__step",
    "Step (gamma 0.5 at iterations 2 and 5); gamma 1 or no steps keep the constant default",
    'lr_scheduler_type: "Step" step_scheduler_param { gamma: 0.5 iter_steps: 2 iter_steps: 5 }',
    **{"gamma 1": ('lr_scheduler_type: "Step" step_scheduler_param { gamma: 1.0 iter_steps: 2 }',
                   0),
       "no steps": ('lr_scheduler_type: "Step" step_scheduler_param { gamma: 0.5 }', 0)})

_scheduler_case(
    "load_scheduler__exponential",
    "Exponential (gamma 0.5 every 3 iterations; an interval of 1 or 0 is every iteration), and "
    "the older lr_decay 0.5 every lr_decay_interval 4 of a solver with no scheduler type",
    'lr_scheduler_type: "Exponential" exponential_scheduler_param { gamma: 0.5 iter_interval: 3 }',
    **{"interval 0": ('lr_scheduler_type: "Exponential" '
                      'exponential_scheduler_param { gamma: 0.5 }', 0),
       "lr_decay": ('lr_decay: 0.5 lr_decay_interval: 4', 10)})

_scheduler_case(
    "load_scheduler__linear_warmup",
    "the Linear warm-up over 4 iterations around a Cosine scheduler (max_iter 8) and around the "
    "constant default; warmup_iter 0 adds none",
    'lr_scheduler_type: "Cosine" cosine_scheduler_param { max_iter: 8 } '
    'lr_warmup_scheduler_type: "Linear" linear_warmup_scheduler_param { warmup_iter: 4 }',
    **{"constant": ('lr_warmup_scheduler_type: "Linear" '
                    'linear_warmup_scheduler_param { warmup_iter: 3 }', 4),
       "warmup 0": ('lr_warmup_scheduler_type: "Linear"', 0)})

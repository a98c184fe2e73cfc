"""The rest of ``stadyn.compat.cntk``: devices, ``cntk_py`` switches, the ``Function`` class,
and the 2017 betas' names (``cntk.models``, ``cntk.learner``, ``cntk.utils``,
``LayerStack``, ``default_options_for``, ``Identity``).

CNTK 2.7 has no beta names.  Where 2.7 keeps the same behaviour under another spelling the
case runs that spelling on the real side (``if r.real:``, said in the case's ``note``) and
records the beta name as reached; the beta printer's wording, which 2.7 changed, is compared
with the transcript of a real beta run (``expected=``).
"""

import contextlib
import io
import re

import numpy as np

from compat_harness import cntk_case
import compat_cases.cntk_learners as _learners
import compat_cases.cntk_train as _train


@cntk_case(names=["cntk.device.cpu", "cntk.device.use_default_device",
                  "cntk.device.try_set_default_device", "cntk.device.all_devices",
                  "cntk.device.DeviceDescriptor", "cntk.device.DeviceDescriptor.type",
                  "cntk.device.DeviceDescriptor.id"])
def devices(C, r):
    r.touch("cntk.device.DeviceDescriptor.type", "cntk.device.DeviceDescriptor.id")
    cpu = C.device.cpu()
    ok = C.device.try_set_default_device(cpu)
    default = C.device.use_default_device()
    return {"cpu": [repr(cpu), str(cpu), int(cpu.type()), int(cpu.id())],
            "set": bool(ok), "default": [repr(default), int(default.type())],
            "all": [repr(d) for d in C.device.all_devices()],
            "is_descriptor": isinstance(cpu, C.device.DeviceDescriptor)}


@cntk_case(names=["cntk.device.gpu"],
           known={"gpu0": "deliberate: without a GPU, CNTK's gpu(0) raises ValueError ('Specified "
                          "GPU device id (0) is invalid'); Stadyn's compat builds the descriptor "
                          "and try_set_default_device falls back to the CPU with a warning, so "
                          "GPU scripts run"})
def gpu(C, r):
    try:
        d = C.device.gpu(0)
        return {"gpu0": ["descriptor", repr(d)]}
    except ValueError as e:
        return {"gpu0": ["ValueError", str(e).splitlines()[0]]}


@cntk_case(names=["cntk.cntk_py.set_fixed_random_seed",
                  "cntk.cntk_py.set_computation_network_trace_level",
                  "cntk.cntk_py.force_deterministic_algorithms"])
def cntk_py_switches(C, r):
    """A fixed seed makes a dropout mask repeat; the other two switches return None."""
    x = C.input_variable(200)
    data = np.ones((2, 200), np.float32)
    masks = []
    for _ in range(2):
        C.cntk_py.set_fixed_random_seed(7)
        f = C.dropout(x, 0.5)
        r.touch("cntk.Function.forward", "cntk.Function.output")
        _, out = f.forward({x: data}, [f.output], set([f.output]))
        masks.append(out[f.output] != 0)
    return {"same_mask": bool(np.array_equal(masks[0], masks[1])),
            "trace": C.cntk_py.set_computation_network_trace_level(0),
            "deterministic": C.cntk_py.force_deterministic_algorithms()}


@cntk_case(names=["cntk.Function"],
           known={"isinstance": "CNTK's inputs, parameters and constants are Variables, not "
                                "Functions (isinstance(x, cntk.Function) is False); Stadyn's "
                                "compat wraps all of them in one Function class"})
def function_class(C, r):
    x = C.input_variable(3)
    p = C.parameter((3,), init=1.0)
    c = C.constant(np.ones(3, np.float32))
    f = x * p + c
    return {"output": isinstance(f, C.Function),
            "isinstance": [isinstance(v, C.Function) for v in (x, p, c)]}


# -- the 2017 betas -------------------------------------------------------------------------


@cntk_case(names=["cntk.models.Sequential", "cntk.models.LayerStack", "cntk.layers.LayerStack"],
           note="the betas' LayerStack(n, f) is 2.7's For(range(n), f); models.Sequential is "
                "layers.Sequential")
def models_layer_stack(C, r):
    x = C.input_variable(3)
    if r.real:
        r.touch("cntk.models.Sequential", "cntk.models.LayerStack", "cntk.layers.LayerStack")
        stack = C.layers.For(range(2), lambda i: C.layers.Dense(4 + i, activation=C.relu))
        f = C.layers.Sequential([stack, C.layers.Dense(2)])(x)
        g = C.layers.For(range(2), lambda i: C.layers.Dense(5 + 2 * i))(x)
    else:
        stack = C.models.LayerStack(2, lambda i: C.layers.Dense(4 + i, activation=C.relu))
        f = C.models.Sequential([stack, C.layers.Dense(2)])(x)
        g = C.layers.LayerStack(2, lambda i: C.layers.Dense(5 + 2 * i))(x)
    r.touch("cntk.Function.parameters", "cntk.Function.eval")
    data = r.randn(3, 3)
    return {"params": r.set_params(f.parameters), "out": f.eval({x: data}),
            "g_params": r.set_params(g.parameters), "g_out": g.eval({x: data})}


@cntk_case(names=["cntk.layers.default_options_for"],
           note="the betas' default_options_for(Dense, activation=relu) sets the option for "
                "Dense only; on 2.7 the case passes it to the Dense layers explicitly")
def default_options_for(C, r):
    x = C.input_variable((1, 4, 4))
    if r.real:
        r.touch("cntk.layers.default_options_for")
        f = C.layers.Sequential([C.layers.Convolution((3, 3), 2),
                                 C.layers.Dense(3, activation=C.relu)])(x)
    else:
        with C.layers.default_options_for(C.layers.Dense, activation=C.relu):
            f = C.layers.Sequential([C.layers.Convolution((3, 3), 2), C.layers.Dense(3)])(x)
    r.touch("cntk.Function.parameters", "cntk.Function.eval")
    r.set_params(f.parameters)
    return {"out": f.eval({x: r.randn(2, 1, 4, 4)})}


@cntk_case(names=["cntk.layers.Identity"],
           note="the betas' Identity() layer is 2.7's identity function")
def identity_layer(C, r):
    x = C.input_variable(3)
    if r.real:
        r.touch("cntk.layers.Identity")
        f = C.layers.Sequential([C.layers.Dense(2), C.layers.identity])(x)
    else:
        f = C.layers.Sequential([C.layers.Dense(2), C.layers.Identity()])(x)
    r.touch("cntk.Function.parameters", "cntk.Function.eval")
    r.set_params(f.parameters)
    return {"out": f.eval({x: r.randn(2, 3)})}


@cntk_case(names=["cntk.learner.sgd", "cntk.learner.IGNORE", "cntk.learner.UnitType"],
           substitutes={"cntk.learner": "cntk.learners"},
           note="the betas' cntk.learner is 2.7's cntk.learners")
def beta_learner_module(C, r):
    res = _learners.train(C, r, lambda C, p: C.learner.sgd(
        p, C.learning_rate_schedule(0.1, C.learner.UnitType.sample)), sizes=(4, 3))
    res["IGNORE"] = C.learner.IGNORE
    return res


_BETA_EPOCH = re.compile(r"^Finished Epoch \[\d+\]: \[Training\] loss = \d+\.\d{6} \* \d+, "
                         r"metric = \d+\.\d% \* \d+ \d+\.\d{3}s \( *\d+\.\d samples per "
                         r"second\)$")


@cntk_case(names=["cntk.utils.ProgressPrinter", "cntk.utils.log_number_of_parameters"],
           substitutes={"cntk.utils": "cntk.logging"}, tols={"epochs": (0, 0.0501)},
           note="the numbers the betas' printer shows, against 2.7's printer (metric +-0.05: "
                "the betas print one decimal); the wording is utils_printer_wording's")
def utils_printer_numbers(C, r):
    lines = _run_printer(C, r)
    epochs = []
    for ln in lines:
        m = re.match(r"^Finished Epoch ?\[(\d+)[^\]]*\]: \[Training\] loss = ([\d.]+) \* (\d+), "
                     r"metric = ([\d.]+)% \* (\d+)", ln)
        if m:
            epochs.append([float(v) for v in m.groups()])
    return {"epochs": epochs,
            "parameters_line": [ln for ln in lines if ln.startswith("Training ")]}


def _run_printer(C, r):
    x, y, z, loss, metric = _train._model(C, r)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        printer = C.utils.ProgressPrinter(tag="Training", num_epochs=2)
        learner = C.learners.sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.1))
        trainer = C.Trainer(z, (loss, metric), [learner], [printer])
        C.utils.log_number_of_parameters(z)
        for _ in range(2):
            for data, target in _train._batches(r, (4, 5)):
                trainer.train_minibatch({x: data, y: target})
            trainer.summarize_training_progress()
    return [ln for ln in out.getvalue().splitlines() if ln.strip()]


@cntk_case(names=["cntk.utils.ProgressPrinter"],
           expected=lambda np: {"epoch_lines_in_beta_wording": [True, True]},
           note="the wording of 'Finished Epoch [1]: [Training] loss = 2.012469 * 50000, metric "
                "= 75.1% * 50000 15.380s (3250.9 samples per second)', from the transcript of a "
                "real 2017-beta run (the CIFAR-10 seed)")
def utils_printer_wording(C, r):
    lines = [ln for ln in _run_printer(C, r) if ln.startswith("Finished Epoch")]
    return {"epoch_lines_in_beta_wording": [bool(_BETA_EPOCH.match(ln)) for ln in lines]}

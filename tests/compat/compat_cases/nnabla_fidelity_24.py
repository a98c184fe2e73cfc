"""NNabla 1.39's names of Variables, ``.nnp`` parameters and data loading, where Stadyn
differed:

* ``Variable.name``: ``''`` on a fresh Variable, a function's output, a registered parameter
  (created, loaded, listed by ``nn.get_parameters()``) and an unlinked view; a program sets a
  ``str`` or ``bytes`` and nothing else (Stadyn showed None, the parameters' registry paths,
  and took anything);
* ``nn.load_parameters("x.nnp")`` loads every parameter member (a ``parameter.protobuf`` too,
  merged into the message it returns, as NNabla 1.39; Stadyn refused it);
* ``nnabla.utils.data_source_loader.load(ext)`` asks the callback modules
  (``nnabla.utils.callback``) for an image loader first.
"""

import types

import numpy as np

from compat_harness import nnabla_case

N = "nnabla."


def _tried(fn):
    try:
        return repr(fn())
    except Exception as exc:           # noqa: BLE001 (what NNabla raises is the result)
        return type(exc).__name__ + ": " + str(exc)


@nnabla_case(names=[N + "Variable.name"],
             note="names of fresh Variables, outputs, registered parameters and their views; "
                  "what setting str, bytes, None, 3 does")
def variable_name__defaults_and_set(nn, F, PF, r):
    r.touch(N + "Variable.name")
    res = {}
    x = nn.Variable((2, 3))
    res["fresh"] = x.name
    res["from_numpy"] = nn.Variable.from_numpy_array(r.randn(2)).name
    y = F.relu(x)
    res["output"] = y.name
    with nn.parameter_scope("s"):
        z = PF.affine(x, 4)
    res["pf_output"] = z.name
    res["registered"] = sorted((k, v.name) for k, v in nn.get_parameters().items())
    res["registered_all"] = sorted(
        (k, v.name) for k, v in nn.get_parameters(grad_only=False).items())
    res["handed_out"] = nn.parameter.get_parameter_or_create("q", (2,)).name
    res["handed_out_nested"] = nn.parameter.get_parameter_or_create("a/b", (2,)).name
    res["registered_q"] = nn.parameter.get_parameter("q").name
    res["unlinked"] = x.get_unlinked_variable().name
    x.name = "hello"
    res["set"] = x.name
    res["set_unlinked"] = x.get_unlinked_variable().name
    res["output_after_input_named"] = F.relu(x).name
    res["set_bytes"] = _tried(lambda: setattr(x, "name", b"by") or x.name)
    res["set_none"] = _tried(lambda: setattr(x, "name", None) or x.name)
    res["set_int"] = _tried(lambda: setattr(x, "name", 3) or x.name)
    res["after_refusals"] = x.name
    w = nn.get_parameters()["s/affine/W"]
    w.name = "renamed"
    res["registered_renamed"] = (w.name, nn.get_parameters()["s/affine/W"].name,
                                 sorted(nn.get_parameters()))
    res["registered_renamed_still_trains"] = sorted(nn.get_parameters(grad_only=True))
    return res


@nnabla_case(names=[N + "Variable.name", N + "load_parameters", N + "save_parameters"],
             note="the parameters of an .h5 file loaded after clear_parameters: their names")
def variable_name__loaded_parameters(nn, F, PF, r):
    r.touch(N + "Variable.name")
    x = nn.Variable((2, 3))
    with nn.parameter_scope("s"):
        PF.affine(x, 4)
    path = "p.h5"                       # (a case runs in a scratch folder)
    nn.save_parameters(path)
    nn.clear_parameters()
    nn.load_parameters(path)
    return {"loaded": sorted((k, v.name) for k, v in nn.get_parameters().items())}


CB = "nnabla.utils.callback."
_HOOKS = ["alternative_cli", "get_callback_version", "get_best_from_status",
          "update_time_train", "save_train_snapshot", "update_status", "add_train_command_arg",
          "get_timelimit", "process_evaluation_result", "update_forward_time",
          "check_training_time", "result_base", "update_progress", "get_load_image_func"]


def _hook_calls(cb):
    """Each hook of ``cb`` called with plain arguments: what it returns."""
    return [repr(cb.alternative_cli(["x"])), repr(cb.get_callback_version()),
            repr(cb.get_best_from_status("a")), repr(cb.update_time_train(1.5)),
            repr(cb.save_train_snapshot()), repr(cb.update_status("run", True, 3)),
            repr(cb.add_train_command_arg("p")), repr(cb.get_timelimit("a")),
            repr(cb.process_evaluation_result("d", "f")), repr(cb.update_forward_time()),
            repr(cb.check_training_time("a", "c", "t", 1, 2)),
            repr(cb.result_base("b", ".s", "o")), repr(cb.update_progress("t")),
            repr(getattr(cb.get_load_image_func(".png"), "__name__", None))]


@nnabla_case(names=[CB + n for n in ["callback_list"] + _HOOKS]
             + ["nnabla.utils.data_source_loader.load", "nnabla.utils.progress.progress"],
             note="each hook with no callback module, then with a module of one's own in "
                  "callback_list that answers every hook (and logs what it was told); "
                  "data_source_loader.load and progress through it")
def callback_modules__asked_first(nn, r):
    cb = r.module("nnabla.utils.callback")
    DSL = r.module("nnabla.utils.data_source_loader")
    PR = r.module("nnabla.utils.progress")
    res = {"configured": len(cb.callback_list), "defaults": _hook_calls(cb),
           "png_default": DSL.load(".png").__name__}
    told = []

    def answer(name):
        def hook(*args):
            told.append([name] + [repr(a) for a in args])
            return "answer of " + name
        return hook

    mine = types.ModuleType("my_callbacks")
    for name in _HOOKS:
        setattr(mine, name, answer(name))

    def read_png(path, *args, **kwargs):
        return "my png reader: " + str(path)
    mine.get_load_image_func = lambda ext: read_png if ext in (".png", ".xyz") else None
    partial = types.ModuleType("only_timelimit")
    partial.get_timelimit = lambda args: 60
    cb.callback_list.extend([partial, mine])
    try:
        res["answered"] = _hook_calls(cb)
        res["png"] = DSL.load(".png")("a.png")
        res["new_extension"] = DSL.load(".xyz")("a.xyz")
        res["csv_not_answered"] = DSL.load(".csv").__name__
        try:
            DSL.load(".abc")
        except ValueError as exc:
            res["unknown"] = str(exc)
        PR.progress("Training", 0.5)
        PR.progress(None)
    finally:
        del cb.callback_list[-2:]
    res["told"] = told
    res["after"] = DSL.load(".png").__name__
    return res


@nnabla_case(names=[N + "load_parameters", "nnabla.utils.save.save"],
             note="an .nnp saved with parameter.h5 and with parameter.protobuf, loaded by "
                  "nn.load_parameters with and without needs_proto, and again into the "
                  "message it returned: its parameter entries and the scope's values")
def load_parameters__nnp_members(nn, F, PF, r):
    S = r.module("nnabla.utils.save")
    x = nn.Variable((2, 3))
    y = PF.affine(x, 4, name="fc")
    for v in nn.get_parameters().values():
        v.d = r.randn(*v.shape)
    contents = {"networks": [{"name": "net", "batch_size": 2, "outputs": {"y": y},
                              "names": {"x": x}}],
                "executors": [{"name": "run", "network": "net", "data": ["x"],
                               "output": ["y"]}]}
    res = {}
    for fmt in (".h5", ".protobuf"):
        path = "model" + fmt.replace(".", "_") + ".nnp"
        S.save(path, contents, parameter_format=fmt)
        for needs in (False, True):
            nn.clear_parameters()
            p = nn.load_parameters(path, needs_proto=needs)
            key = fmt[1:] + ("_needs_proto" if needs else "")
            res[key] = [[q.variable_name, list(q.shape.dim), q.need_grad] for q in p.parameter]
            res[key + "_data"] = [np.array(q.data, np.float32) for q in p.parameter]
            res[key + "_scope"] = [[k, v.d, v.need_grad]
                                   for k, v in sorted(nn.get_parameters().items())]
        p = nn.load_parameters(path, proto=p, needs_proto=True)
        res[fmt[1:] + "_into_returned"] = [q.variable_name for q in p.parameter]
    return res


@nnabla_case(names=[N + "Variable.name", "nnabla.Variable.parent", "nnabla.Function.inputs"],
             note="a registered parameter a program gives an F function itself: the name the "
                  "function's input shows (NNabla wraps the registered Variable, named '')")
def variable_name__registered_parameter_given_to_F(nn, F, PF, r):
    r.touch(N + "Variable.name", "nnabla.Variable.parent", "nnabla.Function.inputs")
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    PF.affine(x, 4, name="fc")
    W = nn.get_parameters()["fc/affine/W"]
    y = F.affine(x, W)
    res = {"input": y.parent.inputs[1].name, "registered": W.name}
    W.name = "mine"
    z = F.affine(x, W)
    res["renamed_input"] = z.parent.inputs[1].name
    res["renamed_registered"] = W.name
    res["still_listed"] = sorted(nn.get_parameters())
    return res

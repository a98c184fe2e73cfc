"""NNabla 1.39's names of Variables, ``.nnp`` parameters and data loading, where Stadyn
differed:

* ``Variable.name``: ``''`` on a fresh Variable, a function's output, a registered parameter
  (created, loaded, listed by ``nn.get_parameters()``) and an unlinked view; a program sets a
  ``str`` or ``bytes`` and nothing else (Stadyn showed None, the parameters' registry paths,
  and took anything).
"""

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


"""``import nnabla.solver as S`` (NNabla's VAE, siamese and VAT tutorials): which solvers the
module ``nnabla.solver`` holds, and whether each is ``nnabla.solvers``' own."""

from compat_harness import nnabla_case

# the names probed: nnabla.solvers' solvers and base classes (not Stadyn's extra spelling
# AMSGrad of NNabla's AMSGRAD, which Stadyn's nnabla.solver has too)
_PROBED = ["AMSBound", "AMSGRAD", "AdaBelief", "AdaBound", "Adadelta", "Adagrad", "Adam",
           "AdamW", "Adamax", "Lamb", "Lars", "Lion", "Momentum", "Nesterov", "RMSprop",
           "RMSpropGraves", "Sgd", "SgdW", "Solver", "SolverState"]


@nnabla_case(names=["nnabla.solver.Sgd", "nnabla.solver.Adam", "nnabla.solver.Solver"],
             note="which of nnabla.solvers' names nnabla.solver has, and those that are not "
                  "nnabla.solvers' own objects (none); then one step of nnabla.solver.Sgd")
def solver_module_holds_the_solvers(nn, r):
    S = r.module("nnabla.solver")
    SS = r.module("nnabla.solvers")
    held = [name for name in _PROBED if getattr(S, name, None) is not None]
    res = {"nnabla.solver holds": held,
           "not nnabla.solvers' own": [name for name in held
                                       if getattr(S, name) is not getattr(SS, name, None)]}
    x = nn.Variable.from_numpy_array(r.randn(3), need_grad=True)
    x.g = r.randn(3)
    solver = S.Sgd(0.5)
    solver.set_parameters({"x": x})
    solver.update()
    res["after a step"] = x.d.copy()
    return res

"""Edge behaviours of ``nnabla.solvers`` and ``nnabla.utils.data_iterator``: parameters given
again, added and removed between steps, ``set_states`` with part of the states, the update and
``weight_decay`` skipping a parameter no backward wrote since ``zero_grad``; iterators whose
batch size does not divide the data, ``stop_exhausted`` read past its end, ``slice`` after a
read, a batch larger than the data, callbacks and the iteration protocol.
"""

import numpy as np

from compat_harness import nnabla_case

N = "nnabla.solvers."
D = "nnabla.utils.data_iterator."


def _var(nn, values):
    return nn.Variable.from_numpy_array(np.array(values, np.float32), need_grad=True)


def _states(solver):
    res = {}
    for k, s in solver.get_states().items():
        res[k] = [int(s.t)] + [[n, s.pstate[n].d.tolist()] for n in sorted(s.pstate)]
    return res


def _ones(*variables):
    for v in variables:
        v.g = np.ones(v.shape, np.float32)


@nnabla_case(names=[N + "Sgd", N + "Adam"],
             note="with reset=False a name the solver has keeps its first Variable: NNabla "
                  "1.39 updates the old one, not the one given again (and without retain_state "
                  "starts its state afresh)")
def solver_set_parameters_existing_name(nn, F, PF, S, r):
    res = {}
    for retain in (True, False):
        a, again = _var(nn, [1.0, 2.0]), _var(nn, [10.0, 20.0])
        solver = S.Adam(alpha=0.1)
        solver.set_parameters({"a": a})
        _ones(a)
        solver.update()
        solver.set_parameters({"a": again}, reset=False, retain_state=retain)
        _ones(a, again)
        solver.update()
        res["retain %s" % retain] = [a.d.copy(), again.d.copy()]
        res["states %s" % retain] = _states(solver)
        # the solver's parameter is the one it updates
        res["parameter %s" % retain] = solver.get_parameters()["a"].d.copy()
    sgd = S.Sgd(lr=0.5)
    b, again = _var(nn, [1.0]), _var(nn, [5.0])
    sgd.set_parameters({"b": b})
    sgd.set_parameters({"b": again})              # reset=True: the new one
    _ones(b, again)
    sgd.update()
    res["reset"] = [b.d.copy(), again.d.copy()]
    return res


@nnabla_case(names=[N + "Adam"],
             note="parameters added with retain_state keep the others' states; a removed "
                  "parameter is neither updated nor in get_states")
def solver_parameters_added_and_removed(nn, F, PF, S, r):
    a, b, c = _var(nn, [1.0, 2.0]), _var(nn, [3.0]), _var(nn, [5.0, 6.0, 7.0])
    solver = S.Adam(alpha=0.1)
    solver.set_parameters({"a": a, "b": b})
    _ones(a, b)
    solver.update()
    solver.set_parameters({"a": a, "c": c}, reset=False, retain_state=True)
    res = {"keys": sorted(solver.get_parameters().keys()), "states": _states(solver)}
    solver.remove_parameters(["b"])
    res["after remove"] = sorted(solver.get_states().keys())
    _ones(a, b, c)
    solver.update()
    res["values"] = [a.d.copy(), b.d.copy(), c.d.copy()]
    res["states 2"] = _states(solver)
    solver.clear_parameters()
    res["cleared"] = [sorted(solver.get_parameters().keys()), sorted(solver.get_states().keys())]
    return res


@nnabla_case(names=[N + "Momentum"],
             note="set_states sets the states it is given and leaves the others; a name the "
                  "solver does not have is an error (NNabla: RuntimeError, Stadyn: "
                  "ParameterError, a ValueError: only that it raises is compared)")
def solver_set_states_part(nn, F, PF, S, r):
    p, q = _var(nn, [1.0]), _var(nn, [2.0])
    solver = S.Momentum(lr=0.1, momentum=0.9)
    solver.set_parameters({"p": p, "q": q})
    _ones(p, q)
    solver.update()
    saved = solver.get_states()
    fresh = S.Momentum(lr=0.1, momentum=0.9)
    fresh.set_parameters({"p": _var(nn, [1.0])})
    try:
        fresh.set_states(saved)
        raised = False
    except Exception:
        raised = True
    more = S.Momentum(lr=0.1, momentum=0.9)
    more.set_parameters({"p": _var(nn, [0.0]), "q": _var(nn, [0.0]), "r": _var(nn, [0.0])})
    more.set_states({"q": saved["q"]})
    return {"unknown raises": raised, "part": _states(more)}


@nnabla_case(names=[N + "Sgd", N + "SgdW"],
             note="a parameter no backward wrote since zero_grad is skipped by weight_decay and "
                  "update; SgdW's weight_decay(rate) holds for the next update only")
def solver_skips_unwritten_gradients(nn, F, PF, S, r):
    res = {}
    for name in ("Sgd", "SgdW"):
        x, w1, w2 = _var(nn, [1.0, 2.0]), _var(nn, [1.0, 1.0]), _var(nn, [2.0, 2.0])
        solver = S.Sgd(lr=0.5) if name == "Sgd" else S.SgdW(lr=0.5, wd=0.01)
        solver.set_parameters({"w1": w1, "w2": w2})
        y = F.sum(x * w1)
        steps = []
        for _ in range(2):
            y.forward()
            solver.zero_grad()
            y.backward()
            if not steps:
                solver.weight_decay(0.3)
            solver.update()
            steps.append([w1.d.copy(), w2.d.copy()])
        res[name] = steps
        res[name + " g"] = w1.g.copy()
    return res


def _load(i):
    return np.array([i], np.float32), np.array([i % 3], np.int32)


def _run(it, n):
    res = []
    for _ in range(n):
        try:
            batch = it.next()
            res.append([batch[0][:, 0].astype(int).tolist(), it.epoch, it.position])
        except StopIteration:
            res.append("StopIteration")
    return res


def _iterator(DI, size, batch, cache, **kw):
    return DI.data_iterator_simple(_load, size, batch, shuffle=False, with_memory_cache=cache,
                                   with_file_cache=False, use_thread=False, **kw)


@nnabla_case(names=[D + "data_iterator_simple"],
             note="7 samples by 3 (the last batch wraps into the next epoch), 5 by 2 with "
                  "stop_exhausted read past the end twice with an epoch-end callback, a "
                  "slice taken after one read, with and without the memory cache")
def iterator_edges(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    res = {}
    for cache in (False, True):
        it = _iterator(DI, 7, 3, cache)
        res["7 by 3 %s" % cache] = _run(it, 6)
        it.close()
        ends = []
        it = _iterator(DI, 5, 2, cache, stop_exhausted=True,
                       epoch_end_callbacks=[lambda e: ends.append(e)])
        res["stop %s" % cache] = _run(it, 5) + [list(ends)]
        res["stop again %s" % cache] = [it.epoch, it.position] + _run(it, 2) + [list(ends)]
        it.close()
        it = _iterator(DI, 10, 4, cache)
        _run(it, 1)
        part = it.slice(rng=None, num_of_slices=2, slice_pos=1)
        res["slice %s" % cache] = [part.size] + _run(part, 3)
        res["sizes %s" % cache] = [it.size, it.batch_size, list(it.variables)]
        it.close()
    return res


@nnabla_case(names=[D + "data_iterator_simple"],
             note="a batch larger than the data, epoch begin/end callbacks over 4 samples by "
                  "3, the iteration protocol with stop_exhausted (twice) and the context "
                  "manager")
def iterator_protocols(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    res = {}
    it = _iterator(DI, 3, 5, False)
    res["batch > size"] = _run(it, 3)
    it.close()
    events = []
    it = _iterator(DI, 4, 3, False, epoch_begin_callbacks=[lambda e: events.append(["b", e])],
                   epoch_end_callbacks=[lambda e: events.append(["e", e])])
    res["callbacks"] = _run(it, 4) + [events]
    it.close()
    it = _iterator(DI, 5, 2, False, stop_exhausted=True)
    res["for"] = [b[0][:, 0].astype(int).tolist() for b in it]
    res["for again"] = [b[0][:, 0].astype(int).tolist() for b in it]
    it.close()
    with _iterator(DI, 4, 2, False) as it:
        res["with"] = _run(it, 1)
    return res

"""NNabla's loop controls, expanded the way NNabla 1.39's loader expands them.

Neural Network Console writes loops into a network instead of unrolling them: ``repeat_info
{id, times}`` on the network, ``repeat_id`` lists on the variables and functions inside a loop,
and five control functions.  Established by running ``nnabla.utils.load`` on such files (see
``tests/fixtures/legacy/make_nnabla.py``), the expansion is:

* every variable and function is copied once per index of its loops (nested loops: every
  combination, the first loop outermost).  A copy's name gets ``_<id>[<i>]`` appended for each
  loop -- except a parameter named in the newer style with ``{<id>}`` in it, where that text is
  replaced by ``[<i>]`` (``conv{RepeatStart}/conv/W`` -> ``conv[0]/conv/W``);
* ``RepeatStart`` (inputs: the value entering the loop, the value fed back) becomes, in
  iteration 0, an identity of its first input and, in iteration *i*, of its second input from
  iteration *i - 1*; ``RepeatEnd`` an identity of its input from the last iteration;
* ``Delay`` (inputs: the value fed back, the initial value) likewise: the initial value in step
  0, the fed-back value of step *i - 1* after;
* ``RecurrentInput`` becomes one ``Split`` along ``recurrent_param.axis`` into the steps'
  copies, ``RecurrentOutput`` one ``Stack`` of them along its axis;
* the identities are named ``$EC$/<copy name>`` and then removed: when the identity's result is
  read by other functions, they read its input instead; when nothing reads it (a network
  output), the function producing its input writes it under the identity's name.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from ._legacy_ir import LegacyFunction, LegacyNetwork, LegacyVariable, fail

__all__ = ["expand_loops"]

_MAX_COPIES = 1_000_000       # functions or variables an expansion may create


def _suffix(rids: list[str], index: tuple[int, ...]) -> str:
    return "".join(f"_{r}[{i}]" for r, i in zip(rids, index))


def _copy_name(var: LegacyVariable, rids: list[str], index: tuple[int, ...]) -> str:
    name = var.name
    for r, i in zip(rids, index):
        if var.kind == "parameter" and "{" + r + "}" in name:
            name = name.replace("{" + r + "}", f"[{i}]")
        else:
            name += f"_{r}[{i}]"
    return name


def expand_loops(network: LegacyNetwork, path: str, keep_identities: bool = False
                 ) -> LegacyNetwork:
    """The network with its loop controls expanded (see the module docstring);
    ``keep_identities=True`` stops before the loop's identities are removed (NNabla's
    ``expand_loop_control`` alone)."""
    times: dict[str, int] = dict(network.attrs.get("repeat_info", {}))
    here = f"network {network.name!r}"
    budget = [_MAX_COPIES]

    def rids_of(obj, what: str) -> list[str]:
        rids = list(obj.meta.get("repeat_id", []))
        for r in rids:
            if r not in times:
                raise fail(path, f"{here}: {what} uses loop {r!r}, which repeat_info does not "
                                 "declare")
        if len(set(rids)) != len(rids):
            raise fail(path, f"{here}: {what} lists a loop twice")
        return rids

    def indices(rids: list[str]):
        count = 1
        for r in rids:
            count *= times[r]
        budget[0] -= count
        if budget[0] < 0:
            raise fail(path, f"{here}: expanding the loops would make more than {_MAX_COPIES} "
                             "copies")
        return itertools.product(*(range(times[r]) for r in rids))

    var_rids = {n: rids_of(v, f"variable {n!r}") for n, v in network.variables.items()}
    variables: OrderedDict[str, LegacyVariable] = OrderedDict()
    for name, var in network.variables.items():
        for index in indices(var_rids[name]):
            new = _copy_name(var, var_rids[name], index)
            meta = {k: v for k, v in var.meta.items() if k != "repeat_id"}
            variables[new] = LegacyVariable(new, var.kind, var.shape, var.dtype, meta)

    def ref(name: str, at: dict[str, int], fn: str) -> str:
        """The copy of variable ``name`` seen from a function at loop indices ``at``."""
        if name not in network.variables:
            raise fail(path, f"{here}: function {fn!r} uses undeclared variable {name!r}")
        rids = var_rids[name]
        if any(r not in at for r in rids):
            raise fail(path, f"{here}: function {fn!r} reads {name!r} from inside a loop it is "
                             "not in")
        return _copy_name(network.variables[name], rids, tuple(at[r] for r in rids))

    def loop_of(f: LegacyFunction) -> str:
        rid = f.meta.get("loop", {}).get("repeat_id")
        if rid not in times:
            raise fail(path, f"{here}: {f.type} {f.name!r} names no declared loop ({rid!r})")
        return rid

    def arity(f: LegacyFunction, n_in: int) -> None:
        if len(f.inputs) != n_in or len(f.outputs) != 1:
            raise fail(path, f"{here}: {f.type} {f.name!r} needs {n_in} input(s) and 1 output")

    functions: list[LegacyFunction] = []
    identities: list[LegacyFunction] = []
    for f in network.functions:
        rids = rids_of(f, f"function {f.name!r}")
        attrs = dict(f.attrs)
        if f.type in ("RecurrentInput", "RecurrentOutput"):
            arity(f, 1)
            rid = loop_of(f)
            axis = f.meta.get("loop", {}).get("axis", 0)
            outer = [r for r in rids if r != rid]
            for index in indices(outer):
                at = dict(zip(outer, index))
                steps = [dict(at, **{rid: i}) for i in range(times[rid])]
                name = f.name + _suffix(outer, index)
                if f.type == "RecurrentInput":
                    if rid not in rids:
                        raise fail(path, f"{here}: RecurrentInput {f.name!r} is not inside "
                                         f"loop {rid!r}")
                    new = LegacyFunction(name, "Split", (ref(f.inputs[0], at, f.name),),
                                         tuple(ref(f.outputs[0], s, f.name) for s in steps),
                                         {"axis": axis})
                else:
                    new = LegacyFunction(name, "Stack",
                                         tuple(ref(f.inputs[0], s, f.name) for s in steps),
                                         (ref(f.outputs[0], at, f.name),), {"axis": axis})
                functions.append(new)
            continue
        if f.type == "RepeatEnd":
            arity(f, 1)
            rid = loop_of(f)
            for index in indices(rids):
                at = dict(zip(rids, index))
                last = dict(at, **{rid: times[rid] - 1})
                new = LegacyFunction("$EC$/" + f.name + _suffix(rids, index), "Identity",
                                     (ref(f.inputs[0], last, f.name),),
                                     (ref(f.outputs[0], at, f.name),))
                functions.append(new)
                identities.append(new)
            continue
        for index in indices(rids):
            at = dict(zip(rids, index))
            name = f.name + _suffix(rids, index)
            if f.type in ("RepeatStart", "Delay"):
                arity(f, 2)
                rid = loop_of(f)
                if rid not in at:
                    raise fail(path, f"{here}: {f.type} {f.name!r} is not inside loop {rid!r}")
                first, fed_back = (0, 1) if f.type == "RepeatStart" else (1, 0)
                if at[rid] == 0:
                    source = ref(f.inputs[first], at, f.name)
                else:
                    source = ref(f.inputs[fed_back], dict(at, **{rid: at[rid] - 1}), f.name)
                new = LegacyFunction("$EC$/" + name, "Identity", (source,),
                                     (ref(f.outputs[0], at, f.name),))
                identities.append(new)
            else:
                new = LegacyFunction(name, f.type, tuple(ref(i, at, f.name) for i in f.inputs),
                                     tuple(ref(o, at, f.name) for o in f.outputs), dict(attrs))
            functions.append(new)
    if not keep_identities:
        functions, variables = _remove_identities(functions, identities, variables)
    out = LegacyNetwork(network.name, functions, variables, batch_size=network.batch_size,
                        attrs={"expanded_loops": dict(times)})
    produced = {o for g in functions for o in g.outputs}
    consumed = {i for g in functions for i in g.inputs}
    out.inputs = [n for n, v in variables.items()
                  if v.kind == "buffer" and n not in produced and n in consumed]
    out.outputs = [n for n in variables if n in produced and n not in consumed]
    return out


def _remove_identities(functions: list[LegacyFunction], identities: list[LegacyFunction],
                       variables: "OrderedDict[str, LegacyVariable]"):
    """Drop the loop's identities as NNabla's loader does (see the module docstring)."""
    alive = list(functions)
    for ident in identities:
        x, y = ident.inputs[0], ident.outputs[0]
        others = [g for g in alive if g is not ident]
        readers = [g for g in others if y in g.inputs]
        producer = next((g for g in others if x in g.outputs), None)
        if readers:
            for g in readers:
                g.inputs = tuple(x if i == y else i for i in g.inputs)
            variables.pop(y, None)
        elif producer is not None:
            for g in others:
                g.inputs = tuple(y if i == x else i for i in g.inputs)
            producer.outputs = tuple(y if o == x else o for o in producer.outputs)
            variables.pop(x, None)
        else:
            continue            # an input copied straight to an output: keep the identity
        alive = others
    return alive, variables


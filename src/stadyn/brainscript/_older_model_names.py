"""How a BrainScript model file's values find the network's parameters when the file was
written by an older Stadyn, which named them otherwise: renamings (an untagged file's names of
shared-path constants, :func:`renamed_untagged`; the aliases of pre-computed values and NDL's
parameters, :func:`renamed`), old-style names matched by shape where that leaves no doubt
(:func:`match_parameters`) and flat NDL ``Times`` weights (:func:`flat_times_weight`).  Used by
:func:`._model_files.load_model_parameters`."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping

from .._errors import ModelFileError
from ..graph import Variable

__all__ = ["renamed_untagged", "renamed", "match_parameters", "flat_times_weight"]


def renamed_untagged(values: dict[str, Variable], flags: dict[str, bool],
                     untagged_names: Mapping[str, str]) -> dict[str, Variable]:
    """``values`` with each the file holds under an older name (``untagged_names``: name now
    -> name then) under its name now, all at once (two constants that swapped names swap
    back); ``flags`` (hasComputed) follow their values.

    >>> renamed_untagged({"p": 1, "_p": 2, "q": 3}, {}, {"p": "_p", "_p": "p"})
    {'_p': 1, 'p': 2, 'q': 3}
    """
    return _apply(values, flags, {old: new for new, old in untagged_names.items()
                                  if old in values})


def renamed(values: dict[str, Variable], flags: dict[str, bool],
            aliases: Mapping[str, str | tuple[str, ...]], needed: list[str]
            ) -> dict[str, Variable]:
    """The file's values under the network's names.  A file that holds every name the
    network needs and every aliased one is read by name; any other was written by an older
    Stadyn, and every alias applies to it at once, as one renaming of the file's names (an
    older name may be another parameter's name today: NDL's ``unnamed22.b`` of d47d4df is
    today's ``unnamed34.b``, while its ``unnamed18.b`` is today's ``unnamed22.b``).  Each
    name takes the first of its older names the file holds that no name before it took; a
    renamed value takes its new name over a value the file held under that name.  ``flags``
    (hasComputed) follow their values.

    >>> renamed({"a": 1, "b": 2}, {}, {"b": "a", "c": "b"}, ["b", "c"])
    {'b': 1, 'c': 2}
    >>> renamed({"b": 1, "c": 2}, {}, {"b": "a", "c": "b"}, ["b", "c"])
    {'b': 1, 'c': 2}
    """
    if all(name in values for name in (*needed, *aliases)):
        return values
    renaming: dict[str, str] = {}
    for name, olds in aliases.items():
        for old in (olds,) if isinstance(olds, str) else olds:
            if old in values and old not in renaming:
                renaming[old] = name
                break
    return _apply(values, flags, renaming)


def _apply(values: dict[str, Variable], flags: dict[str, bool], renaming: Mapping[str, str]
           ) -> dict[str, Variable]:
    """``values`` renamed by ``renaming`` (old name -> new) all at once: a renamed value takes
    its new name over one the file held under it.  ``flags`` are renamed alike, in place."""
    targets = set(renaming.values())

    def move(table: dict) -> dict:
        return {renaming.get(k, k): v for k, v in table.items()
                if k in renaming or k not in targets}
    moved = move(flags)
    flags.clear()
    flags.update(moved)
    return move(values)


# the names an older Stadyn gave BrainScript's Parameter/ParameterTensor and the layers it made
# without cntk.exe's node names: in the order made (anonymous_<n>/W also now, for a parameter
# made at no expression path or at one another parameter has)
_OLD_NAME = re.compile(r"(parameter|anonymous)(_[0-9]+)?/W|(recurrence|batchnormalization|"
                       r"stabilizer)(_[0-9]+)?/.+")


def match_parameters(path: str, found: dict[str, Variable], params: dict[str, Variable],
                      reshaped: Collection[str] = ()) -> list[tuple[Variable, Variable]]:
    """(network parameter, file parameter) pairs: by name; a file written before BrainScript
    parameters were named after their nodes (``parameter_<n>/W``, numbered in the order they
    were made, which depends on the evaluation order) only where its shape leaves no doubt
    (one such parameter of that shape in the file and one unmatched of that shape in the
    network), else a :class:`ModelFileError` naming the file: never a silent load into the
    wrong parameter.  A network parameter the file does not hold is left unpaired (an error
    in :func:`load_model_parameters`), and the file's parameters no network parameter takes
    are added there; old names are added so only when every network parameter is matched.

    >>> from stadyn.graph import Variable
    >>> a, b, c = Variable((2, 3)), Variable((3,)), Variable((2, 3))
    >>> [(p is a, q is c) for p, q in match_parameters("m", {"W": c}, {"W": a, "b": b})]
    [(True, True)]
    >>> [q is c for _, q in match_parameters("m", {"parameter_1/W": c}, {"W": a, "b": b})]
    [True]
    >>> match_parameters("m", {"parameter/W": c, "parameter_1/W": c},
    ...                   {"W": a, "V": Variable((2, 3))}
    ...                   )  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    stadyn._errors.ModelFileError: m: was written by an older Stadyn, ... (parameter/W,
    parameter_1/W); ...
    """
    pairs: list[tuple[Variable, Variable]] = []
    # an old-style name the network itself has (kept by BS.Network.Load from its file, or
    # still given, anonymous_<n>) pairs by name like any other
    old = {k: v for k, v in found.items() if _OLD_NAME.fullmatch(k) and k not in params}
    for name, have in params.items():
        value = found.get(name)
        if value is not None:
            if value.shape != have.shape:
                if name not in reshaped:
                    raise ModelFileError(f"{path}: parameter '{name}' has shape {value.shape} "
                                         f"in the file but {have.shape} in the network")
                value = flat_times_weight(path, name, value, have)
            pairs.append((have, value))
    if not old:
        return pairs
    matched = {id(have) for have, _ in pairs}
    left = [(k, v) for k, v in params.items() if id(v) not in matched]
    if not left:                # no parameter of the network to mix up: they are added
        return pairs
    unclear = []
    for name, value in old.items():
        mine = [have for _, have in left if have.shape == value.shape]
        theirs = [v for v in old.values() if v.shape == value.shape]
        if len(mine) == 1 and len(theirs) == 1:
            pairs.append((mine[0], value))
        else:
            unclear.append(name)
    if unclear:
        raise ModelFileError(
            f"{path}: was written by an older Stadyn, which named BrainScript parameters "
            f"in the order it made them ({', '.join(unclear)}); they cannot be matched to "
            "this network's parameters, named after their nodes, without doubt (parameters "
            f"of the same shape; this network's: {', '.join(k for k, _ in left)}): train "
            "the model again to write it with the new names")
    return pairs


def flat_times_weight(path: str, name: str, value: Variable, have: Variable) -> Variable:
    """A file's ``[m x n]`` weight for the network's ``[m x d1 x .. x dk]`` (``n`` = d1 ..
    dk): an NDL ``Times`` weight an older Stadyn saved before it took its input's dimensions
    as cntk.exe's legacy rule gives them (TimesNodeBase::Validate): the same values in the
    same order, reshaped.  Any other shape is a :class:`ModelFileError` naming the file.

    >>> import numpy as np
    >>> from stadyn.graph import Variable
    >>> old = Variable((6, 4)); old.d = np.arange(24, dtype=np.float32).reshape(6, 4)
    >>> flat_times_weight("m", "W", old, Variable((3, 2, 4))).d[2, 1]
    array([20., 21., 22., 23.], dtype=float32)
    >>> flat_times_weight("m", "W", old, Variable((4, 6)))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    stadyn._errors.ModelFileError: m: parameter 'W' has shape (6, 4) in the file but (4, 6) in
    the network
    """
    if value.ndim == 2 and have.ndim > 2 and have.shape[-1] == value.shape[-1] and \
            math.prod(have.shape[:-1]) == value.shape[0]:
        reshaped = Variable(have.shape, need_grad=value.need_grad)
        reshaped.d = value.d.reshape(have.shape)
        return reshaped
    raise ModelFileError(f"{path}: parameter '{name}' has shape {value.shape} in the file but "
                         f"{have.shape} in the network")

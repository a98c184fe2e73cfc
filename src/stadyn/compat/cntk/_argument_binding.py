"""What a CNTK Function and a waiting one (``_deferred.Deferred``: an op on placeholders
without a shape, built once they are bound) do alike, written once over their own
``arguments``, ``placeholders`` and ``replace_placeholders``: :class:`ArgumentBinding`, mixed
into both (through ``_function_rebuild.FunctionRebuilding`` into ``Function``).  Below both:
an input of a given type is made through :mod:`._late` (``_signature``'s, which is above
``_deferred``).
"""

from __future__ import annotations

import warnings

import numpy as np

from . import _graph as G
from ._late import late
from ._mixins import GraphObject

__all__ = ["ArgumentBinding"]

_UNKNOWN = (-2,)        # (CNTK's shape of a variable whose shape is not known yet)


class ArgumentBinding:
    """What a Function and a waiting one (``_deferred.Deferred``, an op on placeholders without
    a shape) do alike, over their ``arguments``, ``placeholders`` and ``replace_placeholders``:
    ``argument_map``, ``replace_placeholder`` and the betas' ``declare_args`` (mixed into
    both).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(2, name="x")
        >>> [(a.name, v) for a, v in C.plus(x, 1.0).argument_map(x=3).items()]
        [('x', 3)]
    """

    __slots__ = ()

    def argument_map(self, *args, **kwargs) -> dict:
        """``{argument: value}`` from positional values (in the order of ``signature``) and
        keyword values (by argument name), one for each argument, as CNTK 2.7 maps them."""
        return self._bind_each(self.signature, args, kwargs)

    @staticmethod
    def _bind_each(params, args: tuple, kwargs: dict) -> dict:
        """``{param: value}``: ``args`` in order, ``kwargs`` by name, each of ``params`` given
        exactly once, with CNTK 2.7's TypeErrors (and its SyntaxError for a name given twice)
        otherwise; the one check of a Function's and a waiting one's calls and
        ``update_signature``."""
        if len(args) + len(kwargs) != len(params):
            raise TypeError(f"CNTK Function expected {len(params)} arguments, got "
                            f"{len(args) + len(kwargs)}")
        mapping = dict(zip(params, args))
        by_name = {p.name: p for p in params}
        for key, value in kwargs.items():
            if key not in by_name:
                raise TypeError(f"got an unexpected keyword argument {key!r}")
            if by_name[key] in mapping:
                raise SyntaxError(f"got multiple values for argument {key!r}")
            mapping[by_name[key]] = value
        return mapping

    def _typed_arguments(self, arg_types: tuple, kwarg_types: dict) -> dict:
        """``update_signature``'s ``{argument: input}``: each argument given a type (None
        leaves it out) mapped to an input of that type named as the argument, checked as
        CNTK 2.7 checks a value put in its place."""
        input_of_type = late("input_of_type")
        typed = {p: input_of_type(t, p.name)
                 for p, t in self.argument_map(*arg_types, **kwarg_types).items()
                 if t is not None}
        self._check_types(typed)
        return typed

    @staticmethod
    def _check_types(mapping: dict) -> None:
        """CNTK 2.7's TypeErrors for a value put in an argument's place (``{argument:
        value}``, a Function applied or given types): a value that is no Variable or
        Function, one of unknown shape for an argument with a known one, and one whose type
        (the shape's trailing axes, dynamic axes, dtype, sparsity) is not the argument's.
        Every argument but a placeholder is checked (a placeholder takes anything), as CNTK
        2.7's ``_replace_args_type_check`` (and but an input of a Stadyn model file standing
        for an untyped ``@C.Function``'s argument, a placeholder in CNTK's file)."""
        for i, (param, arg) in enumerate(mapping.items()):
            what = f"argument {param.name}" if param.name else f"positional argument {i}"
            if not isinstance(arg, GraphObject) and not getattr(type(arg), "_cntk_function",
                                                                  False):   # (a waiting one)
                raise TypeError(f"{what} was passed an object that is not a Variable or "
                                "Function")
            if param.is_placeholder or tuple(param.shape) == _UNKNOWN:
                continue
            outputs = arg.outputs if hasattr(arg, "root_function") else (arg,)
            if len(outputs) != 1:
                continue            # (CNTK 2.7 asks a Function of several outputs no type)
            given, wanted = outputs[0], param
            if param.variable in G.UNTYPED_INPUTS:
                _check_saved_type(what, given, wanted)
                continue
            shape, own = tuple(given.shape), tuple(wanted.shape)
            if shape == _UNKNOWN:
                raise TypeError(f"{what} has a known shape, and cannot be passed a Variable "
                                "of unknown shape")
            if (len(shape) < len(own) or shape[len(shape) - len(own):] != own
                    or (given.dynamic_axes and tuple(given.dynamic_axes) !=
                        tuple(wanted.dynamic_axes))
                    or given.dtype != wanted.dtype or given.is_sparse != wanted.is_sparse):
                raise TypeError(f"{what}'s type {wanted._type} is incompatible with the type "
                                f"{given._type} of the passed Variable")

    def replace_placeholder(self, substitution):
        """Replace the only placeholder (:meth:`replace_placeholders`, whose result it
        returns)."""
        placeholders = self.placeholders
        if len(placeholders) != 1:      # (CNTK 2.7's words, its Function.cpp)
            shown = getattr(substitution, "output", substitution)
            raise ValueError(f"ReplacePlaceholder called with a single replacement Variable "
                             f"'{shown}' but this Function '{self!r}' has {len(placeholders)} "
                             f"placeholders '{', '.join(str(p) for p in placeholders)}'")
        return self.replace_placeholders({placeholders[0]: substitution})

    def declare_args(self, *arg_types) -> None:
        """The 2017 betas' ``update_signature`` (deprecated): the placeholders, in order,
        replaced by the given Variables or by inputs of the given shapes."""
        warnings.warn("This will be removed in future versions. Please use "
                      "update_signature(...) instead", DeprecationWarning, stacklevel=2)
        placeholders = self.placeholders
        if len(arg_types) != len(placeholders):
            raise TypeError(f"CNTK Function.declare_args() expected {len(placeholders)} "
                            f"arguments, got {len(arg_types)}")
        mapping = {p: t if isinstance(t, GraphObject) else late("input_of_type")(t)
                   for p, t in zip(placeholders, arg_types)}
        self._check_types(mapping)
        self.replace_placeholders(mapping)


def _check_saved_type(what: str, given, wanted) -> None:
    """An argument of a Stadyn model file standing for an untyped ``@C.Function``'s (saved in
    Stadyn's format where CNTK's writer has no form for an op) takes only the type of the
    operand the Function was applied to before it was saved: its graph was built for that
    size (a reshape to the saved shape, a product with a saved table), where CNTK 2.7's
    file, of placeholders, takes any.  A TypeError for an operand of another number of
    elements per sample (the same number in other axes, or on other dynamic axes, is taken:
    a decoder saved after decoding reads its history so)."""
    shape, own = tuple(given.shape), tuple(wanted.shape)
    if any(d < 0 for d in shape + own) or \
            int(np.prod(shape, dtype=np.int64)) == int(np.prod(own, dtype=np.int64)):
        return
    raise TypeError(f"{what}: this Stadyn model file holds the untyped Function's graph for "
                    f"the operand it was applied to before it was saved, of type "
                    f"{wanted._type}; it cannot take {given._type} (CNTK 2.7's file of such a "
                    "Function takes any type: Stadyn writes its own format where CNTK's "
                    "writer has no form for an op). Apply the Function to an operand of this "
                    "type before saving it")

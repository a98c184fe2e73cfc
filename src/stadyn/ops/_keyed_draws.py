"""Draws whose generator is named by a tensor: what a compiled step's program calls.

Stadyn's drawing operators (``stadyn_kernels::cntk_draw``, ``nnabla_draw``, ...) take the
``torch.Generator`` they draw from as their last argument.  A traced step holds that generator
as a constant of its graph, which inductor's on-disk cache cannot keep: a program loaded from
the cache in a new process calls the operator with ``None`` for it (torch 2.13 restores a
graph's tensor constants, not its opaque ones).  :func:`keyed_draw_op` gives the operator's
keyed form, ``<name>_keyed``: the same arguments, the generator replaced by a 0-d int64 tensor
holding :func:`generator_key`'s number for it, so the program takes the generator as an input
(compile/_generators.py) and a cached program draws from the generator of the process that
runs it.  The keyed form calls the operator itself with that generator: the same numbers, the
same stream moved on.
"""

from __future__ import annotations

import itertools
import re
import threading
import weakref

import torch

from ._kernel_op import kernel_op

__all__ = ["generator_key", "keyed_draw_op"]

#: the generators given a key, by their key (weakly: a compiled step keeps its own alive)
_BY_KEY: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_KEY_OF: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # a generator -> its key
_KEYS = itertools.count(1)
_LOCK = threading.Lock()
_KEYED: dict = {}                           # an operator -> its keyed form (None: has none)
_DEFINING = threading.Lock()                # (held while one is looked up or defined)
# the operator's generator, its last argument, as the schema spells it
_LAST_GENERATOR = re.compile(r",\s*Generator\??\s+(\w+)(=None)?\)\s*->")


def generator_key(generator: torch.Generator) -> int:
    """The number that names ``generator`` to the keyed draws (:func:`keyed_draw_op`) in this
    process: the same number for the same object while it lives.

    Example:
        >>> import torch
        >>> g, h = torch.Generator(), torch.Generator()
        >>> generator_key(g) == generator_key(g), generator_key(g) == generator_key(h)
        (True, False)
    """
    with _LOCK:
        key = _KEY_OF.get(generator)
        if key is None:
            key = _KEY_OF[generator] = next(_KEYS)
            _BY_KEY[key] = generator
        return key


def _generator_of(key: torch.Tensor) -> torch.Generator:
    generator = _BY_KEY.get(int(key))
    if generator is None:
        raise RuntimeError(f"a keyed draw was given the key {int(key)}, which names no live "
                           "generator in this process")
    return generator


def keyed_draw_op(op):
    """The keyed form of the drawing operator ``op`` (a ``stadyn_kernels`` ``OpOverload`` whose
    last argument is its ``Generator``): the same arguments with a 0-d int64 tensor holding a
    :func:`generator_key` in the generator's place; None for any other operator.

    Example:
        >>> import torch
        >>> from stadyn.ops import CNTKStream
        >>> draw = torch.ops.stadyn_kernels.cntk_draw.default
        >>> keyed = keyed_draw_op(draw)
        >>> g = CNTKStream(7).handle()
        >>> keyed(3, 0.5, 0.0, [6], torch.float32, torch.tensor(generator_key(g))).tolist()
        [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
        >>> keyed_draw_op(torch.ops.aten.rand.default) is None
        True
    """
    with _DEFINING:
        if op not in _KEYED:
            _KEYED[op] = _keyed_form(op)
        return _KEYED[op]


def _keyed_form(op):
    """The keyed form of ``op``, defined now (:func:`keyed_draw_op`), or None."""
    schema = str(getattr(op, "_schema", ""))
    namespace, _, rest = schema.partition("::")
    name = rest.partition("(")[0]
    match = _LAST_GENERATOR.search(schema)
    keyed = None
    if namespace == "stadyn_kernels" and "." not in name and match is not None:
        keyed_schema = (schema[schema.index("("):match.start()]
                        + f", Tensor {match.group(1)}_key) ->" + schema[match.end():])

        def impl(*args):
            return op(*args[:-1], _generator_of(args[-1]))

        def fake(*args):
            return op(*args[:-1], torch.Generator())

        keyed = kernel_op(f"stadyn_kernels::{name}_keyed", keyed_schema, impl, fake,
                          tags=tuple(op.tags))
    return keyed

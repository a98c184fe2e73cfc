"""What a CNTK layer not applied yet shows (:class:`UnappliedLayerView`, mixed into
``_layers_function.LayerFunction``).

CNTK 2.7 makes a layer a Function over placeholders when it is made: ``C.layers.Dense(3)``
has ``shape`` ``(-2,)``, a placeholder argument named as the layer's Python argument
(``x``; ``dh``, ``dc``, ``x`` for an ``LSTM``; ``keep`` for a ``Sequential``), is a composite
and not a block.  Stadyn builds a layer's graph when it is applied, so until then these are
answered here; once the layer has a signature (``update_signature``), its Function's.
"""

from __future__ import annotations

import numpy as np

from ._deferred_operands import waiting_of
from ._deferred_runs import refuse_grad, refuse_run
from ._late import late
from ._printed import function_repr
from ._swig_handles import SwigHandle

__all__ = ["NextOutput", "UnappliedLayerView", "UnappliedRoot"]


class UnappliedLayerView(SwigHandle):
    """A layer's view as a Function before it is applied (see the module's text).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> d = C.layers.Dense(3)
        >>> d.shape, d.arguments, d.is_composite, d.is_block
        ((-2,), (Placeholder('x', [???], [???]),), True, False)
        >>> d.placeholders == d.arguments
        True
    """

    def _shown(self):
        """``(name, op, argument names, number of outputs)`` as CNTK 2.7 prints the layer
        (``_layers_function._shown_layer``); None for a layer CNTK makes no Function of."""
        raise NotImplementedError

    def _shown_signature(self) -> "tuple[tuple, int]":
        """The names of its arguments, as CNTK 2.7 names its placeholders, and its number of
        outputs."""
        shown = self._shown()
        return (shown[2], shown[3]) if shown is not None else (("keep",), 1)

    def _shown_name_and_op(self) -> "tuple[str, str]":
        """``(name, op name)`` CNTK 2.7 prints the layer applied with (``Dense``;
        ``Composite`` for several)."""
        shown = self._shown()
        return (shown[0], shown[1]) if shown is not None else (self.name, "Composite")

    def _one_output(self, name: str) -> None:
        """CNTK 2.7's AttributeError for ``name`` of a layer of several outputs (an LSTM's)."""
        if self._shown_signature()[1] != 1:
            raise AttributeError(f"Function does not have '{name}' and it cannot be looked up "
                                 "in its outputs because it does not have exactly one")

    def _argument_placeholders(self) -> tuple:
        """Its arguments: placeholders without a shape, the same ones each time (the one
        an op on the layer reads, for a layer of one argument)."""
        made = self.__dict__.get("_arguments")
        if made is None:
            names = self._shown_signature()[0]
            if len(names) == 1:
                made = (self._own_placeholder(),)
            else:
                from ._variables import placeholder
                made = tuple(placeholder(name=n) for n in names)
            self.__dict__["_arguments"] = made
        return made

    @property
    def arguments(self) -> tuple:
        """Its placeholders (``(Placeholder('x', [???], [???]),)``); once it has a signature,
        its Function's arguments."""
        if self._signature is not None:
            return self._signature.arguments
        return self._argument_placeholders()

    @property
    def placeholders(self) -> tuple:
        """Its placeholders, as ``arguments``; once it has a signature, none left."""
        if self._signature is not None:
            return self._signature.placeholders
        return self._argument_placeholders()

    def eval(self, arguments=None, outputs=None, device=None, as_numpy: bool = True):
        """Refused, as CNTK 2.7 refuses to run a layer over its own placeholders (ValueError
        ``function expects 1 arguments`` without data, RuntimeError ``Unknown DataType.``
        with data); once it has a signature, its Function's.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> try:
            ...     C.layers.Dense(2).eval()
            ... except ValueError as e:
            ...     print(e)
            function expects 1 arguments
        """
        if self._signature is not None:
            return self._signature.eval(arguments, outputs, device, as_numpy)
        refuse_run(self, self._root_op_name(), arguments, "eval")

    def forward(self, arguments=None, outputs=None, keep_for_backward=None, device=None,
                as_numpy: bool = True):
        """Refused, as :meth:`eval`."""
        if self._signature is not None:
            return self._signature.forward(arguments, outputs, keep_for_backward, device,
                                           as_numpy)
        refuse_run(self, self._root_op_name(), arguments, "forward")

    def grad(self, at, wrt=None, outputs=None, device=None, as_numpy: bool = True,
             grad_root=None):
        """Refused, as :meth:`eval` (without ``wrt``, first because its placeholders need no
        gradient: CNTK 2.7's ValueError ``None of the Function ... 'needs_gradient ==
        True'``)."""
        if self._signature is not None:
            return self._signature.grad(at, wrt, outputs, device, as_numpy, grad_root)
        refuse_grad(self, self._root_op_name(), at, wrt)

    @property
    def shape(self) -> tuple:
        """``(-2,)``, CNTK's unknown shape (an AttributeError for a layer of several
        outputs); once it has a signature, its output's."""
        if self._signature is not None:
            return self._signature.shape
        self._one_output("shape")
        return (-2,)

    @property
    def dtype(self):
        """``np.float32``, its parameters' (those of a layer applied in float64 once it
        has them: ``default_options(dtype=np.float64)``)."""
        if self._signature is not None:
            return self._signature.dtype
        self._one_output("dtype")
        found = {np.dtype(p.dtype) for p in self.parameters}
        return np.float64 if np.dtype(np.float64) in found else np.float32

    @property
    def is_composite(self) -> bool:
        return True if self._signature is None else self._signature.is_composite

    @property
    def uid(self) -> str:
        """``CompositeFunction<n>``, numbered after its output's (``Block<n - 1>_Output_0``),
        as CNTK 2.7's composite; once it has a signature, its Function's."""
        if self._signature is not None:
            return self._signature.uid
        first = self._first_output()        # (a layer of several outputs: its first's)
        number = "".join(c for c in first.uid.rpartition("_Output_")[0] if c.isdigit())
        return f"CompositeFunction{int(number or 0) + 1}"

    @property
    def op_name(self) -> str:
        """``CompositeFunctionOpName``, as CNTK 2.7's layer (a composite Function over its
        placeholders); once it has a signature, its Function's."""
        if self._signature is not None:
            return self._signature.op_name
        return "CompositeFunctionOpName"

    @property
    def inputs(self) -> tuple:
        """Its declared parameters then its placeholders, as CNTK 2.7 lists a layer's inputs
        before it is applied (where Stadyn models its parameters: see ``parameters``); once
        it has a signature, its Function's.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> [(i.name, i.shape) for i in C.layers.Dense(3).inputs]
            [('W', (-1, 3)), ('b', (3,)), ('x', (-2,))]
        """
        if self._signature is not None:
            return self._signature.inputs
        known = self._known_parameters()
        if known is None:
            raise AttributeError(f"{self.kind or 'layer'}: its inputs before it is applied are "
                                 "not modelled for this layer (apply it, or give it a "
                                 "signature: update_signature)")
        return tuple(known) + tuple(self.arguments)

    @property
    def is_block(self) -> bool:
        return False if self._signature is None else self._signature.is_block

    def find_all_with_name(self, name: str, depth: int = 0) -> list:
        """The functions and variables named ``name`` in the layer's graph, as CNTK 2.7's
        Function over its placeholders holds it (``depth`` 0: its blocks are not entered;
        deeper, the ValueError of ``depth_first_search``: they hold nothing until applied).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> s = C.layers.Sequential([C.layers.Dense(4, name="d1"),
            ...                          C.layers.Dense(2, name="d2")])
            >>> [(f.name, f.op_name) for f in s.find_all_with_name("d2")]
            [('d2', 'Dense')]
        """
        if self._signature is not None:
            return self._signature.find_all_with_name(name, depth)
        return late("find_all_with_name")(self, name, depth)

    def find_by_name(self, name: str, depth: int = 0):
        """The function or variable named ``name`` (:meth:`find_all_with_name`): None when
        there is none, CNTK 2.7's ValueError when there are several."""
        if self._signature is not None:
            return self._signature.find_by_name(name, depth)
        return late("find_by_name")(self, name, depth)

    @property
    def constants(self) -> tuple:
        """The constants among its inputs: before it is applied, those CNTK 2.7's layer makes
        with it (a batch normalisation's running statistics, of shape ``(-1,)``; a GRU's
        constant 1; a layer normalisation's epsilon); once it has a signature, its
        Function's.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> [(c.name, c.shape) for c in C.layers.BatchNormalization().constants]
            [('aggregate_mean', (-1,)), ('aggregate_variance', (-1,)), ('aggregate_count', ())]
        """
        if self._signature is not None:
            return self._signature.constants
        known = self._known_parameters()
        if known is None:
            raise AttributeError(f"{self.kind or 'layer'}: its constants before it is applied "
                                 "are not modelled for this layer (apply it, or give it a "
                                 "signature: update_signature)")
        return tuple(p for p in known if getattr(p, "is_constant", False))

    def _unapplied_outputs(self) -> tuple:
        """Its outputs before it is applied, the same ones each time: one of unknown shape
        per output (an LSTM's two: ``Block<n>_Output_0``, ``Block<n>_Output_1``)."""
        made = self.__dict__.get("_outputs")
        if made is None:
            first = self._first_output()     # (the layer's: LayerFunction)
            made = (first,) + tuple(NextOutput(first, k)
                                    for k in range(1, self._shown_signature()[1]))
            self.__dict__["_outputs"] = made
        return made

    def _root_op_name(self) -> str:
        raise NotImplementedError

    def _unapplied_repr(self) -> str:
        """As CNTK 2.7's ``repr`` of the layer not applied yet: ``Composite(Dense):
        Placeholder('x', [???], [???]) -> Output('Block5_Output_0', [???], [???])``."""
        from ._printed import function_repr
        return function_repr(self._root_op_name(), True, self.arguments,
                             self._unapplied_outputs())

    def _known_parameters(self) -> "tuple | None":
        raise NotImplementedError


class NextOutput:
    """The output ``k`` (after the first) of a layer not applied yet (an LSTM's cell state):
    ``<uid of the first without _0>_<k>``, of unknown shape.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> lstm = C.layers.LSTM(3)
        >>> first, second = lstm.outputs
        >>> second.uid == first.uid[:-1] + "1", second.shape
        (True, (-2,))
    """

    is_output = True
    is_placeholder = is_input = is_parameter = is_constant = False

    def __init__(self, first, k: int):
        self._first, self._k = first, k

    @property
    def uid(self) -> str:
        return self._first.uid.rpartition("_")[0] + f"_{self._k}"

    name = ""
    shape = (-2,)

    @property
    def owner(self):
        return waiting_of(self._first)

    def __repr__(self) -> str:
        return f"Output('{self.uid}', [???], [???])"


class UnappliedRoot:
    """The root Function of a CNTK layer not applied yet (``layer.root_function``), as CNTK
    2.7 shows it: its op (``Dense``; ``NoOp``; ``Combine`` for a ``Recurrence``; an unnamed
    ``Sequential``'s last step's: ``ReLU``), name, inputs and output; a block unless a
    ``NoOp``, a ``Combine`` or a primitive op (``is_block``, where given).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> root = C.layers.Embedding(5).root_function
        >>> root.op_name, root.is_block, [(i.name, i.shape) for i in root.inputs]
        ('Embedding', True, [('E', (-1, 5)), ('x', (-2,))])
    """

    is_composite = False
    _operand_is_output = True     # (an op's operand: its output, _adapt.root_as_output)

    @property
    def __class__(self):
        """``C.Function``, as CNTK 2.7's root function is one (``isinstance(n, C.Function)``
        in a visitor of a walk holds for it)."""
        return late("Function")

    def __init__(self, op_name: str, name: str, inputs: tuple, output,
                 is_block: "bool | None" = None):
        self.op_name, self.name, self.inputs, self.output = op_name, name, inputs, output
        self.is_block = op_name not in ("NoOp", "Combine") if is_block is None else is_block
        self.outputs = (output,)
        self.attributes: dict = {}

    @property
    def root_function(self) -> "UnappliedRoot":
        return self

    @property
    def shape(self) -> tuple:
        """Its output's shape: unknown, ``(-2,)``, as CNTK 2.7's before the layer is applied
        (a walk's functions have one; it raised an AttributeError)."""
        return tuple(getattr(self.output, "shape", (-2,)))

    @property
    def uid(self) -> str:
        """Its output's uid less ``_Output_0`` (``Block12``, ``ReLU12``), as CNTK 2.7's."""
        return self.output.uid.rpartition("_Output_")[0]

    @property
    def parameters(self) -> tuple:
        return tuple(i for i in self.inputs if getattr(i, "is_parameter", False))

    @property
    def arguments(self) -> tuple:
        """Its inputs but the parameters and constants (an output of the steps before, a
        placeholder), as CNTK 2.7's root function's."""
        return tuple(i for i in self.inputs if not (getattr(i, "is_parameter", False)
                                                    or getattr(i, "is_constant", False)))

    @property
    def placeholders(self) -> tuple:
        return tuple(i for i in self.inputs if getattr(i, "is_placeholder", False))

    def __repr__(self) -> str:
        """As CNTK 2.7's: ``Dense: Placeholder('x', [???], [???]) -> Output('Block5_Output_0',
        [???], [???])``."""
        return function_repr(self.op_name, False, self.arguments, self.outputs)

"""``@C.Function`` of a Python function with untyped arguments (CNTK 2.7's Function over
placeholders of unknown shape): :class:`_Deferred` holds the graph its body made over them as
it was decorated and builds it on the operands of each call (``_body_runs``), or runs the body
again where it cannot; ``update_signature`` and ``replace_placeholders`` make it the Function
of its graph on inputs or Variables; :func:`waiting_function` is a loaded model file's.

Example:
    >>> import stadyn.compat.cntk as C
    >>> @C.Function
    ... def f(a, b):
    ...     return a + b
    >>> type(f).__name__, [v.shape for v in f.arguments]
    ('_Deferred', [(-2,), (-2,)])
"""

from __future__ import annotations

from ...graph import joint_inference
from . import _graph as G
from ._adapt import STRICT_DYNAMIC_AXES, ShapelessPlaceholderError, unwrap
from ._argument_binding import ArgumentBinding
from ._axis import Axis
from ._body_results import as_function, in_signature_order, reads_any, unapplied_output, waits
from ._body_runs import OVER_SHAPELESS, replayable
from ._deferred import Deferred, pending
from ._deferred_runs import refuse_grad, refuse_run
from ._late import late
from ._mixins import GraphObject, TensorOpsMixin
from ._model_file import ModelFormat
from ._model_save import save_roots
from ._user_clones import body_run
from ._variables import input_variable, placeholder

__all__ = ["waiting_function"]


class _Deferred(TensorOpsMixin, ArgumentBinding):
    """``@C.Function`` of a Python function with untyped arguments: its ``arguments`` are
    placeholders of unknown shape (``(-2,)``, as CNTK shows them); calling it on Functions or
    Variables builds the graph for their shapes; once given types (``update_signature``) it
    is the Function of its graph on inputs of those types (given some, those arguments are
    inputs, the others wait)."""

    _cntk_function = True       # (isinstance(f, C.Function), as CNTK 2.7's)
    _waiting_function = True    # (a body's result waiting for its placeholders' shapes)
    # an op's operand (``C.relu(f)``, ``C.combine([f])``): its output (_adapt.root_as_output),
    # before it has types its graph's over its placeholders, so the op waits as CNTK's Function
    # over placeholders does
    _operand_is_output = True

    def __init__(self, fn, placeholders: list, first_user_functions: "list | None" = None):
        self._fn = fn
        self._first_user_functions = list(first_user_functions or [])
        self._placeholders = list(placeholders)
        self._given: dict = {}      # {argument name: the Variable put in its place}
        self._typed = None          # the Function its graph is, once every argument has one
        self.name = getattr(fn, "__name__", "")

    @property
    def arguments(self) -> tuple:
        """The arguments: placeholders without a shape, those given a type or a Variable
        (``update_signature``, ``replace_placeholders``) in their place (once all are, its
        Function's)."""
        if self._typed is not None:
            return self._typed.arguments
        return tuple(self._given.get(p.name, p) for p in self._placeholders)

    @property
    def placeholders(self) -> tuple:
        """The arguments still placeholders, in the order a walk of its graph meets them, as
        CNTK 2.7 lists them (a loaded file's: ``_placeholder_order``, its names)."""
        if self._typed is not None:
            return self._typed.placeholders
        found = [p for p in self._placeholders if p.name not in self._given]
        order = self.__dict__.get("_placeholder_order")
        if order and all(p.name in order for p in found):
            found.sort(key=lambda p: order.index(p.name))
        elif len(found) > 1:        # (as the walk of its graph meets them: CNTK 2.7's)
            walked = [id(v.variable) for v in getattr(self._on_placeholders(), "placeholders", ())]
            found.sort(key=lambda p: (walked + [id(p.variable)]).index(id(p.variable)))
        return tuple(found)

    @property
    def signature(self) -> tuple:
        """The arguments, as a tuple."""
        return tuple(self.arguments)

    def update_signature(self, *arg_types, **kwarg_types) -> None:
        """Give the arguments types (``3``, ``(3, 2)``, ``Tensor[3]``, ``Sequence[...]``;
        None leaves one untyped), in place: once every argument has one, the graph is built
        on inputs of those types, named after the arguments, and this is its Function from
        now on.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> dense = C.layers.Dense(2, init=1.0)   # (made outside: CNTK refuses it inside)
            >>> @C.Function
            ... def f(a, b):
            ...     return dense(a) + b
            >>> f.update_signature(None, 2)
            >>> [(v.name, v.shape) for v in f.arguments]
            [('a', (-2,)), ('b', (2,))]
            >>> f.update_signature(3, None)
            >>> [(v.name, v.shape) for v in f.arguments], f(np.ones((1, 3), np.float32),
            ...                                              np.ones((1, 2), np.float32)).tolist()
            ([('a', (3,)), ('b', (2,))], [[4.0, 4.0]])
        """
        if self._typed is not None:
            self._typed.update_signature(*arg_types, **kwarg_types)
            return
        self.replace_placeholders(self._typed_arguments(arg_types, kwarg_types))

    def replace_placeholders(self, substitutions: dict) -> "_Deferred":
        """Put Variables in the place of arguments (``{placeholder: variable}``); once every
        argument has one, the graph is built on them and this is its Function.  Returns
        itself."""
        if self._typed is not None:
            self._typed.replace_placeholders(substitutions)
            return self
        waiting = {id(unwrap(p)): p.name for p in self.placeholders}
        for ph in reversed(list(substitutions)):         # (CNTK 2.7: the last given first)
            if id(unwrap(ph)) not in waiting:
                raise G.not_found(ph, self)
        for ph, new in substitutions.items():
            self._given[waiting[id(unwrap(ph))]] = new
        for made in ("_shown", "_waiting", "_waiting_call", "_untyped_graph"):   # (of the old)
            self.__dict__.pop(made, None)
        if len(self._given) == len(self._placeholders):
            values = list(self.arguments)
            self._typed = in_signature_order(as_function(self._built(values, "bound")),
                                              values)
        return self

    def _file_graph(self):
        """The graph of the loaded file it is (``_loaded_untyped.FileGraph``) while none of
        its arguments is given a type or a Variable; else None."""
        if self.__dict__.get("_typed") is not None or self.__dict__.get("_given"):
            return None
        return self.__dict__.get("_loaded_graph")

    def _built(self, values: list, call: "bool | str" = False):
        """Its Python function's graph for ``values`` put in its arguments' place, its ops
        checked as CNTK 2.7 checks the ops it made over placeholders (an op of a sequence and
        a value without one: CNTK's RuntimeError); in a ``call``, each user function the
        clone of the one the first run made (``_user_clones``: CNTK 2.7 builds the body once
        and clones it), with ``call="bound"`` that one itself (arguments bound in place)."""
        strict = STRICT_DYNAMIC_AXES[0]
        STRICT_DYNAMIC_AXES[0] = True
        try:
            replayed = self._replayed(values, call)
            if replayed is not None:
                return replayed
            with body_run(self._first_user_functions, cloned=call):
                return self._fn(*values)
        finally:
            STRICT_DYNAMIC_AXES[0] = strict

    def _replayed(self, values: list, call: "bool | str"):
        """The graph its body made over its placeholders as it was decorated (CNTK 2.7 runs
        the body once), built on ``values`` in their place: in a ``call``, a clone of it
        (its parameters shared, each user function's ``clone``), with ``call="bound"`` bound
        in place; None where there is no such graph, or a value has no shape yet (the body
        runs again on them)."""
        waiting = self.__dict__.get("_decorated")
        if not isinstance(waiting, Deferred) or not call or pending(tuple(values), {}) or \
                not all(replayable(part._fn) for part in waiting._parts()):
            return None
        reads = {id(p.variable) for p in waiting.placeholders}
        if not reads <= {id(p.variable) for p in self._placeholders}:
            return None     # (it reads another's placeholder too: an enclosing body's)
        subs = {p: v for p, v in zip(self._placeholders, values) if id(p.variable) in reads}
        # an op refusing the operands' shapes, types or axes raises here, as CNTK 2.7's
        # clone of the graph the body made once raises it (ValueError or RuntimeError as it
        # infers the graph; the body is not run again)
        built = waiting.bound_to(subs) if call == "bound" else waiting.clone("share", subs)
        if waits(built) or reads_any(built, subs):
            return None     # (a part still waiting, or a layer's Python function read what
            # the body made over the placeholders: the body runs again on the operands)
        return built

    def eval(self, arguments=None, outputs=None, device=None, as_numpy: bool = True):
        """Its Function's ``eval`` once its arguments have types; before, refused as CNTK
        2.7 refuses a run of a Function over placeholders: ValueError ``function expects N
        arguments`` without data, ValueError ``... have not been provided.`` naming the
        arguments given none, else RuntimeError ``Unknown DataType.``.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> @C.Function
            ... def f(a, b):
            ...     return a + b
            >>> f.eval({})
            Traceback (most recent call last):
              ...
            ValueError: function expects 2 arguments
        """
        if self._typed is not None:
            return self._typed.eval(arguments, outputs, device, as_numpy)
        refuse_run(self, self.name, arguments, "eval")

    def forward(self, arguments=None, outputs=None, keep_for_backward=None, device=None,
                as_numpy: bool = True):
        """Its Function's ``forward`` once its arguments have types; before, refused as
        :meth:`eval`."""
        if self._typed is not None:
            return self._typed.forward(arguments, outputs, keep_for_backward, device, as_numpy)
        refuse_run(self, self.name, arguments, "forward")

    def grad(self, at, wrt=None, outputs=None, device=None, as_numpy: bool = True,
             grad_root=None):
        """Its Function's ``grad`` once its arguments have types; before, refused as
        :meth:`eval` (without ``wrt``, first because no argument, a placeholder, needs a
        gradient)."""
        if self._typed is not None:
            return self._typed.grad(at, wrt, outputs, device, as_numpy, grad_root)
        refuse_grad(self, self.name, at, wrt)

    @property
    def outputs(self) -> tuple:
        """Its outputs: once typed, its Function's; before, those of the graph its Python
        function makes of its placeholders (of unknown shape, CNTK's ``Output('Plus5_Output_0',
        [???], [???])``)."""
        if self._typed is not None:
            return self._typed.outputs
        out = self.waiting_graph()
        return tuple(o for f in (out if isinstance(out, (tuple, list)) else (out,))
                     for o in f.outputs)

    def waiting_graph(self):
        """Before it has types, the graph CNTK 2.7 holds for it: its Python function's over
        its placeholders, each op waiting for their shapes (a function that needs their
        shapes to run: a waiting call of itself on them), built when the placeholders are
        bound; once typed, its Function."""
        if self._typed is not None:
            return self._typed
        out = self._on_placeholders()
        if out is None:
            out = self.__dict__.get("_waiting_call")
            if out is None:
                # (applied to its placeholders in its signature's order: a loaded file's
                # placeholders list gather's indices before the table it is applied to first)
                signed = [p for p in self._placeholders if p.name not in self._given]
                out = self.__dict__["_waiting_call"] = Deferred(self, signed, {},
                                                                name=self.name)
                if self._file_graph() is not None:      # (its output's uid, the file's)
                    out.__dict__["_uid"] = self._file_graph().root_function().outputs[0].uid
        return out

    @property
    def output(self):
        """Its only output (see :attr:`outputs`)."""
        outputs = self.outputs
        if len(outputs) != 1:
            raise RuntimeError(f"{self.name} has {len(outputs)} outputs; take one of "
                               "outputs")
        return outputs[0]

    @property
    def shape(self) -> tuple:
        """Its output's shape (before it has types, ``(-2,)``: unknown, as CNTK 2.7's)."""
        return self.output.shape

    @property
    def root_function(self):
        """Its root: before its arguments have types, that of its Python function's graph
        over its placeholders (waiting for their shapes, made once), as CNTK 2.7's Function
        over placeholders shows it; once typed, its Function's.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> @C.Function
            ... def f(a, b):
            ...     return a + b
            >>> f.root_function.op_name, [i.name for i in f.root_function.inputs]
            ('Plus', ['a', 'b'])
        """
        if self._typed is not None:
            return self._typed.root_function
        if self._file_graph() is not None:
            return self._file_graph().root_function()
        graph = self.__dict__.get("_untyped_graph")
        if graph is None:       # (the graph its body made as it was decorated, if any)
            made = self.__dict__.get("_decorated") if not self._given else None
            graph = self.__dict__["_untyped_graph"] = made if isinstance(made, Deferred) \
                else self._built(list(self.arguments))
        return graph.root_function

    def find_all_with_name(self, name: str, depth: int = 0) -> list:
        """Every node of its graph named ``name`` (before its arguments have types, those of
        its graph over its placeholders, as CNTK 2.7's walk; see ``logging.graph``)."""
        if self._typed is not None:
            return self._typed.find_all_with_name(name, depth)
        return late("find_all_with_name")(self, name, depth)

    def find_by_name(self, name: str, depth: int = 0):
        """The node of its graph named ``name``: None when there is none, a ValueError when
        there are several.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> @C.Function
            ... def f(a, b):
            ...     return a * 2 + b
            >>> f.find_by_name("a").is_placeholder, f.find_by_name("c")
            (True, None)
        """
        if self._typed is not None:
            return self._typed.find_by_name(name, depth)
        return late("find_by_name")(self, name, depth)

    def __getattr__(self, name: str):
        typed = self.__dict__.get("_typed")
        shown = self._file_graph()      # (a loaded file's graph, before it has types)
        if shown is not None and name in shown.COMPOSITE_ATTRIBUTES:
            return shown.composite_attribute(name)
        if typed is None or name.startswith("_"):
            raise AttributeError(f"{type(self).__name__} has no {name!r}")
        return getattr(typed, name)

    def __call__(self, *args, **kwargs):
        if self._typed is not None:
            return self._typed(*args, **kwargs)
        mapping = {a: unapplied_output(v) for a, v in self.argument_map(*args, **kwargs).items()}
        if not any(isinstance(v, (GraphObject, Deferred)) for v in mapping.values()):
            raise ValueError(f"{self.name}: its arguments have no types, so it applies to "
                             "Functions and Variables only (give the Python function a "
                             "signature to evaluate it on data)")
        self._check_types(mapping)
        values = [mapping[a] for a in self.signature]
        with joint_inference():          # CNTK infers the Function's graph with its operands
            out = self._built(values, call=True)
        applied = in_signature_order(as_function(out), values)
        # its parameters, not the graph (CNTK's Function is a graph over placeholders of its
        # own: the graphs it is applied into are the caller's to keep or drop)
        self._parameters = applied.parameters
        self._types = [(v.shape, (v.output if isinstance(v, Deferred) else v).is_sparse,
                        v.dynamic_axes) for v in values]
        return applied

    def save(self, filename, *args, **kwargs) -> None:
        """Save it as CNTK 2.7 does: its arguments placeholders of unknown shape named after
        them, the graph built for the types of the operands it was last applied to (its
        parameters the model's own, its user functions those its body made as it was
        decorated, not clones: CNTK 2.7 saves the graph the body made once; never applied,
        its graph over the placeholders, see ``_built_untyped``); what ``Function.load`` gives
        back waits for operands as this does
        (``Function.save``'s ``format`` and other options pass through; a graph saved as a
        Stadyn model file, having an op CNTK 2.7 has no form for, keeps its inputs typed).

        Example:
            >>> import os, tempfile, stadyn.compat.cntk as C
            >>> dense = C.layers.Dense(2)
            >>> @C.Function
            ... def model(x):
            ...     return C.relu(dense(x))
            >>> z = model(C.sequence.input_variable(3))
            >>> path = os.path.join(tempfile.mkdtemp(), "model.cmf")
            >>> model.save(path)
            >>> loaded = C.Function.load(path)
            >>> [(a.name, a.shape) for a in loaded.arguments]
            [('x', (-2,))]
            >>> loaded(C.sequence.input_variable(3, name="y")).shape
            (2,)
        """
        if self._typed is not None:
            self._typed.save(filename, *args, **kwargs)
            return
        types = self.__dict__.get("_types")
        if types is None:
            function = self._built_untyped()
        else:
            inputs = [input_variable(shape, is_sparse=sparse, dynamic_axes=axes, name=p.name)
                      for p, (shape, sparse, axes) in zip(self._placeholders, types)]
            function = in_signature_order(as_function(self._built(inputs, "bound")), inputs)
        save_roots(function._roots(), function.arguments, filename,
                   _save_format(*args, **kwargs), function._combine(), untyped=True,
                   stand_ins=types is None)

    def _built_untyped(self):
        """Its graph for a Function never applied, to be saved (CNTK 2.7 saves its graph over
        the placeholders): built on sequences of one value each, which the file forgets (its
        arguments are written as placeholders of unknown shape); a graph whose parameters take
        their shapes from the arguments' cannot be built so (ValueError, as before)."""
        refusal = ValueError(f"{self.name}: its arguments have no types and its graph has "
                             "parameters shaped by them, so it is saved once it has been "
                             "applied to Functions or Variables (their types are saved)")
        inputs = [input_variable(1, dynamic_axes=[Axis.default_batch_axis(),
                                                  Axis.default_dynamic_axis()], name=p.name)
                  for p in self._placeholders]
        try:
            function = in_signature_order(as_function(self._fn(*inputs)), inputs)
        except Exception as e:
            raise refusal from e
        if function.parameters:
            raise refusal
        return function

    @property
    def parameters(self) -> tuple:
        """The parameters of the graph it built when last applied (its layers hold them; CNTK
        lists them before, from its placeholders)."""
        if self._typed is not None:
            return self._typed.parameters
        parameters = self.__dict__.get("_parameters")
        if parameters is None:
            raise ValueError(f"{self.name}: its arguments have no types, so its parameters are "
                             "known once it is applied to Functions or Variables")
        return tuple(parameters)

    def __repr__(self) -> str:
        """Once typed, its Function's ``repr`` (CNTK's ``Composite(Plus): Input(...) ->
        Output(...)``); before, as ``str``."""
        return repr(self._typed) if self._typed is not None else str(self)

    def __str__(self) -> str:
        """As CNTK 2.7 prints it: the graph its Python function makes of its placeholders
        (``Plus(a: Sequence[tensor], b: Sequence[tensor]) -> Sequence[tensor]``; the function
        is run once more for it, each op waiting for the placeholders' shapes); once typed,
        its Function's.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> @C.Function
            ... def f(a, b):
            ...     return a + b
            >>> print(f)
            Plus(a: Sequence[tensor], b: Sequence[tensor]) -> Sequence[tensor]
        """
        if self._typed is not None:
            return str(self._typed)
        shown = self.__dict__.get("_shown")
        if shown is None:
            shown = self.__dict__["_shown"] = self._shown_on_placeholders()
        return shown

    def _shown_on_placeholders(self) -> str:
        untyped = f"Composite({self.name}: untyped arguments " \
                  f"{[p.name for p in self._placeholders]})"
        out = self._on_placeholders()
        return untyped if out is None or isinstance(out, (tuple, list)) else str(out)

    def _on_placeholders(self):
        """The graph its Python function makes of its arguments as they are (placeholders of
        unknown shape, each op waiting for their shapes), made once until they change; None
        for a function that needs its arguments' shapes to run."""
        if "_waiting" not in self.__dict__:
            try:
                self.__dict__["_waiting"] = self._fn(*self.arguments)
            except OVER_SHAPELESS:      # (it needs the shapes: none to show)
                self.__dict__["_waiting"] = None
        return self.__dict__["_waiting"]


def waiting_function(names: list, build, op_name: str = "Composite") -> _Deferred:
    """A Function of untyped arguments named ``names`` (placeholders of unknown shape) that
    ``build(*operands)`` gives the graph of when it is applied (a model file saved from an
    untyped ``@C.Function``), shown as CNTK 2.7 shows such a loaded model (``op_name``: the op
    its ``str`` shows)."""
    def fn(*values):
        if pending(values, {}, layers=False):   # (the file's graph is typed by the operands:
            # an op waiting for a placeholder's shape gives none; a @C.Function body applying
            # the model to one is built when it is applied, on operands with shapes)
            raise ShapelessPlaceholderError(f"{op_name}: a model file's Function applied to "
                                            "an op waiting for a placeholder's shape")
        return build(*values)
    fn.__name__ = ""
    waiting = _Deferred(fn, [placeholder(name=n) for n in names])
    shown = ", ".join(f"{n}: Sequence[tensor]" for n in names)
    waiting.__dict__["_shown"] = f"{op_name}({shown}) -> Sequence[tensor]"
    return waiting


def _save_format(format=ModelFormat.CNTKv2,
                 use_external_files_to_store_parameters: bool = False) -> ModelFormat:
    """The format ``Function.save``'s arguments name."""
    return format

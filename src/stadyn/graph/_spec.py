"""The op declaration: one :class:`OpSpec` per op, read by every part of Stadyn.

An op is written once, as a Python function over torch tensors whose signature *is* the
declaration: the first ``len(inputs)`` parameters are the op's tensor inputs (``*x`` for a
variadic op), the rest are attributes with their defaults; the body is the implementation and
the docstring is the documentation.  ``F``, both execution modes, the static lowering, model files,
ONNX export/import and BrainScript all read this object; nothing keeps a parallel list.  File
formats keep their rules for an op in tables keyed by this object (``stadyn.serialize``'s op
rules), so the declaration itself knows nothing of them.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable


__all__ = ["OpSpec", "SEQUENCE_FORMS"]

# The forms of ``OpSpec.sequence`` (applied by ``stadyn.graph._sequence.propagate``).
SEQUENCE_FORMS = ("keep", "drop", "of:NAME", "lengths:NAME", "lengths:outputK")


@dataclass(eq=False)
class OpSpec:
    """Declaration of one op.

    Attributes:
        name: the catalog name (NNabla's snake_case name, e.g. ``"convolution"``).
        impl: the torch implementation ``impl(*inputs, *attrs) -> Tensor | tuple[Tensor, ...]``.
        inputs: names of the tensor inputs, in order; ``"*x"`` marks a variadic op.
        attrs: attribute names and their defaults, in signature order.
        optional_inputs: inputs that may be ``None`` (e.g. a bias).
        shape: optional shape rule ``shape(meta_args, meta_kwargs) -> meta outputs``; by default
            the implementation itself runs on ``meta`` tensors.
        category: where the op is listed in the docs.
        traceable: False for an op that cannot be traced into generated code (collectives,
            data-dependent shapes); a static graph holding one runs eagerly (see
            :class:`stadyn.graph.EagerPlan`).
        precision: how the op casts its inputs in a half-precision context (``"any"``,
            ``"half"``, ``"mixed"``, ``"float"``; see :mod:`stadyn.graph._precision`).
        unstorable: empty for an op that model files and ONNX export hold; otherwise why a
            graph holding it cannot be saved (the error they raise says it).  ``grad``'s value
            depends on the graph behind its inputs, which a saved graph rebuilds instead.
        frameworks: the front ends whose API has the op (``{"cntk"}`` for CNTK's random and
            ranking Functions); empty: every front end (see :meth:`offered_by`).
        sequence: how the op's outputs relate to the sequence axis (``"keep"``, ``"drop"``,
            ``"of:NAME"``, ``"lengths:NAME"``, ``"lengths:outputK"``, one per output as a
            tuple, or a rule over the call's attributes and inputs); see
            :mod:`stadyn.graph._sequence`, which applies it to every op call.
        value_shape: empty, or what the output shape depends on among the inputs' *values*
            (``nonzero``: the count of nonzero elements).  Such an op cannot be traced: a static
            graph holding one runs eagerly, with that reason; building it infers the exact
            shape from the inputs' values where they hold some, else ``shape``'s provisional
            one (docs/getting-started-nnabla.md, "Shapes that depend on values").
        state: None, or a factory of the state one node of the op keeps from run to run (the
            forward count and last weights of NNabla's INQ layers): every node gets its own
            object when it is created, and the implementation receives it as its keyword-only
            parameter ``state`` on every run of that node, in every mode (such an op is
            declared ``traceable=False``: a traced program would not update it; not an attribute:
            model files do not store it, and a rebuilt node starts afresh, as NNabla's
            functions do when a network is loaded).  The shape rule does not receive it;
            without one, shape inference gives the implementation a fresh, throwaway state.
        elementwise: True for an op of several tensor inputs broadcast against each other
            (NumPy's rule) whose output element depends only on the inputs' elements at its
            position (``add2``, ``less``, ``where``); CNTK's first inference pass gives an
            operand of still unknown shape the other operands' shape through such an op
            (:mod:`stadyn.graph._first_pass`).
        forwards_inputs: True for an op whose output's forward is its inputs' too (NNabla's
            ``sink``): ``sink(loss, acc).forward()`` runs ``loss`` and ``acc`` as roots, so a
            ``loss.backward()`` after it reads that forward's values (its dropout masks) where
            it would otherwise run ``loss``'s forward again (``Variable.forward``).
        seeds_inputs: for an op whose backward writes nothing into its inputs' gradients, a
            rule of a call's attributes (``attrs -> bool``) saying when a backward from its
            output starts from each input made by an op too, with that input's gradient as it
            is then (NNabla's ``sink(one_input_grad=False)``: the program's ``l1.g = 0.3``
            flows back; :func:`~stadyn.graph._backward_seed.input_seeds`).
        keeps_input_dtype: a rule of a call's attributes (``attrs -> bool``) saying when the
            op's output is its input's array in NNabla, so a node bound to a float context
            keeps a half input's dtype where other ops read it as fp32
            (:func:`~stadyn.graph._precision.cast_for_node`): ``identity``, and ``reshape``
            with ``inplace=True``.
        computes_in_half: for an op declared ``"float"``, a rule of a call's attributes
            (``attrs -> bool``) saying when a node bound to a half context (an NNabla
            function made in ``cpu:half``) computes in that half type instead
            (:func:`~stadyn.graph._precision.cast_for_node`): ``sum`` and ``mean`` with
            ``rule="nnabla"``, whose fp16 fold is NNabla 1.39's CPU kernel; a rule may
            return ``"mixed"`` instead of True: only the first input made half
            (``categorical_cross_entropy``, whose float class ids stay exact).
        half_formula: whether the implementation takes the keyword ``half_formula=True``,
            which :func:`~stadyn.graph._precision.cast_for_node` passes to a node bound to
            a float16 context (an NNabla function made in ``cpu:half``): it then computes
            NNabla's ``Half`` expressions of the op (``@op(..., nnabla_half=...)``); any
            other call (Stadyn's own float16 graphs) computes torch's float16 kernels.
        rule: a shape rule ``rule(meta_args, meta_kwargs) -> meta outputs | None`` that
            :meth:`infer` tries before running the implementation on meta tensors (None: it
            cannot decide); ``@op`` sets it after the spec is made, bound to ``spec.impl`` as
            it is when it runs, from the declaration (``elementwise=True``,
            ``shape="elementwise"``, ``shape="reduce"``: ``stadyn/ops/_shape_rules.py``),
            so the first static op of a process does not reach torch's Python references,
            which import ``torch._dynamo``.
    """

    name: str
    impl: Callable[..., Any]
    inputs: tuple[str, ...]
    attrs: dict[str, Any]
    optional_inputs: frozenset[str] = frozenset()
    shape: Callable[..., Any] | None = None
    category: str = "misc"
    doc: str = ""
    traceable: bool = True
    precision: str = "any"
    unstorable: str = ""
    frameworks: frozenset[str] = frozenset()
    sequence: Any = "keep"
    value_shape: str = ""
    state: Callable[[], Any] | None = None
    elementwise: bool = False
    forwards_inputs: bool = False
    seeds_inputs: Callable[[dict], bool] | None = None
    keeps_input_dtype: Callable[[dict], bool] | None = None
    computes_in_half: Callable[[dict], bool] | None = None
    half_formula: bool = False
    rule: Callable[[list, dict], Any] | None = None
    _signature: inspect.Signature | None = field(default=None, repr=False)
    sets_sequence_axis: bool = field(default=False, init=False, repr=False)
    #: what static builds' shape inference found, by call (:mod:`stadyn.graph._shape_cache`)
    inferred: dict = field(default_factory=dict, init=False, repr=False)
    #: parameter name -> its position in the signature, as :meth:`position_of` found it
    _positions: dict = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def from_function(cls, impl: Callable[..., Any], n_inputs: int | None = None, *,
                      name: str | None = None, category: str = "misc",
                      shape: Callable[..., Any] | None = None, traceable: bool = True,
                      precision: str = "any", unstorable: str = "",
                      frameworks: tuple[str, ...] = (), sequence: Any = "keep",
                      value_shape: str = "",
                      state: Callable[[], Any] | None = None,
                      elementwise: bool = False, forwards_inputs: bool = False,
                      seeds_inputs: Callable[[dict], bool] | None = None,
                      keeps_input_dtype: Callable[[dict], bool] | None = None,
                      computes_in_half: Callable[[dict], bool] | None = None) -> "OpSpec":
        """Read the declaration off ``impl``'s signature (see the module docstring)."""
        sig = inspect.signature(impl)
        params = list(sig.parameters.values())
        if params and params[0].kind is inspect.Parameter.VAR_POSITIONAL:
            inputs: tuple[str, ...] = ("*" + params[0].name,)
            rest = params[1:]
        else:
            if n_inputs is None:
                raise TypeError(f"op {impl.__name__}: say how many leading parameters are inputs")
            inputs = tuple(p.name for p in params[:n_inputs])
            rest = params[n_inputs:]
        optional = frozenset(p.name for p in params[:len(inputs)]
                             if p.default is None and not p.name.startswith("*"))
        attrs = {p.name: (None if p.default is inspect.Parameter.empty else p.default)
                 for p in rest if p.kind is not inspect.Parameter.VAR_KEYWORD
                 and not (state is not None and p.name == "state")}
        if state is not None and sig.parameters.get("state") is None:
            raise TypeError(f"op {impl.__name__}: declared with state, so it takes a "
                            "keyword-only parameter 'state'")
        if state is not None and traceable:
            raise TypeError(f"op {impl.__name__}: declared with state, so it must run on every "
                            "run (traceable=False): a traced program would not update it")
        return cls(name=name or impl.__name__, impl=impl, inputs=inputs, attrs=attrs,
                   optional_inputs=optional, shape=shape, category=category,
                   doc=inspect.getdoc(impl) or "", traceable=traceable, precision=precision,
                   unstorable=unstorable, frameworks=frozenset(frameworks), sequence=sequence,
                   value_shape=value_shape, state=state, elementwise=elementwise,
                   forwards_inputs=forwards_inputs, seeds_inputs=seeds_inputs,
                   keeps_input_dtype=keeps_input_dtype, computes_in_half=computes_in_half,
                   _signature=sig)

    def __post_init__(self) -> None:
        # whether the op gives outputs a sequence axis even when no input has one (it names
        # lengths); apply reads it on every call, so it is worked out once here
        self.sets_sequence_axis = _check_sequence(self)

    def offered_by(self, framework: str) -> bool:
        """Whether the compat layer of ``framework`` (``"nnabla"``, ``"cntk"``) offers the op.

        Example:
            >>> from stadyn.ops import CATALOG
            >>> CATALOG["relu"].offered_by("nnabla"), CATALOG["lambda_rank"].offered_by("nnabla")
            (True, False)
        """
        return not self.frameworks or framework in self.frameworks

    @property
    def variadic(self) -> bool:
        return bool(self.inputs) and self.inputs[0].startswith("*")

    @property
    def signature(self) -> inspect.Signature:
        if self._signature is None:
            self._signature = inspect.signature(self.impl)
        return self._signature

    def position_of(self, name: str) -> int:
        """Where the parameter ``name`` (an input, an attribute, ``seed``) is among the op's
        parameters, found once per op.

        Example:
            >>> def draw(x, low=0.0, seed=None):
            ...     return x
            >>> OpSpec.from_function(draw, 1).position_of("seed")
            2
        """
        k = self._positions.get(name)
        if k is None:
            k = self._positions[name] = list(self.signature.parameters).index(name)
        return k

    def infer(self, meta_args: list, meta_kwargs: dict):
        """Output meta tensors for meta inputs (shape and dtype inference without computing)."""
        if self.state is not None:      # never a node's own (interpret passes it)
            meta_kwargs = {k: v for k, v in meta_kwargs.items() if k != "state"}
            if self.shape is None:
                meta_kwargs["state"] = self.state()
        if self.shape is not None:
            return self.shape(*meta_args, **meta_kwargs)
        if self.rule is not None:
            out = self.rule(meta_args, meta_kwargs)
            if out is not None:
                return out
        return self.impl(*meta_args, **meta_kwargs)

    def split_arguments(self, args: tuple, kwargs: dict) -> tuple[list, dict[str, Any]]:
        """``(inputs, attrs)`` of one call, defaults filled in; inputs keep ``None`` for absent
        optional inputs."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        if self.variadic:
            inputs = list(values.pop(self.inputs[0][1:]))
        else:
            inputs = [values.pop(n) for n in self.inputs]
        attrs = {k: values[k] for k in self.attrs if k in values}
        return inputs, attrs

    def attributes(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """Every attribute of one call, defaults filled in."""
        return self.split_arguments(args, kwargs)[1]

    def __call__(self, *args, **kwargs):
        """Run the implementation directly on torch tensors (no graph)."""
        return self.impl(*args, **kwargs)


def _check_sequence_form(spec: "OpSpec", form: Any) -> bool:
    """Check one form of a ``sequence`` declaration; whether it names lengths."""
    if form in ("keep", "drop"):
        return False
    kind, _, ref = form.partition(":") if isinstance(form, str) else ("", "", "")
    names = [n.lstrip("*") for n in spec.inputs]
    if kind == "of" and (ref in names or (ref.isdigit() and spec.variadic)):
        return False
    if kind == "lengths" and (ref in names or (ref.isdigit() and spec.variadic)
                              or (ref.startswith("output") and ref[6:].isdigit())):
        return True
    raise TypeError(f"op {spec.name}: sequence={form!r} is not one of {', '.join(SEQUENCE_FORMS)}"
                    f" (NAME an input of {spec.inputs}, or a position for a variadic op)")


def _check_sequence(spec: "OpSpec") -> bool:
    """Check ``spec.sequence`` (a rule is checked when it runs); whether it names lengths."""
    rule = spec.sequence
    if callable(rule):
        return False
    forms = rule if isinstance(rule, tuple) else (rule,)
    return any([_check_sequence_form(spec, f) for f in forms])

"""What a picture or a summary of a network shows, gathered once: :class:`GraphView`.

A view is a small, drawing-neutral copy of a graph: boxes (:class:`Box`: an op, an input, an
output, a shared parameter), the tensors flowing between them (:class:`Edge`: shape and dtype) and
the tree of scopes the ops were created in (:class:`Scope`).  :func:`view_of` builds one from
Stadyn Variables or a :class:`stadyn.serialize.Network`; :mod:`._legacy_view` from another
framework's decoded model file.  The renderers (:mod:`._dot`, :mod:`._html`) and the summary read
only this form.

Where things go:

* an op sits in the scope it was created in (``cnn/conv1/conv``); a parameter used by one op is
  listed inside that op's box; one shared by several ops is a box of its own, in the scope its
  name gives (``cnn/fc/affine/W`` -> ``cnn/fc/affine``);
* a scope that holds a single op and nothing else (no parameters, no inner scopes: a CNTK
  ``MaxPooling`` layer, an ONNX node's own name) is not drawn as a frame; the op's box carries
  the scope's name as its heading instead.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .._errors import StadynError
from ..graph import FunctionNode, Variable, topological_nodes

__all__ = ["Tensor", "Param", "Box", "Edge", "Scope", "GraphView", "view_of", "named_outputs",
           "short_dtype", "shape_text"]

_SHORT_DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
                 "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
                 "bool": "bool"}


def short_dtype(dtype: Any) -> str:
    """``'f32'`` for float32 (a NumPy or torch dtype or a name), ``'i64'`` for int64 ...

    Example:
        >>> import numpy as np, torch
        >>> short_dtype(np.float32), short_dtype(torch.bfloat16), short_dtype("int64")
        ('f32', 'bf16', 'i64')
    """
    try:
        name = np.dtype(dtype).name
    except TypeError:                  # a torch dtype, or a name NumPy lacks (bfloat16)
        name = str(dtype).replace("torch.", "")
    return _SHORT_DTYPES.get(name, name)


def shape_text(shape: Sequence[int] | None) -> str:
    """A shape as the pictures print it: ``16×64×8×8``; ``?`` where unknown, ``scalar`` for ().

    Example:
        >>> shape_text((16, 64, 8, 8)), shape_text(()), shape_text((-1, 10)), shape_text(None)
        ('16×64×8×8', 'scalar', '?×10', '?')
    """
    if shape is None:
        return "?"
    if len(shape) == 0:
        return "scalar"
    return "×".join("?" if int(d) < 0 else str(int(d)) for d in shape)


@dataclass(frozen=True)
class Tensor:
    """What flows along an edge: a shape (``None`` if unknown) and a dtype name."""

    shape: tuple[int, ...] | None
    dtype: str = "float32"

    def __str__(self) -> str:
        return f"{shape_text(self.shape)} {short_dtype(self.dtype)}"


@dataclass
class Param:
    """A parameter as a picture lists it: full name, shape, dtype, and whether a solver trains it
    (running statistics do not)."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    trainable: bool = True

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def short_name(self) -> str:
        return self.name.rsplit("/", 1)[-1]


@dataclass
class Box:
    """One box of the picture.

    ``kind`` is ``"op"``, ``"input"``, ``"output"``, ``"parameter"`` (a shared one) or
    ``"constant"``; ``label`` the op's name (``convolution``) or the input's/output's name;
    ``scope`` where it is drawn; ``attrs`` the attributes worth printing (those not at their
    defaults), ``all_attrs`` every attribute; ``params`` the parameters listed inside it;
    ``constants`` the shapes of constant inputs; ``outputs`` what it produces; ``macs`` its
    multiply-adds (``None``: not counted, as for another framework's ops); ``heading`` a
    dissolved scope's name."""

    key: str
    kind: str
    label: str
    scope: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)
    all_attrs: dict[str, Any] = field(default_factory=dict)
    params: list[Param] = field(default_factory=list)
    constants: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)
    macs: int | None = 0
    heading: str = ""

    @property
    def n_parameters(self) -> int:
        return sum(p.size for p in self.params)


@dataclass(frozen=True)
class Edge:
    """A tensor going from box ``src`` to box ``dst``."""

    src: str
    dst: str
    tensor: Tensor


@dataclass
class Scope:
    """A node of the scope tree: ``path`` (``cnn/conv1``; ``""`` for the root), the name shown
    (the last part), inner scopes, the keys of the boxes directly in
    it, and ``index`` (its number in pre-order, used for ids in pictures)."""

    path: str
    name: str
    parent: "Scope | None" = None
    children: "OrderedDict[str, Scope]" = field(default_factory=OrderedDict)
    boxes: list[str] = field(default_factory=list)
    index: int = 0

    def walk(self) -> Iterable["Scope"]:
        """This scope and every scope below it, parents first."""
        yield self
        for child in self.children.values():
            yield from child.walk()

    @property
    def depth(self) -> int:
        return 0 if self.parent is None else self.parent.depth + 1

    def ancestors(self) -> list["Scope"]:
        """The scopes above this one, innermost first, the root excluded."""
        out, s = [], self.parent
        while s is not None and s.parent is not None:
            out.append(s)
            s = s.parent
        return out


@dataclass
class GraphView:
    """A network ready to be drawn or summarised (see the module docstring).

    Example:
        >>> import stadyn as sd, stadyn.functions as F, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()), sd.parameter_scope("net"):
        ...     y = F.relu(PF.affine(sd.Variable((4, 3)), 2))
        >>> v = view_of(y)
        >>> [(b.kind, b.label, b.scope) for b in v.boxes.values()]  # doctest: +NORMALIZE_WHITESPACE
        [('input', 'x', ''), ('op', 'affine', 'net/affine'), ('op', 'relu', 'net'),
         ('output', 'y', '')]
        >>> [p.name for p in v.boxes["n0"].params], v.n_parameters
        (['net/affine/W', 'net/affine/b'], 8)
    """

    boxes: "OrderedDict[str, Box]"
    edges: list[Edge]
    root: Scope
    title: str = ""

    def scope(self, path: str) -> Scope:
        """The scope at ``path`` (a :class:`StadynError` naming the scopes there are if none)."""
        for s in self.root.walk():
            if s.path == path:
                return s
        raise StadynError(f"no scope {path!r} in this graph; scopes: "
                          f"{[s.path for s in self.root.walk() if s.path][:20]}")

    def box_scope(self) -> dict[str, Scope]:
        """Each box's key -> the scope it is drawn in."""
        return {k: s for s in self.root.walk() for k in s.boxes}

    def parameters(self) -> "OrderedDict[str, Param]":
        """Every parameter in the graph by name, each once (inline and shared ones)."""
        out: OrderedDict[str, Param] = OrderedDict()
        for box in self.boxes.values():
            for p in box.params:
                out.setdefault(p.name, p)
        return out

    @property
    def n_parameters(self) -> int:
        return sum(p.size for p in self.parameters().values())

    def ops_below(self, scope: Scope) -> list[Box]:
        """The op boxes in ``scope`` and its inner scopes, in graph order."""
        keys = {k for s in scope.walk() for k in s.boxes}
        return [b for k, b in self.boxes.items() if k in keys and b.kind == "op"]


# ---------------------------------------------------------------------------------------------
# Building a view from Stadyn Variables
# ---------------------------------------------------------------------------------------------
def named_outputs(what: Any, default: str = "y") -> "OrderedDict[str, Variable]":
    """``what`` (a Variable, a list or a dict of Variables) as name -> Variable; a single one is
    called ``default``, a list's items ``y0``, ``y1``...

    Example:
        >>> import stadyn as sd
        >>> list(named_outputs([sd.Variable((1,)), sd.Variable((2,))]))
        ['y0', 'y1']
    """
    if isinstance(what, Variable):
        return OrderedDict([(default, what)])
    if isinstance(what, Mapping):
        items = list(what.items())
    elif isinstance(what, (list, tuple)):
        items = ([(default, what[0])] if len(what) == 1
                 else [(f"{default}{i}", v) for i, v in enumerate(what)])
    else:
        raise StadynError(f"expected a Variable, a list or a dict of Variables, or a Network; "
                          f"got {type(what).__name__}")
    for name, v in items:
        if not isinstance(v, Variable):
            raise StadynError(f"{name!r} is a {type(v).__name__}, not a Variable")
    if not items:
        raise StadynError("no outputs given: nothing to draw")
    return OrderedDict((str(k), v) for k, v in items)


def _tensor(v: Variable) -> Tensor:
    return Tensor(tuple(int(d) for d in v.shape), str(v.torch_dtype).replace("torch.", ""))


def _differs(value: Any, default: Any) -> bool:
    if isinstance(value, list):
        value = tuple(value)          # PF passes (1,) as [1]: not a change worth printing
    try:
        return bool(value != default) if not isinstance(value, np.ndarray) else True
    except Exception:   # noqa: BLE001 - arrays and odd objects: show them
        return True


def _printable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return f"array{tuple(value.shape)}"
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"{type(value).__name__} of {len(value)}"
    return value


def _op_box(key: str, node: FunctionNode) -> Box:
    try:
        attrs = node.attrs
    except Exception:   # noqa: BLE001 - a node whose call no longer binds: show none
        attrs = {}
    defaults = node.spec.attrs
    shown = {k: _printable(v) for k, v in attrs.items()
             if k not in ("inplace",) and _differs(v, defaults.get(k))}
    outs = [_tensor(o) for o in node.outputs if o is not None]
    return Box(key, "op", node.spec.name, node.scope, shown,
               {k: _printable(v) for k, v in attrs.items()}, outputs=outs)


def view_of(outputs: Any, inputs: Any = None, title: str = "") -> GraphView:
    """The :class:`GraphView` of the graph that computes ``outputs`` (a Variable, a list or dict
    of them, or a :class:`stadyn.serialize.Network`).

    Leaves are told apart as model files tell them: ``inputs`` (names -> Variables) where given,
    else every unnamed leaf is an input (``x``, ``x0``, ``x1``...); named leaves (the registry
    names its parameters) are parameters; unnamed leaves besides given inputs are constants.
    """
    if hasattr(outputs, "outputs") and hasattr(outputs, "inputs") and not isinstance(
            outputs, (Variable, Mapping, list, tuple)):
        network = outputs
        outs = named_outputs(network.outputs)
        inputs = network.inputs if inputs is None else inputs
        title = title or getattr(network, "source", "") or ""
    else:
        outs = named_outputs(outputs)
    roots = list(outs.values())
    nodes = topological_nodes(roots)
    leaves: OrderedDict[int, Variable] = OrderedDict()
    uses: dict[int, int] = {}
    for node in nodes:
        for v in node.inputs:
            if v.parent is None:
                leaves.setdefault(id(v), v)
                uses[id(v)] = uses.get(id(v), 0) + 1
    for v in roots:
        if v.parent is None:
            leaves.setdefault(id(v), v)
    given = named_outputs(inputs, "x") if inputs is not None else None
    input_names: dict[int, str] = {}
    if given is not None:
        input_names = {id(v): n for n, v in given.items() if id(v) in leaves}
    else:
        unnamed = [v for v in leaves.values() if v.graph_name is None]
        input_names = {id(v): ("x" if len(unnamed) == 1 else f"x{i}")
                       for i, v in enumerate(unnamed)}

    boxes: OrderedDict[str, Box] = OrderedDict()
    edges: list[Edge] = []
    source: dict[int, str] = {}           # id(Variable) -> key of the box producing it
    for vid, name in input_names.items():
        v = leaves[vid]
        key = f"i{len(source)}"
        boxes[key] = Box(key, "input", name, "", outputs=[_tensor(v)])
        source[vid] = key
    shared: dict[int, str] = {}
    for vid, v in leaves.items():
        if vid not in input_names and v.graph_name is not None and uses.get(vid, 0) > 1:
            key = f"p{len(shared)}"
            scope = v.graph_name.rsplit("/", 1)[0] if "/" in v.graph_name else ""
            boxes[key] = Box(key, "parameter", v.graph_name.rsplit("/", 1)[-1], scope,
                             params=[_param(v)], outputs=[_tensor(v)])
            shared[vid] = key
            source[vid] = key
    node_key: dict[int, str] = {}
    for k, node in enumerate(nodes):
        key = f"n{k}"
        box = _op_box(key, node)
        for v in node.inputs:
            vid = id(v)
            if v.parent is not None:
                edges.append(Edge(node_key[id(v.parent)], key, _tensor(v)))
            elif vid in source:
                edges.append(Edge(source[vid], key, _tensor(v)))
            elif v.graph_name is not None:
                box.params.append(_param(v))
            else:
                box.constants.append(_tensor(v))
        boxes[key] = box
        node_key[id(node)] = key
    for name, v in outs.items():
        key = f"o{len([b for b in boxes.values() if b.kind == 'output'])}"
        boxes[key] = Box(key, "output", name, "", outputs=[_tensor(v)])
        src = node_key.get(id(v.parent)) if v.parent is not None else source.get(id(v))
        if src is not None:
            edges.append(Edge(src, key, _tensor(v)))
    from ._macs import multiply_adds
    for node in nodes:
        boxes[node_key[id(node)]].macs = multiply_adds(node)
    return GraphView(boxes, edges, build_scopes(boxes), title)


def _param(v: Variable) -> Param:
    return Param(str(v.graph_name), tuple(int(d) for d in v.shape),
                 str(v.torch_dtype).replace("torch.", ""), bool(v.need_grad))


# ---------------------------------------------------------------------------------------------
# The scope tree
# ---------------------------------------------------------------------------------------------
def build_scopes(boxes: Mapping[str, Box]) -> Scope:
    """The scope tree of ``boxes`` (each box's ``scope``; parameters count for the scope their
    names give), with single-op scopes dissolved (see the module docstring)."""
    root = Scope("", "")

    def get(path: str) -> Scope:
        node = root
        if not path:
            return node
        parts = path.split("/")
        for i, part in enumerate(parts):
            sub = "/".join(parts[:i + 1])
            if sub not in node.children:
                node.children[sub] = Scope(sub, part, node)
            node = node.children[sub]
        return node

    param_scopes: set[str] = set()
    for box in boxes.values():
        get(box.scope.strip("/")).boxes.append(box.key)
        for p in box.params:
            parts = p.name.split("/")[:-1]
            param_scopes.update("/".join(parts[:i + 1]) for i in range(len(parts)))
    _dissolve(root, boxes, param_scopes)
    for i, s in enumerate(root.walk()):
        s.index = i
    return root


def _dissolve(scope: Scope, boxes: Mapping[str, Box], param_scopes: set[str]) -> None:
    for child in list(scope.children.values()):
        _dissolve(child, boxes, param_scopes)
    for path, child in list(scope.children.items()):
        if not child.children and not child.boxes:
            del scope.children[path]
        elif (not child.children and len(child.boxes) == 1 and path not in param_scopes
              and boxes[child.boxes[0]].kind == "op"):
            box = boxes[child.boxes[0]]
            box.heading = child.name if box.heading == "" else f"{child.name}/{box.heading}"
            scope.boxes.append(box.key)
            del scope.children[path]

"""The mutations of ``tools/mutants.py``: where each applies in a source file (``find_mutants``,
a :class:`Mutant` per place and kind) and the mutated source of one (``mutated_source``).

The kinds (operators, comparisons, conditions, constants, dropped statements, calls) and what
is left alone (docstrings, annotations, ``__all__``, decorators) are listed in
``tools/mutants.py``'s docstring; the runner, the groups and the report are there and in
``tools/mutants_report.py``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_BINOP_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
               ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult,
               ast.BitOr: ast.BitAnd, ast.BitAnd: ast.BitOr}
_CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
             ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
             ast.In: ast.NotIn, ast.NotIn: ast.In}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**", ast.BitOr: "|", ast.BitAnd: "&", ast.Lt: "<",
           ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
           ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
           ast.And: "and", ast.Or: "or"}


@dataclass
class Mutant:
    """One mutation: where (file, line, column), what, and the walk position that finds it."""
    group: str
    path: str                  # relative to the repository root
    line: int
    col: int
    kind: str                  # e.g. "binop + -> -"
    node_index: int            # position of the node in ast.walk order
    variant: int               # which of the node's mutations
    source_line: str = ""
    status: str = "pending"    # killed | survived | timeout | error
    seconds: float = 0.0
    detail: str = ""           # the first failing test of a killed mutant

    @property
    def ident(self) -> str:
        return f"{self.path}:{self.line}:{self.col}:{self.kind}"


# ---------------------------------------------------------------------------------------------
# Finding and applying mutations
# ---------------------------------------------------------------------------------------------
def _skipped_nodes(tree: ast.AST) -> set[int]:
    """ids of nodes not to mutate: docstrings, annotations, ``__all__``, TYPE_CHECKING blocks,
    decorators and everything under them."""
    skip: set[int] = set()

    def cover(node):
        for sub in ast.walk(node):
            skip.add(id(sub))

    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            cover(body[0])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs + \
                    [node.args.vararg, node.args.kwarg]:
                if a is not None and a.annotation is not None:
                    cover(a.annotation)
            if node.returns is not None:
                cover(node.returns)
            for d in node.decorator_list:
                cover(d)
        if isinstance(node, ast.ClassDef):
            for d in node.decorator_list:
                cover(d)
        if isinstance(node, ast.AnnAssign):
            cover(node.annotation)
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                cover(node)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            cover(node)
        if isinstance(node, ast.JoinedStr):
            cover(node)          # f-strings: messages, not behaviour
    return skip


def _mutations(node: ast.AST, parent: ast.AST | None) -> list[str]:
    """Descriptions of the mutations that apply to ``node`` (in a fixed order)."""
    out: list[str] = []
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINOP_SWAP:
        new = _BINOP_SWAP[type(node.op)]
        tag = "augassign" if isinstance(node, ast.AugAssign) else "binop"
        out.append(f"{tag} {_SYMBOL[type(node.op)]} -> {_SYMBOL[new]}")
    if isinstance(node, ast.Compare):
        for k, op in enumerate(node.ops):
            out.append(f"compare#{k} {_SYMBOL[type(op)]} -> {_SYMBOL[_CMP_SWAP[type(op)]]}")
    if isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        out.append(f"boolop {_SYMBOL[type(node.op)]} -> {_SYMBOL[other]}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        out.append("drop not" if isinstance(node.op, ast.Not) else "drop unary -")
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        out.append(f"negate {type(node).__name__.lower()} condition")
    if isinstance(node, ast.Constant) and not isinstance(node.value, str):
        v = node.value
        if isinstance(v, bool):
            out.append(f"constant {v} -> {not v}")
        elif isinstance(v, int):
            out.append(f"constant {v} -> {v + 1}")
        elif isinstance(v, float):
            out.append(f"constant {v!r} -> {(v * 2 if v else 1.0)!r}")
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        out.append("drop call statement")
    if isinstance(node, ast.AugAssign):
        out.append("drop augmented assignment")
    if isinstance(node, ast.Assign) and any(isinstance(t, (ast.Attribute, ast.Subscript))
                                           for t in node.targets):
        out.append("drop assignment")
    if isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        out.append("return None")
    if isinstance(node, ast.Call) and not (isinstance(parent, ast.Expr)) and node.args \
            and not isinstance(node.args[0], ast.Starred):
        out.append("call -> first argument")
    if isinstance(node, ast.Call) and len(node.args) >= 2 and not any(
            isinstance(a, ast.Starred) for a in node.args[:2]):
        out.append("swap first two arguments")
    return out


def _apply(node: ast.AST, kind: str) -> ast.AST | None:
    """``node`` mutated by ``kind`` (a replacement node; ``None`` removes a statement)."""
    if kind.startswith(("binop", "augassign ")) and " -> " in kind:
        node.op = _BINOP_SWAP[type(node.op)]()
        return node
    if kind.startswith("compare#"):
        k = int(kind.split()[0].split("#")[1])
        node.ops[k] = _CMP_SWAP[type(node.ops[k])]()
        return node
    if kind.startswith("boolop"):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        return node
    if kind in ("drop not", "drop unary -"):
        return node.operand
    if kind.startswith("negate"):
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
        return node
    if kind.startswith("constant"):
        v = node.value
        node.value = (not v) if isinstance(v, bool) else (v + 1 if isinstance(v, int)
                                                          else (v * 2 if v else 1.0))
        return node
    if kind in ("drop call statement", "drop augmented assignment", "drop assignment"):
        return ast.Pass()
    if kind == "return None":
        node.value = ast.Constant(None)
        return node
    if kind == "call -> first argument":
        return node.args[0]
    if kind == "swap first two arguments":
        node.args[0], node.args[1] = node.args[1], node.args[0]
        return node
    raise ValueError(kind)


def find_mutants(group: str, path: Path) -> list[Mutant]:
    source = path.read_text()
    tree = ast.parse(source)
    lines = source.splitlines()
    skip = _skipped_nodes(tree)
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    rel = str(path.relative_to(ROOT))
    found: list[Mutant] = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skip or not hasattr(node, "lineno"):
            continue
        for variant, kind in enumerate(_mutations(node, parents.get(id(node)))):
            found.append(Mutant(group, rel, node.lineno, node.col_offset, kind, index, variant,
                                lines[node.lineno - 1].strip()))
    return found


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, kind: str):
        self.target, self.kind = target, kind

    def generic_visit(self, node):
        super().generic_visit(node)
        return node

    def visit(self, node):
        if node is self.target:
            new = _apply(node, self.kind)
            return ast.Pass() if new is None else new
        return super().visit(node)


def mutated_source(mutant: Mutant) -> str:
    path = ROOT / mutant.path
    tree = ast.parse(path.read_text())
    target = list(ast.walk(tree))[mutant.node_index]
    if (target.lineno, target.col_offset) != (mutant.line, mutant.col):
        raise RuntimeError(f"{mutant.ident}: the source changed since the mutants were listed")
    tree = _Replace(target, mutant.kind).visit(tree)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + "\n"

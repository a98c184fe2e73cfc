"""Which of NNabla's and CNTK's function types the importer of legacy model files
(:mod:`._legacy_import`) builds as which catalog op: the op rules' ``nnp_import``,
``cntk_import`` and ``cntk_v1_import`` columns gathered into one table per format
(:func:`legacy_import_table`), and those tables as ``docs/model-files.md`` shows them
(:func:`legacy_mapping_table`).
"""

from __future__ import annotations

from typing import Any

from .._errors import StadynError
from ..ops import CATALOG
from ._cntk_v1_uids import V1_READ_AS_V2
from .op_rules import Unmapped, rules_for

__all__ = ["FORMATS", "legacy_import_table", "legacy_mapping_table"]

#: format of a :class:`LegacyModel` -> (the op rules' column, the framework's name).
FORMATS = {"nnp": ("nnp_import", "NNabla"), "cntk-v2": ("cntk_import", "CNTK"),
           "cntk-v1": ("cntk_v1_import", "CNTK v1")}


def legacy_import_table(fmt: str) -> dict[str, tuple[str, Any]]:
    """``{function type: (catalog op name, build)}`` for the format ``fmt`` (a key of
    :data:`FORMATS`), gathered from the catalog's op rules (:data:`.V1_READ_AS_V2` too).

    Example:
        >>> legacy_import_table("nnp")["Convolution"][0], legacy_import_table("cntk-v2")["Times"][0]
        ('convolution', 'affine')
    """
    column = FORMATS[fmt][0]
    table: dict[str, tuple[str, Any]] = {}
    for name, spec in CATALOG.items():
        rules = rules_for(spec)
        found = getattr(rules, column) if rules is not None else None
        if found is None or isinstance(found, Unmapped):
            continue
        for op_type, build in found.items():
            if op_type in table:
                raise StadynError(f"{FORMATS[fmt][1]} function {op_type} is mapped by two "
                                  f"catalog ops: {table[op_type][0]} and {name}")
            table[op_type] = (name, build)
    if fmt == "cntk-v1":    # (the v1 nodes CNTK 2.7 loads as a CNTK 2 op of no attributes)
        v2 = legacy_import_table("cntk-v2")
        table.update({t: v2[op] for t, op in V1_READ_AS_V2.items()})
    return table


def legacy_mapping_table() -> str:
    """The NNabla function types and CNTK op names the catalog's op rules import, as Markdown
    tables (type -> catalog op); ``docs/model-files.md`` holds them.

    Example:
        >>> print(legacy_mapping_table().splitlines()[0])
        **NNabla** (226 function types)
    """
    parts = []
    for fmt in FORMATS:
        table = legacy_import_table(fmt)
        by_op: dict[str, list[str]] = {}
        for op_type, (op_name, _) in sorted(table.items()):
            by_op.setdefault(op_name, []).append(op_type)
        what = "function types" if fmt == "nnp" else "op names"
        parts += [f"**{FORMATS[fmt][1]}** ({len(table)} {what})", "",
                  "| catalog op | imported from |", "|---|---|"]
        parts += [f"| `{op}` | {', '.join(by_op[op])} |" for op in sorted(by_op)]
        parts.append("")
    return "\n".join(parts).rstrip()


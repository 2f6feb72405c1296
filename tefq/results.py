"""What an engine run produces: rows per query, and the metrics of spec §7.

A cell is an N-Triples term (see `tefq.terms`) or None for unbound. Numeric cells are canonical
(`tefq.oracle.values.to_term`), so the oracle's and Spark's rows compare with `==`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tefq.terms import (XSD, XSD_BOOLEAN, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, iri_value, is_iri, is_literal,
                        split_literal)

Cell = str | None
Row = tuple[int, tuple[Cell, ...]]  # (tick in ms, cells in SELECT order)


@dataclass
class QueryResult:
    name: str
    columns: tuple[str, ...]  # output names, without the leading `tick`
    rows: list[Row] = field(default_factory=list)

    def sorted_rows(self) -> list[Row]:
        """Rows ordered by tick, then by the values left to right (spec §5); unbound first."""
        return sorted(self.rows, key=lambda r: (r[0], tuple(order_key(c) for c in r[1])))


@dataclass
class Metrics:
    events_in: int = 0
    facts_created: int = 0
    facts_closed: int = 0
    unmatched_until: int = 0
    late_events: int = 0
    ticks: int = 0
    rows_out: int = 0
    intermediate_bindings: int = 0
    wall_seconds: float = 0.0
    extra: dict = field(default_factory=dict)  # engine-specific figures (micro-batches, state size, ...)

    def to_json(self) -> dict:
        d = {k: getattr(self, k) for k in (
            "events_in", "facts_created", "facts_closed", "unmatched_until", "late_events",
            "ticks", "rows_out", "intermediate_bindings", "wall_seconds")}
        d.update(self.extra)
        return d


@dataclass
class RunResult:
    results: list[QueryResult]
    metrics: Metrics


@lru_cache(maxsize=1 << 16)  # result cells repeat (channels, small counts): sorting millions of rows
def order_key(cell: Cell) -> tuple:
    """SPARQL-ish ORDER BY key: unbound < blank < IRI < literal; numbers by value."""
    if cell is None:
        return (0,)
    if cell.startswith("_:"):
        return (1, cell)
    if cell.startswith("<"):
        return (2, cell[1:-1])  # by the IRI itself: `...#ch6` before `...#ch69`
    from tefq.terms import split_literal

    lex, dt, _ = split_literal(cell)
    if dt and dt.startswith("http://www.w3.org/2001/XMLSchema#") and dt.rsplit("#", 1)[1] in (
            "integer", "decimal", "double", "float", "int", "long"):
        try:
            return (3, float(lex), cell)
        except ValueError:
            pass
    return (4, lex, cell)


# Result cells as Python values (the API's to_pandas, the fact table's frame)
NUMERIC_TYPES = {XSD_INTEGER: int, XSD + "int": int, XSD + "long": int, XSD + "short": int,
            XSD_DECIMAL: float, XSD_DOUBLE: float, XSD + "float": float}


def python_value(cell: Cell) -> Any:
    """A result cell for Python: IRIs as strings without brackets, blank nodes as `_:b`, numeric
    literals as int/float, booleans as bool, other literals as their lexical form; unbound None."""
    if cell is None:
        return None
    if is_iri(cell):
        return iri_value(cell)
    if not is_literal(cell):
        return cell
    lex, dt, _ = split_literal(cell)
    if dt in NUMERIC_TYPES:
        try:
            return NUMERIC_TYPES[dt](lex)
        except ValueError:
            return lex  # an ill-typed literal keeps its text
    if dt == XSD_BOOLEAN and lex in ("true", "false", "1", "0"):
        return lex in ("true", "1")
    return lex

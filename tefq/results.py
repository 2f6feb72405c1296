"""What an engine run produces: rows per query, and the metrics of spec §7.

A cell is an N-Triples term (see `tefq.terms`) or None for unbound. Numeric cells are canonical
(`tefq.semantics.values.to_term`), so the oracle's and Spark's rows compare with `==`.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tefq.errors import TefqError
from tefq.plan.logical import AggregateQuery, Call, Term, Var
from tefq.terms import (XSD, XSD_BOOLEAN, XSD_DATETIME, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, XSD_STRING, iri_value,
                        is_iri, is_literal, split_literal)

if TYPE_CHECKING:
    import numpy as np  # tefq.results stays light: numpy is imported where a frame is made

Cell = str | None
Row = tuple[int, tuple[Cell, ...]]  # (tick in ms, cells in SELECT order)


@dataclass
class QueryResult:
    name: str
    columns: tuple[str, ...]  # output names, without the leading `tick`
    rows: list[Row] = field(default_factory=list)
    # output name -> its kind as the plan gives it (`column_kinds`; typed outputs); none: from the rows
    kinds: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    # True: `rows` are already in sorted_rows' order (a collector ordered them, e.g. the windowed
    # one's lexsort): the writers do not sort a million rows again. Whoever changes `rows` after
    # clears it.
    ordered: bool = field(default=False, compare=False, repr=False)
    # True: a windowed query with ORDER BY (spec §8): each tick's rows stay in the order its window
    # gave them (the query's ORDER BY, then OFFSET / LIMIT); only ticks are sorted.
    window_order: bool = field(default=False, compare=False, repr=False)
    # The same rows as columns (a Spark collector's arrays, `ResultColumns`): the writers format
    # each distinct cell once. Whoever changes `rows` after clears it, as `ordered`.
    frame: ResultColumns | None = field(default=None, compare=False, repr=False)

    def sorted_rows(self) -> list[Row]:
        """Rows ordered by tick, then by the values left to right (spec §5; unbound first), or
        within a tick as the window ordered them (`window_order`)."""
        if self.ordered:
            return list(self.rows)
        if self.window_order:
            return sorted(self.rows, key=lambda r: r[0])
        return sorted(self.rows, key=lambda r: (r[0], tuple(order_key(c) for c in r[1])))

    def as_columns(self) -> ResultColumns:
        """The rows in `sorted_rows`' order as columns: the collector's `frame`, else made here."""
        return self.frame if self.frame is not None else ResultColumns.of_rows(self.sorted_rows(), len(self.columns))

    def row_count(self) -> int:
        return len(self.rows)


class FramedResult(QueryResult):
    """A result a Spark collector laid out as columns (`frame`, in the result order): its `rows`,
    one tuple each, are made when first read. A run written from the frame (the column writers)
    and counted by `row_count` never makes them: UC1 on the default data, 1.47M rows, 0.24 s and
    the garbage collector's first pass over them 0.15 s (docs/spark.md "Start-up")."""

    @property  # type: ignore[override]
    def rows(self) -> list[Row]:
        if self.made is None:
            with paused_gc():  # millions of new tuples: the cyclic collector would rescan them again and again
                self.made = self.frame.rows() if self.frame is not None else []
        return self.made

    @rows.setter
    def rows(self, value: list[Row] | None) -> None:
        self.made = value  # None: made from the frame when read

    def row_count(self) -> int:
        return len(self.frame) if self.made is None and self.frame is not None else len(self.rows)

    def __eq__(self, other: object) -> bool:  # as a QueryResult: the dataclass's own compares one class only
        if not isinstance(other, QueryResult):
            return NotImplemented
        return (self.name, self.columns, self.rows) == (other.name, other.columns, other.rows)

    __hash__ = None  # type: ignore[assignment]


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off inside the block (restored after it): code that makes
    millions of tuples (rows) and no cycles would otherwise have them rescanned again and again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class ResultColumns:
    """A result's rows as columns, in the result order: `ticks` (n,) int64 and, per SELECT column,
    its distinct cells and each row's index among them (a cell may repeat among the distinct
    ones). No Python object per row: a writer formats each distinct cell once and lays the rows
    out as arrays (tefq.io.result_writers)."""

    ticks: np.ndarray
    columns: tuple[tuple[list[Cell], np.ndarray], ...]

    def __len__(self) -> int:
        return len(self.ticks)

    @staticmethod
    def of_rows(rows: list[Row], width: int) -> ResultColumns:
        import numpy as np

        ticks = np.fromiter((t for t, _ in rows), np.int64, len(rows))
        columns = []
        for j in range(width):
            pos: dict[Cell, int] = {}
            index = np.fromiter((pos.setdefault(cells[j], len(pos)) for _, cells in rows), np.int64, len(rows))
            columns.append((list(pos), index))
        return ResultColumns(ticks, tuple(columns))

    def rows(self) -> list[Row]:
        """The rows as tuples (what `QueryResult.rows` holds)."""
        import numpy as np

        taken = []
        for cells, index in self.columns:
            distinct = np.empty(len(cells), dtype=object)
            distinct[:] = cells
            taken.append(distinct[index].tolist())
        if not taken:
            return [(t, ()) for t in self.ticks.tolist()]
        return list(zip(self.ticks.tolist(), zip(*taken)))


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
    """SPARQL-ish ORDER BY key, a total order: unbound < blank < IRI < literal; numbers by value,
    NaN after every number (a NaN key compared equal to everything: engines sorted differently)."""
    if cell is None:
        return (0,)
    if cell.startswith("_:"):
        return (1, cell)
    if cell.startswith("<"):
        return (2, cell[1:-1])  # by the IRI itself: `...#ch6` before `...#ch69`

    lex, dt, _ = split_literal(cell)
    if dt and dt.startswith("http://www.w3.org/2001/XMLSchema#") and dt.rsplit("#", 1)[1] in (
            "integer", "decimal", "double", "float", "int", "long"):
        try:
            value = float(lex)
        except ValueError:
            pass
        else:
            return (3, 1, 0.0, cell) if value != value else (3, 0, value, cell)
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


# Typed result columns (--terms typed, `tefq.spark.apply(..., terms="typed")`, `Result.to_arrow`):
# a column's kind, then each cell as a value of that kind. The N-Triples form stays the default.
TERM_FORMS = ("ntriples", "typed")
LONG, DOUBLE, BOOLEAN, TIMESTAMP = "long", "double", "boolean", "timestamp"
STRING = "string"  # IRIs without brackets, literals of one datatype by their lexical form, `_:b`
NTRIPLES = "ntriples"  # every cell in N-Triples form: a column of mixed terms
TERM = "term"  # not known before the rows: IRIs without brackets, any other term in N-Triples form
INT64 = range(-(1 << 63), 1 << 63)


def check_term_form(form: str, option: str = "--terms") -> str:
    if form not in TERM_FORMS:
        raise TefqError(f"unknown {option} {form!r}: expected {' or '.join(TERM_FORMS)}", file=option)
    return form


def literal_kind(cell: str) -> str:
    """The kind of one cell on its own (NTRIPLES: it has none but its N-Triples form)."""
    if is_iri(cell) or cell.startswith("_:"):
        return STRING
    lex, dt, lang = split_literal(cell)
    if lang is not None:
        return NTRIPLES  # the lexical form alone would drop the language
    if dt in NUMERIC_TYPES:
        value = python_value(cell)
        if isinstance(value, float) or (isinstance(value, int) and value in INT64):
            return LONG if NUMERIC_TYPES[dt] is int else DOUBLE
        return NTRIPLES  # ill-typed, or too large for a long
    if dt == XSD_BOOLEAN:
        return BOOLEAN if lex in ("true", "false", "1", "0") else NTRIPLES
    if dt == XSD_DATETIME:
        return TIMESTAMP if datetime_ms(lex) is not None else NTRIPLES
    return STRING


def column_kind(cells: list[Cell], planned: str = TERM) -> str:
    """A column's kind: the plan's when it knows it (`column_kinds`), else the one kind all its
    bound cells share (IRIs and blank nodes count as STRING; literals of one datatype as theirs,
    STRING for a non-numeric one), else NTRIPLES (mixed terms keep the N-Triples form)."""
    if planned != TERM:
        return planned
    kinds: set[str] = set()
    datatypes: set[str] = set()  # of the STRING cells: a string column holds one datatype, or only IRIs
    for cell in set(cells):
        if cell is not None:
            kinds.add(kind := literal_kind(cell))
            if kind == STRING:
                datatypes.add((split_literal(cell)[1] or XSD_STRING) if is_literal(cell) else "IRI")
    if kinds == {LONG, DOUBLE}:
        return DOUBLE  # numbers of both kinds: all as doubles
    if len(kinds) > 1 or len(datatypes) > 1:
        return NTRIPLES
    return kinds.pop() if kinds else STRING


def typed_cell(cell: Cell, kind: str) -> Any:
    """One cell as a value of its column's `kind` (a timestamp as ms since the epoch, UTC). A cell
    that is not of a planned kind raises ValueError (a plan/engine mismatch: never silently lost)."""
    if cell is None:
        return None
    if kind == NTRIPLES:
        return cell
    if is_iri(cell) and kind in (TERM, STRING):
        return iri_value(cell)
    if kind == TERM or (kind == STRING and not is_literal(cell)):
        return cell
    if kind == STRING:
        return split_literal(cell)[0]
    value = datetime_ms(split_literal(cell)[0]) if kind == TIMESTAMP else python_value(cell)
    if kind == DOUBLE and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    expected = {LONG: int, DOUBLE: float, BOOLEAN: bool, TIMESTAMP: int}[kind]
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ValueError(f"a {kind} column holds {cell}")
    return value


def typed_column(cells: list[Cell], planned: str = TERM) -> tuple[str, list[Any]]:
    """A column of cells as (its kind, its values): `column_kind`, then `typed_cell`."""
    kind = column_kind(cells, planned)
    return kind, [typed_cell(c, kind) for c in cells]


def datetime_ms(lexical: str) -> int | None:
    """An xsd:dateTime's lexical form as ms since the epoch (no zone: UTC; digits below the ms
    truncated); None if Python's ISO reader does not take it (`24:00:00`, a year beyond 9999):
    its column then keeps the N-Triples form."""
    from datetime import datetime, timezone

    try:
        moment = datetime.fromisoformat(lexical)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


AGGREGATE_KINDS = {"COUNT": LONG, "SUM": DOUBLE, "AVG": DOUBLE}  # MIN/MAX: their argument's (TERM)


def column_kinds(query: Any) -> dict[str, str]:
    """Each output column's kind, from the plan, before any row exists (`tefq.spark.apply` needs
    its schema first): a COUNT a long, a SUM or AVG (DURATION's seconds included) a double,
    arithmetic over those a long or a double, a numeric constant its datatype's; anything else
    (a group variable, MIN/MAX, a function) TERM. A windowed query's columns are all TERM."""
    if not isinstance(query, AggregateQuery):
        return dict.fromkeys(getattr(query, "select_names", ()), TERM)
    aliases = {a.alias: AGGREGATE_KINDS.get(a.func, TERM) for a in query.aggregates}
    return {p.name: expression_kind(p.expr, aliases) for p in query.select}


def expression_kind(expr: Any, aliases: dict[str, str]) -> str:
    if isinstance(expr, Var):
        return aliases.get(expr.name, TERM)
    if isinstance(expr, Term):
        kind = literal_kind(expr.nt)
        return kind if kind in (LONG, DOUBLE, BOOLEAN) else TERM
    if isinstance(expr, Call) and expr.op in ("+", "-", "*", "/", "neg"):
        kinds = {expression_kind(a, aliases) for a in expr.args}
        if kinds <= {LONG, DOUBLE}:
            return LONG if kinds == {LONG} and expr.op != "/" else DOUBLE  # SPARQL: integer / integer is a decimal
    return TERM

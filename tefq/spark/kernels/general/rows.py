"""A bucket's rows of one batch, the driver's merge of partial rows, and the result cells.

`BucketRows` is what a bucket emits per batch: per row a tick, the group columns (term codes, or
ms for an interval start and the WHILE's ?SS/?ES), the number of solutions, and per aggregate its
column — final values, or (a merging split, `query.Split.merge`) partials: counts, `CellSums`
(exact sums as limb or integer arrays), MIN/MAX candidates. `merge_partials` adds the buckets' partials per (tick, group) and finishes
them; `format_rows` turns final rows into the oracle's cells (SELECT expressions with the oracle's
evaluator, numbers as canonical terms) in the oracle's order (tick, then the cells' order keys).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tefq.semantics.expressions import EvalError, compile_expr, ebv
from tefq.semantics.values import datetime_term, to_term
from tefq.plan.logical import Var
from tefq.results import Row, paused_gc
from tefq.spark.kernels.general.aggregates import ranks
from tefq.spark.kernels.general.coding import TermDictionary
from tefq.spark.kernels.general.expressions import Env, NotVectorised, Values, variables, vectorised
from tefq.spark.kernels.general.query import CompiledQuery
from tefq.spark.kernels.general.sums import CellSums
from tefq.spark.kernels.joins import key_ranks
from tefq.spark.output import cell_ranks, in_value_order, number_terms


@dataclass
class BucketRows:
    ticks: np.ndarray
    groups: np.ndarray  # (n, number of group variables)
    present: np.ndarray
    columns: dict[str, Values | CellSums]  # alias -> Values (final or partial), or partial CellSums
    terms: dict[int, str] = field(default_factory=dict)  # the group codes' terms
    partial: bool = False

    def __len__(self) -> int:
        return len(self.ticks)

    def take(self, idx: np.ndarray) -> "BucketRows":
        cols = {k: v.take(idx) for k, v in self.columns.items()}
        return BucketRows(self.ticks[idx], self.groups[idx], self.present[idx], cols, self.terms, self.partial)


def concat(parts: list[BucketRows], cq: CompiledQuery) -> BucketRows:
    parts = [p for p in parts if len(p)]
    if not parts:
        z = np.zeros(0, np.int64)
        return BucketRows(z, np.zeros((0, len(cq.group_names)), np.int64), z.copy(), {})
    cols = {}
    for a in cq.q.aggregates:
        vals = [p.columns[a.alias] for p in parts]
        cols[a.alias] = CellSums.concat(vals) if isinstance(vals[0], CellSums) else Values.concat(vals)
    terms: dict[int, str] = {}
    for p in parts:
        terms.update(p.terms)
    return BucketRows(np.concatenate([p.ticks for p in parts]), np.concatenate([p.groups for p in parts]),
                      np.concatenate([p.present for p in parts]), cols, terms, parts[0].partial)


# ---------------------------------------------------------------- merging partial rows (driver)
def merge_partials(cq: CompiledQuery, parts: list[BucketRows]) -> BucketRows:
    """The buckets' partial rows added per (tick, group) and finished (SUM/AVG from their summed
    `CellSums`, MIN/MAX the first best value in the oracle's order), numpy group-bys throughout."""
    rows = concat(parts, cq)
    if not len(rows):
        return rows
    inv = key_ranks(np.column_stack([rows.ticks, rows.groups]))[0]
    order = np.argsort(inv, kind="stable")
    starts = np.nonzero(np.r_[True, np.diff(inv[order]) != 0])[0]
    firsts = order[starts]
    present = np.add.reduceat(rows.present[order], starts)
    cols: dict[str, Values | CellSums] = {}
    for a in cq.q.aggregates:
        col = rows.columns[a.alias]
        if a.func == "COUNT":
            cols[a.alias] = Values("int", np.add.reduceat(col.data[order], starts), np.ones(len(starts), bool))
        elif a.func in ("SUM", "AVG"):
            cols[a.alias] = col.added(order, starts).final(a.func)
        else:
            cols[a.alias] = merged_extremes(col.take(order), starts, a.func)
    out = BucketRows(rows.ticks[firsts], rows.groups[firsts], present, cols, rows.terms)
    return empty_implicit(cq, out)


def merged_extremes(col: Values, starts: np.ndarray, func: str) -> Values:
    """Per group of rows `starts[i]:starts[i + 1]`, its first value of the best rank (the oracle's
    order: equal values, equal rank); unbound where the group has no value."""
    score = np.full(len(col), -1, np.int64)  # higher is better; -1: no value
    ok = np.nonzero(col.ok)[0]
    if len(ok):
        r = ranks(col.take(ok))
        score[ok] = r if func == "MAX" else int(r.max()) - r
    best = np.maximum.reduceat(score, starts)
    group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(col))))
    position = np.where(score == best[group], np.arange(len(col)), len(col))
    chosen = col.take(np.minimum.reduceat(position, starts))
    return Values(chosen.kind, chosen.data, best >= 0)


def empty_implicit(cq: CompiledQuery, rows: BucketRows) -> BucketRows:
    """The implicit group at a tick without solutions: COUNT and SUM 0 (integers), the others
    unbound (the oracle's `_empty_implicit_row`)."""
    empty = rows.present == 0
    if not empty.any():
        return rows
    cols = dict(rows.columns)
    for a in cq.q.aggregates:
        v = cols[a.alias].as_objects() if isinstance(cols[a.alias], Values) else cols[a.alias]
        data, ok = v.data.copy(), v.ok.copy()
        data[empty] = 0 if a.func in ("COUNT", "SUM") else None
        ok[empty] = a.func in ("COUNT", "SUM")
        cols[a.alias] = Values("object", data, ok)
    return BucketRows(rows.ticks, rows.groups, rows.present, cols, rows.terms, rows.partial)


# ---------------------------------------------------------------- cells
def group_cells(cq: CompiledQuery, rows: BucketRows) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each group variable's cells (object arrays of N-Triples terms) and each row's rank in the
    result order (the distinct codes' cells ranked once)."""
    out = {}
    for j, name in enumerate(cq.group_names):
        col = rows.groups[:, j]
        uniq, inv = np.unique(col, return_inverse=True)
        if cq.group_kind(name) == "term":
            cells = [rows.terms.get(c) for c in uniq.tolist()]
        else:
            cells = [datetime_term(c) for c in uniq.tolist()]
        inv = inv.reshape(-1)
        out[name] = (_objects(cells)[inv], cell_ranks(cells)[inv])
    return out


def value_cells(v: Values) -> tuple[np.ndarray, np.ndarray | None]:
    """Aggregate values as canonical terms (None: unbound), one term per distinct value; and for a
    numeric column whose value order is the terms' order, each row's rank (unbound first), else None."""
    if v.kind not in ("int", "double"):
        cells = _objects([None if x is None else to_term(x) for x in v.as_objects().data.tolist()])
        cells[~v.ok] = None
        return cells, None
    uniq, inv = np.unique(v.data, return_inverse=True)
    inv = inv.reshape(-1)
    cells = _objects(number_terms(uniq))[inv]
    cells[~v.ok] = None
    return cells, (np.where(v.ok, inv + 1, 0) if in_value_order(uniq) else None)


def _objects(items: list) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def select_cells(cq: CompiledQuery, rows: BucketRows) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Per SELECT item, its cells (object array) and, for a numeric column, each row's rank in the
    result order (else None: ordered by the cells' order keys)."""
    groups = group_cells(cq, rows)
    values = {a.alias: rows.columns[a.alias] for a in cq.q.aggregates}
    out = []
    for p in cq.q.select:
        e = p.expr
        if isinstance(e, Var) and e.name in groups:
            out.append(groups[e.name])
            continue
        try:
            with np.errstate(all="ignore"):
                v = vectorised(e, select_env(cq, rows, values))
        except NotVectorised:
            out.append((_expression_cells(e, rows, {n: c for n, (c, _) in groups.items()}, values), None))
            continue
        out.append(value_cells(v))
    return out


def select_env(cq: CompiledQuery, rows: BucketRows, values: dict[str, Values]) -> Env:
    """The SELECT's variables as columns: group terms, group times, aggregate values."""
    terms, times = {}, {}
    for j, name in enumerate(cq.group_names):
        (terms if cq.group_kind(name) == "term" else times)[name] = rows.groups[:, j]
    dictionary = TermDictionary()
    dictionary.add_mapping(rows.terms)
    return Env(len(rows), terms, times, dictionary, {k: v for k, v in values.items() if isinstance(v, Values)})


def having_kept(cq: CompiledQuery, rows: BucketRows) -> BucketRows:
    """The rows whose group meets every HAVING constraint (spec §4; an error is false, as in a
    FILTER), with the oracle's evaluator."""
    if not cq.q.having or not len(rows):
        return rows
    groups = {n: c for n, (c, _) in group_cells(cq, rows).items()}
    values = {a.alias: rows.columns[a.alias] for a in cq.q.aggregates}
    keep = np.ones(len(rows), bool)
    for e in cq.q.having:
        keep &= np.fromiter((v is True for v in _expression_cells(e, rows, groups, values, ebv)), bool, len(rows))
    return rows if keep.all() else rows.take(np.nonzero(keep)[0])


def _expression_cells(e, rows: BucketRows, groups: dict, values: dict, result=to_term) -> np.ndarray:
    """A SELECT expression with the oracle's evaluator, once per distinct input; `result` makes
    each value a cell (HAVING: its effective boolean value)."""
    names = [v for v in variables(e) if v in groups or v in values]
    objs = {n: (groups[n] if n in groups else _env_values(values[n])) for n in names}
    fn = compile_expr(e)
    memo: dict[tuple, Any] = {}
    out = []
    for r in range(len(rows)):
        key = tuple((objs[n][r].__class__, objs[n][r]) for n in names)
        if key not in memo:
            env = {n: objs[n][r] for n in names if objs[n][r] is not None}  # a group variable as its term
            try:
                memo[key] = result(fn(env))
            except EvalError:
                memo[key] = None
        out.append(memo[key])
    return _objects(out)


def _env_values(v: Values) -> np.ndarray:
    """Aggregate values as the oracle's environment holds them (a string value as its term)."""
    objs = v.as_objects()
    data = [to_term(x) if isinstance(x, str) else x for x in objs.data.tolist()]
    out = _objects(data)
    out[~objs.ok] = None
    return out


def format_rows(cq: CompiledQuery, rows: BucketRows) -> list[Row]:
    """The oracle's rows: (tick, cells), ordered by tick and then the cells' order keys."""
    rows = having_kept(cq, rows)
    if not len(rows):
        return []
    selected = select_cells(cq, rows)
    cols = [c for c, _ in selected]
    rank_cols = [_ranks(c) if ranked is None else ranked for c, ranked in selected]
    perm = np.lexsort(tuple(reversed(rank_cols)) + (rows.ticks,)) if rank_cols else np.argsort(rows.ticks, kind="stable")
    with paused_gc():
        ticks = rows.ticks[perm].tolist()
        cells = [c[perm].tolist() for c in cols]
        return list(zip(ticks, zip(*cells))) if cells else [(t, ()) for t in ticks]


def _ranks(cells: np.ndarray) -> np.ndarray:
    pos: dict = {}
    index = np.fromiter((pos.setdefault(c, len(pos)) for c in cells.tolist()), np.int64, len(cells))
    return cell_ranks(list(pos))[index]


__all__ = ["BucketRows", "concat", "merge_partials", "merged_extremes", "empty_implicit", "format_rows"]

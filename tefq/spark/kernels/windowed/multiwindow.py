"""A windowed query's SPARQL algebra over many windows at once (issue 23): the window id is one
more column of every solution table, so one pass of relational operators answers every window
of a batch (tefq.spark.kernels.windowed.window_content builds the batch).

Every operator keeps the window id: BGP patterns carry it from the window's triples, joins,
OPTIONAL and MINUS match on it as on a shared variable that is always bound (but it never makes
a MINUS remove a row by itself), GROUP BY groups by it, DISTINCT / ORDER BY / LIMIT / OFFSET /
REDUCED / CONSTRUCT act per window. rdflib's quirks hold per window: an aggregate over no
solution gives, in each window without solutions, one empty solution (with GROUP BY) or the
aggregates of the empty group (without). Per window, the rows equal — in the same order —
`VectorEvaluator.evaluate(that window's content)`, i.e. the windowed oracle's.

BGPs are joined in Strider's order (tefq.spark.kernels.windowed.join_order, `static` or `adaptive`); when an
order-sensitive operator follows (LIMIT, ORDER BY ties, ...), the BGP's rows are put back in the
order the query's own join order gives, so rows never depend on the chosen order.
"""
from __future__ import annotations

import time
from typing import Iterable

import numpy as np
import pandas as pd
from rdflib import BNode
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Variable

from tefq.errors import TefqError
from tefq.oracle.windowed.r2r import Answer, to_nt
from tefq.spark.kernels.windowed import coded_bgp
from tefq.spark.kernels.windowed.aggregates import aggregate_columns
from tefq.spark.kernels.windowed.algebra import bgp_nodes, correlated_aggregate, order_sensitive
from tefq.spark.kernels.windowed.expressions import Expressions, calls_timestamp
from tefq.spark.kernels.windowed.join_order import JoinOrders
from tefq.spark.kernels.windowed.solutions import empty, first_rows, group_codes, join, left_join, minus, normalised
from tefq.spark.kernels.windowed.sparql import FALSE, TRUE, VectorEvaluator
from tefq.spark.kernels.windowed.window_content import WINDOW, Batch

_ROW_ID = "\x00r"  # + pattern index: a BGP row's position in each pattern's table


def variable_name(x) -> str | None:
    if isinstance(x, Variable):
        return str(x)
    if isinstance(x, BNode):
        return "_:" + str(x)  # a blank node in a pattern is a variable that is never projected
    return None


def by_window(df: pd.DataFrame) -> pd.DataFrame:
    """Rows grouped by window, each window's rows in their order (a stable sort)."""
    order = np.argsort(df[WINDOW].to_numpy(np.int64), kind="stable")
    return df.iloc[order].reset_index(drop=True)


class MultiWindowEvaluator:
    """One windowed query, prepared once (parsing, `timestamp()`, unsupported algebra: the
    one-window evaluator's), evaluated batch by batch: `evaluate(batch)` answers every window."""

    def __init__(self, sparql: str, source: str = "<query>", background: Iterable[tuple[str, str, str]] = (),
                 line: int = 0, join_order: str = "adaptive", interval_s: float = 1.0) -> None:
        self.one = VectorEvaluator(sparql, source, background, line)
        self.source, self.line = source, line
        self.algebra = self.one.algebra
        self.background = pd.DataFrame(list(self.one.background), columns=["s", "p", "o"], dtype=object)
        self.orders = JoinOrders(join_order, interval_s)
        self.bgp_ids = {id(n): k for k, n in enumerate(bgp_nodes(self.algebra))}
        self.order_sensitive = order_sensitive(self.algebra)
        self.expressions = Expressions(WINDOW)

    @property
    def names(self) -> tuple[str, ...]:
        return self.one.names

    @property
    def predicates(self) -> frozenset[str] | None:
        return self.one.predicates

    @property
    def uses_timestamp(self) -> bool:
        return self.one.prepared.uses_timestamp

    @property
    def form(self) -> str:
        return self.one.prepared.form

    def error(self, what: str) -> TefqError:
        return TefqError(f"{what} is not supported by the vectorised SPARQL evaluator (try --engine oracle)",
                         self.source, self.line, 1)

    def evaluate(self, batch: Batch) -> dict[int, Answer]:
        """Every window of `batch` (by id): its SELECT rows, CONSTRUCT triples or ASK answer."""
        started = time.perf_counter()
        self.expressions.stamps = batch.stamps
        try:
            return _BatchRun(self, batch).answers()
        except TefqError:
            raise
        except Exception as e:  # noqa: BLE001 - as the oracle: an evaluation error is the query's fault
            raise TefqError(f"SPARQL evaluation failed: {e}", self.source, self.line) from None
        finally:
            self.orders.end_batch(time.perf_counter() - started)


class _BatchRun:
    """One batch's evaluation: solution tables all carry the `WINDOW` column."""

    def __init__(self, ev: MultiWindowEvaluator, batch: Batch) -> None:
        self.ev = ev
        self.batch = batch
        self.x = ev.expressions
        self._by_p: dict[str, pd.DataFrame] = {}
        self._coded_by_p: dict[str, coded_bgp.Columns] = {}  # a predicate's coded triples

    def unit(self) -> pd.DataFrame:
        """One empty solution per window (the join identity)."""
        return pd.DataFrame({WINDOW: self.batch.windows})

    # ---------------------------------------------------------------- results
    def answers(self) -> dict[int, Answer]:
        form, algebra = self.ev.form, self.ev.algebra
        windows = self.batch.windows.tolist()
        if form == "AskQuery":
            seen = set(self.part(algebra.p)[WINDOW].tolist())
            return {w: Answer(("ask",), [(TRUE if w in seen else FALSE,)], []) for w in windows}
        if form == "ConstructQuery":
            triples = self.construct(algebra)
            got = _split(triples, ["s", "p", "o"])
            return {w: Answer(("s", "p", "o"), [], got.get(w, [])) for w in windows}
        names = list(self.ev.names)
        df = _columns(self.part(algebra.p), [WINDOW] + names)
        if names:
            df = df[df[names].notna().to_numpy().any(axis=1)]  # rdflib drops empty solutions
        got = _split(df, names) if names else {}
        return {w: Answer(tuple(names), got.get(w, []), []) for w in windows}

    # ---------------------------------------------------------------- graph patterns
    def part(self, node: CompValue) -> pd.DataFrame:
        fn = getattr(self, "_" + node.name, None)
        if fn is None:
            raise self.ev.error(f"the SPARQL algebra node {node.name}")
        return fn(node)

    def _BGP(self, node) -> pd.DataFrame:
        triples = list(node.triples or [])
        if not triples:
            return self.unit()
        coded = self.coded_patterns(triples)
        if coded is not None:
            return self.coded_bgp(node, triples, *coded)
        tables = [self.pattern(t) for t in triples]
        order = self.ev.orders.choose(self.ev.bgp_ids[id(node)], triples, [len(t) for t in tables]) \
            if len(tables) > 1 else [0]
        restore = order != sorted(order) and self.ev.order_sensitive
        if restore:
            tables = [t.assign(**{f"{_ROW_ID}{i}": np.arange(len(t))}) for i, t in enumerate(tables)]
        columns = list(dict.fromkeys(c for t in tables for c in t.columns if not c.startswith(_ROW_ID)))
        out = tables[order[0]]
        for i in order[1:]:
            if not len(out):
                break
            out = join(out, tables[i])
        if not len(out):
            return empty(columns)
        if restore:  # the rows as the query's own left-deep order gives them (merges keep left order)
            ids = [out[f"{_ROW_ID}{i}"].to_numpy() for i in reversed(range(len(tables)))]
            out = out.iloc[np.lexsort(ids)]
        return out[columns].reset_index(drop=True)

    def coded_bgp(self, node, triples: list, tables: list[coded_bgp.Columns], terms: np.ndarray) -> pd.DataFrame:
        """`_BGP` on int64 term codes (`coded_bgp`): the same order, joins and row order."""
        order = self.ev.orders.choose(self.ev.bgp_ids[id(node)], triples, [coded_bgp.size(t) for t in tables])
        restore = order != sorted(order) and self.ev.order_sensitive
        if restore:
            tables = [{**t, f"{_ROW_ID}{i}": np.arange(coded_bgp.size(t))} for i, t in enumerate(tables)]
        columns = list(dict.fromkeys(c for t in tables for c in t if not c.startswith(_ROW_ID)))
        out = tables[order[0]]
        for i in order[1:]:
            if not coded_bgp.size(out):
                break
            out = coded_bgp.join(out, tables[i])
        if not coded_bgp.size(out):
            return empty(columns)
        if restore:  # the rows as the query's own left-deep order gives them (merges keep left order)
            out = coded_bgp.rows(out, np.lexsort([out[f"{_ROW_ID}{i}"] for i in reversed(range(len(tables)))]))
        return coded_bgp.decoded(out, columns, terms, {WINDOW})

    def coded_patterns(self, triples: list) -> tuple[list[coded_bgp.Columns], np.ndarray] | None:
        """The patterns' solutions as int64 term codes (`Batch.coded_triples`: joins on integers
        instead of strings), when every predicate is a constant, there is more than one pattern
        and no background; None otherwise."""
        if len(triples) < 2 or len(self.ev.background) or any(variable_name(t[1]) is not None for t in triples):
            return None
        shared = self.batch.coded_triples()
        if shared is None:
            return None
        table, terms = shared
        code = {nt: int(hits[0]) if len(hits) else -1
                for nt in {to_nt(x) for t in triples for x in t if variable_name(x) is None}
                for hits in [np.flatnonzero(terms == nt)]}
        tables = []
        for t in triples:
            key = to_nt(t[1])
            if key not in self._coded_by_p:
                mask = self.batch.predicate_mask(key)
                self._coded_by_p[key] = table if mask is None else coded_bgp.rows(table, np.flatnonzero(mask))
            tables.append(coded_bgp.match(self._coded_by_p[key], t, [WINDOW], code.__getitem__, variable_name))
        return tables, terms

    def _triples_of(self, p) -> pd.DataFrame:
        if p is None:
            return self.batch.triples
        key = to_nt(p)
        if key not in self._by_p:
            self._by_p[key] = self.batch.with_predicate(key)
        return self._by_p[key]

    def pattern(self, t) -> pd.DataFrame:
        """The solutions of one triple pattern in every window (background triples in each)."""
        p = None if variable_name(t[1]) is not None else t[1]
        found = _match(self._triples_of(p), t, [WINDOW])
        if len(self.ev.background):
            bg = _match(self.ev.background, t, [])
            if len(bg):
                found = by_window(pd.concat([found, self.unit().merge(bg, how="cross")], ignore_index=True)
                                  .drop_duplicates(ignore_index=True))
        return found

    def _Join(self, node) -> pd.DataFrame:
        a = self.part(node.p1)
        b = self.part(node.p2)
        if not node.get("lazy"):
            b = b.drop_duplicates(ignore_index=True)  # rdflib: set(evalPart(p2)), per window here
        elif correlated_aggregate(node, self.ev.error):
            return left_join(a, b, None)  # a left row without a group keeps its row, as in rdflib
        return join(a, b)

    def _LeftJoin(self, node) -> pd.DataFrame:
        correlated_aggregate(node, self.ev.error)
        a, b = self.part(node.p1), self.part(node.p2)
        expr = node.expr
        if expr is None or (isinstance(expr, CompValue) and expr.name == "TrueFilter"):
            return left_join(a, b, None)
        return left_join(a, b, lambda j: self.x.ebv(expr, j))

    def _Filter(self, node) -> pd.DataFrame:
        df = self.part(node.p)
        return df[self.x.ebv(node.expr, df)].reset_index(drop=True) if len(df) else df

    def _Union(self, node) -> pd.DataFrame:
        return normalised(pd.concat([self.part(node.p1), self.part(node.p2)], ignore_index=True))

    def _Minus(self, node) -> pd.DataFrame:
        a, b = self.part(node.p1), self.part(node.p2)
        shared = [c for c in a.columns if c in b.columns and c != WINDOW]
        return minus(a, b, shared, [WINDOW])

    def _Extend(self, node) -> pd.DataFrame:
        df = self.part(node.p)
        col = self.x.value(node.expr, df) if len(df) else []
        return df.assign(**{str(node.var): pd.Series(col, index=df.index, dtype=object)})

    def _Project(self, node) -> pd.DataFrame:
        return _columns(self.part(node.p), [WINDOW] + [str(v) for v in node.PV])

    def _Distinct(self, node) -> pd.DataFrame:
        return self.part(node.p).drop_duplicates(ignore_index=True)

    def _Reduced(self, node) -> pd.DataFrame:
        df = self.part(node.p)  # rdflib drops a row equal to the one just before it (in its window)
        if len(df) < 2 or len(df.columns) < 2:
            return df
        df = by_window(df)
        same = (df.fillna("\0") == df.shift(1).fillna("\0")).all(axis=1).to_numpy()
        same[0] = False
        return df[~same].reset_index(drop=True)

    def _OrderBy(self, node) -> pd.DataFrame:
        from rdflib.plugins.sparql.evaluate import value
        from rdflib.plugins.sparql.evalutils import _val

        df = self.part(node.p).reset_index(drop=True)
        order = list(range(len(df)))
        for cond in reversed(node.expr):  # as rdflib: stable sorts from the last key to the first
            reverse = bool(cond.order and cond.order == "DESC")
            keys = [_val(value(r, cond.expr, variables=True)) for r in self.x.solutions(df, calls_timestamp(cond))]
            order = sorted(order, key=lambda i: keys[i], reverse=reverse)
        return by_window(df.iloc[order])

    def _Slice(self, node) -> pd.DataFrame:
        df = by_window(self.part(node.p))
        start = node.start or 0
        position = df.groupby(WINDOW, sort=False).cumcount().to_numpy()
        keep = position >= start
        if node.length is not None:
            keep &= position < start + node.length
        return df[keep].reset_index(drop=True)

    def _ToMultiSet(self, node) -> pd.DataFrame:
        return self.part(node.p)

    def _Group(self, node) -> pd.DataFrame:
        return self.part(node.p)

    def _values(self, node) -> pd.DataFrame:
        rows = [{str(k): to_nt(v) for k, v in r.items() if v is not None and str(v) != "UNDEF"} for r in node.res]
        names = list(dict.fromkeys(k for r in rows for k in r))
        if not names:
            return self.unit().loc[self.unit().index.repeat(len(rows))].reset_index(drop=True)
        table = normalised(pd.DataFrame(rows, columns=names)) if rows else empty(names)
        return self.unit().merge(table, how="cross")  # the same rows in every window

    def _AggregateJoin(self, node) -> pd.DataFrame:
        group = node.p
        df = self.part(group.p).reset_index(drop=True)
        filler = self._no_solution(node, np.setdiff1d(self.batch.windows, df[WINDOW].to_numpy(np.int64)))
        if not len(df):
            return filler
        keys = [df[WINDOW].to_numpy()]
        for e in group.expr or []:
            if isinstance(e, Variable):
                keys.append(df[str(e)].to_numpy(dtype=object) if str(e) in df.columns
                            else np.full(len(df), None, dtype=object))
            else:
                keys.append(self.x.value(e, df))
        codes = group_codes(keys)
        groups, first = first_rows(codes)  # groups are numbered as they appear
        grouped = {str(e) for e in group.expr or [] if isinstance(e, Variable)}
        out = {WINDOW: df[WINDOW].to_numpy()[first],
               **aggregate_columns(df, codes, groups, node.A, self.x, first, grouped)}
        found = pd.DataFrame(out)
        return normalised(pd.concat([found, filler], ignore_index=True)) if len(filler) else found

    def _no_solution(self, node, windows: np.ndarray) -> pd.DataFrame:
        """rdflib's answer in windows where the aggregate sees no solution: with GROUP BY one empty
        solution; without, the aggregates of the one (empty) implicit group (COUNT 0, AVG 0, ...)."""
        if node.p.expr is not None:
            return pd.DataFrame({WINDOW: windows})
        from rdflib.plugins.sparql.aggregates import Aggregator

        got = Aggregator(aggregations=node.A).get_bindings()
        return pd.DataFrame({WINDOW: windows, **{str(a.res): [to_nt(got.get(a.res))] * len(windows) for a in node.A}})

    # ---------------------------------------------------------------- CONSTRUCT
    def construct(self, query) -> pd.DataFrame:
        """The template's triples per window (WINDOW, s, p, o), each window's set in order."""
        template = query.template if query.template else query.p.p.triples
        df = self.part(query.p)
        parts = []
        for t in template:
            cols = [pd.Series(df[WINDOW].to_numpy(), index=df.index)]
            for x in t:
                if isinstance(x, BNode):
                    cols.append(pd.Series([to_nt(BNode()) for _ in range(len(df))], index=df.index, dtype=object))
                elif isinstance(x, Variable):
                    cols.append(df[str(x)] if str(x) in df.columns else pd.Series([None] * len(df), index=df.index,
                                                                                   dtype=object))
                else:
                    cols.append(pd.Series([to_nt(x)] * len(df), index=df.index, dtype=object))
            parts.append(pd.DataFrame(dict(zip([WINDOW, "s", "p", "o"], cols))).dropna())
        if not parts:
            return empty((WINDOW, "s", "p", "o"))
        return pd.concat(parts, ignore_index=True).drop_duplicates(ignore_index=True)


def _columns(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """`df` with exactly these columns; a missing one is unbound (operators' tables are already
    normalised: only new columns need it)."""
    if all(c in df.columns for c in columns):
        return df[columns] if list(df.columns) != columns else df
    return normalised(df.reindex(columns=columns))


def _match(triples: pd.DataFrame, t, keys: list[str]) -> pd.DataFrame:
    """The rows of a triple table matching pattern `t`, as solutions (`keys` kept)."""
    df = triples
    for col, x in (("s", t[0]), ("p", t[1]), ("o", t[2])):
        if variable_name(x) is None:
            df = df[df[col] == to_nt(x)]
    names: dict[str, str] = {}
    for col, x in (("s", t[0]), ("p", t[1]), ("o", t[2])):
        n = variable_name(x)
        if n is None:
            continue
        if n in names.values():  # a repeated variable: the positions must be equal
            first = next(c for c, v in names.items() if v == n)
            df = df[df[col] == df[first]]
        else:
            names[col] = n
    return df[keys + list(names)].rename(columns=names).reset_index(drop=True)


def _split(df: pd.DataFrame, names: list[str]) -> dict[int, list[tuple]]:
    """Per window, its rows as tuples of `names`, in order."""
    if not len(df):
        return {}
    df = by_window(df)
    windows = df[WINDOW].to_numpy(np.int64)
    rows = list(zip(*[df[c].tolist() for c in names]))
    cuts = np.flatnonzero(np.diff(windows)) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [len(rows)]])
    return {int(windows[a]): rows[a:b] for a, b in zip(starts, ends)}


__all__ = ["MultiWindowEvaluator", "variable_name", "by_window"]

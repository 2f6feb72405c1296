"""A windowed query's SPARQL algebra over many windows at once (issue 23): the window id is one
more column of every solution table, so one pass of relational operators answers every window
of a batch (tefq.spark.kernels.windowed.window_content builds the batch).

Every operator keeps the window id: BGP patterns carry it from the window's triples, joins,
OPTIONAL and MINUS match on it as on a shared variable that is always bound (but it never makes
a MINUS remove a row by itself), GROUP BY groups by it, DISTINCT / ORDER BY / LIMIT / OFFSET /
REDUCED / CONSTRUCT act per window. An aggregate over no solution gives, in each window without
solutions, nothing (with GROUP BY) or the aggregates of the empty group (without). Per window, the rows equal the windowed oracle's
(`tefq.oracle.windowed.r2r`, rdflib with its corrections).

BGPs are joined in Strider's order (tefq.spark.kernels.windowed.join_order, `static` or `adaptive`); when an
order-sensitive operator follows (LIMIT, ORDER BY ties, ...), the BGP's rows are put back in the
order the query's own join order gives, so rows never depend on the chosen order.
"""
from __future__ import annotations

import time
from typing import Iterable

import numpy as np
import pandas as pd
from rdflib import BNode, Literal, URIRef
from rdflib.plugins.sparql.parserutils import CompValue, Expr
from rdflib.term import Variable

from tefq.errors import TefqError
from tefq.oracle.windowed.r2r import Answer, prepared, to_nt
from tefq.oracle.windowed.sparql_values import order_key
from tefq.spark.kernels.windowed import coded_bgp, paths
from tefq.spark.kernels.windowed.aggregates import aggregate_columns
from tefq.spark.kernels.windowed.algebra import bgp_nodes, children, order_sensitive, substituted, walk
from tefq.spark.kernels.windowed.expressions import FALSE, TRUE, Expressions, calls_timestamp, variables
from tefq.spark.kernels.windowed.join_order import JoinOrders
from tefq.spark.kernels.windowed.solutions import empty, first_rows, group_codes, join, left_join, minus, normalised
from tefq.spark.kernels.windowed.window_content import WINDOW, Batch

_ROW_ID = "\x00r"  # + pattern index: a BGP row's position in each pattern's table
SEED = "\x00seed"  # inside an EXISTS: which row of the filtered table a solution was found for


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
        self.prepared = prepared(sparql, source, tuple(tuple(t) for t in background), line)
        self.source, self.line = source, line
        self.algebra = self.prepared.query.algebra
        check_supported(self.algebra, self.error)
        self.background = pd.DataFrame([tuple(to_nt(x) for x in t) for t in self.prepared.background],
                                       columns=["s", "p", "o"], dtype=object)
        self.orders = JoinOrders(join_order, interval_s)
        self.bgp_ids = {id(n): k for k, n in enumerate(bgp_nodes(self.algebra))}
        self.order_sensitive = order_sensitive(self.algebra)
        self.expressions = Expressions(WINDOW, prologue=self.prepared.query.prologue)

    @property
    def names(self) -> tuple[str, ...]:
        return self.prepared.names

    @property
    def predicates(self) -> frozenset[str] | None:
        return self.prepared.predicates

    @property
    def uses_timestamp(self) -> bool:
        return self.prepared.uses_timestamp

    @property
    def form(self) -> str:
        return self.prepared.form

    def error(self, what: str) -> TefqError:
        return TefqError(f"{what} is not supported by the vectorised SPARQL evaluator (spec §8; try --engine oracle)",
                         self.source, self.line, 1)

    def evaluate(self, batch: Batch) -> dict[int, Answer]:
        """Every window of `batch` (by id): its SELECT rows, CONSTRUCT triples or ASK answer."""
        started = time.perf_counter()
        self.expressions.stamps = batch.stamps
        self.expressions.ctx.bnodes.clear()  # BNODE(str)'s nodes: per solution of a window, none kept
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
        self._graph: pd.DataFrame | None = None  # every triple, for property paths
        self.seeds: list[pd.DataFrame] = []  # the rows an EXISTS is evaluated under (innermost last)

    def unit(self) -> pd.DataFrame:
        """One empty solution per window (the join identity); inside an EXISTS, its seed."""
        if self.seeds:
            return self.seeds[-1]
        return pd.DataFrame({WINDOW: self.batch.windows})

    def keys(self) -> list[str]:
        """The columns that are no variables: the window, and inside an EXISTS its seed."""
        return [WINDOW, SEED] if self.seeds else [WINDOW]

    # ---------------------------------------------------------------- EXISTS
    def with_exists(self, expr, df: pd.DataFrame):
        """(`expr`, `df`) with each EXISTS / NOT EXISTS of `expr` computed into a column of `df`
        and read from it (the expression rewritten), or as they are without one."""
        found = [n for n in walk(expr) if n.name in ("Builtin_EXISTS", "Builtin_NOTEXISTS")]
        if not found or not len(df):
            return expr, df
        columns = {}
        for k, n in enumerate(found):
            hit = self.exists(n.graph, df)
            columns[f"\x01exists{k}"] = np.where(hit if n.name == "Builtin_EXISTS" else ~hit, TRUE, FALSE)
        rewritten = substituted(expr, {id(n): Variable(f"\x01exists{k}") for k, n in enumerate(found)})
        return rewritten, df.assign(**columns)

    def exists(self, graph, df: pd.DataFrame) -> np.ndarray:
        """Per row of `df`, whether `graph` has a solution under the row's bindings: `graph` is
        evaluated with every distinct row (of the variables it reads) as a seed joined into each
        of its basic patterns, so its filters see the row's values (SPARQL's substitution)."""
        outer = [c for c in df.columns if c not in (WINDOW, SEED) and Variable(c) in variables(graph)]
        keys = self.keys()
        rows = df[keys + outer].reset_index(drop=True)
        seed_of = group_codes([rows[c].to_numpy(dtype=object) for c in keys + outer])
        _, first = first_rows(seed_of)
        seed = rows.iloc[first].reset_index(drop=True)
        seed = normalised(seed.drop(columns=[SEED], errors="ignore").assign(**{SEED: np.arange(len(seed))}))
        self.seeds.append(seed)
        try:
            hits = self.part(graph)[SEED].to_numpy()
        finally:
            self.seeds.pop()
        return np.isin(seed_of, hits)

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
        df = _columns(self.part(algebra.p), [WINDOW] + names)  # all-unbound solutions are rows too
        got = _split(df, names)
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
        if self.seeds:  # inside an EXISTS: the seeds' bindings hold in every pattern
            return join(self.seeds[-1], self.bgp(node, triples))
        return self.bgp(node, triples)

    def bgp(self, node, triples: list) -> pd.DataFrame:
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
        if len(triples) < 2 or len(self.ev.background) or \
                any(variable_name(t[1]) is not None or paths.is_path(t[1]) for t in triples):
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
        if paths.is_path(t[1]):
            return self.path_pattern(t)
        p = None if variable_name(t[1]) is not None else t[1]
        found = _match(self._triples_of(p), t, [WINDOW])
        if len(self.ev.background):
            bg = _match(self.ev.background, t, [])
            if len(bg):
                found = by_window(pd.concat([found, self.unit().merge(bg, how="cross")], ignore_index=True)
                                  .drop_duplicates(ignore_index=True))
        return found

    def graph(self) -> pd.DataFrame:
        """Every window's triples (WINDOW, s, p, o), the background's in each."""
        if self._graph is None:
            own = self.batch.triples[[WINDOW, "s", "p", "o"]]
            bg = self.unit().merge(self.ev.background, how="cross") if len(self.ev.background) else None
            self._graph = own if bg is None else pd.concat([own, bg], ignore_index=True).drop_duplicates(ignore_index=True)
        return self._graph

    def nodes(self) -> pd.DataFrame:
        """Every node of each window's graph, as (WINDOW, s)."""
        g = self.graph()
        both = pd.concat([g[[WINDOW, "s"]], g[[WINDOW, "o"]].rename(columns={"o": "s"})], ignore_index=True)
        return both.drop_duplicates(ignore_index=True)

    def path_pattern(self, t) -> pd.DataFrame:
        """A triple pattern whose predicate is a property path (tefq.spark.kernels.windowed.paths)."""
        found = paths.pairs(t[1], self.graph(), [WINDOW], self.nodes)
        ends = [to_nt(x) for x in (t[0], t[2]) if variable_name(x) is None]
        found = paths.with_constant_ends(found, t[1], ends, self.unit(), [WINDOW])
        names: dict[str, str] = {}
        for col, x in (("s", t[0]), ("o", t[2])):
            n = variable_name(x)
            if n is None:
                found = found[found[col] == to_nt(x)]
            elif n in names.values():
                found = found[found["s"] == found["o"]]
            else:
                names[col] = n
        return found[[WINDOW] + list(names)].rename(columns=names).reset_index(drop=True)

    def _Join(self, node) -> pd.DataFrame:
        a = self.part(node.p1)
        b = self.part(node.p2)
        return join(a, b)

    def _LeftJoin(self, node) -> pd.DataFrame:
        a, b = self.part(node.p1), self.part(node.p2)
        expr = node.expr
        if expr is None or (isinstance(expr, CompValue) and expr.name == "TrueFilter"):
            return left_join(a, b, None)
        return left_join(a, b, lambda j: self.ebv(expr, j))

    def ebv(self, expr, df: pd.DataFrame) -> np.ndarray:
        return self.x.ebv(*self.with_exists(expr, df))

    def _Filter(self, node) -> pd.DataFrame:
        df = self.part(node.p)
        return df[self.ebv(node.expr, df)].reset_index(drop=True) if len(df) else df

    def _Union(self, node) -> pd.DataFrame:
        return normalised(pd.concat([self.part(node.p1), self.part(node.p2)], ignore_index=True))

    def _Minus(self, node) -> pd.DataFrame:
        a, b = self.part(node.p1), self.part(node.p2)
        keys = self.keys()
        shared = [c for c in a.columns if c in b.columns and c not in keys]
        return minus(a, b, shared, keys)

    def _Extend(self, node) -> pd.DataFrame:
        df = self.part(node.p)
        col = self.x.value(*self.with_exists(node.expr, df)) if len(df) else []
        return df.assign(**{str(node.var): pd.Series(col, index=df.index, dtype=object)})

    def _Project(self, node) -> pd.DataFrame:
        return _columns(self.part(node.p), [WINDOW] + [str(v) for v in node.PV])

    def _Distinct(self, node) -> pd.DataFrame:
        return self.part(node.p).drop_duplicates(ignore_index=True)

    def _Reduced(self, node) -> pd.DataFrame:
        return self.part(node.p).drop_duplicates(ignore_index=True)  # as the oracle: every duplicate dropped

    def _OrderBy(self, node) -> pd.DataFrame:
        from rdflib.plugins.sparql.evaluate import value

        df = self.part(node.p).reset_index(drop=True)
        order = list(range(len(df)))
        for cond in reversed(node.expr):  # as the oracle: stable sorts from the last key to the first
            reverse = bool(cond.order and cond.order == "DESC")
            keys = [order_key(value(r, cond.expr, variables=True)) for r in self.x.solutions(df, calls_timestamp(cond))]
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
        return join(self.unit(), table)  # the same rows in every window (compatible with a seed's)

    def _AggregateJoin(self, node) -> pd.DataFrame:
        group = node.p
        df = self.part(group.p).reset_index(drop=True)
        keys = self.keys()  # per window (and, inside an EXISTS, per seed)
        filler = self._no_solution(node, df, keys)
        if not len(df):
            return filler
        columns = [df[k].to_numpy() for k in keys]
        for e in group.expr or []:
            if isinstance(e, Variable):
                columns.append(df[str(e)].to_numpy(dtype=object) if str(e) in df.columns
                               else np.full(len(df), None, dtype=object))
            else:
                columns.append(self.x.value(e, df))
        codes = group_codes(columns)
        groups, first = first_rows(codes)  # groups are numbered as they appear
        grouped = {str(e) for e in group.expr or [] if isinstance(e, Variable)}
        out = {**{k: df[k].to_numpy()[first] for k in keys},
               **aggregate_columns(df, codes, groups, node.A, self.x, first, grouped)}
        found = pd.DataFrame(out)
        return normalised(pd.concat([found, filler], ignore_index=True)) if len(filler) else found

    def _no_solution(self, node, df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
        """The answer where the aggregate sees no solution (windows, or seeds, without a row of
        `df`): with GROUP BY none (no group); without, the aggregates of the one (empty) implicit
        group (COUNT 0, AVG 0, ...)."""
        unit = self.unit()[keys]
        if node.p.expr is not None:
            return unit.iloc[:0]
        missing = unit.merge(df[keys].drop_duplicates(), on=keys, how="left", indicator=True)
        missing = missing.loc[missing["_merge"] == "left_only", keys].reset_index(drop=True)
        from rdflib.plugins.sparql.aggregates import Aggregator

        got = Aggregator(aggregations=node.A).get_bindings()
        return missing.assign(**{str(a.res): [to_nt(got.get(a.res))] * len(missing) for a in node.A})

    # ---------------------------------------------------------------- CONSTRUCT
    def construct(self, query) -> pd.DataFrame:
        """The template's triples per window (WINDOW, s, p, o), each window's set in order."""
        template = query.template if query.template else query.p.p.triples
        df = self.part(query.p)
        fresh = {x: pd.Series([to_nt(BNode()) for _ in range(len(df))], index=df.index, dtype=object)
                 for t in template for x in t if isinstance(x, BNode)}  # one node per label and solution
        parts = []
        for t in template:
            cols = [pd.Series(df[WINDOW].to_numpy(), index=df.index)]
            for x in t:
                if isinstance(x, BNode):
                    cols.append(fresh[x])
                elif isinstance(x, Variable):
                    cols.append(df[str(x)] if str(x) in df.columns else pd.Series([None] * len(df), index=df.index,
                                                                                   dtype=object))
                else:
                    cols.append(pd.Series([to_nt(x)] * len(df), index=df.index, dtype=object))
            parts.append(pd.DataFrame(dict(zip([WINDOW, "s", "p", "o"], cols))).dropna())
        if not parts:
            return empty((WINDOW, "s", "p", "o"))
        return pd.concat(parts, ignore_index=True).drop_duplicates(ignore_index=True)


_SUPPORTED = {"BGP", "Join", "LeftJoin", "Filter", "Union", "Minus", "Extend", "Project", "Distinct",
              "Reduced", "OrderBy", "Slice", "ToMultiSet", "values", "Group", "AggregateJoin",
              "SelectQuery", "ConstructQuery", "AskQuery"}
_NAMED = {"Graph": "GRAPH", "ServiceGraphPattern": "SERVICE", "DescribeQuery": "DESCRIBE"}


def check_supported(node, error, seen: set | None = None) -> None:
    """Reject, before any window, the algebra this evaluator does not implement."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, CompValue):
        name = node.name
        if not isinstance(node, Expr) and not name.startswith(("Aggregate_", "OrderCondition", "vars")) \
                and name not in _SUPPORTED:
            raise error(_NAMED.get(name, f"the SPARQL algebra node {name}"))
        for v in children(node):
            check_supported(v, error, seen)
    elif isinstance(node, (list, tuple)):
        for v in node:
            check_supported(v, error, seen)


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
    rows = list(zip(*[df[c].tolist() for c in names])) if names else [()] * len(df)
    cuts = np.flatnonzero(np.diff(windows)) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [len(rows)]])
    return {int(windows[a]): rows[a:b] for a, b in zip(starts, ends)}


__all__ = ["MultiWindowEvaluator", "variable_name", "by_window"]

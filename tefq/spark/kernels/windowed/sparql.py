"""A vectorised SPARQL 1.1 algebra evaluator over one window's content (no Spark dependency).

The windowed oracle (`tefq.oracle.windowed.r2r`) evaluates each window with rdflib, row by row.
This module evaluates the *same* rdflib algebra (the oracle's `Evaluator` parses the query, rewrites
`timestamp()` and orders the BGPs) with relational operators over pandas tables: a solution
sequence is a DataFrame whose columns are variable names and whose cells are N-Triples terms
(None = unbound). BGPs are hash joins of the window's (s, p, o) table, Join/LeftJoin/Minus are
joins on the shared variables (unbound-aware), GROUP BY is a pandas groupby.

The answer must be rdflib's exactly (the oracle is the definition), so:
* the window's terms are normalised through rdflib once (`to_nt(to_rdflib(term))`);
* rdflib's own deviations from SPARQL 1.1 are kept: a non-lazy Join reads its right side as a set;
  an aggregate over no solution gives one empty solution; unbound GROUP BY keys form one group; Extend leaves the variable unbound on an error;
* common expressions are vectorised (variables, constants, BOUND, COALESCE, IF, && || !, numeric
  comparisons, xsd:integer + -, IRI equality); every other expression is evaluated by rdflib's own
  expression code, once per distinct combination of the variables it reads; aggregates other than
  COUNT and SAMPLE use rdflib's own accumulators per group.
Unsupported algebra (property paths, GRAPH, SERVICE, EXISTS, DESCRIBE) raises a TefqError.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from rdflib import BNode, Graph, Literal, URIRef
from rdflib.plugins.sparql.parserutils import CompValue, Expr
from rdflib.plugins.sparql.sparql import FrozenBindings, QueryContext, SPARQLError
from rdflib.term import Variable

from tefq.errors import TefqError
from tefq.oracle.windowed.r2r import TIMESTAMP_FN, Answer, Evaluator, to_nt, to_rdflib, window_timestamps
from tefq.spark.kernels.windowed.algebra import correlated_aggregate
from tefq.spark.kernels.windowed.solutions import ROW, by_mask, empty, join, normalised

XSD = "http://www.w3.org/2001/XMLSchema#"
_INT_TYPES = {f"{XSD}{t}" for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                                     "positiveInteger", "negativeInteger", "nonPositiveInteger",
                                     "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte")}
_FLOAT_TYPES = {f"{XSD}float", f"{XSD}double"}
TRUE, FALSE = to_nt(Literal(True)), to_nt(Literal(False))
_MAX_EXACT_INT = 2 ** 53


@functools.lru_cache(maxsize=1_000_000)  # a window's terms repeat: parse each once
def _numeric(nt: str | None) -> tuple[int, float]:
    """How a term takes part in vectorised arithmetic: (1, v) an xsd:integer-family literal whose
    value fits a double exactly, (2, v) a valid xsd:float/double, (0, nan) anything else."""
    if nt is None or not nt.startswith('"'):
        return 0, np.nan
    t = to_rdflib(nt)
    dt = str(t.datatype) if isinstance(t, Literal) and t.datatype else ""
    if dt in _INT_TYPES or dt in _FLOAT_TYPES:
        v = t.value  # type: ignore[union-attr]
        if dt in _INT_TYPES and isinstance(v, int) and not isinstance(v, bool) and abs(v) < _MAX_EXACT_INT:
            return 1, float(v)
        if dt in _FLOAT_TYPES and isinstance(v, float):
            return 2, v
    return 0, np.nan


def _unit() -> pd.DataFrame:
    """The solution sequence holding one empty solution (the join identity)."""
    return pd.DataFrame(index=range(1))


def _var_name(x) -> str | None:
    if isinstance(x, Variable):
        return str(x)
    if isinstance(x, BNode):
        return "_:" + str(x)  # a blank node in a pattern is a variable that is never projected
    return None


@dataclass
class Window:
    """One window's content: the distinct triples as N-Triples (normalised by rdflib) and the
    latest timestamp of each (C-SPARQL's `timestamp()`)."""

    triples: pd.DataFrame  # s, p, o
    stamps: dict

    @staticmethod
    def of(content, background: Sequence[tuple[str, str, str]] = (),
           predicates: frozenset[str] | None = None, with_stamps: bool = False) -> "Window":
        """`content`: (ts, s, p, o) tuples or a DataFrame with those columns."""
        if isinstance(content, pd.DataFrame):
            df = content[["ts", "s", "p", "o"]]
        elif len(content):
            df = pd.DataFrame(list(content), columns=["ts", "s", "p", "o"])
        else:
            df = pd.DataFrame({"ts": pd.Series([], dtype=np.int64), "s": [], "p": [], "o": []})
        if predicates is not None:
            df = df[df["p"].isin(predicates)]
        if background:
            df = df.copy()
            bg = pd.DataFrame(list(background), columns=["s", "p", "o"])
            bg["ts"] = None
            df = pd.concat([df, bg[["ts", "s", "p", "o"]]], ignore_index=True)
        df = df.copy()
        for c in ("s", "p", "o"):  # rdflib's view of each term (one conversion per distinct term)
            uniq = pd.unique(df[c])
            df[c] = df[c].map(dict(zip(uniq, (to_nt(to_rdflib(t)) for t in uniq)))) if len(uniq) else df[c]
        stamps: dict = {}
        if with_stamps:
            timed = df[df["ts"].notna()]
            if len(timed):
                latest = timed.groupby(["s", "p", "o"], sort=False)["ts"].max()
                stamps = {tuple(to_rdflib(x) for x in k): int(v) for k, v in latest.items()}
        triples = df[["s", "p", "o"]].drop_duplicates(ignore_index=True)
        return Window(triples.astype(object), stamps)


class VectorEvaluator:
    """The oracle's prepared query (`Evaluator`), evaluated with relational operators."""

    def __init__(self, sparql: str, source: str = "<query>", background: Iterable[tuple[str, str, str]] = (),
                 line: int = 0, small: int = 0) -> None:
        self.prepared = Evaluator(sparql, source, background)
        # windows with fewer relevant triples than `small` go to rdflib (the oracle's evaluator):
        # pandas' fixed cost per operator is larger than rdflib's whole evaluation of a tiny window
        self.small = small
        self.source, self.line = source, line
        self.background = [tuple(to_nt(x) for x in t) for t in self.prepared.background]
        self.algebra = self.prepared.query.algebra
        _check_supported(self.algebra, self._error)

    @property
    def names(self) -> tuple[str, ...]:
        return self.prepared.names

    @property
    def predicates(self) -> frozenset[str] | None:
        return self.prepared.predicates

    def _error(self, what: str) -> TefqError:
        return TefqError(f"{what} is not supported by the vectorised SPARQL evaluator (try --engine oracle)",
                         self.source, self.line, 1)

    def evaluate(self, content) -> Answer:
        if self.small:
            df = content if isinstance(content, pd.DataFrame) else None
            n = len(content) if self.predicates is None else (
                int(df["p"].isin(self.predicates).sum()) if df is not None
                else sum(1 for e in content if e[2] in self.predicates))
            if n + len(self.background) < self.small:
                rows = (list(df[["ts", "s", "p", "o"]].itertuples(index=False, name=None)) if df is not None
                        else content)
                return self.prepared.evaluate(rows)
        w = Window.of(content, self.background, self.predicates, self.prepared.uses_timestamp)
        token = window_timestamps.set(w.stamps)
        try:
            run = _Run(w, self._error)
            form = self.prepared.form
            if form == "AskQuery":
                return Answer(("ask",), [(TRUE if len(run.part(self.algebra.p)) else FALSE,)], [])
            if form == "ConstructQuery":
                return Answer(("s", "p", "o"), [], run.construct(self.algebra))
            names = self.names
            df = run.part(self.algebra.p)
            df = df.reindex(columns=list(names)) if names else df.iloc[:, :0]
            df = normalised(df)
            rows = [tuple(r) for r in df.itertuples(index=False, name=None) if any(x is not None for x in r)]
            return Answer(names, rows, [])
        except TefqError:
            raise
        except Exception as e:  # noqa: BLE001 - as the oracle: an evaluation error is the query's fault
            raise TefqError(f"SPARQL evaluation failed: {e}", self.source, self.line) from None
        finally:
            window_timestamps.reset(token)


_SUPPORTED = {"BGP", "Join", "LeftJoin", "Filter", "Union", "Minus", "Extend", "Project", "Distinct",
              "Reduced", "OrderBy", "Slice", "ToMultiSet", "values", "Group", "AggregateJoin",
              "SelectQuery", "ConstructQuery", "AskQuery"}


def _check_supported(node, error, seen: set | None = None) -> None:
    """Reject, before any window, the algebra this evaluator does not implement."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, CompValue):
        name = node.name
        if name in ("Builtin_EXISTS", "Builtin_NOTEXISTS"):
            raise error("FILTER EXISTS / NOT EXISTS")
        if not isinstance(node, Expr) and not name.startswith(("Aggregate_", "OrderCondition", "vars")) \
                and name not in _SUPPORTED:
            raise error({"Graph": "GRAPH", "ServiceGraphPattern": "SERVICE",
                         "DescribeQuery": "DESCRIBE"}.get(name, f"the SPARQL algebra node {name}"))
        if name == "BGP":
            for t in node.triples or []:
                if not all(isinstance(x, (Variable, BNode, URIRef, Literal)) for x in t):
                    raise error("a property path")
        for k, v in node.items():
            if k != "_vars":
                _check_supported(v, error, seen)
    elif isinstance(node, (list, tuple)):
        for v in node:
            _check_supported(v, error, seen)


class _Run:
    """One window's evaluation."""

    def __init__(self, window: Window, error) -> None:
        self.w = window
        self.error = error
        self._by_p: dict[str, pd.DataFrame] | None = None
        self.ctx = QueryContext(Graph(), initBindings={})

    # ---------------------------------------------------------------- graph patterns
    def part(self, node: CompValue) -> pd.DataFrame:
        fn = getattr(self, "_" + node.name, None)
        if fn is None:
            raise self.error(f"the SPARQL algebra node {node.name}")
        return fn(node)

    def _BGP(self, node) -> pd.DataFrame:
        out = _unit()
        for t in node.triples or []:
            out = join(out, self._pattern(t))
            if not len(out):
                break
        return out

    def _pattern(self, t) -> pd.DataFrame:
        if self._by_p is None:
            tr = self.w.triples
            self._by_p = {p: g.reset_index(drop=True) for p, g in tr.groupby("p", sort=False)} if len(tr) else {}
        s, p, o = t
        pn = _var_name(p)
        df = self.w.triples if pn is not None else self._by_p.get(to_nt(p), empty(("s", "p", "o")))
        for col, x in (("s", s), ("o", o)):
            if _var_name(x) is None:
                df = df[df[col] == to_nt(x)]
        names: dict[str, str] = {}
        for col, x in (("s", s), ("p", p), ("o", o)):
            n = _var_name(x)
            if n is None:
                continue
            if n in names.values():  # a repeated variable: the positions must be equal
                first = next(c for c, v in names.items() if v == n)
                df = df[df[col] == df[first]]
            else:
                names[col] = n
        return df[list(names)].rename(columns=names).reset_index(drop=True)

    def _Join(self, node) -> pd.DataFrame:
        a = self.part(node.p1)
        b = self.part(node.p2)
        if not node.get("lazy"):
            b = b.drop_duplicates(ignore_index=True)  # rdflib: set(evalPart(p2))
        elif correlated_aggregate(node, self.error):
            # rdflib evaluates a lazy join's right side once per left solution; a grouped
            # subquery then yields its "no group" empty solution for a left row without a group
            return self._left_join(a.reset_index(drop=True), b, None)
        return join(a, b)

    def _LeftJoin(self, node) -> pd.DataFrame:
        correlated_aggregate(node, self.error)
        a = self.part(node.p1).reset_index(drop=True)
        b = self.part(node.p2)
        return self._left_join(a, b, node.expr)

    def _left_join(self, a: pd.DataFrame, b: pd.DataFrame, expr) -> pd.DataFrame:
        a_id = a.assign(**{ROW: np.arange(len(a))})
        j = join(a_id, b)
        if len(j) and expr is not None and not (isinstance(expr, CompValue) and expr.name == "TrueFilter"):
            j = j[self.ebv(expr, j)]
        rest = a[~np.isin(np.arange(len(a)), j[ROW].to_numpy())]
        return normalised(pd.concat([j.drop(columns=ROW), rest], ignore_index=True))

    def _Filter(self, node) -> pd.DataFrame:
        df = self.part(node.p)
        return df[self.ebv(node.expr, df)].reset_index(drop=True) if len(df) else df

    def _Union(self, node) -> pd.DataFrame:
        return normalised(pd.concat([self.part(node.p1), self.part(node.p2)], ignore_index=True))

    def _Minus(self, node) -> pd.DataFrame:
        a = self.part(node.p1).reset_index(drop=True)
        b = self.part(node.p2)
        shared = [c for c in a.columns if c in b.columns]
        if not shared or not len(a) or not len(b):
            return a
        removed = np.zeros(len(a), bool)
        a_id = a[shared].assign(**{ROW: np.arange(len(a))})
        for am, asub in by_mask(a_id, shared):
            for bm, bsub in by_mask(b[shared], shared):
                on = [c for c in shared if c in am and c in bm]
                if on:  # compatible and sharing a bound variable: removed
                    hit = asub[on + [ROW]].merge(bsub[on].drop_duplicates(), on=on)
                    removed[hit[ROW].to_numpy()] = True
        return a[~removed].reset_index(drop=True)

    def _Extend(self, node) -> pd.DataFrame:
        df = self.part(node.p)
        col = self.value(node.expr, df) if len(df) else []
        return df.assign(**{str(node.var): pd.Series(col, index=df.index, dtype=object)})

    def _Project(self, node) -> pd.DataFrame:
        df = self.part(node.p)
        return normalised(df.reindex(columns=[str(v) for v in node.PV]))

    def _Distinct(self, node) -> pd.DataFrame:
        return self.part(node.p).drop_duplicates(ignore_index=True)

    def _Reduced(self, node) -> pd.DataFrame:
        df = self.part(node.p)  # rdflib drops a row equal to the one just before it
        if len(df) < 2 or not len(df.columns):
            return df
        same = (df.fillna("\0") == df.shift(1).fillna("\0")).all(axis=1).to_numpy()
        same[0] = False
        return df[~same].reset_index(drop=True)

    def _OrderBy(self, node) -> pd.DataFrame:
        from rdflib.plugins.sparql.evalutils import _val
        from rdflib.plugins.sparql.evaluate import value

        df = self.part(node.p).reset_index(drop=True)
        order = list(range(len(df)))
        rows = self._bindings(df)
        for cond in reversed(node.expr):  # as rdflib: stable sorts from the last key to the first
            reverse = bool(cond.order and cond.order == "DESC")
            keys = [_val(value(r, cond.expr, variables=True)) for r in rows]
            order = sorted(order, key=lambda i: keys[i], reverse=reverse)
        return df.iloc[order].reset_index(drop=True)

    def _Slice(self, node) -> pd.DataFrame:
        df = self.part(node.p)
        start = node.start or 0
        end = start + node.length if node.length is not None else None
        return df.iloc[start:end].reset_index(drop=True)

    def _ToMultiSet(self, node) -> pd.DataFrame:
        return self.part(node.p)

    def _values(self, node) -> pd.DataFrame:
        rows = [{str(k): to_nt(v) for k, v in r.items() if v is not None and str(v) != "UNDEF"} for r in node.res]
        names = list(dict.fromkeys(k for r in rows for k in r))
        return normalised(pd.DataFrame(rows, columns=names)) if rows else empty(names)

    def _Group(self, node) -> pd.DataFrame:
        return self.part(node.p)

    def _AggregateJoin(self, node) -> pd.DataFrame:
        group = node.p
        df = self.part(group.p).reset_index(drop=True)
        if not len(df):
            if group.expr is not None:
                return _unit()  # rdflib: one empty solution when there is no group at all
            from rdflib.plugins.sparql.aggregates import Aggregator

            # no GROUP BY: rdflib's one implicit group exists even when empty (COUNT 0, AVG 0, ...)
            got = Aggregator(aggregations=node.A).get_bindings()
            return normalised(pd.DataFrame([{str(a.res): to_nt(got.get(a.res)) for a in node.A}]))
        if group.expr is None:
            codes = np.zeros(len(df), np.int64)
        else:
            keys = pd.DataFrame({i: self.value(e, df) if not isinstance(e, Variable) else
                                 (df[str(e)] if str(e) in df.columns else [None] * len(df))
                                 for i, e in enumerate(group.expr)})
            codes = keys.fillna("\0").groupby(list(keys.columns), sort=False).ngroup().to_numpy()
        uniq, first = np.unique(codes, return_index=True)
        order = np.argsort(first)  # groups in order of first appearance
        groups = uniq[order]
        out: dict[str, list] = {}
        slow = []
        for a in node.A:
            res = str(a.res)
            vals = a.vars
            if a.name == "Aggregate_Count" and (vals == "*" or isinstance(vals, Variable)):
                if vals == "*":
                    sub = df.assign(__g__=codes)
                    if a.distinct:
                        sub = sub.fillna("\0").drop_duplicates()
                    counts = sub.groupby("__g__").size()
                else:
                    col = df[str(vals)] if str(vals) in df.columns else pd.Series([None] * len(df))
                    sub = pd.DataFrame({"g": codes, "v": col.to_numpy()}).dropna()
                    counts = sub.groupby("g")["v"].nunique() if a.distinct else sub.groupby("g").size()
                counts = counts.reindex(groups, fill_value=0).to_numpy()
                out[res] = [_int_term(int(n)) for n in counts]
            elif a.name == "Aggregate_Sample" and isinstance(vals, Variable):
                col = df[str(vals)] if str(vals) in df.columns else pd.Series([None] * len(df))
                sub = pd.DataFrame({"g": codes, "v": col.to_numpy()}).dropna()
                firsts = sub.drop_duplicates("g").set_index("g")["v"]
                out[res] = [x if isinstance(x, str) else None for x in firsts.reindex(groups).tolist()]
            else:
                slow.append(a)
        if slow:  # rdflib's own accumulators, one group at a time
            from rdflib.plugins.sparql.aggregates import Aggregator

            rows = self._bindings(df)
            aggs = {g: Aggregator(aggregations=slow) for g in groups.tolist()}
            for g, r in zip(codes.tolist(), rows):
                aggs[g].update(r)
            for a in slow:
                out[str(a.res)] = [to_nt(aggs[g].get_bindings().get(a.res)) for g in groups.tolist()]
        if not out:
            return pd.DataFrame(index=range(len(groups)))
        return normalised(pd.DataFrame(out, columns=list(out)))

    # ---------------------------------------------------------------- CONSTRUCT
    def construct(self, query) -> list[tuple[str, str, str]]:
        template = query.template if query.template else query.p.p.triples
        df = self.part(query.p)
        parts = []
        for t in template:
            cols = []
            for x in t:
                if isinstance(x, BNode):
                    cols.append(pd.Series([to_nt(BNode()) for _ in range(len(df))], index=df.index, dtype=object))
                elif isinstance(x, Variable):
                    cols.append(df[str(x)] if str(x) in df.columns else pd.Series([None] * len(df), index=df.index,
                                                                                   dtype=object))
                else:
                    cols.append(pd.Series([to_nt(x)] * len(df), index=df.index, dtype=object))
            part = pd.DataFrame({"s": cols[0], "p": cols[1], "o": cols[2]}).dropna()
            parts.append(part)
        if not parts:
            return []
        triples = pd.concat(parts, ignore_index=True).drop_duplicates()
        return list(triples.itertuples(index=False, name=None))

    # ---------------------------------------------------------------- expressions
    def _bindings(self, df: pd.DataFrame) -> list[FrozenBindings]:
        names = [Variable(c) for c in df.columns]
        return [FrozenBindings(self.ctx, {v: to_rdflib(x) for v, x in zip(names, r) if x is not None})
                for r in df.itertuples(index=False, name=None)]

    def _rowwise(self, expr, df: pd.DataFrame, boolean: bool) -> np.ndarray:
        """rdflib's own evaluation, once per distinct combination of the variables `expr` reads."""
        from rdflib.plugins.sparql.evaluate import _ebv, _eval

        used = [c for c in df.columns if Variable(c) in _variables(expr)]
        key = df[used].fillna("\0") if used else pd.DataFrame(index=df.index)
        if used:
            codes = key.groupby(used, sort=False).ngroup().to_numpy()
            firsts = pd.Series(np.arange(len(df))).groupby(codes).first().to_numpy()
        else:
            codes, firsts = np.zeros(len(df), np.int64), np.zeros(1 if len(df) else 0, np.int64)
        distinct = normalised(df[used].iloc[firsts]) if used else pd.DataFrame(index=range(len(firsts)))
        results = []
        for b in self._bindings(distinct):
            if boolean:
                results.append(bool(_ebv(expr, b)))
            else:
                try:
                    v = _eval(expr, b)
                    results.append(None if isinstance(v, SPARQLError) else to_nt(v))
                except SPARQLError:
                    results.append(None)
        arr = np.array(results, dtype=bool if boolean else object)
        return arr[codes] if len(df) else arr

    def ebv(self, expr, df: pd.DataFrame) -> np.ndarray:
        """FILTER's effective boolean value per row (an error is false)."""
        got = self._bool(expr, df)
        if got is None:
            return self._rowwise(expr, df, True)
        true, err = got
        return true & ~err

    def _bool(self, expr, df: pd.DataFrame):
        """(true, error) masks for the vectorised boolean expressions, or None."""
        n = len(df)
        name = getattr(expr, "name", None)
        if name == "ConditionalAndExpression" or name == "ConditionalOrExpression":
            parts = [self._bool(e, df) for e in [expr.expr] + list(expr.other or [])]
            if any(p is None for p in parts):
                return None
            t, e = parts[0]
            for t2, e2 in parts[1:]:
                if name == "ConditionalAndExpression":  # F && E = F; T && E = E
                    false1, false2 = ~t & ~e, ~t2 & ~e2
                    t, e = t & t2 & ~e & ~e2, (e | e2) & ~false1 & ~false2
                else:  # T || E = T; F || E = E
                    t, e = (t & ~e) | (t2 & ~e2), (e | e2) & ~((t & ~e) | (t2 & ~e2))
            return t, e
        if name == "UnaryNot":
            p = self._bool(expr.expr, df)
            return None if p is None else (~p[0] & ~p[1], p[1])
        if name == "Builtin_BOUND":
            col = str(expr.arg)
            bound = df[col].notna().to_numpy() if col in df.columns else np.zeros(n, bool)
            return bound, np.zeros(n, bool)
        if name == "RelationalExpression" and expr.op in ("<", ">", "<=", ">=", "=", "!="):
            a, b = self._operand(expr.expr, df), self._operand(expr.other, df)
            if a is None or b is None:
                return None
            ka, va = _numbers(a)
            kb, vb = _numbers(b)
            unbound = pd.isna(a) | pd.isna(b)
            if ((ka > 0) | pd.isna(a)).all() and ((kb > 0) | pd.isna(b)).all():
                with np.errstate(invalid="ignore"):
                    r = {"<": va < vb, ">": va > vb, "<=": va <= vb, ">=": va >= vb,
                         "=": va == vb, "!=": va != vb}[expr.op]
                return r & ~unbound, unbound
            if expr.op in ("=", "!=") and _all_resources(a) and _all_resources(b):
                eq = (a == b) if expr.op == "=" else (a != b)
                return np.asarray(eq, bool) & ~unbound, unbound
        return None

    def _operand(self, expr, df: pd.DataFrame) -> np.ndarray | None:
        """A term column (object array) if `expr` is a variable, a constant or a vectorised term."""
        if isinstance(expr, Variable):
            c = str(expr)
            return df[c].to_numpy(dtype=object) if c in df.columns else np.full(len(df), None, dtype=object)
        if isinstance(expr, (URIRef, Literal)):
            return np.full(len(df), to_nt(expr), dtype=object)
        return self._vector_value(expr, df)

    def _vector_value(self, expr, df: pd.DataFrame) -> np.ndarray | None:
        name = getattr(expr, "name", None)
        n = len(df)
        if name == "Builtin_COALESCE":
            out = np.full(n, None, dtype=object)
            for e in expr.arg:
                todo = pd.isna(out)
                if not todo.any():
                    break
                col = self.value(e, df)
                out[todo] = col[todo]
            return out
        if name == "Builtin_IF":
            cond = self._bool(expr.arg1, df)
            if cond is None:
                return None
            t, err = cond
            a, b = self.value(expr.arg2, df), self.value(expr.arg3, df)
            out = np.where(t, a, b).astype(object)
            out[err] = None
            return out
        if name == "AdditiveExpression":
            ops = list(expr.op or [])
            if any(op not in ("+", "-") for op in ops):
                return None  # rdflib's `*` and `/` give xsd:decimal: its own arithmetic
            cols = [self._operand(e, df) for e in [expr.expr] + list(expr.other or [])]
            if any(c is None for c in cols):
                return None
            kinds = [_numbers(c) for c in cols]
            if not all(((k == 1) | pd.isna(c)).all() for (k, _), c in zip(kinds, cols)):
                return None  # only xsd:integer arithmetic is exact here
            if not all(_all_integer_type(c) for c in cols):
                return None  # xsd:int + xsd:int etc.: rdflib's type promotion
            unbound = np.zeros(n, bool)
            for c in cols:
                unbound |= pd.isna(c)
            acc = np.where(unbound, 0, kinds[0][1]).astype(object)
            for op, (_, v) in zip(ops, kinds[1:]):
                v = np.where(unbound, 0, v).astype(np.int64).astype(object)  # exact Python ints
                acc = acc + v if op == "+" else acc - v
            return np.array([None if u else _int_term(int(x)) for x, u in zip(acc, unbound)], dtype=object)
        if name == "Function" and expr.iri == TIMESTAMP_FN:
            return None
        if name in ("ConditionalAndExpression", "ConditionalOrExpression", "UnaryNot", "Builtin_BOUND",
                    "RelationalExpression"):
            b = self._bool(expr, df)
            if b is None:
                return None
            t, err = b
            out = np.where(t, TRUE, FALSE).astype(object)
            out[err] = None
            return out
        return None

    def value(self, expr, df: pd.DataFrame) -> np.ndarray:
        """An expression's term per row (None for an error or unbound)."""
        got = self._operand(expr, df)
        return got if got is not None else self._rowwise(expr, df, False)


@functools.lru_cache(maxsize=100_000)
def _int_term(n: int) -> str:
    return to_nt(Literal(n))


def _numbers(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inv = np.unique(np.where(pd.isna(col), "", col).astype(str), return_inverse=True)
    parsed = [_numeric(u) if u else (0, np.nan) for u in uniq.tolist()]
    kinds = np.array([k for k, _ in parsed], dtype=np.int64)[inv.reshape(-1)]
    vals = np.array([v for _, v in parsed], dtype=np.float64)[inv.reshape(-1)]
    return kinds, vals


def _all_integer_type(col: np.ndarray) -> bool:
    suffix = f"^^<{XSD}integer>"
    return all(x is None or x.endswith(suffix) for x in col.tolist())


def _all_resources(col: np.ndarray) -> bool:
    return all(x is None or not x.startswith('"') for x in col.tolist())


def _variables(expr) -> set:
    found: set = set()

    def walk(x) -> None:
        if isinstance(x, Variable):
            found.add(x)
        elif isinstance(x, CompValue):
            for k, v in x.items():
                if k != "_vars":
                    walk(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)

    walk(expr)
    return found


__all__ = ["VectorEvaluator", "Window"]

"""SPARQL expressions over a solution table (tefq.spark.kernels.windowed.solutions), vectorised where that
is exact, else rdflib's own code once per distinct combination of the variables they read.

Vectorised: variables, constants, BOUND, COALESCE, IF, && || ! (with SPARQL's error semantics),
< > <= >= = != on xsd:integer-family / float / double values and = != on IRIs and blank nodes,
+ - on xsd:integer. rdflib types everything else (e.g. `?v * 2` on integers is xsd:decimal), so
it evaluates it. C-SPARQL's `timestamp()` reads the window's latest timestamp of a triple: with
several windows in one table (`stamps` per window id), it is evaluated window by window.

The expression half of the multi-window evaluator (tefq.spark.kernels.windowed.multiwindow).
"""
from __future__ import annotations

from typing import Iterator, Mapping

import numpy as np
import pandas as pd
from rdflib import Graph, Literal, URIRef
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.sparql import FrozenBindings, QueryContext, SPARQLError
from rdflib.term import Variable

from tefq.oracle.windowed.r2r import TIMESTAMP_FN, to_nt, to_rdflib, window_timestamps
from tefq.spark.kernels.windowed.solutions import normalised

XSD = "http://www.w3.org/2001/XMLSchema#"
TRUE, FALSE = to_nt(Literal(True)), to_nt(Literal(False))

INT_TYPES = frozenset(f"{XSD}{t}" for t in (
    "integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger", "negativeInteger",
    "nonPositiveInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte"))
FLOAT_TYPES = frozenset((f"{XSD}float", f"{XSD}double"))
MAX_EXACT_INT = 2 ** 53
CACHE_LIMIT = 1_000_000  # distinct terms remembered per evaluator (sensor values are many)
_BOOLEAN_NODES = ("ConditionalAndExpression", "ConditionalOrExpression", "UnaryNot", "Builtin_BOUND",
                  "RelationalExpression")


class TermCache:
    """Per-term facts that arithmetic and comparisons need, computed once per distinct term."""

    def __init__(self) -> None:
        self.numbers: dict[str, tuple[int, float]] = {}
        self.integers: dict[int, str] = {}

    def numeric(self, nt: str | None) -> tuple[int, float]:
        """(1, v) an xsd:integer-family literal whose value a double holds exactly, (2, v) a valid
        xsd:float/double, (0, nan) anything else."""
        if nt is None:
            return 0, np.nan
        hit = self.numbers.get(nt)
        if hit is None:
            hit = (0, np.nan)
            if nt.startswith('"'):
                t = to_rdflib(nt)
                dt = str(t.datatype) if isinstance(t, Literal) and t.datatype else ""
                v = t.value if isinstance(t, Literal) else None
                if dt in INT_TYPES and isinstance(v, int) and not isinstance(v, bool) and abs(v) < MAX_EXACT_INT:
                    hit = (1, float(v))
                elif dt in FLOAT_TYPES and isinstance(v, float):
                    hit = (2, v)
            if len(self.numbers) < CACHE_LIMIT:
                self.numbers[nt] = hit
        return hit

    def integer_term(self, n: int) -> str:
        t = self.integers.get(n)
        if t is None:
            t = to_nt(Literal(n))
            if len(self.integers) < CACHE_LIMIT:
                self.integers[n] = t
        return t

    def numbers_of(self, col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(kinds, values) of a term column, as `numeric` gives them."""
        uniq, inv = np.unique(np.where(pd.isna(col), "", col).astype(str), return_inverse=True)
        parsed = [self.numeric(u) if u else (0, np.nan) for u in uniq.tolist()]
        kinds = np.array([k for k, _ in parsed], dtype=np.int64)[inv.reshape(-1)]
        vals = np.array([v for _, v in parsed], dtype=np.float64)[inv.reshape(-1)]
        return kinds, vals


def variables(expr) -> set:
    """Every variable an expression (or algebra fragment) mentions."""
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


def _calls(expr, hit) -> bool:
    if isinstance(expr, CompValue):
        return hit(expr) or any(_calls(v, hit) for k, v in expr.items() if k != "_vars")
    if isinstance(expr, (list, tuple)):
        return any(_calls(v, hit) for v in expr)
    return False


def calls_timestamp(expr) -> bool:
    return _calls(expr, lambda x: x.name == "Function" and x.get("iri") == TIMESTAMP_FN)


_FRESH = ("Builtin_BNODE", "Builtin_RAND", "Builtin_UUID", "Builtin_STRUUID")


def calls_fresh(expr) -> bool:
    """Whether `expr` makes a new value per solution (a blank node, a random number, a UUID)."""
    return _calls(expr, lambda x: x.name in _FRESH)


def _all_integer_type(col: np.ndarray) -> bool:
    suffix = f"^^<{XSD}integer>"
    return all(x is None or x.endswith(suffix) for x in col.tolist())


def _all_resources(col: np.ndarray) -> bool:
    return all(x is None or not x.startswith('"') for x in col.tolist())


class Expressions:
    """Evaluates expressions over solution tables. `window` names the window-id column and
    `stamps` maps a window id to its `timestamp()` table; without them the caller sets
    `window_timestamps` for the one window it evaluates."""

    def __init__(self, window: str | None = None, stamps: Mapping[int, dict] | None = None, prologue=None) -> None:
        self.window = window
        self.stamps = stamps
        self.terms = TermCache()
        self.ctx = QueryContext(Graph(), initBindings={})
        self.ctx.prologue = prologue  # the query's BASE and prefixes (IRI("rel") resolves against BASE)

    # ---------------------------------------------------------------- rdflib's evaluation
    def bindings(self, df: pd.DataFrame, window: bool = False) -> list[FrozenBindings]:
        """rdflib's solutions for the rows of `df` (key columns left out; with `window`, the window
        id too, under a name no query can write: BNODE(str) then tells windows apart, as the
        oracle, which evaluates each on its own)."""
        cols = [c for c in df.columns if not c.startswith("\x00") or (window and c == self.window)]
        if not cols:  # (pandas yields no tuples for a table without columns)
            return [FrozenBindings(self.ctx, {}) for _ in range(len(df))]
        names = [Variable(c) for c in cols]
        read = [(lambda x: Literal(int(x))) if c == self.window else to_rdflib for c in cols]
        return [FrozenBindings(self.ctx, {v: f(x) for v, f, x in zip(names, read, r) if x is not None})
                for r in df[cols].itertuples(index=False, name=None)]

    def solutions(self, df: pd.DataFrame, per_window: bool, window: bool = False) -> Iterator[FrozenBindings]:
        """rdflib's solutions for the rows of `df` (`window`: as `bindings`); with `per_window`,
        `timestamp()` reads each row's own window while that row is evaluated (the caller
        consumes them all)."""
        windows = df[self.window].tolist() if per_window and self.stamps is not None \
            and self.window in df.columns else None
        token = window_timestamps.set(window_timestamps.get())
        try:
            for i, b in enumerate(self.bindings(df, window)):
                if windows is not None:
                    window_timestamps.set(self.stamps.get(windows[i], {}))  # type: ignore[union-attr]
                yield b
        finally:
            window_timestamps.reset(token)

    def rowwise(self, expr, df: pd.DataFrame, boolean: bool) -> np.ndarray:
        """rdflib's own evaluation, once per distinct combination of the variables `expr` reads
        (and of the window, when it calls `timestamp()` over several windows)."""
        from rdflib.plugins.sparql.evaluate import _ebv, _eval

        used = [c for c in df.columns if Variable(c) in variables(expr)]
        per_window = self.stamps is not None and self.window in df.columns and calls_timestamp(expr)
        fresh = calls_fresh(expr)
        if per_window:
            used = used + [self.window]
        if fresh:  # a new value per solution: every row on its own, with all of its bindings
            used = list(df.columns)
            codes = firsts = np.arange(len(df))
        elif used:
            codes = df[used].fillna("\0").groupby(used, sort=False).ngroup().to_numpy()
            firsts = pd.Series(np.arange(len(df))).groupby(codes).first().to_numpy()
        else:
            codes, firsts = np.zeros(len(df), np.int64), np.zeros(1 if len(df) else 0, np.int64)
        distinct = normalised(df[used].iloc[firsts]) if used else pd.DataFrame(index=range(len(firsts)))
        results = []
        for b in self.solutions(distinct, per_window, window=fresh):
            if boolean:
                results.append(bool(_ebv(expr, b)))
                continue
            try:
                v = _eval(expr, b)
                results.append(None if isinstance(v, SPARQLError) else to_nt(v))
            except SPARQLError:
                results.append(None)
        arr = np.array(results, dtype=bool if boolean else object)
        return arr[codes] if len(df) else arr

    # ---------------------------------------------------------------- entry points
    def ebv(self, expr, df: pd.DataFrame) -> np.ndarray:
        """FILTER's effective boolean value per row (an error is false)."""
        got = self.boolean(expr, df)
        if got is None:
            return self.rowwise(expr, df, True)
        true, err = got
        return true & ~err

    def value(self, expr, df: pd.DataFrame) -> np.ndarray:
        """An expression's term per row (None for an error or unbound)."""
        got = self.operand(expr, df)
        return got if got is not None else self.rowwise(expr, df, False)

    # ---------------------------------------------------------------- vectorised
    def boolean(self, expr, df: pd.DataFrame):
        """(true, error) masks for the vectorised boolean expressions, or None."""
        n = len(df)
        name = getattr(expr, "name", None)
        if name in ("ConditionalAndExpression", "ConditionalOrExpression"):
            return self._connective(expr, df, name == "ConditionalAndExpression")
        if name == "UnaryNot":
            p = self.boolean(expr.expr, df)
            return None if p is None else (~p[0] & ~p[1], p[1])
        if name == "Builtin_BOUND":
            col = str(expr.arg)
            bound = df[col].notna().to_numpy() if col in df.columns else np.zeros(n, bool)
            return bound, np.zeros(n, bool)
        if name == "RelationalExpression" and expr.op in ("<", ">", "<=", ">=", "=", "!="):
            return self._comparison(expr, df)
        return None

    def _connective(self, expr, df: pd.DataFrame, conjunction: bool):
        parts = [self.boolean(e, df) for e in [expr.expr] + list(expr.other or [])]
        if any(p is None for p in parts):
            return None
        t, e = parts[0]
        for t2, e2 in parts[1:]:
            if conjunction:  # F && E = F; T && E = E
                false1, false2 = ~t & ~e, ~t2 & ~e2
                t, e = t & t2 & ~e & ~e2, (e | e2) & ~false1 & ~false2
            else:  # T || E = T; F || E = E
                t, e = (t & ~e) | (t2 & ~e2), (e | e2) & ~((t & ~e) | (t2 & ~e2))
        return t, e

    def _comparison(self, expr, df: pd.DataFrame):
        a, b = self.operand(expr.expr, df), self.operand(expr.other, df)
        if a is None or b is None:
            return None
        ka, va = self.terms.numbers_of(a)
        kb, vb = self.terms.numbers_of(b)
        unbound = pd.isna(a) | pd.isna(b)
        if ((ka > 0) | pd.isna(a)).all() and ((kb > 0) | pd.isna(b)).all():
            with np.errstate(invalid="ignore"):
                r = {"<": va < vb, ">": va > vb, "<=": va <= vb, ">=": va >= vb, "=": va == vb, "!=": va != vb}[expr.op]
            return r & ~unbound, unbound
        if expr.op in ("=", "!=") and _all_resources(a) and _all_resources(b):
            eq = (a == b) if expr.op == "=" else (a != b)
            return np.asarray(eq, bool) & ~unbound, unbound
        return None

    def operand(self, expr, df: pd.DataFrame) -> np.ndarray | None:
        """A term column (object array) if `expr` is a variable, a constant or a vectorised term."""
        if isinstance(expr, Variable):
            c = str(expr)
            return df[c].to_numpy(dtype=object) if c in df.columns else np.full(len(df), None, dtype=object)
        if isinstance(expr, (URIRef, Literal)):
            return np.full(len(df), to_nt(expr), dtype=object)
        name = getattr(expr, "name", None)
        if name == "Builtin_COALESCE" and isinstance(dict.get(expr, "arg"), list):  # (not `COALESCE()`)
            return self._coalesce(expr, df)
        if name == "Builtin_IF":
            return self._if(expr, df)
        if name == "AdditiveExpression":
            return self._additive(expr, df)
        if name in _BOOLEAN_NODES:
            b = self.boolean(expr, df)
            if b is None:
                return None
            out = np.where(b[0], TRUE, FALSE).astype(object)
            out[b[1]] = None
            return out
        return None

    def _coalesce(self, expr, df: pd.DataFrame) -> np.ndarray:
        out = np.full(len(df), None, dtype=object)
        for e in expr.arg:
            todo = pd.isna(out)
            if not todo.any():
                break
            out[todo] = self.value(e, df)[todo]
        return out

    def _if(self, expr, df: pd.DataFrame) -> np.ndarray | None:
        cond = self.boolean(expr.arg1, df)
        if cond is None:
            return None
        t, err = cond
        out = np.where(t, self.value(expr.arg2, df), self.value(expr.arg3, df)).astype(object)
        out[err] = None
        return out

    def _additive(self, expr, df: pd.DataFrame) -> np.ndarray | None:
        ops = list(expr.op or [])
        if any(op not in ("+", "-") for op in ops):
            return None  # rdflib's `*` and `/` give xsd:decimal: its own arithmetic
        cols = [self.operand(e, df) for e in [expr.expr] + list(expr.other or [])]
        if any(c is None for c in cols):
            return None
        kinds = [self.terms.numbers_of(c) for c in cols]
        if not all(((k == 1) | pd.isna(c)).all() for (k, _), c in zip(kinds, cols)):
            return None  # only xsd:integer arithmetic is exact here
        if not all(_all_integer_type(c) for c in cols):
            return None  # xsd:int + xsd:int etc.: rdflib's type promotion
        unbound = np.zeros(len(df), bool)
        for c in cols:
            unbound |= pd.isna(c)
        acc = np.where(unbound, 0, kinds[0][1]).astype(object)
        for op, (_, v) in zip(ops, kinds[1:]):
            v = np.where(unbound, 0, v).astype(np.int64).astype(object)  # exact Python ints
            acc = acc + v if op == "+" else acc - v
        return np.array([None if u else self.terms.integer_term(int(x)) for x, u in zip(acc, unbound)], dtype=object)


__all__ = ["Expressions", "TermCache", "variables", "calls_timestamp", "calls_fresh", "INT_TYPES", "FLOAT_TYPES", "XSD",
           "TRUE", "FALSE"]

"""SPARQL aggregates over a grouped solution table, with rdflib's values (the oracle's).

`aggregate_columns(df, codes, groups, aggregations, x)` gives each aggregate's term per group.
Vectorised: COUNT (also DISTINCT and `*`) and SAMPLE of a variable. SUM, AVG, MIN and MAX of a
variable whose bound values all have one datatype, xsd:double or xsd:integer, are computed as the
oracle's accumulators compute them (integers exactly, AVG of integers as a Decimal quotient,
doubles as their exact sum rounded once: `oracle.windowed.sparql_values`), one pass over plain
numbers instead of rdflib's per-row binding machinery. Everything else goes to rdflib's own
`Aggregator`, one per group (with the oracle's accumulators).
"""
from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
from rdflib import Literal, URIRef
from rdflib.term import Variable

from tefq.oracle.windowed.r2r import to_nt
from tefq.semantics.expressions import double_sum
from tefq.spark.kernels.windowed.expressions import XSD, Expressions, calls_timestamp

DOUBLE, INTEGER = f"{XSD}double", f"{XSD}integer"
_NUMERIC_AGGREGATES = ("Aggregate_Sum", "Aggregate_Avg", "Aggregate_Min", "Aggregate_Max")
MAX_EXACT_SUM = 2.0 ** 53  # integers summed as doubles stay exact below it


def _column(df: pd.DataFrame, var) -> np.ndarray:
    name = str(var)
    return df[name].to_numpy(dtype=object) if name in df.columns else np.full(len(df), None, dtype=object)


def _count(a, df: pd.DataFrame, codes: np.ndarray, groups: np.ndarray) -> list:
    if a.vars != "*" and not a.distinct:  # COUNT(?v): the bound values per group, by one bincount
        bound = ~pd.isna(_column(df, a.vars))
        return np.bincount(codes[bound], minlength=int(groups.max(initial=-1)) + 1)[groups].tolist()
    if a.vars == "*":
        sub = df.assign(**{"\x00g": codes})
        if a.distinct:
            sub = sub.fillna("\0").drop_duplicates()
        counts = sub.groupby("\x00g").size()
    else:
        sub = pd.DataFrame({"g": codes, "v": _column(df, a.vars)}).dropna()
        counts = sub.groupby("g")["v"].nunique() if a.distinct else sub.groupby("g").size()
    return counts.reindex(groups, fill_value=0).to_numpy().tolist()


def _sample(a, df: pd.DataFrame, codes: np.ndarray, groups: np.ndarray) -> list:
    sub = pd.DataFrame({"g": codes, "v": _column(df, a.vars)}).dropna()
    firsts = sub.drop_duplicates("g").set_index("g")["v"]
    return [x if isinstance(x, str) else None for x in firsts.reindex(groups).tolist()]


def _one_datatype(col: np.ndarray) -> str | None:
    """xsd:double or xsd:integer when every bound term is a literal of that one datatype."""
    bound = [x for x in pd.unique(col[~pd.isna(col)])]
    for dt in (DOUBLE, INTEGER):
        suffix = f'"^^<{dt}>'
        if all(x.endswith(suffix) and x.startswith('"') for x in bound):
            return dt
    return None


def _numbers(col: np.ndarray, dt: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, bound): the numbers rdflib's `numeric()` gives, as float64 (doubles, and integers
    a double holds exactly); None if a value is not a plain finite number or too large (rdflib's
    own arithmetic then)."""
    codes, uniques = pd.factorize(col)  # unbound: -1
    parsed = []
    for x in uniques.tolist():
        lex = x[1:x.rindex('"^^<')]
        try:
            parsed.append(float(lex) if dt == DOUBLE else int(lex))
        except ValueError:
            return None
    values = np.array(parsed + [0.0], dtype=np.float64)
    if not np.isfinite(values).all() or (dt == INTEGER and np.abs(values).sum() >= MAX_EXACT_SUM):
        return None
    return values[codes], codes >= 0


def group_double_sums(values: np.ndarray, where: np.ndarray, groups: int) -> list[float]:
    """Per group (`where`: each value's), the exact sum of its doubles rounded once (`double_sum`)."""
    order = np.argsort(where, kind="stable")
    bounds = np.searchsorted(where[order], np.arange(groups + 1)).tolist()
    ordered = values[order].tolist()
    return [double_sum(ordered[a:b]) for a, b in zip(bounds, bounds[1:])]


def _fast_numeric(a, df: pd.DataFrame, codes: np.ndarray, groups: np.ndarray) -> list | None:
    """SUM / AVG / MIN / MAX of a one-datatype numeric variable, else None (rdflib decides)."""
    if not isinstance(a.vars, Variable) or (a.distinct and a.name in ("Aggregate_Sum", "Aggregate_Avg")):
        return None
    col = _column(df, a.vars)
    dt = _one_datatype(col)
    got = _numbers(col, dt) if dt else None
    if got is None:
        return None
    values, bound = got
    where = np.searchsorted(groups, codes)[bound]  # each bound row's group, as an output position
    values = values[bound]
    if a.name in ("Aggregate_Min", "Aggregate_Max"):
        return _extremum(a.name == "Aggregate_Min", col[bound], values, where, len(groups))
    count = np.bincount(where, minlength=len(groups)).tolist()
    if dt == DOUBLE:  # exact, rounded once: the oracle's SUM of doubles (sparql_values._Errors)
        sums = group_double_sums(values, where, len(groups))
    else:
        total = np.zeros(len(groups))
        np.add.at(total, where, values)  # integers below 2^53: exact in any order
        sums = [int(t) for t in total.tolist()]
    if a.name == "Aggregate_Sum":
        return [to_nt(Literal(t, datatype=URIRef(dt))) if n else to_nt(Literal(0)) for t, n in zip(sums, count)]
    if dt == DOUBLE:
        return [to_nt(Literal(t / n)) if n else to_nt(Literal(0)) for t, n in zip(sums, count)]
    return [to_nt(Literal(Decimal(t) / Decimal(n))) if n else to_nt(Literal(0)) for t, n in zip(sums, count)]


def _extremum(minimum: bool, terms: np.ndarray, values: np.ndarray, where: np.ndarray, groups: int) -> list:
    """The first term with the smallest (largest) value of each group, as rdflib's min/max keep it."""
    out: list = [None] * groups
    if not len(values):
        return out
    series = pd.Series(values)
    best = (series.groupby(where).idxmin() if minimum else series.groupby(where).idxmax())
    for g, row in zip(best.index.tolist(), best.tolist()):
        out[g] = terms[row]
    return out


def _by_rdflib(slow: list, df: pd.DataFrame, codes: np.ndarray, groups: np.ndarray, x: Expressions) -> dict:
    """rdflib's accumulators, one group at a time (per window for `timestamp()`)."""
    from rdflib.plugins.sparql.aggregates import Aggregator

    aggs = {g: Aggregator(aggregations=slow) for g in groups.tolist()}
    for g, r in zip(codes.tolist(), x.solutions(df, calls_timestamp(slow))):
        aggs[g].update(r)
    return {str(a.res): [to_nt(aggs[g].get_bindings().get(a.res)) for g in groups.tolist()] for a in slow}


def _count_terms(counts: list[int], x: Expressions) -> list:
    values, where = np.unique(np.asarray(counts, dtype=np.int64), return_inverse=True)
    terms = np.array([x.terms.integer_term(int(n)) for n in values.tolist()] + [None], dtype=object)
    return terms[where.reshape(-1)].tolist() if len(counts) else []


def aggregate_columns(df: pd.DataFrame, codes: np.ndarray, groups: np.ndarray, aggregations, x: Expressions,
                      first: np.ndarray | None = None, keys: set[str] = frozenset()) -> dict:
    """Each aggregate's result term per group; `codes` gives each row's group, `groups` the
    groups in output order, `first` each group's first row and `keys` the GROUP BY variables
    (a key's SAMPLE is its value in the group's first row)."""
    out: dict[str, list] = {}
    slow = []
    for a in aggregations:
        res = str(a.res)
        got = None
        if a.name == "Aggregate_Count" and (a.vars == "*" or isinstance(a.vars, Variable)):
            got = _count_terms(_count(a, df, codes, groups), x)
        elif a.name == "Aggregate_Sample" and isinstance(a.vars, Variable):
            got = _column(df, a.vars)[first].tolist() if first is not None and str(a.vars) in keys \
                else _sample(a, df, codes, groups)
        elif a.name in _NUMERIC_AGGREGATES:
            got = _fast_numeric(a, df, codes, groups)
        if got is None:
            slow.append(a)
        else:
            out[res] = got
    if slow:
        out.update(_by_rdflib(slow, df, codes, groups, x))
    return {str(a.res): out[str(a.res)] for a in aggregations}


__all__ = ["aggregate_columns"]

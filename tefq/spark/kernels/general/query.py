"""One aggregate query as the general kernels see it: its WHERE items, what each variable is
(a term, an interval start, an interval end that reads `tau` while the fact is open), which FILTERs
and aggregate arguments depend on `tau`, its groups, its WHILE scope and its bucket split.

Columns of a solution: every triple-pattern variable (term codes), every interval start `?S` (ms),
and per fact or event item `i` the hidden `#s<i>` / `#e<i>` (its start and end in ms; an event's
time twice). An interval end `?E` is no column: it is `min(#e<i>, tau)`, computed where it is read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tefq.plan.logical import AggregateQuery, Expr, Fact, WherePattern
from tefq.spark.kernels.general.coding import bucket_of, value_buckets
from tefq.spark.kernels.general.expressions import variables


def item_start(i: int) -> str:
    return f"#s{i}"


def item_end(i: int) -> str:
    return f"#e{i}"


@dataclass(frozen=True)
class Split:
    """How a query's work is cut into buckets: the WHERE items that bind `var` keep, in bucket b,
    only the rows whose `var` lies in b (bucket_of); every other item is whole in every bucket. With
    `merge`, `var` is no group variable: a group's solutions lie in several buckets, each reports
    partial aggregates and the driver adds them (`tefq.spark.kernels.general.rows.merge_partials`)."""

    var: str
    merge: bool
    facts: tuple[tuple[str, int], ...] = ()  # (fact, identity column): facts a bucket holds in part
    by_value: bool = False  # a DISTINCT counts `var`'s values, and it may bind literals: value_buckets

    def buckets(self, codes: np.ndarray, buckets: int, terms) -> np.ndarray:
        """The bucket of each of `var`'s codes (`terms`: their texts, read only `by_value`)."""
        return value_buckets(codes, buckets, terms) if self.by_value else bucket_of(codes, buckets)


@dataclass
class CompiledQuery:
    q: AggregateQuery
    facts: tuple[Fact, ...]  # what the query needs, dependency order
    split: Split | None = None
    items: tuple[WherePattern, ...] = field(init=False)
    start_of: dict[str, int] = field(init=False)
    end_of: dict[str, int] = field(init=False)
    term_vars: set[str] = field(init=False)

    def __post_init__(self) -> None:
        q = self.q
        self.items = q.where
        self.start_of = {wp.interval[0].name: i for i, wp in enumerate(q.where) if wp.interval}
        self.end_of = {wp.interval[1].name: i for i, wp in enumerate(q.where) if wp.interval}
        self.term_vars = {v.name for wp in q.where for v in wp.pattern.variables()}

    @property
    def every(self) -> int:
        return self.q.every_ms

    def dynamic(self, e: Expr | None) -> bool:
        """Reads an interval end, so its value may change with tau while a fact is open."""
        return any(v in self.end_of for v in variables(e))

    @property
    def static_filters(self) -> tuple[Expr, ...]:
        return tuple(f for f in self.q.filters if not self.dynamic(f))

    @property
    def dynamic_filters(self) -> tuple[Expr, ...]:
        return tuple(f for f in self.q.filters if self.dynamic(f))

    @property
    def dynamic_ends(self) -> tuple[str, ...]:
        """The interval ends read by a dynamic FILTER or aggregate argument."""
        used = [v for f in self.dynamic_filters for v in variables(f)]
        used += [v for a in self.q.aggregates for v in variables(a.arg)]
        return tuple(dict.fromkeys(v for v in used if v in self.end_of))

    def group_kind(self, name: str) -> str:
        """term | time (an interval start) | while_start | while_end (the WHILE's ?SS / ?ES)."""
        if name in self.term_vars:
            return "term"
        if name in self.start_of:
            return "time"
        w = self.q.while_
        if w is not None and w.interval and name == w.interval[0].name:
            return "while_start"
        if w is not None and w.interval and name == w.interval[1].name:
            return "while_end"
        return "unbound"

    @property
    def group_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.q.group_by)

    @property
    def while_key(self) -> tuple[str, ...]:
        """The group variables the WHILE pattern shares: a group's scope facts agree on them."""
        w = self.q.while_
        if w is None:
            return ()
        names = {v.name for v in w.pattern.variables()}
        return tuple(n for n in self.group_names if n in names)

    def split_items(self) -> set[int]:
        """The WHERE items whose rows a bucket keeps only for its own values of the split variable."""
        if self.split is None:
            return set()
        return {i for i, wp in enumerate(self.items) if self.split.var in {v.name for v in wp.pattern.variables()}}

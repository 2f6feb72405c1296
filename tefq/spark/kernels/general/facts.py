"""The facts side (spec §3) over coded elements, vectorised.

- **SINCE/UNTIL clauses** (§3.1), each a trigger pattern joined with background patterns and
  filtered: `clause_events` turns a batch of elements into the fact's open/close events (identity
  codes per event) in one pass — a mapper can run it before the shuffle, a bucket inside itself.
  Events then go through `tefq.spark.kernels.intervals.apply_events` (sort, shift, mask; coalescing
  a reopening at the close's millisecond), exactly as UC1's operator does.
- **Derived facts** (§3.2): the body's fact patterns and background patterns joined with
  `tables.join` (intervals intersected), filtered, projected on the identity and coalesced with
  the fact's intervals still open at the last reported tick (cut there, so a fact keeps the start
  it coalesced to).

`FactSide.step` does both for every fact of a query, in dependency order, over the elements that
became final; it returns each fact's intervals that a tick after the last reported one can see.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tefq.plan.logical import Clause, DerivedFact, EventFact, Fact, Pattern, WherePattern
from tefq.spark.kernels.general.coding import Elements, row_hash
from tefq.spark.kernels.general.expressions import Env, passes
from tefq.spark.kernels.general.tables import column, join, match, node_columns, relation, select_rows, union
from tefq.spark.kernels.intervals import OPEN, SINCE, UNTIL, Events, Intervals, apply_events
from tefq.spark.kernels.joins import Relation, coalesce, cut, key_ranks

if TYPE_CHECKING:
    from tefq.spark.kernels.general.query import Split



@dataclass
class CodedBackground:
    """The background graph as coded triples, with each pattern's matches computed once."""

    spo: np.ndarray  # (n, 3) int64

    def __post_init__(self) -> None:
        self._cache: dict[Pattern, Relation] = {}

    def relation(self, pattern: Pattern) -> Relation:
        """The pattern's bindings over the background, holding at every time."""
        if pattern not in self._cache:
            rows, cols = match(pattern, self.spo)
            r = relation(cols, n=len(rows))
            self._cache[pattern] = r.take(unique_rows(r.codes)) if len(r) else r  # a graph is a set
        return self._cache[pattern]


def unique_rows(codes: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of each distinct row, in row order."""
    if codes.shape[1] == 0:
        return np.arange(min(len(codes), 1))
    inv = key_ranks(codes)[0]
    first = np.full(int(inv.max(initial=-1)) + 1, len(inv), np.int64)
    np.minimum.at(first, inv, np.arange(len(inv)))
    return np.sort(first)


def join_all(parts: list[Relation]) -> Relation:
    """Left to right, each next part preferably one that shares a variable (no needless products)."""
    joined, rest = parts[0], list(parts[1:])
    while rest:
        pick = next((i for i, r in enumerate(rest) if set(r.vars) & set(joined.vars)), 0)
        joined = join(joined, rest.pop(pick))
    return joined


def filtered(r: Relation, filters: tuple, dictionary, times: tuple[str, ...] = ()) -> Relation:
    """Rows that pass every FILTER (term columns read as terms, `times` as dateTimes)."""
    if not filters or not len(r):
        return r
    env = Env(len(r), {v: column(r, v) for v in r.vars if v not in times and not v.startswith("#")},
              {v: column(r, v) for v in times if v in r.vars}, dictionary)
    keep = np.ones(len(r), bool)
    for f in filters:
        keep &= passes(f, env)
    return select_rows(r, keep)


# ---------------------------------------------------------------- SINCE / UNTIL (§3.1)
def clause_bindings(clause: Clause, el: Elements, bg: CodedBackground, dictionary) -> Relation:
    """Per matching element (column `#row`), every binding of the clause: trigger, background, FILTER."""
    rows, cols = match(clause.trigger, el.spo)
    cols = dict(cols)
    cols["#row"] = rows
    r = relation(cols, n=len(rows))
    if clause.background and len(r):
        r = join_all([r] + [bg.relation(p) for p in clause.background])
    return filtered(r, clause.filters, dictionary)


def clause_rows(fact: EventFact, el: Elements, bg: CodedBackground, dictionary) -> list[tuple[int, np.ndarray]]:
    """Per kind (UNTIL first), the distinct (element row, identity codes...) its clauses give."""
    ident = tuple(v.name for v in fact.identity)
    parts = []
    for kind, clauses in ((UNTIL, fact.until), (SINCE, fact.since)):
        rels = [r for r in (clause_bindings(c, el, bg, dictionary) for c in clauses) if len(r)]
        if not rels:
            continue
        codes = np.concatenate([np.column_stack([column(r, "#row")] + [column(r, v) for v in ident]) for r in rels])
        if len(rels) > 1 or any(c.background for c in clauses):  # one trigger gives one binding per element
            codes = codes[unique_rows(codes)]
            codes = codes[np.argsort(codes[:, 0], kind="stable")]
        parts.append((kind, codes))
    return parts


def clause_events(fact: EventFact, el: Elements, bg: CodedBackground, dictionary) -> Events:
    """The fact's events in a batch of elements: one per (element, kind, identity), UNTIL before
    SINCE within an element (closes apply first, §3.1)."""
    return _events(clause_rows(fact, el, bg, dictionary), el, len(fact.identity))


def _events(parts: list[tuple[int, np.ndarray]], el: Elements, arity: int) -> Events:
    if not parts:
        z = np.zeros(0, np.int64)
        return Events(z, z.copy(), z.copy(), z.copy(), np.zeros((0, arity), np.int64))
    kind = np.concatenate([np.full(len(c), k, np.int64) for k, c in parts])
    codes = np.concatenate([c for _, c in parts])
    rows, groups = codes[:, 0], codes[:, 1:].reshape(len(codes), arity)
    ev = Events(kind, el.ts[rows], el.order[rows], row_hash(groups), groups)
    return ev.take(np.lexsort((ev.order, ev.ts)))  # time order; stable: UNTIL first within an element


# ---------------------------------------------------------------- the facts of one query
def fact_relation(iv: Intervals | Relation, identity: tuple[str, ...]) -> Relation:
    if isinstance(iv, Relation):
        return iv
    return Relation(identity, iv.groups, iv.start, iv.end)


class FactSide:
    """Every fact a query needs, applied batch by batch. State (see `tefq.spark.kernels.general.state`):
    per event fact its open intervals (`Intervals`), per derived fact its open intervals (`Relation`)."""

    def __init__(self, facts: tuple[Fact, ...], bg: CodedBackground, split: Split | None, bucket: int,
                 buckets: int) -> None:
        self.facts = facts
        self.index = {f.name: f for f in facts}
        self.bg = bg
        self.split, self.bucket, self.buckets = split, bucket, buckets
        # fact -> the identity column a bucket holds it by (facts held whole are not here)
        self.splits = dict(split.facts) if split is not None and buckets > 1 else {}

    def identity(self, name: str) -> tuple[str, ...]:
        return tuple(v.name for v in self.index[name].identity)

    def mine(self, name: str, codes: np.ndarray, terms) -> np.ndarray:
        """Rows of a split fact that belong to this bucket (all rows of a replicated one)."""
        col = self.splits.get(name)
        if col is None:
            return np.ones(len(codes), bool)
        return self.split.buckets(codes[:, col], self.buckets, terms) == self.bucket

    def step(self, open_facts: dict, el: Elements, last_tick: int | None, dictionary) -> tuple[dict, dict]:
        """Apply the final elements `el` (time order); returns (fact -> intervals open at the last
        tick or created since, event fact -> its unmatched UNTILs) and updates `open_facts` to those
        intervals."""
        now: dict[str, Relation] = {}
        unmatched: dict[str, int] = {}
        for f in self.facts:
            if isinstance(f, EventFact):
                ev = clause_events(f, el, self.bg, dictionary)
                ev = ev.take(np.nonzero(self.mine(f.name, ev.groups, dictionary))[0])
                applied = apply_events(open_facts[f.name], ev)
                unmatched[f.name] = applied.unmatched_until
                open_facts[f.name] = applied.intervals
                now[f.name] = fact_relation(applied.intervals, self.identity(f.name)).nonempty()
            else:
                carried = open_facts[f.name]
                if last_tick is not None and len(carried):
                    carried = cut(carried, last_tick)
                derived = self.derive(f, now, carried, dictionary)
                open_facts[f.name] = derived
                now[f.name] = derived
        return now, unmatched

    def derive(self, f: DerivedFact, now: dict[str, Relation], carried: Relation, dictionary) -> Relation:
        ident = self.identity(f.name)
        parts = [self.body_relation(wp, now) for wp in f.body]
        joined = join_all(parts) if all(len(p) for p in parts) else Relation.empty(())
        if len(joined):
            joined = filtered(joined.nonempty(), f.filters, dictionary)
        out = [joined.project(ident)] if len(joined) else []
        if len(carried):
            out.append(carried.project(ident))
        if not out:
            return Relation.empty(ident)
        r = coalesce(Relation.concat(out))
        return select_rows(r, self.mine(f.name, r.codes, dictionary))

    def body_relation(self, wp: WherePattern, now: dict[str, Relation]) -> Relation:
        if wp.kind == "background":
            return self.bg.relation(wp.pattern)
        names = tuple(v.name for v in wp.pattern.variables())
        return union([pattern_rows(wp.pattern, now[name], self.index[name].template) for name in wp.facts], names)


def pattern_rows(pattern: Pattern, facts: Relation, template: Pattern) -> Relation:
    """The facts (identity columns named by the template's variables) a pattern unifies with, as
    rows over the pattern's variables; activity = the fact's interval."""
    spo = node_columns((template.s, template.p, template.o), {v: column(facts, v) for v in facts.vars}, len(facts))
    rows, cols = match(pattern, spo)
    return relation(cols, facts.start[rows], facts.end[rows], n=len(rows))


def keep_open(open_facts: dict) -> None:
    """After a report: a closed interval is final, only open ones can still change."""
    for name, iv in open_facts.items():
        open_facts[name] = iv.take(np.nonzero(iv.end >= OPEN)[0])


def empty_open(f: Fact) -> Intervals | Relation:
    if isinstance(f, EventFact):
        return Intervals.empty(len(f.identity))
    return Relation.empty(tuple(v.name for v in f.identity))


__all__ = ["CodedBackground", "FactSide", "clause_events", "clause_rows", "pattern_rows", "keep_open", "empty_open"]

"""Facts as sets of maximal intervals (spec §3), computed from the whole ordered input.

An event-driven fact is replayed element by element (§3.1). A derived fact is the union, per
identity, of the intersections of its body facts' intervals (§3.2). Because a fact only changes at
its own events, the state any tick `tau` sees is the final store *cut at tau*: an interval
`[s, e)` with `s <= tau` is seen as `[s, e)` if `e <= tau` and as open otherwise (docs/semantics.md,
"Facts seen at a tick"); the query evaluator relies on this.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping

from tefq.semantics.expressions import filters_pass
from tefq.plan.logical import Clause, DerivedFact, Document, EventFact, Node, Pattern, Var, WherePattern
from tefq.results import Metrics
from tefq.vocabulary import Triple

INF = math.inf
Binding = dict[str, str]
Interval = tuple[int, float]  # [start, end), end = INF while open


# ---------------------------------------------------------------- triple patterns
def unify(pattern: Pattern, triple: Triple, binding: Mapping[str, str]) -> Binding | None:
    """Extend `binding` so that `pattern` matches `triple`, or None."""
    out: Binding | None = None
    for node, term in zip((pattern.s, pattern.p, pattern.o), triple):
        if isinstance(node, Var):
            bound = (out or binding).get(node.name)
            if bound is None:
                if out is None:
                    out = dict(binding)
                out[node.name] = term
            elif bound != term:
                return None
        elif node.nt != term:
            return None
    return out if out is not None else dict(binding)


def instantiate(node: Node, binding: Mapping[str, str]) -> str | None:
    if isinstance(node, Var):
        return binding.get(node.name)
    return node.nt


class TripleIndex:
    """Triples indexed by every combination of bound positions, for pattern lookups."""

    def __init__(self, triples: Iterable[Triple] = ()) -> None:
        self.triples: list[Triple] = list(dict.fromkeys(triples))
        self._by: dict[tuple[int, ...], dict[tuple[str, ...], list[Triple]]] = {}

    def lookup(self, pattern: Pattern, binding: Mapping[str, str]) -> list[Triple]:
        nodes = (pattern.s, pattern.p, pattern.o)
        key_pos: list[int] = []
        key: list[str] = []
        for i, n in enumerate(nodes):
            v = instantiate(n, binding)
            if v is not None:
                key_pos.append(i)
                key.append(v)
        if not key_pos:
            return self.triples
        pos = tuple(key_pos)
        idx = self._by.get(pos)
        if idx is None:
            idx = {}
            for t in self.triples:
                idx.setdefault(tuple(t[i] for i in pos), []).append(t)
            self._by[pos] = idx
        return idx.get(tuple(key), [])

    def match(self, pattern: Pattern, binding: Mapping[str, str]) -> Iterator[Binding]:
        for t in self.lookup(pattern, binding):
            b = unify(pattern, t, binding)
            if b is not None:
                yield b


def background_index(background: object) -> TripleIndex:
    """Background knowledge, in any form `tefq.io.rdf.background_as_ntriples` takes (None: none),
    indexed for pattern lookups."""
    if background is None:
        return TripleIndex()
    from tefq.io.rdf import background_as_ntriples  # rdflib is slow to import: only with a background

    return TripleIndex(background_as_ntriples(background))


def match_bgp(patterns: tuple[Pattern, ...], index: TripleIndex, binding: Binding) -> Iterator[Binding]:
    if not patterns:
        yield binding
        return
    for b in index.match(patterns[0], binding):
        yield from match_bgp(patterns[1:], index, b)


# ---------------------------------------------------------------- the store
@dataclass
class FactTable:
    """One fact definition's instances: identity -> sorted maximal intervals."""

    name: str
    template: Pattern
    identity: tuple[Var, ...]
    intervals: dict[tuple[str, ...], list[Interval]] = field(default_factory=dict)

    _index: TripleIndex | None = None
    _by_triple: dict[Triple, list[Interval]] | None = None

    def index(self) -> TripleIndex:
        """The instances' triples, indexed for pattern lookups (built once, after the table is done)."""
        if self._index is None:
            self._index = TripleIndex(self.by_triple)
        return self._index

    @property
    def by_triple(self) -> dict[Triple, list[Interval]]:
        if self._by_triple is None:
            self._by_triple = {self.triple(i): ivs for i, ivs in self.intervals.items()}
        return self._by_triple

    def triple(self, ident: tuple[str, ...]) -> Triple:
        b = dict(zip((v.name for v in self.identity), ident))
        return tuple(instantiate(n, b) for n in (self.template.s, self.template.p, self.template.o))  # type: ignore

    def instances(self) -> Iterator[tuple[Triple, Interval]]:
        for ident, ivs in self.intervals.items():
            t = self.triple(ident)
            for iv in ivs:
                yield t, iv

    def count(self) -> tuple[int, int]:
        """(maximal intervals, closed ones)."""
        n = closed = 0
        for ivs in self.intervals.values():
            n += len(ivs)
            closed += sum(1 for _, e in ivs if e != INF)
        return n, closed


@dataclass
class FactStore:
    tables: dict[str, FactTable]
    unmatched_until: int = 0

    def counts(self) -> tuple[int, int]:
        created = closed = 0
        for t in self.tables.values():
            n, c = t.count()
            created += n
            closed += c
        return created, closed


def _identity(fact: EventFact | DerivedFact, b: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(b[v.name] for v in fact.identity)


def _clause_identities(fact: EventFact, clause: Clause, triple: Triple, bg: TripleIndex) -> list[tuple[str, ...]]:
    b = unify(clause.trigger, triple, {})
    if b is None:
        return []
    out: list[tuple[str, ...]] = []
    for full in match_bgp(clause.background, bg, b):
        if filters_pass(clause.filters, full):
            ident = _identity(fact, full)
            if ident not in out:
                out.append(ident)
    return out


def replay_event_fact(fact: EventFact, elements: list[tuple[int, str, str, str]], bg: TripleIndex) -> tuple[FactTable, int]:
    """Apply the SINCE/UNTIL clauses element by element (spec §3.1). Within one element, closes are
    applied before opens. Returns the table and the number of unmatched UNTILs."""
    open_since: dict[tuple[str, ...], int] = {}
    closed: dict[tuple[str, ...], list[Interval]] = {}
    unmatched = 0
    preds = {c.trigger.p.nt for c in fact.since + fact.until if not isinstance(c.trigger.p, Var)}
    any_pred = any(isinstance(c.trigger.p, Var) for c in fact.since + fact.until)
    for t, s, p, o in elements:
        if not any_pred and p not in preds:
            continue
        triple = (s, p, o)
        closes = dict.fromkeys(i for c in fact.until for i in _clause_identities(fact, c, triple, bg))
        opens = dict.fromkeys(i for c in fact.since for i in _clause_identities(fact, c, triple, bg))
        for ident in closes:
            start = open_since.pop(ident, None)
            if start is None:
                unmatched += 1
            elif start < t:  # [t, t) is empty: no fact at all
                closed.setdefault(ident, []).append((start, t))
        for ident in opens:
            if ident in open_since:
                continue
            past = closed.get(ident)
            if past and past[-1][1] == t:  # the fact meets itself: coalesce
                open_since[ident] = past.pop()[0]
            else:
                open_since[ident] = t
    table = FactTable(fact.name, fact.template, fact.identity)
    for ident in set(closed) | set(open_since):
        ivs = list(closed.get(ident, []))
        if ident in open_since:
            ivs.append((open_since[ident], INF))
        if ivs:
            table.intervals[ident] = ivs
    return table, unmatched


def coalesce(intervals: Iterable[Interval]) -> list[Interval]:
    """Union of intervals as sorted maximal intervals (touching ones merge)."""
    out: list[list] = []
    for s, e in sorted(intervals):
        if s >= e:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """Intersection of two sorted lists of disjoint intervals."""
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        s = max(a[i][0], b[j][0])
        e = min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def body_solutions(body: tuple[WherePattern, ...], tables: Mapping[str, FactTable], bg: TripleIndex,
                   ) -> Iterator[tuple[Binding, list[Interval]]]:
    """Every combination of body facts (and background triples) that agrees on shared variables,
    with the intersection of the facts' intervals (possibly empty)."""
    def go(i: int, b: Binding, ivs: list[Interval]) -> Iterator[tuple[Binding, list[Interval]]]:
        if not ivs:
            return
        if i == len(body):
            yield b, ivs
            return
        wp = body[i]
        if wp.kind == "background":
            for b2 in bg.match(wp.pattern, b):
                yield from go(i + 1, b2, ivs)
            return
        lo, hi = ivs[0][0], ivs[-1][1]
        for name in wp.facts:
            table = tables[name]
            by_triple = table.by_triple
            for triple in table.index().lookup(wp.pattern, b):
                fivs = by_triple[triple]
                if fivs[0][0] >= hi or fivs[-1][1] <= lo:  # cannot intersect: skip early
                    continue
                b2 = unify(wp.pattern, triple, b)
                if b2 is not None:
                    yield from go(i + 1, b2, intersect(ivs, fivs))
    yield from go(0, {}, [(-INF, INF)])  # type: ignore[list-item]


def derive_fact(fact: DerivedFact, tables: Mapping[str, FactTable], bg: TripleIndex) -> FactTable:
    """Spec §3.2: per identity, the union of the intersections of the body facts' intervals."""
    per_ident: dict[tuple[str, ...], list[Interval]] = {}
    for b, ivs in body_solutions(fact.body, tables, bg):
        if filters_pass(fact.filters, b):
            per_ident.setdefault(_identity(fact, b), []).extend(ivs)
    table = FactTable(fact.name, fact.template, fact.identity)
    for ident, ivs in per_ident.items():
        merged = coalesce(ivs)
        if merged:
            table.intervals[ident] = merged
    return table


def event_times(events: Iterable[tuple[int, str, str, str]]) -> dict[Triple, list[int]]:
    """Each event triple and the times it occurs (what event patterns are matched against)."""
    times: dict[Triple, list[int]] = {}
    for t, s, p, o in events:
        times.setdefault((s, p, o), []).append(t)
    return times


def store_metrics(store: FactStore, events_in: int) -> Metrics:
    """The metrics a run's facts determine (spec §7): TEF's intermediate bindings are its facts."""
    metrics = Metrics(events_in=events_in)
    metrics.facts_created, metrics.facts_closed = store.counts()
    metrics.unmatched_until = store.unmatched_until
    metrics.intermediate_bindings = metrics.facts_created
    return metrics


def build_store(doc: Document, elements: list[tuple[int, str, str, str]], bg: TripleIndex) -> FactStore:
    """All the document's facts over the whole (sorted, de-duplicated) input."""
    store = FactStore({})
    for fact in doc.facts:  # dependency order
        if isinstance(fact, EventFact):
            table, unmatched = replay_event_fact(fact, elements, bg)
            store.unmatched_until += unmatched
        else:
            table = derive_fact(fact, store.tables, bg)
        store.tables[fact.name] = table
    return store

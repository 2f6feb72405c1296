"""Refresh simulation, per group (C-SPARQL style as in the paper's UC1, spec §7).

Every window re-emits one aggregate-state binding per (fact, group) that has a fact valid at its
close: the binding packs the group's members `(identity, start)`, so the next window can still
tell a repeated join or an unmatched quit from a real change (the paper's bare counter cannot).
A fact is put in the group its template binds through the query's pattern on it; facts of a
definition whose pattern binds no group key (UC3's UserFact) are refreshed one binding each.
"""
from __future__ import annotations

from typing import Callable

from tefq.plan.logical import AggregateQuery, Document
from tefq.simulate.fastpath import FactMatcher
from tefq.simulate.window import Identity, StateChange, WindowState


class RefreshPerGroup:
    name = "refresh-group"

    def __init__(self, doc: Document, queries: list[AggregateQuery]) -> None:
        self.packs: dict[tuple[str, tuple], dict[Identity, int]] = {}
        self.loose: dict[str, dict[Identity, int]] = {}
        self.closed: dict = {}
        self.bindings = 0
        self.group_patterns = _group_patterns(doc, queries[0]) if queries else {}

    def restore(self) -> WindowState:
        open_: dict[str, dict[Identity, int]] = {n: dict(d) for n, d in self.loose.items()}
        for (name, _), members in self.packs.items():
            open_.setdefault(name, {}).update(members)
        return WindowState(open_, self.closed)

    def carry(self, tau: int, state: WindowState, changes: list[StateChange]) -> None:
        packs: dict[tuple[str, tuple], dict[Identity, int]] = {}
        loose: dict[str, dict[Identity, int]] = {}
        for name, facts in state.open.items():
            how = self.group_patterns.get(name)
            if how is None:
                if facts:
                    loose[name] = facts
                continue
            matcher, keyer = how
            for ident, start in facts.items():
                if matcher.matches(ident):
                    packs.setdefault((name, keyer(ident)), {})[ident] = start
                else:
                    loose.setdefault(name, {})[ident] = start
        self.packs, self.loose = packs, loose
        self.closed = {n: c for n, c in state.closed.items() if c}
        self.bindings += len(packs) + sum(len(d) for d in loose.values()) + sum(len(c) for c in self.closed.values())


def _group_patterns(doc: Document, q: AggregateQuery) -> dict[str, tuple[FactMatcher, Callable]]:
    """Per fact definition: (matcher, group key of an identity) from a query pattern over that fact
    that binds every GROUP BY variable."""
    group = [v.name for v in q.group_by]
    out: dict[str, tuple[FactMatcher, Callable]] = {}
    if not group:
        return out
    for wp in list(q.where) + ([q.while_] if q.while_ is not None else []):
        if wp.kind not in ("current", "fact"):
            continue
        for f in wp.facts:
            fd = doc.fact(f)
            m = FactMatcher(wp.pattern, fd.template, fd.identity)
            getters = [m.getter(g) for g in group]
            if f not in out and all(g is not None for g in getters):
                out[f] = (m, lambda ident, gs=getters: tuple(g(ident) for g in gs))
    return out

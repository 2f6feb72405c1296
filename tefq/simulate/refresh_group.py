"""Refresh simulation, per group (C-SPARQL style as in the paper's UC1, spec §7).

Every window re-emits one aggregate-state binding per (fact, group) that has a fact valid at its
close: the binding packs the group's members `(identity, start)`, so the next window can still
tell a repeated join or an unmatched quit from a real change (the paper's bare counter cannot).
A fact is put in the group its template binds through the query's pattern on it; facts of a
definition whose pattern binds no group key (UC3's UserFact) are refreshed one binding each.
"""
from __future__ import annotations

from tefq.plan.logical import AggregateQuery, Document, Var
from tefq.simulate.matching import instantiate, unify
from tefq.simulate.window import Identity, StateChange, WindowState


class RefreshPerGroup:
    name = "refresh-group"

    def __init__(self, doc: Document, queries: list[AggregateQuery]) -> None:
        self.doc = doc
        self.packs: dict[tuple[str, tuple], dict[Identity, int]] = {}
        self.loose: dict[str, dict[Identity, int]] = {}
        self.closed: dict = {}
        self.bindings = 0
        self.group_patterns = _group_patterns(queries[0]) if queries else {}

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
            pattern, group = how
            fd = self.doc.fact(name)
            for ident, start in facts.items():
                b = unify(pattern, *instantiate(fd.template, fd.identity, ident), {})
                if b is None:
                    loose.setdefault(name, {})[ident] = start
                else:
                    packs.setdefault((name, tuple(b[g] for g in group)), {})[ident] = start
        self.packs, self.loose = packs, loose
        self.closed = {n: c for n, c in state.closed.items() if c}
        self.bindings += len(packs) + sum(len(d) for d in loose.values()) + sum(len(c) for c in self.closed.values())


def _group_patterns(q: AggregateQuery) -> dict[str, tuple]:
    """Per fact definition: a query pattern over it that binds every GROUP BY variable."""
    group = [v.name for v in q.group_by]
    out: dict[str, tuple] = {}
    if not group:
        return out
    for wp in list(q.where) + ([q.while_] if q.while_ is not None else []):
        if wp.kind not in ("current", "fact"):
            continue
        names = {n.name for n in (wp.pattern.s, wp.pattern.p, wp.pattern.o) if isinstance(n, Var)}
        if all(g in names for g in group):
            for f in wp.facts:
                out.setdefault(f, (wp.pattern, group))
    return out

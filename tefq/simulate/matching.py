"""Triple-pattern matching for the simulations: unification, background joins, SINCE/UNTIL clauses."""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable, Iterator

from tefq.plan.logical import Clause, EventFact, Fact, Node, Pattern, Term, Var
from tefq.semantics.expressions import filters_pass
from tefq.oracle.facts import unify
from tefq.vocabulary import Triple

Binding = dict[str, object]


def instantiate(template: Pattern, identity: tuple[Var, ...], values: tuple[str, ...]) -> Triple:
    """The triple a fact with these identity values states."""
    env = {v.name: x for v, x in zip(identity, values)}

    def node(n: Node) -> str:
        return n.nt if isinstance(n, Term) else env[n.name]  # type: ignore[return-value]

    return node(template.s), node(template.p), node(template.o)


class BackgroundIndex:
    """The static graph, indexed by predicate for pattern joins."""

    def __init__(self, triples: Iterable[Triple] = ()) -> None:
        self.by_p: dict[str, list[Triple]] = defaultdict(list)
        self.all: list[Triple] = []
        for t in triples:
            self.by_p[t[1]].append(t)
            self.all.append(t)

    @classmethod
    def of(cls, background: object) -> "BackgroundIndex":
        """BackgroundIndex knowledge in any form `tefq.io.rdf.background_as_ntriples` takes (None: none)."""
        if background is None:
            return cls()
        from tefq.io.rdf import background_as_ntriples  # rdflib is slow to import: only with a background

        return cls(background_as_ntriples(background))

    def match(self, p: Pattern, b: Binding) -> Iterator[Binding]:
        pred = p.p.nt if isinstance(p.p, Term) else b.get(p.p.name)  # type: ignore[union-attr]
        for s, pr, o in (self.by_p.get(pred, ()) if isinstance(pred, str) else self.all):  # type: ignore[arg-type]
            nb = unify(p, (s, pr, o), b)
            if nb is not None:
                yield nb


def passes(filters: Iterable, b: Binding) -> bool:
    """All FILTERs hold (an error is false): the oracle's evaluation, so both engines agree."""
    return filters_pass(filters, b)


def clause_identities(fact: EventFact, clause: Clause, s: str, p: str, o: str, bg: BackgroundIndex) -> list[tuple]:
    """The fact identities an event opens or closes through one SINCE/UNTIL clause."""
    b = unify(clause.trigger, (s, p, o), {})
    if b is None:
        return []
    sols = [b]
    for bp in clause.background:
        sols = [nb for sb in sols for nb in bg.match(bp, sb)]
    out = []
    for sb in sols:
        if clause.filters and not passes(clause.filters, sb):
            continue
        ident = tuple(sb[v.name] for v in fact.identity)  # type: ignore[misc]
        if ident not in out:
            out.append(ident)
    return out


class ClauseIndex:
    """The event-driven facts an event's predicate can touch."""

    def __init__(self, facts: Iterable[Fact]) -> None:
        self.by_p: dict[str, list[CompiledFact]] = defaultdict(list)
        self.any_p: list[CompiledFact] = []
        for f in facts:
            if not isinstance(f, EventFact):
                continue
            cf = CompiledFact(f)
            clauses = f.since + f.until
            if any(not isinstance(c.trigger.p, Term) for c in clauses):
                self.any_p.append(cf)
                continue
            for pred in dict.fromkeys(c.trigger.p.nt for c in clauses):  # type: ignore[union-attr]
                self.by_p[pred].append(cf)

    def lookup(self, p: str) -> list["CompiledFact"]:
        hits = self.by_p.get(p, [])
        return hits + self.any_p if self.any_p else hits


def compile_clause(fact: EventFact, clause: Clause) -> Callable[[str, str, str, BackgroundIndex], list[tuple]]:
    """The clause as a function of an event. A bare trigger (no background, no FILTER) reads the
    identity straight from the event's positions: the common case, and the hot loop."""
    if clause.background or clause.filters:
        return lambda s, p, o, bg: clause_identities(fact, clause, s, p, o, bg)
    shape = clause.trigger.shape()
    checks, same = shape.consts, shape.same
    pos = tuple(shape.first[v.name] for v in fact.identity)

    def identities(s: str, p: str, o: str, bg: BackgroundIndex) -> list[tuple]:
        e = (s, p, o)
        for i, c in checks:
            if e[i] != c:
                return []
        for i, j in same:
            if e[i] != e[j]:
                return []
        return [tuple(e[i] for i in pos)]
    return identities


class CompiledFact:
    """An event-driven fact's UNTIL and SINCE clauses, compiled."""

    def __init__(self, fact: EventFact) -> None:
        self.fact = fact
        self.until = [compile_clause(fact, c) for c in fact.until]
        self.since = [compile_clause(fact, c) for c in fact.since]

    def changes(self, s: str, p: str, o: str, bg: BackgroundIndex) -> tuple[list[tuple], list[tuple]]:
        """(identities the event closes, identities it opens); closes apply first (as in the oracle)."""
        closes = [i for c in self.until for i in c(s, p, o, bg)]
        opens = [i for c in self.since for i in c(s, p, o, bg)]
        if len(closes) > 1:
            closes = list(dict.fromkeys(closes))
        if len(opens) > 1:
            opens = list(dict.fromkeys(opens))
        return closes, opens

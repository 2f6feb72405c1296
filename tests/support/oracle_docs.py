"""Hand-built logical plans for the paper's use cases (spec §9, §10), and event helpers.

The front end (`tefq.analysis.load`) produces the same Documents from text; these let the oracle be
tested on its own.
"""
from __future__ import annotations

import random

from tefq.plan.logical import (Aggregate, AggregateQuery, Call, Clause, DerivedFact, Document, EventFact, Pattern,
                               Projection, Term, Var, WherePattern)
from tefq.terms import PREDECLARED_PREFIXES, XSD_INTEGER

NS = "http://example.org/iptv#"


def c(local: str) -> Term:
    return Term(f"<{NS}{local}>")


def iri(local: str) -> str:
    return f"<{NS}{local}>"


V = Var
USER, CHANNEL, PROGRAM, SHOW = V("user"), V("channel"), V("program"), V("show")

USER_FACT = EventFact(
    "UserFact", Pattern(USER, c("watching"), CHANNEL), (USER, CHANNEL),
    since=(Clause(Pattern(USER, c("join"), CHANNEL)),), until=(Clause(Pattern(USER, c("quit"), CHANNEL)),))
PROGRAM_FACT = EventFact(
    "ProgramFact", Pattern(CHANNEL, c("showing"), PROGRAM), (CHANNEL, PROGRAM),
    since=(Clause(Pattern(CHANNEL, c("start"), PROGRAM)),), until=(Clause(Pattern(CHANNEL, c("finish"), PROGRAM)),))
VIEWSHIP_FACT = DerivedFact(
    "ViewShipFact", Pattern(USER, c("attends"), PROGRAM), (USER, PROGRAM),
    body=(WherePattern("fact", Pattern(USER, c("watching"), CHANNEL), ("UserFact",)),
          WherePattern("fact", Pattern(CHANNEL, c("showing"), PROGRAM), ("ProgramFact",))))


def uc1(every_ms: int = 10_000, name: str = "q1") -> AggregateQuery:
    """SELECT ?channel AS CHANNEL, ?user as USER (AGGREGATE ?channel, COUNT ?user
    WHERE (CURRENT ?user :watching ?channel) GROUP BY ?channel EVERY ...)"""
    return AggregateQuery(
        name, select=(Projection(CHANNEL, "CHANNEL"), Projection(USER, "USER")), group_by=(CHANNEL,),
        aggregates=(Aggregate("COUNT", USER, False, "user"),),
        where=(WherePattern("current", Pattern(USER, c("watching"), CHANNEL), ("UserFact",)),),
        filters=(), while_=None, every_ms=every_ms)


def uc2(every_ms: int = 60_000, name: str = "q2") -> AggregateQuery:
    sc, ec, total, count = V("SC"), V("EC"), V("TotalTime"), V("Count")
    return AggregateQuery(
        name, select=(Projection(CHANNEL, "Channel"), Projection(count, "CurrentUsers"),
                      Projection(Call("/", (total, count)), "AverageDuration")),
        group_by=(CHANNEL,),
        aggregates=(Aggregate("SUM", Call("DURATION", (sc, ec)), False, "TotalTime"),
                    Aggregate("COUNT", USER, False, "Count")),
        where=(WherePattern("current", Pattern(USER, c("watching"), CHANNEL), ("UserFact",), (sc, ec)),),
        filters=(), while_=None, every_ms=every_ms)


def uc3(every_ms: int = 60_000, name: str = "q3") -> AggregateQuery:
    sa, ea, total, diff = V("SA"), V("EA"), V("TotalTime"), V("DiffUser")
    return AggregateQuery(
        name, select=(Projection(SHOW, "Show"), Projection(diff, "USER"),
                      Projection(Call("/", (total, diff)), "AverageViewTime")),
        group_by=(SHOW,),
        aggregates=(Aggregate("SUM", Call("DURATION", (sa, ea)), False, "TotalTime"),
                    Aggregate("COUNT", USER, True, "DiffUser")),
        where=(WherePattern("fact", Pattern(USER, c("attends"), SHOW), ("ViewShipFact",), (sa, ea)),),
        filters=(), while_=WherePattern("fact", Pattern(V("_"), c("showing"), SHOW), ("ProgramFact",),
                                        (V("SS"), V("ES"))),
        every_ms=every_ms)


def document(*queries: AggregateQuery, facts=(USER_FACT,)) -> Document:
    return Document("<test>", None, PREDECLARED_PREFIXES + (("", NS),), tuple(facts), tuple(queries))


def uc_doc(every_ms: int = 5000) -> Document:
    """Spec §10: UserFact, UC1 and UC2 with EVERY "PT5S"."""
    return document(uc1(every_ms, "uc1"), uc2(every_ms, "uc2"))


def uc3_doc(every_ms: int = 60_000) -> Document:
    return document(uc3(every_ms, "uc3"), facts=(USER_FACT, PROGRAM_FACT, VIEWSHIP_FACT))


def ev(t_seconds: float, s: str, p: str, o: str) -> tuple[int, str, str, str]:
    return (int(round(t_seconds * 1000)), iri(s), iri(p), iri(o))


SPEC_10_EVENTS = [
    ev(1, "Alice", "join", "A"), ev(3, "Bob", "join", "B"), ev(7, "Cathy", "join", "B"),
    ev(8, "David", "join", "B"), ev(9, "Bob", "quit", "B"), ev(11, "Eric", "join", "A"),
    ev(12, "Fiona", "join", "B"), ev(14, "Alice", "quit", "A"),
]


def integer(n: int) -> str:
    return f'"{n}"^^<{XSD_INTEGER}>'


def synthetic_iptv(n_events: int = 100_000, users: int = 22_872, channels: int = 234, seed: int = 1,
                   epg: bool = False, day_ms: int = 86_400_000) -> list[tuple[int, str, str, str]]:
    """A day of join/quit sessions (and optionally back-to-back programmes per channel), in time
    order. About half the events are joins; sessions last minutes to an hour; some quits are lost."""
    rng = random.Random(seed)
    out: list[tuple[int, str, str, str]] = []
    if epg:
        for ch in range(channels):
            t, n = rng.randrange(0, 1_800_000), 0
            while t < day_ms:
                length = rng.choice((15, 30, 30, 60, 90)) * 60_000
                prog = iri(f"prog{ch}_{n}")
                out.append((t, iri(f"ch{ch}"), iri("start"), prog))
                out.append((min(t + length, day_ms), iri(f"ch{ch}"), iri("finish"), prog))
                t, n = t + length, n + 1
    sessions = (n_events - len(out)) // 2
    for _ in range(sessions):
        u, ch = iri(f"u{rng.randrange(users)}"), iri(f"ch{rng.randrange(channels)}")
        start = rng.randrange(day_ms)
        out.append((start, u, iri("join"), ch))
        if rng.random() < 0.97:
            out.append((min(day_ms, start + int(rng.expovariate(1 / 1_500_000))), u, iri("quit"), ch))
    out.sort(key=lambda e: e[0])
    return out

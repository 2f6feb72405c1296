"""Hand-built logical plans for the simulation tests (the same documents the front end binds from
examples/spec10/*.tef and examples/programs/uc3.tef), so the simulations can be tested on their own."""
from __future__ import annotations

from dataclasses import replace

from tefq.plan.logical import (Aggregate, AggregateQuery, Call, Clause, DerivedFact, Document, EventFact, Pattern,
                               Projection, Term, Var, WherePattern)


NS = "http://example.org/iptv#"


def t(local: str) -> Term:
    return Term(f"<{NS}{local}>")


def iri(local: str) -> str:
    return f"<{NS}{local}>"


USER, CHANNEL, PROGRAM, SHOW = Var("user"), Var("channel"), Var("program"), Var("show")


def user_fact() -> EventFact:
    return EventFact("UserFact", Pattern(USER, t("watching"), CHANNEL), (USER, CHANNEL),
                     (Clause(Pattern(USER, t("join"), CHANNEL)),), (Clause(Pattern(USER, t("quit"), CHANNEL)),))


def program_fact() -> EventFact:
    return EventFact("ProgramFact", Pattern(CHANNEL, t("showing"), PROGRAM), (CHANNEL, PROGRAM),
                     (Clause(Pattern(CHANNEL, t("start"), PROGRAM)),), (Clause(Pattern(CHANNEL, t("finish"), PROGRAM)),))


def viewship_fact() -> DerivedFact:
    return DerivedFact("ViewShipFact", Pattern(USER, t("attends"), PROGRAM), (USER, PROGRAM),
                       (WherePattern("fact", Pattern(USER, t("watching"), CHANNEL), ("UserFact",)),
                        WherePattern("fact", Pattern(CHANNEL, t("showing"), PROGRAM), ("ProgramFact",))))


def uc1(every_ms: int = 5000) -> Document:
    q = AggregateQuery("q1", (Projection(CHANNEL, "CHANNEL"), Projection(USER, "USER")), (CHANNEL,),
                       (Aggregate("COUNT", USER, False, "user"),),
                       (WherePattern("current", Pattern(USER, t("watching"), CHANNEL), ("UserFact",)),),
                       (), None, every_ms)
    return Document("uc1.tef", None, (("", NS),), (user_fact(),), (q,))


def uc2(every_ms: int = 5000) -> Document:
    sc, ec, total, count = Var("SC"), Var("EC"), Var("TotalTime"), Var("Count")
    q = AggregateQuery(
        "q1",
        (Projection(CHANNEL, "Channel"), Projection(count, "CurrentUsers"),
         Projection(Call("/", (total, count)), "AverageDuration")),
        (CHANNEL,),
        (Aggregate("SUM", Call("DURATION", (sc, ec)), False, "TotalTime"), Aggregate("COUNT", USER, False, "Count")),
        (WherePattern("current", Pattern(USER, t("watching"), CHANNEL), ("UserFact",), (sc, ec)),),
        (), None, every_ms)
    return Document("uc2.tef", None, (("", NS),), (user_fact(),), (q,))


def uc3(every_ms: int = 5000) -> Document:
    sa, ea, total, diff = Var("SA"), Var("EA"), Var("TotalTime"), Var("DiffUser")
    q = AggregateQuery(
        "q1",
        (Projection(SHOW, "Show"), Projection(diff, "Users"), Projection(Call("/", (total, diff)), "AverageViewTime")),
        (SHOW,),
        (Aggregate("SUM", Call("DURATION", (sa, ea)), False, "TotalTime"), Aggregate("COUNT", USER, True, "DiffUser")),
        (WherePattern("fact", Pattern(USER, t("attends"), SHOW), ("ViewShipFact",), (sa, ea)),),
        (), WherePattern("fact", Pattern(Var("_"), t("showing"), SHOW), ("ProgramFact",), (Var("SS"), Var("ES"))),
        every_ms)
    return Document("uc3.tef", None, (("", NS),), (user_fact(), program_fact(), viewship_fact()), (q,))


def with_every(doc: Document, every_ms: int) -> Document:
    return replace(doc, queries=tuple(replace(q, every_ms=every_ms) for q in doc.queries))


SPEC10 = [(1000, "Alice", "join", "A"), (3000, "Bob", "join", "B"), (7000, "Cathy", "join", "B"),
          (8000, "David", "join", "B"), (9000, "Bob", "quit", "B"), (11000, "Eric", "join", "A"),
          (12000, "Fiona", "join", "B"), (14000, "Alice", "quit", "A")]


def spec10_elements() -> list[tuple[int, str, str, str]]:
    return [(ts, iri(s), iri(p), iri(o)) for ts, s, p, o in SPEC10]


def programme_stream():
    rows = [(0, "A", "start", "News1"), (0, "B", "start", "Match"), (1000, "Alice", "join", "A"),
            (3000, "Bob", "join", "B"), (7000, "Cathy", "join", "B"), (9000, "Bob", "quit", "B"),
            (9000, "Bob", "join", "A"), (10000, "A", "finish", "News1"), (10000, "A", "start", "Film"),
            (12000, "Cathy", "quit", "B"), (12000, "Cathy", "join", "A"), (14000, "Alice", "quit", "A"),
            (15000, "B", "finish", "Match")]
    return [(t, iri(s), iri(p), iri(o)) for t, s, p, o in rows]

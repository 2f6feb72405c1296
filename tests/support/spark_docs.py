"""UC1-UC3 as logical Documents built by hand (spec §9), for the Spark tests; the front end's
`tefq.analysis.load` produces the same plans from the .tef text."""
from __future__ import annotations

from tefq.plan.logical import (Aggregate, AggregateQuery, Call, Clause, DerivedFact, Document, EventFact,
                               Pattern, Projection, Term, Var, WherePattern)
from tefq.terms import PREDECLARED_PREFIXES

IPTV = "http://example.org/iptv#"


def t(local: str) -> Term:
    return Term(f"<{IPTV}{local}>")


def user_fact() -> EventFact:
    u, c = Var("user"), Var("channel")
    return EventFact("UserFact", Pattern(u, t("watching"), c), (u, c),
                     since=(Clause(Pattern(u, t("join"), c)),), until=(Clause(Pattern(u, t("quit"), c)),))


def program_fact() -> EventFact:
    c, p = Var("channel"), Var("program")
    return EventFact("ProgramFact", Pattern(c, t("showing"), p), (c, p),
                     since=(Clause(Pattern(c, t("start"), p)),), until=(Clause(Pattern(c, t("finish"), p)),))


def _doc(facts, queries) -> Document:
    return Document("<test>", None, PREDECLARED_PREFIXES + (("", IPTV),), tuple(facts), tuple(queries))


def uc1(every_ms: int = 10_000) -> Document:
    u, c = Var("user"), Var("channel")
    q = AggregateQuery(
        "q1", (Projection(c, "CHANNEL"), Projection(u, "USER")), (c,),
        (Aggregate("COUNT", u, False, "user"),),
        (WherePattern("current", Pattern(u, t("watching"), c), ("UserFact",)),), (), None, every_ms)
    return _doc([user_fact()], [q])


def uc2(every_ms: int = 60_000) -> Document:
    u, c, sc, ec = Var("user"), Var("channel"), Var("SC"), Var("EC")
    q = AggregateQuery(
        "q1", (Projection(c, "Channel"), Projection(Var("Count"), "CurrentUsers"),
               Projection(Call("/", (Var("TotalTime"), Var("Count"))), "AverageDuration")), (c,),
        (Aggregate("SUM", Call("DURATION", (sc, ec)), False, "TotalTime"), Aggregate("COUNT", u, False, "Count")),
        (WherePattern("current", Pattern(u, t("watching"), c), ("UserFact",), (sc, ec)),), (), None, every_ms)
    return _doc([user_fact()], [q])


def uc3(every_ms: int = 60_000) -> Document:
    u, c, p, show = Var("user"), Var("channel"), Var("program"), Var("show")
    view = DerivedFact("ViewShipFact", Pattern(u, t("attends"), p), (u, p), (
        WherePattern("fact", Pattern(u, t("watching"), c), ("UserFact",)),
        WherePattern("fact", Pattern(c, t("showing"), p), ("ProgramFact",))))
    sa, ea = Var("SA"), Var("EA")
    q = AggregateQuery(
        "q1", (Projection(show, "Show"), Projection(Var("DiffUser"), "USER"),
               Projection(Call("/", (Var("TotalTime"), Var("DiffUser"))), "AverageViewTime")), (show,),
        (Aggregate("SUM", Call("DURATION", (sa, ea)), False, "TotalTime"),
         Aggregate("COUNT", u, True, "DiffUser")),
        (WherePattern("fact", Pattern(u, t("attends"), show), ("ViewShipFact",), (sa, ea)),), (),
        WherePattern("fact", Pattern(Var("_"), t("showing"), show), ("ProgramFact",), (Var("SS"), Var("ES"))),
        every_ms)
    return _doc([user_fact(), program_fact(), view], [q])


def worked_example() -> list[tuple[int, str, str, str]]:
    """Spec §10: the UC1/UC2 worked example."""
    j, q = f"<{IPTV}join>", f"<{IPTV}quit>"
    A, B = f"<{IPTV}chA>", f"<{IPTV}chB>"
    def who(n): return f"<{IPTV}{n}>"
    return [(1000, who("Alice"), j, A), (3000, who("Bob"), j, B), (7000, who("Cathy"), j, B),
            (8000, who("David"), j, B), (9000, who("Bob"), q, B), (11000, who("Eric"), j, A),
            (12000, who("Fiona"), j, B), (14000, who("Alice"), q, A)]


VIEWS_START = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def views(first: int, n: int, start: int = VIEWS_START) -> list[tuple[int, str, str, str]]:
    """n users join a channel one second apart and quit a minute later."""
    out = []
    for i in range(first, first + n):
        out.append((start + i * 1000, f"<{IPTV}u{i}>", f"<{IPTV}join>", f"<{IPTV}ch{i % 3}>"))
        out.append((start + 60_000 + i * 1000, f"<{IPTV}u{i}>", f"<{IPTV}quit>", f"<{IPTV}ch{i % 3}>"))
    return sorted(out)

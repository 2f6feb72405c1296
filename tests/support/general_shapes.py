"""The general plan's query shapes (issue 27), their background, hypothesis streams and the oracle's rows, shared by the kernel, operator, Spark and reliability tests."""
from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.analysis import bind
from tefq.oracle import prepare
from tefq.oracle.facts import TripleIndex, build_store
from tefq.oracle.query import QueryEvaluator
from tefq.spark.kernels.general.local import run_local
from tefq.spark.planning.common import Refusal
from tefq.spark.planning.general import GeneralPlan, plan_general
from tefq.syntax import parse

IPTV = "http://example.org/iptv#"
EVERY = 10  # ms: the streams' times straddle many ticks
PREFIX = f"PREFIX : <{IPTV}>\n"
USER_FACT = "CONSTRUCT FACT UserFact {?user :watching ?channel .} (UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))\n"
PROGRAM_FACT = ("CONSTRUCT FACT ProgramFact {?channel :showing ?program .}"
                " (UNION (SINCE ?channel :start ?program) (UNTIL ?channel :finish ?program))\n")
VIEW_FACT = "CONSTRUCT FACT ViewShipFact {?user :attends ?program .} {?user :watching ?channel . ?channel :showing ?program}\n"
EVERY_CLAUSE = "EVERY __EVERY__"


def with_every(text: str, every: int) -> str:
    return text.replace("__EVERY__", f'"PT{every / 1000}S"^^xsd:duration')
EXAMPLES = int(os.environ.get("TEFQ_GENERAL_EXAMPLES", "30"))


def iri(local: str) -> str:
    return f"<{IPTV}{local}>"


def lit(value: int) -> str:
    return f'"{value}"^^<http://www.w3.org/2001/XMLSchema#integer>'


BACKGROUND = [(iri(f"c{i}"), iri("genre"), iri(g)) for i, g in enumerate(["News", "Sports", "News"])] + \
    [(iri(f"c{i}"), iri("rank"), lit(r)) for i, r in enumerate([3, 1, 2])] + \
    [(iri(f"p{i}"), iri("kind"), iri(k)) for i, k in enumerate(["Film", "Show", "Film"])] + \
    [(iri("u0"), iri("premium"), '"true"^^<http://www.w3.org/2001/XMLSchema#boolean>'),
     (iri("u2"), iri("premium"), '"true"^^<http://www.w3.org/2001/XMLSchema#boolean>')] + \
    [(iri("c0"), iri("weight"), '"2.5"^^<http://www.w3.org/2001/XMLSchema#decimal>'),
     (iri("c1"), iri("weight"), '"1.5E0"^^<http://www.w3.org/2001/XMLSchema#double>'),
     (iri("c2"), iri("weight"), lit(3)), (iri("c2"), iri("weight"), '"heavy"')]
EPOCH = 1_383_523_200_000  # the generated IPTV data's start: realistic magnitudes


# ---------------------------------------------------------------- streams
def viewing(t, kind, user, channel):
    return (t, iri(f"u{user}"), iri(kind), iri(f"c{channel}"))


def airing(t, kind, channel, program):
    return (t, iri(f"c{channel}"), iri(kind), iri(f"p{program}"))


def times(every: int):
    return st.integers(0, 8).flatmap(lambda k: st.sampled_from([k * every + d for d in (0, 1, 7, -1, every // 2 + 3)]))


@st.composite
def streams(draw, programs: bool = False, every: int = EVERY):
    views = st.builds(viewing, times(every), st.sampled_from(["join", "join", "quit"]), st.integers(0, 3),
                      st.integers(0, 2))
    els = draw(st.lists(views, min_size=1, max_size=16))
    if programs:
        els += draw(st.lists(st.builds(airing, times(every), st.sampled_from(["start", "finish"]), st.integers(0, 2),
                                       st.integers(0, 2)), min_size=1, max_size=8))
    els = [e for e in els if e[0] >= 0]
    if not els:
        els = [viewing(3, "join", 0, 0)]
    if draw(st.booleans()):  # a stream is a set: the same element twice at one ms is one
        els.append(draw(st.sampled_from(els)))
    base = draw(st.sampled_from([0, EPOCH]))
    return draw(st.permutations([(t + base, s, p, o) for t, s, p, o in els]))


# ---------------------------------------------------------------- oracle vs kernels
def document(text: str):
    text = PREFIX + with_every(text, EVERY)
    return bind(parse(text, "<test>"), "<test>", text, {}, frozenset(p for _, p, _ in BACKGROUND))


def oracle_rows(doc, elements):
    events = prepare(elements)
    bg = TripleIndex(BACKGROUND)
    store = build_store(doc, events, bg)
    times: dict = {}
    for t, s, p, o in events:
        times.setdefault((s, p, o), []).append(t)
    result, _ = QueryEvaluator(doc.queries[0], store, TripleIndex(times), times, bg).run(
        events[0][0], events[-1][0], 0, 0)
    return result.rows


def plan(text: str, buckets: int, every: int = EVERY) -> tuple[object, GeneralPlan]:
    doc = document(with_every(text, every))
    p = plan_general(doc, doc.queries[0], buckets)
    assert not isinstance(p, Refusal), p
    return doc, p


def agg(select: str, aggregate: str, where: str, group: str = "", tail: str = "") -> str:
    group_by = f" GROUP BY {group}" if group else ""
    return f"SELECT {select} (AGGREGATE {aggregate} WHERE {where}{group_by} {tail} {EVERY_CLAUSE})"


SHAPES = {
    "genre": USER_FACT + agg("?genre AS G, ?n AS N, ?d AS D", "?genre, COUNT ?user AS ?n, COUNT DISTINCT ?user AS ?d",
                             "{ (CURRENT ?user :watching ?channel) . ?channel :genre ?genre }", "?genre"),
    "event pattern": agg("?channel AS C, ?n AS N", "?channel, COUNT ?user AS ?n", "{ ?user :join ?channel }", "?channel"),
    "event pattern, no group": agg("?n AS N, ?d AS D", "COUNT(*) AS ?n, COUNT DISTINCT ?channel AS ?d",
                                   "{ ?user :join ?channel }"),
    "two facts joined": USER_FACT + PROGRAM_FACT + agg(
        "?program AS P, ?n AS N, ?t AS T", "?program, COUNT DISTINCT ?user AS ?n, SUM DURATION(?S,?E) AS ?t",
        "{ ?user :watching ?channel [?S,?E] . ?channel :showing ?program }", "?program"),
    "fact pattern, SUM DURATION": USER_FACT + agg(
        "?channel AS C, ?t AS T, ?t/?n AS A", "?channel, SUM DURATION(?S,?E) AS ?t, COUNT ?user AS ?n",
        "{ ?user :watching ?channel [?S,?E] }", "?channel"),
    "FILTER over pattern variables": USER_FACT + agg(
        "?channel AS C, ?n AS N", "?channel, COUNT ?user AS ?n",
        "{ (CURRENT ?user :watching ?channel) . ?channel :rank ?r FILTER(?r > 1 && ?user != :u1) }", "?channel"),
    "FILTER over interval variables": USER_FACT + agg(
        "?channel AS C, ?n AS N, ?m AS M", "?channel, COUNT ?user AS ?n, MAX DURATION(?S,?E) AS ?m",
        "{ ?user :watching ?channel [?S,?E] FILTER(DURATION(?S,?E) > 0.012 && ?S >= \"1970-01-01T00:00:00.010Z\"^^xsd:dateTime) }",
        "?channel"),
    "WHILE with a background pattern": USER_FACT + PROGRAM_FACT + agg(
        "?program AS P, ?n AS N, ?t AS T", "?program, COUNT DISTINCT ?user AS ?n, SUM DURATION(?S,?E) AS ?t",
        "{ ?user :watching ?channel [?S,?E] . ?program :kind :Film }", "?program",
        "WHILE ?channel :showing ?program [?SS,?ES]"),
    "UC3 (derived fact, WHILE)": USER_FACT + PROGRAM_FACT + VIEW_FACT + agg(
        "?show AS Show, ?n AS N, ?t/?n AS A", "?show, SUM DURATION(?SA,?EA) AS ?t, COUNT DISTINCT ?user AS ?n",
        "?user :attends ?show [?SA,?EA]", "?show", "WHILE ?_ :showing ?show [?SS,?ES]"),
    "WHILE interval variables in SELECT": USER_FACT + PROGRAM_FACT + agg(
        "?channel AS C, ?SS AS Since, ?ES AS Until, ?n AS N", "?channel, ?SS, ?ES, COUNT ?user AS ?n",
        "{ (CURRENT ?user :watching ?channel) }", "?channel ?SS ?ES", "WHILE ?channel :showing ?program [?SS,?ES]"),
    "GROUP BY an interval start, AVG, MIN": USER_FACT + agg(
        "?S AS S, ?a AS A, ?lo AS Lo", "?S, AVG DURATION(?S,?E) AS ?a, MIN ?channel AS ?lo",
        "{ ?user :watching ?channel [?S,?E] }", "?S"),
    "SINCE/UNTIL with a background BGP and FILTER": (
        "CONSTRUCT FACT GenreFact {?user :likes ?genre .} (UNION (SINCE ?user :join ?c . ?c :genre ?genre"
        " FILTER(?c != :c2)) (UNTIL ?user :quit ?c . ?c :genre ?genre))\n"
        + agg("?genre AS G, ?n AS N", "?genre, COUNT ?user AS ?n", "(CURRENT ?user :likes ?genre)", "?genre")),
    "derived fact with background and FILTER": USER_FACT + PROGRAM_FACT + (
        "CONSTRUCT FACT FilmFact {?user :sees ?program .} { ?user :watching ?channel . ?channel :showing ?program ."
        " ?program :kind :Film FILTER(?user != :u3) }\n") + agg(
        "?program AS P, ?n AS N, ?s AS S", "?program, COUNT ?user AS ?n, SUM ?r AS ?s",
        "{ (CURRENT ?user :sees ?program) . ?program :kind ?k . ?c :rank ?r FILTER(?c = :c1) }", "?program"),
    "mixed numbers: SUM, AVG, MIN, MAX, COUNT DISTINCT": USER_FACT + agg(
        "?user AS U, ?s AS S, ?a AS A, ?lo AS Lo, ?hi AS Hi, ?k AS K",
        "?user, SUM ?w AS ?s, AVG ?w AS ?a, MIN ?w AS ?lo, MAX ?w AS ?hi, COUNT DISTINCT ?w AS ?k",
        "{ (CURRENT ?user :watching ?channel) . ?channel :weight ?w }", "?user"),
    "no GROUP BY: the implicit group": USER_FACT + agg(
        "?n AS N, ?s AS S, ?a AS A, ?m AS M", "COUNT ?user AS ?n, SUM ?r AS ?s, AVG ?r AS ?a, MAX ?r AS ?m",
        "{ (CURRENT ?user :watching ?channel) . ?channel :rank ?r }"),
    "SELECT functions": USER_FACT + agg(
        "STR(?channel) AS C, IF(?n > 1, \"many\", \"one\") AS K, ?n * 2 + 1 AS M, ?t / ?n AS A",
        "?channel, COUNT ?user AS ?n, SUM DURATION(?S,?E) AS ?t",
        "{ (CURRENT ?user :watching ?channel [?S,?E]) }", "?channel"),
    "event pattern under WHILE": PROGRAM_FACT + agg(
        "?channel AS C, ?n AS N, ?d AS D", "?channel, COUNT ?user AS ?n, COUNT DISTINCT ?user AS ?d",
        "{ ?user :join ?channel }", "?channel", "WHILE ?channel :showing ?program"),
    "a pattern over several facts": USER_FACT + PROGRAM_FACT + agg(
        "?rel AS R, ?n AS N, ?t AS T", "?rel, COUNT ?a AS ?n, SUM DURATION(?S,?E) AS ?t",
        "{ ?a ?rel ?b [?S,?E] }", "?rel"),
    "split by a variable the background binds too": USER_FACT + agg(
        "?channel AS C, ?d AS D, ?n AS N", "?channel, COUNT DISTINCT ?g AS ?d, COUNT(*) AS ?n",
        "{ (CURRENT ?user :watching ?channel) . ?channel :genre ?g }", "?channel"),
}
PROGRAMS = {"event pattern under WHILE", "a pattern over several facts", "two facts joined", "WHILE with a background pattern", "UC3 (derived fact, WHILE)",
            "WHILE interval variables in SELECT", "derived fact with background and FILTER"}


def assert_like_oracle(text: str, elements, cuts, buckets: int, every: int = EVERY) -> None:
    doc, p = plan(text, buckets, every)
    got = run_local(p.compiled(doc), elements, BACKGROUND, cuts=cuts, buckets=p.buckets)
    assert got == oracle_rows(doc, elements)


def check_shape(text: str, programs: bool = False, every: int = EVERY):
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(streams(programs, every), st.lists(st.integers(1, 24), max_size=3), st.integers(1, 4))
    def run(elements, cuts, buckets):
        assert_like_oracle(text, elements, cuts, buckets, every)
    run()


HAVING_SHAPES = {
    "genre": SHAPES["genre"].replace("GROUP BY ?genre", "GROUP BY ?genre HAVING (?n > 1 || ?d = 0)"),
    "no GROUP BY: the implicit group": USER_FACT + agg(
        "?n AS N, ?s AS S", "COUNT ?user AS ?n, SUM ?r AS ?s", "{ (CURRENT ?user :watching ?channel) . ?channel :rank ?r }",
        tail="HAVING (?n < 2)"),  # an empty tick's COUNT 0 passes, a real group of 2 does not
    "UC3 (derived fact, WHILE)": SHAPES["UC3 (derived fact, WHILE)"].replace(
        "WHILE ?_", "HAVING (?n >= 2) (STR(?show) != \"http://example.org/iptv#p1\") WHILE ?_"),
    "GROUP BY an interval start, AVG, MIN": SHAPES["GROUP BY an interval start, AVG, MIN"].replace(
        "GROUP BY ?S", "GROUP BY ?S HAVING (?a > 0.01)"),
}

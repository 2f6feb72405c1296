"""The general kernels (tefq.spark.kernels.general) against the oracle, without Spark: for each
query shape of issue 27, hypothesis streams (ties, tick boundaries, rejoins, unmatched quits,
duplicates, open facts) cut into micro-batches and run over 1-4 buckets (routed as the split says,
partial rows merged) give the oracle's rows, cell for cell and in order."""
from __future__ import annotations

import os

import pytest
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
AGED_EVERY = 250  # a multiple of 125 ms: open durations are summed as ages (exact.age_limbs), not per tick
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


@pytest.mark.parametrize("shape", list(SHAPES))
def test_shape_rows_equal_the_oracle(shape):
    check_shape(SHAPES[shape], shape in PROGRAMS)


@pytest.mark.parametrize("shape", [s for s in SHAPES if "DURATION" in SHAPES[s] or "AVG" in SHAPES[s]])
def test_shape_rows_equal_the_oracle_with_open_durations_as_ages(shape):
    check_shape(SHAPES[shape], shape in PROGRAMS, AGED_EVERY)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_shape_rows_equal_the_oracle_in_small_advance_steps(shape, monkeypatch):
    """A batch's ticks advanced a few elements and ticks at a time (evaluator.tick_steps: what
    bounds one step's memory) give the same rows as one step."""
    from tefq.spark.kernels.general import evaluator

    monkeypatch.setattr(evaluator, "STEP_ELEMENTS", 3)
    monkeypatch.setattr(evaluator, "STEP_TICKS", 2)
    check_shape(SHAPES[shape], shape in PROGRAMS)


def test_worked_example_of_the_spec():
    """Spec §10 (UC1 and UC2 every 5 s), in one batch and one bucket and in three batches and four."""
    j, q, a, b = iri("join"), iri("quit"), iri("chA"), iri("chB")
    els = [(1000, iri("Alice"), j, a), (3000, iri("Bob"), j, b), (7000, iri("Cathy"), j, b),
           (8000, iri("David"), j, b), (9000, iri("Bob"), q, b), (11000, iri("Eric"), j, a),
           (12000, iri("Fiona"), j, b), (14000, iri("Alice"), q, a)]
    text = USER_FACT + agg("?channel AS C, ?n AS N, ?t AS T, ?t/?n AS A",
                           "?channel, COUNT ?user AS ?n, SUM DURATION(?S,?E) AS ?t",
                           "(CURRENT ?user :watching ?channel [?S,?E])", "?channel")
    doc, _ = plan(text, 1, 5000)
    want = oracle_rows(doc, els)
    assert [r[1][1] for r in want] == [lit(1), lit(1), lit(1), lit(2), lit(1), lit(3)]
    assert_like_oracle(text, els, [], 1, 5000)
    assert_like_oracle(text, els, [2, 5, 6], 4, 5000)


def test_planner_names_what_it_cannot_run():
    doc = document(USER_FACT + agg("?E AS E, ?n AS N", "?E, COUNT ?user AS ?n", "{ ?user :watching ?channel [?S,?E] }",
                                   "?E"))
    refusal = plan_general(doc, doc.queries[0], 4)
    assert isinstance(refusal, Refusal) and "GROUP BY an interval end" in refusal.what
    doc = document(USER_FACT + PROGRAM_FACT + agg("?p AS P, ?n AS N", "?p, COUNT ?user AS ?n",
                                                  "{ (CURRENT ?user :watching ?channel) }", "?p",
                                                  "WHILE ?channel :showing ?p"))
    assert "bound by the WHILE pattern only" in plan_general(doc, doc.queries[0], 4).what


def test_split_choice_per_shape():
    """The genre query splits by the counted user (partials merged, background whole: a user's
    facts all in one bucket, buckets balanced by users); a DISTINCT over a variable that is not
    the split one forbids merging, so a group variable splits (complete rows per bucket)."""
    _, p = plan(SHAPES["genre"], 4)
    assert p.split.var == "user" and p.split.merge and p.split.facts == (("UserFact", 0),) and p.buckets == 4
    _, p = plan(USER_FACT + agg("?channel AS C, ?d AS D", "?channel, COUNT DISTINCT ?g AS ?d",
                                "{ (CURRENT ?user :watching ?channel) . ?channel :genre ?g }", "?channel"), 4)
    assert p.split.var == "channel" and not p.split.merge and p.split.facts == (("UserFact", 1),)
    _, p = plan(SHAPES["UC3 (derived fact, WHILE)"], 4)
    assert p.split.var == "user" and p.split.merge
    assert dict(p.split.facts) == {"UserFact": 0, "ViewShipFact": 0} and "ProgramFact" in p.whole


def test_explain_names_the_operator_and_the_split():
    """`explain --physical` of the issue's first example: the general operator, no fallback, the
    split and why it is exact."""
    _, p = plan(SHAPES["genre"], 8)
    text = p.explain()
    assert "fallback" not in text and "GeneralOperator" in text
    assert "hashpartitioning(bucket = code(?user) mod 8): UserFact split by ?user" in text
    assert "current ?user :watching ?channel (UserFact) JOIN background ?channel :genre ?genre" in text
    assert "exact: each bucket reports partial aggregates" in text
    _, p = plan(SHAPES["genre"], 1)
    assert "SinglePartition" in p.explain()


# ---------------------------------------------------------------- the mapper's two inputs
def mapper_rows(plan, elements, path: str | None) -> "pd.DataFrame":
    """The general mapper's rows (bucket `only` alone when `plan` carries it as `only`): over the
    projection's rows, or over the Parquet file `path` holding `elements` (columnar ingestion)."""
    import pyarrow as pa

    from tefq.spark.runtime.mappers import make_mapper

    from tefq.spark.protocol import ELEMENT, RowKind

    plan, only = plan
    if path is None:  # the projection: terms only for the predicates that matter (OTHER rows: none)
        from test_spark_protocol import element_rows

        named = plan.relevant_predicates()
        kinds = [int(ELEMENT) if named is None or e[2] in named else int(RowKind.OTHER) for e in elements]
        batches = make_mapper(plan, None, {0: 7}, only=only)(iter([element_rows(elements, kinds)]), 0)
    else:
        flush = pa.RecordBatch.from_pydict({"path": [path], "flush": [False]})
        batches = make_mapper(plan, None, files={path: 7}, only=only)(iter([flush]), 0)
    return pa.Table.from_batches(list(batches)).to_pandas()


@pytest.mark.parametrize("shape", list(SHAPES))
@settings(max_examples=max(EXAMPLES // 3, 5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_columnar_mapper_sends_what_the_row_mapper_sends(shape, data, tmp_path_factory):
    """Columnar and direct ingestion (GeneralRows.from_file) send the projection's rows
    (GeneralRows.projected): the same elements to the same buckets, in the same order, with the
    same tie keys, first copies and OTHER rows; with `only`, that bucket's share of them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dataclasses import replace

    buckets = data.draw(st.integers(1, 4))
    doc, p = plan(SHAPES[shape], buckets)
    p = replace(p, background=tuple(BACKGROUND))
    elements = data.draw(streams(shape in PROGRAMS)) + [(5, iri("u9"), iri("other"), iri("c9"))]
    path = str(tmp_path_factory.mktemp("columnar") / "part-0.parquet")
    pq.write_table(pa.table({"ts": [e[0] for e in elements], "s": [e[1] for e in elements],
                             "p": [e[2] for e in elements], "o": [e[3] for e in elements]}), path)
    rows = mapper_rows((p, None), elements, None)
    assert mapper_rows((p, None), elements, path).equals(rows)
    from tefq.spark.protocol import RowKind

    for only in range(buckets):
        mine = rows[(rows["b"] == only) & (rows["k"] != int(RowKind.HEARTBEAT))].reset_index(drop=True)
        got = mapper_rows((p, only), elements, path)
        assert got[got["k"] != int(RowKind.HEARTBEAT)].reset_index(drop=True).equals(mine)


@pytest.mark.parametrize("shape", list(SHAPES))
@settings(max_examples=max(EXAMPLES // 6, 3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_direct_ingestion_gives_the_oracles_rows(shape, data, tmp_path_factory):
    """Direct ingestion without Spark (runtime/pipelines.reading_operator): each bucket's operator
    reads the Parquet files itself (GeneralRows.from_file, only its rows), gets them as one frame
    with categorical terms (pipelines.coded_frames) and codes each distinct term once
    (coding.code_categorical); the collector merges the buckets' rows into the oracle's."""
    from dataclasses import replace

    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from test_spark_protocol import FakeState

    from tefq.spark.operators.general import make_general_operator
    from tefq.spark.output import Collector
    from tefq.spark.runtime.pipelines import reading_operator

    buckets = data.draw(st.integers(1, 4))
    doc, p = plan(SHAPES[shape], buckets)
    p = replace(p, background=tuple(BACKGROUND))
    elements = sorted(data.draw(streams(shape in PROGRAMS)), key=lambda e: e[0])
    cut = data.draw(st.integers(0, len(elements)))
    folder = tmp_path_factory.mktemp("direct")
    paths = []
    for i, part in enumerate([elements[:cut], elements[cut:]]):
        if part:
            paths.append(str(folder / f"part-{i}.parquet"))
            pq.write_table(pa.table({"ts": [e[0] for e in part], "s": [e[1] for e in part],
                                     "p": [e[2] for e in part], "o": [e[3] for e in part]}), paths[-1])
    op = reading_operator(make_general_operator(p, 0, 0), p, None, {path: i for i, path in enumerate(paths)})
    col = Collector.of(p)
    for b in range(buckets):
        files = pd.DataFrame({"path": paths + [None], "flush": [False] * len(paths) + [True]})
        for kind, tick, payload in next(op((b,), iter([files]), FakeState())).itertuples(index=False):
            col.add(kind, tick, payload)
    assert col.results()[0].rows == oracle_rows(doc, elements)

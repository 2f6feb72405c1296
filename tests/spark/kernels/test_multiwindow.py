"""The multi-window evaluator (tefq.spark.kernels.windowed.multiwindow, run by tefq.spark.kernels.windowed.multiwindow_run)
against the windowed oracle, window by window: hypothesis-generated streams on sliding and
tumbling windows with elements on the window borders, OPTIONAL / UNION / MINUS / subqueries /
aggregates / ORDER BY + LIMIT / CONSTRUCT / feedback; every query of the one-window evaluator's
tests on the same windows with rows in the same order; CSRBench Q1-Q7, the RSP-QL examples and
the use-cases; static and adaptive join orders giving the same rows; Strider's optimizer."""
from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.analysis import load
from tefq.errors import TefqError
from tefq.oracle.windowed.runner import run
from tefq.oracle.windowed.secret import DEFAULT
from tefq.plan.logical import StreamWindow, WindowedQuery
from tefq.spark.kernels.windowed.join_order import (JoinOrders, adaptive_order, edge_weights, shape_weight,
                                                    static_order)
from tefq.spark.kernels.windowed.multiwindow import MultiWindowEvaluator
from tefq.spark.kernels.windowed.multiwindow_run import element_table, run_batched
from tefq.spark.kernels.windowed.sparql import VectorEvaluator
from tefq.spark.kernels.windowed.window_content import Part, batch
from tests.support.multiwindow_cases import EX, PRO, doc, ex, query
from tests.support.paths import CSRBENCH, ROOT
from tests.support.windowed_cases import QUERIES, WINDOW, csrbench_doc, iptv_log


def num(v, dt: str = "integer") -> str:
    return f'"{v}"^^<http://www.w3.org/2001/XMLSchema#{dt}>'


def same_results(want, got) -> None:
    """Window by window (tick by tick) the same rows, and the same counters."""
    assert got.ticks == want.ticks and got.feedback_triples == want.feedback_triples
    assert got.events_in == want.events_in
    for w, g in zip(want, got, strict=True):
        assert g.columns == w.columns
        assert g.sorted_rows() == w.sorted_rows()


# ---------------------------------------------------------------- hypothesis: batched run = oracle
WINDOWED = {
    "bgp": "SELECT ?u ?c WHERE { ?u :join ?c }",
    "count": "SELECT ?c (COUNT(?u) AS ?n) WHERE { ?u :join ?c } GROUP BY ?c",
    "count_no_group": "SELECT (COUNT(*) AS ?n) (SUM(?v) AS ?s) WHERE { ?u :rate ?v }",
    "having": "SELECT ?c (COUNT(?u) AS ?n) WHERE { ?u :join ?c } GROUP BY ?c HAVING (COUNT(?u) > 1)",
    "optional": "SELECT ?u ?c ?q WHERE { ?u :join ?c OPTIONAL { ?u :quit ?q } }",
    "union": "SELECT ?u ?c WHERE { { ?u :join ?c } UNION { ?u :quit ?c } }",
    "minus": "SELECT ?u ?c WHERE { ?u :join ?c MINUS { ?u :quit ?c } }",
    "minus_unshared": "SELECT ?u WHERE { ?u :join ?c MINUS { ?x :rate ?v } }",
    "subqueries": ("SELECT ?c ?j ?q WHERE { { SELECT DISTINCT ?c WHERE { { ?u :join ?c } UNION { ?u :quit ?c } } } "
                   "OPTIONAL { SELECT ?c (COUNT(?uj) AS ?j) WHERE { ?uj :join ?c } GROUP BY ?c } "
                   "OPTIONAL { SELECT ?c (COUNT(?uq) AS ?q) WHERE { ?uq :quit ?c } GROUP BY ?c } }"),
    "numeric": ("SELECT ?u (SUM(?v) AS ?s) (AVG(?v) AS ?a) (MIN(?v) AS ?lo) (MAX(?v) AS ?hi) "
                "WHERE { ?u :rate ?v } GROUP BY ?u"),
    "filter_bind": "SELECT ?u ?w WHERE { ?u :rate ?v FILTER(?v > 1) BIND(?v + 1 AS ?w) }",
    "order_limit": "SELECT ?u ?v WHERE { ?u :rate ?v } ORDER BY DESC(?v) ?u LIMIT 2",
    "offset": "SELECT ?u ?c WHERE { ?u :join ?c } ORDER BY ?u ?c LIMIT 2 OFFSET 1",
    "distinct": "SELECT DISTINCT ?c WHERE { ?u ?p ?c }",
    "timestamp": "SELECT ?u ?c (timestamp(?u, :join, ?c) AS ?t) WHERE { ?u :join ?c }",
    "star_chain": "SELECT ?u ?c ?v ?g WHERE { ?u :join ?c . ?u :rate ?v . ?c :genre ?g }",
    "values": "SELECT ?u ?c WHERE { VALUES ?c { :A :B } ?u :join ?c }",
    "construct": "CONSTRUCT { ?c :joined ?u } WHERE { ?u :join ?c }",
}
users, channels = st.sampled_from([ex("a"), ex("b"), ex("c")]), st.sampled_from([ex("A"), ex("B"), ex("C")])
values = st.one_of(st.integers(-2, 4).map(num), st.sampled_from([num("1.5", "double"), num("0.25", "double")]))
element = st.one_of(
    st.tuples(st.integers(0, 24).map(lambda k: k * 500), users, st.sampled_from([ex("join"), ex("quit")]), channels),
    st.tuples(st.integers(0, 24).map(lambda k: k * 500), users, st.just(ex("rate")), values),
    st.tuples(st.integers(0, 24).map(lambda k: k * 500), channels, st.just(ex("genre")),
              st.sampled_from([ex("news"), ex("sport")])))
windows = st.sampled_from([(2000, 1000), (3000, 1000), (2000, 2000), (5000, 2000), (1500, 500), (3000, 3000)])
semantics = st.sampled_from([DEFAULT, DEFAULT.with_(closed_right=True), DEFAULT.with_(partial_first=True),
                             DEFAULT.with_(non_empty=True), DEFAULT.with_(r2s="istream"),
                             DEFAULT.with_(r2s="dstream")])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(els=st.lists(element, max_size=30), name=st.sampled_from(sorted(WINDOWED)), window=windows,
       t0=st.sampled_from([0, 1000, 2500]), sem=semantics, order=st.sampled_from(["static", "adaptive"]),
       batch_rows=st.sampled_from([3, 1_000_000]))
def test_batched_run_equals_oracle(els, name: str, window, t0: int, sem, order: str, batch_rows: int) -> None:
    form = "construct" if name == "construct" else "select"
    d = doc(query(WINDOWED[name], *window, form=form))
    try:
        want = run(d, els, t0=t0, semantics=sem)
    except TefqError:  # e.g. SUM over a language-tagged string: the oracle fails the run, and so must we
        with pytest.raises(TefqError):
            run_batched(d, els, t0=t0, semantics=sem, join_order=order, batch_rows=batch_rows)
        return
    same_results(want, run_batched(d, els, t0=t0, semantics=sem, join_order=order, batch_rows=batch_rows))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(els=st.lists(element, max_size=30), window=windows, order=st.sampled_from(["static", "adaptive"]))
def test_feedback_streams_equal_oracle(els, window, order: str) -> None:
    """A registered stream read by another query and by itself (a running total)."""
    counts = query("CONSTRUCT { ?c :joinCount ?n } WHERE { { SELECT ?c (COUNT(?u) AS ?n) WHERE { ?u :join ?c } "
                   "GROUP BY ?c } }", *window, form="construct", name="JoinCounts", registers=True)
    reader = query("SELECT ?c ?n WHERE { ?c :joinCount ?n }", window[0], window[1], stream="JoinCounts")
    total = WindowedQuery("Total", True, "construct", (StreamWindow(None, *window), StreamWindow("Total", *window)),
                          (), PRO + "CONSTRUCT { :all :total ?t } WHERE { { SELECT (COUNT(?u) + COALESCE(MAX(?p), 0) "
                                    "AS ?t) WHERE { { ?u :join ?c } UNION { :all :total ?p } } } }")
    d = doc(counts, reader, total)
    same_results(run(d, els), run_batched(d, els, join_order=order))


# ---------------------------------------------------------------- the evaluator on exact windows
def _one_window_answers(text: str, els: list, instants: np.ndarray, rng: int) -> dict:
    one = VectorEvaluator(text)
    return {int(c): one.evaluate(sorted((e for e in els if c - rng <= e[0] < c), key=lambda e: e[0]))
            for c in instants}


@pytest.mark.parametrize("order", ["static", "adaptive"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_every_window_equals_the_one_window_evaluator(name: str, order: str) -> None:
    """All windows of a batch at once = each window alone, rows in the same order where order can
    matter (the one-window evaluator's own test queries, incl. ASK, CONSTRUCT and timestamp())."""
    import random

    rng = random.Random(7)
    ELEMENTS = WINDOW

    els = [(rng.randrange(0, 40),) + e[1:] for e in ELEMENTS * 3]
    text = PRO.replace(EX, "http://e.org/") + "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n" + QUERIES[name]
    instants = np.arange(5, 50, 5)
    ev = MultiWindowEvaluator(text, join_order=order)
    got = ev.evaluate(batch([Part(element_table(els), 10)], instants, 0, ev.predicates, ev.uses_timestamp))
    for c, want in _one_window_answers(text, els, instants, 10).items():
        assert got[c].names == want.names
        assert set(got[c].triples) == set(want.triples)
        if ev.order_sensitive:
            assert got[c].rows == want.rows, c
        else:
            assert collections.Counter(got[c].rows) == collections.Counter(want.rows), c


@pytest.mark.parametrize("order", ["static", "adaptive"])
def test_double_sums_add_in_rdflibs_row_order(order: str) -> None:
    """A double's sum depends on the order of its terms: whatever the join order, rows are
    summed in the order the query's own BGP order gives them, the one-window evaluator's (which
    is not always rdflib's own iteration order: with sums this order-dependent the vectorised
    evaluators and the rdflib oracle can differ in the last digits, a limit they share)."""
    values = ["0.1", "0.7", "1e16", "-1e16", "0.3", "0.0025", "1e-3", "3.3", "-0.1"]
    els = []
    for i, v in enumerate(values * 3):
        obs, sensor = ex(f"o{i}"), ex(f"s{i % 2}")
        els += [(i * 300, obs, ex("rate"), num(v, "double")), (i * 300, obs, ex("by"), sensor),
                (i * 300, sensor, ex("in"), ex("Z"))]
    q = query("SELECT ?z (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (MIN(?v) AS ?lo) WHERE { ?o :rate ?v . ?o :by ?s . "
              "?s :in ?z } GROUP BY ?z", 3000, 1000)
    got = run_batched(doc(q), els, join_order=order)
    same_results(run(doc(q), els, evaluator=VectorEvaluator), got)
    if order == "adaptive":
        assert got.join_orders[0]["order"][0] == 2  # the small `:in` pattern first: another row order


def test_an_aggregate_over_an_error_is_unbound_in_its_window_only() -> None:
    """SPARQL 1.1: SUM over a value that is not a number is an error, so the aggregate is unbound
    in that window (rdflib raised a TypeError for the whole batch; tefq.oracle.windowed.corrections)."""
    text = PRO + "SELECT ?u (SUM(?v) AS ?s) WHERE { ?u :rate ?v } GROUP BY ?u"
    els = [(100, ex("a"), ex("rate"), num(1)), (2100, ex("a"), ex("rate"), '"x"@en')]
    ev = MultiWindowEvaluator(text)
    got = ev.evaluate(batch([Part(element_table(els), 1000)], np.array([1000, 3000]), 0, ev.predicates))
    assert got[1000].rows == [(ex("a"), num(1))]
    assert got[3000].rows == [(ex("a"), None)]
    q = query(text[len(PRO):], 1000, 1000)
    same_results(run(doc(q), els), run_batched(doc(q), els))


def test_background_triples_are_in_every_window() -> None:
    bg = [(ex("A"), ex("genre"), ex("news"))]
    q = query("SELECT ?u ?g WHERE { ?u :join ?c . ?c :genre ?g }", 1000, 1000)
    els = [(100, ex("a"), ex("join"), ex("A")), (1500, ex("b"), ex("join"), ex("A")),
           (1600, ex("A"), ex("genre"), ex("news"))]
    same_results(run(doc(q), els, background=bg), run_batched(doc(q), els, background=bg))


# ---------------------------------------------------------------- whole documents
@pytest.mark.needs_shared("external/csrbench")
@pytest.mark.parametrize("n", range(1, 8))
def test_csrbench_queries_equal_oracle(n: int, tmp_path, csrbench_elements) -> None:
    d = csrbench_doc(n, tmp_path)
    want = run(d, csrbench_elements)
    assert sum(len(r.rows) for r in want) > 0
    for order in ("static", "adaptive"):
        same_results(want, run_batched(d, csrbench_elements, join_order=order))


@pytest.fixture(scope="module")
def csrbench_elements() -> list:
    from tefq.io.readers import read_stream

    return list(read_stream(str(CSRBENCH / "csrbench-dataset.trig")))


@pytest.mark.parametrize("path", ["usecases/uc1_csparql.rspql", "usecases/uc1_rspql.rspql",
                                  "examples/windowed/join-counts.rspql",
                                  "examples/rspql/busy-channels.rspql", "examples/rspql/new-viewers.rspql"])
def test_usecases_and_examples_equal_oracle(path: str) -> None:
    d = load(str(ROOT / path))
    els = iptv_log(3)
    got = run_batched(d, els, batch_rows=200)
    same_results(run(d, els, evaluator=VectorEvaluator), got)
    assert got.rounds >= 1 and got.batches >= 1


def test_not_exists_runs_vectorised_as_the_oracle() -> None:
    d = load(str(ROOT / "usecases/uc2_csparql.rspql"))  # FILTER NOT EXISTS
    same_results(run(d, iptv_log(1)), run_batched(d, iptv_log(1)))


def test_unsupported_algebra_is_a_located_error() -> None:
    with pytest.raises(TefqError, match="GRAPH is not supported") as e:
        MultiWindowEvaluator(PRO + "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }", "q.rspql", line=4)
    assert (e.value.file, e.value.line) == ("q.rspql", 4)


def test_two_streams_genre_joins_equal_oracle() -> None:
    from tefq.io.readers import read_stream

    d = load(str(ROOT / "examples/rspql/genre-joins.rspql"))
    epg = list(read_stream(str(ROOT / "examples/rspql/epg.tsv")))
    iptv = "http://example.org/iptv#"
    log = [(ts, s, p, o.replace(o[o.index("#") + 1:-1], "AB"[i % 2])) for i, (ts, s, p, o) in enumerate(iptv_log(4))
           if ts <= max(x[0] for x in epg)]
    assert {o for *_, o in log} == {f"<{iptv}A>", f"<{iptv}B>"}
    streams = {"http://example.org/iptv/log": log, "http://example.org/iptv/epg": epg}
    want = run(d, streams)
    assert sum(len(r.rows) for r in want) > 0
    same_results(want, run_batched(d, streams))


def test_self_feeding_query_goes_window_by_window() -> None:
    d = load(str(ROOT / "usecases/uc1_csparql.rspql"))
    got = run_batched(d, iptv_log(1))
    windows = got.ticks // 2  # UserJoinQuitCounts' windows: one batch; UserChannelCounts: one per round
    assert got.rounds == windows and got.batches == windows + 1


def test_closed_windows_reading_a_feed_are_refused() -> None:
    counts = query("CONSTRUCT { ?c :n ?u } WHERE { ?u :join ?c }", 1000, 1000, form="construct", name="N",
                   registers=True)
    reader = query("SELECT ?c WHERE { ?c :n ?u }", 1000, 1000, stream="N")
    with pytest.raises(TefqError, match="oracle"):
        run_batched(doc(counts, reader), [(10, ex("a"), ex("join"), ex("A"))],
                    semantics=DEFAULT.with_(closed_right=True))


# ---------------------------------------------------------------- Strider's optimizer
WN = "PREFIX sosa: <http://www.w3.org/ns/sosa/>\nPREFIX qudt: <http://qudt.org/schema/qudt/>\n" \
     "PREFIX wn: <http://example.org/water#>\n"


def _bgp(text: str) -> list:
    ev = MultiWindowEvaluator(WN + f"SELECT * WHERE {{ {text} }}")
    from tefq.spark.kernels.windowed.algebra import bgp_nodes

    (node,) = bgp_nodes(ev.algebra)
    return list(node.triples)


def test_static_order_puts_selective_shapes_and_stars_first() -> None:
    triples = _bgp("?s sosa:isHostedBy ?pipe . ?obs sosa:hasResult ?r . ?r qudt:numericValue ?v . "
                   "?obs sosa:madeBySensor ?s . ?obs a wn:ChlorineObservation")
    order = static_order(triples)
    names = [str(triples[i][1]).rsplit("/", 1)[-1].rsplit("#", 1)[-1] for i in order]
    assert shape_weight(triples[order[0]]) == 3  # (?, p, o): the bound object
    assert names[:3] == ["type", "hasResult", "madeBySensor"]  # the ?obs star before the chains
    assert sorted(order) == list(range(len(triples)))


def test_adaptive_order_follows_cardinalities() -> None:
    triples = _bgp("?obs a wn:ChlorineObservation . ?obs sosa:madeBySensor ?s . ?s sosa:isHostedBy ?pipe . "
                   "?pipe wn:inZone ?zone")
    assert adaptive_order(triples, [900, 5000, 30, 10])[:2] == [3, 2]  # the small metadata chain first
    assert adaptive_order(triples, [0, 5000, 30, 10])[0] == 0  # an empty pattern: the BGP is empty at once
    star = _bgp("?obs sosa:hasResult ?r . ?obs sosa:madeBySensor ?s")
    assert edge_weights(star, [100, 50]) == {(0, 1): 100 * 50 / 50}  # unbounded star: |a||b|/λ


def test_decision_maker_switches_on_gamma() -> None:
    triples = _bgp("?obs a wn:FlowObservation . ?obs sosa:hasResult ?r")
    orders = JoinOrders("adaptive", interval_s=10.0)
    assert orders.choose(0, triples, [10, 1]) == [1, 0]
    orders.end_batch(1.0)  # γ = 0.1 < Θ: the next batch reuses these statistics (backward)
    assert orders.choose(0, triples, [1, 10]) == [1, 0] and orders.records[-1].strategy == "backward"
    orders.end_batch(9.0)  # γ = 0.9 >= Θ: re-plan on the batch itself (forward)
    assert orders.choose(0, triples, [1, 10]) == [0, 1] and orders.records[-1].strategy == "forward"
    assert [r.gamma for r in orders.records] == [None, 0.1, 0.9]
    with pytest.raises(ValueError):
        JoinOrders("greedy")


def test_join_orders_are_recorded_per_batch() -> None:
    d = doc(query("SELECT ?u ?v WHERE { ?u :join ?c . ?u :rate ?v . ?c :genre ?g }", 2000, 1000))
    els = [(k * 100, ex("a"), ex("join"), ex("A")) for k in range(50)] + [(120, ex("a"), ex("rate"), num(1))]
    got = run_batched(d, els, batch_rows=40)
    assert got.batches > 1 and len(got.join_orders) == got.batches
    assert {r["strategy"] for r in got.join_orders} <= {"forward", "backward"}
    assert all(sorted(r["order"]) == [0, 1, 2] and len(r["cardinalities"]) == 3 for r in got.join_orders)


# ---------------------------------------------------------------- the incremental drop-in (Spark's steps)
def _drive(run, els: list, cuts: list[int]) -> list:
    """Micro-batches split at `cuts`, each followed by `advance` to the largest timestamp seen,
    then the end-of-input flush: the Spark windowed operator's calls."""
    st, reports, start = run.new_state(), [], 0
    for end in sorted(cuts) + [len(els)]:
        part = element_table(els[start:end])
        start = max(start, end)
        if len(part):
            run.add(st, part, int(part["ts"].min()), int(part["ts"].max()), len(part))
        reports += run.advance(st, st.last)
    reports += run.advance(st, None)
    return sorted((r.query, r.tick, sorted(r.rows, key=str)) for r in reports), st.ticks, st.feedback_triples


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 1000), cuts=st.lists(st.integers(0, 300), max_size=4),
       path=st.sampled_from(["usecases/uc1_csparql.rspql", "examples/rspql/busy-channels.rspql",
                             "examples/rspql/new-viewers.rspql"]))
def test_incremental_batched_run_equals_incremental_run(seed: int, cuts: list[int], path: str) -> None:
    from tefq.spark.kernels.windowed.multiwindow_incremental import IncrementalBatchedRun
    from tefq.spark.kernels.windowed.windowed import IncrementalRun

    d = load(str(ROOT / path))
    els = iptv_log(seed)
    assert _drive(IncrementalBatchedRun(d, batch_rows=100), els, cuts) == _drive(IncrementalRun(d), els, cuts)

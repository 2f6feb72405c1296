"""Simulated-fact baselines (spec §7): hand-computed counters, and rows equal to the oracle's."""
from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.errors import TefqError
from tefq.oracle import run as oracle_run
from tefq.simulate import STRATEGIES, run, run_native
from tests.support.simulate_docs import iri, programme_stream, spec10_elements, uc1, uc2, uc3, with_every

XSD = "http://www.w3.org/2001/XMLSchema#"


def n(v: str, dt: str = "integer") -> str:
    return f'"{v}"^^<{XSD}{dt}>'


# ---------------------------------------------------------------- spec §10, by hand
@pytest.mark.parametrize("strategy, expected", [("refresh", 9), ("refresh-group", 6), ("sequence", 8)])
@pytest.mark.parametrize("doc", [uc1(), uc2()], ids=["uc1", "uc2"])
def test_spec10_counters(doc, strategy, expected):
    r = run(doc, spec10_elements(), strategy, 5000)
    assert r.metrics.intermediate_bindings == expected
    assert (r.metrics.facts_created, r.metrics.facts_closed, r.metrics.ticks) == (6, 2, 3)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_spec10_uc1_rows(strategy):
    rows = run(uc1(), spec10_elements(), strategy, None).results[0].rows
    a, b = iri("A"), iri("B")
    assert rows == [(5000, (a, n("1"))), (5000, (b, n("1"))), (10000, (a, n("1"))), (10000, (b, n("2"))),
                    (15000, (a, n("1"))), (15000, (b, n("3")))]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_spec10_uc2_rows(strategy):
    rows = run(uc2(), spec10_elements(), strategy, None).results[0].rows
    a, b = iri("A"), iri("B")
    d = lambda v: n(v, "double")  # noqa: E731
    assert rows == [(5000, (a, n("1"), d("4"))), (5000, (b, n("1"), d("2"))),
                    (10000, (a, n("1"), d("9"))), (10000, (b, n("2"), d("2.5"))),
                    (15000, (a, n("1"), d("4"))), (15000, (b, n("3"), d("6")))]


def test_window_replaces_every():
    # a 10 s window over §10: ticks 10 s and 20 s (the last at or after the last event, 14 s)
    r = run(uc1(), spec10_elements(), "refresh", 10_000)
    assert sorted({t for t, _ in r.results[0].rows}) == [10_000, 20_000]
    # valid at 10 s: Alice, Cathy, David; at 20 s: Cathy, David, Eric, Fiona
    assert r.metrics.intermediate_bindings == 3 + 4
    assert run(uc1(), spec10_elements(), "refresh-group", 10_000).metrics.intermediate_bindings == 2 + 2
    assert run(uc1(), spec10_elements(), "sequence", 10_000).metrics.intermediate_bindings == 8


def test_empty_windows_still_refresh():
    # one join at 1 s, one event at 21 s: the windows (5,10], (10,15], (15,20] carry Alice anyway
    els = [(1000, iri("Alice"), iri("join"), iri("A")), (21000, iri("Bob"), iri("join"), iri("B"))]
    assert run(uc1(), els, "refresh", 5000).metrics.intermediate_bindings == 1 + 1 + 1 + 1 + 2
    assert run(uc1(), els, "sequence", 5000).metrics.intermediate_bindings == 2


def test_sequence_counts_quit_and_rejoin_at_the_same_instant():
    els = [(1000, iri("Al"), iri("join"), iri("A")), (3000, iri("Al"), iri("quit"), iri("A")),
           (3000, iri("Al"), iri("join"), iri("A")), (4000, iri("Al"), iri("quit"), iri("B")),
           (4000, iri("Al"), iri("join"), iri("A"))]
    r = run(uc2(), els, "sequence", 5000)
    # join, quit, rejoin change the status; the unmatched quit and the repeated join do not
    assert r.metrics.intermediate_bindings == 3
    assert (r.metrics.facts_created, r.metrics.facts_closed, r.metrics.unmatched_until) == (1, 0, 1)
    # the rejoin coalesced: the session still counts from 1 s
    assert r.results[0].rows == [(5000, (iri("A"), n("1"), n("4", "double")))]


def test_refresh_group_packs_per_group():
    els = [(1000, iri(f"u{i}"), iri("join"), iri("A")) for i in range(5)] + [(2000, iri("v"), iri("join"), iri("B"))]
    # ticks 5, 10 (last event at 2 s, so a single tick): 2 groups, 6 facts
    r1 = run(uc1(), els, "refresh-group", 5000)
    r2 = run(uc1(), els, "refresh", 5000)
    assert (r1.metrics.intermediate_bindings, r2.metrics.intermediate_bindings) == (2, 6)


def test_uc3_counts_and_rows_on_the_programme_example():
    els = programme_stream()
    native = oracle_run(uc3(), els)
    for strategy in STRATEGIES:
        r = run(uc3(), els, strategy, None)
        assert r.results[0].rows == native.results[0].rows, strategy
    # sequence: every status change of the three facts, derived attends-facts included
    assert run(uc3(), els, "sequence", None).metrics.intermediate_bindings == 15 + 10


def test_bad_strategy_and_window():
    with pytest.raises(TefqError, match="unknown simulation"):
        run(uc1(), spec10_elements(), "replay", None)
    with pytest.raises(TefqError, match="positive"):
        run(uc1(), spec10_elements(), "refresh", 0)


def test_empty_stream():
    r = run(uc1(), [], "refresh", 5000)
    assert r.results[0].rows == [] and r.metrics.ticks == 0 and r.metrics.intermediate_bindings == 0


# ---------------------------------------------------------------- differential: simulated == oracle
USERS = [iri(f"u{i}") for i in range(4)]
CHANNELS = [iri(f"c{i}") for i in range(3)]

event = st.tuples(st.integers(0, 40), st.sampled_from(USERS), st.sampled_from(["join", "quit"]),
                  st.sampled_from(CHANNELS))


def _to_elements(evs, unit: int) -> list[tuple[int, str, str, str]]:
    return [(t * unit, u, iri(p), c) for t, u, p, c in evs]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(event, max_size=25), st.sampled_from([1000, 2000, 5000]), st.integers(-3, 3),
       st.sampled_from([uc1, uc2]))
def test_simulations_equal_the_oracle(evs, w, t0, make):
    els = _to_elements(evs, 500)  # 500 ms steps: many events on window boundaries and ties
    doc = with_every(make(), w)
    native = oracle_run(doc, els, t0=t0 * 500)
    for strategy in STRATEGIES:
        sim = run(make(), els, strategy, w, t0=t0 * 500)
        assert sim.results[0].rows == native.results[0].rows, strategy
        assert (sim.metrics.facts_created, sim.metrics.facts_closed, sim.metrics.unmatched_until) == (
            native.metrics.facts_created, native.metrics.facts_closed, native.metrics.unmatched_until)
        assert sim.metrics.ticks == native.metrics.ticks
    assert run_native(make(), els, w, t0=t0 * 500).results[0].rows == native.results[0].rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(event, max_size=25), st.sampled_from([1000, 3000]))
def test_refresh_counter_is_the_spec_formula(evs, w):
    """Per-fact refresh == sum over ticks of the facts valid at the tick (from the oracle's facts)."""
    els = _to_elements(evs, 500)
    sim = run(uc1(), els, "refresh", w)
    intervals = _oracle_intervals(els)
    ticks = sorted({t for t, _ in oracle_run(with_every(uc1(), w), els).results[0].rows} |
                   set(_all_ticks(els, w)))
    expected = sum(1 for tau in ticks for s, e in intervals if s <= tau < e)
    assert sim.metrics.intermediate_bindings == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(event, st.tuples(st.integers(0, 40), st.sampled_from(CHANNELS[:2]),
                                           st.sampled_from(["start", "finish"]),
                                           st.sampled_from([iri("p0"), iri("p1")]))), max_size=25),
       st.sampled_from([1000, 2500]))
def test_uc3_simulations_equal_the_oracle(evs, w):
    els = _to_elements(evs, 500)
    native = oracle_run(with_every(uc3(), w), els)
    for strategy in STRATEGIES:
        sim = run(uc3(), els, strategy, w)
        assert sim.results[0].rows == native.results[0].rows, strategy
        assert sim.metrics.facts_created == native.metrics.facts_created


# ---------------------------------------------------------------- helpers
def _oracle_intervals(els):
    from tefq.oracle.facts import TripleIndex, build_store
    from tefq.oracle import prepare

    store = build_store(uc1(), prepare(els), TripleIndex())
    return [iv for ivs in store.tables["UserFact"].intervals.values() for iv in ivs]


def _all_ticks(els, w):
    if not els:
        return []
    ts = [e[0] for e in els]
    k0, k1 = -(-min(ts) // w), -(-max(ts) // w)
    return [k * w for k in range(k0, k1 + 1)]


def _genre_doc(every_ms: int):
    """Viewers per genre: a background join in the WHERE (the generic path, not the fast one) and
    a SINCE clause filtered through the background (only channels with a genre open facts)."""
    from tefq.plan.logical import (Aggregate, AggregateQuery, Clause, Document, EventFact, Pattern, Projection,
                                   Var, WherePattern)
    from tests.support.simulate_docs import NS, t

    user, channel, genre, g0 = Var("user"), Var("channel"), Var("genre"), Var("g0")
    fact = EventFact("UserFact", Pattern(user, t("watching"), channel), (user, channel),
                     (Clause(Pattern(user, t("join"), channel), (Pattern(channel, t("genre"), g0),)),),
                     (Clause(Pattern(user, t("quit"), channel)),))
    q = AggregateQuery("q1", (Projection(genre, "Genre"), Projection(Var("n"), "Viewers")), (genre,),
                       (Aggregate("COUNT", user, True, "n"),),
                       (WherePattern("current", Pattern(user, t("watching"), channel), ("UserFact",)),
                        WherePattern("background", Pattern(channel, t("genre"), genre))), (), None, every_ms)
    return Document("genre.tef", None, (("", NS),), (fact,), (q,))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(event, max_size=20), st.sampled_from([1000, 2500]))
def test_background_joins_equal_the_oracle(evs, w):
    import rdflib

    g = rdflib.Graph()
    ns = "http://example.org/iptv#"
    for ch, genre in (("c0", "news"), ("c1", "sport"), ("c2", "news")):
        if ch != "c2":  # c2 has no genre: joins to it open no fact
            g.add((rdflib.URIRef(ns + ch), rdflib.URIRef(ns + "genre"), rdflib.URIRef(ns + genre)))
    els = _to_elements(evs, 500)
    native = oracle_run(_genre_doc(w), els, g)
    for strategy in STRATEGIES:
        sim = run(_genre_doc(w), els, strategy, None, background=g)
        assert sim.results[0].rows == native.results[0].rows, strategy
        assert sim.metrics.unmatched_until == native.metrics.unmatched_until

"""Property tests: the oracle against a brute-force, millisecond-by-millisecond reading of the spec
on tiny generated streams (ties, events on tick boundaries, rejoins, unmatched quits, derived facts,
WHILE), plus invariants of the fact store."""
from __future__ import annotations

import math
import random
from collections import defaultdict

from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.oracle import prepare, run
from tefq.oracle.facts import TripleIndex, build_store
from tefq.semantics.values import datetime_term, to_term  # noqa: F401  (cells are compared as terms)
from tests.support.oracle_docs import PROGRAM_FACT, USER_FACT, VIEWSHIP_FACT, document, iri, uc1, uc2, uc3

INF = math.inf
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

USERS = ["u0", "u1", "u2"]
CHANNELS = ["A", "B"]
PROGS = ["p0", "p1"]

log_event = st.tuples(st.integers(0, 40), st.sampled_from(USERS), st.sampled_from(["join", "quit"]),
                      st.sampled_from(CHANNELS))
epg_event = st.tuples(st.integers(0, 40), st.sampled_from(CHANNELS), st.sampled_from(["start", "finish"]),
                      st.sampled_from(PROGS))
period = st.integers(1, 12)


def elements(raw) -> list[tuple[int, str, str, str]]:
    return sorted([(t, iri(s), iri(p), iri(o)) for t, s, p, o in raw], key=lambda e: e[0])


# ---------------------------------------------------------------- brute force
def states(events, since: str, until: str):
    """identity -> list of open/closed after each ms 0..last, applying events one by one; and the
    number of unmatched UNTILs."""
    last = events[-1][0]
    state: dict[tuple, bool] = {}
    timeline: dict[tuple, list[bool]] = {}
    unmatched = 0
    by_ms = defaultdict(list)
    for e in events:
        by_ms[e[0]].append(e)
    for ident in {(s, o) for _, s, p, o in events if p in (iri(since), iri(until))}:
        timeline[ident] = []
    for m in range(last + 1):
        for _, s, p, o in by_ms.get(m, ()):
            if p == iri(since):
                state[(s, o)] = True
            elif p == iri(until):
                if not state.get((s, o)):
                    unmatched += 1
                state[(s, o)] = False
        for ident in timeline:
            timeline[ident].append(state.get(ident, False))
    return timeline, unmatched


def runs(line: list[bool]) -> list[tuple[int, float]]:
    """Maximal runs of open ms as intervals; a run reaching the last ms stays open."""
    out, start = [], None
    for m, on in enumerate(line + [False]):
        if on and start is None:
            start = m
        if not on and start is not None:
            out.append((start, INF if m == len(line) else m))
            start = None
    return out


def ticks(events, d: int, t0: int) -> list[int]:
    first = t0 + -((t0 - events[0][0]) // d) * d
    last = t0 + -((t0 - events[-1][0]) // d) * d
    return list(range(first, last + 1, d))


def open_at(line: list[bool], tau: int) -> bool:
    return line[min(tau, len(line) - 1)] if tau >= 0 else False


def brute_uc1_uc2(events, d: int, t0: int):
    timeline, _ = states(events, "join", "quit")
    r1, r2 = [], []
    for tau in ticks(events, d, t0):
        groups = defaultdict(list)
        for (u, ch), line in timeline.items():
            if open_at(line, tau):
                start = min(m for m in range(0, min(tau, len(line) - 1) + 1) if not any(
                    not line[x] for x in range(m, min(tau, len(line) - 1) + 1)))
                groups[ch].append((tau - start) / 1000.0)
        for ch in sorted(groups):
            secs = groups[ch]
            r1.append((tau, (ch, to_term(len(secs)))))
            total = math.fsum(secs)
            r2.append((tau, (ch, to_term(len(secs)), to_term(total / len(secs)))))
    return r1, r2


def brute_uc3(events, d: int, t0: int):
    watch, _ = states(events, "join", "quit")
    show, _ = states(events, "start", "finish")
    last = events[-1][0]
    attends: dict[tuple, list[bool]] = defaultdict(lambda: [False] * (last + 1))
    for (u, ch), wl in watch.items():
        for (ch2, p), sl in show.items():
            if ch2 == ch:
                line = attends[(u, p)]
                for m in range(last + 1):
                    line[m] = line[m] or (wl[m] and sl[m])
    attend_facts = {k: runs(v) for k, v in attends.items()}
    out = []
    for tau in ticks(events, d, t0):
        rows = []
        for p in sorted({p for _, p in show}):
            scope = set()
            for (ch, p2), sl in show.items():
                if p2 != p:
                    continue
                for ws, we in runs(sl):
                    if ws <= tau < we or tau - d < we <= tau:
                        scope |= {m for m in range(ws, int(min(we, tau + 1)))}
            users, secs = set(), []
            for (u, p2), facts in attend_facts.items():
                if p2 != p:
                    continue
                for s, e in facts:
                    if s <= tau and any(s <= m < e for m in scope):
                        users.add(u)
                        secs.append((min(e, tau) - s) / 1000.0)
            if secs:
                total = math.fsum(secs)
                rows.append((p, to_term(len(users)), to_term(total / len(users))))
        out.extend((tau, r) for r in sorted(rows))
    return out


def cells(result) -> list:
    return [(t, tuple(c)) for t, c in result.rows]


# ---------------------------------------------------------------- properties
@SETTINGS
@given(st.lists(log_event, min_size=1, max_size=25), period, st.integers(0, 11))
def test_uc1_uc2_match_brute_force(raw, d, t0) -> None:
    events = elements(raw)
    out = run(document(uc1(d), uc2(d)), events, t0=t0 % d)
    b1, b2 = brute_uc1_uc2(prepare(events), d, t0 % d)
    assert cells(out.results[0]) == b1
    assert cells(out.results[1]) == b2


@SETTINGS
@given(st.lists(log_event, min_size=1, max_size=25))
def test_fact_metrics_match_brute_force(raw) -> None:
    events = prepare(elements(raw))
    timeline, unmatched = states(events, "join", "quit")
    facts = [iv for line in timeline.values() for iv in runs(line)]
    m = run(document(uc1(5)), events).metrics
    assert m.facts_created == len(facts)
    assert m.facts_closed == sum(1 for _, e in facts if e != INF)
    assert m.unmatched_until == unmatched
    assert m.intermediate_bindings == m.facts_created
    assert m.facts_created <= sum(1 for e in events if e[2] == iri("join"))


@SETTINGS
@given(st.lists(log_event, min_size=1, max_size=25), period)
def test_store_invariants(raw, d) -> None:
    events = prepare(elements(raw))
    table = build_store(document(), events, TripleIndex()).tables["UserFact"]
    opened_closed = []
    for ivs in table.intervals.values():
        assert ivs, "an identity without intervals"
        for (s1, e1), (s2, e2) in zip(ivs, ivs[1:]):
            assert e1 < s2  # disjoint and not touching: maximal
        assert all(s < e for s, e in ivs)
        opened_closed.extend(ivs)
    out = run(document(uc1(d)), events)
    counts = defaultdict(int)
    for tau, (ch, n) in out.results[0].rows:
        counts[tau] += int(n.split('"')[1])
    ticks_seen = [t for t, _ in out.results[0].rows]
    assert ticks_seen == sorted(ticks_seen)
    for tau in ticks(events, d, 0):
        opened = sum(1 for s, _ in opened_closed if s <= tau)
        closed = sum(1 for _, e in opened_closed if e <= tau)
        assert counts.get(tau, 0) == opened - closed


@SETTINGS
@given(st.lists(log_event, min_size=1, max_size=25), period, st.randoms(use_true_random=False))
def test_contemporaneous_events_of_different_identities_commute(raw, d, rnd: random.Random) -> None:
    events = elements(raw)
    keys = {(u, ch): rnd.random() for _, u, _, ch in events}
    shuffled = sorted(events, key=lambda e: (e[0], keys[(e[1], e[3])]))  # same identity keeps its order
    doc = document(uc1(d), uc2(d))
    a, b = run(doc, events), run(doc, shuffled)
    assert [cells(r) for r in a.results] == [cells(r) for r in b.results]
    assert a.metrics.to_json() | {"wall_seconds": 0} == b.metrics.to_json() | {"wall_seconds": 0}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(log_event, min_size=1, max_size=14), st.lists(epg_event, min_size=1, max_size=8), period,
       st.integers(0, 11))
def test_uc3_derived_facts_and_while_match_brute_force(log, epg, d, t0) -> None:
    events = elements(log + epg)
    doc = document(uc3(d), facts=(USER_FACT, PROGRAM_FACT, VIEWSHIP_FACT))
    out = run(doc, events, t0=t0 % d)
    assert cells(out.results[0]) == brute_uc3(prepare(events), d, t0 % d)


@settings(max_examples=60, deadline=None)
@given(st.lists(log_event, min_size=1, max_size=14), st.lists(epg_event, min_size=1, max_size=8))
def test_derived_intervals_match_per_ms_conjunction(log, epg) -> None:
    events = prepare(elements(log + epg))
    store = build_store(document(facts=(USER_FACT, PROGRAM_FACT, VIEWSHIP_FACT)), events, TripleIndex())
    watch, _ = states(events, "join", "quit")
    show, _ = states(events, "start", "finish")
    last = events[-1][0]
    expected = {}
    for (u, ch), wl in watch.items():
        for (ch2, p), sl in show.items():
            if ch2 == ch:
                line = expected.setdefault((u, p), [False] * (last + 1))
                for m in range(last + 1):
                    line[m] = line[m] or (wl[m] and sl[m])
    expected_ivs = {k: runs(v) for k, v in expected.items() if any(v)}
    assert store.tables["ViewShipFact"].intervals == expected_ivs


def _period_query(d: int):
    from tests.support.oracle_docs import CHANNEL, USER, c
    from tefq.plan.logical import Aggregate, AggregateQuery, Call, Pattern, Projection, Var, WherePattern

    s, e = Var("S"), Var("E")
    return AggregateQuery(
        "p", (Projection(CHANNEL, "ch"), Projection(Var("n"), "n"), Projection(Var("secs"), "secs")), (CHANNEL,),
        (Aggregate("COUNT", USER, False, "n"), Aggregate("SUM", Call("DURATION", (s, e)), False, "secs")),
        (WherePattern("fact", Pattern(USER, c("watching"), CHANNEL), ("UserFact",), (s, e)),), (), None, d)


def _event_query(d: int):
    from tests.support.oracle_docs import CHANNEL, USER, c
    from tefq.plan.logical import Aggregate, AggregateQuery, Pattern, Projection, Var, WherePattern

    return AggregateQuery(
        "e", (Projection(CHANNEL, "ch"), Projection(Var("n"), "n")), (CHANNEL,),
        (Aggregate("COUNT", USER, False, "n"),),
        (WherePattern("event", Pattern(USER, c("quit"), CHANNEL)),), (), None, d)


@SETTINGS
@given(st.lists(log_event, min_size=1, max_size=25), period, st.integers(0, 11))
def test_fact_and_event_patterns_in_the_period_match_brute_force(raw, d, t0) -> None:
    events = prepare(elements(raw))
    t0 %= d
    out = run(document(_period_query(d), _event_query(d)), events, t0=t0)
    timeline, _ = states(events, "join", "quit")
    facts = [(ch, iv) for (u, ch), line in timeline.items() for iv in runs(line)]
    p_rows, e_rows = [], []
    for tau in ticks(events, d, t0):
        per = defaultdict(list)
        for ch, (s, e) in facts:  # true at some instant of (tau - d, tau], as seen at tau
            if s <= tau and e > tau - d:
                per[ch].append((min(e, tau) - s) / 1000.0)
        p_rows += [(tau, (ch, to_term(len(v)), to_term(math.fsum(v)))) for ch, v in sorted(per.items(), key=lambda kv: kv[0][1:-1])]
        quits = defaultdict(int)
        for t, _, p, ch in events:
            if p == iri("quit") and tau - d < t <= tau:
                quits[ch] += 1
        e_rows += [(tau, (ch, to_term(n))) for ch, n in sorted(quits.items())]
    assert cells(out.results[0]) == p_rows
    assert cells(out.results[1]) == e_rows


def test_synthetic_day_uc1_uc2_agree_with_the_fact_store() -> None:
    """A medium stream (a day, 3000 events): UC1 counts and UC2 sums recomputed per tick from the
    store's intervals."""
    from tests.support.oracle_docs import synthetic_iptv

    events = synthetic_iptv(3000, users=300, channels=12, seed=7)
    d = 600_000
    out = run(document(uc1(d), uc2(d)), events)
    table = build_store(document(), prepare(events), TripleIndex()).tables["UserFact"]
    facts = [(ident[1], iv) for ident, ivs in table.intervals.items() for iv in ivs]
    exp1, exp2 = [], []
    for tau in ticks(prepare(events), d, 0):
        per = defaultdict(list)
        for ch, (s, e) in facts:
            if s <= tau < e:
                per[ch].append((tau - s) / 1000.0)
        exp1 += [(tau, (ch, to_term(len(v)))) for ch, v in sorted(per.items(), key=lambda kv: kv[0][1:-1])]
        exp2 += [(tau, (ch, to_term(len(v)), to_term(math.fsum(v) / len(v)))) for ch, v in sorted(per.items(), key=lambda kv: kv[0][1:-1])]
    assert cells(out.results[0]) == exp1
    assert cells(out.results[1]) == exp2
    assert out.metrics.facts_created == len(facts) > 1000

"""Allen's interval relations (spec §11): parsing, bind errors, explain, and the oracle against a
brute-force reading of the spec's table over generated closed and open facts (hypothesis)."""
from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.analysis import bind_text
from tefq.errors import TefqError
from tefq.oracle import run
from tefq.plan.allen import RELATIONS, TOLERANCES
from tefq.plan.explain import explain
from tefq.semantics.allen import holds
from tests.support.allen_cases import DOC, SPEC_TABLE, event, iri

INF = math.inf


# ---------------------------------------------------------------- the table of §11, as printed


interval = st.tuples(st.integers(0, 50), st.integers(1, 30)).map(lambda p: (p[0], p[0] + p[1]))


@given(interval, interval)
@settings(max_examples=300, deadline=None)
def test_exactly_one_relation_holds_without_tolerance(a, b):
    """Allen's relations without tolerances partition the pairs of non-empty intervals."""
    held = [r for r in RELATIONS if holds(r, (a[0], a[1], b[0], b[1]))]
    assert len(held) == 1, (a, b, held)


@given(st.sampled_from(RELATIONS), interval, interval, st.integers(0, 15), st.integers(0, 15))
@settings(max_examples=300, deadline=None)
def test_relation_is_the_spec_table(rel, a, b, x, y):
    for count in TOLERANCES[rel]:
        tol = (min(x, y), max(x, y))[:count] if count == 2 else (x,) * count
        assert holds(rel, (a[0], a[1], b[0], b[1]), tol) == SPEC_TABLE[rel](a[0], a[1], b[0], b[1], tol)


# ---------------------------------------------------------------- queries over facts


def brute_intervals(events: list[tuple[int, str, str, str]], on: str, off: str) -> dict[tuple, list[tuple]]:
    """Maximal intervals per identity from a millisecond-by-millisecond timeline: the fact holds
    during ms m iff it is open after m's events are applied in stream order."""
    last = max(t for t, *_ in events)
    idents = {(s, o) for _, s, p, o in events if p in (on, off)}
    out: dict[tuple, list[tuple]] = {}
    for ident in idents:
        state, timeline = False, []
        for m in range(last + 1):
            for t, s, p, o in events:
                if t == m and (s, o) == ident and p in (on, off):
                    state = p == on
            timeline.append(state)
        ivs, start = [], None
        for m, held in enumerate(timeline):
            if held and start is None:
                start = m
            if not held and start is not None:
                ivs.append((start, m))
                start = None
        if start is not None:
            ivs.append((start, INF))
        if ivs:
            out[ident] = ivs
    return out


def brute_rows(events, rel: str, tols: tuple[int, ...], d: int) -> Counter:
    """(tick, x, y, z) -> matching pairs, reading spec §4.2 (fact patterns overlap the period,
    an open end is tau) and the table of §11."""
    events = list(dict.fromkeys(events))  # spec §1: the same triple at the same t is one element
    a = brute_intervals(events, iri("aon"), iri("aoff"))
    b = brute_intervals(events, iri("bon"), iri("boff"))
    first, last = events[0][0], events[-1][0]
    out: Counter = Counter()
    for tau in range(-(-first // d) * d, -(-last // d) * d + 1, d):
        def seen(ivs):
            return [(s, e if e <= tau else tau) for s, e in ivs if s <= tau and e > tau - d]
        for (x, y), aivs in a.items():
            for (x2, z), bivs in b.items():
                if x2 != x:
                    continue
                for a_s, a_e in seen(aivs):
                    for b_s, b_e in seen(bivs):
                        if SPEC_TABLE[rel](a_s, a_e, b_s, b_e, tols):
                            out[(tau, x, y, z)] += 1
    return out


@pytest.mark.parametrize("rel, count", [(r, c) for r in RELATIONS for c in TOLERANCES[r]])
@given(st.lists(event, min_size=1, max_size=14), st.lists(st.integers(0, 20), min_size=2, max_size=2),
       st.sampled_from([5, 10, 20]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_oracle_is_the_spec_table_on_closed_and_open_facts(rel, count, raw, bounds, d):
    """Each relation, with and without its tolerances, over facts that close and facts still open
    at the tick (their end is the tick)."""
    tols = tuple(sorted(bounds))[:count] if count == 2 else tuple(bounds[:count])
    events = sorted([(t, iri(s), iri(p), iri(("p" if p.startswith("b") else "") + o)) for t, s, p, o in raw],
                    key=lambda e: e[0])
    tol_text = "".join(f', "PT{t / 1000}S"^^xsd:duration' for t in tols)
    doc = bind_text(DOC.format(rel=rel, tols=tol_text, d=d), "<test>")
    got = Counter()
    for tick, (x, y, z, n) in run(doc, events).results[0].rows:
        got[(tick, x, y, z)] = int(n.split('"')[1])
    assert got == brute_rows(events, rel, tols, d)


# ---------------------------------------------------------------- language
HEAD = """PREFIX : <http://example.org/t#>
CONSTRUCT FACT AFact {?x :a ?y .} (UNION (SINCE ?x :aon ?y) (UNTIL ?x :aoff ?y))
SELECT ?n AS N (AGGREGATE COUNT(*) AS ?n WHERE { ?x :a ?y [?S,?E] . ?x :a ?w [?S2,?E2] FILTER(%s) } EVERY "PT5S")
"""


@pytest.mark.parametrize("call, message, at", [
    ('BEFORE(?S, ?E, ?S2, ?E2, "-PT1M"^^xsd:duration, "PT1M")', "negative tolerance '-PT1M' in BEFORE", '"-PT1M"'),
    ('MEETS(?S, ?E, ?S2, ?E2, -"PT1S"^^xsd:duration)', "negative tolerance '-PT1S' in MEETS", '-"PT1S"'),
    ('DURING(?S, ?E, ?S2, ?E2, "PT1S")', "DURING takes DURING(?S1, ?E1, ?S2, ?E2), not 5 arguments", "DURING"),
    ('BEFORE(?S, ?E, ?S2, ?E2, "PT1S")', "BEFORE takes BEFORE(?S1, ?E1, ?S2, ?E2) or BEFORE(?S1, ?E1, ?S2, ?E2, min, max)", "BEFORE"),
    ('EQUALS(?S, ?E)', "EQUALS takes", "EQUALS"),
    ('AFTER(?S, ?E, ?S2, ?E2, "PT2S", "PT1S")', "the minimum gap exceeds the maximum", '"PT2S"'),
    ('STARTS(?S, ?E, ?S2, ?E2, 5)', "a tolerance of STARTS is a constant xsd:duration", "5"),
    ('FINISHES(?S, ?E, ?S2, "x")', "FINISHES compares xsd:dateTime values", '"x"'),
    ('MEETS(?S, ?E, ?S2, ?E2, "PT1Y")', "bad duration", '"PT1Y"'),
])
def test_bind_errors_are_located(call, message, at):
    """Each error points at the offending argument (or the call): line 3, its column."""
    line = (HEAD % call).splitlines()[2]
    with pytest.raises(TefqError) as e:
        bind_text(HEAD % call, "q.tef")
    assert message in e.value.message
    assert (e.value.line, e.value.column) == (3, line.index(call) + call.index(at) + 1)


def test_string_contains_is_still_the_string_function():
    doc = bind_text(HEAD % 'CONTAINS(STR(?y), "c")', "q.tef")
    assert doc.queries[0].filters[0].op == "CONTAINS"


def test_relations_are_case_insensitive_and_explained():
    doc = bind_text(HEAD % 'before(?S, ?E, ?S2, ?E2, "PT0S"^^xsd:duration, "PT1M"^^xsd:duration) '
                           '|| Contains(?S, ?E, ?S2, ?E2) || metBy(?S, ?E, ?S2, ?E2, "PT0.5S")', "q.tef")
    text = explain(doc)
    assert "Allen BEFORE([?S, ?E), [?S2, ?E2), min 0ms, max 1m)" in text
    assert "Allen CONTAINS([?S, ?E), [?S2, ?E2))" in text
    assert "Allen METBY([?S, ?E), [?S2, ?E2), tol 500ms)" in text


def test_a_relation_over_a_non_datetime_rejects_the_solution():
    """Spec §11: arguments that are not xsd:dateTime make the function an error (FILTER false)."""
    doc = bind_text(HEAD % "BEFORE(?y, ?y, ?S2, ?E2) || !BOUND(?S)", "q.tef")
    events = [(0, iri("u"), iri("aon"), iri("c"))]
    assert [r[1] for r in run(doc, events).results[0].rows] == [('"0"^^<http://www.w3.org/2001/XMLSchema#integer>',)]


def test_spec_example_whole_show_viewers():
    """Spec §11's example: per programme, the viewers who tuned in before it began and were still
    watching when it ended."""
    text = """PREFIX : <http://example.org/t#>
CONSTRUCT FACT UserFact {?user :watching ?channel .} (UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))
CONSTRUCT FACT ProgramFact {?channel :showing ?program .} (UNION (SINCE ?channel :start ?program) (UNTIL ?channel :finish ?program))
SELECT ?program AS Program, ?n AS Viewers
(AGGREGATE ?program, COUNT DISTINCT ?user AS ?n
 WHERE { (?user :watching ?channel [?S,?E]) . (?channel :showing ?program [?PS,?PE])
         FILTER(CONTAINS(?S, ?E, ?PS, ?PE)) }
 GROUP BY ?program EVERY "PT10S")
"""
    ev = [(0, "alice", "join", "A"), (1000, "A", "start", "news"), (2000, "bob", "join", "A"),
          (5000, "A", "finish", "news"), (6000, "bob", "quit", "A"), (9000, "alice", "quit", "A")]
    events = [(t, iri(s), iri(p), iri(o)) for t, s, p, o in ev]
    rows = run(bind_text(text, "q.tef"), events).results[0].rows
    assert rows == [(10000, (iri("news"), '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'))]

"""The oracle on hand-checked cases: the spec's worked example (§10), fact life cycles, WHILE,
expressions and result cells."""
from __future__ import annotations

from decimal import Decimal

import pytest

from tefq.oracle import prepare, run
from tefq.oracle.facts import TripleIndex, build_store
from tefq.plan.logical import (Aggregate, AggregateQuery, Call, Clause, EventFact, Pattern, Projection, Term, Var,
                               WherePattern)
from tefq.semantics.expressions import EvalError, aggregate, evaluate
from tefq.semantics.values import DateTime, IRI, to_term, to_value
from tefq.terms import XSD
from tests.support.oracle_docs import (CHANNEL, NS, SPEC_10_EVENTS, USER, USER_FACT, c, document, ev, integer, iri,
                                       uc1, uc2, uc3_doc, uc_doc)

DOUBLE = XSD + "double"


def dbl(lex: str) -> str:
    return f'"{lex}"^^<{DOUBLE}>'


def rows(result) -> list:
    return [(t, tuple(cells)) for t, cells in result.rows]


# ---------------------------------------------------------------- spec §10
def test_spec_10_table_and_metrics() -> None:
    out = run(uc_doc(5000), SPEC_10_EVENTS)
    uc1_rows, uc2_rows = (rows(r) for r in out.results)
    A, B = iri("A"), iri("B")
    assert uc1_rows == [
        (5000, (A, integer(1))), (5000, (B, integer(1))),
        (10000, (A, integer(1))), (10000, (B, integer(2))),
        (15000, (A, integer(1))), (15000, (B, integer(3)))]
    assert uc2_rows == [
        (5000, (A, integer(1), dbl("4"))), (5000, (B, integer(1), dbl("2"))),
        (10000, (A, integer(1), dbl("9"))), (10000, (B, integer(2), dbl("2.5"))),
        (15000, (A, integer(1), dbl("4"))), (15000, (B, integer(3), dbl("6")))]
    m = out.metrics
    assert (m.events_in, m.facts_created, m.facts_closed, m.unmatched_until, m.late_events) == (8, 6, 2, 0, 0)
    assert m.intermediate_bindings == 6
    assert m.ticks == 6  # 3 ticks for each of the two queries
    assert m.rows_out == 12
    assert [r.name for r in out.results] == ["uc1", "uc2"]


def test_rows_are_in_spec_order() -> None:
    out = run(uc_doc(5000), SPEC_10_EVENTS)
    for r in out.results:
        assert r.rows == r.sorted_rows()


# ---------------------------------------------------------------- fact life cycles
def _store(events, facts=(USER_FACT,)):
    return build_store(document(facts=facts), prepare(events), TripleIndex())


def _intervals(events):
    return _store(events).tables["UserFact"].intervals


def test_rejoin_at_the_same_ms_coalesces() -> None:
    events = [ev(1, "u", "join", "A"), ev(5, "u", "quit", "A"), ev(5, "u", "join", "A")]
    assert _intervals(events) == {(iri("u"), iri("A")): [(1000, float("inf"))]}
    out = run(document(uc2(10_000)), events)
    assert rows(out.results[0]) == [(10000, (iri("A"), integer(1), dbl("9")))]
    assert (out.metrics.facts_created, out.metrics.facts_closed) == (1, 0)


def test_join_then_quit_at_the_same_ms_is_no_fact() -> None:
    events = [ev(1, "u", "join", "A"), ev(1, "u", "quit", "A"), ev(3, "v", "join", "A")]
    out = run(document(uc1(5000)), events)
    assert _intervals(events) == {(iri("v"), iri("A")): [(3000, float("inf"))]}
    assert (out.metrics.facts_created, out.metrics.facts_closed, out.metrics.unmatched_until) == (1, 0, 0)
    assert rows(out.results[0]) == [(5000, (iri("A"), integer(1)))]


def test_unmatched_quits_are_counted_and_change_nothing() -> None:
    events = [ev(1, "u", "quit", "A"), ev(2, "u", "join", "A"), ev(3, "u", "quit", "A"), ev(4, "u", "quit", "A")]
    out = run(document(uc1(5000)), events)
    assert out.metrics.unmatched_until == 2
    assert _intervals(events) == {(iri("u"), iri("A")): [(2000, 3000)]}
    assert rows(out.results[0]) == []  # nobody is watching at 5 s: no group, no row


def test_second_join_keeps_the_original_start() -> None:
    events = [ev(1, "u", "join", "A"), ev(3, "u", "join", "A")]
    assert _intervals(events) == {(iri("u"), iri("A")): [(1000, float("inf"))]}


def test_duplicate_element_is_one_element() -> None:
    events = [ev(1, "u", "join", "A"), ev(1, "u", "join", "A"), ev(2, "u", "quit", "A")]
    assert run(document(uc1(5000)), events).metrics.events_in == 2


def test_lone_since_never_closes() -> None:
    fact = EventFact("Seen", Pattern(USER, c("seen"), CHANNEL), (USER, CHANNEL),
                     since=(Clause(Pattern(USER, c("join"), CHANNEL)),), until=())
    events = [ev(1, "u", "join", "A"), ev(2, "u", "quit", "A")]
    assert _store(events, (fact,)).tables["Seen"].intervals == {(iri("u"), iri("A")): [(1000, float("inf"))]}


def test_clause_with_background_and_filter() -> None:
    import rdflib

    g = rdflib.Graph()
    g.add((rdflib.URIRef(NS + "A"), rdflib.URIRef(NS + "genre"), rdflib.Literal("news")))
    g.add((rdflib.URIRef(NS + "B"), rdflib.URIRef(NS + "genre"), rdflib.Literal("sport")))
    genre = Var("genre")
    fact = EventFact(
        "NewsFact", Pattern(USER, c("watching"), CHANNEL), (USER, CHANNEL),
        since=(Clause(Pattern(USER, c("join"), CHANNEL), (Pattern(CHANNEL, c("genre"), genre),),
                      (Call("=", (genre, Term('"news"'))),)),),
        until=(Clause(Pattern(USER, c("quit"), CHANNEL)),))
    doc = document(uc1(5000), facts=(fact,))
    doc = type(doc)(doc.source, doc.base, doc.prefixes, doc.facts,
                    (AggregateQuery("q1", uc1().select, (CHANNEL,), uc1().aggregates,
                                    (WherePattern("current", Pattern(USER, c("watching"), CHANNEL), ("NewsFact",)),),
                                    (), None, 5000),))
    events = [ev(1, "u", "join", "A"), ev(2, "v", "join", "B"), ev(3, "v", "quit", "B")]
    out = run(doc, events, g)
    assert rows(out.results[0]) == [(5000, (iri("A"), integer(1)))]
    assert out.metrics.unmatched_until == 1  # v's quit: v never watched news


# ---------------------------------------------------------------- ticks
@pytest.mark.parametrize("t0, first, last", [(0, 5000, 15000), (2000, 2000, 17000), (-1000, 4000, 14000)])
def test_ticks_cover_first_and_last_event(t0: int, first: int, last: int) -> None:
    out = run(document(uc1(5000)), SPEC_10_EVENTS, t0=t0)
    ticks = sorted({t for t, _ in out.results[0].rows})
    assert ticks[0] == first and ticks[-1] == last
    assert out.metrics.ticks == (last - first) // 5000 + 1


def test_event_exactly_on_a_tick_is_in_that_tick() -> None:
    events = [ev(5, "u", "join", "A"), ev(10, "u", "quit", "A")]
    out = run(document(uc1(5000)), events)
    assert rows(out.results[0]) == [(5000, (iri("A"), integer(1)))]  # closed at 10 s: not current at 10 s


# ---------------------------------------------------------------- patterns without CURRENT, events, WHILE
def _q(where, aggregates, select, every=5000, group_by=(CHANNEL,), filters=(), while_=None):
    return AggregateQuery("q", select, group_by, aggregates, where, filters, while_, every)


def test_fact_pattern_matches_facts_overlapping_the_period() -> None:
    s, e = Var("S"), Var("E")
    q = _q((WherePattern("fact", Pattern(USER, c("watching"), CHANNEL), ("UserFact",), (s, e)),),
           (Aggregate("COUNT", USER, False, "n"), Aggregate("SUM", Call("DURATION", (s, e)), False, "secs")),
           (Projection(CHANNEL, "ch"), Projection(Var("n"), "n"), Projection(Var("secs"), "secs")))
    events = [ev(1, "u", "join", "A"), ev(6, "u", "quit", "A"), ev(7, "v", "join", "A"), ev(12, "v", "quit", "A")]
    out = run(document(q), events)
    A = iri("A")
    # (0,5]: u open 4 s; (5,10]: u [1,6) 5 s and v [7,10) 3 s; (10,15]: v [7,12) 5 s
    assert rows(out.results[0]) == [(5000, (A, integer(1), dbl("4"))), (10000, (A, integer(2), dbl("8"))),
                                    (15000, (A, integer(1), dbl("5")))]


def test_event_pattern_counts_events_in_the_period() -> None:
    q = _q((WherePattern("event", Pattern(USER, c("join"), CHANNEL)),),
           (Aggregate("COUNT", USER, False, "user"),), (Projection(CHANNEL, "ch"), Projection(USER, "joins")))
    out = run(document(q), SPEC_10_EVENTS)
    A, B = iri("A"), iri("B")
    assert rows(out.results[0]) == [(5000, (A, integer(1))), (5000, (B, integer(1))), (10000, (B, integer(2))),
                                    (15000, (A, integer(1))), (15000, (B, integer(1)))]


def test_uc3_while_scope() -> None:
    events = [ev(0, "ch1", "start", "p1"), ev(2, "u", "join", "ch1"), ev(4, "v", "join", "ch1"),
              ev(6, "u", "quit", "ch1"), ev(8, "u", "join", "ch1"), ev(12, "ch1", "finish", "p1"),
              ev(12, "ch1", "start", "p2"), ev(20, "v", "quit", "ch1")]
    out = run(uc3_doc(5000), events)
    p1, p2 = iri("p1"), iri("p2")
    # p1 on air [0,12): at 5 u [2,5) 3 s + v [4,5) 1 s; at 10 u [2,6) 4 + [8,10) 2, v [4,10) 6;
    # at 15 (p1 ended in (10,15]) u 4 + [8,12) 4, v [4,12) 8; p2 from 12: u, v 3 s each; at 20 8 s each.
    assert rows(out.results[0]) == [
        (5000, (p1, integer(2), dbl("2"))), (10000, (p1, integer(2), dbl("6"))),
        (15000, (p1, integer(2), dbl("8"))), (15000, (p2, integer(2), dbl("3"))),
        (20000, (p2, integer(2), dbl("8")))]


def test_no_group_by_reports_one_row_per_tick() -> None:
    q = _q((WherePattern("current", Pattern(USER, c("watching"), CHANNEL), ("UserFact",)),),
           (Aggregate("COUNT", USER, False, "user"), Aggregate("AVG", Term(integer(1)), False, "avg")),
           (Projection(USER, "n"), Projection(Var("avg"), "avg")), group_by=())
    events = [ev(1, "u", "join", "A"), ev(2, "u", "quit", "A"), ev(12, "v", "join", "A")]
    assert rows(run(document(q), events).results[0]) == [
        (5000, (integer(0), None)), (10000, (integer(0), None)), (15000, (integer(1), f'"1"^^<{XSD}decimal>'))]


def test_filter_on_end_variable_is_evaluated_per_tick() -> None:
    s, e = Var("S"), Var("E")
    long = Call(">=", (Call("DURATION", (s, e)), Term(f'"6"^^<{XSD}integer>')))
    q = _q((WherePattern("current", Pattern(USER, c("watching"), CHANNEL), ("UserFact",), (s, e)),),
           (Aggregate("COUNT", USER, False, "user"),), (Projection(CHANNEL, "ch"), Projection(USER, "n")),
           filters=(long,))
    out = run(document(q), [ev(1, "u", "join", "A"), ev(6, "v", "join", "A"), ev(14, "w", "join", "A")])
    A = iri("A")
    assert rows(out.results[0]) == [(10000, (A, integer(1))), (15000, (A, integer(2)))]


def test_division_by_zero_leaves_the_cell_unbound() -> None:
    q = _q((WherePattern("current", Pattern(USER, c("watching"), CHANNEL), ("UserFact",)),),
           (Aggregate("COUNT", USER, False, "user"),),
           (Projection(CHANNEL, "ch"), Projection(Call("/", (USER, Term(integer(0)))), "bad")))
    assert rows(run(document(q), [ev(1, "u", "join", "A")]).results[0]) == [(5000, (iri("A"), None))]


# ---------------------------------------------------------------- values and expressions
@pytest.mark.parametrize("value, term", [
    (5, f'"5"^^<{XSD}integer>'), (Decimal("2.50"), f'"2.5"^^<{XSD}decimal>'),
    (Decimal("18.0"), f'"18"^^<{XSD}decimal>'), (18.0, f'"18"^^<{XSD}double>'), (2.5, f'"2.5"^^<{XSD}double>'),
    (1e-7, f'"0.0000001"^^<{XSD}double>'), (1e20, f'"100000000000000000000"^^<{XSD}double>'),
    (0.1 + 0.2, f'"0.30000000000000004"^^<{XSD}double>'), (-0.0, f'"0"^^<{XSD}double>'),
    (float("inf"), f'"INF"^^<{XSD}double>'), (True, f'"true"^^<{XSD}boolean>'), ("x\"y", '"x\\"y"'),
    (DateTime(1500), f'"1970-01-01T00:00:01.5Z"^^<{XSD}dateTime>'),
    (DateTime(0), f'"1970-01-01T00:00:00Z"^^<{XSD}dateTime>'), (IRI("http://x/"), "<http://x/>"),
])
def test_canonical_cells(value, term) -> None:
    assert to_term(value) == term


@pytest.mark.parametrize("term", [f'"5"^^<{XSD}integer>', f'"2.5"^^<{XSD}double>', '"plain"', '"chat"@fr',
                                  "<http://x/>", f'"1970-01-01T00:00:01.5Z"^^<{XSD}dateTime>'])
def test_canonical_terms_round_trip(term) -> None:
    assert to_term(to_value(term)) == term


def test_datetime_zones_and_fractions() -> None:
    assert to_value(f'"1970-01-01T01:00:00.1234+01:00"^^<{XSD}dateTime>') == DateTime(123)
    assert to_value(f'"1970-01-01T00:00:02"^^<{XSD}dateTime>') == DateTime(2000)  # no zone: UTC


def _ev(op: str, *args):
    return evaluate(Call(op, tuple(Term(a) if isinstance(a, str) else a for a in args)), {})


def test_numeric_promotion() -> None:
    one, two = integer(1), integer(2)
    assert _ev("/", one, two) == Decimal("0.5")
    assert _ev("+", one, two) == 3 and isinstance(_ev("+", one, two), int)
    assert _ev("*", f'"1.5"^^<{XSD}decimal>', two) == Decimal("3.0")
    assert isinstance(_ev("+", f'"1.5"^^<{XSD}double>', one), float)
    with pytest.raises(EvalError):
        _ev("/", one, integer(0))
    with pytest.raises(EvalError):
        _ev("+", one, '"a"')


def test_builtins() -> None:
    assert _ev("STRLEN", '"abc"') == 3
    assert _ev("UCASE", '"abc"') == "ABC"
    assert _ev("CONCAT", '"a"', '"b"') == "ab"
    assert _ev("CONTAINS", '"abc"', '"b"') is True
    assert _ev("REGEX", '"Abc"', '"^a"', '"i"') is True
    assert _ev("ROUND", f'"2.5"^^<{XSD}decimal>') == Decimal(3)
    assert _ev("STR", "<http://x/>") == "http://x/"
    assert _ev("YEAR", f'"2024-03-01T10:00:00Z"^^<{XSD}dateTime>') == 2024
    assert _ev("SECONDS", f'"2024-03-01T10:00:01.5Z"^^<{XSD}dateTime>') == Decimal("1.5")
    assert _ev(f"<{XSD}integer>", '"42"') == 42
    assert _ev("IF", f'"true"^^<{XSD}boolean>', '"y"', '"n"') == "y"
    assert _ev("COALESCE", Var("nope"), '"z"') == "z"
    assert evaluate(Call("BOUND", (Var("x"),)), {"x": "<http://x/>"}) is True
    assert _ev("||", f'"true"^^<{XSD}boolean>', Var("unbound")) is True
    with pytest.raises(EvalError):
        _ev("&&", f'"true"^^<{XSD}boolean>', Var("unbound"))


def test_aggregates_skip_errors_and_avg_of_nothing() -> None:
    assert aggregate("AVG", [], False) is None
    assert aggregate("SUM", [], False) == 0
    assert aggregate("COUNT", [IRI("a"), IRI("a"), IRI("b")], True) == 2
    assert aggregate("COUNT", [1, 1.0, Decimal(1)], True) == 3  # distinct terms
    assert aggregate("SUM", [1, Decimal("0.5"), 0.25], False) == 1.75
    assert aggregate("AVG", [1, 2], False) == Decimal("1.5")
    assert aggregate("MIN", [3, 2.5, 7], False) == 2.5
    assert aggregate("MAX", ["a", "b"], False) == "b"
    assert aggregate("SUM", [0.1] * 10, False) == 1.0  # exactly rounded: the same in any order


def test_sum_and_avg_skip_non_numbers() -> None:
    assert aggregate("SUM", [1, "x", IRI("a"), 2], False) == 3
    assert aggregate("AVG", ["x"], False) is None


def test_grouping_by_an_end_variable_regroups_every_tick() -> None:
    from tefq.semantics.values import datetime_term

    s, e = Var("S"), Var("E")
    q = _q((WherePattern("fact", Pattern(USER, c("watching"), CHANNEL), ("UserFact",), (s, e)),),
           (Aggregate("COUNT", USER, False, "user"),), (Projection(e, "end"), Projection(USER, "n")), group_by=(e,))
    events = [ev(1, "u", "join", "A"), ev(2, "v", "join", "A"), ev(3, "v", "quit", "A"), ev(7, "w", "join", "B")]
    assert rows(run(document(q), events).results[0]) == [
        (5000, (datetime_term(3000), integer(1))), (5000, (datetime_term(5000), integer(1))),
        (10000, (datetime_term(10000), integer(2)))]


def test_compiled_duration_agrees_with_evaluate() -> None:
    from tefq.semantics.expressions import compile_expr

    expr = Call("DURATION", (Var("a"), Var("b")))
    env = {"a": f'"1970-01-01T00:00:01Z"^^<{XSD}dateTime>', "b": DateTime(3500)}
    assert compile_expr(expr)(env) == evaluate(expr, env) == 2.5
    for bad in ({"a": env["a"]}, {"a": env["a"], "b": '"x"'}):
        with pytest.raises(EvalError):
            compile_expr(expr)(bad)
        with pytest.raises(EvalError):
            evaluate(expr, bad)


def test_nan_values_do_not_break_row_maintenance() -> None:
    nan = f'"NaN"^^<{DOUBLE}>'
    v = Var("v")
    fact = EventFact("F", Pattern(USER, c("rating"), v), (USER, v),
                     since=(Clause(Pattern(USER, c("rates"), v)),), until=(Clause(Pattern(USER, c("unrates"), v)),))
    q = _q((WherePattern("current", Pattern(USER, c("rating"), v), ("F",)),),
           (Aggregate("SUM", v, False, "v"),), (Projection(USER, "u"), Projection(v, "sum")), group_by=(USER,))
    events = [(1000, iri("a"), iri("rates"), nan), (2000, iri("b"), iri("rates"), f'"1"^^<{DOUBLE}>'),
              (6000, iri("a"), iri("unrates"), nan), (7000, iri("c"), iri("rates"), nan)]
    out = rows(run(document(q, facts=(fact,)), events).results[0])
    assert [(t, u) for t, (u, _) in out] == [(5000, iri("a")), (5000, iri("b")), (10000, iri("b")), (10000, iri("c"))]

"""The vectorised SPARQL evaluator (tefq.spark.kernels.windowed.multiwindow: every window of a batch
in one pass, what Spark runs) against the windowed oracle (rdflib, corrected) on generated
streams: property paths, FILTER (NOT) EXISTS, OPTIONAL / UNION / MINUS, aggregates over empty
groups and unbound values, ASK and CONSTRUCT. Queries go through the front end as a user writes
them; per window the rows must be the oracle's (in order under ORDER BY). No Spark."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tefq.analysis import bind_text
from tefq.oracle.windowed.runner import run
from tefq.spark.kernels.windowed.multiwindow_run import run_batched

E = "http://example.org/"
PREFIXES = f"PREFIX : <{E}>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
QUERIES = {
    "sequence": "SELECT ?u ?g WHERE { ?u :join/:genre ?g }",
    "closure": "SELECT ?x ?y WHERE { ?x (:join|^:quit)+ ?y }",
    "star_from_a_constant": "SELECT ?y WHERE { :a (:join/^:join)* ?y }",
    "optional_inverse": "SELECT ?c ?u WHERE { ?c ^:join? ?u }",
    "negated": "SELECT ?u ?c WHERE { ?u !(:join|^:genre) ?c }",
    "path_count": "SELECT ?x (COUNT(?y) AS ?n) WHERE { ?x :join* ?y } GROUP BY ?x",
    "not_exists": "SELECT ?u ?c WHERE { ?u :join ?c FILTER NOT EXISTS { ?u :quit ?c } }",
    "exists_outer_value": "SELECT ?u ?v WHERE { ?u :rate ?v FILTER EXISTS { ?w :rate ?x FILTER(?x > ?v) } }",
    "exists_in_bind": "SELECT ?u (EXISTS { ?u :quit ?c } AS ?left) WHERE { ?u :join ?c }",
    "optional_union_minus": ("SELECT ?u ?c ?v WHERE { { ?u :join ?c } UNION { ?u :quit ?c } "
                             "OPTIONAL { ?u :rate ?v } MINUS { ?c :genre :sport } }"),
    "unbound_aggregates": ("SELECT ?c (COUNT(?q) AS ?n) (SUM(?v) AS ?s) (AVG(?v) AS ?a) (MAX(?v) AS ?m) "
                           "WHERE { ?u :join ?c OPTIONAL { ?u :quit ?q } OPTIONAL { ?u :rate ?v } } GROUP BY ?c"),
    "unbound_group_key": "SELECT ?q (COUNT(*) AS ?n) WHERE { ?u :join ?c OPTIONAL { ?u :quit ?q } } GROUP BY ?q",
    "empty_groups": "SELECT ?g (COUNT(*) AS ?n) WHERE { ?c :genre ?g FILTER(?g = :none) } GROUP BY ?g",
    "implicit_group": "SELECT (COUNT(?v) AS ?n) (SUM(?v) AS ?s) (MIN(?v) AS ?m) WHERE { ?u :rate ?v }",
    "all_unbound": "SELECT ?q WHERE { OPTIONAL { ?u :missing ?q } }",
    "ordered": "SELECT ?u ?v WHERE { ?u :rate ?v OPTIONAL { ?u :join ?c } } ORDER BY DESC(?v) ?u ?c LIMIT 3",
    "types": "SELECT ?u (?v * 2 AS ?d) (xsd:integer(?v) AS ?i) (STR(?v) AS ?s) WHERE { ?u :rate ?v }",
    "ask": "ASK WHERE { ?u :join ?c FILTER NOT EXISTS { ?c :genre ?g } }",
    "construct": "CONSTRUCT { ?c :seenBy [ :user ?u ] } WHERE { ?u :join/:genre* ?c }",
}


def shape(rows) -> list:
    """Rows with every blank node the same: what is left of a CONSTRUCT's answer up to renaming."""
    return sorted((t, tuple("_:" if c and c.startswith("_:") else c for c in cells)) for t, cells in rows)


def ex(x: str) -> str:
    return f"<{E}{x}>"


def document(name: str, rng: str, step: str):
    body = QUERIES[name]
    head, _, rest = body.partition(" WHERE ")
    text = f"{PREFIXES}REGISTER QUERY q AS\n{head} FROM STREAM <{E}s> [RANGE {rng} STEP {step}] WHERE {rest}\n"
    return bind_text(text, "props.rspql")


users = st.sampled_from([ex("a"), ex("b"), ex("c")])
channels = st.sampled_from([ex("A"), ex("B"), ex("a")])  # :a is a user and a channel: paths cross
values = st.one_of(st.integers(-2, 4).map(lambda v: f'"{v}"^^<http://www.w3.org/2001/XMLSchema#integer>'),
                   st.sampled_from(['"1.5"^^<http://www.w3.org/2001/XMLSchema#double>',
                                    '"0.50"^^<http://www.w3.org/2001/XMLSchema#decimal>', '"x"@en']))
times = st.integers(0, 12).map(lambda k: k * 500)
element = st.one_of(
    st.tuples(times, users, st.sampled_from([ex("join"), ex("quit")]), channels),
    st.tuples(times, users, st.just(ex("rate")), values),
    st.tuples(times, channels, st.just(ex("genre")), st.sampled_from([ex("news"), ex("sport"), ex("A")])))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(els=st.lists(element, max_size=25), name=st.sampled_from(sorted(QUERIES)),
       window=st.sampled_from([("1s", "1s"), ("2s", "1s"), ("3s", "500ms")]))
def test_the_vectorised_evaluator_answers_as_the_oracle(els, name: str, window) -> None:
    d = document(name, *window)
    want, got = run(d, els), run_batched(d, els)
    assert got.ticks == want.ticks
    for w, g in zip(want, got, strict=True):
        assert g.columns == w.columns
        if name == "construct":  # a template's blank nodes are new in each engine: compare the shape
            assert shape(g.rows) == shape(w.rows)
        else:
            assert g.sorted_rows() == w.sorted_rows()


def test_fresh_values_are_made_per_solution() -> None:
    """BNODE() and RAND() give a new value per solution, BNODE(str) one node per string and
    solution, the same twice within one (bnode01): on every window, vectorised as in the oracle."""
    text = (f"{PREFIXES}REGISTER QUERY q AS\nSELECT ?u ?c (BNODE() AS ?f) (BNODE(STR(?c)) AS ?b)"
            f" (BNODE(STR(?c)) AS ?b2) (RAND() AS ?r) FROM STREAM <{E}s> [RANGE 2s STEP 1s] WHERE {{ ?u :join ?c }}\n")
    d = bind_text(text, "fresh.rspql")
    joins = [("a", "A"), ("b", "A"), ("c", "B"), ("a", "B")]  # two windows: the vectorised path
    els = [(k * 600, ex(u), ex("join"), ex(c)) for k, (u, c) in enumerate(joins)]
    want, got = run(d, els), run_batched(d, els)
    for answer in (want[0], got[0]):
        for _, cells in answer.rows:
            assert cells[3] == cells[4]  # one string, one solution: one node
        per_window: dict[int, list] = {}
        for t, cells in answer.rows:
            per_window.setdefault(t, []).append(cells)
        for rows in per_window.values():
            assert len({c[2] for c in rows}) == len({c[3] for c in rows}) == len({c[5] for c in rows}) == len(rows)
    assert [(t, c[:2]) for t, c in sorted(got[0].rows)] == [(t, c[:2]) for t, c in sorted(want[0].rows)]

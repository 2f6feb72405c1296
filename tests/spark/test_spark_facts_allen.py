"""Allen's relations on Spark (spec §11): the general plan's vectorised column expressions
(tefq.spark.kernels.general.expressions) equal the oracle's evaluator row by row, with and without
tolerances, and a query comparing two facts (closed and open at the tick) gives the oracle's rows
on real Spark."""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from tefq.analysis import bind_text
from tefq.io.stream_writers import write_stream
from tefq.plan.allen import RELATIONS, TOLERANCES, allen_call
from tefq.plan.logical import Var
from tefq.spark.kernels.general.coding import TermDictionary
from tefq.spark.kernels.general.expressions import Env, evaluate, per_distinct
from tests.support.allen_cases import DOC, SPEC_TABLE, event, iri  # the oracle tests' query and events
from tests.support.spark import oracle, run_spark

TIMES = ("S1", "E1", "S2", "E2")
REL_TOLS = [(r, c) for r in RELATIONS for c in TOLERANCES[r]]


def tolerances(count: int, x: int, y: int) -> tuple[int, ...]:
    return (min(x, y), max(x, y)) if count == 2 else (x,) * count


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(REL_TOLS), st.lists(st.tuples(*[st.integers(0, 40)] * 4), min_size=1, max_size=30),
       st.integers(0, 12), st.integers(0, 12), st.sampled_from(["none", "unbound", "not a time"]))
def test_vectorised_relations_equal_the_oracle_evaluator(rel_tols, rows, x, y, missing):
    """Row by row, as the oracle's evaluator (the per-distinct tier runs it) gives them; a column
    that is unbound or holds no dateTimes makes every row an error, as there."""
    rel, count = rel_tols
    cols = np.array(rows, np.int64).reshape(len(rows), 4)
    times = {v: cols[:, i].copy() for i, v in enumerate(TIMES)}
    terms: dict[str, np.ndarray] = {}
    dictionary = TermDictionary()
    if missing == "unbound":
        del times["E2"]
    elif missing == "not a time":  # an xsd:integer column
        del times["E2"]
        terms["E2"] = cols[:, 3] + 1000  # codes naming integer literals
        dictionary.add_mapping({int(c): f'"{int(c)}"^^<http://www.w3.org/2001/XMLSchema#integer>'
                                for c in set(terms["E2"].tolist())})
    expr = allen_call(rel, tuple(Var(v) for v in TIMES), tolerances(count, x, y))
    env = Env(len(rows), terms, times, dictionary)
    got = evaluate(expr, env)
    assert got.kind == "bool" and got.inputs is None  # the vectorised tier ran
    want = per_distinct(expr, Env(len(rows), terms, times, dictionary))
    assert got.ok.tolist() == want.ok.tolist()
    assert (got.data & got.ok).tolist() == [bool(v) and ok for v, ok in zip(want.as_objects().data.tolist(),
                                                                           want.ok.tolist())]


@pytest.mark.spark
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.sampled_from(REL_TOLS), st.lists(event, min_size=1, max_size=14),
       st.lists(st.integers(0, 20), min_size=2, max_size=2), st.sampled_from([5, 10]))
def test_spark_equals_the_oracle(spark, tmp_path_factory, rel_tols, raw, bounds, d):  # noqa: F811
    """Two facts compared per solution on Spark (the general plan), closed and open ones."""
    rel, count = rel_tols
    tols = tolerances(count, *bounds)
    events = sorted([(t, iri(s), iri(p), iri(("p" if p.startswith("b") else "") + o)) for t, s, p, o in raw],
                    key=lambda e: e[0])
    tol_text = "".join(f', "PT{t / 1000}S"^^xsd:duration' for t in tols)
    doc = bind_text(DOC.format(rel=rel, tols=tol_text, d=d), "<test>")
    path = str(tmp_path_factory.mktemp("allen") / "events.tsv")
    write_stream(events, path)
    got = run_spark(spark, doc, [path]).results[0].rows
    assert got == oracle(doc, events).results[0].rows


BODY_DOC = """PREFIX : <http://example.org/>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
CONSTRUCT FACT W {{?u :watching ?c .}} (UNION (SINCE ?u :join ?c) (UNTIL ?u :quit ?c))
CONSTRUCT FACT V {{?u :watchesOpen ?c .}}
{{ ?u :watching ?c . ?c :opens ?o . ?c :closes ?x . FILTER({rel}(?o, ?o, ?x, ?x{tols})) }}
SELECT ?c AS C, ?n AS N
(AGGREGATE ?c, COUNT ?u AS ?n WHERE (CURRENT ?u :watchesOpen ?c) GROUP BY ?c EVERY "PT5S"^^xsd:duration)
"""


@pytest.mark.spark
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.sampled_from(REL_TOLS), st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=3, max_size=3),
       st.lists(st.tuples(st.integers(0, 20_000), st.sampled_from("jq"), st.integers(0, 3), st.integers(0, 2)),
                min_size=1, max_size=12))
@example(("BEFORE", 0), [(0, 3), (3, 1), (1, 1)], [(100, "j", 1, 0), (200, "j", 2, 1), (6000, "q", 1, 0)])
def test_relation_in_a_fact_body(spark, tmp_path_factory, rel_tols, hours, raw):  # noqa: F811
    """Spec §11: a relation in a derived fact's FILTER over dateTimes the body binds (from the
    background): a channel's viewers count only where the relation holds for its (open, close)
    instants, as §11's table says (brute force), and Spark = oracle."""
    import rdflib

    rel, count = rel_tols
    tols = tolerances(count, 1, 2)  # hours
    ex, xsd = "http://example.org/", "http://www.w3.org/2001/XMLSchema#"
    graph = rdflib.Graph()
    for c, (o, x) in enumerate(hours):
        for p, h in (("opens", o), ("closes", x)):
            graph.add((rdflib.URIRef(f"{ex}c{c}"), rdflib.URIRef(ex + p),
                       rdflib.Literal(f"2024-01-01T0{h}:00:00Z", datatype=rdflib.URIRef(xsd + "dateTime"))))
    events = sorted([(t, f"<{ex}u{u}>", f"<{ex}{'join' if k == 'j' else 'quit'}>", f"<{ex}c{c}>")
                     for t, k, u, c in raw], key=lambda e: e[0])
    tol_text = "".join(f', "PT{t}H"^^xsd:duration' for t in tols)
    doc = bind_text(BODY_DOC.format(rel=rel, tols=tol_text), "<test>")
    path = str(tmp_path_factory.mktemp("allen-body") / "events.tsv")
    write_stream(events, path)
    want = oracle(doc, events, graph).results[0].rows
    hour = 3_600_000
    holding = {f"<{ex}c{c}>" for c, (o, x) in enumerate(hours)
               if SPEC_TABLE[rel](o * hour, o * hour, x * hour, x * hour, tuple(t * hour for t in tols))}
    unfiltered = bind_text(BODY_DOC.format(rel=rel, tols=tol_text).replace(f"FILTER({rel}(?o, ?o, ?x, ?x{tol_text}))", ""),
                           "<test>")
    assert want == [r for r in oracle(unfiltered, events, graph).results[0].rows if r[1][0] in holding]
    if rel == "BEFORE" and hours[:2] == [(0, 3), (3, 1)]:  # the explicit example: c0 counts, c1 does not
        assert {r[1][0] for r in want} == {f"<{ex}c0>"}
    assert run_spark(spark, doc, [path], background=graph).results[0].rows == want

"""The vectorised SPARQL evaluator (tefq.spark.kernels.windowed.sparql) against rdflib (the windowed oracle's R2R)
window by window: every algebra construct on fixed windows, then hypothesis-generated windows, then
whole windowed runs (UC1 in C-SPARQL with feedback, CSRBench Q1-Q7) through the oracle's `run()`."""
from __future__ import annotations

import collections

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.errors import TefqError
from tefq.oracle.windowed.r2r import Evaluator
from tefq.spark.kernels.windowed.sparql import VectorEvaluator
from tests.support.paths import CSRBENCH, ROOT
from tests.support.windowed_cases import E, QUERIES, WINDOW, XSD, csrbench_doc, iptv_log, iri, num

PREFIX = f"PREFIX : <{E}>\nPREFIX xsd: <{XSD}>\n"


def bag(rows) -> collections.Counter:
    return collections.Counter(rows)


def both(query: str, content) -> tuple:
    text = PREFIX + query
    return Evaluator(text).evaluate(content), VectorEvaluator(text).evaluate(content)


@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("window", ["full", "empty", "half"])
def test_construct_equals_rdflib(name: str, window: str) -> None:
    content = {"full": WINDOW, "empty": [], "half": WINDOW[::2]}[window]
    want, got = both(QUERIES[name], content)
    assert got.names == want.names
    assert bag(got.rows) == bag(want.rows)
    assert set(got.triples) == set(want.triples)


def test_vectorised_paths_are_taken() -> None:
    """The common expressions do not go through rdflib's row-by-row evaluation."""
    from tefq.spark.kernels.windowed.expressions import Expressions

    calls = []
    original = Expressions.rowwise
    Expressions.rowwise = lambda self, *a: calls.append(a) or original(self, *a)  # type: ignore[method-assign]
    try:
        window = [e for e in WINDOW if "decimal" not in e[3] and "double" not in e[3]]  # rdflib's arithmetic
        for name in ("filter_numeric", "optional_filter", "count_star", "optional_subquery"):
            want, got = both(QUERIES[name], window)
            assert bag(got.rows) == bag(want.rows)
    finally:
        Expressions.rowwise = original  # type: ignore[method-assign]
    assert calls == [], [(getattr(c[0], "name", c[0]), c[1].columns.tolist()) for c in calls]


def test_group_concat_and_sample_on_single_values() -> None:
    q = ('SELECT ?s (GROUP_CONCAT(STR(?o); separator="|") AS ?g) (SAMPLE(?o) AS ?x) WHERE { ?s :q ?o } GROUP BY ?s')
    want, got = both(q, WINDOW)
    assert bag(got.rows) == bag(want.rows) and len(got.rows) == 2


def test_paths_and_exists_are_evaluated_as_the_oracle() -> None:
    for q in ("SELECT ?s ?o WHERE { ?s (:p/:q)|^:p ?o }", "SELECT ?s ?o WHERE { ?s :p* ?o }",
              "SELECT ?s ?o WHERE { ?s :p ?o FILTER NOT EXISTS { ?o :q ?s } }",
              "SELECT ?s WHERE { ?s :p ?o FILTER EXISTS { ?o ?x ?y FILTER(?y != ?s) } }"):
        want, got = both(q, WINDOW)
        assert bag(got.rows) == bag(want.rows), q


terms = st.sampled_from([iri("a"), iri("b"), iri("c"), iri("d")])
objects = st.one_of(terms, st.integers(-3, 5).map(num), st.sampled_from(['"x"', '"y"@en', num("1.5", "double"),
                                                                          num("2", "decimal")]))
preds = st.sampled_from([iri("p"), iri("q"), iri("r")])
windows = st.lists(st.tuples(st.integers(0, 50), terms, preds, objects), max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=windows, name=st.sampled_from(sorted(set(QUERIES) - {"order_limit"})))
def test_random_windows_equal_rdflib(content, name: str) -> None:
    text = PREFIX + QUERIES[name]
    try:
        want = Evaluator(text).evaluate(content)
    except TefqError:  # e.g. SUM of a language-tagged string: rdflib fails the query, and so must we
        with pytest.raises(TefqError):
            VectorEvaluator(text).evaluate(content)
        return
    got = VectorEvaluator(text).evaluate(content)
    assert bag(got.rows) == bag(want.rows)
    assert set(got.triples) == set(want.triples)


# ---------------------------------------------------------------- whole windowed runs
def _run_both(doc, elements, **kw):
    from tefq.oracle.windowed.runner import run

    return run(doc, elements, **kw), run(doc, elements, evaluator=VectorEvaluator, **kw)


def test_uc1_csparql_feedback_run_equals_oracle() -> None:
    from tefq.analysis import load

    doc = load(str(ROOT / "usecases" / "uc1_csparql.rspql"))
    want, got = _run_both(doc, iptv_log(1))
    assert want.feedback_triples > 0 and got.feedback_triples == want.feedback_triples
    assert got.ticks == want.ticks
    for w, g in zip(want, got):
        assert w.rows and g.sorted_rows() == w.sorted_rows()


@pytest.mark.needs_shared("external/csrbench")
@pytest.mark.parametrize("n", [3, 4, 6])  # two FILTERs; AVG with empty windows; a self-join
def test_csrbench_queries_equal_oracle(n: int, tmp_path) -> None:
    from tefq.io.readers import read_stream

    doc = csrbench_doc(n, tmp_path)
    elements = list(read_stream(str(CSRBENCH / "csrbench-dataset.trig")))
    want, got = _run_both(doc, elements)
    assert sum(len(r.rows) for r in want) > 0
    for w, g in zip(want, got):
        assert g.sorted_rows() == w.sorted_rows()

"""An expression's operands are evaluated once per solution: every read of an rdflib expression
node's attribute evaluates it again, and nested arithmetic and casts that read an operand several
times evaluated it 4x per level (a C-SPARQL use-case query spent a quarter of its run on it), and
a function with side effects or chance (RAND) met its operand more than once."""
from __future__ import annotations

import pytest
from rdflib import URIRef
from rdflib.plugins.sparql.operators import register_custom_function, unregister_custom_function

from tefq.oracle.windowed.r2r import Evaluator

COUNTED = URIRef("urn:tefq-test:counted")


@pytest.fixture
def calls():
    seen: list = []

    def counted(x):
        seen.append(x)
        return x

    register_custom_function(COUNTED, counted)
    yield seen
    unregister_custom_function(COUNTED, counted)


@pytest.mark.parametrize("expression, value", [
    ("(<urn:tefq-test:counted>(?x) + 1) * 2", '"8"^^<http://www.w3.org/2001/XMLSchema#integer>'),
    ("<http://www.w3.org/2001/XMLSchema#double>(<urn:tefq-test:counted>(?x) - 1) / 2",
     '"1.0"^^<http://www.w3.org/2001/XMLSchema#double>'),
    ('STRLANG(STR(<urn:tefq-test:counted>(?x)), "en")', '"3"@en'),
    ('REPLACE(STR(?x), "3", "three", STR(<urn:tefq-test:counted>("i")))', '"three"'),
])
def test_each_operand_is_evaluated_once_per_solution(calls, expression, value) -> None:
    ev = Evaluator(f"SELECT ?y WHERE {{ ?s ?p ?x BIND({expression} AS ?y) }}")
    answer = ev.evaluate([(0, "<http://ex.org/s>", "<http://ex.org/p>", '"3"^^<http://www.w3.org/2001/XMLSchema#integer>')])
    assert answer.rows == [(value,)]
    assert len(calls) == 1, expression

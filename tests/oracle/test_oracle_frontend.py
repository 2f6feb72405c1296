"""The oracle through the front end (`tefq.analysis.load`): the paper's queries as printed (spec §9,
at 5 s) give the same plans as the hand-built ones, and run from text they give the §10 table."""
from __future__ import annotations

import dataclasses

import pytest

from tefq.oracle import run
from tests.support.oracle_docs import PROGRAM_FACT, SPEC_10_EVENTS, USER_FACT, VIEWSHIP_FACT, integer, iri, uc1, uc2, uc3

analysis = pytest.importorskip("tefq.analysis")

SPEC_10 = """PREFIX : <http://example.org/iptv#>
CONSTRUCT FACT UserFact {?user :watching ?channel .}
(UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))

SELECT ?channel AS CHANNEL, ?user as USER (AGGREGATE ?channel, COUNT ?user
  WHERE (CURRENT ?user :watching ?channel) GROUP BY ?channel EVERY "PT5S"^^xsd:duration)

SELECT ?channel AS Channel, ?Count AS CurrentUsers, ?TotalTime/?Count AS AverageDuration ,
 (AGGREGATE ?channel, SUM DURATION(?SC,?EC) AS ?TotalTime, COUNT ?user AS ?Count
  WHERE (CURRENT ?user :watching ?channel [?SC,?EC]) GROUP BY ?channel EVERY "PT5S"^^xsd:duration)
"""

UC3_TEXT = """
CONSTRUCT FACT ProgramFact {?channel :showing ?program .}
(UNION (SINCE ?channel :start ?program) (UNTIL ?channel :finish ?program) )

CONSTRUCT FACT ViewShipFact {?user :attends ?program .}
{?user :watching ?channel ?channel :showing ?program}

SELECT ?show AS Show, ?DiffUser AS USER, ?TotalTime/?DiffUser AS AverageViewTime (AGGREGATE ?show, SUM DURATION(?SA,?EA) AS ?TotalTime, COUNT DISTINCT ?user AS ?DiffUser WHERE ?user :attends ?show [?SA,?EA] GROUP BY ?show WHILE ?_ :showing ?show [?SS,?ES] EVERY "PT5S"^^xsd:Duration)
"""


@pytest.fixture(scope="module")
def paper_doc(tmp_path_factory):
    """One document (the front end is slow to build): §10's UC1 and UC2 at 5 s, and the paper's UC3."""
    path = tmp_path_factory.mktemp("tef") / "paper.tef"
    path.write_text(SPEC_10 + UC3_TEXT)
    return analysis.load(str(path), {})


def _plain(x):
    """A plan value without source positions (spans do not compare anyway) and without its name."""
    if dataclasses.is_dataclass(x):
        return type(x), tuple(_plain(getattr(x, f.name)) for f in dataclasses.fields(x)
                              if f.name not in ("span", "name"))
    if isinstance(x, tuple):
        return tuple(_plain(i) for i in x)
    return x


def test_spec_10_from_text(paper_doc) -> None:
    from tefq.plan.logical import AggregateQuery

    doc = dataclasses.replace(paper_doc, queries=tuple(q for q in paper_doc.queries if q.name in ("q1", "q2")))
    out = run(doc, SPEC_10_EVENTS)
    A, B = iri("A"), iri("B")
    assert [(t, tuple(c)) for t, c in out.results[0].rows] == [
        (5000, (A, integer(1))), (5000, (B, integer(1))), (10000, (A, integer(1))), (10000, (B, integer(2))),
        (15000, (A, integer(1))), (15000, (B, integer(3)))]
    assert [c[2] for _, c in out.results[1].rows] == [
        f'"{x}"^^<http://www.w3.org/2001/XMLSchema#double>' for x in ("4", "2", "9", "2.5", "4", "6")]
    assert (out.metrics.facts_created, out.metrics.facts_closed, out.metrics.ticks) == (6, 2, 6)
    assert all(isinstance(q, AggregateQuery) for q in doc.queries)


def test_paper_queries_bind_to_the_hand_built_plans(paper_doc) -> None:
    assert _plain(paper_doc.facts) == _plain((USER_FACT, PROGRAM_FACT, VIEWSHIP_FACT))
    assert _plain(paper_doc.queries) == _plain((uc1(5000), uc2(5000), uc3(5000)))

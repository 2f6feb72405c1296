"""The oracle through the front end (`tefq.analysis.load`): the paper's queries as printed give the
same plans as the hand-built ones, and the spec §10 document run from text gives the §10 table."""
from __future__ import annotations

import dataclasses

import pytest

from oracle_docs import NS, SPEC_10_EVENTS, integer, iri, uc1, uc2, uc3, USER_FACT, PROGRAM_FACT, VIEWSHIP_FACT
from tefq.oracle import run

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

SPEC_9 = """CONSTRUCT FACT UserFact {?user :watching ?channel .}
(UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))

SELECT ?channel AS CHANNEL, ?user as USER (AGGREGATE ?channel, COUNT ?user WHERE (CURRENT ?user :watching ?channel) GROUP BY ?channel EVERY "PT10S"^^xsd:Duration)

SELECT ?channel AS Channel, ?Count AS CurrentUsers, ?TotalTime/?Count AS AverageDuration , (AGGREGATE ?channel, SUM DURATION(?SC,?EC) AS ?TotalTime, COUNT ?user AS ?Count WHERE (CURRENT ?user :watching ?channel [?SC,?EC]) GROUP BY ?channel EVERY "PT1M"^^xsd:Duration)

CONSTRUCT FACT ProgramFact {?channel :showing ?program .}
(UNION (SINCE ?channel :start ?program) (UNTIL ?channel :finish ?program) )

CONSTRUCT FACT ViewShipFact {?user :attends ?program .}
{?user :watching ?channel ?channel :showing ?program}

SELECT ?show AS Show, ?DiffUser AS USER, ?TotalTime/?DiffUser AS AverageViewTime (AGGREGATE ?show, SUM DURATION(?SA,?EA) AS ?TotalTime, COUNT DISTINCT ?user AS ?DiffUser WHERE ?user :attends ?show [?SA,?EA] GROUP BY ?show WHILE ?_ :showing ?show [?SS,?ES] EVERY "PT1M"^^xsd:Duration)
"""


def _load(tmp_path, text: str, prefixes=None):
    path = tmp_path / "q.tef"
    path.write_text(text)
    return analysis.load(str(path), prefixes or {})


def _plain(x):
    """A plan value without source positions (spans do not compare anyway) and without its name."""
    if dataclasses.is_dataclass(x):
        return type(x), tuple(_plain(getattr(x, f.name)) for f in dataclasses.fields(x)
                              if f.name not in ("span", "name"))
    if isinstance(x, tuple):
        return tuple(_plain(i) for i in x)
    return x


def test_spec_10_from_text(tmp_path) -> None:
    out = run(_load(tmp_path, SPEC_10), SPEC_10_EVENTS)
    A, B = iri("A"), iri("B")
    assert [(t, tuple(c)) for t, c in out.results[0].rows] == [
        (5000, (A, integer(1))), (5000, (B, integer(1))), (10000, (A, integer(1))), (10000, (B, integer(2))),
        (15000, (A, integer(1))), (15000, (B, integer(3)))]
    assert [c[2] for _, c in out.results[1].rows] == [
        f'"{x}"^^<http://www.w3.org/2001/XMLSchema#double>' for x in ("4", "2", "9", "2.5", "4", "6")]
    assert (out.metrics.facts_created, out.metrics.facts_closed, out.metrics.ticks) == (6, 2, 6)


def test_paper_queries_bind_to_the_hand_built_plans(tmp_path) -> None:
    doc = _load(tmp_path, SPEC_9, {"": NS})
    assert _plain(doc.facts) == _plain((USER_FACT, PROGRAM_FACT, VIEWSHIP_FACT))
    assert _plain(doc.queries) == _plain((uc1(10_000), uc2(60_000), uc3(60_000)))

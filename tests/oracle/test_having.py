"""HAVING over an AGGREGATE's groups (spec §4), without Spark: the worked example's rows, the
errors a user meets, the simulations, and the general kernels against the oracle on hypothesis
streams (tests/spark/test_spark_having.py runs every Spark plan kind)."""
from __future__ import annotations

import os

import pytest

import tefq
from tefq.errors import TefqError
from tests.support.general_shapes import HAVING_SHAPES, PROGRAMS, check_shape
from tests.support.paths import ROOT

SPEC10 = os.path.join(ROOT, "examples", "spec10")
UC1 = """PREFIX : <http://example.org/iptv#>
CONSTRUCT FACT UserFact {?user :watching ?channel .}
(UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))
SELECT ?channel AS CHANNEL, ?user AS USER
(AGGREGATE ?channel, COUNT ?user WHERE (CURRENT ?user :watching ?channel) GROUP BY ?channel HAVING_CLAUSE
 EVERY "PT5S"^^xsd:duration)
"""

# Each with HAVING over an aggregate, a group variable, or both; the shapes of the general kernels.


def rows(having: str) -> list[tuple]:
    """(tick, channel's local name, viewers) of UC1 with `having` over spec §10's events."""
    q = tefq.compile(UC1.replace("HAVING_CLAUSE", having))
    table = q.run(os.path.join(SPEC10, "events.tsv")).to_pandas()
    return [(int(t.timestamp() * 1000), c.rsplit("#")[1], n) for t, c, n in table.itertuples(index=False)]


def test_having_keeps_the_groups_it_holds_for_at_each_tick() -> None:
    """Spec §10's UC1 (A: 1, 1, 1 viewers; B: 1, 2, 3): "channels with more than 1 viewer"."""
    assert rows("HAVING (?user > 1)") == [(10000, "B", 2), (15000, "B", 3)]
    assert rows("HAVING (?user > 1) (?channel = :A)") == []  # several constraints: all must hold
    assert len(rows("HAVING (?user / 0 > 1)")) == 0  # an error is false, as in a FILTER
    assert rows("") == rows("HAVING (true)")


@pytest.mark.parametrize("having, words", [
    ("HAVING (?x > 1)", "?x in HAVING is neither a group variable (?channel) nor an aggregate (?user)"),
    ("HAVING (COUNT(?user) > 1)", "belongs in the (AGGREGATE ...) block"),
])
def test_having_names_only_group_variables_and_aggregates(having: str, words: str) -> None:
    with pytest.raises(TefqError) as info:
        tefq.compile(UC1.replace("HAVING_CLAUSE", having))
    assert words in info.value.message and info.value.line == 5


def test_explain_shows_having() -> None:
    from tefq.plan.explain import explain

    text = explain(tefq.compile(UC1.replace("HAVING_CLAUSE", "HAVING (?user > 1)")).document())
    assert "Having (?user > " in text


@pytest.mark.parametrize("strategy", ["refresh", "refresh-group", "sequence"])
def test_a_simulation_reports_the_groups_the_native_run_does(strategy: str) -> None:
    """Spec §7: a simulated run's rows equal the native run's (HAVING included)."""
    from tefq.io.readers import read_stream
    from tefq.oracle import run
    from tefq.simulate import run as simulate

    doc = tefq.compile(UC1.replace("HAVING_CLAUSE", "HAVING (?user > 1)")).document()
    events = list(read_stream(os.path.join(SPEC10, "events.tsv")))
    native = run(doc, events, None, 0).results[0].rows
    assert native and simulate(doc, events, strategy).results[0].rows == native


@pytest.mark.parametrize("shape", list(HAVING_SHAPES))
def test_general_kernels_apply_having_as_the_oracle_does(shape: str) -> None:
    check_shape(HAVING_SHAPES[shape], shape in PROGRAMS)

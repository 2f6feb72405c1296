"""The fact table from Python (tefq/facts/api.py, behind `Query.facts` / `Result.facts`)."""
from __future__ import annotations

import os

import pytest

import tefq
from tefq.errors import TefqError
from tefq.facts.api import facts_of
from tests.support.paths import ROOT

SPEC10 = os.path.join(ROOT, "examples", "spec10")
IPTV = "http://example.org/iptv#"


def test_facts_from_a_path_and_from_tuples_agree():
    query = tefq.load(os.path.join(SPEC10, "uc1.tef"))
    from_path = facts_of(query, os.path.join(SPEC10, "events.tsv"))
    tuples = [(1000, f"<{IPTV}Alice>", f"<{IPTV}join>", f"<{IPTV}A>"), (3000, f"<{IPTV}Alice>", f"<{IPTV}quit>", f"<{IPTV}A>"),
              (2000, f"<{IPTV}Bob>", f"<{IPTV}join>", f"<{IPTV}A>")]
    frame = facts_of(query, tuples).to_pandas()
    assert list(frame.columns) == ["fact", "user", "channel", "start", "end"]
    ms = frame.assign(start=frame["start"].map(lambda t: int(t.timestamp() * 1000)))  # timestamps: exact ms
    assert ms.drop(columns="end").values.tolist() == [["UserFact", f"{IPTV}Alice", f"{IPTV}A", 1000],
                                                      ["UserFact", f"{IPTV}Bob", f"{IPTV}A", 2000]]
    assert frame["end"].tolist()[0].timestamp() == 3.0 and frame["end"].isna().tolist() == [False, True]
    assert len(from_path.rows) == 6 and sum(r.end is None for r in from_path.rows) == 4


def test_bad_events_are_errors_not_tracebacks():
    with pytest.raises(TefqError):
        facts_of(tefq.load(os.path.join(SPEC10, "uc1.tef")), [(1, "not a term", "<p>", "<o>")])


def test_result_facts_and_the_engine_argument():
    query = tefq.load(os.path.join(SPEC10, "uc1.tef"))
    events = os.path.join(SPEC10, "events.tsv")
    assert query.run(events).facts.rows == query.facts(events).rows == query.facts(events, engine="auto").rows
    with pytest.raises(TefqError, match="unknown engine 'flink'"):
        query.facts(events, engine="flink")

"""Queries as of given instants (spec §12): over a stream, the rows a full run reports at those ticks
(hypothesis); over a stored fact table, the same rows without events; event patterns refused there."""
from __future__ import annotations

import argparse
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.analysis import bind_text, load
from tefq.errors import TefqError
from tefq.facts.as_of import as_of_facts, as_of_stream, parse_instants
from tefq.facts.cli import run_as_of
from tefq.facts.table import fact_table
from tefq.facts.writer import write_facts
from tefq.io.readers import read_stream
from tefq.oracle import run
from tests.support.paths import ROOT

NS = "http://example.org/iptv#"
DOCS = {name: load(os.path.join(ROOT, *path)) for name, path in {
    "uc1": ("examples", "spec10", "uc1.tef"), "uc2": ("examples", "spec10", "uc2.tef"),
    "uc3": ("examples", "programs", "uc3.tef"), "contains": ("examples", "facts", "whole-show.tef"),
}.items()}
EVENT_DOC = """PREFIX : <http://example.org/iptv#>
CONSTRUCT FACT UserFact {?user :watching ?channel .} (UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))
SELECT ?channel AS Channel, ?n AS Joins
(AGGREGATE ?channel, COUNT ?user AS ?n WHERE { ?user :join ?channel } GROUP BY ?channel EVERY "PT5S")
"""


def iri(local: str) -> str:
    return f"<{NS}{local}>"


log_event = st.tuples(st.integers(0, 40_000), st.sampled_from(["u0", "u1", "u2"]), st.sampled_from(["join", "quit"]),
                      st.sampled_from(["A", "B"]))
epg_event = st.tuples(st.integers(0, 40_000), st.sampled_from(["A", "B"]), st.sampled_from(["start", "finish"]),
                      st.sampled_from(["p0", "p1"]))


@given(st.lists(st.one_of(log_event, epg_event), min_size=1, max_size=25), st.sampled_from(sorted(DOCS)),
       st.lists(st.integers(0, 12), min_size=1, max_size=4), st.sampled_from(["tsv", "parquet", "jsonl"]))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_as_of_equals_the_full_run_at_those_ticks(tmp_path, raw, name, picks, fmt):
    doc = DOCS[name]
    events = sorted([(t, iri(s), iri(p), iri(o)) for t, s, p, o in raw], key=lambda e: e[0])
    full = run(doc, events)
    every = doc.queries[0].every_ms
    first, last = -(-events[0][0] // every), -(-events[-1][0] // every)
    instants = sorted({(first + k) * every for k in picks if first + k <= last})
    if not instants:
        return
    expected = [[r for r in res.rows if r[0] in instants] for res in full.results]
    assert [res.rows for res in as_of_stream(doc, events, instants).results] == expected
    stored = str(tmp_path / f"facts.{fmt}")
    write_facts(fact_table(doc, events), fmt, stored)
    assert [res.rows for res in as_of_facts(doc, stored, instants).results] == expected


@given(st.lists(log_event, min_size=1, max_size=20), st.integers(1, 40_000))
@settings(max_examples=40, deadline=None)
def test_an_instant_off_the_grid_is_a_tick_of_a_shifted_run(raw, instant):
    """`T` need not lie on the EVERY grid: its rows are those of a run whose ticks pass through T."""
    doc = DOCS["uc2"]
    events = sorted([(t, iri(s), iri(p), iri(o)) for t, s, p, o in raw], key=lambda e: e[0])
    if not events[0][0] <= instant <= events[-1][0]:
        return
    shifted = run(doc, events, t0=instant % doc.queries[0].every_ms).results[0].rows
    assert as_of_stream(doc, events, [instant]).results[0].rows == [r for r in shifted if r[0] == instant]


def test_event_pattern_over_a_fact_table_is_a_located_bind_error(tmp_path):
    doc = bind_text(EVENT_DOC, "joins.tef")
    with pytest.raises(TefqError) as e:
        as_of_facts(doc, str(tmp_path / "none.parquet"), [5000])
    assert "event pattern '?user :join ?channel'" in e.value.message
    column = EVENT_DOC.splitlines()[3].index("?user :join") + 1
    assert (e.value.file, e.value.line, e.value.column) == ("joins.tef", 4, column)


def test_instants_are_ms_or_datetimes():
    assert parse_instants("1000, 1970-01-01T00:00:02Z,1970-01-01T00:00:03.5") == [1000, 2000, 3500]
    with pytest.raises(TefqError, match="^--at: error: bad timestamp 'noon'"):
        parse_instants("1000,noon")


def test_run_as_of_writes_the_rows(tmp_path, capsys):
    """What `tefq run ... --at` does once the run command hands it its arguments."""
    events = os.path.join(ROOT, "examples", "spec10", "events.tsv")
    args = argparse.Namespace(query=os.path.join(ROOT, "examples", "spec10", "uc1.tef"), prefix=None, background=None,
                              stream=[events], facts=None, at="10000,1970-01-01T00:00:15Z", out=None, format="csv",
                              metrics=None, quiet=True)
    assert run_as_of(args) == 0
    assert capsys.readouterr().out.replace("\r\n", "\n") == (
        "tick,CHANNEL,USER\n10000,http://example.org/iptv#A,1\n10000,http://example.org/iptv#B,2\n"
        "15000,http://example.org/iptv#A,1\n15000,http://example.org/iptv#B,3\n")


@pytest.mark.parametrize("fmt", ["parquet", "tsv", "jsonl"])
def test_run_as_of_says_what_its_fact_count_counts(tmp_path, capsys, fmt):
    """Over a stored table only the intervals the queries can see are read: at 10 s with EVERY 5 s,
    4 of the 6 (Bob's [3 s, 9 s) is one of them though it ended before 10 s); the line says so."""
    events = os.path.join(ROOT, "examples", "spec10", "events.tsv")
    doc = DOCS["uc1"]
    stored = str(tmp_path / f"facts.{fmt}")
    write_facts(fact_table(doc, read_stream(events)), fmt, stored)
    args = argparse.Namespace(query=os.path.join(ROOT, "examples", "spec10", "uc1.tef"), prefix=None, background=None,
                              stream=None, facts=stored, at="10000", out=str(tmp_path / "rows.csv"), format="csv",
                              metrics=None, quiet=False)
    assert run_as_of(args) == 0
    assert ("tefq: as of 1 instant, 2 rows; 4 of 6 stored fact intervals read "
            "(those valid in the 5 s up to 1970-01-01T00:00:10.000Z); ") in capsys.readouterr().err
    args.facts, args.stream, args.at = None, [events], "10000,15000"
    assert run_as_of(args) == 0
    assert "tefq: as of 2 instants, 4 rows; 6 fact intervals from 8 events replayed; " in capsys.readouterr().err

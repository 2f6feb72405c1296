"""The Python API (issue 15): tefq.compile / tefq.load, Query.run on every kind of events input,
Result.to_pandas / to_arrow / metrics, located errors; and the README's example run as written."""
from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime, timezone

import pandas as pd
import pyarrow as pa
import pytest

import tefq
from tefq.api import python_value
from tests.support.paths import ROOT

SPEC10 = ROOT / "examples" / "spec10"
NS = "http://example.org/iptv#"


def events_tuples() -> list[tuple[int, str, str, str]]:
    from tefq.io.readers import read_stream

    return list(read_stream(str(SPEC10 / "events.tsv")))


def expected_table() -> pd.DataFrame:
    """The CLI's oracle rows for spec §10's UC1 (tests/cli/test_cli.py checks them by hand)."""
    ticks = pd.to_datetime([5000, 5000, 10000, 10000, 15000, 15000], unit="ms", utc=True).astype("datetime64[ms, UTC]")
    return pd.DataFrame({"tick": ticks, "CHANNEL": [NS + c for c in "ABABAB"],
                         "USER": pd.array([1, 1, 1, 2, 1, 3], dtype="Int64")})


def test_readme_example_runs_as_written(capsys):
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Python API"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - our own README
    out = capsys.readouterr().out
    assert out.startswith("6 <tefq.Result q1: 6 rows") and "http://example.org/iptv#B 2" in out and "row 1, column s" in out


@pytest.mark.parametrize("kind", ["pandas", "arrow", "arrow-timestamp", "tuples", "path", "paths"])
def test_every_input_kind_gives_the_same_rows(kind):
    q = tefq.load(SPEC10 / "uc1.tef")
    rows = events_tuples()
    frame = pd.DataFrame(rows, columns=["ts", "s", "p", "o"])
    events = {
        "pandas": frame,
        "arrow": pa.Table.from_pandas(frame),
        "arrow-timestamp": pa.Table.from_pandas(frame.assign(ts=pd.to_datetime(frame.ts, unit="ms", utc=True))),
        "tuples": iter(rows),
        "path": SPEC10 / "events.tsv",
        "paths": [str(SPEC10 / "events.tsv")],
    }[kind]
    pd.testing.assert_frame_equal(q.run(events).to_pandas(), expected_table())


def test_an_iterator_gives_rows_and_facts():
    """An iterator is read once (issue 38): its rows, and the fact table from the same events."""
    q = tefq.load(SPEC10 / "uc1.tef")
    result = q.run(iter(events_tuples()))
    pd.testing.assert_frame_equal(result.to_pandas(), expected_table())
    assert len(result.facts.rows) == len(q.facts(events_tuples()).rows) == 6


def test_not_an_ntriples_term_names_row_and_column():
    q = tefq.load(SPEC10 / "uc1.tef")
    rows = events_tuples()
    rows[2] = (rows[2][0], rows[2][1], rows[2][2], NS + "B")  # a bare IRI in column o
    with pytest.raises(tefq.TefqError, match="row 3, column o") as info:
        q.run(rows)
    assert info.value.file == "<events>" and info.value.line == 3
    with pytest.raises(tefq.TefqError, match="row 3, column o"):
        q.run(pd.DataFrame(rows, columns=["ts", "s", "p", "o"]))
    with pytest.raises(tefq.TefqError, match="no column.*p"):
        q.run(pd.DataFrame({"ts": [1], "s": ["<x:a>"], "o": ["<x:b>"]}))
    with pytest.raises(tefq.TefqError, match=r"row 2: expected a \(ts, s, p, o\) tuple"):
        q.run([rows[0], (1, 2)])


def test_compile_errors_have_line_and_column(tmp_path):
    with pytest.raises(tefq.TefqError) as info:
        tefq.compile("PREFIX : <http://e/>\nSELECT ?x WHERE {", name="mine.tef")
    assert (info.value.file, info.value.line, info.value.column) == ("mine.tef", 2, 18)
    with pytest.raises(tefq.TefqError, match="cannot read query file"):
        tefq.load(tmp_path / "missing.tef")
    q = tefq.compile((SPEC10 / "uc1.tef").read_text().replace("PREFIX : <http://example.org/iptv#>\n", ""),
                     prefixes={"": NS})  # a prefix the text does not declare
    assert q.names == ["q1"]


def test_to_pandas_values_arrow_and_metrics():
    result = tefq.load(SPEC10 / "uc1.tef").run(SPEC10 / "events.tsv")
    table = result.to_pandas("q1")
    assert str(table["USER"].dtype) == "Int64" and table["CHANNEL"][0] == NS + "A"
    assert str(table["tick"].dtype) == "datetime64[ms, UTC]"  # one tick type: to_arrow's
    arrow = result.to_arrow()
    assert arrow.schema.field("tick").type == pa.timestamp("ms", tz="UTC")
    assert arrow.column("CHANNEL")[0].as_py() == f"{NS}A" and arrow.schema.field("USER").type == pa.int64()
    lossless = result.to_arrow(terms="ntriples")
    assert lossless.column("CHANNEL")[0].as_py() == f"<{NS}A>"
    assert result.to_pandas(terms="ntriples")["USER"][0] == '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'
    assert lossless.schema.field("tick").type == pa.timestamp("ms", tz="UTC")
    assert {"events_in", "facts_created", "facts_closed", "unmatched_until", "late_events", "ticks",
            "rows_out", "intermediate_bindings", "wall_seconds"} <= set(result.metrics)
    assert (result.metrics["events_in"], result.metrics["rows_out"]) == (8, 6)
    with pytest.raises(tefq.TefqError, match="no query named 'nope'"):
        result.to_pandas("nope")


def test_python_values():
    xsd = "http://www.w3.org/2001/XMLSchema#"
    assert python_value(None) is None
    assert python_value("<http://e/x>") == "http://e/x"
    assert python_value("_:b1") == "_:b1"
    assert python_value(f'"3"^^<{xsd}integer>') == 3
    assert python_value(f'"2.5"^^<{xsd}decimal>') == 2.5
    assert python_value(f'"true"^^<{xsd}boolean>') is True
    assert python_value('"hi"@en') == "hi"
    assert python_value(f'"2020-01-01T00:00:00Z"^^<{xsd}dateTime>') == "2020-01-01T00:00:00Z"


def test_unbound_cells_are_none_and_several_queries_are_picked_by_name():
    doc = (SPEC10 / "uc1.tef").read_text() + """
REGISTER QUERY Labels AS
SELECT ?user ?label
FROM STREAM <http://example.org/iptv/log> [RANGE 10s STEP 10s]
WHERE { ?user :join ?channel . OPTIONAL { ?user :label ?label } }
"""
    rows = events_tuples() + [(2000, f"<{NS}Alice>", f"<{NS}label>", '"A"')]
    result = tefq.compile(doc).run(rows)
    assert result.queries == ["q1", "Labels"]
    labels = result.to_pandas("Labels")
    assert list(labels.columns) == ["tick", "user", "label"]
    by_user = dict(zip(labels.user, labels.label))
    assert by_user[NS + "Alice"] == "A" and by_user[NS + "Bob"] is None


def test_unknown_engine():
    with pytest.raises(tefq.TefqError, match="unknown engine"):
        tefq.load(SPEC10 / "uc1.tef").run([], engine="flink")


@pytest.mark.spark
def test_spark_engine_on_a_dataframe_matches_the_oracle():
    q = tefq.load(SPEC10 / "uc1.tef")
    frame = pd.DataFrame(events_tuples(), columns=["ts", "s", "p", "o"])
    on_spark = q.run(frame, engine="spark")
    pd.testing.assert_frame_equal(on_spark.to_pandas(), expected_table())
    assert on_spark.metrics["events_in"] == 8


def two_query_document() -> str:
    """Spec §10's UC1 and UC2 in one document (its `ticks` metric is 6: 3 per query)."""
    uc2 = (SPEC10 / "uc2.tef").read_text()
    return (SPEC10 / "uc1.tef").read_text() + uc2[uc2.index("SELECT"):]


@pytest.mark.spark
def test_spark_ticks_are_summed_over_the_queries_as_on_the_oracle():
    q = tefq.compile(two_query_document())
    oracle, spark = (q.run(SPEC10 / "events.tsv", engine=e) for e in ("oracle", "spark"))
    assert oracle.metrics["ticks"] == spark.metrics["ticks"] == 6
    assert [r.sorted_rows() for r in spark.results] == [r.sorted_rows() for r in oracle.results]


@pytest.mark.spark
def test_two_spark_runs_in_two_threads():
    """Each streaming query has a name of its own in the session: two runs at once, correct rows."""
    from concurrent.futures import ThreadPoolExecutor

    q = tefq.compile(two_query_document())
    events = [SPEC10 / "events.tsv", events_tuples()[:5]]
    want = [q.run(e).to_pandas("q2") for e in events]
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda e: q.run(e, engine="spark").to_pandas("q2"), events))
    for g, w in zip(got, want):
        pd.testing.assert_frame_equal(g, w)


def test_a_result_iterates_counts_and_shows_itself():
    result = tefq.load(SPEC10 / "uc1.tef").run(SPEC10 / "events.tsv")
    rows = list(result)
    assert len(result) == len(rows) == 6
    first = rows[0]
    assert first.tick == datetime(1970, 1, 1, 0, 0, 5, tzinfo=timezone.utc)
    assert (first.CHANNEL, first.USER) == (NS + "A", 1) and first._asdict()["USER"] == 1
    assert repr(result) == "<tefq.Result q1: 6 rows; 8 events, 3 ticks, facts created 6, " \
                           f"{result.metrics['wall_seconds']:.2f} s (oracle)>"
    html = result._repr_html_()
    assert html.count("<tr>") == 7 and "<td>1970-01-01T00:00:05Z</td>" in html and "8 events" in html


def test_reprs_are_short():
    q = tefq.load(SPEC10 / "uc1.tef")
    assert repr(q) == f"<tefq.Query {SPEC10 / 'uc1.tef'}: q1: aggregate every 5s, group by ?channel; facts UserFact>"
    facts = q.facts(SPEC10 / "events.tsv")
    assert repr(facts) == "<tefq FactRows: 6 intervals of UserFact (4 open); identity columns user, channel>"
    assert len(facts) == 6


def test_the_fact_table_bounds_are_timestamps():
    facts = tefq.load(SPEC10 / "uc1.tef").facts(SPEC10 / "events.tsv")
    frame = facts.to_pandas()
    assert str(frame["start"].dtype) == str(frame["end"].dtype) == "datetime64[ms, UTC]"
    assert frame["end"].isna().sum() == 4 and frame["start"].min() == pd.Timestamp(1000, unit="ms", tz="UTC")
    assert facts.to_arrow().schema.field("end").type == pa.timestamp("ms", tz="UTC")


def test_run_at_gives_the_rows_as_of_instants():
    q = tefq.load(SPEC10 / "uc1.tef")
    at = q.run(SPEC10 / "events.tsv", at=["1970-01-01T00:00:10Z", 12000, datetime(1970, 1, 1, 0, 0, 15)])
    got = [(r.tick.timestamp(), r.CHANNEL[-1], r.USER) for r in at]
    assert got == [(10.0, "A", 1), (10.0, "B", 2), (12.0, "A", 2), (12.0, "B", 3), (15.0, "A", 1), (15.0, "B", 3)]
    every = q.run(SPEC10 / "events.tsv")
    assert [r for r in at if r.tick.second in (10, 15)] == [r for r in every if r.tick.second in (10, 15)]
    with pytest.raises(tefq.TefqError, match="at= takes"):
        q.run(SPEC10 / "events.tsv", at=1.5)


def test_tefq_run_is_a_function():
    result = tefq.run((SPEC10 / "uc1.tef").read_text(), SPEC10 / "events.tsv")
    assert len(result) == 6
    assert len(tefq.run(tefq.load(SPEC10 / "uc1.tef"), SPEC10 / "events.tsv", engine="oracle")) == 6


def test_a_notebook_session_renders_a_result():
    """What a notebook does with a Result: `python -c` in a fresh interpreter, _repr_html_ rendered."""
    code = ("import tefq; r = tefq.load('examples/spec10/uc1.tef').run('examples/spec10/events.tsv'); "
            "print(r._repr_html_())")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("<table><caption>q1: 6 rows</caption>") and "facts created 6" in proc.stdout


def test_the_package_says_it_is_typed():
    assert (ROOT / "tefq" / "py.typed").exists()

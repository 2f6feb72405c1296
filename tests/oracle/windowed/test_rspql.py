"""RSP-QL (the W3C RSP community group's syntax) on the windowed plan: parse and bind, located
errors for what tefq refuses, R2S (RSTREAM/ISTREAM/DSTREAM), feedback, and every CSRBench query
rewritten in RSP-QL giving, window by window, the rows of its C-SPARQL form (oracle here; Spark in
test_rspql_spark.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tefq.analysis import load
from tefq.cli import run_command
from tefq.errors import TefqError
from tefq.oracle.windowed import run as oracle_run
from tefq.plan.logical import WindowedQuery
from tests.support.paths import CSRBENCH, ROOT
from tests.support.windowed_cases import csparql_text, iptv_log, rspql_text

IPTV = "http://example.org/iptv#"
PREFIX = "PREFIX : <http://example.org/iptv#>\n"


def _doc(tmp_path: Path, text: str, name: str = "q.rspql"):
    path = tmp_path / name
    path.write_text(text)
    return load(str(path))


def _error(tmp_path: Path, text: str) -> TefqError:
    with pytest.raises(TefqError) as e:
        _doc(tmp_path, text)
    return e.value


def events(*items: tuple[int, str, str, str]) -> list[tuple[int, str, str, str]]:
    return [(ts, f"<{IPTV}{s}>", f"<{IPTV}{p}>", f"<{IPTV}{o}>") for ts, s, p, o in items]


# ---------------------------------------------------------------- the CSRBench rewrite


@pytest.fixture(scope="module")
def csrbench_elements() -> list:
    from tefq.oracle.windowed.streams import read_elements

    return read_elements(CSRBENCH / "csrbench-dataset.trig")


@pytest.mark.needs_shared("external/csrbench")
@pytest.mark.parametrize("n", range(1, 8))
def test_csrbench_query_in_rspql_gives_the_csparql_rows(n: int, tmp_path, csrbench_elements) -> None:
    csparql = _doc(tmp_path, csparql_text(n), "c.rspql")
    rspql = _doc(tmp_path, rspql_text(csparql_text(n)), "r.rspql")
    assert [q.windows for q in rspql.queries] == [q.windows for q in csparql.queries]
    want, got = oracle_run(csparql, csrbench_elements), oracle_run(rspql, csrbench_elements)
    assert want.ticks == got.ticks
    assert got[0].columns == want[0].columns
    assert got[0].rows == want[0].rows  # window by window: (tick, row) in order
    assert want[0].rows, "the query answers in some window"


# ---------------------------------------------------------------- grammar and bind
def test_register_forms_and_tumbling_window(tmp_path) -> None:
    doc = _doc(tmp_path, PREFIX + """REGISTER ISTREAM <http://ex.org/out> AS
SELECT ?u ?c FROM NAMED WINDOW :w ON <http://ex.org/log> [RANGE PT10S]
WHERE { WINDOW :w { ?u :join ?c } }""")
    q = doc.queries[0]
    assert isinstance(q, WindowedQuery) and q.name == "http://ex.org/out" and q.r2s == "istream"
    assert (q.windows[0].iri, q.windows[0].range_ms, q.windows[0].step_ms) == ("http://ex.org/log", 10_000, 10_000)
    assert q.window_names == (IPTV + "w",)
    assert "WINDOW" not in q.sparql.upper().replace("NAMED WINDOW", "") and "?u :join ?c" in q.sparql


def test_rspjs_spelling_on_stream(tmp_path) -> None:
    """RSP.js writes `ON STREAM <s>`; its unit-less `[RANGE 10 STEP 2]` (ms) is refused."""
    doc = _doc(tmp_path, PREFIX + """REGISTER RSTREAM <http://ex.org/out> AS SELECT *
FROM NAMED WINDOW :w ON STREAM :log [RANGE PT10S STEP PT2S] WHERE { WINDOW :w { ?s ?p ?o } }""")
    assert doc.queries[0].windows[0].iri == IPTV + "log"
    err = _error(tmp_path, PREFIX + "SELECT * FROM NAMED WINDOW :w ON STREAM :log [RANGE 10 STEP 2]\n"
                 "WHERE { WINDOW :w { ?s ?p ?o } }")
    assert "expected a duration" in str(err) and err.line == 2


def test_prologue_after_register_and_several_windows(tmp_path) -> None:
    doc = _doc(tmp_path, """REGISTER RSTREAM <http://ex.org/out> AS
PREFIX : <http://example.org/iptv#>
SELECT ?u ?c ?d
FROM NAMED WINDOW :a ON <http://ex.org/log> [RANGE PT10S STEP PT5S]
FROM NAMED WINDOW :b ON <http://ex.org/epg> [RANGE PT1M STEP PT5S]
WHERE { WINDOW :a { ?u :join ?c OPTIONAL { ?u :quit ?c } } WINDOW :b { ?c :genre ?d FILTER(?d != :news) } }""")
    q = doc.queries[0]
    assert [(w.iri, w.range_ms, w.step_ms) for w in q.windows] == [
        ("http://ex.org/log", 10_000, 5_000), ("http://ex.org/epg", 60_000, 5_000)]


@pytest.mark.parametrize("text, message, line", [
    ("SELECT ?u FROM NAMED WINDOW :w ON <http://s> [ELEMENTS 10] WHERE { WINDOW :w { ?u :join ?c } }",
     "count-based windows", 2),
    ("SELECT ?u FROM NAMED WINDOW :w ON <http://s> WHERE { WINDOW :w { ?u :join ?c } }",
     "FROM NAMED WINDOW needs a window", 2),
    ("SELECT ?u FROM NAMED WINDOW :w ON <http://s> [RANGE PT10S]\nWHERE { WINDOW ?w { ?u :join ?c } }",
     "WINDOW ?var", 3),
    ("SELECT ?u FROM NAMED WINDOW :w ON <http://s> [RANGE PT10S]\nWHERE { WINDOW :v { ?u :join ?c } }",
     "names no window", 3),
    ("SELECT ?u FROM NAMED WINDOW :w ON <http://s> [RANGE PT10S]\n"
     "FROM NAMED WINDOW :v ON <http://s> [RANGE PT5S]\nWHERE { WINDOW :w { ?u :join ?c } }",
     "no WINDOW <http://example.org/iptv#v>", 3),
    ("SELECT ?u FROM NAMED WINDOW :w ON <http://s> [RANGE PT0S]\nWHERE { WINDOW :w { ?u :join ?c } }",
     "RANGE must be a positive duration", 2),
    ("SELECT ?u FROM NAMED WINDOW :w ON <http://s> [RANGE PT10S STEP 3]\nWHERE { WINDOW :w { ?u :join ?c } }",
     "syntax error", 2),
])
def test_refused_constructs_are_located(tmp_path, text: str, message: str, line: int) -> None:
    err = _error(tmp_path, PREFIX + text)
    assert message in str(err) and err.line == line, str(err)


def test_cli_error_exit_2_with_location_and_caret(tmp_path, capsys) -> None:
    path = tmp_path / "bad.rspql"
    path.write_text(PREFIX + "SELECT ?u FROM NAMED WINDOW :w ON <http://s> [ELEMENTS 5]\nWHERE { WINDOW :w { ?u :j ?c } }\n")
    assert run_command(["parse", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2:" in err and "count-based" in err and "^" in err


# ---------------------------------------------------------------- semantics on the oracle
SLIDING = PREFIX + """REGISTER {kind} <http://ex.org/out> AS
SELECT ?c
FROM NAMED WINDOW :w ON <http://ex.org/log> [RANGE PT10S STEP PT5S]
WHERE {{ WINDOW :w {{ ?u :join ?c }} }}
"""
LOG = events((1000, "u1", "join", "A"), (6000, "u2", "join", "A"), (12000, "u3", "join", "B"))


def _rows(tmp_path, kind: str) -> list:
    doc = _doc(tmp_path, SLIDING.format(kind=kind), f"{kind}.rspql")
    return sorted((t, r[0].rsplit("#", 1)[1][:-1]) for t, r in oracle_run(doc, LOG)[0].rows)


def test_rstream_keeps_the_bag_istream_and_dstream_differences(tmp_path) -> None:
    # windows [0,10) [5,15) [10,20) report at 10 s, 15 s, 20 s; two users join A in the first
    assert _rows(tmp_path, "RSTREAM") == [(10000, "A"), (10000, "A"), (15000, "A"), (15000, "B"), (20000, "B")]
    assert _rows(tmp_path, "ISTREAM") == [(10000, "A"), (15000, "B")]
    assert _rows(tmp_path, "DSTREAM") == [(20000, "A")]


def test_t0_shifts_the_windows(tmp_path) -> None:
    doc = _doc(tmp_path, SLIDING.format(kind="RSTREAM"))
    ticks = sorted({t for t, _ in oracle_run(doc, LOG, t0=2000)[0].rows})
    assert ticks == [12000, 17000, 22000]


def test_feedback_registered_stream_is_read_by_another_query(tmp_path) -> None:
    doc = _doc(tmp_path, PREFIX + """REGISTER RSTREAM <http://ex.org/joins> AS
CONSTRUCT { ?u :joined ?c }
FROM NAMED WINDOW :w ON <http://ex.org/log> [RANGE PT10S]
WHERE { WINDOW :w { ?u :join ?c } }

REGISTER RSTREAM <http://ex.org/busy> AS
SELECT ?c (COUNT(?u) AS ?n)
FROM NAMED WINDOW :f ON <http://ex.org/joins> [RANGE PT10S]
WHERE { WINDOW :f { ?u :joined ?c } }
GROUP BY ?c
""")
    assert doc.queries[0].registers_stream and not doc.queries[1].registers_stream
    joins, busy = oracle_run(doc, {None: LOG})
    assert [t for t, _ in joins.rows] == [10000, 10000, 20000]
    # the joins emitted at 10 s (stamped 10 s) fall in the window [10 s, 20 s) of the second query
    assert [(t, r[1]) for t, r in busy.rows] == [(20000, '"2"^^<http://www.w3.org/2001/XMLSchema#integer>')]


def test_uc1_rspql_gives_the_csparql_rows() -> None:

    csparql = load(str(ROOT / "usecases" / "uc1_csparql.rspql"))
    rspql = load(str(ROOT / "usecases" / "uc1_rspql.rspql"))
    log = iptv_log(3, n=300, span_ms=60_000)
    want, got = oracle_run(csparql, log), oracle_run(rspql, log)
    assert [r.rows for r in got] == [r.rows for r in want] and all(r.rows for r in want)
    assert got.feedback_triples == want.feedback_triples > 0


@pytest.mark.parametrize("path", sorted((ROOT / "examples" / "rspql").glob("*.rspql")), ids=lambda p: p.name)
def test_examples_bind(path: Path) -> None:
    doc = load(str(path))
    assert doc.queries and all(isinstance(q, WindowedQuery) for q in doc.queries)


# ---------------------------------------------------------------- oracle check and compare
@pytest.mark.needs_shared("external/csrbench")
def test_oracle_check_takes_an_rspql_query(tmp_path, capsys) -> None:
    """CSRBench Q2 in RSP-QL, in a file named like a C-SPARQL one (the content decides), against
    C-SPARQL's recorded answers: the verdict of its C-SPARQL form (test_windowed_run.py)."""
    path = tmp_path / "q2.query"
    path.write_text(rspql_text(csparql_text(2)))
    out = tmp_path / "r.json"
    code = run_command(["oracle", "check", "--query", str(path), "--stream", str(CSRBENCH / "csrbench-dataset.trig"),
                        "--answers", str(CSRBENCH / "answers" / "csparql-answer-2.json"), "--system", "csparql",
                        "--csrbench", str(CSRBENCH), "--json", str(out)])
    assert code == 0 and "PASS" in capsys.readouterr().out
    assert len(json.loads(out.read_text())["windows"]) == 34


def test_compare_baseline_in_rspql_gives_the_csparql_rows(tmp_path) -> None:
    """compare's csparql-query approach with UC1 in RSP-QL (`--baseline-query`): with every RANGE
    set to the compared window size, the rows and feedback of the C-SPARQL baseline."""

    from tefq.simulate.csparql import run_csparql

    log = iptv_log(5, n=300, span_ms=90_000)
    want = run_csparql(str(ROOT / "usecases" / "uc1_csparql.rspql"), log, 7000)
    got = run_csparql(str(ROOT / "usecases" / "uc1_rspql.rspql"), log, 7000)
    assert got.rows == want.rows and want.rows
    assert (got.feedback_triples, got.ticks) == (want.feedback_triples, want.ticks)


def test_two_windows_with_one_name_are_refused(tmp_path) -> None:
    err = _error(tmp_path, PREFIX + "SELECT ?u FROM NAMED WINDOW :w ON <http://s> [RANGE PT10S]\n"
                 "FROM NAMED WINDOW :w ON <http://t> [RANGE PT5S]\nWHERE { WINDOW :w { ?u :join ?c } }")
    assert "two windows have the same name" in str(err) and err.line == 3


@pytest.mark.parametrize("kind", ["RSTREAM", "ISTREAM", "DSTREAM"])
def test_spark_physical_explain_names_each_querys_r2s(tmp_path, kind):
    from tefq.spark.planning.windowed import plan_windowed

    text = plan_windowed(_doc(tmp_path, SLIDING.format(kind=kind))).explain()
    assert f"-> SELECT, {kind}" in text
    assert "Rstream" not in text


def test_an_element_before_t0_is_no_element_of_a_windowed_run() -> None:
    """It lies in no window: `events_in` leaves it out, as Spark's windowed plan does (a document
    with TEF queries counts every element: t0 only places their ticks)."""
    import tefq

    windowed = ("PREFIX : <http://x/>\nREGISTER QUERY q AS SELECT ?g (COUNT(*) AS ?n) FROM STREAM <http://x/s>"
                " [RANGE 1500ms STEP 1000ms] WHERE { ?g :obs ?v } GROUP BY ?g\n")
    events = [(t, "<http://x/n0>", "<http://x/obs>", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>')
              for t in (-5000, -5000, 5000)]
    assert tefq.compile(windowed).run(events, engine="oracle").metrics["events_in"] == 1
    assert tefq.compile(windowed).run(events, engine="oracle", t0=-6000).metrics["events_in"] == 2
    tef = ("PREFIX : <http://x/>\nSELECT ?g AS G, ?n AS N (AGGREGATE ?g, COUNT ?v AS ?n WHERE { ?g :obs ?v }"
           ' GROUP BY ?g EVERY "PT1S"^^xsd:duration)\n')
    assert tefq.compile(tef).run(events, engine="oracle").metrics["events_in"] == 2

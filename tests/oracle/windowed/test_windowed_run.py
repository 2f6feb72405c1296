"""`tefq.oracle.windowed.run` (spec §8 default semantics, REGISTER STREAM feedback) and the
`tefq oracle` command line."""
from __future__ import annotations

import json

import pytest

from tefq.oracle.windowed import run
from tefq.oracle.windowed.check import CheckResult, WindowReport
from tefq.oracle.windowed.csrbench import render
from tefq.plan.logical import Document, StreamWindow, WindowedQuery
from tests.support.paths import CSRBENCH

EX = "http://ex.org/"
CSR = CSRBENCH
PRO = f"PREFIX : <{EX}>\n"
INT = "^^<http://www.w3.org/2001/XMLSchema#integer>"


def join(ts: int, user: str, channel: str):
    return (ts, f"<{EX}{user}>", f"<{EX}join>", f"<{EX}{channel}>")


def doc(*queries: WindowedQuery) -> Document:
    return Document("t.tef", None, (), (), queries)


COUNT = WindowedQuery("Counts", False, "select", (StreamWindow(f"{EX}log", 10000, 10000),), (),
                      PRO + "SELECT ?c (COUNT(?u) AS ?n) WHERE { ?u :join ?c } GROUP BY ?c ORDER BY ?c",
                      ("c", "n"))
EVENTS = [join(1000, "a", "A"), join(3000, "b", "A"), join(9999, "c", "B"), join(10000, "d", "B"),
          join(31000, "e", "A")]


def test_default_semantics_tumbling_report_at_close():
    (res,) = run(doc(COUNT), EVENTS)
    assert res.columns == ("c", "n")
    assert res.rows == [(10000, (f"<{EX}A>", f'"2"{INT}')), (10000, (f"<{EX}B>", f'"1"{INT}')),
                        (20000, (f"<{EX}B>", f'"1"{INT}')), (40000, (f"<{EX}A>", f'"1"{INT}'))]


def test_empty_windows_give_no_row_but_count_as_ticks():
    out = run(doc(COUNT), EVENTS)
    assert {r[0] for r in out[0].rows} == {10000, 20000, 40000}
    assert out.ticks == 4  # [0,10), [10,20), [20,30) (empty), [30,40)
    assert out.events_in == 5 and out.feedback_triples == 0


def test_sliding_window_sees_an_element_twice():
    q = WindowedQuery("S", False, "select", (StreamWindow(None, 10000, 5000),), (),
                      PRO + "SELECT ?u WHERE { ?u :join ?c }", ("u",))
    (res,) = run(doc(q), [join(7000, "a", "A")])
    assert res.rows == [(10000, (f"<{EX}a>",)), (15000, (f"<{EX}a>",))]


def test_register_stream_feedback_is_read_by_later_windows():
    counts = WindowedQuery(
        "JoinCounts", True, "construct", (StreamWindow(f"{EX}log", 10000, 10000),), (),
        PRO + "CONSTRUCT { ?c :joinCount ?n } WHERE { { SELECT ?c (COUNT(?u) AS ?n) WHERE { ?u :join ?c } GROUP BY ?c } }")
    reader = WindowedQuery("Reader", False, "select", (StreamWindow("JoinCounts", 10000, 10000),), (),
                           PRO + "SELECT ?c ?n WHERE { ?c :joinCount ?n }", ("c", "n"))
    out = run(doc(counts, reader), EVENTS)
    produced, read = out
    assert sorted(r[0] for r in produced.rows) == [10000, 10000, 20000, 40000]
    # the triples stamped 10000 are in the reader's window [10000, 20000), reported at 20000
    assert sorted(read.rows) == [(20000, (f"<{EX}A>", f'"2"{INT}')), (20000, (f"<{EX}B>", f'"1"{INT}')),
                         (30000, (f"<{EX}B>", f'"1"{INT}'))]
    assert out.feedback_triples == 4 == out.intermediate_bindings


def test_feedback_into_itself_accumulates():
    # a running total: each window adds its joins to the total it fed back one window earlier
    total = WindowedQuery(
        "Total", True, "construct", (StreamWindow(None, 10000, 10000), StreamWindow("Total", 10000, 10000)), (),
        PRO + "CONSTRUCT { :all :total ?t } WHERE { { SELECT (COUNT(?u) + COALESCE(MAX(?p), 0) AS ?t) "
              "WHERE { { ?u :join ?c } UNION { :all :total ?p } } } }")
    (res,) = run(doc(total), [join(1000, "a", "A"), join(12000, "b", "A"), join(25000, "c", "A")])
    assert [(t, row[2]) for t, row in res.rows] == [(10000, f'"1"{INT}'), (20000, f'"2"{INT}'),
                                                    (30000, f'"3"{INT}')]


def test_timestamp_function_and_streams_by_iri():
    q = WindowedQuery("T", False, "select", (StreamWindow(f"{EX}a", 10000, 10000),), (),
                      PRO + "SELECT ?u ?t WHERE { ?u :join ?c BIND(timestamp(?u, :join, ?c) AS ?t) }", ("u", "t"))
    out = run(doc(q), {f"{EX}a": [join(4000, "a", "A")], f"{EX}b": [join(5000, "b", "B")]})
    assert out[0].rows == [(10000, (f"<{EX}a>", f'"4000"{INT}'))]


def test_bad_sparql_is_a_located_error():
    from tefq.errors import TefqError

    q = WindowedQuery("Bad", False, "select", (StreamWindow(None, 1000, 1000),), (), "SELECT ?x WHERE { ?x }")
    with pytest.raises(TefqError) as e:
        run(doc(q), [join(0, "a", "A")])
    assert e.value.file == "t.tef" and e.value.line == 1


# ---------------------------------------------------------------- command line
needs_csr = pytest.mark.needs_shared("external/csrbench")


@needs_csr
def test_cli_check_writes_verdict_metrics_and_plot(tmp_path, capsys):
    from tefq.cli import run_command

    out, png = tmp_path / "r.json", tmp_path / "r.png"
    code = run_command(["oracle", "check", "--query", str(CSR / "queries" / "csparql_Q2.engine.query"),
                        "--stream", str(CSR / "csrbench-dataset.trig"),
                        "--answers", str(CSR / "answers" / "csparql-answer-2.json"),
                        "--system", "csparql", "--csrbench", str(CSR), "--json", str(out), "--plot", str(png)])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["verdict"] == "pass" and data["t0"] == 0
    assert {"open", "close", "expected", "actual", "precision", "recall"} <= set(data["windows"][0])
    assert len(data["windows"]) == 34 and png.stat().st_size > 0
    assert "PASS" in capsys.readouterr().out


@needs_csr
def test_cli_check_bad_input_exits_2(tmp_path, capsys):
    from tefq.cli import run_command

    base = ["oracle", "check", "--query", str(CSR / "queries" / "csparql_Q2.engine.query"),
            "--stream", str(CSR / "csrbench-dataset.trig")]
    assert run_command(base + ["--answers", str(tmp_path / "none.json"), "--system", "csparql"]) == 2
    assert "none.json" in capsys.readouterr().err
    answers = str(CSR / "answers" / "csparql-answer-2.json")
    assert run_command(base + ["--answers", answers, "--system", "flink"]) == 2
    assert "unknown system 'flink'" in capsys.readouterr().err


def test_table2_rendering_marks_differences_from_the_paper():
    def res(v: str) -> CheckResult:
        return CheckResult(v, 0, [0] if v == "pass" else [], [WindowReport(0, 1, 1, 0, 0, 1.0, 1.0)])
    table = render({("csparql", "3"): res("fail"), ("cqels", "3"): res("pass"), ("sparqlstream", "3"): res("pass"),
                    ("csparql", "5"): res("fail"), ("cqels", "5"): res("pass"), ("sparqlstream", "5"): res("pass")})
    lines = table.splitlines()
    assert lines[1].startswith("Q3") and "csparql (paper: pass)" in lines[1]
    assert lines[2].startswith("Q5") and lines[2].rstrip().endswith("-")


def _answers_json(results, tamper: bool = False) -> str:
    """tefq's own JSON result format: one SPARQL-JSON document per tick, with the tick."""
    docs: dict[int, list] = {}
    for tick, cells in results.rows:
        row = {}
        for name, cell in zip(results.columns, cells):
            if cell.startswith("<"):
                row[name] = {"type": "uri", "value": cell[1:-1]}
            else:
                lex, dt = cell[1:].split('"^^<')
                row[name] = {"type": "literal", "value": lex, "datatype": dt[:-1]}
        docs.setdefault(tick, []).append(row)
    if tamper:
        docs[max(docs)].pop()
    return "\n".join(json.dumps({"tick": t, "head": {"vars": list(results.columns)}, "results": {"bindings": b}})
                     for t, b in sorted(docs.items()))


def test_cli_check_accepts_tefq_json_and_commented_csparql(tmp_path, capsys):
    from tefq.cli import run_command

    query = tmp_path / "counts.rspql"
    query.write_text("# joins per channel\nREGISTER QUERY Counts AS\nPREFIX : <http://ex.org/>\n"
                     "SELECT ?c (COUNT(?u) AS ?n)\nFROM STREAM <http://ex.org/log> [RANGE 10s STEP 10s]\n"
                     "WHERE { ?u :join ?c }\nGROUP BY ?c\n")
    stream = tmp_path / "log.tsv"
    stream.write_text("ts\ts\tp\to\n" + "".join(f"{t}\t{s}\t{p}\t{o}\n" for t, s, p, o in EVENTS))
    (res,) = run(doc(COUNT), EVENTS)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(_answers_json(res))
    bad.write_text(_answers_json(res, tamper=True))
    base = ["oracle", "check", "--query", str(query), "--stream", str(stream), "--system", "default"]
    out = tmp_path / "r.json"
    assert run_command(base + ["--answers", str(good), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["verdict"] == "pass"
    assert run_command(base + ["--answers", str(bad), "--json", str(out)]) == 1  # FAIL gates CI (issue 15)
    data = json.loads(out.read_text())
    assert data["verdict"] == "fail" and data["windows"][-1]["recall"] == 0.0
    capsys.readouterr()
    query.write_text("REGISTER QUERY Counts AS\nSELECT ?c\nFROM STREAM <http://ex.org/log> [RANGE 10s STEP 10s]\n"
                     "WHERE { ?u ?c }\n")
    assert run_command(base + ["--answers", str(good)]) == 2
    assert f"{query}:4:" in capsys.readouterr().err  # rdflib's error, located in the file


DOUBLE = "^^<http://www.w3.org/2001/XMLSchema#double>"
SUMS = WindowedQuery("Sums", False, "select", (StreamWindow(f"{EX}log", 10000, 10000),), (),
                     PRO + "SELECT (SUM(?v) AS ?s) (AVG(?v) AS ?a) WHERE { ?x :v ?v }", ("s", "a"))


@pytest.mark.parametrize("values", [["1e16", "1.0", "-1e16", "1.0"], ["1e16", "-1e16", "1.0", "1.0"],
                                    ["1.0", "1e16", "1.0", "-1e16"]])
def test_a_sum_of_doubles_is_exact_whatever_the_order(values):
    """Like TEF's SUM (docs/semantics.md): the exact sum, rounded once, not rdflib's running sum in
    the solutions' order (1e16 + 1.0 is 1e16 again: 0.0, 1.0 or 2.0 by order). Spark's vectorised
    windows sum the same way (kernels/windowed/aggregates.group_double_sums)."""
    els = [(1000 + i, f"<{EX}x{i}>", f"<{EX}v>", f'"{v}"{DOUBLE}') for i, v in enumerate(values)]
    (res,) = run(doc(SUMS), els)
    assert res.rows == [(10000, (f'"2"{DOUBLE}', f'"0.5"{DOUBLE}'))]

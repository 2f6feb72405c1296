"""Result and metrics writers: golden outputs for SPARQL 1.1 CSV / TSV / JSON (spec §5)."""
from __future__ import annotations

import json

import pytest

from tefq.errors import TefqError
from tefq.io.result_writers import results_text, write_metrics, write_results
from tefq.results import Metrics, QueryResult

I = "<http://www.w3.org/2001/XMLSchema#integer>"
DEC = "<http://www.w3.org/2001/XMLSchema#decimal>"
DBL = "<http://www.w3.org/2001/XMLSchema#double>"


def q1() -> QueryResult:
    return QueryResult("q1", ("ch", "n", "note"), [
        (2000, ("<http://e/ch1>", f'"3"^^{I}', r'"a, \"b\"\nc"')),
        (1000, ("<http://e/ch2>", f'"2.5"^^{DBL}', None)),
        (1000, ("_:x", f'"1.5"^^{DEC}', '"hi"@en')),
    ])


def q2() -> QueryResult:
    return QueryResult("uc2", ("?ch", "?total"), [(1000, ("<http://e/ch1>", f'"7"^^{I}'))])


def test_csv_golden() -> None:
    assert results_text([q1()], "csv") == (
        "tick,ch,n,note\r\n"
        "1000,_:x,1.5,hi\r\n"
        "1000,http://e/ch2,2.5,\r\n"
        '2000,http://e/ch1,3,"a, ""b""\nc"\r\n')


def test_tsv_golden() -> None:
    assert results_text([q1()], "tsv") == (
        "?tick\t?ch\t?n\t?note\n"
        '1000\t_:x\t1.5\t"hi"@en\n'
        f'1000\t<http://e/ch2>\t"2.5"^^{DBL}\t\n'  # a bare 2.5 would read back as xsd:decimal
        '2000\t<http://e/ch1>\t3\t"a, \\"b\\"\\nc"\n')


def test_json_lines_golden() -> None:
    lines = results_text([q1()], "jsonl").splitlines()
    assert [json.loads(x) for x in lines] == [
        {"tick": 1000, "head": {"vars": ["ch", "n", "note"]}, "results": {"bindings": [
            {"ch": {"type": "bnode", "value": "x"},
             "n": {"type": "literal", "value": "1.5", "datatype": DEC.strip("<>")},
             "note": {"type": "literal", "value": "hi", "xml:lang": "en"}},
            {"ch": {"type": "uri", "value": "http://e/ch2"},
             "n": {"type": "literal", "value": "2.5", "datatype": DBL.strip("<>")}}]}},
        {"tick": 2000, "head": {"vars": ["ch", "n", "note"]}, "results": {"bindings": [
            {"ch": {"type": "uri", "value": "http://e/ch1"},
             "n": {"type": "literal", "value": "3", "datatype": I.strip("<>")},
             "note": {"type": "literal", "value": 'a, "b"\nc'}}]}},
    ]


def test_several_queries_share_one_table_with_a_query_column() -> None:
    assert results_text([q1(), q2()], "csv") == (
        "query,tick,ch,n,note,total\r\n"
        "q1,1000,_:x,1.5,hi,\r\n"
        "q1,1000,http://e/ch2,2.5,,\r\n"
        'q1,2000,http://e/ch1,3,"a, ""b""\nc",\r\n'
        "uc2,1000,http://e/ch1,,,7\r\n")
    tsv = results_text([q1(), q2()], "tsv").splitlines()
    assert tsv[0] == "?query\t?tick\t?ch\t?n\t?note\t?total"
    assert tsv[-1] == '"uc2"\t1000\t<http://e/ch1>\t\t\t7'
    docs = [json.loads(x) for x in results_text([q1(), q2()], "jsonl").splitlines()]
    assert [(d["query"], d["tick"]) for d in docs] == [("q1", 1000), ("q1", 2000), ("uc2", 1000)]


def test_out_file_directory_and_stdout(tmp_path, capsys) -> None:
    out = tmp_path / "r.csv"
    assert write_results([q1()], "csv", str(out)) == [str(out)]
    assert out.read_bytes().decode() == results_text([q1()], "csv")  # CRLF kept as written
    d = str(tmp_path / "new") + "/"
    written = write_results([q1(), q2()], "tsv", d)
    assert [p.rsplit("/", 1)[1] for p in written] == ["q1.tsv", "uc2.tsv"]
    assert open(written[1]).read() == results_text([q2()], "tsv")
    write_results([q1(), q2()], "jsonl", None)
    assert capsys.readouterr().out == results_text([q1(), q2()], "jsonl")


def test_single_query_to_an_existing_directory(tmp_path) -> None:
    assert write_results([q2()], "csv", str(tmp_path)) == [str(tmp_path / "uc2.csv")]


def test_empty_result_writes_the_header() -> None:
    assert results_text([QueryResult("q", ("a",))], "csv") == "tick,a\r\n"
    assert results_text([QueryResult("q", ("a",))], "jsonl") == ""


def test_bad_format_and_unwritable_output(tmp_path) -> None:
    with pytest.raises(TefqError, match="unknown result format"):
        write_results([q1()], "yaml", None)
    with pytest.raises(TefqError, match="cannot write") as info:
        write_results([q1()], "csv", str(tmp_path / "missing" / "r.csv"))
    assert info.value.file == str(tmp_path / "missing" / "r.csv")


def test_metrics(tmp_path, capsys) -> None:
    m = Metrics(events_in=5, facts_created=2, wall_seconds=0.5, extra={"micro_batches": 3})
    f = tmp_path / "m.json"
    write_metrics(m, str(f))
    data = json.loads(f.read_text())
    assert data["events_in"] == 5 and data["micro_batches"] == 3 and data["late_events"] == 0
    assert f.read_text().startswith("{\n  ")
    write_metrics(m, None)
    assert capsys.readouterr() == ("", "")


# ---- properties: every format reads back to what was written --------------------------------
from hypothesis import given, settings
from hypothesis import strategies as st

from tefq import terms
from tests.support.result_cells import cells


def _term_of_json(b: dict) -> str:
    if b["type"] == "uri":
        return terms.iri(b["value"])
    if b["type"] == "bnode":
        return "_:" + b["value"]
    return terms.literal(b["value"], b.get("datatype"), b.get("xml:lang"))


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 10**6), st.tuples(cells, cells)), max_size=6))
def test_written_cells_read_back(rows) -> None:
    import csv
    import io

    from tefq.io.ntriples import normalise_term

    result = QueryResult("q", ("a", "b"), rows)
    ordered = result.sorted_rows()
    parsed = list(csv.reader(io.StringIO(results_text([result], "csv"), newline="")))
    assert parsed[0] == ["tick", "a", "b"]
    assert parsed[1:] == [[str(t)] + ["" if c is None else
                                      terms.iri_value(c) if c.startswith("<") else
                                      c if c.startswith("_:") else terms.split_literal(c)[0]
                                      for c in cs] for t, cs in ordered]
    tsv = results_text([result], "tsv").split("\n")
    assert tsv[-1] == "" and len(tsv) == len(ordered) + 2
    for line, (t, cs) in zip(tsv[1:], ordered):
        fields = line.split("\t")
        assert int(fields[0]) == t
        assert [normalise_term(f) if f else None for f in fields[1:]] == list(cs)
    docs = [json.loads(x) for x in results_text([result], "jsonl").splitlines()]
    back = [(d["tick"], tuple(_term_of_json(b[n]) if n in b else None for n in ("a", "b")))
            for d in docs for b in d["results"]["bindings"]]
    assert back == ordered

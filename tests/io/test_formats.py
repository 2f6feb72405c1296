"""Result formats of `tefq run --format` (issue 15): standard SPARQL results parsed back with
rdflib and compared with the CSV; text, Parquet and Arrow; --tick-format; atomic files and safe
file names for `--out DIR/`."""
from __future__ import annotations

import csv
import io
import json
import os

import pytest

from tefq.cli import run_command
from tefq.errors import TefqError
from tefq.io.paths import path_in, safe_name
from tefq.io.result_writers import results_text, write_results
from tefq.results import QueryResult
from tests.support.paths import ROOT

SPEC10 = ROOT / "examples" / "spec10"
XSD = "http://www.w3.org/2001/XMLSchema#"

# Two queries, one of them with an unbound cell (OPTIONAL) and a name that is a path outside the
# output directory if used as a file name.
DOC = """PREFIX : <http://example.org/iptv#>
CONSTRUCT FACT UserFact {?user :watching ?channel .}
(UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))
SELECT ?channel AS CHANNEL, ?user AS USER
(AGGREGATE ?channel, COUNT ?user WHERE (CURRENT ?user :watching ?channel) GROUP BY ?channel
 EVERY "PT5S"^^xsd:duration)

REGISTER QUERY <http://ex.org/../../escape> AS
SELECT ?user ?label
FROM STREAM <http://example.org/iptv/log> [RANGE 10s STEP 10s]
WHERE { ?user :join ?channel . OPTIONAL { ?user :label ?label } }
"""


def tefq(capsys, *argv) -> tuple[int, str, str]:
    code = run_command([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_spec10(capsys, *extra) -> str:
    code, out, err = tefq(capsys, "run", SPEC10 / "uc1.tef", "--stream", SPEC10 / "events.tsv",
                          "--engine", "oracle", "--quiet", *extra)
    assert code == 0, err
    return out


def csv_rows(text: str) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return rows[0], rows[1:]


def rdflib_rows(text: str, fmt: str) -> tuple[list[str], list[list[str]]]:
    from rdflib.query import Result

    res = Result.parse(io.StringIO(text), format=fmt)
    names = [str(v) for v in res.vars]
    return names, [["" if row[i] is None else str(row[i]) for i in range(len(names))] for row in res]


@pytest.mark.parametrize("fmt", ["json", "xml"])
def test_sparql_json_and_xml_parse_back_with_rdflib_as_the_csv(capsys, fmt):
    head, rows = csv_rows(run_spec10(capsys))
    assert head == ["tick", "CHANNEL", "USER"] and len(rows) == 6
    assert rdflib_rows(run_spec10(capsys, "--format", fmt), fmt) == (head, rows)


@pytest.mark.parametrize("fmt", ["json", "xml"])
def test_two_queries_and_unbound_cells_parse_back(tmp_path, capsys, fmt):
    (tmp_path / "two.tef").write_text(DOC)
    events = tmp_path / "e.tsv"
    events.write_text((SPEC10 / "events.tsv").read_text()
                      + "2000\t<http://example.org/iptv#Alice>\t<http://example.org/iptv#label>\t\"A\"\n")
    argv = ["run", tmp_path / "two.tef", "--stream", events, "--engine", "oracle", "--quiet"]
    _, text, _ = tefq(capsys, *argv)
    head, rows = csv_rows(text)
    assert head[:2] == ["query", "tick"] and "label" in head
    assert any(r[head.index("label")] == "" for r in rows if r[0] != "q1")  # an unbound cell
    _, text, _ = tefq(capsys, *argv, "--format", fmt)
    assert rdflib_rows(text, fmt) == (head, rows)


def test_json_is_one_document_and_jsonl_keeps_the_former_lines(capsys):
    doc = json.loads(run_spec10(capsys, "--format", "json"))
    assert doc["head"]["vars"] == ["tick", "CHANNEL", "USER"]
    assert doc["results"]["bindings"][0]["tick"] == {"type": "literal", "value": "5000", "datatype": XSD + "integer"}
    lines = [json.loads(x) for x in run_spec10(capsys, "--format", "jsonl").splitlines()]
    assert [d["tick"] for d in lines] == [5000, 10000, 15000]
    assert lines[0]["head"]["vars"] == ["CHANNEL", "USER"]


def test_tick_format_iso(capsys):
    head, rows = csv_rows(run_spec10(capsys, "--tick-format", "iso"))
    assert [r[0] for r in rows][:2] == ["1970-01-01T00:00:05.000Z"] * 2
    doc = json.loads(run_spec10(capsys, "--format", "json", "--tick-format", "iso"))
    assert doc["results"]["bindings"][0]["tick"]["datatype"] == XSD + "dateTime"
    names, parsed = rdflib_rows(run_spec10(capsys, "--format", "json", "--tick-format", "iso"), "json")
    assert parsed[0][0].startswith("1970-01-01T00:00:05")
    lines = [json.loads(x) for x in run_spec10(capsys, "--format", "jsonl", "--tick-format", "iso").splitlines()]
    assert lines[0]["tick"] == "1970-01-01T00:00:05.000Z"


def test_text_is_an_aligned_table(capsys):
    lines = run_spec10(capsys, "--format", "text").splitlines()
    assert lines[0].split() == ["tick", "CHANNEL", "USER"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[2].split() == ["1970-01-01T00:00:05.000Z", "http://example.org/iptv#A", "1"]  # a person reads ISO
    assert run_spec10(capsys, "--format", "text", "--tick-format", "ms").splitlines()[2].split()[0] == "5000"
    assert len({len(line) for line in lines[1:-1]}) == 1  # aligned: every row as wide as the rule
    assert lines[-1] == "(6 rows)"


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_parquet_and_arrow_hold_a_timestamp_tick(tmp_path, capsys, fmt):
    import pyarrow as pa
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    out = tmp_path / f"r.{fmt}"
    run_spec10(capsys, "--format", fmt, "--out", out)
    table = pq.read_table(out) if fmt == "parquet" else feather.read_table(out)
    assert table.schema.field("tick").type == pa.timestamp("ms", tz="UTC")
    _, rows = csv_rows(run_spec10(capsys))
    ticks = [int(t.timestamp() * 1000) for t in table.column("tick").to_pylist()]
    assert ticks == [int(r[0]) for r in rows]
    assert table.column("CHANNEL").to_pylist()[0] == "http://example.org/iptv#A"  # typed columns by default
    assert table.column("USER").to_pylist()[0] == 1 and table.schema.field("USER").type == pa.int64()
    run_spec10(capsys, "--format", fmt, "--out", out, "--terms", "ntriples")  # the lossless form on request
    table = pq.read_table(out) if fmt == "parquet" else feather.read_table(out)
    assert table.column("CHANNEL").to_pylist()[0] == "<http://example.org/iptv#A>"
    assert table.column("USER").to_pylist()[0] == f'"1"^^<{XSD}integer>'


def test_out_dir_names_are_safe_and_inside_the_directory(tmp_path, capsys):
    (tmp_path / "two.tef").write_text(DOC)
    out = tmp_path / "out" / "results"
    code, _, err = tefq(capsys, "run", tmp_path / "two.tef", "--stream", SPEC10 / "events.tsv",
                        "--engine", "oracle", "--quiet", "--format", "json", "--out", f"{out}/")
    assert code == 0, err
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == 2 and files[1] == "q1.json"
    assert files[0].startswith("http_ex.org_escape-") and files[0].endswith(".json")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["results"]  # nothing escaped


def test_safe_name_keeps_distinct_names_distinct():
    assert safe_name("q1") == "q1" and safe_name("UC1.counts") == "UC1.counts"
    names = ["a/b", "a_b", "a?b", "..", ".hidden", "", "x" * 300]
    safe = [safe_name(n) for n in names]
    assert len(set(safe)) == len(names)
    assert all("/" not in s and not s.startswith(".") and s and len(s) < 120 for s in safe)
    assert os.path.dirname(path_in("/tmp/d", "../../etc/passwd", "csv")) == "/tmp/d"


def test_result_files_are_replaced_atomically(tmp_path):
    """A write that fails half-way leaves the previous file intact and no temporary file."""
    out = tmp_path / "r.csv"
    out.write_text("previous\n")
    good = QueryResult("q", ("a",), [(1000, ("<http://e/x>",))])
    bad = QueryResult("q", ("a",), [(1000, ("<http://e/x>",)), (2000, ('"a\x01b"',))])
    with pytest.raises(TefqError, match="XML 1.0 cannot represent"):
        write_results([bad], "xml", str(out))  # the second row cannot be written as XML
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]
    write_results([good], "csv", str(out))
    assert out.read_bytes().decode() == results_text([good], "csv")
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]


def test_a_csv_write_that_dies_half_way_keeps_the_previous_file(tmp_path, monkeypatch):
    import tefq.io.result_writers as writers

    out = tmp_path / "r.csv"
    out.write_text("previous\n")
    real = writers.csv_cell

    def dies_on_y(cell):
        if cell == "<http://e/y>":
            raise KeyboardInterrupt  # e.g. the user pressed Ctrl-C during a long write
        return real(cell)

    monkeypatch.setattr(writers, "csv_cell", dies_on_y)
    rows = [(1000, ("<http://e/x>",)), (2000, ("<http://e/y>",))]
    with pytest.raises(KeyboardInterrupt):
        write_results([QueryResult("q", ("a",), rows)], "csv", str(out))
    assert out.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.csv"]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_metrics_file_is_written_atomically(tmp_path, capsys):
    metrics = tmp_path / "m.json"
    run_spec10(capsys, "--metrics", metrics)
    assert json.loads(metrics.read_text())["events_in"] == 8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]

"""`tefq gen iptv`, `tefq stats`, `tefq usecase` through the command line, and the file formats."""
from __future__ import annotations

import argparse
import os

import pytest

from tefq.errors import TefqError
from tefq.iptv import cli as icli

ARGS = ["--events", "3000", "--users", "500", "--channels", "20", "--seed", "5"]


def run(argv: list[str]) -> int:
    from tefq.cli import run_command

    return run_command(argv)


@pytest.fixture(scope="module")
def formats(tmp_path_factory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("formats")
    out = {}
    for fmt in ("parquet", "tsv", "csv", "nq", "trig"):
        out[fmt] = str(base / fmt)
        assert run(["gen", "iptv", "--out", out[fmt], "--epg", "--format", fmt, *ARGS]) == 0
    return out


def test_layout(formats):
    for fmt, d in formats.items():
        for sub in ("log", "epg"):
            names = sorted(os.listdir(os.path.join(d, sub)))
            assert names and names[0] == f"part-00000.{fmt}"
            assert all(n.startswith("part-") and n.endswith("." + fmt) for n in names)


def test_text_header_and_terms(formats):
    with open(os.path.join(formats["tsv"], "log", "part-00000.tsv")) as f:
        header, first = f.readline(), f.readline()
    assert header == "ts\ts\tp\to\n"
    ts, s, p, o = first.rstrip("\n").split("\t")
    assert ts.isdigit() and s.startswith("<http://example.org/iptv#u") and p == "<http://example.org/iptv#join>"
    with open(os.path.join(formats["csv"], "epg", "part-00000.csv")) as f:
        assert f.readline() == "ts,s,p,o\n"


def test_every_format_reads_back_as_the_same_stream(formats):
    readers = pytest.importorskip("tefq.io.readers")
    reference = list(readers.read_stream(formats["parquet"]))
    assert len(reference) > 3000  # log and program guide
    for fmt in ("tsv", "csv", "nq", "trig"):
        assert list(readers.read_stream(formats[fmt])) == reference, fmt


def test_stats(formats, capsys):
    assert run(["stats", formats["parquet"]]) == 0
    out = capsys.readouterr().out
    lines = {line[:21].strip(): line[21:].strip() for line in out.splitlines()}
    assert lines["events"].startswith("3") and "log 3000" in lines["events"]
    assert lines["users"] == "500"
    assert lines["channels"] == "20"
    assert int(lines["programs"].split()[0]) > 20
    assert "ratio" in lines["refresh bindings"]
    assert "p50" in lines["session length"]


def test_stats_reads_text_formats_like_parquet(formats, capsys):
    run(["stats", formats["parquet"]])
    reference = capsys.readouterr().out.splitlines()[1:]
    for fmt in ("tsv", "nq"):
        assert run(["stats", formats[fmt]]) == 0
        assert capsys.readouterr().out.splitlines()[1:] == reference, fmt


def test_stats_window_option(formats, capsys):
    assert run(["stats", os.path.join(formats["parquet"], "log"), "--window", "PT1M"]) == 0
    assert "60 s ticks" in capsys.readouterr().out
    assert run(["stats", formats["parquet"], "--window", "soon"]) == 2
    assert "--window" in capsys.readouterr().err


def test_bad_generator_input_exits_2(tmp_path, capsys):
    assert run(["gen", "iptv", "--out", str(tmp_path / "x"), "--events", "0"]) == 2
    assert "--events" in capsys.readouterr().err
    assert run(["gen", "iptv", "--out", str(tmp_path / "x"), "--format", "xml"]) == 2
    assert run(["stats", str(tmp_path / "missing")]) == 2
    out, err = capsys.readouterr()
    assert "missing" in err and out == ""  # no half-printed report before the error


def test_parse_window():
    assert icli.parse_window("10s") == 10_000
    assert icli.parse_window("PT1M") == 60_000
    assert icli.parse_window("500ms") == 500
    with pytest.raises(TefqError):
        icli.parse_window("P1D")


def test_usecase_command_lines(tmp_path):
    ns = argparse.Namespace(name="uc1", data=str(tmp_path), engine="oracle", format="csv", out=None,
                            metrics="m.json", quiet=False)
    request = icli.usecase_request(ns)
    assert request.query.path.endswith(os.path.join("usecases", "uc1.tef"))
    assert request.events == [os.path.join(str(tmp_path), "log")]  # UC1 reads the log only
    assert request.engine == "oracle" and request.output.metrics == "m.json"
    ns.name = "uc3"
    assert icli.usecase_request(ns).events == [str(tmp_path)]


def test_usecase_refuses_a_foreign_data_directory(tmp_path):
    (tmp_path / "something").write_text("x")
    with pytest.raises(TefqError):
        icli.ensure_default_data(str(tmp_path))


def test_usecase_documents_hold_the_paper_queries():
    spec_lines = {
        "uc1": ["COUNT ?user WHERE (CURRENT ?user :watching ?channel) GROUP BY ?channel EVERY \"PT10S\"^^xsd:Duration"],
        "uc2": ["SUM DURATION(?SC,?EC) AS ?TotalTime, COUNT ?user AS ?Count"],
        "uc3": ["CONSTRUCT FACT ViewShipFact {?user :attends ?program .}",
                "WHILE ?_ :showing ?show [?SS,?ES] EVERY \"PT1M\"^^xsd:Duration"],
    }
    for name, needles in spec_lines.items():
        text = icli.usecase_file(name).read_text()
        assert "PREFIX : <http://example.org/iptv#>" in text
        assert "CONSTRUCT FACT UserFact {?user :watching ?channel .}" in text
        for needle in needles:
            assert needle in text, (name, needle)

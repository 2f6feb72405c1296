"""Typed results (issue 24): `--terms typed` for Parquet / Arrow output, `Result.to_arrow(terms="typed")`
and `tefq.spark.apply(..., terms="typed")` give counts as longs, sums and averages as doubles, IRIs
without brackets, literals of one datatype by their type; a column of mixed terms keeps the
N-Triples form; the N-Triples form stays the default (docs/formats.md, "Typed columns")."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tefq
from tefq.cli import run_command
from tefq.iptv.generator import IptvConfig
from tefq.iptv.writer import generate
from tefq.results import (BOOLEAN, DOUBLE, LONG, NTRIPLES, STRING, TERM, TIMESTAMP, column_kinds, python_value,
                          typed_column)
from tests.support.paths import ROOT

XSD = "http://www.w3.org/2001/XMLSchema#"
NS = "http://example.org/iptv#"


def usecase(name: str) -> tefq.Query:
    return tefq.load(os.path.join(ROOT, "usecases", f"{name}.tef"))


@pytest.fixture(scope="module")
def iptv_log(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("gen") / "iptv")
    generate(IptvConfig(events=1500, users=40, channels=5, days=0.02, seed=11), out, fmt="tsv")
    return os.path.join(out, "log")


@pytest.mark.parametrize("cells, kind, values", [
    ([f"<{NS}a>", None, f"<{NS}b>"], STRING, [f"{NS}a", None, f"{NS}b"]),
    ([f'"1"^^<{XSD}integer>', f'"-7"^^<{XSD}long>'], LONG, [1, -7]),
    ([f'"2.5"^^<{XSD}decimal>', f'"1.0E0"^^<{XSD}double>'], DOUBLE, [2.5, 1.0]),
    ([f'"1"^^<{XSD}integer>', f'"2.5"^^<{XSD}double>'], DOUBLE, [1.0, 2.5]),  # numbers of both kinds
    ([f'"true"^^<{XSD}boolean>', f'"0"^^<{XSD}boolean>'], BOOLEAN, [True, False]),
    ([f'"1970-01-01T00:00:01.5Z"^^<{XSD}dateTime>'], TIMESTAMP, [1500]),
    (['"x"', f'"y"^^<{XSD}string>'], STRING, ["x", "y"]),  # a simple literal is an xsd:string
    ([f"<{NS}a>", '"a"'], NTRIPLES, [f"<{NS}a>", '"a"']),  # mixed terms
    ([f"<{NS}a>", f'"1"^^<{XSD}integer>'], NTRIPLES, [f"<{NS}a>", f'"1"^^<{XSD}integer>']),
    (['"chat"@fr'], NTRIPLES, ['"chat"@fr']),  # the lexical form alone would drop the language
    ([f'"x"^^<{XSD}integer>'], NTRIPLES, [f'"x"^^<{XSD}integer>']),  # ill-typed
    ([f'"{1 << 64}"^^<{XSD}integer>'], NTRIPLES, [f'"{1 << 64}"^^<{XSD}integer>']),  # beyond a long
    ([None, None], STRING, [None, None]),
])
def test_a_columns_kind_and_values_come_from_its_cells(cells, kind, values):
    assert typed_column(cells) == (kind, values)


def test_planned_kinds_win_over_the_cells():
    assert typed_column([f'"3"^^<{XSD}integer>'], DOUBLE) == (DOUBLE, [3.0])  # a SUM of integers
    assert typed_column([f"<{NS}a>", '"a"'], TERM) == (NTRIPLES, [f"<{NS}a>", '"a"'])
    with pytest.raises(ValueError, match="long column holds"):
        typed_column([f"<{NS}a>"], LONG)


def test_the_plan_gives_the_aggregates_kinds():
    assert column_kinds(usecase("uc1").document().queries[0]) == {"CHANNEL": TERM, "USER": LONG}
    assert column_kinds(usecase("uc2").document().queries[0]) == {
        "Channel": TERM, "CurrentUsers": LONG, "AverageDuration": DOUBLE}  # SUM DURATION / COUNT
    assert column_kinds(usecase("uc3").document().queries[0]) == {"Show": TERM, "USER": LONG,
                                                                   "AverageViewTime": DOUBLE}


def test_parquet_output_and_to_arrow_have_one_typed_schema(tmp_path, iptv_log, capsys):
    out = tmp_path / "uc2.parquet"
    code = run_command(["run", os.path.join(ROOT, "usecases", "uc2.tef"), "--stream", iptv_log, "--engine", "oracle",
                 "--quiet", "--format", "parquet", "--terms", "typed", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    written = pq.read_table(out)
    result = usecase("uc2").run(iptv_log)
    arrow = result.to_arrow(terms="typed")
    assert written.schema == arrow.schema
    assert arrow.schema.types == [pa.timestamp("ms", tz="UTC"), pa.string(), pa.int64(), pa.float64()]
    want = [[python_value(c) for c in cells] for _, cells in result.query_result().sorted_rows()]
    got = [[r["Channel"], r["CurrentUsers"], r["AverageDuration"]] for r in written.to_pylist()]
    assert got == want and got and got[0][0].startswith(NS)
    assert result.to_arrow().schema.field("CurrentUsers").type == pa.int64()  # the default: typed
    assert result.to_arrow(terms="ntriples").schema.field("CurrentUsers").type == pa.string()


def test_a_column_of_mixed_terms_keeps_the_ntriples_form(tmp_path):
    events = [(1000, f"<{NS}u1>", f"<{NS}join>", f"<{NS}ch1>"), (2000, f"<{NS}u2>", f"<{NS}join>", '"ch2"')]
    result = usecase("uc1").run(events)
    arrow = result.to_arrow(terms="typed")
    channels = set(arrow.column("CHANNEL").to_pylist())
    assert arrow.schema.field("CHANNEL").type == pa.string() and channels == {f"<{NS}ch1>", '"ch2"'}
    assert arrow.schema.field("USER").type == pa.int64()


def test_typed_terms_are_for_parquet_and_arrow_only(tmp_path, iptv_log, capsys):
    code = run_command(["run", os.path.join(ROOT, "usecases", "uc1.tef"), "--stream", iptv_log, "--engine", "oracle",
                 "--quiet", "--format", "csv", "--terms", "typed"])
    err = capsys.readouterr().err
    assert code == 2 and "--terms typed applies to --format parquet and arrow" in err
    with pytest.raises(tefq.TefqError, match="unknown --terms 'nt'"):
        usecase("uc1").run(iptv_log).to_arrow(terms="nt")


@pytest.mark.spark
def test_spark_apply_of_uc2_sums_to_the_oracles_figures(spark, iptv_log):
    """A batch `tefq.spark.apply` of UC2 with typed terms: long and double columns whose sums in
    Spark SQL are the oracle's."""
    import tefq.spark
    from tefq.io.readers import read_stream

    events = list(read_stream(iptv_log))
    df = spark.createDataFrame(events, "ts long, s string, p string, o string")
    out = tefq.spark.apply(usecase("uc2"), df)  # typed by default: a long column to sum
    assert dict(out.dtypes) == {"tick": "timestamp", "Channel": "string", "CurrentUsers": "bigint",
                                "AverageDuration": "double"}
    out.createOrReplaceTempView("uc2_typed")
    users, duration, rows = spark.sql("SELECT sum(CurrentUsers), sum(AverageDuration), count(*) FROM uc2_typed").first()
    oracle = [[python_value(c) for c in cells] for _, cells in usecase("uc2").run(iptv_log).query_result().rows]
    assert rows == len(oracle) > 0
    assert users == sum(r[1] for r in oracle)
    assert duration == pytest.approx(sum(r[2] for r in oracle), rel=1e-12)
    channels = {r[0] for r in out.select("Channel").collect()}
    assert channels == {r[0] for r in oracle} and all(c.startswith(NS) for c in channels)

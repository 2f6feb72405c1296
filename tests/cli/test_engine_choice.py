"""`--engine auto` (docs/cli.md, "Choosing the engine"): the oracle for small bounded inputs,
Spark for what only Spark does and for large inputs. No Spark is started here."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from tefq.cli import build_parser, run_request
from tefq.service import AUTO_ORACLE_EVENTS, choose_engine, estimated_events


def request_for(*argv: str):
    return run_request(build_parser().parse_args(["run", "q.tef", *argv]))


def test_parquet_rows_are_counted_text_estimated(tmp_path) -> None:
    pq.write_table(pa.table({"ts": [1, 2, 3], "s": ["a"] * 3, "p": ["b"] * 3, "o": ["c"] * 3}), tmp_path / "a.parquet")
    assert estimated_events([str(tmp_path / "a.parquet")]) == 3
    (tmp_path / "t.tsv").write_text("x" * 800)
    assert estimated_events([str(tmp_path / "t.tsv")]) == 10


def test_small_bounded_input_goes_to_the_oracle(tmp_path) -> None:
    (tmp_path / "s.tsv").write_text("ts\ts\tp\to\n")
    request = request_for("--stream", str(tmp_path / "s.tsv"), "--engine", "auto", "--quiet")
    assert choose_engine(request) == "oracle"
    for extra in (["--checkpoint", str(tmp_path / "ck")], ["--follow"], ["--master", "local[2]"]):
        request = request_for("--stream", str(tmp_path / "s.tsv"), "--engine", "auto", "--quiet", *extra)
        assert choose_engine(request) == "spark", extra


def test_large_input_goes_to_spark(tmp_path) -> None:
    with open(tmp_path / "s.tsv", "wb") as fh:
        fh.truncate(AUTO_ORACLE_EVENTS * 80)  # sparse: no disk used
    request = request_for("--stream", str(tmp_path / "s.tsv"), "--engine", "auto", "--quiet")
    assert choose_engine(request) == "spark"


def test_spark_stays_the_default() -> None:
    request = request_for("--stream", "x")
    assert request.engine == "spark" and choose_engine(request) == "spark"

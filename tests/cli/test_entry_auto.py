"""Which command lines start Spark at once (tefq.entry.bound_for_spark): those naming it, following a
stream, and those left to `--engine auto` on an input auto runs on Spark for any query."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tefq.entry import bound_for_spark
from tefq.service import AUTO_ORACLE_EVENTS, auto_engine


def stream_of(directory: Path, events: int) -> Path:
    directory.mkdir()
    ts = pa.array(range(events), pa.int64())
    term = pa.array(["<http://ex.org/a>"] * events)
    pq.write_table(pa.table({"ts": ts, "s": term, "p": term, "o": term}), directory / "part-0.parquet")
    return directory


@pytest.fixture(scope="module")
def streams(tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("streams")
    return str(stream_of(root / "large", AUTO_ORACLE_EVENTS)), str(stream_of(root / "small", AUTO_ORACLE_EVENTS - 1))


def test_auto_on_an_input_it_runs_on_spark_starts_spark_at_once(streams, monkeypatch) -> None:
    from tefq.spark.runtime import session_source

    monkeypatch.delenv("TEFQ_ENGINE", raising=False)
    monkeypatch.setattr(session_source, "is_warm", lambda: False)  # as in a command line with Spark to start
    large, small = streams
    assert auto_engine(AUTO_ORACLE_EVENTS).engine == "spark" and auto_engine(AUTO_ORACLE_EVENTS - 1).engine == "oracle"
    for argv in (["run", "q.tef", "--stream", large], ["facts", "q.tef", f"--stream={large}"],
                 ["run", "q.tef", "--stream", f"http://ex.org/s={large}"], ["run", "q.tef", "--engine", "auto",
                                                                            "--stream", small, "--stream", large]):
        assert bound_for_spark(argv), argv
    for argv in (["run", "q.tef", "--stream", small], ["run", "q.tef", "--stream", large, "--engine", "oracle"],
                 ["run", "q.tef", "--stream", "-"], ["run", "q.tef", "--stream", large + "-missing"],
                 ["gen", "iptv", "--out", large], ["run", "q.tef", "--stream"]):
        assert not bound_for_spark(argv), argv
    monkeypatch.setenv("TEFQ_ENGINE", "oracle")
    assert not bound_for_spark(["run", "q.tef", "--stream", large])
    assert bound_for_spark(["run", "q.tef", "--stream", small, "--engine=spark"])

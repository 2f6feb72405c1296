"""`--engine auto`, the default (docs/cli.md, "Choosing the engine"): the oracle for small bounded
inputs (a lower bar when Spark is warm), Spark for what only Spark does and for large inputs. No
Spark is started here."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from tefq.cli import build_parser, run_request
from tefq.analysis import load
from tefq.service import (AUTO_ORACLE_EVENTS, AUTO_ORACLE_EVENTS_HEAVY, AUTO_ORACLE_EVENTS_WARM,
                          AUTO_ORACLE_EVENTS_WARM_HEAVY, choose_engine, engine_choice, estimated_events,
                          light_for_the_oracle)
from tefq.spark.runtime.session_source import SESSION_SOURCE


from tests.support.paths import ROOT


def request_for(*argv: str):
    return run_request(build_parser().parse_args(["run", "q.tef", *argv]))


def test_parquet_rows_are_counted_text_estimated(tmp_path) -> None:
    pq.write_table(pa.table({"ts": [1, 2, 3], "s": ["a"] * 3, "p": ["b"] * 3, "o": ["c"] * 3}), tmp_path / "a.parquet")
    assert estimated_events([str(tmp_path / "a.parquet")]) == 3
    (tmp_path / "t.tsv").write_text("x" * 800)
    assert estimated_events([str(tmp_path / "t.tsv")]) == 10


def test_small_bounded_input_goes_to_the_oracle(tmp_path, monkeypatch) -> None:
    cold(monkeypatch)
    (tmp_path / "s.tsv").write_text("ts\ts\tp\to\n")
    request = request_for("--stream", str(tmp_path / "s.tsv"), "--engine", "auto", "--quiet")
    assert choose_engine(request) == "oracle"
    for extra in (["--checkpoint", str(tmp_path / "ck")], ["--follow"], ["--master", "local[2]"]):
        request = request_for("--stream", str(tmp_path / "s.tsv"), "--engine", "auto", "--quiet", *extra)
        assert choose_engine(request) == "spark", extra


def test_large_input_goes_to_spark(tmp_path, monkeypatch) -> None:
    cold(monkeypatch)
    with open(tmp_path / "s.tsv", "wb") as fh:
        fh.truncate(AUTO_ORACLE_EVENTS * 80)  # sparse: no disk used
    request = request_for("--stream", str(tmp_path / "s.tsv"), "--engine", "auto", "--quiet")
    assert choose_engine(request) == "spark"


def cold(monkeypatch) -> None:
    """Spark as a fresh process finds it, whatever this test process started before."""
    import tefq.spark.runtime.session_source as source

    monkeypatch.setattr(source, "is_warm", lambda: False)


def test_auto_is_the_default_and_says_why(tmp_path, monkeypatch) -> None:
    cold(monkeypatch)
    (tmp_path / "s.tsv").write_text("ts\ts\tp\to\n" + "1\t<a>\t<b>\t<c>\n" * 10)
    request = request_for("--stream", str(tmp_path / "s.tsv"))
    assert request.engine == "auto"
    choice = engine_choice(request)
    assert choice.engine == "oracle" and choice.label().startswith("oracle: auto, about ")
    assert f"below {AUTO_ORACLE_EVENTS:,} with Spark to start" in choice.label()
    assert engine_choice(request_for("--stream", "x", "--engine", "spark")).label() == "spark"


class Warm:
    """A session source that says Spark is up (what a run inside the warm engine sees)."""

    warm = True

    def __call__(self, master: str, settings=None):
        raise AssertionError("no session is taken while choosing")


def test_a_warm_spark_lowers_the_bar(tmp_path, monkeypatch) -> None:
    cold(monkeypatch)
    with open(tmp_path / "s.tsv", "wb") as fh:
        fh.truncate(AUTO_ORACLE_EVENTS_WARM * 80)
    request = request_for("--stream", str(tmp_path / "s.tsv"))
    assert choose_engine(request) == "oracle"
    monkeypatch.undo()  # is_warm as it is: the source says warm
    token = SESSION_SOURCE.set(Warm())
    try:
        choice = engine_choice(request)
        assert choice.engine == "spark" and "with Spark warm" in choice.label()
        assert engine_choice(request_for("--stream", "x", "--engine", "spark")).label() == "spark: warm"
    finally:
        SESSION_SOURCE.reset(token)


def test_a_query_heavy_for_the_oracle_lowers_the_bar(tmp_path, monkeypatch) -> None:
    """Between the two bars UC1 (COUNT over CURRENT) stays on the oracle, UC2 (AVG of DURATION) and
    UC3 (derived facts) go to Spark, whose whole run is the shorter there (docs/cli.md)."""
    cold(monkeypatch)
    events = (AUTO_ORACLE_EVENTS_HEAVY + AUTO_ORACLE_EVENTS) // 2
    with open(tmp_path / "s.tsv", "wb") as fh:
        fh.truncate(events * 80)
    request = request_for("--stream", str(tmp_path / "s.tsv"))
    docs = {uc: load(str(ROOT / "usecases" / f"{uc}.tef")) for uc in ("uc1", "uc2", "uc3")}
    assert [light_for_the_oracle(d) for d in docs.values()] == [True, False, False]
    assert engine_choice(request, docs["uc1"]).engine == "oracle"
    for uc in ("uc2", "uc3"):
        choice = engine_choice(request, docs[uc])
        assert choice.engine == "spark" and f"below {AUTO_ORACLE_EVENTS_HEAVY:,} for this query" in choice.label()
    assert engine_choice(request).engine == "oracle"  # no document: the light bar


def test_with_spark_warm_a_heavy_query_has_the_lowest_bar(tmp_path) -> None:
    events = (AUTO_ORACLE_EVENTS_WARM_HEAVY + AUTO_ORACLE_EVENTS_WARM) // 2
    with open(tmp_path / "s.tsv", "wb") as fh:
        fh.truncate(events * 80)
    request = request_for("--stream", str(tmp_path / "s.tsv"))
    uc1, uc2 = (load(str(ROOT / "usecases" / f"{uc}.tef")) for uc in ("uc1", "uc2"))
    token = SESSION_SOURCE.set(Warm())
    try:
        assert engine_choice(request, uc1).engine == "oracle"
        choice = engine_choice(request, uc2)
        assert choice.engine == "spark"
        assert f"below {AUTO_ORACLE_EVENTS_WARM_HEAVY:,} for this query with Spark warm" in choice.label()
    finally:
        SESSION_SOURCE.reset(token)


def test_only_a_run_that_found_spark_up_is_called_warm(tmp_path) -> None:
    """The warm engine's first run when it started for that run (the command line began before the
    engine was up: tefq.entry -> client.delegate's `began`) waited for Spark: its summary says
    so, not "warm"; the choice itself is the warm one's (`is_warm`), unchanged."""
    from tefq.entry import HandOverSource
    from tefq.results import Metrics, RunResult
    from tefq.server.runner import WarmSource
    from tefq.service import RunOutcome

    with open(tmp_path / "s.tsv", "wb") as fh:
        fh.truncate(AUTO_ORACLE_EVENTS * 80)  # Spark, warm or not
    auto = request_for("--stream", str(tmp_path / "s.tsv"))
    spark = request_for("--stream", "x", "--engine", "spark")
    labels = {}
    for name, source in {"warm": WarmSource(None, "local[2]"),
                         "just started": WarmSource(None, "local[2]", just_started=True),
                         "starts here": HandOverSource("local[2]")}.items():
        token = SESSION_SOURCE.set(source)
        try:
            choice = engine_choice(spark)
            summary = RunOutcome("spark", RunResult([], Metrics()), choice=choice).summary()
            labels[name] = (choice.label(), summary[summary.index(" on "):], engine_choice(auto).label())
        finally:
            SESSION_SOURCE.reset(token)
    assert labels["warm"][:2] == ("spark: warm", " on Spark (warm)")
    assert labels["just started"][:2] == ("spark: warm engine just started", " on Spark (warm engine just started)")
    assert labels["starts here"][:2] == ("spark", " on Spark")
    assert labels["warm"][2].endswith(f"below {AUTO_ORACLE_EVENTS_WARM:,} with Spark warm")
    assert labels["just started"][2].endswith(f"below {AUTO_ORACLE_EVENTS_WARM:,} with the warm engine just started")

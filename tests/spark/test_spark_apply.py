"""`tefq.spark.apply` (issue 15): a Spark DataFrame of events in, a DataFrame of rows out, equal to
the oracle's rows. A batch DataFrame gives every tick (the end-of-input flush included); a
streaming one, read by the user's own `spark.readStream` (files, then Spark's `socket` source on
a local TCP server) and written with the user's own `writeStream`, gives the ticks the event time
has passed. One small SparkSession for the module (local[2], 2 shuffle partitions)."""
from __future__ import annotations

import os
import random
import socket
import threading
import time

import pytest

import tefq
import tefq.spark
from tefq.errors import TefqError
from tests.support.paths import ROOT

pytestmark = pytest.mark.spark
NS = "http://example.org/iptv#"
SCHEMA = "ts long, s string, p string, o string"


def iptv_events(n: int = 90, seed: int = 7) -> list[tuple[int, str, str, str]]:
    """Users joining and quitting channels, channels starting and finishing programs: one event
    every 3.1 s (distinct times: ties across partitions have no stream order in a DataFrame)."""
    rng = random.Random(seed)
    watching: dict[int, int] = {}
    showing: dict[int, int] = {}
    out = []
    for i in range(n):
        ts = 500 + 3100 * i
        if rng.random() < 0.3:
            ch = rng.randrange(3)
            if ch in showing:
                out.append((ts, f"<{NS}ch{ch}>", f"<{NS}finish>", f"<{NS}prog{showing.pop(ch)}>"))
            else:
                showing[ch] = rng.randrange(5)
                out.append((ts, f"<{NS}ch{ch}>", f"<{NS}start>", f"<{NS}prog{showing[ch]}>"))
            continue
        u = rng.randrange(6)
        if u in watching:
            out.append((ts, f"<{NS}u{u}>", f"<{NS}quit>", f"<{NS}ch{watching.pop(u)}>"))
        else:
            watching[u] = rng.randrange(3)
            out.append((ts, f"<{NS}u{u}>", f"<{NS}join>", f"<{NS}ch{watching[u]}>"))
    return out


def oracle_rows(query: tefq.Query, events: list) -> list[tuple]:
    return sorted(query.run(events).query_result().rows, key=repr)


def spark_rows(df) -> list[tuple]:
    """(tick ms, cells) of a result DataFrame (collected rows or a batch DataFrame)."""
    from pyspark.sql import functions as F

    cols = [c for c in df.columns if c != "tick"]
    rows = df.select(F.unix_millis("tick").alias("tick"), *cols).collect()
    return sorted(((r[0], tuple(r[1:])) for r in rows), key=repr)


def usecase(name: str) -> tefq.Query:
    return tefq.load(os.path.join(ROOT, "usecases", f"{name}.tef"))


@pytest.mark.parametrize("name", ["uc1", "uc3"])  # the current-aggregate and the fact-aggregate operator
def test_batch_dataframe_gives_the_oracles_rows(spark, name):
    from pyspark.sql import functions as F

    events = iptv_events()
    df = spark.createDataFrame(events, SCHEMA)
    if name == "uc3":  # ts as a timestamp column works as well as epoch ms
        df = df.withColumn("ts", F.timestamp_millis("ts"))
    out = tefq.spark.apply(usecase(name), df, terms="ntriples")  # the oracle's N-Triples cells
    assert out.columns[0] == "tick" and dict(out.dtypes)["tick"] == "timestamp"
    want = oracle_rows(usecase(name), events)
    assert want and spark_rows(out) == want


def test_file_stream_read_by_the_users_readstream(spark, tmp_path):
    """Two Parquet files read one per micro-batch (state carried between them), the rows written
    by the user's Parquet sink: the oracle's rows at the ticks the event time passed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    events = iptv_events()
    src = tmp_path / "in"
    src.mkdir()
    half = len(events) // 2
    for i, part in enumerate((events[:half], events[half:])):
        ts, s, p, o = zip(*part)
        pq.write_table(pa.table({"ts": pa.array(ts, pa.int64()), "s": s, "p": p, "o": o}), src / f"part-{i}.parquet")
        os.utime(src / f"part-{i}.parquet", (1_000_000 + i, 1_000_000 + i))  # Spark takes files by mtime
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(src))
    query = (tefq.spark.apply(usecase("uc1"), stream, terms="ntriples").writeStream.format("parquet")
             .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    last = max(t for t, *_ in events)
    want = [r for r in oracle_rows(usecase("uc1"), events) if r[0] < last]
    assert want and spark_rows(spark.read.parquet(str(tmp_path / "out"))) == want


class LineServer:
    """A TCP server on 127.0.0.1 that sends its lines to the first client, then keeps the
    connection open (Spark's socket source reads until the query stops)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.sendall("".join(line + "\n" for line in self.lines).encode("utf-8"))
            self.done.wait()

    def close(self) -> None:
        self.done.set()
        self.thread.join(timeout=30)
        self.sock.close()


def test_socket_source_against_a_local_server(spark):
    """Spark's `socket` source on a local server sending TSV lines; the user parses the `value`
    column into ts, s, p, o and writes to the memory sink."""
    from pyspark.sql import functions as F

    events = iptv_events(40)
    last = max(t for t, *_ in events)
    want = [r for r in oracle_rows(usecase("uc1"), events) if r[0] < last]
    server = LineServer(["\t".join(map(str, e)) for e in events])
    try:
        lines = spark.readStream.format("socket").option("host", "127.0.0.1").option("port", server.port).load()
        cells = F.split("value", "\t")
        parsed = lines.select(cells[0].cast("long").alias("ts"), cells[1].alias("s"), cells[2].alias("p"),
                              cells[3].alias("o"))
        query = tefq.spark.apply(usecase("uc1"), parsed, terms="ntriples").writeStream.format("memory").queryName("tefq_socket").start()
        try:
            deadline = time.monotonic() + 300  # the lines reach the source asynchronously
            while True:
                query.processAllAvailable()
                got = spark_rows(spark.table("tefq_socket"))
                if len(got) >= len(want) or time.monotonic() > deadline:
                    break
                time.sleep(1)
        finally:
            query.stop()
    finally:
        server.close()
    assert want and got == want


def test_bad_input_is_refused_clearly(spark, tmp_path):
    """Missing columns and an unusable ts type are refused at once (no job runs); a cell that is
    not an N-Triples term fails the job naming the row, or goes to `bad_rows`."""
    q = usecase("uc1")
    with pytest.raises(TefqError, match="lacks the column.*o"):
        tefq.spark.apply(q, spark.createDataFrame([(1, "<a>", "<b>")], "ts long, s string, p string"))
    with pytest.raises(TefqError, match="column ts is string"):
        tefq.spark.apply(q, spark.createDataFrame([("1", "<a>", "<b>", "<c>")], "ts string, s string, p string, o string"))
    with pytest.raises(TefqError, match="no query named 'nope'"):
        tefq.spark.apply(q, spark.createDataFrame([(1, "<a>", "<b>", "<c>")], SCHEMA), name="nope")
    bad = spark.createDataFrame([(1000, f"<{NS}u1>", f"<{NS}join>", f"<{NS}chA>"), (2000, "u2", f"<{NS}join>", "x")],
                                SCHEMA)
    with pytest.raises(Exception, match="bad-term: column s: expected an RDF term"):  # the oracle's words (tefq.io.validate)
        tefq.spark.apply(q, bad).collect()
    diverted = tmp_path / "bad"
    assert spark_rows(tefq.spark.apply(q, bad, bad_rows=str(diverted), terms="ntriples")) == [
        (10000, (f"<{NS}chA>", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'))]
    assert "u2" in "".join(f.read_text() for f in diverted.iterdir())

"""Whole-run wall time of `tefq run` on Spark against the oracle, as a user runs it (a benchmark),
and Spark's start-up floor (the same command on 100 rows).

Each engine runs the `tefq` command in a fresh process with no warm engine (`TEFQ_SERVER=0`: JVM
start, session, every batch, CSV written), the two alternating `repeat` times; the CSVs must be
byte for byte equal. Default data: the generator's default size (`tefq gen iptv --out DIR --epg
--seed 1`: 100k log events and the program guide).
"""
from __future__ import annotations

import filecmp
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_data(data: str) -> str:
    if not os.path.isdir(os.path.join(data, "log")):
        subprocess.run([sys.executable, "-m", "tefq.cli", "gen", "iptv", "--out", data, "--epg", "--seed", "1"],
                       check=True, stdout=subprocess.DEVNULL)
    return data


def tiny_copy(data: str, into: str, rows: int = 100) -> str:
    """The first `rows` rows of the first file of each stream of `data`, as the same layout: the
    input of the start-up floor (JVM, session, planning, one micro-batch, collect; almost no events)."""
    import pyarrow.parquet as pq

    for stream in ("log", "epg"):
        src = os.path.join(data, stream)
        if os.path.isdir(src):
            os.makedirs(os.path.join(into, stream), exist_ok=True)
            first = sorted(f for f in os.listdir(src) if f.endswith(".parquet"))[0]
            pq.write_table(pq.read_table(os.path.join(src, first)).slice(0, rows),
                           os.path.join(into, stream, first))
    return into


def timed_cli(usecase: str, data: str, engine: str, out: str) -> float:
    streams = ["--stream", os.path.join(data, "log")]
    if usecase == "uc3":
        streams += ["--stream", os.path.join(data, "epg")]
    # `python -m tefq` is the `tefq` command (tefq.entry: the session starts with the command, as a
    # user's does; `-m tefq.cli` skipped that, ~1.4 s more); TEFQ_SERVER=0: a cold run, no warm engine
    cmd = [sys.executable, "-m", "tefq", "run", os.path.join(ROOT, "usecases", f"{usecase}.tef"), *streams,
           "--engine", engine, "--format", "csv", "--out", out, "--quiet"]
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "TEFQ_SERVER": "0"})
    return time.perf_counter() - started


def whole_run(usecase: str, data: str, repeat: int = 2) -> dict:
    """{spark_seconds: [...], oracle_seconds: [...], outputs_equal, spark_vs_oracle (best / best),
    spark_floor_seconds: [...]: Spark's whole run on 100 rows of the same data, its start-up floor}."""
    default_data(data)
    runs: dict[str, list[float]] = {"spark": [], "oracle": [], "floor": []}
    equal = True
    with tempfile.TemporaryDirectory() as tmp:
        tiny = tiny_copy(data, os.path.join(tmp, "tiny"))
        for i in range(repeat):
            for engine in ("oracle", "spark"):
                runs[engine].append(round(timed_cli(usecase, data, engine, os.path.join(tmp, f"{engine}{i}.csv")), 2))
            equal = equal and filecmp.cmp(os.path.join(tmp, f"oracle{i}.csv"), os.path.join(tmp, f"spark{i}.csv"),
                                          shallow=False)
            runs["floor"].append(round(timed_cli(usecase, tiny, "spark", os.path.join(tmp, "floor.csv")), 2))
    return {"whole_run_data": data, "spark_seconds": runs["spark"], "oracle_seconds": runs["oracle"],
            "spark_floor_seconds": runs["floor"], "outputs_equal": equal,
            "spark_vs_oracle": min(runs["spark"]) / min(runs["oracle"])}

"""The parquet sink read back on the driver: committed files, records, rows and metrics."""
from __future__ import annotations

import json
import os

from pyspark.sql import SparkSession

from tefq.results import QueryResult
from tefq.spark.output import Collector

def committed_files(out: str) -> list[str]:
    """The committed files of the parquet sink (its _spark_metadata log): files of a batch that
    died before its commit are not part of the output."""
    import glob
    from urllib.parse import unquote, urlparse

    files: list[str] = []
    for log in sorted(glob.glob(os.path.join(out, "_spark_metadata", "*"))):
        if os.path.basename(log).startswith("."):
            continue
        with open(log, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line.startswith("{"):
                    entry = json.loads(line)
                    if entry.get("action", "add") == "add":
                        files.append(unquote(urlparse(entry["path"]).path))
    return list(dict.fromkeys(files))



def read_sink_files(files: list[str]):
    """Sink records read with pyarrow on the driver (result records can be large)."""
    import pandas as pd
    import pyarrow.parquet as pq

    frames = [pq.read_table(f).to_pandas() for f in files]
    if not frames:
        return pd.DataFrame({"kind": [], "tick": [], "payload": []})  # no record yet
    return pd.concat(frames, ignore_index=True)



def read_sink(out: str):
    return read_sink_files(committed_files(out))



def collect(spark: SparkSession, plan, out: str) -> tuple[QueryResult, dict, list[str]]:
    pdf = read_sink(out)
    col = Collector.of(plan)
    for kind, tick, payload in zip(pdf["kind"], pdf["tick"], pdf["payload"]):
        col.add(kind, tick, payload)
    metrics: dict = {}
    by_batch: dict[int, list[int]] = {}
    for d in col.metrics:
        per = by_batch.setdefault(d.get("batch", 0), [0, 0])
        per[0] += d.get("state_bytes", 0)
        per[1] += d.get("open_facts", 0)
        for k, v in d.items():
            if k not in ("state_bytes", "open_facts", "batch"):
                metrics[k] = metrics.get(k, 0) + v
    if by_batch:  # state size at the batch holding the most open facts
        state_bytes, open_facts = max(by_batch.values(), key=lambda x: x[1])
        metrics["state_bytes_per_open_fact"] = state_bytes / open_facts if open_facts else None
        metrics["peak_open_facts"] = open_facts
    qr = QueryResult(plan.query, plan.columns, col.sorted_rows())
    return qr, metrics, col.warnings

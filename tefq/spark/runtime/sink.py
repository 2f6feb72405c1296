"""The parquet sink read back on the driver: committed files, records, rows and metrics."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from tefq.results import QueryResult
from tefq.spark.fact_output import FactCollector, is_fact_record
from tefq.spark.runtime.codec import CodecError
from tefq.spark.runtime.log_entries import entries, read_entry
from tefq.spark.shapes import collector_of


def committed_files(out: str) -> list[str]:
    """The committed files of the parquet sink (its _spark_metadata log): files of a batch that
    died before its commit are not part of the output. An empty or garbled log entry is exit 2
    naming it (runtime/log_entries), never read as a batch without rows."""
    return committed_since(out, -1)[0]


def committed_since(out: str, after: int) -> tuple[list[str], int]:
    """The files the sink's log entries of batches after `after` name (a compacted entry names
    those before it too), and the last batch read: a live run reads each entry once, not the
    whole log at every poll."""
    from urllib.parse import unquote, urlparse

    files: list[str] = []
    last = after
    for log in entries(os.path.join(out, "_spark_metadata")):
        batch = int(os.path.basename(log).split(".")[0])
        if batch <= after:
            continue
        last = batch
        for entry in read_entry(log):
            if entry.get("action", "add") == "add" and "path" in entry:
                files.append(unquote(urlparse(entry["path"]).path))
    return list(dict.fromkeys(files)), last


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


@contextmanager
def reading_sink(out: str) -> Iterator[None]:
    """Decoding the records of the sink in `out`: a record that is not tefq's data (runtime/codec)
    is exit 2 naming the sink, as one sentence."""
    try:
        yield
    except CodecError as e:
        raise CodecError(f"{e.message}: this sink (a query's output in the checkpoint) was written by "
                         "something other than tefq; use a fresh --checkpoint", out) from None


def collect(plan, out: str) -> tuple[list[QueryResult], dict, list[str]]:
    """A finished query's sink: its results, its metrics and the warnings its operators emitted."""
    pdf = read_sink(out)
    col = collector_of(plan)
    with reading_sink(out):
        for kind, tick, payload in zip(pdf["kind"], pdf["tick"], pdf["payload"]):
            if not is_fact_record(kind):  # the fact table's records go to `collect_facts`
                col.add(kind, tick, payload)
    return col.results(), col.run_metrics(), col.warnings


def collect_facts(plan, out: str) -> FactCollector:
    """A finished query's fact-table records (`tefq.spark.fact_output`), decoded."""
    pdf = read_sink(out)
    facts = FactCollector.of(plan)
    with reading_sink(out):
        for kind, tick, payload in zip(pdf["kind"], pdf["tick"], pdf["payload"]):
            facts.add(kind, tick, payload)
    return facts

"""Which ingestion path a bounded run takes per plan (`tefq run --ingest`), and the record of it
beside a query's checkpoint: rows (Spark reads and projects the rows), columnar (a map task reads
each Parquet file, runtime/columnar.py) or direct (each bucket's operator reads every file)."""
from __future__ import annotations

import os

from tefq.errors import TefqError
from tefq.io.paths import path_in
from tefq.io.readers import stream_files, stream_format
from tefq.io.redis_stream import is_redis_url
from tefq.spark.runtime.checkpoint import claim_marker
from tefq.spark.shapes import reads_columnar

INGEST_CHOICES = ("auto", "columnar", "direct", "rows")
INGEST_MARKER = "ingest"  # beside the query's checkpoint: the path that wrote it


def parquet_only(stream_paths: list[str]) -> bool:
    """Every stream path holds Parquet files only (`stream_paths` after staging: text inputs are
    staged as Parquet by then, tefq.io.staging.stage_streams)."""
    return all(not is_redis_url(p) and {stream_format(f) for f in stream_files(p)} == {("parquet", False)}
               for p in stream_paths)


def why_not_columnar(plan, stream_paths: list[str]) -> str | None:
    """None if the plan can take the columnar path over these inputs, else the reason."""
    if not reads_columnar(plan):
        return (f"query {plan.query} is neither a CURRENT, a fact, a general aggregate nor a windowed query (the "
                "shapes the columnar and direct paths cover)")
    if all(is_redis_url(p) for p in stream_paths):  # their micro-batches' ID ranges (redis_source.range_uri)
        return None
    if any(is_redis_url(p) for p in stream_paths):
        # a Redis entry's tie key could not sit between the ranks of the files of streams before and after it
        return "a run mixing Redis streams and files reads them as rows (ties across them in stream order)"
    if not parquet_only(stream_paths):
        return "a stream input is not Parquet files"
    return None


def choose_ingest(requested: str, plan, stream_paths: list[str], recorded: str | None = None) -> str:
    """`auto`: the path a restarted checkpoint `recorded` where the plan and inputs still allow
    it, else direct where they allow it (measured faster than columnar), else rows; `columnar` or
    `direct` where they do not is refused (exit 2) rather than silently run the other way.
    `requested` is one of INGEST_CHOICES (checked by `engine.run`)."""
    if requested == "rows":
        return "rows"
    reason = why_not_columnar(plan, stream_paths)
    if requested == "auto":
        if recorded == "rows" or recorded in ("columnar", "direct") and reason is None:
            return recorded
        return "direct" if reason is None else "rows"
    if reason is not None:
        raise TefqError(f"--ingest {requested}: {reason}; use --ingest auto or rows", file="--ingest")
    return requested


def ingest_choices(requested: str, plans: list, stream_paths: list[str], workdir: str) -> dict[int, str]:
    """Per plan (by id) its path (`choose_ingest`); auto keeps the one a restarted checkpoint
    was written by."""
    return {id(plan): choose_ingest(requested, plan, stream_paths, recorded_ingest(path_in(workdir, plan.query)))
            for plan in plans}


def recorded_ingest(qdir: str) -> str | None:
    """The path a query's checkpoint was written by (None: none yet). `claim_ingest` records it
    before Spark writes anything; checkpoints from before the record are refused by their state
    version (checkpoint.claim)."""
    marker = os.path.join(qdir, INGEST_MARKER)
    if not os.path.exists(marker):
        return None
    with open(marker, encoding="utf-8") as fh:
        return fh.read().strip()


def claim_ingest(qdir: str, ingest: str) -> None:
    """Record the path a query's checkpoint is written by; refuse (exit 2) a restart on another
    one: its sources, codes and state would not match."""
    claim_marker(os.path.join(qdir, INGEST_MARKER), ingest, recorded_ingest(qdir), lambda written: TefqError(
        f"this checkpoint was written with --ingest {written} (resolved), this run would take --ingest {ingest}: "
        f"a restart cannot switch ingestion paths; run with --ingest {written} or use a fresh --checkpoint", qdir))

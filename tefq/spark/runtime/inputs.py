"""The run's inputs as the pipelines take them: each --stream with its index (spec §6.1's stream
order), a Redis stream of a bounded run pinned at its head, and the per-stream limits the
operators need to decide when each stream has ended. Shared by bounded runs (tefq.spark.engine)
and --follow (runtime/follow.py)."""
from __future__ import annotations


import pyarrow.parquet as pq

from tefq.io.redis_stream import RedisStream, head, is_redis_url
from tefq.io.staging import files_in_stream_order
from tefq.spark.operators.base import StreamSettings
from tefq.spark.runtime.pipelines import RunOptions
from tefq.spark.runtime.ranks import is_ranked
from tefq.spark.runtime.sources import StreamInput


def pinned_inputs(paths: list[str], bad_rows: str | None, follow: bool, accept_gaps: bool = False,
                  gate: str | None = None) -> list[StreamInput]:
    """Each input with its --stream index; a Redis stream of a bounded run pinned at its head now,
    so that every query of the run reads the same entries while a publisher goes on writing.
    `accept_gaps`: Redis sources read on after entries removed before they were read (--accept-gaps);
    `gate`: a followed Redis stream admits nothing more while this file exists (a stopping run)."""
    out = []
    for i, p in enumerate(paths):
        end = None
        if is_redis_url(p) and not follow:
            stream = RedisStream.parse(p)
            end = head(stream.connect(), stream)
        out.append(StreamInput(p, i, end, bad_rows, accept_gaps, gate=gate))
    return out


BATCH_EVENTS = 2_000_000  # a bounded run's micro-batch when --max-files-per-trigger is not given


def files_per_trigger(paths: list[str], batch_events: int = BATCH_EVENTS) -> int | None:
    """A bounded run's micro-batch in files when the user gives none: as many files as keep the
    largest ones within `batch_events` rows (at least one), so that a bucket's memory follows the
    micro-batch, not the input (10M events: worker RSS 2.3 GB in one micro-batch, 0.75 GB in
    2M-event ones, for 5% more wall time; docs/spark.md "Micro-batches"). None (one micro-batch,
    every file) for inputs of at most `batch_events` rows, a Redis stream, or a file whose
    Parquet footer cannot be read (its own error is the reader's to report)."""
    if any(is_redis_url(p) for p in paths):
        return None
    try:
        rows = [pq.read_metadata(f).num_rows for f in files_in_stream_order(list(paths))]
    except (OSError, ValueError):  # pyarrow: ArrowInvalid is a ValueError
        return None
    if sum(rows) <= batch_events:
        return None
    return max(1, batch_events // max(rows))


def stream_settings(inputs: list[StreamInput], run: RunOptions, follow: bool) -> StreamSettings:
    """Spec §6.1 for the operators: how many micro-batches each bounded input takes (one file per
    trigger and source with --max-files-per-trigger, else one; a Redis stream: one, none if empty),
    each stream's first file rank (`ranks.file_ranks`); live inputs: None (they go idle)."""
    batches: list[int | None] = []
    starts, rank = [], 0
    for p in inputs:
        files = [] if is_redis_url(p) else files_in_stream_order([p])
        starts.append(rank)
        rank += len(files)
        if follow:
            batches.append(None)
        elif p.end is not None:
            batches.append(1 if p.end.n else 0)
        else:
            m = run.max_files_per_trigger
            batches.append(-(-len(files) // m) if m else min(len(files), 1))
    # as file_ranks ranks them: then ties go by (t, stream order) across micro-batches
    return StreamSettings.of(run.settings, batches=tuple(batches), rank_starts=tuple(starts),
                             ranked=is_ranked(rank, follow), stream_iris=run.stream_iris)

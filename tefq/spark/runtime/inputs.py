"""The run's inputs as the pipelines take them: each --stream with its index (spec §6.1's stream
order), a Redis stream of a bounded run pinned at its head, and the per-stream limits the
operators need to decide when each stream has ended. Shared by bounded runs (tefq.spark.engine)
and --follow (runtime/follow.py)."""
from __future__ import annotations

from dataclasses import replace

from tefq.io.redis_stream import RedisStream, head, is_redis_url
from tefq.io.stager import files_in_stream_order
from tefq.spark.operators.base import StreamLimits
from tefq.spark.runtime.pipelines import RunOptions
from tefq.spark.runtime.ranks import is_ranked
from tefq.spark.runtime.sources import StreamInput


def pinned_inputs(paths: list[str], bad_rows: str | None, follow: bool) -> list[StreamInput]:
    """Each input with its --stream index; a Redis stream of a bounded run pinned at its head now,
    so that every query of the run reads the same entries while a publisher goes on writing."""
    out = []
    for i, p in enumerate(paths):
        end = None
        if is_redis_url(p) and not follow:
            stream = RedisStream.parse(p)
            end = head(stream.connect(), stream)
        out.append(StreamInput(p, i, end, bad_rows))
    return out


def stream_limits(inputs: list[StreamInput], run: RunOptions, follow: bool) -> StreamLimits:
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
    return replace(run.limits, batches=tuple(batches), rank_starts=tuple(starts), ranked=is_ranked(rank, follow))

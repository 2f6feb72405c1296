"""`tefq facts FILE.tef --stream DIR --follow [--out FILE]`: the fact table of a live run (spec §12).

One unbounded streaming query, the fact table's (`tefq.spark.planning.fact.plan_fact_table` on a grid of
FOLLOW_EVERY_MS of event time: an interval is final one grid step after the event time passed its
end), followed as `tefq run --follow` follows its queries (`tefq.spark.runtime.follow`: stream
directories and Redis streams; SIGINT or SIGTERM stops after the micro-batch in progress). After
each poll of the committed micro-batches (`LiveFactWriter`):

1. the snapshot of the facts open at the last reported tick is rewritten atomically (a temporary
   file renamed over it) in `OUT.open.EXT` (`open_snapshot_path`) — before the closed rows are
   appended, so that the snapshot never holds a fact the closed file holds;
2. the intervals that closed are appended to OUT, whole rows only (`tefq.io.records`).

OUT holds each closed interval once and the snapshot each open one (end empty): together they are
the fact table of the input read so far, as of the last reported tick. The formats are the
appendable ones (csv, tsv, jsonl); Parquet, which cannot be appended to, is refused (exit 2).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tefq.errors import TefqError
from tefq.facts.plot import keep
from tefq.facts.spark import collected_store, table_request
from tefq.facts.table import FactRows, store_rows
from tefq.facts.writer import fact_text
from tefq.io.atomic import atomic_open
from tefq.io.records import append_records
from tefq.io.result_writers import is_directory_target, to_stdout, write_checked
from tefq.plan.logical import Document
from tefq.spark.engine import run_fact_table
from tefq.spark.fact_output import FactCollector, Intervals, OpenFacts
from tefq.spark.planning.common import Refusal
from tefq.spark.planning.fact import plan_fact_table

FOLLOW_EVERY_MS = 1000  # the live grid: closed facts are final 1 s of event time after they close
LIVE_FORMATS = ("csv", "tsv", "jsonl")  # appendable: one header (or none), then rows
OPEN_SUFFIX = ".open"  # OUT.csv -> OUT.open.csv: the snapshot of the open facts


def open_snapshot_path(out: str) -> str:
    """Where the open facts of `--out OUT.EXT` are rewritten: `OUT.open.EXT`."""
    root, ext = os.path.splitext(out)
    return root + OPEN_SUFFIX + ext


class LiveFactWriter:
    """Receives each poll's fact records (`FactCollector`): rewrites the open snapshot, then
    appends the closed intervals. Both files are started afresh (a header, no row) when it is made;
    without `out` the closed intervals go to stdout and there is no snapshot."""

    def __init__(self, doc: Document, fmt: str, out: str | None, where: Sequence[tuple[str, str]] = ()) -> None:
        if fmt not in LIVE_FORMATS:
            raise TefqError(f"--follow appends facts as they close: use --format {', '.join(LIVE_FORMATS)} "
                            f"(a {fmt} file cannot be appended to)", "--format")
        if is_directory_target(out):
            raise TefqError("--follow writes one table and its open snapshot: give --out FILE, not a directory", out)
        self.doc, self.fmt, self.out, self.where = doc, fmt, out, tuple(where)
        self.open = OpenFacts(tuple(f.name for f in doc.facts))
        self.closed_rows = self.open_rows = 0
        empty = self.table({})
        self._append(fact_text(empty, fmt), start=True)
        self._rewrite_open(empty)

    def table(self, intervals: Intervals) -> FactRows:
        table = store_rows(self.doc, collected_store(self.doc, intervals))
        return keep(table, self.where) if self.where else table

    def __call__(self, facts: FactCollector) -> None:
        if self.open.update(facts):
            self._rewrite_open(self.table(self.open.intervals()))
        closed = self.table(facts.intervals())
        if closed.rows:
            self.closed_rows += len(closed.rows)
            self._append(fact_text(closed, self.fmt, with_header=False), start=False)

    def _rewrite_open(self, table: FactRows) -> None:
        self.open_rows = len(table.rows)
        if self.out is not None:
            with atomic_open(open_snapshot_path(self.out)) as f:
                f.write(fact_text(table, self.fmt))

    def _append(self, text: str, start: bool) -> None:
        if self.out is None:
            with to_stdout():
                write_checked(sys.stdout, text)
                sys.stdout.flush()
        else:
            append_records(self.out, text, "the fact table", append=not start)


def follow_fact_table(doc: Document, stream_paths: list[str], background: Any, writer: LiveFactWriter, *,
                      master: str | None = None, progress: bool = False, spark=None,
                      stop: Callable[[], bool] | None = None) -> dict:
    """Follow `stream_paths` until stopped, handing each poll's fact records to `writer`;
    returns the run's metrics (`follow_plans`'). A document whose facts Spark's fact operator
    cannot run is refused (exit 2): the oracle has no live mode."""
    plan = plan_fact_table(doc)
    if plan is None:
        raise TefqError("the document defines no fact: there is no fact table to follow", doc.source)
    if isinstance(plan, Refusal):
        raise TefqError(f"--follow needs Spark's fact operator, which does not run {plan.what}: run tefq facts "
                        "without --follow (the fact table of the input so far)", "--follow")
    request = replace(table_request(doc, stream_paths, background, master=master, progress=progress, spark=spark,
                                    stop=stop), follow=True, ingest="rows")
    return run_fact_table(request, FOLLOW_EVERY_MS, on_facts=writer)


__all__ = ["FOLLOW_EVERY_MS", "LIVE_FORMATS", "open_snapshot_path", "LiveFactWriter", "follow_fact_table"]

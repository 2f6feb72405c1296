"""The windowed operator's result rows on the wire, columnar, and their decoding on the driver.

Per micro-batch, bucket and windowed query the operator (tefq.spark.operators.windowed) sends one
record `wrows<query index>` (`windowed_rows_record`, a `CodedRows`): the rows' ticks (int64), per
column int32 codes into that record's distinct cells (-1: unbound), and those cells (strings). A
cell is made canonical (`canonical_cell`: numbers in the shared canonical form) once per distinct
cell, not once per row.

The driver (`WindowedCollector`) maps every record's codes into one dictionary per column, ranks
each column's distinct cells once by `tefq.results.order_key`, orders all rows by one lexsort
(tick, then the cells left to right: `QueryResult.sorted_rows`' order) and builds the row tuples
once, at the end. Metrics and warnings travel as plain data (`tefq.spark.output.data_record`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from tefq.oracle.windowed.runner import canonical_cell
from tefq.results import QueryResult, Row, order_key, paused_gc
from tefq.spark.output import METRIC, METRICS, data_record, read_record

WINDOWED_ROWS = "wrows"  # + the windowed query's index
CUMULATIVE = ("events_in", "feedback_triples")  # a bucket state's running totals: the largest is the run's
SUMMED = ("late_events", "bad_rows", "duplicates")  # per micro-batch and bucket: added up
LATE_STREAM = "late_stream."  # + an input's index: its late elements in one micro-batch and bucket (added up)


@dataclass
class CodedRows:
    """Rows of one record: `ticks` (n,), `codes` (n, columns) into `cells` (per column its
    distinct cells; -1 is unbound)."""

    ticks: np.ndarray
    codes: np.ndarray
    cells: list[list[str]]


def windowed_rows_kind(query: int) -> str:
    return f"{WINDOWED_ROWS}{query}"


def coded_rows(reports: Sequence) -> CodedRows:
    """Reports (`tefq.spark.kernels.windowed.windowed.Report`: a tick and its rows, cells as SPARQL gave
    them) dictionary-encoded per column, each distinct cell made canonical once."""
    rows = [row for r in reports for row in r.rows]
    ticks = np.repeat(np.array([r.tick for r in reports], np.int64), [len(r.rows) for r in reports])
    width = len(rows[0]) if rows else 0
    codes = np.empty((len(rows), width), np.int32)
    cells: list[list[str]] = []
    for j, column in enumerate(zip(*rows)):
        codes[:, j], uniques = pd.factorize(np.array(column, dtype=object), use_na_sentinel=True)
        cells.append([canonical_cell(c) for c in uniques.tolist()])
    return CodedRows(ticks, codes, cells)


def windowed_rows_record(query: int, reports: Sequence) -> tuple[str, int, bytes]:
    """One query's rows of one micro-batch and bucket as one binary record (no per-row encoding)."""
    rows = coded_rows(reports)
    return data_record(windowed_rows_kind(query), int(rows.ticks[-1]) if len(rows.ticks) else 0, rows, CodedRows)


def read_coded_rows(payload: bytes) -> CodedRows:
    return read_record(WINDOWED_ROWS, payload, CodedRows)


def merged_column(parts: list[CodedRows], j: int) -> tuple[list[str | None], np.ndarray]:
    """Column j of every record: one dictionary of its distinct cells (None, unbound, among
    them) and each row's index in it."""
    ids: dict[str | None, int] = {}
    mapped = []
    for p in parts:
        # the lookup's last entry is unbound: code -1 indexes it
        lookup = np.array([ids.setdefault(c, len(ids)) for c in [*p.cells[j], None]], np.int64)
        mapped.append(lookup[p.codes[:, j]])
    return list(ids), np.concatenate(mapped)


def order_ranks(cells: list[str | None]) -> np.ndarray:
    """Per distinct cell, its rank in the result order (`order_key`)."""
    rank = np.empty(len(cells), np.int64)
    rank[sorted(range(len(cells)), key=lambda i: order_key(cells[i]))] = np.arange(len(cells))
    return rank


def ordered_rows(parts: list[CodedRows], window_order: bool = False) -> list[Row]:
    """Every record's rows in the result order: by tick, then by the cells left to right
    (`QueryResult.sorted_rows`; rows with equal keys are equal rows); with `window_order` (an
    ORDER BY), each tick's rows as its window gave them (one window is one record's)."""
    parts = [p for p in parts if len(p.ticks)]
    if not parts:
        return []
    ticks = np.concatenate([p.ticks for p in parts])
    columns = [merged_column(parts, j) for j in range(parts[0].codes.shape[1])]
    perm = np.argsort(ticks, kind="stable") if window_order else \
        np.lexsort(tuple(order_ranks(cells)[index] for cells, index in reversed(columns)) + (ticks,))
    with paused_gc():  # a million new tuples: the cyclic collector would rescan them again and again
        taken = []
        for cells, index in columns:
            table = np.empty(len(cells), dtype=object)
            table[:] = cells
            taken.append(table[index[perm]].tolist())
        return list(zip(ticks[perm].tolist(), zip(*taken) if taken else [()] * len(perm)))


@dataclass
class WindowedCollector:
    """Gathers the windowed operator's sink records on the driver: per windowed query its coded
    rows (in document order of the queries), metrics, warnings."""

    names: tuple[str, ...]
    columns: tuple[tuple[str, ...], ...]
    window_order: tuple[bool, ...] = ()  # per query: an ORDER BY orders each window's rows
    parts: dict[int, list[CodedRows]] = field(default_factory=dict)
    metrics: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, kind: str, tick: int, payload: bytes) -> None:
        if kind.startswith(WINDOWED_ROWS):
            self.parts.setdefault(int(kind[len(WINDOWED_ROWS):]), []).append(read_coded_rows(payload))
        elif kind == METRIC:
            self.metrics.append(read_record(kind, payload, METRICS))
        else:
            self.warnings.append(read_record(kind, payload, str))

    def results(self) -> list[QueryResult]:
        ordered = self.window_order or (False,) * len(self.names)
        return [QueryResult(name, cols, ordered_rows(self.parts.get(i, []), by_window), ordered=True,
                            window_order=by_window)
                for i, (name, cols, by_window) in enumerate(zip(self.names, self.columns, ordered))]

    def run_metrics(self) -> dict:
        """The states' running totals (the largest seen: every bucket sees every heartbeat; the
        windows, each bucket's largest added up), the per-batch counts summed over micro-batches and
        buckets (late elements, also per input: `late_stream.<index>`), and the join orders."""
        return {**self.folded({}), "join_orders": [r for m in self.metrics for r in m.get("join_orders", [])]}

    def folded(self, previous: dict) -> dict:
        """`run_metrics` over the polls of a live run: `previous` (what this returned for the polls
        before; each bucket's windows under `ticks_by_bucket`) with this poll's records added. The
        join orders are left out: a live run would keep them all."""
        metrics: dict = {k: max([previous.get(k, 0)] + [m.get(k, 0) for m in self.metrics]) for k in CUMULATIVE}
        ticks = dict(previous.get("ticks_by_bucket", {}))  # per bucket its windows' running total
        for m in self.metrics:  # (bucket 0's alone unless split by windows)
            ticks[m.get("bucket", 0)] = max(ticks.get(m.get("bucket", 0), 0), m.get("ticks", 0))
        metrics["ticks_by_bucket"], metrics["ticks"] = ticks, sum(ticks.values())
        metrics.update({k: v for k, v in previous.items() if k in SUMMED or k.startswith(LATE_STREAM)})
        for k in SUMMED:
            metrics.setdefault(k, 0)
        for m in self.metrics:
            for k, v in m.items():
                if k in SUMMED or k.startswith(LATE_STREAM):
                    metrics[k] = metrics.get(k, 0) + v
        # every element read, a repeat once; late ones too (applied: windows still open need them)
        metrics["applied_events"] = metrics["events_in"] - metrics["duplicates"]
        return metrics


__all__ = ["WindowedCollector", "windowed_rows_record", "windowed_rows_kind", "ordered_rows", "coded_rows",
           "read_coded_rows", "CodedRows", "order_ranks"]

"""The driver's side of the general plan on Spark: a bucket's rows of one micro-batch travel as one
record (`general_rows_record`: the `BucketRows` — final values, or partial aggregates: counts,
exact sums as limb or integer arrays (`sums.CellSums`), MIN/MAX candidates — as runtime/codec
data, read back checked against `BucketRows`' fields: the sink is a file), and
`GeneralCollector` gathers a query's records, merges partial rows per (tick, group) and formats them
in the oracle's cells and order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tefq.results import Row
from tefq.spark.kernels.general.rows import BucketRows, concat, format_rows, merge_partials
from tefq.spark.output import Collector, data_record, read_record

GENERAL_ROWS = "grows"  # a general operator bucket's BucketRows of one micro-batch


def general_rows_record(rows: BucketRows) -> tuple[str, int, bytes]:
    """A general operator bucket's rows of one micro-batch as one sink record."""
    return data_record(GENERAL_ROWS, int(rows.ticks[-1]) if len(rows) else 0, rows, BucketRows)


@dataclass
class GeneralCollector(Collector):
    """A general plan's records (planning/general.GeneralPlan): its buckets' `BucketRows`, merged
    per (tick, group) when they are partial aggregates, formatted as the oracle's rows."""

    plan: Any = None
    parts: list = field(default_factory=list)

    def add(self, kind: str, tick: int, payload: bytes) -> None:
        if kind == GENERAL_ROWS:
            self.parts.append(read_record(kind, payload, BucketRows))
        else:
            super().add(kind, tick, payload)

    def rows(self) -> list[Row]:
        """Every row, formatted, in the result order (the kernels' `format_rows`)."""
        cq = self.plan.compiled()
        parts = [p for p in self.parts if len(p)]
        if parts and parts[0].partial:
            merged = merge_partials(cq, parts)
        else:
            merged = concat(parts, cq)
        return format_rows(cq, merged)

    def sorted_rows(self) -> list[Row]:
        return self.rows()

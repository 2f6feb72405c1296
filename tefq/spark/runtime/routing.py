"""Which buckets a mapper's rows go to (runtime/mappers.py): each plan's shape says how
(tefq.spark.shapes: `Shape.routing`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from tefq.spark.runtime.fact_buckets import route_batch
from tefq.spark.runtime.windowed_rows import route_by_window

if TYPE_CHECKING:  # the workers import no planner (docs/spark.md "Start-up")
    from tefq.spark.planning.windowed import WindowedPlan


@dataclass(frozen=True)
class RowRouting:
    """Which buckets a partition's rows go to. `only`: bucket `only` alone (direct ingestion).
    `routes`: a fact plan's (`FactAggregatePlan.event_routes`), applied after the encoding;
    `windows`: a windowed plan split by its windows (`slabs`); other plans' encodings set each
    row's bucket themselves."""

    buckets: int
    only: int | None = None
    routes: tuple[int, ...] | None = None
    windows: WindowedPlan | None = None

    @property
    def targets(self) -> list[int]:
        """The buckets every control row (heartbeat, flush) goes to."""
        return list(range(self.buckets)) if self.only is None else [self.only]

    def route(self, rb: pa.RecordBatch) -> pa.RecordBatch:
        if self.windows is not None:
            return route_by_window(self.windows, rb, self.only)
        return rb if self.routes is None else route_batch(self.routes, self.buckets, rb, self.only)

"""The fallback plan: any other aggregate query, one bucket, the oracle evaluates the final ticks
per micro-batch (`tefq.spark.operators.fallback`)."""
from __future__ import annotations

from dataclasses import dataclass

from tefq.spark.planning.nodes import SINK, SOURCE


@dataclass(frozen=True)
class FallbackPlan:
    """Any other aggregate query: one bucket, the oracle evaluates the final ticks per micro-batch."""

    query: str
    query_index: int
    columns: tuple[str, ...]
    every_ms: int
    reason: str
    buckets: int = 1
    evaluator: str = "the oracle reports the ticks"  # the simulations name theirs

    def explain(self) -> str:
        return "\n".join([
            f"SparkQuery {self.query}: general fallback every {self.every_ms} ms",
            f"  (vectorised operator: {self.reason})",
            SINK,
            "  FallbackOperator: applyInPandasWithState, single bucket holding every element read;"
            f" {self.evaluator} that became final in each micro-batch (not scalable)",
            "  (state: every element, since the oracle re-derives every fact from the elements;"
            " bounded state needs the general plan)",
            "  Exchange SinglePartition (bucket 0)",
            "  MapInArrow: row order for ties, bad rows, per-partition heartbeat (bad-row count)",
            SOURCE,
        ])

"""What the engine asks of a plan kind, in one object: a `Shape` names the kind's plan dataclass
(whose `explain()` is its EXPLAIN), its planner, its Spark SQL projection, the mapper's encoding
and routing of its rows, its operator (the bucket loop around its logic), the driver's collector
of its records, and its capabilities. The registry (`tefq.spark.shapes`) holds one Shape per kind;
every place that differs by kind asks `shape_of(plan)` instead of testing the plan's class.

Spark-free: a projection imports pyspark when it runs (planning and EXPLAIN do not start it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from tefq.plan.logical import AggregateQuery
from tefq.spark.operators.base import row_frames
from tefq.spark.runtime.encodings import Encoding
from tefq.spark.runtime.routing import RowRouting


@dataclass(frozen=True)
class PlanOptions:
    """What `plan_document` offers each planner: the buckets, and which planners may answer."""

    buckets: int
    fact_aggregates: bool = True  # False: the simulations (no simulated form of the fact and general operators)
    merge_partials: bool = True  # False: no routing that leaves the driver to add the buckets' partial rows
    general: bool = True  # False: what the specialised operators refuse goes to the fallback
    background: bool = False  # the run joins background knowledge (a windowed plan splits no join key then)


@dataclass(frozen=True)
class Capabilities:
    """What a kind's runs can do besides a bounded run over rows. A refusal is the text of the
    exit-2 message; None: it can."""

    columnar: Callable[[Any], bool] = lambda plan: False  # --ingest columnar and direct (runtime/columnar.py)
    follow: str | None = None  # --follow (runtime/follow.py)
    dataframe: str | None = None  # tefq.spark.apply (tefq.spark.dataframe)
    facts: bool = False  # its operator can emit the fact table's records (tefq.spark.fact_output)


@dataclass(frozen=True)
class Simulation:
    """How a kind runs under `--simulate` (tefq.spark.simulate): its operator, EXPLAIN and path name."""

    path: str  # metrics.extra["spark_path"]
    operator: Callable[..., Callable]  # (sim_doc, plan, strategy, run) -> applyInPandasWithState function
    explain: Callable[[Any, str], str]  # (plan, strategy) -> its EXPLAIN


def plain_routing(plan, only: int | None) -> RowRouting:
    """The encoding set each row's bucket; the mapper sends the rows on as they are."""
    return RowRouting(plan.buckets, only)


@dataclass(frozen=True)
class Shape:
    """One plan kind (see the module doc). `plan(doc, i, options, refused)` answers query `i` with a
    plan, a `Refusal`, or None (not asked under these options); `refused` is the refusal of the
    planners asked before it. `project(df, plan, run)`: the Spark SQL projection of the source
    rows; `operator(doc, plan, run)`: the applyInPandasWithState function; `collector(plan)`: the
    driver's decoder of the plan's sink records."""

    name: str
    plan_type: type
    plan: Callable[..., Any]
    project: Callable[..., Any]
    encoding: type[Encoding]
    operator: Callable[..., Callable]
    collector: Callable[[Any], Any]
    capabilities: Capabilities = Capabilities()
    query_type: type = AggregateQuery  # the logical queries it runs
    routing: Callable[[Any, int | None], RowRouting] = plain_routing
    file_encoding: type[Encoding] | None = None  # rows read from Parquet files (columnar, direct), if not `encoding`
    cells: Callable[[Any], Callable | None] = lambda plan: None  # the mapper's fix of undecided rows (scan.settle_undecided)
    since: Callable[[Any], int | None] = lambda plan: None  # files read by a task: elements before it only advance time
    bind: Callable[[Any, Any], Any] = lambda plan, run: plan  # the plan with what it needs of the run
    frames: Callable[[Any], Iterator] = row_frames  # direct ingestion: mapper rows -> the operator's frames
    events_metric: str = "events_in"  # direct ingestion: the operator's metric of a micro-batch's events read
    query_names: Callable[[Any], tuple[str, ...]] = lambda plan: (plan.query,)
    run_metrics: Callable[..., None] | None = None  # (sink metrics, results, run Metrics): adds its own; None: the first plan's
    simulation: Simulation | None = None  # None: not simulated on Spark

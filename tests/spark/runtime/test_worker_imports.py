"""What a Spark worker imports to run a plan (docs/spark.md "Start-up"): the operator function the
driver ships under direct ingestion (`reading_operator`, wrapped by `by_bucket`), pickled as Spark
pickles it and loaded in a fresh interpreter. A CURRENT or fact aggregate's worker imports neither
the planners' registry nor the windowed engines, rdflib, the parser or the simulations (0.4 s of
a cold run's worker start each, measured); a windowed plan's worker does import its own engine."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark import cloudpickle

from tefq.api import load
from tefq.spark.operators.base import StreamSettings
from tefq.spark.runtime.partitioning import by_bucket
from tefq.spark.runtime.columnar import FileOrder
from tefq.spark.runtime.pipelines import RunOptions, bound, reading_operator
from tefq.spark.shapes import plan_document, shape_of
from tefq.vocabulary import RunSettings

ROOT = Path(__file__).resolve().parents[3]
# modules a fact-side worker must not need
PLANNERS_AND_ENGINES = ("tefq.spark.shapes", "tefq.spark.planning.windowed", "tefq.spark.kernels.windowed",
                        "tefq.oracle.windowed", "tefq.syntax", "tefq.simulate", "rdflib", "lark")
LOAD = """
import pickle, sys
pickle.loads(sys.stdin.buffer.read())
print("\\n".join(sorted(sys.modules)))
"""


def shipped_operator(query_file: str) -> bytes:
    """The pickled function of the document's first plan, as `build_plan` gives Spark (direct ingestion)."""
    doc = load(ROOT / query_file).document()
    run = RunOptions(RunSettings(0, 0, 0), None, None, False, None)
    run = replace(run, settings=StreamSettings(0, 0, 0, batches=(1,), rank_starts=(0,)))
    plan = plan_document(doc, 2)[0]
    func = reading_operator(shape_of(plan).operator(doc, plan, run), bound(plan, run), None, FileOrder({}))
    return cloudpickle.dumps(by_bucket(func, [0, 1]))


def modules_loading(pickled: bytes) -> set[str]:
    done = subprocess.run([sys.executable, "-c", LOAD], input=pickled, capture_output=True, check=True)
    return set(done.stdout.decode().split())


def under(modules: set[str], prefix: str) -> bool:
    return any(m == prefix or m.startswith(prefix + ".") for m in modules)


@pytest.mark.parametrize("query", ["usecases/uc1.tef", "usecases/uc3.tef"])
def test_a_fact_side_worker_imports_no_planner(query: str) -> None:
    modules = modules_loading(shipped_operator(query))
    assert under(modules, "tefq.spark.operators")  # it did load the operator
    assert [p for p in PLANNERS_AND_ENGINES if under(modules, p)] == []


def test_a_windowed_worker_imports_its_engine() -> None:
    modules = modules_loading(shipped_operator("usecases/uc1_csparql.rspql"))
    assert under(modules, "tefq.spark.kernels.windowed") and "tefq.spark.shapes" not in modules

"""The end of a bounded input over several micro-batches: the operators end it in the last one
(`StreamSettings.ended`) and the driver runs no micro-batch for a flush; when an operator cannot
tell (no inputs' counts), the driver sees it in the observed metrics and flushes in one more
(engine.read_to_end). Either way the rows are the oracle's."""
from __future__ import annotations

import os
from dataclasses import replace

import pytest

from tefq.io.bad_rows import BadRowLog
from tefq.io.staging import stage_streams
from tefq.spark.engine import SparkRun, run_bounded
from tefq.spark.operators.base import StreamSettings
from tefq.spark.shapes import plan_document, shape_of
from tests.support import spark_docs as sd
from tests.support.spark import oracle
from tests.support.streams import random_stream, write_parts

pytestmark = pytest.mark.spark


def bounded_run(spark, doc, path: str, workdir: str, operator=None) -> tuple[list, dict]:
    """run_bounded over `path`, one file per micro-batch, 2 buckets: (rows, sink metrics)."""
    log = BadRowLog(None)
    plans = plan_document(doc, 2)
    staging = stage_streams([path], workdir, log)
    opts = SparkRun(doc=doc, stream_paths=(path,), spark=spark, max_files_per_trigger=1, progress=False).options(log)
    [(_, qrs, m)] = list(run_bounded(spark, doc, plans, staging, workdir, opts, operator=operator))
    return qrs[0].rows, m


@pytest.mark.parametrize("counts", [True, False])
def test_last_micro_batch_ends_the_input(spark, tmp_path, counts):
    """With the inputs' micro-batch counts: 3 files, 3 micro-batches. Without them (the operator
    gets the run's settings alone): the driver adds the flush's micro-batch. Same rows."""
    elements = random_stream(7, 150)
    path = write_parts(tmp_path, elements, 3, fmt="parquet")
    doc = sd.uc2(2000)

    def countless(plan, run):
        return shape_of(plan).operator(doc, plan, replace(run, settings=StreamSettings.of(run.settings)))

    workdir = str(tmp_path / "work")
    os.makedirs(workdir)
    rows, m = bounded_run(spark, doc, path, workdir, None if counts else countless)
    assert rows == oracle(doc, elements).results[0].rows
    assert len(m["micro_batches"]) == (3 if counts else 4)

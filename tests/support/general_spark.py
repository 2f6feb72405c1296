"""The general plan's shapes on real Spark against the oracle (tests/spark and tests/reliability)."""
from __future__ import annotations

import os
import tempfile

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from tests.support.general_shapes import BACKGROUND, PROGRAMS, SHAPES, document, oracle_rows, streams
from tests.support.streams import write_files

ISSUE_SHAPES = ["genre", "event pattern", "two facts joined", "fact pattern, SUM DURATION",
                "FILTER over pattern variables", "FILTER over interval variables", "WHILE with a background pattern",
                "SINCE/UNTIL with a background BGP and FILTER"]
EXAMPLES = int(os.environ.get("TEFQ_SPARK_EXAMPLES", "0"))
SPARK_SETTINGS = settings(max_examples=EXAMPLES or 2, deadline=None, derandomize=not EXAMPLES,
                          phases=(Phase.explicit, Phase.reuse, Phase.generate),  # no shrinking: a run is slow
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def background_file(directory: str) -> str:
    path = os.path.join(directory, "background.nt")
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(f"{s} {p} {o} .\n" for s, p, o in BACKGROUND)
    return path


def oracle_metrics(doc, elements):
    from tefq.oracle import run

    return run(doc, elements, BACKGROUND, 0).metrics


def spark_rows(spark, doc, elements, cuts, buckets: int = 2, **kw):
    """The Spark engine's run over `elements` in arrival order, one file per cut, on `buckets` buckets."""
    from tefq.spark import run

    with tempfile.TemporaryDirectory(prefix="tefq-general-") as tmp:
        path = write_files(tmp, elements, cuts, "tsv")
        return run(doc, [path], background_file(tmp), spark=spark, buckets=buckets, progress=False, **kw)


def check_against_the_oracle(spark, shape: str, buckets: int, examples: int) -> None:
    """Hypothesis streams of `shape` in time order on `buckets` buckets: the oracle's rows and metrics."""
    @settings(SPARK_SETTINGS, max_examples=examples)
    @given(elements=streams(shape in PROGRAMS), cuts=st.lists(st.integers(1, 20), max_size=3),
           per_batch=st.sampled_from([1, 2]))
    def run(elements, cuts, per_batch):
        doc = document(SHAPES[shape])
        in_time = sorted(elements, key=lambda e: e[0])  # arrival in time order: nothing is late
        got = spark_rows(spark, doc, in_time, cuts, buckets, max_files_per_trigger=per_batch)
        assert got.results[0].rows == oracle_rows(doc, in_time)
        want = oracle_metrics(doc, in_time)
        for k in ("events_in", "facts_created", "facts_closed", "unmatched_until", "late_events"):
            assert getattr(got.metrics, k) == getattr(want, k), k
    run()

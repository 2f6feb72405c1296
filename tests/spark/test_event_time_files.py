"""A bounded run reads each stream's files in stream order, whatever their modification times
(runtime/listing.py): a stream with files still unread holds the others back (spec §6.1), so a log
split into files and a programme guide spanning it lose nothing on Spark, micro-batch by
micro-batch, on every ingestion path (issue 40: files written within one ms, as `split` writes
them, had Spark read the log's last file first and 3,636 events come late)."""
from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from tefq.analysis import bind_text, load
from tefq.io.run_inputs import RunInputs
from tefq.io.stream_writers import write_stream
from tefq.oracle import run_document
from tests.support.oracle_docs import synthetic_iptv
from tests.support.paths import ROOT
from tests.support.spark import run_spark

UC3 = load(os.path.join(ROOT, "usecases", "uc3.tef"))
JOINS = bind_text("""PREFIX : <http://example.org/iptv#>
REGISTER RSTREAM <http://example.org/iptv/joins> AS
SELECT ?channel (COUNT(?user) AS ?joins) ?program
FROM NAMED WINDOW :log ON <http://example.org/iptv/log> [RANGE PT5M STEP PT1M]
WHERE { WINDOW :log { ?user :join ?channel OPTIONAL { ?channel :start ?program } } }
GROUP BY ?channel ?program
""", "<joins>")  # windowed: joins per channel over 5 min, every minute, with the programmes starting then
DOCS = {"uc3": UC3, "windowed": JOINS}
EXAMPLES = int(os.environ.get("TEFQ_SPARK_EXAMPLES", "0"))
SPARK_SETTINGS = settings(max_examples=EXAMPLES or 4, deadline=None, derandomize=not EXAMPLES,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a shrink step is a Spark run
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SECOND = 1_000_000  # an mtime, in s since 1970: every file's is this plus a few seconds


def uc3_streams(events: int, seed: int = 1) -> tuple[list, list]:
    """A UC3 log and its programme guide over 32 minutes (the guide spans the whole log), each in
    time order."""
    elements = synthetic_iptv(n_events=events, users=60, channels=4, epg=True, day_ms=1_900_000, seed=seed)
    log = [e for e in elements if e[2].endswith(("#join>", "#quit>"))]
    return log, [e for e in elements if not e[2].endswith(("#join>", "#quit>"))]


def write_split(directory: str, name: str, elements: list, cuts: list[int], mtimes: list[int],
                ext: str = "tsv") -> str:
    """`elements` cut at `cuts` into files named in order, file i modified at SECOND + mtimes[i]."""
    d = os.path.join(directory, name)
    os.makedirs(d)
    bounds = [0, *cuts, len(elements)]
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        p = os.path.join(d, f"part-{i:04d}.{ext}")
        write_stream(elements[a:b], p)
        os.utime(p, (SECOND + mtimes[i], SECOND + mtimes[i]))
    return d


def even_cuts(n: int, files: int) -> list[int]:
    return [n * i // files for i in range(1, files)]


def check(spark, doc, paths: list[str], **kw) -> None:
    elements, _ = RunInputs(list(paths)).read_all()
    want = run_document(doc, elements)  # every element applied, in (t, stream order)
    got = run_spark(spark, doc, paths, lateness_ms=0, **kw)
    assert got.metrics.late_events == 0
    assert got.metrics.extra["late_events_by_stream"] == dict.fromkeys(paths, 0)
    assert [r.sorted_rows() for r in got.results] == [r.sorted_rows() for r in want.results]
    assert got.metrics.ticks == want.metrics.ticks


@pytest.mark.parametrize("doc, guide_at, max_files, ingest, ext", [
    ("uc3", -5, 1, "rows", "tsv"),  # the guide written before the log
    ("uc3", +5, 1, "direct", "parquet"),  # ... after it
    ("uc3", +5, 2, "columnar", "parquet"),
    ("uc3", +5, None, "auto", "tsv"),  # the default: one micro-batch
    ("windowed", +5, 1, "rows", "tsv"),
])
def test_uc3_log_in_8_files_written_in_one_ms_loses_nothing(spark, doc, guide_at, max_files, ingest, ext):
    log, guide = uc3_streams(400)
    with tempfile.TemporaryDirectory(prefix="tefq-evfiles-") as d:
        paths = [write_split(d, "log", log, even_cuts(len(log), 8), [0] * 8, ext),
                 write_split(d, "epg", guide, [], [guide_at], ext)]
        check(spark, DOCS[doc], paths, max_files_per_trigger=max_files, ingest=ingest)


@st.composite
def split_streams(draw):
    """A UC3 log and guide, each cut into files at drawn places, the files' modification times
    drawn from a few seconds (ties within a stream, the guide before, among or after the log's),
    read with one or two files per micro-batch."""
    log, guide = uc3_streams(draw(st.sampled_from([120, 240])), seed=draw(st.integers(1, 5)))
    split = []
    for elements, most in ((log, 6), (guide, 3)):
        cuts = sorted(set(draw(st.lists(st.integers(1, len(elements) - 1), max_size=most - 1))))
        split.append((elements, cuts, draw(st.lists(st.integers(0, 3), min_size=len(cuts) + 1,
                                                    max_size=len(cuts) + 1))))
    return (split, draw(st.sampled_from([1, 1, 2])), draw(st.sampled_from(["rows", "direct"])),
            draw(st.sampled_from(sorted(DOCS))))


@pytest.mark.spark
@SPARK_SETTINGS
@given(case=split_streams())
def test_any_split_and_arrival_order_equals_the_oracle(spark, case):
    split, max_files, ingest, doc = case
    with tempfile.TemporaryDirectory(prefix="tefq-evfiles-") as d:
        paths = [write_split(d, name, *part) for name, part in zip(("log", "epg"), split)]
        check(spark, DOCS[doc], paths, max_files_per_trigger=max_files, ingest=ingest)

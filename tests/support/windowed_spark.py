"""Windowed queries on real Spark against the windowed oracle: the shared comparison and generated logs."""
from __future__ import annotations

import os
import random
import threading
import time

import pytest

pytest.importorskip('pyspark')

from tefq.io.stream_writers import write_stream
from tefq.oracle import run_document
from tefq.oracle.windowed import run as oracle_run
from tests.support.spark import run_spark



def assert_same_as_oracle(got, want) -> None:
    """Spark's run `got` has the oracle's results `want`: names, columns, rows, ticks, feedback."""
    assert [r.name for r in got.results] == [r.name for r in want]
    for g, w in zip(got.results, want):
        assert g.columns == w.columns
        assert g.rows == w.sorted_rows(), g.name
    assert got.metrics.ticks == want.ticks
    assert got.metrics.intermediate_bindings == want.feedback_triples


NS = "http://example.org/iptv#"
PREFIX = "PREFIX : <http://example.org/iptv#>\n"


def bordered_log(seed: int, n: int, span_ms: int, step_ms: int = 1000) -> list:
    """(ts, s, p, o) sorted by ts; half the timestamps on a window border or next to one."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        ts = rng.randrange(span_ms)
        if rng.random() < 0.5:
            ts = max(0, (ts // step_ms) * step_ms + rng.choice([-1, 0, 1]))
        p = rng.choice(["join", "join", "quit", "rate"])
        out.append((ts, f"<{NS}u{rng.randrange(12)}>", f"<{NS}{p}>", f"<{NS}ch{rng.randrange(4)}>"))
    return sorted(out, key=lambda e: e[0])


def write_files(elements: list, stream_dir, cuts: list[int]) -> None:
    """One file per piece (in this order: each a micro-batch with max_files_per_trigger=1)."""
    stream_dir.mkdir()
    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(elements))), len(elements)]
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        path = str(stream_dir / f"part-{i:03d}.tsv")
        write_stream(elements[a:b], path, "tsv")
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))  # Spark takes the oldest file first


def spark_equals_oracle(spark, doc, elements: list, stream_dir, **kw):
    from tefq.spark import run as spark_run

    got = spark_run(doc, [str(stream_dir)], spark=spark, progress=False, max_files_per_trigger=1, **kw)
    assert_same_as_oracle(got, oracle_run(doc, elements, t0=kw.get("t0", 0)))
    return got


def load_text(tmp_path, text: str):
    from tefq.analysis import load

    path = tmp_path / "q.rspql"
    path.write_text(text)
    return load(str(path))


def reported(doc, elements: list, event_time: int) -> list:
    """The oracle's rows of the windows that close by `event_time`, per query, sorted."""
    want = run_document(doc, sorted(elements, key=lambda e: e[0]))
    return [sorted(r for r in q.rows if r[0] <= event_time) for q in want.results]


def followed(spark, doc, paths: list[str], feed, last_close: int, **kw) -> list:
    """Follow `paths` on Spark while `feed()` (a thread) adds the rest of the input; stop once a
    window closing at `last_close` was reported (every query's windows due at an event time are
    evaluated in one micro-batch), or after a long while. Returns every row handed on, per query."""
    seen: dict[str, list] = {q.name: [] for q in doc.queries}
    closed: list[bool] = []
    started = time.monotonic()

    def on_rows(results) -> None:
        for r in results:
            seen[r.name].extend(r.rows)
            if any(row[0] == last_close for row in r.rows):
                closed.append(True)

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    got = run_spark(spark, doc, paths, follow=True, on_rows=on_rows,
                    stop=lambda: bool(closed) or time.monotonic() - started > 400, **kw)
    thread.join(timeout=60)
    assert got.metrics.rows_out == sum(len(rows) for rows in seen.values())
    return [seen[q.name] for q in doc.queries]

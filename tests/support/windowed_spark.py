"""Windowed queries on real Spark against the windowed oracle: the shared comparison and generated logs."""
from __future__ import annotations

import os
import random

import pytest

pytest.importorskip('pyspark')

from tefq.io.stream_writers import write_stream
from tefq.oracle.windowed import run as oracle_run



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

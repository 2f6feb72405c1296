"""The Spark engine's inputs and run modes against the oracle: N-Quads / TriG streams (staged as
Parquet), background knowledge, bad RDF input, `--follow` on a growing directory with a clean
stop, and quiet logs (no Spark banner on stderr). One SparkSession for the in-process tests; the
bounded CLI test runs `tefq` as a subprocess (a fresh JVM, to see its start-up lines)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from tefq.errors import TefqError
from tefq.io.stream_writers import write_stream
from tests.support import spark_docs as sd
from tests.support.paths import ROOT
from tests.support.spark import oracle, run_spark

pytestmark = pytest.mark.spark
TEFQ = [sys.executable, "-m", "tefq"]
IPTV = sd.IPTV
# What Spark, log4j and the JVM print unless told not to.
BANNER = ("log4j", "WARN ", "INFO ", "Setting default log level", "incubator modules", "NativeCodeLoader",
          "loopback address", "SPARK_LOCAL_IP", "sc.setLogLevel")


def uc3_stream() -> list[tuple[int, str, str, str]]:
    """Users and programs on the same channels; a rejoin and a program change at one ms."""
    j, q, start, fin = (f"<{IPTV}{x}>" for x in ("join", "quit", "start", "finish"))
    u, ch, pr = (lambda i: f"<{IPTV}u{i}>"), (lambda i: f"<{IPTV}ch{i}>"), (lambda i: f"<{IPTV}prog{i}>")
    return [(500, ch(0), start, pr(0)), (1000, u(1), j, ch(0)), (1000, u(2), j, ch(1)), (2000, ch(1), start, pr(1)),
            (3000, u(1), q, ch(0)), (3000, u(1), j, ch(0)), (4000, ch(0), fin, pr(0)), (4000, ch(0), start, pr(2)),
            (5500, u(2), q, ch(1)), (6000, u(3), j, ch(0)), (7000, u(1), q, ch(0)), (9000, u(2), j, ch(1))]


@pytest.mark.parametrize("ext,doc", [("nq", sd.uc1(2000)), ("trig.gz", sd.uc3(2000))], ids=["uc1-nq", "uc3-trig"])
def test_rdf_streams_on_spark_equal_the_oracle(spark, tmp_path, ext, doc):
    """N-Quads and TriG (graph times from prov:generatedAtTime) are staged file by file; a
    rejoin at one ms spans two files of one micro-batch (ties in stream order)."""
    elements = uc3_stream()
    d = tmp_path / "rdf"
    d.mkdir()
    for i, part in enumerate((elements[:5], elements[5:9], elements[9:])):
        p = d / f"part-{i}.{ext}"
        write_stream(part, str(p))
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    got = run_spark(spark, doc, [str(d)], max_files_per_trigger=2)
    from tefq.io.readers import read_stream

    want = oracle(doc, list(read_stream(str(d))))
    assert got.results[0].rows == want.results[0].rows
    assert got.metrics.events_in == want.metrics.events_in == len(elements)


def test_csrbench_has_timestamp_graphs(spark, tmp_path):
    """CSRBench's bench:hasTimestamp gives graphs their time, declared after their statements."""
    j, q = f"<{IPTV}join>", f"<{IPTV}quit>"
    ts = "<http://www.streamreasoning.org/schema/benchmark#hasTimestamp>"
    p = tmp_path / "csr.nq"
    p.write_text(f'<http://x/u1> {j} <http://x/c> <http://g/1> .\n'
                 f'<http://x/u2> {j} <http://x/c> <http://g/2> .\n'
                 f'<http://g/1> {ts} "1000"^^<http://www.w3.org/2001/XMLSchema#long> .\n'
                 f'<http://g/2> {ts} "2500"^^<http://www.w3.org/2001/XMLSchema#long> .\n'
                 f'<http://x/u1> {q} <http://x/c> <http://g/3> .\n'
                 f'<http://g/3> {ts} "4000"^^<http://www.w3.org/2001/XMLSchema#long> .\n', encoding="utf-8")
    got = run_spark(spark, sd.uc1(1000), [str(p)])
    from tefq.io.readers import read_stream

    elements = list(read_stream(str(p)))
    assert [e[0] for e in elements] == [1000, 2500, 4000]
    assert got.results[0].rows == oracle(sd.uc1(1000), elements).results[0].rows


def test_bad_rdf_names_file_and_line(spark, tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    write_stream(uc3_stream()[:4], str(d / "part-0.nq"))
    (d / "part-1.nq").write_text(f'<http://x/u1> <{IPTV}join> "unterminated <http://g/1> .\n', encoding="utf-8")
    with pytest.raises(TefqError) as e:
        run_spark(spark, sd.uc1(1000), [str(d)])
    assert e.value.file.endswith("part-1.nq") and e.value.line == 1


def test_background_query_on_spark_equals_the_oracle(spark, tmp_path):
    """examples/genre: CURRENT facts joined with background triples (the general fallback)."""
    from tefq.analysis import load
    from tefq.io.rdf import background_as_ntriples
    from tefq.io.readers import read_background

    bg = read_background(os.path.join(ROOT, "examples/genre/channels.ttl"))
    doc = load(os.path.join(ROOT, "examples/genre/viewers-per-genre.tef"),
               background_predicates=frozenset(p for _, p, _ in background_as_ntriples(bg)))
    j, q = f"<{IPTV}join>", f"<{IPTV}quit>"
    a, b = f"<{IPTV}A>", f"<{IPTV}B>"
    elements = [(1000, "<http://x/u1>", j, a), (2000, "<http://x/u2>", j, b), (6000, "<http://x/u3>", j, a),
                (7000, "<http://x/u1>", q, a), (7000, "<http://x/u1>", j, b), (12000, "<http://x/u2>", q, b),
                (16000, "<http://x/u4>", j, f"<{IPTV}C>")]
    path = tmp_path / "s.tsv"
    write_stream(elements, str(path))
    got = run_spark(spark, doc, [str(path)], background=os.path.join(ROOT, "examples/genre/channels.ttl"))
    want = oracle(doc, elements, bg)
    assert got.results[0].rows == want.results[0].rows
    assert any(f"<{IPTV}Sports>" in cells for _, cells in got.results[0].rows)


def banner_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if any(b in line for b in BANNER)]


def test_cli_bounded_run_nq_with_background_is_quiet(tmp_path):  # its own JVM: the start-up banner
    """A bounded `tefq run` on Spark: N-Quads input, a background file, the oracle's output byte
    for byte, and stderr holds tefq's own lines only (no Spark/log4j/JVM banner)."""
    from tefq.cli import run_command

    j, q = f"<{IPTV}join>", f"<{IPTV}quit>"
    a, b = f"<{IPTV}A>", f"<{IPTV}B>"
    elements = [(1000, "<http://x/u1>", j, a), (4000, "<http://x/u2>", j, b), (5000, "<http://x/u1>", q, a),
                (5000, "<http://x/u1>", j, b), (11000, "<http://x/u3>", j, a)]
    stream = tmp_path / "s.nq"
    write_stream(elements, str(stream))
    args = ["run", "examples/genre/viewers-per-genre.tef", "--stream", str(stream),
            "--background", "examples/genre/channels.ttl", "--engine", "spark"]
    env = dict(os.environ)
    env.pop("TEFQ_SPARK_LOG", None)
    out = subprocess.run(TEFQ + args + ["--out", str(tmp_path / "spark.csv")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert banner_lines(out.stderr) == [], out.stderr
    assert "[spark q1] micro-batch 1: " in out.stderr and out.stderr.rstrip().splitlines()[-1].startswith("tefq: ")
    ticks = [int(n) for n in re.findall(r", (\d+) ticks?[ ,]", out.stderr)]
    assert sum(ticks) == 3, out.stderr  # ticks 5 s, 10 s, 15 s: the first at or after the last event
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        assert run_command(args + ["--engine", "oracle", "--out", str(tmp_path / "oracle.csv")]) == 0
    finally:
        os.chdir(cwd)
    spark_csv = (tmp_path / "spark.csv").read_bytes()
    assert spark_csv == (tmp_path / "oracle.csv").read_bytes()
    assert b"Sports" in spark_csv


def wait_for(predicate, timeout_s: float) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError("timed out")


def drop(directory, name: str, elements) -> None:
    """Write a stream file the way a producer should: a hidden temporary name, then a rename."""
    tmp = os.path.join(directory, "." + name + ".tmp")
    write_stream(elements, tmp, fmt=name.rsplit(".", 1)[-1])
    os.replace(tmp, os.path.join(directory, name))


def test_follow_appends_ticks_as_files_arrive_stops_cleanly_and_resumes(spark, tmp_path, monkeypatch):
    """`tefq run --follow` on a directory that starts empty: a file's rows for the ticks its event
    time passed appear in --out while the run goes on; SIGTERM lets the run finish its micro-batch
    and exit 0. Started again with the same --checkpoint, it resumes: --out is then the oracle's
    rows up to the last reported tick, each tick once. (In process, on the module's session: the
    producer is a thread, the signal is real.)"""
    from tefq.cli import run_command
    from tefq.io.result_writers import results_text

    d = tmp_path / "in"
    d.mkdir()
    out_csv = tmp_path / "out.csv"
    j, q = f"<{IPTV}join>", f"<{IPTV}quit>"
    first = [(1000, "<http://x/u1>", j, "<http://x/a>"), (3000, "<http://x/u2>", j, "<http://x/b>"),
             (12000, "<http://x/u3>", j, "<http://x/a>"), (21000, "<http://x/u1>", q, "<http://x/a>")]
    second = [(21000, "<http://x/u1>", j, "<http://x/b>"), (33000, "<http://x/u2>", q, "<http://x/b>")]
    third = [(47000, "<http://x/u4>", j, "<http://x/a>")]
    seen: dict[str, str] = {}

    def producer(files: list[tuple[str, list]], last_tick: int) -> None:
        try:
            time.sleep(1.0)
            for name, elements in files:
                drop(d, name, elements)
            wait_for(lambda: out_csv.exists() and f"\n{last_tick}," in out_csv.read_text(), 300)
            seen[name] = out_csv.read_text()
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # handled by the follow loop: stop after this batch

    def follow(files: list[tuple[str, list]], last_tick: int) -> int:
        thread = threading.Thread(target=producer, args=(files, last_tick), daemon=True)
        thread.start()
        code = run_command(["run", "usecases/uc1.tef", "--stream", str(d), "--follow", "--out", str(out_csv),
                            "--master", "local[2]", "--quiet", "--checkpoint", str(tmp_path / "ck")])
        thread.join(timeout=60)
        return code

    monkeypatch.chdir(ROOT)
    assert follow([("part-0000.nq", first)], 20000) == 0  # N-Quads: staged as the files arrive
    assert "\n30000," not in seen["part-0000.nq"]  # the event time had not passed 30 s yet
    assert follow([("part-0001.tsv", second), ("part-0002.tsv", third)], 40000) == 0
    want = oracle(sd.uc1(10_000), first + second + third).results[0]
    want.rows = [r for r in want.rows if r[0] <= 40000]  # ticks the event time (47 s) has passed
    assert out_csv.read_bytes() == results_text([want], "csv").encode("utf-8")  # CRLF lines, one header

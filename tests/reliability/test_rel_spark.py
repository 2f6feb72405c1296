"""Issue 17 on the Spark engine: a finished checkpoint and new files (fault 1), --max-ticks
(fault 2), query names and paths (fault 4), signals and zone-less timestamps (fault 5)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tefq.errors import TefqError
from tests.support import spark_docs as sd
from tests.support.paths import ROOT
from tests.support.spark import oracle, run_spark

pytestmark = [pytest.mark.reliability, pytest.mark.spark]

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
X = "http://example.org/iptv#"
BASE = sd.VIEWS_START
views = sd.views


def write_tsv(path, elements) -> None:
    path.write_text("ts\ts\tp\to\n" + "".join(f"{t}\t{s}\t{p}\t{o}\n" for t, s, p, o in elements))


def test_finished_checkpoint_and_new_files_is_refused(spark, tmp_path) -> None:
    """Fault 1: the second run used to exit 0 without the new file's ticks."""
    stream, ck = tmp_path / "s", str(tmp_path / "ck")
    stream.mkdir()
    first, later = views(0, 10), views(10, 10, start=BASE + 600_000)
    write_tsv(stream / "a.tsv", first)
    doc = sd.uc1(10_000)
    got = run_spark(spark, doc, [str(stream)], checkpoint=ck)
    assert got.results[0].rows == oracle(doc, first).results[0].rows
    again = run_spark(spark, doc, [str(stream)], checkpoint=ck)  # same files: the same rows, once
    assert again.results[0].rows == got.results[0].rows
    write_tsv(stream / "b.tsv", later)
    with pytest.raises(TefqError) as e:
        run_spark(spark, doc, [str(stream)], checkpoint=ck)
    assert "finished bounded run" in e.value.message and "b.tsv" in e.value.message
    with pytest.raises(TefqError):
        run_spark(spark, doc, [str(stream)], checkpoint=ck, follow=True)
    fresh = run_spark(spark, doc, [str(stream)], checkpoint=str(tmp_path / "ck2"))
    assert fresh.results[0].rows == oracle(doc, first + later).results[0].rows


@pytest.mark.parametrize("stray", [0, -1, (1 << 61) - 1000])  # near the end of the time range
def test_a_stray_timestamp_stops_spark_with_the_row_named(spark, tmp_path, stray) -> None:
    """Fault 2: Spark failed with 'Unable to allocate 307 GiB'; now the oracle's message, row named."""
    path = tmp_path / "s.tsv"
    write_tsv(path, views(0, 5) + [(stray, f"<{X}stray>", f"<{X}join>", f"<{X}ch9>")])
    with pytest.raises(TefqError) as e:
        run_spark(spark, sd.uc1(10_000), [str(path)], max_ticks=10_000)
    assert "more than 10,000 ticks (--max-ticks)" in e.value.message and f"{stray} ms" in e.value.message
    assert (e.value.file, e.value.line) == (str(path), 12)


@pytest.mark.parametrize("stray", [0, (1 << 61) - 1000])
def test_a_stray_timestamp_stops_a_windowed_query_on_spark_as_on_the_oracle(spark, tmp_path, stray) -> None:
    """A windowed query closes every window: Spark enumerated the closes of a stray row's span
    (exit 1, 'Unable to allocate 745 GiB'); now --max-ticks stops it first with the oracle's
    message, the query and the row named."""
    import tefq

    path = tmp_path / "s.tsv"
    write_tsv(path, views(0, 5) + [(stray, f"<{X}stray>", f"<{X}join>", f"<{X}ch9>")])
    query = tefq.load(os.path.join(ROOT, "usecases", "uc1_csparql.rspql"))
    with pytest.raises(TefqError) as want:
        query.run([str(path)], engine="oracle")
    with pytest.raises(TefqError) as got:
        run_spark(spark, query.document(), [str(path)])
    assert got.value.message == want.value.message and "(--max-ticks)" in got.value.message
    assert (got.value.file, got.value.line) == (want.value.file, want.value.line) == (str(path), 12)


def test_max_ticks_zero_is_no_bound(spark, tmp_path) -> None:
    path = tmp_path / "s.tsv"
    elements = views(0, 5)
    write_tsv(path, elements)
    doc = sd.uc1(1000)
    with pytest.raises(TefqError):
        run_spark(spark, doc, [str(path)], max_ticks=3)
    assert run_spark(spark, doc, [str(path)], max_ticks=0).results[0].rows == oracle(doc, elements).results[0].rows


def test_zone_less_timestamps_are_utc_on_spark_in_tokyo(tmp_path) -> None:
    """Fault 5: Spark read `1970-01-01T09:00:00` in the machine's zone (9 h off in Tokyo)."""
    path = tmp_path / "s.csv"
    path.write_text("ts,s,p,o\n" + f"2023-11-14T22:13:20,<{X}u1>,<{X}join>,<{X}ch1>\n"
                    f"2023-11-14T22:15:00,<{X}u1>,<{X}quit>,<{X}ch1>\n")
    args = [sys.executable, "-m", "tefq", "run", UC1, "--stream", str(path), "--quiet", "--format", "csv"]
    env = {**os.environ, "TZ": "Asia/Tokyo", "TEFQ_SPARK_MASTER": "local[1]"}
    spark_out = subprocess.run(args + ["--engine", "spark"], capture_output=True, text=True, env=env)
    oracle_out = subprocess.run(args + ["--engine", "oracle"], capture_output=True, text=True, env=env)
    assert spark_out.returncode == 0, spark_out.stderr[-2000:]
    assert spark_out.stdout == oracle_out.stdout
    assert spark_out.stdout.splitlines()[1].startswith(str(BASE))  # 2023-11-14T22:13:20Z


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a shell may have started us with SIGINT ignored


@pytest.mark.parametrize("sig,code,words", [(signal.SIGTERM, 143, "terminated by SIGTERM"),
                                            (signal.SIGINT, 130, "interrupted")])
def test_signal_mid_spark_run(tmp_path, sig, code, words) -> None:
    """Fault 5: SIGTERM used to die without a message and leave /tmp/tefq-spark-* behind."""
    stream, scratch = tmp_path / "s", tmp_path / "tmp"
    stream.mkdir()
    scratch.mkdir()
    for k in range(4):
        write_tsv(stream / f"{k}.tsv", views(k * 50, 50, start=BASE + k * 10_000_000))
    env = {**os.environ, "TMPDIR": str(scratch), "TEFQ_SPARK_MASTER": "local[1]"}
    p = subprocess.Popen([sys.executable, "-m", "tefq", "run", UC1, "--stream", str(stream), "--out",
                          str(tmp_path / "out.csv"), "--max-files-per-trigger", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=default_sigint)
    for line in p.stderr:  # the query is running: a temporary directory exists
        if "running q1" in line:
            break
    assert [d for d in os.listdir(scratch) if d.startswith("tefq-spark-")]
    p.send_signal(sig)
    err = p.stderr.read()
    assert p.wait() == code, err
    assert words in err and "Traceback" not in err, err
    assert not [d for d in os.listdir(scratch) if d.startswith("tefq-")], os.listdir(scratch)


def test_glob_characters_in_stream_paths_are_literal_on_spark(spark, tmp_path) -> None:
    """Fault 4: `s[1].tsv` read s1.tsv and `d[x]` read dx (Spark globs its paths)."""
    doc = sd.uc1(10_000)
    mine, other = views(0, 2), views(5, 3)
    (tmp_path / "d[x]").mkdir()
    (tmp_path / "dx").mkdir()
    for target, elements in (("s[1].tsv", mine), ("s1.tsv", other), ("d[x]/a.tsv", mine), ("dx/a.tsv", other)):
        write_tsv(tmp_path / target, elements)
    want = oracle(doc, mine).results[0].rows
    for target in ("s[1].tsv", "d[x]"):
        assert run_spark(spark, doc, [str(tmp_path / target)]).results[0].rows == want, target


def test_a_colon_in_a_file_name_is_refused_not_a_crash(spark, tmp_path) -> None:
    """Fault 4: Hadoop cannot read `a:b.tsv` (exit 1 with Spark's trace before): exit 2, named."""
    write_tsv(tmp_path / "a:b.tsv", views(0, 2))
    with pytest.raises(TefqError) as e:
        run_spark(spark, sd.uc1(10_000), [str(tmp_path)])
    assert "':'" in e.value.message and e.value.file.endswith("a:b.tsv")


def test_every_file_header_is_checked_on_spark(spark, tmp_path) -> None:
    """Fault 3: Spark skipped each file's first line unchecked, so a second file without a header
    silently lost its first row; now it stops at that file's line 1, as the oracle does."""
    d = tmp_path / "log"
    d.mkdir()
    write_tsv(d / "a.tsv", views(0, 3))
    (d / "b.tsv").write_text("".join(f"{t}\t{s}\t{p}\t{o}\n" for t, s, p, o in views(10, 3)))
    with pytest.raises(TefqError) as e:
        run_spark(spark, sd.uc1(), [str(d)])
    assert e.value.file.endswith("b.tsv") and e.value.line == 1 and "header" in e.value.message

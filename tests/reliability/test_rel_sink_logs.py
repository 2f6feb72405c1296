"""Issue 26 (part 2), case 3: an empty or garbled entry of a checkpoint's logs (the sink's
`_spark_metadata/N`, `commits/N`, `offsets/N`, a source's log) is recovered or refused with exit 2
naming it, never read as a batch without rows (`: > ck/q1/output/_spark_metadata/1` lost that
batch's rows with exit 0)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tefq.errors import TefqError
from tefq.spark.runtime.log_entries import check_logs
from tefq.spark.runtime.sink import committed_files
from tests.support.paths import ROOT

pytestmark = [pytest.mark.reliability]

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
X = "http://example.org/iptv#"
BASE = 1_700_000_000_000
ADD = '{"path":"file:///o/part-%d.parquet","size":1,"isDir":false,"modificationTime":1,"action":"add"}'


def sink_log(tmp_path, contents: list[str]) -> str:
    log = tmp_path / "q1" / "output" / "_spark_metadata"
    log.mkdir(parents=True)
    for n, text in enumerate(contents):
        (log / str(n)).write_text(text)
    return str(tmp_path / "q1" / "output")


def test_a_sink_entry_without_files_is_no_rows_but_an_empty_one_is_refused(tmp_path) -> None:
    out = sink_log(tmp_path, ["v1\n" + ADD % 0, "v1", "v1\n" + ADD % 2])
    assert committed_files(out) == ["/o/part-0.parquet", "/o/part-2.parquet"]
    (tmp_path / "q1" / "output" / "_spark_metadata" / "1").write_text("")
    with pytest.raises(TefqError, match="this checkpoint log entry is empty") as e:
        committed_files(out)
    assert e.value.file.endswith(os.path.join("_spark_metadata", "1"))


@pytest.mark.parametrize("text, words", [("v1\n{\"path\":\"file:///o/p", "cut short or garbled"),
                                         ("\x00\x00\x00", "garbled"), ("", "empty")])
def test_a_broken_sink_entry_is_refused(tmp_path, text, words) -> None:
    out = sink_log(tmp_path, ["v1\n" + ADD % 0, text])
    with pytest.raises(TefqError, match=words):
        committed_files(out)


def query_logs(tmp_path, batches: int) -> str:
    ck = tmp_path / "ck" / "q1" / "checkpoint"
    for log in ("offsets", "commits", "sources/0"):
        (ck / log).mkdir(parents=True)
        for n in range(batches):
            (ck / log / str(n)).write_text("v1\n{\"logOffset\":%d}\n" % n)
            (ck / log / f".{n}.crc").write_bytes(b"crc")
    return str(tmp_path / "ck")


def test_the_last_commit_or_uncommitted_offsets_entry_is_dropped_to_recover(tmp_path) -> None:
    directory = query_logs(tmp_path, 3)
    ck = tmp_path / "ck" / "q1" / "checkpoint"
    (ck / "commits" / "2").write_text("")
    (ck / "offsets" / "2").write_text("v1\n{\"batchWat")
    dropped = check_logs(directory)
    assert sorted(os.path.relpath(d, ck) for d in dropped) == ["commits/2", "offsets/2"]
    assert sorted(os.listdir(ck / "commits")) == [".0.crc", ".1.crc", "0", "1"]
    assert check_logs(directory) == []


@pytest.mark.parametrize("entry", ["commits/1", "offsets/0", "sources/0/1"])
def test_a_broken_earlier_entry_is_refused(tmp_path, entry) -> None:
    directory = query_logs(tmp_path, 3)
    (tmp_path / "ck" / "q1" / "checkpoint" / entry).write_text("")
    with pytest.raises(TefqError, match="this checkpoint log entry is empty") as e:
        check_logs(directory)
    assert e.value.file == str(tmp_path / "ck" / "q1" / "checkpoint" / entry)


def run_uc1(stream, ck: str, out) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tefq", "run", UC1, "--quiet", "--engine", "spark", "--stream",
                           str(stream), "--checkpoint", ck, "--out", str(out), "--max-files-per-trigger", "1"],
                          capture_output=True, text=True, env={**os.environ, "TEFQ_SPARK_MASTER": "local[2]"},
                          timeout=600)


@pytest.mark.spark
@pytest.mark.skipif(os.environ.get("TEFQ_FAULTS_LONG") != "1", reason="make test-faults (TEFQ_FAULTS_LONG=1): make test stays under 20 minutes")
def test_a_truncated_checkpoint_log_is_recovered_or_refused_on_the_cli(tmp_path) -> None:
    stream = tmp_path / "s"
    stream.mkdir()
    for k in range(3):
        (stream / f"{k:02d}.tsv").write_text("ts\ts\tp\to\n" + "".join(
            f"{BASE + (k * 40 + i) * 1000}\t<{X}u{i % 9}>\t<{X}{'join' if i % 4 else 'quit'}>\t<{X}ch{i % 3}>\n"
            for i in range(40)))
        os.utime(stream / f"{k:02d}.tsv", (1_600_000_000 + k, 1_600_000_000 + k))
    ck = str(tmp_path / "ck")
    first = run_uc1(stream, ck, tmp_path / "a.csv")
    assert first.returncode == 0, first.stderr[-3000:]
    commits = os.path.join(ck, "q1", "checkpoint", "commits")
    last = max(int(n) for n in os.listdir(commits) if n.isdigit())
    open(os.path.join(commits, str(last)), "w").close()  # a zero-length entry, as after a crash
    again = run_uc1(stream, ck, tmp_path / "b.csv")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "dropped this empty or cut-off checkpoint log entry" in again.stderr
    assert (tmp_path / "b.csv").read_bytes() == (tmp_path / "a.csv").read_bytes()
    open(os.path.join(ck, "q1", "output", "_spark_metadata", "1"), "w").close()  # the case
    refused = run_uc1(stream, ck, tmp_path / "c.csv")
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "_spark_metadata/1: error: this checkpoint log entry is empty" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "c.csv").exists()

"""Issue 26, case 7 (outside Spark): every failure a sentence, and no file ending in a cut-off record.

A full disk is a 64 KiB tmpfs mounted for the test when the test may mount one (root); otherwise
RLIMIT_FSIZE of 64 KiB with SIGXFSZ ignored, so a write past it fails with EFBIG ("File too
large") instead of ENOSPC. Each test says which one it ran on (`DISK.how`). Before: `--bad-rows` on
a full disk was "internal error: OSError" with a cut-off last record; follow mode's --out could end
in half a row; gzip data in a `.tsv` file echoed its bytes to the terminal."""
from __future__ import annotations

import csv
import gzip
import io
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.reliability

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
TEFQ = os.environ.get("TEFQ_CLI", f"{sys.executable} -m tefq").split()  # TEFQ_CLI: to try old code
X = "http://example.org/iptv#"
DISK_BYTES = 64 * 1024


@dataclass(frozen=True)
class SmallDisk:
    """A directory where writing more than DISK_BYTES fails; `limit` goes in a subprocess's preexec_fn."""

    path: str
    how: str  # "tmpfs" or "RLIMIT_FSIZE"
    limit: Callable[[], None] | None

    def run(self, args: list[str], **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(args, capture_output=True, text=True, preexec_fn=self.limit, **kwargs)


def file_size_limit() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
    resource.setrlimit(resource.RLIMIT_FSIZE, (DISK_BYTES, DISK_BYTES))


@pytest.fixture
def disk(tmp_path) -> Iterator[SmallDisk]:
    path = tmp_path / "disk"
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(path)],
                             capture_output=True).returncode == 0
    try:
        yield SmallDisk(str(path), "tmpfs", None) if mounted else SmallDisk(str(path), "RLIMIT_FSIZE", file_size_limit)
    finally:
        if mounted:
            subprocess.run(["umount", str(path)], check=True)


def full_disk_words(disk: SmallDisk) -> str:
    return "No space left on device" if disk.how == "tmpfs" else "File too large"


def many_bad_rows(tmp_path, n: int = 5000) -> str:
    rows = ["ts\ts\tp\to"]
    for i in range(n):
        rows.append(f"{1000 + i}\t<{X}u{i}>\t<{X}join>\t<{X}ch{i % 5}>")
        rows.append(f"noon{i}\t<{X}u{i}>\t<{X}join>\t<{X}ch{i % 5}>")
    path = tmp_path / "bad.tsv"
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def test_bad_rows_on_a_full_disk_name_the_file_and_end_with_a_whole_record(tmp_path, disk) -> None:
    stream = many_bad_rows(tmp_path)
    bad = os.path.join(disk.path, "bad")
    r = disk.run(TEFQ + ["run", UC1, "--engine", "oracle", "--stream", stream, "--bad-rows", bad, "--quiet",
                         "--out", str(tmp_path / "out.csv")])
    assert r.returncode == 2, (disk.how, r.stderr[-2000:])
    [name] = os.listdir(bad)
    assert f"{os.path.join(bad, name)}: error: cannot write bad rows: {full_disk_words(disk)}" in r.stderr, r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    data = open(os.path.join(bad, name), encoding="utf-8").read()
    assert data and data.endswith("\n")
    records = [rec.split("\t", 4) for rec in data.splitlines()]  # file, line, kind, reason, row
    assert all(rec[2] == "bad-timestamp" and rec[4].count("\t") == 3 for rec in records), disk.how
    assert [int(rec[1]) for rec in records] == list(range(3, 2 * len(records) + 2, 2))


@pytest.mark.parametrize("target", ["file", "directory"])
def test_a_bounded_out_on_a_full_disk_leaves_no_partial_file(tmp_path, disk, target) -> None:
    stream = tmp_path / "s.tsv"
    stream.write_text("ts\ts\tp\to\n" + "".join(f"{1000 + i * 997}\t<{X}u{i}>\t<{X}join>\t<{X}ch{i % 40}>\n"
                                             for i in range(3000)))
    out = os.path.join(disk.path, "out.csv" if target == "file" else "res/")
    r = disk.run(TEFQ + ["run", UC1, "--engine", "oracle", "--stream", str(stream), "--out", out, "--quiet"])
    assert r.returncode == 2, (disk.how, r.stderr[-2000:])
    named = os.path.join(out, "q1.csv") if target == "directory" else out
    assert f"{named}: error: cannot write the output: {full_disk_words(disk)}" in r.stderr, r.stderr
    left = [f for _, _, files in os.walk(disk.path) for f in files]
    assert left == [], left  # written atomically: no file, no temporary file


@pytest.mark.parametrize("fmt", ["csv", "arrow"])  # arrow: one large binary write (570 kB here)
def test_standard_output_on_a_full_disk_is_a_sentence(tmp_path, disk, fmt) -> None:
    stream = tmp_path / "s.tsv"
    stream.write_text("ts\ts\tp\to\n" + "".join(f"{1000 + i * 997}\t<{X}u{i}>\t<{X}join>\t<{X}ch{i % 40}>\n"
                                             for i in range(3000)))
    with open(os.path.join(disk.path, f"stdout.{fmt}"), "w") as out:
        r = subprocess.run(TEFQ + ["run", UC1, "--engine", "oracle", "--stream", str(stream), "--quiet",
                                   "--format", fmt],
                           stdout=out, stderr=subprocess.PIPE, text=True, preexec_fn=disk.limit)
    assert r.returncode == 2, (disk.how, r.stderr[-2000:])
    assert f"<stdout>: error: cannot write the results: {full_disk_words(disk)}" in r.stderr, r.stderr


APPENDER = """
import sys
from tefq.errors import TefqError
from tefq.io.result_writers import ResultAppender
from tefq.results import QueryResult
out = ResultAppender("csv", sys.argv[1])
cells = ('"' + "x" * 300 + '"',)
for batch in range(10_000):  # micro-batches of 7 rows of ~330 bytes: the disk fills mid-batch
    try:
        out([QueryResult("q1", ("?v",), [(batch * 1000 + i, cells) for i in range(7)])])
    except TefqError as e:
        print(batch, file=sys.stderr)
        print(e.render(), file=sys.stderr)
        sys.exit(2)
"""


def test_follow_output_on_a_full_disk_ends_with_the_last_whole_batch(disk) -> None:
    """Follow mode's appender (the Spark engine hands it each micro-batch's rows)."""
    out = os.path.join(disk.path, "out.csv")
    r = disk.run([sys.executable, "-c", APPENDER, out])
    assert r.returncode == 2, (disk.how, r.stderr[-2000:])
    batches = int(r.stderr.splitlines()[0])
    assert f"{out}: error: cannot write the output: {full_disk_words(disk)}" in r.stderr, r.stderr
    data = open(out, "rb").read()
    assert data.endswith(b"\r\n")
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    assert rows[0] == ["tick", "v"] and len(rows) == 1 + 7 * batches  # every batch before the failing one, whole
    assert all(row[1] == "x" * 300 for row in rows[1:])


def test_follow_output_to_a_full_standard_output_is_a_sentence(disk) -> None:
    """A micro-batch's rows are one large write (here one batch of 1,000 rows, 330 kB, on a 64 kB
    disk): the part the disk refuses is an error, not lost."""
    code = APPENDER.replace("ResultAppender(\"csv\", sys.argv[1])", "ResultAppender(\"csv\", None)")
    code = code.replace("for i in range(7)", "for i in range(1000)").replace("range(10_000)", "range(1)")
    with open(os.path.join(disk.path, "stdout.csv"), "w") as out:
        r = subprocess.run([sys.executable, "-c", code], stdout=out, stderr=subprocess.PIPE, text=True,
                           preexec_fn=disk.limit)
    assert r.returncode == 2, (disk.how, r.stderr[-2000:])
    assert f"<stdout>: error: cannot write the results: {full_disk_words(disk)}" in r.stderr, r.stderr


def test_a_gzip_file_named_tsv_is_described_not_echoed(tmp_path) -> None:
    path = tmp_path / "log.tsv"
    path.write_bytes(gzip.compress(("ts\ts\tp\to\n" + f"1000\t<{X}u>\t<{X}join>\t<{X}c>\n" * 50).encode()))
    r = subprocess.run(TEFQ + ["run", UC1, "--engine", "oracle", "--stream", str(path), "--quiet"],
                       capture_output=True)
    err = r.stderr.decode("utf-8")
    assert r.returncode == 2, err
    assert f"{path}:1: error: this file holds gzip-compressed data, not tsv text: name it log.tsv.gz" in err, err
    assert all(c.isprintable() or c in "\n\t" for c in err), repr(err)


@pytest.mark.parametrize("name,data,what", [
    ("log.csv", b"PAR1\x15\x04\x15\x00\x00\x00", "Parquet data"),
    ("log.nq", b"PK\x03\x04\x14\x00\x00\x00", "a zip archive"),
    ("log.tsv.gz", gzip.compress(b"\xfd7zXZ\x00\x00\x04\xe6\xd6", mtime=0), "xz-compressed data"),
])
def test_other_binary_data_is_described(tmp_path, name, data, what) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    r = subprocess.run(TEFQ + ["run", UC1, "--engine", "oracle", "--stream", str(path), "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and f"{path}:1: error: this file holds {what}" in r.stderr, r.stderr


def test_control_characters_of_a_bad_row_are_shown_escaped(tmp_path) -> None:
    """A row is shown under its error; an escape sequence or a NUL in it must not reach the
    terminal raw (it is written escaped, the caret still under the column)."""
    path = tmp_path / "s.tsv"
    path.write_bytes(b"ts\ts\tp\to\n1000\t<http://x/s>\t<http://x/p>\t\"\x1b[31mred\x00\"\n")
    r = subprocess.run(TEFQ + ["run", UC1, "--engine", "oracle", "--stream", str(path), "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    shown, caret = r.stderr.splitlines()[-2:]
    assert "\x1b" not in r.stderr and "\x00" not in r.stderr
    assert shown.endswith('"\\x1b[31mred\\x00"') and shown[caret.index("^"):].startswith("\\x00"), r.stderr

"""Issue 26 (part 2), case 2: a stream file that grows, shrinks, is replaced or renamed after
tefq read it is refused with exit 2 naming it (docs/cli.md, "Changed input files"). Before, in
--follow the appended rows were never read and a rotated log's new file was lost, and a finished
checkpoint rerun over an appended file answered exit 0 without the new rows."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

from tefq.errors import TefqError
from tefq.spark.runtime.input_files import check_inputs
from tests.support.paths import ROOT

pytestmark = [pytest.mark.reliability]

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
TEFQ = [sys.executable, "-m", "tefq"]
X = "http://example.org/iptv#"
BASE = 1_700_000_000_000
HEADER = "ts\ts\tp\to\n"


def rows(first: int, count: int) -> str:
    return "".join(f"{BASE + i * 1000}\t<{X}u{i % 7}>\t<{X}{'join' if i % 3 else 'quit'}>\t<{X}ch{i % 3}>\n"
                   for i in range(first, first + count))


def stream(tmp_path, files: int = 2):
    d = tmp_path / "s"
    d.mkdir()
    for k in range(files):
        (d / f"{k:02d}.tsv").write_text(HEADER + rows(k * 50, 50))
    return d


def refused(work: str, paths: list[str]) -> TefqError:
    with pytest.raises(TefqError) as e:
        check_inputs(work, paths)
    return e.value


def test_unchanged_new_and_deleted_files_pass(tmp_path) -> None:
    d, work = stream(tmp_path), str(tmp_path / "work")
    os.makedirs(work)
    check_inputs(work, [str(d)])
    check_inputs(work, [str(d)])
    (d / "02.tsv").write_text(HEADER + rows(100, 5))  # a new file: recorded
    (d / "00.tsv").unlink()  # a consumed file deleted: its rows are in the state
    check_inputs(work, [str(d)])
    with open(d / "02.tsv", "a") as fh:
        fh.write(rows(105, 1))
    assert "02.tsv" in refused(work, [str(d)]).file


@pytest.mark.parametrize("change, words", [
    ("append", "grew from"), ("truncate", "shrank from"), ("rotate", "was replaced by another file"),
    ("touch", "was rewritten"), ("rename", "was renamed to"),
])
def test_a_changed_file_is_refused_naming_it(tmp_path, change, words) -> None:
    d, work = stream(tmp_path), str(tmp_path / "work")
    os.makedirs(work)
    check_inputs(work, [str(d)])
    f = d / "01.tsv"
    if change == "append":
        with open(f, "a") as fh:
            fh.write(rows(200, 3))
    elif change == "truncate":
        f.write_text(HEADER)
    elif change == "rotate":  # mv current old-1; a new current
        os.rename(f, d / "00-old.tsv")
        f.write_text(HEADER + rows(300, 60))
    elif change == "touch":
        st = os.stat(f)
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    else:
        os.rename(f, d / "01-old.tsv")
    err = refused(work, [str(d)])
    assert words in err.message and "after tefq read it" in err.message
    assert err.file == str(f)


def run_uc1(args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(TEFQ + ["run", UC1, "--quiet", "--engine", "spark"] + args, capture_output=True,
                          text=True, env={**os.environ, "TEFQ_SPARK_MASTER": "local[2]"}, timeout=600, **kw)


@pytest.mark.spark
def test_a_finished_checkpoint_rerun_refuses_an_appended_file_and_another_every(tmp_path) -> None:
    d, ck = stream(tmp_path), str(tmp_path / "ck")
    first = run_uc1(["--stream", str(d), "--checkpoint", ck, "--out", str(tmp_path / "a.csv")])
    assert first.returncode == 0, first.stderr[-3000:]
    five = tmp_path / "uc1-5s.tef"
    five.write_text(open(UC1, encoding="utf-8").read().replace('EVERY "PT10S"', 'EVERY "PT5S"'))
    other = subprocess.run(TEFQ + ["run", str(five), "--quiet", "--stream", str(d), "--checkpoint", ck, "--out",
                                   str(tmp_path / "b.csv")], capture_output=True, text=True, timeout=600)
    assert other.returncode == 2 and "query q1: EVERY was PT10S, now PT5S" in other.stderr, other.stderr[-3000:]
    with open(d / "01.tsv", "a") as fh:
        fh.write(rows(100, 20))
    again = run_uc1(["--stream", str(d), "--checkpoint", ck, "--out", str(tmp_path / "c.csv")])
    assert again.returncode == 2, again.stderr[-3000:]
    assert f"{d / '01.tsv'}: error: this stream file grew from" in again.stderr
    assert "Traceback" not in again.stderr + other.stderr
    assert not (tmp_path / "b.csv").exists() and not (tmp_path / "c.csv").exists()


@pytest.mark.spark
def test_follow_stops_with_exit_2_when_a_read_file_grows(tmp_path) -> None:
    d = stream(tmp_path, files=1)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "TEFQ_SPARK_MASTER": "local[1]"}
    p = subprocess.Popen(TEFQ + ["run", UC1, "--stream", str(d), "--follow", "--out", str(tmp_path / "out.csv")],
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    assert p.stderr is not None
    try:
        for line in p.stderr:  # the first micro-batch is committed: the file was read
            if "micro-batch 1:" in line:
                break
        with open(d / "00.tsv", "a") as fh:
            fh.write(rows(50, 10))
        err = p.stderr.read()
        assert p.wait(timeout=300) == 2, err
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert f"{d / '00.tsv'}: error: this stream file grew from" in err and "Traceback" not in err, err
    shutil.rmtree(d)

"""Issue 26 (part 2), case 7 on Spark: every failure a sentence. A full disk under --checkpoint
names the path (it was exit 1 and a 26-line Spark plan); a killed JVM says so (it was pyspark's
traceback or "internal error: Py4JNetworkError"); the JVM's `spark-<uuid>` scratch directories
live in a tefq directory under TMPDIR, removed on the exit-1 path (they stayed in /tmp)."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tefq.errors import failure_message
from tests.support.kills import scratch_report
from tests.support.paths import ROOT

pytestmark = [pytest.mark.reliability]

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
X = "http://example.org/iptv#"
BASE = 1_700_000_000_000


class Py4JJavaError(Exception):
    """Stands for Spark's wrapped errors: a first line, then the plan and the Java stack."""


class Py4JNetworkError(Exception):
    pass


class Py4JError(Exception):
    """py4j's bare error: its answer to a call whose connection broke carries no Java trace."""


def test_a_full_disk_names_the_option_and_path_on_the_full_device(tmp_path) -> None:
    err = Py4JJavaError("An error occurred while calling o51.awaitTermination.\n: java.io.IOException: No space "
                        "left on device\n\tat java.base/sun.nio.ch.FileDispatcherImpl.write0(Native Method)\n" * 20)
    message = failure_message(err, ["run", "q.tef", "--checkpoint", str(tmp_path / "ck"), "--out=-"])
    assert "(No space left on device)" in message and "\n" not in message and "at java" not in message


def test_a_lost_jvm_and_other_failures_are_one_line() -> None:
    lost = Py4JNetworkError("Error while sending or receiving")
    assert "the Spark JVM stopped" in failure_message(lost)
    unanswered = Py4JError("An error occurred while calling z:org.apache.spark.sql.streaming.Trigger.AvailableNow")
    assert "the Spark JVM stopped" in failure_message(unanswered)  # CI, stop 34: killed between two calls
    answered = Py4JError("An error occurred while calling o3.x. Trace:\npy4j.Py4JException: Method x does not exist")
    assert failure_message(answered).startswith("tefq: internal error: Py4JError: An error occurred")
    starting = RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.")
    assert failure_message(starting).startswith("tefq: error: the Spark JVM stopped while starting")
    wrapped = RuntimeError("stopped")
    wrapped.__context__ = EOFError()
    assert "the Spark JVM stopped" in failure_message(wrapped)
    moved = Py4JJavaError("An error occurred while calling o9.start.\n: java.lang.IllegalArgumentException: Wrong "
                          "basePath file:/a/ck/staged for the root path: file:/b/ck/staged/x.parquet\n" + "\tat x\n" * 9)
    assert "this checkpoint was moved or copied" in failure_message(moved)
    other = failure_message(Py4JJavaError("first line\n== Physical Plan ==\n" + "Project [a]\n" * 30))
    assert other == "tefq: internal error: Py4JJavaError: first line"


def test_the_daemons_lost_connection_traceback_is_dropped_other_tracebacks_pass() -> None:
    """pyspark's daemon printed "BrokenPipeError" / "EOFError" tracebacks when the JVM went away."""
    import threading

    from tefq.spark.runtime.quiet import forward_lines as forward_jvm_stderr

    lost = (b"Traceback (most recent call last):\n  File \"/p/pyspark.zip/pyspark/daemon.py\", line 95, in worker\n"
            b"EOFError\n")
    other = b"Traceback (most recent call last):\n  File \"/x/mine.py\", line 1, in f\nValueError: boom\n"
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    thread = threading.Thread(target=forward_jvm_stderr, args=(r, out_w))
    thread.start()
    os.write(w, b"before\n" + lost + b"WARNING: Using incubator modules: x\n" + other + b"after\n")
    os.close(w)
    thread.join()
    os.close(out_w)
    assert os.read(out_r, 1 << 16) == b"before\n" + other + b"after\n"


def write_stream(directory, files: int, rows: int) -> None:
    rng = random.Random(9)
    directory.mkdir()
    for k in range(files):
        (directory / f"{k:02d}.tsv").write_text("ts\ts\tp\to\n" + "".join(
            f"{BASE + (k * rows + i) * 50}\t<{X}u{rng.randrange(5000)}>\t<{X}{rng.choice(['join', 'quit'])}>\t"
            f"<{X}ch{rng.randrange(60)}>\n" for i in range(rows)))
        os.utime(directory / f"{k:02d}.tsv", (1_600_000_000 + k, 1_600_000_000 + k))


def tefq_spark(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tefq", "run", UC1, "--engine", "spark"] + args,
                            env={**env, "TEFQ_SPARK_MASTER": "local[2]"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.fixture
def small_disk(tmp_path):
    path = tmp_path / "disk"
    path.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(path)],
                      capture_output=True).returncode != 0:
        pytest.skip("a small tmpfs needs mount rights (root)")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


@pytest.mark.spark
@pytest.mark.skipif(os.environ.get("TEFQ_FAULTS_LONG") != "1", reason="make test-faults (TEFQ_FAULTS_LONG=1): make test stays under 20 minutes")
def test_a_full_disk_under_the_checkpoint_is_a_sentence_naming_it(tmp_path, small_disk) -> None:
    stream = tmp_path / "s"
    write_stream(stream, 6, 20_000)
    ck = str(small_disk / "ck")
    child = tefq_spark(["--stream", str(stream), "--checkpoint", ck, "--out", str(tmp_path / "out.csv"),
                        "--max-files-per-trigger", "1", "--quiet"], dict(os.environ))
    _, err = child.communicate(timeout=900)
    assert child.returncode == 1, err[-3000:]
    assert f"{ck}: error: the device holding --checkpoint {ck} is full (No space left on device)" in err, err
    assert "Traceback" not in err and "Plan" not in err and len(err.strip().splitlines()) <= 3, err


def jvm_of(pid: int) -> int | None:
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)
                if int(fields[1].split()[1]) == pid and "(java" in fields[0]:
                    return int(name)
            except (OSError, IndexError, ValueError):
                continue
    return None


@pytest.mark.spark
def test_a_killed_jvm_is_a_sentence_and_its_scratch_is_removed(tmp_path) -> None:
    stream = tmp_path / "s"
    write_stream(stream, 6, 20_000)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    child = tefq_spark(["--stream", str(stream), "--checkpoint", str(tmp_path / "ck"), "--out",
                        str(tmp_path / "out.csv"), "--max-files-per-trigger", "1"], env)
    assert child.stderr is not None
    try:
        for line in child.stderr:  # Spark runs the query: its scratch is in use
            if "running q1" in line:
                break
        time.sleep(2)
        jvm_dirs = [d for root, dirs, _ in os.walk(scratch) for d in dirs if d.startswith(("spark-", "blockmgr-"))]
        # the JVM's scratch is under TMPDIR, in tefq's directory
        assert jvm_dirs, scratch_report(scratch, env)
        jvm = jvm_of(child.pid)
        assert jvm is not None
        os.kill(jvm, signal.SIGKILL)
        err = child.stderr.read()
        assert child.wait(timeout=300) == 1, err
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert "tefq: error: the Spark JVM stopped during the run" in err, err
    assert "Traceback" not in err and "Py4J" not in err, err
    assert os.listdir(scratch) == []

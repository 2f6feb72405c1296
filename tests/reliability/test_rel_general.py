"""The general plan (issue 27) under faults, on real Spark:
- every shape of the issue against the oracle on 1, 3 and 4 buckets: in `make test` each shape on
  one of them (in turn, one generated stream each), in `make test-faults` (TEFQ_FAULTS_LONG=1)
  every shape on each, two streams each;
- SIGKILL of a `tefq run --checkpoint` of a general-shape query (two facts joined: partial rows
  merged on the driver) over staged micro-batches, then a restart with the same checkpoint: the
  output equals the oracle's byte for byte: one kill once two micro-batches are committed (in
  `make test`), and kills at random points (several Spark starts: `make test-faults` only)."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.support.general_shapes import BACKGROUND, PREFIX, SHAPES, iri, with_every
from tests.support.general_spark import ISSUE_SHAPES, check_against_the_oracle
from tests.support.kills import first_lines

LONG = os.environ.get("TEFQ_FAULTS_LONG") == "1"
pytestmark = [pytest.mark.reliability, pytest.mark.spark]
RANDOM_KILLS = 4
FILES = 6
BASE = 1_700_000_000_000
SHAPE = "two facts joined"


SHAPES_CHECKED = ISSUE_SHAPES + ["no GROUP BY: the implicit group"]
MATRIX = [(shape, b) for i, shape in enumerate(SHAPES_CHECKED) for b in [1, 3, 4] if LONG or b == [1, 3, 4][i % 3]]


@pytest.mark.parametrize("shape, buckets", MATRIX)
def test_every_shape_on_1_3_and_4_buckets_equals_the_oracle(spark, shape, buckets):
    check_against_the_oracle(spark, shape, buckets, 2 if LONG else 1)


def write_inputs(tmp_path) -> tuple[str, str, str]:
    """The query document, its background and FILES stream files (joins, quits, programme starts
    and finishes), in name and modification-time order (Spark's order): (doc, background, stream)."""
    doc = tmp_path / "two-facts.tef"
    doc.write_text(PREFIX + with_every(SHAPES[SHAPE], 10_000))
    bg = tmp_path / "background.nt"
    bg.write_text("".join(f"{s} {p} {o} .\n" for s, p, o in BACKGROUND))
    stream = tmp_path / "s"
    stream.mkdir()
    rng = random.Random(7)
    for k in range(FILES):
        rows = []
        for _ in range(30):
            t = BASE + k * 100_000 + rng.randrange(100_000)
            if rng.random() < 0.2:
                rows.append((t, iri(f"c{rng.randrange(3)}"), iri(rng.choice(["start", "finish"])), iri(f"p{rng.randrange(3)}")))
            else:
                rows.append((t, iri(f"u{rng.randrange(12)}"), iri(rng.choice(["join", "join", "quit"])), iri(f"c{rng.randrange(3)}")))
        f = stream / f"{k:02d}.tsv"
        f.write_text("ts\ts\tp\to\n" + "".join(f"{t}\t{s}\t{p}\t{o}\n" for t, s, p, o in sorted(rows)))
        os.utime(f, (1_600_000_000 + k, 1_600_000_000 + k))
    return str(doc), str(bg), str(stream)


class Runs:
    """`tefq run DOC --background BG --stream S` as a user types it (a child process group), on
    Spark with --checkpoint over one file per micro-batch, or on the oracle."""

    def __init__(self, tmp_path) -> None:
        self.doc, self.bg, self.stream = write_inputs(tmp_path)
        scratch = tmp_path / "tmp"
        scratch.mkdir()
        self.env = {**os.environ, "TMPDIR": str(scratch), "TEFQ_SPARK_MASTER": "local[2]"}
        self.ck, self.got, self.want = str(tmp_path / "ck"), tmp_path / "got.csv", tmp_path / "want.csv"

    def args(self) -> list[str]:
        return [sys.executable, "-m", "tefq", "run", self.doc, "--quiet", "--background", self.bg, "--stream",
                self.stream]

    def oracle(self) -> bytes:
        done = subprocess.run(self.args() + ["--engine", "oracle", "--out", str(self.want)], capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
        return self.want.read_bytes()

    def spark(self) -> subprocess.Popen:
        return subprocess.Popen(self.args() + ["--checkpoint", self.ck, "--out", str(self.got),
                                               "--max-files-per-trigger", "1"], env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)

    def commits(self) -> int:
        commits = os.path.join(self.ck, "q1", "checkpoint", "commits")
        return len([f for f in os.listdir(commits) if f.isdigit()]) if os.path.isdir(commits) else 0

    def finish(self) -> None:
        """A last run to the end (the restart): exit 0."""
        last = self.spark()
        _, err = last.communicate()
        assert last.returncode == 0, first_lines(err.decode())


def kill(child: subprocess.Popen) -> None:
    os.killpg(child.pid, signal.SIGKILL)  # the driver and its JVM
    child.wait()
    child.stderr.close()
    time.sleep(0.2)  # the killed JVM's files are released


def test_sigkill_after_two_micro_batches_then_restart_equals_the_oracle(tmp_path) -> None:
    runs = Runs(tmp_path)
    want = runs.oracle()
    child = runs.spark()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and child.poll() is None and runs.commits() < 2:
        time.sleep(0.2)
    assert child.poll() is None, "the run ended before it could be killed"
    kill(child)
    assert 2 <= runs.commits() < FILES + 1  # killed mid-stream: state and output in the checkpoint
    runs.finish()
    assert runs.got.read_bytes() == want


@pytest.mark.skipif(not LONG, reason="make test-faults (TEFQ_FAULTS_LONG=1): several Spark starts")
def test_sigkills_at_random_points_then_restart_equal_the_oracle(tmp_path) -> None:
    runs = Runs(tmp_path)
    want = runs.oracle()
    rng, kills = random.Random(13), 0
    while kills < RANDOM_KILLS:
        child = runs.spark()
        try:  # a random point: JVM start, planning, a micro-batch, writing the output
            child.wait(rng.uniform(2.0, 25.0))
            assert child.returncode == 0, first_lines(child.stderr.read().decode())
            child.stderr.close()
            break  # finished before its kill: the next run restarts a finished checkpoint
        except subprocess.TimeoutExpired:
            kill(child)
            kills += 1
    runs.finish()
    assert runs.got.read_bytes() == want, f"{kills} kills"

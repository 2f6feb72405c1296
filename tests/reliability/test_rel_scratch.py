"""A run killed outright leaves its scratch directories (staged inputs, checkpoint and sink, the
JVM's `tefq-jvm-*`, 15 MB and up); the next run removes those of every run of its user that is
gone, and nothing else (tefq.cleanup)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tefq.cleanup import MIN_AGE_S, OWNER_LOCK, sweep_dead
from tests.support import spark_docs as sd
from tests.support.kills import scratch_report
from tests.support.paths import ROOT

pytestmark = pytest.mark.reliability

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
PREFIX = "tefq-jvm-"
HOLD = ("import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(float(sys.argv[2]))\n")


def scratch(tmp_path, name: str, *, lock: bool = True, age_s: float = 2 * MIN_AGE_S):
    path = tmp_path / (PREFIX + name)
    (path / "blockmgr-x").mkdir(parents=True)
    (path / "blockmgr-x" / "shuffle.data").write_bytes(b"x" * 100)
    if lock:
        (path / OWNER_LOCK).touch()
        old = time.time() - age_s
        os.utime(path / OWNER_LOCK, (old, old))
    return path


def holding(lock) -> subprocess.Popen:
    """A process that holds `lock` until killed."""
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), "600"], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_only_the_scratch_of_a_gone_owner_is_removed(tmp_path) -> None:
    dead = scratch(tmp_path, "dead")
    alive = scratch(tmp_path, "alive")
    unlocked = scratch(tmp_path, "older-tefq", lock=False)  # no owner lock: an older tefq's, left alone
    young = scratch(tmp_path, "young", age_s=0)  # its owner may be about to take the lock
    other = tmp_path / "tefq-spark-x"  # no lock either
    other.mkdir()
    stranger = tmp_path / "spark-jvm-x"  # a lock, but not a tefq- name
    stranger.mkdir()
    (stranger / OWNER_LOCK).touch()
    os.utime(stranger / OWNER_LOCK, (0, 0))
    target = tmp_path / "precious"
    target.mkdir()
    (target / OWNER_LOCK).touch()
    os.utime(target / OWNER_LOCK, (0, 0))
    (tmp_path / (PREFIX + "link")).symlink_to(target)
    owner = holding(alive / OWNER_LOCK)
    try:
        os.utime(alive / OWNER_LOCK, (0, 0))
        assert sweep_dead(str(tmp_path)) == [str(dead)]
        assert not dead.exists() and alive.exists() and unlocked.exists() and young.exists()
        assert other.exists() and stranger.exists() and (target / OWNER_LOCK).exists() and (tmp_path / (PREFIX + "link")).is_symlink()
    finally:
        owner.kill()
        owner.wait()
    assert sweep_dead(str(tmp_path)) == [str(alive)]  # its owner is gone now


@pytest.mark.spark
def test_a_sigkilled_runs_scratch_is_removed_by_the_next(tmp_path) -> None:
    stream, tmp = tmp_path / "s", tmp_path / "tmp"
    stream.mkdir()
    tmp.mkdir()
    for k in range(4):
        (stream / f"{k}.tsv").write_text("ts\ts\tp\to\n" + "".join(
            f"{t}\t{s}\t{p}\t{o}\n" for t, s, p, o in sd.views(k * 50, 50, start=sd.VIEWS_START + k * 10_000_000)))
    # without the variables a JVM's scratch of this process would pass on (tefq.spark.runtime.jvm_scratch)
    given = {k: v for k, v in os.environ.items() if k not in ("SPARK_LOCAL_DIRS", "JAVA_TOOL_OPTIONS")}
    env = {**given, "TMPDIR": str(tmp), "TEFQ_SPARK_MASTER": "local[1]", "TEFQ_SERVER": "0"}
    p = subprocess.Popen([sys.executable, "-m", "tefq", "run", UC1, "--stream", str(stream), "--out",
                          str(tmp_path / "out.csv"), "--max-files-per-trigger", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    said = []
    for line in p.stderr:
        said.append(line)
        if "running q1" in line:
            break
    p.send_signal(signal.SIGKILL)
    p.wait()
    time.sleep(1)  # the JVM follows its parent down (py4j's gateway closes)
    left = sorted(d for d in os.listdir(tmp) if d.startswith("tefq-"))
    assert [d.split("-")[1] for d in left] == ["jvm", "spark", "stage"], (scratch_report(tmp, env), "".join(said)[-2000:])
    for d in left:
        os.utime(tmp / d / OWNER_LOCK, (0, 0))  # as a minute later
    again = subprocess.run([sys.executable, "-m", "tefq", "run", UC1, "--stream", str(stream), "--out",
                            str(tmp_path / "out2.csv"), "--engine", "spark", "--quiet"],
                           capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert not [d for d in os.listdir(tmp) if d.startswith("tefq-")], os.listdir(tmp)

"""The engine and the oracle called the same way by the Spark test modules (the `spark` fixture is
in tests/conftest.py), and a checkpointed run killed mid-stream."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.support.paths import ROOT


def run_spark(spark, doc, paths, **kw):
    from tefq.spark import run

    return run(doc, paths, spark=spark, buckets=2, progress=False, **kw)


def oracle(doc, elements, background=None):
    from tefq.oracle import run

    return run(doc, elements, background, 0)


def child_env() -> dict[str, str]:
    """A child Python that imports `tests.support` (the checkout on its path) and runs Spark's
    workers with this interpreter."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=path)


KILL_CHILD = """
from tests.support import spark_docs as sd
from tefq.spark import run
run(sd.uc2(2000), [{path!r}], master="local[2]", checkpoint={ck!r}, max_files_per_trigger=1, buckets=2,
    progress=False{extra})
"""


def kill_mid_stream(path: str, ck: str, extra: str = "") -> int:
    """Run UC2 over `path` (one file per micro-batch) with checkpoint `ck` in a child process,
    SIGKILL it and its JVM once two micro-batches are committed; returns how many were."""
    code = KILL_CHILD.format(path=path, ck=ck, extra=extra)
    child = subprocess.Popen([sys.executable, "-c", code], env=child_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    commits = os.path.join(ck, "q1", "checkpoint", "commits")

    def done() -> int:
        return len([f for f in os.listdir(commits) if f.isdigit()]) if os.path.isdir(commits) else 0

    deadline = time.time() + 240
    while time.time() < deadline and child.poll() is None and done() < 2:
        time.sleep(0.2)
    assert child.poll() is None, "the run ended before it could be killed"
    os.killpg(child.pid, signal.SIGKILL)  # the driver and its JVM, mid-stream
    child.wait()
    return done()

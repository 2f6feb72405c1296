"""Spark's Python workers import the tefq the driver runs, not a `tefq/` folder in the working
directory (workers start there, and `python -m` would put it first on their path)."""
from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
sys.path = [p for p in sys.path if p not in ("", {cwd!r})]
from tefq.spark.runtime.session import get_session
def where(_):
    import tefq
    yield tefq.__file__
print(get_session("local[1]").sparkContext.parallelize([1], 1).mapPartitions(where).collect()[0])
"""


@pytest.mark.spark
def test_workers_ignore_a_tefq_folder_in_the_working_directory(tmp_path):
    import tefq

    (tmp_path / "tefq").mkdir()
    (tmp_path / "tefq" / "__init__.py").write_text('raise ImportError("the working directory\'s tefq")\n')
    done = subprocess.run([sys.executable, "-c", PROBE.format(cwd=str(tmp_path))], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == tefq.__file__

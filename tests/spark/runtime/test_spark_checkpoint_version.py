"""The state version of a --checkpoint directory: a fresh one is marked, one written before the
marker (or by another version) is refused with exit 2 naming the version — before Spark starts."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tefq.errors import TefqError
from tefq.spark.runtime.checkpoint import MARKER, STATE_VERSION, claim
from tests.support.paths import ROOT

STREAM = os.path.join(ROOT, "tests", "data", "streams", "basic.tsv")


def old_checkpoint(tmp_path) -> str:
    """A checkpoint as tefq wrote it before the marker: a query's Spark commit log, no marker."""
    commits = tmp_path / "ck" / "q1" / "checkpoint" / "commits"
    commits.mkdir(parents=True)
    (commits / "0").write_text("v1\n{}\n")
    return str(tmp_path / "ck")


def test_a_fresh_checkpoint_is_marked_and_resumes(tmp_path):
    directory = str(tmp_path / "ck")
    claim(directory)
    assert open(os.path.join(directory, MARKER)).read().strip() == str(STATE_VERSION)
    claim(directory)  # the same version resumes


def test_a_checkpoint_from_before_the_marker_is_refused_naming_the_version(tmp_path):
    with pytest.raises(TefqError, match=f"state version 1; this tefq reads version {STATE_VERSION}"):
        claim(old_checkpoint(tmp_path))


def test_the_cli_refuses_an_old_checkpoint_with_exit_2(tmp_path):
    directory = old_checkpoint(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "tefq", "run", os.path.join(ROOT, "usecases", "uc1.tef"),
                           "--engine", "spark", "--stream", STREAM, "--checkpoint", directory],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "error: this checkpoint was written with tefq Spark state version 1" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not os.path.exists(os.path.join(directory, MARKER))  # refused, not converted

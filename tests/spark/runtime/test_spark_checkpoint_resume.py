"""Opening a --checkpoint for a run: one run at a time holds it, and the temporary files of a run
killed halfway through one of Spark's log writes are dropped (Spark refused to start batch 0 while
`offsets/` held one: STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY, exit 1, seen in the SIGKILL loop)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tefq.errors import TefqError
from tefq.spark.runtime.checkpoint import drop_partial_writes, resume
from tests.support.paths import ROOT

STREAM = os.path.join(ROOT, "tests", "data", "streams", "basic.tsv")
UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
TMP = ".0.dbb89b4f-76d8-4236-ad07-3cde4e7aca52.tmp"


def killed_during_first_offset_write(tmp_path) -> str:
    """A checkpoint as a SIGKILL between Spark's write of offsets/0 and its rename leaves it."""
    offsets = tmp_path / "ck" / "q1" / "checkpoint" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / TMP).write_text("v1\n{\"batchWatermarkMs\":0")
    (offsets / ("." + TMP + ".crc")).write_bytes(b"crc")
    return str(tmp_path / "ck")


def test_partial_writes_are_dropped_and_entries_kept(tmp_path):
    directory = killed_during_first_offset_write(tmp_path)
    commits = tmp_path / "ck" / "q1" / "checkpoint" / "commits"
    commits.mkdir()
    (commits / "0").write_text("v1\n{}\n")
    (commits / ".0.crc").write_bytes(b"crc")
    dropped = drop_partial_writes(directory)
    assert sorted(os.path.basename(p) for p in dropped) == sorted([TMP, "." + TMP + ".crc"])
    assert sorted(os.listdir(commits)) == [".0.crc", "0"]
    assert os.listdir(tmp_path / "ck" / "q1" / "checkpoint" / "offsets") == []


def test_one_run_at_a_time_holds_a_checkpoint(tmp_path):
    directory = str(tmp_path / "ck")
    held = resume(directory, [STREAM], follow=False)
    with pytest.raises(TefqError, match="another tefq run is using this checkpoint"):
        resume(directory, [STREAM], follow=False)
    held.close()
    resume(directory, [STREAM], follow=False).close()


@pytest.mark.spark
def test_a_run_resumes_a_checkpoint_killed_during_its_first_offset_write(tmp_path):
    directory = killed_during_first_offset_write(tmp_path)
    want, got = tmp_path / "want.csv", tmp_path / "got.csv"
    for engine, out, extra in (("oracle", want, []), ("spark", got, ["--checkpoint", directory])):
        proc = subprocess.run([sys.executable, "-m", "tefq", "run", UC1, "--quiet", "--engine", engine,
                               "--stream", STREAM, "--out", str(out)] + extra,
                              capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert got.read_bytes() == want.read_bytes()

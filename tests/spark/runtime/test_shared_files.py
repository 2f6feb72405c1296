"""Direct ingestion's shared coding (tefq.spark.runtime.shared_files): what each bucket gets through
the parts is what its own mapper makes from the Parquet files; each file is coded once when the
buckets run together; a task that holds a file's lock and dies or fails never blocks the others.
The end-to-end check on Spark is in tests/spark/test_spark_columnar.py."""
from __future__ import annotations

import fcntl
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from tefq.api import load
from tefq.spark.protocol import TERMS, RowKind, read_heartbeats
from tefq.spark.runtime.columnar import FileOrder, path_ranks
from tefq.spark.runtime.mappers import mapper_maker, wire_schema
from tefq.spark.runtime.shared_files import SharedFiles
from tefq.spark.shapes import plan_document

ROOT = Path(__file__).resolve().parents[3]
BUCKETS = 2


class OneStage(SharedFiles):
    """Outside Spark: every call is in stage 7 (a Spark task's stage id)."""

    @staticmethod
    def stage() -> int:
        return 7


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("iptv") / "data"
    subprocess.run([sys.executable, "-m", "tefq.cli", "gen", "iptv", "--out", str(out), "--events", "30000",
                    "--users", "1500"], check=True, capture_output=True)
    assert len(os.listdir(out / "log")) == 3
    return str(out / "log")


def shared(root: str, log: str, query: str = "usecases/uc1.tef") -> tuple[OneStage, list[pa.RecordBatch]]:
    plan = plan_document(load(ROOT / query).document(), BUCKETS)[0]
    ranks = path_ranks([log])
    files = sorted(ranks, key=ranks.get)
    paths = pa.RecordBatch.from_pydict({"path": ["file://" + f for f in files] + [""],
                                        "flush": [False] * len(files) + [True]})
    return OneStage(root, BUCKETS, mapper_maker(plan, None, files=FileOrder(ranks)), FileOrder(ranks), wire_schema(plan)), [paths]


def summary(batches: list[pa.RecordBatch]) -> tuple:
    """What the operator takes from a bucket's rows: the element rows (a multiset), the TERMS rows'
    (code, term) pairs (a set: they may repeat), the heartbeats together, the flush rows."""
    table = pa.Table.from_batches(batches).combine_chunks()
    kinds = table.column("k").to_numpy()
    controls = {int(RowKind.HEARTBEAT), int(TERMS), int(RowKind.FLUSH)}
    rows = table.filter(pa.array(~np.isin(kinds, list(controls))))
    terms = table.filter(pa.array(kinds == int(TERMS)))
    beats = read_heartbeats(table.to_pandas(), kinds)
    return (Counter(zip(*(rows.column(c).to_pylist() for c in rows.column_names))),
            set(zip(terms.column("g0").to_pylist(), terms.column("t0").to_pylist(), terms.column("b").to_pylist())),
            beats, int((kinds == int(RowKind.FLUSH)).sum()))


def own_rows(sf: SharedFiles, paths: list[pa.RecordBatch], only: int) -> tuple:
    return summary(list(sf.mapper_of(only)(iter(paths), partition=only)))


def test_each_bucket_gets_what_its_own_mapper_makes(tmp_path, log) -> None:
    sf, paths = shared(str(tmp_path), log)
    for only in range(BUCKETS):
        got = summary(list(sf(only)(iter(paths))))
        assert got == own_rows(sf, paths, only)
        assert got[0] and got[2].elements == 30000 and got[3] == 1
    parts = [n for n in os.listdir(tmp_path / "stage-7") if n.endswith(".arrow")]
    assert len(parts) == 3  # each file coded once: one part for the bucket that did not code it


def in_process(root: str, log: str, only: int, out: str) -> None:
    sf, paths = shared(root, log)
    rows = list(sf(only)(iter(paths)))
    with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, sf.schema) as w:
        for rb in rows:
            w.write_batch(rb)


def test_buckets_running_together_code_each_file_once(tmp_path, log) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=in_process, args=(str(tmp_path), log, b, str(tmp_path / f"out{b}"))) for b in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    sf, paths = shared(str(tmp_path), log)
    for b in (0, 1):
        got = pa.ipc.open_file(str(tmp_path / f"out{b}")).read_all().to_batches()
        assert summary(got) == own_rows(sf, paths, b)
    # 3 files, each coded by one bucket, which left the other bucket its part
    assert len([n for n in os.listdir(tmp_path / "stage-7") if n.endswith(".arrow")]) == 3


def hold_lock(key: str, seconds: float) -> None:
    fd = os.open(key + ".lock", os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b"x")
    time.sleep(seconds)  # then ends without writing a part: a task that failed


@pytest.mark.parametrize("ending", ["killed", "failed"])
def test_a_holder_that_dies_or_fails_leaves_the_file_to_the_others(tmp_path, log, ending) -> None:
    sf, paths = shared(str(tmp_path), log)
    stage = sf.stage_dir()
    first = paths[0].column("path")[0].as_py()
    ctx = multiprocessing.get_context("fork")
    holder = ctx.Process(target=hold_lock, args=(sf.key(stage, first), 60 if ending == "killed" else 1.0))
    holder.start()
    lock = Path(sf.key(stage, first) + ".lock")
    while not lock.exists() or lock.stat().st_size == 0:  # until it holds the lock
        time.sleep(0.01)
    if ending == "killed":
        os.kill(holder.pid, signal.SIGKILL)
    got = summary(list(sf(0)(iter(paths))))  # waits for the lock, then codes the file itself
    holder.join(10)
    assert got == own_rows(sf, paths, 0)


def test_a_new_stage_removes_the_earlier_ones(tmp_path, log) -> None:
    sf, paths = shared(str(tmp_path), log)
    (tmp_path / "stage-6").mkdir()
    (tmp_path / "stage-6" / "old.0.arrow").write_bytes(b"")
    list(sf(0)(iter(paths)))
    assert sorted(os.listdir(tmp_path)) == ["stage-7"]


def test_outside_a_spark_task_each_bucket_reads_for_itself(tmp_path, log) -> None:
    plan_sf, paths = shared(str(tmp_path), log)
    sf = SharedFiles(plan_sf.root, BUCKETS, plan_sf.mapper_of, plan_sf.order, plan_sf.schema)
    assert summary(list(sf(1)(iter(paths)))) == own_rows(sf, paths, 1)
    assert os.listdir(tmp_path) == []


def test_without_its_directory_each_bucket_reads_for_itself(tmp_path, log) -> None:
    sf, paths = shared(str(tmp_path / "removed"), log)
    assert summary(list(sf(0)(iter(paths)))) == own_rows(sf, paths, 0)

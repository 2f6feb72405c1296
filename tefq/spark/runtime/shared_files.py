"""Direct ingestion on one machine: each file of a micro-batch read and coded once, for every bucket.

Under direct ingestion every bucket's operator reads all the files of its micro-batch and keeps its
own rows (runtime/columnar.py): on two buckets each file was read and coded twice. When the
buckets' tasks share a disk (a local master), the first task to take a file codes it for every
bucket with the columnar path's mapper, whose rows for a bucket are what a columnar map task
holding only that file would send it (its rows, TERMS rows, heartbeat), and leaves each other
bucket its part as an Arrow IPC file; the others read their part instead of the Parquet file.

Who codes what, in one directory per micro-batch (Spark stage; the older ones are removed): a task
takes its files in an order rotated by its bucket, and codes a file under an exclusive `flock` of
the file's lock, writing the other buckets' parts under temporary names renamed into place before
the lock is released. A file whose lock another task holds is left for the end, when the task
waits on the lock: a lock is released when its holder finishes or dies, and a task that then finds
no part codes the file itself. No task waits while it holds a lock, so none waits on a task that
waits on it, and a failed task costs only the coding of its file again.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from typing import Callable, Iterator

import pyarrow as pa

from tefq.io.paths import local_path
from tefq.spark.runtime.columnar import FileOrder
from tefq.spark.protocol import flush_rows

Mapper = Callable[..., Iterator[pa.RecordBatch]]


class SharedFiles:
    """Bucket mappers for direct ingestion that share the coding of each file through `root` (a
    directory of the run's, on the disk every task sees). `mapper_of(only)`: the plan's mapper of
    bucket `only` (None: of every bucket); `order`: the files' stream order (runtime/columnar.FileOrder)."""

    def __init__(self, root: str, buckets: int, mapper_of: Callable[[int | None], Mapper], order: FileOrder,
                 schema: pa.Schema) -> None:
        self.root, self.buckets, self.mapper_of, self.order, self.schema = root, buckets, mapper_of, order, schema

    def __call__(self, only: int) -> Mapper:
        """Bucket `only`'s mapper: over (path, flush) batches, the rows its own mapper would emit."""
        return lambda batches: self.rows(only, list(batches))

    def rows(self, only: int, batches: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if not batches:
            return
        entries = [e for rb in batches for e in zip(rb.column("path").to_pylist(), rb.column("flush").to_pylist())]
        uris, flush = [u for u, ends in entries if not ends], any(ends for _, ends in entries)
        stage = self.stage_dir()
        # an unranked file's tie keys count the task's rows before it: only its own task can make them
        if stage is None or not all(self.order.keyed(local_path(u)) for u in uris):
            yield from self.mapper_of(only)(iter(batches))
            return
        start = len(uris) * only // self.buckets
        waiting = []
        for uri in uris[start:] + uris[:start]:  # the buckets start on different files
            part = self.part(stage, uri, only, wait=False)
            if part is None:
                waiting.append(uri)
            else:
                yield from part
        for uri in waiting:
            yield from self.part(stage, uri, only, wait=True)
        if flush:
            yield flush_rows(self.schema, [only])

    @staticmethod
    def stage() -> int | None:
        """The micro-batch's Spark stage (None outside a Spark task)."""
        from pyspark import TaskContext

        ctx = TaskContext.get()
        return None if ctx is None else ctx.stageId()

    def stage_dir(self) -> str | None:
        """This micro-batch's directory (made on first use; the earlier ones removed), or None
        outside a Spark task or when the run's directory is gone (each bucket then reads alone)."""
        stage = self.stage()
        if stage is None:
            return None
        name = f"stage-{stage}"
        try:
            for old in os.listdir(self.root):
                if old != name:
                    shutil.rmtree(os.path.join(self.root, old), ignore_errors=True)
            path = os.path.join(self.root, name)
            os.mkdir(path)
        except FileExistsError:  # another bucket made it
            pass
        except OSError:
            return None
        return path

    @staticmethod
    def key(stage: str, uri: str) -> str:
        """The path of file `uri`'s lock and parts in `stage`, less their suffixes."""
        return os.path.join(stage, hashlib.sha1(uri.encode()).hexdigest())

    def part(self, stage: str, uri: str, only: int, wait: bool) -> list[pa.RecordBatch] | None:
        """Bucket `only`'s rows of file `uri`: read from its part, or coded here for every bucket.
        None: another task is coding it and `wait` is false."""
        key = self.key(stage, uri)
        fd = os.open(key + ".lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                return None
            mine = f"{key}.{only}.arrow"
            if os.path.exists(mine):
                with pa.memory_map(mine) as source:
                    return pa.ipc.open_file(source).read_all().to_batches()
            return self.code(key, uri, only)
        finally:
            os.close(fd)  # releases the lock

    def code(self, key: str, uri: str, only: int) -> list[pa.RecordBatch]:
        """Code file `uri` for every bucket: write the others' parts, return bucket `only`'s rows."""
        rows = list(self.mapper_of(None)(iter([pa.RecordBatch.from_pydict({"path": [uri], "flush": [False]})])))
        table = pa.Table.from_batches(rows).combine_chunks() if rows else self.schema.empty_table()
        buckets = table.column("b").to_numpy()
        mine = []
        for b in range(self.buckets):
            part = table.filter(pa.array(buckets == b))
            if b == only:
                mine = part.to_batches()
                continue
            path = f"{key}.{b}.arrow"
            with pa.OSFile(path + ".tmp", "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(part)
            os.replace(path + ".tmp", path)
        return mine

"""The layout version of a `--checkpoint` directory: its operator state and sink records are tefq's
data classes (runtime/codec), so a checkpoint resumes only under the layout that wrote it.

Version 1: checkpoints written before the marker existed (operators in `tefq/spark/operator.py`,
`derived_operator.py`, `fallback.py`, `simulate.py`). Version 2: the operators in
`tefq/spark/operators/` (one bucket loop). Version 3: TSV/CSV streams staged as Parquet (Spark's
file source of a version-2 checkpoint read them in place: resuming would read every file again
from the staged directory), and the columnar ingestion path. Version 4: one bucket per core
instead of two (a version-3 checkpoint holds twice the buckets) and direct ingestion for CURRENT
aggregates under `--ingest auto` (a version-3 one was written by the columnar path). Version 5:
UC3-shaped queries split by the counted variable (planning/fact.FactRouting.merge: a version-4
bucket holds another share of the facts). Version 6: one driver loop and one wire protocol
(tefq.spark.protocol): the windowed operator moved to `operators/windowed.py` (its state's
class), runs under the bucket labels and ingest record of every plan, and whole elements got their
own row kind. Version 7: the general plan (issue 27, operators/general.py) runs the aggregate
queries a version-6 checkpoint ran on the fallback (its state: every element read, one bucket).
Version 8: state and sink records in runtime/codec's data format, checked against the reader's
schema (issue 39); versions up to 7 held pickles, which this tefq refuses and never unpickles.
Version 9: the windowed state keeps the inputs bound by `--stream IRI=PATH` apart (`named`).
Version 10: a COUNT DISTINCT over a variable that may bind a literal runs on the general kernels,
and a merging split by such a variable buckets its values, not its terms (planning/literals.py):
a version-9 checkpoint of such a query holds another operator's state, or another share per bucket.
Version 11: a bounded run that reads files by path (columnar, direct) reads all its listed file
inputs through one source (runtime/listing.one_source): a version-10 checkpoint has one per input. The
marker `tefq-state-version` sits in the checkpoint directory, beside the per-query directories.

Beside it too: `tefq-identity.json`, what the checkpoint belongs to (runtime/checkpoint_identity),
and `tefq-input-files`, the stream files it read (runtime/input_files). `resume` checks both, and
Spark's logs (runtime/log_entries), before a run starts on the checkpoint. Operator state and sink
records are decoded by runtime/codec (data only: nothing in a checkpoint can run code).
"""
from __future__ import annotations

import fcntl
import os
import re
from typing import IO, Any, Callable

from tefq.errors import TefqError, warn
from tefq.io.atomic import write_marker
from tefq.plan.logical import Document
from tefq.spark.runtime.checkpoint_identity import claim_identity, identity_of
from tefq.spark.runtime.input_files import check_inputs, grown_redis_streams, input_files
from tefq.spark.runtime.log_entries import check_logs

STATE_VERSION = 11
MARKER = "tefq-state-version"


def has_state(directory: str) -> bool:
    """Some query under `directory` has committed or planned a micro-batch (its state exists)."""
    if not os.path.isdir(directory):
        return False
    for query in os.listdir(directory):
        for log in ("commits", "offsets"):
            path = os.path.join(directory, query, "checkpoint", log)
            if os.path.isdir(path) and any(f.isdigit() for f in os.listdir(path)):
                return True
    return False


def written_version(directory: str) -> int | None:
    """The version in the marker; 1 for state without a marker; None for a fresh directory."""
    path = os.path.join(directory, MARKER)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            text = fh.read().strip()
        return int(text) if text.isdigit() else 0
    return 1 if has_state(directory) else None


def claim(directory: str) -> None:
    """Check that the checkpoint in `directory` can resume under this layout (else exit 2 with a
    message naming both versions) and mark a fresh one with this layout's version."""
    version = written_version(directory)
    claim_marker(os.path.join(directory, MARKER), str(STATE_VERSION), None if version is None else str(version),
                 lambda written: TefqError(
                     f"this checkpoint was written with tefq Spark state version {written}; this tefq reads version "
                     f"{STATE_VERSION} only (the operators' state layout changed): finish the run with the tefq that "
                     "started it, or use a fresh --checkpoint", directory))


def claim_marker(path: str, value: str, written: str | None, refusal: Callable[[str], TefqError]) -> None:
    """A checkpoint marked `written` resumes only under the same `value` (else `refusal(written)`,
    exit 2); an unmarked one is marked with `value`."""
    if written is not None and written != value:
        raise refusal(written)
    if written is None:
        write_marker(path, value)


# Spark writes each log entry as `.<name>.<uuid>.tmp` (plus its `.crc`) and renames it into place; a
# SIGKILL between the two leaves the temporary file. It is never read, but Spark refuses to start
# batch 0 of a stateful query while `offsets/` holds any file (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY).
PARTIAL_WRITE = re.compile(r"^\.\.?.+\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp(\.crc)?$")


def drop_partial_writes(directory: str) -> list[str]:
    """Remove the temporary files that killed runs left under `directory`; returns their paths."""
    dropped = []
    for root, _, files in os.walk(directory):
        for name in files:
            if PARTIAL_WRITE.match(name):
                os.remove(os.path.join(root, name))
                dropped.append(os.path.join(root, name))
    return dropped


# A bounded run that reached the end of its input flushed its operators for good: every tick up to
# the last event is reported and the state is closed. Its input files are recorded, so that a later
# run on the same checkpoint either re-reads the same result (same files) or is refused (new files:
# their ticks could not be reported, and a silent exit 0 would lose them). docs/spark.md, "Restart".
FINISHED = "tefq-finished-inputs"


def mark_finished(directory: str, stream_paths: list[str]) -> None:
    """Record that the bounded run in `directory` reported its last ticks over these inputs."""
    tmp = os.path.join(directory, FINISHED + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(f"{f}\n" for f in input_files(stream_paths))
    os.replace(tmp, os.path.join(directory, FINISHED))


def check_not_finished(directory: str, stream_paths: list[str], follow: bool) -> None:
    """Refuse (exit 2) to resume a finished checkpoint on input it has not read: new files, or
    --follow (a finished operator reports nothing more)."""
    path = os.path.join(directory, FINISHED)
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as fh:
        seen = {line.rstrip("\n") for line in fh if line.strip()}
    new = [f for f in input_files(stream_paths) if f not in seen]
    grown = grown_redis_streams(directory, stream_paths)
    if new or grown or follow:
        what = (f"{len(new)} stream file(s) arrived since, e.g. {new[0]}" if new
                else f"Redis entries arrived since: {'; '.join(grown)}" if grown
                else "--follow would wait for files it can no longer report")
        raise TefqError(f"this checkpoint holds a finished bounded run (every tick up to its last event was "
                        f"reported); {what}: use a fresh --checkpoint to run over all the files, or start "
                        "runs that will see new files with --follow", directory)


LOCK = "tefq.lock"


def writable(directory: str) -> None:
    """The checkpoint directory exists (created if need be) and takes files: else exit 2 naming it."""
    try:
        os.makedirs(directory, exist_ok=True)
        probe = os.path.join(directory, ".tefq-write-probe")
        with open(probe, "w", encoding="utf-8") as fh:
            fh.write("ok\n")
        os.remove(probe)
    except OSError as e:
        raise TefqError(f"cannot write to the --checkpoint directory: {e.strerror or e}", directory) from None


def resume(directory: str, stream_paths: list[str], follow: bool, doc: Document | None = None,
           **options: Any) -> IO:
    """Open the checkpoint in `directory` for one run: hold its lock (a second run on it at the same
    time is refused with exit 2: the two would write one log), check the state version, what the
    checkpoint belongs to (`doc`, the streams and `options`: checkpoint_identity; not checked
    without `doc`), that its stream files did not change since they were read (input_files), that
    a finished run gets no new input, and drop killed runs' partial writes. Close the returned file
    to release the lock (the OS releases it when the process dies, even on SIGKILL)."""
    writable(directory)
    claim(directory)
    held = open(os.path.join(directory, LOCK), "a")
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held.close()
        raise TefqError("another tefq run is using this checkpoint; wait for it to end or use another"
                        " --checkpoint", directory) from None
    try:
        if doc is not None:
            claim_identity(directory, identity_of(directory, doc, stream_paths, **options), has_state(directory))
        check_inputs(directory, stream_paths)
        check_not_finished(directory, stream_paths, follow)
        drop_partial_writes(directory)
        for entry in check_logs(directory):
            warn("dropped this empty or cut-off checkpoint log entry: Spark runs its batch again", entry)
    except BaseException:
        held.close()
        raise
    return held

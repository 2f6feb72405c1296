"""Create the driver JVM's class-data-sharing archive (tefq.spark.runtime.jvm_archive): `make setup`.

`python -m tefq.jvm_archive_setup` runs a small workload on embedded Spark (UC1 and a
sliding RSP-QL count on a generated 2,000-event stream) in a driver JVM started with
`-XX:ArchiveClassesAtExit`, lets that JVM exit, checks the archive with `-Xshare:on` (which fails
instead of ignoring a bad archive), then renames it into place. Safe when started twice at once:
one process holds the key's lock and writes in its own directory; the other leaves it be. It never
fails the caller: with no archive the runs are as before, only slower to start (exit status 0 and a
line on stderr). `--remove` deletes this JDK's and these jars' archive (`make clean`). Each archive
is ~190 MB and a new venv (new jar times) makes a new key: writing one prunes the others that no
run has used for `STALE_DAYS`, and all but the `KEEP_OTHERS` used last (`prune`).
"""
from __future__ import annotations

import contextlib
import fcntl
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

from tefq.spark.runtime import jvm_archive, spark_home

Dumper = Callable[[Path], bool]  # writes the archive to the given path; True if it checked out
JVM_EXIT_SECONDS = 600  # writing ~190 MB on a loaded machine
KEEP_OTHERS = 2  # archives of other keys (other venvs, JDKs) kept beside a new one
STALE_DAYS = 30  # an archive no run has mapped for this long is removed with the next new one
USECASES = Path(__file__).resolve().parent / "usecases"
SLIDING_COUNT = """PREFIX : <http://example.org/iptv#>
REGISTER RSTREAM <http://example.org/iptv/sliding-joins> AS
SELECT ?channel (COUNT(?user) AS ?joins)
FROM NAMED WINDOW :w ON <http://example.org/iptv/log> [RANGE PT60S STEP PT10S]
WHERE { WINDOW :w { ?user :join ?channel } } GROUP BY ?channel
"""


def ensure_archive(dump: Dumper | None = None) -> Path | None:
    """The archive for this JDK and these jars, created if missing; None when off or not made."""
    if not jvm_archive.enabled():
        return None
    key = jvm_archive.archive_key()
    if key is None:
        return None
    directory = jvm_archive.archive_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with locked(key, directory) as held:
        if not held:  # another process is writing it: leave it be
            return None
        found = jvm_archive.find_archive(key, directory)
        if found is not None:
            return found
        made = create(key, directory, dump or dump_with_spark)
    if made is not None:
        prune(directory, key)
    return made


@contextlib.contextmanager
def locked(key: str, directory: Path) -> Iterator[bool]:
    """The key's lock, taken without waiting: True while held, False when another process has it."""
    with open(jvm_archive.lock_path(key, directory), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


def prune(directory: Path, kept: str, now: float | None = None) -> list[Path]:
    """Remove the archives of keys other than `kept` unused for STALE_DAYS, and all but the
    KEEP_OTHERS used last (a key's last use: its lock's time, `jvm_archive.mark_used`). A key
    being written (its lock held) is left. Removing a file a running JVM maps is safe (Linux keeps
    it until unmapped); a JVM starting with a removed one starts without it. Returns what went."""
    now = time.time() if now is None else now
    used = sorted(((last_use(k, directory), k) for k in archive_keys(directory) if k != kept), reverse=True)
    stale = [k for i, (t, k) in enumerate(used) if i >= KEEP_OTHERS or now - t > STALE_DAYS * 86400]
    removed: list[Path] = []
    for key in stale:
        with locked(key, directory) as held:
            if not held:
                continue
            for path in directory.glob(f"spark-driver-{key}-*.jsa"):
                path.unlink(missing_ok=True)
                removed.append(path)
            jvm_archive.lock_path(key, directory).unlink(missing_ok=True)
    return removed


def archive_keys(directory: Path) -> set[str]:
    return {p.name[len("spark-driver-"):].rsplit("-", 1)[0] for p in directory.glob("spark-driver-*-*.jsa")}


def last_use(key: str, directory: Path) -> float:
    """When a JVM last mapped the key's archive (else when it was written)."""
    times = []
    for path in [jvm_archive.lock_path(key, directory), *directory.glob(f"spark-driver-{key}-*.jsa")]:
        with contextlib.suppress(OSError):  # removed meanwhile
            times.append(path.stat().st_mtime)
    return max(times, default=0.0)


def create(key: str, directory: Path, dump: Dumper) -> Path | None:
    """Dump into a private directory, then rename the checked file into place (one atomic step)."""
    scratch = Path(tempfile.mkdtemp(prefix=".creating-", dir=directory))
    try:
        written = scratch / "archive.jsa"
        if not dump(written) or not written.is_file():
            return None
        final = directory / jvm_archive.archive_name(key, written.stat().st_size)
        os.replace(written, final)
        return final
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def dump_with_spark(target: Path) -> bool:
    """Run the workload in a driver JVM that writes `target` at its exit; wait for it, check it."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.spark.runtime.session import get_session

    spark = get_session(archive_options=jvm_archive.dump_options(target))
    jvm = spark.sparkContext._jvm
    java = Path(jvm.System.getProperty("java.home")) / "bin" / "java"
    classpath = jvm.System.getProperty("java.class.path")
    try:
        worked = run_workload()
    finally:
        exited = stop_jvm(spark)
    return worked and exited and archive_maps(java, classpath, target)


def run_workload() -> bool:
    """UC1 (facts, the direct Parquet path) and a sliding window count (the rows path)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.cli import run_command

    work = tempfile.mkdtemp(prefix="tefq-cds-")
    try:
        stream = os.path.join(work, "stream")
        sliding = os.path.join(work, "sliding.rspql")
        Path(sliding).write_text(SLIDING_COUNT, encoding="utf-8")
        commands = [
            ["gen", "iptv", "--out", stream, "--events", "2000", "--users", "2000", "--channels", "40", "--seed", "7"],
            ["run", str(USECASES / "uc1.tef"), "--stream", stream, "--engine", "spark", "--out", f"{work}/uc1.csv"],
            ["run", sliding, "--stream", stream, "--engine", "spark", "--out", f"{work}/sliding.csv"],
        ]
        said = io.StringIO()  # the runs' progress lines: shown only if one fails
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(said):
            worked = all(run_command(argv) == 0 for argv in commands)
        if not worked:
            print(said.getvalue(), end="", file=sys.stderr)
        return worked
    finally:
        shutil.rmtree(work, ignore_errors=True)


def stop_jvm(spark) -> bool:
    """End the driver JVM the way a finished run does (its gateway reads end-of-file on stdin and
    calls System.exit, which writes the archive), and wait until it has."""
    proc = spark.sparkContext._gateway.proc
    spark.stop()
    proc.stdin.close()
    try:
        return proc.wait(timeout=JVM_EXIT_SECONDS) == 0
    except subprocess.TimeoutExpired:
        proc.kill()
        return False


def archive_maps(java: Path, classpath: str, archive: Path) -> bool:
    """Whether a JVM with this classpath maps the archive (-Xshare:on makes a bad one an error)."""
    command = [str(java), f"-XX:SharedArchiveFile={archive}", "-Xshare:on", "-XX:+VerifySharedSpaces",
               "-cp", classpath, "-version"]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True)
    return done.returncode == 0


def remove_archive() -> None:
    key = jvm_archive.archive_key()
    path = jvm_archive.find_archive(key) if key and jvm_archive.archive_dir().is_dir() else None
    if path is not None:
        path.unlink(missing_ok=True)
        print(f"tefq: removed {path}", file=sys.stderr)


def main(argv: list[str]) -> int:
    spark_home.use_lean_home()  # the classpath the archive is for: the one tefq starts Spark with
    if argv[:1] == ["--remove"]:
        remove_archive()
        return 0
    if not jvm_archive.enabled():
        print(f"tefq: {jvm_archive.DISABLE_VARIABLE}=0: no start-up archive for Spark's driver JVM", file=sys.stderr)
        return 0
    key = jvm_archive.archive_key()
    existing = jvm_archive.find_archive(key) if key and jvm_archive.archive_dir().is_dir() else None
    if existing is not None:
        return 0
    print("tefq: writing Spark's start-up archive (about a minute, once per JDK and pyspark)...", file=sys.stderr)
    try:
        path = ensure_archive()
    except Exception as e:  # never fail the set-up: without the archive Spark only starts slower
        print(f"tefq: no start-up archive ({type(e).__name__}: {e}); Spark starts without it", file=sys.stderr)
        return 0
    print(f"tefq: start-up archive {path}" if path else
          "tefq: no start-up archive (not written, or being written by another process)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
